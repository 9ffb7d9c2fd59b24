"""Whole-buffer byte search over an Arrow string chunk: substring, hasToken, multiSearchAny.

The exact WHERE runs after pruning over the kept granules' text; these kernels
answer, per row, whether a constant needle occurs in it, scanning the chunk's
whole data buffer once instead of row by row.

Algorithm (the "SIMD-friendly" substring search of W. Mula, also the filter
stage of ClickHouse's Volnitsky searcher): two *anchor* positions ``p1 < p2``
of the needle are picked, the ones whose bytes are rarest in a sample of the
data. A candidate start ``s`` must have ``data[s+p1] == needle[p1]`` and
``data[s+p2] == needle[p2]``; a numba loop tests 64 starts at a time with a
branch-free min-reduction that LLVM turns into AVX2/SSE compares (~3-4 GB/s on
log text when the byte pair is rare, whatever the single-byte frequencies).
Only blocks holding a candidate are looked at byte by byte: the candidate is
mapped to its row with a row cursor that only moves forward (the buffer is
scanned in order, so no binary search), checked to lie inside that row (a
needle spanning two rows must not match), compared in full, and for hasToken
checked for separators (or the row's edges) on both sides. Once a row is
known to match, the scan jumps to the next row, so a needle that occurs in
most rows costs one hit per row, not one per occurrence.

ASCII case folding (``case_insensitive``) needs no lowered copy: an anchor
that is a letter is compared as ``byte | 0x20`` (which maps exactly 'A'..'Z'
onto 'a'..'z' among the bytes that can equal a lowercase letter), and the full
compare goes through a 256-byte fold table.

All functions take ``offsets`` (``len(rows) + 1`` row boundaries, any integer
dtype, first value possibly != 0 for a sliced array) and ``data`` (the uint8
value buffer the offsets index into) and return a numpy bool array with one
answer per row. NULL handling is the caller's (a NULL row has equal offsets
or arbitrary bytes; its answer is to be masked).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

__all__ = ["contains_rows", "token_rows", "any_rows", "TOKEN_BYTE", "ASCII_LOWER"]


def _token_byte_table() -> np.ndarray:
    t = np.zeros(256, dtype=np.bool_)
    for lo, hi in ((ord("0"), ord("9")), (ord("A"), ord("Z")), (ord("a"), ord("z")), (0x80, 0xFF)):
        t[lo:hi + 1] = True
    return t


#: hasToken's token bytes: ASCII letters and digits and every byte >= 0x80.
TOKEN_BYTE = _token_byte_table()
_IDENTITY = np.arange(256, dtype=np.uint8)
#: ASCII-only lowercase map of a byte (as ClickHouse's ``lower``).
ASCII_LOWER = _IDENTITY.copy()
ASCII_LOWER[ord("A"):ord("Z") + 1] += 32
_IS_LOWER_LETTER = np.zeros(256, dtype=np.bool_)
_IS_LOWER_LETTER[ord("a"):ord("z") + 1] = True

# Bytes of the data sampled to rank the needle's bytes by frequency.
_SAMPLE = 1 << 14


@njit(cache=True, nogil=True, inline="always")
def _no_candidate(data, s, w, p1, p2, p3, k1, k2, k3, a1, a2, a3):
    """True iff none of the `w` starts s..s+w-1 has all three anchor bytes.

    Slices give LLVM non-negative unit-stride indices, so this branch-free
    min-reduction compiles to packed byte compares (AVX2/SSE).
    """
    u = data[s + p1:s + p1 + w]
    v = data[s + p2:s + p2 + w]
    x = data[s + p3:s + p3 + w]
    acc = np.uint8(255)
    for j in range(w):
        acc = min(acc, ((u[j] | k1) ^ a1) | ((v[j] | k2) ^ a2) | ((x[j] | k3) ^ a3))
    return acc != 0


@njit(cache=True, nogil=True)
def _scan_kernel(offsets, data, needle, fold, is_token, p1, p2, p3, k1, k2, k3, token, out):
    """Set out[r] for every row r holding `needle` (a token of it if `token`).

    `needle` is folded by `fold` already; a candidate start s has
    ``(data[s+p] | k) == needle[p]`` at the three anchor positions p
    (k = 0x20 for a folded letter anchor, else 0). Rows already true are not
    searched again (multiSearchAny runs one pass per needle into one `out`).
    Starts are filtered 64 at a time, then 16 at a time inside a 64-block
    that has a candidate, then probed one by one.
    """
    n = offsets.shape[0] - 1
    m = needle.shape[0]
    lo = offsets[0]
    last = offsets[n] - m          # last start position a match may have
    a1 = needle[p1]
    a2 = needle[p2]
    a3 = needle[p3]
    s = lo
    r = 0                          # row cursor: offsets[r] <= candidate < offsets[r+1]
    while s <= last:
        if s + 63 <= last:
            if _no_candidate(data, s, 64, p1, p2, p3, k1, k2, k3, a1, a2, a3):
                s += 64
                continue
            end = s + 64
        else:
            end = last + 1
        c = s
        while c < end:
            if c + 16 <= end:
                if _no_candidate(data, c, 16, p1, p2, p3, k1, k2, k3, a1, a2, a3):
                    c += 16
                    continue
                sub_end = c + 16
            else:
                sub_end = end
            while c < sub_end:
                if ((data[c + p1] | k1) == a1) and ((data[c + p2] | k2) == a2) \
                        and ((data[c + p3] | k3) == a3):
                    while offsets[r + 1] <= c:
                        r += 1
                    row_end = offsets[r + 1]
                    if out[r] or c + m > row_end:
                        # Row already answered (by an earlier needle), or the
                        # needle would run into the next row (so would every later
                        # start in this row): go on at the next row's start.
                        c = row_end
                        break
                    j = 0
                    while j < m and fold[data[c + j]] == needle[j]:
                        j += 1
                    if j == m and token:
                        if c > offsets[r] and is_token[data[c - 1]]:
                            j = -1
                        elif c + m < row_end and is_token[data[c + m]]:
                            j = -1
                    if j == m:
                        out[r] = True
                        c = row_end    # one hit per row is enough
                        break
                c += 1
        s = max(end, c)


def _as_offsets(offsets: np.ndarray) -> np.ndarray:
    o = np.asarray(offsets)
    return o if o.dtype == np.int64 else o.astype(np.int64)


def _anchors(data: np.ndarray, lo: int, hi: int, nd: np.ndarray, fold: bool) -> tuple[int, int, int]:
    """Three needle positions (repeated for shorter needles) whose bytes are rarest in a data sample.

    Three bytes, not two: pairs of letters are often common together ('in',
    'g s'), three at their distances rarely are, and the third compare costs
    little in the vector filter.
    """
    m = len(nd)
    if m == 1:
        return 0, 0, 0
    # Sample the middle of the range too: the first rows of a chunk can be atypical.
    span = hi - lo
    if span <= 2 * _SAMPLE:
        sample = data[lo:hi]
    else:
        mid = lo + span // 2
        sample = np.concatenate((data[lo:lo + _SAMPLE], data[mid:mid + _SAMPLE]))
    counts = np.bincount(sample, minlength=256).astype(np.float64)
    if fold:
        counts[ord("a"):ord("z") + 1] += counts[ord("A"):ord("Z") + 1]
    f = counts[nd] + 0.5               # +0.5: unseen bytes still rank by rarity
    order = np.argsort(f, kind="stable")
    ps = sorted(int(x) for x in order[:3])
    return ps[0], ps[1], ps[-1]


def _search(offsets: np.ndarray, data: np.ndarray, needle: bytes, case_insensitive: bool,
            token: bool, out: np.ndarray) -> None:
    o = offsets
    lo, hi = int(o[0]), int(o[-1])
    m = len(needle)
    if hi - lo < m or len(o) < 2:
        return
    fold = ASCII_LOWER if case_insensitive else _IDENTITY
    nd = fold[np.frombuffer(needle, dtype=np.uint8)]
    ps = _anchors(data, lo, hi, nd, case_insensitive)
    k1, k2, k3 = (np.uint8(0x20 if case_insensitive and _IS_LOWER_LETTER[nd[p]] else 0) for p in ps)
    _scan_kernel(o, data, nd, fold, TOKEN_BYTE, *ps, k1, k2, k3, token, out)


def _check(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    o = _as_offsets(offsets)
    d = np.asarray(data)
    if d.dtype != np.uint8:
        raise TypeError(f"data must be a uint8 array, got {d.dtype}")
    if len(o) == 0:
        raise ValueError("offsets must hold len(rows) + 1 values")
    if len(o) > 1 and int(o[-1]) > len(d):
        raise ValueError(f"offsets end at {int(o[-1])} beyond the data buffer ({len(d)} bytes)")
    return o, d


def contains_rows(offsets: np.ndarray, data: np.ndarray, needle: bytes,
                  case_insensitive: bool = False) -> np.ndarray:
    """Per row: does `needle` occur in it as a byte substring (``needle in row``)?

    The empty needle is in every row (also the empty one). With
    `case_insensitive`, ASCII letters fold ('K' == 'k'); other bytes compare
    exactly (no Unicode folding: that is ILIKE's RE2 path, not this).
    """
    o, d = _check(offsets, data)
    needle = bytes(needle)
    if not needle:
        return np.ones(len(o) - 1, dtype=np.bool_)
    out = np.zeros(len(o) - 1, dtype=np.bool_)
    _search(o, d, needle, case_insensitive, False, out)
    return out


def token_rows(offsets: np.ndarray, data: np.ndarray, needle: bytes,
               case_insensitive: bool = False) -> np.ndarray:
    """Per row: ClickHouse ``hasToken(row, needle)`` (``hasTokenCaseInsensitive`` if asked).

    True iff some occurrence of `needle` has the row's start or a separator
    before it and the row's end or a separator after it; separators are ASCII
    bytes outside [0-9A-Za-z], bytes >= 0x80 are token bytes. Every occurrence
    is tried ('aabc abc' holds 'abc'). Folding is ASCII only. The empty needle
    matches no row; a needle holding a separator raises ValueError (ClickHouse
    refuses it; the caller reports it in its own words).
    """
    o, d = _check(offsets, data)
    needle = bytes(needle)
    out = np.zeros(len(o) - 1, dtype=np.bool_)
    if not needle:
        return out
    if not TOKEN_BYTE[np.frombuffer(needle, dtype=np.uint8)].all():
        raise ValueError("hasToken needle must not contain separator bytes")
    _search(o, d, needle, case_insensitive, True, out)
    return out


def any_rows(offsets: np.ndarray, data: np.ndarray, needles: Sequence[bytes]) -> np.ndarray:
    """Per row: ClickHouse ``multiSearchAny(row, needles)``: some needle is a byte substring.

    ClickHouse's quirk is kept: an empty needle matches every *non-empty* row
    (not the empty string). No needles: no row matches. One whole-buffer pass
    per distinct needle into one answer; rows already matched are skipped by
    later passes. (Measured against one RE2 alternation pass: faster up to at
    least 8 needles on log text; see bench/bench_search.py.)
    """
    o, d = _check(offsets, data)
    ns = sorted({bytes(x) for x in needles}, key=lambda x: (-len(x), x))
    out = np.zeros(len(o) - 1, dtype=np.bool_)
    if any(len(x) == 0 for x in ns):
        out |= np.diff(o) > 0
        ns = [x for x in ns if x]
    # Longer needles first: their anchor pairs are usually rarer, and every row
    # they settle is skipped by the passes after them.
    for x in ns:
        _search(o, d, x, False, False, out)
    return out
