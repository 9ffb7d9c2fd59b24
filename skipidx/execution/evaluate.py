"""Exact evaluation of bound expressions over an Arrow table (the rows a scan read).

Every function is :mod:`skipidx.execution.functions` (ClickHouse semantics,
checked against chDB); this module only walks the bound tree. Results are
Arrow arrays of the table's length; boolean results are three-valued (NULL
where ClickHouse gives NULL), and :func:`where_mask` turns the WHERE result
into the row filter (a row passes iff its value is true).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skipidx.errors import SkipidxError
from skipidx.execution import functions as F
from skipidx.planner.bound import BAgg, BCall, BColumn, BConst, BExpr, BFolded

_CMP = {"equals": "=", "notEquals": "!=", "less": "<", "lessOrEquals": "<=",
        "greater": ">", "greaterOrEquals": ">="}
_ARITH = {"plus": "+", "minus": "-", "multiply": "*", "divide": "/", "modulo": "%"}


def _plain(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    return a


def _const_array(value: Any, typ: pa.DataType, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, typ if not pa.types.is_null(typ) else pa.bool_())
    if pa.types.is_boolean(typ):
        return pa.array(np.full(n, bool(value)))
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        return pa.array(np.full(n, value, dtype=typ.to_pandas_dtype()), typ)
    return pa.repeat(pa.scalar(value, typ), n)


def _as_bool(a: pa.Array) -> pa.Array:
    """A logical operand: UInt8-like numbers are true iff non-zero (NULL stays NULL)."""
    t = a.type
    if pa.types.is_boolean(t):
        return a
    if pa.types.is_null(t):
        return pa.nulls(len(a), pa.bool_())
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pc.not_equal(a, pa.scalar(0, t))
    raise SkipidxError(f"Illegal type {t} of argument of a logical function")


def evaluate(e: BExpr, table: pa.Table) -> pa.Array:
    """The value of `e` for every row of `table` (an Array of ``table.num_rows``)."""
    n = table.num_rows
    if isinstance(e, BColumn):
        return _plain(table.column(e.name))
    if isinstance(e, BConst):
        return _const_array(e.value, e.type, n)
    if isinstance(e, BFolded):
        out = pa.array(np.full(n, e.value))
        if e.source is not None and e.source.nullable:
            src = _plain(table.column(e.source.name))
            if src.null_count:
                out = pc.if_else(src.is_valid(), out, pa.scalar(None, pa.bool_()))
        return out
    if isinstance(e, BAgg):
        raise AssertionError("aggregates are computed by skipidx.execution.select, not evaluated per row")
    if not isinstance(e, BCall):
        raise AssertionError(f"unexpected bound node {e!r}")
    f = e.func
    if f in ("and", "or"):
        # Kleene logic over all operands; no short-circuit is needed for
        # correctness: every constant argument was validated at bind time.
        vals = [_as_bool(evaluate(a, table)) for a in e.args]
        return F.and_(*vals) if f == "and" else F.or_(*vals)
    if f == "not":
        return F.not_(_as_bool(evaluate(e.args[0], table)))
    args = e.args
    if f in _CMP:
        left = evaluate(args[0], table)
        r = args[1]
        right = r.value if isinstance(r, BConst) else evaluate(r, table)
        return F.compare(_CMP[f], left, right)
    if f in ("in", "notIn"):
        return F.is_in(evaluate(args[0], table), args[1].value, negated=(f == "notIn"))
    if f == "isNull":
        return F.is_null(evaluate(args[0], table))
    if f == "isNotNull":
        return F.is_not_null(evaluate(args[0], table))
    if f in ("like", "notLike", "ilike", "notILike"):
        return F.like(evaluate(args[0], table), args[1].value, negated=f in ("notLike", "notILike"),
                      case_insensitive=f in ("ilike", "notILike"))
    if f == "hasToken":
        return F.has_token(evaluate(args[0], table), args[1].value)
    if f == "hasTokenCaseInsensitive":
        return F.has_token_case_insensitive(evaluate(args[0], table), args[1].value)
    if f == "hasTokenOrNull":
        return F.has_token_or_null(evaluate(args[0], table), args[1].value)
    if f == "startsWith":
        return F.starts_with(evaluate(args[0], table), args[1].value)
    if f == "endsWith":
        return F.ends_with(evaluate(args[0], table), args[1].value)
    if f == "multiSearchAny":
        return F.multi_search_any(evaluate(args[0], table), args[1].value)
    if f == "match":
        return F.match(evaluate(args[0], table), args[1].value)
    if f == "lower":
        return F.lower(evaluate(args[0], table))
    if f == "upper":
        return F.upper(evaluate(args[0], table))
    if f == "length":
        return F.length(evaluate(args[0], table))
    if f in _ARITH:
        a, b = args
        left = a.value if isinstance(a, BConst) else evaluate(a, table)
        right = b.value if isinstance(b, BConst) else evaluate(b, table)
        return _plain(F.arithmetic(_ARITH[f], left, right))
    raise AssertionError(f"no evaluator for bound function {f!r}")


def where_mask(e: BExpr | None, table: pa.Table) -> pa.Array | None:
    """The row filter of a WHERE expression (None: every row passes)."""
    if e is None:
        return None
    if isinstance(e, BConst) and e.value is not None and e.value:
        return None
    return _plain(F.where_mask(evaluate(e, table)))
