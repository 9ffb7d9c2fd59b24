"""Spark's pushed filters -> skipidx WHERE expressions, and the type mapping.

Spark hands a Python data source the AND of simple filters (``EqualTo``,
``In``, ``StringStartsWith``, ``Not(child)``...; never OR). Each one becomes
a skipidx expression (an AST node, bound later by the same binder as SQL),
so it is cut into RPN atoms and answered by the same indexes as a WHERE
clause of the embedded engine.

Soundness rule. A translation ``c`` of a Spark filter ``f`` must give, on
every row where ``f``'s value is TRUE or FALSE, that same value (where ``f``
is NULL, ``c`` may be anything). Kleene logic is *regular*: if a formula is
TRUE with a NULL operand, it is TRUE whatever that operand is; so any AND /
NOT combination of such leaves is TRUE in skipidx wherever it is TRUE in
Spark. Pruning with ``c`` therefore never drops a row Spark would return,
and neither does applying ``c`` exactly before handing rows to Spark. Where
Spark and ClickHouse disagree on non-NULL rows, the filter is not pushed:

* float ``>``/``>=`` (Spark orders NaN above +inf, ClickHouse's NaN compares
  false) and any comparison with a NaN constant (``NaN = NaN`` is TRUE in
  Spark);
* ``EqualNullSafe(x, v)`` is FALSE (not NULL) on a NULL ``x``; it becomes
  ``x IS NOT NULL AND x = v``, which is FALSE there too;
* ``In`` with a NULL member: Spark gives NULL where ClickHouse (which drops
  the member) gives FALSE -- allowed, since Spark's value is NULL;
* a float ``In`` becomes an OR of equalities: ClickHouse's ``IN`` matches
  float bit patterns (``-0.0 IN (0.0)`` is false), Spark's compares values;
* timestamps with a fractional second are not pushed (DateTime holds whole
  seconds; folding them is not worth a special case).

Every filter is still returned to Spark, which evaluates it exactly: a bloom
filter only proves absence, so the source's pruning is a superset.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
from typing import Any, Iterable, Sequence

import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.expr.catalogue import CATALOGUE
from skipidx.sql import ast as A
from skipidx.core.types import ColumnType

__all__ = [
    "filter_to_expr", "filters_to_exprs", "conjunction", "spark_type_of", "spark_schema_of",
    "ch_type_of_spark", "filter_text", "exact_filter",
]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


# ------------------------------------------------------------------ types
def spark_type_of(ct: ColumnType) -> Any:
    """The Spark SQL type that holds every value of a skipidx column type.

    Spark has no unsigned integers: UInt8/16/32 widen to the next signed
    type, UInt64 to DECIMAL(20,0). DateTime (UInt32 seconds since the epoch,
    an instant) is TIMESTAMP; Date is DATE.
    """
    from pyspark.sql import types as T

    t = ct.arrow_type
    table = {
        pa.uint8(): T.ShortType(), pa.uint16(): T.IntegerType(), pa.uint32(): T.LongType(),
        pa.uint64(): T.DecimalType(20, 0),
        pa.int8(): T.ByteType(), pa.int16(): T.ShortType(), pa.int32(): T.IntegerType(), pa.int64(): T.LongType(),
        pa.float32(): T.FloatType(), pa.float64(): T.DoubleType(), pa.bool_(): T.BooleanType(),
        pa.string(): T.StringType(), pa.date32(): T.DateType(),
    }
    if pa.types.is_timestamp(t):
        return T.TimestampType()
    if t in table:
        return table[t]
    raise SkipidxError(f"no Spark type for column type {ct.name}")


def spark_schema_of(meta: Any) -> Any:
    """The Spark StructType of a table (column order and nullability kept)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(c.name, spark_type_of(c.type), c.type.nullable) for c in meta.columns])


def ch_type_of_spark(dt: Any, nullable: bool) -> str:
    """The skipidx (ClickHouse) type name for a Spark field when a write creates the table."""
    from pyspark.sql import types as T

    simple = [(T.ByteType, "Int8"), (T.ShortType, "Int16"), (T.IntegerType, "Int32"), (T.LongType, "Int64"),
              (T.FloatType, "Float32"), (T.DoubleType, "Float64"), (T.BooleanType, "Bool"),
              (T.StringType, "String"), (T.DateType, "Date"), (T.TimestampType, "DateTime"),
              (T.TimestampNTZType, "DateTime")]
    name = None
    for cls, n in simple:
        if isinstance(dt, cls):
            name = n
            break
    if name is None and isinstance(dt, T.DecimalType) and dt.scale == 0:
        if dt.precision <= 18:
            name = "Int64"
        elif dt.precision == 20:
            name = "UInt64"   # what spark_type_of maps UInt64 to: a round trip keeps the type
    if name is None:
        raise SkipidxError(f"Spark type {dt.simpleString()} has no skipidx column type; create the table "
                           "first (skipidx sql ... CREATE TABLE) or cast the column")
    return f"Nullable({name})" if nullable else name


# ------------------------------------------------------------------ values
def _timestamp_seconds(v: Any) -> int | None:
    """Whole seconds since the epoch of a Spark timestamp value, None if fractional or not a timestamp."""
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            # pyspark's naive datetimes are local wall-clock times (datetime.fromtimestamp)
            v = v.astimezone(_dt.timezone.utc)
        d = v - _EPOCH
        if d.microseconds:
            return None
        return d.days * 86400 + d.seconds
    return None


def _literal(v: Any, ct: ColumnType) -> A.Literal | None:
    """`v` as a literal the binder converts to a value of `ct` exactly; None if it cannot."""
    t = ct.arrow_type
    if v is None:
        return None
    if pa.types.is_string(t):
        return A.Literal(v.encode("utf-8"), "string") if isinstance(v, str) else None
    if pa.types.is_boolean(t):
        return A.Literal(int(v), "int") if isinstance(v, bool) else None
    if pa.types.is_integer(t):
        if isinstance(v, decimal.Decimal):
            if not v.is_finite() or v != v.to_integral_value():
                return None
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            return None
        return A.Literal(v, "int")
    if pa.types.is_floating(t):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        f = float(v)
        if math.isnan(f) or math.isinf(f):
            return None
        return A.Literal(f, "float")
    if pa.types.is_date32(t):
        if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
            return A.Literal(v.isoformat().encode(), "string")
        return None
    if pa.types.is_timestamp(t):
        s = _timestamp_seconds(v)
        return None if s is None else A.Literal(s, "int")
    return None


# ------------------------------------------------------------------ filters
def _column(f: Any, meta: Any) -> tuple[A.Column, ColumnType] | None:
    attr = getattr(f, "attribute", None)
    if not isinstance(attr, tuple) or len(attr) != 1:
        return None            # nested field paths: no such columns here
    name = attr[0]
    for c in meta.columns:
        if c.name == name:
            return A.Column(name), c.type
    return None


#: Each Spark filter class and the catalogue function it is (for the non-NULL rows the
#: soundness rule above speaks of); the catalogue says how SQL spells the call.
SPARK_FUNCTIONS = {
    "EqualTo": "equals", "LessThan": "less", "LessThanOrEqual": "lessOrEquals", "GreaterThan": "greater",
    "GreaterThanOrEqual": "greaterOrEquals", "In": "in", "IsNull": "isNull", "IsNotNull": "isNotNull",
    "StringStartsWith": "startsWith", "StringEndsWith": "endsWith", "StringContains": "multiSearchAny",
}


def _call(func: str, col: A.Expr, *args: A.Expr) -> A.Expr:
    """The catalogue function `func` over `col` and `args`, as SQL writes it: its operator
    (``x = 5``, ``x IN (...)``, ``x IS NULL``) where it has one, else its call form."""
    fn = CATALOGUE[func]
    negated = fn.index is not None and fn.index.negation_of is not None
    if fn.rule == "null_test":
        return A.IsNull(col, negated=negated)
    if fn.rule == "membership":
        return A.InList(col, tuple(args), negated=negated)
    if fn.operators:
        return A.BinaryOp(fn.operators[0], col, args[0])
    return A.FunctionCall(fn.name, (col, *args))


def filter_to_expr(f: Any, meta: Any) -> A.Expr | None:
    """The skipidx expression of one Spark filter, or None when it is not pushed
    (see the module docstring for the soundness rule)."""
    from pyspark.sql import datasource as D

    if isinstance(f, D.Not):
        inner = filter_to_expr(f.child, meta)
        return None if inner is None else A.UnaryOp("not", inner)
    cc = _column(f, meta)
    if cc is None:
        return None
    col, ct = cc
    t = ct.arrow_type
    is_float = pa.types.is_floating(t)
    func = next((fn for name, fn in SPARK_FUNCTIONS.items() if type(f) is getattr(D, name)), None)
    if func in ("isNull", "isNotNull"):
        return _call(func, col)
    if isinstance(f, D.EqualNullSafe):
        if f.value is None:
            return _call("isNull", col)
        lit = _literal(f.value, ct)
        if lit is None:
            return None
        # FALSE (not NULL) on a NULL x, as Spark's <=> is
        return A.BoolOp("and", (_call("isNotNull", col), _call("equals", col, lit)))
    if func is not None and CATALOGUE[func].rule == "comparison":
        if is_float and func in ("greater", "greaterOrEquals"):
            return None       # Spark: NaN > everything; ClickHouse: NaN > x is false
        lit = _literal(f.value, ct)
        return None if lit is None else _call(func, col, lit)
    if isinstance(f, D.In):
        values = list(f.value) if isinstance(f.value, (list, tuple)) else None
        if values is None:
            return None
        items = []
        for v in values:
            if v is None:
                continue          # Spark: NULL there, skipidx: FALSE -- allowed (see above)
            lit = _literal(v, ct)
            if lit is None:
                return None
            items.append(lit)
        if not items:
            return None
        if is_float:
            # ClickHouse's IN hashes the float's bits (-0.0 IN (0.0) is false),
            # Spark's IN compares (-0.0 = 0.0): equalities agree with Spark
            eqs = tuple(_call("equals", col, lit) for lit in items)
            return eqs[0] if len(eqs) == 1 else A.BoolOp("or", eqs)
        return _call("in", col, *items)
    if isinstance(f, (D.StringStartsWith, D.StringEndsWith, D.StringContains)):
        if not pa.types.is_string(t) or not isinstance(f.value, str):
            return None
        lit = A.Literal(f.value.encode("utf-8"), "string")
        if func in ("startsWith", "endsWith"):
            return _call(func, col, lit)
        if not f.value:
            # Spark: contains('') is TRUE for every non-NULL string; ClickHouse's
            # multiSearchAny(s, ['']) is false on '' (a different answer), so say it
            # without a needle.
            return _call("isNotNull", col)
        # substring search without LIKE's escaping rules
        return _call("multiSearchAny", col, A.ArrayLiteral((lit,)))
    return None


def filters_to_exprs(filters: Iterable[Any], meta: Any) -> list[A.Expr]:
    """The pushable filters as bindable expressions (each checked by binding it alone,
    so one filter the binder refuses never takes the others down)."""
    from skipidx.expr.binder import bind_where

    out = []
    for f in filters:
        e = filter_to_expr(f, meta)
        if e is None:
            continue
        try:
            bind_where(meta, e)
        except SkipidxError:
            continue
        out.append(e)
    return out


def conjunction(exprs: Sequence[A.Expr]) -> A.Expr | None:
    """AND of `exprs` (None for none)."""
    exprs = [e for e in exprs if e is not None]
    if not exprs:
        return None
    if len(exprs) == 1:
        return exprs[0]
    return A.BoolOp("and", tuple(exprs))


def exact_filter(meta: Any, pushed: Sequence[A.Expr], where: A.Expr | None) -> tuple[Any, list[str], list[str]]:
    """What a reader applies exactly: the AND of the `pushed` filters and the `where`
    option, bound on `meta` (None: nothing), and the columns it reads first (those the
    filter needs) and after (the rest), in table order."""
    from skipidx.expr.binder import bind_where
    from skipidx.expr.visitors import columns_of

    exact = conjunction(list(pushed) + ([where] if where is not None else []))
    bound = bind_where(meta, exact) if exact is not None else None
    used = columns_of(bound) if bound is not None else set()
    return bound, [c for c in meta.column_names if c in used], [c for c in meta.column_names if c not in used]


def filter_text(f: Any) -> str:
    """A short readable form of a Spark filter (for stats and messages)."""
    return repr(f)
