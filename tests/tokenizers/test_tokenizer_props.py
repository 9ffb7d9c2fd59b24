"""The core invariant, as hypothesis properties: never a false negative.

For any string ``s`` and any predicate ``p`` built from ``s``'s substrings and
tokens (plus unrelated material so that ``p`` is sometimes false), if ``p(s)``
is true — evaluated here by a small reference evaluator that is at least as
permissive as ClickHouse (LIKE's ``_`` matches any byte or any whole code
point; ``.`` in ``match`` any byte; ``$`` also before a final newline) — then
every token of at least one required set is among the tokens the index side
produces for ``s``. Checked for ``token``, ``ngram(n)`` for n = 1..4 and, on
the predicates it answers, ``value``.
"""
from __future__ import annotations

import re

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skipidx.expr.index_expressions import ascii_lower_scalar
from skipidx.core.tokenizer_api import get_tokenizer

TOKENIZERS = [get_tokenizer("token")] + [get_tokenizer("ngram", n=n) for n in (1, 2, 3, 4)]
VALUE = get_tokenizer("value")

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PIECES = [b"a", b"b", b"Z", b"9", b"foo", b"bar", b" ", b"-", b".", b"_", b"%", b"\\", b"\n", b"\x00",
          "é".encode(), "日".encode(), "😀".encode(), "，".encode(), b"\x80", b"\xc3", b"\xe4", b"\xf0", b"\xff"]

texts = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=16).map(b"".join),
    st.binary(max_size=24),
)
VALID_PIECES = [p for p in PIECES if p.decode("utf-8", "replace") == p.decode("utf-8", "ignore")]
utf8_texts = st.one_of(
    st.lists(st.sampled_from(VALID_PIECES), max_size=16).map(b"".join),
    st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass")).filter(
        lambda b: b.decode("utf-8", "ignore").encode() == b),
)


def index_tokens(tok, s: bytes) -> set[bytes]:
    return set(tok.tokenize(pa.array([s], pa.binary())).to_pylist())


def ref_tokens(s: bytes) -> list[bytes]:
    return re.findall(rb"[0-9A-Za-z\x80-\xff]+", s)


def assert_sound(tok, s: bytes, func: str, args: tuple, truth: bool, index_s: bytes | None = None, **kw):
    """If the predicate holds for s, some required set is wholly among s's index tokens."""
    req = tok.requirement(func, args, pa.binary(), **kw)
    if req is None or not truth:
        return
    have = index_tokens(tok, s if index_s is None else index_s)
    assert any(set(alt) <= have for alt in req.any_of), \
        f"{tok!r} {func}{args!r} is true for {s!r} but needs {req.any_of}; index has {sorted(have)}"


# ---------------------------------------------------------------- reference evaluators

_CODE_POINT = rb"(?:[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf7][\x80-\xbf]{3}|.)"


def like_ref(s: bytes, pattern: bytes) -> bool:
    """LIKE with ClickHouse's escapes (``\\%``, ``\\_``, ``\\\\``; any other backslash is literal)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i:i + 1]
        if c == b"\\" and i + 1 < len(pattern) and pattern[i + 1:i + 2] in (b"%", b"_", b"\\"):
            out.append(re.escape(pattern[i + 1:i + 2]))
            i += 2
            continue
        out.append(b".*" if c == b"%" else _CODE_POINT if c == b"_" else re.escape(c))
        i += 1
    return re.fullmatch(b"".join(out), s, re.DOTALL) is not None


def like_escape(piece: bytes) -> bytes:
    return re.sub(rb"([%_\\])", rb"\\\1", piece)


def re2_escape(piece: bytes) -> bytes:
    return b"".join(b"\\" + bytes([c]) if chr(c) in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" else bytes([c])
                    for c in piece)


# ---------------------------------------------------------------- strategies of predicates from s


@st.composite
def text_and_slices(draw):
    s = draw(texts)
    other = draw(texts)
    cuts = sorted(draw(st.lists(st.integers(0, len(s)), min_size=4, max_size=4)))
    return s, other, cuts


@st.composite
def like_case(draw):
    s, other, (a, b, c, d) = draw(text_and_slices())
    parts = [s[a:b], s[c:d]]
    lead = draw(st.sampled_from([b"", b"%", b"_"]))
    mid = draw(st.sampled_from([b"%", b"_", b"%_", b""]))
    tail = draw(st.sampled_from([b"", b"%", b"_"]))
    raw = draw(st.booleans())  # leave backslashes unescaped (ClickHouse: literal unless before % _ \)
    esc = (lambda x: re.sub(rb"([%_])", rb"\\\1", x)) if raw else like_escape
    pattern = lead + esc(parts[0]) + mid + esc(parts[1]) + tail
    if draw(st.booleans()):
        pattern = esc(s[:b]) + b"%" + esc(s[c:])  # anchored both ends
    if draw(st.integers(0, 5)) == 0:
        pattern = b"%" + like_escape(other) + b"%"
    if re.search(rb"(?<!\\)(\\\\)*\\$", pattern):
        pattern += b"%"  # a trailing lone backslash is an error in ClickHouse
    return s, pattern


@given(like_case())
@SETTINGS
def test_like_never_false_negative(case):
    s, pattern = case
    truth = like_ref(s, pattern)
    for tok in TOKENIZERS + [VALUE]:
        assert_sound(tok, s, "like", (pattern,), truth)


@given(text_and_slices(), st.sampled_from(["startsWith", "endsWith", "multiSearchAny"]))
@SETTINGS
def test_substring_functions_never_false_negative(case, func):
    s, other, (a, b, c, d) = case
    if func == "startsWith":
        needle = s[:b] if a % 3 else other[:4]
        truth, args = s.startswith(needle), (needle,)
    elif func == "endsWith":
        needle = s[c:] if a % 3 else other[-4:]
        truth, args = s.endswith(needle), (needle,)
    else:
        needles = (s[a:b], s[c:d], other) if a % 3 else (other, other[1:])
        truth, args = any(n in s for n in needles), (needles,)
    for tok in TOKENIZERS + [VALUE]:
        assert_sound(tok, s, func, args, truth)


@given(text_and_slices())
@SETTINGS
def test_equality_and_in_never_false_negative(case):
    s, other, _ = case
    for tok in TOKENIZERS + [VALUE]:
        assert_sound(tok, s, "equals", (s,), True)
        assert_sound(tok, s, "equals", (other,), s == other)
        assert_sound(tok, s, "in", ((other, s),), True)
        assert_sound(tok, s, "has", (s,), True)
        req = tok.requirement("notEquals", (s,), pa.binary())
        assert req is None or req.negated


@given(texts, st.data())
@SETTINGS
def test_token_functions_never_false_negative(s, data):
    toks = ref_tokens(s)
    extra = data.draw(st.lists(st.sampled_from([b"foo", b"Bar", b"x9", "é".encode(), b"zz"]), max_size=2))
    needles = ([data.draw(st.sampled_from(toks))] if toks else []) + extra
    lowered = ascii_lower_scalar(s)
    lower_toks = set(ref_tokens(lowered))
    for tok in TOKENIZERS:
        for n in needles:
            assert_sound(tok, s, "hasToken", (n,), n in toks)
            assert_sound(tok, s, "hasTokenOrNull", (n,), n in toks)
            # an index on lower(s) answers the case-insensitive form
            assert_sound(tok, s, "hasTokenCaseInsensitive", (n.upper(),), n.lower() in lower_toks,
                         index_s=lowered, expr="lower")
        assert_sound(tok, s, "hasAnyTokens", (tuple(needles),), any(n in toks for n in needles))
        assert_sound(tok, s, "hasAllTokens", (tuple(needles),), bool(needles) and all(n in toks for n in needles))
        as_text = b" ".join(needles)
        assert_sound(tok, s, "hasAnyTokens", (as_text,), any(n in toks for n in ref_tokens(as_text)))
        # the raw-column index must not answer the case-insensitive form at all
        assert tok.requirement("hasTokenCaseInsensitive", (b"Foo",), pa.binary()) is None


@st.composite
def regex_case(draw):
    s, other = draw(utf8_texts), draw(utf8_texts)
    a, b, c, d = sorted(draw(st.lists(st.integers(0, len(s)), min_size=4, max_size=4)))
    kind = draw(st.integers(0, 5))
    if kind == 0:
        rx = re2_escape(s[a:b])
    elif kind == 1:
        rx = re2_escape(s[a:b]) + b".*" + re2_escape(s[c:d])
    elif kind == 2:
        rx = b"^" + re2_escape(s[:b]) + b".*" + re2_escape(s[c:]) + b"$"
    elif kind == 3:
        rx = b"(" + re2_escape(s[a:b]) + b"|" + re2_escape(other) + b")" + re2_escape(s[b:c])
    elif kind == 4:
        rx = re2_escape(s[a:b]) + b"(" + re2_escape(other[:3]) + b")?" + re2_escape(s[b:d])
    else:
        rx = b"[" + re2_escape(s[a:a + 1] or b"q") + b"X]" + re2_escape(s[a + 1:d])
    return s, rx


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@given(regex_case())
@SETTINGS
def test_match_never_false_negative(case):
    s, rx = case
    truth = re.search(rx, s, re.DOTALL) is not None
    for tok in TOKENIZERS + [VALUE]:
        assert_sound(tok, s, "match", (rx,), truth)


@given(texts)
@SETTINGS
def test_query_side_tokens_equal_index_side(s):
    for tok in TOKENIZERS:
        assert tok.value_tokens(s) == tok.tokenize(pa.array([s], pa.binary())).to_pylist()
        # a string is a substring of itself, starting and ending it
        assert tok.substring_tokens(s, True, True) == tok.value_tokens(s)


@given(st.lists(texts, max_size=4), st.lists(texts, max_size=2), st.data())
@SETTINGS
def test_array_functions_never_false_negative(arr, others, data):
    """Array(String) columns: has / hasAny / hasAll on the element values."""
    picked = data.draw(st.lists(st.sampled_from(arr), max_size=2)) if arr else []
    values = tuple(picked + others)
    col = pa.array([arr], pa.list_(pa.binary()))
    for tok in TOKENIZERS + [VALUE]:
        have = set(tok.tokenize(col).to_pylist())
        for func, args, truth in [
            ("has", (picked[0],) if picked else (b"zz",), bool(picked) or b"zz" in arr),
            ("hasAny", (values,), any(v in arr for v in values)),
            ("hasAll", (values,), all(v in arr for v in values)),
        ]:
            req = tok.requirement(func, args, pa.binary())
            if req is not None and truth:
                assert any(set(alt) <= have for alt in req.any_of), (tok, func, args, arr, req)
