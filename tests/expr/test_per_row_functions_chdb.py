"""ClickHouse's per-row random functions: generateUUIDv4, rand, rand64, randCanonical.

A zero-argument call is not a constant: every row gets its own value (unlike
``now()``, one per query); identical calls in one expression share their
values as ClickHouse's common subexpression merging makes them, and an
(ignored) argument keeps them apart. Types, names and arity against chDB."""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

import skipidx
from skipidx.expr.binder import Binder
from skipidx.expr.bound import BCall
from skipidx.sql.parser import parse_expression

pytestmark = pytest.mark.chdb


@pytest.fixture()
def db():
    with skipidx.connect() as d:
        yield d


def _uuids(db, sql: str) -> list[uuid.UUID]:
    col = db.sql(sql).to_arrow().column(0)
    return [v if isinstance(v, uuid.UUID) else uuid.UUID(str(v)) for v in col.to_pylist()]


@pytest.mark.parametrize("q", [
    "SELECT generateUUIDv4() AS u, toTypeName(u)",
    "SELECT toTypeName(generateUUIDv4(1)), toTypeName(generateUUIDv4(NULL)), toTypeName(generateUUIDv4('x'))",
    "SELECT toTypeName(rand()), toTypeName(rand(NULL)), toTypeName(rand32()), toTypeName(rand64()), "
    "toTypeName(randCanonical()), toTypeName(randCanonical(1))",
    "SELECT generateUUIDv4() = generateUUIDv4(), rand() = rand(), rand64(1) = rand64(1)",
    "SELECT generateUUIDv4(1) = generateUUIDv4(2), rand(1) = rand(2)",
    "SELECT count(DISTINCT generateUUIDv4()), count(DISTINCT generateUUIDv4(number)) FROM numbers(3000)",
    "SELECT min(randCanonical()) >= 0, max(randCanonical()) < 1, max(rand()) <= 4294967295 FROM numbers(2000)",
], ids=["uuid-type", "uuid-arg-types", "rand-types", "merged-calls", "calls-kept-apart", "distinct-rows",
        "ranges"])
def test_types_names_and_merging_match_clickhouse(chdb, db, q):
    r = db.sql(q)
    ours = [r.columns, r.types, [list(row) for row in r.fetchall()]]
    got = json.loads(chdb.query(q, "JSONCompact").bytes())
    names, types = [m["name"] for m in got["meta"]], [m["type"] for m in got["meta"]]
    rows = [[str(v) for v in row] for row in got["data"]]
    assert ours[0] == names and ours[1] == types
    if "u, toTypeName" in q:        # a random value: only its type is comparable
        assert ours[2][0][1] == rows[0][1] == "UUID"
        return
    assert [[str(v) for v in row] for row in ours[2]] == rows


def test_generate_uuid_v4_version_and_variant_bits(db):
    us = _uuids(db, "SELECT generateUUIDv4() FROM numbers(5000)")
    assert len(us) == 5000 and len(set(us)) == 5000
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in us)
    # the text as ClickHouse writes it: xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx
    texts = db.sql("SELECT toString(generateUUIDv4()) AS s FROM numbers(200)").to_arrow().column(0).to_pylist()
    assert all(s[14] == "4" and s[19] in "89ab" for s in texts)


def test_per_row_calls_are_not_folded_to_a_constant(db):
    e = Binder(None).expr(parse_expression("generateUUIDv4()"))
    assert isinstance(e, BCall) and e.func == "generateUUIDv4" and e.type == pa.uuid()
    e = Binder(None).expr(parse_expression("rand() % 10"))
    assert isinstance(e, BCall)
    # each run draws new values; a row's value is its own
    a, b = (_uuids(db, "SELECT generateUUIDv4()")[0] for _ in range(2))
    assert a != b
    n = db.sql("SELECT count() FROM numbers(4000) WHERE rand() % 2 = 0").fetchall()[0][0]
    assert 1000 < n < 3000     # about half the rows; a constant would give 0 or 4000


def test_per_row_over_table_columns_and_dictionaries(db):
    db.sql("CREATE TABLE t (id UInt32, s LowCardinality(String), INDEX i s TYPE set(10) GRANULARITY 1) "
           "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 100")
    db.sql("INSERT INTO t SELECT number, toString(number % 3) FROM numbers(1000)")
    # an argument of a dictionary-read column still gives a value per row, not per distinct value
    assert db.sql("SELECT count(DISTINCT generateUUIDv4(s)) FROM t").fetchall() == [(1000,)]
    assert db.sql("SELECT count(DISTINCT u) FROM (SELECT generateUUIDv4() AS u FROM t)").fetchall() == [(1000,)]
    n = db.sql("SELECT count() FROM t WHERE s = '1' AND rand() % 2 = 0").fetchall()[0][0]
    assert 0 < n < 333
    rows = db.sql("SELECT s FROM t ORDER BY rand() LIMIT 10").fetchall()
    assert len(rows) == 10


def test_insert_values_and_select_write_per_row_values(db):
    db.sql("CREATE TABLE u (id UUID, x UInt32, r UInt64, s String) ENGINE = MergeTree ORDER BY x")
    db.sql("INSERT INTO u VALUES (generateUUIDv4(), 1, rand(), 'a'), (generateUUIDv4(), 2, rand64() % 10, 'b'), "
           "(generateUUIDv4(), 3, 5, toString(generateUUIDv4()))")
    db.sql("INSERT INTO u SELECT generateUUIDv4(), number + 10, rand(), '' FROM numbers(100)")
    ids, r, s = db.sql("SELECT count(DISTINCT id), max(r) < 4294967296, max(length(s)) FROM u").fetchall()[0]
    assert (ids, r, s) == (103, 1, 36)
    assert _uuids(db, "SELECT id FROM u WHERE x = 3")[0].version == 4


@pytest.mark.parametrize("sql,msg", [
    ("SELECT generateUUIDv4(1, 2)", "takes 0 to 1 arguments, got 2"),
    ("SELECT rand(1, 2)", "takes 0 to 1 arguments, got 2"),
    ("CREATE TABLE bad (id UInt32, INDEX i generateUUIDv4(id) TYPE minmax) ENGINE = MergeTree ORDER BY id",
     "must be deterministic"),
    ("CREATE TABLE bad (id UInt32, INDEX i (id + rand()) TYPE minmax) ENGINE = MergeTree ORDER BY id",
     "must be deterministic"),
], ids=["uuid-arity", "rand-arity", "index-uuid", "index-rand"])
def test_errors_as_clickhouse_raises_them(chdb, db, sql, msg):
    with pytest.raises(skipidx.SkipidxError, match=msg):
        db.sql(sql)
    with pytest.raises(Exception):
        chdb.query(sql.replace("CREATE TABLE bad", f"CREATE TABLE {chdb.scratch_database('pr')}.bad"))


def test_order_by_an_alias_sorts_by_the_values_output(db):
    """One value per row per call for the whole SELECT of a chunk: the ORDER BY key and the
    output column are the same values, and identical calls across items share them."""
    r = [x[0] for x in db.sql("SELECT rand() AS r FROM numbers(50) ORDER BY r").fetchall()]
    assert r == sorted(r)
    r = [x[0] for x in db.sql("SELECT rand64() AS r FROM numbers(50) ORDER BY r DESC LIMIT 7").fetchall()]
    assert r == sorted(r, reverse=True)
    rows = db.sql("SELECT rand() AS r, r + 0 = r, rand() = r, rand(1) = r FROM numbers(20)").fetchall()
    assert all(row[1:] == (1, 1, 0) for row in rows)


def test_order_by_alias_over_a_table(db):
    db.sql("CREATE TABLE o (x UInt32) ENGINE = MergeTree ORDER BY x SETTINGS index_granularity = 10")
    db.sql("INSERT INTO o SELECT number FROM numbers(100)")
    r = [x[1] for x in db.sql("SELECT x, randCanonical() AS r FROM o ORDER BY r LIMIT 20").fetchall()]
    assert r == sorted(r) and len(r) == 20


def test_a_where_of_per_row_values_filters_each_row(db):
    """A WHERE that reads no column (count() reads none) still filters row by row."""
    db.sql("CREATE TABLE w (id UInt64) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 128")
    db.sql("INSERT INTO w SELECT number FROM numbers(4000)")
    assert db.sql("SELECT count() FROM w WHERE randCanonical() < 0").fetchall() == [(0,)]
    assert db.sql("SELECT count() FROM w WHERE randCanonical() < 1").fetchall() == [(4000,)]
    (n,), = db.sql("SELECT count() FROM w WHERE rand() % 2 = 0").fetchall()
    assert 1500 < n < 2500, f"about half the rows pass rand() % 2 = 0, not {n}"
    assert len(db.sql("SELECT 1 FROM w WHERE rand64() % 4 = 0").fetchall()) < 1500


@pytest.mark.parametrize("q", [
    "SELECT rand() AS r FROM w WHERE r % 2 = 0",
    "SELECT id FROM w WHERE rand() % 2 = 0 ORDER BY rand()",
    "SELECT generateUUIDv4() AS u, count() FROM w WHERE u != toUUID('00000000-0000-0000-0000-000000000000') GROUP BY u",
])
def test_a_per_row_value_both_filtered_and_shown_is_refused(db, q):
    """The WHERE and the SELECT list are evaluated apart, so the rows kept would show new
    values: refused with a caret at the WHERE rather than answered wrong."""
    db.sql("CREATE TABLE w (id UInt64) ENGINE = MergeTree ORDER BY id")
    db.sql("INSERT INTO w SELECT number FROM numbers(10)")
    with pytest.raises(skipidx.SkipidxError, match="used both in WHERE") as e:
        db.sql(q)
    assert "^" in str(e.value)
    sub = "SELECT r FROM (SELECT rand() AS r FROM w) WHERE r % 2 = 0"
    assert all(r % 2 == 0 for (r,) in db.sql(sub).fetchall()), "the subquery form filters the values it shows"
    assert len(db.sql("SELECT rand(1) AS r FROM w WHERE rand(2) % 2 = 0 OR 1").fetchall()) == 10
