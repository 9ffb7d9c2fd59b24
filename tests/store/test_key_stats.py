"""The ORDER BY key's per-granule statistics recorded in the part manifest.

The pruner reads them instead of the data file's footer, so a query does not
parse (and check) the footer of every part it does not read. They must equal
what the footer says (the part-by-part fallback reads the footer), a part
without them still prunes from its footer, and a damaged entry is reported
and never trusted.
"""
from __future__ import annotations

import json
import os
import random

import numpy as np
import pyarrow as pa
import pytest
import xxhash

import skipidx
from skipidx.planner.prune import key_granules_from_stats
from skipidx.store import part as P
from skipidx.store.commit import PartEntry, TableState, read_state, write_state

DDL = """CREATE TABLE t (s String, u UInt64, i Int64, b Bool, lc LowCardinality(String), v String)
    ENGINE = MergeTree ORDER BY (s, u, i, b, lc) SETTINGS index_granularity = 50, background_merges = 0"""


def _rows(seed: int, n: int) -> pa.Table:
    rng = random.Random(seed)
    words = ["", "a", "zz", "é", "日本", "a\x00b", "~"]
    return pa.table({
        "s": pa.array([rng.choice(words) + str(rng.randrange(4)) for _ in range(n)]),
        "u": pa.array([rng.choice([0, 1, 2**63 - 1, 2**63, 2**64 - 1, rng.randrange(2**64)]) for _ in range(n)],
                      pa.uint64()),
        "i": pa.array([rng.choice([-2**63, -1, 0, 2**63 - 1, rng.randrange(-10**6, 10**6)]) for _ in range(n)],
                      pa.int64()),
        "b": pa.array([rng.random() < 0.5 for _ in range(n)]),
        "lc": pa.array([rng.choice(["x", "y", "ü"]) for _ in range(n)]),
        "v": pa.array([f"v{k}" for k in range(n)]),
    })


KEYS = {"s": pa.string(), "u": pa.uint64(), "i": pa.int64(), "b": pa.bool_(),
        "lc": pa.dictionary(pa.int32(), pa.string())}


@pytest.fixture()
def db(tmp_path):
    with skipidx.connect(tmp_path / "db") as d:
        d.sql(DDL)
        for seed, n in ((1, 333), (2, 7), (3, 120)):
            d.insert("t", _rows(seed, n))
        yield d


def _granules(part, col, monkeypatch=None, footer=False):
    if footer:
        monkeypatch.setattr(type(part), "key_statistics", lambda self, column: None)
    try:
        g = key_granules_from_stats(part, col, KEYS[col])
    finally:
        if footer:
            monkeypatch.undo()
    return g


def test_manifest_statistics_equal_the_footers(db, monkeypatch) -> None:
    with db.catalog.table("t").snapshot() as snap:
        assert len(snap.parts) == 3
        for part in snap.parts:
            assert set(part.manifest["key_stats"]) == set(KEYS)
            for col in KEYS:
                a = _granules(part, col)
                b = _granules(part, col, monkeypatch, footer=True)
                assert a.min.equals(b.min) and a.max.equals(b.max), col
                assert np.array_equal(a.null_count, b.null_count) and np.array_equal(a.zone_start, b.zone_start)
                assert np.array_equal(a.zone_length, b.zone_length)


@pytest.mark.parametrize("where", [
    "u >= 18446744073709551615", "u < 2", "i = -9223372036854775808", "s = 'é1'", "s >= 'zz' AND b",
    "lc = 'ü' AND s < 'a'", "i > 0 AND i < 1000", "s = 'a' AND u = 0 AND i = 0 AND b AND lc = 'x'"])
def test_key_pruning_is_exact_and_reads_only_the_footers_it_needs(db, where) -> None:
    P.clear_caches()
    db.index_cache.clear()
    got = db.sql(f"SELECT count() FROM t WHERE {where}")
    n = got.fetchall()[0][0]
    want = db.sql(f"SELECT count() FROM t WHERE {where} SETTINGS use_skip_indexes = 0").fetchall()[0][0]
    assert n == want
    pk = [s for s in got.stats.indexes if s.name.startswith("PrimaryKey")]
    assert pk and all(s.note is None for s in pk), [(s.name, s.note) for s in pk]
    # the footers parsed are those of the parts read, not every part's
    assert len(P._FOOTERS) <= got.stats.parts_selected


def _rewrite_manifest(table, k: int, edit) -> str:
    with table.snapshot() as snap:
        part = snap.parts[k]
    mpath = os.path.join(part.path, "manifest.json")
    with open(mpath) as f:
        m = json.load(f)
    edit(m)
    raw = json.dumps(m).encode()
    with open(mpath, "wb") as f:
        f.write(raw)
    st = read_state(table.path)
    parts = tuple(PartEntry(e.name, e.rows, xxhash.xxh3_128_hexdigest(raw)) if e.name == part.name else e
                  for e in st.parts)
    write_state(table.path, TableState(st.gen, st.meta, parts, st.retired, st.table_id))
    return part.name


@pytest.mark.parametrize("damage", ["short", "type", "nulls", "none", "not a dict"])
def test_damaged_key_statistics_are_reported_and_never_trusted(db, damage) -> None:
    want = db.sql("SELECT count() FROM t WHERE u < 2").fetchall()[0][0]

    def edit(m):
        ks = m["key_stats"]
        if damage == "short":
            ks["u"]["min"] = ks["u"]["min"][:-1]
        elif damage == "type":
            ks["u"]["min"] = ["x"] * len(ks["u"]["min"])
        elif damage == "nulls":
            ks["u"]["nulls"][0] = -1
        elif damage == "none":
            ks["u"]["min"][0] = None
        else:
            m["key_stats"] = [1, 2]

    name = _rewrite_manifest(db.catalog.table("t"), 0, edit)
    P.clear_caches()
    db.index_cache.clear()
    r = db.sql("SELECT count() FROM t WHERE u < 2")
    assert r.fetchall()[0][0] == want
    pk = r.stats.index("PrimaryKey(u)")
    assert pk.note and f"damaged index ignored in part {name}" in pk.note, pk.note


def test_a_part_without_recorded_statistics_prunes_from_its_footer(db) -> None:
    full = db.sql("SELECT count() FROM t WHERE u < 2 SETTINGS use_skip_indexes = 0").fetchall()[0][0]
    _rewrite_manifest(db.catalog.table("t"), 1, lambda m: m.pop("key_stats"))
    P.clear_caches()
    db.index_cache.clear()
    r = db.sql("SELECT count() FROM t WHERE u < 2")
    assert r.fetchall()[0][0] == full
    assert r.stats.index("PrimaryKey(u)").note is None


def test_merges_record_them(db) -> None:
    db.sql("OPTIMIZE TABLE t FINAL")
    with db.catalog.table("t").snapshot() as snap:
        (part,) = snap.parts
        assert set(part.manifest["key_stats"]) == set(KEYS)
        assert len(part.manifest["key_stats"]["u"]["min"]) == part.n_granules


def test_mutated_key_statistics_answer_or_raise_skipidx_error(db) -> None:
    """Seeded random edits of the entry (checksums recomputed, as the file fuzzer
    does): every query answers or raises SkipidxError, nothing else escapes."""
    import copy
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import _file_fuzz

    table = db.catalog.table("t")
    with table.snapshot() as snap:
        originals = [copy.deepcopy(p.manifest) for p in snap.parts]
    queries = ["SELECT count() FROM t WHERE u < 2", "SELECT count() FROM t WHERE s = 'a1' AND b",
               "SELECT count() FROM t WHERE i > 0 AND lc = 'x'", "SELECT min(u) FROM t WHERE s >= 'zz'"]
    for seed in range(40):
        rng = random.Random(seed)
        k = seed % len(originals)

        def edit(m, rng=rng, k=k):
            m.clear()
            m.update(copy.deepcopy(originals[k]))
            for _ in range(1 + rng.randrange(3)):
                _file_fuzz._mutate_json(m["key_stats"], rng, 1)

        _rewrite_manifest(table, k, edit)
        P.clear_caches()
        db.index_cache.clear()
        for q in queries:
            try:
                db.sql(q).fetchall()
            except skipidx.SkipidxError:
                pass
