"""Fused tokenize -> hash -> filter kernels of the built-in tokenizers: their fast path
(:meth:`skipidx.core.tokenizer_api.Tokenizer.insert_zones` / ``distinct_zones``).

They walk one binary-like Arrow array (``_arrow.buffer_views``: data,
offsets, validity, voff) zone by zone and never materialize (row, hash)
arrays: each token is hashed where it lies in the data buffer and goes
straight into its zone's filter (fixed sizing) or into the per-zone distinct
set (adaptive sizing, :mod:`skipidx.core._kernels.build`). Tokenization is
the tokenizers' own (the same byte table, the same code-point walk); the tests
check that both paths build identical filters.

Word tokens hash with xxh64_short (branch-light for varying lengths), n-grams
with xxh64_inline (steady lengths). The fixed and distinct variants share the
row tokenizer (`_row_token_hashes`) but keep separate sinks on purpose: both
sinks behind a runtime switch in one loop kept the insert from being
optimized (bench/bench_build.py).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from numba import njit

from skipidx.core._kernels.build import SET_MIN, close_zone_set, grown_set, set_add
from skipidx.core._kernels.sbbf import SALT, insert_one
from skipidx.core._kernels.xxh64 import xxh64_inline, xxh64_short, xxh64_span

from ._arrow import buffer_views
from ._kernels import TOKEN_BYTE, _valid, gram_at

__all__ = ["views", "insert_zones", "distinct_zones", "token_fixed", "token_distinct", "token_distinct_into",
           "ngram_fixed", "ngram_distinct", "ngram_distinct_into", "ngrams_fixed", "ngrams_distinct_into"]


def views(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """(data, int64 offsets, validity, voff) of a plain binary-like array for these
    kernels; None for any other type (the caller takes the generic path)."""
    t = values.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)):
        return None
    data, offsets, validity, voff = buffer_views(values)
    return data, offsets.astype(np.int64, copy=False), validity, voff


def insert_zones(kernel, params: tuple, values: pa.Array, zone_end: np.ndarray, seed: int,
                 words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray) -> bool:
    """A built-in's ``Tokenizer.insert_zones`` through its fixed kernel (`params` after the buffers)."""
    v = views(values)
    if v is None:
        return False
    kernel(*v, *params, zone_end, words, block_offset, num_blocks, np.uint64(seed), SALT)
    return True


def distinct_zones(kernel, params: tuple, values: pa.Array, zone_end: np.ndarray, seed: int,
                   scratch, per_byte: int = 1) -> np.ndarray | None:
    """A built-in's ``Tokenizer.distinct_zones`` through its ``*_distinct_into`` kernel
    (``per_byte``: the most tokens that start at one byte)."""
    v = views(values)
    if v is None:
        return None
    # a token or gram (of each length) starts at a distinct byte
    scratch.reserve(per_byte * int(v[1][-1] - v[1][0]) + 1)
    _, offsets, scratch.table = kernel(*v, *params, zone_end, np.uint64(seed), scratch.table, scratch.uniq)
    return offsets


@njit(cache=True, inline="always")
def _row_token_hashes(tb, data, p, e, seed, hbuf):
    """Hash every splitByNonAlpha token of data[p:e] into hbuf[0:m]; returns m.

    Shared by the fixed and the distinct token kernels (inlined at the Numba
    IR level, so each kernel still compiles to its own tight loop).
    """
    m = 0
    while p < e:
        while p < e and not tb[data[p]]:
            p += 1
        if p >= e:
            break
        q = p + 1
        while q < e and tb[data[q]]:
            q += 1
        if q - p < 32:
            hbuf[m] = xxh64_short(data, p, q - p, seed)
        else:
            hbuf[m] = xxh64_span(data, p, q - p, seed)
        m += 1
        p = q
    return m


@njit(cache=True, nogil=True)
def token_fixed(data, offsets, validity, voff, zone_end, words, block_offset, num_blocks, seed, salt):
    """splitByNonAlpha tokens of every valid row, each hash inserted into its zone's filter.

    Row by row: tokenize and hash into a buffer, then insert (two tight loops
    beat inserting token by token).
    """
    seed = np.uint64(seed)
    tb = TOKEN_BYTE
    hbuf = np.empty(_max_row_tokens(offsets), dtype=np.uint64)
    i = 0
    for z in range(zone_end.shape[0]):
        bo = block_offset[z]
        nb = num_blocks[z]
        while i < zone_end[z]:
            if _valid(validity, voff, i):
                m = _row_token_hashes(tb, data, np.int64(offsets[i]), np.int64(offsets[i + 1]), seed, hbuf)
                for k in range(m):
                    insert_one(words, bo, nb, hbuf[k], salt)
            i += 1


@njit(cache=True)
def _max_row_tokens(offsets):
    """Room for the tokens of the longest row: (L + 1) // 2 at most in L bytes (plus one)."""
    longest = 0
    for r in range(offsets.shape[0] - 1):
        longest = max(longest, np.int64(offsets[r + 1]) - np.int64(offsets[r]))
    return (longest + 1) // 2 + 1


@njit(cache=True, nogil=True)
def token_distinct(data, offsets, validity, voff, zone_end, seed):
    """splitByNonAlpha tokens of every valid row: the distinct hashes of every zone (uniq, offsets)."""
    uniq = np.empty(np.int64(offsets[-1]) - np.int64(offsets[0]) + 1, dtype=np.uint64)
    u, offs, _ = _distinct_driver(data, offsets, validity, voff, 0, zone_end, seed,
                                  np.zeros(SET_MIN, dtype=np.uint64), uniq, 0)
    return uniq[:u].copy(), offs


@njit(cache=True, nogil=True)
def token_distinct_into(data, offsets, validity, voff, zone_end, seed, table, uniq):
    """`token_distinct` into caller-owned buffers (as `dedup_by_zone_into`): returns (u, offsets, table).

    ``uniq`` needs ``offsets[-1] - offsets[0] + 1`` slots (a token starts at a
    distinct byte, so the slice's bytes bound its distinct count).
    """
    return _distinct_driver(data, offsets, validity, voff, 0, zone_end, seed, table, uniq, 0)


@njit(cache=True)
def _token_rows_into_set(data, offsets, validity, voff, i, stop, seed, table, uniq, u, first, zero_seen, hbuf):
    """Tokens of rows i..stop into the zone's set, row by row, until a row might overfill the table.

    A row of L bytes adds at most L distinct hashes, so before each row the
    table must keep 2 * (distinct + L) <= slots; otherwise return (i, ..., need).
    Each row is tokenized and hashed into ``hbuf`` (room for (L + 1) // 2
    tokens, the most a row of L bytes holds) before its hashes meet the set:
    probing token by token, the mispredicted "new token?" branches stall the
    tokenizer too.
    """
    tb = TOKEN_BYTE
    mask = table.shape[0] - 1
    cap = table.shape[0]
    while i < stop:
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        if 2 * (u - first + (e - s) + 1) > cap:
            return i, u, zero_seen, 2 * (u - first + (e - s) + 1)
        if _valid(validity, voff, i):
            m = _row_token_hashes(tb, data, s, e, seed, hbuf)
            for k in range(m):
                h = hbuf[k]
                if h == 0:
                    if not zero_seen:
                        zero_seen = True
                        uniq[u] = h
                        u += 1
                elif set_add(table, mask, h):
                    uniq[u] = h
                    u += 1
        i += 1
    return i, u, zero_seen, 0


@njit(cache=True, nogil=True)
def ngram_fixed(data, offsets, validity, voff, n, zone_end, words, block_offset, num_blocks, seed, salt):
    """ngram(n) of every valid row (the ngram tokenizer's code-point walk) into each zone's filter."""
    seed = np.uint64(seed)
    i = 0
    for z in range(zone_end.shape[0]):
        bo = block_offset[z]
        nb = num_blocks[z]
        while i < zone_end[z]:
            if _valid(validity, voff, i):
                s = np.int64(offsets[i])
                e = np.int64(offsets[i + 1])
                pend = np.uint32(1)
                for p in range(s, e):
                    end, pend = gram_at(data, p, e, n, pend, True)
                    if end >= 0:
                        insert_one(words, bo, nb, xxh64_inline(data, p, end - p, seed), salt)
            i += 1


@njit(cache=True, nogil=True)
def ngram_distinct(data, offsets, validity, voff, n, zone_end, seed):
    """ngram(n) of every valid row: the distinct hashes of every zone (uniq, offsets)."""
    uniq = np.empty(np.int64(offsets[-1]) - np.int64(offsets[0]) + 1, dtype=np.uint64)
    u, offs, _ = _distinct_driver(data, offsets, validity, voff, n, zone_end, seed,
                                  np.zeros(SET_MIN, dtype=np.uint64), uniq, n)
    return uniq[:u].copy(), offs


@njit(cache=True, nogil=True)
def ngram_distinct_into(data, offsets, validity, voff, n, zone_end, seed, table, uniq):
    """`ngram_distinct` into caller-owned buffers (as `token_distinct_into`)."""
    return _distinct_driver(data, offsets, validity, voff, n, zone_end, seed, table, uniq, n)


@njit(cache=True, nogil=True)
def ngrams_fixed(data, offsets, validity, voff, min_n, n, zone_end, words, block_offset, num_blocks, seed, salt):
    """The grams of every length min_n..n of every valid row into each zone's filter (the
    ngram tokenizer with ``min_n``: the union of ngram(k) for each k)."""
    seed = np.uint64(seed)
    i = 0
    for z in range(zone_end.shape[0]):
        bo = block_offset[z]
        nb = num_blocks[z]
        while i < zone_end[z]:
            if _valid(validity, voff, i):
                s = np.int64(offsets[i])
                e = np.int64(offsets[i + 1])
                for k in range(min_n, n + 1):
                    pend = np.uint32(1)
                    for p in range(s, e):
                        end, pend = gram_at(data, p, e, k, pend, True)
                        if end >= 0:
                            insert_one(words, bo, nb, xxh64_inline(data, p, end - p, seed), salt)
            i += 1


@njit(cache=True, nogil=True)
def ngrams_distinct_into(data, offsets, validity, voff, min_n, n, zone_end, seed, table, uniq):
    """`ngram_distinct_into` for the grams of every length min_n..n; ``uniq`` needs
    (n - min_n + 1) slots per byte of the slice."""
    return _distinct_driver(data, offsets, validity, voff, n, zone_end, seed, table, uniq, min_n)


#: N-grams of at most this many bytes are first deduplicated on their bytes (packed
#: into a uint64 key with the length), so only a zone's distinct grams are hashed:
#: log text has ~4k distinct 3-grams per 8192 rows among ~1M grams (bench/NOTES.md).
GRAM_KEY_MAX = 7
_KEY_MUL = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always", cache=True)
def _gram_key(data, p, length):
    """data[p:p+length] (length <= GRAM_KEY_MAX) and its length in one non-zero uint64."""
    k = np.uint64(length) << np.uint64(56)
    for j in range(length):
        k |= np.uint64(data[p + j]) << np.uint64(8 * j)
    return k


@njit(inline="always", cache=True)
def _key_slot(k, mask):
    return np.int64(((k * _KEY_MUL) >> np.uint64(32)) & np.uint64(mask))


@njit(inline="always", cache=True)
def _key_add(keys, mask, k):
    """Insert key k (!= 0) into the open-addressing key set; True if new."""
    i = _key_slot(k, mask)
    while True:
        x = keys[i]
        if x == 0:
            keys[i] = k
            return True
        if x == k:
            return False
        i = (i + 1) & mask


@njit(cache=True)
def _grown_keys(keys, klist, kc, need):
    """A key set of at least `need` slots holding klist[:kc], and a key list of its size."""
    cap = keys.shape[0]
    while cap < need:
        cap *= 2
    t = np.zeros(cap, dtype=np.uint64)
    mask = cap - 1
    for j in range(kc):
        _key_add(t, mask, klist[j])
    kl = np.empty(cap, dtype=np.uint64)
    kl[:kc] = klist[:kc]
    return t, kl


@njit(cache=True)
def _close_zone_keys(keys, klist, kc):
    """Clear the slots the zone's keys used (as close_zone_set)."""
    if 8 * kc >= keys.shape[0]:
        keys[:] = 0
        return
    mask = keys.shape[0] - 1
    for j in range(kc):
        i = _key_slot(klist[j], mask)
        while keys[i] != 0:
            keys[i] = 0
            i = (i + 1) & mask


@njit(cache=True)
def _ngram_rows_into_set(data, offsets, validity, voff, min_n, n, i, stop, seed, table, uniq, u, first,
                         zero_seen, keys, klist, kc, seen3, list3, c3):
    """N-grams (of min_n..n code points) of rows i..stop into the zone's set (as
    _token_rows_into_set; a row of L bytes adds at most L grams of each length).

    A gram of at most GRAM_KEY_MAX bytes goes into the zone's key set first and
    is hashed only when its bytes are new in the zone (its hash then meets the
    hash set, which also dedupes hashes of different grams); a longer one is
    hashed and meets the hash set directly. The distinct hashes are those of
    hashing every gram. The 3-grams of an ASCII row (21 bits: three 7-bit bytes)
    use the bit set `seen3` instead of the key set (their indexes in list3[:c3],
    for clearing). Returns (i, u, zero_seen, kc, c3, need, kneed): a non-zero
    need/kneed asks for a bigger hash/key set before row i.
    """
    mask = table.shape[0] - 1
    cap = table.shape[0]
    kmask = keys.shape[0] - 1
    kcap = keys.shape[0]
    nk = n - min_n + 1
    while i < stop:
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        if 2 * (u - first + nk * (e - s) + 1) > cap:
            return i, u, zero_seen, kc, c3, 2 * (u - first + nk * (e - s) + 1), 0
        if 2 * (kc + nk * (e - s) + 1) > kcap:
            return i, u, zero_seen, kc, c3, 0, 2 * (kc + nk * (e - s) + 1)
        if not _valid(validity, voff, i):
            i += 1
            continue
        acc = np.uint8(0)
        if n <= GRAM_KEY_MAX:
            for p in range(s, e):
                acc |= data[p]
        if n <= GRAM_KEY_MAX and acc < 0x80:
            # an ASCII row: the k-grams are the k-byte windows, their keys rolled along
            for k in range(min_n, n + 1):
                if e - s < k:
                    continue
                if k == 3:
                    b = (np.int64(data[s]) << np.int64(7)) | (np.int64(data[s + 1]) << np.int64(14))
                    for p in range(s, e - 2):
                        b = (b >> np.int64(7)) | (np.int64(data[p + 2]) << np.int64(14))
                        byte = b >> np.int64(3)
                        bit = np.uint8(1) << np.uint8(b & np.int64(7))
                        if seen3[byte] & bit:
                            continue
                        seen3[byte] |= bit
                        list3[c3] = b
                        c3 += 1
                        h = xxh64_inline(data, p, 3, seed)
                        if h == 0:
                            if not zero_seen:
                                zero_seen = True
                                uniq[u] = h
                                u += 1
                        elif set_add(table, mask, h):
                            uniq[u] = h
                            u += 1
                    continue
                top = np.uint64(k) << np.uint64(56)
                sh = np.uint64(8 * (k - 1))
                body = np.uint64(0)
                for j in range(k - 1):
                    body |= np.uint64(data[s + j]) << np.uint64(8 * (j + 1))
                for p in range(s, e - k + 1):
                    body = (body >> np.uint64(8)) | (np.uint64(data[p + k - 1]) << sh)
                    key = body | top
                    if not _key_add(keys, kmask, key):
                        continue
                    klist[kc] = key
                    kc += 1
                    h = xxh64_inline(data, p, k, seed)
                    if h == 0:
                        if not zero_seen:
                            zero_seen = True
                            uniq[u] = h
                            u += 1
                    elif set_add(table, mask, h):
                        uniq[u] = h
                        u += 1
        else:
            for k in range(min_n, n + 1):
                pend = np.uint32(1)
                for p in range(s, e):
                    end, pend = gram_at(data, p, e, k, pend, True)
                    if end >= 0:
                        ln = end - p
                        if ln <= GRAM_KEY_MAX:
                            key = _gram_key(data, p, ln)
                            if not _key_add(keys, kmask, key):
                                continue
                            klist[kc] = key
                            kc += 1
                        h = xxh64_inline(data, p, ln, seed)
                        if h == 0:
                            if not zero_seen:
                                zero_seen = True
                                uniq[u] = h
                                u += 1
                        elif set_add(table, mask, h):
                            uniq[u] = h
                            u += 1
        i += 1
    return i, u, zero_seen, kc, c3, 0, 0


@njit(cache=True, nogil=True)
def _distinct_driver(data, offsets, validity, voff, n, zone_end, seed, table, uniq, min_n):
    """Zone loop of the *_distinct kernels (n == 0: token, n > 0: the grams of min_n..n code
    points); grows the sets between rows.

    Returns (u, offsets, table): zone z's distinct hashes are
    ``uniq[offsets[z]:offsets[z+1]]``; the table comes back all zero.
    """
    seed = np.uint64(seed)
    nz = zone_end.shape[0]
    offs_out = np.zeros(nz + 1, dtype=np.int64)
    hbuf = np.empty(_max_row_tokens(offsets) if n == 0 else 1, dtype=np.uint64)   # the token loop's row buffer
    # the n-gram loop's key set (grams by their bytes) and its zone's keys, for clearing
    keys = np.zeros(SET_MIN if n > 0 else 1, dtype=np.uint64)
    klist = np.empty(keys.shape[0], dtype=np.uint64)
    # ASCII 3-grams: a bit per 21-bit gram and the zone's set bits (np.empty: virtual until used)
    with3 = n > 0 and min_n <= 3 <= n <= GRAM_KEY_MAX
    seen3 = np.zeros((1 << 18) if with3 else 1, dtype=np.uint8)
    list3 = np.empty((1 << 21) if with3 else 1, dtype=np.int64)
    u = 0
    i = 0
    for z in range(nz):
        first = u
        zero_seen = False
        kc = 0
        c3 = 0
        stop = zone_end[z]
        while True:
            kneed = 0
            if n == 0:
                i, u, zero_seen, need = _token_rows_into_set(data, offsets, validity, voff, i, stop, seed,
                                                             table, uniq, u, first, zero_seen, hbuf)
            else:
                i, u, zero_seen, kc, c3, need, kneed = _ngram_rows_into_set(
                    data, offsets, validity, voff, min_n, n, i, stop, seed, table, uniq, u, first, zero_seen,
                    keys, klist, kc, seen3, list3, c3)
            if need == 0 and kneed == 0:
                break
            if need:
                table = grown_set(table, uniq, first, u, need)
            if kneed:
                keys, klist = _grown_keys(keys, klist, kc, kneed)
        close_zone_set(table, table.shape[0] - 1, uniq, first, u)
        if n > 0:
            _close_zone_keys(keys, klist, kc)
            if 8 * c3 >= seen3.shape[0]:
                seen3[:] = 0
            else:
                for j in range(c3):
                    seen3[list3[j] >> 3] = 0
        offs_out[z + 1] = u
    return u, offs_out, table
