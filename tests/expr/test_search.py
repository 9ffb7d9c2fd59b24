"""skipidx.expr.kernels._search (whole-buffer substring / hasToken / multiSearchAny) vs per-row references.

The oracle is plain Python per row: ``needle in row`` for substrings, a
find-every-occurrence loop with an explicit separator check for hasToken, and
``any(...)`` for multiSearchAny. Rows come from small alphabets (so needles
occur often, at row edges, across row boundaries, inside other tokens), from
UTF-8 and invalid bytes, and as long rows so the 64-wide vector filter and the
16-wide second stage both run. Arrays are also sliced (first offset != 0, bytes
around the slice that must not match) and large (int64 offsets).
"""
from __future__ import annotations

import importlib
import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skipidx.expr.kernels import _search as S
from skipidx.expr.kernels._arrow import _offsets_data

# numba loaded: `_search` takes the numba kernels, the code under test (a process without numba
# answers small inputs by `_search_np`, which test_frequent_needles_equal_reference compares with them)
importlib.import_module("numba")

TOKEN_BYTES = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") | frozenset(range(0x80, 0x100))
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


def ref_contains(row: bytes, needle: bytes, ci: bool = False) -> bool:
    if ci:
        row, needle = row.translate(_LOWER), needle.translate(_LOWER)
    return needle in row


def ref_token(row: bytes, needle: bytes, ci: bool = False) -> bool:
    """hasToken by hand: some occurrence bounded by a separator or the row's edge on both sides."""
    if not needle:
        return False
    if ci:
        row, needle = row.translate(_LOWER), needle.translate(_LOWER)
    i = row.find(needle)
    while i >= 0:
        j = i + len(needle)
        if (i == 0 or row[i - 1] not in TOKEN_BYTES) and (j == len(row) or row[j] not in TOKEN_BYTES):
            return True
        i = row.find(needle, i + 1)
    return False


def ref_any(row: bytes, needles: list[bytes]) -> bool:
    # multiSearchAny: the empty needle matches any non-empty row (ClickHouse).
    return any((n in row) if n else len(row) > 0 for n in needles)


def od(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    return _offsets_data(arr)


def shapes(rows: list[bytes], pad: bytes = b"") -> dict[str, pa.Array]:
    """The same rows as binary, large_string-ish large_binary, and a slice out of a padded array.

    The padding rows around the slice are built to hold the needles, so a
    search that strays outside offsets[0]..offsets[-1] gives a wrong answer.
    """
    padded = pa.array([pad] + rows + [pad], pa.binary())
    return {
        "binary": pa.array(rows, pa.binary()),
        "large": pa.array(rows, pa.large_binary()),
        "sliced": padded.slice(1, len(rows)),
    }


def check(rows: list[bytes], needle: bytes, ci: bool) -> None:
    for name, arr in shapes(rows, pad=needle * 2 + b" " + needle).items():
        # "binary": Arrow's own int32 offsets (as the string functions pass them); the others int64
        o, d = _offsets_data(arr, native=True) if name == "binary" else od(arr)
        assert o.dtype == (np.int32 if name == "binary" else np.int64)
        got_c = S.contains_rows(o, d, needle, case_insensitive=ci)
        want_c = [ref_contains(r, needle, ci) for r in rows]
        bad = [i for i in range(len(rows)) if got_c[i] != want_c[i]]
        assert not bad, f"contains {needle!r} ci={ci} [{name}] rows {[(rows[i], got_c[i]) for i in bad[:3]]}"
        if all(b in TOKEN_BYTES for b in needle):
            got_t = S.token_rows(o, d, needle, case_insensitive=ci)
            want_t = [ref_token(r, needle, ci) for r in rows]
            bad = [i for i in range(len(rows)) if got_t[i] != want_t[i]]
            assert not bad, f"token {needle!r} ci={ci} [{name}] rows {[(rows[i], got_t[i]) for i in bad[:3]]}"


# Small alphabet: letters in both cases, digits, separators, a 2-byte UTF-8 char, a stray byte.
ALPHABET = [b"a", b"b", b"A", b"B", b"c", b"0", b" ", b"-", b".", b"_", b"\xc3\xa9", b"\xff", b"\n"]
piece = st.sampled_from(ALPHABET)
row_st = st.lists(piece, max_size=12).map(b"".join)
long_row_st = st.lists(piece, min_size=60, max_size=300).map(b"".join)
needle_st = st.lists(st.sampled_from(ALPHABET[:6] + [b"\xc3\xa9", b"-", b" "]), min_size=1, max_size=5).map(b"".join)
token_needle_st = st.lists(st.sampled_from([b"a", b"b", b"A", b"B", b"c", b"0", b"\xc3\xa9", b"\xff"]),
                           min_size=1, max_size=4).map(b"".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row_st, max_size=40), needle=needle_st, ci=st.booleans())
def test_short_rows_equal_reference(rows, needle, ci):
    check(rows, needle, ci)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row_st, max_size=40), needle=token_needle_st, ci=st.booleans())
def test_short_rows_token_needles_equal_reference(rows, needle, ci):
    check(rows, needle, ci)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.one_of(long_row_st, row_st), min_size=1, max_size=12), needle=token_needle_st,
       ci=st.booleans())
def test_long_rows_equal_reference(rows, needle, ci):
    """Rows longer than the 64-byte vector block: filter stages and the row jump."""
    check(rows, needle, ci)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.one_of(row_st, long_row_st), max_size=20),
       needles=st.lists(st.one_of(needle_st, st.just(b"")), max_size=4))
def test_any_rows_equals_reference(rows, needles):
    for name, arr in shapes(rows, pad=b"".join(needles) or b"x").items():
        o, d = od(arr)
        got = S.any_rows(o, d, needles)
        want = [ref_any(r, needles) for r in rows]
        assert list(got) == want, f"any {needles!r} [{name}]: {[(r, g) for r, g, w in zip(rows, got, want) if g != w][:3]}"


SPAN_CASES = [
    # (rows, needle): the needle exists only across a row boundary or outside the slice
    ([b"ab", b"c"], b"abc"),
    ([b"xab", b"cx", b"abc"], b"abc"),
    ([b"", b"ab", b"", b"c"], b"bc"),
    ([b"a" * 70 + b"ab", b"c" + b"z" * 70], b"abc"),
    ([b"k" * 63, b"k"], b"kk"),
]


@pytest.mark.parametrize("rows,needle", SPAN_CASES, ids=[f"span{i}" for i in range(len(SPAN_CASES))])
@pytest.mark.parametrize("ci", [False, True], ids=["cs", "ci"])
def test_needle_across_rows_does_not_match(rows, needle, ci):
    check(rows, needle, ci)


TOKEN_GOLDEN = [
    (b"aabc abc", b"abc", True),       # first occurrence is inside a token, the second is one
    (b"aabc", b"abc", False),
    (b"abc\xc3\xa9", b"abc", False),   # bytes >= 0x80 are token bytes
    (b"\xffabc", b"abc", False),
    (b"abc_def", b"abc", True),        # '_' is a separator
    (b"x-abc.", b"abc", True),
    (b"ABC", b"abc", False),
    (b"", b"abc", False),
    (b"abc", b"", False),              # the empty needle matches nothing
]


@pytest.mark.parametrize("row,needle,want", TOKEN_GOLDEN, ids=[f"tok{i}" for i in range(len(TOKEN_GOLDEN))])
def test_token_golden(row, needle, want):
    o, d = od(pa.array([row], pa.binary()))
    assert bool(S.token_rows(o, d, needle)[0]) is want, f"hasToken({row!r}, {needle!r})"


def test_token_case_insensitive_is_ascii_only():
    rows = [b"KRAKEN", "\u00c9t\u00e9".encode(), "\u00e9t\u00e9".encode(), b"Kraken-x"]
    o, d = od(pa.array(rows, pa.binary()))
    got = list(S.token_rows(o, d, b"kraken", case_insensitive=True))
    assert got == [True, False, False, True], got
    got = list(S.token_rows(o, d, "\u00e9t\u00e9".encode(), case_insensitive=True))
    assert got == [False, False, True, False], f"'\u00c9' must not fold to '\u00e9': {got}"


def test_empty_needles_and_empty_input():
    o, d = od(pa.array([b"", b"a"], pa.binary()))
    assert list(S.contains_rows(o, d, b"")) == [True, True]
    assert list(S.token_rows(o, d, b"")) == [False, False]
    assert list(S.any_rows(o, d, [b""])) == [False, True], "multiSearchAny('', ['']) is 0 in ClickHouse"
    assert list(S.any_rows(o, d, [])) == [False, False]
    o, d = od(pa.array([], pa.binary()))
    assert len(S.contains_rows(o, d, b"x")) == 0
    o, d = od(pa.array([b"", b""], pa.binary()))  # no data buffer bytes at all
    assert list(S.contains_rows(o, d, b"x")) == [False, False]


def test_token_needle_with_separator_is_refused():
    o, d = od(pa.array([b"a b"], pa.binary()))
    with pytest.raises(ValueError, match="separator"):
        S.token_rows(o, d, b"a b")


@pytest.mark.parametrize("seed", [1, 2, 3], ids=["seed1", "seed2", "seed3"])
def test_big_random_buffer_equals_reference(seed):
    """~200 KB of rows over a 6-letter alphabet: dense candidates, every path, needles cut from the data."""
    rnd = random.Random(seed)
    alpha = b"abAB -\xc3"
    rows = [bytes(rnd.choice(alpha) for _ in range(rnd.choice([0, 1, 5, 40, 150, 400]))) for _ in range(900)]
    joined = b"".join(rows)
    needles = [joined[i:i + k] for i, k in ((rnd.randrange(len(joined) - 8), rnd.randint(1, 8)) for _ in range(12))]
    needles += [b"abab", b"ABBA", b"zz", b"a" * 9]
    for needle in needles:
        check(rows, needle, ci=bool(rnd.getrandbits(1)))
    o, d = od(pa.array(rows, pa.binary()))
    got = S.any_rows(o, d, needles[:5])
    assert list(got) == [ref_any(r, needles[:5]) for r in rows], "multiSearchAny over the big buffer"


def test_log_lines_equal_reference():
    """Realistic rows (the demo's generator): frequent, rare and absent needles, both cases."""
    from skipidx.apps import datagen

    batch = next(datagen.generate(20_000, 42))
    msg = batch.column(batch.schema.get_field_index("msg"))
    rows = [r for r in msg.to_pylist()]
    rows_b = [r.encode() for r in rows]
    arr = pa.array(rows_b, pa.binary())
    o, d = od(arr)
    for needle in [datagen.RARE_TOKEN, datagen.FREQUENT_TOKEN, datagen.ABSENT_TOKEN, "took", "user", "ms"]:
        n = needle.encode()
        for ci in (False, True):
            want_t = np.array([ref_token(r, n, ci) for r in rows_b])
            want_c = np.array([ref_contains(r, n, ci) for r in rows_b])
            got_t = S.token_rows(o, d, n, ci)
            got_c = S.contains_rows(o, d, n, ci)
            assert (got_t == want_t).all(), f"hasToken {needle!r} ci={ci}: {int((got_t != want_t).sum())} rows differ"
            assert (got_c == want_c).all(), f"contains {needle!r} ci={ci}: {int((got_c != want_c).sum())} rows differ"
    ns = [datagen.RARE_TOKEN.encode(), b"zzq", b"timeou"]
    assert (S.any_rows(o, d, ns) == np.array([ref_any(r, ns) for r in rows_b])).all(), "multiSearchAny on log lines"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.one_of(row_st, long_row_st), min_size=1, max_size=10), needle=token_needle_st,
       ci=st.booleans(), choice=st.data())
def test_any_anchor_choice_is_exact(rows, needle, ci, choice):
    """Anchors only decide speed: any positions, with or without the third, give the same rows."""
    m = len(needle)
    ps = sorted(choice.draw(st.lists(st.integers(0, m - 1), min_size=2, max_size=2), label="p1,p2"))
    p3 = choice.draw(st.integers(0, m - 1), label="p3")
    three = choice.draw(st.booleans(), label="three")
    forced = (ps[0], ps[1], p3 if three else ps[1], three)
    saved = S._anchors
    S._anchors = lambda *a, **k: forced  # no monkeypatch fixture: hypothesis reruns the body
    try:
        check(rows, needle, ci)
    finally:
        S._anchors = saved


# Frequent needles: most 64-byte blocks hold candidates, many rows per block and rows across
# blocks, several (overlapping) occurrences per row, the needle at row starts and ends.
FREQ_PIECES = [b"self", b"sel", b"elf", b"selfself", b".self", b"self_", b"(self)", b"SELF", b"\xc3\xa9self",
               b"self\xff", b"aa", b"a", b" ", b"", b"x" * 70, b"\n", b"-"]
freq_row_st = st.lists(st.sampled_from(FREQ_PIECES), max_size=14).map(b"".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.one_of(st.none(), freq_row_st), min_size=1, max_size=60),
       needle=st.sampled_from([b"self", b"elf", b"selfself", b"aa", b"a", b"s", b"sel"]), ci=st.booleans(),
       lead=st.integers(0, 2))
def test_frequent_needles_equal_reference(rows, needle, ci, lead):
    """A needle in most rows and blocks (the candidate mask of each block visited bit by bit):
    hasToken / substring per row equal the per-row reference and the numpy whole-buffer path;
    NULL rows give NULL through the Arrow entry points."""
    from skipidx.expr.kernels.strings import has_token

    plain = [r or b"" for r in rows]
    check(plain, needle, ci)
    arr = pa.array([b"self self"] * lead + plain, pa.binary()).slice(lead)
    o, d = od(arr)
    fold = S.ASCII_LOWER if ci else S._IDENTITY
    nd = fold[np.frombuffer(needle, dtype=np.uint8)]
    for token in (False, True):
        want = (S.token_rows if token else S.contains_rows)(o, d, needle, ci)
        np_path = np.zeros(len(plain), dtype=np.bool_)
        if int(o[-1]) - int(o[0]) >= len(needle):
            S._search_np(o, d, nd, fold, token, np_path)
        assert np.array_equal(np_path, want), (token, needle)
    got = has_token(pa.array([None if r is None else r.decode("utf-8", "replace") for r in rows], pa.string()),
                    needle.decode(), case_insensitive=ci).to_pylist()
    assert got == [None if r is None else ref_token(r.decode("utf-8", "replace").encode(), needle, ci)
                   for r in rows]
