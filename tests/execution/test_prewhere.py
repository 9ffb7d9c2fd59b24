"""PREWHERE (read the filter's columns first, the others only for granules with a match):
the same answers with it on, off and as an explicit clause (hypothesis; chDB as oracle),
fewer bytes read for a selective SELECT *, and EXPLAIN says so."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import skipidx

N = 3000


@pytest.fixture(scope="module")
def db():
    d = skipidx.connect()
    d.sql("CREATE TABLE t (id UInt64, k LowCardinality(String), s String, n Nullable(Int32), f Float64, "
          "INDEX ki k TYPE bloom_filter GRANULARITY 1, INDEX si s TYPE tokenbf_v1(512, 2, 0) GRANULARITY 1) "
          "ORDER BY id SETTINGS index_granularity = 64")
    rng = np.random.default_rng(11)
    n = rng.integers(-50, 50, N)
    d.insert("t", pa.table({
        "id": pa.array(np.arange(N), pa.uint64()),
        "k": [f"k{int(x)}" for x in rng.integers(0, 60, N)],
        "s": [f"w{int(a)} x{int(b)}" for a, b in zip(rng.integers(0, 500, N), rng.integers(0, 9, N))],
        "n": pa.array([None if x % 7 == 0 else int(x) for x in n], pa.int32()),
        "f": rng.random(N)}))
    # a second part, so scans cross parts
    d.insert("t", pa.table({"id": pa.array(np.arange(N, N + 500), pa.uint64()),
                            "k": ["k1"] * 500, "s": ["w1 x1"] * 500,
                            "n": pa.array(list(range(500)), pa.int32()), "f": np.linspace(0, 1, 500)}))
    yield d
    d.close()


_ATOMS = st.sampled_from([
    "id = 17", "id IN (3, 999, 2047, 3100)", "id < 130", "k = 'k5'", "k IN ('k1', 'k59')", "hasToken(s, 'w7')",
    "s LIKE '%x3%'", "n IS NULL", "n > 40", "f < 0.01", "id % 97 = 0", "k = 'absent'", "1",
])


@st.composite
def _where(draw):
    parts = draw(st.lists(_ATOMS, min_size=1, max_size=3))
    ops = draw(st.lists(st.sampled_from([" AND ", " OR "]), min_size=len(parts) - 1, max_size=len(parts) - 1))
    text = parts[0]
    for op, p in zip(ops, parts[1:]):
        text += op + p
    return text


_COLS = ["*", "f, s", "count()", "k, id", "s"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=_where(), pre=_ATOMS, cols=st.sampled_from(_COLS))
def test_prewhere_on_off_explicit_agree(db, where, pre, cols):
    q = f"SELECT {cols} FROM t WHERE {where}"
    on = db.sql(q).to_arrow()
    off = db.sql(q + " SETTINGS optimize_move_to_prewhere = 0").to_arrow()
    assert on.equals(off), q
    # an explicit PREWHERE p WHERE w answers as WHERE p AND w
    ex = db.sql(f"SELECT {cols} FROM t PREWHERE {pre} WHERE {where}").to_arrow()
    want = db.sql(f"SELECT {cols} FROM t WHERE ({pre}) AND ({where}) "
                  "SETTINGS optimize_move_to_prewhere = 0").to_arrow()
    assert ex.equals(want), (pre, where)


def test_prewhere_reads_fewer_bytes_and_explain_shows_it(db):
    # no index answers f: every granule is kept, a few hold a match
    q = "SELECT * FROM t WHERE f < 0.002"
    r_on = db.sql(q)
    r_off = db.sql(q + " SETTINGS optimize_move_to_prewhere = 0")
    assert r_on.to_arrow().equals(r_off.to_arrow())
    assert 0 < r_on.to_arrow().num_rows < 20
    # the same granules are read either way; the other columns only for those with a match
    assert r_on.stats.rows_read == r_off.stats.rows_read
    assert 0 < r_on.stats.bytes_read < r_off.stats.bytes_read / 2
    # count(): only the filter's columns either way
    c_on = db.sql("SELECT count() FROM t WHERE k = 'k5'").stats.bytes_read
    c_off = db.sql("SELECT count() FROM t WHERE k = 'k5' SETTINGS optimize_move_to_prewhere = 0").stats.bytes_read
    assert c_on == c_off > 0
    text = "\n".join(r[0] for r in db.sql(f"EXPLAIN {q}").fetchall())
    assert "Prewhere (moved from WHERE): f < 0.002; read first: f; then" in text
    off = "\n".join(r[0] for r in db.sql(f"EXPLAIN {q} SETTINGS optimize_move_to_prewhere = 0").fetchall())
    assert "Prewhere" not in off
    ex = "\n".join(r[0] for r in db.sql("EXPLAIN SELECT * FROM t PREWHERE k = 'k5' WHERE f < 0.5").fetchall())
    assert "Prewhere (PREWHERE clause): k = 'k5'; read first: k; then" in ex


def test_prewhere_stream_and_scan_agree(db):
    # db.scan and a streamed SELECT take the same PREWHERE path
    got = pa.Table.from_batches(list(db.scan("t", where="id % 97 = 0", columns=["s", "id"])))
    want = db.sql("SELECT s, id FROM t WHERE id % 97 = 0 SETTINGS optimize_move_to_prewhere = 0").to_arrow()
    assert got.to_pydict() == want.to_pydict()


@pytest.mark.chdb
def test_prewhere_matches_chdb():
    pytest.importorskip("chdb")
    from skipidx.apps.research import chdb_session as ch

    ddl = ("CREATE TABLE p (id UInt64, k String, s String, INDEX ki k TYPE bloom_filter GRANULARITY 1) "
           "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 32")
    ins = "INSERT INTO p SELECT number, concat('k', toString(number % 13)), substring('zzzzz', 1, number % 5) FROM numbers(1000)"
    name = ch.scratch_database("prewhere")
    ch.query(f"USE {name}")
    try:
        ch.query(ddl)
        ch.query(ins)
        with skipidx.connect() as d:
            d.sql(ddl)
            d.sql(ins)
            for q in ["SELECT * FROM p PREWHERE k = 'k3' WHERE length(s) > 2 ORDER BY id",
                      "SELECT id, s FROM p WHERE id IN (5, 500, 999) ORDER BY id",
                      "SELECT count() FROM p PREWHERE id > 900 WHERE k != 'k1'",
                      "SELECT s FROM p PREWHERE id < 70 ORDER BY id SETTINGS optimize_move_to_prewhere = 0"]:
                mine = d.sql(q).fetchall()
                t = ch.query(q, "ArrowTable")
                theirs = [tuple(v.decode() if isinstance(v, bytes) else v for v in row.values())
                          for row in t.to_pylist()]
                assert [tuple(r) for r in mine] == theirs, q
    finally:
        ch.query("USE default")
        ch.query(f"DROP DATABASE {name}")


def test_max_threads_reaches_the_scan(db, monkeypatch):
    from skipidx.execution import scan as S

    seen = []
    real = S.scan

    def spy(*a, **kw):
        seen.append(kw.get("threads"))
        return real(*a, **kw)

    monkeypatch.setattr("skipidx.engine.query.scan", spy)
    monkeypatch.setattr(S, "scan", spy)
    q = "SELECT k, count() FROM t WHERE f < 0.5 GROUP BY k ORDER BY k"
    one = db.sql(q + " SETTINGS max_threads = 1").to_arrow()
    three = db.sql(q + " SETTINGS max_threads = 3").to_arrow()
    dflt = db.sql(q).to_arrow()
    assert seen == [1, 3, None]
    assert one.equals(three) and one.equals(dflt)
    assert S.SCAN_THREADS == max(1, os.cpu_count() or 1)


def test_the_database_owns_its_scan_threads(tmp_path, monkeypatch):
    """Scan threads belong to a Database's executor (max_threads a setting), not to the process:
    two databases have two pools, and close() stops its own."""
    import skipidx
    from skipidx.execution import scan as S
    from skipidx.execution.scan import ScanExecutor

    monkeypatch.setattr(S, "SCAN_INLINE_BYTES", 1)   # a small table still reads on the pool
    a = skipidx.connect(str(tmp_path / "a"), max_threads=2)
    b = skipidx.connect(str(tmp_path / "b"))
    assert isinstance(a.executor, ScanExecutor) and a.executor is not b.executor
    assert a.executor.threads() == 2 and a.executor.threads(3) == 3
    assert b.executor.threads() == max(1, len(os.sched_getaffinity(0)))
    a.sql("CREATE TABLE t (k UInt32, s String) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 64")
    a.sql("INSERT INTO t SELECT number, toString(number) FROM numbers(20000)")
    assert a.sql("SELECT count() FROM t WHERE s LIKE '%7%' SETTINGS max_threads = 2").fetchall()[0][0] > 0
    assert a.executor.started == 2 and b.executor.started == 0
    pool = a.executor.pool(2)
    a.close()
    assert a.executor.started == 0 and pool._shutdown
    with pytest.raises(skipidx.SkipidxError, match="closed"):
        a.executor.pool(1)
    b.close()
    with pytest.raises(skipidx.SkipidxError, match="max_threads"):
        ScanExecutor(-1)


def test_explain_shows_why_automatic_prewhere_is_not_used(db):
    """Automatic PREWHERE only where it can pay: not when every condition is answered by an
    index (the kept granules hold a match), nor on fewer than PREWHERE_MIN_GRANULES kept
    granules; an explicit clause is kept whatever the count. Same answers every way."""
    from skipidx.planner.plan import PREWHERE_MIN_GRANULES

    def explain(q: str) -> str:
        return "\n".join(r[0] for r in db.sql(f"EXPLAIN {q}").fetchall())

    few = "SELECT * FROM t WHERE id = 17 AND f < 0.9"
    text = explain(few)
    assert "Prewhere: not used (1 granule kept: one read costs less than two)" in text, text
    assert db.sql(few).stats.granules_selected < PREWHERE_MIN_GRANULES
    judged = explain("SELECT * FROM t WHERE k = 'k5'")
    assert "Prewhere: not used (every condition is answered by an index" in judged, judged
    many = explain("SELECT * FROM t WHERE id < 1000 AND f < 0.9")
    assert "Prewhere (moved from WHERE): id < 1000 AND f < 0.9" in many, many
    explicit = explain("SELECT * FROM t PREWHERE f < 0.9 WHERE id = 17")
    assert "Prewhere (PREWHERE clause): f < 0.9" in explicit, explicit
    off = explain(few + " SETTINGS optimize_move_to_prewhere = 0")
    assert "Prewhere" not in off
    for q in (few, "SELECT * FROM t WHERE id < 1000 AND f < 0.9"):
        assert db.sql(q).to_arrow().equals(db.sql(q + " SETTINGS optimize_move_to_prewhere = 0").to_arrow())
