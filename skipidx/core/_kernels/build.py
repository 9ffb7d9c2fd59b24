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
  from the caller (:class:`DistinctScratch`), so one thread reuses them for
  every slice of a build.
* :func:`set_add`, :func:`grown_set`, :func:`close_zone_set` -- that set, for
  tokenizers whose fused kernels fill it themselves (the built-ins:
  ``skipidx_tokenizers._filters``).
* :func:`bank_insert_grouped` -- hashes[offsets[f]:offsets[f+1]] into filter f.
* :func:`bank_stats` -- per filter: fill ratio and the exact false-positive
  probability of a random lookup (mean over blocks of the product of the 8
  word fill ratios -- what a check of an absent hash actually meets).

Filter sizes are :mod:`skipidx.core.sizing`'s.
"""
from __future__ import annotations

import numpy as np
from skipidx.core.lazy import njit

from skipidx.core._kernels.sbbf import SALT, insert_one, popcount32

__all__ = [
    "SALT", "SET_MIN", "DistinctScratch",
    "insert_by_row", "dedup_by_zone", "dedup_by_zone_into", "bank_insert_grouped", "bank_stats",
    "set_add", "grown_set", "close_zone_set",
]

# The per-zone distinct set: open addressing over uint64 keys with 0 as the
# empty marker (a real hash 0 is remembered in a flag); after each zone the
# table is cleared -- by walking the zone's distinct list when the zone used
# few of its slots, else by zeroing it whole (a sequential write, faster than
# re-probing every distinct hash once the zone filled more than an eighth) --
# and it doubles while a zone fills it past half. One array: one cache line
# per probe. The few lines that add a hash to a zone's list (the hash-0 flag,
# then set_add) are written out in each loop on purpose: an inline helper
# returning (u, zero_seen) is measurably slower (bench/bench_build.py).

#: Initial size (slots) of a distinct set handed to the ``*_into`` kernels.
SET_MIN = 4096


class DistinctScratch:
    """One thread's buffers for the distinct kernels: the set (``table``, handed
    back all zero by every kernel) and the distinct hashes (``uniq``)."""

    __slots__ = ("table", "uniq")

    def __init__(self) -> None:
        self.table = np.zeros(SET_MIN, dtype=np.uint64)
        self.uniq = np.zeros(0, dtype=np.uint64)

    def reserve(self, slots: int) -> np.ndarray:
        """``uniq`` with room for at least `slots` hashes (grown to a power of two,
        so slightly bigger slices later reuse it; np.empty is virtual memory)."""
        if self.uniq.shape[0] < slots:
            self.uniq = np.empty(1 << max(12, (slots - 1).bit_length()), dtype=np.uint64)
        return self.uniq


@njit(inline="always", cache=True)
def set_add(table, mask, h):
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


@njit(cache=True)
def grown_set(table, uniq, first, u, need):
    """A table of at least `need` slots (a power of two) holding the zone's distinct hashes uniq[first:u]."""
    cap = table.shape[0]
    while cap < need:
        cap *= 2
    t = np.zeros(cap, dtype=np.uint64)
    mask = cap - 1
    for k in range(first, u):
        if uniq[k] != 0:
            set_add(t, mask, uniq[k])
    return t


@njit(cache=True)
def close_zone_set(table, mask, uniq, first, u):
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
    u, offs_out, _ = dedup_by_zone_into(zone_end, rows, hashes, np.zeros(SET_MIN, dtype=np.uint64), uniq)
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
            table = grown_set(table, uniq, first, u, need)
        close_zone_set(table, table.shape[0] - 1, uniq, first, u)
        offs_out[z + 1] = u
    return u, offs_out, table


@njit(cache=True)
def _hashes_into_set(hashes, j, stop, table, uniq, u, first, zero_seen):
    """Add hashes[j:stop] to the zone's set until done or the table would pass half full.

    Returns (next j, u, zero_seen, need): need > 0 asks the caller for a table
    of at least `need` slots (arrays are never reassigned in this loop, so numba
    keeps them in registers).
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
        elif set_add(table, mask, h):
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

