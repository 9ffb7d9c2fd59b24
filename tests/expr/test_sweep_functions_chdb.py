"""Functions a ClickHouse user of the demos types, through the engine against chDB:
for each expression the output column name, the values and the ClickHouse type
(the result's types and toTypeName) equal chDB's on the same table. Rounding
(round/floor/ceil/trunc at any scale, integer wrap-around), abs, greatest/least,
toUnixTimestamp, toMonday, toStartOf{Five,Ten,Fifteen}Minutes (a +05:45 zone),
reverse, repeat, arrayStringConcat, median, Date/DateTime +- n and add*/subtract*, canonical column names of trim/ltrim/
rtrim/date_diff, and Array(String) results."""
from __future__ import annotations

import pytest

import skipidx
from skipidx.apps.research import chdb_session as chdb_oracle
from skipidx.engine.formats import write_table

pytestmark = pytest.mark.chdb

DDL = ("CREATE TABLE {t} (id UInt32, s String, n Nullable(Int32), ts DateTime, tz DateTime('Asia/Kathmandu'), "
       "d Date, f Float64, i8 Int8, u8 UInt8, i64 Int64, f32 Float32, arr Array(String), nums Array(UInt16)) "
       "ENGINE = MergeTree ORDER BY id")
ROWS = ("INSERT INTO {t} VALUES "
        "(1, 'hello', 5, '2020-03-04 05:06:07', 1704669479, '2020-01-31', 1.5, -128, 255, "
        "-9223372036854775808, 2.5, ['a', 'b'], [1, 2]), "
        "(2, 'abc', NULL, '2024-01-07 23:59:59', 1711843200, '2024-02-29', -2.25, 125, 125, 125, -0.5, "
        "[], []), "
        "(3, '  x ', -3, '1970-01-02 00:00:00', 43200, '1970-01-01', 0.125, -125, 0, -1, 1e10, "
        "['', 'c'], [65535]), "
        "(4, 'абв', 7, '2100-12-31 23:00:00', 2147483647, '2149-01-06', 1e20, 7, 5, 9223372036854775807, "
        "3.5, ['x'], [0, 7])")

EXPRESSIONS = [
    "round(f)", "round(f, 1)", "round(u8, -3)", "floor(i64, -1)", "ceil(i64, -1)", "trunc(i64, -2)", "round(f, -1)", "round(f32)", "round(i8, -1)", "round(u8, -1)", "round(u8, -2)",
    "round(i64, -1)", "round(id, -3)", "round(n, -1)", "round(f, 2)", "floor(f)", "floor(f, 1)", "floor(i8, -1)",
    "floor(u8, -1)", "ceil(f)", "ceil(f, 2)", "ceil(i8, -1)", "ceil(u8, -1)", "trunc(f)", "trunc(i8, -1)",
    "truncate(f, 1)", "ceiling(f32)", "abs(i8)", "abs(i64)", "abs(n)", "abs(f)", "abs(u8)", "abs(f32)",
    "greatest(id, 2)", "greatest(i8, u8)", "least(f, id)", "greatest(n, 0)", "least(s, 'b')",
    "greatest(d, toDate('2020-02-01'))", "least(n, NULL)",
    "toUnixTimestamp(ts)", "toUnixTimestamp(tz)", "toUnixTimestamp(d)", "toMonday(d)", "toMonday(ts)", "toMonday(tz)",
    "toStartOfFiveMinutes(ts)", "toStartOfTenMinutes(tz)", "toStartOfFifteenMinutes(tz)", "toStartOfFiveMinute(tz)",
    "if(id = 4, reverse('xy'), reverse(s))", "repeat(s, 2)", "repeat(s, id)", "arrayStringConcat(arr, ',')", "arrayStringConcat(arr)",
    "arrayStringConcat(nums, '-')", "splitByChar(',', s)",
    "ts + 3600", "d + 3", "3 + d", "ts - id", "d - id", "tz + 1", "addDays(d, 3)", "addMonths(d, id)",
    "subtractHours(ts, id)", "addYears(ts, 1)", "addWeeks(d, -1)", "addHours(d, 5)", "addSeconds(tz, id * 10)",
    "subtractQuarters(d, 1)", "addMinutes(ts, n)",
    "formatDateTime(ts, '%Y-%m-%d %H:%i:%S')", "formatDateTime(d, '%F %T')", "DATE_FORMAT(ts, '%d/%m')",
    "formatDateTime(tz, '%F %T %z %a %b %M %e %Q %p %r %R %j %V %u %w %W %y %C %D %G %h %k %l %c %s %f %%')",
    "formatDateTime(ts, '%F %T', 'Asia/Tokyo')", "formatDateTime(d, '%F %T', 'America/New_York')",
    "ts - toDateTime('2020-01-01 00:00:00')", "d - toDate('2020-01-01')", "tz - ts", "toDate(ts) - d",
    "sqrt(f)", "sqrt(i8)", "exp(f32)", "log(f)", "ln(u8)", "log2(id)", "log10(n)", "pow(id, 2)", "power(f, 0.5)",
    "toISOWeek(d)", "toISOYear(d)", "toISOWeek(tz)", "toLastDayOfMonth(d)", "toLastDayOfMonth(tz)",
    "countSubstrings(s, 'l')", "splitByString('b', s)", "left(s, 2)", "right(s, 2)", "leftUTF8(s, -1)", "rightUTF8(s, -2)",
    "leftUTF8(s, 2)", "rightUTF8(s, 1)",
    "formatReadableSize(f)", "formatReadableQuantity(i64)", "formatReadableDecimalSize(u8)",
    "formatReadableSize(n)", "formatReadableQuantity(f32)",
    "toStartOfInterval(ts, INTERVAL 15 MINUTE)", "toStartOfInterval(tz, INTERVAL 7 MINUTE)",
    "toStartOfInterval(tz, INTERVAL 5 HOUR)", "toStartOfInterval(ts, INTERVAL 30 SECOND)",
    "toStartOfInterval(tz, INTERVAL 3 DAY)", "toStartOfInterval(ts, INTERVAL 2 WEEK)",
    "toStartOfInterval(tz, INTERVAL 2 MONTH)", "toStartOfInterval(ts, INTERVAL 1 QUARTER)",
    "toStartOfInterval(d, INTERVAL 2 YEAR)", "toStartOfInterval(d, INTERVAL 3 DAY)",
    "hex(s)", "hex(id)", "hex(i8)", "hex(i64)", "hex(n)", "unhex(hex(s))", "hex(cityHash64(s))", "unhex('4A4b')",
    "trim(s)", "ltrim(s)", "rtrim(s)", "date_diff('day', d, toDate(ts))", "timestampDiff('hour', ts, ts + INTERVAL 1 DAY)",
]

AGGREGATES = ["max(ts) - min(ts)", "toDate(max(ts)) - toDate(min(d))", "toTypeName(count())", "toTypeName(groupArray(id)), count()", "toTypeName(avg(n))", "median(f)", "median(id)", "medianExact(id)", "round(avg(f), 1)", "round(sum(f32))"]


@pytest.fixture(scope="module")
def tables():
    db = skipidx.connect()
    db.sql(DDL.format(t="t"))
    db.sql(ROWS.format(t="t"))
    name = chdb_oracle.scratch_database("sw")
    chdb_oracle.query(DDL.format(t=f"{name}.t"))
    chdb_oracle.query(ROWS.format(t=f"{name}.t"))
    yield db, name
    db.close()


def _both(tables, q: str) -> tuple[str, str]:
    db, name = tables
    r = db.sql(q.format(t="t"))
    ours = write_table(r.to_arrow(), "TSVWithNames", types=r.types).decode()
    head, _, rest = ours.partition("\n")
    types = "\t".join(t.replace("\\", "\\\\").replace("'", "\\'") for t in r.types)
    ours = f"{head}\n{types}\n{rest}"
    theirs = chdb_oracle.query(q.format(t=f"{name}.t"), "TSVWithNamesAndTypes").bytes().decode()
    return ours, theirs


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=EXPRESSIONS)
def test_function_matches_clickhouse(tables, expr):
    ours, theirs = _both(tables, f"SELECT {expr}, toTypeName({expr}) FROM {{t}} ORDER BY id")
    assert ours == theirs, f"{expr}:\nours   {ours!r}\ntheirs {theirs!r}"


@pytest.mark.parametrize("expr", AGGREGATES, ids=AGGREGATES)
def test_aggregate_matches_clickhouse(tables, expr):
    ours, theirs = _both(tables, f"SELECT {expr} FROM {{t}}")
    assert ours == theirs, f"{expr}:\nours   {ours!r}\ntheirs {theirs!r}"


CONSTANTS = [
    "SELECT round(2.5), round(3.5), round(-2.5), round(0.125, 2), round(1.005, 2), round(123, -1), round(125, -1)",
    "SELECT round(-125, -1), round(toUInt8(255), -1), floor(-2.5), ceil(-2.5), floor(1.23456, 3), abs(-3)",
    "SELECT greatest(1, 2.5), greatest(1, NULL), least('a', 'b'), greatest(toUInt8(1), toInt8(-1))",
    "SELECT toUnixTimestamp('2020-01-01 00:00:00'), toUnixTimestamp(toDateTime64('2020-01-01 00:00:00.5', 3))",
    "SELECT reverse('abc'), repeat('ab', 3), repeat('ab', 0), arrayStringConcat(['a', 'b'], ', ')",
    "SELECT trim('  a  '), trimBoth(' a'), ltrim(' a'), rtrim('a ')",
    "SELECT now() > 0, now() > 1000000, toDateTime('2020-01-01 00:00:00') = 1577836800, "
    "1577836800 = toDateTime('2020-01-01 00:00:00', 'Asia/Tokyo') + 32400",
    "SELECT formatDateTime(toDateTime64('2024-01-07 03:04:05.123', 3), '%T %f'), "
    "formatDateTime(toDateTime64('2024-01-07 03:04:05.123456', 6, 'Asia/Tokyo'), '%F %T.%f %z')",
    "SELECT sqrt(-1), log(0), log(-1), pow(2, -1), exp(1), log(NULL), pi() > 3, e() < 3",
    "SELECT countSubstrings('aaaa', 'aa'), countSubstrings('abc', ''), splitByString(', ', ''), "
    "splitByString('ab', 'cabab'), left('abc', 5), left('abc', -1), right('abc', -1), right('abc', 0), leftUTF8('абв', 2), rightUTF8('абв', -1)",
    "SELECT toDate('2024-01-02') - toDate('2024-01-01'), toDateTime('2024-01-01 00:00:00') - "
    "toDateTime('2024-01-02 00:00:00'), toLastDayOfMonth(toDate('2024-12-05')), toISOWeek(toDate('2024-12-30'))",
    "SELECT x, formatReadableSize(x), formatReadableQuantity(x), formatReadableDecimalSize(x) FROM values("
    "'x Float64', (0), (1), (1023), (1024), (1536), (-2048), (1e15), (1e30), (999.999), (0.5), (nan), (inf), (1e40))",
    *(f"SELECT toDateTime('{v}'), CAST('{v}' AS DateTime), toDateTime64('{v}', 3), toDateTime('{v}', 'Asia/Tokyo'), "
      f"toDateTimeOrNull('{v}'), toDateTimeOrZero('{v}'), toDateTime64('{v}', 3, 'Asia/Tokyo')"
      for v in ("2024-01-07T03:04:05", "2024-01-07 03:04:05.678", "2024-01-07", "2024-1-7 3:04:05", "2024-01-07 03:04",
                "2024-01-07 03:04:05Z", "2024-01-07T03:04:05.5Z", "2024-01-07 03:04:05+01:00", "1704596645")),
    "SELECT toDateTimeOrNull('2021-02-30 00:00:00'), toDateTimeOrNull('bad'), toDateTimeOrZero('123456789')",
    *(f"SELECT t, toStartOfInterval(t, INTERVAL 7 MINUTE), toStartOfInterval(t, INTERVAL 5 HOUR), "
      f"toStartOfInterval(t, INTERVAL 1 HOUR), toStartOfInterval(t, INTERVAL 3 DAY), toStartOfInterval(t, INTERVAL 1 WEEK), "
      f"toStartOfInterval(t, INTERVAL 2 YEAR), toStartOfInterval(toDate(t), INTERVAL 3 DAY) FROM (SELECT toDateTime(x, "
      f"'{zone}') AS t FROM values('x UInt32', (1704648779), (86399), (1000000000), (1710054000), (1730613600)))"
      for zone in ("UTC", "Asia/Kathmandu", "America/New_York")),
    "SELECT hex('abc'), hex(''), hex(255), hex(256), hex(toInt8(-1)), hex(toUInt64(0)), unhex('616263'), "
    "hex(unhex('6')), hex(unhex('41a')), hex(CAST('ab' AS FixedString(3))), hex(NULL), hex(toUInt16(1))",
    "SELECT toDate('2024-01-01') + NULL, toDate('2024-01-01') - 65536, toDateTime('1970-01-01 00:00:00') - 1",
    "SELECT toDateTime64('2024-01-01 00:00:00', 3) + 1, addDays(toDate('2024-01-01'), 3), "
    "subtractMinutes(toDateTime64('2024-01-01 00:00:00.5', 3), 2), addYears(toDateTime('2024-02-29 10:00:00'), 1)",
]


@pytest.mark.parametrize("q", CONSTANTS, ids=[f"const{i}" for i in range(len(CONSTANTS))])
def test_constants_match_clickhouse(tables, q):
    ours, theirs = _both(tables, q)
    assert ours == theirs, f"{q}:\nours   {ours!r}\ntheirs {theirs!r}"


@pytest.mark.parametrize("sql,msg", [
    ("SELECT toStartOfFiveMinutes(d) FROM t", "DateTime is required"),
    ("SELECT toStartOfInterval(d, INTERVAL 1 HOUR) FROM t", "illegal interval kind hour for a Date"),
    ("SELECT toDateTime('2021-02-30 00:00:00')", "cannot parse"),
    ("SELECT formatDateTime(ts, '%E') FROM t", "unsupported specifier '%E'"),
    ("SELECT formatDateTime(ts, s) FROM t", "must be a constant"),
    ("SELECT round(f, id) FROM t", "must be a constant"),
    ("SELECT round(s) FROM t", "illegal type String"),
    ("SELECT abs(s) FROM t", "illegal type String"),
])
def test_errors(tables, sql, msg):
    db, _ = tables
    with pytest.raises(skipidx.SkipidxError, match=msg):
        db.sql(sql).fetchall()
