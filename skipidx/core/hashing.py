"""Values to 64-bit hashes, exactly as Parquet bloom filters hash them.

Parquet hashes a value with XXH64 (seed 0) over its PLAIN encoding as the
file physically stores it: INT32 as 4 little-endian bytes, INT64 as 8,
FLOAT/DOUBLE as their IEEE-754 bits, BYTE_ARRAY as the raw bytes (no length
prefix), FIXED_LEN_BYTE_ARRAY as its bytes. So the hash of an Arrow value
depends on the physical type a Parquet writer (pyarrow with its default
settings, parquet-java) maps it to:

==========================================  ==========================================
Arrow type                                  hashed as
==========================================  ==========================================
int8, int16, int32                          INT32, sign-extended
uint8, uint16                               INT32, zero-extended
uint32                                      INT32 holding the same 32 bits
int64, uint64                               INT64 (uint64: the same 64 bits)
float32 / float64                           FLOAT / DOUBLE bits (-0.0 != 0.0; NaN as stored)
float16                                     FIXED_LEN_BYTE_ARRAY(2), little-endian
date32                                      INT32 days
date64                                      INT32 days (as pyarrow writes it: ms / 86400000
                                            truncated toward zero)
time32[ms]; time32[s]                       INT32 milliseconds (seconds are scaled by 1000)
time64[us|ns]                               INT64 in its unit
timestamp[ms|us|ns]; timestamp[s]           INT64 in its unit; seconds become milliseconds
duration[any]                               INT64 in its unit
decimal128(p, s), decimal256(p, s)          FIXED_LEN_BYTE_ARRAY big-endian two's complement,
                                            the fewest bytes that hold precision p
string, large_string, string_view,          BYTE_ARRAY: the raw (UTF-8) bytes
binary, large_binary, binary_view
fixed_size_binary(n)                        FIXED_LEN_BYTE_ARRAY(n)
dictionary<K, V>                            as its values V
null                                        (every slot is NULL: no hashes)
bool                                        SkipidxError: Parquet has no bloom filter for
                                            BOOLEAN (Arrow C++ refuses one); cast to int8
                                            when a whole-value filter over flags is wanted
==========================================  ==========================================

Nested types (list, struct, map) raise SkipidxError.

NULLs have no PLAIN encoding and produce no hash. `parquet_xxh64` returns the
hashes of the non-null values only, in order (``len(result) ==
len(values) - values.null_count``); `parquet_xxh64_with_validity` returns one
hash per slot (0 at NULL slots) plus the validity mask, for callers that must
keep rows aligned (e.g. filter id per row in an index build).

Floating point: the bits are hashed, so ``-0.0`` and ``0.0`` hash differently,
and NaNs with different payloads too; a query for ``x = 0.0`` must probe both
zeros (as Parquet readers must).

All fixed-width paths run a compiled XXH64 over the value array; variable
width values are hashed straight from the Arrow (offsets, data) buffers, with
no Python call per value (`skipidx.core._kernels.xxh64`).
"""
from __future__ import annotations

import struct
from typing import Any, Union

import numpy as np
import pyarrow as pa
import xxhash as _xxhash
from skipidx.core.lazy import compute as pc

from skipidx.core.arrays import array_of
from skipidx.core.errors import SkipidxError
from skipidx.core.lazy import kernels

_x = kernels("skipidx.core._kernels.xxh64")

__all__ = [
    "parquet_xxh64",
    "parquet_xxh64_with_validity",
    "xxh64_array",
    "xxh64_array_with_validity",
    "xxh64_bytes",
    "plain_encode",
    "physical_type",
    "plain_fixed_width",
    "cityhash64",
]

ArrayLike = Union[pa.Array, pa.ChunkedArray, np.ndarray, list, tuple]

_MS_PER_DAY = 86_400_000


# ------------------------------------------------------------------ input

def _as_arrow(values: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if isinstance(values, (np.ndarray, list, tuple)):
        try:
            return pa.array(values)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise SkipidxError(f"cannot convert values to an Arrow array: {e}") from None
    raise SkipidxError(f"expected a pyarrow Array or ChunkedArray, got {type(values).__name__}")


def _buffer_view(buf: pa.Buffer | None, dtype: Any, start: int, count: int) -> np.ndarray:
    """Elements [start, start + count) of an Arrow value buffer as numpy (zero-copy)."""
    if count == 0:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=start + count)[start:]


def _validity(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=np.bool_)
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _decimal_bytes(precision: int) -> int:
    """Fewest bytes of a big-endian two's complement integer holding 10**precision - 1."""
    n = 1
    while 10**precision > 1 << (8 * n - 1):
        n += 1
    return n


# A physical column: ("u32", uint32 array) | ("u64", uint64 array)
#                  | ("var", data uint8, offsets int64) | ("fixed", data uint8, width)

def _physical(arr: pa.Array) -> tuple:
    """The values of `arr` as the Parquet physical type stores them (slots at NULLs are arbitrary)."""
    if isinstance(arr.type, pa.BaseExtensionType) and arr.type.extension_name == "arrow.uuid":
        arr = arr.storage   # Parquet's UUID is FIXED_LEN_BYTE_ARRAY(16) of the same bytes
    t = arr.type
    n = len(arr)
    off = arr.offset
    bufs = arr.buffers()
    if pa.types.is_boolean(t):
        raise SkipidxError(
            "Parquet defines no bloom filter for BOOLEAN columns; cast the column to int8 "
            "for a whole-value filter"
        )
    if pa.types.is_null(t):
        return ("u32", np.zeros(n, dtype=np.uint32))
    if pa.types.is_integer(t):
        width = t.bit_width
        np_t = np.dtype(f"{'i' if pa.types.is_signed_integer(t) else 'u'}{width // 8}")
        v = _buffer_view(bufs[1], np_t, off, n)
        if width <= 16:
            return ("u32", v.astype(np.int32).view(np.uint32))
        if width == 32:
            return ("u32", v.view(np.uint32))
        return ("u64", v.view(np.uint64))
    if pa.types.is_float32(t):
        return ("u32", _buffer_view(bufs[1], np.uint32, off, n))
    if pa.types.is_float64(t):
        return ("u64", _buffer_view(bufs[1], np.uint64, off, n))
    if pa.types.is_float16(t):
        return ("fixed", _buffer_view(bufs[1], np.uint8, 2 * off, 2 * n), 2)
    if pa.types.is_date32(t):
        return ("u32", _buffer_view(bufs[1], np.uint32, off, n))
    if pa.types.is_date64(t):
        # pyarrow stores date64 as a Parquet DATE (INT32 days); its cast truncates toward zero.
        ms = _buffer_view(bufs[1], np.int64, off, n)
        days = np.sign(ms) * (np.abs(ms) // _MS_PER_DAY)
        return ("u32", days.astype(np.int32).view(np.uint32))
    if pa.types.is_time32(t):
        v = _buffer_view(bufs[1], np.int32, off, n)
        if t.unit == "s":  # Parquet has no TIME in seconds: pyarrow writes milliseconds
            v = v * np.int32(1000)
        return ("u32", v.view(np.uint32))
    if pa.types.is_time64(t) or pa.types.is_duration(t):
        return ("u64", _buffer_view(bufs[1], np.uint64, off, n))
    if pa.types.is_timestamp(t):
        v = _buffer_view(bufs[1], np.int64, off, n)
        if t.unit == "s":  # Parquet has no TIMESTAMP in seconds: pyarrow writes milliseconds
            limit = np.iinfo(np.int64).max // 1000
            valid = _validity(arr)
            vv = v if valid is None else v[valid]
            if vv.size and (int(vv.max()) > limit or int(vv.min()) < -limit):
                raise SkipidxError("timestamp[s] value out of range for milliseconds")
            v = v * np.int64(1000)
        return ("u64", v.view(np.uint64))
    if pa.types.is_decimal(t):
        if t.bit_width not in (128, 256):
            raise SkipidxError(f"unsupported decimal type {t} (decimal128 and decimal256 are supported)")
        w = t.bit_width // 8
        k = _decimal_bytes(t.precision)
        le = _buffer_view(bufs[1], np.uint8, w * off, w * n).reshape(n, w)
        # Arrow stores little-endian two's complement; Parquet the big-endian low k bytes.
        be = np.ascontiguousarray(le[:, ::-1][:, w - k:]).reshape(-1)
        return ("fixed", be, k)
    if pa.types.is_fixed_size_binary(t):
        w = t.byte_width
        return ("fixed", _buffer_view(bufs[1], np.uint8, w * off, w * n), w)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        target = pa.large_string() if pa.types.is_string_view(t) else pa.large_binary()
        return _physical(pc.cast(arr, target))
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        odt = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
        offsets = _buffer_view(bufs[1], odt, off, n + 1).astype(np.int64)
        data = bufs[2]
        raw = np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else np.empty(0, np.uint8)
        if n and int(offsets[-1]) > raw.shape[0]:
            raise SkipidxError("malformed Arrow array: offsets run past the data buffer")
        return ("var", raw, offsets)
    raise SkipidxError(f"no Parquet bloom-filter hashing for Arrow type {t}")


def plain_fixed_width(values: pa.Array) -> tuple[np.ndarray, int] | None:
    """The PLAIN bytes ``parquet_xxh64`` hashes of a fixed-width column, as an (n, width)
    uint8 matrix with the width; None for variable-length types (strings, binary).
    Rows at NULLs hold arbitrary bytes. SkipidxError for a type Parquet cannot hash."""
    phys = _physical(values)
    n = len(values)
    if phys[0] == "u32":
        return np.ascontiguousarray(phys[1], dtype="<u4").view(np.uint8).reshape(n, 4), 4
    if phys[0] == "u64":
        return np.ascontiguousarray(phys[1], dtype="<u8").view(np.uint8).reshape(n, 8), 8
    if phys[0] == "fixed":
        w = int(phys[2])
        return np.asarray(phys[1]).reshape(n, w), w
    return None


#: Up to this many values are hashed by the xxhash package, not the compiled kernels: a new
#: process then hashes a query's constants without loading (or compiling) a kernel.
SMALL_HASH_VALUES = 64


def xxh64_spans(data: np.ndarray, offsets: np.ndarray, seed: int) -> np.ndarray:
    """XXH64 of each ``data[offsets[i]:offsets[i+1]]`` (uint8 data, int64 offsets) with `seed`."""
    n = offsets.shape[0] - 1
    if n <= 0:
        return np.zeros(0, np.uint64)
    if n <= SMALL_HASH_VALUES:
        o = offsets.tolist()
        raw, s, lo = data[o[0]:o[-1]].tobytes(), int(seed), o[0]
        return np.array([_xxhash.xxh64_intdigest(raw[o[i] - lo:o[i + 1] - lo], s) for i in range(n)],
                        dtype=np.uint64)
    return _x.xxh64_offsets(np.ascontiguousarray(data, dtype=np.uint8),
                            np.ascontiguousarray(offsets, dtype=np.int64), np.uint64(seed))


def _hash_physical(phys: tuple, seed: int) -> np.ndarray:
    kind = phys[0]
    if kind in ("u32", "u64") and phys[1].shape[0] <= SMALL_HASH_VALUES:
        le = np.ascontiguousarray(phys[1], dtype="<u4" if kind == "u32" else "<u8")
        w = le.dtype.itemsize
        return xxh64_spans(le.view(np.uint8), np.arange(le.shape[0] + 1, dtype=np.int64) * w, seed)
    if kind == "var" and phys[2].shape[0] - 1 <= SMALL_HASH_VALUES:
        return xxh64_spans(phys[1], phys[2], seed)
    s = np.uint64(seed)
    if kind == "u32":
        return _x.xxh64_u32_array(np.ascontiguousarray(phys[1]), s)
    if kind == "u64":
        return _x.xxh64_u64_array(np.ascontiguousarray(phys[1]), s)
    if kind == "var":
        return _x.xxh64_offsets(phys[1], phys[2], s)
    data, width = phys[1], phys[2]
    return _x.xxh64_fixed(np.ascontiguousarray(data), np.int64(width), np.int64(data.shape[0] // width), s)


def _check_seed(seed: object) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise SkipidxError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    s = int(seed)
    if not (0 <= s < 1 << 64):
        raise SkipidxError(f"seed must be an integer in [0, 2**64), got {s}")
    return s


def _hash_chunk(arr: pa.Array, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    if pa.types.is_dictionary(arr.type):
        # Hash each dictionary entry once, then gather; a slot is valid if its index
        # and the entry it points to are both valid.
        dh, dvalid = _hash_chunk(arr.dictionary, seed)
        idx_arr = arr.indices
        idx = _physical(idx_arr)[1].view(np.int32 if idx_arr.type.bit_width <= 32 else np.int64)
        valid = _validity(idx_arr)
        safe = idx if valid is None else np.where(valid, idx, 0)
        if len(dh) == 0:
            h = np.zeros(len(arr), dtype=np.uint64)
        else:
            if safe.size and (int(safe.min()) < 0 or int(safe.max()) >= len(dh)):
                raise SkipidxError("malformed dictionary array: index out of range")
            h = dh[safe]
        if dvalid is not None:
            via = dvalid[safe] if len(dh) else np.zeros(len(arr), np.bool_)
            valid = via if valid is None else (valid & via)
        return h, valid
    return _hash_physical(_physical(arr), seed), _validity(arr)


# ----------------------------------------------------------------- public

def xxh64_array_with_validity(values: ArrayLike, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(hash per slot with 0 at NULLs, validity mask) of XXH64(seed) over each value's PLAIN encoding."""
    s = _check_seed(seed)
    arr = _as_arrow(values)
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    hs, vs = [], []
    for c in chunks:
        h, v = _hash_chunk(c, s)
        v = np.ones(len(c), dtype=np.bool_) if v is None else v
        if not v.all():
            h = np.where(v, h, np.uint64(0))
        hs.append(h)
        vs.append(v)
    if not hs:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.bool_)
    if len(hs) == 1:
        return hs[0], vs[0]
    return np.concatenate(hs), np.concatenate(vs)


def xxh64_array(values: ArrayLike, seed: int = 0) -> np.ndarray:
    """XXH64 with `seed` of the PLAIN encoding of every non-NULL value, in order (uint64).

    With ``seed=0`` this is `parquet_xxh64`; other seeds give the independent
    hash families that seeded indexes (``tokenbf_v1(..., seed)``) need.
    """
    s = _check_seed(seed)
    arr = _as_arrow(values)
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    out = []
    for c in chunks:
        h, v = _hash_chunk(c, s)
        out.append(h if v is None else h[v])
    if not out:
        return np.empty(0, dtype=np.uint64)
    return out[0] if len(out) == 1 else np.concatenate(out)


def parquet_xxh64(values: ArrayLike) -> np.ndarray:
    """The Parquet bloom-filter hashes (XXH64, seed 0, PLAIN encoding) of the non-NULL values.

    `values` is a pyarrow Array or ChunkedArray (numpy arrays and Python lists
    are converted with ``pa.array``). The result has one uint64 per non-NULL
    value, in order; NULLs produce no hash (see `parquet_xxh64_with_validity`
    for one hash per slot). Types are mapped as the module docstring lists;
    other types raise SkipidxError.
    """
    return xxh64_array(values, 0)


def parquet_xxh64_with_validity(values: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(one hash per slot, 0 at NULL slots; bool validity mask) — `parquet_xxh64` kept aligned to rows."""
    return xxh64_array_with_validity(values, 0)


def xxh64_bytes(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH64 of one byte string (compiled kernel; equals ``xxhash.xxh64_intdigest``)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise SkipidxError(f"xxh64_bytes expects bytes, got {type(data).__name__}")
    buf = np.frombuffer(data, dtype=np.uint8)
    return int(_x.xxh64_span(buf, 0, buf.shape[0], np.uint64(_check_seed(seed))))


def physical_type(arrow_type: pa.DataType) -> str:
    """The Parquet physical type whose PLAIN encoding `parquet_xxh64` hashes for `arrow_type`."""
    if not isinstance(arrow_type, pa.DataType):
        raise SkipidxError(f"expected a pyarrow DataType, got {type(arrow_type).__name__}")
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_float64(t):
        return "DOUBLE"
    kind = _physical(pa.array([], type=t))[0]
    return {"u32": "INT32", "u64": "INT64", "var": "BYTE_ARRAY", "fixed": "FIXED_LEN_BYTE_ARRAY"}[kind]


def plain_encode(value: Any, arrow_type: pa.DataType) -> bytes:
    """The PLAIN encoding of one value stored as `arrow_type` (the bytes `parquet_xxh64` hashes).

    `value` is a Python scalar (int, float, str, bytes, date, datetime,
    Decimal...) or a pyarrow Scalar; it is converted exactly as
    ``pa.array([value], type=arrow_type)`` converts it. NULL has no encoding
    (SkipidxError), as do values that do not fit the type.
    """
    if not isinstance(arrow_type, pa.DataType):
        raise SkipidxError(f"expected a pyarrow DataType, got {type(arrow_type).__name__}")
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if value is None:
        raise SkipidxError("NULL has no PLAIN encoding (Parquet bloom filters never hold NULL)")
    try:
        arr = array_of([value], t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise SkipidxError(f"cannot store {value!r} as {t}: {e}") from None
    phys = _physical(arr)
    kind = phys[0]
    if kind == "u32":
        return struct.pack("<I", int(phys[1][0]))
    if kind == "u64":
        return struct.pack("<Q", int(phys[1][0]))
    if kind == "var":
        data, offsets = phys[1], phys[2]
        return data[int(offsets[0]):int(offsets[1])].tobytes()
    return phys[1][: phys[2]].tobytes()


def cityhash64(values: ArrayLike | str | bytes, seed: int | None = None) -> np.ndarray | int:
    """ClickHouse's ``cityHash64`` (CityHash v1.0.2) of strings or binary values.

    For one str/bytes value returns an int; for an array of strings/binary,
    a uint64 array over the non-NULL values (as `parquet_xxh64`). `seed`
    selects CityHash64WithSeed. Uses the `clickhouse_cityhash` C extension,
    one call per value: this is for parity checks with ClickHouse, not for
    index builds (those use the compiled XXH64).
    """
    from clickhouse_cityhash.cityhash import CityHash64, CityHash64WithSeed

    s = None if seed is None else _check_seed(seed)

    def one(b: bytes) -> int:
        return CityHash64(b) if s is None else CityHash64WithSeed(b, s)

    if isinstance(values, str):
        return one(values.encode("utf-8"))
    if isinstance(values, (bytes, bytearray, memoryview)):
        return one(bytes(values))
    arr = _as_arrow(values)
    t = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_string_view(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t)):
        raise SkipidxError(f"cityhash64 hashes strings and binary values, got {arr.type}")
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(t)
    items = pc.drop_null(arr.cast(pa.large_binary())).to_pylist()
    return np.fromiter((one(b) for b in items), dtype=np.uint64, count=len(items))
