"""Whole-buffer byte search over an Arrow string chunk: substring, hasToken, multiSearchAny.

The exact WHERE runs after pruning over the kept granules' text; these kernels
answer, per row, whether a constant needle occurs in it, scanning the chunk's
whole data buffer once instead of row by row.

Algorithm (the "SIMD-friendly" substring search of W. Mula, also the filter
stage of ClickHouse's Volnitsky searcher): two *anchor* positions ``p1 < p2``
of the needle are picked, the pair whose bytes co-occur (at their distance)
least often in a sample of the data, plus a third anchor when that pair is
still common. A candidate start ``s`` must have ``data[s+p] == needle[p]`` at
every anchor; a numba loop tests 64 starts at a time with a branch-free
OR-reduction of byte equalities that LLVM turns into AVX2/SSE compares
(faster than one numpy compare pass); a block that has a candidate gives a
64-bit mask of its candidate starts, visited lowest bit first. Only those are
probed byte by byte: the candidate is mapped to its
row with a row cursor that only moves forward (the buffer is scanned in order,
so no binary search), checked to lie inside that row (a needle spanning two
rows must not match), compared in full, and for hasToken checked for
separators (or the row's edges) on both sides. Once a row is
known to match, its other candidates are dropped from the mask (or the scan
jumps to the next row), so a needle that occurs in most rows costs one hit
per row, not one per occurrence, and no restart of the block filter per hit.

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
from skipidx.core.lazy import njit, numba_loaded, use_numpy_path

__all__ = ["contains_rows", "token_rows", "any_rows", "pages_rows", "PageSearch", "TOKEN_BYTE", "ASCII_LOWER"]


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

# Bytes of the data sampled (twice: start and middle) to rank anchors.
_SAMPLE = 1 << 12


@njit(cache=True, nogil=True, inline="always")
def _no_candidate(data, s, w, p1, p2, p3, k1, k2, k3, a1, a2, a3, three):
    """True iff none of the `w` starts s..s+w-1 has the anchor bytes (two, or three if `three`).

    Slices give LLVM non-negative unit-stride indices, and the OR of byte
    equalities is a bool reduction, so the loop compiles to packed byte
    compares (with uint8 XOR/min numba would widen the lanes to int64). Two
    anchors read two streams; the third is only used when the best pair is common.
    """
    u = data[s + p1:s + p1 + w]
    v = data[s + p2:s + p2 + w]
    hit = False
    if three:
        x = data[s + p3:s + p3 + w]
        for j in range(w):
            hit |= ((u[j] | k1) == a1) & ((v[j] | k2) == a2) & ((x[j] | k3) == a3)
    else:
        for j in range(w):
            hit |= ((u[j] | k1) == a1) & ((v[j] | k2) == a2)
    return not hit


@njit(cache=True, nogil=True)
def _skip_blocks(data, s, last, p1, p2, p3, k1, k2, k3, a1, a2, a3, three):
    """The first s' >= s (in steps of 64) whose 64 starts hold a candidate, or one past the last full block.

    A function of its own (not inlined into the scan): inside the big scan
    loop LLVM did not vectorize the filter (figures in bench/NOTES.md).
    """
    while s + 63 <= last:
        if not _no_candidate(data, s, 64, p1, p2, p3, k1, k2, k3, a1, a2, a3, three):
            return s
        s += 64
    return s


@njit(cache=True, nogil=True)
def _block_bits(data, s, w, p1, p2, p3, k1, k2, k3, a1, a2, a3, three):
    """Bit j set iff start s+j (j < w <= 64) has every anchor byte.

    Its own function for the same reason as `_skip_blocks` (the compares are
    vectorized here, scalar when inlined into the scan loop)."""
    u = data[s + p1:s + p1 + w]
    v = data[s + p2:s + p2 + w]
    bits = np.uint64(0)
    if three:
        x = data[s + p3:s + p3 + w]
        for j in range(w):
            bits |= np.uint64(((u[j] | k1) == a1) & ((v[j] | k2) == a2) & ((x[j] | k3) == a3)) << np.uint64(j)
    else:
        for j in range(w):
            bits |= np.uint64(((u[j] | k1) == a1) & ((v[j] | k2) == a2)) << np.uint64(j)
    return bits


#: 64-bit de Bruijn constant (the one `_scan_kernel` multiplies by)
_DEBRUIJN = 0x03F79D71B4CB0A89


def _ctz_table() -> np.ndarray:
    """De Bruijn table: ``t[((x & -x) * _DEBRUIJN) >> 58]`` is the index of x's lowest set bit."""
    t = np.zeros(64, dtype=np.int64)
    for i in range(64):
        t[(((1 << i) * _DEBRUIJN) & 0xFFFFFFFFFFFFFFFF) >> 58] = i
    return t


_CTZ = _ctz_table()


@njit(cache=True, nogil=True)
def _scan_kernel(offsets, data, needle, fold, is_token, p1, p2, p3, k1, k2, k3, three, token, ctz, gap, out):
    """Set out[r] for every row r holding `needle` (a token of it if `token`).

    `needle` is folded by `fold` already; a candidate start s has
    ``(data[s+p] | k) == needle[p]`` at the anchor positions p (p3 is only
    tested if `three`; it equals p2 otherwise) (k = 0x20 for a folded letter
    anchor, else 0). Rows already true are not searched again (multiSearchAny
    runs one pass per needle into one `out`). Blocks of 64 starts without a
    candidate are skipped (`_skip_blocks`); in a block with one, the
    candidates are a 64-bit mask (`_block_bits`) whose set bits are visited
    lowest first (`ctz`: a de Bruijn table), each mapped to its row by a
    forward-only cursor and verified. A frequent needle thus costs one mask
    per block and one visit per candidate, with no restart of the block
    filter after each hit.

    `gap`: row r ends `gap` bytes before ``offsets[r + 1]`` (0 for Arrow's offsets; 4 for
    the values of a PLAIN Parquet page, each followed by the next one's length).
    """
    n = offsets.shape[0] - 1
    m = needle.shape[0]
    last = np.int64(offsets[n]) - gap - m    # last start position a match may have
    a1 = needle[p1]
    a2 = needle[p2]
    a3 = needle[p3]
    one = np.uint64(1)
    mul = np.uint64(0x03F79D71B4CB0A89)
    sh = np.uint64(58)
    s = np.int64(offsets[0])
    r = 0                          # row cursor: offsets[r] <= candidate < offsets[r+1]
    while s <= last:
        if s + 63 <= last:
            s = _skip_blocks(data, s, last, p1, p2, p3, k1, k2, k3, a1, a2, a3, three)
            if s > last:
                break
        w = min(64, last - s + 1)
        bits = _block_bits(data, s, w, p1, p2, p3, k1, k2, k3, a1, a2, a3, three)
        nxt = s + w
        while bits:
            low = bits & (~bits + one)
            bits ^= low
            c = s + ctz[(low * mul) >> sh]
            while offsets[r + 1] <= c:
                r += 1
            row_next = np.int64(offsets[r + 1])
            row_end = row_next - gap
            skip = out[r] or c + m > row_end
            if not skip:
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
                    skip = True
            if skip:
                # the row is answered (by this or an earlier needle), or the needle would run
                # into the next row (so would every later start in this row): go on at the next row
                if row_next >= nxt:
                    nxt = row_next
                    break
                bits &= ~((one << np.uint64(row_next - s)) - one)
        s = nxt


@njit(cache=True, nogil=True, inline="always")
def _read_len(data, p):
    return (np.int64(data[p]) | (np.int64(data[p + 1]) << 8) | (np.int64(data[p + 2]) << 16)
            | (np.int64(data[p + 3]) << 24))


@njit(cache=True, nogil=True)
def _scan_plain_kernel(data, pos, n, needle, fold, is_token, p1, p2, p3, k1, k2, k3, three, token, ctz, out):
    """`_scan_kernel` over the `n` values of a PLAIN Parquet page (each a 4-byte length,
    then its bytes) starting at `pos` in `data`, the row cursor walking the lengths as it
    goes (no bounds array: the walk's dependent loads overlap the search), then walking
    the rows after the last candidate. Returns where the last value ends (the caller
    checks the values fill the page), or -1 where a length runs past the data. The
    block filter and the candidate checks are `_scan_kernel`'s; only the cursor differs.
    """
    end = np.int64(data.shape[0])
    if n == 0:
        return np.int64(pos)
    m = needle.shape[0]
    last = end - m
    a1 = needle[p1]
    a2 = needle[p2]
    a3 = needle[p3]
    one = np.uint64(1)
    mul = np.uint64(0x03F79D71B4CB0A89)
    sh = np.uint64(58)
    if pos + 4 > end:
        return -1
    rs = np.int64(pos) + 4         # row r is data[rs:re]; the next row's bytes start at re + 4
    re = rs + _read_len(data, pos)
    if re > end:
        return -1
    r = 0
    s = rs
    while s <= last:
        if s + 63 <= last:
            s = _skip_blocks(data, s, last, p1, p2, p3, k1, k2, k3, a1, a2, a3, three)
            if s > last:
                break
        w = min(64, last - s + 1)
        bits = _block_bits(data, s, w, p1, p2, p3, k1, k2, k3, a1, a2, a3, three)
        nxt = s + w
        while bits:
            low = bits & (~bits + one)
            bits ^= low
            c = s + ctz[(low * mul) >> sh]
            while re + 4 <= c:
                r += 1
                if r >= n or re + 4 > end:
                    return -1
                rs = re + 4
                re = rs + _read_len(data, rs - 4)
                if re > end:
                    return -1
            row_next = re + 4
            skip = out[r] or c + m > re
            if not skip:
                j = 0
                while j < m and fold[data[c + j]] == needle[j]:
                    j += 1
                if j == m and token:
                    if c > rs and is_token[data[c - 1]]:
                        j = -1
                    elif c + m < re and is_token[data[c + m]]:
                        j = -1
                if j == m:
                    out[r] = True
                    skip = True
            if skip:
                if row_next >= nxt:
                    nxt = row_next
                    break
                bits &= ~((one << np.uint64(row_next - s)) - one)
        s = nxt
    while r < n - 1:
        r += 1
        if re + 4 > end:
            return -1
        rs = re + 4
        re = rs + _read_len(data, rs - 4)
        if re > end:
            return -1
    return re


def _as_offsets(offsets: np.ndarray) -> np.ndarray:
    """Arrow's int32 or int64 offsets as they are (the kernels are compiled for both); others as int64."""
    o = np.asarray(offsets)
    return o if o.dtype == np.int64 or o.dtype == np.int32 else o.astype(np.int64)


@njit(cache=True, nogil=True)
def _choose_anchors(sample, nd):
    """(p1, p2, p3, three) for needle `nd` (len >= 2) from byte statistics of `sample`.

    In numba: per chunk (a scan hands over one chunk per mark range), numpy's
    bincount/argsort/count_nonzero calls and their Python glue cost several
    times the histogram itself (bench/NOTES.md).
    """
    m = nd.shape[0]
    counts = np.zeros(256, dtype=np.int64)
    for x in sample:
        counts[x] += 1
    freq = np.empty(m, dtype=np.int64)
    for i in range(m):
        freq[i] = counts[nd[i]]
    order = np.argsort(freq, kind="mergesort")   # stable: ties keep the leftmost
    top = min(3, m)
    n = sample.shape[0] - m + 1
    best_co = -1
    a = min(order[0], order[1])
    b = max(order[0], order[1])
    if n > 0:
        for i in range(top):
            for j in range(i + 1, top):
                x = min(order[i], order[j])
                y = max(order[i], order[j])
                u = sample[x:x + n]   # slices: unit-stride, no negative-index checks
                v = sample[y:y + n]
                ax = nd[x]
                ay = nd[y]
                co = 0
                for k in range(n):
                    co += (u[k] == ax) & (v[k] == ay)
                if best_co < 0 or co < best_co:
                    best_co = co
                    a = x
                    b = y
    if m == 2 or best_co < 0 or best_co * 64 <= 0.02 * n:
        return a, b, b, False
    for i in range(m):
        t = order[i]
        if t != a and t != b:
            return a, b, t, True
    return a, b, b, False


def _anchors(data: np.ndarray, lo: int, hi: int, nd: np.ndarray, fold: bool) -> tuple[int, int, int, bool]:
    """Anchor positions (p1, p2, p3) of the needle and whether the filter needs the third.

    The needle's bytes are ranked by frequency in a sample of the data; among
    the pairs of the three rarest, the pair with the fewest co-occurrences at
    its distance in the sample is taken (measured, not assumed independent:
    'in' or 'g s' are common although no byte of them is rare). If that pair
    still marks more than ~2 % of 64-byte blocks, the rarest other byte is
    added as a third anchor. The choice only decides speed, never answers.
    """
    if len(nd) == 1:
        return 0, 0, 0, False
    span = hi - lo
    if span <= 2 * _SAMPLE:
        sample = data[lo:hi]
    else:  # the first rows of a chunk can be atypical: sample the middle too
        mid = lo + span // 2
        sample = np.concatenate((data[lo:lo + _SAMPLE], data[mid:mid + _SAMPLE]))
    if fold:
        sample = ASCII_LOWER[sample]
    p1, p2, p3, three = _choose_anchors(sample, nd)
    return int(p1), int(p2), int(p3), bool(three)


#: Bytes per block of `_search_np`'s anchor scan: its temporaries stay in the cache.
_NP_BLOCK = 1 << 17


def _search_np(o: np.ndarray, data: np.ndarray, nd: np.ndarray, fold: np.ndarray, token: bool,
               out: np.ndarray, block: int = _NP_BLOCK, gap: int = 0) -> None:
    """`_scan_kernel`'s answer in whole-buffer numpy: the starts holding the needle's two
    rarest bytes (ranked on a sample, as `_anchors` does) at their places, found block by
    block, narrowed by its other bytes rarest first, mapped to their rows, kept if the needle
    ends inside the row (and, for hasToken, has a separator or the row's edge on each side)."""
    lo, hi = int(o[0]), int(o[-1]) - gap
    m = nd.shape[0]
    seg = data[lo:hi] if fold is _IDENTITY else fold[data[lo:hi]]
    n = hi - lo - m + 1
    span = hi - lo
    sample = seg if span <= 2 * _SAMPLE else np.concatenate((seg[:_SAMPLE], seg[span // 2:span // 2 + _SAMPLE]))
    order = np.argsort(np.bincount(sample, minlength=256)[nd], kind="stable").tolist()
    a, b = order[0], order[min(1, m - 1)]
    x, y = nd[a], nd[b]
    hit = np.empty(min(block, n), dtype=np.bool_)
    tmp = np.empty(min(block, n), dtype=np.bool_)
    found = []
    for s0 in range(0, n, block):
        w = min(block, n - s0)
        h = np.equal(seg[s0 + a:s0 + a + w], x, out=hit[:w])
        h &= np.equal(seg[s0 + b:s0 + b + w], y, out=tmp[:w])
        idx = np.flatnonzero(h)
        if idx.size:
            found.append(idx + s0)
    cand = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    for j in order[2:]:
        if not cand.size:
            return
        cand = cand[seg[cand + j] == nd[j]]
    if not cand.size:
        return
    c = cand + lo
    r = np.searchsorted(o, c, side="right") - 1
    row_end = o[r + 1] - gap
    ok = c + m <= row_end
    if token:
        before = np.zeros(c.shape[0], dtype=np.bool_)
        inner = c > o[r]
        before[inner] = TOKEN_BYTE[data[c[inner] - 1]]
        after = np.zeros(c.shape[0], dtype=np.bool_)
        inner = ok & (c + m < row_end)
        after[inner] = TOKEN_BYTE[data[c[inner] + m]]
        ok &= ~before & ~after
    out[r[ok]] = True


def _search(offsets: np.ndarray, data: np.ndarray, needle: bytes, case_insensitive: bool,
            token: bool, out: np.ndarray, gap: int = 0) -> None:
    o = offsets
    lo, hi = int(o[0]), int(o[-1]) - gap
    m = len(needle)
    if hi - lo < m or len(o) < 2:
        return
    fold = ASCII_LOWER if case_insensitive else _IDENTITY
    nd = fold[np.frombuffer(needle, dtype=np.uint8)]
    if use_numpy_path(hi - lo):   # a new process scanning a few granules need not load numba
        _search_np(o, data, nd, fold, token, out, gap=gap)
        return
    p1, p2, p3, three = _anchors(data, lo, hi, nd, case_insensitive)
    k1, k2, k3 = (np.uint8(0x20 if case_insensitive and _IS_LOWER_LETTER[nd[p]] else 0) for p in (p1, p2, p3))
    _scan_kernel(o, data, nd, fold, TOKEN_BYTE, p1, p2, p3, k1, k2, k3, three, token, _CTZ, np.int64(gap), out)


def _check(offsets: np.ndarray, data: np.ndarray, gap: int = 0) -> tuple[np.ndarray, np.ndarray]:
    o = _as_offsets(offsets)
    d = np.asarray(data)
    if d.dtype != np.uint8:
        raise TypeError(f"data must be a uint8 array, got {d.dtype}")
    if len(o) == 0:
        raise ValueError("offsets must hold len(rows) + 1 values")
    if gap < 0 or (len(o) > 1 and int(o[-1]) - gap > len(d)):
        raise ValueError(f"offsets end at {int(o[-1])} beyond the data buffer ({len(d)} bytes)")
    return o, d


def contains_rows(offsets: np.ndarray, data: np.ndarray, needle: bytes,
                  case_insensitive: bool = False, gap: int = 0) -> np.ndarray:
    """Per row: does `needle` occur in it as a byte substring (``needle in row``)?

    The empty needle is in every row (also the empty one). With
    `case_insensitive`, ASCII letters fold ('K' == 'k'); other bytes compare
    exactly (no Unicode folding: that is ILIKE's RE2 path, not this). `gap`: row r is
    ``data[offsets[r]:offsets[r + 1] - gap]`` (the values of a PLAIN Parquet page: 4).
    """
    o, d = _check(offsets, data, gap)
    needle = bytes(needle)
    if not needle:
        return np.ones(len(o) - 1, dtype=np.bool_)
    out = np.zeros(len(o) - 1, dtype=np.bool_)
    _search(o, d, needle, case_insensitive, False, out, gap)
    return out


def token_rows(offsets: np.ndarray, data: np.ndarray, needle: bytes,
               case_insensitive: bool = False, gap: int = 0) -> np.ndarray:
    """Per row: ClickHouse ``hasToken(row, needle)`` (``hasTokenCaseInsensitive`` if asked).

    True iff some occurrence of `needle` has the row's start or a separator
    before it and the row's end or a separator after it; separators are ASCII
    bytes outside [0-9A-Za-z], bytes >= 0x80 are token bytes. Every occurrence
    is tried ('aabc abc' holds 'abc'). Folding is ASCII only. The empty needle
    matches no row; a needle holding a separator raises ValueError (ClickHouse
    refuses it; the caller reports it in its own words). `gap`: as contains_rows'.
    """
    o, d = _check(offsets, data, gap)
    needle = bytes(needle)
    out = np.zeros(len(o) - 1, dtype=np.bool_)
    if not needle:
        return out
    if not TOKEN_BYTE[np.frombuffer(needle, dtype=np.uint8)].all():
        raise ValueError("hasToken needle must not contain separator bytes")
    _search(o, d, needle, case_insensitive, True, out, gap)
    return out


def any_rows(offsets: np.ndarray, data: np.ndarray, needles: Sequence[bytes]) -> np.ndarray:
    """Per row: ClickHouse ``multiSearchAny(row, needles)``: some needle is a byte substring.

    ClickHouse's quirk is kept: an empty needle matches every *non-empty* row
    (not the empty string). No needles: no row matches. One whole-buffer pass
    per distinct needle into one answer; rows already matched are skipped by
    later passes (cheaper than one RE2 alternation pass for a few needles:
    bench/bench_search.py).
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


class PageSearch:
    """:func:`token_rows` (`token`) or :func:`contains_rows` of one ``(offsets, data)``
    after another (the pages of a Parquet column, `gap` as contains_rows'), the anchors
    chosen once, on the first page's bytes (they decide speed only): sampling every
    page would cost more than searching a small one."""

    __slots__ = ("needle", "nd", "token", "gap", "anchors")

    def __init__(self, needle: bytes, token: bool, gap: int = 0) -> None:
        self.needle = bytes(needle)
        self.nd = np.frombuffer(self.needle, dtype=np.uint8)
        if token and self.needle and not TOKEN_BYTE[self.nd].all():
            raise ValueError("hasToken needle must not contain separator bytes")
        self.token = token
        self.gap = gap
        self.anchors: tuple | None = None

    def __call__(self, offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
        o, d = _check(offsets, data, self.gap)
        out = np.zeros(len(o) - 1, dtype=np.bool_)
        m = len(self.needle)
        if not m:
            if not self.token:
                out[:] = True
            return out
        lo, hi = int(o[0]), int(o[-1]) - self.gap
        if len(o) < 2 or hi - lo < m:
            return out
        if not numba_loaded():
            _search(o, d, self.needle, False, self.token, out, self.gap)
            return out
        if self.anchors is None:
            self.anchors = _anchors(d, lo, hi, self.nd, False)
        p1, p2, p3, three = self.anchors
        z = np.uint8(0)
        _scan_kernel(o, d, self.nd, _IDENTITY, TOKEN_BYTE, p1, p2, p3, z, z, z, three, self.token, _CTZ,
                     np.int64(self.gap), out)
        return out


    def plain(self, data: np.ndarray, start: int, n: int) -> np.ndarray:
        """Per value of a PLAIN page (`n` values, each a 4-byte length and its bytes, from
        ``data[start]``; gap 4 and `token` as constructed): the search with the row cursor
        walking the lengths (`_scan_plain_kernel`). ValueError if the values do not fill
        `data` exactly."""
        d = np.asarray(data)
        if d.dtype != np.uint8:
            raise TypeError(f"data must be a uint8 array, got {d.dtype}")
        if self.gap != 4:
            raise ValueError("PLAIN values have a gap of 4")
        if not numba_loaded() or not self.needle:
            from skipidx.core._kernels.rle import plain_bounds

            b = np.empty(n + 1, dtype=np.int64)
            if plain_bounds(d, start, n, b) != d.shape[0]:
                raise ValueError("PLAIN values do not fill the page")
            return self(b, d)
        out = np.zeros(n, dtype=np.bool_)
        if self.anchors is None:
            if d.shape[0] - start < len(self.needle):
                self.anchors = None
            else:
                self.anchors = _anchors(d, start, d.shape[0], self.nd, False)
        p1, p2, p3, three = self.anchors if self.anchors is not None else (0, 0, 0, False)
        z = np.uint8(0)
        got = _scan_plain_kernel(d, np.int64(start), np.int64(n), self.nd, _IDENTITY, TOKEN_BYTE, p1, p2, p3,
                                 z, z, z, three, self.token, _CTZ, out)
        if got != d.shape[0]:
            raise ValueError("PLAIN values do not fill the page")
        return out


def pages_rows(pages: Sequence[tuple[np.ndarray, np.ndarray]], needle: bytes, token: bool,
               gap: int = 0) -> list[np.ndarray]:
    """:class:`PageSearch` over each ``(offsets, data)`` of `pages`."""
    search = PageSearch(needle, token, gap)
    return [search(o, d) for o, d in pages]
