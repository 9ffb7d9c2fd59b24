"""UNION ALL / UNION DISTINCT vs chDB: names from the first SELECT, types the least
supertype position by position, each SELECT with its own ORDER BY / LIMIT, ORDER BY and
LIMIT over the whole union through a derived table; errors where the column counts differ
or no supertype exists (chDB 26.9 then makes a Variant, a type skipidx does not have)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.apps.cli import main
from skipidx.engine.union import supertype_name
from skipidx.sql import ast as A
from skipidx.sql.parser import parse

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

from _chdb_golden import Pair, _comparable  # noqa: E402

SETUP = [
    "CREATE TABLE {db}t (id UInt32, s String, n Nullable(Int32), d Date, l LowCardinality(String), a Array(UInt8), "
    "INDEX i s TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES (1, 'a', 1, '2024-01-01', 'x', [1]), (2, 'b', NULL, '2024-01-02', 'y', []), "
    "(3, 'c', 3, '2024-01-03', 'x', [3, 4]), (4, 'd', 4, '2024-01-04', 'z', [4]), (5, 'e', NULL, '2024-01-05', 'x', []), "
    "(6, 'a', 6, '2024-01-06', 'y', [6])",
]

#: queries whose row order is fixed (an ORDER BY over the whole union, or one branch's rows only)
ORDERED = {
    "distinct": "SELECT 1 UNION DISTINCT SELECT 1",
    "derived_order_limit": "SELECT * FROM (SELECT id FROM {db}t WHERE id < 3 UNION ALL SELECT id FROM {db}t WHERE id > 4) "
                           "ORDER BY id DESC LIMIT 3",
    "derived_aggregate": "SELECT count(), sum(x), toTypeName(sum(x)) FROM (SELECT id AS x FROM {db}t UNION ALL "
                         "SELECT toUInt8(n) FROM {db}t WHERE n IS NOT NULL)",
    "derived_nullable": "SELECT x FROM (SELECT n AS x FROM {db}t WHERE id < 3 UNION ALL SELECT toInt8(-1)) ORDER BY x",
    "in_subquery": "SELECT id FROM {db}t WHERE id IN (SELECT 1 UNION ALL SELECT 4) ORDER BY id",
    "string_lowcard": "SELECT * FROM (SELECT s FROM {db}t WHERE id < 3 UNION ALL SELECT l FROM {db}t WHERE id = 4) ORDER BY s",
    "lowcard_both": "SELECT * FROM (SELECT l FROM {db}t WHERE id < 3 UNION ALL SELECT l FROM {db}t WHERE id = 4) ORDER BY l",
    "cte": "WITH x AS (SELECT id FROM {db}t WHERE id < 2 UNION ALL SELECT 7) SELECT count(), sum(id) FROM x",
    "three": "SELECT * FROM (SELECT 1 AS v UNION ALL SELECT 2 UNION ALL SELECT 300) ORDER BY v",
    "mixed_modes": "SELECT * FROM (SELECT 1 AS v UNION ALL SELECT 1 UNION DISTINCT SELECT 2) ORDER BY v",
    "array_column": "SELECT * FROM (SELECT a FROM {db}t WHERE id = 3 UNION ALL SELECT [7, 8]) ORDER BY length(a)",
}

#: queries whose branches run in any order (ClickHouse gives no order either, even for one row per
#: SELECT: chDB once answered -1 before 1): rows compared sorted
UNORDERED = {
    "names_from_first": "SELECT 1 AS a UNION ALL SELECT 2 AS b",
    "unnamed": "SELECT 1 UNION ALL SELECT 2",
    "widen": "SELECT 1 AS a, 'x' AS b UNION ALL SELECT 300, 'y'",
    "signed": "SELECT 1 UNION ALL SELECT -1",
    "float": "SELECT 1 UNION ALL SELECT 1.5",
    "null": "SELECT 1 UNION ALL SELECT NULL",
    "date_datetime": "SELECT toDate('2020-01-01') UNION ALL SELECT toDateTime('2020-01-02 03:04:05')",
    "arrays": "SELECT [1] UNION ALL SELECT [2.5]",
    "tables": "SELECT id, s FROM {db}t WHERE id < 3 UNION ALL SELECT id, s FROM {db}t WHERE s = 'a'",
    "own_order_limit": "SELECT id FROM {db}t WHERE id < 3 UNION ALL SELECT id FROM {db}t WHERE id > 3 ORDER BY id DESC LIMIT 1",
    "distinct_tables": "SELECT s FROM {db}t UNION DISTINCT SELECT s FROM {db}t WHERE id < 3",
    "dates": "SELECT d FROM {db}t WHERE id < 3 UNION ALL SELECT toDate('2020-05-05')",
    "uint32_nullable_int32": "SELECT id FROM {db}t UNION ALL SELECT n FROM {db}t",
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "union")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(ORDERED.values()), ids=list(ORDERED))
def test_like_chdb(pair, q):
    pair.check(q)


@pytest.mark.parametrize("q", list(UNORDERED.values()), ids=list(UNORDERED))
def test_like_chdb_any_order(pair, q):
    names, types, rows = pair.theirs(q)
    mine = pair.db.sql(q.format(db=""))
    assert (mine.columns, mine.types) == (names, types)
    key = lambda r: tuple(str(v) for v in r.values())  # noqa: E731
    got = sorted(mine.to_arrow().to_pylist(), key=key)
    want = sorted(rows, key=key)
    assert len(got) == len(want)
    # (DateTime as chDB's Arrow output writes it, seconds since the epoch, where chDB has an int)
    assert sorted((_comparable(r, t) for r, t in zip(got, want)), key=key) == want


@pytest.mark.parametrize("q,code,match", [
    ("SELECT 1, 2 UNION ALL SELECT 3", "UNION_ALL_RESULT_STRUCTURES_MISMATCH", "Different number of columns"),
    ("SELECT 1 UNION SELECT 2", "EXPECTED_ALL_OR_DISTINCT", "Expected ALL or DISTINCT after UNION"),
], ids=["column_count", "bare_union"])
def test_errors_like_chdb(pair, q, code, match):
    assert code in pair.chdb_error(q)
    with pytest.raises(skipidx.SkipidxError, match=match) as e:
        pair.db.sql(q)
    assert e.value.line == 1 and e.value.column in (10, 23)


@pytest.mark.parametrize("q", [
    "SELECT 1 UNION ALL SELECT 'a'",
    "SELECT toUInt64(1) UNION ALL SELECT toInt64(-1)",
    "SELECT id FROM {db}t UNION ALL SELECT s FROM {db}t",
], ids=["number_string", "uint64_int64", "columns"])
def test_no_supertype(pair, q):
    assert "Variant(" in pair.theirs(q)[1][0]          # what chDB 26.9 does instead
    with pytest.raises(skipidx.SkipidxError, match="There is no supertype for types"):
        pair.db.sql(q.format(db=""))


def test_each_branch_prunes(pair):
    r = pair.db.sql("SELECT * FROM (SELECT id FROM t WHERE id = 3 UNION ALL SELECT id FROM t WHERE s = 'e') ORDER BY id")
    assert r.fetchall() == [(3,), (5,)]
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN indexes = 1 SELECT id FROM t WHERE id = 3 UNION ALL "
                                          "SELECT id FROM t WHERE s = 'e'").fetchall()]
    assert lines[0] == "Union" and sum("Granules: 1/3" in ln for ln in lines) >= 2, lines


def test_insert_select_union():
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt32, s String) ENGINE = MergeTree ORDER BY id")
        db.sql("INSERT INTO t SELECT 1, 'a' UNION ALL SELECT 2, 'b'")
        assert db.sql("SELECT * FROM t ORDER BY id").fetchall() == [(1, "a"), (2, "b")]


def test_cli_prints_the_error(tmp_path, capsys):
    assert main(["sql", str(tmp_path / "db"), "SELECT 1, 2 UNION ALL SELECT 3"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Different number of columns") and "line 1" in err, err


def test_format_applies_to_the_whole_union(tmp_path, capsys):
    assert main(["sql", str(tmp_path / "db"), "SELECT 1 AS x UNION ALL SELECT 2 FORMAT CSVWithNames"]) == 0
    assert capsys.readouterr().out == '"x"\n1\n2\n'


@pytest.mark.parametrize("types,want", [
    (["UInt8", "Int8"], "Int16"), (["UInt8", "Nullable(Nothing)"], "Nullable(UInt8)"),
    (["String", "LowCardinality(String)"], "String"), (["Date", "DateTime"], "DateTime"),
    (["Array(UInt8)", "Array(Float64)"], "Array(Float64)"), (["Nullable(Int32)", "UInt16"], "Nullable(Int32)"),
    (["Float32", "UInt16"], "Float32"), (["UInt32", "Int64"], "Int64"),
])
def test_supertype(types, want):
    assert supertype_name(types) == want


# -- parser: random unions (in subqueries too) parse and render back to the same tree

_sel = st.sampled_from(["SELECT 1", "SELECT a FROM t ORDER BY a LIMIT 2", "SELECT count() FROM t WHERE x = 1"])


def _nest(inner):
    return st.one_of(
        st.tuples(inner, _sel, st.sampled_from(["ALL", "DISTINCT"])).map(lambda p: f"{p[0]} UNION {p[2]} {p[1]}"),
        inner.map(lambda q: f"SELECT * FROM ({q})"),
        inner.map(lambda q: f"SELECT a FROM t WHERE a IN ({q})"),
        inner.map(lambda q: f"SELECT ({q})"),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(_sel, _nest, max_leaves=6))
def test_unions_round_trip(q):
    s = parse(q)[0]
    assert parse(s.to_sql())[0] == s
    assert q.count("UNION") == s.to_sql().count("UNION")


def test_union_modes_nest_left():
    u = parse("SELECT 1 UNION ALL SELECT 2 UNION DISTINCT SELECT 3 UNION DISTINCT SELECT 4")[0]
    assert isinstance(u, A.Union) and u.distinct and len(u.queries) == 3
    assert isinstance(u.queries[0], A.Union) and not u.queries[0].distinct and len(u.queries[0].queries) == 2


def test_query_log_records_unions_and_with_tables():
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt32) ENGINE = MergeTree ORDER BY id")
        db.sql("INSERT INTO t VALUES (1), (2)")
        db.sql("WITH x AS (SELECT id FROM t) SELECT count() FROM x")
        db.sql("SELECT 1 UNION ALL SELECT id FROM t")
        with pytest.raises(skipidx.SkipidxError):
            db.sql("SELECT 1 UNION ALL SELECT 1, 2")
        rows = db.sql("SELECT query, tables, type FROM system.query_log").fetchall()
        assert rows[-3:] == [
            ("WITH x AS (SELECT id FROM t) SELECT count() FROM x", ["default.t"], "QueryFinish"),
            ("SELECT 1 UNION ALL SELECT id FROM t", ["default.t"], "QueryFinish"),
            ("SELECT 1 UNION ALL SELECT 1, 2", [], "ExceptionBeforeStart"),
        ]
