"""DDL and INSERT VALUES: AST -> store metadata and Arrow data.

``CREATE TABLE`` becomes a validated :class:`~skipidx.store.metadata.TableMeta`
(each index validated by its type at CREATE time, as ClickHouse does);
``INSERT ... VALUES`` becomes an Arrow table whose values the store then
casts to the declared types with range checks (literals convert as
ClickHouse converts them: ``'2024-01-02'`` into a Date, ``'5'`` into an
integer; a column not listed gets its type's default, NULL if Nullable).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any

import pyarrow as pa

from skipidx.core.errors import BindError, SkipidxError
from skipidx.core.types import is_uuid, uuid_array
from skipidx.indexes.base import IndexDef
from skipidx.expr.binder import Binder, coerce_constant
from skipidx.expr.types import is_int, is_string, value_type
from skipidx.expr.bound import BCall, BConst, BFolded
from skipidx.expr.catalogue import CATALOGUE
from skipidx.sql import ast as A
from skipidx.store.metadata import TableMeta


_err = BindError.at   # (the error at the node's position)


def _at(e: SkipidxError, node: Any) -> SkipidxError:
    """`e` with the node's position when it has none."""
    if e.line is None and isinstance(node, A.Node) and node.pos.line > 0:
        return BindError(e.message, line=node.pos.line, column=node.pos.column)
    return e


def _literal_value(lit: A.Literal) -> Any:
    v = lit.value
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            raise _err("parameter strings must be valid UTF-8", lit) from None
    return v


def index_defs_from_ast(ic: A.IndexClause, column_names: Any) -> list[IndexDef]:
    """The IndexDefs of an INDEX clause: one, or for ClickHouse's tuple form
    ``INDEX i (s, lower(s)) TYPE ...`` one per element (``i``, ``i__1``, ...; each
    a column or lower(column), as a single index), recorded as a group."""
    e = ic.expr
    if not (isinstance(e, A.TupleLiteral) and len(e.items) > 1) and not (
            isinstance(e, A.FunctionCall) and e.name == "tuple" and len(e.args) > 1 and not e.distinct):
        return [index_def_from_ast(ic, column_names)]
    items = e.items if isinstance(e, A.TupleLiteral) else e.args
    tuple_sql = "(" + ", ".join(x.to_sql() for x in items) + ")"
    out = []
    seen: set[tuple] = set()
    for k, item in enumerate(items):
        name = ic.name if k == 0 else f"{ic.name}__{k}"
        d = index_def_from_ast(dataclasses.replace(ic, name=name, expr=item), column_names)
        if (d.column, d.expr_func) in seen:
            raise _err(f"index {ic.name!r}: {item.to_sql()} is listed twice", item)
        seen.add((d.column, d.expr_func))
        out.append(dataclasses.replace(d, group=(ic.name, k, tuple_sql)))
    return out


def _index_expression(name: str) -> str | None:
    """The canonical name of an index-expression function of the catalogue (``lower``), or None."""
    fn = CATALOGUE.lookup(name)
    return fn.name if fn is not None and fn.index_expression else None


def index_def_from_ast(ic: A.IndexClause, column_names: Any) -> IndexDef:
    """An IndexDef from ``INDEX name expr TYPE type(args) GRANULARITY n``.

    The expression must be a column or ``lower(column)``. `column_names` is the
    table's metadata or a list of column names.
    """
    meta = column_names if isinstance(column_names, TableMeta) else None
    names = meta.column_names if meta is not None else list(column_names)
    e = ic.expr
    if isinstance(e, A.Column) and e.table is None:
        column, func = e.name, None
    elif (isinstance(e, A.FunctionCall) and _index_expression(e.name) is not None and len(e.args) == 1
          and isinstance(e.args[0], A.Column) and not e.distinct):
        column, func = e.args[0].name, _index_expression(e.name)
    elif meta is not None:
        return _expression_index(ic, meta)
    else:
        raise _err(f"index {ic.name!r}: the index expression must be a column or lower(column), "
                   f"got {e.to_sql()}", e)
    if column not in names:
        raise _err(f"index {ic.name!r}: unknown column {column!r}; columns: {', '.join(names)}", e)
    return _index_def(ic, column, func)


def _index_def(ic: A.IndexClause, column: str, func: str | None, **expression: Any) -> IndexDef:
    """The IndexDef of clause `ic` over `column` (or `func(column)`; `expression` for an
    index on another expression)."""
    return IndexDef(
        name=ic.name,
        column=column,
        expr_func=func,
        type_name=ic.type_name,
        args=tuple(_literal_value(a) for a in ic.args),
        kwargs=tuple((k.name, _literal_value(k.value)) for k in ic.kwargs),
        granularity=1 if ic.granularity is None else ic.granularity,
        **expression,
    )


def _expression_index(ic: A.IndexClause, meta: Any) -> IndexDef:
    """An index on a deterministic expression of the table's columns (``toStartOfHour(ts)``,
    ``id * 2``): a virtual column named by the expression's SQL, of the expression's type."""
    from skipidx.expr.bound import BAgg, BColumn

    try:
        bound = Binder(meta).expr(ic.expr)
    except SkipidxError as e:
        raise _at(e, ic.expr) from None
    cols: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, BColumn):
            if x.name not in cols:
                cols.append(x.name)
        elif isinstance(x, BAgg):
            raise _err(f"index {ic.name!r}: an aggregate function cannot be an index expression", ic.expr)
        elif isinstance(x, BCall):
            fn = CATALOGUE.get(x.func)
            if fn is not None and fn.per_row:
                raise _err(f"index {ic.name!r}: the index expression must be deterministic, but it contains "
                           f"{x.text or x.func}", ic.expr)
            for a in x.args:
                walk(a)
        elif isinstance(x, BFolded) and x.source is not None:
            walk(x.source)

    walk(bound)
    if not cols:
        # ClickHouse: INCORRECT_QUERY for an index on a constant
        raise _err(f"index {ic.name!r}: the index expression {ic.expr.to_sql()} is a constant", ic.expr)
    from skipidx.core.types import ch_type_of, parse_type

    try:
        ch = ch_type_of(bound.type)
        if bound.nullable:
            ch = f"Nullable({ch})"
        parse_type(ch)
    except SkipidxError as e:
        raise _err(f"index {ic.name!r}: cannot index {ic.expr.to_sql()}: {e.message}", ic.expr) from None
    text = ic.expr.to_sql()
    return _index_def(ic, text, None, expression=text, expression_type=ch, expression_columns=tuple(cols))


#: Engines stored as a MergeTree without sorting key (ClickHouse's unsorted log/memory engines).
LOG_ENGINES = ("TinyLog", "Log", "StripeLog", "Memory")


def table_meta_from_ast(s: A.CreateTable):
    """The validated TableMeta of a CREATE TABLE statement."""
    from skipidx.store.metadata import ColumnMeta, TableMeta, make_index_meta, normalize_codec
    from skipidx.core.types import parse_type

    engine = s.engine or "MergeTree"
    if engine in LOG_ENGINES:
        # ClickHouse's log and memory engines keep rows unsorted, without keys or skip
        # indexes: here a MergeTree without a sorting key answers the same queries
        if s.order_by is not None or s.primary_key is not None or s.partition_by is not None or s.indexes:
            raise _err(f"engine {engine} takes no ORDER BY, PRIMARY KEY, PARTITION BY or INDEX", s)
        if s.settings:
            raise _err(f"engine {engine} takes no SETTINGS", s.settings[0])
    elif engine != "MergeTree":
        raise _err(f"unsupported engine {s.engine!r}: MergeTree, {', '.join(LOG_ENGINES)}, or "
                   "ParquetFiles('glob') over existing files", s)
    if s.engine_args:
        raise _err(f"ENGINE = {engine} takes no arguments", s)
    if not s.has_elements:
        raise _err(f"table {s.table.name!r}: a MergeTree table needs its column list", s)
    columns = []
    for c in s.columns:
        try:
            ctype = parse_type(c.type.to_sql())
        except SkipidxError as e:
            raise _at(e, c.type) from None
        codec = None
        if c.codec:
            # the error points at the codec at fault (the second one for a chain)
            at = c.codec[1] if len(c.codec) > 1 else c.codec[0]
            try:
                codec = normalize_codec((x.name, [_literal_value(a) for a in x.args]) for x in c.codec)
            except SkipidxError as e:
                raise _at(e, at) from None
        columns.append(ColumnMeta(c.name, ctype, codec, default_text(c, columns)))
    names = [c.name for c in columns]
    order_by = _key_columns(s.order_by, names, "ORDER BY")
    if s.primary_key is not None:
        primary_key = _key_columns(s.primary_key, names, "PRIMARY KEY")
        if s.order_by is None:
            order_by = list(primary_key)      # ClickHouse: the sorting key defaults to the primary key
        _check_prefix(primary_key, order_by, s.primary_key[0] if s.primary_key else s)
    else:
        primary_key = None
    granularity = 8192
    settings: dict[str, Any] = {}
    for kv in s.settings:
        check_table_setting(kv)
        v = _literal_value(kv.value)
        if kv.name == "index_granularity":
            if isinstance(v, bool) or not isinstance(v, int):
                raise _err(f"index_granularity must be an integer, got {kv.value.to_sql()}", kv)
            granularity = v
        else:
            settings[kv.name] = v
    probe = TableMeta(name=s.table.name, columns=columns)     # the column types, for expression indexes
    indexes = []
    for ic in s.indexes:
        for defn in index_defs_from_ast(ic, probe):
            try:
                indexes.append(make_index_meta(defn, probe.column(defn.column).type
                                               if defn.expression is None else parse_type(defn.expression_type)))
            except SkipidxError as e:
                raise _at(e, ic) from None
    partition_by = None
    pk = s.partition_by
    if pk is not None and isinstance(pk, A.FunctionCall) and pk.name == "tuple" and not pk.args:
        partition_by = "tuple()"              # no partitioning, written out
    elif pk is not None:
        from skipidx.expr.binder import Binder
        from skipidx.expr.visitors import contains_agg

        try:
            bound = Binder(probe).expr(s.partition_by)
        except SkipidxError as e:
            raise _at(e, s.partition_by) from None
        if contains_agg(bound):
            raise _err("PARTITION BY cannot hold an aggregate function", s.partition_by)
        partition_by = s.partition_by.to_sql()
    meta = TableMeta(name=s.table.name, columns=columns, order_by=order_by, index_granularity=granularity,
                     indexes=indexes, settings=settings,
                     primary_key=None if primary_key is None or primary_key == order_by else primary_key,
                     partition_by=partition_by, engine=engine)
    try:
        return meta.validate()
    except SkipidxError as e:
        raise _at(e, s) from None


def _key_columns(key: tuple | None, names: list[str], what: str) -> list[str]:
    out: list[str] = []
    for k in key or ():
        if isinstance(k, A.Column) and k.table is None:
            items = [k]
        elif isinstance(k, A.TupleLiteral) and all(isinstance(x, A.Column) for x in k.items):
            items = list(k.items)
        elif isinstance(k, A.FunctionCall) and k.name == "tuple" and all(isinstance(x, A.Column) for x in k.args):
            items = list(k.args)
        else:
            raise _err(f"{what} key must be columns, got {k.to_sql()}", k)
        for x in items:
            if x.name not in names:
                from skipidx.core.hints import did_you_mean

                raise _err(f"{what}: unknown column {x.name!r}{did_you_mean(x.name, names)}; "
                           f"columns: {', '.join(names)}", x)
            out.append(x.name)
    return out


def _check_prefix(primary_key: list[str], order_by: list[str], node: Any) -> None:
    """ClickHouse's rule, with its message: the primary key is a prefix of the sorting key."""
    if len(primary_key) > len(order_by):
        raise _err(f"Primary key must be a prefix of the sorting key, but its length: {len(primary_key)} is "
                   f"greater than the sorting key length: {len(order_by)}", node)
    for i, (p, o) in enumerate(zip(primary_key, order_by)):
        if p != o:
            raise _err(f"Primary key must be a prefix of the sorting key, but the column in the position {i} "
                       f"is {o}, not {p}", node)


def check_table_setting(kv: A.KeywordArg) -> None:
    """A CREATE/ALTER ... MODIFY SETTING name must be a table setting (else: error with a hint, at its place)."""
    from skipidx.core.hints import did_you_mean
    from skipidx.store.metadata import CLICKHOUSE_ONLY_SETTINGS, KNOWN_SETTINGS

    known = ["index_granularity", *KNOWN_SETTINGS, *sorted(CLICKHOUSE_ONLY_SETTINGS)]
    if kv.name not in known:
        raise _err(f"unknown setting '{kv.name}' for a MergeTree table{did_you_mean(kv.name, known)} "
                   "(table settings: docs/settings.md)", kv)
    if not isinstance(kv.value, A.Literal) or kv.value.kind not in ("int", "float", "string", "bool"):
        raise _err(f"setting {kv.name} needs a number or a string", kv)


def default_text(c: A.ColumnDef, earlier: list) -> str | None:
    """The DEFAULT expression of a column as SQL text, checked to bind over the
    columns declared before it (None without DEFAULT)."""
    if c.default is None:
        return None
    from skipidx.core.types import parse_type
    from skipidx.store.metadata import ColumnMeta, TableMeta

    cols = [x for x in earlier if isinstance(x, ColumnMeta)] + [ColumnMeta(c.name, parse_type(c.type.to_sql()))]
    probe = TableMeta(name="t", columns=cols)
    try:
        Binder(probe).expr(c.default)
    except SkipidxError as e:
        raise _at(e, c.default) from None
    return c.default.to_sql()


def _default(ctype) -> Any:
    if ctype.nullable:
        return None
    t = ctype.arrow_type
    if is_string(t):
        return b""
    if is_uuid(t):
        return bytes(16)
    if pa.types.is_date(t):
        return _dt.date(1970, 1, 1)
    if pa.types.is_timestamp(t):
        return _dt.datetime(1970, 1, 1)
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_floating(t):
        return 0.0
    return 0


def _column_array(ctype, values: list[Any], name: str, nodes: list[Any]) -> pa.Array:
    """Python values of one column as an Arrow array wide enough for the store's range-checked cast."""
    if ctype.element is not None:
        # Array(T): the literals' elements converted as a column of T, then cut back into lists
        offsets, flat, flat_nodes = [0], [], []
        for v, node in zip(values, nodes):
            if not isinstance(v, tuple):
                raise _err(f"column {name!r} ({ctype.name}): expected an array, got {node.to_sql()}", node)
            flat.extend(v)
            flat_nodes.extend([node] * len(v))
            offsets.append(len(flat))
        inner = _column_array(ctype.element, flat, f"{name}[]", flat_nodes)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), inner)
    t = value_type(ctype.arrow_type)
    out: list[Any] = []
    for v, node in zip(values, nodes):
        if v is None:
            out.append(None)
            continue
        if isinstance(v, tuple):
            raise _err(f"column {name!r}: arrays are not supported", node)
        if pa.types.is_boolean(t):
            if isinstance(v, bytes):
                s = v.decode("utf-8", "replace").lower()
                if s not in ("true", "false", "0", "1"):
                    raise _err(f"column {name!r} (Bool): cannot parse {s!r}", node)
                v = s in ("true", "1")
            out.append(int(v) if not isinstance(v, bool) else v)
            continue
        if isinstance(v, (_dt.date, _dt.datetime)):   # a default value, already typed
            out.append(v)
            continue
        if pa.types.is_fixed_size_binary(t) and isinstance(v, bytes):
            out.append(v)           # the store's cast pads it, or refuses one too long
            continue
        c = coerce_constant(v, t, node, f" for column {name!r}")
        if pa.types.is_timestamp(t) and isinstance(c, int):
            if not 0 <= c <= 2**32 - 1:
                raise _err(f"column {name!r} (DateTime): {c} is out of range", node)
            c = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=c)
        out.append(c)
    if pa.types.is_boolean(t):
        typ = pa.bool_() if all(isinstance(x, bool) or x is None for x in out) else pa.int64()
        return pa.array(out, typ)
    if is_int(t):
        if any(isinstance(x, float) for x in out):
            return pa.array([None if x is None else float(x) for x in out], pa.float64())
        ints = [x for x in out if x is not None]
        if ints and (max(ints) > 2**63 - 1):
            if min(ints) < 0:
                raise _err(f"column {name!r}: values out of range", nodes[0])
            return pa.array(out, pa.uint64())
        if ints and min(ints) < -(2**63):
            raise _err(f"column {name!r}: values out of range", nodes[0])
        return pa.array(out, pa.int64())
    if pa.types.is_floating(t):
        return pa.array([None if x is None else float(x) for x in out], pa.float64())
    if is_string(t) or pa.types.is_fixed_size_binary(t):
        return pa.array(out, pa.binary())
    if is_uuid(t):
        return uuid_array(pa.array(out, pa.binary(16)))
    if pa.types.is_date(t):
        return pa.array(out, pa.date32())
    if pa.types.is_timestamp(t):
        # DateTime64 keeps the literal's fraction (the store's cast cuts it to the column's unit)
        return pa.array(out, pa.timestamp("s" if t.unit == "s" else "us"))
    raise _err(f"column {name!r}: unsupported type {t}", nodes[0] if nodes else None)


def _row_value(e: Any, node: Any) -> BConst:
    """A VALUES expression the binder could not fold (it holds a per-row function such as
    ``generateUUIDv4()``): its value for this one row."""
    from skipidx.expr.evaluate import evaluate

    if not isinstance(e, BCall):
        raise _err(f"INSERT VALUES needs constants, got {node.to_sql()}", node)
    v = evaluate(e, pa.table({"_": pa.array([0], pa.uint8())}))[0].as_py()
    if isinstance(v, str):
        v = v.encode("utf-8")     # String constants are bytes in the bound tree
    return BConst(v, e.type, v is None)


def values_table(meta, s: A.InsertValues) -> pa.Table:
    """The rows of ``INSERT ... VALUES`` as an Arrow table with every column of the table."""
    names = meta.column_names
    cols = list(s.columns) if s.columns is not None else names
    for c in cols:
        if c not in names:
            raise _err(f"unknown column {c!r} in table {meta.name!r}; columns: {', '.join(names)}", s)
    if len(set(cols)) != len(cols):
        raise _err("a column is listed twice in INSERT", s)
    binder = Binder(None)
    per_col: dict[str, list[Any]] = {c: [] for c in cols}
    per_node: dict[str, list[Any]] = {c: [] for c in cols}
    for row in s.rows:
        if len(row) != len(cols):
            raise _err(f"INSERT row has {len(row)} values, expected {len(cols)}", row[0] if row else s)
        for c, node in zip(cols, row):
            e = binder.expr(node)
            if not isinstance(e, BConst):
                e = _row_value(e, node)
            per_col[c].append(e.value)
            per_node[c].append(node)
    n = len(s.rows)
    arrays = []
    for cm in meta.columns:
        if cm.name in per_col:
            arrays.append(_column_array(cm.type, per_col[cm.name], cm.name, per_node[cm.name]))
        else:
            arrays.append(_column_array(cm.type, [_default(cm.type)] * n, cm.name, [s] * n))
    return pa.Table.from_arrays(arrays, names=names)
