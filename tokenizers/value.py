"""The ``value`` tokenizer: the whole value is the one token, hashed as Parquet hashes it.

The token of a value is its Parquet PLAIN encoding as a Parquet writer
physically stores it (see :mod:`skipidx.core.hashing`: int8/16 widened to INT32,
date32 as INT32, strings as their raw bytes, ...), so with seed 0 a filter of
these hashes equals a Parquet bloom filter of the same values and size
(``bloom_filter`` index). Any Arrow type :func:`skipidx.core.hashing.parquet_xxh64`
supports works; lists (``Array(T)``) contribute their elements (``has``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from skipidx.core.arrays import array_of
from skipidx.core.errors import SkipidxError
from skipidx.core.text_patterns import like_has_wildcards, like_unescape
from skipidx.core.hashing import plain_fixed_width
from skipidx.core.tokenizer_api import NEGATED_FUNCTIONS, TokenRequirement, Tokenizer, Tokens, canonical_function
from skipidx.core.lazy import kernels

from ._arrow import buffer_views, concat_tokens, empty_tokens, _is_binary_like, _is_list, _list_parents
from ._common import check_no_params, check_seed

K = kernels("skipidx_tokenizers._kernels")


def _binary_like(t: pa.DataType) -> bool:
    return _is_binary_like(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_string_view(t) \
        or pa.types.is_binary_view(t)


class ValueTokenizer(Tokenizer):
    """One token per non-NULL value: its Parquet PLAIN bytes; no parameters."""

    name = "value"
    version = "1"

    def __init__(self, **params: Any) -> None:
        check_no_params(self.name, params)

    def __repr__(self) -> str:
        return "ValueTokenizer()"

    # -- index side -------------------------------------------------------
    def hash_column(self, values: pa.Array | pa.ChunkedArray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(rows of the non-NULL values, XXH64(PLAIN bytes, seed)); seed 0 = ``parquet_xxh64``."""
        from skipidx.core.hashing import xxh64_array_with_validity

        s = check_seed(self.name, seed)
        if isinstance(values, pa.ChunkedArray) and any(_is_list(c.type) for c in values.chunks[:1]):
            values = values.combine_chunks()
        if isinstance(values, pa.Array) and _is_list(values.type):
            parents = _list_parents(values)
            r, h = self.hash_column(values.flatten(), s)
            return parents[r], h
        h, valid = xxh64_array_with_validity(values, s)
        if valid.all():
            return np.arange(h.shape[0], dtype=np.int64), h
        rows = np.flatnonzero(valid).astype(np.int64)
        return rows, h[rows]

    def tokenize(self, values: pa.Array | pa.ChunkedArray) -> Tokens:
        """The PLAIN bytes of every non-NULL value, with its row."""
        if isinstance(values, pa.ChunkedArray):
            parts, base = [], 0
            for c in values.chunks:
                tk = self.tokenize(c)
                parts.append(Tokens(tk.rows + base, tk.offsets, tk.data))
                base += len(c)
            return concat_tokens(parts)
        if not isinstance(values, pa.Array):
            raise SkipidxError(f"expected a pyarrow Array or ChunkedArray, got {type(values).__name__}")
        t = values.type
        if len(values) == 0 or pa.types.is_null(t):
            return empty_tokens()
        if pa.types.is_dictionary(t):
            return self.tokenize(values.dictionary_decode())
        if _is_list(t):
            tk = self.tokenize(values.flatten())
            return Tokens(_list_parents(values)[tk.rows], tk.offsets, tk.data)
        if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
            values = values.cast(pa.large_binary())
            t = values.type
        if _is_binary_like(t) or pa.types.is_fixed_size_binary(t):
            # BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY: the value's own bytes, gathered in one pass.
            data, offsets, _v, _o = buffer_views(values)
            rows = np.flatnonzero(values.is_valid().to_numpy(zero_copy_only=False)).astype(np.int64)
            offs, out = K.gather_spans(data, offsets[:-1][rows].astype(np.int64), offsets[1:][rows].astype(np.int64))
            return Tokens(rows, offs, out)
        valid = values.is_valid().to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(valid).astype(np.int64)
        fixed = plain_fixed_width(values)
        if fixed is not None:
            # Fixed-width physical types: one (n, width) byte matrix, rows picked at once.
            mat, w = fixed
            data = np.ascontiguousarray(mat[rows]).reshape(-1)
            return Tokens(rows, np.arange(len(rows) + 1, dtype=np.int64) * w, data)
        from skipidx.core.hashing import plain_encode

        toks = [plain_encode(values[int(i)], t) for i in rows]
        offs = np.zeros(len(toks) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in toks], out=offs[1:])
        return Tokens(rows, offs, np.frombuffer(b"".join(toks), dtype=np.uint8).copy())

    # -- query side -------------------------------------------------------
    def value_tokens(self, value: bytes) -> list[bytes]:
        """A string/binary value's PLAIN encoding is its bytes."""
        return [value]

    def substring_tokens(self, s: bytes, is_prefix: bool, is_suffix: bool) -> list[bytes]:
        """Only a substring that is the whole value (prefix and suffix) is a token."""
        return [s] if (is_prefix and is_suffix) else []

    def like_tokens(self, pattern: bytes) -> list[bytes]:
        """A pattern without wildcards is an equality; any wildcard: nothing is known."""
        return [] if like_has_wildcards(pattern) else [like_unescape(pattern)]

    def _encodings(self, value: Any, value_type: pa.DataType | None) -> list[bytes] | None:
        """PLAIN encodings a row equal to `value` may have (two for a float zero), or None."""
        if value is None:
            return None
        if value_type is None or _binary_like(value_type) or (
                pa.types.is_dictionary(value_type) and _binary_like(value_type.value_type)):
            if isinstance(value, str):
                value = value.encode("utf-8")
            return [bytes(value)] if isinstance(value, (bytes, bytearray, memoryview)) else None
        from skipidx.core.hashing import plain_encode

        t = value_type.value_type if pa.types.is_dictionary(value_type) else value_type
        if _is_list(t):
            t = t.value_type
        if isinstance(value, pa.Scalar):
            value = value.as_py()
        if pa.types.is_floating(t):
            try:
                f = float(value)
            except (TypeError, ValueError):
                return None
            if math.isnan(f):
                return None  # NaN equals nothing in SQL; stay out of it
            if f == 0.0:
                # 0.0 = -0.0 in SQL, but their bits (and hashes) differ: probe both.
                try:
                    return [plain_encode(0.0, t), plain_encode(-0.0, t)]
                except SkipidxError:
                    return None
        try:
            return [plain_encode(value, t)]
        except SkipidxError:
            # Not representable in the column's type: cannot help (never a wrong "no").
            return None

    def _many_encodings(self, values: list, value_type: pa.DataType | None) -> list[bytes] | None:
        """The PLAIN encodings of all `values` at once (a long IN list), or None: then
        the caller encodes value by value (:meth:`_encodings`).

        Only for fixed-width non-float types, where one value has exactly one
        encoding: one Arrow conversion of the whole list (the same conversion
        ``plain_encode`` applies to each value) and one byte matrix, instead of
        an Arrow array per value. Any NULL or value the type cannot hold
        leaves it to the value-by-value path (which decides the answer)."""
        if value_type is None or len(values) < 2:
            return None
        t = value_type.value_type if pa.types.is_dictionary(value_type) else value_type
        if _is_list(t):
            t = t.value_type
        if _binary_like(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_null(t) \
                or pa.types.is_nested(t) or any(v is None or isinstance(v, pa.Scalar) for v in values):
            return None
        try:
            arr = array_of(values, t)    # pa.array's array-like check imports pandas
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        if arr.null_count:
            return None
        try:
            fixed = plain_fixed_width(arr)
        except (SkipidxError, pa.ArrowException, TypeError, ValueError):
            return None
        if fixed is None:
            return None
        mat, w = fixed
        raw = np.ascontiguousarray(mat).tobytes()
        return [raw[i * w:(i + 1) * w] for i in range(len(values))]

    def requirement(self, func: str, args: tuple, value_type: pa.DataType | None = None,
                    *, expr: str | None = None) -> TokenRequirement | None:
        """``=``/``!=``/``has``: the value; ``IN``/``NOT IN``/``hasAny``: ANY over the members
        (a NULL member: cannot help); ``hasAll``: all members; LIKE without wildcards on
        strings: the unescaped pattern."""
        func = canonical_function(func)
        negated = func in NEGATED_FUNCTIONS
        if not args:
            return None
        arg = args[0]
        if func in ("equals", "notEquals", "has"):
            enc = self._encodings(arg, value_type)
            return None if enc is None else TokenRequirement(tuple((e,) for e in enc), negated)
        if func in ("in", "notIn", "hasAny"):
            if not isinstance(arg, (tuple, list, set, frozenset)) or not arg:
                return None
            many = self._many_encodings(list(arg), value_type)
            if many is not None:
                return TokenRequirement(tuple(dict.fromkeys((e,) for e in many)), negated)
            alts: list[tuple[bytes, ...]] = []
            for v in arg:
                enc = self._encodings(v, value_type)
                if enc is None:
                    return None
                alts.extend((e,) for e in enc)
            return TokenRequirement(tuple(dict.fromkeys(alts)), negated)
        if func == "hasAll":
            # every member is an element; a float zero (two encodings) is left out
            # rather than multiplied out
            if not isinstance(arg, (tuple, list, set, frozenset)) or not arg:
                return None
            need: list[bytes] = []
            for v in arg:
                enc = self._encodings(v, value_type)
                if enc is None:
                    return None
                if len(enc) == 1:
                    need.append(enc[0])
            return TokenRequirement((tuple(dict.fromkeys(need)),)) if need else None
        if func in ("like", "notLike"):
            if value_type is not None and not _binary_like(value_type) and not (
                    pa.types.is_dictionary(value_type) and _binary_like(value_type.value_type)):
                return None
            if isinstance(arg, str):
                arg = arg.encode("utf-8")
            if not isinstance(arg, bytes) or like_has_wildcards(arg):
                return None
            return TokenRequirement(((like_unescape(arg),),), negated)
        return None
