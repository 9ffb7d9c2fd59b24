"""Element access vs chDB: ``arr[i]`` (ClickHouse's arrayElement: 1-based, negative from
the end, out of range the element type's default, NULL for a Nullable element) and
``t.N`` / ``tupleElement(t, N)`` over tuples written in the query. (skipidx has no Map
type, so ``map['k']`` has nothing to index.)"""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.apps.cli import main
from skipidx.core.types import parse_type
from skipidx.expr.kernels.arrays import array_element
from skipidx.sql import ast as A
from skipidx.sql.parser import parse

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

from _chdb_golden import Pair  # noqa: E402

SETUP = [
    "CREATE TABLE {db}t (id UInt32, a Array(Int64), s Array(String), n Array(Nullable(Int32)), d Array(Date), "
    "k Int8) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES (1, [], [], [], [], 1), (2, [10], ['x'], [NULL], ['2024-01-02'], -1), "
    "(3, [10, 20], ['x', 'y'], [1, NULL], ['2024-01-02', '2024-01-03'], 2), "
    "(4, [10, 20, 30], ['a', 'b', 'c'], [NULL, 2, 3], [], -3), (5, [7], [''], [5], ['2024-02-01'], 0)",
]

SAME = {
    "positive": "SELECT id, a[1], a[2], a[3] FROM {db}t ORDER BY id",
    "negative": "SELECT id, a[-1], a[-2], a[-4] FROM {db}t ORDER BY id",
    "out_of_range": "SELECT id, a[100], s[100], n[100], d[100] FROM {db}t ORDER BY id",
    "strings": "SELECT id, s[1], s[-1] FROM {db}t ORDER BY id",
    "nullable_items": "SELECT id, n[1], n[2], n[-1] FROM {db}t ORDER BY id",
    "dates": "SELECT id, d[1], d[-1] FROM {db}t ORDER BY id",
    "column_index": "SELECT id, a[k], s[k], a[id] FROM {db}t ORDER BY id",
    "function_form": "SELECT id, arrayElement(a, 2) FROM {db}t ORDER BY id",
    "in_where": "SELECT id FROM {db}t WHERE a[1] = 10 ORDER BY id",
    "in_where_negative": "SELECT id FROM {db}t WHERE s[-1] = 'y' OR a[-1] = 7 ORDER BY id",
    "aggregate": "SELECT sum(a[1]), max(s[1]), count(n[1]) FROM {db}t",
    "group_by": "SELECT s[1] AS f, count() FROM {db}t GROUP BY f ORDER BY f",
    "constant": "SELECT [1, 2, 3][2], [1, 2, 3][-1], ['a', 'b'][3], [1, 2][0], [NULL, 1][1]",
    "constant_unsigned_index": "SELECT ['a', 'b'][toUInt8(1)], [1, 2][toInt64(-1)]",
    "arith": "SELECT id, a[1] + a[-1] FROM {db}t ORDER BY id",
    "tuple_dot": "SELECT (1, 'a').2, (1, 'a').1",
    "tuple_function": "SELECT tupleElement((1, 'a'), 1), tupleElement((1, 'a'), -1)",
    "tuple_columns": "SELECT tupleElement((id, a), 1), tuple(id, k).2 FROM {db}t ORDER BY id",
    "subquery_element": "SELECT (SELECT a FROM {db}t WHERE id = 4)[2]",
}

ERRORS = {
    "zero_const_index": ("SELECT a[0] FROM {db}t", "ZERO_ARRAY_OR_TUPLE_INDEX", "1-based"),
    "tuple_out_of_range": ("SELECT (1, 'a').3", "ARGUMENT_OUT_OF_BOUND", "doesn't have element with index '3'"),
    "tuple_zero": ("SELECT tupleElement((1, 'a'), 0)", "ARGUMENT_OUT_OF_BOUND", "doesn't have element with index '0'"),
    "string_subscript": ("SELECT id[1] FROM {db}t", "ILLEGAL_TYPE_OF_ARGUMENT", "Array is required"),
    "float_index": ("SELECT [1, 2][1.5]", "ILLEGAL_TYPE_OF_ARGUMENT", "Integer is required"),
    "string_index": ("SELECT a['x'] FROM {db}t", "ILLEGAL_TYPE_OF_ARGUMENT", "Integer is required"),
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "elem")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(SAME.values()), ids=list(SAME))
def test_like_chdb(pair, q):
    pair.check(q)


@pytest.mark.parametrize("q,code,match", list(ERRORS.values()), ids=list(ERRORS))
def test_errors_like_chdb(pair, q, code, match):
    assert code in pair.chdb_error(q)
    with pytest.raises(skipidx.SkipidxError, match=match) as e:
        pair.db.sql(q.format(db=""))
    assert e.value.line == 1 and e.value.column > 7


def test_explain_and_pruning_keep_working(pair):
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN indexes = 1 SELECT id FROM t WHERE id = 3 AND a[1] = 10").fetchall()]
    assert any("arrayElement(a, 1) = 10" in ln for ln in lines), lines
    r = pair.db.sql("SELECT id FROM t WHERE id = 3 AND a[1] = 10")
    assert r.fetchall() == [(3,)] and r.stats.granules_selected == 1


def test_cli_prints_the_error(tmp_path, capsys):
    assert main(["sql", str(tmp_path / "db"), "SELECT (1, 2).5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Tuple doesn't have element with index '5'") and "line 1" in err, err


def test_parses_as_the_functions():
    s = parse("SELECT a[1][-2], x.1, (1, 2).2, f(x)[i].1 FROM t")[0]
    assert [i.expr.name for i in s.items] == ["arrayElement", "tupleElement", "tupleElement", "tupleElement"]
    assert s.items[0].expr.args[0] == A.FunctionCall("arrayElement", (A.Column("a"), A.Literal(1, "int")))
    assert s.items[1].expr.args == (A.Column("x"), A.Literal(1, "int"))
    assert parse(s.to_sql())[0] == s


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=4)), min_size=1, max_size=12),
       st.data())
def test_kernel_is_the_definition(rows, data):
    t = parse_type("Array(Int64)").arrow_type
    arr = pa.array(rows, t)
    idx = data.draw(st.lists(st.one_of(st.none(), st.integers(-6, 6)), min_size=len(rows), max_size=len(rows)))
    got = array_element(arr, pa.array(idx, pa.int64())).to_pylist()
    want = []
    for r, i in zip(rows, idx):
        if r is None or i is None:
            want.append(None)
        elif 1 <= i <= len(r):
            want.append(r[i - 1])
        elif -len(r) <= i <= -1:
            want.append(r[i])
        else:
            want.append(0)
    assert got == want
