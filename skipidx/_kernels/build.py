"""Numba kernels of the SBBF index build (and the one check the conditions need).

The build works on a "bank": every zone's filter in one flat uint32 array
(``skipidx._kernels.sbbf`` layout: filter f owns blocks
``block_offset[f] .. block_offset[f] + num_blocks[f]``). Token hashes arrive
with the row they came from, rows non-decreasing (the tokenizer contract);
zones tile the rows, so the zone of a token is found by walking a pointer
along the zone ends -- no per-token search, no per-token zone array.

* :func:`insert_by_row` -- fixed-size filters (tokenbf_v1 / ngrambf_v1):
  every token straight into its zone's filter.
* :func:`dedup_by_zone` -- adaptive sizing (bloom_filter, sbbf): the distinct
  hashes of every zone, from one open-addressing hash set reused across zones
  (a slot belongs to the current zone iff its stamp says so, so the table is
  never cleared; it doubles while a zone fills it past half). The distinct
  counts size the filters; only the distinct hashes are inserted after.
* :func:`bank_insert_grouped` -- hashes[offsets[f]:offsets[f+1]] into filter f.
* :func:`bank_stats` -- per filter: fill ratio and the exact false-positive
  probability of a random lookup (mean over blocks of the product of the 8
  word fill ratios -- what a check of an absent hash actually meets).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from skipidx._kernels.sbbf import SALT, insert_one

#: Parquet / Arrow bounds on an SBBF's size.
MIN_BYTES = 32
MAX_BYTES = 128 * 1024 * 1024


def num_bytes_for_ndv(ndv: np.ndarray, fpp: float) -> np.ndarray:
    """Filter bytes for ``ndv`` distinct values at ``fpp``, as Arrow/parquet-java size them.

    Arrow's ``BlockSplitBloomFilter::OptimalNumOfBytes``: m = -8 ndv / ln(1 - fpp^(1/8))
    bits, clamped to [32 B, 128 MiB], rounded up to a power of two. Vectorized
    over zones; equals ``SBBF.for_ndv(ndv, fpp).num_bytes`` (tested).
    """
    ndv = np.asarray(ndv, dtype=np.float64)
    m = -8.0 * ndv / math.log(1.0 - fpp ** (1.0 / 8.0))
    bits = np.where((m < 0) | (m > MAX_BYTES * 8), MAX_BYTES * 8, np.floor(m)).astype(np.int64)
    bits = np.maximum(bits, MIN_BYTES * 8)
    # next power of two (bits >= 256 here, so log2 is safe)
    p2 = np.left_shift(np.int64(1), np.ceil(np.log2(bits.astype(np.float64))).astype(np.int64))
    # guard float rounding of log2 at exact powers of two
    p2 = np.where(p2 // 2 >= bits, p2 // 2, p2)
    p2 = np.where(p2 < bits, p2 * 2, p2)
    return np.minimum(p2, MAX_BYTES * 8) // 8


@njit(cache=True, nogil=True)
def insert_by_row(words, block_offset, num_blocks, zone_end, rows, hashes, salt):
    """Insert every hash into the filter of the zone holding its row.

    ``zone_end[z]`` is the first row after zone z (rows relative to the same
    origin); rows must be non-decreasing and inside the zones.
    """
    z = 0
    nz = zone_end.shape[0]
    for j in range(hashes.shape[0]):
        r = rows[j]
        while z < nz and r >= zone_end[z]:
            z += 1
        insert_one(words, block_offset[z], num_blocks[z], hashes[j], salt)


@njit(cache=True)
def _probe_insert(keys, stamps, mask, h, stamp):
    """Insert h into the hash set; True if it was new. Linear probing on the low bits.

    xxh64 output is already uniform; the low bits are independent of the
    high 32 bits the SBBF uses to pick a block.
    """
    i = np.int64(h & np.uint64(mask))
    while True:
        if stamps[i] != stamp:
            stamps[i] = stamp
            keys[i] = h
            return True
        if keys[i] == h:
            return False
        i = (i + 1) & mask


@njit(cache=True, nogil=True)
def dedup_by_zone(zone_end, rows, hashes):
    """Distinct hashes of every zone, zone-contiguous.

    Returns (uniq uint64[u], offsets int64[nz+1]): zone z's distinct hashes
    are ``uniq[offsets[z]:offsets[z+1]]`` (in first-seen order).
    """
    nz = zone_end.shape[0]
    n = hashes.shape[0]
    uniq = np.empty(n, dtype=np.uint64)
    offsets = np.zeros(nz + 1, dtype=np.int64)
    cap = 4096
    keys = np.empty(cap, dtype=np.uint64)
    stamps = np.zeros(cap, dtype=np.int32)
    mask = cap - 1
    u = 0
    j = 0
    for z in range(nz):
        stamp = np.int32(z + 1)
        zone_first = u
        end = zone_end[z]
        while j < n and rows[j] < end:
            h = hashes[j]
            j += 1
            if _probe_insert(keys, stamps, mask, h, stamp):
                uniq[u] = h
                u += 1
                if 2 * (u - zone_first) > cap:
                    # grow and re-insert this zone's distinct hashes (older
                    # zones' slots are dead anyway: their stamps differ)
                    cap *= 2
                    mask = cap - 1
                    keys = np.empty(cap, dtype=np.uint64)
                    stamps = np.zeros(cap, dtype=np.int32)
                    for k in range(zone_first, u):
                        _probe_insert(keys, stamps, mask, uniq[k], stamp)
        offsets[z + 1] = u
    return uniq[:u].copy(), offsets


@njit(cache=True, nogil=True)
def bank_insert_grouped(words, block_offset, num_blocks, hashes, offsets, salt):
    for f in range(block_offset.shape[0]):
        for j in range(offsets[f], offsets[f + 1]):
            insert_one(words, block_offset[f], num_blocks[f], hashes[j], salt)


@njit(inline="always", cache=True)
def _popcount32(v):
    v = np.uint32(v)
    v = v - ((v >> np.uint32(1)) & np.uint32(0x55555555))
    v = (v & np.uint32(0x33333333)) + ((v >> np.uint32(2)) & np.uint32(0x33333333))
    v = (v + (v >> np.uint32(4))) & np.uint32(0x0F0F0F0F)
    return np.int64(np.uint32(v * np.uint32(0x01010101)) >> np.uint32(24))


@njit(cache=True, nogil=True)
def bank_stats(words, block_offset, num_blocks):
    """(fill ratio, false-positive probability of a random absent hash) per filter."""
    nf = block_offset.shape[0]
    fill = np.zeros(nf, dtype=np.float64)
    fpp = np.zeros(nf, dtype=np.float64)
    for f in range(nf):
        ones = 0
        acc = 0.0
        nb = num_blocks[f]
        for b in range(block_offset[f], block_offset[f] + nb):
            p = 1.0
            for i in range(8):
                c = _popcount32(words[b * 8 + i])
                ones += c
                p *= c / 32.0
            acc += p
        if nb > 0:
            fill[f] = ones / (nb * 256.0)
            fpp[f] = acc / nb
    return fill, fpp


__all__ = [
    "SALT", "MIN_BYTES", "MAX_BYTES", "num_bytes_for_ndv", "insert_by_row", "dedup_by_zone",
    "bank_insert_grouped", "bank_stats",
]


# ---------------------------------------------------------------------------
# Fused tokenize -> hash -> insert kernels for the built-in text tokenizers.
#
# They walk one binary-like Arrow array (H2's buffer_views: data, offsets,
# validity, voff) zone by zone and never materialize (row, hash) arrays:
# each token is hashed where it lies in the data buffer and goes straight into
# its zone's filter (fixed sizing) or into the per-zone distinct set
# (adaptive sizing). The tokenization is the built-in tokenizers' own (same
# byte table / same code-point walk, imported from skipidx_tokenizers); the
# tests check that both paths build identical filters.

from skipidx._kernels.xxh64 import P1, P2, P3, P4, P5, _avalanche, _read32, _read64, _rotl, _round  # noqa: E402
from skipidx._kernels.xxh64 import xxh64_span  # noqa: E402
from skipidx_tokenizers._kernels import SEQ_LEN, TOKEN_BYTE, _gram_end, _valid  # noqa: E402


@njit(inline="always", cache=True)
def _xxh64_token(buf, start, length, seed):
    """xxh64_span, with the short-input path (< 32 bytes: nearly every token) inlined.

    Same arithmetic as ``xxh64_span``'s tail; inlining it into the token loop
    halves the cost of a 3-byte hash (measured: ~17 ns -> ~9 ns).
    """
    if length >= 32:
        return xxh64_span(buf, start, length, seed)
    h = seed + P5 + np.uint64(length)
    p = start
    end = start + length
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

_MODE_FIXED = 0
_MODE_DISTINCT = 1


@njit(cache=True)
def _new_set(cap):
    return np.empty(cap, dtype=np.uint64), np.zeros(cap, dtype=np.int32)


@njit(cache=True)
def _grow_u64(a):
    b = np.empty(2 * a.shape[0], dtype=np.uint64)
    b[:a.shape[0]] = a
    return b


@njit(cache=True, nogil=True)
def token_zones(data, offsets, validity, voff, zone_end, mode, words, block_offset, num_blocks, seed, salt):
    """splitByNonAlpha tokens of every valid row, zone by zone.

    mode 0 (fixed): insert every token hash into words (the zone's filter);
    mode 1 (distinct): return the distinct hashes per zone (uniq, offsets).
    """
    seed = np.uint64(seed)
    tb = TOKEN_BYTE
    nz = zone_end.shape[0]
    offs_out = np.zeros(nz + 1, dtype=np.int64)
    uniq = np.empty(1024 if mode == 1 else 1, dtype=np.uint64)
    cap = 4096
    keys, stamps = _new_set(cap if mode == 1 else 1)
    mask = cap - 1
    u = 0
    i = 0
    for z in range(nz):
        stamp = np.int32(z + 1)
        first = u
        while i < zone_end[z]:
            if _valid(validity, voff, i):
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
                    h = _xxh64_token(data, p, q - p, seed)
                    if mode == 0:
                        insert_one(words, block_offset[z], num_blocks[z], h, salt)
                    elif _probe_insert(keys, stamps, mask, h, stamp):
                        if u == uniq.shape[0]:
                            uniq = _grow_u64(uniq)
                        uniq[u] = h
                        u += 1
                        if 2 * (u - first) > cap:
                            cap *= 2
                            mask = cap - 1
                            keys, stamps = _new_set(cap)
                            for k in range(first, u):
                                _probe_insert(keys, stamps, mask, uniq[k], stamp)
                    p = q
            i += 1
        offs_out[z + 1] = u
    return uniq[:u].copy(), offs_out


@njit(cache=True, nogil=True)
def ngram_zones(data, offsets, validity, voff, n, zone_end, mode, words, block_offset, num_blocks, seed, salt):
    """ngram(n) of every valid row (the ngram tokenizer's code-point walk), zone by zone; modes as token_zones."""
    seed = np.uint64(seed)
    sl = SEQ_LEN
    nz = zone_end.shape[0]
    offs_out = np.zeros(nz + 1, dtype=np.int64)
    uniq = np.empty(1024 if mode == 1 else 1, dtype=np.uint64)
    cap = 4096
    keys, stamps = _new_set(cap if mode == 1 else 1)
    mask = cap - 1
    u = 0
    i = 0
    for z in range(nz):
        stamp = np.int32(z + 1)
        first = u
        while i < zone_end[z]:
            if _valid(validity, voff, i):
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
                        h = _xxh64_token(data, p, end - p, seed)
                        if mode == 0:
                            insert_one(words, block_offset[z], num_blocks[z], h, salt)
                        elif _probe_insert(keys, stamps, mask, h, stamp):
                            if u == uniq.shape[0]:
                                uniq = _grow_u64(uniq)
                            uniq[u] = h
                            u += 1
                            if 2 * (u - first) > cap:
                                cap *= 2
                                mask = cap - 1
                                keys, stamps = _new_set(cap)
                                for k in range(first, u):
                                    _probe_insert(keys, stamps, mask, uniq[k], stamp)
                    pend >>= np.uint32(1)
            i += 1
        offs_out[z + 1] = u
    return uniq[:u].copy(), offs_out
