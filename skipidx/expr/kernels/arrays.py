"""Array kernels: element access (ClickHouse's ``arrayElement``, ``arr[i]``)."""
from __future__ import annotations

import datetime
import decimal
from typing import Any

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.expr.kernels._arrow import ArrayLike

__all__ = ["array_element"]


def _plain(a: ArrayLike) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    return a


def array_element(arr: ArrayLike, index: Any) -> pa.Array:
    """``arr[index]`` row by row: 1-based, negative counts from the end; an index out of
    range (0 included) gives the element type's default (NULL for a Nullable element),
    as ClickHouse does; a NULL array or index gives NULL."""
    arr = _plain(arr)
    n = len(arr)
    if isinstance(index, (pa.Array, pa.ChunkedArray)):
        idx_arr = _plain(index)
        idx_null = idx_arr.is_null().to_numpy(zero_copy_only=False) if idx_arr.null_count else None
        idx = _as_int64(idx_arr.fill_null(0))
    else:
        idx_null = None
        idx = np.full(n, _clip_int(index), dtype=np.int64)
    offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    starts, lengths = offsets[:-1], np.diff(offsets)
    pos = np.where(idx > 0, idx - 1, lengths + idx)
    found = (idx != 0) & (pos >= 0) & (pos < lengths)
    take = np.where(found, starts + np.where(found, pos, 0), 0)
    values = arr.values
    item_type = arr.type.value_type
    if len(values) == 0:
        out = pa.nulls(n, item_type)
    else:
        out = values.take(pa.array(take, pa.int64()))
    if not found.all():
        default = None if arr.type.value_field.nullable else _default(item_type)
        out = pc.if_else(pa.array(found), out, pa.scalar(default, item_type))
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    if idx_null is not None:
        nulls = idx_null if nulls is None else (nulls | idx_null)
    if nulls is not None and nulls.any():
        out = pc.if_else(pa.array(~nulls), out, pa.scalar(None, item_type))
    return out


def _clip_int(v: Any) -> int:
    v = int(v)
    return max(min(v, 2**63 - 1), -(2**63))


def _as_int64(a: pa.Array) -> np.ndarray:
    if pa.types.is_uint64(a.type):
        return np.minimum(a.to_numpy(zero_copy_only=False), np.uint64(2**63 - 1)).astype(np.int64)
    if pa.types.is_boolean(a.type):
        return a.to_numpy(zero_copy_only=False).astype(np.int64)
    return a.to_numpy(zero_copy_only=False).astype(np.int64)


def _default(t: pa.DataType) -> Any:
    """ClickHouse's default value of a type (what an out-of-range element reads as)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return b""
    if pa.types.is_fixed_size_binary(t):
        return b"\0" * t.byte_width
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return []
    if pa.types.is_floating(t):
        return 0.0
    if pa.types.is_integer(t):
        return 0
    if pa.types.is_decimal(t):
        return decimal.Decimal(0)
    if pa.types.is_date32(t):
        return datetime.date(1970, 1, 1)
    if pa.types.is_timestamp(t):
        return pa.array([0], pa.int64()).view(t)[0]      # the epoch, in the type's unit and zone
    return None
