"""A date-time text for a DateTime('zone') column is that zone's clock time, as ClickHouse
reads it: in INSERT VALUES and in WHERE comparisons / IN lists (the instant stored and the
rows matched equal chDB's), also across a DST change and for DateTime64 with a zone."""
from __future__ import annotations

import pytest

import skipidx

pytestmark = pytest.mark.chdb

DDL = ("CREATE TABLE {t} (id UInt32, tk DateTime('Asia/Tokyo'), ny DateTime('America/New_York'), "
       "t64 DateTime64(3, 'Asia/Kathmandu'), utc DateTime) ENGINE = MergeTree ORDER BY id")
ROWS = ("INSERT INTO {t} VALUES "
        "(1, '2024-01-07 23:17:59', '2024-03-10 01:30:00', '2024-01-07 23:17:59.123', '2024-01-07 23:17:59'), "
        "(2, 1704669479, '2024-03-10 03:30:00', '2024-01-08 05:02:59.500', 1704669479), "
        "(3, '2024-01-08 00:00:00', '2024-11-03 00:30:00', '1970-01-01 05:45:00', '1970-01-01 00:00:00'), "
        "(4, '2024-07-01 12:00:00', '2024-07-01 12:00:00', '2024-07-01 12:00:00.001', '2024-07-01 12:00:00')")

QUERIES = [
    "SELECT id, toUnixTimestamp(tk), toUnixTimestamp(ny), toUnixTimestamp(t64), toUnixTimestamp(utc) FROM {t} ORDER BY id",
    "SELECT id, tk, ny, t64, utc FROM {t} ORDER BY id",
    "SELECT id FROM {t} WHERE tk = '2024-01-07 23:17:59' ORDER BY id",
    "SELECT id FROM {t} WHERE tk > '2024-01-07 23:00:00' ORDER BY id",
    "SELECT id FROM {t} WHERE tk IN ('2024-01-07 23:17:59', '2024-07-01 12:00:00') ORDER BY id",
    "SELECT id FROM {t} WHERE tk >= toDate('2024-01-08') ORDER BY id",
    "SELECT id FROM {t} WHERE tk BETWEEN '2024-01-07 00:00:00' AND '2024-01-08 00:00:00' ORDER BY id",
    "SELECT id FROM {t} WHERE ny < '2024-03-10 03:00:00' ORDER BY id",
    "SELECT id FROM {t} WHERE ny = '2024-07-01 12:00:00' ORDER BY id",
    "SELECT id FROM {t} WHERE t64 >= '2024-01-08 05:02:59.5' ORDER BY id",
    "SELECT id FROM {t} WHERE t64 = '1970-01-01 05:45:00' ORDER BY id",
    "SELECT id FROM {t} WHERE utc = '2024-01-07 23:17:59' ORDER BY id",
    "SELECT id, toDateTime('2024-01-07 23:17:59', 'Asia/Tokyo') = tk FROM {t} ORDER BY id",
]


@pytest.fixture(scope="module")
def tables(chdb):
    db = skipidx.connect()
    db.sql(DDL.format(t="t"))
    db.sql(ROWS.format(t="t"))
    name = chdb.scratch_database("tz")
    chdb.query(DDL.format(t=f"{name}.t"))
    chdb.query(ROWS.format(t=f"{name}.t"))
    yield db, name
    db.close()


@pytest.mark.parametrize("q", QUERIES, ids=[f"q{i}" for i in range(len(QUERIES))])
def test_zone_literals_match_clickhouse(chdb, tables, q):
    from skipidx.engine.formats import write_table

    db, name = tables
    r = db.sql(q.format(t="t"))
    ours = write_table(r.to_arrow(), "TSV", types=r.types).decode()
    theirs = chdb.query(q.format(t=f"{name}.t"), "TSV").bytes().decode()
    assert ours == theirs, q


def test_indexes_prune_with_the_zone(tables):
    db, _ = tables
    db.sql("CREATE TABLE p (id UInt32, tk DateTime('Asia/Tokyo'), INDEX mm tk TYPE minmax GRANULARITY 1) "
           "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2")
    db.sql("INSERT INTO p SELECT number, toDateTime(1704034800 + number * 3600, 'Asia/Tokyo') "
           "FROM numbers(100)")
    for where in ("tk = '2024-01-02 03:00:00'", "tk < '2024-01-01 05:00:00'", "tk >= '2024-01-05 00:00:00'"):
        q = f"SELECT groupArray(id) FROM p WHERE {where}"
        assert db.sql(q).fetchall() == db.sql(q + " SETTINGS use_skip_indexes = 0").fetchall(), where
    r = db.sql("SELECT id FROM p WHERE tk = '2024-01-02 03:00:00'")
    assert r.fetchall() == [(27,)] and r.stats.granules_selected == 1
