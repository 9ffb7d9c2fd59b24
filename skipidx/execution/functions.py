"""Exact row-level functions with ClickHouse 26.9 semantics, over Arrow arrays.

These are what the query engine evaluates *after* pruning, so they decide the
answer: every function here is checked row by row against chDB (the embedded
ClickHouse) in ``tests/test_functions_chdb.py``.

Conventions (all public functions):

- Inputs are ``pyarrow.Array`` or ``pyarrow.ChunkedArray`` of string, binary,
  large_string, large_binary, string_view or dictionary-of-string type (a
  ``LowCardinality(String)`` column) unless stated otherwise. String constants
  are Python ``bytes`` (``str`` is accepted and encoded as UTF-8).
- Outputs keep the input's shape: an ``Array`` in gives an ``Array`` out, a
  ``ChunkedArray`` gives a ``ChunkedArray`` with the same chunking (as
  ``pyarrow.compute`` does), so results combine with ``pyarrow.compute``.
- NULL in gives NULL out (ClickHouse's default implementation for Nullable
  arguments); the result is a ``BooleanArray`` standing for ClickHouse's
  ``UInt8``/``Nullable(UInt8)``. A WHERE keeps a row iff its value is true
  (`where_mask`).
- Bad constant arguments (a ``hasToken`` needle with a separator, a LIKE
  pattern ending in a lone backslash, a bad regex, a date literal that does not
  parse) raise `SkipidxError`, as ClickHouse raises an exception.

Strings are bytes: a *token* byte is an ASCII letter or digit or any byte
>= 0x80; everything else is a separator. ``lower``/``upper`` and the
case-insensitive ``hasToken`` fold ASCII only (as ClickHouse's ``lower``),
while ``ILIKE`` folds Unicode (it runs on RE2 with ``(?i)``, as ClickHouse's
does). LIKE's ``_`` and ``%`` and ``match``'s ``.`` step over whole UTF-8 code
points and do *not* step over invalid UTF-8 bytes (RE2 in UTF-8 mode), so
``'a\\xffb' LIKE 'a%b'`` is false in ClickHouse and here, while
``'a\\xffb' LIKE '%\\xff%'`` (a plain substring pattern, searched bytewise) is
true.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from skipidx.core.lru import LRU
from skipidx.core.errors import SkipidxError
from skipidx.execution import _search

ArrayLike = Union[pa.Array, pa.ChunkedArray]

__all__ = [
    "ArrayLike",
    "has_token",
    "has_token_or_null",
    "has_token_case_insensitive",
    "check_token_needle",
    "like",
    "like_to_regex",
    "starts_with",
    "ends_with",
    "multi_search_any",
    "match",
    "lower",
    "upper",
    "length",
    "compare",
    "is_in",
    "is_null",
    "is_not_null",
    "and_",
    "or_",
    "not_",
    "where_mask",
    "arithmetic",
    "arithmetic_result_type",
    "literal",
]

# --------------------------------------------------------------------------
# Array plumbing
# --------------------------------------------------------------------------

_STRINGISH = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
              pa.types.is_large_binary, pa.types.is_string_view, pa.types.is_binary_view)


def _is_stringish(t: pa.DataType) -> bool:
    return any(f(t) for f in _STRINGISH)


def _as_bytes(value: bytes | str, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise SkipidxError(f"{what} must be a string constant, got {type(value).__name__}")


def _map_chunks(arr: ArrayLike, fn: Callable[[pa.Array], pa.Array]) -> ArrayLike:
    """Apply an Array -> Array function to each chunk, keeping the input's shape."""
    if isinstance(arr, pa.ChunkedArray):
        chunks = [fn(c) for c in arr.chunks]
        if not chunks:
            return pa.chunked_array([], type=fn(pa.array([], type=arr.type)).type)
        return pa.chunked_array(chunks)
    if not isinstance(arr, pa.Array):
        raise SkipidxError(f"expected a pyarrow Array or ChunkedArray, got {type(arr).__name__}")
    return fn(arr)


def _string_fn(fn: Callable[[pa.Array], pa.Array]) -> Callable[[pa.Array], pa.Array]:
    """Wrap a per-chunk function of a binary-like Array so it also takes dictionaries.

    A dictionary (LowCardinality) array is evaluated once per distinct value and
    the answers are gathered with the indices: the work is O(dictionary).
    """
    def wrapped(chunk: pa.Array) -> pa.Array:
        t = chunk.type
        if pa.types.is_dictionary(t):
            if not _is_stringish(t.value_type):
                raise SkipidxError(f"expected a String column, got {t}")
            per_value = wrapped(chunk.dictionary)
            return pc.take(per_value, chunk.indices)
        if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
            return fn(chunk.cast(pa.large_binary()))
        if not _is_stringish(t):
            raise SkipidxError(f"expected a String column, got {t}")
        return fn(chunk)
    return wrapped


def _binary_view(chunk: pa.Array) -> pa.Array:
    """The same buffers as binary (no UTF-8 assumption, byte-wise kernels)."""
    t = chunk.type
    if pa.types.is_string(t):
        return chunk.view(pa.binary())
    if pa.types.is_large_string(t):
        return chunk.view(pa.large_binary())
    return chunk


def _utf8_view(chunk: pa.Array) -> pa.Array:
    """The same buffers as string, *without* validating UTF-8.

    Arrow runs RE2 in UTF-8 mode on string arrays and in Latin-1 mode on binary
    ones; ClickHouse runs RE2 in UTF-8 mode on its (unvalidated) bytes, so the
    view is what reproduces its treatment of invalid UTF-8.
    """
    t = chunk.type
    if pa.types.is_binary(t):
        return chunk.view(pa.string())
    if pa.types.is_large_binary(t):
        return chunk.view(pa.large_string())
    return chunk


def _offsets_data(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets[len+1] as int64, data as uint8) of a binary-like Array, slice-aware."""
    bufs = chunk.buffers()
    large = pa.types.is_large_binary(chunk.type) or pa.types.is_large_string(chunk.type)
    odt = np.int64 if large else np.int32
    n = len(chunk)
    if bufs[1] is None:
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        offsets = np.frombuffer(bufs[1], dtype=odt)[chunk.offset: chunk.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, dtype=np.uint8)
    return offsets, data


def _bool_result(values: np.ndarray, like_chunk: pa.Array) -> pa.Array:
    """numpy bool values -> BooleanArray carrying the nulls of `like_chunk`."""
    out = pa.array(values, type=pa.bool_())
    if like_chunk.null_count == 0:
        return out
    validity = like_chunk.is_valid().buffers()[1]
    return pa.Array.from_buffers(pa.bool_(), len(out), [validity, out.buffers()[1]],
                                 null_count=like_chunk.null_count)


def _with_nulls_of(result: pa.Array, like_chunk: pa.Array) -> pa.Array:
    """`result` (no nulls) with the nulls of `like_chunk` laid over it."""
    if like_chunk.null_count == 0:
        return result
    return _bool_result(result.to_numpy(zero_copy_only=False), like_chunk)


def _const_bool(chunk: pa.Array, value: bool) -> pa.Array:
    return _bool_result(np.full(len(chunk), value, dtype=np.bool_), chunk)


# --------------------------------------------------------------------------
# hasToken
# --------------------------------------------------------------------------

# Token bytes (ASCII letters, digits, every byte >= 0x80); the search kernels
# (substring, hasToken, multiSearchAny) live in skipidx.execution._search.
_TOKEN_BYTE = _search.TOKEN_BYTE


def check_token_needle(needle: bytes | str) -> bytes:
    """Validate a ``hasToken`` needle; return it as bytes.

    Raises `SkipidxError` ("Needle must not contain whitespace or separator
    characters") if any byte is a separator (ASCII and not [0-9A-Za-z]). The
    empty needle is *valid* in ClickHouse (and matches nothing).
    """
    b = _as_bytes(needle, "hasToken needle")
    if b and not _TOKEN_BYTE[np.frombuffer(b, dtype=np.uint8)].all():
        raise SkipidxError("Needle must not contain whitespace or separator characters")
    return b


def _contains(chunk: pa.Array, needle: bytes) -> pa.Array:
    """Byte-wise substring test of a binary-like chunk (nulls kept).

    One whole-buffer pass of `_search.contains_rows` (a vector filter on two
    or three anchor bytes, then exact compares inside each row).
    """
    if not needle:
        return _const_bool(chunk, True)
    offsets, data = _offsets_data(_binary_view(chunk))
    return _bool_result(_search.contains_rows(offsets, data, needle), chunk)


def _has_token_impl(arr: ArrayLike, needle: bytes, case_insensitive: bool) -> ArrayLike:
    def one(chunk: pa.Array) -> pa.Array:
        if not needle:
            # ClickHouse: hasToken(s, '') is 0 for every non-NULL s (also for s = '').
            return _const_bool(chunk, False)
        offsets, data = _offsets_data(_binary_view(chunk))
        return _bool_result(_search.token_rows(offsets, data, needle, case_insensitive), chunk)

    return _map_chunks(arr, _string_fn(one))


def has_token(arr: ArrayLike, needle: bytes | str, case_insensitive: bool = False) -> ArrayLike:
    """ClickHouse ``hasToken(haystack, needle)`` (``hasTokenCaseInsensitive`` if asked).

    True iff `needle` occurs in the row with a separator or the row's start
    before it and a separator or the row's end after it. Separators are ASCII
    bytes outside [0-9A-Za-z]; bytes >= 0x80 are token bytes (so 'é' is part of
    a token and 'abcédef' does not hold the token 'abc'). Case-insensitive
    folding is ASCII only ('É' never equals 'é'). The empty needle matches no
    row. A needle with a separator raises `SkipidxError`, whatever the data.
    NULL rows give NULL.
    """
    return _has_token_impl(arr, check_token_needle(needle), case_insensitive)


def has_token_case_insensitive(arr: ArrayLike, needle: bytes | str) -> ArrayLike:
    """ClickHouse ``hasTokenCaseInsensitive``: `has_token` with ASCII case folding."""
    return has_token(arr, needle, case_insensitive=True)


def has_token_or_null(arr: ArrayLike, needle: bytes | str, case_insensitive: bool = False) -> ArrayLike:
    """ClickHouse ``hasTokenOrNull`` (and ``hasTokenCaseInsensitiveOrNull``).

    As `has_token`, but a needle with a separator gives NULL for every row
    instead of an error. (ClickHouse types the result Nullable(UInt8) even for
    a good needle; the values equal hasToken's.)
    """
    b = _as_bytes(needle, "hasTokenOrNull needle")
    try:
        check_token_needle(b)
    except SkipidxError:
        return _map_chunks(arr, lambda c: pa.nulls(len(c), type=pa.bool_()))
    return _has_token_impl(arr, b, case_insensitive)


def has_tokens(arr: ArrayLike, needles: tuple | bytes | str, want_all: bool) -> ArrayLike:
    """ClickHouse ``hasAnyTokens`` (``want_all`` False) / ``hasAllTokens``.

    `needles`: an array of tokens, or a string split into its splitByNonAlpha
    tokens. An array element that is not one token (empty, or holding a
    separator) matches nothing: it drops out of ANY and makes ALL false; no
    needle at all gives 0. NULL rows give NULL.
    """
    if isinstance(needles, (bytes, str)):
        from skipidx.core.tokenizer_api import split_by_non_alpha

        needles = tuple(split_by_non_alpha(_as_bytes(needles, "needles")))
    toks = [_as_bytes(n, "needle") for n in needles]
    good = [t for t in toks if t and _TOKEN_BYTE[np.frombuffer(t, dtype=np.uint8)].all()]
    if not good or (want_all and len(good) != len(toks)):
        return _map_chunks(arr, _string_fn(lambda c: _const_bool(c, False)))
    out = None
    for t in dict.fromkeys(good):
        m = _has_token_impl(arr, t, False)
        out = m if out is None else (pc.and_(out, m) if want_all else pc.or_(out, m))
    return out


# --------------------------------------------------------------------------
# LIKE
# --------------------------------------------------------------------------

# Bytes ClickHouse's likePatternToRegexp escapes with a backslash.
_LIKE_REGEX_SPECIAL = frozenset(b"^$.[|()?*+{")


def _like_substring(pattern: bytes) -> bytes | None:
    """If the pattern is '%lit%' with no wildcard inside, the literal (escapes resolved).

    This is ClickHouse's likePatternIsSubstring: such patterns are searched
    byte-wise, never through RE2 (which matters for invalid UTF-8).
    """
    if len(pattern) < 2 or pattern[0:1] != b"%" or pattern[-1:] != b"%":
        return None
    out = bytearray()
    i, end = 1, len(pattern) - 1
    while i < end:
        c = pattern[i]
        if c == 0x25 or c == 0x5F:  # '%' or '_' inside: not a plain substring
            return None
        if c == 0x5C:  # backslash
            if i + 1 >= end:
                # A backslash right before the closing '%' escapes it: 'lit\%' is
                # not '%lit%'-shaped; let the regex path decide.
                return None
            nxt = pattern[i + 1]
            if nxt in (0x25, 0x5F, 0x5C):
                out.append(nxt)
            else:
                out.append(0x5C)
                out.append(nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out)


def like_to_regex(pattern: bytes | str) -> bytes:
    """Translate a LIKE pattern to the RE2 regex ClickHouse builds (likePatternToRegexp).

    - ``%`` -> ``.*`` (dropped when leading or trailing: the match is then
      unanchored on that side), ``_`` -> ``.`` (one UTF-8 code point);
    - ``\\%``, ``\\_`` -> the literal character, ``\\\\`` -> one literal backslash;
      a backslash before any other character is a literal backslash followed
      by that character (``'a\\d'`` matches the three bytes ``a\\d``, not a digit);
    - a pattern ending in a single backslash raises `SkipidxError`
      ("Invalid escape sequence at the end of LIKE pattern").
    The regex is anchored with ``^``/``$`` where the pattern does not begin/end with %.
    """
    p = _as_bytes(pattern, "LIKE pattern")
    res = bytearray()
    i, n = 0, len(p)
    if i < n and p[i] == 0x25:
        while i < n and p[i] == 0x25:
            i += 1
    else:
        res += b"^"
    while i < n:
        c = p[i]
        if c in _LIKE_REGEX_SPECIAL:
            res += b"\\" + bytes([c])
        elif c == 0x25:  # '%'
            j = i
            while j < n and p[j] == 0x25:
                j += 1
            if j == n:
                return bytes(res)  # trailing %: unanchored end
            res += b".*"
            i = j
            continue
        elif c == 0x5F:  # '_'
            res += b"."
        elif c == 0x5C:  # backslash
            if i + 1 == n:
                raise SkipidxError(
                    f"Invalid escape sequence at the end of LIKE pattern '{p.decode('utf-8', 'replace')}'")
            nxt = p[i + 1]
            if nxt in (0x25, 0x5F):  # \% and \_ are the literal characters
                res.append(nxt)
                i += 2
            elif nxt == 0x5C:  # \\ is one literal backslash
                res += b"\\\\"
                i += 2
            else:
                # A backslash before any other character is itself literal; the
                # character follows as an ordinary pattern character.
                res += b"\\\\"
                i += 1
            continue
        else:
            res.append(c)
        i += 1
    res += b"$"
    return bytes(res)


class _Regex:
    """An RE2 pattern and the encoding ClickHouse compiles it in.

    ClickHouse compiles a pattern that is valid UTF-8 in UTF-8 mode (``.`` is
    one code point and never an invalid byte) and any other pattern in Latin-1
    mode (``.`` is one byte): ``'a\\xc3\\xa9\\xff' LIKE 'a_\\xff'`` is 0 but
    ``'a\\xff\\xff' LIKE 'a_\\xff'`` is 1. Arrow picks the mode from the array
    type (string: UTF-8, binary: Latin-1), so the data is viewed accordingly.
    """

    __slots__ = ("pattern", "utf8")

    def __init__(self, regex: bytes) -> None:
        try:
            self.pattern: str | bytes = regex.decode("utf-8")
            self.utf8 = True
        except UnicodeDecodeError:
            self.pattern = regex
            self.utf8 = False


def _run_regex(chunk: pa.Array, rx: _Regex, ignore_case: bool, what: str) -> pa.Array:
    view = _utf8_view(chunk) if rx.utf8 else _binary_view(chunk)
    try:
        return pc.match_substring_regex(view, pattern=rx.pattern, ignore_case=ignore_case)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SkipidxError(f"cannot compile {what} as an RE2 regex: {e}") from None


def like(arr: ArrayLike, pattern: bytes | str, negated: bool = False,
         case_insensitive: bool = False) -> ArrayLike:
    """ClickHouse ``LIKE`` / ``NOT LIKE`` / ``ILIKE`` / ``NOT ILIKE``.

    A pattern of the shape ``%literal%`` (no other wildcard) is a byte-wise
    substring search (ASCII and UTF-8 case folding for ILIKE, as ClickHouse's
    Volnitsky searcher; RE2's literal mode here). Any other pattern is
    translated with `like_to_regex` and run with RE2 in UTF-8 mode with dot
    matching newline, as ClickHouse does; so ``_`` is one code point and
    neither ``_`` nor an inner ``%`` crosses an invalid UTF-8 byte. A pattern
    that is not valid UTF-8 runs in RE2's Latin-1 mode (``_`` is one byte), as
    in ClickHouse. NULL rows give NULL (also for NOT LIKE).

    Known ILIKE differences, where ClickHouse is not a function of the row:
    its case-insensitive UTF-8 searcher steps by the length a lead byte
    announces, across row boundaries, so after a stray lead byte (even at
    the end of the *previous* row) it may skip a match: ``'abc' ILIKE
    '%abc%'`` is 0 in ClickHouse when the row before ends in ``\xc3``. Here
    the answer is RE2's, row by row. And for the few characters whose case
    orbit holds several code points (Kelvin sign, long s, final sigma, capital
    sharp s) ClickHouse's substring searcher and its RE2 path disagree
    (``'\u212a' ILIKE 'k'`` is 1 but ``'\u212a' ILIKE '%k%'`` is 0); here RE2's
    Unicode folding answers both.
    """
    p = _as_bytes(pattern, "LIKE pattern")
    sub = _like_substring(p)
    rx = None if sub is not None else _Regex(b"(?s)" + like_to_regex(p))
    sub_is_utf8 = sub is not None and _Regex(sub).utf8
    if rx is not None:
        _run_regex(pa.array([b""], pa.binary()), rx, case_insensitive, "LIKE pattern")

    def one(chunk: pa.Array) -> pa.Array:
        if sub is not None:
            if sub == b"":
                res = _const_bool(chunk, True)
            elif not case_insensitive:
                res = _contains(chunk, sub)
            else:
                # ILIKE: RE2's literal mode, UTF-8 folding if the needle is UTF-8 (Latin-1 otherwise).
                view = _utf8_view(chunk) if case_insensitive and sub_is_utf8 else _binary_view(chunk)
                res = pc.match_substring(view, pattern=sub, ignore_case=case_insensitive)
        else:
            res = _run_regex(chunk, rx, case_insensitive, "LIKE pattern")
        return pc.invert(res) if negated else res

    return _map_chunks(arr, _string_fn(one))


# --------------------------------------------------------------------------
# startsWith, endsWith, multiSearchAny, match, lower, upper, length
# --------------------------------------------------------------------------

def starts_with(arr: ArrayLike, prefix: bytes | str) -> ArrayLike:
    """ClickHouse ``startsWith``: byte-wise prefix test; '' is a prefix of every row."""
    p = _as_bytes(prefix, "startsWith prefix")
    return _map_chunks(arr, _string_fn(lambda c: pc.starts_with(_binary_view(c), pattern=p)))


def ends_with(arr: ArrayLike, suffix: bytes | str) -> ArrayLike:
    """ClickHouse ``endsWith``: byte-wise suffix test; '' is a suffix of every row."""
    s = _as_bytes(suffix, "endsWith suffix")
    return _map_chunks(arr, _string_fn(lambda c: pc.ends_with(_binary_view(c), pattern=s)))


_RE2_PLAIN = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _re2_literal(needle: bytes) -> bytes:
    """An RE2 (Latin-1 mode) regex matching exactly these bytes: \\xHH for every non-alphanumeric."""
    return b"".join(bytes([c]) if c in _RE2_PLAIN else b"\\x%02x" % c for c in needle)


#: Up to this many distinct non-empty needles, multiSearchAny runs one
#: whole-buffer `_search` pass per needle (rows settled by one needle are
#: skipped by the next); beyond, one RE2 pass over the alternation. Measured
#: on the kept granules of the demo's log table (35 MB, random 5-8 byte
#: substrings): 3 passes 40 ms vs RE2 172 ms, 12: 69 vs 90 ms, 16: 108 vs 164 ms.
_MSA_PASSES_MAX = 16


def multi_search_any(arr: ArrayLike, needles: Sequence[bytes | str]) -> ArrayLike:
    """ClickHouse ``multiSearchAny(haystack, [needles])``: any needle is a byte substring.

    Surprise kept from ClickHouse: the empty needle matches every *non-empty*
    row but not the empty string (``multiSearchAny('', [''])`` is 0, while
    ``position('', '')`` is 1). An empty needle list matches nothing (in SQL,
    ``[]`` is an Array(Nothing) and a type error; the binder should refuse it).
    """
    ns = [_as_bytes(n, "multiSearchAny needle") for n in needles]
    has_empty = any(len(n) == 0 for n in ns)
    nonempty = sorted({n for n in ns if n})

    def one(chunk: pa.Array) -> pa.Array:
        b = _binary_view(chunk)
        if len(nonempty) <= _MSA_PASSES_MAX:
            offsets, data = _offsets_data(b)
            return _bool_result(_search.any_rows(offsets, data, ns), chunk)
        # One RE2 pass in Latin-1 (byte) mode over the escaped alternation.
        alt = b"|".join(_re2_literal(n) for n in nonempty)
        hit = pc.match_substring_regex(b, pattern=alt)
        return pc.or_(pc.greater(pc.binary_length(b), 0), hit) if has_empty else hit

    return _map_chunks(arr, _string_fn(one))


def match(arr: ArrayLike, regex: bytes | str) -> ArrayLike:
    """ClickHouse ``match(haystack, regex)``: RE2 partial match, UTF-8 mode, ``.`` matches newline.

    The empty regex matches every row. An invalid regex raises `SkipidxError`.
    """
    r = _as_bytes(regex, "match regex")
    # ClickHouse sets RE2's dot_nl option; a leading (?s) is the same flag.
    rx = _Regex(b"(?s)" + r)

    def one(chunk: pa.Array) -> pa.Array:
        if r == b"":
            return _const_bool(chunk, True)
        return _run_regex(chunk, rx, False, "match regex")

    # Compile once eagerly so a bad regex fails even on an empty column.
    _run_regex(pa.array([b""], pa.binary()), rx, False, "match regex")
    return _map_chunks(arr, _string_fn(one))


def _ascii_case(chunk: pa.Array, to_lower: bool) -> pa.Array:
    """ASCII-only case mapping of a binary-like chunk; other bytes (UTF-8 or not) untouched.

    Arrow's ascii_lower/ascii_upper are exactly that byte map and do not
    validate UTF-8, so binary data goes through a string view and back.
    """
    t = chunk.type
    fn = pc.ascii_lower if to_lower else pc.ascii_upper
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return fn(chunk)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return fn(_utf8_view(chunk)).view(t)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return _ascii_case(chunk.cast(pa.large_binary()), to_lower).cast(t)
    raise SkipidxError(f"expected a String column, got {t}")


def lower(arr: ArrayLike) -> ArrayLike:
    """ClickHouse ``lower``: ASCII A-Z -> a-z only ('ÀBC' -> 'Àbc'); type and nulls kept.

    A dictionary column stays a dictionary (its values are lowered).
    """
    return _map_chunks(arr, _string_map_fn(True))


def upper(arr: ArrayLike) -> ArrayLike:
    """ClickHouse ``upper``: ASCII a-z -> A-Z only; type and nulls kept."""
    return _map_chunks(arr, _string_map_fn(False))


def _string_map_fn(to_lower: bool) -> Callable[[pa.Array], pa.Array]:
    def one(chunk: pa.Array) -> pa.Array:
        if pa.types.is_dictionary(chunk.type):
            if not _is_stringish(chunk.type.value_type):
                raise SkipidxError(f"expected a String column, got {chunk.type}")
            return pa.DictionaryArray.from_arrays(chunk.indices, one(chunk.dictionary))
        return _ascii_case(chunk, to_lower)
    return one


def length(arr: ArrayLike) -> ArrayLike:
    """ClickHouse ``length(String)``: the number of bytes, as UInt64 (NULL -> NULL)."""
    return _map_chunks(arr, _string_fn(lambda c: pc.binary_length(_binary_view(c)).cast(pa.uint64())))


# --------------------------------------------------------------------------
# Literals, comparisons, IN, NULL tests, three-valued logic
# --------------------------------------------------------------------------

def literal(value: Any) -> pa.Scalar:
    """A ClickHouse-typed scalar for a SQL literal.

    Integers take the smallest type ClickHouse gives them (UInt8, UInt16,
    UInt32, UInt64 for non-negative; Int8..Int64 for negative), floats are
    Float64, strings String (as binary bytes), NULL a null scalar.
    """
    if value is None:
        return pa.scalar(None, type=pa.null())
    if isinstance(value, bool):
        return pa.scalar(int(value), type=pa.uint8())
    if isinstance(value, int):
        if value >= 0:
            for t, hi in ((pa.uint8(), 2**8), (pa.uint16(), 2**16), (pa.uint32(), 2**32), (pa.uint64(), 2**64)):
                if value < hi:
                    return pa.scalar(value, type=t)
        else:
            for t, lo in ((pa.int8(), -2**7), (pa.int16(), -2**15), (pa.int32(), -2**31), (pa.int64(), -2**63)):
                if value >= lo:
                    return pa.scalar(value, type=t)
        raise SkipidxError(f"integer literal {value} is out of the 64-bit range")
    if isinstance(value, float):
        return pa.scalar(value, type=pa.float64())
    if isinstance(value, (bytes, str)):
        return pa.scalar(_as_bytes(value, "literal"), type=pa.binary())
    raise SkipidxError(f"unsupported literal {value!r}")


_OPS = {"=": "equal", "==": "equal", "!=": "not_equal", "<>": "not_equal",
        "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_FLIP = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _np_cmp(op: str, a: Any, b: Any) -> Any:
    return {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
            "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal}[op](a, b)


def _type_kind(t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "uint"
    if pa.types.is_unsigned_integer(t):
        return "uint"
    if pa.types.is_signed_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if _is_stringish(t) or (pa.types.is_dictionary(t) and _is_stringish(t.value_type)):
        return "string"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "datetime"
    if pa.types.is_null(t):
        return "null"
    raise SkipidxError(f"unsupported type in comparison: {t}")


_DATE_RE = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*$|^\s*(\d{4})(\d{2})(\d{2})\s*$")
_DATETIME_RE = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2}):(\d{2}))?\s*$")


def _parse_date(text: str) -> _dt.date:
    m = _DATE_RE.match(text)
    try:
        if m is None:
            raise ValueError(text)
        g = [x for x in m.groups() if x is not None]
        return _dt.date(int(g[0]), int(g[1]), int(g[2]))
    except ValueError:
        raise SkipidxError(
            f"Cannot parse date: expected a date in the YYYY-MM-DD or YYYYMMDD format: while converting '{text}' to Date"
        ) from None


def _parse_datetime(text: str) -> _dt.datetime:
    m = _DATETIME_RE.match(text)
    try:
        if m is None:
            raise ValueError(text)
        y, mo, d, hh, mi, ss = m.groups()
        return _dt.datetime(int(y), int(mo), int(d), int(hh or 0), int(mi or 0), int(ss or 0))
    except ValueError:
        raise SkipidxError(f"Cannot parse DateTime from '{text}'") from None


def _coerce_temporal(value: Any, t: pa.DataType) -> pa.Scalar:
    """A string literal compared with a Date/DateTime column is parsed as that type."""
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if isinstance(value, (bytes, str)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        v: Any = _parse_date(text) if pa.types.is_date(t) else _parse_datetime(text)
        if pa.types.is_timestamp(t) and t.tz is not None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return pa.scalar(v, type=t)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return pa.scalar(value, type=t)
    if isinstance(value, int) and not isinstance(value, bool):
        # ClickHouse compares a Date with a number as its day number, a DateTime as seconds.
        if pa.types.is_date(t):
            return pa.scalar(value, type=pa.int32()).cast(pa.date32()).cast(t)
        return pa.scalar(value, type=pa.int64()).cast(pa.timestamp("s")).cast(t)
    raise SkipidxError(f"cannot compare {t} with {value!r}")


def _as_py_number(v: Any) -> Any:
    """A constant as a Python int/float (Bool true/false are 1/0, as in ClickHouse)."""
    v = v.as_py() if isinstance(v, pa.Scalar) else v
    return int(v) if isinstance(v, bool) else v


def _compare_int_column_const(op: str, chunk: pa.Array, c: int | float) -> pa.Array:
    """Exact Int/UInt column vs Python number constant (no float rounding, no wrap)."""
    t = chunk.type
    info = np.iinfo(t.to_pandas_dtype()) if not pa.types.is_boolean(t) else np.iinfo(np.uint8)
    if isinstance(c, float):
        if math.isnan(c):
            return _const_bool(chunk, op == "not_equal")
        if math.isinf(c) or c != math.floor(c):
            # Not an integer: '=' never holds; order vs c equals order vs ceil/floor.
            if op == "equal":
                return _const_bool(chunk, False)
            if op == "not_equal":
                return _const_bool(chunk, True)
            if math.isinf(c):
                return _const_bool(chunk, (c > 0) == (op in ("less", "less_equal")))
            c = math.ceil(c) if op in ("less", "greater_equal") else math.floor(c)
            # x < 2.5 <=> x < 3 ; x >= 2.5 <=> x >= 3 ; x <= 2.5 <=> x <= 2 ; x > 2.5 <=> x > 2
        else:
            c = int(c)
    c = int(c)
    if c < info.min or c > info.max:
        below = c < info.min  # the constant is below every value of the column
        val = {"equal": False, "not_equal": True,
               "less": not below, "less_equal": not below,
               "greater": below, "greater_equal": below}[op]
        return _const_bool(chunk, val)
    scalar = pa.scalar(c, type=t if not pa.types.is_boolean(t) else pa.uint8())
    col = chunk if not pa.types.is_boolean(t) else chunk.cast(pa.uint8())
    return getattr(pc, op)(col, scalar)


def _exact_int_float(op: str, i: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Exact comparison of 64-bit integers with float64 values (NaN: IEEE, unordered)."""
    fi = i.astype(np.float64)
    res = _np_cmp(op, fi, f)
    tie = fi == f  # only here can rounding of i hide the true order
    if tie.any():
        it = i[tie]
        ft = f[tie]
        # ft is an integral float in [-2^63, 2^64]; 2^63 / 2^64 lie above every int64 / uint64.
        limit = 2.0**63 if i.dtype == np.int64 else 2.0**64
        over = ft >= limit
        iv = np.where(over, 0, ft).astype(i.dtype)
        # sign: -1 if i < f, 0 if equal, 1 if greater
        sign = np.where(over, -1, np.where(it < iv, -1, np.where(it > iv, 1, 0)))
        res[tie] = {"equal": sign == 0, "not_equal": sign != 0, "less": sign < 0,
                    "less_equal": sign <= 0, "greater": sign > 0, "greater_equal": sign >= 0}[op]
    return res


def _valid_and(a: pa.Array, b: pa.Array) -> pa.Array | None:
    if a.null_count == 0 and b.null_count == 0:
        return None
    return pc.and_(a.is_valid(), b.is_valid())


def _compare_arrays(op: str, a: pa.Array, b: pa.Array) -> pa.Array:
    if pa.types.is_boolean(a.type) != pa.types.is_boolean(b.type):
        # Bool against a number compares as UInt8, as ClickHouse (`length(b) <= bo`)
        a, b = (x.cast(pa.uint8()) if pa.types.is_boolean(x.type) else x for x in (a, b))
    ka, kb = _type_kind(a.type), _type_kind(b.type)
    if ka == "null" or kb == "null":
        return pa.nulls(len(a), pa.bool_())
    if ka == "string" and kb == "string":
        da = a if not pa.types.is_dictionary(a.type) else a.cast(a.type.value_type)
        db = b if not pa.types.is_dictionary(b.type) else b.cast(b.type.value_type)
        return getattr(pc, op)(_binary_view(da).cast(pa.large_binary()), _binary_view(db).cast(pa.large_binary()))
    if {ka, kb} <= {"int", "uint"} and ka != kb:
        # Int vs UInt: compare through int64 unless a UInt64 holds values above 2^63-1.
        big_side = a if ka == "uint" else b
        if pa.types.is_uint64(big_side.type):
            ai = a.to_numpy(zero_copy_only=False) if a.null_count == 0 else a.fill_null(0).to_numpy()
            bi = b.to_numpy(zero_copy_only=False) if b.null_count == 0 else b.fill_null(0).to_numpy()
            u, s = (ai, bi) if ka == "uint" else (bi, ai)
            u = u.astype(np.uint64)
            s = s.astype(np.int64)
            # sign of (u - s): u above int64 max or s negative settle it
            sign = np.where(u > np.uint64(2**63 - 1), 1,
                            np.where(s < 0, 1, np.sign(u.astype(np.int64) - s)))
            if ka != "uint":
                sign = -sign
            vals = {"equal": sign == 0, "not_equal": sign != 0, "less": sign < 0, "less_equal": sign <= 0,
                    "greater": sign > 0, "greater_equal": sign >= 0}[op]
            out = pa.array(vals, pa.bool_())
            valid = _valid_and(a, b)
            return out if valid is None else pc.if_else(valid, out, pa.scalar(None, pa.bool_()))
        return getattr(pc, op)(a.cast(pa.int64()), b.cast(pa.int64()))
    if {ka, kb} <= {"int", "uint", "float"} and "float" in (ka, kb) and ka != kb:
        ints, flts = (a, b) if ka != "float" else (b, a)
        if ints.type.bit_width <= 32:
            return getattr(pc, op)(a.cast(pa.float64()), b.cast(pa.float64()))
        iv = ints.fill_null(0).to_numpy(zero_copy_only=False)
        fv = flts.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        eff = op if ints is a else {"less": "greater", "greater": "less", "less_equal": "greater_equal",
                                    "greater_equal": "less_equal"}.get(op, op)
        out = pa.array(_exact_int_float(eff, iv, fv), pa.bool_())
        valid = _valid_and(a, b)
        return out if valid is None else pc.if_else(valid, out, pa.scalar(None, pa.bool_()))
    if ka in ("date", "datetime") and kb == "string":
        raise SkipidxError("comparing a Date/DateTime column with a String column is not supported")
    try:
        return getattr(pc, op)(a, b)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SkipidxError(f"cannot compare {a.type} with {b.type}: {e}") from None


def compare(op: str, left: ArrayLike, right: ArrayLike | Any) -> ArrayLike:
    """ClickHouse comparison ``left op right`` (op in = == != <> < <= > >=).

    `right` is an array of the same length or a constant (Python value or
    pyarrow Scalar). Semantics:

    - numbers compare exactly across types (Int vs UInt, integers vs floats:
      ``toUInt64(9007199254740993) = 9007199254740992.0`` is 0, ``-1 <
      toUInt64(1)`` is 1; a constant outside a column's range or a fractional
      constant gives the mathematically right answer);
    - NaN is unordered: ``=``/``<``/``>`` false, ``!=`` true;
    - strings compare byte-wise;
    - a Date/DateTime column compared with a string constant parses it as
      that type (``YYYY-MM-DD`` / ``YYYYMMDD`` / ``YYYY-MM-DD hh:mm:ss``), a
      bad one raises `SkipidxError`; DateTime values are taken in UTC;
    - a NULL on either side gives NULL.
    """
    if op not in _OPS:
        raise SkipidxError(f"unknown comparison operator {op!r}")
    fn = _OPS[op]
    if isinstance(right, (pa.Array, pa.ChunkedArray)):
        la = left.combine_chunks() if isinstance(left, pa.ChunkedArray) else left
        ra = right.combine_chunks() if isinstance(right, pa.ChunkedArray) else right
        if len(la) != len(ra):
            raise SkipidxError(f"comparison of arrays of different lengths ({len(la)} and {len(ra)})")
        out = _compare_arrays(fn, la, ra)
        return pa.chunked_array([out]) if isinstance(left, pa.ChunkedArray) else out

    def one(chunk: pa.Array) -> pa.Array:
        k = _type_kind(chunk.type)
        v = right
        if v is None or (isinstance(v, pa.Scalar) and not v.is_valid):
            return pa.nulls(len(chunk), pa.bool_())
        if k in ("int", "uint"):
            num = _as_py_number(v)
            if isinstance(num, (int, float)):
                return _compare_int_column_const(fn, chunk, num)
            raise SkipidxError(f"cannot compare {chunk.type} with {v!r}")
        if k == "float":
            num = _as_py_number(v)
            if not isinstance(num, (int, float)):
                raise SkipidxError(f"cannot compare {chunk.type} with {v!r}")
            if isinstance(num, int) and not -2**63 <= num < 2**64:
                raise SkipidxError(f"integer literal {num} is out of the 64-bit range")
            if isinstance(num, int) and abs(num) > 2**53:
                const = np.full(len(chunk), num, dtype=np.uint64 if num > 0 else np.int64)
                return _compare_arrays(fn, chunk, pa.array(const))
            return getattr(pc, fn)(chunk.cast(pa.float64()), pa.scalar(float(num), pa.float64()))
        if k == "string":
            if isinstance(v, pa.Scalar):
                v = v.as_py()
            b = _as_bytes(v, "comparison constant")
            return _string_fn(lambda c: getattr(pc, fn)(_binary_view(c), pa.scalar(b, pa.binary())))(chunk) \
                if not pa.types.is_large_string(chunk.type) and not pa.types.is_large_binary(chunk.type) \
                else getattr(pc, fn)(_binary_view(chunk), pa.scalar(b, pa.large_binary()))
        if k in ("date", "datetime"):
            return getattr(pc, fn)(chunk, _coerce_temporal(v, chunk.type))
        raise SkipidxError(f"cannot compare {chunk.type} with {v!r}")

    return _map_chunks(left, one)


#: Up to this many values, IN on a fixed-width integer/temporal column runs
#: :func:`_in_bitmap_kernel` over the raw values (~1 ns/row whatever the
#: list's length: 0.31 ms for 327k UInt64 rows and 10 values, where a chain
#: of numpy equality tests took 1.1-1.3 ms with its concatenation and bool
#: conversion, pc.is_in 5 ms and np.isin 9.5 ms); larger lists use pc.is_in.
_IN_EQ_MAX = 1024
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(nogil=True, cache=True)
def _in_bitmap_kernel(vals, bits, shift, want, out):  # pragma: no cover - numba
    """out (packed, LSB first) = whether each of `vals` is in sorted `want`.

    A value's multiplicative hash picks one bit of the `bits` bitmap (set for
    every wanted value); only the rare rows whose bit is set are looked up in
    `want` by binary search, so most rows cost a multiply, a load and a shift.
    """
    n = vals.shape[0]
    nw = want.shape[0]
    for k in range((n + 7) // 8):
        byte = 0
        for q in range(8):
            i = k * 8 + q
            if i >= n:
                break
            v = np.uint64(vals[i])
            h = (v * np.uint64(0x9E3779B97F4A7C15)) >> shift
            if (bits[h >> np.uint64(6)] >> (h & np.uint64(63))) & np.uint64(1):
                lo = 0
                hi = nw
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if want[mid] < v:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo < nw and want[lo] == v:
                    byte |= 1 << q
        out[k] = byte


class _Membership:
    """A set of unsigned integers prepared for :func:`_in_bitmap_kernel`."""

    __slots__ = ("want", "bits", "shift")

    def __init__(self, wanted: np.ndarray) -> None:
        want = np.unique(np.asarray(wanted).astype(np.uint64))
        # a bitmap of 2^bits_log2 bits, >= 64 per wanted value: few false hits
        bits_log2 = max(12, min(16, int(max(1, len(want)) * 64 - 1).bit_length()))
        self.shift = np.uint64(64 - bits_log2)
        h = (want * _GOLDEN) >> self.shift
        bits = np.zeros(1 << (bits_log2 - 6), dtype=np.uint64)
        np.bitwise_or.at(bits, (h >> np.uint64(6)).astype(np.intp), np.left_shift(np.uint64(1), h & np.uint64(63)))
        self.want = want
        self.bits = bits

    def packed(self, vals: np.ndarray) -> np.ndarray:
        """Bit-packed (LSB first, as Arrow's boolean buffers) whether each of
        `vals` (unsigned integers) is in the set."""
        out = np.empty((vals.shape[0] + 7) // 8, dtype=np.uint8)
        if vals.shape[0]:
            _in_bitmap_kernel(vals, self.bits, self.shift, self.want, out)
        return out


def _is_in_small_fixed(chunks: list[pa.Array], vt: pa.DataType, m: _Membership) -> list[pa.Array]:
    """Per chunk, whether each row's value is in `m`, from the chunk's value
    buffer (null slots hold arbitrary values: the caller lays the nulls over
    the answer). Values are compared as unsigned integers of their width
    (same bits, same equality)."""
    udt = np.dtype(f"uint{vt.bit_width}")
    out = []
    for c in chunks:
        n = len(c)
        buf = c.buffers()[1]
        if buf is None or n == 0:   # an all-null chunk may have no value buffer (nulls are laid over)
            packed = np.zeros((n + 7) // 8, dtype=np.uint8)
        else:
            packed = m.packed(np.frombuffer(buf, dtype=udt, count=c.offset + n)[c.offset:])
        out.append(pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(packed)]))
    return out


class _InPlan:
    """An IN list prepared for one column type: the value set, the kind, and
    for fixed-width columns the bitmap membership (None: use pc.is_in)."""

    __slots__ = ("kind", "vset", "membership")

    def __init__(self, kind: str, vset: pa.Array, membership: _Membership | None) -> None:
        self.kind = kind
        self.vset = vset
        self.membership = membership


def _in_plan_uncached(vals: tuple, vt: pa.DataType) -> _InPlan:
    k = _type_kind(vt)
    keep: list[Any] = []
    if k in ("int", "uint"):
        info = np.iinfo(np.uint8) if pa.types.is_boolean(vt) else np.iinfo(vt.to_pandas_dtype())
        lo, hi = int(info.min), int(info.max)
        for v in vals:
            if isinstance(v, float):
                if not math.isfinite(v) or v != math.floor(v):
                    continue
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, int):
                raise SkipidxError(f"IN list value {v!r} does not fit a {vt} column")
            if lo <= v <= hi:
                keep.append(v)
        vset = pa.array(keep, type=vt if not pa.types.is_boolean(vt) else pa.uint8())
    elif k == "float":
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise SkipidxError(f"IN list value {v!r} does not fit a {vt} column")
            if pa.types.is_float32(vt) and float(np.float32(v)) != float(v):
                continue  # not representable in Float32: cannot match
            if isinstance(v, int) and float(v) != v:
                continue
            keep.append(float(v))
        vset = pa.array(keep, type=vt)
    elif k == "string":
        vset = pa.array([_as_bytes(v, "IN list value") for v in vals], type=pa.large_binary())
    elif k in ("date", "datetime"):
        vset = pa.array([_coerce_temporal(v, vt).as_py() for v in vals], type=vt)
    else:
        raise SkipidxError(f"IN is not supported for {vt}")
    membership = None
    if (k in ("int", "uint", "date", "datetime") and not pa.types.is_boolean(vt)
            and 0 < len(vset) <= _IN_EQ_MAX):
        width = vt.bit_width
        udt = np.dtype(f"uint{width}")
        if pa.types.is_integer(vt):
            want = vset.to_numpy().astype(np.dtype(vt.to_pandas_dtype()), copy=False).view(udt)
        else:   # date32 / date64 / timestamp: integers underneath
            want = vset.view(pa.from_numpy_dtype(np.dtype(f"int{width}"))).to_numpy().view(udt)
        membership = _Membership(want)
    return _InPlan(k, vset, membership)


#: Prepared IN lists by (column type, values); see :func:`_in_plan`.
_IN_PLANS = LRU(256)


def _in_plan(vals: list, vt: pa.DataType) -> _InPlan:
    """The prepared IN list (cached: a scan evaluates the same list once per
    job, and preparing it costs more than testing a granule against it).
    Keyed by each value's type and repr too: ``IN (1)`` and ``IN (True)``
    differ, and so do ``IN (0.)`` and ``IN (-0.)`` (equal to Python, not to
    ClickHouse, which compares floats in IN by their bits)."""
    try:
        key = (vt, tuple((type(v), v, repr(v)) for v in vals))
        hash(key)
    except TypeError:
        return _in_plan_uncached(tuple(vals), vt)
    plan = _IN_PLANS.get(key)
    if plan is None:
        plan = _in_plan_uncached(tuple(vals), vt)
        _IN_PLANS.put(key, plan)
    return plan


def is_in(arr: ArrayLike, values: Iterable[Any], negated: bool = False) -> ArrayLike:
    """ClickHouse ``x IN (v, ...)`` / ``NOT IN`` with ``transform_null_in = 0``.

    - a NULL in the list never matches anything and does not make the answer
      NULL: ``1 NOT IN (2, NULL)`` is 1, ``x IN (NULL)`` is 0 for any non-NULL x;
    - a NULL x gives NULL, for IN and NOT IN alike;
    - constants are compared exactly with the column's type: a value the type
      cannot hold (2.5 or 300 or -1 for a UInt8 column) matches nothing.
    """
    vals = [v.as_py() if isinstance(v, pa.Scalar) else v for v in values]
    vals = [v for v in vals if v is not None]
    if not isinstance(arr, (pa.Array, pa.ChunkedArray)):
        raise SkipidxError(f"expected a pyarrow Array or ChunkedArray, got {type(arr).__name__}")
    # The value set and the column's view are decided once per call from the
    # column type (every chunk has it), and the column goes to ONE pc.is_in
    # call, which builds its hash set once: per chunk, the set building and
    # the per-call overhead cost more than the lookups (a scan hands over one
    # chunk per mark range).
    t = arr.type
    vt = t.value_type if pa.types.is_dictionary(t) else t
    plan = _in_plan(vals, vt)
    k, vset = plan.kind, plan.vset

    def view(chunk: pa.Array) -> pa.Array:
        if k == "string":
            col = chunk.cast(vt) if pa.types.is_dictionary(t) else chunk
            return _binary_view(col).cast(pa.large_binary())
        if pa.types.is_boolean(vt):
            return chunk.cast(pa.uint8())
        return chunk

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    if len(vset) == 0:
        found = [pa.array(np.zeros(len(c), dtype=np.bool_)) for c in chunks]
    elif plan.membership is not None and not pa.types.is_dictionary(t):
        found = _is_in_small_fixed(chunks, vt, plan.membership)
    else:
        views = [view(c) for c in chunks]
        if not views:
            views = [pa.array([], type=vset.type)]
        hit = pc.is_in(pa.chunked_array(views, type=views[0].type), value_set=vset, skip_nulls=True)
        found = hit.chunks if len(hit.chunks) == len(chunks) else [hit.combine_chunks()]
        if len(found) != len(chunks):   # chunk boundaries lost: lay the answer back over them
            offs = np.cumsum([0] + [len(c) for c in chunks])
            found = [found[0].slice(int(a), int(b - a)) for a, b in zip(offs[:-1], offs[1:])]
    out = []
    for res, chunk in zip(found, chunks):
        # pc.is_in answers false for a NULL input; ClickHouse answers NULL.
        res = _with_nulls_of(res, chunk)
        out.append(pc.invert(res) if negated else res)
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array(out, type=pa.bool_())
    return out[0]


def is_null(arr: ArrayLike) -> ArrayLike:
    """``x IS NULL`` (never NULL itself)."""
    return pc.is_null(arr, nan_is_null=False)


def is_not_null(arr: ArrayLike) -> ArrayLike:
    """``x IS NOT NULL`` (never NULL itself)."""
    return pc.is_valid(arr)


def and_(*args: ArrayLike) -> ArrayLike:
    """Three-valued AND (Kleene): false wins over NULL, NULL over true."""
    if not args:
        raise SkipidxError("AND needs at least one argument")
    acc = args[0]
    for a in args[1:]:
        acc = pc.and_kleene(acc, a)
    return acc


def or_(*args: ArrayLike) -> ArrayLike:
    """Three-valued OR (Kleene): true wins over NULL, NULL over false."""
    if not args:
        raise SkipidxError("OR needs at least one argument")
    acc = args[0]
    for a in args[1:]:
        acc = pc.or_kleene(acc, a)
    return acc


def not_(arr: ArrayLike) -> ArrayLike:
    """Three-valued NOT: NULL stays NULL."""
    return pc.invert(arr)


def where_mask(arr: ArrayLike) -> ArrayLike:
    """The WHERE filter: a row passes iff its value is true (NULL and false drop it).

    Numeric conditions (``WHERE id % 2``) are true iff non-zero, as in ClickHouse.
    """
    t = arr.type
    if not pa.types.is_boolean(t):
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            arr = pc.not_equal(arr, pa.scalar(0, t))
        elif pa.types.is_null(t):
            return _map_chunks(arr, lambda c: pa.array(np.zeros(len(c), dtype=np.bool_)))
        else:
            raise SkipidxError(f"Illegal type {t} of column for filter. Must be UInt8 or Nullable(UInt8)")
    if arr.null_count == 0:
        return arr   # (pc.fill_null's call alone costs ~50 us: a point query's filter)
    return pc.fill_null(arr, False)


# --------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------

def _int_type(signed: bool, size: int) -> pa.DataType:
    return {(True, 1): pa.int8(), (True, 2): pa.int16(), (True, 4): pa.int32(), (True, 8): pa.int64(),
            (False, 1): pa.uint8(), (False, 2): pa.uint16(), (False, 4): pa.uint32(),
            (False, 8): pa.uint64()}[(signed, size)]


def _next_size(n: int) -> int:
    return min(n * 2, 8)


def arithmetic_result_type(op: str, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """ClickHouse's result type of ``a op b`` for numeric types (op in + - * / %).

    ``+``/``*``: next size of the larger operand, signed if either is, capped at
    64 bits (UInt8+UInt8 -> UInt16, Int32*Int32 -> Int64); ``-``: the same but
    always signed (UInt64-UInt64 -> Int64); ``/``: Float64; ``%``: signed iff
    the left operand is, sized by the right operand (the next size when
    signed): UInt64 % UInt8 -> UInt8, Int8 % UInt8 -> Int16, UInt8 % Int64 ->
    UInt64. Any float operand makes the result Float64.
    """
    for t in (a, b):
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            raise SkipidxError(f"Illegal types {a} and {b} of arguments of arithmetic operator {op}")
    if op == "/" or pa.types.is_floating(a) or pa.types.is_floating(b):
        return pa.float64()
    sa = pa.types.is_signed_integer(a)
    sb = pa.types.is_signed_integer(b)
    wa = 1 if pa.types.is_boolean(a) else a.bit_width // 8
    wb = 1 if pa.types.is_boolean(b) else b.bit_width // 8
    if op in ("+", "*"):
        return _int_type(sa or sb, _next_size(max(wa, wb)))
    if op == "-":
        return _int_type(True, _next_size(max(wa, wb)))
    if op == "%":
        return _int_type(sa, _next_size(wb) if sa else wb)
    raise SkipidxError(f"unknown arithmetic operator {op!r}")


def negate_result_type(t: pa.DataType) -> pa.DataType:
    """ClickHouse's result type of ``negate(x)`` (unary minus): IntN -> IntN, UIntN (and
    Bool) -> the signed type twice as wide (UInt64 -> Int64), floats keep their type."""
    if pa.types.is_floating(t):
        return t
    if pa.types.is_boolean(t):
        return pa.int16()
    if not pa.types.is_integer(t):
        raise SkipidxError(f"Illegal type {t} of argument of function negate")
    if pa.types.is_signed_integer(t):
        return t
    return _int_type(True, _next_size(t.bit_width // 8))


def negate(arr: ArrayLike) -> ArrayLike:
    """ClickHouse ``-x`` (negate) of a numeric column: integers wrap (``-x`` of the
    smallest IntN is itself; a UInt64 above 2^63 wraps through Int64, as ClickHouse),
    floats flip the sign bit (-(0.) is -0.); NULL stays NULL."""
    rt = negate_result_type(arr.type)
    if arr.type != rt:
        # UIntN -> signed 2N exact; UInt64 -> Int64 wraps (bits kept), as ClickHouse
        arr = pc.cast(arr, rt, safe=False)
    return pc.negate(arr)


def arithmetic(op: str, left: ArrayLike | Any, right: ArrayLike | Any) -> ArrayLike:
    """ClickHouse ``left op right`` for + - * / % over numeric arrays/constants.

    The result has `arithmetic_result_type`; integer results wrap on overflow
    (as ClickHouse's do). ``/`` is float division (x/0 is inf or nan). ``%``
    takes the sign of the dividend (C semantics, -7 % 2 = -1); an integer
    ``% 0`` raises `SkipidxError` ("Division by zero"); float % is a - trunc(a / b) * b.
    Constants are typed with `literal`. NULL on either side gives NULL.
    """
    chunked = isinstance(left, pa.ChunkedArray) or isinstance(right, pa.ChunkedArray)

    def as_arr(x: Any) -> tuple[pa.Array | pa.Scalar, bool]:
        if isinstance(x, pa.ChunkedArray):
            return x.combine_chunks(), True
        if isinstance(x, pa.Array):
            return x, True
        return (x if isinstance(x, pa.Scalar) else literal(x)), False

    la, l_is_arr = as_arr(left)
    ra, r_is_arr = as_arr(right)
    if not (l_is_arr or r_is_arr):
        raise SkipidxError("arithmetic needs at least one column argument")
    n = len(la) if l_is_arr else len(ra)
    rt = arithmetic_result_type(op, la.type, ra.type)

    def values(x: Any, is_arr: bool) -> np.ndarray:
        if is_arr:
            v = x.cast(x.type if not pa.types.is_boolean(x.type) else pa.uint8())
            v = v.fill_null(0) if v.null_count else v
            return v.to_numpy(zero_copy_only=False)
        return np.full(n, x.as_py() if x.is_valid else 0)

    av, bv = values(la, l_is_arr), values(ra, r_is_arr)
    npt = rt.to_pandas_dtype()
    with np.errstate(all="ignore"):
        if op == "/":
            out = av.astype(np.float64) / bv.astype(np.float64)
        elif op == "%":
            if pa.types.is_floating(rt):
                # ClickHouse's float modulo is a - trunc(a / b) * b, not fmod: 1 % 0.1 is 0
                # (fmod: 0.0999...), 1e20 % 3 is 0 (fmod: 1), -0. % 0.1 is 0 (fmod: -0.)
                a64, b64 = av.astype(np.float64), bv.astype(np.float64)
                out = a64 - np.trunc(a64 / b64) * b64
            else:
                valid_rows = np.ones(n, dtype=np.bool_)
                for x, is_arr in ((la, l_is_arr), (ra, r_is_arr)):
                    if is_arr and x.null_count:
                        valid_rows &= x.is_valid().to_numpy(zero_copy_only=False)
                    elif not is_arr and not x.is_valid:
                        valid_rows[:] = False
                if np.any((bv == 0) & valid_rows):
                    raise SkipidxError("Division by zero")
                # |a % b| < |b| and its sign is a's (C semantics); compute in uint64
                # for an unsigned dividend and int64 for a signed one, then narrow.
                b_big = (bv.astype(np.uint64) > np.uint64(2**63 - 1)) if bv.dtype.kind == "u" \
                    else np.zeros(n, dtype=np.bool_)
                b_abs = np.where(b_big, np.uint64(1),
                                 np.abs(np.where(bv == 0, 1, bv).astype(np.int64)).astype(np.uint64)) \
                    if bv.dtype.kind != "u" or b_big.any() else np.where(bv == 0, 1, bv).astype(np.uint64)
                if av.dtype.kind == "u":
                    a_u = av.astype(np.uint64)
                    b_u = np.where(bv == 0, 1, bv).astype(np.uint64) if bv.dtype.kind == "u" else b_abs
                    out = a_u % b_u
                else:
                    a64 = av.astype(np.int64)
                    # A UInt64 divisor above 2^63-1 exceeds |a| for every int64 a but -2^63.
                    out = np.where(b_big, a64, np.fmod(a64, np.where(b_big, 1, b_abs).astype(np.int64)))
        else:
            ufunc = {"+": np.add, "-": np.subtract, "*": np.multiply}.get(op)
            if ufunc is None:
                raise SkipidxError(f"unknown arithmetic operator {op!r}")
            if pa.types.is_floating(rt):
                out = ufunc(av.astype(np.float64), bv.astype(np.float64))
            else:
                # Cast both to the result type first: numpy then wraps like C++.
                out = ufunc(av.astype(npt), bv.astype(npt))
    res = pa.array(np.asarray(out).astype(npt), type=rt)
    mask = None
    for x, is_arr in ((la, l_is_arr), (ra, r_is_arr)):
        if is_arr and x.null_count:
            m = x.is_null().to_numpy(zero_copy_only=False)
            mask = m if mask is None else (mask | m)
        elif not is_arr and not x.is_valid:
            mask = np.ones(n, dtype=np.bool_)
    if mask is not None:
        res = pa.array(np.asarray(out).astype(npt), type=rt, mask=mask)
    return pa.chunked_array([res]) if chunked else res
