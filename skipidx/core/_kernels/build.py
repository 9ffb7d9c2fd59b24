"""Numba kernels of the SBBF index build (and the one check the conditions need).

The build works on a "bank": every zone's filter in one flat uint32 array
(``skipidx.core._kernels.sbbf`` layout: filter f owns blocks
``block_offset[f] .. block_offset[f] + num_blocks[f]``). Token hashes arrive
with the row they came from, rows non-decreasing (the tokenizer contract);
zones tile the rows, so the zone of a token is found by walking a pointer
along the zone ends -- no per-token search, no per-token zone array.

* :func:`insert_by_row` -- fixed-size filters (tokenbf_v1 / ngrambf_v1):
  every token straight into its zone's filter.
* :func:`dedup_by_zone` -- adaptive sizing (bloom_filter, sbbf): the distinct
  hashes of every zone, from one open-addressing hash set reused across zones.
  The distinct counts size the filters; only the distinct hashes are
  inserted after. The ``*_into`` forms take the set and the output buffer
  from the caller, so one thread reuses them for every slice of a build.
* ``token_fixed`` / ``ngram_fixed`` / ``token_distinct`` / ``ngram_distinct``
  -- the fused versions for the built-in tokenizers (below).
* :func:`bank_insert_grouped` -- hashes[offsets[f]:offsets[f+1]] into filter f.
* :func:`bank_stats` -- per filter: fill ratio and the exact false-positive
  probability of a random lookup (mean over blocks of the product of the 8
  word fill ratios -- what a check of an absent hash actually meets).
"""
from __future__ import annotations

import math
import threading

import numpy as np
from numba import njit

from skipidx.core._kernels.sbbf import SALT, insert_one, popcount32

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


#: Sizing rules of adaptive filters: "exact" (fewest 32-byte blocks whose
#: Putze/Poisson estimate meets fpp), "parquet" (Arrow's power-of-two rule,
#: `num_bytes_for_ndv`), "lance" (smallest power of two meeting the estimate).
SIZE_RULES = ("exact", "parquet", "lance")


def num_bytes_for_rule(ndv: np.ndarray, fpp: float, rule: str) -> np.ndarray:
    """Filter bytes of every zone under sizing `rule` (one of SIZE_RULES); ndv 0 -> 32 bytes.

    "lance" is the exact block count rounded up to a power of two: the
    estimate falls as blocks grow, so that is the smallest power of two that
    meets it (equals ``optimal_num_bytes(..., "lance")``, tested).
    """
    if rule == "parquet":
        return num_bytes_for_ndv(ndv, fpp)
    if rule not in SIZE_RULES:
        raise ValueError(f"unknown size rule {rule!r}")
    exact = exact_num_blocks(ndv, fpp)
    if rule == "exact":
        return exact * 32
    p2 = np.left_shift(np.int64(1), np.ceil(np.log2(exact.astype(np.float64))).astype(np.int64))
    p2 = np.where(p2 // 2 >= exact, p2 // 2, p2)   # guard float rounding of log2
    p2 = np.where(p2 < exact, p2 * 2, p2)
    return np.minimum(p2 * 32, MAX_BYTES)


#: Block counts of the exact rule already solved, per fpp: memo[fpp][ndv] (-1: not yet).
#: The zones of a column have few distinct ndv, and builds ask again part after
#: part, so each is solved once per process (the bisection over Putze
#: estimates cost ~5 % of an adaptive token build). Counts from _MEMO_NDV on
#: are solved every time (they would make the memo large).
_exact_memo: dict[float, np.ndarray] = {}
_memo_lock = threading.Lock()
_MEMO_NDV = 1 << 20


def exact_num_blocks(ndv: np.ndarray, fpp: float) -> np.ndarray:
    """``skipidx.core.sbbf.exact_num_bytes(ndv, fpp) // 32`` (int64), remembering what it solved."""
    from skipidx.core.sbbf import exact_num_bytes

    nd = np.asarray(ndv, dtype=np.int64).reshape(-1)
    fpp = float(fpp)
    if nd.size == 0 or nd.min() < 0 or not 0.0 < fpp < 1.0:
        return exact_num_bytes(nd, fpp) // 32   # its own checks and errors
    out = np.empty(nd.shape[0], dtype=np.int64)
    small = nd < _MEMO_NDV
    if not small.all():
        out[~small] = exact_num_bytes(nd[~small], fpp) // 32
    ks = nd[small]
    if ks.size:
        top = int(ks.max()) + 1
        with _memo_lock:
            memo = _exact_memo.get(fpp)
            if memo is None or memo.shape[0] < top:
                grown = np.full(min(_MEMO_NDV, max(top, 2 * (0 if memo is None else memo.shape[0]))), -1, np.int64)
                if memo is not None:
                    grown[:memo.shape[0]] = memo
                memo = _exact_memo[fpp] = grown
        got = memo[ks]
        miss = got < 0
        if miss.any():
            keys = np.unique(ks[miss])
            vals = exact_num_bytes(keys, fpp) // 32
            memo[keys] = vals   # the same values whoever writes them: no lock needed
            got = memo[ks]
        out[small] = got
    return out.reshape(np.shape(ndv))


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


@njit(cache=True, nogil=True)
def dedup_by_zone(zone_end, rows, hashes):
    """Distinct hashes of every zone, zone-contiguous, from (row, hash) pairs (rows non-decreasing).

    Returns (uniq uint64[u], offsets int64[nz+1]): zone z's distinct hashes
    are ``uniq[offsets[z]:offsets[z+1]]`` (in first-seen order).
    """
    uniq = np.empty(hashes.shape[0] + 1, dtype=np.uint64)
    u, offs_out, _ = dedup_by_zone_into(zone_end, rows, hashes, np.zeros(_SET_MIN, dtype=np.uint64), uniq)
    return uniq[:u].copy(), offs_out


@njit(cache=True, nogil=True)
def dedup_by_zone_into(zone_end, rows, hashes, table, uniq):
    """`dedup_by_zone` into caller-owned buffers: returns (u, offsets, table).

    ``table``: an all-zero uint64 array of a power-of-two size (the set; it is
    handed back all zero, possibly grown -- keep the returned one);
    ``uniq``: at least ``len(hashes) + 1`` slots, receives the distinct hashes
    in ``uniq[:u]``.
    """
    nz = zone_end.shape[0]
    n = hashes.shape[0]
    offs_out = np.zeros(nz + 1, dtype=np.int64)
    u = 0
    j = 0
    for z in range(nz):
        first = u
        zero_seen = False
        end = zone_end[z]
        stop = j
        while stop < n and rows[stop] < end:
            stop += 1
        while True:
            j, u, zero_seen, need = _hashes_into_set(hashes, j, stop, table, uniq, u, first, zero_seen)
            if need == 0:
                break
            table = _grown(table, uniq, first, u, need)
        _distinct_close_zone(table, table.shape[0] - 1, uniq, first, u)
        offs_out[z + 1] = u
    return u, offs_out, table


@njit(cache=True)
def _hashes_into_set(hashes, j, stop, table, uniq, u, first, zero_seen):
    """Add hashes[j:stop] to the zone's set until done or the table would pass half full.

    Returns (next j, u, zero_seen, need): need > 0 asks the caller for a table
    of at least `need` slots (arrays are never reassigned in this loop: numba
    then keeps them in registers -- reassigning them in the hot loop measured 3x slower).
    """
    mask = table.shape[0] - 1
    cap = table.shape[0]
    while j < stop:
        if 2 * (u - first + 1) > cap:
            return j, u, zero_seen, 2 * cap
        h = hashes[j]
        if h == 0:
            if not zero_seen:
                zero_seen = True
                uniq[u] = h
                u += 1
        elif _set_add(table, mask, h):
            uniq[u] = h
            u += 1
        j += 1
    return j, u, zero_seen, 0


@njit(cache=True, nogil=True)
def bank_insert_grouped(words, block_offset, num_blocks, hashes, offsets, salt):
    for f in range(block_offset.shape[0]):
        for j in range(offsets[f], offsets[f + 1]):
            insert_one(words, block_offset[f], num_blocks[f], hashes[j], salt)


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
                c = popcount32(words[b * 8 + i])
                ones += c
                p *= c / 32.0
            acc += p
        if nb > 0:
            fill[f] = ones / (nb * 256.0)
            fpp[f] = acc / nb
    return fill, fpp


__all__ = [
    "SALT", "MIN_BYTES", "MAX_BYTES", "SIZE_RULES", "SET_MIN", "num_bytes_for_ndv", "num_bytes_for_rule",
    "exact_num_blocks",
    "insert_by_row", "dedup_by_zone", "dedup_by_zone_into", "bank_insert_grouped", "bank_stats",
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

from skipidx.core._kernels.xxh64 import xxh64_inline, xxh64_short, xxh64_span  # noqa: E402
try:  # the built-in tokenizers' own byte table and code-point walk
    from skipidx_tokenizers._kernels import SEQ_LEN, TOKEN_BYTE, _gram_end, _valid  # noqa: E402
    FUSED_AVAILABLE = True
except ImportError:  # a tokenizer package without them: every build takes the generic path
    FUSED_AVAILABLE = False


@njit(inline="always", cache=True)
def _ngram_end(data, p, e, n, sl):
    """End of the n-gram starting at p: n ASCII bytes ahead are n one-byte code points
    (what _gram_end finds, without its table walk); otherwise the tokenizer's own walk."""
    end = p + n
    if end > e:
        return _gram_end(data, p, e, n, sl)
    for k in range(p, end):
        if data[k] >= 0x80:
            return _gram_end(data, p, e, n, sl)
    return end


# The per-zone distinct set of the *_distinct kernels and dedup_by_zone: open
# addressing over uint64 keys with 0 as the empty marker (a real hash 0 is
# remembered in a flag); after each zone the table is cleared -- by walking the
# zone's distinct list when the zone used few of its slots, else by zeroing it
# whole (a sequential write, measured faster than re-probing every distinct
# hash once the zone filled more than an eighth) -- and it doubles while a
# zone fills it past half. One array: one cache line per probe.
# The few lines that add a hash to a zone's list (the hash-0 flag, then
# _set_add) are written out in each loop on purpose: an inline helper returning
# (u, zero_seen) measured 1.1x (token/ngram distinct) to 1.7x (dedup_by_zone)
# slower in CPU time.


@njit(inline="always", cache=True)
def _set_add(table, mask, h):
    """Insert h (!= 0); True if new."""
    i = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))
    while True:
        k = table[i]
        if k == 0:
            table[i] = h
            return True
        if k == h:
            return False
        i = (i + 1) & mask


_SET_MIN = 4096
#: Initial size (slots) of a distinct set handed to the ``*_into`` kernels.
SET_MIN = _SET_MIN


@njit(cache=True)
def _grown(table, uniq, first, u, need):
    """A table of at least `need` slots (a power of two) holding the zone's distinct hashes uniq[first:u]."""
    cap = table.shape[0]
    while cap < need:
        cap *= 2
    t = np.zeros(cap, dtype=np.uint64)
    mask = cap - 1
    for k in range(first, u):
        if uniq[k] != 0:
            _set_add(t, mask, uniq[k])
    return t


@njit(cache=True)
def _distinct_close_zone(table, mask, uniq, first, u):
    """Clear the slots the zone used (the table is reused by the next zone)."""
    if 8 * (u - first) >= table.shape[0]:
        table[:] = 0
        return
    for k in range(first, u):
        h = uniq[k]
        if h == 0:
            continue
        i = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))
        while table[i] != 0:
            table[i] = 0
            i = (i + 1) & mask


# Word tokens hash with xxh64_short (lengths vary from token to token: its
# branch-light tail measured 15 % faster than xxh64_inline over a bare
# tokenize+hash loop on log lines -- but slower when the insert or set probe
# follows in the same loop, hence the per-row hash buffers below); n-grams
# keep xxh64_inline (steady lengths).
# The fixed and distinct variants share the row tokenizer (_row_token_hashes)
# but keep separate sinks on purpose: with both sinks behind a runtime switch
# in one loop, the fixed path measured 1.8x slower (the distinct bookkeeping
# kept the insert from being optimized).

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
    measured 13 % faster than inserting token by token).
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
                                  np.zeros(_SET_MIN, dtype=np.uint64), uniq)
    return uniq[:u].copy(), offs


@njit(cache=True, nogil=True)
def token_distinct_into(data, offsets, validity, voff, zone_end, seed, table, uniq):
    """`token_distinct` into caller-owned buffers (as `dedup_by_zone_into`): returns (u, offsets, table).

    ``uniq`` needs ``offsets[-1] - offsets[0] + 1`` slots (a token starts at a
    distinct byte, so the slice's bytes bound its distinct count).
    """
    return _distinct_driver(data, offsets, validity, voff, 0, zone_end, seed, table, uniq)


@njit(cache=True)
def _token_rows_into_set(data, offsets, validity, voff, i, stop, seed, table, uniq, u, first, zero_seen, hbuf):
    """Tokens of rows i..stop into the zone's set, row by row, until a row might overfill the table.

    A row of L bytes adds at most L distinct hashes, so before each row the
    table must keep 2 * (distinct + L) <= slots; otherwise return (i, ..., need).
    Each row is tokenized and hashed into ``hbuf`` (room for (L + 1) // 2
    tokens, the most a row of L bytes holds) before its hashes meet the set:
    two tight loops measured 10-14 % faster than probing token by token, whose
    mispredicted "new token?" branches stall the tokenizer too.
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
                elif _set_add(table, mask, h):
                    uniq[u] = h
                    u += 1
        i += 1
    return i, u, zero_seen, 0


@njit(cache=True, nogil=True)
def ngram_fixed(data, offsets, validity, voff, n, zone_end, words, block_offset, num_blocks, seed, salt):
    """ngram(n) of every valid row (the ngram tokenizer's code-point walk) into each zone's filter."""
    seed = np.uint64(seed)
    sl = SEQ_LEN
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
                    c = data[p]
                    if (pend & np.uint32(1)) or c < 0x80 or c >= 0xC0:
                        pend |= np.uint32(1) << np.uint32(sl[c])
                        end = _ngram_end(data, p, e, n, sl)
                        if end >= 0:
                            insert_one(words, bo, nb, xxh64_inline(data, p, end - p, seed), salt)
                    pend >>= np.uint32(1)
            i += 1


@njit(cache=True, nogil=True)
def ngram_distinct(data, offsets, validity, voff, n, zone_end, seed):
    """ngram(n) of every valid row: the distinct hashes of every zone (uniq, offsets)."""
    uniq = np.empty(np.int64(offsets[-1]) - np.int64(offsets[0]) + 1, dtype=np.uint64)
    u, offs, _ = _distinct_driver(data, offsets, validity, voff, n, zone_end, seed,
                                  np.zeros(_SET_MIN, dtype=np.uint64), uniq)
    return uniq[:u].copy(), offs


@njit(cache=True, nogil=True)
def ngram_distinct_into(data, offsets, validity, voff, n, zone_end, seed, table, uniq):
    """`ngram_distinct` into caller-owned buffers (as `token_distinct_into`)."""
    return _distinct_driver(data, offsets, validity, voff, n, zone_end, seed, table, uniq)


@njit(cache=True)
def _ngram_rows_into_set(data, offsets, validity, voff, n, i, stop, seed, table, uniq, u, first, zero_seen):
    """N-grams of rows i..stop into the zone's set (as _token_rows_into_set)."""
    sl = SEQ_LEN
    mask = table.shape[0] - 1
    cap = table.shape[0]
    while i < stop:
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        if 2 * (u - first + (e - s) + 1) > cap:
            return i, u, zero_seen, 2 * (u - first + (e - s) + 1)
        if _valid(validity, voff, i):
            pend = np.uint32(1)
            for p in range(s, e):
                c = data[p]
                if (pend & np.uint32(1)) or c < 0x80 or c >= 0xC0:
                    pend |= np.uint32(1) << np.uint32(sl[c])
                    end = _ngram_end(data, p, e, n, sl)
                    if end >= 0:
                        h = xxh64_inline(data, p, end - p, seed)
                        if h == 0:
                            if not zero_seen:
                                zero_seen = True
                                uniq[u] = h
                                u += 1
                        elif _set_add(table, mask, h):
                            uniq[u] = h
                            u += 1
                pend >>= np.uint32(1)
        i += 1
    return i, u, zero_seen, 0


@njit(cache=True, nogil=True)
def _distinct_driver(data, offsets, validity, voff, n, zone_end, seed, table, uniq):
    """Zone loop of the *_distinct kernels (n == 0: token, n > 0: ngram(n)); grows the set between rows.

    Returns (u, offsets, table): zone z's distinct hashes are
    ``uniq[offsets[z]:offsets[z+1]]``; the table comes back all zero.
    """
    seed = np.uint64(seed)
    nz = zone_end.shape[0]
    offs_out = np.zeros(nz + 1, dtype=np.int64)
    hbuf = np.empty(_max_row_tokens(offsets) if n == 0 else 1, dtype=np.uint64)   # the token loop's row buffer
    u = 0
    i = 0
    for z in range(nz):
        first = u
        zero_seen = False
        stop = zone_end[z]
        while True:
            if n == 0:
                i, u, zero_seen, need = _token_rows_into_set(data, offsets, validity, voff, i, stop, seed,
                                                             table, uniq, u, first, zero_seen, hbuf)
            else:
                i, u, zero_seen, need = _ngram_rows_into_set(data, offsets, validity, voff, n, i, stop, seed,
                                                             table, uniq, u, first, zero_seen)
            if need == 0:
                break
            table = _grown(table, uniq, first, u, need)
        _distinct_close_zone(table, table.shape[0] - 1, uniq, first, u)
        offs_out[z + 1] = u
    return u, offs_out, table
