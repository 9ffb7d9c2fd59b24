"""Tuple membership vs chDB: ``(a, b) [NOT] IN ((1, 'x'), (2, 'y'))``, ``IN [(...)]`` and
``(a, b) IN (SELECT x, y ...)``: a row matches where its tuple equals a listed one component
by component; a NULL component never matches; the result is UInt8. Indexes prune on the
components' own IN lists only (implied by the tuple test), never dropping a match."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.expr.catalogue import _tuple_in

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

from _chdb_golden import Pair  # noqa: E402

SETUP = [
    "CREATE TABLE {db}t (id UInt32, s String, n Nullable(Int32), l LowCardinality(String), d Date, "
    "INDEX i s TYPE bloom_filter GRANULARITY 1, INDEX j n TYPE minmax GRANULARITY 1) "
    "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES " + ", ".join(
        f"({i}, '{i % 4}', {'NULL' if i % 3 == 0 else i % 5}, '{i % 2}', '2024-01-0{1 + i % 3}')"
        for i in range(20)),
]

SAME = {
    "two_columns": "SELECT id FROM {db}t WHERE (id, s) IN ((1, '1'), (2, 'y'), (5, '1')) ORDER BY id",
    "not_in": "SELECT id FROM {db}t WHERE (s, id) NOT IN (('1', 1), ('2', 2)) ORDER BY id",
    "one_tuple": "SELECT id FROM {db}t WHERE (id, s) IN ((6, '2')) ORDER BY id",
    "bare_tuple_list": "SELECT id FROM {db}t WHERE (id, s) IN (6, '2') ORDER BY id",
    "array_of_tuples": "SELECT id FROM {db}t WHERE (id, s) IN [(6, '2'), (7, '3')] ORDER BY id",
    "tuple_function": "SELECT id FROM {db}t WHERE tuple(id, s) IN ((3, '3')) ORDER BY id",
    "three": "SELECT id FROM {db}t WHERE (id % 2, s, l) IN ((1, '1', '1'), (0, '2', '0')) ORDER BY id",
    "nullable_select": "SELECT id, (n, 1) IN ((NULL, 1), (2, 1)) AS r, (n, 1) NOT IN ((2, 1)) AS z "
                       "FROM {db}t ORDER BY id",
    "nullable_where": "SELECT id FROM {db}t WHERE (n, s) IN ((2, '2'), (4, '0'), (NULL, '3')) ORDER BY id",
    "constant_component": "SELECT id, (id, 1) IN ((1, 300), (2, 1)) FROM {db}t ORDER BY id",
    "out_of_range_dropped": "SELECT id FROM {db}t WHERE (id, s) IN ((-1, '3'), (3, '3')) ORDER BY id",
    "dates": "SELECT id FROM {db}t WHERE (d, s) IN (('2024-01-02', '1'), ('2024-01-03', '2')) ORDER BY id",
    "constants": "SELECT (1, 'a') IN ((1, 'a')), (1, 2) IN ((1, 2), (3, 4)), (1, 2) IN [(1, 2)], (1, 2) IN ((2, 1))",
    "subquery": "SELECT id FROM {db}t WHERE (id, s) IN (SELECT id, s FROM {db}t WHERE id < 5 UNION ALL "
                "SELECT 7, '3') ORDER BY id",
    "subquery_repeats": "SELECT id FROM {db}t WHERE (id % 2, s) IN (SELECT id % 2, s FROM {db}t) ORDER BY id",
    "subquery_empty": "SELECT count() FROM {db}t WHERE (id, s) IN (SELECT id, s FROM {db}t WHERE id > 100)",
    "subquery_not_in": "SELECT id FROM {db}t WHERE (id, s) NOT IN (SELECT id, s FROM {db}t WHERE id > 2) ORDER BY id",
    "subquery_mixed_pairs": "SELECT id FROM {db}t WHERE (id, s) IN (SELECT id, toString((id + 1) % 4) FROM {db}t "
                            "UNION ALL SELECT 9, '1') ORDER BY id",
    "in_aggregate": "SELECT count() FROM {db}t WHERE (l, s) IN (('1', '1'), ('1', '3'))",
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "tuplein")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(SAME.values()), ids=list(SAME))
def test_like_chdb(pair, q):
    pair.check(q)


ERRORS = {
    "size": ("SELECT id FROM {db}t WHERE (id, s, l) IN ((1, '2'))", "INCORRECT_ELEMENT_OF_SET", "((1, '2'))"),
    "subquery_columns": ("SELECT id FROM {db}t WHERE (id, s) IN (SELECT id FROM {db}t)",
                         "NUMBER_OF_COLUMNS_DOESNT_MATCH", "(SELECT"),
}


@pytest.mark.parametrize("q,code,at", list(ERRORS.values()), ids=list(ERRORS))
def test_errors_like_chdb(pair, q, code, at):
    assert code in pair.chdb_error(q)
    sql = q.format(db="")
    with pytest.raises(skipidx.SkipidxError, match=code) as e:
        pair.db.sql(sql)
    col = sql.index(at) + 1 + (1 if at.startswith("((") else 0)
    assert (e.value.line, e.value.column) == (1, col)


def test_prunes_on_components(pair):
    r = pair.db.sql("SELECT id FROM t WHERE (s, n) IN (('1', 1), ('1', 0))")
    assert r.fetchall() == [(1,), (5,)]
    assert 0 < r.stats.granules_selected < r.stats.granules_total
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN indexes = 1 SELECT id FROM t WHERE (s, id) IN (('1', 1))").fetchall()]
    assert any("Granules" in ln for ln in lines), lines


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(st.tuples(st.integers(-2, 22), st.sampled_from(["0", "1", "2", "3", "x"])), max_size=6),
       negated=st.booleans())
def test_pruning_never_drops_a_match(pair, pairs, negated):
    lst = ", ".join(f"({a}, '{b}')" for a, b in pairs) or "(NULL, NULL)"
    op = "NOT IN" if negated else "IN"
    q = f"SELECT id FROM t WHERE (id, s) {op} ({lst}) ORDER BY id"
    pruned = pair.db.sql(q).fetchall()
    full = pair.db.sql(q + " SETTINGS use_skip_indexes = 0").fetchall()
    want = sorted((i,) for i in range(20) if ((i, str(i % 4)) in set(pairs)) != negated)
    assert pruned == full == want


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=8),
       data=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 5)), st.integers(0, 5)), max_size=30))
def test_kernel_matches_definition(rows, data):
    a = pa.array([x for x, _ in data], pa.int64())
    b = pa.array([y for _, y in data], pa.int64())
    got = _tuple_in(tuple(rows), a, b).to_pylist()
    assert got == [int(x is not None and (x, y) in set(rows)) for x, y in data]
