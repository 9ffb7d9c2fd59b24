"""Index expressions: the function an index applies to its column before tokenizing.

``INDEX i lower(msg) TYPE tokenbf_v1(...)`` indexes ``lower(msg)``. The store
applies the expression to a whole part's column when it builds the index, and
the planner applies the same function to query constants
(``hasTokenCaseInsensitive``); both go through this registry so they cannot
disagree.

Registered functions (``None`` = the bare column):

* ``lower`` — ClickHouse's ``lower``: ASCII ``A-Z`` -> ``a-z``, every other
  byte unchanged (so UTF-8 text stays valid and ``É`` stays ``É``; that is
  ``lowerUTF8``). Works on string, binary (large, view, fixed-size), dictionary
  (``LowCardinality``) and list-of-string arrays, sliced or chunked, in one
  compiled pass over the values buffer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from skipidx.core.errors import SkipidxError

ArrayLike = Union[pa.Array, pa.ChunkedArray]


@njit(cache=True)
def _ascii_lower_kernel(data):
    out = np.empty_like(data)
    for i in range(data.shape[0]):
        c = data[i]
        out[i] = c + 32 if 65 <= c <= 90 else c
    return out


def _fresh_validity(arr: pa.Array) -> pa.Buffer | None:
    """The validity bitmap of `arr` re-based to bit 0 (None when there are no nulls)."""
    if arr.null_count == 0:
        return None
    v = pc.is_valid(arr)
    if v.offset != 0:  # pragma: no cover - pyarrow returns fresh, unsliced results
        v = pa.concat_arrays([v])
    return v.buffers()[1]


def _lower_flat(arr: pa.Array) -> pa.Array:
    t = arr.type
    n = len(arr)
    bufs = arr.buffers()
    if pa.types.is_fixed_size_binary(t):
        w = t.byte_width
        data = np.frombuffer(bufs[1], dtype=np.uint8)[arr.offset * w:(arr.offset + n) * w] \
            if bufs[1] is not None else np.empty(0, np.uint8)
        return pa.Array.from_buffers(t, n, [_fresh_validity(arr), pa.py_buffer(_ascii_lower_kernel(data))],
                                     null_count=arr.null_count)
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    odt = np.int64 if large else np.int32
    if n == 0:
        return arr
    offsets = np.frombuffer(bufs[1], dtype=odt)[arr.offset:arr.offset + n + 1]
    o0, o1 = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(bufs[2], dtype=np.uint8)[o0:o1] if bufs[2] is not None else np.empty(0, np.uint8)
    new_offsets = offsets - odt(o0) if o0 else offsets
    return pa.Array.from_buffers(
        t, n, [_fresh_validity(arr), pa.py_buffer(np.ascontiguousarray(new_offsets)),
               pa.py_buffer(_ascii_lower_kernel(data))],
        null_count=arr.null_count)


def ascii_lower(values: ArrayLike) -> ArrayLike:
    """ClickHouse's ``lower`` over a whole column (ASCII only); same type and shape out."""
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([ascii_lower(c) for c in values.chunks], type=values.type)
    if not isinstance(values, pa.Array):
        raise SkipidxError(f"lower() expects a pyarrow Array, got {type(values).__name__}")
    t = values.type
    if pa.types.is_null(t):
        return values
    if (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)):
        return _lower_flat(values)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        big = pa.large_string() if pa.types.is_string_view(t) else pa.large_binary()
        return _lower_flat(values.cast(big)).cast(t)
    if pa.types.is_dictionary(t):
        return pa.DictionaryArray.from_arrays(values.indices, ascii_lower(values.dictionary))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        offs = values.offsets.to_numpy()
        o0, o1 = int(offs[0]), int(offs[-1])
        child = ascii_lower(values.values.slice(o0, o1 - o0))
        mask = values.is_null() if values.null_count else None
        # fresh (re-based) offsets: pyarrow takes no null mask together with sliced offsets
        return cls.from_arrays(pa.array(offs - offs.dtype.type(o0)), child, mask=mask)
    raise SkipidxError(f"lower() needs a String argument, got {t}")


def ascii_lower_scalar(value: Any) -> Any:
    """``lower`` of one constant: bytes and str fold ASCII only; None stays None."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).lower()  # bytes.lower() folds A-Z only
    if isinstance(value, str):
        return value.encode("utf-8").lower().decode("utf-8")
    if isinstance(value, (tuple, list)):
        return type(value)(ascii_lower_scalar(v) for v in value)
    raise SkipidxError(f"lower() needs a String argument, got {type(value).__name__}")


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


EXPRESSIONS: dict[str | None, Expression] = {
    None: Expression(None, _identity, _identity),
    "lower": Expression("lower", ascii_lower, ascii_lower_scalar),
}


#: Evaluates an index on an arbitrary expression over a table's rows:
#: ``fn(expression_sql, table, table_meta) -> pyarrow Array``. The binder and the
#: kernels live above this layer; the engine registers them here on import.
_EXPRESSION_EVALUATOR: list = []


def register_expression_evaluator(fn: Callable[[str, Any, Any], Any]) -> None:
    _EXPRESSION_EVALUATOR[:] = [fn]


def evaluate_index_expression(sql: str, table: Any, meta: Any) -> Any:
    """The values of an expression index (``id * 2``) over `table`'s rows."""
    if not _EXPRESSION_EVALUATOR:
        import importlib

        importlib.import_module("skipidx.engine")      # registers the evaluator
    return _EXPRESSION_EVALUATOR[0](sql, table, meta)


def get_expression(name: str | None) -> Expression:
    """The registered expression `name` (``None`` = the bare column); SkipidxError if unknown."""
    key = name.lower() if isinstance(name, str) else name
    if key not in EXPRESSIONS:
        known = ", ".join(sorted(k for k in EXPRESSIONS if k))
        raise SkipidxError(f"unknown index expression function {name!r}; known: {known} (or the bare column)")
    return EXPRESSIONS[key]


def apply_expression(name: str | None, values: ArrayLike) -> ArrayLike:
    """Evaluate the index expression `name` over a whole column."""
    return get_expression(name).apply(values)
