"""The embedded database: ``skipidx.connect(path)`` returns a :class:`Database`.

``db.sql(text)`` parses every ``;``-separated statement first (a parse error
runs nothing), then runs them in order and returns the last one's
:class:`~skipidx.engine.result.Result` (``db.sql_all`` returns all of them). A
SELECT goes binder -> RPN -> pruning -> scan of the kept mark ranges ->
exact WHERE -> projection/aggregation/ORDER BY/LIMIT; DDL and INSERT go to
the store. Every user mistake is a :class:`~skipidx.core.errors.SkipidxError`,
and a failed statement leaves the database as it was.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from typing import Any, Iterator, Mapping, Sequence

import pyarrow as pa

from skipidx.core.closing import Closing
from skipidx.core.errors import BindError, SkipidxError
from skipidx.engine.result import QueryStats, Result
from skipidx.engine.streaming import bound_types, scan_stream, select_stream, streamable
from skipidx.sql import ast as A

from skipidx.core.lazy import kernels as _lazy_module

#: rmtree on cleanup paths only: a process that only reads does not import it
shutil = _lazy_module("shutil")


class Database(Closing):
    """A database directory (created if missing); with no path, a temporary one removed on close()."""

    def __init__(self, path: str | os.PathLike | None = None, *, kms: Any = None,
                 user_files_path: str | os.PathLike | None = None, allow_file_access: bool = True,
                 max_threads: int | None = None) -> None:
        """`max_threads`: concurrent scan reads of its queries (None or 0: the cores this process
        may use); a query's or the session's ``max_threads`` setting asks for its own."""
        from skipidx.core.kms import KeyRing
        from skipidx.store.catalog import Catalog
        from skipidx.store.file_access import FileAccess

        #: what SQL may read and write outside the database (store/file_access)
        self.file_access = FileAccess.make(user_files_path, allow_file_access)

        self._temp = path is None
        if path is None:
            import tempfile   # only here: its import (random, hashlib's seeds) is a new process's cost

            self.path = tempfile.mkdtemp(prefix="skipidx-")
        else:
            self.path = os.fspath(path)
        try:
            #: data keys of sensitive columns through the application's KMS client
            self.keyring = KeyRing(kms)
            self.catalog = Catalog(self.path, keyring=self.keyring)
        except BaseException:
            if self._temp:
                shutil.rmtree(self.path, ignore_errors=True)
            raise
        from skipidx.planner.prune import IndexCache

        #: loaded index granules of immutable parts, shared by queries (bounded by bytes)
        self.index_cache = IndexCache()
        from skipidx.execution.scan import ScanExecutor

        #: the threads that read kept granules concurrently (stopped by close())
        self.executor = ScanExecutor(max_threads)
        #: what ``SET name = value`` / ``SET param_name = value`` gave this connection
        self.session_settings: dict[str, Any] = {}
        self.session_params: dict[str, Any] = {}
        self._closed = False

    # -- lifecycle ----------------------------------------------------------
    def close(self, clear_caches: bool = False) -> None:
        """Close the database; a temporary one is removed. Its scan threads stop and its index
        cache empties; `clear_caches` also empties the process's shared caches of parsed files
        (``skipidx.core.lru.caches()``: footers, manifests, bound conditions...), as a new
        process would start."""
        if self._closed:
            return
        self._closed = True
        self.index_cache.clear()
        self.executor.close()
        if clear_caches:
            from skipidx.core.lru import clear_caches as _clear

            _clear()
        from skipidx.store.merge import stop_merges

        # a temporary database's merges must end before its files go; a
        # kept one's merges are stopped too (each is one atomic commit, so a
        # stopped worker loses nothing: the next insert schedules again)
        stop_merges(self.path)
        if self._temp:
            shutil.rmtree(self.path, ignore_errors=True)
            # pooled readers of the removed files would keep their mappings
            # (and the deleted files' disk space) until the next sweep
            from skipidx.store.part import release_readers
            release_readers([self.path])


    def _check_open(self) -> None:
        if self._closed:
            raise SkipidxError("the database is closed")

    def __repr__(self) -> str:
        return f"Database({self.path!r}{', temporary' if self._temp else ''})"

    # -- API ----------------------------------------------------------------
    def sql(self, text: str, params: dict | None = None) -> Result:
        """Run the statements of `text` in order; the Result of the last one.
        `params` binds the query parameters ``{name:Type}`` (skipidx.sql.params)."""
        return self.sql_all(text, params)[-1]

    def sql_all(self, text: str, params: dict | None = None) -> list[Result]:
        """Run the statements of `text` in order; one Result per statement."""
        self._check_open()
        from skipidx.sql.parser import parse

        if not isinstance(text, str):
            raise SkipidxError(f"SQL text must be a str, got {type(text).__name__}")
        if params is not None and not isinstance(params, Mapping):
            raise SkipidxError(f"params must be a mapping of names to values, got {type(params).__name__}")
        try:
            statements = parse(text)
            if not statements:
                raise SkipidxError("empty statement: the SQL text holds no statement")
            from skipidx.engine.statements import session_params

            out = []
            # the log keeps a query as it was sent when the text holds one statement
            sent = text.strip().rstrip(";").strip() if len(statements) == 1 else None
            for s in statements:
                # parameters given here win over the session's `SET param_x = ...`
                out.append(self._run_logged(s, {**session_params(self), **(params or {})}, sent))
            return out
        except SkipidxError as e:
            e.show_in(text)
            raise

    def execute(self, stmt: "str | A.Statement", params: dict | None = None) -> Result:
        """Run SQL text (DB-API style: ``db.execute(sql, params)``; the Result of
        the last statement) or one parsed statement."""
        if isinstance(stmt, str):
            return self.sql(stmt, params)
        self._check_open()
        from skipidx.engine.statements import session_params

        return self._run_logged(stmt, {**session_params(self), **(params or {})})

    def _run_logged(self, stmt: A.Statement, params: dict, text: str | None = None) -> Result:
        """Run one statement; a SELECT that ran joins the query log (engine/query_log.py)."""
        import time

        from skipidx.sql.params import bind_params

        t0 = time.perf_counter()
        try:
            res = self._run_statement(bind_params(stmt, params))
        except SkipidxError as e:
            if isinstance(stmt, (A.Select, A.Union)):
                self._log_failure(stmt, params, text, time.perf_counter() - t0, e)
            raise
        if isinstance(stmt, (A.Select, A.Union)) and self._logs(stmt):
            from skipidx.engine.query_log import log_select

            from skipidx.engine.query_log import QUERY_LOG_MAX_CHARS
            from skipidx.engine.system_tables import statement_tables

            used = {p.name for p in _statement_params(stmt)}
            query = text if text is not None else stmt.to_sql()
            log_select(self.path, query, {k: v for k, v in params.items() if k in used},
                       time.perf_counter() - t0, res.stats,
                       # a streamed result's rows are not known yet: its figures are left out
                       result_rows=None if res.streaming or res.outfile is not None else res.num_rows,
                       tables=statement_tables(stmt) if len(query) <= QUERY_LOG_MAX_CHARS else None)
        return res

    def _log_failure(self, stmt: A.Select, params: dict, text: str | None, duration_s: float,
                     e: SkipidxError) -> None:
        """A SELECT that failed joins the query log as ClickHouse logs one: ExceptionBeforeStart
        (names, types, parameters) or ExceptionWhileProcessing, with the message; db.query_log()
        and advise read only the SELECTs that ran."""
        from skipidx.engine.query_log import QUERY_LOG_MAX_CHARS, log_select
        from skipidx.engine.system_tables import statement_tables

        try:
            if not self._logs(stmt):
                return
        except SkipidxError:
            if self.keyring.kms is not None:      # the statement's own SETTINGS are bad: the default
                return
        used = {p.name for p in _statement_params(stmt)}
        query = text if text is not None else stmt.to_sql()
        code = getattr(e, "code", 0)
        log_select(self.path, query, {k: v for k, v in params.items() if k in used}, duration_s,
                   tables=statement_tables(stmt) if len(query) <= QUERY_LOG_MAX_CHARS else None,
                   failure=("ExceptionBeforeStart" if isinstance(e, BindError) else "ExceptionWhileProcessing",
                            e.message, code if isinstance(code, int) else 0))

    def _logs(self, stmt: A.Select) -> bool:
        """`log_queries` of this statement; off by default where a KMS client guards sensitive
        columns (their query literals would be written in clear)."""
        from skipidx.engine.settings import resolve_settings
        from skipidx.engine.statements import session_settings

        # (a UNION's settings are its SELECTs' own)
        values = resolve_settings(session_settings(self), getattr(stmt, "settings", ())).values
        if "log_queries" in values:
            return bool(values["log_queries"])
        return self.keyring.kms is None

    def query_log(self, limit: int | None = None) -> pa.Table:
        """The recent SELECTs of this database, oldest first (ClickHouse's system.query_log
        columns: event_time, query, query_parameters, query_duration_ms, granules_*)."""
        self._check_open()
        from skipidx.engine.query_log import query_log_table

        return query_log_table(self.path, limit)

    def cursor(self) -> "Cursor":
        """A PEP 249 cursor over this database."""
        self._check_open()
        return Cursor(self)

    def _run_statement(self, stmt: A.Statement) -> Result:
        from skipidx.store.file_access import POLICY

        token = POLICY.set(self.file_access)
        try:
            return self._run_statement_checked(stmt)
        finally:
            POLICY.reset(token)

    def _run_statement_checked(self, stmt: A.Statement) -> Result:
        with _as_skipidx_errors():
            res = self._dispatch(stmt)
        if res.outfile is not None:
            res = _write_outfile(res)
        return res

    def _write_threads(self, insert: bool) -> int | None:
        """Threads of an insert (``SET max_insert_threads``, else ``max_threads``) or a
        merge (``SET max_threads``); None: the cores this process may use."""
        from skipidx.engine.statements import session_settings

        ss = session_settings(self)
        n = (int(ss.get("max_insert_threads") or 0) if insert else 0) or int(ss.get("max_threads") or 0)
        return n or None

    def insert(self, table: str, data: Any, *, format: str | None = None, progress: bool | None = None) -> int:
        """Insert rows; returns how many were written (all or none).

        `data`: a pyarrow Table / RecordBatch / RecordBatchReader, a pandas
        DataFrame, any object with ``__arrow_c_stream__`` or
        ``__arrow_c_array__`` (a Polars frame, a DuckDB relation, a pyarrow
        dataset scanner), a dict of columns, or a path / glob / list of paths
        of Parquet, CSV or JSON files (`format` names theirs when the
        extension does not). Streams are inserted in bounded memory; a
        progress bar shows on a terminal (`progress`: force it on or off).
        """
        self._check_open()
        from skipidx.store.ingest import insert_any

        # a full disk, a permission...: the same SkipidxError (file, errno) as db.sql gives
        with _as_skipidx_errors():
            t = self.catalog.table(table)
            show = progress if progress is not None else bool(getattr(sys.stderr, "isatty", lambda: False)())
            threads = self._write_threads(insert=True)
            if not show:
                return int(insert_any(t, data, format=format, threads=threads))
            from skipidx.core.progress import Progress

            with Progress(f"insert {table}", None) as bar:
                return int(insert_any(t, data, format=format, progress=bar.update, threads=threads))

    def scan(self, table: str, where: str | None = None, columns: Sequence[str] | None = None,
             params: dict[str, Any] | None = None, *, batch_rows: int = 65536) -> pa.RecordBatchReader:
        """A streaming ``pyarrow.RecordBatchReader`` of exactly the rows of
        `table` matching `where` (a skipidx WHERE text), only `columns` (all
        by default): the indexes prune granules first, only the kept granules
        are read (as the reader is pulled), and the condition is applied
        exactly. The pruning figures are on the reader's ``stats`` attribute
        of :meth:`scan_result`."""
        return self.scan_result(table, where, columns, params).fetch_record_batch(batch_rows)

    def scan_result(self, table: str, where: str | None = None, columns: Sequence[str] | None = None,
                    params: dict[str, Any] | None = None) -> Result:
        """:meth:`scan` as a streamed :class:`Result` (with ``stats``)."""
        self._check_open()
        from skipidx.sql.parser import parse_expression

        t = self.catalog.table(table)
        meta = t.meta
        cols = list(columns) if columns is not None else list(meta.column_names)
        if isinstance(columns, str):
            raise SkipidxError("columns must be a list of column names, not a string")
        for c in cols:
            meta.column(c)   # SkipidxError naming an unknown column
        where_expr = None
        if where is not None and str(where).strip():
            where_expr = parse_expression(where)
            if params:
                where_expr = _apply_params_expr(where_expr, params)
        snap = t.snapshot()
        try:
            return scan_stream(snap, cols, where_expr, self.index_cache, self.executor)
        except BaseException:
            snap.close()
            raise

    def prune(self, table: str, where: str | None = None) -> list[tuple[str, list[int]]]:
        """The data files and row groups a query with `where` must read: ``[(path, [row
        groups])]``, for readers that take a file list (pyarrow, DuckDB, Spark). Pruned
        by every index of the table (for external tables also the files' footers, Bloom
        filters and partitions); the rows of those row groups still need `where` applied."""
        self._check_open()
        from skipidx.planner.plan import prune_where

        t = self.catalog.table(table)
        with t.snapshot() as snap:
            sels, _stats, _bound = prune_where(snap, where, self.index_cache)
            out = []
            for sel in sels:
                p = sel.part
                if p.deleted_rows:
                    # a reader of (file, row groups) would return rows an Iceberg delete removed
                    raise SkipidxError(f"db.prune({table!r}): data file {p.data_path} has rows deleted by Iceberg "
                                       "delete files, which a file reader would return; read with db.scan or SELECT")
                path = getattr(p, "data_path", None)
                if path is None:
                    from skipidx.store.part import DATA_FILE
                    path = os.path.join(p.path, DATA_FILE)
                rgs = getattr(p, "row_groups_of", None)
                out.append((path, rgs(sel.ranges) if rgs is not None else [g for a, b in sel.ranges for g in range(a, b)]))
            return out

    def attach_iceberg(self, name: str, table: Any, indexes: Sequence[str] = (), *, catalog: str | None = None,
                       if_not_exists: bool = False) -> Result:
        """``CREATE TABLE name (INDEX ...) ENGINE = Iceberg(...)`` for a pyiceberg Table (or, with
        `catalog`, the identifier ``'namespace.table'`` of a table in that catalog: a URI or a
        configured catalog's name). `indexes`: INDEX clauses, e.g. ``"INDEX t msg TYPE
        text(tokenizer = 'splitByNonAlpha')"``. A table without a catalog (pyiceberg's
        StaticTable) is attached read-only (IcebergLocal: no statistics file registered)."""
        if isinstance(table, str):
            if catalog is None:
                raise SkipidxError("attach_iceberg: give a pyiceberg Table, or the identifier with catalog=")
            engine = f"Iceberg({A.quote_string(catalog.encode())}, {A.quote_string(table.encode())})"
        else:
            cat = getattr(table, "catalog", None)
            ident = ".".join(table.name()) if hasattr(table, "name") else None
            props = getattr(cat, "properties", {}) or {}
            if cat is None or not ident or type(cat).__name__ == "NoopCatalog":
                engine = f"IcebergLocal({A.quote_string(str(table.metadata_location).encode())})"
            else:
                args = [props["uri"], ident, cat.name] if props.get("uri") else [cat.name, ident]
                engine = f"Iceberg({', '.join(A.quote_string(str(v).encode()) for v in args)})"
        for ix in indexes:
            if not isinstance(ix, str) or not ix.strip().upper().startswith("INDEX "):
                raise SkipidxError(f"attach_iceberg: an index is an INDEX clause ('INDEX name expr TYPE ...'), not {ix!r}")
        elems = f" ({', '.join(indexes)})" if indexes else ""
        ine = "IF NOT EXISTS " if if_not_exists else ""
        return self.sql(f"CREATE TABLE {ine}{A.quote_identifier(name)}"
                        f"{elems} ENGINE = {engine}")

    def _create_iceberg(self, s: "A.CreateTable") -> Result:
        from skipidx.planner.external import iceberg_meta_from_ast
        from skipidx.store.iceberg import create_iceberg_table

        meta, spec, ident, ids, location = iceberg_meta_from_ast(s)
        t, rep = self.catalog.create_external_table(
            meta, "", [], if_not_exists=s.if_not_exists,
            create=lambda tmp: create_iceberg_table(tmp, meta, spec, ident, ids, location))
        return Result(message="table exists" if t is None else f"created Iceberg table: {rep.message()}")

    def tables(self) -> list[str]:
        self._check_open()
        return self.catalog.list_tables()

    def table_meta(self, name: str):
        """The metadata (schema, ORDER BY, indexes) of table `name`."""
        self._check_open()
        return self.catalog.table(name).meta

    # -- dispatch -----------------------------------------------------------
    def _dispatch(self, s: A.Statement) -> Result:
        from skipidx.engine import statements, system_tables

        # `default.t` is `t`; a system table answers DESCRIBE/EXISTS/SHOW CREATE, refuses writes
        s = system_tables.check_statement(s)
        if system_tables.is_system(getattr(s, "table", None)) and not isinstance(s, A.Select):
            res = system_tables.run_on_system(s)
            if res is None:
                raise system_tables.read_only_error(s.table, type(s).__name__)
            return res
        s = statements.resolve_subqueries(self, s)
        handled = statements.run(self, s)
        if handled is not None:
            return handled
        if isinstance(s, A.Select):
            return self._select(s)
        if isinstance(s, A.Explain):
            return self._explain(s)
        if isinstance(s, A.CreateTable) and s.engine == "ParquetFiles":
            from skipidx.planner.external import external_meta_from_ast

            meta, src, pcols = external_meta_from_ast(s)
            t, rep = self.catalog.create_external_table(meta, src, pcols, if_not_exists=s.if_not_exists)
            return Result(message="table exists" if t is None else f"created external table: {rep.message()}")
        if isinstance(s, A.CreateTable) and s.engine in ("Iceberg", "IcebergLocal"):
            return self._create_iceberg(s)
        if isinstance(s, A.AlterRefresh):
            t = self._table(s.table)
            if not hasattr(t, "refresh"):
                raise BindError(f"ALTER TABLE ... REFRESH applies to external tables (ENGINE = ParquetFiles); "
                                f"{s.table.name!r} is a MergeTree table",
                                line=s.pos.line or None, column=s.pos.column or None)
            rep = t.refresh()
            return Result(_refresh_table(rep), message=f"refreshed: {rep.message()}")
        if isinstance(s, A.CreateTable):
            from skipidx.planner.ddl import table_meta_from_ast

            meta = table_meta_from_ast(s)
            created = self.catalog.create_table(meta, if_not_exists=s.if_not_exists)
            return Result(message="created table" if created is not None else "table exists")
        if isinstance(s, A.DropTable):
            dropped = self.catalog.drop_table(s.table.name, if_exists=s.if_exists)
            return Result(message="dropped table" if dropped else "no such table")
        if isinstance(s, A.InsertValues):
            from skipidx.planner.ddl import values_table

            t = self._table(s.table)
            data = values_table(t.meta, s)
            n = t.insert(data)
            return Result(message=f"inserted {n} rows", rows_affected=int(n))
        if isinstance(s, A.InsertFile):
            t = self._table(s.table)
            if s.columns is not None and list(s.columns) != t.meta.column_names:
                raise BindError("INSERT ... FROM INFILE with a column list is not supported; "
                                "the file must hold the table's columns",
                                line=s.pos.line or None, column=s.pos.column or None)
            from skipidx.store.file_access import resolve_many
            from skipidx.store.ingest import insert_any

            src = resolve_many(s.path, "INFILE")
            if not bool(getattr(sys.stderr, "isatty", lambda: False)()):
                n = insert_any(t, src, format=s.format, threads=self._write_threads(insert=True))
            else:
                from skipidx.core.progress import Progress

                # a long import shows it is alive on a terminal (drawn after a second)
                with Progress(f"insert {s.table.name}", None) as bar:
                    n = insert_any(t, src, format=s.format, progress=bar.update,
                                   threads=self._write_threads(insert=True))
            return Result(message=f"inserted {n} rows", rows_affected=int(n))
        if isinstance(s, A.AlterAddIndex):
            from skipidx.planner.ddl import index_def_from_ast

            t = self._table(s.table)
            defn = index_def_from_ast(s.index, t.meta)
            t.add_index(defn, if_not_exists=s.if_not_exists)
            return Result(message=f"added index {defn.name}")
        if isinstance(s, A.AlterDropIndex):
            t = self._table(s.table)
            t.drop_index(s.name, if_exists=s.if_exists)
            return Result(message=f"dropped index {s.name}")
        if isinstance(s, A.AlterMaterializeIndex):
            t = self._table(s.table)
            t.materialize_index(s.name)
            return Result(message=f"materialized index {s.name}")
        if isinstance(s, A.Optimize):
            t = self._table(s.table)
            t.optimize(final=s.final, threads=self._write_threads(insert=False))
            return Result(message="optimized")
        if isinstance(s, A.ShowParts):
            t = self._table(s.table)
            if not hasattr(t, "parts_table"):
                raise SkipidxError(f"SHOW PARTS: table {s.table.name!r} is an external table (ENGINE = "
                                   "ParquetFiles): its data files are not parts")
            return Result(t.parts_table())
        if isinstance(s, A.ShowMerges):
            return Result(self._merges(s.table))
        if isinstance(s, A.AlterAttachParts):
            # not through _table: the point is a table whose state cannot be read
            return Result(message=self.catalog.repair_table(s.table.name))
        if isinstance(s, A.ShowTables):
            if s.database is not None:
                ref = system_tables.local_ref(A.TableRef("tables", pos=s.pos, database=s.database))
                if ref.database is not None:      # SHOW TABLES FROM system
                    return Result(pa.table({"name": pa.array(sorted(system_tables.SYSTEM_TABLES), pa.string())}))
            return Result(pa.table({"name": pa.array(self.catalog.list_tables(), pa.string())}))
        if isinstance(s, A.Describe):
            meta = self._table(s.table).meta
            return Result(pa.table({
                "name": pa.array([c.name for c in meta.columns], pa.string()),
                "type": pa.array([c.type.name for c in meta.columns], pa.string()),
                # ClickHouse's DESCRIBE column of that name ('' when no CODEC was declared)
                "codec_expression": pa.array([c.codec or "" for c in meta.columns], pa.string()),
            }))
        raise SkipidxError(f"unsupported statement {type(s).__name__}")

    def _merges(self, ref: A.TableRef | None) -> pa.Table:
        """The merges running now, in any process (SHOW MERGES; system.merges' names)."""
        from skipidx.store.merge import merges_in_progress

        names = [ref.name] if ref is not None else self.catalog.list_tables()
        rows = []
        for n in names:
            t = self._table(ref) if ref is not None else self.catalog.table(n)
            for m in merges_in_progress(t.path):
                rows.append((n, m["result_part"], m["num_parts"], m["source_parts"], m["rows"], m["elapsed_s"]))
        cols = list(zip(*rows)) if rows else [[]] * 6
        return pa.table({
            "table": pa.array(cols[0], pa.string()),
            "result_part_name": pa.array(cols[1], pa.string()),
            "num_parts": pa.array(cols[2], pa.uint64()),
            "source_part_names": pa.array(cols[3], pa.list_(pa.string())),
            "total_rows": pa.array(cols[4], pa.uint64()),
            "elapsed": pa.array(cols[5], pa.float64()),
        })

    def _local_ref(self, ref: A.TableRef) -> A.TableRef:
        """`ref` named in this database (``default.t`` -> ``t``); a system table keeps its
        database (``system``); another database is an error."""
        from skipidx.engine.system_tables import local_ref

        return local_ref(ref)

    def _system_table(self, name: str, settings: dict, query: A.Select | None = None) -> tuple[pa.Table, Any]:
        """The rows and metadata of system table `name` now, for `query` (engine/system_tables.py)."""
        from skipidx.engine.system_tables import system_table

        return system_table(self, name, settings, query)

    def _system_meta(self, name: str) -> Any:
        """The columns of system table `name` as a table's metadata."""
        from skipidx.engine.system_tables import system_meta

        return system_meta(name)

    def _table(self, ref: A.TableRef):
        from skipidx.engine.system_tables import is_system, local_ref, read_only_error

        ref = local_ref(ref)
        if is_system(ref):
            raise read_only_error(ref, "a statement on the table's data files")
        try:
            return self.catalog.table(ref.name)
        except BindError:
            raise
        except SkipidxError as e:
            if e.path is not None:
                raise   # a damaged or unreadable table: the error names its file
            if ref.pos.line:
                raise BindError(e.message, line=ref.pos.line, column=ref.pos.column) from None
            raise

    # -- SELECT -----------------------------------------------------------
    def _plan(self, s: A.Select):
        from skipidx.expr.binder import bind_select
        from skipidx.planner.plan import plan_query

        if s.table is None:
            return None, bind_select(None, s), None
        table = self._table(s.table)
        snap = table.snapshot()
        try:
            bs = bind_select(snap.meta, s)
            plan = plan_query(snap, bs, self.index_cache)
            plan.executor = self.executor
            return snap, bs, plan
        except BaseException:
            snap.close()
            raise

    def _select(self, s: A.Select) -> Result:
        from skipidx.engine.query import run_constant_select, run_query

        snap, bs, plan = self._plan(s)
        if snap is None:
            t = run_constant_select(bs)
            return Result(t, types=bound_types(bs, t))
        if not streamable(bs):
            with snap:
                table, stats = run_query(plan)
            return Result(table, stats, types=bound_types(bs, table))
        try:
            return select_stream(snap, plan, force=False)
        except BaseException:
            snap.close()
            raise

    def _explain(self, s: A.Explain) -> Result:
        from skipidx.execution.direct_read import direct_count, row_filter_indexes, where_indexes
        from skipidx.planner.explain import explain_lines

        from skipidx.engine.settings import resolve_settings
        from skipidx.engine.statements import _with_prewhere, apply_prewhere, session_settings

        from skipidx.engine.system_tables import is_system, local_ref

        from skipidx.engine.window import has_windows

        if has_windows(s.select):
            return self._explain_window(s)
        if isinstance(s.select, A.Select) and s.select.limit_by is not None:
            return self._explain_limit_by(s)
        if isinstance(s.select, A.Union):
            from skipidx.engine.explain_sources import explain_union_lines

            return Result(pa.table({"explain": pa.array(explain_union_lines(self, s.select, s.indexes), pa.string())}))
        if s.select.table is not None and is_system(local_ref(s.select.table)):
            return self._explain_system(s.select)
        if s.select.table_function is not None or s.select.subquery is not None:
            from skipidx.engine.explain_sources import explain_source_lines

            lines = explain_source_lines(self, s.select, s.indexes)
            return Result(pa.table({"explain": pa.array(lines, pa.string())}))
        snap, bs, plan = self._plan(_with_prewhere(s.select))
        if snap is not None:
            try:
                qs = resolve_settings(session_settings(self), s.select.settings)
                apply_prewhere(plan, qs, s.select)
                # the read paths EXPLAIN names follow the query's settings
                plan.direct_read = bool(qs.get("query_plan_direct_read_from_text_index"))
                plan.row_filter = bool(qs.get("text_index_row_filter"))
            except BaseException:
                snap.close()
                raise
        if snap is None:
            lines = ["Expression", "  (no table: nothing to read)"]
            return Result(pa.table({"explain": pa.array(lines, pa.string())}))
        from skipidx.engine.query import limit_streams

        # the read paths of the query itself: a SELECT that streams its rows
        # (engine/streaming.py) reads neither way, a streamed LIMIT scan has no row filter
        streamed = streamable(bs)
        with snap:
            lines, stats = explain_lines(plan, indexes=s.indexes, direct_count=direct_count,
                                         direct_rows=None if streamed else where_indexes,
                                         row_filter=None if streamed or limit_streams(bs) else row_filter_indexes)
        return Result(pa.table({"explain": pa.array(lines, pa.string())}), stats)


    def _explain_window(self, s: A.Explain) -> Result:
        """EXPLAIN of a SELECT with window functions: the plan of the query that runs (engine/window.py:
        the windows' parts as hidden columns, no LIMIT), its Window and Limit steps on top."""
        from skipidx.engine.window import window_query

        sel = s.select
        q, windows, order = window_query(sel)
        res = self._explain(dataclasses.replace(s, select=q))
        lines = [str(x) for x in res.to_arrow().column("explain").to_pylist()]
        top = [f"Window: {', '.join(w.to_sql() for _i, w, _c in windows)}"]
        if order:     # an ORDER BY that names a window's result sorts after it
            top.insert(0, "Sorting: " + ", ".join(o.to_sql() for o in sel.order_by))
        if sel.limit is not None:
            top.insert(0, f"Limit {sel.limit}" + (f" offset {sel.offset}" if sel.offset else ""))
        return Result(pa.table({"explain": pa.array(top + lines, pa.string())}), res.stats)

    def _explain_limit_by(self, s: A.Explain) -> Result:
        """EXPLAIN of a SELECT with LIMIT BY: the plan of the query without it (engine/limit_by.py
        runs that one), its LimitBy and Limit steps on top."""
        from skipidx.engine.limit_by import limit_by_query

        sel = s.select
        q, _positions = limit_by_query(sel)      # the query that runs: the keys as hidden columns
        res = self._explain(dataclasses.replace(s, select=q))
        lines = [str(x) for x in res.to_arrow().column("explain").to_pylist()]
        lb = sel.limit_by
        top = [f"LimitBy {lb.limit}" + (f" offset {lb.offset}" if lb.offset else "")
               + f" by {', '.join(e.to_sql() for e in lb.exprs)}"]
        if sel.limit is not None:
            top.insert(0, f"Limit {sel.limit}" + (f" offset {sel.offset}" if sel.offset else ""))
        return Result(pa.table({"explain": pa.array(top + lines, pa.string())}), res.stats)

    def _explain_system(self, q: A.Select) -> Result:
        """EXPLAIN of a SELECT over a system table: its rows are built, not read (no pruning)."""
        from skipidx.expr.binder import bind_select
        from skipidx.engine.system_tables import system_meta

        q = _with_prewhere_select(q)
        bs = bind_select(system_meta(q.table.name), dataclasses.replace(q, table=None))
        lines = ["Expression"]
        if q.where is not None:
            lines.append(f"  Filter: {q.where.to_sql()}")
        # ClickHouse's step names (chDB's EXPLAIN); query_log is a MergeTree there, a log file here
        step = {"parts": "ReadFromSystemPartsBase", "tables": "ReadFromSystemTables", "columns": "ReadFromSystemColumns",
                "data_skipping_indices": "ReadFromSystemDataSkippingIndices", "one": "ReadFromSystemOne",
                }.get(q.table.name, "ReadFromSystemOneBlock")
        lines.append(f"  {step} (system.{q.table.name})")
        from skipidx.expr.visitors import columns_of

        needed = bs.output_columns()
        columns_of(bs.where, needed)
        cols = [c for c, _t in system_tables_columns(q.table.name) if c in needed]
        if cols:
            lines.append(f"    Columns: {', '.join(cols)}")
        return Result(pa.table({"explain": pa.array(lines, pa.string())}))


def system_tables_columns(name: str) -> list:
    from skipidx.engine.system_tables import system_columns

    return system_columns(name)


def _with_prewhere_select(q: A.Select) -> A.Select:
    from skipidx.engine.statements import _with_prewhere

    return _with_prewhere(q)


def _statement_params(stmt: A.Statement) -> list:
    from skipidx.sql.params import statement_params

    return statement_params(stmt)


@contextlib.contextmanager
def _as_skipidx_errors() -> Iterator[None]:
    """An OSError (with its file and errno) or a data-dependent Arrow failure inside the
    block becomes a SkipidxError; a SkipidxError passes unchanged."""
    try:
        yield
    except SkipidxError:
        raise
    except OSError as e:
        from skipidx.store.commit import os_error

        raise os_error(e) from None
    except pa.ArrowException as e:
        # data-dependent failures inside Arrow are reported, not crashed on
        raise SkipidxError(f"{type(e).__name__}: {e}") from None


def _refresh_table(rep) -> pa.Table:
    rows = ([("indexed", p, "") for p in rep.indexed] + [("rebuilt", p, "") for p in rep.rebuilt]
            + [("removed", p, "") for p in rep.removed] + [("skipped", x["path"], x["reason"]) for x in rep.skipped])
    return pa.table({"action": pa.array([r[0] for r in rows], pa.string()),
                     "path": pa.array([r[1] for r in rows], pa.string()),
                     "detail": pa.array([r[2] for r in rows], pa.string())})


def _apply_params_expr(expr, params: dict[str, Any]):
    """A WHERE expression with its query parameters ``{name:Type}`` bound."""
    from skipidx.sql.params import bind_params

    return bind_params(expr, params)


def _write_outfile(res: Result) -> Result:
    """``INTO OUTFILE 'p' [FORMAT f]``: write the rows to the file (format from
    FORMAT, else the extension, else TabSeparated, as ClickHouse); the file
    must not exist (ClickHouse refuses to overwrite too)."""
    from skipidx.engine.formats import canonical_format, format_from_path, write_batches

    from skipidx.store.file_access import resolve

    path = resolve(res.outfile, "INTO OUTFILE", write=True)
    fmt = canonical_format(res.format_name) if res.format_name else format_from_path(path)
    if os.path.exists(path):
        raise SkipidxError(f"cannot write INTO OUTFILE {path!r}: the file exists")
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            n = write_batches(res.fetch_record_batch(), res.schema, res.types, fmt, fh)
        os.replace(tmp, path)
    except OSError as e:
        raise SkipidxError(f"cannot write INTO OUTFILE {path!r}: {e.strerror or e}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    out = Result(message=f"wrote {n} rows to {path} ({fmt})", stats=res.stats)
    out.outfile, out.format_name = path, fmt
    return out


class Cursor:
    """A PEP 249 cursor: ``execute``, ``fetchone``/``fetchmany``/``fetchall``,
    ``description``, ``rowcount``, ``arraysize``, plus the Result's Arrow ways out."""

    arraysize = 1

    def __init__(self, db: Database) -> None:
        self.connection = db
        self._res: Result | None = None
        self._closed = False

    def execute(self, operation: str, parameters: dict[str, Any] | None = None) -> "Cursor":
        if self._closed:
            raise SkipidxError("the cursor is closed")
        if self._res is not None:
            self._res.close()
        self._res = self.connection.sql(operation, parameters)
        return self

    def executemany(self, operation: str, seq_of_parameters) -> "Cursor":
        for p in seq_of_parameters:
            self.execute(operation, p)
        return self

    def _r(self) -> Result:
        if self._res is None:
            raise SkipidxError("no statement executed on this cursor")
        return self._res

    @property
    def description(self):
        return None if self._res is None else self._res.description

    @property
    def rowcount(self) -> int:
        r = self._res
        if r is None:
            return -1
        if r.rows_affected is not None:
            return r.rows_affected
        return -1 if r.streaming else (r.num_rows if r.columns else -1)

    def fetchone(self):
        return self._r().fetchone()

    def fetchmany(self, size: int | None = None):
        return self._r().fetchmany(self.arraysize if size is None else size)

    def fetchall(self):
        return self._r().fetchall()

    def fetch_arrow_table(self) -> pa.Table:
        return self._r().fetch_arrow_table()

    def fetch_record_batch(self, rows_per_batch: int = 65536) -> pa.RecordBatchReader:
        return self._r().fetch_record_batch(rows_per_batch)

    def df(self):
        return self._r().df()

    def __iter__(self):
        return iter(self._r())

    def setinputsizes(self, sizes) -> None:
        pass

    def setoutputsize(self, size, column=None) -> None:
        pass

    def close(self) -> None:
        self._closed = True
        if self._res is not None:
            self._res.close()
            self._res = None

    def __enter__(self) -> "Cursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def connect(path: str | os.PathLike | None = None, **kwargs: Any) -> Database:
    """Open (or create) a database directory; no path: a temporary database."""
    return Database(path, **kwargs)


__all__ = ["Database", "Cursor", "connect", "QueryStats", "Result"]
