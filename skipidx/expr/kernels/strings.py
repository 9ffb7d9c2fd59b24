"""Exact row-level functions with ClickHouse 26.9 semantics, over Arrow arrays.

These are what the query engine evaluates *after* pruning, so they decide the
answer: every function here is checked row by row against chDB (the embedded
ClickHouse) in ``tests/expr/test_kernels_chdb.py``.

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

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.core.text_patterns import ANY, ONE, like_scan
from skipidx.expr.kernels import _search
from skipidx.expr.kernels._arrow import (
    _is_stringish, _as_bytes, _map_chunks, _string_fn, _binary_view, _utf8_view, _offsets_data, _bool_result, _const_bool, ArrayLike,
)

# --------------------------------------------------------------------------
# hasToken
# --------------------------------------------------------------------------

# Token bytes (ASCII letters, digits, every byte >= 0x80); the search kernels
# (substring, hasToken, multiSearchAny) live in skipidx.expr.kernels._search.
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
    offsets, data = _offsets_data(_binary_view(chunk), native=True)
    return _bool_result(_search.contains_rows(offsets, data, needle), chunk)


def _has_token_impl(arr: ArrayLike, needle: bytes, case_insensitive: bool) -> ArrayLike:
    def one(chunk: pa.Array) -> pa.Array:
        if not needle:
            # ClickHouse: hasToken(s, '') is 0 for every non-NULL s (also for s = '').
            return _const_bool(chunk, False)
        offsets, data = _offsets_data(_binary_view(chunk), native=True)
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


def token_needles(needles: tuple | bytes | str, want_all: bool) -> list[bytes] | None:
    """The distinct tokens ``hasAnyTokens`` (`want_all` False) / ``hasAllTokens`` look for,
    in order (:func:`has_tokens` is an OR / AND of ``hasToken`` over them); None where the
    answer is 0 on every non-NULL row (no needle that is one token; for ALL, any that is not)."""
    if isinstance(needles, (bytes, str)):
        from skipidx.core.tokenizer_api import split_by_non_alpha

        needles = tuple(split_by_non_alpha(_as_bytes(needles, "needles")))
    toks = [_as_bytes(n, "needle") for n in needles]
    good = [t for t in toks if t and _TOKEN_BYTE[np.frombuffer(t, dtype=np.uint8)].all()]
    if not good or (want_all and len(good) != len(toks)):
        return None
    return list(dict.fromkeys(good))


def has_tokens(arr: ArrayLike, needles: tuple | bytes | str, want_all: bool) -> ArrayLike:
    """ClickHouse ``hasAnyTokens`` (``want_all`` False) / ``hasAllTokens``.

    `needles`: an array of tokens, or a string split into its splitByNonAlpha
    tokens. An array element that is not one token (empty, or holding a
    separator) matches nothing: it drops out of ANY and makes ALL false; no
    needle at all gives 0. NULL rows give NULL.
    """
    good = token_needles(needles, want_all)
    if good is None:
        return _map_chunks(arr, _string_fn(lambda c: _const_bool(c, False)))
    out = None
    for t in good:
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
    items = like_scan(pattern)
    if len(items) < 2 or items[0] != ANY or items[-1] != ANY or any(c < 0 for c in items[1:-1]):
        return None
    return bytes(items[1:-1])


def like_to_regex(pattern: bytes | str) -> bytes:
    """Translate a LIKE pattern to the RE2 regex ClickHouse builds (likePatternToRegexp).

    - ``%`` -> ``.*`` (dropped when leading or trailing: the match is then
      unanchored on that side), ``_`` -> ``.`` (one UTF-8 code point);
    - escapes as :func:`skipidx.core.text_patterns.like_scan` reads them;
    - a pattern ending in a single backslash raises `SkipidxError`
      ("Invalid escape sequence at the end of LIKE pattern").
    The regex is anchored with ``^``/``$`` where the pattern does not begin/end with %.
    """
    p = _as_bytes(pattern, "LIKE pattern")
    try:
        items = like_scan(p, strict=True)
    except ValueError as e:
        raise SkipidxError(f"{e} '{p.decode('utf-8', 'replace')}'") from None
    res = bytearray()
    i, n = 0, len(items)
    if i < n and items[i] == ANY:
        while i < n and items[i] == ANY:
            i += 1
    else:
        res += b"^"
    while i < n:
        c = items[i]
        if c == ANY:
            j = i
            while j < n and items[j] == ANY:
                j += 1
            if j == n:
                return bytes(res)  # trailing %: unanchored end
            res += b".*"
            i = j
            continue
        if c == ONE:
            res += b"."
        elif c == 0x5C:
            res += b"\\\\"
        elif c in _LIKE_REGEX_SPECIAL:
            res += b"\\" + bytes([c])
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
#: skipped by the next); beyond, one RE2 pass over the alternation is cheaper
#: (bench/bench_search.py).
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
            offsets, data = _offsets_data(b, native=True)
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
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)) and len(chunk):
        width = np.int64 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else np.int32
        if np.frombuffer(chunk.buffers()[1], width, count=1, offset=chunk.offset * width().itemsize)[0] != 0:
            # pyarrow's ascii_lower/upper write wrong bytes when the first offset is not 0
            # (e.g. a FixedString cast to String); concatenating rebases the offsets
            chunk = pa.concat_arrays([chunk])
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


