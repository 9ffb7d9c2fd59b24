"""Subqueries vs chDB: ``x [NOT] IN (SELECT ...)`` (run first, then a constant IN list
that prunes like one) and derived tables ``FROM (SELECT ...)``; rows and types."""
from __future__ import annotations

import pytest

import skipidx
from skipidx.apps.research import chdb_session as ch
from skipidx.sql.parser import parse

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

SETUP = [
    "CREATE TABLE {db}t (id UInt32, s String, n Nullable(Int32), INDEX i s TYPE bloom_filter GRANULARITY 1, "
    "INDEX j n TYPE set(0) GRANULARITY 1) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES (1, 'a', 1), (2, 'b', NULL), (3, 'c', 3), (4, 'd', 4), (5, 'e', NULL), (6, 'a', 6)",
    "CREATE TABLE {db}u (v String, w Nullable(Int32)) ENGINE = MergeTree ORDER BY tuple()",
    "INSERT INTO {db}u VALUES ('a', 1), ('c', NULL), ('zz', 4)",
]

SAME = [
    "SELECT id FROM {db}t WHERE s IN (SELECT v FROM {db}u) ORDER BY id",
    "SELECT id FROM {db}t WHERE s NOT IN (SELECT v FROM {db}u) ORDER BY id",
    "SELECT id FROM {db}t WHERE n IN (SELECT w FROM {db}u) ORDER BY id",
    "SELECT id FROM {db}t WHERE n NOT IN (SELECT w FROM {db}u) ORDER BY id",
    "SELECT id FROM {db}t WHERE id IN (SELECT toUInt32(3) + number FROM numbers(2)) ORDER BY id",
    "SELECT id FROM {db}t WHERE id IN (SELECT number FROM numbers(0)) ORDER BY id",
    "SELECT id FROM {db}t WHERE id NOT IN (SELECT number FROM numbers(0)) ORDER BY id",
    "SELECT id FROM {db}t WHERE s IN (SELECT v FROM {db}u WHERE w IN (SELECT n FROM {db}t)) ORDER BY id",
    "SELECT count() FROM {db}t WHERE id IN (SELECT id FROM {db}t WHERE s = 'a')",
    "SELECT max(x), count() FROM (SELECT id * 2 AS x, s FROM {db}t WHERE id > 2) WHERE s != 'e'",
    "SELECT s, count() AS c FROM (SELECT s FROM {db}t) GROUP BY s ORDER BY s",
    "SELECT * FROM (SELECT 1 AS a, 'x' AS b) AS q",
    "SELECT n, id FROM (SELECT n, id FROM {db}t) WHERE n > 1 ORDER BY id",
    "SELECT m FROM (SELECT min(n) AS m FROM {db}t WHERE id > 100)",
    "SELECT n FROM (SELECT n FROM {db}t WHERE id = 1)",
    "SELECT a FROM (SELECT 1 AS a) AS t WHERE t.a = 1",
    "SELECT count() FROM (SELECT * FROM numbers(10) WHERE number IN (SELECT number * 3 FROM numbers(4)))",
]


@pytest.fixture(scope="module")
def dbs():
    name = ch.scratch_database("sq")
    db = skipidx.connect()
    for q in SETUP:
        ch.query(q.format(db=f"{name}."))
        db.sql(q.format(db=""))
    yield db, name
    db.close()
    ch.query(f"DROP DATABASE IF EXISTS {name}")


@pytest.mark.parametrize("q", SAME)
def test_like_chdb(dbs, q):
    db, name = dbs
    theirs_sql = q.format(db=f"{name}.")
    theirs = ch.query(theirs_sql, "ArrowTable")
    types = [line.split("\t")[1] for line in
             ch.query(f"DESCRIBE ({theirs_sql})", "TabSeparated").bytes().decode().splitlines()]
    mine = db.sql(q.format(db=""))
    assert mine.columns == theirs.column_names
    assert mine.types == types
    assert mine.to_arrow().to_pylist() == theirs.to_pylist()


@pytest.mark.parametrize("q", [
    "SELECT id FROM {db}t WHERE id IN (SELECT 1, 2)",
    "SELECT id, s FROM {db}t WHERE s IN (SELECT '1048576', s FROM {db}t)",
])
def test_errors_like_chdb(dbs, q):
    db, name = dbs
    with pytest.raises(Exception, match="NUMBER_OF_COLUMNS_DOESNT_MATCH"):
        ch.query(q.format(db=f"{name}."), "ArrowTable")
    with pytest.raises(skipidx.SkipidxError, match="NUMBER_OF_COLUMNS_DOESNT_MATCH"):
        db.sql(q.format(db=""))


def test_in_subquery_prunes_like_a_list(dbs):
    db, _ = dbs
    sub = db.sql("SELECT id FROM t WHERE s IN (SELECT v FROM u WHERE v = 'c')")
    lst = db.sql("SELECT id FROM t WHERE s IN ('c')")
    assert sub.fetchall() == lst.fetchall() == [(3,)]
    assert sub.stats.granules_selected == lst.stats.granules_selected < sub.stats.granules_total


def test_explain_in_from_refused(dbs):
    db, _ = dbs
    with pytest.raises(skipidx.SkipidxError, match="EXPLAIN"):
        db.sql("SELECT * FROM (EXPLAIN indexes = 1 SELECT * FROM t WHERE s = 'a')")


@pytest.mark.parametrize("q", [
    "SELECT * FROM t WHERE x IN (SELECT a FROM u WHERE b > 1) AND y NOT IN (SELECT 1)",
    "SELECT min(n) FROM (SELECT if(number < 15, number, NULL) AS n FROM numbers(10, 20))",
    "SELECT x FROM (SELECT 1 AS x) AS t",
])
def test_round_trip(q):
    s = parse(q)[0]
    assert s.to_sql() == q
    assert parse(s.to_sql())[0] == s
