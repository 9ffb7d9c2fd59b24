"""Small indexes are checked over all parts at once (one concatenated filter bank).

The combined path must answer exactly what the part-by-part path answers:
the kept granules, every index's EXPLAIN figures and notes, with parts that
lack the index (ADD INDEX without MATERIALIZE), a damaged index file, new
parts arriving between queries, and never a false negative (checked with a
full scan).
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import skipidx
from skipidx.expr.evaluate import where_mask
from skipidx.planner import prune as PR
from skipidx.expr.binder import bind_where
from skipidx.expr.select import BoundSelect
from skipidx.planner.plan import plan_query
from skipidx.planner.stats import QueryStats
from skipidx.sql.parser import parse_expression

DDL = """CREATE TABLE t (id UInt64, k String, u UInt64, msg String,
    INDEX kb k TYPE bloom_filter GRANULARITY 1,
    INDEX ka k TYPE sbbf('value', fpp = 0.001) GRANULARITY 1,
    INDEX ks k TYPE sbbf('value', fpp = 0.01) GRANULARITY 2,
    INDEX ub u TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX tok msg TYPE tokenbf_v1(2048, 3, 0) GRANULARITY 1)
    ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 64, background_merges = 0"""


def _rows(lo: int, n: int) -> pa.Table:
    ids = np.arange(lo, lo + n, dtype=np.uint64)
    return pa.table({"id": ids,
                     "k": pa.array([f"k{(i * 7919) % 1999}" for i in ids.tolist()]),
                     "u": pa.array((ids * 2654435761) % 5003, pa.uint64()),
                     "msg": pa.array([f"w{i % 13} x{(i * 31) % 211} end" for i in ids.tolist()])})


WHERES = [
    "k = 'k5'",
    "k IN ('k5', 'k17', 'k900', 'k1998')",
    "u IN (1, 2, 3, 4000, 5002)",
    "u = 77 OR k = 'k3'",
    "hasToken(msg, 'x7') AND k IN ('k1', 'k2')",
    "NOT (k != 'k3')",
    "k = 'absent' AND u = 1",
    "k IS NULL OR u = 9",
]


def _prune(db, where: str) -> tuple[dict[str, list[int]], dict[str, tuple], list]:
    snap = db.catalog.table("t").snapshot()
    with snap:
        bw = bind_where(snap.meta, parse_expression(where))
        plan = plan_query(snap, BoundSelect("t", [], bw), db.index_cache)
        stats = QueryStats(table="t")
        sels = PR.prune(snap.parts, plan.rpn, plan.uses, stats, db.index_cache)
        kept = {s.part.name: np.flatnonzero(s.kept).tolist() for s in sels}
        figures = {i.name: (i.granules_before, i.granules_after, i.parts_after, i.used, i.note) for i in stats.indexes}
        # never a false negative
        for p in snap.parts:
            t = p.read(["id", "k", "u", "msg"])
            m = where_mask(bw, t)
            hit = np.ones(t.num_rows, bool) if m is None else m.to_numpy(zero_copy_only=False)
            need = set(np.unique(np.searchsorted(p.marks, np.flatnonzero(hit), side="right") - 1).tolist())
            assert need <= set(kept.get(p.name, [])), f"{where}: part {p.name} dropped {sorted(need - set(kept.get(p.name, [])))}"
        return kept, figures, [p.name for p in snap.parts]


def _both(db, where: str, monkeypatch) -> None:
    db.index_cache.clear()
    kept_c, fig_c, parts = _prune(db, where)
    _prune(db, where)   # a second query answers from the cached concatenation
    kept_c2, fig_c2, _ = _prune(db, where)
    with monkeypatch.context() as m:
        m.setattr(PR, "COMBINE_MAX_BYTES", -1)   # part by part only
        db.index_cache.clear()
        kept_p, fig_p, _ = _prune(db, where)
    assert kept_c == kept_p, f"{where}: kept granules differ between the combined and part-by-part paths"
    assert fig_c == fig_p, f"{where}: per-index figures differ: {fig_c} vs {fig_p}"
    assert (kept_c2, fig_c2) == (kept_c, fig_c), f"{where}: the cached concatenation answers differently"


@pytest.fixture()
def db(tmp_path):
    with skipidx.connect(tmp_path / "db") as d:
        d.sql(DDL)
        for lo, n in ((0, 1000), (1000, 700), (1700, 33), (1733, 1300), (3033, 64)):
            d.insert("t", _rows(lo, n))
        yield d


@pytest.mark.parametrize("where", WHERES, ids=WHERES)
def test_combined_equals_part_by_part(db, where, monkeypatch) -> None:
    _both(db, where, monkeypatch)


def test_combined_is_used_for_small_indexes(db) -> None:
    db.index_cache.clear()
    _prune(db, "k = 'k5'")
    keys = [k for k in db.index_cache._combos if k[0] == "run"]
    assert {k[1] for k in keys} == {"kb", "ka"}, f"only GRANULARITY 1 indexes are concatenated: {keys}"
    assert all(len(k[2]) == 5 for k in keys), "one concatenation over the 5 parts"


@pytest.mark.parametrize("big, runs", [((0, 3), [[1, 2]]), ((0, 1, 3), [[0, 1]])])
def test_big_parts_are_concatenated_only_with_big_ones(db, monkeypatch, big, runs) -> None:
    """Parts whose filters reach COMBINE_BIG_BYTES form runs of their own (a new
    small part never makes the big parts' filters be copied again); answers and
    figures equal the part-by-part path's."""
    snap = db.catalog.table("t").snapshot()
    with snap:
        sizes = [db.index_cache.loaded(p, "kb").granules.nbytes for p in snap.parts]
        paths = [p.path for p in snap.parts]
    monkeypatch.setattr(PR, "COMBINE_BIG_BYTES", min(sizes[i] for i in big))
    assert [i for i, n in enumerate(sizes) if n >= PR.COMBINE_BIG_BYTES] == list(big)
    for where in WHERES:
        _both(db, where, monkeypatch)
    db.index_cache.clear()
    _prune(db, "k = 'k5'")
    got = [[paths.index(p) for p in k[2]] for k in db.index_cache._combos if k[0] == "run" and k[1] == "kb"]
    assert got == runs


def test_part_without_the_index_falls_back(db, monkeypatch) -> None:
    db.sql("ALTER TABLE t ADD INDEX k2 k TYPE bloom_filter(0.001) GRANULARITY 1")
    db.insert("t", _rows(5000, 300))   # only this part has k2
    db.insert("t", _rows(6000, 300))
    for where in ("k = 'k5'", "k IN ('k5', 'k6')"):
        _both(db, where, monkeypatch)
        _, fig, _ = _prune(db, where)
        assert "not materialized" in (fig["k2"][4] or ""), fig["k2"]


def test_new_parts_are_pruned_after_an_insert(db) -> None:
    before = db.sql("SELECT count() FROM t WHERE k = 'k5'").fetchall()[0][0]
    db.insert("t", _rows(10_000, 2000))
    want = int(sum(1 for i in range(10_000, 12_000) if (i * 7919) % 1999 == 5))
    r = db.sql("SELECT count() FROM t WHERE k = 'k5'")
    assert r.fetchall()[0][0] == before + want, "rows of the new part must be found"
    db.sql("OPTIMIZE TABLE t FINAL")
    r = db.sql("SELECT count() FROM t WHERE k = 'k5'")
    assert r.fetchall()[0][0] == before + want, "and after the merge"
    assert r.stats.parts_total == 1


def test_damaged_index_falls_back_and_is_reported(db, monkeypatch) -> None:
    snap = db.catalog.table("t").snapshot()
    victim = snap.parts[2]
    path = os.path.join(victim.path, "idx.kb.arrow")
    snap.close()
    db.index_cache.clear()
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    full = sum(1 for i in range(3097) if (i * 7919) % 1999 == 5)
    for _ in range(2):
        r = db.sql("SELECT count() FROM t WHERE k = 'k5'")
        assert r.fetchall()[0][0] == full
        kb = r.stats.index("kb")
        assert kb.note and f"damaged index ignored in part {victim.name}" in kb.note, kb.note
    assert not [k for k in db.index_cache._combos if k[1] == "kb" and any(victim.name in p for p in k[2])], \
        "no concatenation includes a damaged file"


def _flip_middle_byte(path: str) -> None:
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))


def test_merged_away_parts_leave_the_cache_and_the_merged_part_is_verified(db) -> None:
    """Parts never change, so the cache keys on them; a merge publishes a new part:
    its files are loaded (and verified) fresh, never answered from an entry of the
    parts it replaced, and those entries are dropped when a plan sees the new state."""
    full = sum(1 for i in range(3097) if (i * 7919) % 1999 == 5)
    for where in ("k = 'k5'", "id >= 1000 AND id < 1100"):
        db.sql(f"SELECT count() FROM t WHERE {where}").fetchall()
    old = {p.path for p in db.catalog.table("t").snapshot().parts}
    assert {k[0] for k in db.index_cache._granules} == old
    assert db.index_cache._combos
    db.sql("OPTIMIZE TABLE t FINAL")
    with db.catalog.table("t").snapshot() as snap:
        (merged,) = snap.parts
    # the merged part's bloom filter damaged before any query reads it
    _flip_middle_byte(os.path.join(merged.path, "idx.kb.arrow"))
    r = db.sql("SELECT count() FROM t WHERE k = 'k5'")
    assert r.fetchall()[0][0] == full
    kb = r.stats.index("kb")
    assert kb.note and f"damaged index ignored in part {merged.name}" in kb.note, kb.note
    assert not any(k[0] in old for k in db.index_cache._granules), "entries of merged-away parts remain"
    assert not any(p in old for k in db.index_cache._combos for p in k[2])
    assert db.sql("SELECT count() FROM t WHERE id >= 1000 AND id < 1100").fetchall()[0][0] == 100
    assert {k[0] for k in db.index_cache._granules} == {merged.path}


def test_cache_of_a_steady_insert_stream_stays_bounded(db) -> None:
    """Each insert is a new state: the concatenations of older part sets are let go."""
    for i in range(30):
        db.insert("t", _rows(20_000 + 100 * i, 100))
        if i % 10 == 9:
            db.sql("OPTIMIZE TABLE t FINAL")
        assert db.sql("SELECT count() FROM t WHERE k = 'k5' AND id >= 0").fetchall()[0][0] >= 0
        db.sql(f"SELECT count() FROM t WHERE id >= {20_000 + 100 * i}").fetchall()
    live = {p.path for p in db.catalog.table("t").snapshot().parts}
    assert {k[0] for k in db.index_cache._granules} <= live
    assert len(db.index_cache._combos) <= PR.COMBOS_MAX
    assert all(set(k[2]) <= live for k in db.index_cache._combos)


def test_a_table_dropped_and_created_elsewhere_leaves_no_entries(db, tmp_path) -> None:
    """Generations of a re-created table start again; its id tells the incarnations apart."""
    for _ in range(3):
        db.insert("t", _rows(50_000, 100))   # the old incarnation's generation is ahead
    db.sql("SELECT count() FROM t WHERE k = 'k5'").fetchall()
    old = {k[0] for k in db.index_cache._granules}
    assert old
    with skipidx.connect(tmp_path / "db") as other:
        other.sql("DROP TABLE t")
        other.sql(DDL)
        other.insert("t", _rows(0, 500))
    db.catalog.table("t")   # (this connection learns of the new table)
    assert db.sql("SELECT count() FROM t WHERE k = 'k5' SETTINGS use_skip_indexes = 1").fetchall()[0][0] == \
        sum(1 for i in range(500) if (i * 7919) % 1999 == 5)
    assert not old & {k[0] for k in db.index_cache._granules}


def test_indexes_larger_than_the_bound_go_part_by_part(db, monkeypatch) -> None:
    """Filters of all parts above COMBINE_MAX_BYTES: no concatenation (and no copy) at all."""
    with db.catalog.table("t").snapshot() as snap:
        total = sum(db.index_cache.loaded(p, "kb").granules.nbytes for p in snap.parts)
    monkeypatch.setattr(PR, "COMBINE_MAX_BYTES", total - 1)
    for where in WHERES[:3]:
        _both(db, where, monkeypatch)
    db.index_cache.clear()
    _prune(db, "k = 'k5'")
    assert not [k for k in db.index_cache._combos if k[1] == "kb"]
