"""LIMIT / OFFSET (and LIMIT BY's) written as a constant expression -- a WITH alias,
arithmetic, a cast, a scalar subquery -- vs chDB: folded to its int before the query
runs; anything else is ClickHouse's INVALID_LIMIT_EXPRESSION, with a caret."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.sql.parser import parse

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

from _chdb_golden import Pair  # noqa: E402

SETUP = [
    "CREATE TABLE {db}t (id UInt32, s String, INDEX i s TYPE bloom_filter GRANULARITY 1) "
    "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES " + ", ".join(f"({i}, '{i % 4}')" for i in range(20)),
]

SAME = {
    "with_alias": "WITH 2 AS k SELECT id FROM {db}t ORDER BY id LIMIT k",
    "with_alias_offset": "WITH 2 AS k, 3 AS o SELECT id FROM {db}t ORDER BY id LIMIT k OFFSET o",
    "arithmetic": "SELECT id FROM {db}t ORDER BY id LIMIT 1 + 1 OFFSET 2 * 2",
    "alias_arithmetic": "WITH 3 AS k SELECT id FROM {db}t ORDER BY id LIMIT k - 1 OFFSET k * 2",
    "comma_form": "WITH 2 AS k SELECT id FROM {db}t ORDER BY id LIMIT k, k + 1",
    "cast": "SELECT id FROM {db}t ORDER BY id LIMIT toUInt8(3)",
    "integral_float": "SELECT id FROM {db}t ORDER BY id LIMIT 2.0",
    "parenthesized": "SELECT id FROM {db}t ORDER BY id LIMIT (4)",
    "scalar_subquery": "SELECT id FROM {db}t ORDER BY id LIMIT (SELECT 3)",
    "limit_by": "WITH 1 AS k SELECT id FROM {db}t ORDER BY id LIMIT k BY s LIMIT k + 2",
    "limit_by_offset": "WITH 1 AS k SELECT id FROM {db}t ORDER BY id LIMIT k OFFSET k BY s",
    "zero": "WITH 0 AS k SELECT id FROM {db}t ORDER BY id LIMIT k",
    "in_subquery": "WITH 3 AS k SELECT id FROM {db}t WHERE id IN (SELECT id FROM {db}t ORDER BY id DESC LIMIT k) "
                   "ORDER BY id",
    "derived": "SELECT count() FROM (WITH 5 AS k SELECT id FROM {db}t ORDER BY id LIMIT k)",
    "table_function": "WITH 4 AS k SELECT number FROM numbers(10) LIMIT k OFFSET k",
    # (ordered outside: a UNION ALL's parts come in any order)
    "union": "SELECT * FROM (WITH 1 AS k SELECT id FROM {db}t ORDER BY id LIMIT k UNION ALL "
             "WITH 2 AS k SELECT 7 LIMIT k - 1) ORDER BY 1",
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "limitexpr")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(SAME.values()), ids=list(SAME))
def test_like_chdb(pair, q):
    pair.check(q)


ERRORS = {
    "column": ("SELECT id FROM {db}t LIMIT id", "LIMIT id"),
    "string": ("SELECT id FROM {db}t LIMIT 'a'", "LIMIT 'a'"),
    "fraction": ("SELECT id FROM {db}t LIMIT 1.5", "LIMIT 1.5"),
    "string_alias": ("WITH 'x' AS k SELECT id FROM {db}t LIMIT k", "LIMIT k"),
    "offset_column": ("SELECT id FROM {db}t LIMIT 1 OFFSET id", "OFFSET id"),
}


@pytest.mark.parametrize("q,at", list(ERRORS.values()), ids=list(ERRORS))
def test_errors_like_chdb(pair, q, at):
    assert "INVALID_LIMIT_EXPRESSION" in pair.chdb_error(q)
    sql = q.format(db="")
    with pytest.raises(skipidx.SkipidxError, match="INVALID_LIMIT_EXPRESSION") as e:
        pair.db.sql(sql)
    assert (e.value.line, e.value.column) == (1, sql.index(at) + at.index(" ") + 2)


def test_negative_limit_is_a_clear_error(pair):
    # ClickHouse reads it as "the last n rows"; skipidx refuses rather than answer otherwise
    with pytest.raises(skipidx.SkipidxError, match="negative LIMIT") as e:
        pair.db.sql("SELECT id FROM t LIMIT -2")
    assert (e.value.line, e.value.column) == (1, 24)


def test_pruning_and_explain(pair):
    r = pair.db.sql("WITH 1 AS k SELECT id FROM t WHERE s = '1' ORDER BY id LIMIT k")
    assert r.fetchall() == [(1,)] and r.stats.granules_selected < r.stats.granules_total
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN WITH 2 AS k SELECT id FROM t ORDER BY id LIMIT k OFFSET k + 1")
             .fetchall()]
    assert "  Limit 2 offset 3" in lines, lines


def test_repeated_statement_keeps_its_answer(pair):
    q = "WITH 2 AS k SELECT id FROM t ORDER BY id LIMIT k"
    assert pair.db.sql(q).fetchall() == pair.db.sql(q).fetchall() == [(0,), (1,)]


def test_parameter_in_an_expression(pair):
    r = pair.db.sql("SELECT id FROM t ORDER BY id LIMIT {n:UInt8} + 1", params={"n": 2})
    assert r.fetchall() == [(0,), (1,), (2,)]


@settings(max_examples=40, deadline=None)
@given(a=st.integers(0, 50), b=st.integers(0, 50))
def test_round_trip(a, b):
    stmt = parse(f"WITH {a} AS k SELECT 1 LIMIT k + {b} OFFSET {a} * 2")[0]
    assert parse(stmt.to_sql())[0] == stmt
