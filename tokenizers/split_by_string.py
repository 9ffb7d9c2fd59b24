"""The ``split_by_string`` tokenizer: ClickHouse's ``splitByString`` text-index tokenizer.

Parameter ``separators``: a non-empty list of non-empty strings (default
``[' ']``). A value is cut at every separator, scanning left to right and
taking the first listed separator that matches at a position; empty pieces
are dropped (``tokens('a  b', 'splitByString')`` is ``['a', 'b']``).

Index side: one ``pyarrow.compute.split_pattern_regex`` over the column (an
alternation of the escaped separators in list order: leftmost-first, as
ClickHouse scans). Query side: the pieces of a substring that lie between two
separator matches inside it (a piece touching an edge of the substring may be
part of a longer token of the value, unless that edge is the value's); with
a separator longer than one byte, matches inside a substring may differ from
the value's (overlaps), so a substring then yields no token (no pruning,
never a wrong answer).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.core.text_patterns import like_runs
from skipidx.core.tokenizer_api import TextTokenizer, Tokens

from ._arrow import empty_tokens


class SplitByStringTokenizer(TextTokenizer):
    """Pieces between separators; see the module docstring."""

    name = "split_by_string"
    version = "1"

    def __init__(self, separators: Any = None, **params: Any) -> None:
        if params:
            raise SkipidxError(f"tokenizer 'split_by_string' takes only separators; got {', '.join(sorted(params))}")
        if separators is None:
            separators = [" "]
        if isinstance(separators, (str, bytes)) or not isinstance(separators, (list, tuple)):
            raise SkipidxError("tokenizer 'split_by_string': separators must be a list of strings")
        if not separators:
            raise SkipidxError("Incorrect parameter of tokenizer 'splitByString': the separators argument "
                               "cannot be empty")
        seps = []
        for s in separators:
            if isinstance(s, str):
                s = s.encode("utf-8")
            if not isinstance(s, bytes) or not s:
                raise SkipidxError("tokenizer 'split_by_string': every separator must be a non-empty string")
            seps.append(s)
        self.separators = seps
        self._re = re.compile(b"|".join(re.escape(s) for s in seps))
        self._single = all(len(s) == 1 for s in seps)

    def __repr__(self) -> str:
        return f"SplitByStringTokenizer({self.separators!r})"

    @property
    def params(self) -> dict[str, Any]:
        return {"separators": [s.decode("utf-8", "surrogateescape") for s in self.separators]}

    # -- index side -------------------------------------------------------
    def tokenize(self, values: pa.Array | pa.ChunkedArray) -> Tokens:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        t = values.type
        if pa.types.is_dictionary(t):
            values, t = values.dictionary_decode(), t.value_type
        if pa.types.is_null(t) or len(values) == 0:
            return empty_tokens()
        if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t)):
            raise SkipidxError(f"tokenizer 'split_by_string' needs a String column, got {t}")
        pattern = "|".join(re.escape(s.decode("utf-8", "surrogateescape")) for s in self.separators)
        pieces = pc.split_pattern_regex(values.cast(pa.large_binary()), pattern)
        flat = pc.list_flatten(pieces)
        rows = pc.list_parent_indices(pieces).to_numpy(zero_copy_only=False).astype(np.int64)
        keep = pc.greater(pc.binary_length(flat), 0)
        flat = flat.filter(keep)
        rows = rows[keep.to_numpy(zero_copy_only=False)]
        flat = flat.cast(pa.large_binary())
        n = len(flat)
        offs = np.frombuffer(flat.buffers()[1], dtype=np.int64, count=n + 1, offset=flat.offset * 8)
        data = np.frombuffer(flat.buffers()[2], dtype=np.uint8) if n else np.zeros(0, np.uint8)
        return Tokens(rows, (offs - offs[0]).copy(), data[offs[0]:offs[-1]].copy())

    # -- query side -------------------------------------------------------
    def value_tokens(self, value: bytes) -> list[bytes]:
        return [p for p in self._re.split(value) if p]

    def needle_tokens(self, needle: bytes) -> list[bytes]:
        # a hasToken needle is a splitByNonAlpha token: only its inner pieces are sure
        return self.substring_tokens(needle, False, False)

    def substring_tokens(self, s: bytes, is_prefix: bool, is_suffix: bool) -> list[bytes]:
        if is_prefix and is_suffix:
            return self.value_tokens(s)
        if not self._single:
            return []
        pieces = self._re.split(s)
        if not is_prefix:
            pieces = pieces[1:]
        if not is_suffix:
            pieces = pieces[:-1]
        return [p for p in pieces if p]

    def like_tokens(self, pattern: bytes) -> list[bytes]:
        out: list[bytes] = []
        for run in like_runs(pattern):
            out.extend(self.substring_tokens(run.text, run.at_start, run.at_end))
        return out
