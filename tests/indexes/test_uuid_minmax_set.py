"""minmax and set indexes on UUID columns: each granule's bounds / values are kept
as keys in ClickHouse's UUID order (the second 8 bytes first), so range and
equality atoms prune, and never drop a granule with a match (hypothesis: the
pruned answer equals the unpruned scan and chDB's, over UUIDs made to tie on one
half, Nullable columns and every comparison, IN and NOT IN)."""
from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import skipidx
from skipidx.core.types import uuid_array
from skipidx.indexes._common import index_atom_args, index_values

OPS = ["=", "!=", "<", "<=", ">", ">="]

# halves drawn from a few values, so UUIDs often tie on one half and order by the other
_half = st.sampled_from([b"\x00" * 8, b"\xff" * 8, b"\x00" * 7 + b"\x01", b"\x80" + b"\x00" * 7,
                         bytes.fromhex("61f0c4045cb311e7"), bytes.fromhex("907ba6006ad3dba0")])
_uuid = st.one_of(st.builds(lambda a, b: a + b, _half, _half), st.binary(min_size=16, max_size=16))
_row = st.tuples(_uuid, st.booleans())       # (value, NULL in the Nullable column)


def _text(b: bytes) -> str:
    return str(uuid.UUID(bytes=b))


def test_index_values_follow_clickhouse_uuid_order():
    a = bytes.fromhex("ff" * 8 + "00" * 8)     # ffffffff-ffff-ffff-0000-000000000000
    b = bytes.fromhex("00" * 8 + "01" + "00" * 7)
    keys = index_values(uuid_array(pa.array([a, b], pa.binary(16)))).to_pylist()
    assert keys[0] < keys[1]                   # a < b: ClickHouse compares the second half first
    assert index_atom_args("in", ((a, None),), pa.uuid()) == ((keys[0], None),)
    assert index_atom_args("equals", (_text(b),), pa.uuid()) == (keys[1],)


@pytest.fixture(scope="module")
def db():
    with skipidx.connect() as d:
        yield d


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_row, min_size=1, max_size=60), consts=st.lists(_uuid, min_size=1, max_size=3),
       data=st.data())
def test_uuid_minmax_and_set_never_drop_a_match(db, chdb, rows, consts, data):
    db.sql("DROP TABLE IF EXISTS u")
    db.sql("CREATE TABLE u (x UInt32, id UUID, n Nullable(UUID), INDEX mm id TYPE minmax GRANULARITY 1, "
           "INDEX mn n TYPE minmax GRANULARITY 2, INDEX st id TYPE set(4) GRANULARITY 1, "
           "INDEX sn n TYPE set(0) GRANULARITY 1) ENGINE = MergeTree ORDER BY x SETTINGS index_granularity = 4")
    order = data.draw(st.permutations(list(range(len(rows)))))
    db.insert("u", pa.table({"x": pa.array(order, pa.uint32()),
                             "id": uuid_array(pa.array([r[0] for r in rows], pa.binary(16))),
                             "n": uuid_array(pa.array([None if r[1] else r[0] for r in rows], pa.binary(16)))}))
    pool = consts + [r[0] for r in rows]
    col = data.draw(st.sampled_from(["id", "n"]))
    op = data.draw(st.sampled_from(OPS + ["IN", "NOT IN"]))
    if "IN" in op:
        picks = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))
        where = f"{col} {op} ({', '.join(repr(_text(p)) for p in picks)})"
    else:
        where = f"{col} {op} '{_text(data.draw(st.sampled_from(pool)))}'"
    q = f"SELECT x FROM u WHERE {where} ORDER BY x"
    pruned = db.sql(q)
    got = pruned.fetchall()
    assert got == db.sql(q + " SETTINGS use_skip_indexes = 0").fetchall(), where
    # the same rows as ClickHouse (its UUID order decides the range atoms)
    values = ", ".join(f"({x}, '{_text(r[0])}', {'NULL' if r[1] else repr(_text(r[0]))})"
                       for x, r in zip(order, rows))
    want = chdb.query(f"SELECT x FROM values('x UInt32, id UUID, n Nullable(UUID)', {values}) "
                      f"WHERE {where} ORDER BY x", "CSV").bytes().decode().split()
    assert [str(r[0]) for r in got] == want, where


def test_uuid_minmax_prunes(db):
    db.sql("DROP TABLE IF EXISTS p")
    db.sql("CREATE TABLE p (x UInt32, id UUID, INDEX mm id TYPE minmax GRANULARITY 1, "
           "INDEX st id TYPE set(0) GRANULARITY 1) ENGINE = MergeTree ORDER BY id "
           "SETTINGS index_granularity = 100")
    db.sql("INSERT INTO p SELECT number, generateUUIDv4() FROM numbers(1000)")
    u = db.sql("SELECT toString(id) FROM p WHERE x = 500").fetchall()[0][0]
    r = db.sql(f"SELECT x FROM p WHERE id = '{u}'")
    assert r.fetchall() == [(500,)]
    assert r.stats.granules_selected == 1 and r.stats.granules_total == 10
    assert {i.name: i.granules_after for i in r.stats.indexes} == {"mm": 1, "st": 1}
    r = db.sql(f"SELECT count() FROM p WHERE id < '{u}'")
    n = db.sql(f"SELECT count() FROM p WHERE id < '{u}' SETTINGS use_skip_indexes = 0").fetchall()
    assert r.fetchall() == n and r.stats.granules_selected < 10
