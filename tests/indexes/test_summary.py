"""Group summaries of the SBBF indexes (one filter per group of granules): the check through
them keeps a subset of the flat check's granules and never drops one holding a match; they
are stored in the index file beside the Lance zone rows, rebuilt by merges, and a damaged
one is never trusted."""
from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import skipidx
from skipidx.core import sizing
from skipidx.indexes import bloom, summary as summ
from skipidx.indexes.base import Atom, IndexDef, get_index_type
from skipidx.indexes.bloom import SBBFGranules
from skipidx.store import writer

ALPHABET = "abcdefgh"

DEFS = {
    "bloom_filter": IndexDef("i", "s", None, "bloom_filter", (0.3,)),
    "sbbf": IndexDef("i", "s", None, "sbbf", ("value",), (("fpp", 0.2),)),
    "tokenbf_v1": IndexDef("i", "s", None, "tokenbf_v1", (64, 2, 0)),
    "ngrambf_v1": IndexDef("i", "s", None, "ngrambf_v1", (3, 64, 2, 0)),
}


def _flat(cond, g: SBBFGranules, zones=None) -> np.ndarray:
    saved, g.summary = g.summary, None
    try:
        m = cond.mask(g) if zones is None else cond.mask_at(g, zones)
    finally:
        g.summary = saved
    return np.asarray(m.can_be_true)


def _ideal(kind: str, rows: list[str], zs, zl, needles: list[str]) -> np.ndarray:
    """Granules holding a row that matches (the exact answer, per granule)."""
    out = np.zeros(len(zs), dtype=bool)
    for z, (a, n) in enumerate(zip(zs, zl)):
        for r in rows[a:a + n]:
            if kind in ("bloom_filter", "sbbf"):
                hit = r in needles
            elif kind == "tokenbf_v1":
                hit = any(nd in re.split(r"[^a-z0-9]+", r) for nd in needles)
            else:
                hit = any(nd in r for nd in needles)
            out[z] |= hit
    return out


def _atom(kind: str, needles: list[str]) -> Atom:
    if kind == "tokenbf_v1":
        return Atom("hasToken", "s", None, (needles[0].encode(),))
    if kind == "ngrambf_v1":
        return Atom("like", "s", None, (f"%{needles[0]}%".encode(),))
    if len(needles) == 1:
        return Atom("equals", "s", None, (needles[0].encode(),))
    return Atom("in", "s", None, (tuple(n.encode() for n in needles),))


word = st.text(ALPHABET, min_size=1, max_size=4)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(DEFS)), data=st.data(),
       group=st.integers(1, 5), zone_rows=st.integers(1, 6))
def test_summary_check_is_within_flat_and_keeps_every_match(monkeypatch, kind, data, group, zone_rows):
    monkeypatch.setattr(bloom, "SUMMARY_MIN_PROBES", 0)
    n_rows = data.draw(st.integers(2 * group * zone_rows, 40 * zone_rows))
    if kind in ("tokenbf_v1", "ngrambf_v1"):
        rows = data.draw(st.lists(st.builds(" ".join, st.lists(word, min_size=1, max_size=3)),
                                  min_size=n_rows, max_size=n_rows))
    else:
        rows = data.draw(st.lists(word, min_size=n_rows, max_size=n_rows))
    zs = np.arange(0, n_rows, zone_rows)
    zl = np.minimum(zs + zone_rows, n_rows) - zs
    d = DEFS[kind]
    it = get_index_type(d.type_name)(d, pa.string())
    agg = it.aggregator()
    agg.summary_group = group
    g = agg.build(pa.array(rows), zs, zl)
    assert g.summary is not None and g.summary.zone_group.min() >= 0
    if kind == "ngrambf_v1":
        needles = [data.draw(st.text(ALPHABET, min_size=3, max_size=4))]
    else:
        pool = st.one_of(st.sampled_from(rows).map(lambda r: r.split(" ")[0]), word)
        needles = data.draw(st.lists(pool, min_size=1, max_size=1 if kind == "tokenbf_v1" else 6, unique=True))
    cond = it.condition(_atom(kind, needles))
    m, passed, probed = cond.mask_counted(g)
    got = np.asarray(m.can_be_true)
    flat = _flat(cond, g)
    ideal = _ideal(kind, rows, zs, zl, needles)
    assert probed == len(g.summary) and 0 <= passed <= probed
    assert not np.any(got & ~flat), "the summary kept a granule the flat check drops"
    assert not np.any(ideal & ~got), "the summary dropped a granule holding a match"
    # the same on a subset of the granules (the planner's narrowing)
    sel = np.flatnonzero(np.asarray(data.draw(st.lists(st.booleans(), min_size=len(g), max_size=len(g)))))
    m2, _, _ = cond.mask_counted(g, sel)
    assert np.array_equal(np.asarray(m2.can_be_true), got[sel])


def test_summary_is_built_from_every_granule_hash():
    """A group's filter holds every distinct hash of its granules: each row's value passes."""
    rng = np.random.default_rng(3)
    vals = [f"v{x}" for x in rng.integers(0, 10**6, 4000)]
    zs = np.arange(0, 4000, 20)
    d = DEFS["sbbf"]
    it = get_index_type("sbbf")(d, pa.string())
    g = it.aggregator().build(pa.array(vals), zs, np.full(zs.shape[0], 20))
    s = g.summary
    assert s is not None and len(s) == -(-zs.shape[0] // sizing.SUMMARY_GROUP)
    from skipidx.core.hashing import xxh64_spans

    b = b"".join(v.encode() for v in vals)
    offs = np.concatenate([[0], np.cumsum([len(v) for v in vals])]).astype(np.int64)
    h = xxh64_spans(np.frombuffer(b, np.uint8), offs, np.uint64(0))
    grp = s.zone_group[np.arange(4000) // 20]
    from skipidx.core.sbbf import bank_check_pairs

    assert bank_check_pairs(s.bank.words, s.bank.block_offset, s.bank.num_blocks, grp, h).all()
    assert np.array_equal(s.ndv, [len(set(vals[int(a) * 20:int(a + c) * 20])) for a, c in zip(s.first, s.count)])


def _granules(n_zones=200, group=8):
    it = get_index_type("sbbf")(DEFS["sbbf"], pa.string())
    agg = it.aggregator()
    agg.summary_group = group
    vals = pa.array([f"x{i}" for i in range(n_zones * 4)])
    zs = np.arange(0, n_zones * 4, 4)
    return it, agg.build(vals, zs, np.full(n_zones, 4))


def test_summary_round_trips_and_a_damaged_one_is_dropped():
    it, g = _granules()
    md = g.summary_metadata()
    assert set(md) == {summ.META_SUMMARY, summ.META_SUMMARY_VERSION, summ.META_SUMMARY_XXH64}
    back = summ.GroupSummary.from_pieces([(0, len(g), md)], len(g))
    assert np.array_equal(back.bank.words, g.summary.bank.words) and np.array_equal(back.first, g.summary.first)
    raw = md[summ.META_SUMMARY]
    damaged = [
        {**md, summ.META_SUMMARY: raw[: len(raw) // 2]},                        # truncated
        {**md, summ.META_SUMMARY_VERSION: b"99"},                               # a version this build does not read
        {**md, summ.META_SUMMARY: raw[:-200] + bytes(200)},                     # zeroed tail
        {**md, summ.META_SUMMARY: b"not arrow"},
        {k: v for k, v in md.items() if k != summ.META_SUMMARY_XXH64},           # no digest
    ]
    # bits changed inside a filter (the stream still parses): the digest refuses it
    flipped = bytearray(raw)
    flipped[len(raw) // 2] ^= 0xFF
    damaged.append({**md, summ.META_SUMMARY: bytes(flipped)})
    for bad in damaged:
        assert summ.GroupSummary.from_pieces([(0, len(g), bad)], len(g)) is None
    # groups that do not fit the batch's zones, or filters of the wrong size for their count
    assert summ.GroupSummary.from_pieces([(0, len(g) - 10, md)], len(g) - 10) is None
    s = g.summary
    wrong = summ.GroupSummary(s.first, s.count, s.ndv + 1000, s.bank, s.fpp, len(g))   # digest fine, sizes not
    assert summ.GroupSummary.from_pieces([(0, len(g), wrong.metadata())], len(g)) is None
    # a damaged summary leaves the flat check, never "no"
    cond = it.condition(Atom("equals", "s", None, (b"x17",)))
    g.attach_summaries([(0, len(g), damaged[0])])
    assert g.summary is None
    assert np.flatnonzero(cond.mask(g).can_be_true).tolist() == [4]


def test_granules_without_summaries_answer_flat():
    it, g = _granules()
    g.summary = None
    cond = it.condition(Atom("in", "s", None, ((b"x1", b"x400", b"x799"),)))
    m, passed, probed = cond.mask_counted(g)
    assert (passed, probed) == (0, 0)
    assert {0, 100, 199} <= set(np.flatnonzero(m.can_be_true).tolist())


def _db_with(tmp_path, rows: int, granularity: int = 8):
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql(f"CREATE TABLE t (id UInt64, tr String, msg String, "
           f"INDEX a tr TYPE sbbf('value', fpp = 0.001), INDEX b tr TYPE bloom_filter, "
           f"INDEX m msg TYPE tokenbf_v1(256, 2, 0), INDEX k id TYPE minmax) "
           f"ORDER BY id SETTINGS index_granularity = {granularity}")
    return db


def _rows(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.uint64)
    return pa.table({"id": ids, "tr": [f"t{i * 7919 % 100003}" for i in ids.tolist()],
                     "msg": [f"w{i % 97} z{i % 1013}" for i in ids.tolist()]})


def _explain(db, where: str) -> str:
    return "\n".join(r[0] for r in db.sql(f"EXPLAIN indexes = 1 SELECT count() FROM t WHERE {where}").fetchall())


def _index_summary(db, name: str):
    tab = db.catalog.table("t")
    parts = tab.snapshot().parts
    return [p.load_index(name) for p in parts]


def test_store_writes_reads_and_uses_summaries(tmp_path, monkeypatch):
    monkeypatch.setattr(bloom, "SUMMARY_MIN_PROBES", 0)
    monkeypatch.setattr(writer, "SUMMARY_MIN_GRANULES", 1024)   # small parts keep the test quick
    db = _db_with(tmp_path, 0)
    n = 8 * 1100
    db.insert("t", _rows(0, n))
    (g,) = _index_summary(db, "a")
    assert g.summary is not None and int(g.summary.count.sum()) == len(g) == 1100
    (m,) = _index_summary(db, "m")
    assert m.summary is not None
    # the granule rows keep the Lance zone schema: pyarrow reads the file as before
    part = db.catalog.table("t").snapshot().parts[0]
    t = pa.ipc.open_file(os.path.join(part.path, part.index_entry("a")["file"])).read_all()
    assert t.num_rows == 1100 and t.column_names[:5] == ["fragment_id", "zone_start", "zone_length", "has_null",
                                                         "null_count"]
    tr = _rows(0, n).column("tr").to_pylist()
    for where in (f"tr = '{tr[4321]}'", "tr IN (%s)" % ", ".join(f"'{x}'" for x in tr[::500]),
                  "hasToken(msg, 'z77')", "tr = 'absent'"):
        got = db.sql(f"SELECT count() FROM t WHERE {where}")
        want = db.sql(f"SELECT count() FROM t WHERE {where} SETTINGS use_skip_indexes = 0").fetchall()
        assert got.fetchall() == want
        text = _explain(db, where)
        assert re.search(r"Groups: \d+/\d+", text), text
        assert got.stats.index("a" if "tr" in where else "m").groups_total > 0
    one = _explain(db, f"tr = '{tr[4321]}'")
    assert re.search(r"Groups: 1/18\b", one), one     # 1100 granules in groups of 64


def test_small_parts_get_no_summaries_and_old_files_read(tmp_path):
    db = _db_with(tmp_path, 0)
    db.insert("t", _rows(0, 8 * 100))
    (g,) = _index_summary(db, "a")
    assert g.summary is None          # a file like the ones written before summaries existed
    assert db.sql("SELECT count() FROM t WHERE tr = 't7919'").fetchall() == [(1,)]
    assert "Groups:" not in _explain(db, "tr = 't7919'")


def test_merge_and_materialize_rebuild_summaries(tmp_path, monkeypatch):
    monkeypatch.setattr(bloom, "SUMMARY_MIN_PROBES", 0)
    monkeypatch.setattr(writer, "SUMMARY_MIN_GRANULES", 1024)
    db = _db_with(tmp_path, 0)
    db.insert("t", _rows(0, 8 * 600))
    db.insert("t", _rows(8 * 600, 8 * 600))
    assert all(g.summary is None for g in _index_summary(db, "a"))
    db.sql("OPTIMIZE TABLE t FINAL")
    (g,) = _index_summary(db, "a")
    assert g.summary is not None and int(g.summary.count.sum()) == len(g) == 1200
    db.sql("ALTER TABLE t ADD INDEX c tr TYPE sbbf('value', fpp = 0.01)")
    db.sql("ALTER TABLE t MATERIALIZE INDEX c")
    (c,) = _index_summary(db, "c")
    assert c.summary is not None and int(c.summary.count.sum()) == 1200
    tr = _rows(0, 8 * 1200).column("tr").to_pylist()
    where = "tr IN (%s)" % ", ".join(f"'{x}'" for x in tr[::300])
    assert db.sql(f"SELECT count() FROM t WHERE {where}").fetchall() == [(32,)]


def test_docstring_summary_table_is_current():
    assert sizing.summary_table() in sizing.__doc__
