"""Conversions, conditionals and hashes (ClickHouse 26.9 semantics, checked against chDB).

Integer conversions wrap as ClickHouse's do (``toUInt8(300)`` is 44,
``toInt32(-3.9)`` is -3); text parses strictly (``toInt32('3.5')`` is an
error) and the ``OrZero``/``OrNull`` forms give 0 / NULL instead.
"""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skipidx.core.errors import SkipidxError

ArrayLike = pa.Array | pa.ChunkedArray

INT_TYPES = {"Int8": pa.int8(), "Int16": pa.int16(), "Int32": pa.int32(), "Int64": pa.int64(),
             "UInt8": pa.uint8(), "UInt16": pa.uint16(), "UInt32": pa.uint32(), "UInt64": pa.uint64()}
FLOAT_TYPES = {"Float32": pa.float32(), "Float64": pa.float64()}


def _one(a: ArrayLike) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    if pa.types.is_dictionary(a.type):
        a = a.dictionary_decode()
    return a


def _mask(a: pa.Array) -> np.ndarray | None:
    return a.is_null().to_numpy(zero_copy_only=False) if a.null_count else None


def _wrap_int(v: np.ndarray, target: pa.DataType) -> np.ndarray:
    """Two's-complement wrap of int64/uint64 values into `target`, as ClickHouse converts."""
    return v.astype(target.to_pandas_dtype(), copy=False) if v.dtype.kind in "iu" else v


def to_int(a: ArrayLike, type_name: str, on_error: str = "raise") -> pa.Array:
    """toInt8 .. toUInt64 (`on_error`: raise | zero | null for text that is not an integer)."""
    target = INT_TYPES[type_name]
    x = _one(a)
    t = x.type
    if pa.types.is_boolean(t):
        return x.cast(target)
    if pa.types.is_integer(t):
        v = x.fill_null(0).to_numpy(zero_copy_only=False)
        return pa.array(_wrap_int(v, target), target, mask=_mask(x))
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        # x86's truncating conversion, as ClickHouse's compiled code does it: through Int32 for
        # narrow targets and Int64 otherwise, out of range giving that type's minimum
        f = x.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False)
        via32 = target.bit_width <= 16 or target == pa.int32()
        lo, hi = (-2.0**31, 2.0**31) if via32 else (-2.0**63, 2.0**63)
        with np.errstate(invalid="ignore"):
            ints = np.trunc(f)
            out_of_range = ~np.isfinite(ints) | (ints < lo) | (ints >= hi)
            if target == pa.uint64():
                # values in [2**63, 2**64) convert exactly as unsigned
                big = (ints >= 2.0**63) & (ints < 2.0**64)
                v = np.where(big, 0, np.where(out_of_range, -(2**63), ints)).astype(np.int64).view(np.uint64)
                v = np.where(big, (ints - 2.0**63).astype(np.uint64) + np.uint64(2**63) if big.any() else 0, v)
                return pa.array(v.astype(np.uint64), target, mask=_mask(x))
            v = np.where(out_of_range, lo, ints).astype(np.int64)
        return pa.array(_wrap_int(v, target), target, mask=_mask(x))
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        if pa.types.is_timestamp(t):
            per = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[t.unit]
            v = np.floor_divide(x.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), per)
        else:
            v = x.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return pa.array(_wrap_int(v, target), target, mask=_mask(x))
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        s = x.cast(pa.string())
        unsigned = type_name.startswith("U")
        pattern = r"^\+?\d+$" if unsigned and on_error != "raise" else r"^[+-]?\d+$"
        ok = pc.match_substring_regex(s, pattern=pattern).fill_null(True).to_numpy(zero_copy_only=False)
        clean = pc.if_else(pa.array(ok), s, "0")
        big = [0 if d is None else int(d) for d in clean.cast(pa.decimal128(38, 0), safe=False).to_pylist()]
        if on_error != "raise":
            info = np.iinfo(target.to_pandas_dtype())
            ok = ok & np.array([info.min <= b <= info.max for b in big], bool)
        valid = pc.is_valid(s).to_numpy(zero_copy_only=False)
        bad = valid & ~ok
        if bad.any() and on_error == "raise":
            raise SkipidxError(f"Cannot parse string {s[int(np.argmax(bad))].as_py()!r} as {type_name}")
        # text wraps as ClickHouse's parser does (toInt8('200') is -56)
        wrapped = np.array([0 if b_ else (v % (1 << 64)) for v, b_ in zip(big, bad)], dtype=np.uint64)
        v = wrapped.view(np.int64) if not unsigned or target != pa.uint64() else wrapped
        mask = _mask(x)
        if on_error == "null" and bad.any():
            mask = bad if mask is None else (mask | bad)
        return pa.array(_wrap_int(v, target), target, mask=mask)
    raise SkipidxError(f"cannot convert {t} to {type_name}")


def to_float(a: ArrayLike, type_name: str, on_error: str = "raise") -> pa.Array:
    target = FLOAT_TYPES[type_name]
    x = _one(a)
    t = x.type
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        # toFloat64 takes inf/nan and surrounding spaces; the OrZero/OrNull forms only plain numbers
        if on_error == "raise":
            s = pc.utf8_lower(pc.utf8_trim_whitespace(x.cast(pa.string())))
            pattern = r"^[+-]?(\d+\.?\d*(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?|inf|nan)$"
        else:
            s = pc.utf8_lower(x.cast(pa.string()))
            pattern = r"^[+-]?(\d+\.?\d*(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?)$"
        ok = pc.match_substring_regex(s, pattern=pattern)
        bad = pc.and_(pc.invert(ok), pc.is_valid(s)).fill_null(False)
        badn = bad.to_numpy(zero_copy_only=False)
        if badn.any() and on_error == "raise":
            raise SkipidxError(f"Cannot parse string {x[int(np.argmax(badn))].as_py()!r} as {type_name}")
        out = pc.if_else(bad, "0", s).cast(target)
        if on_error == "null" and badn.any():
            out = pc.if_else(bad, pa.scalar(None, target), out)
        return out
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return x.cast(target, safe=False)
    if pa.types.is_date(t):
        return x.cast(pa.int32()).cast(target)
    if pa.types.is_timestamp(t):
        return to_int(x, "Int64").cast(target)
    raise SkipidxError(f"cannot convert {t} to {type_name}")


def float_text(v: float, single: bool = False) -> str:
    """ClickHouse's text of a float: shortest round-trip digits, plain notation for
    decimal exponents -7 < e < 21, else ``1e21`` / ``1e-7`` style."""
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    r = np.format_float_scientific(np.float32(v) if single else np.float64(v), unique=True, trim="-")
    mant, exp = r.split("e")
    e = int(exp)
    neg = mant.startswith("-")
    digits = mant.lstrip("-").replace(".", "")
    sign = "-" if neg else ""
    if not -7 < e < 21:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{m}e{e}"
    point = 1 + e
    if point <= 0:
        return sign + "0." + "0" * (-point) + digits
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return sign + digits[:point] + "." + digits[point:]


def to_string(a: ArrayLike) -> pa.Array:
    """toString, as ClickHouse writes each type."""
    x = _one(a)
    t = x.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return x.cast(pa.string())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        try:
            return x.cast(pa.string())
        except pa.ArrowInvalid:
            return x
    if pa.types.is_fixed_size_binary(t):
        return x.cast(pa.binary())
    if pa.types.is_boolean(t):
        return pc.if_else(x, "true", "false")
    if pa.types.is_integer(t):
        return x.cast(pa.string())
    if pa.types.is_floating(t):
        single = pa.types.is_float32(t)
        vals = [None if v is None else float_text(v, single) for v in x.to_pylist()]
        return pa.array(vals, pa.string())
    if pa.types.is_decimal(t):
        vals = [None if v is None else _decimal_text(v) for v in x.to_pylist()]
        return pa.array(vals, pa.string())
    if pa.types.is_date(t):
        return x.cast(pa.date32()).cast(pa.string())
    if pa.types.is_timestamp(t):
        local = pc.local_timestamp(x) if t.tz else x
        # %S of a sub-second timestamp carries its fraction (3/6/9 digits), as DateTime64(3/6/9) prints
        return pc.strftime(local.cast(pa.timestamp(t.unit)), format="%Y-%m-%d %H:%M:%S")
    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        import uuid

        return pa.array([None if v is None else str(uuid.UUID(bytes=v.bytes if hasattr(v, "bytes") else v))
                         for v in x.to_pylist()], pa.string())
    if pa.types.is_list(t):
        return pa.array([None if v is None else _array_text(v) for v in x.to_pylist()], pa.string())
    raise SkipidxError(f"toString of {t} is not supported")


def _decimal_text(d) -> str:
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _array_text(v: list) -> str:
    def one(e):
        if e is None:
            return "NULL"
        if isinstance(e, str):
            return "'" + e.replace("\\", "\\\\").replace("'", "\\'") + "'"
        if isinstance(e, float):
            return float_text(e)
        if isinstance(e, list):
            return _array_text(e)
        return str(e)
    return "[" + ",".join(one(e) for e in v) + "]"


# --------------------------------------------------------------------------- conditionals

def _truth(c: ArrayLike) -> pa.Array:
    """A condition as booleans; NULL counts as false (ClickHouse's if/multiIf)."""
    c = _one(c)
    if pa.types.is_boolean(c.type):
        b = c
    elif pa.types.is_null(c.type):
        return pa.array(np.zeros(len(c), bool))
    else:
        b = pc.not_equal(c, pa.scalar(0, c.type))
    return b.fill_null(False)


def if_(cond: ArrayLike, a: ArrayLike, b: ArrayLike) -> pa.Array:
    return pc.if_else(_truth(cond), _one(a), _one(b))


def multi_if(*args: ArrayLike) -> pa.Array:
    """multiIf(c1, v1, c2, v2, ..., else): the first true condition's value."""
    conds = [_truth(c) for c in args[:-1:2]]
    vals = [_one(v) for v in args[1:-1:2]]
    out = _one(args[-1])
    for c, v in reversed(list(zip(conds, vals))):
        out = pc.if_else(c, v, out)
    return out


def coalesce(*args: ArrayLike) -> pa.Array:
    arrays = [_one(a) for a in args]
    t = next((a.type for a in arrays if not pa.types.is_null(a.type)), pa.null())
    return pc.coalesce(*[a.cast(t) if pa.types.is_null(a.type) else a for a in arrays])


def null_if(a: ArrayLike, b: ArrayLike) -> pa.Array:
    x, y = _one(a), _one(b)
    eq = pc.equal(x, y).fill_null(False)
    return pc.if_else(eq, pa.scalar(None, x.type), x)


def assume_not_null(a: ArrayLike) -> pa.Array:
    """NULLs become the type's default (ClickHouse leaves an arbitrary value; the default is one)."""
    x = _one(a)
    if not x.null_count:
        return x
    t = x.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return x.fill_null("")
    if pa.types.is_binary(t):
        return x.fill_null(b"")
    if pa.types.is_boolean(t):
        return x.fill_null(False)
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return x.cast(pa.int64() if pa.types.is_timestamp(t) else pa.int32()).fill_null(0).cast(t)
    return x.fill_null(pa.scalar(0, t))


# --------------------------------------------------------------------------- hashes

_SEED = 0x4CF2D2BAAE6DA887
_M = (1 << 64) - 1


def _int_hash64(v: np.ndarray) -> np.ndarray:
    """ClickHouse's intHash64 (a Murmur3 finaliser) of the bits xor a fixed seed."""
    with np.errstate(over="ignore"):
        x = v.astype(np.uint64) ^ np.uint64(_SEED)
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xFF51AFD7ED558CCD)
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xC4CEB9FE1A85EC53)
        x ^= x >> np.uint64(33)
    return x


def _hash128to64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    k = np.uint64(0x9DDFEA08EB382D69)
    with np.errstate(over="ignore"):
        a = (lo ^ hi) * k
        a ^= a >> np.uint64(47)
        b = (hi ^ a) * k
        b ^= b >> np.uint64(47)
        b *= k
    return b


def _pod_bits(x: pa.Array) -> np.ndarray:
    """The value as ClickHouse's column stores it, widened to 64 bits (floats by their bits)."""
    t = x.type
    if pa.types.is_floating(t):
        f = x.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False)
        if pa.types.is_float32(t):
            return x.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float32).view(np.uint32).astype(np.uint64)
        return f.view(np.uint64)
    if pa.types.is_boolean(t):
        return x.cast(pa.uint8()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint64)
    if pa.types.is_date(t):
        return x.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint64)
    if pa.types.is_timestamp(t):
        return x.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint64)
    if pa.types.is_integer(t):
        # the native width's bits, zero-extended (toInt8(-1) hashes as 0xFF)
        v = x.fill_null(0).to_numpy(zero_copy_only=False)
        return v.view(np.dtype(f"u{v.dtype.itemsize}")).astype(np.uint64)
    raise SkipidxError(f"hashing of {t} is not supported")


def _strings(x: pa.Array) -> list:
    return [b"" if v is None else (v.encode() if isinstance(v, str) else bytes(v)) for v in x.to_pylist()]


def city_hash64(*args: ArrayLike) -> pa.Array:
    """cityHash64(args...): CityHash64 v1.0.2 of strings, intHash64 of numbers, combined left to right."""
    from skipidx.core.hashing import cityhash64

    out = None
    for a in args:
        x = _one(a)
        t = x.type
        if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) \
                or pa.types.is_fixed_size_binary(t):
            h = np.asarray(cityhash64(x.cast(pa.binary()).fill_null(b"")), dtype=np.uint64)
        else:
            h = _int_hash64(_pod_bits(x))
        out = h if out is None else _hash128to64(out, h)
    nulls = None
    for a in args:
        m = _mask(_one(a))
        if m is not None:
            nulls = m if nulls is None else (nulls | m)
    return pa.array(out, pa.uint64(), mask=nulls)


def xx_hash64(a: ArrayLike) -> pa.Array:
    """xxHash64(x): xxh64 (seed 0) of a string's bytes or of a number's native bytes."""
    import xxhash

    x = _one(a)
    t = x.type
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        from skipidx.core.hashing import xxh64_array

        return pa.array(np.asarray(xxh64_array(x.cast(pa.binary()).fill_null(b"")), np.uint64), pa.uint64(),
                        mask=_mask(x))
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        width = t.bit_width // 8
        vals = x.fill_null(0).to_numpy(zero_copy_only=False)
        raw = vals.astype(vals.dtype.newbyteorder("<")).tobytes()
        return pa.array([xxhash.xxh64_intdigest(raw[i * width:(i + 1) * width]) for i in range(len(vals))],
                        pa.uint64(), mask=_mask(x))
    raise SkipidxError(f"xxHash64 of {t} is not supported")
