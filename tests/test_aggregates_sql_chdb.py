"""Aggregates in SQL vs chDB: uniq, the -If combinator, any/anyLast, argMin/argMax,
quantile(s)[Exact], groupArray -- values, ClickHouse types and output column names,
with NULLs, empty inputs and groups where nothing matches, with and without GROUP BY."""
from __future__ import annotations

import math

import pytest

import skipidx
from skipidx.apps.research import chdb_session as ch

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

DDL = ("CREATE TABLE {t} (k UInt8, i Int32, u UInt64, f Float64, s String, ni Nullable(Int32), "
       "ns Nullable(String)) ENGINE = MergeTree ORDER BY k")
ROWS = ("INSERT INTO {t} VALUES (0, -5, 10, 1.5, 'b', NULL, 'x'), (0, 7, 3, nan, 'a', 4, NULL), "
        "(1, 2, 2, -0.5, 'c', NULL, NULL), (1, 2, 8, 2.5, 'a', -3, 'z'), (2, 9, 1, 0, 'd', 6, 'y'), "
        "(2, -1, 5, 7.25, 'e', 6, 'w'), (2, 3, 0, 1, '', NULL, 'v'), (3, 4, 4, 4, 'f', NULL, NULL)")

AGGS = [
    "uniq(i)", "uniq(ni)", "uniq(s)", "uniqIf(i, i > 0)",
    "countIf(i > 2)", "countIf(ni, i > 0)", "countIf(ni > 0)",
    "sumIf(i, i > 100)", "sumIf(u, u > 2)", "sumIf(ni, ni > 0)", "sumIf(f, f > 0)",
    "avgIf(i, i > 100)", "avgIf(u, u > 2)", "avgIf(ni, ni > 0)",
    "minIf(i, i > 100)", "minIf(s, i > 2)", "minIf(ns, i > 2)", "maxIf(f, f < 3)", "maxIf(ni, i > 100)",
    "any(s)", "any(ni)", "anyLast(i)", "anyLast(ni)", "anyLast(ns)", "anyIf(ni, i > 2)",
    "argMin(s, i)", "argMax(s, i)", "argMin(i, ni)", "argMax(ns, f)", "argMin(ni, u)", "argMinIf(s, u, u > 3)",
    "quantile(0.5)(i)", "quantile(0.3)(u)", "quantile(f)", "quantile(0.5)(ni)", "quantileExact(0.5)(i)",
    "quantileExact(0.3)(u)", "quantileExact(0.9)(ni)", "quantiles(0.1, 0.5, 0.9)(i)",
    "quantilesExact(0.25, 1)(u)", "quantileIf(0.5)(i, i > 0)",
    "groupArray(i)", "groupArray(ns)", "groupArrayIf(s, i > 2)",
]


@pytest.fixture(scope="module")
def dbs():
    name = ch.scratch_database("agg")
    ch.query(DDL.format(t=f"{name}.t"))
    ch.query(ROWS.format(t=f"{name}.t"))
    db = skipidx.connect()
    db.sql(DDL.format(t="t"))
    db.sql(ROWS.format(t="t"))
    yield db, name
    db.close()
    ch.query(f"DROP DATABASE IF EXISTS {name}")


def _norm(v):
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if isinstance(v, float):
        return round(v, 9)
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def _check(dbs, q: str) -> None:
    db, name = dbs
    theirs_sql = q.replace(" FROM t", f" FROM {name}.t")
    theirs = ch.query(theirs_sql, "ArrowTable")
    types = [line.split("\t")[1] for line in
             ch.query(f"DESCRIBE ({theirs_sql})", "TabSeparated").bytes().decode().splitlines()]
    mine = db.sql(q)
    assert mine.columns == theirs.column_names, q
    assert mine.types == types, q
    got = [tuple(_norm(v) for v in r.values()) for r in mine.to_arrow().to_pylist()]
    want = [tuple(_norm(v) for v in r.values()) for r in theirs.to_pylist()]
    assert got == want, q


@pytest.mark.parametrize("agg", AGGS)
def test_whole_table(dbs, agg):
    _check(dbs, f"SELECT {agg} FROM t")


@pytest.mark.parametrize("agg", AGGS)
def test_group_by(dbs, agg):
    _check(dbs, f"SELECT k, {agg} FROM t GROUP BY k ORDER BY k")


@pytest.mark.parametrize("agg", AGGS)
def test_empty_input(dbs, agg):
    _check(dbs, f"SELECT {agg} FROM t WHERE k > 100")


def test_several_and_having(dbs):
    _check(dbs, "SELECT k, countIf(i > 0) AS c, argMax(s, u), quantile(0.5)(u) FROM t GROUP BY k "
                "HAVING c > 0 ORDER BY k")
    _check(dbs, "SELECT k, uniq(s), groupArray(u) FROM t WHERE i > 0 GROUP BY k ORDER BY uniq(s), k")


@pytest.mark.parametrize("q", [
    "SELECT quantile(1.5)(i) FROM t", "SELECT quantile(0.5)(s) FROM t", "SELECT argMin(i) FROM t",
    "SELECT sumIf(i) FROM t", "SELECT sumIf(s, 1) FROM t", "SELECT sum(0.5)(i) FROM t",
    "SELECT k FROM t WHERE countIf(i > 0) > 1",
])
def test_errors(dbs, q):
    db, name = dbs
    with pytest.raises(Exception):
        ch.query(q.replace(" FROM t", f" FROM {name}.t"), "ArrowTable")
    with pytest.raises(skipidx.SkipidxError):
        db.sql(q)
