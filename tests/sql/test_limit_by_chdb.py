"""ClickHouse's LIMIT n [OFFSET m] BY keys vs chDB: after ORDER BY, rows m+1 .. m+n of each
key, then LIMIT / OFFSET; keys may be any expressions, aliases or SELECT-list positions."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.apps.cli import main
from skipidx.engine.limit_by import keep_by_rank
from skipidx.sql.parser import parse

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

from _chdb_golden import Pair  # noqa: E402

SETUP = [
    "CREATE TABLE {db}t (id UInt32, s String, n Nullable(Int32), l LowCardinality(String), d Date, a Array(UInt8), "
    "INDEX i s TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2",
    "INSERT INTO {db}t VALUES " + ", ".join(
        f"({i}, '{i % 4}', {'NULL' if i % 3 == 0 else i % 5}, '{i % 2}', '2024-01-0{1 + i % 3}', "
        f"[{', '.join(str(x) for x in range(i % 3))}])" for i in range(20)),
]

SAME = {
    "desc_in_group": "SELECT id % 3 AS g, id FROM {db}t ORDER BY g, id DESC LIMIT 2 BY g",
    "offset": "SELECT id % 3 AS g, id FROM {db}t ORDER BY g, id LIMIT 1 OFFSET 1 BY g",
    "comma_form": "SELECT id % 3 AS g, id FROM {db}t ORDER BY g, id LIMIT 1, 2 BY g",
    "then_limit": "SELECT id % 3 AS g, id FROM {db}t ORDER BY g, id LIMIT 2 BY g LIMIT 3",
    "then_limit_offset": "SELECT id % 3 AS g, id FROM {db}t ORDER BY g, id LIMIT 2 BY g LIMIT 2 OFFSET 1",
    "two_keys_hidden": "SELECT id FROM {db}t ORDER BY id LIMIT 1 BY id % 2, id % 3",
    "nullable_key": "SELECT n, id FROM {db}t ORDER BY id LIMIT 1 BY n",
    "zero": "SELECT id FROM {db}t ORDER BY id LIMIT 0 BY id % 2",
    "aggregate": "SELECT s, count() FROM {db}t GROUP BY s ORDER BY s LIMIT 1 BY length(s)",
    "positional": "SELECT s, id FROM {db}t ORDER BY id DESC LIMIT 2 BY 1",
    "alias": "SELECT id % 3 AS g FROM {db}t ORDER BY id LIMIT 1 BY g",
    "star": "SELECT * FROM {db}t ORDER BY id LIMIT 1 BY id % 5",
    "distinct_positional": "SELECT DISTINCT id % 3, s FROM {db}t ORDER BY 1, 2 LIMIT 1 BY 1",
    "lowcardinality": "SELECT l, id FROM {db}t ORDER BY id LIMIT 3 BY l",
    "date_key": "SELECT d, id FROM {db}t ORDER BY id DESC LIMIT 1 BY d",
    "array_key": "SELECT a, id FROM {db}t ORDER BY id LIMIT 2 BY a",
    "where_pruned": "SELECT id, s FROM {db}t WHERE s = '1' ORDER BY id LIMIT 2 BY n",
    "big_offset": "SELECT id FROM {db}t ORDER BY id LIMIT 5 OFFSET 100 BY id % 2",
    "derived": "SELECT count() FROM (SELECT id FROM {db}t ORDER BY id LIMIT 2 BY s)",
    "in_subquery": "SELECT id FROM {db}t WHERE id IN (SELECT id FROM {db}t ORDER BY id DESC LIMIT 1 BY s) ORDER BY id",
    "table_function": "SELECT number FROM numbers(10) ORDER BY number DESC LIMIT 1 BY number % 4",
}


@pytest.fixture(scope="module")
def pair():
    p = Pair(SETUP, "limitby")
    yield p
    p.close()


@pytest.mark.parametrize("q", list(SAME.values()), ids=list(SAME))
def test_like_chdb(pair, q):
    pair.check(q)


def test_pruning_still_applies(pair):
    r = pair.db.sql("SELECT id FROM t WHERE id = 7 ORDER BY id LIMIT 1 BY s")
    assert r.fetchall() == [(7,)] and r.stats.granules_selected == 1


def test_explain_shows_the_steps(pair):
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN SELECT id FROM t WHERE id > 2 ORDER BY id LIMIT 1 BY id % 2 "
                                          "LIMIT 5").fetchall()]
    assert lines[:3] == ["Limit 5", "LimitBy 1 by id % 2", "Expression"], lines


def test_explain_inside_derived_tables_and_unions(pair):
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN SELECT * FROM (SELECT id FROM t ORDER BY id LIMIT 1 BY s) "
                                          "WHERE id > 1").fetchall()]
    assert "    LimitBy 1 by s" in lines and "        Columns: id, s" in lines, lines
    lines = [ln for (ln,) in pair.db.sql("EXPLAIN SELECT id FROM t LIMIT 1 BY s UNION ALL SELECT 1").fetchall()]
    assert lines[:2] == ["Union", "  LimitBy 1 by s"], lines


def test_errors(pair):
    with pytest.raises(skipidx.SkipidxError, match="position 3 is out of range") as e:
        pair.db.sql("SELECT id, s FROM t LIMIT 1 BY 3")
    assert (e.value.line, e.value.column) == (1, 32)
    with pytest.raises(skipidx.SkipidxError, match="unknown column 'idd' in table 't'; maybe you meant 'id'") as e:
        pair.db.sql("SELECT id FROM t LIMIT 1 BY idd")
    assert (e.value.line, e.value.column) == (1, 29)
    with pytest.raises(skipidx.SkipidxError, match="not supported here"):
        pair.db.sql("CREATE TABLE u AS SELECT id FROM t LIMIT 1 BY s")


def test_cli_prints_the_error(tmp_path, capsys):
    assert main(["sql", str(tmp_path / "db"), "SELECT 1 LIMIT 1 BY 2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: LIMIT BY position 2 is out of range") and "line 1" in err, err


def test_query_parameters():
    with skipidx.connect() as db:
        r = db.sql("SELECT number FROM numbers(6) ORDER BY number LIMIT {n:UInt8} BY number % 2", params={"n": 2})
        assert r.fetchall() == [(0,), (1,), (2,), (3,)]


@pytest.mark.parametrize("q", [
    "SELECT a FROM t ORDER BY a LIMIT 2 BY a",
    "SELECT a FROM t LIMIT 1 OFFSET 2 BY a, b % 2 LIMIT 5",
    "SELECT a FROM t LIMIT 2 OFFSET 1 BY a LIMIT 4 OFFSET 3",
    "SELECT a FROM t LIMIT {n:UInt8} BY a SETTINGS max_threads = 1",
])
def test_round_trip(q):
    s = parse(q)[0]
    assert s.to_sql() == q and parse(s.to_sql())[0] == s


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.sampled_from("ab"))), max_size=30),
       st.integers(0, 3), st.integers(0, 3))
def test_keep_by_rank_is_the_definition(rows, n, m):
    import pyarrow as pa

    keys = [pa.array([r[0] for r in rows], pa.int64()), pa.array([r[1] for r in rows], pa.string())]
    got = keep_by_rank(keys, n, m) if rows else np.zeros(0, bool)
    seen: dict = {}
    want = []
    for r in rows:
        k = seen.get(r, 0)
        want.append(m <= k < m + n)
        seen[r] = k + 1
    assert list(got) == want
