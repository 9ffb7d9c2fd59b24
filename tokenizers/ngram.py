"""The ``ngram(n)`` tokenizer: ClickHouse's n-grams (``ngrambf_v1``, ``ngrams(s, n)``).

``n`` counts UTF-8 code points, each sized by its lead byte: < 0x80 -> 1,
0x80-0xBF -> 1 (a stray continuation byte), 0xC0-0xDF -> 2, 0xE0-0xEF -> 3,
0xF0-0xF7 -> 4, >= 0xF8 -> 1; a sequence cut off by the end of the string is
clamped to it. Windows advance one code point; a string of fewer than ``n``
code points gives no n-gram.

On valid UTF-8 the grams are exactly ClickHouse's. On invalid UTF-8, where a
lead byte swallows following ASCII bytes, grams also start at every byte that
can begin a code point (a superset of ClickHouse's; see ``_kernels``): that
is what lets a query for a substring starting there find the row, where
ClickHouse's ngrambf would skip the granule (a false negative).
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.core.text_patterns import like_runs
from skipidx.core.tokenizer_api import TextTokenizer, Tokens
from skipidx.core.lazy import kernels

from ._arrow import hash_rows, token_rows
from ._common import check_no_params, check_seed

F = kernels("skipidx_tokenizers._filters")
K = kernels("skipidx_tokenizers._kernels")

#: Largest n accepted. ClickHouse has no upper bound; beyond this an n-gram
#: index is a (slow) whole-value index, so a larger n is taken for a typo.
MAX_N = 255


def ngrams_of(value: bytes, n: int, at_start: bool = True, at_end: bool = True) -> list[bytes]:
    """n-grams of one string (query side; the index side runs the compiled kernels).

    With ``at_start and at_end`` (the default) these are exactly the grams the
    index holds for a value equal to `value` (see :mod:`._kernels`: ClickHouse's
    grams plus, on invalid UTF-8, grams from every byte that can start a code
    point). For a substring of an unknown value, ``at_start=False``: its first
    byte is a gram start only if it can begin a code point (not 0x80-0xBF);
    ``at_end=False``: a gram whose last code point would run past the end of
    the substring is left out (in the value it may be longer).
    """
    if not value:
        return []
    if len(value) <= SMALL_VALUE:
        return [value[a:b] for a, b in _gram_bounds_small(value, n, at_start, at_end)]
    starts, ends = K.gram_bounds(np.frombuffer(value, dtype=np.uint8), n, at_start, at_end)
    return [value[a:b] for a, b in zip(starts.tolist(), ends.tolist())]


#: Up to this many bytes a query constant's grams come from `_gram_bounds_small` (no kernel to
#: load, so a new process answering one query needs no numba); longer ones run `K.gram_bounds`.
SMALL_VALUE = 256

# Code-point length by lead byte (K.SEQ_LEN as bytes: ClickHouse's UTF8::seqLength).
_SEQ_LEN = bytes([1] * 0xC0 + [2] * 0x20 + [3] * 0x10 + [4] * 0x08 + [1] * 0x08)


def _gram_bounds_small(data: bytes, n: int, at_start: bool, at_end: bool) -> list[tuple[int, int]]:
    """`K.gram_bounds` in Python for one short constant: the same walk (`K.gram_at`), step for step."""
    e = len(data)
    out = []
    pend = 1 if at_start else 0
    for p in range(e):
        c = data[p]
        if (pend & 1) or c < 0x80 or c >= 0xC0:
            pend |= 1 << _SEQ_LEN[c]
            q = p + n
            if not (q <= e and data[p:q].isascii()):   # n ASCII bytes ahead are n code points
                q, cnt = p, 0
                while cnt < n and q < e:
                    q += _SEQ_LEN[data[q]]
                    cnt += 1
                if cnt != n:
                    q = -1
            end = (e if at_end else -1) if q > e else q
            if end >= 0:
                out.append((p, end))
        pend >>= 1
    return out


class NgramTokenizer(TextTokenizer):
    """n-grams of UTF-8 code points; parameter ``n`` (1..255, default 3).

    ``min_n`` (1..n, default n) also indexes the grams of every length from
    ``min_n`` to ``n``, so a LIKE substring shorter than ``n`` (but at least
    ``min_n`` code points) still prunes: ``sbbf('ngram', n = 4, min_n = 3)``
    answers ``LIKE '%xyz%'`` with its 3-grams and longer patterns with 4-grams.
    """

    name = "ngram"
    version = "1"

    def __init__(self, n: Any = 3, min_n: Any = None, **params: Any) -> None:
        check_no_params(self.name, params, ("n", "min_n"))
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise SkipidxError(f"tokenizer 'ngram': n must be an integer, got {n!r}")
        if not 1 <= int(n) <= MAX_N:
            raise SkipidxError(f"tokenizer 'ngram': n must be between 1 and {MAX_N}, got {int(n)}")
        self.n = int(n)
        if min_n is None:
            min_n = self.n
        if isinstance(min_n, bool) or not isinstance(min_n, numbers.Integral) or not 1 <= int(min_n) <= self.n:
            raise SkipidxError(f"tokenizer 'ngram': min_n must be an integer between 1 and n = {self.n}, "
                               f"got {min_n!r}")
        self.min_n = int(min_n)

    def __repr__(self) -> str:
        return f"NgramTokenizer(n={self.n})" if self.min_n == self.n else \
            f"NgramTokenizer(n={self.n}, min_n={self.min_n})"

    @property
    def params(self) -> dict[str, Any]:
        # min_n only when set: the params (and fingerprints) of existing indexes stay as they were
        return {"n": self.n} if self.min_n == self.n else {"n": self.n, "min_n": self.min_n}

    def _lengths(self) -> range:
        return range(self.min_n, self.n + 1)

    def _grams(self, s: bytes, at_start: bool, at_end: bool) -> list[bytes]:
        """The longest grams (n down to min_n code points) that `s` has: short patterns
        use the shorter grams the index also holds."""
        for k in range(self.n, self.min_n - 1, -1):
            g = ngrams_of(s, k, at_start, at_end)
            if g:
                return g
        return []

    # -- index side -------------------------------------------------------
    def tokenize(self, values: pa.Array | pa.ChunkedArray) -> Tokens:
        """All n-grams of all non-null values, with their row numbers."""
        if self.min_n != self.n:
            from ._arrow import concat_tokens

            parts = [NgramTokenizer(k).tokenize(values) for k in self._lengths()]
            tk = concat_tokens(parts)
            order = np.argsort(tk.rows, kind="stable")
            lens = np.diff(tk.offsets)[order]
            offs = np.zeros(order.shape[0] + 1, dtype=np.int64)
            np.cumsum(lens, out=offs[1:])
            data = K.gather_spans(tk.data, tk.offsets[:-1][order], tk.offsets[1:][order])[1]
            return Tokens(tk.rows[order], offs, data)
        n = self.n

        def kernel(data, offsets, validity, voff):
            return K.ngram_tokens(data, offsets, validity, voff, n)

        return token_rows(values, kernel, self.name)

    def hash_column(self, values: pa.Array | pa.ChunkedArray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(rows int64, XXH64(gram, seed) uint64) of every n-gram, fused in one compiled pass."""
        s = np.uint64(check_seed(self.name, seed))
        if self.min_n != self.n:
            parts = [NgramTokenizer(k).hash_column(values, seed) for k in self._lengths()]
            rows = np.concatenate([p[0] for p in parts])
            order = np.argsort(rows, kind="stable")   # rows non-decreasing, as one kernel gives
            return rows[order], np.concatenate([p[1] for p in parts])[order]
        n = self.n

        def kernel(data, offsets, validity, voff):
            return K.ngram_hashes(data, offsets, validity, voff, n, s)

        return hash_rows(values, kernel, self.name)

    # -- fast path: the fused kernels of _filters ------------------------------
    def insert_zones(self, values: pa.Array, zone_end: np.ndarray, seed: int,
                     words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray) -> bool:
        if self.min_n != self.n:
            return F.insert_zones(F.ngrams_fixed, (self.min_n, self.n), values, zone_end, seed, words,
                                  block_offset, num_blocks)
        return F.insert_zones(F.ngram_fixed, (self.n,), values, zone_end, seed, words, block_offset, num_blocks)

    def distinct_zones(self, values: pa.Array, zone_end: np.ndarray, seed: int, scratch) -> np.ndarray | None:
        if self.min_n != self.n:
            return F.distinct_zones(F.ngrams_distinct_into, (self.min_n, self.n), values, zone_end, seed, scratch,
                                    self.n - self.min_n + 1)
        return F.distinct_zones(F.ngram_distinct_into, (self.n,), values, zone_end, seed, scratch)

    def tokens_repeat(self) -> bool:
        """Short n-grams of text repeat a lot within a granule (~1M grams, ~10-20k distinct
        per 8192 log lines for n = 3)."""
        return self.n <= 4

    # -- query side -------------------------------------------------------
    def value_tokens(self, value: bytes) -> list[bytes]:
        if self.min_n != self.n:
            return [g for k in self._lengths() for g in ngrams_of(value, k)]
        return ngrams_of(value, self.n)

    def needle_tokens(self, needle: bytes) -> list[bytes]:
        """n-grams every value holding `needle` as a whole token has.

        The needle starts right after a separator (an ASCII byte, always a
        code point of its own) or at the value's start, so its first byte
        starts a gram; but its last code point may run on into the separator
        on invalid UTF-8 (``'\\xc0'`` followed by a space is one code point
        of two bytes), so a gram cut off at its end is left out.
        """
        return self._grams(needle, True, False)

    def substring_tokens(self, s: bytes, is_prefix: bool, is_suffix: bool) -> list[bytes]:
        """The n-grams of `s` that every value containing `s` holds.

        For valid UTF-8 that starts with a whole code point these are all of
        `s`'s n-grams, as ClickHouse takes them. Leading continuation bytes
        (0x80-0xBF) start no gram unless `s` begins the value (`is_prefix`),
        and a gram whose last code point is cut off by the end of `s` is
        dropped unless `s` ends the value (`is_suffix`): in the value, that
        code point may be longer.
        """
        return self._grams(s, is_prefix, is_suffix)

    def like_tokens(self, pattern: bytes) -> list[bytes]:
        """n-grams lying wholly inside one literal run between unescaped wildcards."""
        out: list[bytes] = []
        for run in like_runs(pattern):
            out.extend(self._grams(run.text, run.at_start, run.at_end))
        return out
