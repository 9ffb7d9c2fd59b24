"""EXPLAIN over table functions and derived tables: the query is bound against the
source's columns (the same errors as running it), the plan names ClickHouse's read
step (as chDB's EXPLAIN does) and a derived table carries its inner plan."""
from __future__ import annotations

import pytest

import skipidx


@pytest.fixture(scope="module")
def db():
    with skipidx.connect() as d:
        d.sql("CREATE TABLE t (a UInt32, s String, INDEX i s TYPE bloom_filter GRANULARITY 1) "
              "ORDER BY a SETTINGS index_granularity = 2")
        d.sql("INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z'), (4, 'w')")
        yield d


def _lines(db, sql: str) -> list[str]:
    res = db.sql(sql)
    assert res.columns == ["explain"]
    return [r[0] for r in res.fetchall()]


def test_explain_numbers(db):
    assert _lines(db, "EXPLAIN SELECT number FROM numbers(3)") == [
        "Expression", "  ReadFromSystemNumbers (numbers(3))", "    Columns: number"]
    assert _lines(db, "EXPLAIN SELECT number FROM numbers(10) WHERE number > 3") == [
        "Expression", "  Filter: number > 3", "  ReadFromSystemNumbers (numbers(10))", "    Columns: number"]
    # PLAN is the default kind; indexes = 1 adds nothing where there is no index
    assert _lines(db, "EXPLAIN PLAN indexes = 1 SELECT number FROM numbers(2, 3)") == [
        "Expression", "  ReadFromSystemNumbers (numbers(2, 3))", "    Columns: number"]


def test_explain_numbers_is_not_materialized(db):
    # the largest numbers() here: its EXPLAIN only checks the arguments
    lines = _lines(db, "EXPLAIN SELECT count() FROM numbers(200000000)")
    assert lines[1] == "  ReadFromSystemNumbers (numbers(200000000))"


def test_explain_values(db):
    assert _lines(db, "EXPLAIN SELECT a FROM values('a UInt8, b String', (1, 'x')) WHERE b = 'x'") == [
        "Expression", "  Filter: b = 'x'", "  ReadFromStorage (values('a UInt8, b String', (1, 'x')))",
        "    Columns: a, b"]


def test_explain_derived_tables(db):
    assert _lines(db, "EXPLAIN SELECT * FROM (SELECT 1 AS a)") == [
        "Expression", "  ReadFromSubquery (_subquery)", "    Columns: a",
        "    Expression", "      (no table: nothing to read)"]
    assert _lines(db, "EXPLAIN SELECT a FROM (SELECT number AS a FROM numbers(5)) AS d WHERE a > 1") == [
        "Expression", "  Filter: a > 1", "  ReadFromSubquery (d)", "    Columns: a",
        "    Expression", "      ReadFromSystemNumbers (numbers(5))", "        Columns: number"]


def test_explain_derived_table_over_a_table_keeps_its_pruning(db):
    lines = _lines(db, "EXPLAIN indexes = 1 SELECT x FROM (SELECT a AS x FROM t WHERE s = 'y') WHERE x > 0")
    assert lines[:5] == ["Expression", "  Filter: x > 0", "  ReadFromSubquery (_subquery)", "    Columns: x",
                         "    Expression"]
    inner = [x[4:] for x in lines[4:]]
    assert inner == _lines(db, "EXPLAIN indexes = 1 SELECT a AS x FROM t WHERE s = 'y'")
    assert any("Name: i" in x for x in inner) and any("Granules: 1/2" in x for x in inner)


def test_explain_nested_and_system_sources(db):
    lines = _lines(db, "EXPLAIN SELECT b FROM (SELECT * FROM (SELECT 1 AS a, 'x' AS b))")
    assert lines[:3] == ["Expression", "  ReadFromSubquery (_subquery)", "    Columns: b"]
    assert lines[3:6] == ["    Expression", "      ReadFromSubquery (_subquery)", "        Columns: a, b"]
    lines = _lines(db, "EXPLAIN SELECT name FROM (SELECT name FROM system.tables)")
    assert "      ReadFromSystemTables (system.tables)" in lines


@pytest.mark.parametrize("sql", [
    "SELECT nope FROM numbers(3)",
    "SELECT b FROM (SELECT 1 AS a)",
    "SELECT number FROM numbers(100000000000)",
    "SELECT a FROM (SELECT 1 AS a, 2 AS a)",
    "SELECT x FROM (SELECT nope FROM t)",
])
def test_explain_errors_are_the_query_errors(db, sql):
    with pytest.raises(skipidx.SkipidxError) as ran:
        db.sql(sql).fetchall()
    with pytest.raises(skipidx.SkipidxError) as explained:
        db.sql("EXPLAIN " + sql)
    assert "^" in str(explained.value)
    assert str(ran.value).split(" (line")[0] == str(explained.value).split(" (line")[0]


@pytest.mark.chdb
@pytest.mark.parametrize("sql,step", [
    ("SELECT number FROM numbers(3)", "ReadFromSystemNumbers"),
    ("SELECT number FROM numbers(10) WHERE number > 3", "ReadFromSystemNumbers"),
    ("SELECT * FROM values('a UInt8', 1, 2)", "ReadFromStorage"),
    ("SELECT a FROM (SELECT number AS a FROM numbers(5)) WHERE a > 1", "ReadFromSystemNumbers"),
])
def test_read_step_named_as_chdb(db, chdb, sql, step):
    theirs = chdb.query("EXPLAIN " + sql, "TSV").bytes().decode()
    assert step in theirs
    ours = _lines(db, "EXPLAIN " + sql)
    assert any(x.strip().startswith(step + " (") for x in ours), ours
