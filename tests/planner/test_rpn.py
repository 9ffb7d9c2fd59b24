"""RPN construction, BoolMask evaluation, index usefulness and mark ranges."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipidx.indexes.base import BoolMask
from skipidx.expr.binder import Binder
from skipidx.planner.prune import _data_to_index_granule, mark_ranges
from skipidx.planner.rpn import Op, build_rpn, evaluate, useful_answers
from skipidx.sql.parser import parse_expression
from skipidx.store.metadata import ColumnMeta, TableMeta
from skipidx.core.types import parse_type

META = TableMeta("t", [ColumnMeta("id", parse_type("UInt64")), ColumnMeta("u8", parse_type("UInt8")),
                       ColumnMeta("msg", parse_type("String")), ColumnMeta("n", parse_type("Nullable(UInt16)")),
                       ColumnMeta("ts", parse_type("DateTime")), ColumnMeta("d", parse_type("Date")),
                       ColumnMeta("f", parse_type("Float64"))])


def rpn_of(where: str):
    return build_rpn(Binder(META).expr(parse_expression(where)))


def show(where: str) -> str:
    r = rpn_of(where)
    out = []
    for it in r.items:
        if it.op == Op.ATOM:
            a = r.atoms[it.atom]
            out.append(f"{a.func}({a.expr_func + '(' if a.expr_func else ''}{a.column}"
                       f"{')' if a.expr_func else ''}{''.join(', ' + repr(x) for x in a.args)})")
        else:
            out.append(it.op.name)
    return " ".join(out)


# ---- RPN shape: atoms, flips, negations, folded constants ------------------
RPN_GOLDEN = [
    ("tok", "hasToken(msg, 'x')", "hasToken(msg, b'x')"),
    ("flip", "5 < id", "greater(id, 5)"),
    ("flip-eq", "'abc' = msg", "equals(msg, b'abc')"),
    ("ne-is-not-eq", "id != 3", "equals(id, 3) NOT"),
    ("not-in", "id NOT IN (1, 2)", "in(id, (1, 2)) NOT"),
    ("not-like", "msg NOT LIKE '%a%'", "like(msg, b'%a%') NOT"),
    ("is-not-null", "n IS NOT NULL", "isNull(n) NOT"),
    ("lower-subject", "lower(msg) = 'a'", "equals(lower(msg), b'a')"),
    ("or-and", "hasToken(msg, 'a') OR id = 1 AND u8 < 3",
     "hasToken(msg, b'a') equals(id, 1) less(u8, 3) AND OR"),
    ("not-nested", "NOT (hasToken(msg, 'a') AND NOT id = 2)", "hasToken(msg, b'a') equals(id, 2) NOT AND NOT"),
    ("out-of-range-eq", "u8 = 300", "FALSE"),
    ("out-of-range-lt", "u8 < 300", "TRUE"),
    ("negative-vs-uint", "id > -1", "TRUE"),
    ("fraction-eq", "id = 1.5", "FALSE"),
    ("fraction-lt", "id < 1.5", "less(id, 2)"),
    ("fraction-ge", "id >= 1.5", "greaterOrEquals(id, 2)"),
    ("fraction-le", "id <= 1.5", "lessOrEquals(id, 1)"),
    ("string-to-int", "id = '7'", "equals(id, 7)"),
    ("in-drops-impossible", "u8 IN (1, 300, -1, NULL, 2.5)", "in(u8, (1,))"),
    ("in-all-impossible", "u8 IN (300)", "FALSE"),
    ("null-compare", "id = NULL", "NULL"),
    ("column-vs-column", "id = u8", "UNKNOWN"),
    ("arith", "id % 7 = 3", "UNKNOWN"),
    ("between", "id BETWEEN 2 AND 5", "greaterOrEquals(id, 2) lessOrEquals(id, 5) AND"),
    ("and-true-folds", "hasToken(msg, 'a') AND 1", "hasToken(msg, b'a')"),
    ("or-true-folds", "hasToken(msg, 'a') OR 1", "TRUE"),
    ("multisearch", "multiSearchAny(msg, ['a', 'b'])", "multiSearchAny(msg, (b'a', b'b'))"),
    ("ci", "hasTokenCaseInsensitive(msg, 'AB')", "hasTokenCaseInsensitive(msg, b'AB')"),
    ("shared-atom", "hasToken(msg, 'a') OR NOT hasToken(msg, 'a')", "hasToken(msg, b'a') hasToken(msg, b'a') NOT OR"),
]


@pytest.mark.parametrize("where,expected", [(w, e) for _, w, e in RPN_GOLDEN], ids=[i for i, _, _ in RPN_GOLDEN])
def test_rpn_golden(where: str, expected: str) -> None:
    assert show(where) == expected, f"RPN of {where!r}"


def test_rpn_dedupes_atoms() -> None:
    r = rpn_of("hasToken(msg, 'a') OR NOT hasToken(msg, 'a')")
    assert len(r.atoms) == 1, r.atoms


def test_datetime_and_date_literals_cast() -> None:
    import datetime as dt

    r = rpn_of("ts > '2024-01-02 03:04:05' AND d = '2024-02-03'")
    assert r.atoms[0].args == (dt.datetime(2024, 1, 2, 3, 4, 5),)
    assert r.atoms[1].args == (dt.date(2024, 2, 3),)


# ---- BoolMask algebra: golden truth table -----------------------------------
U, T, F, N = (1, 1), (1, 0), (0, 1), (0, 0)
NAMES = {U: "UNKNOWN", T: "TRUE", F: "FALSE", N: "NULL"}
MASK_GOLDEN = [
    # (op, a, b, result) with masks as (can_be_true, can_be_false)
    ("NOT", U, None, U), ("NOT", T, None, F), ("NOT", F, None, T), ("NOT", N, None, N),
    ("AND", T, T, T), ("AND", T, F, F), ("AND", T, U, U), ("AND", F, U, F), ("AND", N, T, N), ("AND", N, F, F),
    ("AND", U, U, U), ("AND", N, U, (0, 1)),
    ("OR", F, F, F), ("OR", T, F, T), ("OR", F, U, U), ("OR", T, U, T), ("OR", N, F, N), ("OR", N, T, T),
    ("OR", U, U, U), ("OR", N, U, (1, 0)),
]


def _items(op: str, a, b):
    from skipidx.planner.rpn import RPN, RPNItem

    items = [RPNItem(Op.ATOM, 0)]
    masks = {0: BoolMask(np.array([bool(a[0])]), np.array([bool(a[1])]))}
    if b is not None:
        items.append(RPNItem(Op.ATOM, 1))
        masks[1] = BoolMask(np.array([bool(b[0])]), np.array([bool(b[1])]))
    items.append(RPNItem(Op[op]))
    return RPN(items, []), masks


@pytest.mark.parametrize("op,a,b,want", MASK_GOLDEN,
                         ids=[f"{o}-{NAMES[a]}-{NAMES.get(b, '')}" for o, a, b, _ in MASK_GOLDEN])
def test_boolmask_golden(op, a, b, want) -> None:
    rpn, masks = _items(op, a, b)
    m = evaluate(rpn, 1, masks)
    assert (int(m.can_be_true[0]), int(m.can_be_false[0])) == want


# ---- soundness: never skip a granule with a TRUE row (hypothesis) ------------
def _tree(depth: int):
    leaf = st.tuples(st.just("atom"), st.integers(0, 3))
    if depth == 0:
        return leaf
    sub = _tree(depth - 1)
    return st.one_of(leaf, st.tuples(st.just("not"), sub),
                     st.tuples(st.sampled_from(["and", "or"]), sub, sub))


def _kleene(node, row):
    k = node[0]
    if k == "atom":
        return row[node[1]]
    if k == "not":
        v = _kleene(node[1], row)
        return None if v is None else not v
    a, b = _kleene(node[1], row), _kleene(node[2], row)
    if k == "and":
        if a is False or b is False:
            return False
        return None if (a is None or b is None) else True
    if a is True or b is True:
        return True
    return None if (a is None or b is None) else False


def _to_rpn(node, items):
    from skipidx.planner.rpn import RPNItem

    k = node[0]
    if k == "atom":
        items.append(RPNItem(Op.ATOM, node[1]))
    elif k == "not":
        _to_rpn(node[1], items)
        items.append(RPNItem(Op.NOT))
    else:
        _to_rpn(node[1], items)
        _to_rpn(node[2], items)
        items.append(RPNItem(Op.AND if k == "and" else Op.OR))


@settings(max_examples=300, deadline=None)
@given(tree=_tree(4),
       granules=st.lists(st.lists(st.tuples(*[st.sampled_from([True, False, None])] * 4), min_size=1, max_size=6),
                         min_size=1, max_size=6),
       unknown=st.lists(st.booleans(), min_size=4, max_size=4))
def test_boolmask_never_drops_a_true_row(tree, granules, unknown) -> None:
    """Per atom, the mask is the exact (any TRUE, any FALSE) of the granule's rows, or UNKNOWN;
    the clause's can_be_true must hold wherever some row evaluates to TRUE (Kleene)."""
    from skipidx.planner.rpn import RPN

    items: list = []
    _to_rpn(tree, items)
    n = len(granules)
    masks = {}
    for a in range(4):
        if unknown[a]:
            continue
        t = np.array([any(r[a] is True for r in g) for g in granules])
        f = np.array([any(r[a] is False for r in g) for g in granules])
        masks[a] = BoolMask(t, f)
    m = evaluate(RPN(items, []), n, masks)
    for gi, g in enumerate(granules):
        if any(_kleene(tree, r) is True for r in g):
            assert m.can_be_true[gi], f"granule {gi} holds a TRUE row but was skipped"
        if any(_kleene(tree, r) is False for r in g):
            assert m.can_be_false[gi], f"granule {gi} holds a FALSE row but can_be_false is False"


# ---- which index answers matter ----------------------------------------------
USEFUL_GOLDEN = [
    # (where, refutable atoms, confirmable atoms, expected {atom: needs})
    ("hasToken(msg, 'a')", {0}, set(), {0: {"refute"}}),
    ("NOT hasToken(msg, 'a')", {0}, set(), {}),            # negation only: a bloom filter cannot confirm
    ("NOT (id < 5)", set(), {0}, {0: {"confirm"}}),          # minmax can: a zone entirely below 5
    ("hasToken(msg, 'a') OR id = 5", {0}, set(), {}),
    ("hasToken(msg, 'a') OR id = 5", {0, 1}, set(), {0: {"refute"}, 1: {"refute"}}),
    ("hasToken(msg, 'a') AND (id = 5 OR u8 = 1)", {0, 1}, set(), {0: {"refute"}}),
    ("hasToken(msg, 'a') AND (id = 5 OR u8 = 1)", {0, 1, 2}, set(), {0: {"refute"}, 1: {"refute"}, 2: {"refute"}}),
    ("NOT (id < 5 AND hasToken(msg, 'a'))", {0, 1}, {0}, {}),
    ("NOT (id < 5 AND hasToken(msg, 'a'))", {0, 1}, {0, 1}, {0: {"confirm"}, 1: {"confirm"}}),
    ("NOT (id < 5 OR hasToken(msg, 'a'))", {0, 1}, {0}, {0: {"confirm"}}),
]


@pytest.mark.parametrize("where,ref,conf,want", USEFUL_GOLDEN, ids=[f"u{i}" for i in range(len(USEFUL_GOLDEN))])
def test_useful_answers(where, ref, conf, want) -> None:
    r = rpn_of(where)
    got = useful_answers(r, {i: i in ref for i in range(len(r.atoms))}, {i: i in conf for i in range(len(r.atoms))})
    # keep the needs some index can actually serve (what plan_indexes reads indexes for)
    got = {k: {x for x in v if (x == "refute" and k in ref) or (x == "confirm" and k in conf)} for k, v in got.items()}
    got = {k: v for k, v in got.items() if v}
    assert got == want, where


# ---- mark ranges and index -> data granule spreading ---------------------------
@pytest.mark.parametrize("kept,ranges", [
    ([], []), ([0, 0, 0], []), ([1, 1, 1], [(0, 3)]), ([1, 0, 1, 1, 0], [(0, 1), (2, 4)]),
    ([0, 1, 0, 1], [(1, 2), (3, 4)]),
], ids=["empty", "none", "all", "two", "alternating"])
def test_mark_ranges(kept, ranges) -> None:
    assert mark_ranges(np.array(kept, dtype=bool)) == ranges


def test_spread_granularity_3_over_7_granules() -> None:
    marks = np.array([0, 10, 20, 30, 40, 50, 60, 65])
    zs, zl = np.array([0, 30, 60]), np.array([30, 30, 5])
    idx = _data_to_index_granule(marks, zs, zl, 65)
    assert idx.tolist() == [0, 0, 0, 1, 1, 1, 2]


def test_spread_rejects_zones_that_do_not_tile() -> None:
    from skipidx.core.errors import CorruptionError

    marks = np.array([0, 10, 20])
    with pytest.raises(CorruptionError):
        _data_to_index_granule(marks, np.array([0, 15]), np.array([15, 5]), 20)
    with pytest.raises(CorruptionError):
        _data_to_index_granule(marks, np.array([0]), np.array([10]), 20)
