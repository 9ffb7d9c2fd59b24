"""The ``token`` tokenizer: ClickHouse's splitByNonAlpha (``tokenbf_v1``, ``tokens(s)``).

A separator is any ASCII byte (0x00-0x7F) that is not ``[0-9A-Za-z]``; bytes
>= 0x80 always belong to tokens (so ``_ - . / :`` split, NBSP or ``，`` do
not); a token is a maximal non-empty run of non-separators.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

from skipidx.core.text_patterns import like_runs
from skipidx.core.tokenizer_api import TextTokenizer, Tokens, split_by_non_alpha
from skipidx.core.lazy import kernels

from ._arrow import hash_rows, token_hashes_shared, token_rows, token_tokens_shared
from ._common import check_no_params, check_seed

F = kernels("skipidx_tokenizers._filters")
K = kernels("skipidx_tokenizers._kernels")

_TOKEN_RE = re.compile(rb"[0-9A-Za-z\x80-\xff]+")


class TokenTokenizer(TextTokenizer):
    """splitByNonAlpha tokens; no parameters."""

    name = "token"
    version = "1"

    def __init__(self, **params: Any) -> None:
        check_no_params(self.name, params)

    def __repr__(self) -> str:
        return "TokenTokenizer()"

    # -- index side -------------------------------------------------------
    def tokenize(self, values: pa.Array | pa.ChunkedArray, *, threads: int = 1) -> Tokens:
        """All tokens of all non-null values, with their row numbers (row order, then position).

        ``threads > 1`` splits big arrays into row ranges tokenized at once; same result.
        """
        return token_rows(values, K.token_tokens, self.name, threads, token_tokens_shared)

    def hash_column(self, values: pa.Array | pa.ChunkedArray, seed: int = 0, *,
                    threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(rows int64, XXH64(token, seed) uint64) of every token, fused in one compiled pass.

        ``threads > 1`` splits big arrays into row ranges hashed at once; same result.
        """
        s = np.uint64(check_seed(self.name, seed))

        def kernel(data, offsets, validity, voff):
            return K.token_hashes(data, offsets, validity, voff, s)

        def shared(data, offsets, validity, voff, ranges):
            return token_hashes_shared(data, offsets, validity, voff, ranges, s)

        return hash_rows(values, kernel, self.name, threads, shared)

    # -- fast path: the fused kernels of _filters ------------------------------
    def insert_zones(self, values: pa.Array, zone_end: np.ndarray, seed: int,
                     words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray) -> bool:
        return F.insert_zones(F.token_fixed, (), values, zone_end, seed, words, block_offset, num_blocks)

    def distinct_zones(self, values: pa.Array, zone_end: np.ndarray, seed: int, scratch) -> np.ndarray | None:
        return F.distinct_zones(F.token_distinct_into, (), values, zone_end, seed, scratch)

    # -- query side -------------------------------------------------------
    def value_tokens(self, value: bytes) -> list[bytes]:
        return split_by_non_alpha(value)

    def substring_tokens(self, s: bytes, is_prefix: bool, is_suffix: bool) -> list[bytes]:
        """Tokens wholly inside `s`: a token touching an edge of `s` may be part of a
        longer token of the value, unless that edge is the value's start/end."""
        n = len(s)
        return [m.group() for m in _TOKEN_RE.finditer(s)
                if (m.start() > 0 or is_prefix) and (m.end() < n or is_suffix)]

    def like_tokens(self, pattern: bytes) -> list[bytes]:
        """Tokens closed on both sides by a literal separator or by a wildcard-free pattern edge.

        ``'%foo bar%'`` -> none, ``'%foo bar baz%'`` -> ``bar``, ``'foo bar%'`` -> ``foo``;
        an escaped non-alphanumeric (``\\_``, ``\\%``, ``\\.``...) is a literal separator.
        """
        out: list[bytes] = []
        for run in like_runs(pattern):
            out.extend(self.substring_tokens(run.text, run.at_start, run.at_end))
        return out
