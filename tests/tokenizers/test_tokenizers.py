"""Built-in tokenizers: golden tables (index side and query side), Arrow input shapes,
hashes against the `xxhash` package, parameters, the registry, and `lower()`.

The ClickHouse semantics behind the golden rows are checked against chDB in
``test_tokenizers_chdb.py``; the no-false-negative invariant is a hypothesis
property in ``test_tokenizer_props.py``.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from skipidx.core.errors import SkipidxError
from skipidx.expr.index_expressions import apply_expression, ascii_lower, ascii_lower_scalar, get_expression
from skipidx.core.text_patterns import Literal, like_runs, regex_literals
from skipidx.core.tokenizer_api import TokenRequirement, Tokens, get_tokenizer, known_tokenizers, split_by_non_alpha

ALL_BYTES = bytes(range(256))

# ---------------------------------------------------------------- references


def ref_tokens(v: bytes) -> list[bytes]:
    """splitByNonAlpha, written independently of the implementation."""
    return re.findall(rb"[0-9A-Za-z\x80-\xff]+", v)


def _seq_len(c: int) -> int:
    return 2 if 0xC0 <= c < 0xE0 else 3 if 0xE0 <= c < 0xF0 else 4 if 0xF0 <= c < 0xF8 else 1


def ref_clickhouse_ngrams(v: bytes, n: int) -> list[bytes]:
    """ClickHouse's NgramsTokenizer::nextInString loop, transcribed."""
    out, pos = [], 0
    while pos < len(v):
        start, length, cps = pos, 0, 0
        while cps < n and start + length < len(v):
            length += _seq_len(v[start + length])
            cps += 1
        length = min(length, len(v) - start)
        pos += _seq_len(v[pos])
        if cps == n:
            out.append(v[start:start + length])
    return out


def ref_ngrams(v: bytes, n: int) -> list[bytes]:
    """Ours: ClickHouse's walk from the start and from every byte that can begin a code
    point, each position once, in position order."""
    positions: set[int] = set()
    for s in [0] + [p for p, c in enumerate(v) if c < 0x80 or c >= 0xC0]:
        p = s
        while p < len(v) and p not in positions:
            positions.add(p)
            p += _seq_len(v[p])
    out = []
    for p in sorted(positions):
        q, cps = p, 0
        while cps < n and q < len(v):
            q += _seq_len(v[q])
            cps += 1
        if cps == n:
            out.append(v[p:min(q, len(v))])
    return out


def as_pairs(tk: Tokens) -> list[tuple[int, bytes]]:
    return list(zip(tk.rows.tolist(), tk.to_pylist()))


# ---------------------------------------------------------------- token: golden

TOKEN_GOLDEN = [
    ("ascii", b"Hello, world! foo_bar-baz.qux/1:2", [b"Hello", b"world", b"foo", b"bar", b"baz", b"qux", b"1", b"2"]),
    ("utf8-2byte", "naïve café".encode(), ["naïve".encode(), "café".encode()]),
    ("utf8-3byte", "日本語 テキスト".encode(), ["日本語".encode(), "テキスト".encode()]),
    ("utf8-fullwidth-comma-joins", "a，b".encode(), ["a，b".encode()]),
    ("utf8-nbsp-joins", "a\u00a0b".encode(), ["a\u00a0b".encode()]),
    ("utf8-4byte", "😀x 😀".encode(), ["😀x".encode(), "😀".encode()]),
    ("invalid-utf8", b"\xff\xfe ab\x80", [b"\xff\xfe", b"ab\x80"]),
    ("nul-and-del-split", b"a\x00b\x7fc", [b"a", b"b", b"c"]),
    ("separators-only", b" .,;-_/\t\n:", []),
    ("empty", b"", []),
    ("leading-trailing", b"  x  ", [b"x"]),
    ("byte-table", ALL_BYTES, [b"0123456789", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                               b"abcdefghijklmnopqrstuvwxyz", bytes(range(0x80, 0x100))]),
]


@pytest.mark.parametrize("value,expected", [g[1:] for g in TOKEN_GOLDEN], ids=[g[0] for g in TOKEN_GOLDEN])
def test_token_golden(value, expected):
    tok = get_tokenizer("token")
    got = tok.tokenize(pa.array([value], pa.binary())).to_pylist()
    assert got == expected, f"tokens of {value!r}"
    assert tok.value_tokens(value) == expected, "query-side tokens must equal index-side tokens"
    assert split_by_non_alpha(value) == expected
    assert got == ref_tokens(value)


def test_token_byte_table_has_exactly_four_tokens():
    tk = get_tokenizer("token").tokenize(pa.array([ALL_BYTES], pa.binary()))
    assert len(tk) == 4
    assert tk.to_pylist()[3] == bytes(range(0x80, 0x100)), "every byte >= 0x80 belongs to a token"


# ---------------------------------------------------------------- ngram: golden

# (id, n, value, ClickHouse's grams, ours) — ours adds grams only on invalid UTF-8,
# where a lead byte swallows following bytes that can begin a code point.
NGRAM_GOLDEN = [
    ("ascii-3", 3, b"hello", [b"hel", b"ell", b"llo"], None),
    ("shorter-than-n", 3, b"ab", [], None),
    ("exactly-n", 3, b"abc", [b"abc"], None),
    ("empty", 2, b"", [], None),
    ("n1-utf8", 1, "aé😀".encode(), [b"a", "é".encode(), "😀".encode()], None),
    ("utf8-2byte", 3, "café!".encode(), [b"caf", "afé".encode(), "fé!".encode()], None),
    ("utf8-3byte", 2, "日本語テ".encode(), ["日本".encode(), "本語".encode(), "語テ".encode()], None),
    ("utf8-4byte", 2, "😀ab".encode(), ["😀a".encode(), b"ab"], None),
    ("separators-only", 2, b" .-", [b" .", b".-"], None),
    ("invalid-stray-bytes", 2, b"ab\xffc\xc3", [b"ab", b"b\xff", b"\xffc", b"c\xc3"], None),
    ("invalid-truncated-4byte", 2, b"ab\xf0c", [b"ab", b"b\xf0c"], None),
    ("invalid-f8-is-one-byte", 2, b"a\xf8bc", [b"a\xf8", b"\xf8b", b"bc"], None),
    ("invalid-continuation-is-one", 2, b"a\xbfbc", [b"a\xbf", b"\xbfb", b"bc"], None),
    ("latin1-swallow", 3, b"K\xf6ln x", [b"K\xf6ln x"], [b"K\xf6ln x", b"ln ", b"n x"]),
    ("lead-swallows-all", 2, b"\xf0abc", [], [b"ab", b"bc"]),
]


@pytest.mark.parametrize("n,value,clickhouse,ours", [g[1:] for g in NGRAM_GOLDEN], ids=[g[0] for g in NGRAM_GOLDEN])
def test_ngram_golden(n, value, clickhouse, ours):
    expected = clickhouse if ours is None else ours
    tok = get_tokenizer("ngram", n=n)
    got = tok.tokenize(pa.array([value], pa.binary())).to_pylist()
    assert ref_clickhouse_ngrams(value, n) == clickhouse, "the golden row itself must follow ClickHouse's loop"
    assert got == expected, f"{n}-grams of {value!r}"
    assert set(clickhouse) <= set(got), "every ClickHouse gram is indexed"
    assert tok.value_tokens(value) == expected
    assert got == ref_ngrams(value, n)


def test_ngram_equals_clickhouse_on_valid_utf8():
    text = "Ünïcödé ✓ 日本 😀 — ascii, too".encode()
    for n in range(1, 6):
        assert get_tokenizer("ngram", n=n).tokenize(pa.array([text], pa.binary())).to_pylist() == \
            ref_clickhouse_ngrams(text, n)


# ---------------------------------------------------------------- value: golden

VALUE_GOLDEN = [
    ("string", pa.array(["a", None, "bc"]), [b"a", b"bc"]),
    ("binary", pa.array([b"\x00\xff"], pa.binary()), [b"\x00\xff"]),
    ("int8-widened", pa.array([-1, None, 3], pa.int8()), [b"\xff\xff\xff\xff", b"\x03\x00\x00\x00"]),
    ("uint16-widened", pa.array([65535], pa.uint16()), [b"\xff\xff\x00\x00"]),
    ("int64", pa.array([2**40], pa.int64()), [(2**40).to_bytes(8, "little")]),
    ("float64", pa.array([1.0]), [b"\x00\x00\x00\x00\x00\x00\xf0?"]),
    ("date32", pa.array([1], pa.date32()), [b"\x01\x00\x00\x00"]),
    ("dictionary", pa.array(["x", "y", "x"]).dictionary_encode(), [b"x", b"y", b"x"]),
    ("timestamp-s-as-ms", pa.array([2, None], pa.timestamp("s")), [(2000).to_bytes(8, "little")]),
    ("decimal-be-min-bytes", pa.array([1, -1], pa.decimal128(5, 0)), [b"\x00\x00\x01", b"\xff\xff\xff"]),
    ("sliced-int32", pa.array([1, 2, None, 4], pa.int32()).slice(1), [b"\x02\x00\x00\x00", b"\x04\x00\x00\x00"]),
    ("list-elements", pa.array([["a", "b"], None, ["c"]]), [b"a", b"b", b"c"]),
]


@pytest.mark.parametrize("arr,expected", [g[1:] for g in VALUE_GOLDEN], ids=[g[0] for g in VALUE_GOLDEN])
def test_value_golden(arr, expected):
    from skipidx.core.hashing import parquet_xxh64

    tok = get_tokenizer("value")
    tk = tok.tokenize(arr)
    assert tk.to_pylist() == expected
    rows, hashes = tok.hash_column(arr, 0)
    assert rows.tolist() == tk.rows.tolist()
    assert hashes.tolist() == [xxhash.xxh64_intdigest(t) for t in expected]
    flat = arr.flatten() if pa.types.is_list(arr.type) else arr
    assert np.array_equal(hashes, parquet_xxh64(flat)), "seed 0 must be the Parquet bloom hash"
    rows7, h7 = tok.hash_column(arr, 7)
    assert h7.tolist() == [xxhash.xxh64_intdigest(t, 7) for t in expected]


def test_value_rejects_bool():
    with pytest.raises(SkipidxError):
        get_tokenizer("value").hash_column(pa.array([True, False]))


# ---------------------------------------------------------------- Arrow input shapes

_BASE = ["Hello world", None, "foo-bar baz", "", "x", "ünï cödé", None, "a.b.c"]


def _shapes():
    base = pa.array(_BASE)
    lst = pa.array([["A b", None], None, [], ["c-d"], ["e"]])
    return [
        ("string", base),
        ("sliced", base.slice(2, 5)),
        ("sliced-tail", base[5:]),
        ("large_string", base.cast(pa.large_string())),
        ("binary", base.cast(pa.binary())),
        ("large_binary-sliced", base.cast(pa.large_binary()).slice(1, 4)),
        ("string_view", base.cast(pa.string_view())),
        ("binary_view", base.cast(pa.binary_view())),
        ("dictionary", base.dictionary_encode()),
        ("dictionary-sliced", base.dictionary_encode().slice(3, 4)),
        ("chunked", pa.chunked_array([base[:3], base[3:3], base[3:]])),
        ("chunked-empty", pa.chunked_array([], pa.string())),
        ("list", lst),
        ("list-sliced", lst.slice(1, 4)),
        ("large_list", lst.cast(pa.large_list(pa.string()))),
        ("fixed_size_binary", pa.array([b"ab-c", None, b"xyz1"], pa.binary(4)).slice(1)),
        ("all-null", pa.array([None, None], pa.string())),
        ("null-type", pa.array([None, None])),
        ("empty", pa.array([], pa.string())),
    ]


def _reference_pairs(arr, fn) -> list[tuple[int, bytes]]:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    out = []
    for i, v in enumerate(arr.to_pylist()):
        vals = v if isinstance(v, list) else [v]
        for x in vals:
            if x is None:
                continue
            x = x.encode() if isinstance(x, str) else x
            out += [(i, t) for t in fn(x)]
    return out


SHAPES = _shapes()


@pytest.mark.parametrize("arr", [s[1] for s in SHAPES], ids=[s[0] for s in SHAPES])
@pytest.mark.parametrize("name,params,ref", [
    ("token", {}, ref_tokens),
    ("ngram", {"n": 2}, lambda v: ref_ngrams(v, 2)),
    ("ngram", {"n": 4}, lambda v: ref_ngrams(v, 4)),
], ids=["token", "ngram2", "ngram4"])
def test_input_shapes(arr, name, params, ref):
    tok = get_tokenizer(name, **params)
    expected = _reference_pairs(arr, ref)
    tk = tok.tokenize(arr)
    assert as_pairs(tk) == expected
    for seed in (0, 12345, 2**64 - 1):
        rows, hashes = tok.hash_column(arr, seed)
        assert rows.dtype == np.int64 and hashes.dtype == np.uint64
        assert rows.tolist() == [r for r, _ in expected]
        assert hashes.tolist() == [xxhash.xxh64_intdigest(t, seed) for _, t in expected], f"seed {seed}"


@pytest.mark.parametrize("seed", [0, 977, 2**64 - 1])
def test_token_hash_every_length_and_buffer_end(seed):
    # tokens of length 1..70 (the short-token XXH64 path and the long one), each both
    # in the middle of the values buffer and as its very last bytes
    alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\xc3\xa9"
    vals = []
    for n in range(1, 71):
        tok = (alphabet * 3)[n:2 * n]
        vals += [b"-" + tok + b"-", tok]
    tok = get_tokenizer("token")
    for arr in [pa.array(vals, pa.binary()), pa.array(vals[-1:], pa.binary())]:
        expected = [t for v in arr.to_pylist() for t in ref_tokens(v)]
        rows, hashes = tok.hash_column(arr, seed)
        assert hashes.tolist() == [xxhash.xxh64_intdigest(t, seed) for t in expected]


def test_many_rows_grow_buffers():
    # dense tokens (1 per 2 bytes) exceed the first allocation estimate several times
    rng = np.random.default_rng(7)
    vals = [" ".join("abcdefgh"[i] for i in rng.integers(0, 8, size=int(k))) for k in rng.integers(0, 300, size=2000)]
    arr = pa.array(vals)
    for name, params, ref in [("token", {}, ref_tokens), ("ngram", {"n": 3}, lambda v: ref_ngrams(v, 3))]:
        tok = get_tokenizer(name, **params)
        expected = _reference_pairs(arr, ref)
        rows, hashes = tok.hash_column(arr, 1)
        assert rows.tolist() == [r for r, _ in expected]
        assert hashes.tolist() == [xxhash.xxh64_intdigest(t, 1) for _, t in expected]


@pytest.mark.parametrize("name,params", [("token", {}), ("ngram", {"n": 3})], ids=["token", "ngram"])
@pytest.mark.parametrize("arr", [
    pa.array([1, 2]), pa.array([1.5]), pa.array([True]), pa.array([{"a": "x"}]),
    pa.array([], pa.int64()), pa.array([], pa.list_(pa.int32())),
    pa.array([1, 2]).dictionary_encode()[:0], pa.chunked_array([], pa.int8()),
    pa.array([[1]], pa.list_(pa.int64())),
], ids=["int", "float", "bool", "struct", "empty-int", "empty-list-int", "empty-dict-int",
        "chunked-no-chunks-int", "list-int"])
def test_text_tokenizers_reject_non_strings(name, params, arr):
    tok = get_tokenizer(name, **params)
    with pytest.raises(SkipidxError, match="String/binary"):
        tok.hash_column(arr)
    with pytest.raises(SkipidxError, match="String/binary"):
        tok.tokenize(arr)


def test_non_arrow_input_is_an_error():
    with pytest.raises(SkipidxError):
        get_tokenizer("token").hash_column(42)


# ---------------------------------------------------------------- parameters and registry


def test_known_tokenizers_and_versions():
    names = known_tokenizers()
    assert {"token", "ngram", "value"} <= set(names)
    for name in ("token", "ngram", "value"):
        tok = get_tokenizer(name)
        assert tok.name == name and isinstance(tok.version, str) and tok.version


def test_unknown_tokenizer_lists_known():
    with pytest.raises(SkipidxError, match=r"unknown tokenizer 'nope'.*ngram.*token.*value"):
        get_tokenizer("nope")


@pytest.mark.parametrize("params,match", [
    ({"n": 0}, "between 1 and 255"),
    ({"n": -3}, "between 1 and 255"),
    ({"n": 256}, "between 1 and 255"),
    ({"n": "3"}, "must be an integer"),
    ({"n": 2.0}, "must be an integer"),
    ({"n": True}, "must be an integer"),
    ({"n": 3, "m": 1}, "unknown parameter"),
], ids=["zero", "negative", "too-large", "string", "float", "bool", "extra"])
def test_ngram_bad_params(params, match):
    with pytest.raises(SkipidxError, match=match):
        get_tokenizer("ngram", **params)


def test_ngram_params_roundtrip():
    tok = get_tokenizer("ngram", n=np.int64(4))
    assert tok.params == {"n": 4} and isinstance(tok.params["n"], int)
    assert get_tokenizer("ngram", **tok.params).n == 4
    assert get_tokenizer("ngram").n == 3


@pytest.mark.parametrize("name", ["token", "value"])
def test_parameterless_tokenizers_reject_params(name):
    with pytest.raises(SkipidxError, match="takes no parameters"):
        get_tokenizer(name, n=3)


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "0", True], ids=["neg", "2^64", "float", "str", "bool"])
@pytest.mark.parametrize("name", ["token", "ngram", "value"])
def test_bad_seed(name, seed):
    with pytest.raises(SkipidxError, match="seed"):
        get_tokenizer(name).hash_column(pa.array(["a"]), seed)


# ---------------------------------------------------------------- query side: token

T = TokenRequirement


def _r(*alts, negated=False):
    return T(tuple(tuple(a) for a in alts), negated)


TOKEN_REQ = [
    ("eq-two-tokens", "equals", (b"foo bar",), {}, _r([b"foo", b"bar"])),
    ("eq-no-tokens", "equals", (b"...",), {}, None),
    ("eq-dup-tokens", "equals", (b"a a b",), {}, _r([b"a", b"b"])),
    ("ne-negated", "notEquals", (b"foo",), {}, _r([b"foo"], negated=True)),
    ("ne-alias", "!=", (b"foo",), {}, _r([b"foo"], negated=True)),
    ("eq-str-accepted", "equals", ("foo",), {}, _r([b"foo"])),
    ("eq-non-string", "equals", (5,), {}, None),
    ("in-any", "in", ((b"a b", b"c"),), {}, _r([b"a", b"b"], [b"c"])),
    ("in-null-member", "in", ((b"a", None),), {}, None),
    ("in-tokenless-member", "in", ((b"a", b"--"),), {}, None),
    ("in-empty", "in", ((),), {}, None),
    ("notin-negated", "notIn", ((b"a",),), {}, _r([b"a"], negated=True)),
    ("hasToken", "hasToken", (b"foo",), {}, _r([b"foo"])),
    ("hasToken-utf8", "hasToken", ("café".encode(),), {}, _r(["café".encode()])),
    ("hasToken-empty", "hasToken", (b"",), {}, None),
    ("hasTokenOrNull-separator", "hasTokenOrNull", (b"foo bar",), {}, _r([b"foo", b"bar"])),
    ("hasTokenCI-raw-index", "hasTokenCaseInsensitive", (b"FoO",), {}, None),
    ("hasTokenCI-lower-index", "hasTokenCaseInsensitive", (b"FoO",), {"expr": "lower"}, _r([b"foo"])),
    ("hasTokenCIOrNull-lower", "hasTokenCaseInsensitiveOrNull", (b"A-B",), {"expr": "lower"}, _r([b"a", b"b"])),
    ("has", "has", (b"x y",), {}, _r([b"x", b"y"])),
    ("like-both-wild", "like", (b"%foo bar%",), {}, None),
    ("like-middle-token", "like", (b"%foo bar baz%",), {}, _r([b"bar"])),
    ("like-prefix", "like", (b"foo bar%",), {}, _r([b"foo"])),
    ("like-suffix", "like", (b"%foo bar",), {}, _r([b"bar"])),
    ("like-no-wildcards", "like", (b"foo bar",), {}, _r([b"foo", b"bar"])),
    ("like-underscore-poisons", "like", (b"a_b c d_e",), {}, _r([b"c"])),
    ("like-escaped-percent-separates", "like", (b"x foo\\%bar y%",), {}, _r([b"x", b"foo", b"bar"])),
    ("like-escaped-underscore", "like", (b"%a\\_b c%",), {}, _r([b"b"])),
    ("like-backslash-literal", "like", (b"ab\\cd %",), {}, _r([b"ab", b"cd"])),
    ("like-escaped-backslash", "like", (b"ab\\\\cd %",), {}, _r([b"ab", b"cd"])),
    ("like-only-wildcards", "like", (b"%_%",), {}, None),
    ("notlike-negated", "notLike", (b"%a b c%",), {}, _r([b"b"], negated=True)),
    ("startsWith", "startsWith", (b"foo bar",), {}, _r([b"foo"])),
    ("startsWith-one-token", "startsWith", (b"foo",), {}, None),
    ("startsWith-trailing-sep", "startsWith", (b"foo ",), {}, _r([b"foo"])),
    ("endsWith", "endsWith", (b"foo bar",), {}, _r([b"bar"])),
    ("msa-any", "multiSearchAny", ((b" foo ", b"x bar y"),), {}, _r([b"foo"], [b"bar"])),
    ("msa-tokenless-needle", "multiSearchAny", ((b" foo ", b"bar"),), {}, None),
    ("msa-empty", "multiSearchAny", ((),), {}, None),
    ("match-anchored", "match", (rb"^foo .* bar$",), {}, _r([b"foo", b"bar"])),
    ("match-inner", "match", (rb"x=1 (err|warn) y=2",), {}, _r([b"1", b"err", b"y"], [b"1", b"warn", b"y"])),
    ("match-edges-only", "match", (rb"foo.*bar",), {}, None),
    ("match-case-insensitive", "match", (rb"(?i) foo ",), {}, None),
    ("match-bad-regex", "match", (rb"(",), {}, None),
    ("match-optional-group", "match", (rb"^a (b )?c d$",), {}, _r([b"a", b"d"])),
    ("hasAnyTokens-array", "hasAnyTokens", ((b"foo", b"bar baz"),), {}, _r([b"foo"])),
    ("hasAnyTokens-string", "hasAnyTokens", (b"foo bar",), {}, _r([b"foo"], [b"bar"])),
    ("hasAnyTokens-none-valid", "hasAnyTokens", ((b"a b", b""),), {}, None),
    ("hasAllTokens-array", "hasAllTokens", ((b"foo", b"bar"),), {}, _r([b"foo", b"bar"])),
    ("hasAllTokens-empty", "hasAllTokens", ((),), {}, None),
    ("hasAny-array-elements", "hasAny", ((b"a b", b"c"),), {}, _r([b"a", b"b"], [b"c"])),
    ("hasAll-array-elements", "hasAll", ((b"a b", b"c"),), {}, _r([b"a", b"b", b"c"])),
    ("hasAll-empty", "hasAll", ((),), {}, None),
    ("unknown-function", "less", (b"x",), {}, None),
    ("no-args", "equals", (), {}, None),
]


@pytest.mark.parametrize("func,args,kw,expected", [g[1:] for g in TOKEN_REQ], ids=[g[0] for g in TOKEN_REQ])
def test_token_requirement(func, args, kw, expected):
    assert get_tokenizer("token").requirement(func, args, pa.string(), **kw) == expected


@pytest.mark.parametrize("func", ["hasToken", "hasTokenCaseInsensitive"])
@pytest.mark.parametrize("needle", [b"foo bar", b"a-b", b"x.", b"\x00"], ids=["space", "dash", "dot", "nul"])
def test_hastoken_needle_with_separator_is_an_error(func, needle):
    with pytest.raises(SkipidxError, match="Needle must not contain whitespace or separator characters"):
        get_tokenizer("token").requirement(func, (needle,), pa.string(), expr="lower")


# ---------------------------------------------------------------- query side: ngram

NGRAM_REQ = [
    ("eq", "equals", (b"hello",), _r([b"hel", b"ell", b"llo"])),
    ("eq-short", "equals", (b"hi",), None),
    ("like-inner", "like", (b"%hello%",), _r([b"hel", b"ell", b"llo"])),
    ("like-split-by-wildcards", "like", (b"%he%llo_x%",), _r([b"llo"])),
    ("like-escaped-percent", "like", (b"%ab\\%cd%",), _r([b"ab%", b"b%c", b"%cd"])),
    ("like-escaped-backslash", "like", (b"%a\\\\b%",), _r([b"a\\b"])),
    ("like-backslash-literal", "like", (b"%a\\xb%",), _r([b"a\\x", b"\\xb"])),
    ("startsWith-utf8", "startsWith", ("héllo".encode(),), _r(["hél".encode(), "éll".encode(), b"llo"])),
    ("msa-leading-continuation", "multiSearchAny", ((b"\xa9abc",),), _r([b"abc"])),
    ("msa-truncated-tail", "multiSearchAny", ((b"abc\xc3",),), _r([b"abc"])),
    ("endsWith-truncated-tail", "endsWith", (b"abc\xc3",), _r([b"abc", b"bc\xc3"])),
    ("hasToken", "hasToken", (b"hello",), _r([b"hel", b"ell", b"llo"])),
    ("hasToken-truncated-tail", "hasToken", (b"abc\xc0",), _r([b"abc"])),
    ("match", "match", (rb"hello.*world",), _r([b"hel", b"ell", b"llo", b"wor", b"orl", b"rld"])),
    ("in-short-member", "in", ((b"abc", b"xy"),), None),
    ("notin", "notIn", ((b"abc",),), _r([b"abc"], negated=True)),
    ("hasAnyTokens", "hasAnyTokens", ((b"abcd", b"xyz"),), _r([b"abc", b"bcd"], [b"xyz"])),
]


@pytest.mark.parametrize("func,args,expected", [g[1:] for g in NGRAM_REQ], ids=[g[0] for g in NGRAM_REQ])
def test_ngram_requirement(func, args, expected):
    assert get_tokenizer("ngram", n=3).requirement(func, args, pa.string()) == expected


# ---------------------------------------------------------------- query side: value

VALUE_REQ = [
    ("eq-string", "equals", (b"abc",), pa.string(), _r([b"abc"])),
    ("eq-dictionary", "equals", (b"abc",), pa.dictionary(pa.int32(), pa.string()), _r([b"abc"])),
    ("eq-int16", "equals", (7,), pa.int16(), _r([b"\x07\x00\x00\x00"])),
    ("eq-out-of-range", "equals", (70000,), pa.int16(), None),
    ("eq-float-zero-both-signs", "equals", (0.0,), pa.float64(),
     _r([b"\x00" * 8], [b"\x00" * 7 + b"\x80"])),
    ("eq-nan", "equals", (float("nan"),), pa.float64(), None),
    ("ne", "notEquals", (b"x",), pa.string(), _r([b"x"], negated=True)),
    ("in", "in", ((1, 2),), pa.int64(), _r([(1).to_bytes(8, "little")], [(2).to_bytes(8, "little")])),
    ("in-null", "in", ((1, None),), pa.int64(), None),
    ("like-no-wildcards", "like", (b"a\\%b",), pa.string(), _r([b"a%b"])),
    ("like-wildcards", "like", (b"a%",), pa.string(), None),
    ("like-on-int", "like", (b"1",), pa.int64(), None),
    ("hasAny", "hasAny", ((b"a", b"b"),), pa.list_(pa.string()), _r([b"a"], [b"b"])),
    ("hasAll", "hasAll", ((b"a", b"b"),), pa.list_(pa.string()), _r([b"a", b"b"])),
    ("hasAll-float-zero-dropped", "hasAll", ((0.0, 1.0),), pa.list_(pa.float64()),
     _r([b"\x00" * 6 + b"\xf0?"])),
    ("hasToken", "hasToken", (b"abc",), pa.string(), None),
    ("startsWith", "startsWith", (b"abc",), pa.string(), None),
]


@pytest.mark.parametrize("func,args,vt,expected", [g[1:] for g in VALUE_REQ], ids=[g[0] for g in VALUE_REQ])
def test_value_requirement(func, args, vt, expected):
    assert get_tokenizer("value").requirement(func, args, vt) == expected


# ---------------------------------------------------------------- LIKE runs and regex literals

LIKE_RUNS = [
    ("plain", b"foo", [Literal(b"foo", True, True)]),
    ("wildcards", b"%foo\\_bar%baz", [Literal(b"foo_bar"), Literal(b"baz", False, True)]),
    ("backslash-before-other", b"a\\.b%", [Literal(b"a\\.b", True, False)]),
    ("escaped-backslash", b"a\\\\%", [Literal(b"a\\", True, False)]),
    ("trailing-backslash", b"a\\", [Literal(b"a\\", True, True)]),
    ("only-wildcards", b"%_", []),
]


@pytest.mark.parametrize("pattern,expected", [g[1:] for g in LIKE_RUNS], ids=[g[0] for g in LIKE_RUNS])
def test_like_runs(pattern, expected):
    assert like_runs(pattern) == expected


def L(t, s=False, e=False):
    return Literal(t, s, e)


REGEX = [
    ("two-literals", rb"foo.*bar", [[L(b"foo"), L(b"bar")]]),
    ("alternation-multiplies", rb" (err|warn)ing ", [[L(b" erring ")], [L(b" warning ")]]),
    ("char-class-multiplies", rb"[Ee]rr", [[L(b"Err")], [L(b"err")]]),
    ("anchors", rb"^abc def$", [[L(b"abc def", True, True)]]),
    ("top-alternation", rb"a|b.*", [[L(b"a")], [L(b"b")]]),
    ("optional", rb"ab?c", [[L(b"a"), L(b"c")]]),
    ("plus-keeps-body", rb"x(ab)+y", [[L(b"x"), L(b"ab"), L(b"y")]]),
    ("escape-is-utf8", rb"\xff", [[L("ÿ".encode())]]),
    ("empty-branch", rb"(|x)", None),
    ("case-insensitive", rb"(?i)abc", None),
    ("multiline", rb"(?m)^abc", None),
    ("posix-class", rb"[[:alpha:]]x", None),
    ("parse-error", rb"(", None),
    ("invalid-utf8-pattern", b"\xffabc", None),
    ("only-classes", rb"\d+\s*", None),
]


@pytest.mark.parametrize("pattern,expected", [g[1:] for g in REGEX], ids=[g[0] for g in REGEX])
def test_regex_literals(pattern, expected):
    assert regex_literals(pattern) == expected


# ---------------------------------------------------------------- lower()

LOWER_INPUTS = [
    ("string", pa.array(["HeLLo ÀB", None, "XYZ", ""])),
    ("sliced", pa.array(["AA", "Bb", None, "CC"]).slice(1, 3)),
    ("large_binary", pa.array([b"A\xffZ", None], pa.large_binary())),
    ("string_view", pa.array(["AbC", None], pa.string_view())),
    ("fixed_size_binary", pa.array([b"AB", None, b"cD"], pa.binary(2)).slice(1)),
    ("dictionary", pa.array(["AB", "ab", None, "AB"]).dictionary_encode()),
    ("chunked", pa.chunked_array([pa.array(["A"]), pa.array(["B", None])])),
    ("list", pa.array([["AB", None], None, ["Cd"]]).slice(1)),
]


def _py_lower(v):
    if v is None:
        return None
    if isinstance(v, list):
        return [_py_lower(x) for x in v]
    if isinstance(v, str):
        return v.encode().lower().decode()
    return v.lower()


@pytest.mark.parametrize("arr", [g[1] for g in LOWER_INPUTS], ids=[g[0] for g in LOWER_INPUTS])
def test_lower(arr):
    out = apply_expression("lower", arr)
    assert out.type == arr.type
    if isinstance(out, pa.Array):
        out.validate(full=True)
    assert out.to_pylist() == [_py_lower(v) for v in arr.to_pylist()]


def test_lower_keeps_non_ascii_and_rejects_numbers():
    assert ascii_lower(pa.array(["ÀÉ"])).to_pylist() == ["ÀÉ"], "lower is ASCII-only, as ClickHouse's lower"
    assert ascii_lower_scalar(b"AbC\xc3\x89") == b"abc\xc3\x89"
    assert ascii_lower_scalar((b"A", None)) == (b"a", None)
    with pytest.raises(SkipidxError, match="String"):
        ascii_lower(pa.array([1]))
    with pytest.raises(SkipidxError, match="String"):
        ascii_lower_scalar(3)


def test_expression_registry():
    assert get_expression(None).apply(pa.array(["A"])).to_pylist() == ["A"]
    assert get_expression("LOWER").sql("msg") == "lower(msg)"
    assert get_expression(None).sql("msg") == "msg"
    with pytest.raises(SkipidxError, match="unknown index expression function 'upper'"):
        get_expression("upper")


def test_lower_then_token_index_answers_case_insensitive():
    tok = get_tokenizer("token")
    col = apply_expression("lower", pa.array(["Connection REFUSED by Host"]))
    have = set(tok.tokenize(col).to_pylist())
    req = tok.requirement("hasTokenCaseInsensitive", (b"Refused",), pa.string(), expr="lower")
    assert any(set(alt) <= have for alt in req.any_of)
