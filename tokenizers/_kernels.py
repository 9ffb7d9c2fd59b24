"""Compiled (numba) kernels of the built-in tokenizers, over raw Arrow buffers.

Every kernel takes one Arrow binary-like array as three numpy views of its
buffers — ``data`` (uint8, the whole values buffer), ``offsets`` (int32 or
int64, already cut to ``offset .. offset + len + 1`` so a sliced array works
without copying) and ``validity`` (the packed validity bitmap as uint8, empty
when the array has no nulls) with ``voff``, the array's bit offset into it.
A null row yields no tokens.

Two output shapes:

* ``*_hashes`` — the fused index path: ``(rows int64, hashes uint64)``, each
  token hashed with XXH64(seed) straight from the data buffer; tokens are
  never materialized.
* ``*_spans`` — ``(rows, starts, ends)`` byte ranges into ``data`` (for
  ``tokenize()``: tests, the research bench).

Outputs grow by doubling (amortized O(1) per token), starting from an estimate
derived from the byte count, so one pass over the bytes suffices.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from skipidx._kernels.xxh64 import xxh64_span

# splitByNonAlpha: a token byte is an ASCII letter or digit, or any byte >= 0x80
# (so multi-byte UTF-8, and invalid UTF-8 too, always belongs to tokens).
TOKEN_BYTE = np.zeros(256, dtype=np.bool_)
for _c in b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz":
    TOKEN_BYTE[_c] = True
TOKEN_BYTE[0x80:] = True

# Code-point length by lead byte, as ClickHouse's UTF8::seqLength: a stray
# continuation byte (0x80-0xBF) or an impossible lead (>= 0xF8) counts as one
# code point of one byte; a truncated sequence is clamped to the string end.
SEQ_LEN = np.ones(256, dtype=np.int64)
SEQ_LEN[0xC0:0xE0] = 2
SEQ_LEN[0xE0:0xF0] = 3
SEQ_LEN[0xF0:0xF8] = 4

del _c


@njit(inline="always", cache=True)
def _valid(validity, voff, i):
    if validity.shape[0] == 0:
        return True
    j = voff + i
    return ((validity[j >> 3] >> (j & 7)) & 1) == 1


@njit(cache=True)
def _grow_i64(a, k):
    b = np.empty(max(2 * a.shape[0], 16), dtype=a.dtype)
    b[:k] = a[:k]
    return b


@njit(cache=True)
def _grow_u64(a, k):
    b = np.empty(max(2 * a.shape[0], 16), dtype=a.dtype)
    b[:k] = a[:k]
    return b


@njit(cache=True)
def _trim_i64(a, k):
    # A view would pin the (up to 2x) oversized buffer; copy when that wastes much.
    if k * 4 < a.shape[0] * 3:
        return a[:k].copy()
    return a[:k]


@njit(cache=True)
def _trim_u64(a, k):
    if k * 4 < a.shape[0] * 3:
        return a[:k].copy()
    return a[:k]


# --------------------------------------------------------------------------
# token (splitByNonAlpha)


@njit(cache=True)
def token_hashes(data, offsets, validity, voff, seed, capacity):
    """Fused splitByNonAlpha + XXH64: (rows, hashes) of every token of every valid row."""
    seed = np.uint64(seed)
    tb = TOKEN_BYTE
    n = offsets.shape[0] - 1
    rows = np.empty(max(capacity, 16), dtype=np.int64)
    hashes = np.empty(max(capacity, 16), dtype=np.uint64)
    k = 0
    for i in range(n):
        if not _valid(validity, voff, i):
            continue
        p = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        while p < e:
            while p < e and not tb[data[p]]:
                p += 1
            if p >= e:
                break
            q = p + 1
            while q < e and tb[data[q]]:
                q += 1
            if k == rows.shape[0]:
                rows = _grow_i64(rows, k)
                hashes = _grow_u64(hashes, k)
            rows[k] = i
            hashes[k] = xxh64_span(data, p, q - p, seed)
            k += 1
            p = q
    return _trim_i64(rows, k), _trim_u64(hashes, k)


@njit(cache=True)
def token_spans(data, offsets, validity, voff, capacity):
    """splitByNonAlpha: (rows, starts, ends) of every token of every valid row."""
    tb = TOKEN_BYTE
    n = offsets.shape[0] - 1
    rows = np.empty(max(capacity, 16), dtype=np.int64)
    starts = np.empty(max(capacity, 16), dtype=np.int64)
    ends = np.empty(max(capacity, 16), dtype=np.int64)
    k = 0
    for i in range(n):
        if not _valid(validity, voff, i):
            continue
        p = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        while p < e:
            while p < e and not tb[data[p]]:
                p += 1
            if p >= e:
                break
            q = p + 1
            while q < e and tb[data[q]]:
                q += 1
            if k == rows.shape[0]:
                rows = _grow_i64(rows, k)
                starts = _grow_i64(starts, k)
                ends = _grow_i64(ends, k)
            rows[k] = i
            starts[k] = p
            ends[k] = q
            k += 1
            p = q
    return _trim_i64(rows, k), _trim_i64(starts, k), _trim_i64(ends, k)


# --------------------------------------------------------------------------
# ngram(n): windows of n code points, advancing one code point
#
# ClickHouse walks each value from its first byte, one code point at a time
# (sized by the lead byte), and emits the n code points from each step. On
# valid UTF-8 that visits every code-point start. On invalid UTF-8 a lead byte
# can swallow the ASCII bytes after it ("K\xf6ln x": 0xF6 claims "ln "), so a
# substring that starts there is never the start of a gram and a query for
# it would miss the row: a false negative (ClickHouse has it). We therefore
# also start grams at every byte that can begin a code point (not 0x80-0xBF)
# and at every position such a walk reaches: on valid UTF-8 the grams are
# exactly ClickHouse's, on invalid UTF-8 a superset, and the query side may
# require the grams of any needle starting at such a byte.


@njit(inline="always", cache=True)
def _gram_end(data, p, e, n, sl):
    """End of the n code points from p (the last clamped to e), or -1 if fewer than n start before e."""
    q = p
    cnt = 0
    while cnt < n and q < e:
        q += sl[data[q]]
        cnt += 1
    if cnt < n:
        return -1
    return q if q < e else e


@njit(cache=True)
def ngram_hashes(data, offsets, validity, voff, n, seed, capacity):
    """Fused ngram(n) + XXH64: (rows, hashes) of every n-gram of every valid row."""
    seed = np.uint64(seed)
    sl = SEQ_LEN
    nrows = offsets.shape[0] - 1
    rows = np.empty(max(capacity, 16), dtype=np.int64)
    hashes = np.empty(max(capacity, 16), dtype=np.uint64)
    k = 0
    for i in range(nrows):
        if not _valid(validity, voff, i):
            continue
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        pend = np.uint32(1)  # bit j: position p + j is reached by a walk (the value's start is)
        for p in range(s, e):
            c = data[p]
            if (pend & np.uint32(1)) or c < 0x80 or c >= 0xC0:
                pend |= np.uint32(1) << np.uint32(sl[c])
                end = _gram_end(data, p, e, n, sl)
                if end < 0:
                    # Fewer than n code points from here; a later start can still
                    # have n (a long lead byte here may swallow several short ones).
                    pend >>= np.uint32(1)
                    continue
                if k == rows.shape[0]:
                    rows = _grow_i64(rows, k)
                    hashes = _grow_u64(hashes, k)
                rows[k] = i
                hashes[k] = xxh64_span(data, p, end - p, seed)
                k += 1
            pend >>= np.uint32(1)
    return _trim_i64(rows, k), _trim_u64(hashes, k)


@njit(cache=True)
def ngram_spans(data, offsets, validity, voff, n, capacity):
    """ngram(n): (rows, starts, ends) of every n-gram of every valid row."""
    sl = SEQ_LEN
    nrows = offsets.shape[0] - 1
    rows = np.empty(max(capacity, 16), dtype=np.int64)
    starts = np.empty(max(capacity, 16), dtype=np.int64)
    ends = np.empty(max(capacity, 16), dtype=np.int64)
    k = 0
    for i in range(nrows):
        if not _valid(validity, voff, i):
            continue
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        pend = np.uint32(1)
        for p in range(s, e):
            c = data[p]
            if (pend & np.uint32(1)) or c < 0x80 or c >= 0xC0:
                pend |= np.uint32(1) << np.uint32(sl[c])
                end = _gram_end(data, p, e, n, sl)
                if end < 0:
                    pend >>= np.uint32(1)
                    continue
                if k == rows.shape[0]:
                    rows = _grow_i64(rows, k)
                    starts = _grow_i64(starts, k)
                    ends = _grow_i64(ends, k)
                rows[k] = i
                starts[k] = p
                ends[k] = end
                k += 1
            pend >>= np.uint32(1)
    return _trim_i64(rows, k), _trim_i64(starts, k), _trim_i64(ends, k)


# --------------------------------------------------------------------------
# helpers shared by the tokenizers


@njit(cache=True)
def gather_spans(data, starts, ends):
    """Copy the byte ranges into one contiguous buffer: (offsets int64[n+1], data uint8)."""
    n = starts.shape[0]
    offs = np.empty(n + 1, dtype=np.int64)
    offs[0] = 0
    for k in range(n):
        offs[k + 1] = offs[k] + (ends[k] - starts[k])
    out = np.empty(offs[n], dtype=np.uint8)
    for k in range(n):
        out[offs[k]:offs[k + 1]] = data[starts[k]:ends[k]]
    return offs, out


@njit(cache=True)
def expand_by_index(indices, validity, voff, entry_rows, entry_hashes, n_entries):
    """Dictionary arrays: hash the dictionary once, then give every row its entry's hashes.

    ``entry_rows``/``entry_hashes`` are the (rows, hashes) of the dictionary
    (rows = entry number, non-decreasing); ``indices`` are the row -> entry
    codes. Returns (rows, hashes) for the rows, in row order.
    """
    first = np.zeros(n_entries + 1, dtype=np.int64)
    for t in range(entry_rows.shape[0]):
        first[entry_rows[t] + 1] += 1
    for d in range(n_entries):
        first[d + 1] += first[d]
    total = 0
    n = indices.shape[0]
    for i in range(n):
        if _valid(validity, voff, i):
            d = np.int64(indices[i])
            total += first[d + 1] - first[d]
    rows = np.empty(total, dtype=np.int64)
    hashes = np.empty(total, dtype=np.uint64)
    k = 0
    for i in range(n):
        if not _valid(validity, voff, i):
            continue
        d = np.int64(indices[i])
        for t in range(first[d], first[d + 1]):
            rows[k] = i
            hashes[k] = entry_hashes[t]
            k += 1
    return rows, hashes
