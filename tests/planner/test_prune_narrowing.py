"""Sequential narrowing: a later index is probed only on the granules earlier ones kept.

The oracle is the full evaluation (every index probed on every granule:
``NARROW_MAX_SHARE = -1`` turns narrowing off). On random WHERE clauses with
AND/OR/NOT over several indexes (bloom_filter, sbbf, tokenbf_v1, minmax,
set, GRANULARITY 1 and 3, one part or several, concatenated banks or part
by part), the narrowed pruning must keep exactly the same granules, every
index's own figures (deferred for narrowed indexes) must equal the eager
ones, and no granule holding a matching row may be dropped (checked against
the rows themselves).
"""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.core._kernels.sbbf import SALT, bank_check_any_of, check_one, insert_one
from skipidx.expr.evaluate import where_mask
from skipidx.indexes.base import BoolMask
from skipidx.planner import prune as PR
from skipidx.expr.binder import bind_where
from skipidx.expr.select import BoundSelect
from skipidx.planner.plan import plan_query
from skipidx.planner.rpn import RPN, Op, RPNItem, evaluate
from skipidx.planner.stats import IndexStats, QueryStats
from skipidx.sql.parser import parse_expression

DDL = """CREATE TABLE t (id UInt64, k String, u UInt64, v Nullable(UInt64), msg String,
    INDEX kb k TYPE bloom_filter GRANULARITY 1,
    INDEX ka k TYPE sbbf('value', fpp = 0.001) GRANULARITY 1,
    INDEX k3 k TYPE sbbf('value', fpp = 0.01) GRANULARITY 3,
    INDEX ub u TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX ua u TYPE sbbf('value', fpp = 0.0001) GRANULARITY 1,
    INDEX vs v TYPE set(40) GRANULARITY 2,
    INDEX vb v TYPE bloom_filter GRANULARITY 1,
    INDEX tok msg TYPE tokenbf_v1(512, 3, 0) GRANULARITY 1,
    INDEX ta msg TYPE sbbf('token', fpp = 0.001) GRANULARITY 1)
    ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 64"""

K_CARD, U_CARD = 700, 3000


def _rows(lo: int, n: int) -> pa.Table:
    ids = np.arange(lo, lo + n, dtype=np.uint64)
    r = np.random.default_rng(lo)
    v = r.integers(0, 60, n)
    return pa.table({
        "id": ids,
        # k clusters by id (a value lives in a few granules), u is spread out
        "k": pa.array([f"k{(i // 37 + int(j)) % K_CARD}" for i, j in zip(ids.tolist(), r.integers(0, 3, n))]),
        "u": pa.array(r.integers(0, U_CARD, n), pa.uint64()),
        "v": pa.array(np.where(v < 6, 0, v), pa.uint64(), mask=v < 3),
        "msg": pa.array([f"w{i % 17} x{(i * 31) % 401} y{i // 300}" for i in ids.tolist()]),
    })


@pytest.fixture(scope="module", params=["one part", "five parts"])
def db(request, tmp_path_factory):
    with skipidx.connect(tmp_path_factory.mktemp("narrow") / "db") as d:
        d.sql(DDL)
        if request.param == "one part":
            d.insert("t", _rows(0, 4000))
        else:
            for lo, n in ((0, 1000), (1000, 700), (1700, 33), (1733, 1300), (3033, 967)):
                d.insert("t", _rows(lo, n))
        yield d


def _atom(r: random.Random) -> str:
    kind = r.randrange(10)
    if kind == 0:
        return f"k = 'k{r.randrange(K_CARD + 20)}'"
    if kind == 1:
        return "k IN (%s)" % ", ".join(f"'k{r.randrange(K_CARD + 20)}'" for _ in range(r.randint(1, 6)))
    if kind == 2:
        return f"u = {r.randrange(U_CARD + 50)}"
    if kind == 3:
        return "u IN (%s)" % ", ".join(str(r.randrange(U_CARD + 50)) for _ in range(r.randint(1, 10)))
    if kind == 4:
        return r.choice([f"v = {r.randrange(70)}", "v IS NULL", "v IS NOT NULL", f"v IN ({r.randrange(70)}, 0)"])
    if kind == 5:
        return f"hasToken(msg, '{r.choice(['w', 'x', 'y'])}{r.randrange(420)}')"
    if kind == 6:
        return r.choice([f"k != 'k{r.randrange(K_CARD)}'", f"u NOT IN ({r.randrange(U_CARD)}, 7)"])
    if kind == 7:
        return r.choice([f"id < {r.randrange(4000)}", f"id >= {r.randrange(4000)}"])
    if kind == 8:
        return r.choice(["1", "0", "length(msg) > 3"])      # constants, and a leaf no index answers
    return f"u > {r.randrange(U_CARD)}"


def _where(r: random.Random, depth: int) -> str:
    if depth == 0 or r.random() < 0.3:
        return _atom(r)
    op = r.random()
    if op < 0.15:
        return f"NOT ({_where(r, depth - 1)})"
    parts = [_where(r, depth - 1) for _ in range(r.randint(2, 3))]
    return "(" + (" AND " if op < 0.7 else " OR ").join(parts) + ")"


def _prune(db, where: str) -> tuple[dict[str, list[int]], QueryStats, object]:
    snap = db.catalog.table("t").snapshot()
    with snap:
        bw = bind_where(snap.meta, parse_expression(where))
        plan = plan_query(snap, BoundSelect("t", [], bw), db.index_cache)
        stats = QueryStats(table="t")
        sels = PR.prune(snap.parts, plan.rpn, plan.uses, stats, db.index_cache)
        kept = {s.part.name: np.flatnonzero(s.kept).tolist() for s in sels}
        for p in snap.parts:   # never a false negative
            t = p.read(["id", "k", "u", "v", "msg"])
            m = where_mask(bw, t)
            hit = np.ones(t.num_rows, bool) if m is None else m.to_numpy(zero_copy_only=False)
            need = set(np.unique(np.searchsorted(p.marks, np.flatnonzero(hit), side="right") - 1).tolist())
            have = set(kept.get(p.name, []))
            assert need <= have, f"{where}: part {p.name} dropped granules {sorted(need - have)}"
    return kept, stats, bw


def _figures(stats: QueryStats) -> dict[str, tuple]:
    return {i.name: (i.granules_before, i.granules_after, i.parts_before, i.parts_after, i.used, i.note)
            for i in stats.indexes}


def _check(db, where: str, monkeypatch) -> bool:
    """Narrowed == full; returns whether some index was narrowed (its figures deferred)."""
    kept, stats, _ = _prune(db, where)
    deferred = any(i.pending for i in stats.indexes)
    got = _figures(stats)        # resolves the deferred figures
    assert not any(i.pending for i in stats.indexes), f"{where}: figures still deferred after reading them"
    with monkeypatch.context() as m:
        m.setattr(PR, "NARROW_MAX_SHARE", -1.0)    # every index on every granule
        kept_full, stats_full, _ = _prune(db, where)
    assert not any(i.pending for i in stats_full.indexes), "the full evaluation defers nothing"
    assert kept == kept_full, f"{where}: narrowed pruning keeps other granules than the full one"
    assert (stats.granules_selected, stats.ranges) == (stats_full.granules_selected, stats_full.ranges), where
    assert got == _figures(stats_full), f"{where}: per-index figures differ: {got} vs {_figures(stats_full)}"
    return deferred


FIXED = [
    "u IN (1, 2, 3, 4000, 2999)",
    "k = 'k5'",
    "k IN ('k5', 'k17', 'k600') AND u > 100",
    "u = 77 OR k = 'k3'",
    "hasToken(msg, 'x7') AND k IN ('k1', 'k2')",
    "NOT (k != 'k3')",
    "k = 'absent' AND u = 1",
    "v IS NULL AND k = 'k9'",
    "NOT (u NOT IN (5, 6)) AND id < 2000",
    "k = 'k12' AND NOT (v = 0)",
    "0",
]


@pytest.mark.parametrize("where", FIXED, ids=FIXED)
def test_fixed_where_narrowed_equals_full(db, where: str, monkeypatch) -> None:
    _check(db, where, monkeypatch)


def test_random_where_narrowed_equals_full(db, monkeypatch) -> None:
    r = random.Random(5)
    narrowed = 0
    for _ in range(150):
        narrowed += _check(db, _where(r, 3), monkeypatch)
    assert narrowed >= 20, f"only {narrowed} of 150 random queries narrowed an index: the test lost its point"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 4))
def test_hypothesis_where_narrowed_equals_full(db, monkeypatch, seed: int, depth: int) -> None:
    _check(db, _where(random.Random(seed), depth), monkeypatch)


def test_narrowed_index_figures_are_deferred_and_exact(db) -> None:
    """The second id index is probed on the first one's granules only; its own figure
    comes when read -- also after the snapshot is closed and the cache cleared."""
    where = "u IN (11, 222, 1333)"
    _, stats, _ = _prune(db, where)
    ua, ub = stats.index("ua"), stats.index("ub")
    assert not ua.pending and ub.pending, "ua (lower fpp) is probed first, ub narrowed"
    db.index_cache.clear()
    d = ub.as_dict()
    assert not ub.pending
    assert d["granules_after"] == ub.granules_after and d["parts_after"] == ub.parts_after
    full = db.sql(f"SELECT count() FROM t WHERE {where}")
    explain = db.sql(f"EXPLAIN indexes = 1 SELECT count() FROM t WHERE {where}").fetchall()
    text = "\n".join(x[0] for x in explain)
    assert f"Granules: {ub.granules_after}/{ub.granules_before}" in text, text
    assert full.stats.index("ub").granules_after == ub.granules_after
    assert ub.granules_after >= ua.granules_after >= full.stats.granules_selected


def test_deferred_figures_resolve_once() -> None:
    s = IndexStats(name="i", type="bloom_filter", description="d", granules_after=3, parts_after=1)
    calls = []
    s.defer(lambda: calls.append(1) or (5, 2))
    assert s.pending and s == IndexStats(name="i", type="bloom_filter", description="d",
                                         granules_after=8, parts_after=3)
    assert (s.granules_after, s.parts_after, len(calls)) == (8, 3, 1), "resolved exactly once"
    assert "granules_after=8" in repr(s) and s.as_dict()["parts_after"] == 3


def test_deferred_figures_pickle_and_copy_as_values() -> None:
    import copy
    import pickle

    s = IndexStats(name="i", type="bloom_filter", description="d")
    s.defer(lambda: (4, 1))
    q = QueryStats(table="t", indexes=[s])
    back = pickle.loads(pickle.dumps(q))
    assert back.index("i").granules_after == 4 and not back.index("i").pending
    s2 = IndexStats(name="j", type="bloom_filter", description="d")
    s2.defer(lambda: (2, 2))
    assert copy.deepcopy(s2).as_dict() == s2.as_dict() and s2.parts_after == 2


# -- the argument itself, on random RPNs and masks ----------------------------

def _random_rpn(r: random.Random, n_atoms: int, depth: int) -> RPN:
    rpn = RPN(atoms=list(range(n_atoms)))

    def walk(d: int) -> None:
        x = r.random()
        if d == 0 or x < 0.25:
            rpn.items.append(r.choice([RPNItem(Op.ATOM, r.randrange(n_atoms))] * 6
                                      + [RPNItem(Op.UNKNOWN), RPNItem(Op.TRUE), RPNItem(Op.FALSE), RPNItem(Op.NULL)]))
        elif x < 0.4:
            walk(d - 1)
            rpn.items.append(RPNItem(Op.NOT))
        else:
            walk(d - 1)
            walk(d - 1)
            rpn.items.append(RPNItem(Op.AND if x < 0.7 else Op.OR))
    walk(depth)
    return rpn


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_sequential_narrowing_is_exact_on_random_rpns(seed: int) -> None:
    """Several 'indexes' answer random atoms with random (sound or not) two-bit masks;
    probing each only on the granules kept so far (UNKNOWN elsewhere) gives exactly
    the full evaluation's granules."""
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    n, n_atoms = 64, r.randint(1, 4)
    rpn = _random_rpn(r, n_atoms, r.randint(1, 5))
    answers = [{i: (rng.random(n) < 0.5, rng.random(n) < 0.5) for i in range(n_atoms) if r.random() < 0.7}
               for _ in range(r.randint(1, 4))]

    def combine(masks: list[dict]) -> dict[int, BoolMask]:
        out: dict[int, tuple] = {}
        for a in masks:
            for i, (t, f) in a.items():
                c = out.get(i)
                out[i] = (t, f) if c is None else (c[0] & t, c[1] & f)
        return {i: BoolMask(t, f) for i, (t, f) in out.items()}

    full = evaluate(rpn, n, combine(answers)).can_be_true
    kept = None
    seen: list[dict] = []
    for a in answers:
        if kept is not None:
            outside = ~kept
            a = {i: (np.where(outside, True, t), np.where(outside, True, f)) for i, (t, f) in a.items()}
        seen.append(a)
        new = evaluate(rpn, n, combine(seen)).can_be_true
        assert kept is None or not np.any(new & ~kept), "a later index revived a granule"
        kept = new
    assert np.array_equal(kept, full), f"{rpn}: narrowed {np.flatnonzero(kept)} vs full {np.flatnonzero(full)}"


# -- the batched single-hash kernel -------------------------------------------

@pytest.mark.parametrize("subset", [False, True], ids=["all filters", "a subset"])
@pytest.mark.parametrize("groups", ["single", "mixed", "empty group"])
def test_batched_any_of_equals_one_by_one(subset: bool, groups: str) -> None:
    """A bank beyond the batching threshold (single-hash groups take the batched path)."""
    rng = np.random.default_rng(3)
    nf = 300
    nb = rng.integers(1, 300, nf).astype(np.int64)
    bo = np.zeros(nf, np.int64)
    np.cumsum(nb[:-1], out=bo[1:])
    words = (rng.integers(0, 2**32, int(nb.sum()) * 8, dtype=np.uint64) & rng.integers(0, 2**32, int(nb.sum()) * 8,
             dtype=np.uint64)).astype(np.uint32)
    assert words.shape[0] >= 8 * 32768, "the bank must be large enough for the batched path"
    hashes = rng.integers(0, 2**63, 37, dtype=np.int64).astype(np.uint64)
    for f in np.flatnonzero(rng.random(nf) < 0.3):    # a third of the filters hold some of the values
        for j in rng.choice(37, 4, replace=False):
            insert_one(words, bo[f], nb[f], hashes[j], SALT)
    if groups == "single":
        goffs = np.arange(hashes.shape[0] + 1, dtype=np.int64)
    elif groups == "mixed":
        goffs = np.array([0, 1, 3, 4, 10, 37], np.int64)
    else:
        goffs = np.array([0, 1, 1, 2], np.int64)[:3]
    if subset:
        pick = np.sort(rng.choice(nf, 40, replace=False))
        bo, nb = bo[pick], nb[pick]
    got = bank_check_any_of(words, bo, nb, hashes, goffs, SALT)
    want = np.array([any(all(check_one(words, bo[f], nb[f], hashes[j], SALT) for j in range(goffs[g], goffs[g + 1]))
                         for g in range(goffs.shape[0] - 1)) for f in range(bo.shape[0])])
    assert got.tolist() == want.tolist()
    if groups != "empty group":
        assert 0 < int(want.sum()) < bo.shape[0], "some filters pass, some fail"
    else:
        assert bool(want.all()), "an empty group requires nothing"


def test_deferred_figures_make_no_reference_cycle(db) -> None:
    """A result whose figures are still owed is freed by reference counting alone
    (the deferred callback must not lead back to the stats that own it)."""
    import gc
    import weakref

    gc.collect()
    gc.disable()
    try:
        r = db.sql("SELECT count() FROM t WHERE u IN (11, 222, 1333)")
        s = r.stats.index("ub")
        assert s.pending, "ub is narrowed (its figures deferred)"
        ref = weakref.ref(s)
        del r, s
        assert ref() is None, "the stats of a dropped result linger: a reference cycle"
    finally:
        gc.enable()
