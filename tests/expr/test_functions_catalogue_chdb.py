"""The second-round scalar functions through the engine, against chDB: for each
expression, the output column name, every value and the ClickHouse type
(``toTypeName``) equal chDB's on the same table, written as TabSeparatedWithNames."""
from __future__ import annotations

import io

import pytest

import skipidx
from skipidx.apps.research import chdb_session as chdb_oracle
from skipidx.engine.formats import write_table

pytestmark = pytest.mark.chdb

DDL = ("CREATE TABLE {t} (id UInt32, s String, n Nullable(Int32), ts DateTime, d Date, f Float64) "
       "ENGINE = MergeTree ORDER BY id")
ROWS = ("INSERT INTO {t} VALUES (1, 'hello', 5, '2020-03-04 05:06:07', '2020-01-31', 1.5), "
        "(2, 'abc', NULL, '2024-01-07 23:59:59', '2024-02-29', -2.25), "
        "(3, '  x ', -3, '1970-01-02 00:00:00', '1970-01-01', 0), "
        "(4, '123', 7, '2100-12-31 23:00:00', '2149-01-06', 1e20)")

EXPRESSIONS = ['intDiv(id, 3)', 'intDiv(n, 2)', 'identity(s)', "hasTokenCaseInsensitiveOrNull(s, 'HELLO')", 'toString(id)', "concat(s, '-', toString(id))", "s || '!'", 'upperUTF8(s)', 'substring(s, 2, 3)', 'substring(s, -2)', "position(s, 'l')", "positionCaseInsensitive(s, 'L')", "replaceAll(s, 'l', 'L')", "replaceRegexpAll(s, '[a-c]', 'X')", 'trimBoth(s)', 'trimLeft(s)', 'lengthUTF8(s)', "splitByChar('l', s)", 'empty(s)', 'notEmpty(s)', "extract(s, 'l+')", 'toYear(ts)', 'toMonth(d)', 'toDayOfMonth(ts)', 'toHour(ts)', 'toMinute(ts)', 'toSecond(ts)', 'toStartOfMinute(ts)', 'toStartOfHour(ts)', 'toStartOfDay(ts)', 'toStartOfWeek(d)', 'toStartOfMonth(ts)', 'toYYYYMM(d)', 'toDate(ts)', 'toDateTime(d)', "dateDiff('day', d, toDate(ts))", "dateDiff('hour', ts, now())", 'd + INTERVAL 1 MONTH', 'ts - INTERVAL 2 HOUR', 'd + INTERVAL 3 HOUR', 'd - INTERVAL 1 YEAR', "toDateTime('2020-01-01 10:00:00')", "toDateTime64('2020-01-01 10:00:00.123', 3)", "toDateTime(ts, 'Asia/Tokyo')", "toDate('2020-01-02')", 'toDateOrNull(s)', "parseDateTimeBestEffort('2020-01-02T03:04:05Z')", "if(id > 1, s, 'no')", 'if(id > 1, id, f)', 'if(n > 0, n, NULL)', "multiIf(id = 1, 'a', id = 2, 'b', 'c')", "CASE WHEN id = 1 THEN 'one' ELSE 'many' END", "CASE id WHEN 1 THEN 'one' WHEN 2 THEN 'two' END", 'coalesce(n, 0)', 'coalesce(n, id)', 'ifNull(n, -1)', 'nullIf(id, 2)', 'assumeNotNull(n)', 'CAST(id AS String)', 'id::Float32', 'CAST(f AS Int32)', 'CAST(s AS FixedString(6))', 'CAST(id AS Nullable(UInt8))', 'CAST(d AS DateTime)', 'toInt8(id * 100)', 'toUInt64OrZero(s)', 'toInt32OrNull(s)', 'toFloat64OrNull(s)', 'toFloat32(f)', 'toInt32(f)', 'toString(f)', 'toString(d)', 'toString(ts)', 'toString(n)', 'cityHash64(s)', 'cityHash64(s, id)', 'cityHash64(id)', 'xxHash64(s)', 'xxHash64(id)', "now() > toDateTime('2020-01-01 00:00:00')", "today() > toDate('2020-01-01')"]


@pytest.fixture(scope="module")
def tables():
    db = skipidx.connect()
    db.sql(DDL.format(t="t"))
    db.sql(ROWS.format(t="t"))
    name = chdb_oracle.scratch_database("fx")
    chdb_oracle.query(DDL.format(t=f"{name}.t"))
    chdb_oracle.query(ROWS.format(t=f"{name}.t"))
    yield db, name
    db.close()


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=EXPRESSIONS)
def test_function_matches_clickhouse(tables, expr):
    db, name = tables
    q = f"SELECT {expr}, toTypeName({expr}) FROM {{t}} ORDER BY id"
    r = db.sql(q.format(t="t"))
    ours = write_table(r.to_arrow(), "TSVWithNames", types=r.types).decode()
    theirs = chdb_oracle.query(q.format(t=f"{name}.t"), "TSVWithNames").bytes().decode()
    assert ours == theirs, f"{expr}:\nours   {ours!r}\ntheirs {theirs!r}"


@pytest.mark.parametrize("sql,msg", [
    ("SELECT CAST(s AS Int32) FROM t", "Cannot parse string"),
    ("SELECT toDateTime(s) FROM t", "cannot parse"),
    ("SELECT multiIf(id = 1, 'a') FROM t", "at least 3 arguments"),
    ("SELECT multiIf(id = 1, 'a', id = 2, 'b') FROM t", "odd number"),
    ("SELECT if(id > 1, s, id) FROM t", "no supertype"),
    ("SELECT dateDiff('fortnight', d, d) FROM t", "unknown unit"),
    ("SELECT d + INTERVAL id DAY FROM t", "syntax error"),
    ("SELECT s + INTERVAL 1 DAY FROM t", "illegal type String of a date argument"),
    ("SELECT toStartOfHour(s) FROM t", "illegal type"),
    ("SELECT lengthUTF8() FROM t", "takes 1 argument"),
    ("SELECT toDateTime64(ts, id) FROM t", "must be a constant"),
], ids=lambda v: v if not v.startswith("SELECT") else v[7:40])
def test_function_errors_are_skipidx_errors(tables, sql, msg):
    db, _ = tables
    with pytest.raises(skipidx.SkipidxError, match=msg):
        db.sql(sql).fetchall()


TZ_DDL = "CREATE TABLE {t} (id UInt32, tz DateTime('America/New_York'), ki DateTime('Asia/Kolkata')) ENGINE = MergeTree ORDER BY id"
# both DST changes of 2024 in New York (before/after 02:00 on 03-10, the repeated 01:00 on 11-03), a year end
TZ_ROWS = ("INSERT INTO {t} VALUES (1, 1710054000, 1710054000), (2, 1710057600, 1710057600), "
           "(3, 1730613600, 1730613600), (4, 1730617200, 1730617200), (5, 1704067200, 1704067200)")
TZ_EXPRESSIONS = ["toHour(tz)", "toDate(tz)", "toStartOfDay(tz)", "toStartOfHour(tz)", "toStartOfMinute(tz)",
                  "toString(tz)", "toDayOfMonth(tz)", "toYYYYMM(tz)", "tz + INTERVAL 1 DAY", "tz + INTERVAL 1 MONTH",
                  "dateDiff('day', tz, tz + INTERVAL 1 DAY)", "toDateTime(tz, 'UTC')", "toStartOfMonth(tz)",
                  "toStartOfHour(ki)", "toStartOfDay(ki)", "toHour(ki)", "toTypeName(tz)"]


@pytest.mark.parametrize("expr", TZ_EXPRESSIONS, ids=TZ_EXPRESSIONS)
def test_time_zones_and_dst_match_clickhouse(expr):
    db = skipidx.connect()
    db.sql(TZ_DDL.format(t="t"))
    db.sql(TZ_ROWS.format(t="t"))
    name = chdb_oracle.scratch_database("tz")
    chdb_oracle.query(TZ_DDL.format(t=f"{name}.t"))
    chdb_oracle.query(TZ_ROWS.format(t=f"{name}.t"))
    q = f"SELECT {expr} FROM {{t}} ORDER BY id"
    r = db.sql(q.format(t="t"))
    ours = write_table(r.to_arrow(), "TSVWithNames", types=r.types).decode()
    assert ours == chdb_oracle.query(q.format(t=f"{name}.t"), "TSVWithNames").bytes().decode(), expr
