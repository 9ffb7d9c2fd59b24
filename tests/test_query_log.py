"""The database's log of recent SELECTs (engine/query_log.py): what `skipidx advise` reads."""
import json
import os

import pytest

import skipidx
from skipidx.engine import query_log


@pytest.fixture()
def db(tmp_path):
    with skipidx.connect(tmp_path / "db") as d:
        d.sql("CREATE TABLE t (a String, n UInt32, INDEX i a TYPE tokenbf_v1(256, 2, 0)) ORDER BY n "
              "SETTINGS index_granularity = 2")
        d.sql("INSERT INTO t VALUES ('x y', 1), ('z', 2), ('w', 3), ('v', 4)")
        yield d


def test_selects_are_logged_with_params_and_pruning(db):
    db.sql("SELECT count() FROM t WHERE a = {v:String}", params={"v": "z"})
    db.sql("SELECT * FROM t WHERE hasToken(a, 'x') ; ")
    db.sql("SELECT 1; SELECT n FROM t WHERE n > 2")
    db.execute("SELECT n FROM t WHERE a IN ({p:String}, 'q')", {"p": "w", "unused": 1})
    with pytest.raises(skipidx.SkipidxError):
        db.sql("SELECT nope FROM t")          # a failed SELECT is not a workload entry
    log = db.query_log()
    assert log.column_names[:4] == ["event_time", "query", "query_parameters", "query_duration_ms"]
    q = log.column("query").to_pylist()
    assert q == ["SELECT count() FROM t WHERE a = {v:String}", "SELECT * FROM t WHERE hasToken(a, 'x')",
                 "SELECT 1", "SELECT n FROM t WHERE n > 2", "SELECT n FROM t WHERE a IN ({p:String}, 'q')"]
    params = [json.loads(x) for x in log.column("query_parameters").to_pylist()]
    assert params[0] == {"v": "z"} and params[1] == {} and params[4] == {"p": "w"}
    hit = log.slice(1, 1).to_pylist()[0]
    assert hit["granules_total"] == 2 and hit["granules_selected"] == 1
    assert db.query_log(limit=2).column("query").to_pylist() == q[-2:]
    # DDL and INSERT are not SELECTs; the log file lives in the database directory
    assert not any("INSERT" in x or "CREATE" in x for x in q)
    assert os.path.exists(os.path.join(db.path, query_log.QUERY_LOG_FILE))
    # the file is not a table
    assert db.sql("SHOW TABLES").fetchall() == [("t",)]


def test_log_is_bounded_and_survives_garbage(db, monkeypatch):
    monkeypatch.setattr(query_log, "QUERY_LOG_MAX_ENTRIES", 5)
    monkeypatch.setattr(query_log, "QUERY_LOG_MAX_BYTES", 1500)
    path = os.path.join(db.path, query_log.QUERY_LOG_FILE)
    for i in range(40):
        db.sql(f"SELECT count() FROM t WHERE n = {i}")
        if os.path.exists(path):      # rotation bounds each file: the bound plus one entry
            assert os.path.getsize(path) <= 1500 + 300
    assert os.path.exists(path + ".1") and os.path.getsize(path + ".1") <= 1500 + 300
    with open(path, "ab") as fh:
        fh.write(b"{torn line\n[1, 2]\n")
    db.sql("SELECT count() FROM t WHERE n = 99")
    q = db.query_log().column("query").to_pylist()
    assert q == [f"SELECT count() FROM t WHERE n = {i}" for i in (36, 37, 38, 39, 99)]


def test_unwritable_log_never_fails_the_query(db):
    path = os.path.join(db.path, query_log.QUERY_LOG_FILE)
    for p in (path, path + ".1"):
        if os.path.exists(p):
            os.remove(p)
    os.mkdir(path)     # a directory where the file should be: every append fails
    assert db.sql("SELECT count() FROM t").fetchall() == [(4,)]
    os.rmdir(path)
    assert db.query_log().num_rows == 0


def test_log_queries_setting(db):
    db.sql("SELECT count() FROM t SETTINGS log_queries = 0")
    db.sql("SET log_queries = 0")
    db.sql("SELECT count() FROM t WHERE n = 1")
    db.sql("SELECT count() FROM t WHERE n = 2 SETTINGS log_queries = 1")
    assert db.query_log().column("query").to_pylist() == ["SELECT count() FROM t WHERE n = 2 SETTINGS log_queries = 1"]
