"""Arrow <-> numpy without pandas.

pyarrow imports pandas (~0.5-1 s) the first time a process calls
``Array.to_numpy`` (its converter loads pandas' NaT/Timestamp), or ``pa.array``
/ ``pa.scalar`` on Python or numpy values (its array-like check). The query
path uses these helpers instead, so a process that only answers queries never
imports pandas. They read and build the Arrow buffers directly (zero copy
where the layouts agree) and fall back to pyarrow's converters only for
layouts they do not cover (NULLs in a numeric column, nested types).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

_NUMERIC = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
    pa.float32(): np.float32, pa.float64(): np.float64,
}


def to_numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a numeric or boolean array without NULLs as numpy (read-only
    view where possible); other arrays through ``to_numpy(zero_copy_only=False)``."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            arr = arr.chunk(0)
        elif arr.num_chunks == 0:
            return to_numpy(pa.nulls(0, arr.type)) if arr.type in _NUMERIC or pa.types.is_boolean(arr.type) \
                else arr.to_numpy()
        else:
            arr = arr.combine_chunks()
    if arr.null_count == 0:
        t = arr.type
        dt = _NUMERIC.get(t)
        n, off = len(arr), arr.offset
        if dt is not None:
            buf = arr.buffers()[1]
            if buf is None:
                return np.zeros(0, dt)
            return np.frombuffer(buf, dtype=dt, count=n, offset=off * np.dtype(dt).itemsize)
        if pa.types.is_boolean(t):
            buf = arr.buffers()[1]
            if buf is None or n == 0:
                return np.zeros(0, bool)
            first, last = off // 8, (off + n + 7) // 8
            bits = np.unpackbits(np.frombuffer(buf, np.uint8, count=last - first, offset=first),
                                 bitorder="little")
            return bits[off % 8: off % 8 + n].astype(bool)
    return arr.to_numpy(zero_copy_only=False)


def from_numpy(values: np.ndarray, type: pa.DataType | None = None) -> pa.Array:
    """A numpy array of a numeric or bool dtype as an Arrow array of `type` (its own by
    default) without NULLs; other dtypes through ``pa.array``."""
    values = np.asarray(values)
    if type is None:
        type = pa.from_numpy_dtype(values.dtype)
    dt = _NUMERIC.get(type)
    if dt is not None and values.ndim == 1:
        v = np.ascontiguousarray(values, dtype=dt)
        return pa.Array.from_buffers(type, len(v), [None, pa.py_buffer(v)])
    if pa.types.is_boolean(type) and values.ndim == 1:
        v = np.ascontiguousarray(values, dtype=bool)
        return pa.Array.from_buffers(type, len(v), [None, pa.py_buffer(np.packbits(v, bitorder="little"))])
    return pa.array(values, type)


def array_of(values, type: pa.DataType) -> pa.Array:
    """``pa.array(values, type)`` for a short Python list of ints, floats, bools, bytes or
    str (no None) of a numeric, bool, binary or string `type`; others through ``pa.array``."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        if (pa.types.is_boolean(type) and values.dtype == np.bool_) or values.dtype == _NUMERIC.get(type):
            return from_numpy(values, type)
        return pa.array(values, type)
    values = list(values)
    if any(v is None for v in values):
        return pa.array(values, type)
    dt = _NUMERIC.get(type)
    if dt is not None and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        if np.issubdtype(dt, np.integer):
            info = np.iinfo(dt)
            ok = all(isinstance(v, int) and info.min <= v <= info.max for v in values)
        else:   # pyarrow refuses ints a double cannot hold exactly: leave those to it
            ok = all(isinstance(v, float) or -2**53 <= v <= 2**53 for v in values)
        if not ok:
            return pa.array(values, type)
        return from_numpy(np.array(values, dtype=dt), type)
    if pa.types.is_boolean(type) and all(isinstance(v, bool) for v in values):
        return from_numpy(np.array(values, dtype=bool), type)
    binary = pa.types.is_binary(type) or pa.types.is_large_binary(type)
    string = pa.types.is_string(type) or pa.types.is_large_string(type)
    if (binary and all(isinstance(v, (bytes, bytearray)) for v in values)) or \
            (string and all(isinstance(v, str) for v in values)):
        raw = [v.encode("utf-8") for v in values] if string else [bytes(v) for v in values]
        large = pa.types.is_large_binary(type) or pa.types.is_large_string(type)
        offsets = np.zeros(len(raw) + 1, np.int64 if large else np.int32)
        np.cumsum([len(b) for b in raw], out=offsets[1:])
        return pa.Array.from_buffers(type, len(raw), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])
    return pa.array(values, type)


def scalar(value, type: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, type)`` through :func:`array_of` (None: a NULL of `type`)."""
    if value is None:
        return pa.nulls(1, type)[0]
    return array_of([value], type)[0]


def cast(arr: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """``pyarrow.compute.cast(arr, target)`` (a safe cast): the same Arrow kernel called through
    ``pyarrow._compute``, so that a query printing a number does not import ``pyarrow.compute``."""
    from pyarrow._compute import CastOptions, call_function

    return call_function("cast", [arr], CastOptions.safe(target))


def one_array(arr: pa.Array | pa.ChunkedArray, plain_strings: bool = False) -> pa.Array:
    """`arr` as one plain Array: chunks combined, a dictionary decoded, and with
    `plain_strings` large strings and string views as ``string``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if plain_strings and (pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type)):
        arr = arr.cast(pa.string())
    return arr



def split_digits_at(digits: pa.Array, point: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """Each row's digit string cut at `point` (>= 0 characters): the part before it,
    right-padded with '0' to exactly `point` characters, and the part after it.
    Decimal-point placement for number text; whole-column per distinct `point`."""
    import pyarrow.compute as pc

    if len(digits) == 0:
        return digits, digits
    lens = pc.utf8_length(digits).to_numpy(zero_copy_only=False)
    rows, heads, tails = [], [], []
    for k in np.unique(point):
        sel = np.flatnonzero(point == k)
        part = digits.take(pa.array(sel))
        pad = pc.binary_repeat("0", pa.array(np.maximum(int(k) - lens[sel], 0)))
        heads.append(pc.binary_join_element_wise(pc.utf8_slice_codeunits(part, 0, int(k)), pad, "")
                     .cast(pa.string()))
        tails.append(pc.utf8_slice_codeunits(part, int(k)).cast(pa.string()))
        rows.append(sel)
    order = pa.array(np.argsort(np.concatenate(rows), kind="stable"))
    return pa.concat_arrays(heads).take(order), pa.concat_arrays(tails).take(order)
