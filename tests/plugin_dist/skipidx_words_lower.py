"""An example third-party skipidx tokenizer: lowercased words of at least ``min_len`` bytes.

``words_lower`` splits like ClickHouse's splitByNonAlpha (separators: ASCII
bytes that are not letters or digits), lowercases ASCII, and keeps words of
``min_len`` bytes or more. So ``sbbf('words_lower', min_len = 3)`` is a
case-folded token index that ignores short words.

It shows what a plugin needs: a name, a version, validated parameters, an
index side written with whole-array pyarrow.compute calls (the default
``hash_column`` hashes what ``tokenize`` returns), and the query side's three
primitives — ``TextTokenizer`` derives every predicate's requirement from them.
"""
from __future__ import annotations

import numbers
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.expr.index_expressions import ascii_lower
from skipidx.core.text_patterns import like_runs
from skipidx.core.tokenizer_api import TextTokenizer, Tokens

# RE2 (UTF-8): a separator is one ASCII code point that is not a letter or digit.
_SEPARATORS = r"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+"
_WORD = re.compile(rb"[0-9A-Za-z\x80-\xff]+")


class WordsLowerTokenizer(TextTokenizer):
    name = "words_lower"
    version = "1"

    def __init__(self, min_len: Any = 1, **params: Any) -> None:
        if params:
            raise SkipidxError(f"tokenizer 'words_lower' takes only min_len; got {sorted(params)}")
        if isinstance(min_len, bool) or not isinstance(min_len, numbers.Integral) or not 1 <= min_len <= 64:
            raise SkipidxError(f"tokenizer 'words_lower': min_len must be an integer in 1..64, got {min_len!r}")
        self.min_len = int(min_len)

    @property
    def params(self) -> dict[str, Any]:
        return {"min_len": self.min_len}

    # -- index side: whole-array pyarrow.compute ----------------------------
    def tokenize(self, values: pa.Array | pa.ChunkedArray) -> Tokens:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            raise SkipidxError(f"tokenizer 'words_lower' needs a String column, got {values.type}")
        words = pc.split_pattern_regex(ascii_lower(values), _SEPARATORS)
        flat = pc.list_flatten(words)
        rows = pc.list_parent_indices(words)
        keep = pc.greater_equal(pc.binary_length(flat), self.min_len)
        flat = pc.filter(flat, keep).cast(pa.large_binary())
        rows = pc.filter(rows, keep).to_numpy().astype(np.int64)
        bufs = flat.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int64)[flat.offset:flat.offset + len(flat) + 1]
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
        start = int(offsets[0]) if len(offsets) else 0
        return Tokens(rows, (offsets - start).astype(np.int64), data[start:int(offsets[-1]) if len(offsets) else 0])

    # -- query side ---------------------------------------------------------
    def value_tokens(self, value: bytes) -> list[bytes]:
        return [w for w in _WORD.findall(value.lower()) if len(w) >= self.min_len]

    def substring_tokens(self, s: bytes, is_prefix: bool, is_suffix: bool) -> list[bytes]:
        return [m.group().lower() for m in _WORD.finditer(s)
                if (m.start() > 0 or is_prefix) and (m.end() < len(s) or is_suffix)
                and m.end() - m.start() >= self.min_len]

    def like_tokens(self, pattern: bytes) -> list[bytes]:
        out: list[bytes] = []
        for run in like_runs(pattern):
            out.extend(self.substring_tokens(run.text, run.at_start, run.at_end))
        return out
