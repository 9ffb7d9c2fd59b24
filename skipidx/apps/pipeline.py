"""``skipidx build``: bulk-build a table from files, in-process or on Spark.

::

    skipidx build DBDIR TABLE --external [--from 'GLOB'] [--engine embedded|spark] [--index ...]
    skipidx build DBDIR TABLE --from PATH [--format parquet|csv|csvwithnames|json]
                  [--engine embedded|spark] [--master URL] [--partitions N]
                  [--order-by KEY] [--index "INDEX ..."]... [--index-granularity N]
                  [--columns "name Type, ..."]

PATH is a file or a directory of files (Spark's output layout: part files,
``_SUCCESS`` and hidden files skipped). If TABLE does not exist it is created
first -- from ``--columns``, or from the Parquet schema (unsigned and
LowCardinality-free ClickHouse types as Arrow says them), or for CSV/JSON
from ClickHouse-style schema inference (:func:`infer_columns`, printed) -- with the given
ORDER BY, indexes and granularity, so both engines build the very same table.

``--engine embedded`` (default) inserts every file in one atomic insert
(:meth:`skipidx.store.table.Table.insert`). ``--engine spark`` reads PATH
with Spark (``--master``, default ``local[*]``; any master URL works, the
table directory must then be on a shared file system) and writes through the
``skipidx`` data source: each task sorts its rows and writes one part, the
driver publishes all of them at once (``--partitions N`` repartitions the
input to N tasks first). Either way a summary follows: rows, parts, index
bytes and time.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import Any, Iterator

from skipidx.core.errors import SkipidxError

__all__ = ["build_main", "build", "BuildSummary"]

_EXTS = {"Parquet": (".parquet", ".pq"), "CSV": (".csv",), "CSVWithNames": (".csv",),
         "JSONEachRow": (".json", ".jsonl", ".ndjson")}


class BuildSummary(dict):
    """Figures of one build: rows, parts, index_bytes, data_bytes, seconds, engine."""

    def line(self) -> str:
        return (f"built {self['table']}: {self['rows']:,} rows in {self['parts']} part"
                f"{'s' if self['parts'] != 1 else ''}, index bytes {self['index_bytes']:,} "
                f"({self['index_bytes'] / 2**20:.1f} MiB), data bytes {self['data_bytes']:,}, "
                f"{self['seconds']:.2f} s ({self['engine']})")


def _input_files(path: str, fmt: str) -> list[str]:
    """The files of `path` (a file, or a directory's data files in name order)."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise SkipidxError("no such file or directory", path=path)
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for f in sorted(files):
            if f.startswith((".", "_")) or f.endswith(".crc"):
                continue
            if fmt in _EXTS and not f.lower().endswith(_EXTS[fmt]):
                continue
            out.append(os.path.join(root, f))
    if not out:
        raise SkipidxError(f"no {fmt} files in the directory", path=path)
    return out


def _create_sql(table: str, columns: str, order_by: str | None, indexes: list[str],
                granularity: int | None) -> str:
    from skipidx.sql.ast import quote_identifier

    body = ", ".join([columns] + list(indexes))
    sql = f"CREATE TABLE {quote_identifier(table)} ({body}) ENGINE = MergeTree"
    sql += f" ORDER BY ({order_by})" if order_by and order_by != "tuple()" else " ORDER BY tuple()"
    if granularity is not None:
        sql += f" SETTINGS index_granularity = {int(granularity)}"
    return sql


def _columns_from_parquet(files: list[str]) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skipidx.sql.ast import quote_identifier
    from skipidx.core.types import ch_type_of

    try:
        schema = pq.read_schema(files[0])
    except (OSError, pa.ArrowException) as e:
        raise SkipidxError(f"cannot read the Parquet schema: {e}", path=files[0]) from None
    cols = []
    for f in schema:
        t = f.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            t = pa.string()
        try:
            name = ch_type_of(t)
        except SkipidxError:
            raise SkipidxError(f"column {f.name!r}: Arrow type {f.type} has no skipidx type; "
                               "create the table first or give --columns", path=files[0]) from None
        cols.append(f"{quote_identifier(f.name)} {f'Nullable({name})' if f.nullable else name}")
    return ", ".join(cols)


def _table_stats(table_dir: str, names: set[str]) -> tuple[int, int, int]:
    """(rows, index bytes, data bytes) of the named parts."""
    from skipidx.store.commit import PARTS_DIR, read_state

    st = read_state(table_dir)
    rows = idx = data = 0
    for p in st.parts:
        if p.name not in names:
            continue
        rows += p.rows
        d = os.path.join(table_dir, PARTS_DIR, p.name)
        for f in os.listdir(d):
            size = os.path.getsize(os.path.join(d, f))
            if f.startswith("idx."):
                idx += size
            elif f == "data.parquet":
                data += size
    return rows, idx, data


def _spark_session(master: str) -> tuple[Any, bool]:
    """The active session, else a new one on `master` (True: we own it and stop it)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    spark = (SparkSession.builder.master(master).appName("skipidx build")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    return spark, True


def _spark_error(e: BaseException) -> SkipidxError:
    """A Spark failure as one readable line (the skipidx error inside it, if any)."""
    text = str(e)
    for line in text.splitlines():
        for marker in ("SkipidxError: ", "BindError: ", "ParseError: ", "CorruptionError: "):
            if marker in line:
                return SkipidxError("spark job failed: " + line.split(marker, 1)[1].strip())
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(e).__name__)
    return SkipidxError(f"spark job failed: {first[:500]}")


@contextlib.contextmanager
def _spark_job(spark: Any, owned: bool | None) -> Iterator[None]:
    """A build step: Py4J / PySpark errors become one readable SkipidxError line (not a JVM
    stack trace), and a session this build started is stopped at the end."""
    try:
        yield
    except SkipidxError:
        raise
    except Exception as e:
        raise _spark_error(e) from None
    finally:
        if owned:
            spark.stop()


def _read_with_spark(spark: Any, path: str, fmt: str, meta: Any) -> Any:
    from skipidx.apps.spark.filters import spark_schema_of

    if fmt == "Parquet":
        return spark.read.parquet(path)
    schema = spark_schema_of(meta)
    if fmt in ("CSV", "CSVWithNames"):
        return (spark.read.schema(schema).option("header", fmt == "CSVWithNames").option("nullValue", "\\N")
                .option("timestampFormat", "yyyy-MM-dd HH:mm:ss").option("mode", "FAILFAST").csv(path))
    return (spark.read.schema(schema).option("timestampFormat", "yyyy-MM-dd HH:mm:ss")
            .option("mode", "FAILFAST").json(path))


#: rows a text file's schema is inferred from (ClickHouse's input_format_max_rows_to_read_for_schema_inference)
INFER_ROWS = 25_000
_ISO_RE = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,]([0-9]+))?)?"
           r"\s*(Z|z|UTC|[+-][0-9]{2}(:?[0-9]{2})?)?$")


def _sample(path: str, rows: int) -> str:
    """The first `rows` lines of a text file (a temporary file; the caller removes it)."""
    import tempfile

    fd, tmp = tempfile.mkstemp(suffix=os.path.splitext(path)[1])
    with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
        for i, line in enumerate(src):
            if i > rows:
                break
            dst.write(line)
    return tmp


def _text_type(col) -> str:
    """ClickHouse's inferred type of a text column (skipidx.engine.table_functions),
    plus ISO 8601 timestamps with T, fractions or offsets: DateTime64(3|6|9) / DateTime."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from skipidx.engine.table_functions import _infer_text

    base = _infer_text(col)
    if base != "String":
        return base
    vals = pc.drop_null(col)
    vals = vals.filter(pc.and_(pc.not_equal(vals, ""), pc.not_equal(vals, "\\N")))
    if len(vals) and pc.all(pc.match_substring_regex(vals, _ISO_RE)).as_py():
        frac = pc.extract_regex(vals, r"[.,](?P<f>[0-9]+)")
        digits = pc.max(pc.utf8_length(pc.struct_field(frac, "f"))).as_py() if frac.null_count < len(frac) else 0
        if not digits:
            return "DateTime"
        return f"DateTime64({3 if digits <= 3 else 6 if digits <= 6 else 9})"
    return "String"


def infer_columns(path: str, fmt: str) -> str:
    """'name Type, ...' of a file as ClickHouse's schema inference reads it:
    Parquet's own types; for CSV/JSONEachRow, from the first :data:`INFER_ROWS`
    rows -- Int64, Float64, Bool, Date, DateTime / DateTime64(p) (ISO 8601 with
    T, fractions, offsets), else String; Nullable(T) where the sample holds a
    NULL or an empty field; a CSV header row is detected (text above typed
    rows), else the columns are c1, c2, ..."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from skipidx.sql.ast import quote_identifier

    if fmt == "Parquet":
        return _columns_from_parquet([path])
    tmp = _sample(path, INFER_ROWS)
    try:
        if fmt == "JSONEachRow":
            import pyarrow.json as pj

            try:
                t = pj.read_json(tmp)
                stamps = [f.name for f in t.schema if pa.types.is_timestamp(f.type)]
                if stamps:
                    # Arrow reads dates as timestamps: their text decides (Date, DateTime, DateTime64)
                    po = pj.ParseOptions(explicit_schema=pa.schema([pa.field(n, pa.string()) for n in stamps]),
                                         unexpected_field_behavior="infer")
                    t = pj.read_json(tmp, parse_options=po).select(t.column_names)
            except pa.ArrowInvalid as e:
                raise SkipidxError(f"cannot infer the schema: {e}", path=path) from None
            cols = []
            for f in t.schema:
                c = t.column(f.name)
                if pa.types.is_boolean(f.type):
                    base = "Bool"
                elif pa.types.is_integer(f.type):
                    base = "Int64"
                elif pa.types.is_floating(f.type):
                    base = "Float64"
                elif pa.types.is_timestamp(f.type):
                    base = "DateTime"
                elif pa.types.is_string(f.type) or pa.types.is_null(f.type):
                    base = _text_type(c.cast(pa.string()))
                else:
                    raise SkipidxError(f"column {f.name!r} holds {f.type} values: give --columns", path=path)
                cols.append((f.name, base, c.null_count > 0))
        else:
            import pyarrow.csv as pcsv

            header = fmt.endswith("WithNames")
            ro = pcsv.ReadOptions(autogenerate_column_names=not header)
            po = pcsv.ParseOptions(delimiter=",", quote_char='"', double_quote=True, newlines_in_values=True)
            try:
                with pcsv.open_csv(tmp, read_options=ro, parse_options=po) as reader:
                    names = reader.schema.names
                t = pcsv.read_csv(tmp, read_options=ro, parse_options=po, convert_options=pcsv.ConvertOptions(
                    column_types={n: pa.string() for n in names}, strings_can_be_null=False))
            except pa.ArrowInvalid as e:
                raise SkipidxError(f"cannot infer the schema: {e}", path=path) from None
            if not header:
                t = t.rename_columns([f"c{i + 1}" for i in range(t.num_columns)])
                if t.num_rows >= 2:
                    first, rest = t.slice(0, 1), t.slice(1)
                    if all(_text_type(first.column(i)) == "String" for i in range(t.num_columns)) and \
                            any(_text_type(rest.column(i)) != "String" for i in range(t.num_columns)):
                        t = rest.rename_columns([first.column(i)[0].as_py() for i in range(t.num_columns)])
            cols = []
            for n in t.column_names:
                c = t.column(n)
                empty = pc.sum(pc.is_in(c, pa.array(["", "\\N"]))).as_py() or 0
                cols.append((n, _text_type(c), empty > 0))
    finally:
        os.unlink(tmp)
    return ", ".join(f"{quote_identifier(n)} {f'Nullable({b})' if null else b}" for n, b, null in cols)


def build(dbdir: str, table: str, source: str, *, fmt: str | None = None, engine: str = "embedded",
          master: str = "local[*]", partitions: int | None = None, order_by: str | None = None,
          indexes: list[str] | None = None, index_granularity: int | None = None,
          columns: str | None = None, quiet: bool = False, external: bool = False) -> BuildSummary:
    """Build (append to) `table` of database `dbdir` from `source`; see the module docstring."""
    from skipidx.sql.parser import parse
    from skipidx.store.catalog import Catalog
    from skipidx.store.commit import read_state
    from skipidx.store.ingest import normalize_format

    if engine not in ("embedded", "spark"):
        raise SkipidxError(f"--engine must be embedded or spark, got {engine!r}")
    from skipidx.store.catalog import Catalog as _Catalog
    from skipidx.store.external import ExternalTable

    _cat = _Catalog(dbdir)
    if external or (_cat.exists(table) and isinstance(_cat.table(table), ExternalTable)):
        return build_external(dbdir, table, source, engine=engine, master=master, indexes=indexes,
                              columns=columns, quiet=quiet)
    if source is None:
        raise SkipidxError("--from PATH is needed (only an external table's sidecars build without it)")
    if partitions is not None and partitions < 1:
        raise SkipidxError(f"--partitions must be >= 1, got {partitions}")
    source = os.path.abspath(source)
    if not os.path.exists(source):
        raise SkipidxError("no such file or directory", path=source)
    if fmt is None and os.path.isdir(source):
        fmt = "parquet"
    fmt = normalize_format(fmt if fmt is None else {"json": "jsoneachrow"}.get(fmt.lower(), fmt), source)
    files = _input_files(source, fmt)
    cat = Catalog(dbdir)
    created = False
    if not cat.exists(table):
        if columns is None:
            columns = infer_columns(files[0], fmt)
            if not quiet:
                print(f"table {table} does not exist: created from the schema inferred from "
                      f"{os.path.basename(files[0])}: {columns} (give --columns 'name Type, ...' to choose)",
                      flush=True)
        from skipidx.planner.ddl import table_meta_from_ast

        stmts = parse(_create_sql(table, columns, order_by, indexes or [], index_granularity))
        created = cat.create_table(table_meta_from_ast(stmts[0]), if_not_exists=True) is not None
    elif columns is not None or order_by is not None or indexes or index_granularity is not None:
        raise SkipidxError(f"table {table!r} exists: --columns/--order-by/--index/--index-granularity "
                           "only apply when the build creates it")
    t = cat.table(table)
    try:
        return _build_into(t, table, source, files, fmt, engine, master, partitions, quiet)
    except BaseException:
        if created:
            # a failed build leaves the database as before: the table it created goes too
            try:
                cat.drop_table(table, if_exists=True)
            except Exception:
                pass
        raise


def _build_into(t, table: str, source: str, files: list[str], fmt: str, engine: str, master: str,
                partitions: int | None, quiet: bool) -> BuildSummary:
    from skipidx.store.commit import read_state

    before = {p.name for p in read_state(t.path).parts}
    t0 = time.perf_counter()
    if engine == "embedded":
        from itertools import chain

        from skipidx.store.ingest import open_file_batches

        meta = t.meta
        t.insert(chain.from_iterable(open_file_batches(f, fmt, meta) for f in files))
    else:
        spark, owned = _spark_session(master)
        with _spark_job(spark, owned):
            from skipidx.apps.spark import register

            register(spark)
            df = _read_with_spark(spark, source, fmt, t.meta)
            if partitions is not None:
                df = df.repartition(partitions)
            df.write.format("skipidx").mode("append").save(t.path)
    seconds = time.perf_counter() - t0
    new = {p.name for p in read_state(t.path).parts} - before
    rows, idx, data = _table_stats(t.path, new)
    s = BuildSummary(table=table, rows=rows, parts=len(new), index_bytes=idx, data_bytes=data,
                     seconds=seconds, engine=engine if engine == "embedded" else f"spark {master}",
                     files=len(files))
    if not quiet:
        print(s.line())
    return s


def build_external(dbdir: str, table: str, source: str | None, *, engine: str = "embedded",
                   master: str = "local[*]", indexes: list[str] | None = None, columns: str | None = None,
                   quiet: bool = False) -> BuildSummary:
    """Build the sidecar indexes of an external table: create it over glob `source` when it
    does not exist (``--index``, ``--columns`` as for CREATE TABLE), else REFRESH it. With
    ``--engine spark`` one Spark task per data file builds its sidecars; the table's state
    takes all of them or, if a task fails, none."""
    from skipidx.apps.spark.lake import spark_builder
    from skipidx.planner.external import external_meta_from_ast
    from skipidx.sql.ast import quote_identifier, quote_string
    from skipidx.sql.parser import parse
    from skipidx.store.catalog import Catalog
    from skipidx.store.external import ExternalTable

    cat = Catalog(dbdir)
    spark = owned = None
    builder = None
    if engine == "spark":
        spark, owned = _spark_session(master)
        builder = spark_builder(spark)
    t0 = time.perf_counter()
    with _spark_job(spark, owned):
        if not cat.exists(table):
            if source is None:
                raise SkipidxError(f"table {table!r} does not exist: give --from 'GLOB' to create it")
            body = ", ".join(([columns] if columns else []) + list(indexes or []))
            sql = (f"CREATE TABLE {quote_identifier(table)}" + (f" ({body})" if body else "")
                   + f" ENGINE = ParquetFiles({quote_string(source.encode())})")
            meta, src, pcols = external_meta_from_ast(parse(sql)[0])
            t, rep = cat.create_external_table(meta, src, pcols, builder=builder)
        else:
            t = cat.table(table)
            if not isinstance(t, ExternalTable):
                raise SkipidxError(f"table {table!r} is not an external table")
            if source is not None and os.path.abspath(source) != t.source and source != t.source:
                raise SkipidxError(f"table {table!r} reads {t.source!r}; --from names another source")
            if indexes or columns:
                raise SkipidxError(f"table {table!r} exists: --index/--columns only apply when the build creates it")
            rep = t.refresh(builder)
    seconds = time.perf_counter() - t0
    sdir = os.path.join(t.path, "sidecars")
    idx = sum(os.path.getsize(os.path.join(sdir, f)) for f in os.listdir(sdir)) if os.path.isdir(sdir) else 0
    with t.snapshot() as snap:
        rows = snap.num_rows()
        nfiles = len(snap.parts)
    s = BuildSummary(table=table, rows=rows, parts=nfiles, index_bytes=idx, data_bytes=0, seconds=seconds,
                     engine=engine if engine == "embedded" else f"spark {master}", files=nfiles,
                     report=rep.as_dict())
    if not quiet:
        print(f"indexed {table}: {rep.message()}; {rows:,} rows in {nfiles} files, sidecar bytes {idx:,}, "
              f"{seconds:.2f} s ({s['engine']})")
    return s


def build_main(argv: list[str]) -> int:
    """Entry point of ``skipidx build``; returns the exit code."""
    p = argparse.ArgumentParser(prog="skipidx build", description="Build a table from files (embedded or Spark).")
    p.add_argument("dbdir", help="database directory (created if missing)")
    p.add_argument("table", help="table to build or append to (created if missing)")
    p.add_argument("--from", dest="source", default=None,
                   help="a file or a directory of files (with --external: a glob of Parquet files)")
    p.add_argument("--external", action="store_true",
                   help="an external table (ENGINE = ParquetFiles): index the files where they are "
                        "(sidecars; the data is never copied); an existing external table is refreshed")
    p.add_argument("--format", choices=["parquet", "csv", "csvwithnames", "json", "jsoneachrow"], default=None,
                   help="input format (default: from the file extension; parquet for a directory)")
    p.add_argument("--engine", choices=["embedded", "spark"], default="embedded",
                   help="embedded: one atomic insert in this process (default); spark: one part per Spark task")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    p.add_argument("--partitions", type=int, default=None, help="Spark tasks (= parts) to write")
    p.add_argument("--order-by", default=None, help="ORDER BY key when the table is created")
    p.add_argument("--index", action="append", default=[], help="'INDEX name expr TYPE ...' (repeatable)")
    p.add_argument("--index-granularity", type=int, default=None,
                   help="rows per granule when the table is created (default 8192)")
    p.add_argument("--columns", default=None,
                   help="'name Type, ...' when the table is created (default: inferred from the file, and shown)")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:   # --help (0) or a usage error (2, already printed): an exit code, not an exit
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    build(args.dbdir, args.table, args.source, fmt=args.format, engine=args.engine, master=args.master,
          partitions=args.partitions, order_by=args.order_by, indexes=args.index,
          index_granularity=args.index_granularity, columns=args.columns, external=args.external)
    return 0
