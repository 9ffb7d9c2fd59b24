"""The binder: AST -> bound, typed expressions, with ClickHouse's rules.

It resolves column names against the table, function names against the
functions skipidx implements (with ClickHouse's signatures: ``hasToken``
needs a String haystack and a constant String needle), and casts every
constant compared with a column to the column's type the way ClickHouse
does:

* an integer column compared with a constant outside its range, or with a
  fractional constant for ``=``, is decided from the types alone
  (``UInt8 = 300`` is false, ``UInt8 < 300`` is true for every non-NULL row)
  and becomes a :class:`~skipidx.expr.bound.BFolded`;
* ``x < 2.5`` on an integer column is ``x < 3`` (and so on for the other
  comparisons), so the index atoms only ever see values of the column type;
* a string constant compared with a number column is parsed as a number
  (``id = '5'``), with a Date/DateTime column as a date/time;
* a number compared with a String column is an error ("no supertype"), as
  are ``hasToken(UInt64, ...)``, an unknown column or function, a wrong
  number of arguments, or a non-constant where ClickHouse wants a constant;
* constant arguments are validated at bind time (a ``hasToken`` needle with a
  separator, a bad regex or LIKE pattern), so the error does not depend on
  how many granules the indexes pruned -- ClickHouse also raises these
  during analysis.

Errors are :class:`~skipidx.core.errors.BindError` with the line and column of
the offending name in the SQL text.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
import uuid as _uuid
from typing import Any

import pyarrow as pa

from skipidx.core.errors import BindError, SkipidxError
from skipidx.core.hints import did_you_mean
from skipidx.core.types import is_uuid, parse_uuid_texts
from skipidx.expr.bound import BAgg, BCall, BColumn, BConst, BExpr, BFolded
from skipidx.expr.select import BoundSelect, OrderItem, OutputItem
from skipidx.expr.visitors import BoundVisitor, contains_agg, source_column, visit
from skipidx.expr import dates
from skipidx.expr.evaluate import evaluate
from skipidx.expr.catalogue import CATALOGUE, CONST_ARRAY_STRING, CONST_TOKENS, Function, TUPLE_FUNC as _TUPLE_FUNC
from skipidx.expr.catalogue import aggregate_combinator
from skipidx.expr.kernels import arithmetic, arithmetic_result_type, negate_result_type
from skipidx.expr.types import (
    _int_range, ch_name, is_int, is_nullable_nothing_list, is_numeric, is_string, literal_type,
    nullable_nothing_list, value_type,
)
from skipidx.sql import ast as A

_BOOL = pa.uint8()      # ClickHouse's predicate result type (UInt8)

#: Comparison operators and their canonical function names.
_FLIP = {"equals": "equals", "notEquals": "notEquals", "less": "greater", "greater": "less",
         "lessOrEquals": "greaterOrEquals", "greaterOrEquals": "lessOrEquals"}

#: The BCall function holding the arguments of a multi-argument uniqExact (only there).
TUPLE_FUNC = _TUPLE_FUNC
KNOWN_FUNCTIONS = CATALOGUE.names()


_err = BindError.at   # (the error at the node's position)


def _parse_temporal(parse: Any, text: bytes, node: Any, what: str) -> Any:
    try:
        return parse(text)
    except ValueError:
        s = text.decode("utf-8", "replace")
        raise _err(f"cannot parse {s!r} as {what}", node) from None


def parse_date(text: bytes, node: Any = None) -> _dt.date:
    return _parse_temporal(dates.parse_date, text, node, "Date (expected YYYY-MM-DD)")


def parse_datetime(text: bytes, node: Any = None) -> _dt.datetime:
    return _parse_temporal(dates.parse_datetime, text, node, "DateTime (expected YYYY-MM-DD hh:mm:ss[.fraction])")


_INT_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")
_DATE_TIME_TEXT = re.compile(rb"^\s*\d{4}-\d{2}-\d{2}[ T]")
_FLOAT_TEXT = re.compile(r"^\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|nan)\s*$", re.I)


def coerce_constant(value: Any, target: pa.DataType, node: Any = None, what: str = "") -> Any:
    """A literal converted to a value of `target`'s domain, as ClickHouse converts for comparison.

    Returns a Python int/float/bytes/date/datetime/bool, or raises BindError for
    a value that does not convert (``'abc'`` for a number, ``5`` for a String).
    Range checks are the caller's business (out-of-range compares are folded).
    """
    t = value_type(target)
    if value is None:
        return None
    if is_int(t) or pa.types.is_floating(t):
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, (int, float)):
            return value
        if isinstance(value, bytes):
            s = value.decode("utf-8", "replace")
            if pa.types.is_boolean(t) and s.lower() in ("true", "false"):
                return int(s.lower() == "true")
            if is_int(t) and _INT_TEXT.match(s):
                return int(s)
            if pa.types.is_floating(t) and _FLOAT_TEXT.match(s):
                return float(s)
            raise _err(f"cannot convert string {s!r} to type {ch_name(t)}{what}", node)
    elif is_string(t):
        if isinstance(value, bytes):
            return value
        raise _err(f"there is no supertype for types String and {ch_name(literal_type(value))}{what}", node)
    elif is_uuid(t):
        if isinstance(value, _uuid.UUID):
            return value.bytes
        if isinstance(value, bytes):
            storage, bad = parse_uuid_texts(pa.array([value], pa.binary()))
            if bad[0].as_py():
                s = value.decode("utf-8", "replace")
                raise _err(f"Cannot parse uuid {s}: while converting {s!r} to UUID{what}", node)
            return storage[0].as_py()
        raise _err(f"illegal types of arguments (UUID, {ch_name(literal_type(value))}){what}", node)
    elif pa.types.is_fixed_size_binary(t):
        # ClickHouse compares FixedString(n) with a string padded with zero bytes to n
        if isinstance(value, bytes):
            if len(value) > t.byte_width:
                raise _err(f"string {value!r} is too long for FixedString({t.byte_width}){what}", node)
            return value.ljust(t.byte_width, b"\0")
        raise _err(f"cannot compare FixedString({t.byte_width}) with {value!r}{what}", node)
    elif pa.types.is_date(t):
        if isinstance(value, bytes):
            try:
                return dates.parse_date(value)
            except ValueError:   # ClickHouse reads a Date from a date-and-time text too
                return parse_datetime(value, node).date() if _DATE_TIME_TEXT.match(value) else parse_date(value, node)
        if isinstance(value, _dt.date):
            return value   # a date, or a DateTime that normalize_comparison compares as one
        raise _err(f"illegal types of arguments (Date, {ch_name(literal_type(value))}){what}", node)
    elif pa.types.is_timestamp(t):
        if isinstance(value, bytes):
            # a text is the column's local clock time (ClickHouse reads it in the column's zone)
            return dates.truncate_to_unit(_local_to_utc(parse_datetime(value, node), t.tz), t.unit)
        if isinstance(value, int) and not isinstance(value, bool):
            return value   # seconds since the epoch; range-checked by the caller
        if isinstance(value, _dt.datetime):
            return value.replace(tzinfo=None) if value.tzinfo is None else value
        if isinstance(value, _dt.date):
            # a Date compares as its midnight, in the column's zone
            return _local_to_utc(_dt.datetime(value.year, value.month, value.day), t.tz)
        raise _err(f"illegal types of arguments (DateTime, {ch_name(literal_type(value))}){what}", node)
    raise _err(f"cannot compare {ch_name(t)} with {value!r}{what}", node)


def _epoch_seconds(v: _dt.datetime) -> float:
    if v.tzinfo is None:
        v = v.replace(tzinfo=_dt.timezone.utc)
    return v.timestamp()


def _temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


def _local_to_utc(local: _dt.datetime, tz: str | None) -> _dt.datetime:
    """A naive clock time in zone `tz` as the naive UTC time of that instant (unchanged without a zone)."""
    if not tz or tz.upper() in ("UTC", "GMT", "ETC/UTC"):
        return local
    from zoneinfo import ZoneInfo

    try:
        zone = ZoneInfo(tz)
    except (KeyError, ValueError):
        return local
    return local.replace(tzinfo=zone).astimezone(_dt.timezone.utc).replace(tzinfo=None)


def _datetime_of_seconds(s: int) -> _dt.datetime:
    return _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=s)


_DATE_RANGE = (_dt.date(1970, 1, 1), _dt.date(2149, 6, 6))
_DATETIME_RANGE = (0, 2**32 - 1)


def normalize_comparison(func: str, t: pa.DataType, value: Any) -> tuple[str, Any] | bool:
    """Canonical ``(func, value)`` of ``x func value`` for a column of type `t`, or the
    constant truth value (for every non-NULL x) when the types decide it.

    `value` is already coerced (:func:`coerce_constant`), not None.
    """
    t = value_type(t)
    if is_int(t):
        lo, hi = _int_range(t)
        if isinstance(value, float):
            if math.isnan(value):
                return func == "notEquals"
            if math.isinf(value):
                below = value < 0
                return _out_of_range(func, below)
            if value != math.floor(value):
                if func == "equals":
                    return False
                if func == "notEquals":
                    return True
                # x < 2.5 <=> x < 3; x >= 2.5 <=> x >= 3; x <= 2.5 <=> x <= 2; x > 2.5 <=> x > 2
                value = math.ceil(value) if func in ("less", "greaterOrEquals") else math.floor(value)
            value = int(value)
        if value < lo:
            return _out_of_range(func, True)
        if value > hi:
            return _out_of_range(func, False)
        return func, (bool(value) if pa.types.is_boolean(t) else int(value))
    if pa.types.is_floating(t):
        v = float(value)
        if pa.types.is_float32(t) and math.isfinite(v) and (isinstance(value, float) or float(value) == value):
            import numpy as np

            with np.errstate(over="ignore"):
                return _float32_comparison(func, v)
        return func, v
    if pa.types.is_timestamp(t):
        if isinstance(value, int):
            if value < _DATETIME_RANGE[0]:
                return _out_of_range(func, True)
            if value > _DATETIME_RANGE[1]:
                return _out_of_range(func, False)
            value = _datetime_of_seconds(value)
        if isinstance(value, _dt.datetime) and value.tzinfo is None:
            step = _dt.timedelta(microseconds=_UNIT_US.get(t.unit, 1))
            whole = value - (value - _dt.datetime(1970, 1, 1)) % step
            return _between_steps(func, value, whole, whole + step)
        return func, value
    if pa.types.is_date(t) and isinstance(value, _dt.datetime):
        # ClickHouse compares a Date with a DateTime as the date's midnight
        day = value.date()
        return _between_steps(func, value, day, day + _dt.timedelta(days=1),
                              exact=value == _dt.datetime(day.year, day.month, day.day))
    return func, value


_UNIT_US = {"s": 1_000_000, "ms": 1_000, "us": 1}


def _between_steps(func: str, value: Any, floor: Any, ceil: Any, exact: bool | None = None) -> tuple[str, Any] | bool:
    """``x func value`` for a column whose values are whole steps, `value` lying in
    [floor, ceil): as the integer rule (x < 2.5 <=> x < 3, x <= 2.5 <=> x <= 2)."""
    if exact if exact is not None else value == floor:
        return func, floor
    if func == "equals":
        return False
    if func == "notEquals":
        return True
    return func, (ceil if func in ("less", "greaterOrEquals") else floor)


def _float32_comparison(func: str, v: float) -> tuple[str, float] | bool:
    """``x func v`` for a Float32 column: ClickHouse widens x to Float64, so a v that no
    float32 equals is never equal, and the order is decided against its float32 neighbours."""
    import numpy as np

    f = np.float32(v)
    if float(f) == v:
        return func, v
    if func == "equals":
        return False
    if func == "notEquals":
        return True
    lo32 = float(np.nextafter(f, np.float32(-np.inf))) if float(f) > v else float(f)
    hi32 = float(np.nextafter(f, np.float32(np.inf))) if float(f) < v else float(f)
    # x < v <=> x <= lo32 ; x > v <=> x >= hi32 (no float32 lies strictly between)
    if func in ("less", "lessOrEquals"):
        return "lessOrEquals", lo32
    return "greaterOrEquals", hi32


def _out_of_range(func: str, below: bool) -> bool:
    """Truth of ``x func c`` for every x when c lies below (or above) the column's range."""
    return {"equals": False, "notEquals": True, "less": not below, "lessOrEquals": not below,
            "greater": below, "greaterOrEquals": below}[func]


def normalize_in_list(t: pa.DataType, values: tuple, node: Any = None) -> tuple:
    """The IN-list values that a column of type `t` can equal, coerced; NULLs dropped
    (``transform_null_in = 0``: a NULL in the list never matches)."""
    out = []
    seen = set()
    for v in values:
        if v is None:
            continue
        c = coerce_constant(v, t, node, " in the IN list")
        if pa.types.is_date(value_type(t)) and isinstance(c, _dt.datetime):
            c = c.date()   # IN converts its elements to the column's type (a DateTime to its date)
        r = normalize_comparison("equals", t, c)
        if isinstance(r, bool):
            continue            # cannot equal any value of the column
        key = r[1]
        # 0. and -0. are one value to Python's set, two to ClickHouse's IN (bits)
        dk = (key, repr(key)) if isinstance(key, float) else key
        if dk not in seen:
            seen.add(dk)
            out.append(key)
    return tuple(out)


#: An OR of at least this many ``col = c`` terms on one column is bound as
#: ``col IN (...)`` (an AND of ``col != c`` as NOT IN): one atom to prune and
#: one set lookup per row, not one pass per term (ClickHouse's
#: optimize_min_equality_disjunction_chain_length rewrites them too).
CHAIN_TO_IN_MIN = 8


def _chain_to_in(func: str, args: list) -> list:
    """`args` of an OR (AND) with each long enough group of ``col = c``
    (``col != c``) terms on one integer or String column replaced, where its
    first term stood, by ``col IN (c, ...)`` (``NOT IN``). Exact with NULLs:
    a NULL col gives NULL either way, and every bound constant is already
    coerced to the column's type and never NULL (``col = NULL`` folds away)."""
    want = "equals" if func == "or" else "notEquals"
    groups: dict[str, list[int]] = {}
    for i, a in enumerate(args):
        if (isinstance(a, BCall) and a.func == want and len(a.args) == 2 and isinstance(a.args[0], BColumn)
                and isinstance(a.args[1], BConst) and a.args[1].value is not None):
            t = a.args[1].type
            if pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
                groups.setdefault(a.args[0].name, []).append(i)
    fold = {}
    for idx in groups.values():
        if len(idx) < CHAIN_TO_IN_MIN:
            continue
        first = args[idx[0]]
        col = first.args[0]
        # the same column bound twice has the same type; a term whose column differs
        # in anything (e.g. nullability) is left as it is
        idx = [i for i in idx if args[i].args[0] == col and args[i].args[1].type == first.args[1].type]
        if len(idx) < CHAIN_TO_IN_MIN:
            continue
        vals = tuple(dict.fromkeys(args[i].args[1].value for i in idx))
        text = (" OR " if func == "or" else " AND ").join(args[i].text for i in idx)
        node = BCall("in" if func == "or" else "notIn", (col, BConst(vals, first.args[1].type)), _BOOL,
                     col.nullable, text)
        fold[idx[0]] = node
        fold.update((i, None) for i in idx[1:])
    if not fold:
        return args
    return [fold.get(i, a) for i, a in enumerate(args) if fold.get(i, a) is not None]


def _null_result() -> BConst:
    """A function of a NULL constant: NULL of type Nullable(Nothing), as ClickHouse types
    ``NULL = 1``, ``NOT NULL`` or ``NULL + 1`` (AND/OR with a NULL keep UInt8)."""
    return BConst(None, pa.null(), True)


def _is_utf8(b: Any) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _negate_constant(c: BConst) -> BConst:
    """``-(c)`` folded with ClickHouse's negate types: UIntN -> the signed type twice as
    wide (Int64 for UInt64, wrapping), IntN -> IntN (wrapping), floats stay."""
    t = value_type(c.type)
    if pa.types.is_floating(t):
        return BConst(-float(c.value), t)
    if not pa.types.is_integer(t):
        return BConst(-c.value, literal_type(-c.value))
    bits = t.bit_width
    if pa.types.is_unsigned_integer(t):
        bits = min(2 * bits, 64)
    rt = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[bits]
    half = 1 << (bits - 1)
    return BConst((-int(c.value) + half) % (2 * half) - half, rt)


def array_constant_type(values: tuple, node: Any = None) -> pa.DataType:
    """Arrow type of a constant array ``[v, ...]`` as ClickHouse types it (Array(UInt8),
    Array(Int16) for ``[1, -1]``, Array(Float64), Array(String)); NULL items make it
    Array(Nullable(T)) (a nullable item field). Other mixes are an error."""
    items = [v for v in values if v is not None]
    if not items:
        return nullable_nothing_list() if values else pa.list_(pa.null())   # [NULL] / []
    t = _array_item_type(values, items, node)
    # Array(T) without NULL items, as a column of Array(T) is typed (core.types)
    return pa.list_(pa.field("item", t, nullable=len(items) < len(values)))


def _array_item_type(values: tuple, items: list, node: Any) -> pa.DataType:
    if any(isinstance(v, tuple) for v in items):
        raise _err("nested arrays are not supported in the SELECT list", node)
    if all(isinstance(v, bytes) for v in items):
        ok = True
        for v in items:
            try:
                v.decode("utf-8")
            except UnicodeDecodeError:
                ok = False
        return pa.string() if ok else pa.binary()
    if all(isinstance(v, bool) for v in items):
        return pa.bool_()
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        if any(isinstance(v, float) for v in items):
            return pa.float64()
        lo, hi = min(items), max(items)
        if lo >= 0:
            return literal_type(hi)
        # supertype of the signed type of `lo` and the unsigned type of `hi` (as ClickHouse:
        # a signed type wide enough for both; UInt8 and Int8 give Int16)
        need = max(literal_type(lo).bit_width, 2 * literal_type(hi).bit_width if hi > 0 else 8)
        if need > 64:
            raise _err(f"there is no supertype for the items of the array {values!r}", node)
        return {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[need]
    raise _err("there is no supertype for the items of the array (numbers, strings and booleans mixed)", node)


def _tuple_items(e: Any) -> tuple | None:
    """The items of a tuple written in the query (``(a, b)``, ``tuple(a, b)``), else None."""
    if isinstance(e, A.TupleLiteral):
        return e.items
    if isinstance(e, A.FunctionCall) and e.name.lower() == TUPLE_FUNC and not e.distinct and not e.params:
        return e.args
    return None


def _typed_array_literal(a: BExpr, spec: Any, node: Any) -> BExpr:
    """An array literal passed as a row argument (``arrayJoin(['a', 'b'])``, ``length([1, 2])``)
    with its ClickHouse type; the binder leaves literals untyped until a use needs one."""
    if (isinstance(a, BConst) and isinstance(a.value, tuple) and pa.types.is_null(a.type)
            and not spec.const):
        return BConst(a.value, array_constant_type(a.value, node), a.nullable)
    return a


# ---------------------------------------------------------------------------
# the binder
# ---------------------------------------------------------------------------

class _PerRowCalls(BoundVisitor[frozenset]):
    """The per-row calls (rand(), generateUUIDv4()) of an expression, keyed as the
    evaluator shares their values (skipidx.expr.evaluate)."""

    def visit_column(self, e: BColumn) -> frozenset:
        return frozenset()

    def visit_const(self, e: BConst) -> frozenset:
        return frozenset()

    def visit_call(self, e: BCall, args: list[frozenset]) -> frozenset:
        fn = CATALOGUE.get(e.func)
        own = frozenset((repr((e.func, e.args)),)) if fn is not None and fn.per_row else frozenset()
        return own.union(*args)

    def visit_folded(self, e: BFolded, source: frozenset | None) -> frozenset:
        return source or frozenset()

    def visit_agg(self, e: BAgg, arg: frozenset | None) -> frozenset:
        return arg or frozenset()


_PER_ROW_CALLS = _PerRowCalls()


class Binder:
    """Binds expressions and SELECTs against one table's metadata (or none, for SELECT without FROM)."""

    def __init__(self, meta: Any | None) -> None:
        self.meta = meta
        self._columns: dict[str, Any] = {}
        if meta is not None:
            for c in meta.columns:
                self._columns[c.name] = c
        # SELECT-list aliases: name -> expression as written, and bound on first use
        self._alias_nodes: dict[str, A.Expr] = {}
        self._aliases: dict[str, BExpr] = {}
        self._expanding: list[str] = []    # aliases being bound (to tell self-reference and cycles)
        self._lambda_params: dict[str, BColumn] = {}   # the parameters of the lambdas being bound
        self._table_alias: str | None = None           # FROM t AS alias
        self.per_query = False             # a per-query value (now()) was folded in

    # -- names --------------------------------------------------------------
    def column(self, node: A.Column) -> BExpr:
        """A name: a SELECT-list alias first, then a table column (as ClickHouse, whose
        aliases take precedence over columns: ``SELECT a + 1 AS a ... WHERE a > 2``
        filters on ``a + 1``; inside the alias's own expression ``a`` is the column)."""
        if node.table is None and node.name in self._lambda_params:
            return self._lambda_params[node.name]      # a lambda's parameter hides any other name
        if node.table is not None and (self.meta is None or node.table not in (self.meta.name, self._table_alias)):
            raise _err(f"unknown table {node.table!r} in column reference {node.to_sql()}", node)
        if node.table is None:
            e = self._alias(node.name)
            if e is not None:
                return e
        c = self._columns.get(node.name)
        if c is None:
            where = f"table {self.meta.name!r}" if self.meta is not None else "a SELECT without FROM"
            known = ", ".join(self._columns) or "none"
            hint = did_you_mean(node.name, [*self._columns, *self._alias_nodes, *self._lambda_params])
            raise _err(f"unknown column {node.name!r} in {where}{hint}; columns: {known}", node)
        return self._table_column(c)

    @staticmethod
    def _table_column(c: Any) -> BColumn:
        ct = c.type
        return BColumn(c.name, ct.arrow_type, bool(ct.nullable), ct.name)

    def _alias(self, name: str) -> BExpr | None:
        """The bound expression of the SELECT-list alias `name` (None: no such alias,
        or `name` is used inside its own definition)."""
        if name in self._aliases:
            return self._aliases[name]
        node = self._alias_nodes.get(name)
        if node is None:
            return None
        if name in self._expanding:
            if self._expanding[-1] == name:
                return None   # `a + 1 AS a`: inside its own definition, `a` is the column
            # `a AS b, b AS a`: ClickHouse breaks such cycles per position in the
            # SELECT list; rather than a different answer, an error
            chain = " -> ".join(self._expanding[self._expanding.index(name):] + [name])
            raise _err(f"cyclic aliases: {chain}", node)
        self._expanding.append(name)
        try:
            # bound as in the SELECT list (aggregates allowed); each context checks
            # what it cannot hold (WHERE, GROUP BY, an aggregate's argument)
            e = self._expr(node, True)
        finally:
            self._expanding.pop()
        self._aliases[name] = e
        return e

    def _collect_aliases(self, s: A.Select) -> None:
        # WITH expr AS name: an alias the query may use, as a SELECT-list one (not output)
        with_items = [A.SelectItem(w.expr, w.name, pos=w.pos) for w in s.with_ if w.expr is not None]
        for it in with_items + list(s.items):
            if it.alias is None:
                continue
            prev = self._alias_nodes.get(it.alias)
            if prev is not None and prev != it.expr:
                raise _err(f"multiple expressions {prev.to_sql()} and {it.expr.to_sql()} for alias "
                           f"{it.alias!r}", it)
            self._alias_nodes[it.alias] = it.expr

    # -- expressions ----------------------------------------------------------
    def expr(self, node: A.Expr, allow_agg: bool = False) -> BExpr:
        e = self._expr(node, allow_agg)
        return e

    def _expr(self, n: A.Expr, agg: bool) -> BExpr:
        if isinstance(n, A.Literal):
            v = n.value
            if n.kind == "bool":
                return BConst(bool(v), pa.bool_())
            if n.kind == "string" and not _is_utf8(v):
                return BConst(v, pa.binary())   # String holds bytes: `SELECT '\xFF'`
            return BConst(v, literal_type(v), v is None)
        if isinstance(n, A.Column):
            return self.column(n)
        if isinstance(n, A.BoolOp):
            args = tuple(self._logical_arg(a, agg) for a in n.args)
            return self._fold_logic(BCall(n.op, args, _BOOL, any(a.nullable for a in args), n.to_sql()))
        if isinstance(n, A.UnaryOp):
            if n.op == "not":
                a = self._logical_arg(n.operand, agg)
                return self._fold_logic(BCall("not", (a,), _BOOL, a.nullable, n.to_sql()))
            return self._negate(self._expr(n.operand, agg), n)
        if isinstance(n, A.BinaryOp):
            left, right = self._expr(n.left, agg), self._expr(n.right, agg)
            fn = CATALOGUE.operator(n.op)
            if fn.rule == "comparison":
                return self.compare(fn.name, left, right, n)
            return self._arith(fn.name, left, right, n)
        if isinstance(n, A.Like):
            func = ("notILike" if n.negated else "ilike") if n.case_insensitive else \
                ("notLike" if n.negated else "like")
            return self._string_predicate(func, [self._expr(n.expr, agg), self._expr(n.pattern, agg)],
                                          n, [n.expr, n.pattern])
        if isinstance(n, A.InList) and _tuple_items(n.expr) is not None:
            return self._tuple_in(n, agg)
        if isinstance(n, A.InList):
            subject = self._expr(n.expr, agg)
            items = n.items
            if len(items) == 1 and isinstance(items[0], (A.TupleLiteral, A.ArrayLiteral)):
                items = items[0].items   # `x IN ((1, 2))` is `x IN (1, 2)`, as ClickHouse
            return self._in(subject, items, n.negated, n)
        if isinstance(n, A.IsNull):
            a = self._expr(n.expr, agg)
            if isinstance(a, BConst):
                return BConst(int((a.value is None) != n.negated), _BOOL)
            return BCall("isNotNull" if n.negated else "isNull", (a,), _BOOL, False, n.to_sql())
        if isinstance(n, A.Between):
            x = self._expr(n.expr, agg)
            lo, hi = self._expr(n.low, agg), self._expr(n.high, agg)
            if n.negated:
                parts = (self.compare("less", x, lo, n), self.compare("greater", x, hi, n))
                return self._fold_logic(BCall("or", parts, _BOOL, x.nullable, n.to_sql()))
            parts = (self.compare("greaterOrEquals", x, lo, n), self.compare("lessOrEquals", x, hi, n))
            return self._fold_logic(BCall("and", parts, _BOOL, x.nullable, n.to_sql()))
        if isinstance(n, A.FunctionCall):
            return self._call(n, agg)
        if isinstance(n, A.ScalarValue):
            return scalar_constant(n)
        if isinstance(n, A.WindowCall):
            # the engine computes window functions that are whole SELECT items (engine/window.py)
            raise _err("a window function (... OVER (...)) is only supported as a whole item of the SELECT list "
                       "of a query the database runs", n)
        if isinstance(n, A.Lambda):
            raise _err("a lambda (x -> ...) is only allowed as the first argument of arrayMap, arrayFilter, "
                       "arrayExists or arrayCount", n)
        if isinstance(n, A.ScalarSubquery):
            # the engine runs scalar subqueries before binding; elsewhere (a `where=` text) there is no engine
            raise _err("a scalar subquery (SELECT ...) is only supported in a statement run by the database", n)
        if isinstance(n, A.ArrayLiteral):
            return self._array(n.items, n, agg)
        if isinstance(n, A.TupleLiteral):
            raise _err("tuples are only supported as the list of IN", n)
        if isinstance(n, A.Star):
            raise _err("* is only allowed as a select item or in count(*)", n)
        raise _err(f"unsupported expression {n.to_sql()}", n)

    def _negate(self, inner: BExpr, n: Any) -> BExpr:
        if isinstance(inner, BConst) and isinstance(inner.value, (int, float)) \
                and not isinstance(inner.value, bool):
            return _negate_constant(inner)
        it = value_type(inner.type)
        if isinstance(inner, BConst) and inner.value is None:
            return BConst(None, pa.null(), True)
        if not is_numeric(it):
            raise _err(f"illegal type {ch_name(it)} of argument of function negate", n)
        # ClickHouse's negate, not `0 - x`: IntN stays IntN (wrapping: -(-128) of an Int8
        # is -128), UIntN widens to the signed type twice as wide, Float32 stays Float32,
        # and -(0.) is -0. (1 / -(f * 0) is -inf)
        return BCall("negate", (inner,), negate_result_type(it), inner.nullable, n.to_sql())

    def _logical_arg(self, n: A.Expr, agg: bool) -> BExpr:
        a = self._expr(n, agg)
        t = value_type(a.type)
        if isinstance(a, BConst) and a.value is None:
            return a
        if not (is_numeric(t) or pa.types.is_null(t)):
            raise _err(f"illegal type {ch_name(t)} of argument of a logical function (AND/OR/NOT): "
                       f"{n.to_sql()}", n)
        return a

    @staticmethod
    def _truth(e: BExpr) -> bool | None | str:
        """Constant truth of e: True/False, None for NULL, 'x' when not constant."""
        if isinstance(e, BConst):
            if e.value is None:
                return None
            return bool(e.value)
        return "x"

    def _fold_logic(self, e: BCall) -> BExpr:
        """Fold AND/OR/NOT over constants (Kleene), keeping non-constant operands."""
        if e.func == "not":
            t = self._truth(e.args[0])
            if t == "x":
                return e
            return _null_result() if t is None else BConst(int(not t), _BOOL)
        absorbing = e.func == "or"            # TRUE absorbs OR, FALSE absorbs AND
        keep: list[BExpr] = []
        saw_null = False
        for a in e.args:
            t = self._truth(a)
            if t == "x":
                keep.append(a)
            elif t is None:
                saw_null = True
            elif t == absorbing:
                return BConst(int(absorbing), _BOOL)
        if not keep:
            return BConst(None, _BOOL, True) if saw_null else BConst(int(not absorbing), _BOOL)
        if saw_null:
            keep.append(BConst(None, _BOOL, True))
        if len(keep) >= CHAIN_TO_IN_MIN:
            keep = _chain_to_in(e.func, keep)
        if len(keep) == 1:
            only = keep[0]
            if isinstance(only.type, pa.DataType) and is_numeric(value_type(only.type)) \
                    and not isinstance(only, (BCall, BFolded)):
                # `x AND 1` keeps ClickHouse's UInt8 truth of x: x != 0
                return self.compare("notEquals", only, BConst(0, pa.uint8()), None)
            return only
        return BCall(e.func, tuple(keep), _BOOL, e.nullable or saw_null, e.text)

    def _tuple_in(self, n: A.InList, agg: bool) -> BExpr:
        """``(a, b) [NOT] IN ((1, 'x'), (2, 'y'))``: true where some listed tuple equals the
        row's, component by component; a NULL component never matches (UInt8, never NULL,
        as ClickHouse). Bound as ``a IN (1, 2) AND b IN ('x', 'y') AND tupleIn(...)``: the
        per-component INs are implied by the exact test, so an index prunes on them soundly;
        the last atom (no index answers it) makes the answer exact."""
        subject = _tuple_items(n.expr)
        k = len(subject)
        items = n.items
        if len(items) == 1 and isinstance(items[0], A.ArrayLiteral):
            items = items[0].items          # IN [(1, 2), ...]
        if not all(_tuple_items(i) is not None for i in items):
            items = (A.TupleLiteral(items, pos=n.pos),)   # `(a, b) IN (1, 2)`: the one tuple (1, 2)
        rows = []
        for it in items:
            elems = _tuple_items(it)
            if len(elems) != k:
                raise _err(f"Incorrect size of tuple in set: {len(elems)} instead of {k}. "
                           f"(INCORRECT_ELEMENT_OF_SET)", it)
            rows.append(self._const_list(elems, it))
        parts = [self._expr(e, agg) for e in subject]
        cols: list[int] = []
        for j, p in enumerate(parts):
            if isinstance(p, BConst):
                # a constant component: the rows whose element equals it, NULLs never
                rows = [r for r in rows if p.value is not None and r[j] is not None and
                        self._compare_constants("equals", p, BConst(r[j], literal_type(r[j])), n).value]
            else:
                cols.append(j)
        kept = []
        for r in rows:
            out = []
            for j in cols:
                v = normalize_in_list(parts[j].type, (r[j],), n)
                if not v:
                    break               # NULL, or a value the column cannot hold: never matches
                out.append(v[0])
            else:
                kept.append(tuple(out))
        text = n.to_sql()
        if not cols or not kept:
            return BConst(int(bool(kept) != n.negated), _BOOL)
        kept = list(dict.fromkeys(kept))
        atoms = []
        for i, j in enumerate(cols):
            vals = tuple(dict.fromkeys(r[i] for r in kept))
            atoms.append(BCall("in", (parts[j], BConst(vals, value_type(parts[j].type))), _BOOL,
                               parts[j].nullable, ""))
        atoms.append(BCall("tupleIn", (BConst(tuple(kept), pa.null()), *(parts[j] for j in cols)), _BOOL, False,
                           ""))
        # never NULL: tupleIn is 0 wherever a component is NULL, and NULL AND 0 is 0
        e: BExpr = BCall("and", tuple(atoms), _BOOL, False, text)
        return BCall("not", (e,), _BOOL, False, text) if n.negated else e

    def _array(self, items: tuple, node: Any, agg: bool) -> BExpr:
        """``[a, b, ...]`` / ``array(a, b, ...)``: a constant array where every item is a
        constant (typed where a use needs it), else one array per row, of the items'
        least supertype (Nullable items where any item is), as ClickHouse types it."""
        bound = [self._expr(it, agg) for it in items]
        if all(isinstance(b, BConst) and not isinstance(b.value, tuple) for b in bound):
            return BConst(tuple(b.value for b in bound), pa.null())
        for b, it in zip(bound, items):
            if (isinstance(b, BConst) and isinstance(b.value, tuple)) or pa.types.is_list(value_type(b.type)):
                raise _err("nested arrays are not supported", it)
        typed = [b for b in bound if not (isinstance(b, BConst) and b.value is None)]
        try:
            t = least_supertype([b.type for b in typed])
        except SkipidxError as e:
            raise _err(f"{e.message} of the items of {node.to_sql()} (NO_COMMON_TYPE; ClickHouse makes a "
                       f"Variant here, which skipidx has not)", node) from None
        nullable = any(b.nullable for b in bound)
        args = tuple(_cast_to(b, t) for b in bound)
        # the first argument tells the kernel whether the items are Nullable (its result's type)
        return BCall("array", (BConst(int(nullable), pa.uint8()), *args),
                     pa.list_(pa.field("item", t, nullable=nullable)), False, node.to_sql())

    def _bind_array(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        if not n.args:
            return BConst((), pa.null())
        return self._array(n.args, n, agg)

    def _const_list(self, items: tuple, node: Any) -> tuple:
        out = []
        for it in items:
            c = self._expr(it, False)
            if not isinstance(c, BConst) or isinstance(c.value, tuple):
                raise _err(f"expected a constant, got {it.to_sql()}", it)
            out.append(c.value)
        return tuple(out)

    # -- comparisons ------------------------------------------------------
    def compare(self, func: str, left: BExpr, right: BExpr, node: Any) -> BExpr:
        text = node.to_sql() if node is not None and hasattr(node, "to_sql") else ""
        if isinstance(left, BConst) and not isinstance(right, BConst):
            left, right, func = right, left, _FLIP[func]
        if isinstance(left, BConst) and isinstance(right, BConst):
            return self._compare_constants(func, left, right, node)
        if isinstance(right, BConst):
            if isinstance(right.value, tuple):
                raise _err(f"cannot compare {ch_name(left.type)} with an array", node)
            if right.value is None:
                return _null_result()
            v = coerce_constant(right.value, left.type, node)
            r = normalize_comparison(func, left.type, v)
            if isinstance(r, bool):
                src = source_column(left)
                return BFolded(r, src if (src is not None and left.nullable) else None, text)
            f2, v2 = r
            # a Nullable constant (a scalar subquery's) makes the result Nullable, as in ClickHouse
            return BCall(f2, (left, BConst(v2, value_type(left.type))), _BOOL, left.nullable or right.nullable, text)
        lt, rt = value_type(left.type), value_type(right.type)
        if not _comparable(lt, rt):
            raise _err(f"illegal types of arguments ({ch_name(lt)}, {ch_name(rt)}) of function {func}: {text}",
                       node)
        return BCall(func, (left, right), _BOOL, left.nullable or right.nullable, text)

    def _compare_constants(self, func: str, a: BConst, b: BConst, node: Any) -> BExpr:
        if a.value is None or b.value is None:
            return _null_result()
        av, bv = a.value, b.value
        if isinstance(av, bool):
            av = int(av)
        if isinstance(bv, bool):
            bv = int(bv)
        if isinstance(av, _uuid.UUID) or isinstance(bv, _uuid.UUID):
            # as 16 bytes each, halves swapped: ClickHouse orders UUIDs by their last 8 bytes first
            av, bv = (x.bytes if isinstance(x, _uuid.UUID) else coerce_constant(x, pa.uuid(), node) for x in (av, bv))
            av, bv = av[8:] + av[:8], bv[8:] + bv[:8]
        # a DateTime compares with a number as its seconds since the epoch (now() > 0)
        if isinstance(av, _dt.datetime) and isinstance(bv, (int, float)):
            av = _epoch_seconds(av)
        elif isinstance(bv, _dt.datetime) and isinstance(av, (int, float)):
            bv = _epoch_seconds(bv)
        if type(av) is not type(bv) and not (isinstance(av, (int, float)) and isinstance(bv, (int, float))):
            if isinstance(av, bytes) and isinstance(bv, (int, float)):
                av = coerce_constant(av, literal_type(bv), node)
            elif isinstance(bv, bytes) and isinstance(av, (int, float)):
                bv = coerce_constant(bv, literal_type(av), node)
            else:
                raise _err(f"cannot compare {a.value!r} with {b.value!r}", node)
        ops = {"equals": av == bv, "notEquals": av != bv, "less": av < bv, "lessOrEquals": av <= bv,
               "greater": av > bv, "greaterOrEquals": av >= bv}
        return BConst(int(ops[func]), _BOOL, a.nullable or b.nullable)

    def _in(self, subject: BExpr, items: tuple, negated: bool, node: A.InList) -> BExpr:
        values = self._const_list(items, node)
        func = "notIn" if negated else "in"
        text = node.to_sql()
        if isinstance(subject, BConst):
            if subject.value is None:
                return _null_result()
            hit = any(self._compare_constants("equals", subject, BConst(v, literal_type(v)), node).value
                      for v in values if v is not None)
            return BConst(int(hit != negated), _BOOL)
        vals = normalize_in_list(subject.type, values, node)
        if not vals:
            src = source_column(subject)
            return BFolded(negated, src if (src is not None and subject.nullable) else None, text)
        return BCall(func, (subject, BConst(vals, value_type(subject.type))), _BOOL, subject.nullable, text)

    def _arith(self, func: str, left: BExpr, right: BExpr, node: Any) -> BExpr:
        # a constant keeps its type: `1 + 2 * 3` is plus(UInt8, UInt16) -> UInt32, as ClickHouse
        lt, rt = value_type(left.type), value_type(right.type)
        if pa.types.is_interval(rt) or pa.types.is_interval(lt):
            return self._date_interval(func, left, right, node)
        if any(isinstance(x, BConst) and x.value is None for x in (left, right)):
            return BConst(None, pa.null(), True)
        if func in ("plus", "minus") and _temporal(lt) and is_int(rt) or func == "plus" and is_int(lt) and _temporal(rt):
            return self._date_plus_int(func, left, right, node)
        if func == "minus" and _temporal(lt) and _temporal(rt) and (
                (pa.types.is_date(lt) and pa.types.is_date(rt))
                or (pa.types.is_timestamp(lt) and pa.types.is_timestamp(rt) and lt.unit == rt.unit == "s")):
            # Date - Date in days, DateTime - DateTime in seconds (Int32)
            fn = CATALOGUE["minusTemporal"]
            call = BCall(fn.name, (left, right), pa.int32(), left.nullable or right.nullable,
                         node.to_sql() if node else "")
            return _fold_call(fn, call, node=node) if isinstance(left, BConst) and isinstance(right, BConst) else call
        for side, t in ((left, lt), (right, rt)):
            if isinstance(side, BConst) and side.value is None:
                return BConst(None, pa.null(), True)
            if not is_numeric(t):
                raise _err(f"illegal types {ch_name(lt)} and {ch_name(rt)} of arguments of function {func}", node)
        if isinstance(left, BConst) and isinstance(right, BConst):
            try:
                v = arithmetic({"plus": "+", "minus": "-", "multiply": "*", "divide": "/", "modulo": "%"}[func],
                               pa.array([left.value], lt), pa.scalar(right.value, rt))
            except SkipidxError as e:
                raise _err(e.message, node) from None
            val = v[0].as_py()
            # Nullable stays Nullable: (SELECT count() FROM t) + 1 is Nullable(UInt64)
            return BConst(val, v.type, left.nullable or right.nullable)
        try:
            rtype = arithmetic_result_type({"plus": "+", "minus": "-", "multiply": "*", "divide": "/",
                                            "modulo": "%"}[func], lt, rt)
        except SkipidxError as e:
            raise _err(e.message, node) from None
        # `x % 0` is no bind error: ClickHouse raises "Division by zero" only when it computes
        # an integer row (none when WHERE keeps no row); a float x % 0 is nan
        return BCall(func, (left, right), rtype, left.nullable or right.nullable, node.to_sql() if node else "")

    def _date_plus_int(self, func: str, left: BExpr, right: BExpr, node: Any) -> BExpr:
        """Date +- n is n days, DateTime[64] +- n is n seconds (ClickHouse's addDays / addSeconds)."""
        if not _temporal(value_type(left.type)):
            left, right = right, left
        if isinstance(right, BConst) and right.value is None:
            return BConst(None, pa.null(), True)
        unit = "Days" if pa.types.is_date(value_type(left.type)) else "Seconds"
        fn = CATALOGUE[("add" if func == "plus" else "subtract") + unit]
        call = BCall(fn.name, (left, right), value_type(left.type), left.nullable or right.nullable,
                     node.to_sql() if node else "")
        if isinstance(left, BConst) and isinstance(right, BConst):
            return _fold_call(fn, call, node=node)
        return call

    def _date_interval(self, func: str, left: BExpr, right: BExpr, node: Any) -> BExpr:
        if pa.types.is_interval(left.type) and func == "plus":
            left, right = right, left
        if not pa.types.is_interval(right.type) or func not in ("plus", "minus"):
            raise _err(f"illegal arguments of function {func}: an interval can only be added to or "
                       f"subtracted from a Date or DateTime", node)
        t = value_type(left.type)
        if not (pa.types.is_date(t) or pa.types.is_timestamp(t)):
            raise _err(f"illegal type {ch_name(t)} of a date argument of an interval", node)
        unit, k = right.value
        k = k if func == "plus" else -k
        sub_day = unit in ("second", "minute", "hour", "millisecond", "microsecond", "nanosecond")
        rtype = pa.timestamp("s") if pa.types.is_date(t) and sub_day else t
        call = BCall("addInterval", (left, BConst((unit, k), right.type)), rtype, left.nullable,
                     node.to_sql() if node else "")
        if isinstance(left, BConst):
            return _fold_call(CATALOGUE["addInterval"], call, node=node)
        return call

    # -- functions --------------------------------------------------------
    def _call(self, n: A.FunctionCall, agg: bool) -> BExpr:
        fn = CATALOGUE.lookup(n.name)
        if fn is None and aggregate_combinator(n.name) is not None:
            if not agg:
                raise _err(f"aggregate function {n.name}() is not allowed here (only in the SELECT list, "
                           f"ORDER BY)", n)
            return self._aggregate_if(aggregate_combinator(n.name)[0].name, n)
        if fn is None:
            hint = did_you_mean(n.name, KNOWN_FUNCTIONS)
            # the close names only: the whole catalogue (hundreds of names) buries the caret
            raise _err(f"unknown function {n.name!r}{hint}", n)
        self.per_query |= fn.per_query
        if fn.rule == "aggregate":
            if not agg:
                raise _err(f"aggregate function {n.name}() is not allowed here (only in the SELECT list, "
                           f"ORDER BY)", n)
            return self._aggregate(fn.name, n)
        if n.distinct:
            raise _err(f"DISTINCT is only allowed in aggregate functions, not in {n.name}()", n)
        if any(isinstance(a, A.Star) for a in n.args):
            raise _err(f"* is not a valid argument of {n.name}()", n)
        return getattr(self, "_bind_" + fn.rule)(fn, n, agg)

    # One method per catalogue rule (skipidx.expr.catalogue.RULES).
    def _bind_search(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        args = [self._expr(a, agg) for a in n.args]
        return self._string_predicate(fn.name, args, n, list(n.args))

    def _bind_string_map(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        func = fn.name
        self._arity(n, 1)
        a = _typed_array_literal(self._expr(n.args[0], agg), fn.arg_type(0), n.args[0])
        if isinstance(a, BConst) and a.value is None:
            return _null_result()     # lower(NULL) is NULL (Nullable(Nothing))
        is_array = func == "length" and (pa.types.is_list(a.type) or pa.types.is_large_list(a.type))
        if not is_string(a.type) and not is_array:
            raise _err(f"illegal type {ch_name(a.type)} of argument of function {func}", n.args[0])
        if isinstance(a, BConst):
            return BConst(fn.fold(a.value), fn.result_type([pa.string()]))
        return BCall(func, (a,), fn.result_type([a.type]), a.nullable, n.to_sql())

    def _bind_comparison(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        self._arity(n, 2)
        return self.compare(fn.name, self._expr(n.args[0], agg), self._expr(n.args[1], agg), n)

    def _bind_not(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        self._arity(n, 1)
        a = self._logical_arg(n.args[0], agg)
        return self._fold_logic(BCall("not", (a,), _BOOL, a.nullable, n.to_sql()))

    def _bind_logical(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        if len(n.args) < 2:
            raise _err(f"function {fn.name} takes at least 2 arguments, got {len(n.args)}", n)
        args = tuple(self._logical_arg(a, agg) for a in n.args)
        return self._fold_logic(BCall(fn.name, args, _BOOL, any(a.nullable for a in args), n.to_sql()))

    def _bind_null_test(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        self._arity(n, 1)
        a = self._expr(n.args[0], agg)
        if isinstance(a, BConst):
            return BConst(int((a.value is None) == (fn.name == "isNull")), _BOOL)
        return BCall(fn.name, (a,), _BOOL, False, n.to_sql())

    def _bind_membership(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        self._arity(n, 2)
        negated = fn.name == "notIn"
        subject = self._expr(n.args[0], agg)
        lst = n.args[1]
        items = lst.items if isinstance(lst, (A.TupleLiteral, A.ArrayLiteral)) else (lst,)
        return self._in(subject, items, negated, A.InList(n.args[0], items, negated, pos=n.pos))

    def _bind_arithmetic(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        self._arity(n, 2)
        return self._arith(fn.name, self._expr(n.args[0], agg), self._expr(n.args[1], agg), n)

    def _bind_negate(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        self._arity(n, 1)
        return self._negate(self._expr(n.args[0], agg), n)

    def _bind_scalar(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        """The generic rule: arity and argument types from the entry, NULL in -> NULL,
        Nullable if any argument is, constant arguments fold."""
        lo, hi = fn.arity()
        k = len(n.args)
        if k < lo or (hi is not None and k > hi):
            want = f"{lo}" if hi == lo else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            raise _err(f"function {n.name} takes {want} argument{'s' if want != '1' else ''}, got {k}", n)
        args = tuple(_typed_array_literal(self._expr(a, agg), fn.arg_type(i), a) for i, a in enumerate(n.args))
        for i, (a, an) in enumerate(zip(args, n.args)):
            spec = fn.arg_type(i)
            if isinstance(a, BConst) and a.value is None and fn.nullable != "never":
                return _null_result()
            if spec.const and not isinstance(a, BConst):
                raise _err(f"argument {i + 1} of function {fn.name} must be a constant", an)
            if not spec.accepts(a.type):
                raise _err(f"illegal type {ch_name(a.type, a.nullable)} of argument {i + 1} of function "
                           f"{fn.name} ({spec.name} is required)", an)
            if fn.validate is not None and spec.const:
                try:
                    fn.validate(a.value)
                except SkipidxError as e:
                    raise _err(f"{fn.name}: {e.message}", an) from None
        nullable = fn.nullable == "always" or (fn.nullable == "propagate" and any(a.nullable for a in args))
        call = BCall(fn.name, args, fn.result_type([a.type for a in args]), nullable, n.to_sql())
        if all(isinstance(a, BConst) for a in args) and fn.folds:
            return _fold_call(fn, call, node=n)
        return call

    def _bind_typed(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        """A function whose result type depends on its constant arguments (CAST's type,
        toDateTime64's precision and zone): the entry's `typed` gives it."""
        self._check_arity(fn, n)
        args = tuple(_typed_array_literal(self._expr(a, agg), fn.arg_type(i), a) for i, a in enumerate(n.args))
        for i, (a, an) in enumerate(zip(args, n.args)):
            spec = fn.arg_type(i)
            if spec.const and not isinstance(a, BConst):
                raise _err(f"argument {i + 1} of function {fn.name} must be a constant", an)
            if not (isinstance(a, BConst) and a.value is None) and not spec.accepts(a.type):
                raise _err(f"illegal type {ch_name(a.type, a.nullable)} of argument {i + 1} of function "
                           f"{fn.name} ({spec.name} is required)", an)
        consts = [a.value if isinstance(a, BConst) else None for a in args]
        try:
            rtype, nullable = fn.typed([a.type for a in args], consts)
        except SkipidxError as e:
            raise _err(f"{fn.name}: {e.message}", n) from None
        if nullable is None:
            nullable = fn.nullable == "always" or any(a.nullable for a in args)
        if isinstance(args[0], BConst) and args[0].value is None:
            if not nullable:
                raise _err(f"{fn.name}: cannot convert NULL to a non-Nullable type", n.args[0])
            return BConst(None, rtype, True)
        call = BCall(fn.name, args, rtype, nullable, n.to_sql())
        if all(isinstance(a, BConst) for a in args) and fn.folds:
            return _fold_call(fn, call, node=n)
        return call

    def _bind_conditional(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        """if / multiIf / caseWithExpression / coalesce / ifNull / nullIf / assumeNotNull:
        the value arguments are cast to their least common type, as ClickHouse does."""
        self._check_arity(fn, n)
        if fn.name == "multiIf" and len(n.args) % 2 == 0:
            raise _err("multiIf takes an odd number of arguments (condition, value pairs and an else)", n)
        if fn.name == "caseWithExpression":
            if len(n.args) % 2 != 0:
                raise _err("CASE x WHEN ... needs WHEN/THEN pairs and an ELSE", n)
            subject, rest = n.args[0], n.args[1:]
            conds: list[A.Expr] = []
            for i in range(0, len(rest) - 1, 2):
                conds += [A.BinaryOp("=", subject, rest[i], pos=rest[i].pos), rest[i + 1]]
            node = A.FunctionCall("multiIf", (*conds, rest[-1]), pos=n.pos)
            e = self._bind_conditional(CATALOGUE["multiIf"], node, agg)
            return BCall(e.func, e.args, e.type, e.nullable, n.to_sql()) if isinstance(e, BCall) else e
        args = list(self._expr(a, agg) for a in n.args)
        if fn.name == "if":
            value_at = [1, 2]
        elif fn.name == "multiIf":
            value_at = list(range(1, len(args) - 1, 2)) + [len(args) - 1]
        elif fn.name in ("nullIf", "assumeNotNull"):
            value_at = [0]
        else:
            value_at = list(range(len(args)))
        values = [args[i] for i in value_at]
        try:
            common = least_supertype([v.type for v in values if not (isinstance(v, BConst) and v.value is None)])
        except SkipidxError as e:
            raise _err(f"{fn.name}: {e.message}", n) from None
        for i in value_at:
            args[i] = _cast_to(args[i], common)
        if fn.name in ("coalesce", "ifNull"):
            nullable = all(v.nullable or (isinstance(v, BConst) and v.value is None) for v in values)
        elif fn.name == "nullIf":
            nullable = True
        elif fn.name == "assumeNotNull":
            nullable = False
        else:
            nullable = any(v.nullable or (isinstance(v, BConst) and v.value is None) for v in values)
        if fn.name == "nullIf":
            args[1] = _cast_to(args[1], common) if not pa.types.is_null(args[1].type) else args[1]
        call = BCall(fn.name, tuple(args), common, nullable, n.to_sql())
        if all(isinstance(a, BConst) for a in args):
            return _fold_call(fn, call, node=n)
        return call

    def _bind_interval(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        """toInterval<Unit>(n): a constant (unit, n) that plus/minus of a date understand."""
        if fn.name == "addInterval":
            raise _err("addInterval is internal: write d + INTERVAL n unit", n)
        self._check_arity(fn, n)
        v = self._expr(n.args[0], agg)
        if not isinstance(v, BConst) or not isinstance(v.value, int) or isinstance(v.value, bool):
            raise _err(f"{fn.name}: the interval length must be an integer constant", n.args[0])
        return BConst((fn.name[len("toInterval"):].lower(), int(v.value)), pa.month_day_nano_interval())

    def _bind_type_of(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        """toTypeName(x): the ClickHouse type of x, a constant."""
        self._check_arity(fn, n)
        a = _typed_array_literal(self._expr(n.args[0], agg), fn.arg_type(0), n.args[0])
        name = BConst(type_name_of(a).encode(), pa.string())
        if contains_agg(a):
            # toTypeName(sum(x)) keeps the query an aggregate: one row per group, not per row
            return BCall(fn.name, (a, name), pa.string(), False, n.to_sql())
        return name

    def _bind_tuple_element(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        """tupleElement(t, N) / t.N over a tuple written in the query (``(a, b)``, ``tuple(a, b)``):
        its N-th element (negative N counts from the end), as ClickHouse."""
        self._check_arity(fn, n)
        t, k = n.args
        if isinstance(t, A.TupleLiteral):
            items = t.items
        elif isinstance(t, A.FunctionCall) and t.name.lower() == TUPLE_FUNC and not t.distinct:
            items = t.args
        else:
            a = self._expr(t, agg)
            raise _err(f"first argument for function tupleElement must be Tuple; actual {type_name_of(a)} "
                       "(skipidx has tuples only as written in the query)", t)
        c = self._expr(k, False)
        if not isinstance(c, BConst) or isinstance(c.value, bool) or not isinstance(c.value, int):
            raise _err("second argument to tupleElement must be a constant Int or UInt", k)
        i = c.value
        if not (1 <= i <= len(items) or -len(items) <= i <= -1):
            raise _err(f"Tuple doesn't have element with index '{i}' (ARGUMENT_OUT_OF_BOUND)", k)
        return self._expr(items[i - 1 if i > 0 else i], agg)

    def _bind_higher_order(self, fn: Function, n: A.FunctionCall, agg: bool) -> BExpr:
        """arrayMap / arrayFilter / arrayExists / arrayCount(x -> body, arr, ...): the body is
        bound with each parameter an element of its array (skipidx.expr.evaluate runs it over
        the arrays' elements at once)."""
        if not n.args or not isinstance(n.args[0], A.Lambda):
            raise _err(f"function {fn.name} takes a lambda as its first argument (x -> ...)", n)
        lam = n.args[0]
        if len(n.args) < 2:
            raise _err(f"function {fn.name} needs at least one array after the lambda", n)
        arrays = [_typed_array_literal(self._expr(a, agg), fn.arg_type(1), a) for a in n.args[1:]]
        for a, an in zip(arrays, n.args[1:]):
            if not pa.types.is_list(a.type):
                raise _err(f"illegal type {type_name_of(a)} of argument of function {fn.name}: an Array is "
                           "required", an)
        if len(lam.params) != len(arrays):
            raise _err(f"lambda of function {fn.name} has {len(lam.params)} parameters, but {len(arrays)} "
                       "arrays are passed", lam)
        from skipidx.expr.visitors import LAMBDA_PARAM_PREFIX

        saved = self._lambda_params
        depth = len(saved)
        params = {}
        for i, (name, a) in enumerate(zip(lam.params, arrays)):
            params[name] = BColumn(f"{LAMBDA_PARAM_PREFIX}{depth}.{i}.{name}", a.type.value_type,
                                   bool(a.type.value_field.nullable))
        self._lambda_params = {**saved, **params}
        try:
            body = self._expr(lam.body, False)
        finally:
            self._lambda_params = saved
        if contains_agg(body):
            raise _err("aggregate functions are not allowed inside a lambda", lam.body)
        names = BConst(tuple(c.name for c in params.values()), pa.null())
        bound = BCall("lambda", (names, body), pa.null(), False, lam.to_sql())
        if fn.name == "arrayMap":
            bt = pa.uint8() if pa.types.is_boolean(body.type) and not isinstance(body, BConst) else body.type
            rtype = nullable_nothing_list() if pa.types.is_null(bt) else \
                pa.list_(pa.field("item", bt, nullable=bool(body.nullable)))
        elif fn.name == "arrayFilter":
            rtype = arrays[0].type
        elif fn.name == "arrayExists":
            rtype = _BOOL
        else:
            rtype = pa.uint32()
        if fn.name != "arrayMap":
            t = value_type(body.type)
            if not (is_numeric(t) or pa.types.is_null(t)):
                raise _err(f"illegal type {type_name_of(body)} of the lambda of function {fn.name}: a number "
                           "(UInt8) is required", lam.body)
        call = BCall(fn.name, (bound, *arrays), rtype, False, n.to_sql())
        from skipidx.expr.visitors import all_column_names

        own = {c.name for c in params.values()}
        if all(isinstance(a, BConst) for a in arrays) and not (all_column_names(body) - own):
            try:
                v = _evaluate_one(call, {})
            except SkipidxError as e:
                raise _err(f"{fn.name}: {e.message}", n) from None
            return BConst(_const_value(v), rtype, False)
        return call

    def _check_arity(self, fn: Function, n: A.FunctionCall) -> None:
        lo, hi = fn.arity()
        k = len(n.args)
        if k < lo or (hi is not None and k > hi):
            want = f"{lo}" if hi == lo else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            raise _err(f"function {n.name} takes {want} argument{'s' if want != '1' else ''}, got {k}", n)

    @staticmethod
    def _arity(n: A.FunctionCall, k: int) -> None:
        if len(n.args) != k:
            raise _err(f"function {n.name} takes {k} argument{'s' if k != 1 else ''}, got {len(n.args)}", n)

    def _string_predicate(self, func: str, args: list[BExpr], node: Any, arg_nodes: list) -> BExpr:
        fn = CATALOGUE[func]
        kind = "array" if fn.args[1] is CONST_ARRAY_STRING else "tokens" if fn.args[1] is CONST_TOKENS else "string"
        if len(args) != 2:
            raise _err(f"function {func} takes 2 arguments, got {len(args)}", node)
        hay, needle = args
        if not is_string(hay.type) and not (isinstance(hay, BConst) and hay.value is None):
            raise _err(f"illegal type {ch_name(hay.type, hay.nullable)} of argument of function {func} "
                       f"(a String is required)", arg_nodes[0])
        if not isinstance(needle, BConst):
            raise _err(f"argument 2 of function {func} must be a constant", arg_nodes[1])
        v = needle.value
        text = node.to_sql()
        if kind == "tokens":
            # a String (split into its tokens) or an Array(String), possibly empty
            if isinstance(v, bytes):
                from skipidx.core.tokenizer_api import split_by_non_alpha

                v = tuple(split_by_non_alpha(v))
            elif not (isinstance(v, tuple) and all(isinstance(x, bytes) for x in v)):
                raise _err(f"argument 2 of function {func} must be a constant String or Array(String)",
                           arg_nodes[1])
        elif kind == "array":
            if not isinstance(v, tuple):
                raise _err(f"argument 2 of function {func} must be a constant Array(String)", arg_nodes[1])
            if not v:
                raise _err(f"illegal type Array(Nothing) of argument 2 of function {func}", arg_nodes[1])
            if not all(isinstance(x, bytes) for x in v):
                raise _err(f"argument 2 of function {func} must be an Array(String)", arg_nodes[1])
        else:
            if v is None:
                return _null_result()
            if not isinstance(v, bytes):
                raise _err(f"illegal type {ch_name(literal_type(v))} of argument 2 of function {func} "
                           f"(a String is required)", arg_nodes[1])
        # validate the constant now: ClickHouse raises these during analysis
        try:
            if fn.validate is not None:
                fn.validate(v)
        except SkipidxError as e:
            raise _err(f"{func}: {e.message}", arg_nodes[1]) from None
        if isinstance(hay, BConst):
            if hay.value is None:
                return _null_result()
            e = BCall(func, (BColumn("h", pa.binary()), BConst(v, pa.string())), _BOOL)
            res = _evaluate_one(e, {"h": pa.array([hay.value], pa.binary())})
            return BConst(None if res is None else int(res), _BOOL, res is None or fn.nullable == "always")
        return BCall(func, (hay, BConst(v, pa.string())), _BOOL, hay.nullable or fn.nullable == "always", text)

    def _aggregate_if(self, func: str, n: A.FunctionCall) -> BExpr:
        """``fIf(args..., cond)``: f over the rows where cond is true (NULL is not true)."""
        import dataclasses

        if not n.args:
            raise _err(f"aggregate function {n.name} needs a condition as its last argument", n)
        cond = self._expr(n.args[-1], False)
        if contains_agg(cond):
            raise _err(f"aggregate function inside another aggregate function: {n.to_sql()}", n.args[-1])
        ct = value_type(cond.type)
        if not (is_int(ct) or pa.types.is_null(ct)):
            raise _err(f"illegal type {ch_name(ct)} of the last argument of aggregate function {n.name}: "
                       "it must be a condition (UInt8/Bool)", n.args[-1])
        inner = self._aggregate(func, dataclasses.replace(n, args=n.args[:-1]))
        if not isinstance(inner, BAgg) or inner.distinct or (
                isinstance(inner.arg, BCall) and inner.arg.func == _TUPLE_FUNC):
            raise _err(f"{n.name} with DISTINCT or several arguments is not supported", n)
        return dataclasses.replace(inner, cond=cond, text=output_name(n))

    def _aggregate(self, func: str, n: A.FunctionCall) -> BExpr:
        text = output_name(n)
        if func in _PARAMETRIC or n.params:
            return self._parametric(func, n, text)
        if func == "argMin" or func == "argMax":
            if len(n.args) != 2 or any(isinstance(a, A.Star) for a in n.args):
                raise _err(f"aggregate function {func} takes 2 arguments (value, compared value), "
                           f"got {len(n.args)}", n)
            x, by = (self._expr(a, False) for a in n.args)
            if contains_agg(x) or contains_agg(by):
                raise _err(f"aggregate function inside another aggregate function: {n.to_sql()}", n)
            if pa.types.is_null(value_type(by.type)) or pa.types.is_null(value_type(x.type)):
                raise _err(f"illegal type Nullable(Nothing) of argument for aggregate function {func}", n)
            return BAgg(func, x, value_type(x.type), x.nullable or by.nullable, text, by=by)
        if func == "groupArray":
            if len(n.args) != 1:
                raise _err(f"function {n.name} takes 1 argument, got {len(n.args)}", n)
            x = self._expr(n.args[0], False)
            if contains_agg(x):
                raise _err(f"aggregate function inside another aggregate function: {n.to_sql()}", n)
            return BAgg(func, x, pa.list_(pa.field("item", value_type(x.type), nullable=False)), False, text)
        if func == "uniq":
            func = "uniqExact"      # exact: ClickHouse's uniq is approximate only above ~65k values
            inner = self._aggregate_plain(func, n, text)
            return inner
        return self._aggregate_plain(func, n, text)

    def _parametric(self, func: str, n: A.FunctionCall, text: str) -> BExpr:
        if func not in _PARAMETRIC:
            raise _err(f"aggregate function {n.name} takes no parameters", n)
        levels = []
        for p in n.params or ((A.Literal(0.5, "float", pos=n.pos),) if not func.startswith("quantiles") else ()):
            c = self._expr(p, False)
            if not isinstance(c, BConst) or isinstance(c.value, (bool, bytes, tuple)) or c.value is None:
                raise _err(f"the parameters of {n.name} must be numeric constants", p)
            if not 0 <= float(c.value) <= 1:
                raise _err("Quantile level is out of range [0..1]", p)
            levels.append(float(c.value))
        if func.startswith("quantiles") and not levels:
            raise _err(f"aggregate function {n.name} needs at least one level: {n.name}(0.5, ...)(x)", n)
        if not func.startswith("quantiles") and len(levels) != 1:
            raise _err(f"aggregate function {n.name} takes one level, got {len(levels)}", n)
        if len(n.args) != 1 or isinstance(n.args[0], A.Star):
            raise _err(f"function {n.name} takes 1 argument, got {len(n.args)}", n)
        x = self._expr(n.args[0], False)
        if contains_agg(x):
            raise _err(f"aggregate function inside another aggregate function: {n.to_sql()}", n)
        t = value_type(x.type)
        if not is_numeric(t) or pa.types.is_boolean(t):
            raise _err(f"illegal type {ch_name(t)} of argument for aggregate function {n.name}", n.args[0])
        exact = func.endswith("Exact")
        rt = t if exact else pa.float64()
        if func.startswith("quantiles"):
            return BAgg(func, x, pa.list_(pa.field("item", rt, nullable=False)), False, text, params=tuple(levels))
        return BAgg(func, x, rt, x.nullable, text, params=tuple(levels))

    def _aggregate_plain(self, func: str, n: A.FunctionCall, text: str) -> BExpr:
        if func == "count":
            if n.distinct:
                # ClickHouse: count(DISTINCT x) is countDistinct(x), computed by
                # count_distinct_implementation = uniqExact (NULLs not counted)
                func = "uniqExact"
            elif not n.args or (len(n.args) == 1 and isinstance(n.args[0], A.Star)):
                return BAgg("count", None, pa.uint64(), False, "count()")
            elif len(n.args) != 1:
                raise _err(f"count takes at most 1 argument, got {len(n.args)}", n)
        # f(DISTINCT x) is ClickHouse's -Distinct combinator: f over the distinct values
        # of x per group. min/max/uniqExact of the distinct values are those of all values;
        # sum/avg keep the flag (BAgg.distinct) and are computed over deduplicated values.
        if any(isinstance(a, A.Star) for a in n.args):
            raise _err(f"* is not supported as an argument of {n.name}() here", n)
        if func == "uniqExact" and len(n.args) > 1:
            # uniqExact(a, b) / count(DISTINCT a, b): distinct tuples; as ClickHouse's
            # -Null combinator, a row with a NULL in any argument is skipped
            args = tuple(self._expr(a, False) for a in n.args)
            for a, an in zip(args, n.args):
                if contains_agg(a):
                    raise _err(f"aggregate function inside another aggregate function: {n.to_sql()}", an)
            return BAgg("uniqExact", BCall(TUPLE_FUNC, args, pa.null(), any(a.nullable for a in args), text),
                        pa.uint64(), False, text)
        if len(n.args) != 1:
            raise _err(f"function {n.name} takes 1 argument, got {len(n.args)}", n)
        arg = self._expr(n.args[0], False)
        if contains_agg(arg):  # through an alias: SELECT count() AS n, sum(n)
            raise _err(f"aggregate function inside another aggregate function: {n.to_sql()}", n)
        t = value_type(arg.type)
        if func == "count":
            return BAgg("count", arg, pa.uint64(), False, text)
        if func == "uniqExact":
            return BAgg("uniqExact", arg, pa.uint64(), False, text)
        if func in ("sum", "avg"):
            if not is_numeric(t):
                raise _err(f"illegal type {ch_name(t)} of argument for aggregate function {func}", n.args[0])
            if func == "avg":
                return BAgg("avg", arg, pa.float64(), arg.nullable, text, n.distinct)
            st = pa.float64() if pa.types.is_floating(t) else (
                pa.int64() if pa.types.is_signed_integer(t) else pa.uint64())
            return BAgg("sum", arg, st, arg.nullable, text, n.distinct)
        if pa.types.is_null(t):
            raise _err(f"illegal type Nullable(Nothing) of argument for aggregate function {func}", n.args[0])
        return BAgg(func, arg, t, arg.nullable, text)

    # -- SELECT -----------------------------------------------------------
    def select(self, s: A.Select) -> BoundSelect:
        """Bind a SELECT: items, WHERE, GROUP BY, HAVING, ORDER BY, DISTINCT, LIMIT.

        Aliases of the SELECT list may be used anywhere in the query, before
        their definition too, and win over columns of the same name (ClickHouse).
        HAVING without aggregation (no GROUP BY, no aggregate anywhere) filters
        rows, so it joins the WHERE clause -- ClickHouse also turns it into the
        prewhere filter -- and prunes like it.
        """
        if s.limit_by is not None:
            # the engine runs LIMIT BY (engine/limit_by.py) over the query without it
            raise _err("LIMIT ... BY is not supported here (only in a SELECT the database runs)", s.limit_by)
        self._table_alias = s.table_alias
        self._collect_aliases(s)
        items: list[OutputItem] = []
        for it in s.items:
            if isinstance(it.expr, A.Star):
                if self.meta is None:
                    raise _err("SELECT * needs a FROM clause", it)
                for c in self.meta.columns:
                    items.append(OutputItem(c.name, self._table_column(c)))
                continue
            if it.alias is not None:
                e = self._alias(it.alias)
                assert e is not None
            else:
                e = self.expr(it.expr, allow_agg=True)
            if isinstance(e, BConst) and isinstance(e.value, tuple) and not pa.types.is_list(e.type):
                e = BConst(e.value, array_constant_type(e.value, it.expr), e.nullable)  # `SELECT [1, 2]`
            name = it.alias if it.alias is not None else output_name(it.expr)
            items.append(OutputItem(name, e))
        where = self._filter(s.where, "WHERE")
        if where is not None and contains_agg(where):
            raise _err("aggregate functions are not allowed in WHERE (use HAVING to filter by an aggregate)",
                       s.where)
        group_by = [self._positional(g, items, allow_agg=False) for g in s.group_by]
        for g, gn in zip(group_by, s.group_by):
            if contains_agg(g):
                raise _err("aggregate functions are not allowed in GROUP BY", gn)
        having = self._filter(s.having, "HAVING", allow_agg=True)
        order_by = [OrderItem(self._positional(o.expr, items, allow_agg=True), o.desc, bool(o.nulls_first))
                    for o in s.order_by]
        aggregate = bool(group_by) or any(contains_agg(i.expr) for i in items) or any(
            contains_agg(o.expr) for o in order_by) or (s.having is not None and contains_agg(having))
        if aggregate:
            self._check_grouping(items, order_by, group_by, having, s)
        elif s.having is not None:
            where = self._and_filters(where, having)
            having = None
        if where is not None and s.where is not None:
            shown = [i.expr for i in items] + group_by + [o.expr for o in order_by] + [having]
            shown_calls = frozenset().union(*(visit(e, _PER_ROW_CALLS) for e in shown if e is not None))
            if visit(where, _PER_ROW_CALLS) & shown_calls:
                # the scan evaluates the WHERE and the SELECT list apart: the rows kept would
                # show new random values, not the ones the WHERE tested
                raise _err("a per-row random value (rand(), generateUUIDv4(), ...) used both in WHERE and in "
                           "the SELECT list, GROUP BY or ORDER BY is not supported: filter on it in a "
                           "subquery, or use it in one place only", s.where)
        limit = s.limit
        offset = s.offset or 0
        return BoundSelect(self.meta.name if self.meta is not None else "", items, where, group_by, order_by,
                           limit, offset, aggregate, having=having, distinct=s.distinct,
                           per_query=self.per_query)

    def _filter(self, node: A.Expr | None, clause: str, allow_agg: bool = False) -> BExpr | None:
        """A bound WHERE/HAVING condition (None: none, or constant true)."""
        if node is None:
            return None
        e = self.expr(node, allow_agg=allow_agg)
        t = value_type(e.type)
        if not (is_numeric(t) or pa.types.is_null(t)):
            raise _err(f"invalid type for filter in {clause}: {ch_name(t)}", node)
        if isinstance(e, BConst) and e.value is not None and bool(e.value):
            return None
        return e

    def _and_filters(self, a: BExpr | None, b: BExpr | None) -> BExpr | None:
        if a is None or b is None:
            return b if a is None else a
        text = " AND ".join(f"({x.text})" if getattr(x, "text", "") else "(...)" for x in (a, b))
        # as the binder builds `a AND b`: evaluation reads a number operand as `x != 0`
        return self._fold_logic(BCall("and", (a, b), _BOOL, a.nullable or b.nullable, text))

    def _positional(self, node: A.Expr, items: list[OutputItem], allow_agg: bool) -> BExpr:
        if isinstance(node, A.Literal) and node.kind == "int":
            k = int(node.value)
            if not 1 <= k <= len(items):
                raise _err(f"positional argument {k} is out of range: the SELECT list has {len(items)} items",
                           node)
            return items[k - 1].expr
        if isinstance(node, A.Column) and node.table is None and node.name not in self._columns:
            for it in items:
                if it.name == node.name:
                    return it.expr
        return self.expr(node, allow_agg=allow_agg)

    def _check_grouping(self, items: list[OutputItem], order: list[OrderItem], group_by: list[BExpr],
                        having: BExpr | None, s: A.Select) -> None:
        keys = set(group_by)

        from skipidx.expr.visitors import LAMBDA_PARAM_PREFIX

        def check(e: BExpr, node: Any) -> None:
            if e in keys or isinstance(e, (BAgg, BConst)):
                return
            if isinstance(e, BColumn) and e.name.startswith(LAMBDA_PARAM_PREFIX):
                return      # a lambda's parameter: an element of its array, which is checked
            if isinstance(e, BColumn):
                raise _err(f"column {e.name!r} is not under an aggregate function and not in GROUP BY", node)
            if isinstance(e, BFolded):
                if e.source is not None:
                    check(e.source, node)
                return
            if isinstance(e, BCall):
                for a in e.args:
                    check(a, node)

        for it, node in zip(items, [i for i in s.items if not isinstance(i.expr, A.Star)] or s.items):
            check(it.expr, node)
        for o, node in zip(order, s.order_by):
            check(o.expr, node)
        if having is not None:
            check(having, s.having)


def scalar_constant(n: A.ScalarValue) -> BConst:
    """The constant of a scalar subquery's value, of its ClickHouse type."""
    from skipidx.core.types import parse_type

    if n.type_name == "Nullable(Nothing)":     # (SELECT NULL)
        return BConst(None, pa.null(), True)
    t = parse_type(n.type_name)
    at = t.arrow_type
    if n.value is None and pa.types.is_null(at):
        return BConst(None, pa.null(), True)
    if isinstance(n.value, bytes) and pa.types.is_string(at) and not _is_utf8(n.value):
        at = pa.binary()
    return BConst(n.value, at, bool(t.nullable) or n.value is None)


def _const_value(v: Any) -> Any:
    """A Python value from Arrow as the bound constants hold it (bytes, tuples)."""
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, list):
        return tuple(_const_value(x) for x in v)
    return v


def _evaluate_one(e: BExpr, columns: dict[str, pa.Array]) -> Any:
    """The value of `e` over one row (the binder folds constant calls with the kernels)."""
    table = pa.table(columns) if columns else pa.table({"_": pa.array([0], pa.uint8())})
    return evaluate(e, table)[0].as_py()


def _fold_call(fn: Function, call: BCall, node: Any = None) -> BConst:
    """A call whose arguments are all constants, as its constant value."""
    values = [a.value for a in call.args]   # type: ignore[union-attr]
    try:
        v = fn.fold(*values) if fn.fold is not None else _evaluate_one(call, {})
    except SkipidxError as e:
        raise _err(f"{fn.name}: {e.message}", node) from None
    if isinstance(v, str):
        v = v.encode("utf-8")   # String constants are bytes in the bound tree
    elif isinstance(v, bytes) and pa.types.is_string(call.type):
        # a String that is not UTF-8 (reverse('абв')): held as binary, as such a literal is
        return BConst(v, pa.binary(), call.nullable)
    # a folded Nullable call stays Nullable: toTypeName(toInt32OrNull('5')) is Nullable(Int32)
    return BConst(v, call.type, call.nullable or v is None)


def type_name_of(e: BExpr) -> str:
    """The ClickHouse type name of a bound expression (a column's declared name where it has one)."""
    if isinstance(e, BColumn) and e.ch_type:
        return e.ch_type
    t = e.type
    if pa.types.is_null(t):
        return "Nullable(Nothing)"
    if isinstance(e, (BCall, BFolded)) and pa.types.is_boolean(t):
        name = "UInt8"
    elif isinstance(e, BConst) and pa.types.is_boolean(t):
        name = "Bool"
    else:
        name = _ch_type_text(t)
    nullable = e.nullable
    return f"Nullable({name})" if nullable and not name.startswith(("Array(", "LowCardinality(")) else name


def _ch_type_text(t: pa.DataType) -> str:
    """ClickHouse's name of a value type; an array's items are Nullable where its item field is."""
    from skipidx.core.types import ch_type_of

    if pa.types.is_list(t) or pa.types.is_large_list(t):
        v = t.value_type
        if pa.types.is_null(v):
            return "Array(Nullable(Nothing))" if is_nullable_nothing_list(t) else "Array(Nothing)"
        inner = _ch_type_text(v)
        if t.value_field.nullable and not pa.types.is_nested(v):
            inner = f"Nullable({inner})"
        return f"Array({inner})"
    try:
        return ch_type_of(t)
    except SkipidxError:
        return str(t)


def least_supertype(types: list[pa.DataType]) -> pa.DataType:
    """ClickHouse's least common type of branches (getLeastSupertype), for the types skipidx has."""
    ts = [value_type(t) for t in types]
    if not ts:
        return pa.null()
    first = ts[0]
    if all(t == first for t in ts):
        return first
    if all(is_string(t) for t in ts):
        return pa.string()
    if all(pa.types.is_date(t) or pa.types.is_timestamp(t) for t in ts):
        stamps = [t for t in ts if pa.types.is_timestamp(t)]
        units = ["s", "ms", "us", "ns"]
        unit = max((t.unit for t in stamps), key=units.index)
        return pa.timestamp(unit, stamps[0].tz)
    if all(is_numeric(t) for t in ts):
        ints = [t for t in ts if is_int(t)]
        floats = [t for t in ts if pa.types.is_floating(t)]
        width = lambda t: 8 if pa.types.is_boolean(t) else t.bit_width  # noqa: E731
        if floats:
            if all(pa.types.is_float32(t) for t in floats) and all(width(t) <= 16 for t in ints):
                return pa.float32()
            if any(width(t) == 64 for t in ints):
                raise SkipidxError(f"there is no supertype for types {', '.join(ch_name(t) for t in ts)}")
            return pa.float64()
        unsigned = [t for t in ints if pa.types.is_unsigned_integer(t) or pa.types.is_boolean(t)]
        signed = [t for t in ints if pa.types.is_signed_integer(t)]
        if not signed:
            return {8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[max(map(width, unsigned))]
        need = max([width(t) for t in signed] + [2 * width(t) for t in unsigned])
        if need > 64:
            raise SkipidxError(f"there is no supertype for types {', '.join(ch_name(t) for t in ts)}")
        return {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[need]
    raise SkipidxError(f"there is no supertype for types {', '.join(ch_name(t) for t in ts)}")


def _cast_to(e: BExpr, t: pa.DataType) -> BExpr:
    """`e` converted to `t` (NULL constants just take the type)."""
    if isinstance(e, BConst) and e.value is None:
        return BConst(None, t, True)
    if value_type(e.type) == t or pa.types.is_null(t):
        return e
    from skipidx.core.types import ch_type_of

    target = ch_type_of(t)
    if isinstance(e, BConst):
        call = BCall("CAST", (e, BConst(target.encode(), pa.string())), t, e.nullable, "")
        return _fold_call(CATALOGUE["CAST"], call)
    return BCall("CAST", (e, BConst(target.encode(), pa.string())), t, e.nullable, e.text if hasattr(e, "text") else "")


def _comparable(a: pa.DataType, b: pa.DataType) -> bool:
    if is_numeric(a) and is_numeric(b):
        return True
    if is_string(a) and is_string(b):
        return True
    if pa.types.is_date(a) and pa.types.is_date(b):
        return True
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return True
    if pa.types.is_fixed_size_binary(a) and (pa.types.is_fixed_size_binary(b) or is_string(b)):
        return True
    if is_uuid(a) and is_uuid(b):
        return True
    return pa.types.is_null(a) or pa.types.is_null(b)


#: Parametric aggregates: name(levels...)(x).
_PARAMETRIC = ("quantile", "quantileExact", "quantiles", "quantilesExact")


def output_name(e: A.Expr) -> str:
    """The result column name ClickHouse gives the expression `e` (checked against chDB
    in tests/test_sql_clickhouse_parity.py).

    ClickHouse names a column by the *function form* of its expression, as its
    analyzer writes the function tree back:
    operators are their functions (``a + 1`` is ``plus(a, 1)``, ``NOT x`` is
    ``not(x)``, ``-x`` is ``negate(x)``, ``x IN (1, 2)`` is ``in(x, (1, 2))``,
    ``x BETWEEN l AND h`` is ``and(greaterOrEquals(x, l), lessOrEquals(x, h))``);
    a function keeps the name as written (``COUNT(*)`` is ``COUNT()``); an
    aggregate over DISTINCT takes the -Distinct combinator's name
    (``count(DISTINCT x)`` is ``countDistinct(x)``); identifiers are written
    bare and unqualified (```my col` + 1`` is ``plus(my col, 1)``); literals as
    ClickHouse prints them (``1.0`` is ``1.``, ``1e21`` is ``1e21``).
    """
    return _ch_name(e)



# ClickHouse's quoted-string writer (writeQuotedString / writeAnyEscapedString):
# only these characters are escaped; other control characters stay raw.
_NAME_STRING_ESCAPES = {"\\": "\\\\", "'": "\\'", "\b": "\\b", "\f": "\\f", "\n": "\\n",
                        "\r": "\\r", "\t": "\\t", "\0": "\\0"}
_NAME_STRING_RE = re.compile("[\\\\'\b\f\n\r\t\0]")


def _ch_string(value: bytes) -> str:
    text = value.decode("utf-8", "replace")
    return "'" + _NAME_STRING_RE.sub(lambda m: _NAME_STRING_ESCAPES[m.group()], text) + "'"


def ch_float_text(v: float) -> str:
    """A Float64 as ClickHouse writes it in a name: the shortest round-trip digits,
    fixed notation for decimal exponents -7 < e < 21 (``1e20`` is
    ``100000000000000000000.``), else ``1e-7``/``1.5e300``; a whole number in
    fixed notation ends with a dot (``1.``, ``-0.``)."""
    if math.isnan(v):
        return "nan"                     # ClickHouse prints -nan as nan too
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    sign = "-" if math.copysign(1.0, v) < 0 else ""
    digits, exp = _shortest_digits(abs(v))
    point = exp + len(digits)            # value = 0.DIGITS x 10^point
    if -6 <= point - 1 < 21:             # fixed notation
        if point <= 0:
            text = "0." + "0" * (-point) + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits)) + "."
        else:
            text = digits[:point] + "." + digits[point:]
    else:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        text = f"{mant}e{point - 1}"
    return sign + text


def _shortest_digits(v: float) -> tuple[str, int]:
    """(significant digits, exponent) with v == int(digits) * 10**exponent, shortest round trip."""
    if v == 0:
        return "0", 0
    r = repr(v)                          # Python's repr is the shortest round-trip form
    mant, _, e = r.partition("e")
    exp = int(e) if e else 0
    whole, _, frac = mant.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    exp -= len(frac)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    return stripped, exp


def _ch_name(e: A.Expr) -> str:
    if isinstance(e, A.Column):
        return e.name
    if isinstance(e, A.ScalarValue):
        return e.name
    if isinstance(e, A.Lambda):
        return f"lambda(tuple({', '.join(e.params)}), {_ch_name(e.body)})"
    if isinstance(e, A.Literal):
        k = e.kind
        if k == "string":
            return _ch_string(e.value)  # type: ignore[arg-type]
        if k == "null":
            return "NULL"
        if k == "bool":
            return "true" if e.value else "false"
        if k == "int":
            return str(int(e.value))  # type: ignore[arg-type]
        return ch_float_text(float(e.value))  # type: ignore[arg-type]
    if isinstance(e, A.ArrayLiteral):
        # a constant array is one value of one type: [1, 2.5] is Array(Float64), named [1., 2.5]
        floats = any(isinstance(i, A.Literal) and i.kind == "float" for i in e.items) and all(
            isinstance(i, A.Literal) and i.kind in ("int", "float", "null") for i in e.items)
        return "[" + ", ".join(ch_float_text(float(i.value)) if floats and i.kind == "int"  # type: ignore
                               else _ch_name(i) for i in e.items) + "]"
    if isinstance(e, A.TupleLiteral):
        return "(" + ", ".join(_ch_name(i) for i in e.items) + ")"
    if isinstance(e, A.Star):
        return "*"
    if isinstance(e, A.WindowCall):
        spec = []
        if e.partition_by:
            spec.append("PARTITION BY " + ", ".join(_ch_name(p) for p in e.partition_by))
        if e.order_by:
            spec.append("ORDER BY " + ", ".join(_ch_name(o.expr) + (" DESC" if o.desc else " ASC")
                                                for o in e.order_by))
        return f"{_ch_name(e.func)} OVER ({' '.join(spec)})"
    if isinstance(e, A.FunctionCall):
        args = [_ch_name(a) for a in e.args]
        if e.name.lower() == "tuple" and not e.distinct:
            return "(" + ", ".join(args) + ")"   # tuple(1, 2) is (1, 2)
        if e.name.lower() == "array" and not e.distinct and not e.params:
            # array(x, 1) is [x, 1]; its items keep their own names (array(1, 2.5) is [1, 2.5])
            return "[" + ", ".join(args) + "]"
        name = e.name + ("Distinct" if e.distinct else "")
        if e.params:        # quantile(0.5)(x)
            name += "(" + ", ".join(_ch_name(p) for p in e.params) + ")"
        fn = CATALOGUE.lookup(e.name)
        return fn.column_name(name, args) if fn is not None else f"{name}({', '.join(args)})"
    if isinstance(e, A.BinaryOp):
        return _call_name(CATALOGUE.operator(e.op).name, (e.left, e.right))
    if isinstance(e, A.BoolOp):
        return _call_name(e.op, e.args)
    if isinstance(e, A.UnaryOp):
        return _call_name("not" if e.op == "not" else "negate", (e.operand,))
    if isinstance(e, A.Like):
        func = ("notILike" if e.negated else "ilike") if e.case_insensitive else ("notLike" if e.negated else "like")
        return _call_name(func, (e.expr, e.pattern))
    if isinstance(e, A.InList):
        # one item is written alone (`in(x, 1)`), several as a tuple (`in(x, (1, 2))`)
        lst = _ch_name(e.items[0]) if len(e.items) == 1 else "(" + ", ".join(_ch_name(i) for i in e.items) + ")"
        return f"{'notIn' if e.negated else 'in'}({_ch_name(e.expr)}, {lst})"
    if isinstance(e, A.IsNull):
        return _call_name("isNotNull" if e.negated else "isNull", (e.expr,))
    if isinstance(e, A.Between):
        x, lo, hi = _ch_name(e.expr), _ch_name(e.low), _ch_name(e.high)
        if e.negated:
            return f"or(less({x}, {lo}), greater({x}, {hi}))"
        return f"and(greaterOrEquals({x}, {lo}), lessOrEquals({x}, {hi}))"
    return e.to_sql()


def _call_name(name: str, args: tuple) -> str:
    return f"{name}({', '.join(_ch_name(a) for a in args)})"


def bind_select(meta: Any | None, select: A.Select) -> BoundSelect:
    """Bind a parsed SELECT against a table's metadata."""
    return Binder(meta).select(select)


def bind_where(meta: Any, where: A.Expr) -> BExpr | None:
    """Bind a WHERE expression alone (e.g. the Spark source's ``where`` option)."""
    return Binder(meta)._filter(where, "WHERE")


#: ClickHouse's error code of a LIMIT / OFFSET that is no non-negative integer constant
INVALID_LIMIT_EXPRESSION = 440


def resolve_limits(stmt: Any) -> Any:
    """`stmt` with every LIMIT / OFFSET (LIMIT BY's too) written as a constant expression
    (``WITH 2 AS k ... LIMIT k``, ``LIMIT 1 + 1``) folded to its int, as ClickHouse
    folds it before running the query (the same object where there is none)."""
    import dataclasses

    if isinstance(stmt, (A.Literal, A.Column)):
        return stmt
    if isinstance(stmt, tuple):
        items = tuple(resolve_limits(x) for x in stmt)
        return stmt if all(a is b for a, b in zip(items, stmt)) else items
    if not (isinstance(stmt, A.Node) and dataclasses.is_dataclass(stmt)):
        return stmt
    changes: dict[str, Any] = {}
    for f in A.node_fields(type(stmt)):
        v = getattr(stmt, f)
        if isinstance(v, (A.Node, tuple)) and not (isinstance(stmt, A.Select) and f in ("limit", "offset")):
            nv = resolve_limits(v)
            if nv is not v:
                changes[f] = nv
    if isinstance(stmt, A.Select):
        for f in ("limit", "offset"):
            v = getattr(stmt, f)
            if _foldable_limit(v):
                changes[f] = _limit_constant(v, stmt.with_)
        lb = changes.get("limit_by", stmt.limit_by)
        if lb is not None and (_foldable_limit(lb.limit) or _foldable_limit(lb.offset)):
            changes["limit_by"] = dataclasses.replace(
                lb, limit=_limit_constant(lb.limit, stmt.with_) if _foldable_limit(lb.limit) else lb.limit,
                offset=_limit_constant(lb.offset, stmt.with_) if _foldable_limit(lb.offset) else lb.offset)
    return dataclasses.replace(stmt, **changes) if changes else stmt


def _foldable_limit(v: Any) -> bool:
    # a scalar subquery waits until the engine has run it (then it is a ScalarValue)
    return isinstance(v, A.Node) and not isinstance(v, A.Param) and not _holds_subquery(v)


def _holds_subquery(node: Any) -> bool:
    if isinstance(node, A.ScalarSubquery):
        return True
    if isinstance(node, tuple):
        return any(_holds_subquery(x) for x in node)
    if isinstance(node, A.Node):
        return any(_holds_subquery(getattr(node, f)) for f in A.node_fields(type(node)))
    return False


def _limit_constant(node: A.Expr, with_: tuple) -> int:
    """The non-negative int of the LIMIT / OFFSET expression `node` (WITH aliases visible)."""
    b = Binder(None)
    b._alias_nodes = {w.name: w.expr for w in with_ if w.expr is not None}
    code = " (INVALID_LIMIT_EXPRESSION)"
    try:
        e = b.expr(node)
    except BindError:
        e = None
    if not isinstance(e, BConst) or e.value is None or isinstance(e.value, (bytes, str, tuple)) \
            or not isinstance(e.value, (int, float)):
        raise _err(f"LIMIT expression must be constant with numeric type. Actual: {node.to_sql()}.{code}", node)
    v = e.value
    if isinstance(v, float):
        if not math.isfinite(v) or v != int(v):
            raise _err(f"The value {ch_float_text(v)} of LIMIT expression is not representable as UInt64 or "
                       f"Int64 or Float64 in the range (0, 1).{code}", node)
        v = int(v)
    if v < 0:
        # ClickHouse reads a negative LIMIT as "the last n rows"; skipidx has no such step
        raise _err(f"a negative LIMIT / OFFSET ({node.to_sql()}) is not supported", node)
    return int(v)
