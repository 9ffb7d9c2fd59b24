"""Atomic publication of parts, table state, reader pins and cleanup.

A table directory::

    <table>/
      state.json          the one source of truth (see below), replaced atomically
      state.backup.json   a second copy of it, written after it (``repair_state``
                          restores a damaged state.json from it)
      write.lock          flock: one committer at a time
      parts/<part>/       published parts (immutable)
      tmp/<part>.<rand>/  parts being written (staged); owned by a live process
                          while it flocks tmp/<part>.<rand>.lock
      readers/<gen>.lock  flock(LOCK_SH) by every open snapshot of generation gen

``state.json`` holds a generation number, the table metadata, the list of
active parts (with the XXH3 of each part's manifest, so a damaged manifest is
caught), and the parts retired by later generations. Every change -- insert,
merge, ALTER, MATERIALIZE -- is one new state written to a temporary file,
fsynced, renamed over ``state.json`` and the directory fsynced: a crash leaves
either the old or the new state, never a mix. Several parts (a multi-part
insert, the parts of a Spark job) are published by *one* state change, so
they appear all together or not at all.

Publishing, under ``write.lock``: rename each staged dir into ``parts/``
(a rename within one file system, atomic), fsync ``parts/``, then write the
new state. A crash between the renames and the state write leaves part
directories no state refers to; they are removed by the next cleanup, which
runs under the same lock (so it never races a commit).

Readers: :func:`pin_snapshot` reads the state, flocks ``readers/<gen>.lock``
shared, then re-reads the state; if the generation moved meanwhile it retries.
A part retired at generation R is still needed by snapshots of generations
< R; cleanup deletes it only when it can take every such pin file
exclusively (no live reader holds it). flock pins vanish with their process,
so a killed reader never blocks cleanup forever.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import field
from skipidx.core.dataclass_codes import dataclass
from typing import Callable, Iterable, Sequence

import xxhash

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.lru import LRU
from skipidx.store import reader_pool as _reader_pool
from skipidx.store.manifest import _PART_NAME, check_part_name, new_part_name
from skipidx.store.metadata import FORMAT_VERSION, TableMeta

from skipidx.core.lazy import kernels as _lazy_module

#: rmtree on cleanup paths only: a process that only reads does not import it
shutil = _lazy_module("shutil")

__all__ = [
    "STATE_FILE", "PartEntry", "TableState", "read_state", "write_state", "WriteLock",
    "commit_parts", "pin_snapshot", "cleanup", "ConflictError", "crash_point", "new_part_name",
    "fsync_dir", "fsync_file", "stage_dir", "StagedPart",
]

STATE_FILE = "state.json"
#: A copy of the last committed state, written right after STATE_FILE: a
#: damaged state.json is restored from it (ALTER TABLE t ATTACH PARTS).
BACKUP_FILE = "state.backup.json"
#: Written into every table directory at creation: what marks a directory
#: (and a hidden leftover of one) as the engine's own.
TABLE_MARK = ".skipidx-table"
#: An external table's state (store.external); here so the catalog knows one without importing it.
EXTERNAL_STATE = "external.json"
PARTS_DIR = "parts"
TMP_DIR = "tmp"
READERS_DIR = "readers"
WRITE_LOCK = "write.lock"
OWNER_LOCK = ".lock"          # `tmp/<dir>.lock`, next to a staged dir: flocked by its writer while alive
DETACHED_MARK = ".detached"   # inside a staged dir: written by a remote (Spark) task
#: A detached staged dir (a Spark task's output waiting for the driver's
#: commit) is removed by cleanup only after this many seconds.
DETACHED_TTL_S = 24 * 3600

#: ``tmp/<part>.<8 hex>``: the name :func:`stage_dir` gives a staged part.
_STAGED_NAME = re.compile(r"^[a-z0-9_]{1,100}\.[0-9a-f]{8}$")

#: Test hook: called with the name of each crash point (crash tests make the
#: process stop there and kill it with SIGKILL). None in normal operation.
CRASH_HOOK: Callable[[str], None] | None = None


def crash_point(name: str) -> None:
    if CRASH_HOOK is not None:
        CRASH_HOOK(name)


class ConflictError(SkipidxError):
    """A commit whose precondition no longer holds (parts it replaces were
    retired by a concurrent merge/ALTER); nothing was changed."""


def new_table_id() -> str:
    return os.urandom(16).hex()


class TableGoneError(SkipidxError):
    """The table a statement started on was dropped (or dropped and created
    again) before the statement could commit; nothing was changed."""


# ---------------------------------------------------------------- fsync
def fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_durably(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


# ---------------------------------------------------------------- state
@dataclass(frozen=True)
class PartEntry:
    name: str
    rows: int
    manifest_hash: str           # xxh3_128 hex of the part's manifest.json

    def to_json(self) -> dict:
        return {"name": self.name, "rows": self.rows, "manifest_xxh3_128": self.manifest_hash}


@dataclass(frozen=True)
class TableState:
    gen: int
    meta: TableMeta
    parts: tuple[PartEntry, ...] = ()
    retired: tuple[tuple[str, int], ...] = ()   # (part name, generation that retired it)
    #: Created with the table, never changed: a writer, pin or lock that
    #: started on one incarnation of a name never commits into another.
    table_id: str = ""

    def body(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "table_id": self.table_id,
            "gen": self.gen,
            "meta": self.meta.to_json(),
            "parts": [p.to_json() for p in self.parts],
            "retired": [{"name": n, "gen": g} for n, g in self.retired],
        }

    @property
    def part_names(self) -> list[str]:
        return [p.name for p in self.parts]


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


#: The last parsed state of each table directory with the exact bytes it was
#: parsed from: ``read_state`` still reads the file on every call (so a commit
#: by another Database or process is seen at once), but identical bytes are
#: not parsed, checksummed and validated again (twice per snapshot). Keyed by content, not by mtime/inode, so it cannot be fooled by
#: an inode reused within the file system's timestamp resolution. Bounded: a
#: process touching many tables keeps the most recent ones.
_STATE_CACHE = LRU(256, "store.states", "parsed table states with the bytes they were parsed from, by path")
#: Every commit (each insert, each merge) rewrites state.json while its
#: metadata stays the same; validating the metadata again re-derives every
#: index's parameters (tokenizers included), so the validated result is kept by
#: its canonical JSON.
_META_CACHE = LRU(64, "store.validated_metas", "validated table metadata, by its canonical JSON")


def _read_state_bytes(table_dir: str) -> tuple[str, bytes]:
    path, raw, fd, _key = _read_state_fd(table_dir)
    os.close(fd)
    return path, raw


def _read_state_fd(table_dir: str) -> tuple[str, bytes, int, tuple]:
    """(path, bytes, an open descriptor of the file read, its fstat key)."""
    path = os.path.join(table_dir, STATE_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        if (os.path.lexists(os.path.join(table_dir, BACKUP_FILE))
                or os.path.lexists(os.path.join(table_dir, TABLE_MARK))):
            raise CorruptionError(f"the table state is missing; {_repair_hint(table_dir)}", path=path) from None
        raise TableGoneError("not a skipidx table (no state.json)", path=table_dir) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise SkipidxError("the table state is a symbolic link; skipidx does not follow symbolic "
                               "links inside the database directory", path=path) from None
        raise os_error(e, path) from None
    try:
        key = _stat_key(os.fstat(fd))
        chunks = []
        pos = 0
        while True:
            b = os.pread(fd, max(key[2] + 1 - pos, 1 << 16), pos)
            if not b:
                break
            chunks.append(b)
            pos += len(b)
        return path, b"".join(chunks), fd, key
    except OSError as e:
        os.close(fd)
        raise os_error(e, path) from None


class _HeldStates:
    """The last state read of each table directory, with the file it was read from held open.

    While this process holds a descriptor of the file it parsed, that inode cannot
    be freed, so no other file -- a state renamed over it by a commit of any process
    -- can have its (device, inode): a ``stat`` of ``state.json`` showing the same
    (device, inode, size, mtime, ctime) is that very file, unchanged (commits never
    write in place; an outside write in place changes its times or size). A read is
    then one ``stat`` instead of open / read / close and a compare of the bytes.
    Bounded (the least recently used entry's descriptor is closed); the stat and the
    compare run under the lock, so an entry is never closed between them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: "OrderedDict[str, tuple[int, tuple, TableState]]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str) -> TableState | None:
        with self._lock:
            hit = self._d.get(path)
            if hit is None:
                return None
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                self._drop(path)
                return None
            if _stat_key(st) != hit[1]:
                self._drop(path)
                return None
            self._d.move_to_end(path)
            return hit[2]

    def put(self, path: str, fd: int, key: tuple, state: TableState) -> None:
        """Keep `state`, read from `fd` (fstat `key`); the descriptor is this cache's from now on."""
        with self._lock:
            self._drop(path)
            self._d[path] = (fd, key, state)
            while len(self._d) > self.size:
                _, (old, _k, _s) = self._d.popitem(last=False)
                os.close(old)

    def _drop(self, path: str) -> None:
        hit = self._d.pop(path, None)
        if hit is not None:
            os.close(hit[0])

    def _after_fork(self) -> None:
        # a fork while another thread held the lock would leave it locked forever in the child
        self._lock = threading.Lock()

    def sweep(self) -> None:
        """Let go of the files that were deleted or replaced (by another process) since they
        were read: a table this process no longer reads keeps no deleted file open."""
        with self._lock:
            for path in list(self._d):
                try:
                    same = _stat_key(os.stat(path, follow_symlinks=False)) == self._d[path][1]
                except OSError:
                    same = False
                if not same:
                    self._drop(path)

    def forget_under(self, dirs: Iterable[str]) -> None:
        """Let go of the state files under any of `dirs` (directories being deleted)."""
        prefixes = tuple(os.path.join(os.path.abspath(d), "") for d in dirs)
        if not prefixes:
            return
        with self._lock:
            for path in [p for p in self._d if os.path.abspath(p).startswith(prefixes)]:
                self._drop(path)

    def forget(self, table_dir: str | None = None) -> None:
        """Close the descriptor held for `table_dir` (all: None), e.g. before its directory is removed."""
        with self._lock:
            if table_dir is None:
                for fd, _k, _s in self._d.values():
                    os.close(fd)
                self._d.clear()
            else:
                self._drop(os.path.join(table_dir, STATE_FILE))


def _stat_key(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, stat.S_IFMT(st.st_mode))


#: at most this many descriptors held (one per table read lately)
_HELD = _HeldStates(64)
_reader_pool.SWEEP_HOOKS.append(_HELD.sweep)
_reader_pool.EVICT_HOOKS.append(_HELD.forget_under)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_HELD._after_fork)


def read_state(table_dir: str) -> TableState:
    """Read and validate ``state.json``; CorruptionError naming it when damaged.

    A state file this process read before and still holds open (:class:`_HeldStates`)
    is known unchanged from one ``stat``; otherwise the file is read, and the parse of
    bytes already parsed (and validated) is reused -- a TableState is immutable."""
    path = os.path.join(table_dir, STATE_FILE)
    held = _HELD.get(path)
    if held is not None:
        return held
    path, raw, fd, key = _read_state_fd(table_dir)
    try:
        hit = _STATE_CACHE.get(path)
        if hit is not None and hit[0] == raw:
            st = hit[1]
        else:
            try:
                st = _parse_state(path, raw)
            except CorruptionError as e:
                raise CorruptionError(f"{e.message}; {_repair_hint(table_dir)}", path=path) from None
            _STATE_CACHE.put(path, (raw, st))
    except BaseException:
        os.close(fd)
        raise
    if key[5] == stat.S_IFREG:
        _HELD.put(path, fd, key, st)
    else:
        os.close(fd)
    return st


def forget_state(table_dir: str) -> None:
    """Let go of the state file of `table_dir` this process holds open (its directory is being removed)."""
    _HELD.forget(table_dir)


def _repair_hint(table_dir: str) -> str:
    return (f"ALTER TABLE {os.path.basename(os.path.abspath(table_dir))} ATTACH PARTS restores it from its "
            "backup or the parts' manifests")


def clear_state_cache() -> None:
    """Forget parsed states (as a new process would)."""
    _HELD.forget()
    _STATE_CACHE.clear()


def _parse_state(path: str, raw: bytes) -> TableState:
    try:
        doc = json.loads(raw)
        body = doc["state"]
        if xxhash.xxh3_128_hexdigest(_canonical(body)) != doc["xxh3_128"]:
            raise CorruptionError("table state checksum mismatch", path=path)
        if not isinstance(body, dict):
            raise CorruptionError("damaged table state (not an object)", path=path)
        if body["format_version"] != FORMAT_VERSION:
            raise SkipidxError(f"unsupported table format version {body['format_version']!r}", path=path)
        gen = body["gen"]
        if not _is_int(gen) or not 0 <= gen < 1 << 62:
            raise CorruptionError("bad generation in table state", path=path)
        table_id = body.get("table_id", "")   # absent in tables created before ids existed
        if not isinstance(table_id, str) or not re.fullmatch(r"[0-9a-f]{0,64}", table_id):
            raise CorruptionError("bad table id in table state", path=path)
        try:
            meta_key = _canonical(body["meta"])
            meta = _META_CACHE.get(meta_key)
            if meta is None:
                meta = TableMeta.from_json(body["meta"], where=path)
                _META_CACHE.put(meta_key, meta)
        except CorruptionError:
            raise
        except SkipidxError as e:
            # a checksummed state whose metadata does not validate is damage
            # (or a hand edit), not a user's mistake: name the file
            raise CorruptionError(f"damaged table state: {e.message}", path=path) from None
        parts = []
        if not isinstance(body["parts"], list) or not isinstance(body["retired"], list):
            raise CorruptionError("bad part lists in table state", path=path)
        for p in body["parts"]:
            if not isinstance(p, dict):
                raise CorruptionError("bad part entry in table state", path=path)
            name = check_part_name(p["name"], path)
            rows, mh = p["rows"], p["manifest_xxh3_128"]
            if (not _is_int(rows) or not 0 < rows < 1 << 48 or not isinstance(mh, str)
                    or not re.fullmatch(r"[0-9a-f]{32}", mh)):
                raise CorruptionError(f"bad entry for part {name}", path=path)
            parts.append(PartEntry(name, rows, mh))
        retired = []
        for r in body["retired"]:
            if not isinstance(r, dict):
                raise CorruptionError("bad retired entry", path=path)
            g = r["gen"]
            if not _is_int(g) or not 0 <= g <= gen:
                raise CorruptionError("bad retired entry", path=path)
            retired.append((check_part_name(r["name"], path), g))
    except SkipidxError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError, OverflowError,
            RecursionError, IndexError) as e:
        raise CorruptionError(f"damaged table state ({type(e).__name__})", path=path) from None
    if len({p.name for p in parts}) != len(parts):
        raise CorruptionError("a part is listed twice in the table state", path=path)
    return TableState(gen, meta, tuple(parts), tuple(retired), table_id)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def os_error(e: OSError, path: str | None = None) -> SkipidxError:
    """An OS error as the SkipidxError users see: the strerror, the errno
    name and the file (`path` when the error itself names none)."""
    name = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else None
    where = e.filename if e.filename is not None else path
    msg = f"{e.strerror or type(e).__name__}" + (f" [{name}]" if name else "")
    err = SkipidxError(msg, path=os.fsdecode(where) if where is not None else None)
    err.errno = e.errno
    return err


def _state_doc(state: TableState) -> bytes:
    body = state.body()
    doc = {"state": body, "xxh3_128": xxhash.xxh3_128_hexdigest(_canonical(body))}
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False).encode()


def _replace_durably(table_dir: str, fname: str, data: bytes, point: str) -> None:
    tmp = os.path.join(table_dir, f".{STATE_FILE}.{os.urandom(6).hex()}.tmp")
    write_file_durably(tmp, data)
    crash_point(f"{point}:tmp_written")
    os.replace(tmp, os.path.join(table_dir, fname))
    crash_point(f"{point}:renamed")


def write_state(table_dir: str, state: TableState) -> None:
    """Publish `state` atomically: temp file, fsync, rename, fsync dir; then
    the same bytes as the backup copy (a crash between the two leaves the
    backup one generation behind, and state.json whole)."""
    data = _state_doc(state)
    try:
        _replace_durably(table_dir, STATE_FILE, data, "state")
        # the state file this process held open is replaced: let go of it now, not at the next read
        _HELD.forget(table_dir)
        _replace_durably(table_dir, BACKUP_FILE, data, "backup")
        fsync_dir(table_dir)
    except FileNotFoundError as e:
        if not os.path.isdir(table_dir):
            raise TableGoneError("the table was dropped", path=table_dir) from None
        raise os_error(e) from None
    except OSError as e:
        raise os_error(e, table_dir) from None


def read_backup_state(table_dir: str) -> TableState:
    """The backup copy of the state (CorruptionError naming it when damaged)."""
    path = os.path.join(table_dir, BACKUP_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise CorruptionError("no backup of the table state", path=path) from None
    except OSError as e:
        raise os_error(e, path) from None
    with open(fd, "rb", buffering=0, closefd=True) as f:
        raw = f.read()
    return _parse_state(path, raw)


# ---------------------------------------------------------------- locks
def _lock_file(path: str, mode: int, blocking: bool = True) -> int | None:
    """Open (creating) `path` and flock it; the fd, or None if not blocking and busy.
    A symbolic link there is refused (never followed to create a file elsewhere)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:
        raise TableGoneError("the table was dropped", path=os.path.dirname(os.path.dirname(path))
                             if os.path.basename(os.path.dirname(path)) in (TMP_DIR, READERS_DIR)
                             else os.path.dirname(path)) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise SkipidxError("a lock file is a symbolic link; skipidx does not follow symbolic links "
                               "inside the database directory", path=path) from None
        raise os_error(e, path) from None
    try:
        fcntl.flock(fd, mode | (0 if blocking else fcntl.LOCK_NB))
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    return fd


class WriteLock:
    """The table's commit lock (exclusive flock on ``write.lock``)."""

    def __init__(self, table_dir: str, blocking: bool = True) -> None:
        self.path = os.path.join(table_dir, WRITE_LOCK)
        self.blocking = blocking
        self.fd: int | None = None

    def __enter__(self) -> "WriteLock":
        self.fd = _lock_file(self.path, fcntl.LOCK_EX, self.blocking)
        return self

    @property
    def acquired(self) -> bool:
        return self.fd is not None

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)   # closing the fd drops the flock
            self.fd = None


def pin_snapshot(table_dir: str) -> tuple[TableState, int]:
    """The current state, pinned: (state, fd of the shared flock on its
    generation's reader file). Close the fd to unpin."""
    rdir = os.path.join(table_dir, READERS_DIR)
    while True:
        st = read_state(table_dir)
        # readers/ is made with the table; never re-created here (a table
        # dropped meanwhile must not come back as a bare directory)
        fd = _lock_file(os.path.join(rdir, f"{st.gen}.lock"), fcntl.LOCK_SH)
        assert fd is not None
        # A cleanup may have unlinked that pin file before our flock (only
        # once a newer generation exists), or the name may now be another
        # table: re-reading the state detects both.
        again = read_state(table_dir)
        if again.gen == st.gen and again.table_id == st.table_id:
            return st, fd
        os.close(fd)


def pin_generation(table_dir: str, gen: int) -> int:
    """Pin generation `gen` as a snapshot of it does, for a reader that planned
    elsewhere (a Spark task reading what the driver planned): the fd of a shared
    flock on its reader file; close it to unpin. Parts a cleanup removed before
    the pin are the caller's to detect (their directories are gone)."""
    fd = _lock_file(os.path.join(table_dir, READERS_DIR, f"{gen}.lock"), fcntl.LOCK_SH)
    assert fd is not None   # a blocking flock
    return fd


def _pinned_generations(table_dir: str, current_gen: int) -> list[int]:
    """Generations < current that a live snapshot pins; removes stale pin files."""
    rdir = os.path.join(table_dir, READERS_DIR)
    live = []
    try:
        names = os.listdir(rdir)
    except FileNotFoundError:
        return live
    for n in names:
        m = re.match(r"^(\d+)\.lock$", n)
        if not m:
            continue
        g = int(m.group(1))
        if g >= current_gen:
            continue
        p = os.path.join(rdir, n)
        fd = _lock_file(p, fcntl.LOCK_EX, blocking=False)
        if fd is None:
            live.append(g)
            continue
        try:
            os.unlink(p)   # nobody pins it; a newcomer re-checks the generation
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)
    return live


# ---------------------------------------------------------------- staging
@dataclass
class StagedPart:
    """A part written into ``tmp/`` and not yet published."""

    path: str
    name: str
    rows: int
    lock_fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        if self.lock_fd is not None:
            try:
                os.unlink(self.path + OWNER_LOCK)
            except FileNotFoundError:
                pass
            os.close(self.lock_fd)
            self.lock_fd = None

    def discard(self) -> None:
        """Remove the staged dir (after an error)."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.release()


def stage_dir(table_dir: str, part_name: str, detached: bool = False) -> StagedPart:
    """Create ``tmp/<part>.<rand>/`` owned by this process (or marked detached)."""
    check_part_name(part_name, table_dir)
    tdir = os.path.join(table_dir, TMP_DIR)
    # tmp/ is made with the table and never re-created: a table dropped
    # meanwhile must not come back as a bare directory
    check_real_dir(tdir, missing_ok=False)
    path = os.path.join(tdir, f"{part_name}.{os.urandom(4).hex()}")
    try:
        if detached:
            os.mkdir(path)
            write_file_durably(os.path.join(path, DETACHED_MARK), b"")
            return StagedPart(path, part_name, 0, None)
        # the owner lock is taken before the dir exists, so cleanup never sees
        # an unlocked dir of a live writer
        fd = _lock_file(path + OWNER_LOCK, fcntl.LOCK_EX)
        try:
            os.mkdir(path)
        except BaseException:
            os.unlink(path + OWNER_LOCK)
            os.close(fd)
            raise
    except FileNotFoundError:
        raise TableGoneError("the table was dropped", path=table_dir) from None
    except OSError as e:
        raise os_error(e, path) from None
    return StagedPart(path, part_name, 0, fd)


def check_real_dir(path: str, missing_ok: bool = True) -> bool:
    """True if `path` is a directory (not a symbolic link to one); False if
    missing and `missing_ok`. A symbolic link or another kind of file is
    refused: skipidx never writes or deletes through a link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if missing_ok:
            return False
        raise TableGoneError("the table was dropped", path=os.path.dirname(path)) from None
    except OSError as e:
        raise os_error(e, path) from None
    if stat.S_ISLNK(st.st_mode):
        raise SkipidxError("is a symbolic link; skipidx does not follow symbolic links inside the "
                           "database directory", path=path)
    if not stat.S_ISDIR(st.st_mode):
        raise SkipidxError("is not a directory (not created by skipidx)", path=path)
    return True


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def check_layout(table_dir: str) -> None:
    """Refuse a table whose directory or sub-directories are symbolic links
    (or not directories), before anything is written or deleted there."""
    check_real_dir(table_dir, missing_ok=False)
    for d in (PARTS_DIR, TMP_DIR, READERS_DIR):
        check_real_dir(os.path.join(table_dir, d), missing_ok=False)


# ---------------------------------------------------------------- commit
def commit_parts(
    table_dir: str,
    staged: Sequence[StagedPart | str],
    *,
    retire: Iterable[str] = (),
    meta: TableMeta | None = None,
    expect_gen: int | None = None,
    meta_check: Callable[[TableMeta], None] | None = None,
    expect_id: str | None = None,
) -> int:
    """Publish `staged` parts (all or none), retire the parts named in
    `retire`, and optionally replace the table metadata -- one new state.

    `staged` items are :class:`StagedPart` or paths of staged dirs (what a
    Spark driver gets back from its tasks). Raises :class:`ConflictError`
    (nothing changed) if a part to retire is no longer active, or if
    `expect_gen` is given and the state moved on, and :class:`TableGoneError`
    if `expect_id` is given and the table is not that incarnation any more
    (dropped, or dropped and created again). Returns the new generation.
    """
    from skipidx.store.manifest import read_manifest, manifest_matches_meta

    retire = list(retire)
    with WriteLock(table_dir):
        crash_point("commit:locked")
        st = read_state(table_dir)
        if expect_id is not None and st.table_id != expect_id:
            raise TableGoneError("the table was dropped and created again while the statement ran; "
                                 "nothing was written", path=table_dir)
        if expect_gen is not None and st.gen != expect_gen:
            raise ConflictError(f"table changed concurrently (generation {st.gen}, expected {expect_gen})")
        if meta_check is not None:
            meta_check(st.meta)
        active = {p.name for p in st.parts}
        missing = [n for n in retire if n not in active]
        if missing:
            raise ConflictError(f"parts {', '.join(missing)} are no longer active (merged or replaced concurrently)")
        new_meta = meta if meta is not None else st.meta
        entries: list[tuple[str, PartEntry]] = []
        for s in staged:
            path = s.path if isinstance(s, StagedPart) else str(s)
            path = os.path.realpath(path)
            if os.path.dirname(path) != os.path.realpath(os.path.join(table_dir, TMP_DIR)):
                raise SkipidxError("a staged part must live in the table's tmp/ directory", path=path)
            man, mhash = read_manifest(path)
            manifest_matches_meta(man, new_meta, path)
            name = check_part_name(man["part"], path)
            if name in active or any(e.name == name for _, e in entries):
                raise SkipidxError(f"part {name} is already published", path=path)
            entries.append((path, PartEntry(name, int(man["rows"]), mhash)))
        pdir = os.path.join(table_dir, PARTS_DIR)
        check_real_dir(pdir, missing_ok=False)
        known = active | {n for n, _ in st.retired}
        for i, (path, e) in enumerate(entries):
            target = os.path.join(pdir, e.name)
            if os.path.exists(target):
                if e.name in known:
                    raise SkipidxError(f"part {e.name} already exists", path=target)
                shutil.rmtree(target)   # debris of a crashed commit
            os.rename(path, target)
            crash_point(f"commit:renamed:{i}")
        fsync_dir(pdir)
        fsync_dir(os.path.join(table_dir, TMP_DIR))
        gen = st.gen + 1
        retire_set = set(retire)
        new_entries = [e for _, e in entries]
        if retire_set and new_entries:
            # a merge or rewrite takes its first source's place: the order of
            # parts stays the order of insertion (the merge selector merges
            # neighbours, as ClickHouse's block-number ranges)
            at = next(i for i, p in enumerate(st.parts) if p.name in retire_set)
            kept = [p for p in st.parts if p.name not in retire_set]
            at = sum(1 for p in st.parts[:at] if p.name not in retire_set)
            new_parts = tuple(kept[:at]) + tuple(new_entries) + tuple(kept[at:])
        else:
            new_parts = tuple(p for p in st.parts if p.name not in retire_set) + tuple(new_entries)
        new_retired = st.retired + tuple((n, gen) for n in retire)
        write_state(table_dir, TableState(gen, new_meta, new_parts, new_retired, st.table_id))
        crash_point("commit:done")
        # the retired parts' pooled readers (their mappings would keep the
        # files' space once deleted); a pinned snapshot still reading one
        # reopens it, and cleanup evicts again after deleting it
        _release_readers(os.path.join(pdir, n) for n in retire)
        for s in staged:
            if isinstance(s, StagedPart):
                s.release()
        _collect(table_dir, TableState(gen, new_meta, new_parts, new_retired, st.table_id))
    return gen


def commit_meta(table_dir: str, meta: TableMeta) -> int:
    """Replace the table metadata alone (ALTER ADD INDEX)."""
    return commit_parts(table_dir, [], meta=meta)


# ---------------------------------------------------------------- cleanup
def _release_readers(dirs: Iterable[str]) -> None:
    """Close this process's pooled readers of files under `dirs` (see
    :func:`skipidx.store.reader_pool.release_readers`)."""
    from skipidx.store.reader_pool import release_readers

    release_readers(list(dirs))


def cleanup(table_dir: str) -> None:
    """Remove what crashed writers left and what no reader needs any more.
    Runs only if the commit lock is free right now (never waits for it)."""
    check_layout(table_dir)
    with WriteLock(table_dir, blocking=False) as lk:
        if not lk.acquired:
            return
        _clean_tmp(table_dir)
        _collect(table_dir, read_state(table_dir))


def _clean_tmp(table_dir: str) -> None:
    tdir = os.path.join(table_dir, TMP_DIR)
    try:
        names = os.listdir(tdir)
    except FileNotFoundError:
        return
    for n in names:
        p = os.path.join(tdir, n)
        if n.endswith(OWNER_LOCK) or not _STAGED_NAME.match(n):
            continue   # a lock, or not an entry skipidx made: left alone
        try:
            if not stat.S_ISDIR(os.lstat(p).st_mode):
                continue   # a link or a file under a staged name: not ours
        except FileNotFoundError:
            continue
        if os.path.exists(os.path.join(p, DETACHED_MARK)):
            try:
                age = time.time() - os.stat(p).st_mtime
            except FileNotFoundError:
                continue
            if age > DETACHED_TTL_S:
                shutil.rmtree(p, ignore_errors=True)
            continue
        fd = _lock_file(p + OWNER_LOCK, fcntl.LOCK_EX, blocking=False)
        if fd is None:
            continue   # its writer is alive
        try:
            shutil.rmtree(p, ignore_errors=True)
        except FileNotFoundError:
            pass
        finally:
            os.unlink(p + OWNER_LOCK)
            os.close(fd)
    # owner locks whose dir is gone (writer died between lock and mkdir, or
    # after the rename of its commit)
    for n in names:
        if not n.endswith(OWNER_LOCK) or not _STAGED_NAME.match(n[: -len(OWNER_LOCK)]):
            continue
        lp = os.path.join(tdir, n)
        if os.path.exists(lp[: -len(OWNER_LOCK)]):
            continue
        fd = _lock_file(lp, fcntl.LOCK_EX, blocking=False)
        if fd is None:
            continue
        try:
            os.unlink(lp)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)
    # state temp files of a crashed commit
    for n in os.listdir(table_dir):
        if n.startswith(f".{STATE_FILE}.") and n.endswith(".tmp"):
            try:
                os.unlink(os.path.join(table_dir, n))
            except FileNotFoundError:
                pass


def _collect(table_dir: str, st: TableState) -> None:
    """Delete retired parts no live snapshot needs, and unreferenced part dirs.
    Caller holds the write lock."""
    pinned = _pinned_generations(table_dir, st.gen)
    oldest = min(pinned) if pinned else st.gen
    keep_retired = []
    removable = []
    for name, rgen in st.retired:
        # a part retired at generation R is used by snapshots of gens < R
        if oldest < rgen:
            keep_retired.append((name, rgen))
        else:
            removable.append(name)
    pdir = os.path.join(table_dir, PARTS_DIR)
    referenced = {p.name for p in st.parts} | {n for n, _ in keep_retired}
    try:
        present = os.listdir(pdir)
    except FileNotFoundError:
        present = []
    gone = [os.path.join(pdir, n) for n in present if n not in referenced and _PART_NAME.match(n)]
    # only real directories under part names: skipidx's own (a link or a
    # foreign file there is left alone, never followed)
    gone = [p for p in gone if _is_real_dir(p)]
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    # after the deletion: a reader taken before it is evicted (or closed when
    # given back); none can be taken after it (the files are gone)
    _release_readers(gone)
    if removable:
        # Forget them in the state too, so the retired list stays short. A
        # crash here is harmless: the dirs are gone or unreferenced either way.
        write_state(table_dir, TableState(st.gen, st.meta, st.parts, tuple(keep_retired), st.table_id))
