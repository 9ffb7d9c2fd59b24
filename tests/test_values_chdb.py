"""The values() table function vs chDB: rows, column names and ClickHouse types,
with and without a structure; errors where chDB errs."""
from __future__ import annotations

import math

import pytest

import skipidx
from skipidx.apps.research import chdb_session as ch

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

SAME = [
    "SELECT * FROM values((nan, 0.), (0., 0.), (5., 5.))",
    "SELECT * FROM values((-5, 0), (nan, 0.), (0., 0.), (5., 5.))",
    "SELECT * FROM values((NULL, 0.), (0., 0.), (5., 5.))",
    "SELECT * FROM values(NULL, 0, 5., 5.)",
    "SELECT * FROM values(1, 2, 300)",
    "SELECT * FROM values(1, -2, 300)",
    "SELECT * FROM values(-1, 255)",
    "SELECT * FROM values(-129, 255)",
    "SELECT * FROM values(-1, 4294967295)",
    "SELECT * FROM values('a', 'b')",
    "SELECT * FROM values('x')",
    "SELECT * FROM values('a UInt8, b String', (1, 'x'), (2, 'y'))",
    "SELECT * FROM values('a UInt8', 1, 2)",
    "SELECT * FROM values('a String', 1)",
    "SELECT * FROM values('a Nullable(String)', NULL, 'x')",
    "SELECT * FROM values('a Date', '2020-01-01')",
    "SELECT * FROM values('a Int32', '5')",
    "SELECT * FROM values('a Float32', 1.5, 2)",
    "SELECT * FROM values((1, 'x'), (2, NULL))",
    "SELECT * FROM values(true, false)",
    "SELECT * FROM values(1, true)",
    "SELECT * FROM values([1, 2], [3])",
    "SELECT * FROM values(['a', 'b'], [])",
    "SELECT * FROM values((1, 2))",
    "SELECT * FROM values(1 + 1, 2)",
    "SELECT * FROM values(inf, -inf)",
    "SELECT * FROM values(0.5, 2)",
    "SELECT c1, count() FROM values(1, 2, 2, 3, NULL) GROUP BY c1 ORDER BY c1",
    "SELECT sum(c1) FROM values(1, 2, 2, 3, NULL) WHERE c1 > 1",
    "SELECT c1 FROM values(1, 2, NULL) WHERE c1 > 1",
    "SELECT c2, c1 FROM values((1, 'b'), (2, 'a')) ORDER BY c2",
]

FAIL = [
    "SELECT * FROM values()",
    "SELECT * FROM values('a UInt8', 300)",
    "SELECT * FROM values('a UInt8', -1)",
    "SELECT * FROM values('a String', NULL, 'x')",
    "SELECT * FROM values(1, 'x')",
    "SELECT * FROM values(18446744073709551615, -1)",
    "SELECT * FROM values((1, 2), (3))",
]


def _norm(rows):
    return [tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in r) for r in rows]


@pytest.mark.parametrize("q", SAME)
def test_values_like_chdb(q):
    theirs = ch.query(q, "ArrowTable")
    types = [line.split("\t")[1] for line in ch.query(f"DESCRIBE ({q})", "TabSeparated").bytes().decode().splitlines()]
    mine = skipidx.sql(q)
    assert mine.columns == theirs.column_names
    assert mine.types == types
    got = [tuple(r.values()) for r in mine.to_arrow().to_pylist()]
    want = [tuple(r.values()) for r in theirs.to_pylist()]
    assert _norm(got) == _norm(want)


@pytest.mark.parametrize("q", FAIL)
def test_values_errors_like_chdb(q):
    with pytest.raises(Exception):
        ch.query(q, "ArrowTable")
    with pytest.raises(skipidx.SkipidxError):
        skipidx.sql(q)


def test_values_feed_insert_select():
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (a UInt8, s String, INDEX i s TYPE bloom_filter GRANULARITY 1) "
               "ENGINE = MergeTree ORDER BY a")
        db.sql("INSERT INTO t SELECT * FROM values('a UInt8, s String', (1, 'x'), (2, 'y'), (3, 'x'))")
        assert db.sql("SELECT a FROM t WHERE s = 'x' ORDER BY a").fetchall() == [(1,), (3,)]
