"""Table functions in FROM: ``numbers(N)``, ``numbers(offset, N)``,
``file('path or glob'[, Format[, 'structure']])`` and ``values([structure,] row, ...)``.

Each gives an Arrow table and the column types to bind the query against
(a :class:`~skipidx.store.metadata.TableMeta` without indexes). Files are
only read, never written.

``file()`` as ClickHouse's: the format comes from the extension when not
given (.parquet, .csv, .tsv, .jsonl/.ndjson/.json); a glob (``*``, ``?``,
``**``, ``{a,b}``) reads every matching file, in name order, with the first
file's schema. Without a structure the schema is inferred as ClickHouse's
schema inference does (checked against chDB's ``DESCRIBE file(...)``):
Parquet keeps its types (Nullable where the field is optional); text
formats give every column a ``Nullable`` type -- Int64 for integers,
Float64 for other numbers, Bool for true/false, Date for YYYY-MM-DD,
DateTime for 'YYYY-MM-DD hh:mm:ss', else String; headerless CSV/TSV columns
are named c1, c2, ...; a ``.csv``/``.tsv`` whose first row is all text above
typed rows takes it as the header, as ClickHouse's header detection does.

``values()`` as ClickHouse's: ``values('a UInt8, b String', (1, 'x'), (2, 'y'))``
converts each value to the structure's type as ``INSERT ... VALUES`` does;
without a structure (a first string argument that is not one is a value) the
columns are c1, c2, ... typed as the least supertype of their values' types
(``values(1, -2, 300)`` is Int32, ``values((NULL, 0.), (1, 2.))`` gives
Nullable(Float64), Float64). A row is a tuple (one item per column) or a
single value; every value is a constant expression.
"""
from __future__ import annotations

import glob
import os
import re
from typing import Any

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import BindError, SkipidxError
from skipidx.core.hints import did_you_mean
from skipidx.core.types import ColumnType, cast_to, ch_type_of, parse_type
from skipidx.sql import ast as A
from skipidx.store.metadata import ColumnMeta, TableMeta

__all__ = ["TABLE_FUNCTIONS", "run_table_function", "table_function_meta", "FILE_FORMATS", "parse_structure"]

TABLE_FUNCTIONS = ("file", "numbers", "values")
#: Formats of file() (case-insensitive spellings ClickHouse accepts) -> canonical name.
FILE_FORMATS = {
    "parquet": "Parquet", "csv": "CSV", "csvwithnames": "CSVWithNames", "tsv": "TSV", "tabseparated": "TSV",
    "tsvwithnames": "TSVWithNames", "tabseparatedwithnames": "TSVWithNames", "jsoneachrow": "JSONEachRow",
    "jsonlines": "JSONEachRow", "ndjson": "JSONEachRow",
}
_BY_EXT = {".parquet": "Parquet", ".pq": "Parquet", ".csv": "CSV", ".tsv": "TSV", ".tab": "TSV",
           ".jsonl": "JSONEachRow", ".ndjson": "JSONEachRow", ".json": "JSONEachRow"}
#: Largest numbers(N) materialized at once.
MAX_NUMBERS = 200_000_000


_err = BindError.at   # (the error at the node's position)


def _meta(name: str, columns: list[tuple[str, ColumnType]]) -> TableMeta:
    return TableMeta(name=name, columns=[ColumnMeta(n, t) for n, t in columns])


def run_table_function(tf: A.TableFunction) -> tuple[pa.Table, TableMeta]:
    """The rows and column types of a table function call."""
    name = tf.name.lower()
    if name == "numbers":
        return _numbers(tf)
    if name == "file":
        return _file(tf)
    if name == "values":
        return _values(tf)
    raise _err(f"unknown table function '{tf.name}'{did_you_mean(tf.name, TABLE_FUNCTIONS)}; "
               f"supported: {', '.join(TABLE_FUNCTIONS)}", tf)


def _const(node: A.Expr, what: str) -> Any:
    from skipidx.expr.binder import Binder
    from skipidx.expr.bound import BConst

    e = Binder(None).expr(node)
    if not isinstance(e, BConst):
        raise _err(f"{what} must be a constant, got {node.to_sql()}", node)
    return e.value


def table_function_meta(tf: A.TableFunction) -> TableMeta:
    """The columns of a table function call (its arguments checked); numbers() is not
    materialized for it, file() and values() are read for their types."""
    if tf.name.lower() == "numbers":
        _numbers_range(tf)
        return _meta("numbers", [("number", parse_type("UInt64"))])
    return run_table_function(tf)[1]


def _numbers(tf: A.TableFunction) -> tuple[pa.Table, TableMeta]:
    offset, n = _numbers_range(tf)
    arr = pa.array(np.arange(n, dtype=np.uint64) + np.uint64(offset), pa.uint64())
    return pa.table({"number": arr}), _meta("numbers", [("number", parse_type("UInt64"))])


def _numbers_range(tf: A.TableFunction) -> tuple[int, int]:
    if len(tf.args) not in (1, 2):
        raise _err(f"numbers() takes 1 or 2 arguments (N or offset, N), got {len(tf.args)}", tf)
    vals = []
    for a in tf.args:
        v = _const(a, "an argument of numbers()")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise _err(f"numbers() needs non-negative integers, got {a.to_sql()}", a)
        vals.append(v)
    offset, n = (0, vals[0]) if len(vals) == 1 else vals
    if n > MAX_NUMBERS:
        raise _err(f"numbers({n}): at most {MAX_NUMBERS} rows here", tf)
    if offset + n > 2**64:
        raise _err("numbers(): the numbers would pass UInt64's range", tf)
    return offset, n


# ---------------------------------------------------------------------------- file()

def _text_arg(node: A.Expr, what: str) -> str:
    if isinstance(node, A.Literal) and node.kind == "string":
        try:
            return node.value.decode("utf-8")
        except UnicodeDecodeError:
            raise _err(f"{what} is not valid UTF-8", node) from None
    raise _err(f"{what} must be a string literal, got {node.to_sql()}", node)


def _format_arg(node: A.Expr) -> str:
    if isinstance(node, A.Column) and node.table is None:
        text = node.name
    else:
        text = _text_arg(node, "the format of file()")
    canon = FILE_FORMATS.get(text.lower())
    if canon is None:
        names = sorted(set(FILE_FORMATS.values()))
        raise _err(f"unknown format '{text}'{did_you_mean(text, names)}; supported: {', '.join(names)}", node)
    return canon


def parse_structure(text: str, node: Any = None) -> list[tuple[str, ColumnType]]:
    """ClickHouse's structure string ``'a UInt8, b Nullable(String)'`` as (name, type) pairs."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    out = []
    for p in parts:
        m = re.match(r"\s*(`[^`]+`|\"[^\"]+\"|[A-Za-z_][A-Za-z_0-9]*)\s+(.+?)\s*$", p, re.S)
        if m is None:
            raise _err(f"structure: expected 'name Type, ...', got {p.strip()!r}", node)
        name = m.group(1).strip("`\"")
        try:
            out.append((name, parse_type(m.group(2))))
        except SkipidxError as e:
            raise _err(f"structure: column {name!r}: {e.message}", node) from None
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise _err("structure: a column name is repeated", node)
    return out


def _expand_braces(pattern: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", pattern)
    if m is None:
        return [pattern]
    body = m.group(1)
    rng = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", body)
    if rng:
        a, b = int(rng.group(1)), int(rng.group(2))
        step = 1 if b >= a else -1
        width = len(rng.group(1)) if rng.group(1).startswith("0") else 0
        opts = [str(i).zfill(width) for i in range(a, b + step, step)]
    else:
        opts = body.split(",")
    out = []
    for o in opts:
        out.extend(_expand_braces(pattern[: m.start()] + o + pattern[m.end():]))
    return out


def expand_paths(pattern: str) -> list[str]:
    """The files a file() path or glob names, sorted (ClickHouse's * ? ** {a,b} {1..3})."""
    paths: set[str] = set()
    for p in _expand_braces(pattern):
        if any(c in p for c in "*?["):
            paths.update(x for x in glob.glob(p, recursive=True) if os.path.isfile(x))
        elif os.path.isfile(p):
            paths.add(p)
    return sorted(paths)


def _file(tf: A.TableFunction) -> tuple[pa.Table, TableMeta]:
    if not 1 <= len(tf.args) <= 3:
        raise _err(f"file() takes 1 to 3 arguments (path, [format], [structure]), got {len(tf.args)}", tf)
    from skipidx.store.file_access import resolve_many

    pattern = _text_arg(tf.args[0], "the path of file()")
    paths = expand_paths(resolve_many(pattern, "file()"))
    if not paths:
        raise _err(f"file(): no file matches {pattern!r}", tf.args[0])
    if len(tf.args) >= 2:
        fmt = _format_arg(tf.args[1])
    else:
        ext = os.path.splitext(paths[0])[1].lower()
        if ext not in _BY_EXT:
            raise _err(f"file(): cannot tell the format of {paths[0]!r} from its extension; give it as the "
                       f"second argument ({', '.join(sorted(set(FILE_FORMATS.values())))})", tf.args[0])
        fmt = _BY_EXT[ext]
    structure = None
    if len(tf.args) == 3:
        structure = parse_structure(_text_arg(tf.args[2], "the structure of file()"), tf.args[2])
    tables = []
    try:
        for path in paths:
            tables.append(_read(path, fmt, structure, sniff_header=True, given=len(tf.args) == 3))
            if structure is None:
                structure = [(n, _column_type(tables[0], n)) for n in tables[0].column_names]
    except SkipidxError as e:
        if e.line is None:
            raise _err(e.message + (f" ({e.path})" if e.path else ""), tf) from None
        raise
    except (pa.ArrowException, OSError, ValueError) as e:
        from skipidx.store.ingest import redact

        raise _err(f"file(): {fmt}: {redact(str(e))}", tf) from None
    meta = _meta("file", structure)
    if len(tables) > 1:
        tables = [_conform(t, structure) for t in tables]
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0], meta


def _column_type(t: pa.Table, name: str) -> ColumnType:
    f = t.schema.field(name)
    ch = ch_type_of(f.type)
    return parse_type(f"Nullable({ch})" if f.nullable else ch)


def _conform(t: pa.Table, structure: list[tuple[str, ColumnType]]) -> pa.Table:
    cols = []
    for name, ctype in structure:
        if name not in t.column_names:
            raise SkipidxError(f"file(): a matched file has no column {name!r}")
        cols.append(cast_to(ctype, t.column(name), name))
    return pa.table(cols, schema=pa.schema([pa.field(n, c.arrow_type, nullable=c.nullable) for n, c in structure]))


def _read(path: str, fmt: str, structure: list | None, sniff_header: bool, given: bool = False) -> pa.Table:
    if fmt == "Parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(path)
        if structure is None:
            return _parquet_types(t)
        return _conform(t, structure)
    if fmt == "JSONEachRow":
        import pyarrow.json as pj

        t = pj.read_json(path)
        if structure is not None:
            missing = [n for n, _ in structure if n not in t.column_names]
            t = t.select([n for n, _ in structure if n in t.column_names])
            for n in missing:      # an omitted key: NULL, then the type's default (ClickHouse's input defaults)
                t = t.append_column(n, pa.nulls(t.num_rows, pa.string()))
        for i, f in enumerate(t.schema):
            if not (pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_boolean(f.type)
                    or pa.types.is_string(f.type) or pa.types.is_null(f.type) or pa.types.is_timestamp(f.type)):
                raise SkipidxError(f"file(): JSONEachRow column {f.name!r} holds {f.type} values; "
                                   "skipidx reads scalar values only")
            if pa.types.is_timestamp(f.type):
                t = t.set_column(i, f.name, pc.strftime(t.column(i), "%Y-%m-%d %H:%M:%S"))
        strings = pa.table({n: (pc.cast(t.column(n), pa.string()) if not pa.types.is_string(t.schema.field(n).type)
                                and not pa.types.is_null(t.schema.field(n).type) else t.column(n))
                            for n in t.column_names})
        if structure is not None:
            return _from_text(strings, structure)
        return _from_text(strings, _infer(t))
    # CSV / TSV
    import pyarrow.csv as pcsv

    tsv = fmt.startswith("TSV")
    header = fmt.endswith("WithNames")
    ro = pcsv.ReadOptions(autogenerate_column_names=not header)
    po = pcsv.ParseOptions(delimiter="\t" if tsv else ",", quote_char=False if tsv else '"',
                           double_quote=not tsv, escape_char="\\" if tsv else False, newlines_in_values=not tsv)
    # read every field as text; types come from the structure or the inference below
    with pcsv.open_csv(path, read_options=ro, parse_options=po) as reader:
        names = reader.schema.names
    t = pcsv.read_csv(path, read_options=ro, parse_options=po,
                      convert_options=pcsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                                          strings_can_be_null=False))
    if not header:
        t = t.rename_columns([f"c{i + 1}" for i in range(t.num_columns)])
        if given and structure is not None and t.num_rows >= 1 and t.num_columns == len(structure) and \
                [t.column(i)[0].as_py() for i in range(t.num_columns)] == [n for n, _ in structure]:
            t = t.slice(1)      # a header row naming the structure's columns (ClickHouse skips it too)
        elif not given and sniff_header and t.num_rows >= 2:
            first = t.slice(0, 1)
            rest = t.slice(1)
            if all(_infer_text(first.column(i)) == "String" for i in range(t.num_columns)) and \
                    any(_infer_text(rest.column(i)) != "String" for i in range(t.num_columns)):
                t = rest.rename_columns([first.column(i)[0].as_py() for i in range(t.num_columns)])
    if structure is not None:
        if given and not header:
            if len(structure) != t.num_columns:
                raise SkipidxError(f"file(): the structure has {len(structure)} columns, the file {t.num_columns}")
            t = t.rename_columns([n for n, _ in structure])
        return _from_text(t, structure)
    return _from_text(t, [(n, parse_type(f"Nullable({_infer_text(t.column(n))})")) for n in t.column_names])


def _parquet_types(t: pa.Table) -> pa.Table:
    cols, fields = [], []
    for f, c in zip(t.schema, t.columns):
        try:
            ch = ch_type_of(f.type)
        except SkipidxError:
            raise SkipidxError(f"file(): Parquet column {f.name!r} has type {f.type}, which skipidx does not read") \
                from None
        ctype = parse_type(f"Nullable({ch})" if f.nullable else ch)
        cols.append(cast_to(ctype, c, f.name))
        fields.append(pa.field(f.name, ctype.arrow_type, nullable=f.nullable))
    return pa.table(cols, schema=pa.schema(fields))


_INT_RE = r"^[+-]?[0-9]+$"
_FLOAT_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?(inf|nan)$"
_DATE_RE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_DATETIME_RE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}$"


def _infer_text(col: pa.ChunkedArray | pa.Array) -> str:
    """ClickHouse's inferred type (without Nullable) of a column of text values."""
    vals = pc.drop_null(col)
    vals = vals.filter(pc.and_(pc.not_equal(vals, ""), pc.not_equal(vals, "\\N")))
    if len(vals) == 0:
        return "String"

    def every(regex: str) -> bool:
        return bool(pc.all(pc.match_substring_regex(vals, regex)).as_py())

    if every(_INT_RE):
        big = pc.max(pc.utf8_length(vals)).as_py()
        if big <= 18:
            return "Int64"
        try:
            ints = [int(v) for v in vals.to_pylist()]
        except ValueError:
            return "String"
        return "Int64" if all(-(2**63) <= v < 2**63 for v in ints) else "Float64"
    if every(_FLOAT_RE):
        return "Float64"
    low = pc.utf8_lower(vals)
    if bool(pc.all(pc.is_in(low, pa.array(["true", "false"]))).as_py()):
        return "Bool"
    if every(_DATE_RE):
        return "Date"
    if every(_DATETIME_RE):
        return "DateTime"
    return "String"


def _infer(t: pa.Table) -> list[tuple[str, ColumnType]]:
    out = []
    for f in t.schema:
        if pa.types.is_boolean(f.type):
            base = "Bool"
        elif pa.types.is_integer(f.type):
            base = "Int64"
        elif pa.types.is_floating(f.type):
            base = "Float64"
        elif pa.types.is_string(f.type):
            base = _infer_text(t.column(f.name))
            base = base if base in ("Date", "DateTime") else "String"
        elif pa.types.is_timestamp(f.type):
            base = "DateTime"
        else:
            base = "String"
        out.append((f.name, parse_type(f"Nullable({base})")))
    return out


def _from_text(t: pa.Table, structure: list[tuple[str, ColumnType]]) -> pa.Table:
    """Text columns converted to the structure's types (empty or \\N is NULL, or the
    type's default in a non-Nullable column, as ClickHouse's input defaults)."""
    cols, fields = [], []
    for name, ctype in structure:
        if name not in t.column_names:
            raise SkipidxError(f"file(): no column {name!r} in the file; columns: {', '.join(t.column_names)}")
        c = t.column(name)
        if pa.types.is_null(c.type):
            c = pa.chunked_array([pa.nulls(len(c), pa.string())])
        c = pc.if_else(pc.or_(pc.equal(c, ""), pc.equal(c, "\\N")), pa.scalar(None, pa.string()), c)
        at = ctype.arrow_type
        try:
            if pa.types.is_boolean(at):
                low = pc.utf8_lower(c)
                ok = pc.or_kleene(pc.is_null(low), pc.is_in(low, pa.array(["true", "false", "1", "0"])))
                if not pc.all(ok).as_py():
                    raise SkipidxError(f"file(): column {name!r}: a value is not a Bool")
                v = pc.is_in(low, pa.array(["true", "1"]))
                v = pc.if_else(pc.is_null(low), pa.scalar(None, pa.bool_()), v)
            elif pa.types.is_timestamp(at):
                v = pc.cast(pc.replace_substring(c, " ", "T", max_replacements=1), pa.timestamp("s"))
            elif pa.types.is_string(at):
                v = c
            elif pa.types.is_unsigned_integer(at) and at.bit_width == 64:
                v = pc.cast(c, pa.uint64())
            elif pa.types.is_integer(at):
                v = pc.cast(c, pa.int64())
            elif pa.types.is_floating(at):
                v = pc.cast(c, pa.float64())
            else:
                v = pc.cast(c, at)
        except pa.ArrowInvalid as e:
            from skipidx.store.ingest import redact

            raise SkipidxError(f"file(): column {name!r}: cannot read a value as {ctype.name}: "
                               f"{redact(str(e))}") from None
        if not ctype.nullable and v.null_count:
            from skipidx.store.ingest import _default

            v = pc.fill_null(v, _default(v.type))
        cols.append(cast_to(ctype, v, name))
        fields.append(pa.field(name, at, nullable=ctype.nullable))
    return pa.table(cols, schema=pa.schema(fields))


# ---------------------------------------------------------------------------- values()

def _values(tf: A.TableFunction) -> tuple[pa.Table, TableMeta]:
    args = list(tf.args)
    if not args:
        raise _err("table function 'values' requires at least 1 argument", tf)
    structure = None
    if len(args) >= 2 and isinstance(args[0], A.Literal) and args[0].kind == "string":
        try:        # ClickHouse takes a first string as the structure when it parses as one
            structure = parse_structure(args[0].value.decode("utf-8"), args[0])
        except (SkipidxError, UnicodeDecodeError):
            structure = None
        if structure is not None:
            args = args[1:]
    width = len(structure) if structure is not None else None
    rows: list[tuple[A.Expr, ...]] = []
    for a in args:
        row = a.items if isinstance(a, A.TupleLiteral) and width != 1 else (a,)
        if width is None:
            width = len(row)
        if len(row) != width:
            raise _err("values(): cannot determine a common structure: the number of columns differs "
                       f"between rows ({width} and {len(row)})", a)
        rows.append(row)
    if structure is not None:
        from skipidx.planner.ddl import values_table

        meta = _meta("values", structure)
        rows = [tuple(_as_text(node) if c.base_name == "String" else node for node, (_, c) in zip(r, structure))
                for r in rows]
        stmt = A.InsertValues(A.TableRef("values"), None, tuple(rows), pos=tf.pos)
        data = values_table(meta, stmt)
        cols = [cast_to(c, data.column(n), n) for n, c in structure]
        fields = [pa.field(n, c.arrow_type, nullable=c.nullable) for n, c in structure]
        return pa.table(cols, schema=pa.schema(fields)), meta
    consts = _constants(rows)
    columns, arrays = [], []
    for j in range(width or 0):
        vals = [r[j] for r in consts]
        nodes = [r[j] for r in rows]
        t, nullable = _supertype([t for _, t in vals], nodes[0])
        name = f"c{j + 1}"
        ch = ch_type_of(t)
        ctype = parse_type(f"Nullable({ch})" if nullable else ch)
        arr = _column(vals, t, nodes)
        columns.append((name, ctype))
        arrays.append(cast_to(ctype, arr, name))
    meta = _meta("values", columns)
    schema = pa.schema([pa.field(n, c.arrow_type, nullable=c.nullable) for n, c in columns])
    return pa.table(arrays, schema=schema), meta


def _as_text(node: A.Expr) -> A.Expr:
    """An integer literal for a String column is its text (ClickHouse converts the field)."""
    if isinstance(node, A.Literal) and node.kind == "int":
        return A.Literal(str(node.value).encode(), "string", pos=node.pos)
    return node


def _constants(rows: list[tuple[A.Expr, ...]]) -> list[list[tuple[Any, pa.DataType]]]:
    """Each value as (Python value, Arrow type): literals as the binder types them,
    other constant expressions evaluated on one row."""
    from skipidx.execution.scan import zero_column_table
    from skipidx.expr.binder import Binder, array_constant_type
    from skipidx.expr.bound import BConst
    from skipidx.expr.evaluate import evaluate
    from skipidx.expr.visitors import columns_of

    binder = Binder(None)
    one = None
    out = []
    for row in rows:
        vals = []
        for node in row:
            if isinstance(node, A.TupleLiteral):
                raise _err("values(): tuple values are not supported (a row's tuple gives the columns)", node)
            e = binder.expr(node)
            if isinstance(e, BConst) and isinstance(e.value, tuple) and pa.types.is_null(e.type):
                vals.append((e.value, array_constant_type(e.value, node)))
                continue
            if isinstance(e, BConst):
                vals.append((e.value, e.type))
                continue
            if columns_of(e):
                raise _err(f"values() takes constant expressions, got {node.to_sql()}", node)
            one = zero_column_table(1) if one is None else one
            arr = evaluate(e, one)
            v = arr[0].as_py()
            vals.append((v.encode() if isinstance(v, str) else v, arr.type))
        out.append(vals)
    return out


_INT_BY_BITS = {(8, True): pa.int8(), (16, True): pa.int16(), (32, True): pa.int32(), (64, True): pa.int64(),
                (8, False): pa.uint8(), (16, False): pa.uint16(), (32, False): pa.uint32(),
                (64, False): pa.uint64()}


def _supertype(types: list[pa.DataType], node: Any) -> tuple[pa.DataType, bool]:
    """ClickHouse's least supertype of the values' types (and whether a NULL is among them)."""
    nullable = any(pa.types.is_null(t) for t in types)
    ts = []
    for t in types:
        t = t.value_type if pa.types.is_dictionary(t) else t
        if not pa.types.is_null(t) and t not in ts:
            ts.append(t)
    if not ts:
        raise _err("values(): a column holds only NULLs (type Nullable(Nothing)), which skipidx does not store",
                   node)
    if len(ts) == 1:
        return ts[0], nullable

    def no_common() -> BindError:
        names = ", ".join(_ch_name(t) for t in ts)
        return _err(f"values(): there is no supertype for types {names}", node)

    if all(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) for t in ts):
        ints = [pa.uint8() if pa.types.is_boolean(t) else t for t in ts if not pa.types.is_floating(t)]
        floats = [t for t in ts if pa.types.is_floating(t)]
        if floats:
            small = all(pa.types.is_float32(t) for t in floats) and all(t.bit_width <= 16 for t in ints)
            return (pa.float32() if small else pa.float64()), nullable
        u = max((t.bit_width for t in ints if pa.types.is_unsigned_integer(t)), default=0)
        sg = max((t.bit_width for t in ints if pa.types.is_signed_integer(t)), default=0)
        if not sg:
            return _INT_BY_BITS[(u, False)], nullable
        if not u:
            return _INT_BY_BITS[(sg, True)], nullable
        bits = max(sg, 2 * u) if u >= sg else sg
        if bits > 64:
            raise no_common()
        return _INT_BY_BITS[(bits, True)], nullable
    if all(pa.types.is_string(t) or pa.types.is_binary(t) for t in ts):
        return (pa.string() if all(pa.types.is_string(t) for t in ts) else pa.binary()), nullable
    if all(pa.types.is_date(t) or pa.types.is_timestamp(t) for t in ts):
        stamps = [t for t in ts if pa.types.is_timestamp(t)]
        if len(set(stamps)) == 1:
            return stamps[0], nullable
        raise no_common()
    if all(pa.types.is_list(t) for t in ts):
        inner, _ = _supertype([t.value_type for t in ts], node)
        return pa.list_(inner), nullable
    raise no_common()


def _ch_name(t: pa.DataType) -> str:
    try:
        return ch_type_of(t)
    except SkipidxError:
        return str(t)


def _column(vals: list[tuple[Any, pa.DataType]], t: pa.DataType, nodes: list[Any]) -> pa.Array:
    """The values of one column as an Arrow array of the supertype `t`."""
    py = [v for v, _ in vals]
    try:
        if pa.types.is_string(t):
            return pa.array(py, pa.binary()).cast(pa.string())
        if pa.types.is_list(t) and pa.types.is_string(t.value_type):
            return pa.array(py, pa.list_(pa.binary())).cast(t)
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            py = [int(v) if isinstance(v, bool) else v for v in py]
        return pa.array(py, t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        raise _err(f"values(): cannot convert the values to {_ch_name(t)}", nodes[0]) from None
