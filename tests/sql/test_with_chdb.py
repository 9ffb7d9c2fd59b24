"""ClickHouse's WITH vs chDB: ``WITH expr AS name`` (an alias the query -- and its
subqueries -- may use) and ``WITH name AS (SELECT ...)`` (common table expressions,
usable wherever a table is named, later ones seeing earlier ones)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.apps.cli import main
from skipidx.sql import ast as A
from skipidx.sql.parser import parse
from skipidx.sql.with_clause import inline_with

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

from _chdb_golden import Pair  # noqa: E402

SETUP = [
    "CREATE TABLE {db}t (id UInt32, s String, n Nullable(Int32), INDEX i s TYPE bloom_filter GRANULARITY 1) "
    "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES (1, 'a', 1), (2, 'b', NULL), (3, 'c', 3), (4, 'd', 4), (5, 'e', NULL), (6, 'a', 6)",
]

SAME = {
    "alias": "WITH 2 AS k SELECT k, k + 1",
    "alias_where": "WITH 2 AS k SELECT id FROM {db}t WHERE id = k",
    "alias_column_expr": "WITH id * 2 AS dd SELECT dd FROM {db}t WHERE dd > 8 ORDER BY dd",
    "alias_wins_over_column": "WITH 1 AS id SELECT id FROM {db}t LIMIT 1",
    "alias_chain": "WITH 1 AS k, k + 1 AS j SELECT j",
    "alias_in_subquery": "WITH 5 AS k SELECT number FROM numbers(10) WHERE number IN (SELECT k)",
    "alias_in_scalar": "WITH 5 AS k SELECT (SELECT k + 1)",
    "alias_in_derived": "WITH 5 AS k SELECT x FROM (SELECT k AS x)",
    "scalar_alias": "WITH (SELECT max(id) FROM {db}t) AS m SELECT id, m FROM {db}t WHERE id = m",
    "scalar_numbered_where_used": "WITH (SELECT 1) AS a SELECT a, (SELECT 2)",
    "scalar_numbered_after": "WITH (SELECT 1) AS a SELECT (SELECT 2), a",
    "scalar_unused": "WITH (SELECT 1) AS a SELECT (SELECT 2)",
    "cte": "WITH x AS (SELECT id FROM {db}t WHERE id < 3) SELECT * FROM x ORDER BY id",
    "cte_chain": "WITH x AS (SELECT id FROM {db}t WHERE id < 3), y AS (SELECT id + 1 AS z FROM x) "
                 "SELECT z FROM y ORDER BY z",
    "cte_in_in": "WITH x AS (SELECT id FROM {db}t WHERE id < 3) SELECT count() FROM {db}t WHERE id IN (SELECT id FROM x)",
    "cte_qualified": "WITH x AS (SELECT id FROM {db}t WHERE id < 3) SELECT x.id FROM x ORDER BY id",
    "cte_in_derived": "WITH x AS (SELECT 1 AS a) SELECT * FROM (SELECT * FROM x)",
    "cte_and_alias": "WITH x AS (SELECT 1 AS a), 2 AS k SELECT a + k FROM x",
    "cte_in_scalar": "WITH x AS (SELECT 1 AS a) SELECT (SELECT max(a) FROM x)",
    "cte_aggregate": "WITH x AS (SELECT s, count() AS c FROM {db}t GROUP BY s) SELECT s, c FROM x WHERE c > 1",
    "cte_nullable": "WITH x AS (SELECT n FROM {db}t) SELECT count(), count(n), sum(n) FROM x",
    "cte_aliased": "WITH x AS (SELECT id FROM {db}t WHERE id < 3) SELECT y.id FROM x AS y ORDER BY y.id",
    "table_aliased": "SELECT x.id, t.s FROM {db}t AS x WHERE x.id = 2 AND t.s = 'b'",
    "cte_used_twice": "WITH x AS (SELECT id FROM {db}t WHERE id > 4) "
                      "SELECT count() FROM x WHERE id IN (SELECT id FROM x WHERE id > 5)",
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "with")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(SAME.values()), ids=list(SAME))
def test_like_chdb(pair, q):
    pair.check(q)


def test_cte_named_as_the_table_reads_the_table_inside():
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt32) ENGINE = MergeTree ORDER BY id")
        db.sql("INSERT INTO t VALUES (1), (2), (3)")
        assert db.sql("WITH t AS (SELECT * FROM t WHERE id < 3) SELECT count() FROM t").fetchall() == [(2,)]


def test_alias_twice_is_an_error(pair):
    assert "MULTIPLE_EXPRESSIONS_FOR_ALIAS" in pair.chdb_error("WITH 1 AS x SELECT 2 AS x")
    with pytest.raises(skipidx.SkipidxError, match="multiple expressions 1 and 2 for alias 'x'"):
        pair.db.sql("WITH 1 AS x SELECT 2 AS x")


def test_errors_have_a_caret(pair):
    with pytest.raises(skipidx.SkipidxError, match="unknown table 'y'") as e:
        pair.db.sql("WITH x AS (SELECT 1) SELECT * FROM y")
    assert (e.value.line, e.value.column) == (1, 36)
    with pytest.raises(skipidx.SkipidxError, match=r"unknown table 'recnt'; maybe you meant 'recent' \(a WITH name\)") as e:
        pair.db.sql("WITH recent AS (SELECT id FROM t WHERE id > 5) SELECT * FROM recnt")
    assert (e.value.line, e.value.column) == (1, 62)
    with pytest.raises(skipidx.SkipidxError, match="maybe you meant 'total'") as e:
        pair.db.sql("WITH 2 AS total SELECT totl")
    assert (e.value.line, e.value.column) == (1, 24)
    with pytest.raises(skipidx.SkipidxError, match="common table expression is named by one identifier") as e:
        parse("WITH a + 1 AS (SELECT 1) SELECT 1")
    with pytest.raises(skipidx.SkipidxError, match="WITH name 'x'"):
        parse("WITH 1 AS x, 2 AS x SELECT x")


def test_table_alias_prunes_and_checks_names(pair):
    r = pair.db.sql("SELECT x.id FROM t AS x PREWHERE x.id = 1 WHERE x.s = 'a'")
    assert r.fetchall() == [(1,)] and r.stats.granules_selected == 1
    with pytest.raises(skipidx.SkipidxError, match="unknown table 'y' in column reference y.id") as e:
        pair.db.sql("SELECT y.id FROM t AS x")
    assert (e.value.line, e.value.column) == (1, 8)
    s = parse("SELECT x.a FROM t AS x")[0]
    assert s.table_alias == "x" and s.to_sql() == "SELECT x.a FROM t AS x" and parse(s.to_sql())[0] == s


def test_cte_prunes_inside(pair):
    r = pair.db.sql("WITH x AS (SELECT id FROM t WHERE s = 'c') SELECT * FROM x")
    assert r.fetchall() == [(3,)]
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN indexes = 1 WITH x AS (SELECT id FROM t WHERE s = 'c') "
                                          "SELECT * FROM x").fetchall()]
    assert lines[1].strip() == "ReadFromSubquery (x)", lines
    assert any("Granules: 1/3" in ln for ln in lines), lines


def test_scalar_alias_prunes(pair):
    r = pair.db.sql("WITH (SELECT max(id) FROM t) AS m SELECT id FROM t WHERE id = m")
    assert r.fetchall() == [(6,)] and r.stats.granules_selected == 1


def test_repeated_cte_query_sees_new_rows():
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt32) ENGINE = MergeTree ORDER BY id")
        db.sql("INSERT INTO t VALUES (1), (2)")
        q = "WITH (SELECT max(id) FROM t) AS m, x AS (SELECT id FROM t WHERE id = m) SELECT id FROM x"
        assert db.sql(q).fetchall() == [(2,)]
        db.sql("INSERT INTO t VALUES (9)")
        assert db.sql(q).fetchall() == [(9,)]


def test_insert_select_with(tmp_path):
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt32) ENGINE = MergeTree ORDER BY id")
        db.sql("INSERT INTO t WITH x AS (SELECT number AS id FROM numbers(3)) SELECT id + 10 FROM x")
        assert db.sql("SELECT id FROM t ORDER BY id").fetchall() == [(10,), (11,), (12,)]


def test_cli_prints_the_error(tmp_path, capsys):
    assert main(["sql", str(tmp_path / "db"), "WITH x AS (SELECT 1 AS a) SELECT b FROM x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unknown column 'b'") and "line 1" in err, err


def test_inline_keeps_a_statement_without_with():
    s = parse("SELECT a FROM t WHERE b IN (SELECT c FROM u)")[0]
    assert inline_with(s) is s


# -- parser: random WITH nestings parse and render back to the same tree

_name = st.sampled_from(["x", "y", "k"])


def _query(inner):
    return st.one_of(
        st.tuples(_name, inner).map(lambda p: f"WITH {p[0]} AS ({p[1]}) SELECT * FROM {p[0]}"),
        st.tuples(_name, inner).map(lambda p: f"WITH ({p[1]}) AS {p[0]} SELECT {p[0]} + 1"),
        st.tuples(_name, inner).map(lambda p: f"WITH 1 AS {p[0]} SELECT a FROM t WHERE a IN ({p[1]})"),
        st.tuples(_name, inner, inner).map(lambda p: f"WITH {p[0]} AS ({p[1]}), 2 AS z SELECT ({p[2]}) FROM {p[0]}"),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(st.sampled_from(["SELECT 1", "SELECT a FROM t", "SELECT count() FROM x"]), _query,
                    max_leaves=6))
def test_nested_with_round_trips(q):
    s = parse(q)[0]
    assert parse(s.to_sql())[0] == s
    inlined = inline_with(s)
    assert not any(w.query is not None for w in _with_items(inlined))   # every CTE inlined
    assert parse(inlined.to_sql())[0] == inlined


def _with_items(node):
    if isinstance(node, A.Select):
        yield from node.with_
    if isinstance(node, tuple):
        for x in node:
            yield from _with_items(x)
    elif isinstance(node, A.Node):
        for f in A.node_fields(type(node)):
            yield from _with_items(getattr(node, f))
