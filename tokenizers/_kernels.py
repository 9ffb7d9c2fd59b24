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
* ``*_tokens`` — ``(rows, offsets, bytes)``: the tokens themselves, gathered
  into one buffer (``tokenize()``: tests, the research bench).

The n-gram kernels count first and then fill exactly-sized outputs. The token
kernels skip the count (about a fifth of their work): they fill outputs of an
estimated size, stop before a row that might not fit, and the driver grows the
outputs and resumes, then trims them in place. The scans are written
branch-light (a store per byte and an index advanced by 0 or 1) because token
boundaries are too irregular for branch prediction.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from skipidx.core._kernels.spans import gather_spans  # noqa: F401  (K.gather_spans for the tokenizers)
from skipidx.core._kernels.xxh64 import xxh64_span, xxh64_short

# splitByNonAlpha: a token byte is an ASCII letter or digit, or any byte >= 0x80
# (so multi-byte UTF-8, and invalid UTF-8 too, always belongs to tokens).
TOKEN_BYTE = np.zeros(256, dtype=np.bool_)
for _c in b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz":
    TOKEN_BYTE[_c] = True
TOKEN_BYTE[0x80:] = True
_TB8 = TOKEN_BYTE.astype(np.int64)  # the same table as 0/1 integers, for index arithmetic

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


@njit(inline="always", cache=True)
def _is_ascii(data, s, e):
    acc = np.uint8(0)
    for p in range(s, e):
        acc |= data[p]
    return acc < 0x80


# --------------------------------------------------------------------------
# token (splitByNonAlpha)
#
# The byte loops index with unsigned integers (``U``): numba wraps a negative
# signed index around (a compare and an add per access), which cost about a
# third of the token kernels' time. One branch-free pass per row, then a short
# loop over the row's tokens writes the outputs. There is no counting pass:
# the outputs get an estimated capacity, and a kernel stops before a row that
# might not fit (a row of b bytes holds at most ceil(b / 2) tokens) and returns
# where it stopped; the driver grows the outputs and resumes (`token_hashes`).

U = np.uint64


@njit(inline="always", cache=True)
def _token_edges(tb, data, s, e, edges):
    """Token edges of ``data[s:e]`` into ``edges`` (start, end, start, end, ...): their count.

    Branch-free: every byte's position is stored, the count advances on every
    change of class (a token start or end) -- token boundaries are too
    irregular for branch prediction. ``s``, ``e`` uint64.
    """
    m = U(0)
    prev = U(0)
    for p in range(s, e):
        t = U(tb[data[p]])
        edges[m] = p
        m += t ^ prev
        prev = t
    if prev:
        edges[m] = e
        m += U(1)
    return m


@njit(cache=True, nogil=True)
def token_hashes_into(data, offsets, validity, voff, seed, rows, hashes, edges, i0, k0):
    """Fused splitByNonAlpha + XXH64 of rows ``i0..`` into ``rows``/``hashes`` from index ``k0``.

    Stops before the first row whose tokens might not fit (ceil(bytes / 2) more
    than the room left); returns (tokens written in all, next row): next row ==
    number of rows when done. ``edges``: uint64 scratch of at least longest row + 2.
    """
    seed = np.uint64(seed)
    tb = _TB8
    n = offsets.shape[0] - 1
    cap = U(rows.shape[0])
    k = U(k0)
    stop = n
    for i in range(i0, n):
        if not _valid(validity, voff, i):
            continue
        s = U(offsets[i])
        e = U(offsets[i + 1])
        if k + (e - s + U(1)) // U(2) > cap:
            stop = i
            break
        m = _token_edges(tb, data, s, e, edges)
        for g in range(0, m, 2):
            rows[k] = i
            a = np.int64(edges[g])
            ln = np.int64(edges[g + 1]) - a
            if ln < 32:
                hashes[k] = xxh64_short(data, a, ln, seed)
            else:
                hashes[k] = xxh64_span(data, a, ln, seed)
            k += U(1)
    return np.int64(k), stop


def _is_c_u8(t) -> bool:
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype == types.uint8


@intrinsic
def _copy16(typingctx, dst, j, src, a):
    """Copy the 16 bytes ``src[a:a+16]`` to ``dst[j:j+16]`` (C-contiguous uint8 arrays, no
    bounds check: the caller guarantees both ranges are inside their arrays).

    One fixed-size memcpy (two 8-byte moves): a short token is copied whole
    with no loop and no branch on its length.
    """
    if not (_is_c_u8(dst) and _is_c_u8(src)):
        return None
    sig = types.void(dst, j, src, a)

    def codegen(context, builder, signature, args):
        d = context.make_array(signature.args[0])(context, builder, args[0])
        s = context.make_array(signature.args[2])(context, builder, args[2])
        dp = builder.gep(d.data, [args[1]])
        sp = builder.gep(s.data, [args[3]])
        cgutils.raw_memcpy(builder, dp, sp, ir.Constant(ir.IntType(64), 16), 1, align=1)
        return context.get_dummy_value()

    return sig, codegen


#: Slack ``token_tokens_into`` needs past the tokens' bytes in ``out`` (`_copy16` of the last token).
TOKENS_OUT_SLACK = 16


@njit(cache=True, nogil=True)
def token_tokens_into(data, offsets, validity, voff, rows, offs, out, edges, i0, k0, j0):
    """splitByNonAlpha tokens of rows ``i0..`` into ``rows`` and ``offs[1:]`` from token
    ``k0`` and ``out`` from byte ``j0`` (``offs[k0] == j0``).

    ``out`` must hold the rows' bytes + `TOKENS_OUT_SLACK`; a row whose tokens
    might not fit in ``rows`` (``offs`` is one longer) stops the kernel as in
    `token_hashes_into`. Returns (tokens written in all, token bytes written in
    all, next row). ``edges``: uint64 scratch of at least longest row + 2.

    Per row, the branch-free edge scan, then per token a fixed 16-byte copy
    (a longer token, or one near the end of ``data``, is copied byte by byte)
    and its row and end offset: about 1.7 stores per byte instead of 2 for a
    byte-wise compaction.
    """
    tb = _TB8
    n = offsets.shape[0] - 1
    nd = U(data.shape[0])
    cap = U(rows.shape[0])
    k = U(k0)
    j = U(j0)
    offs[k] = j0
    stop = n
    for i in range(i0, n):
        if not _valid(validity, voff, i):
            continue
        s = U(offsets[i])
        e = U(offsets[i + 1])
        if k + (e - s + U(1)) // U(2) > cap:
            stop = i
            break
        m = _token_edges(tb, data, s, e, edges)
        wide = e + U(16) <= nd   # a 16-byte read from any token start of this row stays in data
        for g in range(0, m, 2):
            a = edges[g]
            ln = edges[g + 1] - a
            if wide and ln <= U(16):
                _copy16(out, j, data, a)
            else:
                for q in range(ln):
                    out[j + q] = data[a + q]
            j += ln
            rows[k] = i
            k += U(1)
            offs[k] = np.int64(j)
    return np.int64(k), np.int64(j), stop


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
#
# A start p is "reached" when it is the value's first byte, a byte that is
# not a continuation byte, or p = q + len(q) for a reached q; `pend` keeps the
# pending reached positions ahead of p as a bit mask (a code point is at most
# 4 bytes long). An ASCII-only row (the common case in logs) takes a plain
# loop: every byte is a code point, the gram at p is data[p:p+n].


@njit(inline="always", cache=True)
def gram_end(data, p, e, n):
    """End of the n code points from p, not clamped (past e when e cuts the last one
    off), or -1 if fewer than n start before e. n ASCII bytes ahead are n code points."""
    end = p + n
    if end <= e:
        ascii_run = True
        for k in range(p, end):
            if data[k] >= 0x80:
                ascii_run = False
                break
        if ascii_run:
            return end
    q = p
    cnt = 0
    while cnt < n and q < e:
        q += SEQ_LEN[data[q]]
        cnt += 1
    return q if cnt == n else -1


@njit(inline="always", cache=True)
def gram_at(data, p, e, n, pend, at_end):
    """One step of THE n-gram walk (every n-gram path calls it): (end of the gram
    starting at byte p, or -1; `pend` for p + 1).

    `pend` (uint32) holds the reached positions ahead of p as bits; start a
    value with 1 (its first byte starts a gram) or, for a substring of an
    unknown value, 0 (its first byte starts one only if it can begin a code
    point). `at_end`: a gram whose last code point e cuts off counts (clamped
    to e) -- true for whole values; a substring's may be longer in the value.
    Fewer than n code points from p gives no gram, but a later start still may
    (a long lead byte here can swallow several short ones).
    """
    c = data[p]
    end = -1
    if (pend & np.uint32(1)) or c < 0x80 or c >= 0xC0:
        pend |= np.uint32(1) << np.uint32(SEQ_LEN[c])
        q = gram_end(data, p, e, n)
        if q > e:
            end = e if at_end else -1
        else:
            end = q
    return end, pend >> np.uint32(1)


@njit(cache=True)
def gram_bounds(data, n, at_start, at_end):
    """(starts, ends) of the n-grams of one value or substring `data` (the query side; see `gram_at`)."""
    e = data.shape[0]
    starts = np.empty(e, dtype=np.int64)
    ends = np.empty(e, dtype=np.int64)
    k = 0
    pend = np.uint32(1) if at_start else np.uint32(0)
    for p in range(e):
        end, pend = gram_at(data, p, e, n, pend, at_end)
        if end >= 0:
            starts[k] = p
            ends[k] = end
            k += 1
    return starts[:k], ends[:k]


@njit(inline="always", cache=True)
def _cp_starts(data, s, e, sl, starts):
    """Code-point starts of a *regular* row into ``starts`` (with e appended); their count,
    or -1 if the row is not regular.

    Regular: no stray continuation byte and every lead byte followed by all its
    continuation bytes inside the row (valid UTF-8 is regular). There, the
    reached positions are exactly the code-point starts, and the gram at start
    j ends at start j + n. Branch-free: a store per byte, the count advanced
    by 0 or 1, the expected-continuation count kept with selects.
    """
    m = 0
    need = 0
    bad = False
    for p in range(s, e):
        c = data[p]
        cont = (c & 0xC0) == 0x80
        expect = need > 0
        bad |= cont != expect
        starts[m] = p
        m += 0 if cont else 1
        need = need - 1 if expect else sl[c] - 1
    starts[m] = e
    if bad or need > 0:
        return -1
    return m


@njit(inline="always", cache=True)
def _cp_count(data, s, e, sl):
    """Number of code points of a regular row (see `_cp_starts`), or -1 if it is not regular."""
    m = 0
    need = 0
    bad = False
    for p in range(s, e):
        c = data[p]
        cont = (c & 0xC0) == 0x80
        expect = need > 0
        bad |= cont != expect
        m += 0 if cont else 1
        need = need - 1 if expect else sl[c] - 1
    if bad or need > 0:
        return -1
    return m


@njit(cache=True, nogil=True)
def ngram_count(data, offsets, validity, voff, n, with_bytes):
    """(n-grams, total gram bytes (if `with_bytes`, else 0), longest row) of the valid rows."""
    sl = SEQ_LEN
    nrows = offsets.shape[0] - 1
    k = 0
    nbytes = 0
    longest = 0
    for i in range(nrows):
        if not _valid(validity, voff, i):
            continue
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        longest = max(longest, e - s)
    starts = np.empty(longest + 1, dtype=np.int64)
    for i in range(nrows):
        if not _valid(validity, voff, i):
            continue
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        if _is_ascii(data, s, e):
            g = e - s - n + 1
            if g > 0:
                k += g
                nbytes += g * n
            continue
        if with_bytes:
            m = _cp_starts(data, s, e, sl, starts)
            if m >= 0:
                for j in range(m - n + 1):
                    nbytes += starts[j + n] - starts[j]
        else:
            m = _cp_count(data, s, e, sl)
        if m >= 0:
            if m >= n:
                k += m - n + 1
            continue
        pend = np.uint32(1)
        for p in range(s, e):
            end, pend = gram_at(data, p, e, n, pend, True)
            if end >= 0:
                k += 1
                nbytes += end - p
    return k, nbytes, longest


@njit(cache=True, nogil=True)
def ngram_hashes_into(data, offsets, validity, voff, n, seed, rows, hashes, starts):
    """Fused ngram(n) + XXH64 into ``rows``/``hashes`` (sized by `ngram_count`);
    ``starts``: scratch of at least longest row + 1 int64."""
    seed = np.uint64(seed)
    sl = SEQ_LEN
    nrows = offsets.shape[0] - 1
    k = 0
    for i in range(nrows):
        if not _valid(validity, voff, i):
            continue
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        if _is_ascii(data, s, e):
            for p in range(s, e - n + 1):
                rows[k] = i
                hashes[k] = xxh64_span(data, p, n, seed)
                k += 1
            continue
        m = _cp_starts(data, s, e, sl, starts)
        if m >= 0:
            for j in range(m - n + 1):
                rows[k] = i
                # gram byte lengths vary with the code points: the branch-light hash
                ln = starts[j + n] - starts[j]
                if ln < 32:  # gram byte lengths vary with the code points: the branch-light hash
                    hashes[k] = xxh64_short(data, starts[j], ln, seed)
                else:
                    hashes[k] = xxh64_span(data, starts[j], ln, seed)
                k += 1
            continue
        pend = np.uint32(1)
        for p in range(s, e):
            end, pend = gram_at(data, p, e, n, pend, True)
            if end >= 0:
                rows[k] = i
                if end - p < 32:
                    hashes[k] = xxh64_short(data, p, end - p, seed)
                else:
                    hashes[k] = xxh64_span(data, p, end - p, seed)
                k += 1
    return k


@njit(cache=True, nogil=True)
def ngram_tokens_into(data, offsets, validity, voff, n, rows, offs, out, starts):
    """ngram(n) grams into ``rows`` (grams), ``offs`` (grams + 1), ``out`` (gram bytes),
    sized by `ngram_count`; ``starts``: scratch of at least longest row + 1 int64."""
    sl = SEQ_LEN
    nrows = offsets.shape[0] - 1
    k = 0
    j = 0
    offs[0] = 0
    for i in range(nrows):
        if not _valid(validity, voff, i):
            continue
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        if _is_ascii(data, s, e):
            for p in range(s, e - n + 1):
                for q in range(n):
                    out[j + q] = data[p + q]
                j += n
                rows[k] = i
                k += 1
                offs[k] = j
            continue
        m = _cp_starts(data, s, e, sl, starts)
        if m >= 0:
            for g in range(m - n + 1):
                for q in range(starts[g], starts[g + n]):
                    out[j] = data[q]
                    j += 1
                rows[k] = i
                k += 1
                offs[k] = j
            continue
        pend = np.uint32(1)
        for p in range(s, e):
            end, pend = gram_at(data, p, e, n, pend, True)
            if end >= 0:
                for q in range(p, end):
                    out[j] = data[q]
                    j += 1
                rows[k] = i
                k += 1
                offs[k] = j
    return k


# --------------------------------------------------------------------------
# drivers: size (a token estimate, or the n-gram count pass), allocate with numpy, fill
#
# Outputs are allocated by numpy, not inside the kernels: numpy asks the kernel
# for transparent huge pages on large arrays, which makes the first touch of
# a fresh output (tens of MB) several times cheaper than numba's allocator.


#: Initial token capacity per byte of text. Log lines hold about one token per 6
#: bytes, prose one per 5-6; denser text (single letters, ``a.b.c``) just
#: resumes once into grown outputs. A close guess matters: glibc's malloc
#: reuses freed blocks of up to 32 MB, so outputs sized close to their use are
#: mostly served from memory that is already mapped, while ones sized for the
#: worst case (one token per 2 bytes) are fresh mappings to fault in.
TOKENS_PER_BYTE = 0.25
#: The first capacity never exceeds this many tokens (a multi-GB column grows instead
#: of reserving its whole estimate at once).
MAX_FIRST_TOKENS = 1 << 26


def _row_bytes(offsets: np.ndarray, i: int) -> tuple[int, int]:
    """(bytes of rows i.., rows i..) of ``offsets``."""
    n = offsets.shape[0] - 1
    return int(offsets[n]) - int(offsets[i]), n - i


def _token_guess(offsets: np.ndarray) -> tuple[int, int, int]:
    """(token capacity to start with, text bytes, longest row), in O(rows) numpy work."""
    nbytes, n = _row_bytes(offsets, 0)
    if n <= 0:
        return 0, 0, 0
    longest = int(np.max(np.diff(offsets)))
    return min(int(nbytes * TOKENS_PER_BYTE) + n, MAX_FIRST_TOKENS), nbytes, longest


def _grow_to(k: int, offsets: np.ndarray, i: int) -> int:
    """A capacity that surely holds ``k`` tokens plus those of rows i.. (ceil(bytes / 2) each)."""
    nbytes, n = _row_bytes(offsets, i)
    return k + (nbytes + n) // 2


def _trim(a: np.ndarray, n: int) -> np.ndarray:
    """``a[:n]`` as ``a`` itself (a fresh, unshared array) shrunk in place by realloc: no
    copy, and no view pinning the larger block."""
    a.resize(n, refcheck=False)
    return a


def _grow(a: np.ndarray, keep: int, n: int) -> np.ndarray:
    """A new array of ``n`` holding ``a[:keep]``: the rest stays untouched (``ndarray.resize``
    would zero-fill it, faulting in pages the kernel may never use)."""
    out = np.empty(n, dtype=a.dtype)
    out[:keep] = a[:keep]
    return out


def token_hashes(data, offsets, validity, voff, seed):
    """(rows int64, hashes uint64) of every splitByNonAlpha token of every valid row."""
    cap, _nb, longest = _token_guess(offsets)
    n = offsets.shape[0] - 1
    rows = np.empty(cap, dtype=np.int64)
    hashes = np.empty(cap, dtype=np.uint64)
    edges = np.empty(longest + 2, dtype=np.uint64)
    k, i = 0, 0
    while True:
        k, i = token_hashes_into(data, offsets, validity, voff, np.uint64(seed), rows, hashes, edges, i, k)
        if i >= n:
            return _trim(rows, k), _trim(hashes, k)
        cap = _grow_to(k, offsets, i)
        rows, hashes = _grow(rows, k, cap), _grow(hashes, k, cap)


def token_tokens(data, offsets, validity, voff):
    """(rows, offsets, bytes) of every splitByNonAlpha token of every valid row."""
    cap, nbytes, longest = _token_guess(offsets)
    n = offsets.shape[0] - 1
    rows = np.empty(cap, dtype=np.int64)
    offs = np.empty(cap + 1, dtype=np.int64)
    out = np.empty(nbytes + TOKENS_OUT_SLACK, dtype=np.uint8)
    edges = np.empty(longest + 2, dtype=np.uint64)
    k, j, i = 0, 0, 0
    while True:
        k, j, i = token_tokens_into(data, offsets, validity, voff, rows, offs, out, edges, i, k, j)
        if i >= n:
            return _trim(rows, k), _trim(offs, k + 1), _trim(out, j)
        cap = _grow_to(k, offsets, i)
        rows, offs = _grow(rows, k, cap), _grow(offs, k + 1, cap + 1)


def ngram_hashes(data, offsets, validity, voff, n, seed):
    """(rows int64, hashes uint64) of every n-gram of every valid row."""
    total, _nb, longest = ngram_count(data, offsets, validity, voff, n, False)
    rows = np.empty(total, dtype=np.int64)
    hashes = np.empty(total, dtype=np.uint64)
    k = ngram_hashes_into(data, offsets, validity, voff, n, np.uint64(seed), rows, hashes,
                          np.empty(longest + 1, dtype=np.int64))
    assert k == total
    return rows, hashes


def ngram_tokens(data, offsets, validity, voff, n):
    """(rows, offsets, bytes) of every n-gram of every valid row."""
    total, nbytes, longest = ngram_count(data, offsets, validity, voff, n, True)
    rows = np.empty(total, dtype=np.int64)
    offs = np.empty(total + 1, dtype=np.int64)
    out = np.empty(nbytes, dtype=np.uint8)
    k = ngram_tokens_into(data, offsets, validity, voff, n, rows, offs, out,
                          np.empty(longest + 1, dtype=np.int64))
    assert k == total and offs[total] == nbytes
    return rows, offs, out


# --------------------------------------------------------------------------
# helpers shared by the tokenizers


@njit(cache=True, nogil=True)
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
