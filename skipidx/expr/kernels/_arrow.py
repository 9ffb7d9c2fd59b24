"""Array plumbing shared by the kernels: chunk mapping, string views, boolean results."""
from __future__ import annotations

from collections.abc import Callable
from typing import Union

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.arrays import from_numpy, to_numpy
from skipidx.core.errors import SkipidxError

ArrayLike = Union[pa.Array, pa.ChunkedArray]

# --------------------------------------------------------------------------
# Array plumbing
# --------------------------------------------------------------------------

_STRINGISH = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
              pa.types.is_large_binary, pa.types.is_string_view, pa.types.is_binary_view)


def _is_stringish(t: pa.DataType) -> bool:
    return any(f(t) for f in _STRINGISH)


def _as_bytes(value: bytes | str, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise SkipidxError(f"{what} must be a string constant, got {type(value).__name__}")


def _map_chunks(arr: ArrayLike, fn: Callable[[pa.Array], pa.Array]) -> ArrayLike:
    """Apply an Array -> Array function to each chunk, keeping the input's shape."""
    if isinstance(arr, pa.ChunkedArray):
        chunks = [fn(c) for c in arr.chunks]
        if not chunks:
            return pa.chunked_array([], type=fn(pa.array([], type=arr.type)).type)
        return pa.chunked_array(chunks)
    if not isinstance(arr, pa.Array):
        raise SkipidxError(f"expected a pyarrow Array or ChunkedArray, got {type(arr).__name__}")
    return fn(arr)


def _string_fn(fn: Callable[[pa.Array], pa.Array]) -> Callable[[pa.Array], pa.Array]:
    """Wrap a per-chunk function of a binary-like Array so it also takes dictionaries.

    A dictionary (LowCardinality) array is evaluated once per distinct value and
    the answers are gathered with the indices: the work is O(dictionary).
    """
    def wrapped(chunk: pa.Array) -> pa.Array:
        t = chunk.type
        if pa.types.is_dictionary(t):
            if not _is_stringish(t.value_type):
                raise SkipidxError(f"expected a String column, got {t}")
            per_value = wrapped(chunk.dictionary)
            return pc.take(per_value, chunk.indices)
        if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
            return fn(chunk.cast(pa.large_binary()))
        if not _is_stringish(t):
            raise SkipidxError(f"expected a String column, got {t}")
        return fn(chunk)
    return wrapped


def _binary_view(chunk: pa.Array) -> pa.Array:
    """The same buffers as binary (no UTF-8 assumption, byte-wise kernels)."""
    t = chunk.type
    if pa.types.is_string(t):
        return chunk.view(pa.binary())
    if pa.types.is_large_string(t):
        return chunk.view(pa.large_binary())
    return chunk


def _utf8_view(chunk: pa.Array) -> pa.Array:
    """The same buffers as string, *without* validating UTF-8.

    Arrow runs RE2 in UTF-8 mode on string arrays and in Latin-1 mode on binary
    ones; ClickHouse runs RE2 in UTF-8 mode on its (unvalidated) bytes, so the
    view is what reproduces its treatment of invalid UTF-8.
    """
    t = chunk.type
    if pa.types.is_binary(t):
        return chunk.view(pa.string())
    if pa.types.is_large_binary(t):
        return chunk.view(pa.large_string())
    return chunk


def _offsets_data(chunk: pa.Array, native: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(offsets[len+1] as int64, data as uint8) of a binary-like Array, slice-aware.
    `native`: the offsets as the array holds them (int32 or int64), a view, not a copy
    (for kernels compiled for both: the int64 copy of a large chunk's offsets costs
    about a fifth of a frequent token's search)."""
    bufs = chunk.buffers()
    large = pa.types.is_large_binary(chunk.type) or pa.types.is_large_string(chunk.type)
    odt = np.int64 if large else np.int32
    n = len(chunk)
    if bufs[1] is None:
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        offsets = np.frombuffer(bufs[1], dtype=odt)[chunk.offset: chunk.offset + n + 1]
        if not native:
            offsets = offsets.astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, dtype=np.uint8)
    return offsets, data


def _bool_result(values: np.ndarray, like_chunk: pa.Array) -> pa.Array:
    """numpy bool values -> BooleanArray carrying the nulls of `like_chunk`."""
    out = from_numpy(values, pa.bool_())
    if like_chunk.null_count == 0:
        return out
    validity = like_chunk.is_valid().buffers()[1]
    return pa.Array.from_buffers(pa.bool_(), len(out), [validity, out.buffers()[1]],
                                 null_count=like_chunk.null_count)


def _with_nulls_of(result: pa.Array, like_chunk: pa.Array) -> pa.Array:
    """`result` (no nulls) with the nulls of `like_chunk` laid over it."""
    if like_chunk.null_count == 0:
        return result
    return _bool_result(to_numpy(result), like_chunk)


def _const_bool(chunk: pa.Array, value: bool) -> pa.Array:
    return _bool_result(np.full(len(chunk), value, dtype=np.bool_), chunk)

