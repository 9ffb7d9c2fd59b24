"""Rounding and sign functions (round, floor, ceil, trunc, abs) with ClickHouse's types:
the argument's type is kept (abs of a signed integer is the unsigned type of its width),
integers round at a negative scale within their type (wrapping as ClickHouse does:
``round(toUInt8(255), -1)`` is 4), floats at any scale with the scale multiplied in
(half to even, as ``nearbyint``)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from skipidx.core.arrays import one_array
from skipidx.core.errors import SkipidxError

_UNSIGNED = {8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}


def _values(a: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    a = one_array(a)
    mask = np.asarray(a.is_null(), dtype=bool) if a.null_count else None
    t = a.type
    fill = 0.0 if pa.types.is_floating(t) else 0
    return np.asarray(a.fill_null(pa.scalar(fill, t)).to_numpy(zero_copy_only=False)), mask


def _scale(scale) -> int:
    s = 0 if scale is None else scale
    if isinstance(s, bool) or not isinstance(s, int):
        raise SkipidxError("the scale (second argument) must be an integer constant")
    return s


def rounding(a, scale=None, mode: str = "round") -> pa.Array:
    """round / floor / ceil / trunc of x at `scale` decimal places (negative: tens, hundreds...)."""
    a = one_array(a)
    t = a.type
    s = _scale(scale)
    x, mask = _values(a)
    if pa.types.is_floating(t):
        with np.errstate(over="ignore", invalid="ignore"):
            if s == 0:
                out = _FLOAT_OPS[mode](x)
            elif s > 0:
                f = 10.0 ** s
                y = _FLOAT_OPS[mode](x * f) / f
                out = np.where(np.isfinite(x * f), y, x)     # too large to scale: already whole
            else:
                f = 10.0 ** (-s)
                out = _FLOAT_OPS[mode](x / f) * f
        return pa.array(out.astype(x.dtype), t, mask=mask)
    if s >= 0:
        return a
    # integers at a negative scale, step by step as ClickHouse's IntegerRoundingComputation:
    # the adjustment wraps in the type, the rounding add is C's (8/16-bit types promoted to
    # int), division truncates toward zero
    p = 10 ** (-s)
    dt = x.dtype
    if p > np.iinfo(dt).max:
        return pa.array(np.zeros(len(x), dt), t, mask=mask)
    sc = dt.type(p)
    one = dt.type(1)
    with np.errstate(over="ignore"):
        if mode == "trunc":
            r = x - np.fmod(x, sc)
        elif mode == "floor":
            y = np.where(x < 0, x - (sc - one), x).astype(dt)
            r = y - np.fmod(y, sc)
        elif mode == "ceil":
            y = np.where(x >= 0, x + (sc - one), x).astype(dt)
            r = y - np.fmod(y, sc)
        else:
            y = np.where(x < 0, x - sc, x).astype(dt)
            wide = np.int32 if dt.itemsize <= 2 else dt.type
            y = y.astype(wide) + wide(p // 2)
            r = y - np.fmod(y, wide(p))
    return pa.array(r.astype(dt), t, mask=mask)


_FLOAT_OPS = {"round": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}


def abs_result_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_signed_integer(t):
        return _UNSIGNED[t.bit_width]
    return t


def abs_(a) -> pa.Array:
    a = one_array(a)
    t = a.type
    x, mask = _values(a)
    if pa.types.is_signed_integer(t):
        u = np.abs(x.astype(np.int64)).astype(np.uint64) if t.bit_width < 64 else \
            np.where(x < 0, (~x.view(np.uint64)) + np.uint64(1), x.view(np.uint64))
        rt = abs_result_type(t)
        return pa.array(u.astype(rt.to_pandas_dtype()), rt, mask=mask)
    if pa.types.is_floating(t):
        return pa.array(np.abs(x), t, mask=mask)
    return a


def _floats(a) -> tuple[np.ndarray, np.ndarray | None]:
    a = one_array(a)
    mask = np.asarray(a.is_null(), dtype=bool) if a.null_count else None
    # a 64-bit integer beyond 2^53 is rounded to the nearest double, as ClickHouse converts it
    return np.asarray(a.cast(pa.float64(), safe=False).fill_null(0.0).to_numpy(zero_copy_only=False),
                      dtype=np.float64), mask


def float_fn(name: str, *args) -> pa.Array:
    """sqrt, exp, log (ln), log2, log10, pow of numbers as Float64 (nan / inf as IEEE gives them)."""
    vals = [_floats(a) for a in args]
    masks = [m for _, m in vals if m is not None]
    mask = np.logical_or.reduce(masks) if masks else None
    xs = [v for v, _ in vals]
    with np.errstate(all="ignore"):
        out = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10,
               "pow": np.power}[name](*xs)
    return pa.array(np.asarray(out, dtype=np.float64), pa.float64(), mask=mask)


_READABLE = {
    "size": (1024.0, ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"], " "),
    "decimal": (1000.0, ["B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"], " "),
    "quantity": (1000.0, ["", "thousand", "million", "billion", "trillion", "quadrillion", "quintillion",
                          "sextillion", "septillion", "octillion", "nonillion", "decillion", "undecillion",
                          "duodecillion", "tredecillion", "quattuordecillion", "quindecillion", "sexdecillion",
                          "septendecillion", "octodecillion", "novemdecillion", "vigintillion"], " "),
}


def readable(a, kind: str) -> pa.Array:
    """formatReadableSize / formatReadableDecimalSize / formatReadableQuantity: the number divided
    down while it is at least the base (to the last unit), printed %.2f with its unit."""
    base, units, sep = _READABLE[kind]
    x, mask = _floats(a)
    v = x.copy()
    idx = np.zeros(len(v), np.int64)
    with np.errstate(invalid="ignore"):
        for _ in range(len(units) - 1):
            big = np.abs(v) >= base
            if not big.any():
                break
            v = np.where(big, v / base, v)
            idx += big
    with np.errstate(invalid="ignore", over="ignore"):
        # two decimals, halves away from zero (0.125 -> 0.13), as ClickHouse rounds them
        r = np.where(np.isfinite(v) & (np.abs(v) < 1e15), np.sign(v) * np.floor(np.abs(v) * 100 + 0.5) / 100, v)
    nums = np.char.mod("%.2f", r) if len(r) else np.array([], dtype=str)
    unit = np.array(units, dtype=object)[idx]
    text = [n if not u else f"{n}{sep}{u}" for n, u in zip(nums.tolist(), unit.tolist())]
    return pa.array(text, pa.string(), mask=mask)
