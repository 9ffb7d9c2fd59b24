"""PARTITION BY (accepted, recorded, shown) and the log/memory engines (stored as a
MergeTree without sorting key) vs chDB's SHOW CREATE TABLE and answers."""
from __future__ import annotations

import pytest

import skipidx
from skipidx.apps.research import chdb_session as ch

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

CREATES = [
    "CREATE TABLE {db}a (key Int, value Int, INDEX idx value TYPE minmax GRANULARITY 1) "
    "Engine=MergeTree() ORDER BY key PARTITION BY key",
    "CREATE TABLE {db}b (d Date, x String) ENGINE = MergeTree PARTITION BY toYYYYMM(d) ORDER BY x",
    "CREATE TABLE {db}f (x Int32) ENGINE = MergeTree ORDER BY x PARTITION BY tuple()",
    "CREATE TABLE {db}c (value Nullable(String)) ENGINE = TinyLog",
    "CREATE TABLE {db}d (x Int32, s String) ENGINE = Memory",
    "CREATE TABLE {db}l (x Int32) ENGINE = Log",
]


@pytest.mark.parametrize("ddl", CREATES)
def test_show_create_like_chdb(ddl, tmp_path):
    name = ch.scratch_database("pb")
    try:
        ch.query(ddl.format(db=f"{name}."))
        table = ddl.split()[2].format(db="")
        theirs = ch.query(f"SHOW CREATE TABLE {name}.{table}", "TabSeparatedRaw").bytes().decode().rstrip("\n")
        with skipidx.connect(str(tmp_path / "db")) as db:
            db.sql(ddl.format(db=""))
        with skipidx.connect(str(tmp_path / "db")) as db:      # recorded in the metadata
            mine = db.sql(f"SHOW CREATE TABLE {table}").fetchall()[0][0]
        assert mine == theirs.replace(f"CREATE TABLE {name}.", "CREATE TABLE default.")
    finally:
        ch.query(f"DROP DATABASE IF EXISTS {name}")


def test_log_engine_rows_and_in_subquery():
    with skipidx.connect() as db:
        db.sql("CREATE TABLE v (value Nullable(String)) ENGINE = TinyLog")
        db.sql("INSERT INTO v VALUES ('b'), ('a'), (NULL)")
        db.sql("CREATE TABLE t (s String, INDEX i s TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY s")
        db.sql("INSERT INTO t VALUES ('a'), ('c')")
        assert sorted(db.sql("SELECT value FROM v").fetchall(), key=repr) == [("a",), ("b",), (None,)]
        assert db.sql("SELECT s FROM t WHERE s IN (SELECT value FROM v)").fetchall() == [("a",)]


@pytest.mark.parametrize("ddl", [
    "CREATE TABLE e (x Int32) ENGINE = MergeTree ORDER BY x PARTITION BY nope",
    "CREATE TABLE g (x Int32) ENGINE = TinyLog ORDER BY x",
    "CREATE TABLE h (x Int32, INDEX i x TYPE minmax) ENGINE = Memory",
])
def test_errors(ddl):
    name = ch.scratch_database("pe")
    try:
        with pytest.raises(Exception):
            ch.query(ddl.replace("TABLE ", f"TABLE {name}.", 1))
    finally:
        ch.query(f"DROP DATABASE IF EXISTS {name}")
    with skipidx.connect() as db, pytest.raises(skipidx.SkipidxError):
        db.sql(ddl)
