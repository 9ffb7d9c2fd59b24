"""The ``sparse_grams`` tokenizer: ClickHouse's ``sparseGrams`` / ``sparseGramsUTF8``.

Parameters: ``min_length`` (>= 3, default 3), ``max_length`` (>= min_length,
default 100), ``min_cutoff_length`` (optional, in [min_length, max_length]),
``utf8`` (0: symbols are bytes, ClickHouse's ``sparseGrams``; 1: symbols are
UTF-8 code points, ``sparseGramsUTF8`` and the text index's ``sparseGrams``
tokenizer).

Definition (restated from ClickHouse's ``sparseGramsImpl.h``; ``k = min_length - 1``):
every k-symbol window of a value gets ``h = updateWeakHash32(bytes, 0)``
(CRC32-C of the bytes packed into 64-bit words, see :func:`_weak_hash`).
For windows ``L < R`` the gram from the start of window L to the end of
window R is emitted iff it spans at most ``max_length`` symbols
(``R - L + k``), at least ``min_cutoff_length`` when given, and every window
strictly between L and R hashes strictly below ``min(h[L], h[R])``. So every
``min_length``-gram is a sparse gram, and longer grams are sparse.

The property is local -- it reads only the windows inside the gram -- so
every sparse gram of a substring is a sparse gram of every value holding it
(byte mode always; UTF-8 mode when the value's code points line up with the
substring's, which valid UTF-8 guarantees). For values that are not valid
UTF-8, UTF-8 mode also indexes the byte-mode grams, and the query side asks
for (UTF-8 grams) OR (byte grams): sound either way.

The index side is one numba pass over the Arrow buffers (a monotonic stack
of window hashes per row, as ClickHouse's convex hull).
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.core.text_patterns import like_runs
from skipidx.core.tokenizer_api import TextTokenizer, TokenRequirement, Tokens
from skipidx.core.lazy import kernels, njit

from ._arrow import hash_rows, token_rows
from ._common import check_no_params, check_seed

K = kernels("skipidx_tokenizers._kernels")

_CRC32C = np.zeros(256, dtype=np.uint32)
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C[_i] = _c
del _i, _c

MAX_LENGTH = 1 << 16
_NO_VALIDITY = np.zeros(0, dtype=np.uint8)


@njit(inline="always", cache=True)
def _crc_u64(crc, word, table):
    # CRC32-C of 8 little-endian bytes, no pre/post inversion (_mm_crc32_u64)
    c = np.uint32(crc)
    for b in range(8):
        c = table[(c ^ np.uint32((word >> np.uint64(8 * b)) & np.uint64(0xFF))) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
    return c


@njit(inline="always", cache=True)
def _load(data, p, n):
    # n (<= 8) bytes at p as a little-endian integer
    w = np.uint64(0)
    for b in range(n):
        w |= np.uint64(data[p + b]) << np.uint64(8 * b)
    return w


@njit(cache=True)
def _weak_hash(data, s, e, table):
    """ClickHouse's updateWeakHash32(data[s:e], 0)."""
    size = e - s
    if size < 8:
        w = _load(data, s, size) | (np.uint64(size) << np.uint64(56))
        return _crc_u64(np.uint32(0), w, table)
    v = np.uint32(0)
    p = s
    while p + 8 <= e:
        v = _crc_u64(v, _load(data, p, 8), table)
        p += 8
    if p < e:
        tail = e - p
        w = _load(data, e - 8, 8)
        w &= np.uint64(0xFFFFFFFFFFFFFFFF) << np.uint64(8 * (8 - tail))
        w |= np.uint64(tail)
        v = _crc_u64(v, w, table)
    return v


@njit(inline="always", cache=True)
def _next(data, p, e, utf8, sl):
    if utf8:
        q = p + sl[data[p]]
        return q if q < e else e
    return p + 1


@njit(cache=True)
def _valid_utf8(data, s, e):
    p = s
    while p < e:
        c = data[p]
        if c < 0x80:
            p += 1
            continue
        if 0xC2 <= c <= 0xDF:
            n = 1
        elif 0xE0 <= c <= 0xEF:
            n = 2
        elif 0xF0 <= c <= 0xF4:
            n = 3
        else:
            return False
        for q in range(p + 1, p + 1 + n):
            if q >= e or (data[q] & 0xC0) != 0x80:
                return False
        if c == 0xE0 and data[p + 1] < 0xA0:
            return False
        if c == 0xED and data[p + 1] > 0x9F:
            return False
        if c == 0xF0 and data[p + 1] < 0x90:
            return False
        if c == 0xF4 and data[p + 1] > 0x8F:
            return False
        p += 1 + n
    return True


@njit(cache=True)
def _row_grams(data, s, e, min_n, max_n, cutoff, utf8, sl, table, hl, hs, hh, out_s, out_e, k):
    """Sparse grams of data[s:e] appended as spans to out_s/out_e from k; returns the new k."""
    kw = min_n - 1
    left = s
    right = s
    num_inc = 0
    for _ in range(min_n - 2):
        if right >= e:
            return k
        right = _next(data, right, e, utf8, sl)
        num_inc += 1
        if num_inc >= kw:
            left = _next(data, left, e, utf8, sl)
    top = 0
    while right < e:
        nr = _next(data, right, e, utf8, sl)
        h = np.int64(_weak_hash(data, left, nr, table))
        r_sym = num_inc
        while top > 0 and hh[top - 1] < h:
            length = r_sym - hs[top - 1] + min_n - 1
            if length > max_n:
                top = 0
                break
            if length >= cutoff:
                out_s[k] = hl[top - 1]
                out_e[k] = nr
                k += 1
            top -= 1
        if top > 0:
            length = r_sym - hs[top - 1] + min_n - 1
            if length <= max_n and length >= cutoff:
                out_s[k] = hl[top - 1]
                out_e[k] = nr
                k += 1
        while top > 0 and hh[top - 1] == h:
            top -= 1
        hl[top] = left
        hs[top] = r_sym
        hh[top] = h
        top += 1
        right = nr
        num_inc += 1
        if num_inc >= kw:
            left = _next(data, left, e, utf8, sl)
    return k


@njit(cache=True, nogil=True)
def sparse_gram_spans(data, offsets, validity, voff, min_n, max_n, cutoff, utf8, sl, table):
    """(rows, starts, ends) of every sparse gram of every valid row (spans into data).

    UTF-8 mode: a row that is not valid UTF-8 also gets its byte-mode grams."""
    nrows = offsets.shape[0] - 1
    total = 0
    longest = 0
    for i in range(nrows):
        ln = np.int64(offsets[i + 1]) - np.int64(offsets[i])
        total += ln
        if ln > longest:
            longest = ln
    # each window is pushed once and emits at most one gram more than it pops
    cap = 2 * total * (2 if utf8 else 1) + 1
    rows = np.empty(cap, dtype=np.int64)
    out_s = np.empty(cap, dtype=np.int64)
    out_e = np.empty(cap, dtype=np.int64)
    hl = np.empty(longest + 1, dtype=np.int64)
    hs = np.empty(longest + 1, dtype=np.int64)
    hh = np.empty(longest + 1, dtype=np.int64)
    k = 0
    for i in range(nrows):
        if not K._valid(validity, voff, i):
            continue
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        k0 = k
        k = _row_grams(data, s, e, min_n, max_n, cutoff, utf8, sl, table, hl, hs, hh, out_s, out_e, k)
        if utf8 and not K._is_ascii(data, s, e) and not _valid_utf8(data, s, e):
            k = _row_grams(data, s, e, min_n, max_n, cutoff, False, sl, table, hl, hs, hh, out_s, out_e, k)
        for j in range(k0, k):
            rows[j] = i
    return rows[:k], out_s[:k], out_e[:k]


@njit(cache=True, nogil=True)
def _hash_spans(data, starts, ends, seed):
    n = starts.shape[0]
    out = np.empty(n, dtype=np.uint64)
    for j in range(n):
        out[j] = K.xxh64_span(data, starts[j], ends[j] - starts[j], seed)
    return out


def _int_param(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise SkipidxError(f"tokenizer 'sparse_grams': {name} must be an integer, got {v!r}")
    return int(v)


def is_valid_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


class SparseGramsTokenizer(TextTokenizer):
    """ClickHouse's sparse grams; see the module docstring."""

    name = "sparse_grams"
    version = "1"

    def __init__(self, min_length: Any = 3, max_length: Any = 100, min_cutoff_length: Any = None,
                 utf8: Any = 0, **params: Any) -> None:
        check_no_params(self.name, params, ("min_length", "max_length", "min_cutoff_length", "utf8"))
        mn = _int_param("min_length", min_length)
        mx = _int_param("max_length", max_length)
        if mn < 3:
            raise SkipidxError(f"tokenizer 'sparse_grams': min_length must be at least 3, got {mn}")
        if mx < mn:
            raise SkipidxError(f"tokenizer 'sparse_grams': min_length {mn} cannot be larger than max_length {mx}")
        if mx > MAX_LENGTH:
            raise SkipidxError(f"tokenizer 'sparse_grams': max_length must be at most {MAX_LENGTH}, got {mx}")
        cut = None
        if min_cutoff_length is not None:
            cut = _int_param("min_cutoff_length", min_cutoff_length)
            if cut < mn:
                raise SkipidxError(f"tokenizer 'sparse_grams': min_cutoff_length {cut} cannot be smaller "
                                   f"than min_length {mn}")
            if cut > mx:
                raise SkipidxError(f"tokenizer 'sparse_grams': min_cutoff_length {cut} cannot be larger "
                                   f"than max_length {mx}")
        if isinstance(utf8, bool):
            utf8 = int(utf8)
        if utf8 not in (0, 1):
            raise SkipidxError(f"tokenizer 'sparse_grams': utf8 must be 0 or 1, got {utf8!r}")
        self.min_length, self.max_length, self.min_cutoff_length, self.utf8 = mn, mx, cut, bool(utf8)

    def __repr__(self) -> str:
        return f"SparseGramsTokenizer({self.params})"

    @property
    def params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"min_length": self.min_length, "max_length": self.max_length, "utf8": int(self.utf8)}
        if self.min_cutoff_length is not None:
            p["min_cutoff_length"] = self.min_cutoff_length
        return p

    # -- index side -------------------------------------------------------
    def _spans(self, data, offsets, validity, voff):
        return sparse_gram_spans(data, offsets, validity, voff, self.min_length, self.max_length,
                                 self.min_cutoff_length or 0, self.utf8, K.SEQ_LEN, _CRC32C)

    def tokenize(self, values: pa.Array | pa.ChunkedArray) -> Tokens:
        def kernel(data, offsets, validity, voff):
            rows, st, en = self._spans(data, offsets, validity, voff)
            offs, out = K.gather_spans(data, st, en)
            return rows, offs, out

        return token_rows(values, kernel, self.name)

    def token_spans(self, values: pa.Array):
        """(rows, data, starts, ends): every gram as a span of the values buffer `data`, or
        None for arrays that are not one flat string/binary array (use tokenize then)."""
        from ._arrow import buffer_views

        t = values.type
        if not (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
                or pa.types.is_large_binary(t)):
            return None
        data, offsets, validity, voff = buffer_views(values)
        rows, st, en = self._spans(data, offsets, validity, voff)
        return rows, data, st, en

    def hash_column(self, values: pa.Array | pa.ChunkedArray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        s = np.uint64(check_seed(self.name, seed))

        def kernel(data, offsets, validity, voff):
            rows, st, en = self._spans(data, offsets, validity, voff)
            return rows, _hash_spans(data, st, en, s)

        return hash_rows(values, kernel, self.name)

    # -- query side -------------------------------------------------------
    def grams(self, value: bytes, utf8: bool | None = None) -> list[bytes]:
        """Sparse grams of one string (query side), in ClickHouse's order."""
        u = self.utf8 if utf8 is None else utf8
        data = np.frombuffer(value, dtype=np.uint8) if value else np.zeros(0, np.uint8)
        _rows, st, en = sparse_gram_spans(data, np.array([0, len(value)], np.int64), _NO_VALIDITY, 0,
                                          self.min_length, self.max_length, self.min_cutoff_length or 0,
                                          bool(u), K.SEQ_LEN, _CRC32C)
        return [value[a:b] for a, b in zip(st.tolist(), en.tolist())]

    def value_tokens(self, value: bytes) -> list[bytes]:
        # the whole value: the index holds exactly these grams (plus byte grams when invalid)
        return self.grams(value)

    def needle_tokens(self, needle: bytes) -> list[bytes]:
        return self.substring_tokens(needle, False, False)

    def substring_tokens(self, s: bytes, is_prefix: bool, is_suffix: bool) -> list[bytes]:
        """Sparse grams of `s` (they are local). UTF-8 mode: none for an `s` that is not
        valid UTF-8 (a valid value may hold it, cut inside a code point); :meth:`requirement`
        adds the byte-mode alternative."""
        if self.utf8 and not is_valid_utf8(s):
            return []
        return self.grams(s, self.utf8)

    def like_tokens(self, pattern: bytes) -> list[bytes]:
        out: list[bytes] = []
        for run in like_runs(pattern):
            out.extend(self.substring_tokens(run.text, run.at_start, run.at_end))
        return out

    def requirement(self, func: str, args: tuple, value_type: pa.DataType | None = None,
                    *, expr: str | None = None) -> TokenRequirement | None:
        """UTF-8 mode: a value that is valid UTF-8 holds the UTF-8 grams of its valid
        substrings, any other value holds the byte grams of all its substrings; so
        the answer is (the UTF-8 requirement) OR (the byte-mode requirement)."""
        req = super().requirement(func, args, value_type, expr=expr)
        if not self.utf8 or req is None:
            return req
        byte_tok = SparseGramsTokenizer(self.min_length, self.max_length, self.min_cutoff_length, 0)
        breq = TextTokenizer.requirement(byte_tok, func, args, value_type, expr=expr)
        if breq is None:
            return None
        return TokenRequirement(tuple(dict.fromkeys(req.any_of + breq.any_of)), req.negated)
