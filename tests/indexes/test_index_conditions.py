"""Index conditions: golden (can_be_true, can_be_false) tables, EXPLAIN texts, and the
never-a-false-negative property against a plain-Python reference evaluator.

The property: for every zone, if some row of the zone makes the atom TRUE,
``can_be_true`` must be set; if some row makes it FALSE, ``can_be_false``
must be set (so the planner's NOT, which swaps the two, never drops a zone
either). A NULL row is neither (SQL three-valued logic).
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from skipidx.core.errors import SkipidxError
from skipidx.indexes.base import Atom, BoolMask, IndexDef, get_index_type


def make(type_name, args=(), kwargs=(), column_type=pa.string(), expr_func=None):
    return get_index_type(type_name)(IndexDef("idx", "c", expr_func, type_name, tuple(args), tuple(kwargs)),
                                     column_type)


def answer(idx, values, zones, atom):
    zs = np.array([z[0] for z in zones], dtype=np.int64)
    zl = np.array([z[1] for z in zones], dtype=np.int64)
    g = idx.aggregator().build(values, zs, zl)
    g = idx.granules_from_arrow(g.to_arrow("p"))   # answer from what is on disk
    cond = idx.condition(atom)
    assert cond is not None, f"{idx.definition.type_name} should answer {atom.func}"
    m = cond.mask(g)
    assert isinstance(m, BoolMask) and m.can_be_true.dtype == bool and m.can_be_false.dtype == bool
    assert m.can_be_true.shape == (len(zones),) and m.can_be_false.shape == (len(zones),)
    return cond, m


def A(func, *args, expr=None):
    return Atom(func, "c", expr, tuple(args))


def bits(m: BoolMask) -> str:
    """Compact form: one 'TF'-pair per zone, '-' for a cleared bit."""
    return " ".join(("T" if t else "-") + ("F" if f else "-") for t, f in zip(m.can_be_true, m.can_be_false))


# ------------------------------------------------------------ golden tables

INTS = pa.array([1, 2, 3, None, 5, 5, None, None, 7, 9], pa.int64())
INT_ZONES = [(0, 3), (3, 3), (6, 2), (8, 2)]     # [1,2,3] [NULL,5,5] [NULL,NULL] [7,9]

MINMAX_GOLDEN = [
    ("eq-2", A("equals", 2), "TF -F -- -F"),
    ("eq-5", A("equals", 5), "-F T- -- -F"),
    ("ne-5", A("notEquals", 5), "T- -F -- T-"),
    ("lt-5", A("less", 5), "T- -F -- -F"),
    ("le-5", A("lessOrEquals", 5), "T- T- -- -F"),
    ("gt-3", A("greater", 3), "-F T- -- T-"),
    ("ge-3", A("greaterOrEquals", 3), "TF T- -- T-"),
    ("in", A("in", (5, 8)), "-F T- -- TF"),
    ("notIn", A("notIn", (5, 8)), "T- -F -- TF"),
    ("in-null-member", A("in", (None, 2)), "TF -F -- -F"),
    ("eq-null", A("equals", None), "-- -- -- --"),
    ("isNull", A("isNull"), "-F TF T- -F"),
    ("isNotNull", A("isNotNull"), "T- TF -F T-"),
    ("out-of-range-const", A("equals", 2**70), "TF TF TF TF"),
]


@pytest.mark.parametrize("atom,expected", [(a, e) for _, a, e in MINMAX_GOLDEN], ids=[g[0] for g in MINMAX_GOLDEN])
def test_minmax_golden(atom, expected):
    _, m = answer(make("minmax", column_type=pa.int64()), INTS, INT_ZONES, atom)
    assert bits(m) == expected


SET_GOLDEN = [
    ("eq-2", A("equals", 2), "TF -F -- -F"),
    ("eq-5", A("equals", 5), "-F T- -- -F"),
    ("eq-6-between", A("equals", 8), "-F -F -- -F"),   # minmax would keep [7, 9]
    ("ne-5", A("notEquals", 5), "T- -F -- T-"),
    ("lt-5", A("less", 5), "T- -F -- -F"),
    ("in", A("in", (5, 9)), "-F T- -- TF"),
    ("notIn", A("notIn", (1, 2, 3)), "-F T- -- T-"),
    ("isNull", A("isNull"), "-F TF T- -F"),
]


@pytest.mark.parametrize("atom,expected", [(a, e) for _, a, e in SET_GOLDEN], ids=[g[0] for g in SET_GOLDEN])
def test_set_golden(atom, expected):
    _, m = answer(make("set", (0,), column_type=pa.int64()), INTS, INT_ZONES, atom)
    assert bits(m) == expected


def test_set_overflow_answers_maybe():
    _, m = answer(make("set", (2,), column_type=pa.int64()), INTS, INT_ZONES, A("equals", 100))
    assert bits(m) == "TF -F -- -F"   # zone 0 holds 3 distinct values > 2


FLOATS = pa.array([1.0, float("nan"), None, None, float("nan"), 2.0, -0.0, 0.0], pa.float64())
FLOAT_ZONES = [(0, 2), (2, 2), (4, 2), (6, 2)]   # [1, nan] [NULL, NULL] [nan, 2] [-0, 0]


@pytest.mark.parametrize("type_name", ["minmax", "set"])
@pytest.mark.parametrize("atom,expected", [
    (A("equals", 1.0), "TF -- -F -F"),
    (A("notEquals", 1.0), "TF -- T- T-"),      # NaN != 1 is true
    (A("less", 1.5), "TF -- -F T-"),
    (A("equals", 0.0), "-F -- -F T-"),        # -0.0 = 0.0
    (A("greater", float("nan")), "-F -- -F -F"),
], ids=["eq", "ne-nan-true", "lt", "eq-signed-zero", "gt-nan"])
def test_float_nan_semantics(type_name, atom, expected):
    idx = make(type_name, (0,) if type_name == "set" else (), column_type=pa.float64())
    _, m = answer(idx, FLOATS, FLOAT_ZONES, atom)
    assert bits(m) == expected


STRS = pa.array(["apple", "apricot", "banana", None, "cherry", "", "zebra", "zoo"])
STR_ZONES = [(0, 2), (2, 2), (4, 2), (6, 2)]   # [apple apricot] [banana NULL] [cherry ''] [zebra zoo]


@pytest.mark.parametrize("type_name,atom,expected", [
    ("minmax", A("startsWith", b"ap"), "T- -F TF -F"),  # ['', 'cherry'] may hold 'apx'
    ("minmax", A("startsWith", b"c"), "-F -F TF -F"),
    ("minmax", A("startsWith", b""), "T- T- T- T-"),
    ("minmax", A("less", b"b"), "T- -F TF -F"),
    ("set", A("endsWith", b"a"), "-F T- -F TF"),
    ("set", A("in", (b"zoo", b"")), "-F -F TF TF"),
    ("set", A("startsWith", b"z"), "-F -F -F T-"),
], ids=["mm-prefix-ap", "mm-prefix-c", "mm-empty-prefix", "mm-less", "set-suffix", "set-in", "set-prefix"])
def test_string_golden(type_name, atom, expected):
    idx = make(type_name, (0,) if type_name == "set" else ())
    _, m = answer(idx, STRS, STR_ZONES, atom)
    assert bits(m) == expected


LOGS = pa.array(["GET /api timeout after 30s", "user Alice logged in", None, None,
                 "Timeout talking to db", "cache miss", "kraken sighted here", "retry later"])
LOG_ZONES = [(0, 2), (2, 2), (4, 2), (6, 2)]
BIG_TOKENBF = ("tokenbf_v1", (4096, 3, 0), ())     # big enough that these few tokens never collide


@pytest.mark.parametrize("index,atom,expected,can_prune,text", [
    (BIG_TOKENBF, A("hasToken", b"timeout"), "TF -- -F -F", True, "hasToken(c, 'timeout'): all of {timeout}"),
    (BIG_TOKENBF, A("hasToken", b"kraken"), "-F -- -F TF", True, "hasToken(c, 'kraken'): all of {kraken}"),
    (BIG_TOKENBF, A("equals", b"cache miss"), "-F -- TF -F", True, "equals(c, 'cache miss'): all of {cache, miss}"),
    (BIG_TOKENBF, A("notEquals", b"cache miss"), "T- -- TF T-", False,
     "notEquals(c, 'cache miss'): negation of [all of {cache, miss}] (prunes only under NOT)"),
    (BIG_TOKENBF, A("like", b"% timeout after %"), "TF -- -F -F", True,
     "like(c, '% timeout after %'): all of {timeout, after}"),
    (BIG_TOKENBF, A("notLike", b"% timeout after %"), "TF -- T- T-", False, None),
    (BIG_TOKENBF, A("like", b"%timeout after%"), "TF TF TF TF", False,
     "like(c, '%timeout after%'): pattern yields no complete token"),
    (BIG_TOKENBF, A("like", b"%imeou%"), "TF TF TF TF", False, "like(c, '%imeou%'): pattern yields no complete token"),
    (BIG_TOKENBF, A("multiSearchAny", (b" cache ", b" kraken ")), "-F -- TF TF", True,
     "multiSearchAny(c, (' cache ', ' kraken ')): any of {cache} | {kraken}"),
    (BIG_TOKENBF, A("isNull"), "-F T- -F -F", True, "isNull(c): has_null"),
    (BIG_TOKENBF, A("isNotNull"), "T- -F T- T-", True, None),
    (BIG_TOKENBF, A("equals", None), "-- -- -- --", True, None),
    (("ngrambf_v1", (3, 4096, 2, 0), ()), A("like", b"%imeou%"), "TF -- TF -F", True,
     "like(c, '%imeou%'): all of {ime, meo, eou}"),
    (("sbbf", ("ngram",), (("n", 3),)), A("like", b"%aken%"), "-F -- -F TF", True, None),
    (("sbbf", ("ngram",), (("n", 3),)), A("like", b"%ak%"), "TF TF TF TF", False,
     "like(c, '%ak%'): pattern yields no complete token"),
    (("sbbf", ("token",), ()), A("in", (b"cache miss", b"retry later")), "-F -- TF TF", True,
     "in(c, ('cache miss', 'retry later')): any of {cache, miss} | {retry, later}"),
], ids=["hasToken", "hasToken-rare", "equals", "notEquals", "like", "notLike", "like-open-ends", "like-no-token",
        "multiSearchAny",
        "isNull", "isNotNull", "eq-null", "ngram-like", "sbbf-ngram-like", "sbbf-short-like", "sbbf-in"])
def test_text_golden(index, atom, expected, can_prune, text):
    cond, m = answer(make(*index), LOGS, LOG_ZONES, atom)
    assert bits(m) == expected
    assert cond.can_prune is can_prune
    if text is not None:
        assert cond.describe() == text
    if not can_prune and not atom.func.startswith("not"):
        assert cond.reason, "a recognized atom that cannot help says why"


def test_negated_atoms_are_the_swap_of_their_positive():
    """(1, contains) for tokens; an exact swap for minmax/set (what NOT of the positive would give)."""
    for idx, vals, zones, pos, neg in [
        (make("tokenbf_v1", (4096, 3, 0)), LOGS, LOG_ZONES, A("equals", b"cache miss"), A("notEquals", b"cache miss")),
        (make("bloom_filter", (), (), pa.int64()), INTS, INT_ZONES, A("in", (5, 9)), A("notIn", (5, 9))),
        (make("minmax", (), (), pa.int64()), INTS, INT_ZONES, A("equals", 5), A("notEquals", 5)),
        (make("set", (0,), (), pa.int64()), INTS, INT_ZONES, A("in", (5, 9)), A("notIn", (5, 9))),
    ]:
        _, p = answer(idx, vals, zones, pos)
        _, n = answer(idx, vals, zones, neg)
        assert np.array_equal(n.can_be_false, p.can_be_true)
        if idx.definition.type_name in ("minmax", "set"):
            assert np.array_equal(n.can_be_true, p.can_be_false)


def test_case_insensitive_only_on_lower_index():
    vals = pa.array(["Timeout Here", "nothing", "TIMEOUT", "x"])
    zones = [(0, 2), (2, 2)]
    lower_vals = pa.array([v.lower() for v in vals.to_pylist()])
    low = make("tokenbf_v1", (4096, 3, 0), expr_func="lower")
    raw = make("tokenbf_v1", (4096, 3, 0))
    atom = A("hasTokenCaseInsensitive", b"TimeOut")
    assert raw.condition(atom) is None, "an index on c holds the original case"
    cond, m = answer(low, lower_vals, zones, atom)
    assert bits(m) == "TF TF"
    assert raw.condition(A("hasToken", b"x", expr="lower")) is None
    assert low.condition(A("hasToken", b"x")) is None, "hasToken(c) is not hasToken(lower(c))"
    _, m = answer(low, lower_vals, zones, A("hasToken", b"nothing", expr="lower"))
    assert bits(m) == "TF -F"
    _, m = answer(low, lower_vals, zones, A("isNull"))   # lower(NULL) is NULL: has_null carries over
    assert bits(m) == "-F -F"


def test_has_token_with_separator_is_an_error():
    with pytest.raises(SkipidxError):
        make("tokenbf_v1", (256, 3, 0)).condition(A("hasToken", b"a,b"))


def test_unanswerable_atoms_return_none():
    assert make("minmax", column_type=pa.int64()).condition(A("like", b"%a%")) is None
    assert make("bloom_filter").condition(A("like", b"%a%")) is None
    assert make("bloom_filter").condition(A("less", b"a")) is None
    assert make("tokenbf_v1", (256, 3, 0)).condition(A("less", b"a")) is None
    assert make("minmax", column_type=pa.int64()).condition(Atom("equals", "other", None, (1,))) is None


def test_saturated_zones_answer_maybe():
    vals = pa.array([" ".join(f"w{i}x{j}" for j in range(60)) for i in range(40)])
    idx = make("tokenbf_v1", (32, 3, 0))
    cond, m = answer(idx, vals, [(0, 20), (20, 20)], A("hasToken", b"absent"))
    assert m.can_be_true.all()


# ------------------------------------------------------- property: no false negatives

TOKEN_RE = re.compile(rb"[0-9A-Za-z\x80-\xff]+")


def like_regex(p: bytes) -> re.Pattern:
    out = []
    for ch in p.decode():
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    return re.compile("".join(out), re.S)


def ref(func, v, args):
    """The atom on one value: True / False / None (NULL)."""
    if func == "isNull":
        return v is None
    if func == "isNotNull":
        return v is not None
    if v is None:
        return None
    a = args[0] if args else None
    if func in ("in", "notIn"):
        hit = any(x is not None and v == x for x in a)
        return hit if func == "in" else not hit
    if func == "multiSearchAny":
        return any(n in v for n in a)
    if a is None:
        return None
    return {
        "equals": lambda: v == a, "notEquals": lambda: v != a, "less": lambda: v < a,
        "lessOrEquals": lambda: v <= a, "greater": lambda: v > a, "greaterOrEquals": lambda: v >= a,
        "startsWith": lambda: v.startswith(a), "endsWith": lambda: v.endswith(a),
        "hasToken": lambda: a in TOKEN_RE.findall(v),
        "like": lambda: like_regex(a).fullmatch(v.decode()) is not None,
        "notLike": lambda: like_regex(a).fullmatch(v.decode()) is None,
    }[func]()


def check_no_false_negative(idx, values, zone_sizes, atoms):
    arr = pa.array(values, idx.column_type)
    starts = np.concatenate([[0], np.cumsum(zone_sizes)[:-1]]).astype(np.int64)
    zones = list(zip(starts.tolist(), zone_sizes))
    py = arr.to_pylist()
    if pa.types.is_string(arr.type):
        py = [None if v is None else v.encode() for v in py]
    for atom in atoms:
        if idx.condition(atom) is None:
            continue
        _, m = answer(idx, arr, zones, atom)
        for z, (s, n) in enumerate(zones):
            res = [ref(atom.func, v, atom.args) for v in py[s:s + n]]
            if any(r is True for r in res):
                assert m.can_be_true[z], f"false negative: {atom} zone {z} {py[s:s + n]}"
            if any(r is False for r in res):
                assert m.can_be_false[z], f"NOT would drop zone {z}: {atom} {py[s:s + n]}"


def zone_split(draw, n):
    sizes = []
    while sum(sizes) < n:
        sizes.append(min(draw(st.integers(1, 6)), n - sum(sizes)))
    return sizes


ALPHA = "ab c.é東"
words = st.text(alphabet=ALPHA, max_size=7)


@st.composite
def string_case(draw):
    values = draw(st.lists(st.one_of(st.none(), words), min_size=1, max_size=30))
    sizes = zone_split(draw, len(values))
    enc = [w.encode() for w in draw(st.lists(words, min_size=1, max_size=4))]
    tok = [t for t in (TOKEN_RE.findall(e) for e in enc) for t in t] or [b"ab"]
    pat = draw(st.lists(st.sampled_from(list(ALPHA) + ["%", "_"]), max_size=6))
    pat = "".join(pat).encode()
    atoms = [A(f, enc[0]) for f in ("equals", "notEquals", "less", "greaterOrEquals", "startsWith", "endsWith")]
    atoms += [A("in", tuple(enc)), A("notIn", tuple(enc)), A("isNull"), A("isNotNull"),
              A("hasToken", tok[0]), A("like", pat), A("notLike", pat), A("like", b"%" + enc[0] + b"%"),
              A("multiSearchAny", tuple(enc))]
    return values, sizes, atoms


STRING_INDEXES = [
    ("minmax", (), ()), ("set", (0,), ()), ("set", (2,), ()), ("bloom_filter", (0.01,), ()),
    ("tokenbf_v1", (64, 2, 0), ()), ("tokenbf_v1", (32, 2, 5), ()), ("ngrambf_v1", (2, 64, 2, 0), ()),
    ("ngrambf_v1", (3, 32, 2, 1), ()), ("sbbf", ("token",), ()), ("sbbf", ("ngram",), (("n", 2),)),
    ("sbbf", ("ngram",), (("n", 3), ("fpp", 0.5))), ("sbbf", ("value",), ()),
]


@pytest.mark.parametrize("index", STRING_INDEXES, ids=[f"{t}{a}{dict(k) or ''}" for t, a, k in STRING_INDEXES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=string_case())
def test_no_false_negatives_strings(index, case):
    values, sizes, atoms = case
    check_no_false_negative(make(*index), values, sizes, atoms)


@st.composite
def number_case(draw, floats):
    elem = st.floats(allow_nan=True, allow_infinity=False, width=64) if floats else st.integers(-5, 5)
    if floats:
        elem = st.one_of(elem, st.sampled_from([0.0, -0.0, 1.0, float("nan")]))
    values = draw(st.lists(st.one_of(st.none(), elem), min_size=1, max_size=30))
    sizes = zone_split(draw, len(values))
    consts = draw(st.lists(elem, min_size=1, max_size=3))
    atoms = [A(f, consts[0]) for f in ("equals", "notEquals", "less", "lessOrEquals", "greater", "greaterOrEquals")]
    atoms += [A("in", tuple(consts)), A("notIn", tuple(consts)), A("isNull"), A("isNotNull")]
    return values, sizes, atoms


NUMBER_INDEXES = [("minmax", (), ()), ("set", (0,), ()), ("set", (3,), ()), ("bloom_filter", (), ())]


@pytest.mark.parametrize("index", NUMBER_INDEXES, ids=[f"{t}{a}" for t, a, _ in NUMBER_INDEXES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=number_case(floats=False))
def test_no_false_negatives_ints(index, case):
    values, sizes, atoms = case
    check_no_false_negative(make(*index, column_type=pa.int64()), values, sizes, atoms)


@pytest.mark.parametrize("index", NUMBER_INDEXES, ids=[f"{t}{a}" for t, a, _ in NUMBER_INDEXES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=number_case(floats=True))
def test_no_false_negatives_floats(index, case):
    values, sizes, atoms = case
    check_no_false_negative(make(*index, column_type=pa.float64()), values, sizes, atoms)


@st.composite
def long_in_case(draw):
    strings = draw(st.booleans())
    elem = words.map(str.encode) if strings else st.integers(-40, 40)
    values = draw(st.lists(st.one_of(st.none(), elem), min_size=1, max_size=40))
    sizes = zone_split(draw, len(values))
    consts = draw(st.lists(st.one_of(elem, st.none()), min_size=17, max_size=40))
    return strings, values, sizes, consts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=long_in_case())
def test_minmax_long_in_list_answers_as_value_by_value(case):
    """A long IN list is answered by a binary search of each zone's bounds;
    the masks equal the value-by-value answer's, bit for bit."""
    from skipidx.indexes import minmax

    strings, values, sizes, consts = case
    idx = make("minmax", column_type=pa.string() if strings else pa.int64())
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    zones = list(zip(starts.tolist(), sizes))
    vals = pa.array([None if v is None else (v.decode() if strings else v) for v in values],
                    pa.string() if strings else pa.int64())
    for func in ("in", "notIn"):
        _, fast = answer(idx, vals, zones, A(func, tuple(consts)))
        old, minmax.IN_SORTED_MIN = minmax.IN_SORTED_MIN, 10 ** 9
        try:
            _, slow = answer(idx, vals, zones, A(func, tuple(consts)))
        finally:
            minmax.IN_SORTED_MIN = old
        assert bits(fast) == bits(slow)
