"""Conversions, conditionals and hashes (ClickHouse 26.9 semantics, checked against chDB).

Integer conversions wrap as ClickHouse's do (``toUInt8(300)`` is 44,
``toInt32(-3.9)`` is -3); text parses strictly (``toInt32('3.5')`` is an
error) and the ``OrZero``/``OrNull`` forms give 0 / NULL instead.
"""
from __future__ import annotations


import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.arrays import one_array, split_digits_at
from skipidx.core.errors import SkipidxError
from skipidx.core.types import is_uuid, parse_uuid_texts, uuid_array

ArrayLike = pa.Array | pa.ChunkedArray

INT_TYPES = {"Int8": pa.int8(), "Int16": pa.int16(), "Int32": pa.int32(), "Int64": pa.int64(),
             "UInt8": pa.uint8(), "UInt16": pa.uint16(), "UInt32": pa.uint32(), "UInt64": pa.uint64()}
FLOAT_TYPES = {"Float32": pa.float32(), "Float64": pa.float64()}


def _one(a: ArrayLike) -> pa.Array:
    return one_array(a)


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
        clean = pc.utf8_ltrim(pc.if_else(pa.array(ok), s, "0").fill_null("0"), characters="+")
        # up to 18 digits parse as int64 in Arrow; longer texts (rare) go through Python ints
        long = pc.greater(pc.utf8_length(clean), 18).to_numpy(zero_copy_only=False)
        short = pc.if_else(pa.array(long), "0", clean).cast(pa.int64()).to_numpy(zero_copy_only=False)
        wrapped = short.view(np.uint64).copy()  # two's complement is the value mod 2**64
        info = np.iinfo(target.to_pandas_dtype())
        in_range = (short >= max(info.min, -(2**63))) & (short <= min(info.max, 2**63 - 1))
        for i in np.flatnonzero(long):
            b = int(clean[int(i)].as_py())
            wrapped[i] = b % (1 << 64)
            in_range[i] = info.min <= b <= info.max
        if on_error != "raise":
            ok = ok & in_range
        valid = pc.is_valid(s).to_numpy(zero_copy_only=False)
        bad = valid & ~ok
        if bad.any() and on_error == "raise":
            raise SkipidxError(f"Cannot parse string {s[int(np.argmax(bad))].as_py()!r} as {type_name}")
        # text wraps as ClickHouse's parser does (toInt8('200') is -56)
        wrapped[bad] = 0
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
    """ClickHouse's text of one float (see `float_texts`)."""
    return float_texts(pa.array([v], pa.float32() if single else pa.float64()))[0].as_py()


_EXP_PLUS = r"^(?P<sign>-?)(?P<lead>\d)(?:\.(?P<rest>\d+))?e\+(?P<exp>\d+)$"


def float_texts(x: pa.Array) -> pa.Array:
    """ClickHouse's text of a float column: the shortest round-trip digits, plain
    notation for decimal exponents -7 < e < 21, else ``1e21`` / ``1e-7`` style.

    Arrow's cast already writes the shortest digits and ClickHouse's form below
    1e0; only its ``d.ddde+XX`` spellings need rewriting, grouped by exponent."""
    s = x.cast(pa.string())
    marked = pc.match_substring(s, "e+").fill_null(False)
    if not pc.any(marked).as_py():
        return s
    rows = np.flatnonzero(marked.to_numpy(zero_copy_only=False))
    parts = pc.extract_regex(s.take(pa.array(rows)), _EXP_PLUS).flatten()
    sign, lead, rest, exp = (parts[i].fill_null("") for i in range(4))
    exps = exp.cast(pa.int32()).to_numpy(zero_copy_only=False)
    digits = pc.binary_join_element_wise(lead, rest, "")
    # below 1e21 plain digits with the point placed (padded with zeros); above, '1.5e21'
    head, frac = split_digits_at(digits, np.where(exps >= 21, 1, exps + 1))
    dot = pc.if_else(pc.equal(frac, ""), "", ".")
    plain = pc.binary_join_element_wise(sign, head, dot, frac, "")
    repl = pc.if_else(pa.array(exps >= 21), pc.replace_substring(s.take(pa.array(rows)), "e+", "e"), plain)
    return pc.replace_with_mask(s, marked, repl)


def decimal_texts(x: pa.Array) -> pa.Array:
    """ClickHouse's text of a Decimal column: trailing fraction zeros dropped, ``-0`` as ``0``."""
    s = pc.cast(x, pa.string())
    if x.type.scale > 0:
        s = pc.replace_substring_regex(s, r"\.?0+$", "")
        s = pc.if_else(pc.equal(s, ""), "0", s)
        s = pc.if_else(pc.equal(s, "-"), "0", s)
    return s


_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)


def uuid_texts(x: pa.Array) -> pa.Array:
    """8-4-4-4-12 lowercase hex of 16-byte values (UUID / FixedString(16) storage)."""
    if isinstance(x.type, pa.BaseExtensionType):
        x = x.storage
    n = len(x)
    raw = np.frombuffer(x.buffers()[1], np.uint8)[x.offset * 16:(x.offset + n) * 16].reshape(n, 16)
    hexes = np.empty((n, 32), np.uint8)
    hexes[:, 0::2] = _HEX[raw >> 4]
    hexes[:, 1::2] = _HEX[raw & 15]
    out = np.full((n, 36), ord("-"), np.uint8)
    for a, b, c in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        out[:, c:c + b - a] = hexes[:, a:b]
    offsets = pa.array(np.arange(0, 36 * n + 1, 36, dtype=np.int32))
    mask = x.is_null() if x.null_count else None
    text = pa.StringArray.from_buffers(n, offsets.buffers()[1], pa.py_buffer(out.tobytes()))
    return pc.if_else(mask, pa.scalar(None, pa.string()), text) if mask is not None else text


def to_uuid(a: ArrayLike, on_error: str = "raise") -> pa.Array:
    """toUUID / toUUIDOrZero / toUUIDOrNull of String (8-4-4-4-12 or 32 hex digits) or UUID values."""
    x = _one(a)
    t = x.type.value_type if pa.types.is_dictionary(x.type) else x.type
    if is_uuid(t):
        return x
    if pa.types.is_dictionary(x.type):
        x = x.cast(t)
    if pa.types.is_null(t):
        return uuid_array(pa.nulls(len(x), pa.binary(16)))
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)):
        raise SkipidxError(f"illegal type {t} of the argument of toUUID: expected String or UUID")
    storage, bad = parse_uuid_texts(x)
    if bad.true_count:
        if on_error == "raise":
            text = x.filter(bad)[0].as_py()
            text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
            raise SkipidxError(f"Cannot parse uuid {text}: Cannot parse UUID from String")
        if on_error == "null":
            storage = pc.if_else(bad, pa.scalar(None, pa.binary(16)), storage)
        # "zero": parse_uuid_texts already leaves zero bytes for a bad text
    return uuid_array(storage)


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
        return float_texts(x)
    if pa.types.is_decimal(t):
        return decimal_texts(x)
    if pa.types.is_date(t):
        return x.cast(pa.date32()).cast(pa.string())
    if pa.types.is_timestamp(t):
        return timestamp_texts(x)
    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        return uuid_texts(x)
    if _is_list(t):
        return list_texts(x, quoted_texts)
    raise SkipidxError(f"toString of {t} is not supported")


def timestamp_texts(x: pa.Array) -> pa.Array:
    t = x.type
    local = pc.local_timestamp(x) if t.tz else x
    # %S of a sub-second timestamp carries its fraction (3/6/9 digits), as DateTime64(3/6/9) prints
    return pc.strftime(local.cast(pa.timestamp(t.unit)), format="%Y-%m-%d %H:%M:%S")


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def list_texts(x: pa.Array, element_texts) -> pa.Array:
    """``[e1,e2,...]`` per row, the elements written by `element_texts` (a column
    function that leaves no nulls); NULL rows stay null."""
    x = _one(x)
    n = len(x)
    if pa.types.is_fixed_size_list(x.type):
        size = x.type.list_size
        offs = np.arange(x.offset * size, (x.offset + n) * size + 1, size, dtype=np.int64)
    else:
        offs = np.asarray(x.offsets, dtype=np.int64)
    values = x.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
    inner = element_texts(values).cast(pa.large_string())
    lists = pa.LargeListArray.from_arrays(pa.array(offs - offs[0], pa.int64()), inner,
                                          mask=x.is_null() if x.null_count else None)
    joined = pc.binary_join(lists, pa.scalar(",", pa.large_string()))
    return pc.binary_join_element_wise("[", joined.cast(pa.string()), "]", "")


_QUOTE_ESC = [("\\", "\\\\"), ("'", "\\'"), ("\n", "\\n"), ("\t", "\\t"), ("\0", "\\0"),
              ("\r", "\\r"), ("\b", "\\b"), ("\f", "\\f")]


def quote_strings(s: pa.Array) -> pa.Array:
    """ClickHouse's quoted string text ('...' with backslash escapes)."""
    for a, b in _QUOTE_ESC:
        if pc.any(pc.match_substring(s, a)).as_py():
            s = pc.replace_substring(s, a, b)
    return pc.binary_join_element_wise("'", s, "'", "")


def quoted_texts(x: pa.Array) -> pa.Array:
    """ClickHouse's quoted text of each value (an array element): numbers and
    booleans bare, everything else quoted, NULL as ``NULL``; never null."""
    x = _one(x)
    t = x.type
    if pa.types.is_null(t):
        return pa.array(["NULL"] * len(x), pa.string())
    if _is_list(t):
        s = list_texts(x, quoted_texts)
    elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t):
        s = to_string(x)
    elif pa.types.is_fixed_size_binary(t) and t.byte_width == 16 or \
            isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        s = quote_strings(uuid_texts(x))
    else:
        s = to_string(x)
        if not pa.types.is_string(s.type):
            s = s.cast(pa.string(), safe=False)
        s = quote_strings(s)
    return s.fill_null("NULL") if s.null_count else s


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
    from skipidx.core.hashing import xxh64_array

    x = _one(a)
    t = x.type
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        return pa.array(np.asarray(xxh64_array(x.cast(pa.binary()).fill_null(b"")), np.uint64), pa.uint64(),
                        mask=_mask(x))
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        width = t.bit_width // 8
        vals = x.fill_null(0).to_numpy(zero_copy_only=False)
        raw = vals.astype(vals.dtype.newbyteorder("<")).tobytes()
        # each value's bytes as one binary value, hashed by the same kernel as strings
        offsets = np.arange(0, width * len(vals) + 1, width, dtype=np.int32)
        values = pa.Array.from_buffers(pa.binary(), len(vals), [None, pa.py_buffer(offsets), pa.py_buffer(raw)])
        return pa.array(np.asarray(xxh64_array(values), np.uint64), pa.uint64(), mask=_mask(x))
    raise SkipidxError(f"xxHash64 of {t} is not supported")
