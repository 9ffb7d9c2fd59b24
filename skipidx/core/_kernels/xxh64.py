"""XXH64 (seeded) as numba functions over uint8 buffers.

`xxh64_span(buf, start, length, seed)` hashes ``buf[start:start+length]``;
it is an ``njit`` function so other kernels (tokenizers, fused index builds)
can call it inline. For short inputs there are two inlinable variants:
`xxh64_inline` (the short path inlined with its natural branches, for slices
of steady length such as n-grams) and `xxh64_short` (< 32 bytes only,
branch-light, for tokens whose lengths vary unpredictably).
`xxh64_u32`/`xxh64_u64` are the fixed 4- and 8-byte paths (a Parquet
INT32/INT64/FLOAT/DOUBLE value), `xxh64_offsets` hashes every slice of an
Arrow-style (offsets, data) pair.

Arithmetic is uint64 with wrap-around; every constant is typed np.uint64 so
numba never promotes to float.
"""
from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

_LITTLE = sys.byteorder == "little"

P1 = np.uint64(0x9E3779B185EBCA87)
P2 = np.uint64(0xC2B2AE3D27D4EB4F)
P3 = np.uint64(0x165667B19E3779F9)
P4 = np.uint64(0x85EBCA77C2B2AE63)
P5 = np.uint64(0x27D4EB2F165667C5)


@njit(inline="always", cache=True)
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(inline="always", cache=True)
def _round(acc, lane):
    acc = acc + lane * P2
    acc = _rotl(acc, 31)
    return acc * P1


@njit(inline="always", cache=True)
def _merge(acc, val):
    acc = acc ^ _round(np.uint64(0), val)
    return acc * P1 + P4


@njit(inline="always", cache=True)
def _avalanche(h):
    h = h ^ (h >> np.uint64(33))
    h = h * P2
    h = h ^ (h >> np.uint64(29))
    h = h * P3
    return h ^ (h >> np.uint64(32))


@njit(inline="always", cache=True)
def _read64_bytes(buf, i):
    return (np.uint64(buf[i]) | (np.uint64(buf[i + 1]) << np.uint64(8))
            | (np.uint64(buf[i + 2]) << np.uint64(16)) | (np.uint64(buf[i + 3]) << np.uint64(24))
            | (np.uint64(buf[i + 4]) << np.uint64(32)) | (np.uint64(buf[i + 5]) << np.uint64(40))
            | (np.uint64(buf[i + 6]) << np.uint64(48)) | (np.uint64(buf[i + 7]) << np.uint64(56)))


@njit(inline="always", cache=True)
def _read32_bytes(buf, i):
    return (np.uint64(buf[i]) | (np.uint64(buf[i + 1]) << np.uint64(8))
            | (np.uint64(buf[i + 2]) << np.uint64(16)) | (np.uint64(buf[i + 3]) << np.uint64(24)))


def _unaligned_load(bits):
    """An intrinsic: the `bits`-wide integer at byte i of a contiguous uint8 array (native order).

    LLVM does not fuse the eight byte loads of `_read64_bytes` into one load,
    and byte-wise reads make XXH64 of short strings several times slower.
    """
    @intrinsic
    def load(typingctx, arr, idx):
        sig = types.uint64(arr, idx)

        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(bits).as_pointer())
            v = builder.load(ptr, align=1)
            return v if bits == 64 else builder.zext(v, ir.IntType(64))

        return sig, codegen

    return load


_load64 = _unaligned_load(64)
_load32 = _unaligned_load(32)


def _fast_path(buf) -> bool:
    # One wide load reads the following bytes of memory: only right for a contiguous uint8
    # array, and only little-endian hosts read them in the XXH64 (little-endian) order.
    return (_LITTLE and isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"
            and buf.dtype == types.uint8)


def _read64(buf, i):
    """The 8 bytes buf[i:i+8] as a little-endian uint64 (njit only)."""
    raise TypeError("_read64 is only callable from numba-compiled code")


def _read32(buf, i):
    """The 4 bytes buf[i:i+4] as a little-endian integer, widened to uint64 (njit only)."""
    raise TypeError("_read32 is only callable from numba-compiled code")


@overload(_read64, inline="always")
def _ol_read64(buf, i):
    if _fast_path(buf):
        return lambda buf, i: _load64(buf, i)
    return lambda buf, i: _read64_bytes(buf, i)


@overload(_read32, inline="always")
def _ol_read32(buf, i):
    if _fast_path(buf):
        return lambda buf, i: _load32(buf, i)
    return lambda buf, i: _read32_bytes(buf, i)


@njit(inline="always", cache=True)
def _finish(buf, p, end, h):
    """XXH64's last (< 32) bytes buf[p:end] folded into h, then the avalanche."""
    while p + 8 <= end:
        h = h ^ _round(np.uint64(0), _read64(buf, p))
        h = _rotl(h, 27) * P1 + P4
        p += 8
    if p + 4 <= end:
        h = h ^ (_read32(buf, p) * P1)
        h = _rotl(h, 23) * P2 + P3
        p += 4
    while p < end:
        h = h ^ (np.uint64(buf[p]) * P5)
        h = _rotl(h, 11) * P1
        p += 1
    return _avalanche(h)


@njit(cache=True)
def xxh64_span(buf, start, length, seed):
    """XXH64 of buf[start:start+length] (buf: uint8 array), seed: uint64."""
    seed = np.uint64(seed)
    p = start
    end = start + length
    if length >= 32:
        v1 = seed + P1 + P2
        v2 = seed + P2
        v3 = seed
        v4 = seed - P1
        limit = end - 32
        while p <= limit:
            v1 = _round(v1, _read64(buf, p))
            v2 = _round(v2, _read64(buf, p + 8))
            v3 = _round(v3, _read64(buf, p + 16))
            v4 = _round(v4, _read64(buf, p + 24))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = seed + P5
    return _finish(buf, p, end, h + np.uint64(length))


@njit(inline="always", cache=True)
def xxh64_inline(buf, start, length, seed):
    """xxh64_span with the short-input path (< 32 bytes) inlined into the caller.

    For loops over many short slices of similar length (n-grams, tokens into a
    filter): inlining the short path halves the cost of a 3-byte hash; long
    inputs call xxh64_span. seed: uint64.
    """
    if length >= 32:
        return xxh64_span(buf, start, length, seed)
    return _finish(buf, start, start + length, seed + P5 + np.uint64(length))


@njit(inline="always", cache=True)
def xxh64_short(buf, p, length, seed):
    """XXH64 of buf[p:p+length] for length < 32 (bit-exact with `xxh64_span`), branch-light.

    Token lengths vary from one token to the next, so the 4-byte step and the
    0-3 tail bytes of XXH64 are computed unconditionally and selected, instead
    of branching on the length (a misprediction per token otherwise). Loads
    are clamped into the buffer so they are always safe; what they read past
    the token is discarded. seed: uint64.

    Callers branch on ``length < 32`` themselves (``xxh64_span`` otherwise): a
    dispatching wrapper returning from both branches is slower in the
    tokenizer kernels.
    """
    h = seed + P5 + np.uint64(length)
    end = p + length
    last = buf.shape[0] - 1
    while p + 8 <= end:
        h = h ^ _round(np.uint64(0), _read64(buf, p))
        h = _rotl(h, 27) * P1 + P4
        p += 8
    r = end - p
    w = _read32(buf, p) if p + 4 <= buf.shape[0] else np.uint64(0)
    h4 = _rotl(h ^ (w * P1), 23) * P2 + P3
    use4 = r >= 4
    h = h4 if use4 else h
    p = p + 4 if use4 else p
    r = end - p
    b0 = np.uint64(buf[min(p, last)])
    b1 = np.uint64(buf[min(p + 1, last)])
    b2 = np.uint64(buf[min(p + 2, last)])
    h1 = _rotl(h ^ (b0 * P5), 11) * P1
    h2 = _rotl(h1 ^ (b1 * P5), 11) * P1
    h3 = _rotl(h2 ^ (b2 * P5), 11) * P1
    h = h if r == 0 else (h1 if r == 1 else (h2 if r == 2 else h3))
    return _avalanche(h)


@njit(inline="always", cache=True)
def xxh64_u32(v, seed):
    """XXH64 of the 4 little-endian bytes of v (uint32 / int32 bits)."""
    h = np.uint64(seed) + P5 + np.uint64(4)
    h = h ^ (np.uint64(np.uint32(v)) * P1)
    h = _rotl(h, 23) * P2 + P3
    return _avalanche(h)


@njit(inline="always", cache=True)
def xxh64_u64(v, seed):
    """XXH64 of the 8 little-endian bytes of v (uint64 / int64 / double bits)."""
    h = np.uint64(seed) + P5 + np.uint64(8)
    h = h ^ _round(np.uint64(0), np.uint64(v))
    h = _rotl(h, 27) * P1 + P4
    return _avalanche(h)


@njit(cache=True)
def xxh64_offsets(data, offsets, seed):
    """XXH64 of every slice data[offsets[i]:offsets[i+1]] -> uint64[len(offsets)-1]."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = xxh64_span(data, offsets[i], offsets[i + 1] - offsets[i], seed)
    return out


@njit(cache=True)
def xxh64_u32_array(values, seed):
    out = np.empty(values.shape[0], dtype=np.uint64)
    for i in range(values.shape[0]):
        out[i] = xxh64_u32(values[i], seed)
    return out


@njit(cache=True)
def xxh64_u64_array(values, seed):
    out = np.empty(values.shape[0], dtype=np.uint64)
    for i in range(values.shape[0]):
        out[i] = xxh64_u64(values[i], seed)
    return out


@njit(cache=True)
def xxh64_fixed(data, width, n, seed):
    """XXH64 of n consecutive `width`-byte values of data (FIXED_LEN_BYTE_ARRAY) -> uint64[n]."""
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = xxh64_span(data, i * width, width, seed)
    return out
