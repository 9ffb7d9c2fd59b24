"""Split Block Bloom Filter bit twiddling as numba functions (Parquet spec).

A filter is a uint32 array of ``8 * num_blocks`` words (block-major, the
little-endian on-disk layout viewed as uint32). For hash h:

    block = ((h >> 32) * num_blocks) >> 32
    key   = lo32(h)
    bit i = (key * SALT[i] mod 2**32) >> 27      (i = 0..7, one bit per word)

A *bank* is many filters in one flat uint32 array: filter f occupies blocks
``block_offset[f] .. block_offset[f] + num_blocks[f]``; that is the batched
layout the store and the planner use (one numpy call over all granules).
"""
from __future__ import annotations

import math

import numpy as np
from skipidx.core.lazy import njit

SALT = np.array(
    [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
     0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31],
    dtype=np.uint32,
)


@njit(inline="always", cache=True)
def block_index(h, num_blocks):
    return np.int64(((h >> np.uint64(32)) * np.uint64(num_blocks)) >> np.uint64(32))


@njit(inline="always", cache=True)
def _set_bits(words, base, h, salt):
    """Set h's 8 bits in the block whose first word is words[base]."""
    key = np.uint32(h & np.uint64(0xFFFFFFFF))
    for i in range(8):
        words[base + i] |= np.uint32(1) << (np.uint32(key * salt[i]) >> np.uint32(27))


@njit(inline="always", cache=True)
def _has_bits(words, base, h, salt):
    """Whether all of h's 8 bits are set in the block whose first word is words[base]."""
    key = np.uint32(h & np.uint64(0xFFFFFFFF))
    for i in range(8):
        if (words[base + i] & (np.uint32(1) << (np.uint32(key * salt[i]) >> np.uint32(27)))) == 0:
            return False
    return True


@njit(inline="always", cache=True)
def insert_one(words, first_block, num_blocks, h, salt):
    """Set h's 8 bits in the filter whose blocks start at `first_block` of `words`."""
    _set_bits(words, (first_block + block_index(h, num_blocks)) * 8, h, salt)


@njit(inline="always", cache=True)
def check_one(words, first_block, num_blocks, h, salt):
    return _has_bits(words, (first_block + block_index(h, num_blocks)) * 8, h, salt)


# Filters beyond this many blocks (1 MiB) outgrow the L2 cache: their inserts and
# checks run in batches that first load every batch member's block (independent
# loads the CPU overlaps) and only then work on them. In-cache filters skip it
# (the extra pass costs there; figures in bench/NOTES.md).
BATCH_MIN_BLOCKS = 32768
_BATCH = 32

# The block-loading pass is written out in both batched kernels on purpose: a
# shared inline helper returning the sink is slower on insert.


@njit(cache=True)
def _insert_batched(words, block_offset, num_blocks, filter_ids, hashes, salt, single):
    n = hashes.shape[0]
    bases = np.empty(_BATCH, dtype=np.int64)
    sink = np.uint32(0)
    j = 0
    while j < n:
        m = min(_BATCH, n - j)
        for t in range(m):
            f = 0 if single else filter_ids[j + t]
            b = (block_offset[f] + block_index(hashes[j + t], num_blocks[f])) * 8
            bases[t] = b
            sink |= words[b]
        for t in range(m):
            _set_bits(words, bases[t], hashes[j + t], salt)
        j += m
    return sink


@njit(cache=True)
def _check_batched(words, block_offset, num_blocks, filter_ids, hashes, salt, single, out):
    n = hashes.shape[0]
    bases = np.empty(_BATCH, dtype=np.int64)
    sink = np.uint32(0)
    j = 0
    while j < n:
        m = min(_BATCH, n - j)
        for t in range(m):
            f = 0 if single else filter_ids[j + t]
            b = (block_offset[f] + block_index(hashes[j + t], num_blocks[f])) * 8
            bases[t] = b
            sink |= words[b]
        for t in range(m):
            out[j + t] = _has_bits(words, bases[t], hashes[j + t], salt)
        j += m
    return sink


@njit(cache=True)
def insert_hashes(words, num_blocks, hashes, salt):
    if num_blocks >= BATCH_MIN_BLOCKS:
        one = np.zeros(1, dtype=np.int64)
        _insert_batched(words, one, np.full(1, num_blocks, dtype=np.int64), one, hashes, salt, True)
        return
    for j in range(hashes.shape[0]):
        insert_one(words, 0, num_blocks, hashes[j], salt)


@njit(cache=True)
def check_hashes(words, num_blocks, hashes, salt):
    out = np.empty(hashes.shape[0], dtype=np.bool_)
    if num_blocks >= BATCH_MIN_BLOCKS:
        one = np.zeros(1, dtype=np.int64)
        _check_batched(words, one, np.full(1, num_blocks, dtype=np.int64), one, hashes, salt, True, out)
        return out
    for j in range(hashes.shape[0]):
        out[j] = check_one(words, 0, num_blocks, hashes[j], salt)
    return out


@njit(cache=True)
def bank_insert(words, block_offset, num_blocks, filter_ids, hashes, salt):
    """Insert hashes[j] into filter filter_ids[j] of a bank.

    Sparse inserts into a bank beyond the cache (fewer hashes than the bank
    has blocks, e.g. 1M hashes over 1221 x 32 KiB) take the batched path.
    """
    if words.shape[0] >= 8 * BATCH_MIN_BLOCKS and hashes.shape[0] < words.shape[0] // 8:
        _insert_batched(words, block_offset, num_blocks, filter_ids, hashes, salt, False)
        return
    for j in range(hashes.shape[0]):
        f = filter_ids[j]
        insert_one(words, block_offset[f], num_blocks[f], hashes[j], salt)


@njit(cache=True)
def bank_check_all(words, block_offset, num_blocks, hashes, salt):
    """out[f] = every hash in `hashes` may be in filter f (AND over hashes)."""
    nf = block_offset.shape[0]
    out = np.ones(nf, dtype=np.bool_)
    for f in range(nf):
        for j in range(hashes.shape[0]):
            if not check_one(words, block_offset[f], num_blocks[f], hashes[j], salt):
                out[f] = False
                break
    return out


@njit(cache=True)
def _any_single_batched(words, block_offset, num_blocks, hashes, salt, out):
    """bank_check_any_of when every group is one hash (IN lists, ``=``), for banks beyond the cache.

    A batch of filters first computes the block of every (filter, hash) pair
    and loads one word of each (independent loads the CPU overlaps), then
    checks the bits; without it each probe waits for its own miss.
    """
    nf = block_offset.shape[0]
    nh = hashes.shape[0]
    per = max(1, _BATCH // max(nh, 1))           # filters per batch: ~_BATCH probes in flight
    bases = np.empty(per * nh, dtype=np.int64)
    sink = np.uint32(0)
    f0 = 0
    while f0 < nf:
        m = min(per, nf - f0)
        for t in range(m):
            f = f0 + t
            bo, nb = block_offset[f], num_blocks[f]
            for j in range(nh):
                b = (bo + block_index(hashes[j], nb)) * 8
                bases[t * nh + j] = b
                sink |= words[b]
        for t in range(m):
            for j in range(nh):
                if _has_bits(words, bases[t * nh + j], hashes[j], salt):
                    out[f0 + t] = True
                    break
        f0 += m
    return sink


@njit(cache=True)
def bank_check_any_of(words, block_offset, num_blocks, hashes, group_offsets, salt):
    """out[f] = OR over groups g of (AND over hashes[group_offsets[g]:group_offsets[g+1]]).

    An empty group is vacuously true (it requires nothing), so it keeps every filter.
    `block_offset`/`num_blocks` may list any subset of a bank's filters (the
    planner passes the granules still kept).
    """
    nf = block_offset.shape[0]
    ng = group_offsets.shape[0] - 1
    out = np.zeros(nf, dtype=np.bool_)
    if ng > 0 and ng == hashes.shape[0] and group_offsets[0] == 0 and words.shape[0] >= 8 * BATCH_MIN_BLOCKS:
        single = True
        for g in range(ng):
            if group_offsets[g + 1] - group_offsets[g] != 1:
                single = False
                break
        if single:
            _any_single_batched(words, block_offset, num_blocks, hashes, salt, out)
            return out
    for f in range(nf):
        for g in range(ng):
            ok = True
            for j in range(group_offsets[g], group_offsets[g + 1]):
                if not check_one(words, block_offset[f], num_blocks[f], hashes[j], salt):
                    ok = False
                    break
            if ok:
                out[f] = True
                break
    return out


@njit(cache=True)
def bank_check_matrix(words, block_offset, num_blocks, hashes, salt):
    """out[f, j] = hashes[j] may be in filter f (every hash against every filter)."""
    nf = block_offset.shape[0]
    nh = hashes.shape[0]
    out = np.empty((nf, nh), dtype=np.bool_)
    for f in range(nf):
        for j in range(nh):
            out[f, j] = check_one(words, block_offset[f], num_blocks[f], hashes[j], salt)
    return out


@njit(cache=True)
def bank_check_pairs(words, block_offset, num_blocks, filter_ids, hashes, salt):
    """out[j] = hashes[j] may be in filter filter_ids[j] (the check twin of bank_insert)."""
    out = np.empty(hashes.shape[0], dtype=np.bool_)
    if words.shape[0] >= 8 * BATCH_MIN_BLOCKS and hashes.shape[0] < words.shape[0] // 8:
        _check_batched(words, block_offset, num_blocks, filter_ids, hashes, salt, False, out)
        return out
    for j in range(hashes.shape[0]):
        f = filter_ids[j]
        out[j] = check_one(words, block_offset[f], num_blocks[f], hashes[j], salt)
    return out


@njit(inline="always", cache=True)
def popcount32(v):
    """Set bits of a uint32 (SWAR popcount) as int64."""
    v = np.uint32(v)
    v = v - ((v >> np.uint32(1)) & np.uint32(0x55555555))
    v = (v & np.uint32(0x33333333)) + ((v >> np.uint32(2)) & np.uint32(0x33333333))
    v = (v + (v >> np.uint32(4))) & np.uint32(0x0F0F0F0F)
    return np.int64(np.uint32(v * np.uint32(0x01010101)) >> np.uint32(24))


@njit(cache=True)
def popcount_words(words):
    """Number of set bits of every uint32 word (SWAR popcount) -> int64 array."""
    out = np.empty(words.shape[0], dtype=np.int64)
    for i in range(words.shape[0]):
        out[i] = popcount32(words[i])
    return out


@njit(cache=True)
def fpp_poisson(num_blocks, ndv):
    """Expected FPP of an SBBF of num_blocks[i] blocks holding ndv[i] distinct hashes.

    Putze et al. for blocked filters: the load of a block is Poisson(lam = ndv / blocks);
    a block holding k hashes has each of a probe's 8 bits set with probability
    1 - (31/32)^k (one bit per 32-bit word), so FPP = sum_k P(k) * (1 - (31/32)^k)^8.
    The sum runs over lam +- 12 standard deviations, where all but ~1e-30 of the mass lies.
    """
    n = num_blocks.shape[0]
    out = np.empty(n, dtype=np.float64)
    q = math.log(31.0 / 32.0)
    for i in range(n):
        lam = ndv[i] / num_blocks[i]
        if lam <= 0.0:
            out[i] = 0.0
            continue
        sd = math.sqrt(lam)
        lo = max(0, int(lam - 12.0 * sd - 12.0))
        hi = int(lam + 12.0 * sd + 40.0)
        log_lam = math.log(lam)
        s = 0.0
        for k in range(lo, hi + 1):
            p = math.exp(k * log_lam - lam - math.lgamma(k + 1.0))
            s += p * (1.0 - math.exp(k * q)) ** 8
        out[i] = min(s, 1.0)
    return out
