"""Scalar subqueries ``(SELECT ...)`` vs chDB: run once before the outer query is bound
(so the indexes prune on the value), typed Nullable(T) as ClickHouse types them, named
``_subquery_N``; more than one row, or no row of a type that cannot be Nullable, is
ClickHouse's INCORRECT_RESULT_OF_SCALAR_SUBQUERY."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.apps.cli import main
from skipidx.sql import ast as A
from skipidx.sql.parser import parse

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

from _chdb_golden import Pair  # noqa: E402

SETUP = [
    "CREATE TABLE {db}t (id UInt32, s String, n Nullable(Int32), d Date, a Array(Int32), INDEX i s TYPE bloom_filter GRANULARITY 1) "
    "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES (1, 'a', 1, '2024-01-01', [1]), (2, 'b', NULL, '2024-01-02', []), "
    "(3, 'c', 3, '2024-01-03', [3, 4]), (4, 'd', 4, '2024-01-04', [4]), (5, 'e', NULL, '2024-01-05', []), "
    "(6, 'a', 6, '2024-01-06', [6, 7])",
]

SAME = {
    "max": "SELECT (SELECT max(id) FROM {db}t)",
    "where_eq": "SELECT id, s FROM {db}t WHERE id = (SELECT max(id) FROM {db}t)",
    "alias_and_where": "SELECT (SELECT max(id) FROM {db}t) AS m, id FROM {db}t WHERE id = (SELECT max(id) FROM {db}t)",
    "empty_is_null": "SELECT (SELECT id FROM {db}t WHERE id > 100)",
    "empty_string": "SELECT (SELECT s FROM {db}t WHERE id > 100)",
    "nullable_stays": "SELECT (SELECT n FROM {db}t WHERE id = 3), (SELECT n FROM {db}t WHERE id = 2)",
    "two_numbered": "SELECT (SELECT 1), (SELECT 2)",
    "numbered_after_alias": "SELECT (SELECT 2) AS a, (SELECT 3)",
    "projection_first": "SELECT id = (SELECT 2), (SELECT 1) FROM {db}t WHERE id = (SELECT 2)",
    "greater_avg": "SELECT id FROM {db}t WHERE id > (SELECT avg(id) FROM {db}t) ORDER BY id",
    "plus_one": "SELECT (SELECT count() FROM {db}t) + 1",
    "sum_two": "SELECT (SELECT 1) + (SELECT 2)",
    "nested": "SELECT (SELECT (SELECT 5))",
    "date": "SELECT (SELECT max(d) FROM {db}t), (SELECT toDate('2020-01-01'))",
    "null": "SELECT (SELECT NULL)",
    "inner_alias": "SELECT (SELECT 1 AS x) AS y",
    "in_inner_where": "SELECT count() FROM {db}t WHERE id IN (SELECT id FROM {db}t WHERE id < (SELECT 3))",
    "minus_column": "SELECT id, (SELECT max(id) FROM {db}t) - id FROM {db}t ORDER BY id LIMIT 2",
    "array": "SELECT (SELECT [1, 2]), (SELECT a FROM {db}t WHERE id = 3)",
    "having": "SELECT sum(id) FROM {db}t GROUP BY id % 2 HAVING sum(id) > (SELECT 10) ORDER BY 1",
    "float_string_bool": "SELECT (SELECT 1.5), (SELECT 'a'), (SELECT true)",
    "datetime": "SELECT (SELECT toDateTime('2020-01-01 00:00:00'))",
    "type_name": "SELECT toTypeName((SELECT 1))",
    "alias_used": "SELECT (SELECT 1) AS x, x + 1",
    "string_where": "SELECT id FROM {db}t WHERE s = (SELECT s FROM {db}t WHERE id = 1) ORDER BY id",
    "null_where": "SELECT id FROM {db}t WHERE n = (SELECT n FROM {db}t WHERE id = 2)",
    "compare_const": "SELECT (SELECT 2) = 2, (SELECT NULL) IS NULL",
    "max_of_nothing": "SELECT (SELECT max(id) FROM {db}t WHERE id > 100)",
    "derived": "SELECT x FROM (SELECT (SELECT min(id) FROM {db}t) AS x)",
    "numbers": "SELECT (SELECT number FROM numbers(0)), (SELECT number FROM numbers(3, 1))",
}

ERRORS = {
    "two_rows": ("SELECT (SELECT id FROM {db}t WHERE id > 4)", "returned more than one row"),
    "two_rows_where": ("SELECT id FROM {db}t WHERE id = (SELECT number FROM numbers(2))",
                       "returned more than one row"),
    "empty_array": ("SELECT (SELECT a FROM {db}t WHERE id > 100)", "cannot be Nullable"),
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "scalar")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(SAME.values()), ids=list(SAME))
def test_like_chdb(pair, q):
    pair.check(q)


@pytest.mark.parametrize("q,match", list(ERRORS.values()), ids=list(ERRORS))
def test_errors_like_chdb(pair, q, match):
    assert match in pair.chdb_error(q) and "INCORRECT_RESULT_OF_SCALAR_SUBQUERY" in pair.chdb_error(q)
    with pytest.raises(skipidx.SkipidxError, match=match) as e:
        pair.db.sql(q.format(db=""))
    assert "INCORRECT_RESULT_OF_SCALAR_SUBQUERY" in str(e.value)
    sub = q.format(db="").index("(SELECT") + 1
    assert (e.value.line, e.value.column) == (1, sub)      # the caret is at the subquery


def test_prunes_like_the_constant(pair):
    db = pair.db
    sub = db.sql("SELECT id FROM t WHERE id = (SELECT max(id) FROM t)")
    lit = db.sql("SELECT id FROM t WHERE id = 6")
    assert sub.fetchall() == lit.fetchall() == [(6,)]
    assert sub.stats.granules_selected == lit.stats.granules_selected == 1 < sub.stats.granules_total
    bloom = db.sql("SELECT id FROM t WHERE s = (SELECT s FROM t WHERE id = 3)")
    assert bloom.fetchall() == [(3,)] and bloom.stats.granules_selected == 1


def test_explain_shows_the_pruning(pair):
    lines = [r[0] for r in pair.db.sql("EXPLAIN indexes = 1 SELECT id FROM t WHERE id = (SELECT max(id) FROM t)")
             .fetchall()]
    assert any("Granules: 1/3" in ln for ln in lines), lines
    assert any("CAST(6 AS Nullable(UInt32))" in ln for ln in lines), lines


def test_repeated_query_sees_new_rows():
    # the plan of a repeated statement is kept; the subquery's value must not be
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt32) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2")
        db.sql("INSERT INTO t VALUES (1), (2), (3)")
        q = "SELECT id, (SELECT max(id) FROM t) AS m FROM t WHERE id = (SELECT max(id) FROM t)"
        assert db.sql(q).fetchall() == [(3, 3)]
        assert db.sql(q).fetchall() == [(3, 3)]
        db.sql("INSERT INTO t VALUES (7), (5)")
        assert db.sql(q).fetchall() == [(7, 7)]
        assert db.sql(q).fetchall() == [(7, 7)]


def test_tuple_result_is_a_clear_error(pair):
    with pytest.raises(skipidx.SkipidxError, match="2 columns") as e:
        pair.db.sql("SELECT (SELECT id, s FROM t WHERE id = 1)")
    assert (e.value.line, e.value.column) == (1, 8)


def test_scan_where_refuses_a_subquery(pair):
    with pytest.raises(skipidx.SkipidxError, match="scalar subquery"):
        pair.db.scan("t", where="id = (SELECT 1)").read_all()


def test_unknown_column_in_subquery_suggests(pair):
    with pytest.raises(skipidx.SkipidxError, match="maybe you meant 'id'") as e:
        pair.db.sql("SELECT (SELECT max(idd) FROM t)")
    assert (e.value.line, e.value.column) == (1, 20)


def test_cli_prints_the_error(tmp_path, capsys):
    db = str(tmp_path / "db")
    assert main(["sql", db, "CREATE TABLE t (id UInt32) ENGINE = MergeTree ORDER BY id; INSERT INTO t VALUES (1), (2)"]) == 0
    capsys.readouterr()
    assert main(["sql", db, "SELECT (SELECT id FROM t)"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Scalar subquery returned more than one row") and "line 1" in err, err


# -- parser: random nestings of scalar subqueries parse and render back to the same tree

_leaf = st.sampled_from(["1", "x", "'a'", "count()", "NULL"])


def _nest(inner):
    return st.one_of(
        inner.map(lambda e: f"(SELECT {e})"),
        inner.map(lambda e: f"(SELECT {e} FROM t WHERE x = {e})"),
        st.tuples(inner, inner).map(lambda p: f"{p[0]} + {p[1]}"),
        st.tuples(inner, inner).map(lambda p: f"f({p[0]}, {p[1]})"),
        inner.map(lambda e: f"(x IN (SELECT {e}))"),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(_leaf, _nest, max_leaves=6))
def test_nested_scalar_subqueries_round_trip(e):
    s = parse(f"SELECT {e} FROM t WHERE y = {e}")[0]
    assert parse(s.to_sql())[0] == s
    assert e.count("(SELECT") == s.to_sql().count("(SELECT") // 2


def test_parses_as_a_scalar_subquery():
    s = parse("SELECT (SELECT 1) FROM t WHERE x = (SELECT max(x) FROM t)")[0]
    assert isinstance(s.items[0].expr, A.ScalarSubquery)
    assert isinstance(s.where.right, A.ScalarSubquery) and s.where.right.pos == A.Pos(1, 36)
