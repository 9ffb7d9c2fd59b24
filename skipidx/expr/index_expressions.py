"""Index expressions: the function an index applies to its column before tokenizing.

``INDEX i lower(msg) TYPE tokenbf_v1(...)`` indexes ``lower(msg)``. The store
applies the expression to a whole part's column when it builds the index, and
the planner applies the same function to query constants
(``hasTokenCaseInsensitive``); both go through :func:`get_expression` so they
cannot disagree.

Which functions may be index expressions is a fact of the function catalogue
(``Function.index_expression``, today ``lower``); the column form is the
catalogue kernel, applied to the elements of Array and FixedString columns
too, and the constant form is its fold. ``None`` is the bare column. An
index on any other deterministic expression (``INDEX i id * 2 ...``) is
evaluated by :func:`evaluate_index_expression` with the binder and evaluator.
"""
from __future__ import annotations

from skipidx.core.dataclass_codes import dataclass
from typing import Any, Callable, Union

import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.expr.catalogue import CATALOGUE, Function

ArrayLike = Union[pa.Array, pa.ChunkedArray]


def _on_elements(fn: Function) -> Callable[[ArrayLike], ArrayLike]:
    """The catalogue kernel of `fn` over a whole column: chunk by chunk, over the elements
    of a list column and the values of a FixedString; same type and shape out."""
    kernel = fn.kernel
    assert kernel is not None

    def apply(values: ArrayLike) -> ArrayLike:
        if isinstance(values, pa.ChunkedArray):
            return pa.chunked_array([apply(c) for c in values.chunks], type=values.type)
        if not isinstance(values, pa.Array):
            raise SkipidxError(f"{fn.name}() expects a pyarrow Array, got {type(values).__name__}")
        t = values.type
        if pa.types.is_null(t):
            return values
        if pa.types.is_fixed_size_binary(t):
            return apply(values.cast(pa.binary())).cast(t)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
            offs = values.offsets.to_numpy()
            o0, o1 = int(offs[0]), int(offs[-1])
            child = apply(values.values.slice(o0, o1 - o0))
            mask = values.is_null() if values.null_count else None
            # fresh (re-based) offsets: pyarrow takes no null mask together with sliced offsets
            return cls.from_arrays(pa.array(offs - offs.dtype.type(o0)), child, mask=mask)
        return kernel(values)

    return apply


def _on_constants(fn: Function) -> Callable[[Any], Any]:
    """The catalogue fold of `fn` over one constant: bytes, str (as its UTF-8), a tuple of
    them (an IN list); None stays None."""
    fold = fn.fold
    assert fold is not None

    def apply(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray)):
            return fold(bytes(value))
        if isinstance(value, str):
            return fold(value.encode("utf-8")).decode("utf-8")
        if isinstance(value, (tuple, list)):
            return type(value)(apply(v) for v in value)
        raise SkipidxError(f"{fn.name}() needs a String argument, got {type(value).__name__}")

    return apply


@dataclass(frozen=True)
class Expression:
    """One index-expression function: whole-column and constant forms."""

    name: str | None
    apply: Callable[[ArrayLike], ArrayLike]
    apply_scalar: Callable[[Any], Any]

    def sql(self, column: str) -> str:
        """How the expression is written in SQL (``lower(msg)`` or ``msg``)."""
        return f"{self.name}({column})" if self.name else column


def _identity(x: Any) -> Any:
    return x


_BARE = Expression(None, _identity, _identity)


def get_expression(name: str | None) -> Expression:
    """The index expression `name` (``None`` = the bare column); SkipidxError if the catalogue
    does not declare it an index expression."""
    if name is None:
        return _BARE
    fn = CATALOGUE.lookup(name) if isinstance(name, str) else None
    if fn is None or not fn.index_expression:
        known = ", ".join(sorted(CATALOGUE.index_expressions()))
        raise SkipidxError(f"unknown index expression function {name!r}; known: {known} (or the bare column)")
    return Expression(fn.name, _on_elements(fn), _on_constants(fn))


def ascii_lower(values: ArrayLike) -> ArrayLike:
    """ClickHouse's ``lower`` over a whole column (ASCII only); same type and shape out."""
    return get_expression("lower").apply(values)


def ascii_lower_scalar(value: Any) -> Any:
    """``lower`` of one constant: bytes and str fold ASCII only; None stays None."""
    return get_expression("lower").apply_scalar(value)


def evaluate_index_expression(sql: str, table: Any, meta: Any) -> Any:
    """The values of an expression index (``id * 2``) over `table`'s rows, bound and
    evaluated as a SELECT would."""
    from skipidx.expr.binder import Binder
    from skipidx.expr.evaluate import evaluate
    from skipidx.sql.parser import parse_expression

    v = evaluate(Binder(meta).expr(parse_expression(sql)), table)
    if isinstance(v, pa.Scalar):
        v = pa.array([v.as_py()] * table.num_rows, v.type)
    return v


def apply_expression(name: str | None, values: ArrayLike) -> ArrayLike:
    """Evaluate the index expression `name` over a whole column."""
    return get_expression(name).apply(values)
