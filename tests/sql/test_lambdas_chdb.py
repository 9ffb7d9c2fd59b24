"""Lambdas vs chDB: ``arrayMap`` / ``arrayFilter`` / ``arrayExists`` / ``arrayCount`` with
``x -> expr`` or ``(x, y) -> expr`` (several arrays element-wise; outer columns and outer
lambdas' parameters visible in the body), named ``lambda(tuple(x), ...)`` as ClickHouse."""
from __future__ import annotations

import pyarrow as pa
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
    "CREATE TABLE {db}t (id UInt32, a Array(Int64), s Array(String), n Array(Nullable(Int32)), k Int64, w String) "
    "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES (1, [], [], [], 1, 'p'), (2, [10], ['x'], [NULL], -1, 'q'), "
    "(3, [10, 20], ['x', 'yy'], [1, NULL], 2, ''), (4, [1, 2, 3], ['a', 'bb', 'ccc'], [NULL, 2, 3], 0, 'r'), "
    "(5, [7], [''], [5], 3, 's')",
]

SAME = {
    "all_four": "SELECT id, arrayMap(x -> x + 1, a), arrayFilter(x -> x > 1, a), arrayExists(x -> x = 10, a), "
                "arrayCount(x -> x >= 2, a) FROM {db}t ORDER BY id",
    "two_arrays": "SELECT arrayMap((x, y) -> x + y, [1, 2], [10, 20])",
    "two_columns": "SELECT id, arrayMap((x, y) -> concat(y, toString(x)), a, s) FROM {db}t ORDER BY id",
    "outer_column": "SELECT id, arrayMap(x -> x * k, a), arrayFilter(x -> length(x) > k, s) FROM {db}t ORDER BY id",
    "outer_string": "SELECT id, arrayMap(x -> concat(w, x), s) FROM {db}t ORDER BY id",
    "filter_by_second": "SELECT arrayFilter((x, y) -> y, [1, 2, 3], [1, 0, 1])",
    "alias": "SELECT arrayMap(x -> x * 2, [1, 2, 3]) AS m",
    "constant_body": "SELECT arrayMap(x -> 'a', [1, 2]), arrayCount(x -> 1, [5, 6, 7])",
    "to_string": "SELECT arrayMap(x -> toString(x), [1, 2])",
    "predicate_items": "SELECT id, arrayMap(x -> x = 10, a) FROM {db}t ORDER BY id",
    "nullable_items": "SELECT id, arrayMap(x -> x + 1, n), arrayCount(x -> x IS NULL, n), "
                      "arrayFilter(x -> x > 1, n) FROM {db}t ORDER BY id",
    "nested": "SELECT arrayMap(x -> arrayMap(y -> y + x, [1, 2]), [10, 20])",
    "nested_columns": "SELECT id, arrayMap(x -> arrayFilter(y -> y < x + id, a), a) FROM {db}t ORDER BY id",
    "in_where": "SELECT id FROM {db}t WHERE arrayExists(x -> x = 10, a) ORDER BY id",
    "count_where": "SELECT count() FROM {db}t WHERE arrayCount(x -> length(x) = 1, s) > 0",
    "aggregate_over": "SELECT sum(arrayCount(x -> x > 1, a)), max(arrayExists(x -> x = 7, a)) FROM {db}t",
    "group_by": "SELECT arrayExists(x -> x > 5, a) AS e, count() FROM {db}t GROUP BY e ORDER BY e",
    "over_group_array": "SELECT arrayFilter(x -> x > 1, groupArray(id)) FROM {db}t",
    "over_group_array_by_key": "SELECT w, arrayMap(x -> x * 2, groupArray(id)), "
                               "arrayCount(x -> x > length(w), groupArray(id)) FROM {db}t GROUP BY w ORDER BY w",
    "in_having": "SELECT k > 0 AS p FROM {db}t GROUP BY p HAVING arrayExists(x -> x > 3, groupArray(id)) ORDER BY p",
    "parameter_shadows_column": "SELECT id, arrayMap(id -> id * 2, a) FROM {db}t ORDER BY id",
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "lambda")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(SAME.values()), ids=list(SAME))
def test_like_chdb(pair, q):
    pair.check(q)


@pytest.mark.parametrize("q,code,match", [
    ("SELECT arrayMap((x, y) -> x + y, [1, 2], [10])", "SIZES_OF_ARRAYS_DONT_MATCH", "must have equal size"),
    ("SELECT arrayMap((x, y) -> x + y, a, s) FROM {db}t", "ILLEGAL_TYPE_OF_ARGUMENT", "illegal types"),
], ids=["sizes", "types"])
def test_errors_like_chdb(pair, q, code, match):
    assert code in pair.chdb_error(q)
    with pytest.raises(skipidx.SkipidxError, match=match) as e:
        pair.db.sql(q.format(db=""))
    assert e.value.line == 1 or "SIZES" in str(e.value)


def test_rows_of_different_sizes_in_columns():
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (a Array(UInt8), b Array(UInt8)) ENGINE = MergeTree ORDER BY tuple()")
        db.sql("INSERT INTO t VALUES ([1], [2]), ([1, 2], [3])")
        with pytest.raises(skipidx.SkipidxError, match="SIZES_OF_ARRAYS_DONT_MATCH"):
            db.sql("SELECT arrayMap((x, y) -> x + y, a, b) FROM t").fetchall()


@pytest.mark.parametrize("q,match,col", [
    ("SELECT arrayMap(x -> x + 1, k) FROM t", "an Array is required", 29),
    ("SELECT arrayCount(a) FROM t", "takes a lambda as its first argument", 8),
    ("SELECT arrayMap((x, y) -> 1, a) FROM t", "has 2 parameters, but 1 arrays", 17),
    ("SELECT arrayMap(x -> sum(x), a) FROM t", "not allowed here", 22),
    ("SELECT arrayMap(x -> yy, a) FROM t", "unknown column 'yy'", 22),
    ("SELECT arrayMap(value -> valeu + 1, a) FROM t", "maybe you meant 'value'", 26),
    ("SELECT arrayFilter(x -> 'a', a) FROM t", r"a number \(UInt8\) is required", 25),
    ("SELECT x -> 1", "unexpected '->'", 10),
    ("SELECT arrayMap((x, x) -> 1, a, a) FROM t", "duplicate lambda parameter 'x'", 17),
    ("SELECT arrayMap(x + 1 -> 1, a) FROM t", "a lambda's parameters are names", 17),
])
def test_errors_have_a_caret(pair, q, match, col):
    with pytest.raises(skipidx.SkipidxError, match=match) as e:
        pair.db.sql(q)
    assert (e.value.line, e.value.column) == (1, col)


def test_explain_and_pruning(pair):
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN indexes = 1 SELECT id FROM t WHERE id = 3 AND "
                                          "arrayExists(x -> x = 10, a)").fetchall()]
    assert any("arrayExists(x -> x = 10, a)" in ln for ln in lines), lines
    r = pair.db.sql("SELECT id FROM t WHERE id = 3 AND arrayExists(x -> x = 10, a)")
    assert r.fetchall() == [(3,)] and r.stats.granules_selected == 1


def test_cli_prints_the_error(tmp_path, capsys):
    assert main(["sql", str(tmp_path / "db"), "SELECT arrayMap(x -> x, 1)"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: illegal type UInt8 of argument of function arrayMap") and "line 1" in err, err


def test_parses_as_a_lambda():
    s = parse("SELECT arrayMap((x, y) -> x + y, a, b), arrayFilter(x -> x IN (1, 2), a) FROM t")[0]
    lam = s.items[0].expr.args[0]
    assert isinstance(lam, A.Lambda) and lam.params == ("x", "y")
    assert s.items[1].expr.args[0] == A.Lambda(("x",), A.InList(A.Column("x"), (A.Literal(1, "int"),
                                                                                  A.Literal(2, "int"))))
    assert parse(s.to_sql())[0] == s


_body = st.recursive(st.sampled_from(["x", "1", "k", "y"]),
                     lambda inner: st.one_of(st.tuples(inner, inner).map(lambda p: f"{p[0]} + {p[1]}"),
                                             inner.map(lambda b: f"arrayMap(y -> {b}, a)"),
                                             inner.map(lambda b: f"f({b})")), max_leaves=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_body, st.sampled_from(["x", "(x, z)"]))
def test_lambdas_round_trip(body, params):
    q = f"SELECT arrayMap({params} -> {body}, a, b) FROM t"
    s = parse(q)[0]
    assert parse(s.to_sql())[0] == s
    assert isinstance(s.items[0].expr.args[0], A.Lambda)


def test_many_rows_whole_column():
    # (element-wise over 10k rows at once: the body runs once over all elements)
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt32, a Array(Int64)) ENGINE = MergeTree ORDER BY id")
        db.insert("t", pa.table({"id": pa.array(range(10_000), pa.uint32()),
                                 "a": pa.array([[i, i + 1, i + 2][: i % 4] for i in range(10_000)],
                                               pa.list_(pa.field("item", pa.int64(), nullable=False)))}))
        got = db.sql("SELECT sum(arrayCount(x -> x % 2 = 0, a)), sum(length(arrayMap(x -> x + id, a))) FROM t")
        want_count = sum(sum(1 for v in [i, i + 1, i + 2][: i % 4] if v % 2 == 0) for i in range(10_000))
        want_len = sum(len([i, i + 1, i + 2][: i % 4]) for i in range(10_000))
        assert got.fetchall() == [(want_count, want_len)]
