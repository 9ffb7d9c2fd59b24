"""Golden tables and property tests for skipidx.expr.kernels.

The expected values are ClickHouse 26.9's (each was asked of chDB; the
differential file tests_functions_chdb.py re-asks it on a large corpus). Here
the cases are small and named, and the array plumbing (chunked, sliced,
large, dictionary and view arrays, NULLs) is covered.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipidx.core.errors import SkipidxError
from skipidx.expr import kernels as F

E_ACUTE = "\u00e9".encode()        # 2 bytes
NIHON = "\u65e5\u672c".encode()    # 3 bytes each
GRIN = "\U0001F600".encode()       # 4 bytes


def one(fn, value: bytes | None, *args, **kw):
    return fn(pa.array([value], pa.binary()), *args, **kw).to_pylist()[0]


HAS_TOKEN = [
    ("alone", b"abc", b"abc", True),
    ("space-separated", b"x abc y", b"abc", True),
    ("at-start", b"abc,x", b"abc", True),
    ("at-end", b"x;abc", b"abc", True),
    ("inside-token", b"xabcx", b"abc", False),
    ("prefix-of-token", b"abcd", b"abc", False),
    ("second-occurrence", b"aabc abc", b"abc", True),
    ("underscore-separates", b"abc_def", b"def", True),
    ("utf8-2-byte-is-token-byte", b"abc" + E_ACUTE, b"abc", False),
    ("utf8-needle", b"caf" + E_ACUTE + b" x", b"caf" + E_ACUTE, True),
    ("utf8-3-byte", NIHON + b" x", NIHON, True),
    ("utf8-4-byte", b"x " + GRIN + b" y", GRIN, True),
    ("invalid-utf8-token", b"x \xff y", b"\xff", True),
    ("invalid-utf8-glued", b"abc\xffabc", b"abc", False),
    ("empty-haystack", b"", b"abc", False),
    ("empty-needle", b"abc", b"", False),
    ("empty-both", b"", b"", False),
    ("case-sensitive", b"ABC", b"abc", False),
    ("nul-separator", b"a\x00abc", b"abc", True),
    ("null-row", None, b"abc", None),
]


@pytest.mark.parametrize("hay,needle,want", [c[1:] for c in HAS_TOKEN], ids=[c[0] for c in HAS_TOKEN])
def test_has_token_golden(hay, needle, want):
    assert one(F.has_token, hay, needle) is want, f"hasToken({hay!r}, {needle!r})"


HAS_TOKEN_CI = [
    ("ascii-fold", b"x ABC y", b"abc", True),
    ("needle-upper", b"x abc y", b"ABC", True),
    ("mixed", b"AbC", b"aBc", True),
    ("no-unicode-fold", "\u00c9BC x".encode(), "\u00e9bc".encode(), False),
    ("unicode-bytes-exact-ascii-folded", "x \u00c9Y".encode(), "\u00c9y".encode(), True),
    ("still-bounded", b"xABCx", b"abc", False),
]


@pytest.mark.parametrize("hay,needle,want", [c[1:] for c in HAS_TOKEN_CI], ids=[c[0] for c in HAS_TOKEN_CI])
def test_has_token_case_insensitive_golden(hay, needle, want):
    assert one(F.has_token_case_insensitive, hay, needle) is want


@pytest.mark.parametrize("needle", [b"a b", b"a,b", b"-", b"a\n", b"\x00", b"_", b"a.b"],
                         ids=["space", "comma", "dash", "newline", "nul", "underscore", "dot"])
def test_has_token_separator_needle(needle):
    with pytest.raises(SkipidxError, match="Needle must not contain whitespace or separator characters"):
        F.has_token(pa.array([b"anything"]), needle)
    # Even over an empty column: ClickHouse checks the constant whatever the data.
    with pytest.raises(SkipidxError):
        F.has_token(pa.array([], pa.binary()), needle)
    got = F.has_token_or_null(pa.array([b"a b", None]), needle).to_pylist()
    assert got == [None, None], "hasTokenOrNull gives NULL for a bad needle"


LIKE = [
    ("exact", b"abc", b"abc", True),
    ("exact-miss", b"abcd", b"abc", False),
    ("percent-any", b"a", b"%", True),
    ("percent-empty", b"", b"%", True),
    ("empty-pattern-empty", b"", b"", True),
    ("empty-pattern-nonempty", b"a", b"", False),
    ("underscore-one-byte", b"ab", b"a_", True),
    ("underscore-2-byte", b"a" + E_ACUTE, b"a_", True),
    ("underscore-3-byte", b"a" + NIHON[:3], b"a_", True),
    ("underscore-4-byte", b"a" + GRIN, b"a_", True),
    ("underscore-not-two", b"a" + GRIN, b"a__", False),
    ("underscore-not-invalid-byte", b"a\xff", b"a_", False),
    ("percent-not-over-invalid", b"a\xffb", b"a%b", False),
    ("substring-over-invalid", b"a\xffb", b"%\xff%", True),
    ("invalid-pattern-latin1-dot", b"a\xff\xff", b"a_\xff", True),
    ("invalid-pattern-latin1-multibyte", b"a" + E_ACUTE + b"\xff", b"a_\xff", False),
    ("newline-underscore", b"a\nb", b"a_b", True),
    ("newline-percent", b"a\n\nb", b"a%b", True),
    ("escaped-percent", b"a%", b"a\\%", True),
    ("escaped-percent-miss", b"ab", b"a\\%", False),
    ("escaped-underscore", b"a_b", b"a\\_b", True),
    ("escaped-underscore-miss", b"axb", b"a\\_b", False),
    ("escaped-backslash", b"a\\b", b"a\\\\b", True),
    ("backslash-ordinary-is-literal", b"a\\b", b"a\\b", True),
    ("backslash-ordinary-not-escape", b"ab", b"a\\b", False),
    ("backslash-d-not-digit", b"a5", b"a\\d", False),
    ("backslash-dot-literal", b"a\\.", b"a\\.", True),
    ("backslash-dot-not-dot", b"a.", b"a\\.", False),
    ("regex-chars-literal", b"(a)[b]{c}^$.|*+?", b"(a)[b]{c}^$.|*+?", True),
    ("dot-is-literal", b"axb", b"a.b", False),
    ("substring", b"xxabcxx", b"%abc%", True),
    ("prefix", b"abcxx", b"abc%", True),
    ("suffix", b"xxabc", b"%abc", True),
    ("suffix-miss", b"xxabcx", b"%abc", False),
    ("null-row", None, b"%", None),
]


@pytest.mark.parametrize("hay,pattern,want", [c[1:] for c in LIKE], ids=[c[0] for c in LIKE])
def test_like_golden(hay, pattern, want):
    assert one(F.like, hay, pattern) is want, f"{hay!r} LIKE {pattern!r}"
    neg = one(F.like, hay, pattern, negated=True)
    assert neg is (None if want is None else not want), f"{hay!r} NOT LIKE {pattern!r}"


ILIKE = [
    ("ascii", b"ABC", b"abc", True),
    ("unicode-fold", "\u00c9A".encode(), "\u00e9a".encode(), True),
    ("unicode-fold-substring", "x\u00c9y".encode(), "%\u00e9%".encode(), True),
    ("no-sharp-s-expansion", "\u00df".encode(), b"SS", False),
    ("prefix", b"ABCdef", b"abc%", True),
]


@pytest.mark.parametrize("hay,pattern,want", [c[1:] for c in ILIKE], ids=[c[0] for c in ILIKE])
def test_ilike_golden(hay, pattern, want):
    assert one(F.like, hay, pattern, case_insensitive=True) is want


@pytest.mark.parametrize("pattern", [b"a\\", b"\\", b"%\\", b"a\\\\\\"], ids=["a", "alone", "percent", "three"])
def test_like_trailing_backslash_is_error(pattern):
    with pytest.raises(SkipidxError, match="Invalid escape sequence at the end of LIKE pattern"):
        F.like(pa.array([b"x"]), pattern)


REGEX = [
    (b"%", b"$"), (b"", b"^$"), (b"abc", b"^abc$"), (b"%abc%", b"abc"), (b"a%", b"^a"), (b"%a", b"a$"),
    (b"a_b", b"^a.b$"), (b"a%b", b"^a.*b$"), (b"a%%b", b"^a.*b$"), (b"a.b", b"^a\\.b$"),
    (b"a\\%", b"^a%$"), (b"a\\\\", b"^a\\\\$"), (b"a\\x", b"^a\\\\x$"), (b"(x)", b"^\\(x\\)$"),
]


@pytest.mark.parametrize("pattern,regex", REGEX, ids=[p.decode() or "empty" for p, _ in REGEX])
def test_like_to_regex(pattern, regex):
    assert F.like_to_regex(pattern) == regex


AFFIX = [
    ("empty-prefix", F.starts_with, b"abc", b"", True),
    ("empty-prefix-empty-row", F.starts_with, b"", b"", True),
    ("prefix", F.starts_with, b"abc", b"ab", True),
    ("prefix-bytes", F.starts_with, E_ACUTE + b"x", E_ACUTE[:1], True),
    ("prefix-longer", F.starts_with, b"ab", b"abc", False),
    ("suffix", F.ends_with, b"abc", b"bc", True),
    ("suffix-4-byte", F.ends_with, b"x" + GRIN, GRIN, True),
    ("empty-suffix", F.ends_with, b"", b"", True),
    ("null", F.ends_with, None, b"", None),
]


@pytest.mark.parametrize("fn,hay,arg,want", [c[1:] for c in AFFIX], ids=[c[0] for c in AFFIX])
def test_starts_ends_with_golden(fn, hay, arg, want):
    assert one(fn, hay, arg) is want


MSA = [
    ("one-hit", b"hello world", [b"wor"], True),
    ("none", b"hello", [b"xyz", b"abc"], False),
    ("second", b"hello", [b"xyz", b"ell"], True),
    ("empty-needle-nonempty-row", b"a", [b""], True),
    ("empty-needle-empty-row", b"", [b""], False),
    ("empty-list", b"abc", [], False),
    ("regex-chars-literal", b"a.b(c", [b"(c"], True),
    ("regex-dot-not-wild", b"axb", [b"a.b"], False),
    ("invalid-utf8", b"a\xffb", [b"\xff"], True),
    ("utf8", b"x" + GRIN, [GRIN[2:]], True),
    ("null", None, [b"a"], None),
    ("many-odd-bytes", b"x \x00\xd7 y", [b"q q", b"\x00\xd7", b"\\"], True),
    ("many-odd-bytes-miss", b"x \x00\xd7 y", [b"q q", b"\xd7\x00", b"\\", b" \n"], False),
    ("many-space", b"a b", [b"zz", b"a b"], True),
]


@pytest.mark.parametrize("hay,needles,want", [c[1:] for c in MSA], ids=[c[0] for c in MSA])
def test_multi_search_any_golden(hay, needles, want):
    assert one(F.multi_search_any, hay, needles) is want


MATCH = [
    ("dot-newline", b"a\nb", b"a.b", True),
    ("empty-regex", b"", b"", True),
    ("partial", b"xxabcxx", b"abc", True),
    ("anchor", b"xabc", b"^abc", False),
    ("dot-utf8", b"a" + E_ACUTE, b"^a.$", True),
    ("dot-not-invalid", b"a\xff", b"^a.$", False),
    ("case-flag", b"ABC", b"(?i)abc", True),
    ("null", None, b"a", None),
]


@pytest.mark.parametrize("hay,regex,want", [c[1:] for c in MATCH], ids=[c[0] for c in MATCH])
def test_match_golden(hay, regex, want):
    assert one(F.match, hay, regex) is want


def test_match_bad_regex_error():
    with pytest.raises(SkipidxError, match="RE2"):
        F.match(pa.array([], pa.binary()), b"(")


def test_lower_upper_ascii_only_and_length():
    arr = pa.array(["\u00c0BC xY", None, "", "\u00e0bc"])
    assert F.lower(arr).to_pylist() == ["\u00c0bc xy", None, "", "\u00e0bc"]
    assert F.upper(arr).to_pylist() == ["\u00c0BC XY", None, "", "\u00e0BC"]
    assert F.length(arr).to_pylist() == [7, None, 0, 4]
    assert F.length(arr).type == pa.uint64()
    sliced = pa.array([b"AA", b"Bb", b"cC"], pa.large_binary()).slice(1)
    assert F.lower(sliced).to_pylist() == [b"bb", b"cc"]


ARRAY_SHAPES = {
    "string": lambda v: pa.array([None if x is None else x.decode("utf-8", "surrogateescape") for x in v], pa.string())
    if all(x is None or _utf8(x) for x in v) else pa.array(v, pa.binary()),
    "binary": lambda v: pa.array(v, pa.binary()),
    "large_binary": lambda v: pa.array(v, pa.large_binary()),
    "chunked": lambda v: pa.chunked_array([pa.array(v[:2], pa.binary()), pa.array(v[2:], pa.binary())]),
    "sliced": lambda v: pa.array([b"junk"] + v + [b"junk"], pa.binary()).slice(1, len(v)),
    "dictionary": lambda v: pa.array(v, pa.binary()).dictionary_encode(),
    "binary_view": lambda v: pa.array(v, pa.binary_view()),
}


def _utf8(b: bytes) -> bool:
    try:
        b.decode()
        return True
    except UnicodeDecodeError:
        return False


@pytest.mark.parametrize("shape", list(ARRAY_SHAPES), ids=list(ARRAY_SHAPES))
def test_every_array_shape_gives_same_answers(shape):
    rows = [b"x abc y", None, b"abcd", b"a_c", b"A%C abc", b""]
    arr = ARRAY_SHAPES[shape](rows)
    flat = lambda r: r.to_pylist() if isinstance(r, pa.Array) else r.combine_chunks().to_pylist()
    assert flat(F.has_token(arr, b"abc")) == [True, None, False, False, True, False]
    assert flat(F.has_token(arr, b"ABC", case_insensitive=True)) == [True, None, False, False, True, False]
    assert flat(F.like(arr, b"a\\_c")) == [False, None, False, True, False, False]
    assert flat(F.like(arr, b"%abc%")) == [True, None, True, False, True, False]
    assert flat(F.starts_with(arr, b"a")) == [False, None, True, True, False, False]
    assert flat(F.multi_search_any(arr, [b"%", b"cd"])) == [False, None, True, False, True, False]
    assert flat(F.match(arr, b"^a.c")) == [False, None, True, True, False, False]
    assert flat(F.is_in(arr, [b"abcd", None])) == [False, None, True, False, False, False]
    assert flat(F.compare("<", arr, b"b")) == [False, None, True, True, True, True]
    assert isinstance(F.has_token(arr, b"abc"), pa.ChunkedArray) == isinstance(arr, pa.ChunkedArray)


COMPARE = [
    ("int-vs-uint64-max", pa.array([-1], pa.int64()), "<", 2**64 - 1, True),
    ("uint64-big-vs-negative", pa.array([2**64 - 1], pa.uint64()), ">", -1, True),
    ("int-vs-fraction-eq", pa.array([2], pa.uint8()), "=", 2.5, False),
    ("int-vs-fraction-lt", pa.array([2], pa.uint8()), "<", 2.5, True),
    ("int-vs-fraction-ge", pa.array([3], pa.uint8()), ">=", 2.5, True),
    ("uint8-vs-300", pa.array([255], pa.uint8()), "<", 300, True),
    ("uint8-vs-minus-one", pa.array([0], pa.uint8()), ">", -1, True),
    ("big-int-vs-float-exact", pa.array([2**53 + 1], pa.uint64()), "=", float(2**53), False),
    ("big-int-vs-float-gt", pa.array([2**53 + 1], pa.int64()), ">", float(2**53), True),
    ("nan-eq", pa.array([float("nan")]), "=", float("nan"), False),
    ("nan-ne", pa.array([float("nan")]), "!=", float("nan"), True),
    ("nan-lt", pa.array([float("nan")]), "<", 1, False),
    ("int-vs-nan-ne", pa.array([1], pa.int32()), "!=", float("nan"), True),
    ("float-vs-big-int", pa.array([float(2**53)]), "<", 2**53 + 1, True),
    ("string-bytewise", pa.array(["\u00e9"]), ">", "z", True),
    ("null", pa.array([None], pa.int32()), "=", 1, None),
    ("null-constant", pa.array([1], pa.int32()), "=", None, None),
    ("bool-column-true", pa.array([True]), "=", True, True),
    ("bool-column-one", pa.array([False]), "<", 1, True),
]


@pytest.mark.parametrize("arr,op,const,want", [c[1:] for c in COMPARE], ids=[c[0] for c in COMPARE])
def test_compare_golden(arr, op, const, want):
    assert F.compare(op, arr, const).to_pylist() == [want]


def test_compare_dates_with_string_literals():
    import datetime as dt
    d = pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2), None])
    assert F.compare(">", d, "2024-01-01").to_pylist() == [False, True, None]
    assert F.compare("=", d, "2024-1-2").to_pylist() == [False, True, None]
    assert F.compare("=", d, "20240102").to_pylist() == [False, True, None]
    ts = pa.array([dt.datetime(2024, 1, 1, 0, 0, 1)], pa.timestamp("s"))
    assert F.compare(">", ts, "2024-01-01").to_pylist() == [True]
    with pytest.raises(SkipidxError, match="Cannot parse date"):
        F.compare("=", d, "garbage")


IN = [
    ("null-in-list-ignored", [1, 2, None], [1, None], False, [True, False, None]),
    ("not-in-with-null", [1, 2, None], [1, None], True, [False, True, None]),
    ("only-null", [1, None], [None], False, [False, None]),
    ("not-in-only-null", [1, None], [None], True, [True, None]),
    ("out-of-range-dropped", [1, 2, 44], [1, 2.5, 300, -1], False, [True, False, False]),
    ("empty-list", [1, None], [], False, [False, None]),
]


@pytest.mark.parametrize("vals,lst,neg,want", [c[1:] for c in IN], ids=[c[0] for c in IN])
def test_in_golden(vals, lst, neg, want):
    t = pa.uint8() if "range" in str(lst) or 44 in vals else pa.int32()
    assert F.is_in(pa.array(vals, t), lst, negated=neg).to_pylist() == want


IN_TYPES = [pa.int8(), pa.uint16(), pa.int32(), pa.uint64(), pa.int64(), pa.float64(), pa.date32(),
            pa.timestamp("s"), pa.string(), pa.dictionary(pa.int32(), pa.string())]


@pytest.mark.parametrize("n_values", [1, 10, 16, 17, 40], ids=lambda n: f"{n}values")
@pytest.mark.parametrize("typ", IN_TYPES, ids=str)
@pytest.mark.parametrize("negated", [False, True], ids=["in", "not_in"])
def test_in_chunked_matches_per_row_reference(typ, n_values, negated):
    """Many chunks (some sliced, some with nulls, one empty): the answer keeps the
    chunk layout and equals a per-row reference -- for both the numpy path (few
    values on fixed-width columns) and pc.is_in (more values, other types)."""
    import datetime as dt

    rng = np.random.default_rng(n_values)
    ints = rng.integers(0, 60, 700)
    if pa.types.is_date(typ):
        py = [dt.date(2024, 1, 1) + dt.timedelta(days=int(x)) for x in ints]
    elif pa.types.is_timestamp(typ):
        py = [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=int(x)) for x in ints]
    elif pa.types.is_floating(typ):
        py = [float(x) / 2 for x in ints]
    elif pa.types.is_integer(typ):
        py = [int(x) for x in ints]
    else:
        py = [f"v{x}" for x in ints]
    py = [None if i % 13 == 5 else v for i, v in enumerate(py)]
    full = pa.array(py, typ.value_type if pa.types.is_dictionary(typ) else typ)
    if pa.types.is_dictionary(typ):
        full = full.dictionary_encode()
    cuts = [0, 0, 100, 101, 350, 700]    # an empty chunk, a one-row chunk, slices at odd offsets
    arr = pa.chunked_array([full.slice(a, b - a) for a, b in zip(cuts[:-1], cuts[1:])], type=full.type)
    wanted = [v for v in py[::37] if v is not None][:n_values]
    values = wanted + [None]
    got = F.is_in(arr, values, negated=negated)
    assert [len(c) for c in got.chunks] == [len(c) for c in arr.chunks], "chunk layout changed"
    want = [None if v is None else ((v in wanted) != negated) for v in py]
    assert got.to_pylist() == want, f"IN over {typ} with {len(wanted)} values"
    single = F.is_in(full, values, negated=negated)
    assert isinstance(single, pa.Array) and single.to_pylist() == want, "plain Array input"


def test_in_empty_chunked_array():
    arr = pa.chunked_array([], type=pa.uint64())
    assert F.is_in(arr, [1, 2]).to_pylist() == []
    assert F.is_in(arr, []).type == pa.bool_()


def test_kleene_logic_and_where_mask():
    t, f, n = True, False, None
    a = pa.array([t, t, t, f, f, f, n, n, n])
    b = pa.array([t, f, n, t, f, n, t, f, n])
    assert F.and_(a, b).to_pylist() == [t, f, n, f, f, f, n, f, n]
    assert F.or_(a, b).to_pylist() == [t, t, t, t, f, n, t, n, n]
    assert F.not_(b).to_pylist() == [f, t, n, f, t, n, f, t, n]
    assert F.where_mask(F.and_(a, b)).to_pylist() == [t, f, f, f, f, f, f, f, f]
    assert F.where_mask(pa.array([0, 2, None], pa.int64())).to_pylist() == [False, True, False]
    assert F.is_null(pa.array([1.0, None, float("nan")])).to_pylist() == [False, True, False]
    assert F.is_not_null(pa.array([1, None])).to_pylist() == [True, False]
    with pytest.raises(SkipidxError, match="Illegal type"):
        F.where_mask(pa.array(["x"]))


ARITH_TYPES = [
    ("+", pa.uint8(), pa.uint8(), pa.uint16()), ("*", pa.int32(), pa.int32(), pa.int64()),
    ("+", pa.uint64(), pa.int64(), pa.int64()), ("+", pa.float32(), pa.float32(), pa.float64()),
    ("-", pa.uint32(), pa.uint32(), pa.int64()), ("-", pa.uint64(), pa.uint64(), pa.int64()),
    ("+", pa.int8(), pa.uint8(), pa.int16()), ("%", pa.uint64(), pa.uint8(), pa.uint8()),
    ("%", pa.int64(), pa.uint64(), pa.int64()), ("%", pa.uint8(), pa.int64(), pa.uint64()),
    ("%", pa.int8(), pa.uint8(), pa.int16()), ("%", pa.float32(), pa.uint8(), pa.float64()),
    ("/", pa.int32(), pa.uint8(), pa.float64()),
]


@pytest.mark.parametrize("op,a,b,want", ARITH_TYPES, ids=[f"{a}{op}{b}" for op, a, b, _ in ARITH_TYPES])
def test_arithmetic_result_types(op, a, b, want):
    assert F.arithmetic_result_type(op, a, b) == want


def test_arithmetic_values():
    x = pa.array([7, -7, None, 0], pa.int64())
    assert F.arithmetic("%", x, 2).to_pylist() == [1, -1, None, 0]
    assert F.arithmetic("%", x, 2).type == pa.int16()
    assert F.arithmetic("/", x, 2).to_pylist() == [3.5, -3.5, None, 0.0]
    assert F.arithmetic("+", pa.array([255], pa.uint8()), pa.array([1], pa.uint8())).to_pylist() == [256]
    assert F.arithmetic("+", pa.array([2**63 - 1], pa.int64()), 1).to_pylist() == [-2**63]  # wraps
    assert F.arithmetic("%", pa.array([2**64 - 1], pa.uint64()), 3).to_pylist() == [0]
    with pytest.raises(SkipidxError, match="Division by zero"):
        F.arithmetic("%", pa.array([1], pa.int32()), pa.array([0], pa.int32()))
    with pytest.raises(SkipidxError, match="Illegal types"):
        F.arithmetic("+", pa.array(["a"]), 1)


LITERALS = [(0, pa.uint8()), (255, pa.uint8()), (256, pa.uint16()), (2**32, pa.uint64()), (-1, pa.int8()),
            (-129, pa.int16()), (-2**63, pa.int64()), (2.5, pa.float64()), ("x", pa.binary())]


@pytest.mark.parametrize("value,typ", LITERALS, ids=[repr(v) for v, _ in LITERALS])
def test_literal_types(value, typ):
    assert F.literal(value).type == typ


# ---------------------------------------------------------------- properties against simple references

_BYTES = st.binary(max_size=40) | st.lists(st.sampled_from([b"ab", b"AB", b" ", b",", b"\xc3\xa9", b"\xff", b"_",
                                                           b"a", b"b", b"%", b"\\", b"\n"]),
                                           max_size=12).map(b"".join)


def _tokens(b: bytes) -> set[bytes]:
    return set(re.findall(rb"[0-9A-Za-z\x80-\xff]+", b))


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(_BYTES, max_size=8),
       needle=st.sampled_from([b"ab", b"AB", b"a", b"\xc3\xa9", b"\xff", b"b", b"abab"]) | st.binary(min_size=1, max_size=3)
       .filter(lambda n: bool(re.fullmatch(rb"[0-9A-Za-z\x80-\xff]+", n))))
def test_has_token_equals_token_membership(rows, needle):
    got = F.has_token(pa.array(rows, pa.binary()), needle).to_pylist()
    assert got == [needle in _tokens(r) for r in rows]
    got_ci = F.has_token(pa.array(rows, pa.binary()), needle, case_insensitive=True).to_pylist()
    fold = lambda b: bytes(c + 32 if 65 <= c <= 90 else c for c in b)
    assert got_ci == [fold(needle) in {fold(t) for t in _tokens(r)} for r in rows]


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.text(alphabet="ab%_\\\n\u00e9\U0001F600", max_size=8), max_size=6),
       pattern=st.text(alphabet="ab%_\u00e9\U0001F600", max_size=6))
def test_like_without_escapes_equals_python_regex(rows, pattern):
    # Reference: % = any code points, _ = one code point, on valid UTF-8 text.
    rx = re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern), re.S)
    want = [rx.fullmatch(r) is not None for r in rows]
    got = F.like(pa.array(rows, pa.string()), pattern.encode()).to_pylist()
    assert got == want, f"pattern {pattern!r}"


@pytest.mark.parametrize("typ", [pa.binary(), pa.string(), pa.large_binary(), pa.large_string()], ids=str)
def test_lower_upper_when_the_first_offset_is_not_zero(typ):
    """pyarrow's ascii_lower writes wrong bytes for arrays whose first offset is not 0
    (a FixedString cast to String is one); lower/upper must not."""
    import numpy as np

    from skipidx.expr.kernels.strings import lower, upper

    width = np.int64 if typ in (pa.large_binary(), pa.large_string()) else np.int32
    offsets = np.array([2, 4, 7], width)
    arr = pa.Array.from_buffers(typ, 2, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"XXABcDe")])
    want = [b"ab", b"cde"] if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) else ["ab", "cde"]
    assert lower(arr).to_pylist() == want, "lower of an array with a non-zero first offset"
    up = [w.upper() for w in want]
    assert upper(arr).to_pylist() == up, "upper of an array with a non-zero first offset"
    fixed = pa.array([b"QQQQ", b"ABCD", b"EFGH"], pa.binary(4)).slice(1).cast(pa.binary())
    assert lower(fixed).to_pylist() == [b"abcd", b"efgh"], "lower of a FixedString slice cast to String"
