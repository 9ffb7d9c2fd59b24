"""The query fast paths: pruning all parts at once, the shared index cache, the parse cache.

Pruning evaluates the RPN once over the concatenated granules of every part;
it must give, part by part, exactly what pruning each part alone gives (and
the per-index figures of EXPLAIN), also when an index is missing or damaged
in some part. Every answer is checked against a full scan with pyarrow.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skipidx
from skipidx.expr.binder import bind_where
from skipidx.planner.prune import prune, prune_part
from skipidx.planner.plan import plan_query
from skipidx.expr.select import BoundSelect
from skipidx.planner.stats import QueryStats
from skipidx.sql.parser import parse, parse_expression
from skipidx.core.errors import ParseError

DDL = """CREATE TABLE t (id UInt64, k String, msg String,
    INDEX kb k TYPE bloom_filter GRANULARITY 1,
    INDEX ks k TYPE sbbf('value', fpp = 0.01) GRANULARITY 2,
    INDEX tok msg TYPE tokenbf_v1(4096, 3, 0) GRANULARITY 1,
    INDEX idmm id TYPE minmax GRANULARITY 3)
    ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 64"""


def _rows(lo: int, n: int) -> pa.Table:
    ids = np.arange(lo, lo + n, dtype=np.uint64)
    return pa.table({"id": ids,
                     "k": pa.array([f"k{(i * 7919) % 997}" for i in ids.tolist()]),
                     "msg": pa.array([f"w{i % 13} x{(i * 31) % 211} end" for i in ids.tolist()])})


@pytest.fixture(scope="module")
def db():
    with skipidx.connect() as d:
        d.sql(DDL)
        for lo, n in ((0, 1000), (1000, 700), (1700, 33), (1733, 1300)):
            d.insert("t", _rows(lo, n))
        yield d


WHERES = [
    "k = 'k5'",
    "k IN ('k5', 'k17', 'k900')",
    "hasToken(msg, 'x7') AND id > 500",
    "hasToken(msg, 'x7') OR k = 'k3'",
    "NOT (k != 'k3')",
    "id < 100 OR id > 2900",
    "k = 'nope' AND hasToken(msg, 'w1')",
    "0",
]


@pytest.mark.parametrize("where", WHERES, ids=WHERES)
def test_all_parts_at_once_equals_part_by_part(db, where: str) -> None:
    snap = db.catalog.table("t").snapshot()
    with snap:
        assert len(snap.parts) == 4
        bw = bind_where(snap.meta, parse_expression(where))
        plan = plan_query(snap, BoundSelect("t", [], bw), db.index_cache)
        stats = QueryStats(table="t")
        sels = {s.part.name: s for s in prune(snap.parts, plan.rpn, plan.uses, stats, db.index_cache)}
        alone_sum: dict[str, int] = {}
        for p in snap.parts:
            kept, per_index = prune_part(p, plan.rpn, plan.uses, db.index_cache)
            got = sels.get(p.name)
            want = np.flatnonzero(kept).tolist()
            assert (np.flatnonzero(got.kept).tolist() if got is not None else []) == want, f"part {p.name}"
            for u in plan.uses:
                alone_sum[u.name] = alone_sum.get(u.name, 0) + per_index.get(u.name, p.n_granules)
        assert {i.name: i.granules_after for i in stats.indexes} == alone_sum
        # never a false negative: every granule holding a match is kept
        for p in snap.parts:
            t = p.read(["id", "k", "msg"])
            from skipidx.expr.evaluate import where_mask
            m = where_mask(bw, t)
            hit = np.ones(t.num_rows, bool) if m is None else m.to_numpy(zero_copy_only=False)
            need = set(np.unique(np.searchsorted(p.marks, np.flatnonzero(hit), side="right") - 1).tolist())
            got = sels.get(p.name)
            have = set(np.flatnonzero(got.kept).tolist()) if got is not None else set()
            assert need <= have, f"{where}: part {p.name} dropped granules {sorted(need - have)}"


def test_damaged_index_is_never_cached(db, tmp_path) -> None:
    with skipidx.connect(tmp_path / "d") as d:
        d.sql(DDL)
        d.insert("t", _rows(0, 1000))
        d.insert("t", _rows(1000, 1000))
        full = d.sql("SELECT count() FROM t WHERE k = 'k5'").fetchall()
        snap = d.catalog.table("t").snapshot()
        victim = snap.parts[1]
        path = os.path.join(victim.path, "idx.kb.arrow")
        snap.close()
        d.index_cache.clear()
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0xFF]))
        for _ in range(2):   # reported on every query, never trusted, answer exact
            r = d.sql("SELECT count() FROM t WHERE k = 'k5'")
            assert r.fetchall() == full
            kb = r.stats.index("kb")
            assert kb.note and f"damaged index ignored in part {victim.name}" in kb.note, kb.note
            assert kb.granules_after >= victim.n_granules, "the damaged part's granules all stay"


def test_parse_cache_returns_equal_statements_and_rejects_every_time() -> None:
    q = "SELECT count() FROM t WHERE k IN ('a', 'b') AND id > 3"
    a, b = parse(q), parse(q)
    assert a == b and a is not b
    a.clear()                       # a caller's list is its own
    assert parse(q) == b
    for _ in range(2):
        with pytest.raises(ParseError) as ei:
            parse("SELECT count( FROM t")
        assert (ei.value.line, ei.value.column) == (1, 20), str(ei.value)


def test_queries_from_threads_share_the_index_cache(db) -> None:
    from concurrent.futures import ThreadPoolExecutor

    t = db.catalog.table("t").read(["id", "k", "msg"])
    want = {w: int(pc.sum(pc.equal(t["k"], w[5:-1])).as_py() or 0) for w in ("k = 'k5'", "k = 'k17'")}
    db.index_cache.clear()

    def run(w: str) -> int:
        return db.sql(f"SELECT count() FROM t WHERE {w}").fetchall()[0][0]

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(run, list(want) * 20))
    assert got == list(want.values()) * 20
