"""External tables: ``ENGINE = ParquetFiles('glob')`` over Parquet files skipidx never writes.

The table directory holds only::

    external.json        the table: columns, indexes, the glob, and per data
                         file its identity (path, size, mtime, footer XXH64),
                         row-group sizes and sidecar entries (file, XXH64,
                         index fingerprint); skipped files with the reason
    sidecars/            <identity key>.<index>.arrow (skipidx.store.sidecar)
    write.lock           REFRESH serializes on it (queries never lock)

A data granule is one row group of a data file; an :class:`ExternalFile`
plays the part of a MergeTree part for the planner and the scan (``marks``,
``n_granules``, ``read``, ``index_entry``/``load_index``, ``granule_bytes``),
so queries go through the same plan -> prune -> scan. Besides the declared
indexes (sidecars), every file prunes by what its footer already holds:

* min/max statistics of every column with exact statistics (integers, dates,
  strings, bools), as a minmax index per column;
* the Parquet Bloom filters the writer put in the file (``=`` / ``IN``), read
  with the same code as ``read_bloom_filter`` and answered by the
  ``bloom_filter`` index condition (values hashed as Parquet hashes them);
* Hive ``key=value`` partition values, as a constant min/max per file.

Every query re-reads each file's identity through a descriptor it keeps
until the end of the query (a file renamed over, or deleted, while the query
runs is still read as it was); a file whose identity differs from what its
sidecars were built for is read with its footer's own pruning only (answers
exact), new files too; a file whose footer does not parse is skipped and
named in the query's notes; a file that vanished is not read.
"""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from skipidx.core.closing import Closing
from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.lazy import use_numpy_path
from skipidx.core.lru import LRU
from skipidx.core.types import ColumnType, cast_to
from skipidx.indexes.base import IndexDef
from skipidx.store.commit import EXTERNAL_STATE, WriteLock, fsync_dir, write_file_durably
from skipidx.store.lake import (DEFAULT_ZONE_ROWS, FileIdentity, HalfWritten, discover, zone_marks, glob_base, hive_partition, identity_of,
                                infer_columns, partition_types, probe)
from skipidx.store.metadata import TableMeta
from skipidx.store.part import index_fingerprint
from skipidx.store.sidecar import SIDECAR_DIR, build_file_sidecars, load_sidecar, sidecar_index_def

__all__ = ["EXTERNAL_STATE", "ENGINE", "ExternalTable", "ExternalFile", "ExternalSnapshot", "RefreshReport",
           "create_external_table", "is_external", "BuildJob", "run_build_job"]

ENGINE = "ParquetFiles"
#: engines whose tables keep this state (skipidx.store.iceberg: ENGINE = Iceberg)
ENGINES = (ENGINE, "Iceberg")
FORMAT = 1


def is_external(table_dir: str) -> bool:
    return os.path.isfile(os.path.join(table_dir, EXTERNAL_STATE))


# ------------------------------------------------------------------ state
@dataclass
class FileRecord:
    identity: FileIdentity
    row_groups: list[int]
    sidecars: dict[str, dict] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"identity": self.identity.to_json(), "row_groups": self.row_groups, "sidecars": self.sidecars}

    @staticmethod
    def from_json(o: Any, where: str) -> "FileRecord":
        if not isinstance(o, dict) or not isinstance(o.get("row_groups"), list) or not isinstance(o.get("sidecars"), dict):
            raise CorruptionError(f"{where}: bad file record")
        return FileRecord(FileIdentity.from_json(o.get("identity"), where), [int(x) for x in o["row_groups"]],
                          {str(k): dict(v) for k, v in o["sidecars"].items()})


@dataclass
class ExternalState:
    version: int
    meta: TableMeta
    source: str                               # absolute glob
    partition_columns: list[str]
    files: dict[str, FileRecord]              # absolute path -> record
    skipped: list[dict] = field(default_factory=list)
    #: rows of an index zone (lake.zone_marks); 0 (tables made before zones): row groups
    zone_rows: int = 0
    engine: str = ENGINE
    #: what the engine keeps besides the files (ENGINE = Iceberg: catalog, snapshot, deletes)
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"format": FORMAT, "engine": self.engine, "version": self.version, "meta": self.meta.to_json(),
                "source": self.source, "partition_columns": self.partition_columns,
                "files": {p: r.to_json() for p, r in sorted(self.files.items())}, "skipped": self.skipped,
                **({"zone_rows": self.zone_rows} if self.zone_rows else {}),
                **({"extra": self.extra} if self.extra else {})}

    @staticmethod
    def from_json(o: Any, where: str) -> "ExternalState":
        if not isinstance(o, dict) or o.get("format") != FORMAT or o.get("engine") not in ENGINES:
            raise CorruptionError(f"{where}: not an external table state of format {FORMAT}")
        try:
            files = {str(p): FileRecord.from_json(r, f"{where}: {p}") for p, r in o["files"].items()}
            return ExternalState(int(o["version"]), TableMeta.from_json(o["meta"], where), str(o["source"]),
                                 [str(c) for c in o["partition_columns"]], files, list(o.get("skipped", [])),
                                 int(o.get("zone_rows", 0)), str(o["engine"]), dict(o.get("extra") or {}))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptionError(f"{where}: damaged external table state ({type(e).__name__}: {e})") from None


def _read_state(table_dir: str) -> ExternalState:
    path = os.path.join(table_dir, EXTERNAL_STATE)
    try:
        with open(path, "rb") as f:
            raw = f.read()
        doc = json.loads(raw)
    except (OSError, ValueError) as e:
        raise CorruptionError(f"unreadable external table state: {e}", path=path) from None
    if not isinstance(doc, dict) or "state" not in doc or doc.get("xxh64") != xxhash.xxh64_hexdigest(
            json.dumps(doc["state"], sort_keys=True, separators=(",", ":")).encode()):
        raise CorruptionError("external table state checksum mismatch", path=path)
    return ExternalState.from_json(doc["state"], path)


def _write_state(table_dir: str, st: ExternalState) -> None:
    body = st.to_json()
    doc = {"state": body, "xxh64": xxhash.xxh64_hexdigest(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())}
    tmp = os.path.join(table_dir, f".{EXTERNAL_STATE}.{os.urandom(6).hex()}.tmp")
    write_file_durably(tmp, json.dumps(doc, indent=1, sort_keys=True).encode())
    os.replace(tmp, os.path.join(table_dir, EXTERNAL_STATE))
    fsync_dir(table_dir)


# ------------------------------------------------------------------ partitions
def _partition_values(meta: TableMeta, part: dict[str, str | None], columns: Sequence[str]) -> dict[str, Any]:
    """The typed partition values of one file (cast to the declared types)."""
    out: dict[str, Any] = {}
    for c in columns:
        v = part.get(c)
        ct = meta.column(c).type
        if v is None:
            if not ct.nullable:
                raise SkipidxError(f"partition column {c!r} is NULL in a file but declared {ct.name}")
            out[c] = None
            continue
        try:
            # a directory name is text: parsed as the declared type (Arrow's string cast), range-checked
            out[c] = cast_to(ct, pa.array([v], pa.string()).cast(ct.arrow_type), c)[0].as_py()
        except SkipidxError as e:
            raise SkipidxError(f"partition value {c}={v!r}: {e.message}") from None
        except (pa.ArrowException, ValueError) as e:
            raise SkipidxError(f"partition value {c}={v!r} is no {ct.name}: {e}") from None
    return out


# ------------------------------------------------------------------ build jobs
@dataclass
class BuildJob:
    """Build the sidecars of `indexes` for one data file (picklable: Spark ships it to a task)."""

    path: str
    identity: dict
    meta: dict               # TableMeta JSON
    indexes: list[str]
    partition: dict
    out_dir: str
    zone_rows: int = 0
    #: threads one build may use (None: the index types' default, the machine's cores)
    threads: int | None = None


def run_build_job(job: BuildJob) -> dict:
    """Run one build job: ``{"path", "sidecars": {...}}`` or ``{"path", "changed": reason}``
    when the file is no longer the version the driver saw (it is then left unindexed)."""
    meta = TableMeta.from_json(job.meta, "build job")
    want = FileIdentity.from_json(job.identity, "build job")
    try:
        fd = os.open(job.path, os.O_RDONLY)
    except FileNotFoundError:
        return {"path": job.path, "changed": "vanished"}
    try:
        try:
            ident, md = probe(job.path, fd)
        except HalfWritten as e:
            return {"path": job.path, "changed": e.message}
        if ident != want:
            return {"path": job.path, "changed": "changed since discovery"}
        with pa.OSFile(_fd_path(fd, job.path)) as src:
            entries = build_file_sidecars(job.path, ident, md, meta, [meta.index(n) for n in job.indexes],
                                          job.partition, job.out_dir, source=src, zone_rows=job.zone_rows,
                                          threads=job.threads)
        # the descriptor read the version checked above; say so if the path moved on meanwhile
        st = os.fstat(fd)
        if (st.st_size, st.st_mtime_ns) != (ident.size, ident.mtime_ns):
            return {"path": job.path, "changed": "changed while indexed"}
        return {"path": job.path, "sidecars": entries}
    finally:
        os.close(fd)


def _fd_path(fd: int, path: str) -> str:
    """A path that opens the same file as `fd` (Linux /proc), else `path`."""
    p = f"/proc/self/fd/{fd}"
    return p if os.path.exists(p) else path


def local_builder(jobs: list[BuildJob], threads: int | None = None) -> list[dict]:
    """Run build jobs in this process (a few threads: Parquet decoding and the kernels release the GIL)."""
    if not jobs:
        return []
    n = threads or max(1, os.cpu_count() or 1)
    if n == 1 or len(jobs) == 1:
        return [run_build_job(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="skipidx-sidecar") as ex:
        return list(ex.map(run_build_job, jobs))


@dataclass
class RefreshReport:
    """What a CREATE or REFRESH did."""

    indexed: list[str] = field(default_factory=list)      # new files, sidecars built
    rebuilt: list[str] = field(default_factory=list)      # changed files (or new indexes), sidecars rebuilt
    removed: list[str] = field(default_factory=list)      # files gone: their sidecars dropped
    unchanged: int = 0
    skipped: list[dict] = field(default_factory=list)     # {"path", "reason"}: half-written / changed meanwhile
    sidecars_written: int = 0
    seconds: float = 0.0
    #: what else the engine did (ENGINE = Iceberg: the snapshot read, the Puffin file written)
    notes: list[str] = field(default_factory=list)

    def message(self) -> str:
        s = (f"indexed {len(self.indexed)} new files, rebuilt {len(self.rebuilt)}, removed {len(self.removed)}, "
             f"unchanged {self.unchanged}, skipped {len(self.skipped)}")
        if self.skipped:
            s += " (" + "; ".join(f"{os.path.basename(x['path'])}: {x['reason']}" for x in self.skipped[:5]) + ")"
        return "; ".join([s] + self.notes)

    def as_dict(self) -> dict:
        return {"indexed": self.indexed, "rebuilt": self.rebuilt, "removed": self.removed,
                "unchanged": self.unchanged, "skipped": self.skipped, "sidecars_written": self.sidecars_written,
                "seconds": self.seconds, "notes": self.notes}


# ------------------------------------------------------------------ the table
class ExternalTable:
    """An external table (ENGINE = ParquetFiles)."""

    kind = "external"
    #: the engine whose state this class reads (a subclass: another engine's)
    engine = ENGINE

    def __init__(self, path: str) -> None:
        self.path = path
        self._state: ExternalState | None = None
        self._state_key: tuple | None = None
        self._lock = threading.Lock()

    # ---- state -----------------------------------------------------------
    def state(self) -> ExternalState:
        p = os.path.join(self.path, EXTERNAL_STATE)
        try:
            st = os.stat(p)
        except FileNotFoundError:
            raise SkipidxError(f"table {os.path.basename(self.path)!r} was dropped") from None
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if self._state is None or self._state_key != key:
                st = _read_state(self.path)
                if st.engine != self.engine:
                    raise SkipidxError(f"table {st.meta.name!r} is ENGINE = {st.engine}, which this reader "
                                       f"({type(self).__name__}) does not read")
                self._state = st
                self._state_key = key
            return self._state

    @property
    def meta(self) -> TableMeta:
        return self.state().meta

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def source(self) -> str:
        return self.state().source

    @property
    def engine_sql(self) -> str:
        """The ENGINE clause's value as SHOW CREATE TABLE prints it."""
        from skipidx.sql import ast as A

        return f"ParquetFiles({A.quote_string(self.source.encode())})"

    def data_paths(self, st: ExternalState) -> list[str]:
        """The data files of state `st` a query reads (ParquetFiles: what the glob matches now)."""
        return discover(st.source)

    def _discover(self, st: ExternalState) -> list[str]:
        """The data files a REFRESH indexes (it may update `st`, which REFRESH then publishes)."""
        return discover(st.source)

    def __repr__(self) -> str:
        return f"ExternalTable({self.path!r})"

    # ---- refusals --------------------------------------------------------
    def _read_only(self, what: str) -> SkipidxError:
        return SkipidxError(f"table {self.name!r} is an external table (ENGINE = ParquetFiles): {what} is not "
                            "supported; its data files are never written")

    def insert(self, data: Any, **_: Any) -> int:
        raise self._read_only("INSERT")

    def insert_file(self, path: str, format: str | None = None, **_: Any) -> int:
        raise self._read_only("INSERT")

    def optimize(self, final: bool = False, **_: Any) -> int:
        raise self._read_only("OPTIMIZE")

    # ---- indexes ---------------------------------------------------------
    def add_index(self, defn: IndexDef, *, if_not_exists: bool = False) -> bool:
        """Declare an index; REFRESH (or MATERIALIZE INDEX) builds its sidecars."""
        from skipidx.store.metadata import make_index_meta

        with WriteLock(self.path):
            st = _read_state(self.path)
            if any(i.name == defn.name for i in st.meta.indexes):
                if if_not_exists:
                    return False
                raise SkipidxError(f"table {st.meta.name!r} already has an index {defn.name!r}")
            im = make_index_meta(sidecar_index_def(defn), st.meta.column(defn.column).type)
            st.meta = st.meta.with_indexes(list(st.meta.indexes) + [im]).validate()
            st.version += 1
            _write_state(self.path, st)
        return True

    def drop_index(self, name: str, *, if_exists: bool = False) -> bool:
        with WriteLock(self.path):
            st = _read_state(self.path)
            if not any(i.name == name for i in st.meta.indexes):
                if if_exists:
                    return False
                st.meta.index(name)   # raises, listing the indexes
            st.meta = st.meta.with_indexes([i for i in st.meta.indexes if i.name != name])
            for r in st.files.values():
                r.sidecars.pop(name, None)
            st.version += 1
            _write_state(self.path, st)
            self._collect_garbage(st, None)
        return True

    def materialize_index(self, name: str) -> int:
        self.meta.index(name)
        return len(self.refresh().rebuilt)

    # ---- REFRESH ---------------------------------------------------------
    def refresh(self, builder: Callable[[list[BuildJob]], list[dict]] | None = None) -> RefreshReport:
        """Index new data files, rebuild the sidecars of changed ones (and of indexes
        they lack), drop removed ones; publish the new state atomically.

        `builder` runs the build jobs (default: this process; the Spark
        pipeline passes one that runs a task per file). Every sidecar goes to
        a staging directory first; the state is published only when every job
        came back, so a failed build changes nothing (all or nothing). A file
        that changed while it was indexed is left unindexed and reported."""
        t0 = time.perf_counter()
        with WriteLock(self.path):
            st = _read_state(self.path)
            rep = RefreshReport()
            base = glob_base(st.source)
            found = self._discover(st)
            jobs: list[BuildJob] = []
            new_files: dict[str, FileRecord] = {}
            kinds: dict[str, str] = {}
            staging = os.path.join(self.path, f".staging-{os.urandom(6).hex()}")
            meta_json = st.meta.to_json()
            fps = {im.name: index_fingerprint(im) for im in st.meta.indexes}
            for p in found:
                try:
                    ident, md = probe(p)
                except FileNotFoundError:
                    continue
                except HalfWritten as e:
                    rep.skipped.append({"path": p, "reason": e.message})
                    continue
                except OSError as e:
                    rep.skipped.append({"path": p, "reason": f"unreadable: {e.strerror or e}"})
                    continue
                old = st.files.get(p)
                rgs = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
                keep: dict[str, dict] = {}
                if old is not None and old.identity == ident:
                    keep = {n: e for n, e in old.sidecars.items() if fps.get(n) == e.get("fingerprint")
                            and os.path.isfile(os.path.join(self.path, SIDECAR_DIR, e["file"]))}
                todo = [n for n in fps if n not in keep]
                new_files[p] = FileRecord(ident, rgs, keep)
                if not todo:
                    rep.unchanged += 1
                    continue
                try:
                    part = _partition_values(st.meta, hive_partition(p, base), st.partition_columns)
                except SkipidxError as e:
                    rep.skipped.append({"path": p, "reason": e.message})
                    new_files.pop(p)
                    continue
                kinds[p] = "indexed" if old is None else "rebuilt"
                jobs.append(BuildJob(p, ident.to_json(), meta_json, todo, part, staging, st.zone_rows))
            os.makedirs(staging, exist_ok=True)
            try:
                results = (builder or local_builder)(jobs)
                if len(results) != len(jobs) or {r.get("path") for r in results} != {j.path for j in jobs}:
                    raise SkipidxError("sidecar build returned an incomplete result; nothing was committed")
                sdir = os.path.join(self.path, SIDECAR_DIR)
                os.makedirs(sdir, exist_ok=True)
                for r in results:
                    p = r["path"]
                    if "changed" in r:
                        rep.skipped.append({"path": p, "reason": r["changed"]})
                        new_files.pop(p, None)
                        continue
                    for n, e in r["sidecars"].items():
                        os.replace(os.path.join(staging, e["file"]), os.path.join(sdir, e["file"]))
                        new_files[p].sidecars[n] = e
                        rep.sidecars_written += 1
                    (rep.indexed if kinds[p] == "indexed" else rep.rebuilt).append(p)
                fsync_dir(sdir)
                # (a skipped file that had sidecars loses them too: it is reported as skipped)
                rep.removed = sorted(set(st.files) - set(new_files) - {x["path"] for x in rep.skipped})
                prev = st.files
                st.files = new_files
                st.skipped = rep.skipped
                st.version += 1
                _write_state(self.path, st)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            self._collect_garbage(st, prev)
        rep.seconds = time.perf_counter() - t0
        return rep

    def _collect_garbage(self, st: ExternalState, prev: dict[str, FileRecord] | None) -> None:
        """Delete sidecars neither the new state nor the one before references (a query
        that started before this refresh may still load the previous ones; one that
        finds a sidecar gone answers without it)."""
        sdir = os.path.join(self.path, SIDECAR_DIR)
        live = {e["file"] for r in st.files.values() for e in r.sidecars.values()}
        if prev:
            live |= {e["file"] for r in prev.values() for e in r.sidecars.values()}
        try:
            names = os.listdir(sdir)
        except FileNotFoundError:
            return
        for n in names:
            if n not in live:
                try:
                    os.unlink(os.path.join(sdir, n))
                except OSError:
                    pass

    # ---- reading ---------------------------------------------------------
    def snapshot(self, only: Iterable[str] | None = None) -> "ExternalSnapshot":
        return self.snapshot_class(self, self.state(), only)

    def num_rows(self) -> int:
        with self.snapshot() as s:
            return int(sum(p.num_rows for p in s.parts))

    def read(self, columns: list[str] | None = None) -> pa.Table:
        with self.snapshot() as s:
            cols = s.meta.column_names if columns is None else columns
            ts = [p.read(cols) for p in s.parts]
            return pa.concat_tables(ts) if ts else s.meta.arrow_schema().empty_table().select(cols)


def resolve_source(source: Any) -> str:
    """The absolute glob of ``ParquetFiles(source)`` (a directory means all ``*.parquet`` under it)."""
    if not isinstance(source, str) or not source.strip():
        raise SkipidxError("ENGINE = ParquetFiles needs a path or glob of Parquet files, e.g. ParquetFiles('lake/**/*.parquet')")
    src = os.path.abspath(os.path.expanduser(source))
    if os.path.isdir(src):
        src = os.path.join(src, "**", "*.parquet")
    return src


def lake_columns(src: str) -> tuple[list[tuple[str, ColumnType]], list[str], dict[str, ColumnType], list[str]]:
    """What the files under glob `src` hold: (inferred file columns, columns left out for want of
    a type, Hive partition keys with their inferred types, half-written files)."""
    files = discover(src)
    schemas = []
    half = []
    for p in files:
        try:
            _, md = probe(p)
            schemas.append(md.schema.to_arrow_schema())
        except HalfWritten:
            half.append(p)
        except OSError:
            pass
    ptypes = partition_types(hive_partition(p, glob_base(src)) for p in files)
    cols, left_out = infer_columns(schemas)
    return [(n, t) for n, t in cols if n not in ptypes], left_out, ptypes, half


def create_external_table(table_dir_tmp: str, meta: TableMeta, src: str, partition_columns: list[str],
                          builder: Callable[[list[BuildJob]], list[dict]] | None = None,
                          zone_rows: int | None = None) -> RefreshReport:
    """Write a new external table (validated `meta`, absolute glob `src`) into the empty
    directory `table_dir_tmp` and build the sidecars of its files (zones of `zone_rows`
    rows, default :data:`~skipidx.store.lake.DEFAULT_ZONE_ROWS`)."""
    meta.validate()
    st = ExternalState(0, meta, src, list(partition_columns), {}, [],
                       DEFAULT_ZONE_ROWS if zone_rows is None else int(zone_rows))
    os.makedirs(os.path.join(table_dir_tmp, SIDECAR_DIR), exist_ok=True)
    _write_state(table_dir_tmp, st)
    return ExternalTable(table_dir_tmp).refresh(builder)


# ------------------------------------------------------------------ the files of one query
#: A query keeps the descriptors of up to this many files open from the identity check
#: on; the files beyond are opened (and checked again) when read.
KEEP_OPEN = 256


class _FileInfo:
    """What a query needs of one version of a data file, derived from its footer once."""

    __slots__ = ("marks", "rg_marks", "zone_rg", "schema", "columns", "blooms", "col_bytes", "_dictionary", "_md", "leaves",
                 "byte_leaves", "schema_elements", "layouts")

    def __init__(self, md: pq.FileMetaData, zone_rows: int = 0) -> None:
        rg = np.fromiter((md.row_group(i).num_rows for i in range(md.num_row_groups)), dtype=np.int64,
                         count=md.num_row_groups)
        #: zone (granule) marks, row-group marks, and each zone's row group
        self.marks = zone_marks(rg, zone_rows)
        self.marks.setflags(write=False)
        self.rg_marks = zone_marks(rg, 0)
        self.rg_marks.setflags(write=False)
        self.zone_rg = np.searchsorted(self.rg_marks, self.marks[:-1], side="right") - 1
        self.schema = md.schema.to_arrow_schema()
        self.columns = frozenset(self.schema.names)
        blooms = set()
        for j in range(md.num_columns):
            name = md.schema.column(j).path
            if "." not in name and any(md.row_group(i).column(j).bloom_filter_offset is not None
                                       for i in range(md.num_row_groups)):
                blooms.add(name)
        self.blooms = frozenset(blooms)
        self.col_bytes: dict[str, float] = {}
        # (derived on first use: only the files a query reads need it)
        self._md: pq.FileMetaData | None = md
        self._dictionary: frozenset | None = None
        #: columns of a flat schema -> leaf number (read page by page), BYTE_ARRAY ones (page prefilter)
        flat = all("." not in md.schema.column(j).path and md.schema.column(j).max_repetition_level == 0
                   for j in range(md.num_columns))
        self.leaves = {md.schema.column(j).path: j for j in range(md.num_columns)} if flat else {}
        self.byte_leaves = {c: j for c, j in self.leaves.items() if md.schema.column(j).physical_type == "BYTE_ARRAY"}
        #: Thrift bytes of the footer's schema elements (read on first use), page layouts by (row group, leaf)
        self.schema_elements: list | None = None
        self.layouts: dict = {}

    @property
    def dictionary(self) -> frozenset:
        """String columns whose every chunk is dictionary-encoded throughout."""
        if self._dictionary is not None:
            return self._dictionary
        md = self._md
        # String columns whose every chunk is dictionary-encoded throughout: the data pages
        # hold indices (at most 4 bytes a row), not values a writer fell back to plain for
        dic = set()
        for j in range(md.num_columns):
            c0 = md.schema.column(j)
            if c0.physical_type != "BYTE_ARRAY" or "." in c0.path or not md.num_row_groups:
                continue
            ok = True
            for i in range(md.num_row_groups):
                cc = md.row_group(i).column(j)
                dpo = cc.dictionary_page_offset
                if not cc.has_dictionary_page or dpo is None or cc.data_page_offset < dpo:
                    ok = False
                    break
                if cc.total_compressed_size - (cc.data_page_offset - dpo) > 4 * max(1, cc.num_values):
                    ok = False
                    break
            if ok:
                dic.add(c0.path)
        self._dictionary = frozenset(dic)
        return self._dictionary


#: per file identity (a new version of a file is a new key)
_FILE_INFO = LRU(4096, "store.external_files", "marks, schema and Bloom columns of external data files, by file identity")
#: decoded dictionary pages, by (file identity, row group, leaf); each entry also holds the
#: xxh64 of the page's raw bytes, checked against the bytes read by every use
_DICTIONARIES = LRU(256, "store.page_dictionaries", "decoded dictionary pages of external files' column chunks, "
                    "by (file identity, row group, leaf), checked against the page's bytes", max_bytes=64 << 20)


class ExternalFile:
    """One data file in one query: the granule source the planner and the scan read
    (a MergeTree Part's interface; a granule is a row group)."""

    #: rows of the data file a reader must not return (ENGINE = Iceberg's deletes); see IcebergFile
    deleted_rows: int = 0

    def __init__(self, snap: "ExternalSnapshot", path: str, fd: int, ident: FileIdentity, md: pq.FileMetaData,
                 record: FileRecord | None, partition: dict[str, Any]) -> None:
        self.snap = snap
        self.meta = snap.meta
        self.data_path = path
        self.name = os.path.relpath(path, snap.base) if snap.base != os.sep else path
        #: cache key of this version of the file (IndexCache keys on it)
        self.path = f"{path}@{ident.key}"
        self._fd = fd
        self.identity = ident
        self.md = md
        self.record = record if record is not None and record.identity == ident else None
        self.partition = partition
        zr = snap.state.zone_rows
        info = _FILE_INFO.get((ident, zr))
        if info is None:
            info = _FileInfo(md, zr)
            _FILE_INFO.put((ident, zr), info)
        self._info = info
        self.marks = info.marks
        self.num_rows = int(self.marks[-1])
        self._arrow_schema = info.schema
        self._file_cols = info.columns
        self._col_bytes = info.col_bytes

    def __repr__(self) -> str:
        return f"ExternalFile({self.name!r}, rows={self.num_rows}, row_groups={self.n_granules})"

    @property
    def n_granules(self) -> int:
        return int(self.marks.shape[0] - 1)

    #: a granule (row group) is large: reading a WHERE's dictionary-encoded String column as
    #: an Arrow dictionary (the filter then runs on the distinct values) pays from one on
    dictionary_min_granules = 1
    #: String pages read in place (Part.string_pages): parts only
    string_pages = None

    @property
    def dictionary_columns(self) -> frozenset:
        """String columns whose chunks are dictionary-encoded throughout (read as Arrow
        dictionaries when the scan asks: no string is copied per row)."""
        return self._info.dictionary

    @property
    def stale(self) -> bool:
        """The table recorded another version of this file (its sidecars are not used)."""
        rec = self.snap.state.files.get(self.data_path)
        return rec is not None and rec.identity != self.identity

    def granule_bytes(self, columns: Sequence[str]) -> float:
        md = self.md
        pos = None
        out = 0.0
        for c in columns:
            v = self._col_bytes.get(c)
            if v is None:
                if pos is None:
                    pos = {md.schema.column(j).path.split(".")[0]: j for j in range(md.num_columns)}
                j = pos.get(c)
                n = md.num_row_groups
                v = (sum(md.row_group(i).column(j).total_compressed_size for i in range(n)) / max(self.n_granules, 1)
                     if j is not None and n else 0.0)
                self._col_bytes[c] = v
            out += v
        return out

    @property
    def fd(self) -> int:
        """The descriptor of this version of the file: the one the query checked the identity
        through (the bytes read are that version's, even if the path is renamed over); for a
        query over more than :data:`KEEP_OPEN` files, opened on first use and checked again."""
        if self._fd is None:
            try:
                fd = os.open(self.data_path, os.O_RDONLY)
            except OSError as e:
                raise self._changed(f"cannot open: {e.strerror or e}") from None
            try:
                ident, _ = identity_of(fd, self.data_path)
            except (SkipidxError, OSError) as e:
                os.close(fd)
                raise self._changed(getattr(e, "message", str(e))) from None
            if ident != self.identity:
                os.close(fd)
                raise self._changed("replaced")
            self._fd = self.snap._adopt(fd)
        return self._fd

    def _open(self, columns: int = 2, read_dictionary: Sequence[str] = ()) -> pq.ParquetFile:
        src = pa.OSFile(_fd_path(self.fd, self.data_path))
        # pre-buffering coalesces the reads of several column chunks; for one it only adds a copy
        return pq.ParquetFile(src, metadata=self.md, pre_buffer=columns > 1,
                              read_dictionary=list(read_dictionary) or None)

    def data_metadata(self, columns: Iterable[str] = ()) -> pq.FileMetaData:
        """The data file's footer (row-group statistics) for the pruner."""
        return self._open_data().metadata

    def key_statistics(self, column: str) -> None:
        """None: an external file's statistics are in its footer only."""
        return None

    def _open_data(self) -> pq.ParquetFile:
        return self._open()

    @property
    def zone_rows(self) -> int:
        return self.snap.state.zone_rows

    def row_groups_of(self, ranges: Iterable[tuple[int, int]]) -> list[int]:
        """The row groups holding zones [a, b) per range."""
        zrg = self._info.zone_rg
        return sorted({int(zrg[z]) for a, b in ranges for z in range(a, b)})

    def needle_column(self, needles: dict) -> str | None:
        """The column of `needles` (column -> byte strings every matching row holds) whose
        pages this file can prefilter (:mod:`skipidx.store.parquet_pages`), else None."""
        best = None
        for c, ns in needles.items():
            if c in self._info.byte_leaves and c not in self.partition and ns and (
                    best is None or max(map(len, ns)) > max(map(len, needles[best]))):
                best = c
        return best

    def _layout(self, g: int, j: int):
        """The page layout of leaf `j` in row group `g` (cached per file version), or None."""
        from skipidx.store import parquet_pages as pp

        info = self._info
        key = (g, j)
        lay = info.layouts.get(key)
        if lay is None:
            try:
                if info.schema_elements is None:
                    els = pp.footer_schema_elements(self.fd, self.identity.size, self.data_path)
                    info.schema_elements = els if len(els) == self.md.num_columns + 1 else False
                if info.schema_elements is False:
                    return None
                rg = self.md.row_group(g)
                lay = pp.chunk_layout(self.fd, rg.column(j), rg.num_rows, self.data_path)
            except (SkipidxError, OSError, pa.ArrowException, ValueError, KeyError):
                lay = False
            info.layouts[key] = lay
        return lay or None

    def _dictionary_rows(self, g: int, j: int, lay, pages: np.ndarray, pos: np.ndarray, want: pa.DataType,
                         as_dict: bool) -> pa.Array | None:
        """The rows at positions `pos` of the dictionary-encoded data pages `pages` of leaf
        `j` in row group `g`: the indices decoded here against the chunk's dictionary page,
        decoded once per version of the file (:data:`_DICTIONARIES`; the page's bytes are
        read and compared each time); None where this path does not apply."""
        from skipidx.store import parquet_pages as pp

        strings = (pa.types.is_string(want) or pa.types.is_large_string(want) or pa.types.is_binary(want)
                   or pa.types.is_large_binary(want))
        if not pp.dictionary_pages(lay, pages) or not (
                strings or pa.types.is_integer(want) or (pa.types.is_floating(want) and not pa.types.is_float16(want))):
            return None
        max_def = self.md.schema.column(j).max_definition_level
        raw = pp.dictionary_page(self.fd, lay)
        digest = xxhash.xxh3_64_intdigest(raw)
        key = (self.identity, g, j)
        hit = _DICTIONARIES.get(key)
        dic = hit[1] if hit is not None and hit[0] == digest else None
        if dic is None and strings and not use_numpy_path(int(lay.dict_span[3]) + int(lay.uncompressed[pages].sum())):
            # (numba is loaded: the kernel unpacks the page, no framed file for pyarrow)
            dic = pp.plain_string_dictionary(lay, raw, want)
            if dic is not None:
                _DICTIONARIES.put(key, (digest, dic), dic.nbytes)
        if dic is None:
            if strings:
                # pyarrow decodes the dictionary page (with these pages' indices: used as they are)
                col = pp.decode_pages(self.fd, lay, pages, self._info.schema_elements[j + 1],
                                      self.md.schema.column(j).path, dictionary=True)
                ch = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
                if not pa.types.is_dictionary(ch.type) or len(ch.dictionary) != lay.dict_values:
                    return None      # (a dictionary pyarrow deduplicated: its indices are not the page's)
                dic = ch.dictionary if ch.dictionary.type == want else ch.dictionary.cast(want)
                _DICTIONARIES.put(key, (digest, dic), dic.nbytes)
                ind = ch.indices.cast(pa.int32()).take(pa.array(pos))
                return pa.DictionaryArray.from_arrays(ind, dic) if as_dict else dic.take(ind)
            dic = pp.plain_dictionary(lay, raw, want)
            if dic is None:
                return None
            _DICTIONARIES.put(key, (digest, dic), dic.nbytes)
        # the indices are decoded by a numba kernel: a process that has not loaded numba reads
        # its first pages as before (framed for pyarrow), as the other kernels' numpy paths do
        if use_numpy_path(int(lay.dict_span[3]) + int(lay.uncompressed[pages].sum())):
            return None
        first, stop = int(pos[0]), int(pos[-1]) + 1         # (pos ascending)
        idx, valid = pp.dictionary_indices(self.fd, lay, pages, max_def, len(dic), first, stop)
        if stop - first != pos.shape[0]:
            pos = pos - first
            idx = idx[pos]
            valid = None if valid is None else valid[pos]
        ind = pa.array(idx, mask=None if valid is None else ~valid)
        if as_dict and strings:
            return pa.DictionaryArray.from_arrays(ind, dic)
        return dic.take(ind)

    def _rows_of(self, g: int, column: str, rows: np.ndarray, whole: bool, as_dict: bool = False) -> pa.ChunkedArray:
        """Column `column` at rows `rows` (ascending, within row group `g`): the pages
        holding them decoded (dictionary-encoded pages here, against a cached dictionary;
        others as a one-column Parquet file of those pages), or the row group's column read
        whole and taken when the pages cannot be read here. `as_dict`: a String column
        comes back as an Arrow dictionary array where its pages are dictionary-encoded."""
        from skipidx.store import parquet_pages as pp

        want = self._arrow_schema.field(column).type
        j = self._info.leaves.get(column)
        lay = None if whole or j is None else self._layout(g, j)
        if lay is not None:
            page = np.searchsorted(lay.first_rows, rows, side="right") - 1
            pages = page[np.flatnonzero(np.diff(page, prepend=-1))]      # (rows ascending)
            before = np.zeros(lay.rows.shape[0], dtype=np.int64)
            before[pages] = np.cumsum(lay.rows[pages]) - lay.rows[pages]
            pos = before[page] + rows - lay.first_rows[page]
            try:
                arr = self._dictionary_rows(g, j, lay, pages, pos, want, as_dict)
                if arr is not None:
                    return pa.chunked_array([arr])
            except (SkipidxError, OSError, pa.ArrowException, ValueError, IndexError):
                pass
            try:
                col = pp.decode_pages(self.fd, lay, pages, self._info.schema_elements[j + 1], column)
                if col.type != want:
                    col = col.cast(want)
                if pages.shape[0] != lay.rows.shape[0] or rows.shape[0] != int(lay.rows.sum()):
                    col = col.take(pa.array(pos))
                return col
            except (SkipidxError, OSError, pa.ArrowException, ValueError):
                pass
        with self._open(1) as pf:
            col = pf.read_row_group(g, columns=[column], use_threads=False).column(0)
        return col if whole else col.take(pa.array(rows))

    def _read_rows(self, ranges: list[tuple[int, int]], file_cols: list[str], needles: dict | None,
                   as_dict: tuple, use_threads: bool | None) -> tuple[pa.Table | None, int]:
        """Rows of the zones `ranges` (granule ranges): whole row groups read by pyarrow as
        they are; a row group only partly kept (zones finer than row groups), or whose
        pages of a needle column lack a needle, read page by page (skipidx.store.parquet_pages).
        (table of `file_cols`, rows)."""
        from skipidx.store import parquet_pages as pp

        info = self._info
        zm, rgm, zrg = self.marks, info.rg_marks, info.zone_rg
        # kept rows per row group, as [lo, hi) intervals within it
        per_rg: dict[int, list[tuple[int, int]]] = {}
        for a, b in ranges:
            for z in range(a, b):
                g = int(zrg[z])
                lo, hi = int(zm[z] - rgm[g]), int(zm[z + 1] - rgm[g])
                iv = per_rg.setdefault(g, [])
                if iv and iv[-1][1] == lo:
                    iv[-1] = (iv[-1][0], hi)
                else:
                    iv.append((lo, hi))
        pcol = self.needle_column(needles) if needles else None
        if pcol is not None and pcol not in file_cols:
            pcol = None
        pieces: list[pa.Table] = []
        whole: list[int] = []
        schema = pa.schema([self._arrow_schema.field(c) for c in file_cols])
        if as_dict:
            schema = pa.schema([f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in as_dict else f
                                for f in schema])

        def flush() -> None:
            if whole:
                with self._open(len(file_cols), as_dict) as pf:
                    pieces.append(pf.read_row_groups(
                        whole, columns=file_cols, use_threads=len(file_cols) > 1 if use_threads is None else use_threads))
                whole.clear()

        for g in sorted(per_rg):
            iv = per_rg[g]
            size = int(rgm[g + 1] - rgm[g])
            full = len(iv) == 1 and iv[0] == (0, size)
            rows = None if full else np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in iv])
            if pcol is not None and rows is None:
                # (a row group only partly kept is read page by page already: its needle
                # pages would be decompressed twice for the few a zone's filter let through)
                lay = self._layout(g, info.leaves[pcol])
                if lay is not None:
                    try:
                        hit = pp.matching_pages(self.fd, lay, needles[pcol])
                    except (SkipidxError, OSError, pa.ArrowException, ValueError):
                        hit = None
                    if hit is not None and not hit.all():
                        rows = pp.matching_rows(lay, hit)
            if rows is None:
                whole.append(g)
                continue
            if rows.shape[0] == 0:
                continue
            flush()
            arrays = [self._rows_of(g, c, rows, False, c in as_dict) for c in file_cols]
            pieces.append(pa.Table.from_arrays(arrays, names=file_cols).cast(schema) if as_dict
                          else pa.Table.from_arrays(arrays, schema=schema))
        flush()
        if not pieces:
            return None, 0
        if len(pieces) > 1:
            first = pieces[0].schema
            t = pa.concat_tables([p if p.schema == first else p.cast(first) for p in pieces])
        else:
            t = pieces[0]
        return t, t.num_rows

    def read(self, columns: Sequence[str] | None = None, mark_ranges: Sequence[tuple[int, int]] | None = None, *,
             use_threads: bool | None = None, dictionary: Iterable[str] = (), needles: dict | None = None) -> pa.Table:
        """Rows of zones [a, b) per range (row groups, or finer zones), `columns` as the
        table declares them.

        `needles` (column -> byte strings that every row the caller keeps holds; from
        the WHERE, :func:`skipidx.execution.scan.required_substrings`): only the rows
        of the pages of that column whose bytes hold them all are returned (the others
        cannot pass the WHERE)."""
        meta = self.meta
        cols = meta.column_names if columns is None else list(columns)
        ranges = [(0, self.n_granules)] if mark_ranges is None else list(mark_ranges)
        n = int(sum(int(self.marks[b] - self.marks[a]) for a, b in ranges))
        file_cols = [c for c in cols if c in self._file_cols and c not in self.partition]
        as_dict = tuple(c for c in file_cols if c in dictionary and c in self.dictionary_columns
                        and pa.types.is_string(meta.column(c).type.arrow_type)) if dictionary else ()
        if n and file_cols:
            try:
                t, got = self._read_rows(ranges, file_cols, needles, as_dict, use_threads)
            except (OSError, pa.ArrowException) as e:
                raise self._changed(f"unreadable: {e}") from None
            if got != n and not needles:
                raise self._changed(f"read {got} rows where the footer says {n}")
            n = got
        else:
            t = None
        st = os.fstat(self.fd)
        if (st.st_size, st.st_mtime_ns) != (self.identity.size, self.identity.mtime_ns):
            raise self._changed("changed while the query read it")
        arrays = []
        for c in cols:
            ct = meta.column(c).type
            if c in self.partition:
                v = self.partition[c]
                arr = pa.nulls(n, ct.arrow_type) if v is None else pa.array(np.full(n, v) if not isinstance(v, str)
                                                                              else [v] * n, ct.arrow_type)
            elif t is not None and c in t.column_names:
                col = t.column(c)
                if c in as_dict and col.type == pa.dictionary(pa.int32(), ct.arrow_type) and (
                        ct.nullable or col.null_count == 0):
                    arr = col      # the caller asked for this String column as a dictionary
                else:
                    if pa.types.is_dictionary(col.type):
                        col = col.cast(col.type.value_type)
                    arr = col if col.type == ct.arrow_type and (ct.nullable or col.null_count == 0) \
                        else cast_to(ct, col, c)
            else:
                if not ct.nullable and n:
                    raise SkipidxError(f"data file {self.name} has no column {c!r} (declared {ct.name}, not Nullable)")
                arr = pa.nulls(n, ct.arrow_type)
            arrays.append(arr)
        schema = pa.schema([pa.field(c, a.type, nullable=meta.column(c).type.nullable) for c, a in zip(cols, arrays)])
        if not cols:
            return pa.table({"__n": pa.nulls(n)}).drop_columns(["__n"])
        return pa.Table.from_arrays([a if isinstance(a, pa.ChunkedArray) else pa.chunked_array([a]) for a in arrays],
                                    schema=schema)

    def _changed(self, why: str) -> SkipidxError:
        return SkipidxError(f"data file {self.data_path} changed during the query ({why}); run the query again")

    def bloom_columns(self) -> frozenset:
        """Top-level columns with a Bloom filter in some row group of this file."""
        return self._info.blooms

    # ---- sidecar indexes ---------------------------------------------------
    def index_entry(self, name: str) -> dict | None:
        if self.record is None:
            return None
        e = self.record.sidecars.get(name)
        if e is None:
            return None
        try:
            im = self.meta.index(name)
        except SkipidxError:
            return None
        if e.get("fingerprint") != index_fingerprint(im):
            return None
        return {**e, "file": os.path.join(self.snap.table.path, SIDECAR_DIR, e["file"])}

    def has_index(self, name: str) -> bool:
        return self.index_entry(name) is not None

    def load_index(self, name: str):
        e = self.index_entry(name)
        if e is None:
            raise SkipidxError(f"data file {self.name} has no sidecar of index {name!r}")
        try:
            return load_sidecar(e["file"], e, self.meta, self.meta.index(name), self.identity, self.marks)
        except FileNotFoundError:
            raise CorruptionError("sidecar removed by a REFRESH meanwhile", path=e["file"]) from None


class ExternalSnapshot(Closing):
    """The data files of an external table as one query sees them (a TableSnapshot)."""

    kind = "external"
    #: the class of its files (a subclass of ExternalFile for another engine)
    file_class: type = ExternalFile

    def __init__(self, table: ExternalTable, state: ExternalState, only: Iterable[str] | None = None) -> None:
        """`only`: open just these data files (a Spark task reading planned row groups)."""
        self.table = table
        self.state = state
        self.meta = state.meta
        self.base = glob_base(state.source)
        self.parts: list[ExternalFile] = []
        #: files not read, with why (half-written, unreadable partition value)
        self.skipped: list[dict] = []
        self._fds: list[int] = []
        self._fd_lock = threading.Lock()
        ok = False
        try:
            for p in (table.data_paths(state) if only is None else list(only)):
                try:
                    fd = os.open(p, os.O_RDONLY)
                except (FileNotFoundError, NotADirectoryError):
                    continue        # vanished since the listing
                except OSError as e:
                    self.skipped.append({"path": p, "reason": f"unreadable: {e.strerror or e}"})
                    continue
                keep = len(self._fds) < KEEP_OPEN
                try:
                    rec = state.files.get(p)
                    ident, md = probe(p, fd, rec.identity if rec is not None else None)
                    part = _partition_values(self.meta, hive_partition(p, self.base), state.partition_columns)
                except SkipidxError as e:
                    os.close(fd)
                    self.skipped.append({"path": p, "reason": e.message})
                    continue
                if keep:
                    self._fds.append(fd)
                else:
                    os.close(fd)
                self.parts.append(self.file_class(self, p, fd if keep else None, ident, md, state.files.get(p), part))
            ok = True
        finally:
            if not ok:
                self.close()

    @property
    def notes(self) -> list[str]:
        out = [f"skipped {os.path.relpath(s['path'], self.base)}: {s['reason']}" for s in self.skipped]
        stale = [f.name for f in self.parts if f.stale]
        if stale:
            out.append(f"{len(stale)} changed file(s) read without their stale sidecars "
                       f"(ALTER TABLE {self.meta.name} REFRESH rebuilds them): {', '.join(stale[:5])}")
        new = [f.name for f in self.parts if f.data_path not in self.state.files]
        if new:
            out.append(f"{len(new)} file(s) not yet indexed (ALTER TABLE {self.meta.name} REFRESH): "
                       f"{', '.join(new[:5])}")
        return out

    def num_rows(self) -> int:
        return int(sum(p.num_rows for p in self.parts))

    def _adopt(self, fd: int) -> int:
        with self._fd_lock:
            self._fds.append(fd)
        return fd

    def close(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

    # ---- what the footers give for free ------------------------------------
    def bloom_columns(self) -> set[str]:
        """Columns some file holds Parquet Bloom filters of."""
        out: set[str] = set()
        for f in self.parts:
            out |= f.bloom_columns()
        return out


ExternalTable.snapshot_class = ExternalSnapshot
