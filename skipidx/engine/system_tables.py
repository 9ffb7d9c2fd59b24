"""ClickHouse's ``system`` database as read-only virtual tables, and ``database.table`` names.

The database a connection opens is ClickHouse's current database, ``default``:
``default.t`` is the table ``t``. The ``system`` database holds virtual tables
built when a statement reads them, with ClickHouse's column names and types
for the columns skipidx can fill (a subset of ClickHouse's, checked against
chDB's ``DESCRIBE system.X``):

- ``system.parts``: the active parts of the MergeTree tables;
- ``system.tables``, ``system.columns``, ``system.databases``;
- ``system.data_skipping_indices``: every declared index with its size on disk;
- ``system.merges``: the merges running now (SHOW MERGES);
- ``system.detached_parts``: part directories ``ALTER TABLE t ATTACH PARTS`` moved aside;
- ``system.query_log``: the database's log of recent SELECTs (engine/query_log.py);
- ``system.settings``: the query settings, with this connection's values;
- ``system.functions``, ``system.table_functions``, ``system.formats``, ``system.one``.

A SELECT reads one as any table (WHERE, GROUP BY, ORDER BY, LIMIT, FORMAT,
subqueries, EXPLAIN); DESCRIBE and EXISTS answer for them; SHOW CREATE and any
statement that would write one is a :class:`SkipidxError` (ClickHouse keeps no
CREATE statement of its system tables either).
"""
from __future__ import annotations

import datetime as _dt
import os
import uuid
from dataclasses import replace
from typing import Any, Callable

import pyarrow as pa

from skipidx.core.errors import BindError, SkipidxError
from skipidx.core.hints import did_you_mean
from skipidx.core.lru import LRU
from skipidx.core.types import parse_type
from skipidx.sql import ast as A
from skipidx.store.metadata import ColumnMeta, TableMeta

__all__ = ["DATABASE", "SYSTEM", "SYSTEM_TABLES", "local_ref", "is_system", "check_statement",
           "system_table", "system_columns", "system_meta"]

#: the name of the connection's own database (ClickHouse's current database)
DATABASE = "default"
SYSTEM = "system"

_ENUM_QUERY_TYPE = ("Enum8('QueryStart' = 1, 'QueryFinish' = 2, 'ExceptionBeforeStart' = 3, "
                    "'ExceptionWhileProcessing' = 4)")

#: name -> [(column, ClickHouse type)], in ClickHouse's column order (a subset of its columns)
SYSTEM_TABLES: dict[str, list[tuple[str, str]]] = {
    "parts": [
        ("partition", "String"), ("name", "String"), ("active", "UInt8"), ("marks", "UInt64"),
        ("rows", "UInt64"), ("files", "UInt64"), ("bytes_on_disk", "UInt64"),
        ("data_compressed_bytes", "UInt64"), ("data_uncompressed_bytes", "UInt64"),
        ("secondary_indices_compressed_bytes", "UInt64"), ("modification_time", "DateTime"), ("partition_id", "String"), ("level", "UInt32"),
        ("database", "String"), ("table", "String"), ("engine", "String"), ("path", "String"),
    ],
    "tables": [
        ("database", "String"), ("name", "String"), ("uuid", "UUID"), ("engine", "String"), ("is_temporary", "UInt8"),
        ("data_paths", "Array(String)"), ("create_table_query", "String"), ("engine_full", "String"),
        ("partition_key", "String"), ("sorting_key", "String"), ("primary_key", "String"),
        ("sampling_key", "String"), ("total_rows", "Nullable(UInt64)"), ("total_bytes", "Nullable(UInt64)"),
        ("total_bytes_uncompressed", "Nullable(UInt64)"), ("parts", "Nullable(UInt64)"), ("active_parts", "Nullable(UInt64)"), ("total_marks", "Nullable(UInt64)"),
        ("comment", "String"), ("has_own_data", "UInt8"),
    ],
    "columns": [
        ("database", "String"), ("table", "String"), ("name", "String"), ("type", "String"),
        ("position", "UInt64"), ("default_kind", "String"), ("default_expression", "String"),
        ("data_compressed_bytes", "UInt64"), ("data_uncompressed_bytes", "UInt64"), ("comment", "String"), ("is_in_partition_key", "UInt8"), ("is_in_sorting_key", "UInt8"),
        ("is_in_primary_key", "UInt8"), ("is_in_sampling_key", "UInt8"), ("compression_codec", "String"),
    ],
    "data_skipping_indices": [
        ("database", "String"), ("table", "String"), ("name", "String"), ("type", "String"),
        ("type_full", "String"), ("expr", "String"), ("creation", "Enum8('Explicit' = 0, 'Implicit' = 1)"),
        ("granularity", "UInt64"), ("data_compressed_bytes", "UInt64"), ("data_uncompressed_bytes", "UInt64"),
        ("marks_bytes", "UInt64"),
    ],
    "merges": [
        ("database", "String"), ("table", "String"), ("elapsed", "Float64"), ("num_parts", "UInt64"),
        ("source_part_names", "Array(String)"), ("result_part_name", "String"), ("partition_id", "String"),
        ("partition", "String"), ("is_mutation", "UInt8"), ("merge_type", "String"),
    ],
    "query_log": [
        ("type", _ENUM_QUERY_TYPE), ("event_date", "Date"), ("event_time", "DateTime"),
        ("event_time_microseconds", "DateTime64(6)"), ("query_start_time", "DateTime"),
        ("query_start_time_microseconds", "DateTime64(6)"), ("query_duration_ms", "UInt64"),
        ("read_rows", "UInt64"), ("result_rows", "UInt64"), ("current_database", "String"),
        ("query", "String"), ("query_kind", "LowCardinality(String)"),
        ("databases", "Array(LowCardinality(String))"), ("tables", "Array(LowCardinality(String))"),
        ("exception_code", "Int32"), ("exception", "String"), ("query_id", "String"),
    ],
    "settings": [
        ("name", "String"), ("value", "String"), ("changed", "UInt8"), ("description", "String"),
        ("type", "String"), ("default", "String"),
    ],
    "databases": [
        ("name", "String"), ("engine", "String"), ("data_path", "String"), ("comment", "String"),
    ],
    "detached_parts": [
        ("database", "String"), ("table", "String"), ("name", "String"), ("bytes_on_disk", "UInt64"),
        ("modification_time", "DateTime"), ("disk", "String"), ("path", "String"),
    ],
    "functions": [
        ("name", "String"), ("is_aggregate", "UInt8"), ("case_insensitive", "UInt8"), ("alias_to", "String"),
        ("origin", "Enum8('System' = 0, 'SQLUserDefined' = 1, 'ExecutableUserDefined' = 2, 'WasmUserDefined' = 3)"),
        ("description", "String"),
    ],
    "table_functions": [("name", "String"), ("description", "String")],
    "formats": [("name", "String"), ("is_input", "UInt8"), ("is_output", "UInt8")],
    "one": [("dummy", "UInt8")],
}

#: the statements that would change a table, as the error names them
_WRITES = {
    "CreateTable": "CREATE TABLE", "DropTable": "DROP TABLE", "Truncate": "TRUNCATE",
    "InsertValues": "INSERT", "InsertFile": "INSERT", "InsertSelect": "INSERT", "Alter": "ALTER",
    "AlterAddIndex": "ALTER", "AlterDropIndex": "ALTER", "AlterMaterializeIndex": "ALTER",
    "AlterAddColumn": "ALTER", "AlterDropColumn": "ALTER", "AlterModifySetting": "ALTER",
    "AlterRefresh": "ALTER", "AlterAttachParts": "ALTER", "Optimize": "OPTIMIZE", "ShowParts": "SHOW PARTS",
}


_err = BindError.at   # (the error at the node's position)


def is_system(ref: Any) -> bool:
    """Whether `ref` (a TableRef or None) names a table of the ``system`` database."""
    return isinstance(ref, A.TableRef) and ref.database is not None and ref.database == SYSTEM


def local_ref(ref: A.TableRef) -> A.TableRef:
    """`ref` as a name of this database (``default.t`` is ``t``); a ``system`` table is returned
    as is (check with :func:`is_system`); any other database is an error."""
    if ref.database is None:
        return ref
    if ref.database == DATABASE:
        return replace(ref, database=None)
    if ref.database == SYSTEM:
        if ref.name not in SYSTEM_TABLES:
            raise _err(f"unknown table system.{ref.name}{did_you_mean(ref.name, SYSTEM_TABLES)}; "
                       f"system tables: {', '.join(sorted(SYSTEM_TABLES))}", ref)
        return ref
    raise _err(f"Database {ref.database} does not exist{did_you_mean(ref.database, (DATABASE, SYSTEM))}; "
               f"databases: {DATABASE} (this database), {SYSTEM}", ref)


def read_only_error(ref: A.TableRef, what: str) -> SkipidxError:
    return _err(f"system.{ref.name} is a read-only system table: {what} is not allowed "
                "(SELECT from it, DESCRIBE it)", ref)


def check_statement(s: A.Statement) -> A.Statement:
    """`s` with its target table named in this database (``default.t`` -> ``t``); a write to a
    system table or a table of another database is an error. The FROM of a SELECT is left
    to the SELECT (it may read a system table)."""
    ref = getattr(s, "table", None)
    if not isinstance(ref, A.TableRef) or ref.database is None or isinstance(s, A.Select):
        return s
    if isinstance(s, A.ExistsTable) and ref.database == SYSTEM:
        return s          # EXISTS system.nope is 0, not an error
    if isinstance(s, A.CreateTable) and ref.database == SYSTEM:
        raise _err(f"the system database is read-only: CREATE TABLE system.{ref.name} is not allowed", ref)
    ref = local_ref(ref)
    if is_system(ref):
        what = _WRITES.get(type(s).__name__)
        if what is not None:
            raise read_only_error(ref, what)
        return s
    if isinstance(s, A.Alter):
        # each command names the table again
        return replace(s, table=ref, commands=tuple(replace(c, table=ref) for c in s.commands))
    return replace(s, table=ref)


def run_on_system(s: A.Statement) -> Any:
    """The answer of DESCRIBE / EXISTS on a system table (Result); None for any other
    statement (SHOW CREATE is an error, as in ClickHouse)."""
    from skipidx.engine.result import Result

    ref = s.table
    if isinstance(s, A.ExistsTable):
        return Result(pa.table({"result": pa.array([int(ref.name in SYSTEM_TABLES)], pa.uint8())}))
    cols = SYSTEM_TABLES[ref.name]
    if isinstance(s, A.Describe):
        return Result(pa.table({"name": pa.array([c for c, _ in cols], pa.string()),
                                "type": pa.array([t for _, t in cols], pa.string()),
                                "codec_expression": pa.array([""] * len(cols), pa.string())}))
    if isinstance(s, A.ShowCreate):
        # as ClickHouse: a system table has no CREATE statement
        raise _err(f"There is no metadata of table {ref.name} in database system: it is a virtual system "
                   f"table (DESCRIBE system.{ref.name} lists its columns)", ref)
    return None


def statement_tables(stmt: A.Statement) -> list[str]:
    """The tables a statement reads, as ClickHouse's query_log names them (``default.t``,
    ``system.parts``), in order of appearance, each once."""
    return list(A.memo(stmt, "tables", _statement_tables))


def _statement_tables(stmt: A.Statement) -> tuple[str, ...]:
    from skipidx.sql.with_clause import inline_with

    stmt = inline_with(stmt)      # a WITH name is no table: its query's tables are
    out: dict[str, None] = {}

    def walk(node: Any) -> None:
        if isinstance(node, (A.Literal, A.Column, str)):
            return        # leaves (a long IN list is mostly literals)
        if isinstance(node, A.TableRef):
            if node.param is None and node.name:
                out[f"{node.database or DATABASE}.{node.name}"] = None
            return
        if isinstance(node, tuple):
            for x in node:
                walk(x)
        elif isinstance(node, A.Node):
            for f in A.node_fields(type(node)):
                walk(getattr(node, f))

    walk(stmt)
    return tuple(out)


def system_meta(name: str) -> TableMeta:
    """The columns of system table `name` as a table's metadata (for the binder)."""
    return TableMeta(name=name, columns=[ColumnMeta(c, parse_type(t)) for c, t in SYSTEM_TABLES[name]])


def system_columns(name: str) -> list[tuple[str, str]]:
    return list(SYSTEM_TABLES[name])


def system_table(db: Any, name: str, settings: dict | None = None,
                 query: A.Select | None = None) -> tuple[pa.Table, TableMeta]:
    """The rows of system table `name` now, and its metadata. `settings`: the statement's
    resolved settings (system.settings shows them); `query`: the SELECT that reads it (the
    columns it does not use are left empty where they cost a read: the data files' footers)."""
    meta = system_meta(name)
    needed = None
    if query is not None:
        from skipidx.expr.binder import bind_select
        from skipidx.expr.visitors import columns_of

        bs = bind_select(meta, replace(query, table=None))
        needed = bs.output_columns()
        columns_of(bs.where, needed)
        columns_of(bs.having, needed)
    rows = _BUILDERS[name](db, {"settings": settings or {}, "needed": needed})
    arrays = []
    fields = []
    for c in meta.columns:
        vals = rows.get(c.name, [])
        fields.append(pa.field(c.name, c.type.arrow_type, nullable=c.type.nullable))
        arrays.append(pa.array(vals, c.type.arrow_type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), meta


# ---------------------------------------------------------------------------- builders

def _columns_of(names: list[str]) -> dict[str, list]:
    return {n: [] for n in names}


def _tables(db: Any) -> list[tuple[str, Any]]:
    """(name, table) of every table whose state reads (a damaged table is left out)."""
    out = []
    for n in db.catalog.list_tables():
        try:
            out.append((n, db.catalog.table(n)))
        except SkipidxError:
            continue
    return out


def _is_external(t: Any) -> bool:
    return getattr(t, "kind", None) == "external"


def _mtime(unix: Any) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(int(float(unix or 0)), _dt.timezone.utc).replace(tzinfo=None)


def _wants(ctx: dict, *columns: str) -> bool:
    needed = ctx["needed"]
    return needed is None or any(c in needed for c in columns)


#: (part path, data file checksum) -> {column: (compressed, uncompressed)} bytes in the data file
_COLUMN_BYTES = LRU(4096, "system_tables.column_bytes", "column sizes of parts' data files")


def _column_bytes(p: Any) -> dict[str, tuple[int, int]]:
    """Compressed and uncompressed bytes of each column of part `p`, from its data file's
    footer; empty where the footer cannot be read here (an encrypted part without its key)."""
    f = (p.manifest.get("files") or {}).get("data.parquet") or {}
    key = (p.path, str(f.get("xxh3_128")))
    got = _COLUMN_BYTES.get(key)
    if got is not None:
        return got
    try:
        md = p.data_metadata()
    except SkipidxError:
        return {}
    sizes: dict[str, list[int]] = {}
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        for j in range(rg.num_columns):
            c = rg.column(j)
            acc = sizes.setdefault(c.path_in_schema.split(".", 1)[0], [0, 0])
            acc[0] += c.total_compressed_size
            acc[1] += c.total_uncompressed_size
    got = {k: (v[0], v[1]) for k, v in sizes.items()}
    _COLUMN_BYTES.put(key, got)
    return got


def _parts_of(t: Any, column_bytes: bool = False) -> list[dict]:
    """One dict per active part of MergeTree table `t` (read through its snapshot);
    `column_bytes`: with the bytes of each column (the data file's footer)."""
    if _is_external(t):
        return []
    out = []
    try:
        snap = t.snapshot()
    except SkipidxError:
        return []        # dropped since it was listed, or its state is damaged
    with snap:
        for p in snap.parts:
            m = p.manifest
            files = m.get("files") or {}
            index_files = {e.get("file") for e in (m.get("indexes") or {}).values()}
            out.append({
                "name": p.name, "rows": int(p.num_rows), "marks": int(p.n_granules), "level": int(p.level),
                "files": len(files), "bytes": sum(int(f.get("size", 0)) for f in files.values()),
                "indexes": sum(int(f.get("size", 0)) for k, f in files.items() if k in index_files),
                "index_sizes": {n: int(files.get(e.get("file"), {}).get("size", 0))
                                for n, e in (m.get("indexes") or {}).items() if p.has_index(n)},
                "mtime": _mtime(m.get("created_unix")), "path": p.path,
                "columns": _column_bytes(p) if column_bytes else {},
            })
    return out


def _sidecars_of(t: Any) -> list[dict]:
    """The index sizes of an external table's data files (their sidecar files)."""
    out = []
    try:
        with t.snapshot() as snap:
            for f in snap.parts:
                sizes = {}
                for im in snap.meta.indexes:
                    e = f.index_entry(im.name)
                    if e is not None:
                        try:
                            sizes[im.name] = os.stat(e["file"]).st_size
                        except OSError:
                            continue     # removed by a REFRESH meanwhile
                out.append({"index_sizes": sizes})
    except SkipidxError:
        return []
    return out


def _parts(db: Any, ctx: dict) -> dict[str, list]:
    names = [c for c, _ in SYSTEM_TABLES["parts"]]
    out = _columns_of(names)
    # the column data's bytes as the data file's footer counts them (not the file's size)
    sizes = _wants(ctx, "data_compressed_bytes", "data_uncompressed_bytes")
    for tname, t in _tables(db):
        for p in _parts_of(t, column_bytes=sizes):
            row = {"partition": "tuple()", "name": p["name"], "active": 1, "marks": p["marks"], "rows": p["rows"],
                   "files": p["files"], "bytes_on_disk": p["bytes"],
                   "data_compressed_bytes": sum(c for c, _u in p["columns"].values()),
                   "data_uncompressed_bytes": sum(u for _c, u in p["columns"].values()),
                   "secondary_indices_compressed_bytes": p["indexes"], "modification_time": p["mtime"],
                   "partition_id": "all", "level": p["level"], "database": DATABASE, "table": tname,
                   "engine": getattr(t.meta, "engine", "MergeTree"), "path": p["path"] + os.sep}
            for k in names:
                out[k].append(row[k])
    return out


def _key_text(cols: list[str] | None) -> str:
    return ", ".join(cols or [])


def _one_line(create: str) -> str:
    """SHOW CREATE's text on one line, as ClickHouse's system.tables.create_table_query has it."""
    text = create.replace("\n(\n    ", " (").replace(",\n    ", ", ").replace("\n)\n", ") ")
    return text.replace("\n", " ")


def _tables_rows(db: Any, ctx: dict) -> dict[str, list]:
    from skipidx.engine.statements import show_create_text

    names = [c for c, _ in SYSTEM_TABLES["tables"]]
    out = _columns_of(names)
    for tname, t in _tables(db):
        meta = t.meta
        external = _is_external(t)
        engine_sql = t.engine_sql if external else None      # ParquetFiles('glob'), Iceberg(...)
        engine = engine_sql.split("(", 1)[0] if external else getattr(meta, "engine", "MergeTree")
        create = _one_line(show_create_text(meta, engine_sql))
        parts = _parts_of(t, column_bytes=_wants(ctx, "total_bytes_uncompressed"))
        row = {
            "database": DATABASE, "name": tname, "uuid": _table_uuid(t), "engine": engine, "is_temporary": 0,
            "data_paths": [t.path + os.sep], "create_table_query": create,
            "engine_full": create.split(" ENGINE = ", 1)[1] if " ENGINE = " in create else engine,
            "partition_key": getattr(meta, "partition_by", None) or "",
            "sorting_key": _key_text(meta.order_by),
            "primary_key": _key_text(meta.primary_key if meta.primary_key is not None else meta.order_by),
            "sampling_key": "",
            "total_rows": None if external else sum(p["rows"] for p in parts),
            "total_bytes": None if external else sum(p["bytes"] for p in parts),
            "total_bytes_uncompressed": None if external else sum(u for p in parts for _c, u in p["columns"].values()),
            "parts": None if external else len(parts), "active_parts": None if external else len(parts),
            "total_marks": None if external else sum(p["marks"] for p in parts),
            "comment": "", "has_own_data": 0 if external else 1,
        }
        for k in names:
            out[k].append(row[k])
    return out


def _table_uuid(t: Any) -> bytes:
    """The table's identity (128 random bits made with it; a DROP and CREATE of the name gives a
    new one) as a UUID, as ClickHouse's Atomic database gives its tables; zero without one."""
    tid = getattr(t, "table_id", None)
    try:
        return uuid.UUID(hex=tid).bytes if isinstance(tid, str) else bytes(16)
    except ValueError:
        return bytes(16)


def _columns_rows(db: Any, ctx: dict) -> dict[str, list]:
    from skipidx.sql.parser import parse_expression

    names = [c for c, _ in SYSTEM_TABLES["columns"]]
    out = _columns_of(names)
    sized = _wants(ctx, "data_compressed_bytes", "data_uncompressed_bytes")
    for tname, t in _tables(db):
        meta = t.meta
        col_bytes: dict[str, list[int]] = {}
        for p in (_parts_of(t, column_bytes=True) if sized else []):
            for c, (comp, unc) in p["columns"].items():
                acc = col_bytes.setdefault(c, [0, 0])
                acc[0] += comp
                acc[1] += unc
        sort = set(meta.order_by or [])
        pk = set(meta.primary_key if meta.primary_key is not None else (meta.order_by or []))
        part_key = getattr(meta, "partition_by", None) or ""
        for i, c in enumerate(meta.columns, 1):
            row = {"database": DATABASE, "table": tname, "name": c.name, "type": c.type.name, "position": i,
                   "default_kind": "DEFAULT" if c.default is not None else "",
                   "default_expression": parse_expression(c.default).to_sql() if c.default is not None else "",
                   "data_compressed_bytes": col_bytes.get(c.name, (0, 0))[0],
                   "data_uncompressed_bytes": col_bytes.get(c.name, (0, 0))[1],
                   "comment": "", "is_in_partition_key": int(_mentions(part_key, c.name)),
                   "is_in_sorting_key": int(c.name in sort), "is_in_primary_key": int(c.name in pk),
                   "is_in_sampling_key": 0, "compression_codec": f"CODEC({c.codec})" if c.codec else ""}
            for k in names:
                out[k].append(row[k])
    return out


def _mentions(expr_sql: str, column: str) -> bool:
    """Whether the expression text names `column` (PARTITION BY is kept as text)."""
    if not expr_sql:
        return False
    from skipidx.sql.parser import parse_expression

    found = []

    def walk(node: Any) -> None:
        if isinstance(node, A.Column) and node.name == column:
            found.append(node)
        if isinstance(node, A.Node):
            for f in A.node_fields(type(node)):
                v = getattr(node, f)
                for x in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(x, A.Node):
                        walk(x)
    try:
        walk(parse_expression(expr_sql))
    except SkipidxError:
        return False
    return bool(found)


def _indices_rows(db: Any, _ctx: dict) -> dict[str, list]:
    from skipidx.engine.statements import _index_expr_sql, _index_type_sql

    names = [c for c, _ in SYSTEM_TABLES["data_skipping_indices"]]
    out = _columns_of(names)
    for tname, t in _tables(db):
        meta = t.meta
        sizes: dict[str, int] = {}
        for p in (_sidecars_of(t) if _is_external(t) else _parts_of(t)):
            for n, b in p["index_sizes"].items():
                sizes[n] = sizes.get(n, 0) + b
        declared: dict[str, dict] = {}
        for im in meta.indexes:
            g = getattr(im.definition, "group", None)
            name, expr = (g[0], g[2]) if g is not None else (im.name, _index_expr_sql(im))
            if name not in declared:
                full = _index_type_sql(im)
                declared[name] = {"database": DATABASE, "table": tname, "name": name,
                                  "type": im.definition.type_name, "type_full": full, "expr": expr,
                                  "creation": "Explicit", "granularity": int(im.definition.granularity),
                                  "data_compressed_bytes": 0, "data_uncompressed_bytes": 0, "marks_bytes": 0}
            # index files are Arrow IPC without compression: the two sizes are the same bytes
            b = sizes.get(im.name, 0)
            declared[name]["data_compressed_bytes"] += b
            declared[name]["data_uncompressed_bytes"] += b
        for row in declared.values():
            for k in names:
                out[k].append(row[k])
    return out


def _merges_rows(db: Any, _ctx: dict) -> dict[str, list]:
    from skipidx.store.merge import merges_in_progress

    names = [c for c, _ in SYSTEM_TABLES["merges"]]
    out = _columns_of(names)
    for tname, t in _tables(db):
        if _is_external(t):
            continue
        for m in merges_in_progress(t.path):
            row = {"database": DATABASE, "table": tname, "elapsed": float(m["elapsed_s"]),
                   "num_parts": int(m["num_parts"]), "source_part_names": list(m["source_parts"]),
                   "result_part_name": m["result_part"], "partition_id": "all", "partition": "tuple()",
                   "is_mutation": 0, "merge_type": "Regular"}
            for k in names:
                out[k].append(row[k])
    return out


def _query_log_rows(db: Any, _ctx: dict) -> dict[str, list]:
    from skipidx.engine.query_log import read_entries

    names = [c for c, _ in SYSTEM_TABLES["query_log"]]
    out = _columns_of(names)
    for r in read_entries(db.path, failed=True):
        try:
            end = _dt.datetime.fromisoformat(r["event_time"]).astimezone(_dt.timezone.utc).replace(tzinfo=None)
        except (KeyError, TypeError, ValueError):
            continue
        dur = r.get("query_duration_ms")
        dur = float(dur) if isinstance(dur, (int, float)) and not isinstance(dur, bool) and dur >= 0 else 0.0
        start = end - _dt.timedelta(milliseconds=dur)
        tables = [x for x in (r.get("tables") or []) if isinstance(x, str)]
        kind = r.get("type")
        failed = kind in ("ExceptionBeforeStart", "ExceptionWhileProcessing")
        code = r.get("exception_code")
        row = {
            "type": kind if failed else "QueryFinish", "event_date": end.date(), "event_time": end.replace(microsecond=0),
            "event_time_microseconds": end, "query_start_time": start.replace(microsecond=0),
            "query_start_time_microseconds": start, "query_duration_ms": int(dur),
            "read_rows": _uint(r.get("read_rows")), "result_rows": _uint(r.get("result_rows")),
            "current_database": DATABASE, "query": r["query"], "query_kind": "Select",
            "databases": sorted({x.split(".", 1)[0] for x in tables}), "tables": tables,
            "exception_code": code if failed and isinstance(code, int) and -2**31 <= code < 2**31 else 0,
            "exception": str(r.get("exception") or "") if failed else "", "query_id": str(r.get("query_id") or ""),
        }
        for k in names:
            out[k].append(row[k])
    return out


def _uint(v: Any) -> int:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64 else 0


#: ClickHouse's type names of the settings whose type is not the plain one of their kind
_SETTING_TYPES = {"max_threads": "MaxThreads", "max_insert_threads": "MaxThreads", "max_block_size": "NonZeroUInt64",
                  "max_insert_block_size": "NonZeroUInt64", "max_execution_time": "Seconds",
                  "timeout_before_checking_execution_speed": "Seconds", "send_logs_level": "LogsLevel",
                  "distributed_product_mode": "DistributedProductMode", "output_format_pretty_color": "UInt64Auto"}
_KIND_TYPES = {"bool": "Bool", "uint": "UInt64", "str": "String", "float": "Float"}


def _setting_text(name: str, v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if name in ("max_threads", "max_insert_threads") and v == 0:
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            n = os.cpu_count() or 1
        return f"auto({n})"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _settings_rows(db: Any, ctx: dict) -> dict[str, list]:
    from skipidx.engine.settings import EFFECTIVE, QUERY_SETTINGS

    settings = ctx["settings"]
    names = [c for c, _ in SYSTEM_TABLES["settings"]]
    out = _columns_of(names)
    for name in sorted(QUERY_SETTINGS):
        kind, default = QUERY_SETTINGS[name]
        value = settings.get(name, default)
        desc = ("Has an effect in skipidx (docs/settings.md)." if name in EFFECTIVE or name in _SKIPIDX_EFFECTS
                else "Accepted for ClickHouse compatibility; changes nothing in skipidx.")
        row = {"name": name, "value": _setting_text(name, value), "changed": int(name in settings),
               "description": desc, "type": _SETTING_TYPES.get(name, _KIND_TYPES[kind]),
               "default": _setting_text(name, default)}
        for k in names:
            out[k].append(row[k])
    return out


#: settings outside settings.EFFECTIVE that change what skipidx does
_SKIPIDX_EFFECTS = frozenset({"query_plan_direct_read_from_text_index", "text_index_row_filter", "log_queries"})


def _databases_rows(db: Any, _ctx: dict) -> dict[str, list]:
    path = os.path.abspath(db.path) + os.sep
    return {"name": [DATABASE, SYSTEM], "engine": ["Atomic", "Memory"], "data_path": [path, ""],
            "comment": ["", ""]}


def _detached_rows(db: Any, _ctx: dict) -> dict[str, list]:
    from skipidx.store.repair import detached_parts

    names = [c for c, _ in SYSTEM_TABLES["detached_parts"]]
    out = _columns_of(names)
    for tname, t in _tables(db):
        if _is_external(t):
            continue
        for d in detached_parts(t.path):
            row = {"database": DATABASE, "table": tname, "name": d["name"], "bytes_on_disk": d["bytes"],
                   "modification_time": _mtime(d["mtime"]), "disk": "default", "path": d["path"] + os.sep}
            for k in names:
                out[k].append(row[k])
    return out


def _functions_rows(db: Any, _ctx: dict) -> dict[str, list]:
    from skipidx.expr.catalogue import CATALOGUE

    out = _columns_of([c for c, _ in SYSTEM_TABLES["functions"]])

    def add(name: str, fn: Any, alias_to: str) -> None:
        # skipidx looks every function name up in any case (Catalogue.lookup)
        for k, v in (("name", name), ("is_aggregate", int(fn.rule == "aggregate")), ("case_insensitive", 1),
                     ("alias_to", alias_to), ("origin", "System"), ("description", fn.doc or "")):
            out[k].append(v)

    for fn in CATALOGUE:
        add(fn.name, fn, "")
        for a in fn.aliases:
            add(a, fn, fn.name)
    return out


_TABLE_FUNCTION_TEXT = {
    "file": "file('path or glob'[, format[, 'structure']]): the rows of files read (Parquet, CSV, TSV, JSONEachRow)",
    "numbers": "numbers(N) / numbers(offset, N): a column `number` UInt64 of consecutive integers",
    "values": "values(['structure',] row, ...): the rows written in the query",
}


def _table_functions_rows(db: Any, _ctx: dict) -> dict[str, list]:
    from skipidx.engine.table_functions import TABLE_FUNCTIONS

    names = sorted(TABLE_FUNCTIONS)
    return {"name": names, "description": [_TABLE_FUNCTION_TEXT.get(n, "") for n in names]}


def _formats_rows(db: Any, _ctx: dict) -> dict[str, list]:
    from skipidx.engine.formats import FORMATS
    from skipidx.engine.table_functions import FILE_FORMATS

    canonical = {"TSV": "TabSeparated", "TSVWithNames": "TabSeparatedWithNames"}
    inputs = {canonical.get(f, f) for f in FILE_FORMATS.values()} | set(A.INFILE_FORMATS)
    outputs = set(FORMATS.values())
    names = sorted(inputs | outputs)
    return {"name": names, "is_input": [int(n in inputs) for n in names],
            "is_output": [int(n in outputs) for n in names]}


_BUILDERS: dict[str, Callable[[Any, dict], dict[str, list]]] = {
    "detached_parts": _detached_rows, "functions": _functions_rows, "table_functions": _table_functions_rows, "formats": _formats_rows,
    "one": lambda db, ctx: {"dummy": [0]},
    "parts": _parts, "tables": _tables_rows, "columns": _columns_rows, "data_skipping_indices": _indices_rows,
    "merges": _merges_rows, "query_log": _query_log_rows, "settings": _settings_rows, "databases": _databases_rows,
}
