"""What a repeated query reuses (per-statement facts, plans by table metadata) and that
every reuse sees the changes another connection makes (inserts, ALTER, DROP)."""
from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

import skipidx
from skipidx.sql import ast as A
from skipidx.sql.params import statement_params
from skipidx.sql.parser import parse
from skipidx.engine.system_tables import statement_tables
from skipidx.engine.statements import _has_subquery_in


def test_statement_facts_are_kept_on_the_node_and_ignored_by_equality():
    text = "SELECT count() FROM logs WHERE a = {v:UInt8} AND b IN (SELECT x FROM other)"
    s = parse(text)[0]
    fresh = parse(text + " ")[0]            # another text: another object, not memoized
    assert s is not fresh and s == fresh and hash(s) == hash(fresh)
    ps = statement_params(s)
    assert [p.name for p in ps] == ["v"]
    ps.append("junk")                        # a caller's list is its own
    assert [p.name for p in statement_params(s)] == ["v"]
    assert statement_tables(s) == ["default.logs", "default.other"]
    assert _has_subquery_in(s) and A.memo(s, "has_subquery_in", _has_subquery_in)
    assert s == fresh and hash(s) == hash(fresh) and s.to_sql() == fresh.to_sql()
    back = pickle.loads(pickle.dumps(s))
    assert back == s and [p.name for p in statement_params(back)] == ["v"]
    assert not _has_subquery_in(parse("SELECT 1 FROM t WHERE a IN (1, 2)")[0])


def test_repeated_statement_binds_each_call_s_params(tmp_path):
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE t (a UInt32, s String) ENGINE = MergeTree ORDER BY a")
        db.insert("t", pa.table({"a": pa.array(range(100), pa.uint32()), "s": [str(i) for i in range(100)]}))
        q = "SELECT count() FROM t WHERE a < {n:UInt32}"
        assert [db.sql(q, params={"n": n}).fetchall()[0][0] for n in (5, 50, 5)] == [5, 50, 5]
        q2 = "SELECT count() FROM t WHERE a IN (SELECT a FROM t WHERE a < 3)"
        assert db.sql(q2).fetchall() == [(3,)]
        db.insert("t", pa.table({"a": pa.array([1], pa.uint32()), "s": ["x"]}))
        assert db.sql(q2).fetchall() == [(4,)]   # rows 0, 1, 2 and the new 1


def _table(db, rows=40_000, start=0):
    db.insert("t", pa.table({"id": pa.array(range(start, start + rows), pa.uint64()),
                             "tr": [f"tr{i:08d}" for i in range(start, start + rows)],
                             "u": pa.array([i % 1000 for i in range(start, start + rows)], pa.uint32())}))


def _figures(res):
    st = res.stats
    return (res.fetchall(), st.granules_total, st.granules_selected,
            sorted((i.name, i.granules_before, i.granules_after, i.note) for i in st.indexes))


@pytest.fixture
def two(tmp_path):
    path = str(tmp_path / "db")
    a = skipidx.connect(path)
    a.sql("CREATE TABLE t (id UInt64, tr String, u UInt32, INDEX tr_bf tr TYPE bloom_filter GRANULARITY 1) "
          "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 1024")
    _table(a)
    b = skipidx.connect(path)
    yield a, b
    a.close()
    b.close()


def test_a_repeated_query_has_its_own_figures(two):
    a, _ = two
    q = "SELECT count() FROM t WHERE tr = 'tr00012345'"
    first = _figures(a.sql(q))
    assert first[0] == [(1,)] and first[2] == 1
    for _ in range(3):
        assert _figures(a.sql(q)) == first       # nothing adds up across runs
    ex = a.sql("EXPLAIN indexes = 1 " + q).fetchall()
    assert a.sql(q).stats.index("tr_bf").granules_after == 1 and ex


def test_a_repeated_query_sees_another_connection_s_changes(two):
    a, b = two
    q = "SELECT count() FROM t WHERE tr = 'tr00012345' OR u = 7"
    assert _figures(a.sql(q))[0] == [(41,)]
    _table(b, rows=1000, start=40_000)                       # an insert
    assert a.sql(q).fetchall() == [(42,)]
    b.sql("ALTER TABLE t ADD INDEX u_set u TYPE set(0) GRANULARITY 1")
    b.sql("ALTER TABLE t MATERIALIZE INDEX u_set")
    r = a.sql(q)
    assert r.fetchall() == [(42,)] and "u_set" in [i.name for i in r.stats.indexes]
    assert r.stats.index("u_set").used
    b.sql("ALTER TABLE t DROP INDEX tr_bf")
    r = a.sql(q)
    assert r.fetchall() == [(42,)] and [i.name for i in r.stats.indexes if not i.name.startswith("Primary")] == ["u_set"]
    b.sql("OPTIMIZE TABLE t FINAL")
    assert a.sql(q).fetchall() == [(42,)]
    b.sql("DROP TABLE t")
    b.sql("CREATE TABLE t (id UInt64, tr String, u UInt32) ENGINE = MergeTree ORDER BY id")
    assert a.sql(q).fetchall() == [(0,)]
    b.sql("DROP TABLE t")
    b.sql("CREATE TABLE t (id UInt64, tr UInt32, u String) ENGINE = MergeTree ORDER BY id")
    with pytest.raises(skipidx.SkipidxError):
        a.sql(q)                                   # tr is a number now: the old plan is not used


def test_a_repeated_query_follows_the_session_settings(two):
    a, _ = two
    q = "SELECT count() FROM t WHERE tr = 'tr00012345'"
    assert a.sql(q).stats.granules_selected == 1
    a.sql("SET use_skip_indexes = 0")
    assert a.sql(q).stats.granules_selected == a.sql(q).stats.granules_total
    a.sql("SET use_skip_indexes = 1")
    assert a.sql(q).stats.granules_selected == 1
    assert a.sql(q + " SETTINGS ignore_data_skipping_indices = 'tr_bf'").stats.granules_selected > 1


def test_a_repeated_query_sees_another_process_s_changes(two):
    import subprocess
    import sys

    a, _ = two
    q = "SELECT count() FROM t WHERE u = 7"
    assert a.sql(q).fetchall() == [(40,)]
    code = (
        "import sys, pyarrow as pa, skipidx\n"
        "with skipidx.connect(sys.argv[1]) as db:\n"
        "    db.insert('t', pa.table({'id': pa.array([10**6], pa.uint64()), 'tr': ['x'], 'u': pa.array([7], pa.uint32())}))\n"
        "    db.sql('ALTER TABLE t ADD INDEX u_mm u TYPE minmax GRANULARITY 1')\n"
        "    db.sql('ALTER TABLE t MATERIALIZE INDEX u_mm')\n")
    subprocess.run([sys.executable, "-c", code, a.path], check=True, timeout=120)
    r = a.sql(q)
    assert r.fetchall() == [(41,)] and "u_mm" in [i.name for i in r.stats.indexes]


def test_a_read_of_several_ranges_verifies_each(tmp_path):
    import numpy as np

    from skipidx.store.checksums import VERIFIER
    from skipidx.store.part import DATA_FILE

    rng = np.random.default_rng(1)
    n = 100_000      # random ids: a data file of several checksum blocks
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE t (id UInt64, tr String) ENGINE = MergeTree ORDER BY id "
               "SETTINGS index_granularity = 1024")
        db.insert("t", pa.table({"id": pa.array(range(n), pa.uint64()),
                                 "tr": [rng.bytes(16).hex() for _ in range(n)]}))
        with db.catalog.table("t").snapshot() as snap:
            part = snap.parts[0]
            last = part.n_granules // 2 + 1    # a middle block: the footer shares the last one
            assert part._filesum(DATA_FILE).size > 3 << 20
            assert part.read(["tr"], [(0, 1), (last - 1, last)]).num_rows == 2048
            a, b = part.manifest["row_groups"][last - 1]
            with open(f"{part.path}/{DATA_FILE}", "r+b") as f:
                f.seek((a + b) // 2)
                byte = f.read(1)
                f.seek((a + b) // 2)
                f.write(bytes([byte[0] ^ 0xFF]))
            VERIFIER.forget()
            assert part.read(["tr"], [(0, 1), (2, 3)]).num_rows == 2048      # the damage is elsewhere
            with pytest.raises(skipidx.SkipidxError, match="checksum mismatch"):
                part.read(["tr"], [(0, 1), (last - 1, last)])


def test_a_repeated_query_takes_a_new_now_each_time(tmp_path, monkeypatch):
    """now() is folded when a query is bound: a kept plan would freeze it."""
    import datetime as dt

    from skipidx.expr.kernels import datetime as kdt

    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE t (id UInt64, ts DateTime) ENGINE = MergeTree ORDER BY id")
        db.sql("INSERT INTO t VALUES (1, '2026-01-01 00:00:00'), (2, '2026-01-01 00:00:10')")
        q = "SELECT now(), count() FROM t WHERE ts <= now()"
        for second, rows in ((5, 1), (15, 2), (5, 1)):
            monkeypatch.setattr(kdt, "now", lambda tz=None, s=second: dt.datetime(2026, 1, 1, 0, 0, s))
            got = db.sql(q).fetchall()
            assert got == [(dt.datetime(2026, 1, 1, 0, 0, second), rows)], f"now() at 00:00:{second:02d}: {got}"
