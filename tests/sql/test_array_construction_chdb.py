"""Arrays built from row values -- ``[id, id * 2]``, ``array(id, 1)`` -- vs chDB: one array
per row, items of the least supertype of the arguments (Nullable where any is), named and
typed as ClickHouse names and types them."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.expr.catalogue import _build_array
from skipidx.sql.parser import parse

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

from _chdb_golden import Pair  # noqa: E402

SETUP = [
    "CREATE TABLE {db}t (id UInt32, s String, n Nullable(Int32), l LowCardinality(String), d Date, f Float32, "
    "i8 Int8, INDEX i s TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY id "
    "SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES " + ", ".join(
        f"({i}, '{i % 4}', {'NULL' if i % 3 == 0 else i % 5}, '{i % 2}', '2024-01-0{1 + i % 3}', {i / 4}, {-i})"
        for i in range(12)),
]

SAME = {
    "two_columns": "SELECT [id, id * 2] FROM {db}t ORDER BY id",
    "aliased": "SELECT [id, id * 2] AS a FROM {db}t ORDER BY id",
    "array_function": "SELECT array(id, 1) FROM {db}t ORDER BY id",
    "with_constant": "SELECT [id, 1], [1, id] FROM {db}t ORDER BY id",
    "null_item": "SELECT [id, NULL] FROM {db}t ORDER BY id",
    "nullable_column": "SELECT [n, 1] FROM {db}t ORDER BY id",
    "signed_supertype": "SELECT [i8, 300] FROM {db}t ORDER BY id",
    "float_supertype": "SELECT [f, id] FROM {db}t ORDER BY id",
    "float32_small_int": "SELECT [f, toUInt8(id)] FROM {db}t ORDER BY id",
    "strings": "SELECT [s, 'x', s] FROM {db}t ORDER BY id",
    "lowcardinality": "SELECT [l, s] FROM {db}t ORDER BY id",
    "dates": "SELECT [d, toDate('2024-02-02')] FROM {db}t ORDER BY id",
    "one_item": "SELECT [s] FROM {db}t ORDER BY id",
    "in_function": "SELECT length([id, id]), has([id, 2], 2) FROM {db}t ORDER BY id",
    "element": "SELECT [id, id * 10][2] FROM {db}t ORDER BY id",
    "lambda": "SELECT arrayMap(x -> x + 1, [id, id * 2]) FROM {db}t ORDER BY id",
    "where": "SELECT id FROM {db}t WHERE has([id, id + 1], 5) ORDER BY id",
    "aggregate_items": "SELECT [min(id), max(id)] FROM {db}t",
    "table_function": "SELECT [number, number * number] FROM numbers(4)",
    "constant_array_fn": "SELECT array(1, 2.5), array()",
    # Array(Nullable(Nothing)) (only NULLs) is not Array(Nothing) (`[]`)
    "nothing_types": "SELECT [NULL] a, [] b, [NULL, NULL] c, toTypeName([NULL]), toTypeName([]), array(NULL)",
    "map_to_null": "SELECT arrayMap(x -> NULL, [id, 1]) a, toTypeName(arrayMap(x -> NULL, [1])), "
                   "arrayMap(x -> NULL, []) e, arrayFilter(x -> 1, [NULL]) f, arrayMap(x -> x, [NULL]) g "
                   "FROM {db}t ORDER BY id",
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "arrcons")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(SAME.values()), ids=list(SAME))
def test_like_chdb(pair, q):
    pair.check(q)


def test_no_common_type_is_a_clear_error(pair):
    # chDB 26.9 makes a Variant(String, UInt32) here; skipidx has no Variant type
    with pytest.raises(skipidx.SkipidxError, match="NO_COMMON_TYPE") as e:
        pair.db.sql("SELECT [id, s] FROM t")
    assert (e.value.line, e.value.column) == (1, 8)


def test_nested_array_is_a_clear_error(pair):
    with pytest.raises(skipidx.SkipidxError, match="nested arrays") as e:
        pair.db.sql("SELECT [[id], [1]] FROM t")
    assert (e.value.line, e.value.column) == (1, 9)


def test_pruning_kept_and_explain(pair):
    r = pair.db.sql("SELECT [id, id] FROM t WHERE s = '1' ORDER BY id")
    assert r.fetchall() == [([1, 1],), ([5, 5],), ([9, 9],)]
    assert r.stats.granules_selected < r.stats.granules_total
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN SELECT [id, id * 2] FROM t").fetchall()]
    assert any("ReadFromMergeTree" in ln for ln in lines), lines


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=4),
                     min_size=0, max_size=20).filter(lambda r: len({len(x) for x in r}) <= 1))
def test_kernel_matches_definition(rows):
    k = len(rows[0]) if rows else 2
    cols = [pa.array([r[j] for r in rows], pa.int64()) for j in range(k)]
    out = _build_array(1, *cols)
    assert out.to_pylist() == [list(r) for r in rows]
    assert out.type.value_field.nullable


@settings(max_examples=40, deadline=None)
@given(a=st.integers(0, 9), b=st.integers(0, 9))
def test_round_trip(a, b):
    stmt = parse(f"SELECT [x{a}, x{b} * 2], array(x{a}, {b}) FROM t")[0]
    assert parse(stmt.to_sql())[0] == stmt
