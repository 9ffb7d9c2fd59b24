"""Merging parts: OPTIMIZE TABLE [FINAL], and background merges after inserts.

Background merges follow ClickHouse's MergeTree: after every insert a merge
selector (ClickHouse's *simple merge selector*, :func:`select_merge`) looks at
the active parts in order and picks a run of adjacent parts worth merging --
several parts of similar size (their total at least ``merge_selector_base``
times the biggest), never more than ``max_parts_to_merge_at_once`` parts nor
``max_part_rows`` rows. The merges run in a background thread of the writing
process (one per table; not a daemon, so a short-lived process finishes the
merges its inserts made due before it exits), one merger per table at a time
across processes (``merge.lock``). An insert that finds more than
``parts_to_delay_insert`` active parts first merges in its own thread (back
pressure, as ClickHouse delays such inserts); more than
``parts_to_throw_insert`` refuses the insert. ``SETTINGS background_merges = 0``
stops them (OPTIMIZE still merges).

A merge reads its source parts (checksums verified as they are read),
re-sorts the rows by the ORDER BY key, writes one new part with every index
of the current metadata rebuilt, and publishes it while retiring the sources
in one state change. Readers that pinned an older snapshot keep the sources
until they close it (see :mod:`skipidx.store.commit`).

A merge streams: it holds the sort key of its sources and one chunk of rows
(``writer.INDEX_CHUNK_ROWS``) at a time, so a FINAL merge of a table of any
size needs bounded memory.
"""
from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from typing import Iterator

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.core.types import sort_key_table
from skipidx.store import commit as _commit
from skipidx.store.commit import ConflictError, commit_parts, crash_point, new_part_name, stage_dir
from skipidx.store.conform import non_decreasing as _non_decreasing
from skipidx.store.manifest import DATA_FILE
from skipidx.store.metadata import LARGE_MERGE_BYTES, TableMeta
from skipidx.store.part import Part
from skipidx.store import writer as _writer
from skipidx.store.writer import PartWriter

__all__ = ["plan_merges", "merge_parts", "select_merge", "merge_step", "after_insert", "stop_merges",
           "wait_merges", "merges_in_progress", "MERGE_FILE"]

MERGE_LOCK = "merge.lock"
#: Inside a staged merge result (``tmp/<part>.<rand>/``): what it merges, so
#: merges in progress are visible to every process (SHOW MERGES).
MERGE_FILE = ".merge.json"

#: Defaults of the merge settings (ClickHouse's names and, where rows stand
#: for bytes, its spirit). A part's size is its rows plus a fixed cost (a
#: part costs files, a manifest and a state entry whatever its rows), so tiny
#: parts merge by count.
DEFAULTS = {
    "background_merges": 1,
    "merge_selector_base": 5,
    "max_parts_to_merge_at_once": 100,
    "parts_to_delay_insert": 150,
    "parts_to_throw_insert": 3000,
}
SIZE_FIXED_COST_ROWS = 8192
#: The base is lowered towards 2 as the range's parts age (ClickHouse's
#: min/max_age_to_lower_base): a few old small parts are merged eventually.
MIN_AGE_TO_LOWER_BASE_S = 10.0
MAX_AGE_TO_LOWER_BASE_S = 3600.0


def setting(meta: TableMeta, name: str):
    return meta.settings.get(name, DEFAULTS[name])


def select_merge(rows, ages_s, *, base: float, max_rows: int, max_parts: int) -> tuple[int, int] | None:
    """ClickHouse's simple merge selector over parts in order: the range
    ``[begin, end)`` of adjacent parts to merge, or None.

    A range of 2..max_parts parts totalling at most max_rows rows is allowed
    when ``(sum + n * c) / (max + c) >= base'`` (c: a part's fixed cost; base'
    lowered from `base` towards 2 as the youngest part in it ages); of the
    allowed ranges the one with the lowest ``(sum + n * c) / (n - 1.9)`` wins
    (many small parts first)."""
    sizes = np.asarray(rows, dtype=np.float64)
    ages = np.asarray(ages_s, dtype=np.float64)
    n = sizes.shape[0]
    if n < 2:
        return None
    c = float(SIZE_FIXED_COST_ROWS)
    csum = np.concatenate([[0.0], np.cumsum(sizes)])
    best = None
    run_max = sizes.copy()          # max over the window of length L starting at i
    run_min_age = ages.copy()       # youngest part of the window
    for L in range(2, min(n, max_parts) + 1):
        run_max = np.maximum(run_max[:-1], sizes[L - 1:])
        run_min_age = np.minimum(run_min_age[:-1], ages[L - 1:])
        total = csum[L:] - csum[:-L]
        ok = total <= max_rows
        if not ok.any():
            if (sizes[:L].sum() > max_rows) and (np.min(total) > max_rows):
                break
            continue
        age_norm = np.clip((run_min_age - MIN_AGE_TO_LOWER_BASE_S)
                           / (MAX_AGE_TO_LOWER_BASE_S - MIN_AGE_TO_LOWER_BASE_S), 0.0, 1.0)
        lowered = base + (2.0 - base) * age_norm
        ok &= (total + L * c) / (run_max + c) >= lowered
        if not ok.any():
            continue
        score = (total + L * c) / (L - 1.9)
        score[~ok] = np.inf
        i = int(np.argmin(score))
        if best is None or score[i] < best[0]:
            best = (float(score[i]), i, i + L)
    return None if best is None else (best[1], best[2])


def part_age_s(name: str, now_ns: int) -> float:
    """Age of a part from its name (``p_<ns hex>_...``); 0 when it has no time."""
    try:
        return max(0.0, (now_ns - int(name.split("_")[1], 16)) / 1e9)
    except (IndexError, ValueError):
        return 0.0


def plan_merges(snapshot, *, final: bool, max_rows: int) -> list[list[Part]]:
    """Groups of parts to merge. FINAL: all parts into one (a lone part only
    when it lacks an index of the current metadata). Otherwise consecutive
    runs of parts whose total stays within `max_rows`, two or more per group."""
    parts = list(snapshot.parts)
    if final:
        if len(parts) > 1:
            return [parts]
        if len(parts) == 1 and not all(parts[0].has_index(i.name) for i in snapshot.meta.indexes):
            return [parts]
        if len(parts) == 1 and not _encrypted_as(parts[0], snapshot.meta):
            return [parts]   # key rotation: rewritten under the table's current key ids
        return []
    groups: list[list[Part]] = []
    cur: list[Part] = []
    rows = 0
    for p in parts:
        if p.num_rows >= max_rows or rows + p.num_rows > max_rows:
            if len(cur) > 1:
                groups.append(cur)
            cur, rows = ([], 0) if p.num_rows >= max_rows else ([p], p.num_rows)
            continue
        cur.append(p)
        rows += p.num_rows
    if len(cur) > 1:
        groups.append(cur)
    return groups


def _encrypted_as(part: Part, meta: TableMeta) -> bool:
    """True when `part` is encrypted as `meta`'s settings say (same footer and column key ids)."""
    enc, want = part.encryption, meta.encryption
    if enc is None or want is None:
        return enc is None and want is None
    return enc.get("footer_key") == want[0] and enc.get("columns") == want[1]


def _map(fn, items: list, threads: int | None) -> list:
    """[fn(x) for x in items], on up to `threads` threads (None: the cores), results in order."""
    from skipidx.core.threads import resolve_threads

    n = min(resolve_threads(threads), len(items))
    if n <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="skipidx-merge-read") as ex:
        return list(ex.map(fn, items))


def _prefetched(it: Iterator, depth: int = 1) -> Iterator:
    """`it` run one item ahead in a thread: reading the next merged chunk overlaps
    writing this one. An error of `it` is raised where its item would have come."""
    import queue

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    _END = object()

    def run() -> None:
        try:
            for x in it:
                while not stop.is_set():
                    try:
                        q.put((x, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put((_END, None))
        except BaseException as e:   # noqa: BLE001 - handed to the consumer
            q.put((_END, e))

    t = threading.Thread(target=run, name="skipidx-merge-prefetch", daemon=True)
    t.start()
    try:
        while True:
            x, err = q.get()
            if x is _END:
                if err is not None:
                    raise err
                return
            yield x
    finally:
        stop.set()
        while t.is_alive():   # unblock a producer waiting on a full queue
            try:
                q.get(timeout=0.1)
            except queue.Empty:
                pass
        t.join()


def merge_order(meta: TableMeta, parts: list[Part], threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(perm, offsets): merged row i is row perm[i] of the parts' concatenation; part j's
    rows are offsets[j]:offsets[j + 1] of it. The sort keys are read on `threads` threads."""
    rows = np.array([p.num_rows for p in parts], dtype=np.int64)
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    total = int(offsets[-1])
    if meta.order_by:
        keys = pa.concat_tables(_map(lambda p: p.read(meta.order_by), parts, threads))
        if _non_decreasing(keys):
            # parts of consecutive key ranges (time-ordered inserts): the stable
            # sort would give the identity, so it is not run
            perm = np.arange(total, dtype=np.int64)
        else:
            perm = pc.sort_indices(sort_key_table(keys), sort_keys=[(k, "ascending", "at_end") for k in meta.order_by]).to_numpy()
        del keys
    else:
        perm = np.arange(total, dtype=np.int64)
    return perm, offsets


def _use_merged_indexes(meta: TableMeta, parts: list[Part], writer: PartWriter,
                        order: tuple[np.ndarray, np.ndarray], threads: int | None = None) -> None:
    """Indexes that merge their sources' postings (the text index) instead of re-tokenizing:
    handed the sources' granules and where each source row lands. A source whose index is
    missing or damaged leaves that index to be rebuilt from the rows. The sources' index
    files are read and checked on `threads` threads (a big dictionary's walk takes seconds),
    beside the read of the rows where the aggregator takes them later (``use_merged_later``)."""
    from skipidx.core.errors import SkipidxError

    perm, offsets = order
    inv = None
    for im in meta.indexes:
        agg = writer.merged_index(im.name)
        if agg is None or not all(p.has_index(im.name) for p in parts):
            continue
        if inv is None:
            inv = np.empty(perm.shape[0], dtype=np.int64)
            inv[perm] = np.arange(perm.shape[0], dtype=np.int64)
        maps = [inv[offsets[j]:offsets[j + 1]] for j in range(len(parts))]

        def load(name: str = im.name, maps: list = maps):
            try:
                return _map(lambda p: p.load_index(name), parts, threads), maps
            except SkipidxError:
                return None

        agg.use_merged_later(load)


def merged_chunks(meta: TableMeta, parts: list[Part], step: int,
                  order: tuple[np.ndarray, np.ndarray] | None = None,
                  threads: int | None = 1) -> Iterator[pa.Table]:
    """The rows of `parts` in ORDER BY order, as tables of `step` rows.

    Only the sort key of all parts is held at once (to compute the merged
    order, a stable sort, so equal keys keep part order); then each output
    chunk reads, from every part it draws on, the granules covering the rows
    it needs. Because every part is sorted, those rows are a contiguous run of
    each part, so the data is read about once in total. The pieces of one
    chunk (one per part it draws on) are read on up to `threads` threads.
    """
    perm, offsets = merge_order(meta, parts, threads) if order is None else order
    total = int(offsets[-1])
    part_of = np.searchsorted(offsets, perm, side="right") - 1
    local = perm - offsets[part_of]
    del perm
    cols = meta.column_names
    for s in range(0, total, step):
        pj = part_of[s:s + step]
        lr = local[s:s + step]
        order = np.argsort(pj, kind="stable")
        sorted_pj = pj[order]
        bounds = np.flatnonzero(np.diff(sorted_pj)) + 1
        idx = np.empty(pj.shape[0], dtype=np.int64)
        reads = []
        base = 0
        for grp in np.split(order, bounds):
            j = int(pj[grp[0]])
            need = lr[grp]
            lo, hi = int(need.min()), int(need.max()) + 1
            marks = parts[j].marks
            ga = int(np.searchsorted(marks, lo, side="right") - 1)
            gb = int(np.searchsorted(marks, hi - 1, side="right"))
            reads.append((j, ga, gb, lo - int(marks[ga]), hi - lo))
            idx[grp] = base + need - lo
            base += hi - lo
        pieces = _map(lambda r: parts[r[0]].read(cols, [(r[1], r[2])]).slice(r[3], r[4]), reads, threads)
        if idx.shape[0] == base and np.all(np.diff(idx) == 1) and (idx.shape[0] == 0 or idx[0] == 0):
            # the pieces are already in merged order (parts of consecutive key
            # ranges): no gather of every column
            yield pa.concat_tables(pieces)
        else:
            yield pa.concat_tables(pieces).combine_chunks().take(pa.array(idx))


def _source_data_bytes(parts: list[Part]) -> int:
    """Compressed bytes of the sources' data files (as their manifests record them)."""
    total = 0
    for p in parts:
        f = p.manifest.get("files", {}).get(DATA_FILE)
        total += int(f["size"]) if isinstance(f, dict) and "size" in f else 0
    return total


def merge_parts(table_dir: str, meta: TableMeta, parts: list[Part], *, expect_id: str | None = None,
                threads: int | None = None) -> str:
    """Merge `parts` into one new part and publish it; returns its name.
    `threads` (None: the cores this process may use) bounds the reads of
    the sources and the writes of the result (data file and each index at
    once), and reading the next chunk overlaps writing this one when > 1.
    Memory: one chunk of rows (plus the sort key of all parts), whatever the
    size of the merge. Raises ConflictError (nothing changed) if a source was
    retired meanwhile."""
    level = max(p.level for p in parts) + 1
    name = new_part_name(level)
    staged = stage_dir(table_dir, name)
    writer = None
    try:
        info = {"part": name, "sources": [p.name for p in parts], "rows": int(sum(p.num_rows for p in parts)),
                "started_unix": time.time(), "pid": os.getpid()}
        _commit.write_file_durably(os.path.join(staged.path, MERGE_FILE), json.dumps(info).encode())
        from skipidx.core.threads import resolve_threads

        n_threads = resolve_threads(threads)
        writer = PartWriter(staged.path, meta, name, level=level, keyring=parts[0].keyring,
                            threads=n_threads, build_threads=n_threads, expected_rows=info["rows"],
                            large_merge=_source_data_bytes(parts) >= LARGE_MERGE_BYTES)
        m = writer.chunk_multiple()
        step = max(1, _writer.INDEX_CHUNK_ROWS // m) * m
        order = merge_order(meta, parts, n_threads)
        _use_merged_indexes(meta, parts, writer, order, n_threads)
        chunks = merged_chunks(meta, parts, step, order, n_threads)
        for chunk in (_prefetched(chunks) if n_threads > 1 else chunks):
            writer.write(chunk)
        writer.finish()
        staged.rows = writer.rows
        crash_point("merge:staged")

        def check(cur: TableMeta) -> None:
            if cur.columns != meta.columns:
                raise ConflictError("table columns changed during the merge")

        os.unlink(os.path.join(staged.path, MERGE_FILE))
        commit_parts(table_dir, [staged], retire=[p.name for p in parts], meta_check=check, expect_id=expect_id)
    except BaseException:
        if writer is not None:
            writer.abort()
        staged.discard()
        raise
    return name


# ---------------------------------------------------------------- background merges
class _MergeLock:
    """``merge.lock`` of a table (flock): one merger per table at a time."""

    def __init__(self, table_dir: str, blocking: bool) -> None:
        self.path = os.path.join(table_dir, MERGE_LOCK)
        self.blocking = blocking
        self.fd: int | None = None

    def __enter__(self) -> "_MergeLock":
        self.fd = _commit._lock_file(self.path, fcntl.LOCK_EX, self.blocking)
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def merge_step(table_dir: str, table_id: str, *, blocking: bool = False, keyring=None) -> bool:
    """Select and run one merge of the table (if the selector finds one and
    no other merger holds the table); True if parts were merged."""
    from skipidx.store.snapshot import TableSnapshot

    with _MergeLock(table_dir, blocking) as lk:
        if lk.fd is None:
            return False
        st, fd = _commit.pin_snapshot(table_dir)
        with TableSnapshot(table_dir, st, fd, keyring=keyring) as snap:
            if st.table_id != table_id:
                raise _commit.TableGoneError("the table was dropped", path=table_dir)
            meta = snap.meta
            if not setting(meta, "background_merges"):
                return False
            now = time.time_ns()
            sel = select_merge([p.num_rows for p in snap.parts], [part_age_s(p.name, now) for p in snap.parts],
                               base=float(setting(meta, "merge_selector_base")), max_rows=meta.max_part_rows,
                               max_parts=int(setting(meta, "max_parts_to_merge_at_once")))
            if sel is None:
                return False
            try:
                merge_parts(table_dir, meta, snap.parts[sel[0]:sel[1]], expect_id=table_id)
            except ConflictError:
                return True   # an ALTER or OPTIMIZE took those parts meanwhile: select again
        _commit.cleanup(table_dir)   # our pin kept the sources until now
        return True


class _Worker(threading.Thread):
    def __init__(self, table_dir: str, table_id: str, keyring=None) -> None:
        # not a daemon: a process that exits right after its inserts finishes
        # the merges they made due first (each merge is bounded)
        super().__init__(name=f"skipidx-merge-{os.path.basename(table_dir)}", daemon=False)
        self.table_dir = table_dir
        self.table_id = table_id
        self.keyring = keyring
        self.kicked = True
        self.stopping = threading.Event()
        self.last_error: str | None = None

    def run(self) -> None:
        try:
            self._loop()
        finally:
            with _WORKERS_LOCK:
                self._forget()

    def _loop(self) -> None:
        while not self.stopping.is_set():
            with _WORKERS_LOCK:
                self.kicked = False
            try:
                merged = merge_step(self.table_dir, self.table_id, keyring=self.keyring)
            except Exception as e:   # noqa: BLE001 - a background thread must not die noisily
                # dropped table, full disk, damaged part...: this worker stops;
                # the next insert starts another (and sees the error itself)
                self.last_error = f"{type(e).__name__}: {e}"
                return
            if merged:
                continue
            with _WORKERS_LOCK:
                if self.kicked:
                    continue   # an insert came meanwhile: select again
                # decided under the lock an insert kicks with: none is missed
                self._forget()
                return

    def _forget(self) -> None:
        if _WORKERS.get(self.table_dir) is self:
            del _WORKERS[self.table_dir]


_WORKERS: dict[str, _Worker] = {}
_WORKERS_LOCK = threading.Lock()


def _after_fork() -> None:
    global _WORKERS_LOCK
    _WORKERS_LOCK = threading.Lock()
    _WORKERS.clear()


os.register_at_fork(after_in_child=_after_fork)

#: "background" (default): merges run in a thread of the inserting process;
#: "inline": in the inserting thread, after its commit; "off": only OPTIMIZE.
MODE = os.environ.get("SKIPIDX_MERGES", "background")


def after_insert(table) -> None:
    """Called after an insert committed: back pressure, then schedule merges."""
    st = _commit.read_state(table.path)
    meta = st.meta
    if not setting(meta, "background_merges") or MODE == "off":
        return
    n = len(st.parts)
    if n > int(setting(meta, "parts_to_delay_insert")) or MODE == "inline":
        # too many parts (or no background): merge in this thread until the
        # count is back under the threshold, waiting for another merger
        for _ in range(64):
            if not merge_step(table.path, table.table_id, blocking=True, keyring=table.keyring):
                break
            if MODE != "inline" and len(_commit.read_state(table.path).parts) <= int(
                    setting(meta, "parts_to_delay_insert")):
                break
        if MODE == "inline":
            return
    with _WORKERS_LOCK:
        w = _WORKERS.get(table.path)
        if w is not None and not w.stopping.is_set():
            w.kicked = True
            return
        w = _Worker(table.path, table.table_id, table.keyring)
        _WORKERS[table.path] = w
        w.start()


def check_parts_to_throw(table) -> None:
    """ClickHouse's ``parts_to_throw_insert``: refuse an insert into a table
    whose merges cannot keep up."""
    st = _commit.read_state(table.path)
    limit = int(setting(st.meta, "parts_to_throw_insert"))
    if len(st.parts) > limit:
        raise SkipidxError(f"too many parts ({len(st.parts)}) in table {st.meta.name!r}: merges are slower than "
                           f"inserts (parts_to_throw_insert = {limit}); insert bigger batches or wait")


def stop_merges(path_prefix: str, timeout: float | None = 60.0) -> None:
    """Stop this process's background merges of tables under `path_prefix`
    and wait for them (DROP TABLE, Database.close)."""
    prefix = os.path.abspath(path_prefix)
    with _WORKERS_LOCK:
        ws = [w for d, w in _WORKERS.items() if d == prefix or d.startswith(prefix + os.sep)]
        for w in ws:
            w.stopping.set()
    for w in ws:
        if w is not threading.current_thread():
            w.join(timeout)


def wait_merges(path_prefix: str | None = None, timeout: float | None = None) -> None:
    """Wait until this process's background merges (of tables under
    `path_prefix`) have nothing left to do."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _WORKERS_LOCK:
            ws = [w for d, w in _WORKERS.items()
                  if path_prefix is None or d == os.path.abspath(path_prefix)
                  or d.startswith(os.path.abspath(path_prefix) + os.sep)]
        if not ws:
            return
        for w in ws:
            w.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if deadline is not None and time.monotonic() >= deadline:
            return


def merges_in_progress(table_dir: str) -> list[dict]:
    """The merges of a table running now in any process (from their staged dirs)."""
    tdir = os.path.join(table_dir, _commit.TMP_DIR)
    out = []
    try:
        names = sorted(os.listdir(tdir))
    except FileNotFoundError:
        return out
    for n in names:
        if not _commit._STAGED_NAME.match(n):
            continue
        p = os.path.join(tdir, n, MERGE_FILE)
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with open(fd, "rb") as f:
                info = json.loads(f.read(1 << 20).decode("utf-8", "replace"))
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict):
            continue
        srcs = info.get("sources")
        out.append({
            "result_part": str(info.get("part", "")),
            "num_parts": len(srcs) if isinstance(srcs, list) else 0,
            "source_parts": [str(x) for x in srcs] if isinstance(srcs, list) else [],
            "rows": int(info["rows"]) if isinstance(info.get("rows"), int) else 0,
            "elapsed_s": max(0.0, time.time() - float(info["started_unix"]))
            if isinstance(info.get("started_unix"), (int, float)) else 0.0,
        })
    return out
