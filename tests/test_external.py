"""External tables (ENGINE = ParquetFiles) over lakes written by pyarrow and DuckDB.

Oracles: DuckDB reading the same files (rows) and chDB's file() (hasToken/LIKE
semantics). Every test checks that the data files' bytes and modification
times are unchanged afterwards, except where a test changes the lake on
purpose (it then checks the files it did not touch).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.core.errors import SkipidxError

duckdb = pytest.importorskip("duckdb")

WORDS = np.array(["alpha", "beta", "gamma", "delta", "error", "timeout", "disk", "user", "login", "cache"])
INDEXES = ("INDEX tok msg TYPE tokenbf_v1(2048, 3, 0), INDEX ng msg TYPE ngrambf_v1(3, 4096, 2, 0), "
           "INDEX ad msg TYPE sbbf('ngram', n = 4), INDEX tr trace_id TYPE bloom_filter(0.01), "
           "INDEX st status TYPE set(10), INDEX ts_mm ts TYPE minmax GRANULARITY 2, "
           "INDEX tx msg TYPE text(tokenizer = splitByNonAlpha)")


def _rows(seed: int, start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    msg = np.char.add(np.char.add(rng.choice(WORDS, n), " "), rng.choice(WORDS, n))
    msg = msg.astype(object)
    rare = rng.choice(n, 3, replace=False)
    for k, i in enumerate(rare):
        msg[i] = f"kraken{k} rare event {i}"
    nulls = rng.random(n) < 0.05
    status = rng.choice(np.array([200, 404, 500]), n)
    return pa.table({
        "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "ts": pa.array(np.arange(start, start + n, dtype=np.int64) * 10),
        "msg": pa.array(msg, pa.string()),
        "trace_id": pa.array([f"tr{x:08d}" for x in rng.integers(0, 10**8, n)], pa.string()),
        "status": pa.array(status.astype(np.int32)),
        "note": pa.array([None if z else f"n{i % 7}" for i, z in enumerate(nulls)], pa.string()),
    })


def _write_pyarrow_lake(root: str) -> None:
    """Several files, Hive-partitioned by region, row groups from 8k rows to one of 100k (row_group_size 1M)."""
    specs = [("eu", 0, 40_000, 8192, True), ("eu", 1, 25_000, 10_000, False),
             ("us", 2, 100_000, 1_000_000, True), ("us", 3, 16_384, 8192, True)]
    start = 0
    for region, seed, n, rg, bloom in specs:
        d = os.path.join(root, f"region={region}")
        os.makedirs(d, exist_ok=True)
        kw = {"bloom_filter_options": {"trace_id": {"ndv": 50_000, "fpp": 0.01}}} if bloom else {}
        pq.write_table(_rows(seed, start, n), os.path.join(d, f"part-{seed}.parquet"), row_group_size=rg, **kw)
        start += n


def _fingerprints(root: str) -> dict[str, tuple[str, int]]:
    out = {}
    for dp, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(dp, f)
            with open(p, "rb") as fh:
                out[p] = (hashlib.sha256(fh.read()).hexdigest(), os.stat(p).st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("lake"))
    _write_pyarrow_lake(root)
    before = _fingerprints(root)
    db = skipidx.connect(str(tmp_path_factory.mktemp("db")))
    db.sql(f"CREATE TABLE logs ({INDEXES}) ENGINE = ParquetFiles('{root}/**/*.parquet')")
    yield root, db
    db.close()
    assert _fingerprints(root) == before, "a data file was written"


def _duck(root: str, where: str, cols: str = "id") -> list:
    q = (f"SELECT {cols} FROM read_parquet('{root}/**/*.parquet', hive_partitioning = true) "
         f"WHERE {where} ORDER BY id")
    return duckdb.sql(q).fetchall()


# predicate (skipidx, DuckDB)
PREDICATES = [
    ("hasToken(msg, 'kraken1')", "regexp_matches(msg, '(^|[^A-Za-z0-9])kraken1([^A-Za-z0-9]|$)')"),
    ("hasToken(msg, 'absentword')", "false"),
    ("msg LIKE '%raken2%'", "msg LIKE '%raken2%'"),
    ("msg LIKE '%rare event 1%'", "msg LIKE '%rare event 1%'"),
    ("trace_id = 'tr00001234'", "trace_id = 'tr00001234'"),
    ("trace_id IN ('tr00001234', 'tr55555555', 'tr00000000')", "trace_id IN ('tr00001234', 'tr55555555', 'tr00000000')"),
    ("id BETWEEN 41000 AND 41100", "id BETWEEN 41000 AND 41100"),
    ("ts >= 2000000 AND ts < 2000500", "ts >= 2000000 AND ts < 2000500"),
    ("id > 180000 OR id < 3", "id > 180000 OR id < 3"),
    ("note IS NULL AND id < 20000", "note IS NULL AND id < 20000"),
    ("note IS NOT NULL AND id > 181000", "note IS NOT NULL AND id > 181000"),
    ("region = 'us' AND id < 65010", "region = 'us' AND id < 65010"),
    ("region IN ('eu') AND status = 500 AND id < 1000", "region IN ('eu') AND status = 500 AND id < 1000"),
    ("status IN (404) AND hasToken(msg, 'kraken0')", "status IN (404) AND regexp_matches(msg, '(^|[^A-Za-z0-9])kraken0([^A-Za-z0-9]|$)')"),
    ("NOT (id >= 5)", "NOT (id >= 5)"),
]


@pytest.mark.parametrize("where,duck_where", PREDICATES, ids=[p[0][:40] for p in PREDICATES])
def test_rows_equal_duckdb(lake, where, duck_where):
    root, db = lake
    res = db.sql(f"SELECT id, msg, region FROM logs WHERE {where} ORDER BY id")
    assert res.fetchall() == _duck(root, duck_where, "id, msg, region")
    assert res.stats.granules_selected <= res.stats.granules_total


def test_existing_trace_ids_equal_duckdb(lake):
    root, db = lake
    ids = [r[0] for r in duckdb.sql(f"SELECT trace_id FROM read_parquet('{root}/**/*.parquet') "
                                    "WHERE id % 9973 = 5 ORDER BY id").fetchall()]
    assert len(ids) > 10
    for where in (f"trace_id = '{ids[3]}'", f"trace_id IN ({', '.join(repr(x) for x in ids)})"):
        r = db.sql(f"SELECT id, trace_id FROM logs WHERE {where} ORDER BY id")
        assert r.fetchall() == _duck(root, where, "id, trace_id")
        assert r.stats.granules_selected < r.stats.granules_total


def test_selective_queries_prune(lake):
    root, db = lake
    r = db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'kraken1')")
    assert r.stats.granules_selected <= 4 < r.stats.granules_total
    for name in ("tok", "tx"):      # a fixed-size bloom filter, the text index
        assert r.stats.index(name).granules_after <= 4, name
    r = db.sql("SELECT count() FROM logs WHERE region = 'eu'")
    assert r.fetchall() == [(65_000,)]
    assert r.stats.parts_selected == 2 and r.stats.parts_total == 4
    # the files' own Bloom filters answer = (trace ids are random: min/max cannot)
    r = db.sql("SELECT count() FROM logs WHERE trace_id = 'tr99999999x'")
    assert r.fetchall() == [(0,)]
    bloom = r.stats.index("ParquetBloom(trace_id)")
    assert bloom.granules_after < bloom.granules_before


def test_explain_shows_files_and_row_groups(lake):
    _, db = lake
    text = "\n".join(x[0] for x in db.sql(
        "EXPLAIN indexes = 1 SELECT * FROM logs WHERE hasToken(msg, 'kraken1') AND region = 'us'").fetchall())
    assert "ReadFromParquetFiles (logs)" in text
    assert "Files: " in text and "Row groups: " in text
    assert "Name: tok" in text and "Name: Partition(region)" in text


def test_chdb_file_agrees(lake):
    root, db = lake
    from skipidx.apps.research import chdb_session

    for where in ("hasToken(msg, 'kraken2')", "msg LIKE '%rare event%'", "hasToken(msg, 'error')",
                  "trace_id IN ('tr00001234', 'tr55555555')", "note IS NULL"):
        ch = chdb_session.query(f"SELECT count() FROM file('{root}/*/*.parquet', Parquet) WHERE {where}")
        got = db.sql(f"SELECT count() FROM logs WHERE {where}").fetchall()[0][0]
        assert int(str(ch).strip()) == got, where


def test_prune_and_scan_api(lake):
    root, db = lake
    kept = db.prune("logs", "hasToken(msg, 'kraken1') OR id = 7")
    assert kept and all(os.path.isabs(p) and rgs for p, rgs in kept)
    # the pairs hold every matching row: read them with pyarrow and filter
    got = []
    for p, rgs in kept:
        t = pq.ParquetFile(p).read_row_groups(rgs, columns=["id", "msg"])
        got += [i for i, m in zip(t["id"].to_pylist(), t["msg"].to_pylist())
                if i == 7 or "kraken1 " in m]
    assert sorted(got) == [r[0] for r in _duck(root, "regexp_matches(msg, 'kraken1 ') OR id = 7")]


def test_inferred_columns_and_errors(lake, tmp_path):
    root, _ = lake
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql(f"CREATE TABLE l ENGINE = ParquetFiles('{root}')")
    desc = dict((n, t) for n, t, _ in db.sql("DESCRIBE TABLE l").fetchall())
    assert desc == {"id": "Nullable(Int64)", "ts": "Nullable(Int64)", "msg": "Nullable(String)",
                    "trace_id": "Nullable(String)", "status": "Nullable(Int32)", "note": "Nullable(String)",
                    "region": "String"}
    assert db.sql("SELECT count() FROM l WHERE region = 'eu'").fetchall() == [(65_000,)]
    with pytest.raises(SkipidxError, match="read-only|never written"):
        db.sql("INSERT INTO l (id) VALUES (1)")
    with pytest.raises(SkipidxError, match="no data file"):
        db.sql(f"CREATE TABLE bad (nope String) ENGINE = ParquetFiles('{root}/**/*.parquet')")
    with pytest.raises(SkipidxError, match="no readable Parquet"):
        db.sql(f"CREATE TABLE bad ENGINE = ParquetFiles('{tmp_path}/none/*.parquet')")
    with pytest.raises(SkipidxError, match="MergeTree"):
        db.sql("CREATE TABLE m (a Int64) ENGINE = MergeTree; ALTER TABLE m REFRESH")
    db.sql("DROP TABLE l")
    assert os.path.isdir(root) and len(_fingerprints(root)) == 4
    db.close()


def test_sidecars_in_table_dir_only(lake):
    root, db = lake
    tdir = os.path.join(db.path, "logs")
    names = sorted(os.listdir(os.path.join(tdir, "sidecars")))
    assert len(names) == 4 * 7
    t = pa.ipc.open_file(os.path.join(tdir, "sidecars", names[0])).read_all()
    md = t.schema.metadata
    assert {b"skipidx.data_file", b"skipidx.data_size", b"skipidx.data_mtime_ns",
            b"skipidx.data_footer_xxh64"} <= set(md)
    assert t.column_names[:5] == ["fragment_id", "zone_start", "zone_length", "has_null", "null_count"]
    assert not any(n.endswith(".parquet") for n in os.listdir(tdir))


# ------------------------------------------------------------------ a changing lake
@pytest.fixture()
def small(tmp_path):
    root = tmp_path / "lake"
    root.mkdir()
    for i in range(3):
        pq.write_table(_rows(10 + i, i * 20_000, 20_000), root / f"f{i}.parquet", row_group_size=8192)
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql(f"CREATE TABLE logs (INDEX tok msg TYPE tokenbf_v1(2048, 3, 0)) ENGINE = ParquetFiles('{root}/*.parquet')")
    yield str(root), db
    db.close()


def _count(db, where):
    return db.sql(f"SELECT count() FROM logs WHERE {where}").fetchall()[0][0]


def _dcount(root, where):
    return duckdb.sql(f"SELECT count(*) FROM read_parquet('{root}/*.parquet') WHERE {where}").fetchall()[0][0]


def test_replaced_file_is_detected_and_refreshed(small):
    root, db = small
    other = _fingerprints(root)
    p = os.path.join(root, "f1.parquet")
    t = _rows(99, 20_000, 20_000)
    msg = t["msg"].to_pylist()
    msg[5] = "zebra stripes"
    t = t.set_column(t.schema.get_field_index("msg"), "msg", pa.array(msg))
    tmp = p + ".tmp"
    pq.write_table(t, tmp, row_group_size=5000)
    os.replace(tmp, p)
    # the stale sidecar says nothing about zebra: it must not be trusted
    r = db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'zebra')")
    assert r.fetchall() == [(1,)]
    assert any("changed file" in n for n in r.stats.notes)
    assert _count(db, "hasToken(msg, 'kraken0')") == _dcount(root, "msg LIKE 'kraken0 %'")
    rep = db.sql("ALTER TABLE logs REFRESH").fetchall()
    assert rep == [("rebuilt", p, "")]
    r = db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'zebra')")
    assert r.fetchall() == [(1,)] and not r.stats.notes and r.stats.granules_selected == 1
    del other[p]
    assert {k: v for k, v in _fingerprints(root).items() if k != p} == other


def test_appended_deleted_half_written(small):
    root, db = small
    pq.write_table(_rows(50, 60_000, 9000), os.path.join(root, "f3.parquet"), row_group_size=3000)
    # a file still being written: magic and some bytes, no footer
    with open(os.path.join(root, "f4.parquet"), "wb") as f:
        f.write(b"PAR1" + os.urandom(5000))
    os.unlink(os.path.join(root, "f0.parquet"))
    where = "hasToken(msg, 'kraken2') OR id BETWEEN 60100 AND 60200"
    r = db.sql(f"SELECT count() FROM logs WHERE {where}")
    exp = duckdb.sql(f"SELECT count(*) FROM read_parquet({[os.path.join(root, f'f{i}.parquet') for i in (1, 2, 3)]}) "
                     f"WHERE msg LIKE 'kraken2 %' OR id BETWEEN 60100 AND 60200").fetchall()[0][0]
    assert r.fetchall() == [(exp,)]
    assert any("f4.parquet" in n for n in r.stats.notes)
    assert any("not yet indexed" in n for n in r.stats.notes)
    rep = db.sql("ALTER TABLE logs REFRESH")
    acts = sorted((a, os.path.basename(p)) for a, p, _ in rep.fetchall())
    assert acts == [("indexed", "f3.parquet"), ("removed", "f0.parquet"), ("skipped", "f4.parquet")]
    r = db.sql(f"SELECT count() FROM logs WHERE {where}")
    assert r.fetchall() == [(exp,)]
    assert [n for n in r.stats.notes if "not yet indexed" in n] == []
    # the removed file's sidecar is gone after the next refresh (one refresh of grace)
    db.sql("ALTER TABLE logs REFRESH")
    sc = os.listdir(os.path.join(db.path, "logs", "sidecars"))
    assert len(sc) == 3


def test_file_truncated_or_replaced_while_query_runs(small):
    root, db = small
    from skipidx.expr.binder import bind_select
    from skipidx.engine.query import run_query
    from skipidx.planner.plan import plan_query
    from skipidx.sql.parser import parse

    def start(sql):
        t = db.catalog.table("logs")
        snap = t.snapshot()
        return snap, plan_query(snap, bind_select(snap.meta, parse(sql)[0]), db.index_cache)

    sql = "SELECT count() FROM logs WHERE id >= 0"
    # renamed over while the query runs: the query reads the version it started with
    snap, plan = start(sql)
    p = os.path.join(root, "f2.parquet")
    pq.write_table(_rows(7, 0, 10), p + ".tmp")
    os.replace(p + ".tmp", p)
    with snap:
        assert run_query(plan)[0].to_pylist() == [{"count()": 60_000}]
    assert _count(db, "id >= 0") == 40_010
    # truncated while the query runs: a clear error, never wrong rows or a crash
    snap, plan = start(sql)
    with open(os.path.join(root, "f1.parquet"), "r+b") as f:
        f.truncate(1000)
    with snap, pytest.raises(SkipidxError, match="changed during the query"):
        run_query(plan)
    # afterwards the truncated file is a half-written one: skipped and reported
    r = db.sql(sql)
    assert r.fetchall() == [(20_010,)] and any("f1.parquet" in n for n in r.stats.notes)


def test_concurrent_refresh_and_queries(small):
    root, db = small
    expected = _count(db, "hasToken(msg, 'kraken1') OR id < 100")
    stop = threading.Event()
    errors: list = []

    def churn():
        try:
            for k in range(6):
                p = os.path.join(root, f"f{k % 3}.parquet")
                shutil.copyfile(p, p + ".tmp")      # same bytes, a new file (new mtime)
                os.replace(p + ".tmp", p)
                db.sql("ALTER TABLE logs REFRESH")
        except Exception as e:   # noqa: BLE001 - reported by the assertion below
            errors.append(e)
        finally:
            stop.set()

    th = threading.Thread(target=churn)
    th.start()
    n = 0
    while not stop.is_set() or n < 3:
        with skipidx.connect(db.path) as other:
            assert other.sql("SELECT count() FROM logs WHERE hasToken(msg, 'kraken1') OR id < 100").fetchall() \
                == [(expected,)]
        assert _count(db, "hasToken(msg, 'kraken1') OR id < 100") == expected
        n += 1
    th.join()
    assert not errors


def test_duckdb_written_lake(tmp_path):
    """A lake written by DuckDB COPY (its own row groups, statistics and Bloom filters),
    Hive-partitioned by DuckDB."""
    root = tmp_path / "dlake"
    src = _rows(77, 0, 60_000)
    con = duckdb.connect()
    con.register("src", src)
    con.sql("CREATE TABLE t AS SELECT *, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END AS shard FROM src")
    con.sql(f"COPY t TO '{root}' (FORMAT parquet, PARTITION_BY (shard), ROW_GROUP_SIZE 10000)")
    before = _fingerprints(str(root))
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql(f"CREATE TABLE d (INDEX tok msg TYPE tokenbf_v1(2048, 3, 0), INDEX tr trace_id TYPE bloom_filter) "
           f"ENGINE = ParquetFiles('{root}/**/*.parquet')")
    tid = src["trace_id"][1234].as_py()
    for where, dw in [("hasToken(msg, 'kraken1')", "msg LIKE 'kraken1 %'"), (f"trace_id = '{tid}'", f"trace_id = '{tid}'"),
                      ("shard = 'b' AND id < 50", "shard = 'b' AND id < 50"), ("note IS NULL AND id < 2000", "note IS NULL AND id < 2000"),
                      ("msg LIKE '%aken0 rare%'", "msg LIKE '%aken0 rare%'")]:
        r = db.sql(f"SELECT id FROM d WHERE {where} ORDER BY id")
        exp = duckdb.sql(f"SELECT id FROM read_parquet('{root}/**/*.parquet', hive_partitioning = true) "
                         f"WHERE {dw} ORDER BY id").fetchall()
        assert r.fetchall() == exp, where
        if "LIKE" not in where:
            assert r.stats.granules_selected < r.stats.granules_total, where
    r = db.sql(f"SELECT count() FROM d WHERE trace_id = '{tid}'")
    assert r.stats.index("tr").granules_after < r.stats.granules_total
    db.close()
    assert _fingerprints(str(root)) == before


def test_failed_build_commits_nothing(small):
    """A build job that fails (a Spark task dying) leaves the table as it was: no sidecar
    of the new file, no staging leftovers; the next REFRESH indexes it."""
    root, db = small
    t = db.catalog.table("logs")
    state_before = open(os.path.join(t.path, "external.json"), "rb").read()
    sidecars_before = sorted(os.listdir(os.path.join(t.path, "sidecars")))
    pq.write_table(_rows(60, 90_000, 5000), os.path.join(root, "f9.parquet"))

    def dying(jobs):
        raise RuntimeError("task lost")

    with pytest.raises(RuntimeError):
        t.refresh(dying)
    assert open(os.path.join(t.path, "external.json"), "rb").read() == state_before
    assert sorted(os.listdir(os.path.join(t.path, "sidecars"))) == sidecars_before
    assert not [n for n in os.listdir(t.path) if n.startswith(".staging")]
    rep = t.refresh()
    assert [os.path.basename(p) for p in rep.indexed] == ["f9.parquet"]


_settings = pytest.importorskip("hypothesis").settings
from hypothesis import HealthCheck, given, strategies as st  # noqa: E402

_ATOMS = st.one_of(
    st.tuples(st.just("id"), st.sampled_from(["<", ">=", "="]), st.integers(0, 190_000)).map(lambda a: f"id {a[1]} {a[2]}"),
    st.sampled_from(["status = 404", "status IN (200, 500)", "region = 'eu'", "region != 'us'", "note IS NULL",
                     "note = 'n3'", "trace_id = 'tr00001234'", "ts BETWEEN 100000 AND 900000"]),
)


def _expr(depth):
    if depth == 0:
        return _ATOMS
    sub = _expr(depth - 1)
    return st.one_of(sub, st.tuples(sub, st.sampled_from(["AND", "OR"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
                     sub.map(lambda e: f"NOT ({e})"))


@_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_expr(2))
def test_random_where_equals_duckdb(lake, where):
    """Pruning by footers, Bloom filters, partitions and sidecars never drops a matching row."""
    root, db = lake
    got = db.sql(f"SELECT count() FROM logs WHERE {where}").fetchall()[0][0]
    exp = duckdb.sql(f"SELECT count(*) FROM read_parquet('{root}/**/*.parquet', hive_partitioning = true) "
                     f"WHERE {where}").fetchall()[0][0]
    assert got == exp, where


def test_add_materialize_drop_index(small):
    root, db = small
    db.sql("ALTER TABLE logs ADD INDEX tk msg TYPE sbbf('token', fpp = 0.01)")
    r = db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'kraken2')")
    assert r.stats.index("tk").note and "not materialized" in r.stats.index("tk").note
    db.sql("ALTER TABLE logs MATERIALIZE INDEX tk")
    r = db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'kraken2')")
    assert r.fetchall() == [(_dcount(root, "msg LIKE 'kraken2 %'"),)]
    assert r.stats.index("tk").granules_after < r.stats.granules_total
    db.sql("ALTER TABLE logs DROP INDEX tk")
    assert sorted({n.split(".")[1] for n in os.listdir(os.path.join(db.path, "logs", "sidecars"))}) == ["tok"]
    with pytest.raises(SkipidxError, match="never written"):
        db.sql("OPTIMIZE TABLE logs FINAL")


def test_many_files_open_lazily(small, monkeypatch):
    """Beyond KEEP_OPEN files a query opens a file when it reads it, checking its identity again."""
    import skipidx.store.external as ext

    root, db = small
    monkeypatch.setattr(ext, "KEEP_OPEN", 1)
    where = "hasToken(msg, 'kraken0') OR id % 5000 = 3"
    assert _count(db, where) == _dcount(root, "msg LIKE 'kraken0 %' OR id % 5000 = 3")
    t = db.catalog.table("logs")
    with t.snapshot() as snap:
        lazy = [f for f in snap.parts if f._fd is None]
        assert len(lazy) == 2
        p = lazy[-1].data_path
        pq.write_table(_rows(5, 0, 10), p + ".tmp")
        os.replace(p + ".tmp", p)
        with pytest.raises(SkipidxError, match="changed during the query"):
            lazy[-1].read(["id"])


def test_db_scan_streams_external_rows(lake):
    """db.scan on an external table: the kept row groups only, exactly the matching rows,
    as a RecordBatchReader DuckDB (or Polars) reads."""
    root, db = lake
    where = "hasToken(msg, 'kraken1') OR region = 'eu' AND id < 100"
    reader = db.scan("logs", where=where, columns=["id", "region"])  # noqa: F841 (DuckDB reads it by name)
    got = duckdb.sql("SELECT id, region FROM reader ORDER BY id").fetchall()
    assert got == _duck(root, "regexp_matches(msg, '(^|[^A-Za-z0-9])kraken1([^A-Za-z0-9]|$)') OR "
                              "region = 'eu' AND id < 100", "id, region")
    res = db.scan_result("logs", where="hasToken(msg, 'kraken1')", columns=["id"])
    n = sum(b.num_rows for b in res.fetch_record_batch(1000))
    assert n == 4 and res.stats.granules_selected < res.stats.granules_total


def test_cli_build_external(tmp_path, capsys):
    from skipidx.apps.cli import main

    root = tmp_path / "lake"
    root.mkdir()
    for i in range(2):
        pq.write_table(_rows(30 + i, i * 5000, 5000), root / f"f{i}.parquet", row_group_size=2000)
    dbdir = str(tmp_path / "db")
    assert main(["build", dbdir, "logs", "--external", "--from", f"{root}/*.parquet",
                 "--index", "INDEX tok msg TYPE sbbf('token')"]) == 0
    assert "indexed 2 new files" in capsys.readouterr().out
    pq.write_table(_rows(40, 10_000, 5000), root / "f2.parquet", row_group_size=2000)
    assert main(["build", dbdir, "logs"]) == 0
    assert "indexed 1 new files" in capsys.readouterr().out
    with skipidx.connect(dbdir) as db:
        assert _count(db, "hasToken(msg, 'kraken0')") == _dcount(str(root), "msg LIKE 'kraken0 %'") == 3


def test_count_from_text_index_sidecars(small):
    """count() of whole-token predicates from the text index sidecars' postings (no column
    read) equals the scanned count; a replaced file's stale sidecar is never used for it."""
    root, db = small
    db.sql("ALTER TABLE logs ADD INDEX tx msg TYPE text(tokenizer = splitByNonAlpha)")
    db.sql("ALTER TABLE logs MATERIALIZE INDEX tx")
    for where in ("hasToken(msg, 'kraken1')", "hasToken(msg, 'error') AND NOT hasToken(msg, 'disk')",
                  "hasToken(msg, 'alpha') OR hasToken(msg, 'zzz')"):
        direct = db.sql(f"SELECT count() FROM logs WHERE {where}")
        scanned = db.sql(f"SELECT count() FROM logs WHERE {where} SETTINGS query_plan_direct_read_from_text_index = 0, "
                         "text_index_row_filter = 0")
        assert direct.fetchall() == scanned.fetchall(), where
        assert any("postings" in n for n in direct.stats.notes), where
        assert direct.stats.rows_read == 0
    p = os.path.join(root, "f1.parquet")
    t = _rows(91, 20_000, 20_000)
    pq.write_table(t, p + ".tmp", row_group_size=4000)
    os.replace(p + ".tmp", p)
    direct = db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'kraken1')")
    assert direct.fetchall() == [(_dcount(root, "msg LIKE 'kraken1 %'"),)]
    assert not any("postings" in n for n in direct.stats.notes)


def test_file_appended_in_place_is_not_trusted(small):
    """Bytes appended to a data file in place (a writer reopening it): the footer no longer
    ends the file, so it is skipped and reported, never read with its stale sidecar; once
    the writer finished a new footer the file is read and REFRESH re-indexes it."""
    root, db = small
    p = os.path.join(root, "f2.parquet")
    original = open(p, "rb").read()
    with open(p, "ab") as f:
        f.write(b"\0" * 4096)
    r = db.sql("SELECT count() FROM logs WHERE id >= 0")
    assert r.fetchall() == [(40_000,)] and any("f2.parquet" in n for n in r.stats.notes)
    rep = db.sql("ALTER TABLE logs REFRESH").fetchall()
    assert [(a, os.path.basename(x)) for a, x, _ in rep] == [("skipped", "f2.parquet")]
    pq.write_table(_rows(13, 40_000, 20_000), p, row_group_size=8192)   # the writer's final file
    assert open(p, "rb").read() != original
    assert _count(db, "hasToken(msg, 'kraken0')") == _dcount(root, "msg LIKE 'kraken0 %'")
    rep = db.sql("ALTER TABLE logs REFRESH").fetchall()
    assert [(a, os.path.basename(x)) for a, x, _ in rep] == [("indexed", "f2.parquet")]


def test_selective_select_reports_all_rows_read(lake, monkeypatch):
    """A SELECT of columns whose kept row groups hold more rows than the streaming threshold
    but whose result is small returns complete: stats.rows_read counts every kept row group
    when db.sql returns (it used to count only the first scan job's)."""
    from skipidx.engine import streaming

    root, db = lake
    monkeypatch.setattr(streaming, "STREAM_MIN_ROWS", 20_000)
    where = "hasToken(msg, 'kraken0') OR hasToken(msg, 'kraken1') OR hasToken(msg, 'kraken2')"
    r = db.sql(f"SELECT id FROM logs WHERE {where} SETTINGS max_threads = 2")
    st = r.stats
    from skipidx.planner.plan import prune_where

    with db.catalog.table("logs").snapshot() as snap:
        sels = prune_where(snap, where, db.index_cache)[0]
        kept = sum(b - a for sel in sels for a, b in sel.ranges)
        kept_rows = sum(int(sel.part.marks[b] - sel.part.marks[a]) for sel in sels for a, b in sel.ranges)
    assert st.granules_selected == kept > 2 and not r.streaming
    assert kept_rows > streaming.STREAM_MIN_ROWS
    assert st.rows_read == kept_rows
    assert sorted(x[0] for x in r.fetchall()) == [x[0] for x in _duck(
        root, "regexp_matches(msg, '(^|[^A-Za-z0-9])kraken[012]([^A-Za-z0-9]|$)')")]
    # a large result still streams, and its figures grow as it is read
    r = db.sql("SELECT id FROM logs WHERE id >= 0 SETTINGS max_threads = 2")
    assert r.streaming and r.stats.rows_read < 181_384
    assert len(r.fetchall()) == 181_384 and r.stats.rows_read == 181_384


def test_sidecar_bloom_filters_default_to_their_own_seed(small):
    """A sidecar bloom_filter / sbbf without an explicit seed hashes with SIDECAR_SEED (not
    Parquet's 0, whose false positives the files' own filters share); an explicit seed and
    tokenbf_v1's ClickHouse seed are kept; a table whose params say seed 0 (made before the
    default) keeps reading and rebuilding its sidecars with seed 0."""
    import dataclasses

    from skipidx.core.sbbf import SBBF
    from skipidx.hashing import parquet_xxh64
    from skipidx.core.hashing import xxh64_array
    import skipidx.store.external as ext
    from skipidx.store.sidecar import SIDECAR_SEED

    root, db = small
    db.sql("ALTER TABLE logs ADD INDEX bf trace_id TYPE bloom_filter(0.01), ADD INDEX sv trace_id TYPE sbbf('value'), "
           "ADD INDEX s0 trace_id TYPE sbbf('value', seed = 0), ADD INDEX sk msg TYPE sbbf('token')")
    db.sql("ALTER TABLE logs REFRESH")
    seeds = {i.name: i.params["seed"] for i in db.table_meta("logs").indexes}
    assert seeds == {"tok": 0, "bf": SIDECAR_SEED, "sv": SIDECAR_SEED, "s0": 0, "sk": SIDECAR_SEED}
    assert SIDECAR_SEED != 0
    tdir = os.path.join(db.path, "logs")
    st = ext._read_state(tdir)
    f0 = os.path.join(root, "f0.parquet")
    rg0 = pq.ParquetFile(f0).read_row_group(0, columns=["trace_id"])["trace_id"].combine_chunks()
    bank = pa.ipc.open_file(os.path.join(tdir, "sidecars", st.files[f0].sidecars["bf"]["file"])).read_all()
    filt = SBBF.from_bytes(bank["bloom_filter_data"][0].as_py())
    assert filt.check_hashes(xxh64_array(rg0, SIDECAR_SEED)).all()
    assert not filt.check_hashes(parquet_xxh64(rg0)).all()      # not Parquet's hashes
    ids = [r[0] for r in duckdb.sql(f"SELECT trace_id FROM read_parquet('{root}/*.parquet') "
                                    "WHERE id % 4999 = 3").fetchall()]
    for name in ("bf", "sv", "s0"):
        others = ",".join(n for n in ("bf", "sv", "s0") if n != name)
        r = db.sql(f"SELECT count() FROM logs WHERE trace_id IN ({ids[2]!r}, {ids[9]!r}) "
                   f"SETTINGS ignore_data_skipping_indices = '{others}'")
        assert r.fetchall() == [(2,)]
        assert r.stats.index(name).granules_after < r.stats.granules_total
    # a table made before the default: its params say seed 0; its sidecars are read and rebuilt so
    with ext.WriteLock(tdir):
        st = ext._read_state(tdir)
        st.meta = st.meta.with_indexes([dataclasses.replace(i, params={**i.params, "seed": 0}, definition=dataclasses.replace(
            i.definition, kwargs=())) if i.name == "bf" else i for i in st.meta.indexes])
        ext._write_state(tdir, st)
    db.sql("ALTER TABLE logs MATERIALIZE INDEX bf")
    assert {i.name: i.params["seed"] for i in db.table_meta("logs").indexes}["bf"] == 0
    r = db.sql(f"SELECT count() FROM logs WHERE trace_id = '{ids[1]}' SETTINGS ignore_data_skipping_indices = 'sv,s0'")
    assert r.fetchall() == [(1,)] and r.stats.index("bf").granules_after < r.stats.granules_total
    st = ext._read_state(tdir)
    bank = pa.ipc.open_file(os.path.join(tdir, "sidecars", st.files[f0].sidecars["bf"]["file"])).read_all()
    assert SBBF.from_bytes(bank["bloom_filter_data"][0].as_py()).check_hashes(parquet_xxh64(rg0)).all()


def test_spark_build_task_groups():
    """The Spark builder deals build jobs into about two tasks per slot, largest first, each
    job exactly once, the groups' bytes balanced (no Spark needed to check the dealing)."""
    from skipidx.apps.spark.lake import _task_groups
    from skipidx.store.external import BuildJob

    sizes = [900, 100, 500, 500, 300, 300, 200, 800, 50, 650, 400]
    jobs = [BuildJob(f"/d/f{i}.parquet", {"size": s}, {}, ["i"], {}, "/o") for i, s in enumerate(sizes)]
    groups = _task_groups(jobs, 2)
    assert len(groups) == 4
    assert sorted(j.path for g in groups for j in g) == sorted(j.path for j in jobs)
    loads = [sum(j.identity["size"] for j in g) for g in groups]
    assert max(loads) - min(loads) <= max(sizes) // 2
    assert [len(g) for g in _task_groups(jobs[:3], 8)] == [1, 1, 1]
    assert _task_groups(jobs[:1], 0) == [[jobs[0]]]


def test_show_create_external_table_round_trips(small):
    """SHOW CREATE TABLE of an external table names its ENGINE = ParquetFiles('glob') (it said
    MergeTree), and running it makes an equal table (columns, indexes, seeds) over the same files."""
    root, db = small
    db.sql("ALTER TABLE logs ADD INDEX bf trace_id TYPE bloom_filter(0.01)")
    text = db.sql("SHOW CREATE TABLE logs").fetchall()[0][0]
    assert f"ENGINE = ParquetFiles('{root}/*.parquet')" in text and "MergeTree" not in text
    assert "ORDER BY" not in text and "seed = " in text
    db.sql(text.replace("default.logs", "again"))
    assert db.sql("SHOW CREATE TABLE again").fetchall()[0][0] == text.replace("default.logs", "default.again")
    a = db.table_meta("logs")
    b = db.table_meta("again")
    assert [(i.name, i.params) for i in a.indexes] == [(i.name, i.params) for i in b.indexes]
    assert _count(db, "hasToken(msg, 'kraken1')") == db.sql(
        "SELECT count() FROM again WHERE hasToken(msg, 'kraken1')").fetchall()[0][0]


def test_recorded_footers_skip_the_check_changed_ones_do_not(small, monkeypatch):
    """A file whose identity (size, mtime, footer checksum) is the table's record was
    footer-checked by REFRESH: a cold query does not check it again. A file rewritten in
    place with the same size and mtime but other footer bytes is checked (and refused when
    the check fails), never trusted."""
    from skipidx.core.errors import CorruptionError
    from skipidx.core.lru import clear_caches
    from skipidx.store import parquet_check

    root, db = small
    real = parquet_check.check_footer_bytes
    seen: list[str] = []
    refuse: set[str] = set()

    def spy(footer, where):
        seen.append(os.path.basename(where))
        if os.path.basename(where) in refuse:
            raise CorruptionError("refused by the test", path=where)
        return real(footer, where)

    monkeypatch.setattr(parquet_check, "check_footer_bytes", spy)
    clear_caches()
    assert _count(db, "hasToken(msg, 'kraken0')") == _dcount(root, "msg LIKE 'kraken0 %'")
    assert seen == []
    # same size and mtime, other footer bytes (the writer's name): another identity
    p = os.path.join(root, "f1.parquet")
    st = os.stat(p)
    data = bytearray(open(p, "rb").read())
    at = data.rfind(b"parquet-cpp-arrow")
    assert at > len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    data[at:at + 7] = b"PARQUET"
    with open(p, "r+b") as f:
        f.write(data)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (os.stat(p).st_size, os.stat(p).st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    clear_caches()
    r = db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'kraken0')")
    assert r.fetchall()[0][0] == _dcount(root, "msg LIKE 'kraken0 %'")
    assert seen == ["f1.parquet"] and any("changed file" in n for n in r.stats.notes)
    refuse.add("f1.parquet")
    clear_caches()
    r = db.sql("SELECT count() FROM logs WHERE id >= 0")
    assert r.fetchall() == [(40_000,)] and any("f1.parquet" in n and "refused" in n for n in r.stats.notes)
