"""The Parquet RLE / bit-packed hybrid decoder (levels and dictionary indices)."""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["plain_byte_array", "plain_bounds", "rle_hybrid"]


@njit(cache=True, nogil=True)
def rle_hybrid(data, pos, end, bw, skip, count, out):
    """Decode `count` values of width `bw` (1..32), after the first `skip`, from the runs
    in ``data[pos:end]`` (uint8) into `out` (int32); returns `count`, or -1 where the runs
    end early or a header is malformed."""
    width = (bw + 7) // 8
    mask = (np.int64(1) << bw) - 1
    got = 0
    while got < count:
        h = np.int64(0)
        shift = 0
        while True:
            if pos >= end or shift > 35:
                return -1
            b = np.int64(data[pos])
            pos += 1
            h |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
        if h & 1:
            n = (h >> 1) * 8
            nb = (h >> 1) * bw
            if n == 0 or pos + nb > end:
                return -1
            if skip >= n:
                skip -= n
                pos += nb
                continue
            m = min(n - skip, count - got)
            base = pos * 8 + skip * bw
            skip = 0
            for k in range(m):
                start = base + k * bw
                bi = start >> 3
                off = start & 7
                acc = np.int64(0)
                nbits = 0
                while nbits < bw + off:
                    acc |= np.int64(data[bi]) << nbits
                    bi += 1
                    nbits += 8
                out[got + k] = (acc >> off) & mask
            got += m
            pos += nb
        else:
            n = h >> 1
            if n == 0 or pos + width > end:
                return -1
            v = np.int64(0)
            for k in range(width):
                v |= np.int64(data[pos + k]) << (8 * k)
            pos += width
            if skip >= n:
                skip -= n
                continue
            m = min(n - skip, count - got)
            skip = 0
            for k in range(m):
                out[got + k] = v
            got += m
    return got


@njit(cache=True, nogil=True)
def plain_byte_array(data, n, offsets, out):
    """Unpack `n` PLAIN BYTE_ARRAY values (each a 4-byte little-endian length, then the
    bytes) from `data` (uint8): the bytes back to back into `out`, value i at
    ``out[offsets[i]:offsets[i + 1]]``; returns the bytes written, or -1 where a length
    runs past the data."""
    end = data.shape[0]
    p = 0
    o = 0
    offsets[0] = 0
    for i in range(n):
        if p + 4 > end:
            return -1
        ln = (np.int64(data[p]) | (np.int64(data[p + 1]) << 8) | (np.int64(data[p + 2]) << 16)
              | (np.int64(data[p + 3]) << 24))
        p += 4
        if ln > end - p:
            return -1
        out[o:o + ln] = data[p:p + ln]
        o += ln
        p += ln
        offsets[i + 1] = o
    return o


@njit(cache=True, nogil=True)
def plain_bounds(data, pos, n, bounds):
    """Walk `n` PLAIN BYTE_ARRAY values (each a 4-byte little-endian length, then the
    bytes) in `data` (uint8) from `pos`, copying nothing: ``bounds[i]`` is where value
    i's bytes start and ``bounds[n]`` is 4 past the last value's end, so value i is
    ``data[bounds[i]:bounds[i + 1] - 4]``. Returns the position after the last value, or
    -1 where a length runs past the data."""
    end = data.shape[0]
    p = np.int64(pos)
    for i in range(n):
        if p + 4 > end:
            return -1
        ln = (np.int64(data[p]) | (np.int64(data[p + 1]) << 8) | (np.int64(data[p + 2]) << 16)
              | (np.int64(data[p + 3]) << 24))
        p += 4
        bounds[i] = p
        if ln > end - p:
            return -1
        p += ln
    bounds[n] = p + 4
    return p
