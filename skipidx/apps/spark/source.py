"""The ``skipidx`` PySpark data source: read with index pruning, write parts atomically.

Reading (``spark.read.format("skipidx").load("DBDIR/table")``):

* the schema comes from the table metadata (:func:`skipidx.apps.spark.filters.spark_schema_of`);
* ``pushFilters`` turns the filters it can into skipidx expressions
  (:mod:`skipidx.apps.spark.filters`) and hands *every* filter back to Spark --
  bloom filters are inexact, Spark keeps evaluating them;
* ``partitions()`` prunes the snapshot with the AND of those expressions and
  the ``where`` option through the engine's one-RPN pruning
  (:func:`skipidx.apps.spark._plan.plan_scan`) and spreads the kept granule ranges
  over tasks of at most ``granules_per_task`` granules;
* ``read()`` reads only those granules, applies the ``where`` option exactly
  (ClickHouse semantics: hasToken, LIKE, multiSearchAny, match, OR...) and
  the pushed filters as a pre-filter (sound by the rule in
  :mod:`skipidx.apps.spark.filters`), and yields Arrow record batches typed as
  Spark expects.

Options of the reader and the writer: ``task_threads`` (threads a task may
use for Arrow and index builds; default ``spark.task.cpus``, so an
executor's cores are its parallelism). Of the reader: ``where`` (a skipidx
WHERE expression),
``granules_per_task`` (default 128), ``parallelism`` and
``min_granules_per_task`` (a scan of few granules is still spread over up to
``parallelism`` tasks of at least ``min_granules_per_task`` granules, default
the planning machine's CPU count and 16: on ``local[*]`` that is every core;
on a cluster set it to ``spark.sparkContext.defaultParallelism``),
``read_granules`` (granules per read, default 16), ``prefilter`` (``true``: drop rows the pushed filters reject
before Spark sees them), ``stats_path`` (a file the planner writes its
pruning figures to as JSON: Spark plans in a separate Python process, so the
figures cannot come back any other way), ``index_cache_mb`` (index bytes the
planning process keeps loaded between queries, default 512; 0: none).

Per-query cost. Spark runs a Python source in reused Python workers
(``spark.python.worker.reuse``, on by default; keep it on): one plans
(``schema()``; ``reader()``, ``pushFilters``, ``partitions()``) and
executors' workers run ``read()``. Both keep state between queries here: the
planner keeps loaded index files (``index_cache_mb``) and a task reuses the
worker's imports. A filter's columns are read first and the other columns
only for granules with a matching row (a bloom filter's false-positive
granules cost one column). In a reused worker, after skipidx's modules are
imported, the objects they made are moved out of the garbage collector's
reach (:func:`gc.freeze`): Spark's worker runs a full ``gc.collect()`` after
every call, which otherwise walks the ~160 000 objects of numpy, pyarrow,
numba and skipidx each time (~0.15 s of CPU per call, three calls a query).

Writing (``df.write.format("skipidx").mode("append"|"overwrite").save(path)``):
each task sorts its rows by the table's ORDER BY key and writes one part into
the table's ``tmp/`` (detached: it outlives the task's process) with the same
part writer as the embedded engine; the driver publishes all parts of the
job in one state change (``overwrite`` retires every old part in the same
change) or, on failure, removes them. A task that still runs when the job
ends (cancelled, speculative) notices that the job's directory
``tmp/.spark_job_<id>`` is gone and removes its own part; the driver removes
the job directory *before* sweeping the job's parts, so one of the two
always sees the other (no orphan survives). If the table does not exist,
the write creates it from the DataFrame's schema and the options
``order_by`` ("ts" or "ts, id"), ``indexes`` ("INDEX i msg TYPE
sbbf('token') GRANULARITY 1; INDEX ..."), ``index_granularity``,
``settings`` ("max_part_rows = 1000000, compression = 'zstd'") and
``column_types`` ("id UInt64, level LowCardinality(String)": types for
columns Spark cannot say, e.g. unsigned ones).

The table path must be on a file system that the driver and every executor
see (local disk for ``local[*]``; NFS or similar on a cluster).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition, WriterCommitMessage,
)

from skipidx.core.errors import SkipidxError

__all__ = ["SkipidxDataSource", "SkipidxReader", "SkipidxWriter", "SkipidxCommitMessage", "SkipidxPartition",
           "JOB_MARK", "create_table_from_schema"]

#: File inside a staged part dir naming the Spark job that wrote it.
JOB_MARK = ".skipidx_spark_job"
_JOB_DIR = ".spark_job_"

DEFAULT_GRANULES_PER_TASK = 128
DEFAULT_READ_GRANULES = 16
DEFAULT_MIN_GRANULES_PER_TASK = 16


def _truthy(v: Any, default: bool) -> bool:
    if v is None:
        return default
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise SkipidxError(f"expected true or false, got {v!r}")


def _int_option(options: Any, key: str, default: int, minimum: int = 1) -> int:
    v = options.get(key)
    if v is None:
        return default
    try:
        n = int(str(v).strip())
    except ValueError:
        raise SkipidxError(f"option {key} must be an integer, got {v!r}") from None
    if n < minimum:
        raise SkipidxError(f"option {key} must be >= {minimum}, got {n}")
    return n


def _task_threads(explicit: int | None) -> int | None:
    """Hold this task to its share of the executor: ``spark.task.cpus`` threads
    (or the ``task_threads`` option) for Arrow and the index builds. Without
    it every task of an executor would start one thread per machine core, the
    executor's cores would only oversubscribe the machine, and adding cores
    would not make a build faster. Outside a Spark task nothing changes."""
    n = explicit
    if n is None:
        try:
            from pyspark import TaskContext

            tc = TaskContext.get()
            n = int(tc.cpus()) if tc is not None else None
        except Exception:   # an older or unusual TaskContext: leave the defaults
            n = None
    if n is None or n < 1:
        return None
    pa.set_cpu_count(n)
    return n     # the index builds' thread count, passed to the writer


_FROZEN_MODULES = 0


def _settle_worker() -> None:
    """In a reused Spark Python worker, move the objects of the modules imported
    so far into the garbage collector's permanent generation (once per new
    imports). Spark's worker daemon runs ``gc.collect()`` after every call when
    workers are reused (``SPARK_REUSE_WORKER``), and a full collection walks
    every tracked object: with numpy, pyarrow, numba and skipidx loaded that
    is a large share of a query's CPU (bench/NOTES.md).
    Module-level objects live as long as the process anyway; objects made
    later (a query's tables) stay collectable. Elsewhere (the user's own
    process, a worker that is not reused) nothing happens."""
    global _FROZEN_MODULES
    import sys

    if not os.environ.get("SPARK_REUSE_WORKER") or len(sys.modules) == _FROZEN_MODULES:
        return
    import gc

    gc.collect()        # what is garbage now is not frozen
    gc.freeze()
    _FROZEN_MODULES = len(sys.modules)


def _cache_mb(options: Any) -> int:
    from skipidx.apps.spark._plan import DEFAULT_INDEX_CACHE_MB

    return _int_option(options, "index_cache_mb", DEFAULT_INDEX_CACHE_MB, minimum=0)


def _optional_int(options: Any, key: str) -> int | None:
    return _int_option(options, key, 0) if options.get(key) is not None else None


def _where_option(options: Any) -> Any:
    text = options.get("where")
    if text is None or not str(text).strip():
        return None
    from skipidx.sql.parser import parse_expression

    return parse_expression(str(text))


# ====================================================================== source
class SkipidxDataSource(DataSource):
    """``format("skipidx")``: a skipidx table directory as a Spark table."""

    @classmethod
    def name(cls) -> str:
        return "skipidx"

    def _path(self) -> str:
        return self.options.get("path") or ""

    def schema(self) -> Any:
        from skipidx.apps.spark._plan import resolve_table_dir
        from skipidx.apps.spark.filters import spark_schema_of
        from skipidx.store.commit import read_state

        schema = spark_schema_of(_table_meta(resolve_table_dir(self._path())))
        _settle_worker()
        return schema

    def reader(self, schema: Any) -> "SkipidxReader":
        from skipidx.apps.spark._plan import resolve_table_dir
        from skipidx.apps.spark.filters import spark_schema_of
        from skipidx.store.commit import read_state

        table_dir = resolve_table_dir(self._path())
        meta = _table_meta(table_dir)
        expected = spark_schema_of(meta)
        if schema is not None and schema != expected:
            raise SkipidxError(f"a skipidx table has the schema of its metadata ({expected.simpleString()}); "
                               f"got {schema.simpleString()}", path=table_dir)
        where = _where_option(self.options)
        if where is not None:
            from skipidx.expr.binder import bind_where

            bind_where(meta, where)   # a bad WHERE fails at planning, with its line and column
        return SkipidxReader(
            table_dir, meta.to_json(), where,
            granules_per_task=_int_option(self.options, "granules_per_task", DEFAULT_GRANULES_PER_TASK),
            parallelism=_int_option(self.options, "parallelism", os.cpu_count() or 1),
            min_granules_per_task=_int_option(self.options, "min_granules_per_task",
                                              DEFAULT_MIN_GRANULES_PER_TASK),
            read_granules=_int_option(self.options, "read_granules", DEFAULT_READ_GRANULES),
            prefilter=_truthy(self.options.get("prefilter"), True),
            stats_path=self.options.get("stats_path"),
            task_threads=_optional_int(self.options, "task_threads"),
            index_cache_mb=_cache_mb(self.options),
        )

    def writer(self, schema: Any, overwrite: bool) -> "SkipidxWriter":
        from skipidx.store.commit import STATE_FILE, read_state
        from skipidx.store.external import is_external

        if is_external(os.path.abspath(self._path().removeprefix("file://"))):
            raise SkipidxError("an external table (ENGINE = ParquetFiles) is read-only: its data files are "
                               "never written", path=self._path())

        path = self._path()
        if not path:
            raise SkipidxError("the skipidx source needs a path: .save('DBDIR/table')")
        table_dir = os.path.abspath(path[len("file://"):] if path.startswith("file://") else path)
        if not os.path.isfile(os.path.join(table_dir, STATE_FILE)):
            create_table_from_schema(table_dir, schema, self.options)
        meta = read_state(table_dir).meta
        names = list(schema.fieldNames())
        missing = [c for c in meta.column_names if c not in names]
        extra = [c for c in names if c not in meta.column_names]
        if missing or extra:
            bits = ([f"missing columns: {', '.join(missing)}"] if missing else []) + \
                   ([f"unknown columns: {', '.join(extra)}"] if extra else [])
            raise SkipidxError(f"table {meta.name!r}: the DataFrame does not match the table: " + "; ".join(bits)
                               + f" (table columns: {', '.join(meta.column_names)})", path=table_dir)
        job = secrets.token_hex(8)
        job_dir = os.path.join(table_dir, "tmp", _JOB_DIR + job)
        os.makedirs(job_dir)
        from skipidx.store.commit import DETACHED_MARK, write_file_durably

        # detached: the store's cleanup keeps it (a day) while this job runs
        write_file_durably(os.path.join(job_dir, DETACHED_MARK), b"")
        return SkipidxWriter(table_dir, meta.to_json(), bool(overwrite), job,
                             task_threads=_optional_int(self.options, "task_threads"))


def _split_top_level(text: str, seps: str) -> list[str]:
    """`text` split at `seps` outside quotes and parentheses."""
    out, cur, depth, quote = [], [], 0, None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'`\"":
            quote = ch
            cur.append(ch)
        elif ch == "(":
            depth += 1
            cur.append(ch)
        elif ch == ")":
            depth -= 1
            cur.append(ch)
        elif ch in seps and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur).strip())
    return [x for x in out if x]


def create_table_from_schema(table_dir: str, schema: Any, options: Any) -> None:
    """Create the table at `table_dir` from a Spark schema plus the creation options
    (see the module docstring); a concurrent creator of the same table wins quietly."""
    from skipidx.planner.ddl import table_meta_from_ast
    from skipidx.apps.spark.filters import ch_type_of_spark
    from skipidx.sql import ast as A
    from skipidx.sql.parser import parse
    from skipidx.store.catalog import Catalog
    from skipidx.store.metadata import check_identifier

    db_dir, name = os.path.split(table_dir.rstrip("/"))
    check_identifier(name, "table")
    overrides: dict[str, str] = {}
    for item in _split_top_level(options.get("column_types") or "", ","):
        parts = item.split(None, 1)
        if len(parts) != 2:
            raise SkipidxError(f"option column_types: expected 'name Type', got {item!r}")
        overrides[parts[0].strip("`\"")] = parts[1].strip()
    unknown = [c for c in overrides if c not in schema.fieldNames()]
    if unknown:
        raise SkipidxError(f"option column_types names unknown columns: {', '.join(unknown)}")
    cols = []
    for f in schema.fields:
        t = overrides.get(f.name) or ch_type_of_spark(f.dataType, f.nullable)
        cols.append(f"{A.quote_identifier(f.name)} {t}")
    indexes = options.get("indexes")
    if indexes is None:
        raise SkipidxError(
            f"table {name!r} does not exist and the write does not say its indexes: add "
            ".option('indexes', \"INDEX msg_tokens msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1; ...\") "
            "(or 'none' for a table without skip indexes), or CREATE TABLE it first", path=table_dir)
    if str(indexes).strip().lower() != "none":
        cols.extend(_split_top_level(str(indexes), ";"))
    sql = f"CREATE TABLE {A.quote_identifier(name)} ({', '.join(cols)}) ENGINE = MergeTree"
    order_by = (options.get("order_by") or "").strip()
    sql += f" ORDER BY ({order_by})" if order_by and order_by != "tuple()" else " ORDER BY tuple()"
    settings = []
    if options.get("index_granularity"):
        settings.append(f"index_granularity = {_int_option(options, 'index_granularity', 8192)}")
    if options.get("settings"):
        settings.append(str(options.get("settings")))
    if settings:
        sql += " SETTINGS " + ", ".join(settings)
    stmt = parse(sql)
    if len(stmt) != 1 or not isinstance(stmt[0], A.CreateTable):
        raise SkipidxError(f"the table options do not make one CREATE TABLE: {sql}")
    meta = table_meta_from_ast(stmt[0])
    Catalog(db_dir).create_table(meta, if_not_exists=True)


# ====================================================================== reader
class SkipidxPartition(InputPartition):
    """One Spark task of a scan: a snapshot generation and granule ranges of parts."""

    def __init__(self, gen: int, slices: list) -> None:
        super().__init__(None)
        self.gen = gen
        self.slices = slices


class SkipidxReader(DataSourceReader):
    """Reader of one scan. Plain data only: Spark pickles it to every task."""

    def __init__(self, table_dir: str, meta_json: dict, where: Any, *, granules_per_task: int,
                 read_granules: int, prefilter: bool, stats_path: str | None,
                 task_threads: int | None = None, index_cache_mb: int | None = None,
                 parallelism: int = 1, min_granules_per_task: int = DEFAULT_MIN_GRANULES_PER_TASK) -> None:
        self.table_dir = table_dir
        self.meta_json = meta_json
        self.where = where                # AST of the `where` option (applied exactly)
        self.pushed: list = []            # AST of the pushed Spark filters
        self.pushed_text: list[str] = []
        self.granules_per_task = granules_per_task
        self.read_granules = read_granules
        self.prefilter = prefilter
        self.stats_path = stats_path
        self.task_threads = task_threads
        self.index_cache_mb = index_cache_mb
        self.parallelism = parallelism
        self.min_granules_per_task = min_granules_per_task

    def _meta(self):
        from skipidx.store.metadata import TableMeta

        return TableMeta.from_json(self.meta_json)

    def pushFilters(self, filters: list) -> Any:
        """Keep what prunes; return every filter (Spark evaluates them exactly)."""
        from skipidx.apps.spark.filters import filters_to_exprs

        meta = self._meta()
        for f in filters:
            exprs = filters_to_exprs([f], meta)
            if exprs:
                self.pushed.extend(exprs)
                self.pushed_text.append(repr(f))
        return list(filters)

    def _prune_expr(self) -> Any:
        from skipidx.apps.spark.filters import conjunction

        return conjunction(self.pushed + ([self.where] if self.where is not None else []))

    def partitions(self) -> list:
        from skipidx.apps.spark._plan import DEFAULT_INDEX_CACHE_MB, plan_scan, planner_cache, split_tasks
        from skipidx.store.external import is_external

        mb = DEFAULT_INDEX_CACHE_MB if self.index_cache_mb is None else self.index_cache_mb
        if is_external(self.table_dir):
            from skipidx.apps.spark.lake import plan_external_scan

            plan = plan_external_scan(self.table_dir, self._prune_expr(), planner_cache(mb))
        else:
            plan = plan_scan(self.table_dir, self._prune_expr(), planner_cache(mb))
        # read with the snapshot's metadata (an ALTER may have run since reader())
        self.meta_json = plan.meta_json
        tasks = split_tasks(plan.slices, self.granules_per_task, self.parallelism, self.min_granules_per_task)
        if self.stats_path:
            st = dict(plan.stats)
            st["pushed_filters"] = list(self.pushed_text)
            st["tasks"] = len(tasks)
            tmp = f"{self.stats_path}.{secrets.token_hex(4)}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(st, fh, indent=1, default=str)
            os.replace(tmp, self.stats_path)
        _settle_worker()
        # nothing selected: no partition at all (Spark then runs one empty task)
        return [SkipidxPartition(plan.gen, t) for t in tasks]

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        slices = getattr(partition, "slices", None)
        if not slices:
            return
        from skipidx.store.external import is_external

        if is_external(self.table_dir):
            from skipidx.apps.spark.lake import read_external_slices

            _task_threads(self.task_threads)
            _settle_worker()
            yield from read_external_slices(self, slices)
            return
        yield from _read_slices(self, partition.gen, slices)


def _table_meta(table_dir: str) -> Any:
    """The metadata of a table directory (MergeTree or external)."""
    from skipidx.store.commit import read_state
    from skipidx.store.external import ExternalTable, is_external

    return ExternalTable(table_dir).meta if is_external(table_dir) else read_state(table_dir).meta


def _read_slices(reader: SkipidxReader, gen: int, slices: list) -> Iterator[pa.RecordBatch]:
    from skipidx.apps.spark.arrow_types import spark_arrow_schema, to_spark
    from skipidx.apps.spark.filters import exact_filter
    from skipidx.execution.scan import read_filter_first, row_mask, split_ranges
    from skipidx.store.commit import PartEntry, pin_generation
    from skipidx.store.part import Part

    _task_threads(reader.task_threads)
    meta = reader._meta()
    schema = spark_arrow_schema(meta)
    bound, first, rest = exact_filter(meta, reader.pushed if reader.prefilter else [], reader.where or None)
    _settle_worker()
    # Pin the planned generation, so a concurrent merge's cleanup keeps its parts
    # while this task reads them (the planner's own pin ended with planning).
    fd = pin_generation(reader.table_dir, gen)
    try:
        step = reader.read_granules
        for sl in slices:
            part = Part(reader.table_dir, PartEntry(sl.part, sl.rows, sl.manifest_hash), meta)
            if not os.path.isdir(part.path):
                raise SkipidxError(f"part {sl.part} was merged away after the scan was planned; run the query again",
                                   path=reader.table_dir)
            for batch in split_ranges(sl.ranges, step):
                if bound is None:
                    t = part.read(None, batch)
                elif first and rest:
                    t = read_filter_first(part, batch, bound, first, rest, meta.column_names)
                else:       # the filter reads every column (or none: a constant)
                    t = part.read(None, batch)
                    m = row_mask(bound, t)
                    t = t if m is None else t.filter(pa.array(m, type=pa.bool_()))
                if t is not None and t.num_rows:
                    yield from to_spark(t, schema).to_batches()
    finally:
        os.close(fd)


# ====================================================================== writer
@dataclass
class SkipidxCommitMessage(WriterCommitMessage):
    """What a task hands the driver: its staged part (None when it had no rows)."""

    path: str | None
    part: str | None
    rows: int


def _from_spark(meta: Any, data: pa.Table) -> pa.Table:
    """Undo Spark's widening where cast_to would not: DECIMAL(p,0) back to an integer column."""
    cols = []
    changed = False
    for name in data.column_names:
        c = data.column(name)
        try:
            target = meta.column(name).type.arrow_type
        except SkipidxError:
            target = None
        if target is not None and pa.types.is_decimal(c.type) and pa.types.is_integer(target):
            if c.type.scale != 0:
                raise SkipidxError(f"column {name!r}: DECIMAL with a scale does not fit {meta.column(name).type.name}")
            try:
                c = c.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SkipidxError(f"column {name!r} ({meta.column(name).type.name}): {e}") from None
            changed = True
        cols.append(c)
    return pa.Table.from_arrays(cols, names=data.column_names) if changed else data


class SkipidxWriter(DataSourceArrowWriter):
    """Writer of one Spark job (pickled to every task)."""

    def __init__(self, table_dir: str, meta_json: dict, overwrite: bool, job: str,
                 task_threads: int | None = None) -> None:
        self.table_dir = table_dir
        self.meta_json = meta_json
        self.overwrite = overwrite
        self.job = job
        self.task_threads = task_threads

    @property
    def _tmp(self) -> str:
        return os.path.join(self.table_dir, "tmp")

    @property
    def _job_dir(self) -> str:
        return os.path.join(self._tmp, _JOB_DIR + self.job)

    def _job_alive(self) -> bool:
        try:
            os.utime(self._job_dir)   # a long job stays younger than the cleanup's TTL
            return True
        except FileNotFoundError:
            return False

    # ---- executors -------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> SkipidxCommitMessage:
        """Sort this task's rows and write them as one staged part."""
        from skipidx.store.commit import new_part_name, stage_dir, write_file_durably
        from skipidx.store.metadata import TableMeta
        from skipidx.store.conform import conform, sort_rows
        from skipidx.store.writer import write_part

        build_threads = _task_threads(self.task_threads)
        meta = TableMeta.from_json(self.meta_json)
        batches = [b for b in iterator if b.num_rows]
        if not batches:
            return SkipidxCommitMessage(None, None, 0)
        data = pa.Table.from_batches(batches)
        del batches
        data = sort_rows(meta, conform(meta, _from_spark(meta, data)))
        name = new_part_name(0)
        staged = stage_dir(self.table_dir, name, detached=True)
        try:
            write_file_durably(os.path.join(staged.path, JOB_MARK), self.job.encode())
            if not self._job_alive():      # the job ended (failed elsewhere): leave nothing behind
                staged.discard()
                return SkipidxCommitMessage(None, None, 0)
            write_part(staged.path, meta, data, name, build_threads=build_threads)
            if not self._job_alive():
                staged.discard()
                return SkipidxCommitMessage(None, None, 0)
        except BaseException:
            staged.discard()
            raise
        return SkipidxCommitMessage(staged.path, name, data.num_rows)

    # ---- driver ----------------------------------------------------------
    def _end_job(self) -> None:
        shutil.rmtree(self._job_dir, ignore_errors=True)

    def _sweep(self) -> None:
        """Remove every staged dir of this job still in tmp/ (failed, cancelled or duplicate tasks)."""
        try:
            names = os.listdir(self._tmp)
        except FileNotFoundError:
            return
        mine = []
        for n in names:
            p = os.path.join(self._tmp, n)
            try:
                with open(os.path.join(p, JOB_MARK), "rb") as fh:
                    if fh.read() == self.job.encode():
                        mine.append(p)
            except (FileNotFoundError, NotADirectoryError):
                continue
        # a task still writing may add a file while its dir is removed (the rmdir then
        # fails): remove again until the dirs are gone; the task stops at its next job check
        for attempt in range(100):
            mine = [p for p in mine if os.path.lexists(p)]
            if not mine:
                break
            if attempt:
                time.sleep(0.02)
            for p in mine:
                shutil.rmtree(p, ignore_errors=True)

    def _adopt(self, m: SkipidxCommitMessage) -> Any:
        """Take a task's detached staged dir over for the commit: owner lock first,
        then drop the detached and job marks (the cleanup never sees it unowned)."""
        import fcntl

        from skipidx.store.commit import DETACHED_MARK, OWNER_LOCK, StagedPart

        if not os.path.isdir(m.path):
            raise SkipidxError(f"staged part {m.part} of this job is missing", path=m.path)
        fd = os.open(m.path + OWNER_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        for mark in (DETACHED_MARK, JOB_MARK):
            try:
                os.unlink(os.path.join(m.path, mark))
            except FileNotFoundError:
                pass
        return StagedPart(m.path, m.part, m.rows, fd)

    def commit(self, messages: list) -> None:
        """Publish every task's part in one state change (retiring all old parts for overwrite)."""
        from skipidx.store.commit import ConflictError, commit_parts, read_state
        from skipidx.store.metadata import TableMeta

        msgs = [m for m in messages if m is not None and getattr(m, "path", None)]
        self._end_job()
        staged: list = []
        try:
            for m in msgs:
                staged.append(self._adopt(m))
            columns = TableMeta.from_json(self.meta_json).columns

            def same_columns(cur: Any) -> None:
                if cur.columns != columns:
                    raise ConflictError("the table's columns changed during the Spark job; nothing was written")

            if not self.overwrite:
                commit_parts(self.table_dir, staged, meta_check=same_columns)
            else:
                for _ in range(50):
                    st = read_state(self.table_dir)
                    try:
                        commit_parts(self.table_dir, staged, retire=[p.name for p in st.parts],
                                     expect_gen=st.gen, meta_check=same_columns)
                        break
                    except ConflictError as e:
                        if "columns changed" in str(e):
                            raise
                        continue   # a concurrent insert/merge moved the state: replace the new set
                else:
                    raise ConflictError("overwrite: the table kept changing; nothing was written")
        except BaseException:
            for s in staged:
                s.discard()
            for m in msgs:
                shutil.rmtree(m.path, ignore_errors=True)
            raise
        finally:
            self._sweep()
        from skipidx.store.commit import cleanup

        cleanup(self.table_dir)

    def abort(self, messages: list) -> None:
        """Remove every part this job staged; the table is unchanged."""
        self._end_job()
        for m in messages:
            p = getattr(m, "path", None) if m is not None else None
            if p:
                shutil.rmtree(p, ignore_errors=True)
        self._sweep()
