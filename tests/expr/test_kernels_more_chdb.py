"""String, date/time, conversion, conditional and hash kernels, row by row against chDB."""
from __future__ import annotations

import datetime as dt
import decimal
import json

import numpy as np
import pyarrow as pa
import pytest

from skipidx.apps.research import chdb_session as chdb_oracle
from skipidx.expr.kernels import convert as C
from skipidx.expr.kernels import datetime as D
from skipidx.expr.kernels import text as T

pytestmark = pytest.mark.chdb


def _ch(exprs: list[str]) -> list:
    out = chdb_oracle.query("SELECT " + ", ".join(exprs), "JSONCompactEachRow").bytes().decode("utf-8", "replace")
    return json.loads(out.strip())


def _norm(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def _lit(v) -> str:
    if v is None:
        return "NULL"
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'").replace("\t", "\\t") + "'"


STRINGS = ["hello", "", "  a b  ", "абв", "HeLLo world", None, "a,,b", "aaa", "\ttab "]

TEXT_CASES = [
    ("substring({s}, 2)", lambda a: T.substring(a, 2)),
    ("substring({s}, -3, 2)", lambda a: T.substring(a, -3, 2)),
    ("substring({s}, 2, -1)", lambda a: T.substring(a, 2, -1)),
    ("substring({s}, -10, 3)", lambda a: T.substring(a, -10, 3)),
    ("substring({s}, 0)", lambda a: T.substring(a, 0)),
    ("position({s}, 'l')", lambda a: T.position(a, b"l")),
    ("positionCaseInsensitive({s}, 'LL')", lambda a: T.position(a, b"LL", True)),
    ("position({s}, '')", lambda a: T.position(a, b"")),
    ("trimBoth({s})", T.trim),
    ("trimLeft({s})", lambda a: T.trim(a, True, False)),
    ("trimRight({s})", lambda a: T.trim(a, False, True)),
    ("lengthUTF8({s})", T.length_utf8),
    ("upperUTF8({s})", T.upper_utf8),
    ("lowerUTF8({s})", T.lower_utf8),
    ("replaceAll({s}, 'a', 'bb')", lambda a: T.replace_all(a, b"a", b"bb")),
    ("replaceRegexpAll({s}, '[al]', 'x\\\\0')", lambda a: T.replace_regexp_all(a, b"[al]", b"x\\0")),
    ("extract({s}, 'l+')", lambda a: T.extract(a, b"l+")),
    ("splitByChar(',', {s})", lambda a: T.split_by_char(b",", a)),
    ("empty({s})", T.empty),
    ("notEmpty({s})", T.not_empty),
    ("concat({s}, '!', {s})", lambda a: T.concat(a, pa.array(["!"] * len(a)), a)),
]


@pytest.mark.parametrize("tpl,fn", TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_text_kernels(tpl, fn):
    ours = [_norm(v) for v in fn(pa.array(STRINGS)).to_pylist()]
    theirs = [_ch([tpl.format(s=_lit(v))])[0] for v in STRINGS]
    assert ours == theirs, tpl


STAMPS = ["2020-03-04 05:06:07", "2024-01-07 23:59:59", "1970-01-01 00:00:00", "2023-12-31 12:00:00", None,
          "2020-02-29 00:00:00", "2021-01-31 10:20:30"]
_ARR = pa.array([None if v is None else dt.datetime.fromisoformat(v) for v in STAMPS], pa.timestamp("s"))


def _at(v: str) -> pa.Array:
    return pa.array([dt.datetime.fromisoformat(v)] * len(_ARR), pa.timestamp("s"))


DATE_CASES = [
    ("toYear({x})", lambda: D.part(_ARR, "year")), ("toMonth({x})", lambda: D.part(_ARR, "month")),
    ("toDayOfMonth({x})", lambda: D.part(_ARR, "day")), ("toHour({x})", lambda: D.part(_ARR, "hour")),
    ("toMinute({x})", lambda: D.part(_ARR, "minute")), ("toSecond({x})", lambda: D.part(_ARR, "second")),
    ("toDayOfWeek({x})", lambda: D.part(_ARR, "day_of_week")), ("toQuarter({x})", lambda: D.part(_ARR, "quarter")),
    ("toDayOfYear({x})", lambda: D.part(_ARR, "day_of_year")), ("toYYYYMM({x})", lambda: D.part(_ARR, "yyyymm")),
    ("toYYYYMMDD({x})", lambda: D.part(_ARR, "yyyymmdd")),
    ("toStartOfMinute({x})", lambda: D.start_of(_ARR, "minute")), ("toStartOfHour({x})", lambda: D.start_of(_ARR, "hour")),
    ("toStartOfDay({x})", lambda: D.start_of(_ARR, "day")), ("toStartOfWeek({x})", lambda: D.start_of(_ARR, "week")),
    ("toStartOfMonth({x})", lambda: D.start_of(_ARR, "month")),
    ("toStartOfQuarter({x})", lambda: D.start_of(_ARR, "quarter")),
    ("toStartOfYear({x})", lambda: D.start_of(_ARR, "year")), ("toDate({x})", lambda: D.to_date(_ARR)),
    ("{x} + INTERVAL 1 MONTH", lambda: D.add_interval(_ARR, "month", 1)),
    ("{x} - INTERVAL 13 MONTH", lambda: D.add_interval(_ARR, "month", -13)),
    ("{x} + INTERVAL 3 HOUR", lambda: D.add_interval(_ARR, "hour", 3)),
    ("{x} + INTERVAL 2 WEEK", lambda: D.add_interval(_ARR, "week", 2)),
    ("toDate({x}) + INTERVAL 1 YEAR", lambda: D.add_interval(D.to_date(_ARR), "year", 1)),
    ("toDate({x}) + INTERVAL 1 HOUR", lambda: D.add_interval(D.to_date(_ARR), "hour", 1)),
    ("dateDiff('day', toDateTime('2020-01-01 23:00:00'), {x})", lambda: D.date_diff("day", _at("2020-01-01 23:00:00"), _ARR)),
    ("dateDiff('month', toDateTime('2020-01-31 00:00:00'), {x})", lambda: D.date_diff("month", _at("2020-01-31 00:00:00"), _ARR)),
    ("dateDiff('week', toDateTime('2020-01-01 00:00:00'), {x})", lambda: D.date_diff("week", _at("2020-01-01 00:00:00"), _ARR)),
    ("dateDiff('hour', toDateTime('2020-01-01 00:59:00'), {x})", lambda: D.date_diff("hour", _at("2020-01-01 00:59:00"), _ARR)),
]


def _text(v):
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return str(v)


@pytest.mark.parametrize("tpl,fn", DATE_CASES, ids=[c[0] for c in DATE_CASES])
def test_datetime_kernels(tpl, fn):
    ours = [_text(v) for v in fn().to_pylist()]
    theirs = [_ch(["toString(" + tpl.format(x="NULL" if v is None else f"toDateTime('{v}')") + ")"])[0] for v in STAMPS]
    assert ours == theirs, tpl


TEXTS = ["2020-01-02", "2020-01-02 03:04:05", "2020-1-2", "bad", "2021-02-30", None, "2020-01-02 03:04:05.678"]
PARSE_CASES = [
    ("toDateOrNull", lambda a: D.parse_datetime(a, "toDate", date_only=True, on_error="null")),
    ("toDateTimeOrNull", lambda a: D.parse_datetime(a, "toDateTime", on_error="null")),
    ("toDateTimeOrZero", lambda a: D.parse_datetime(a, "toDateTime", on_error="zero")),
    ("parseDateTimeBestEffortOrNull", lambda a: D.parse_datetime(a, "p", on_error="null", best_effort=True)),
]


@pytest.mark.parametrize("name,fn", PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_text_to_datetime(name, fn):
    ours = [_text(v) for v in fn(pa.array(TEXTS)).to_pylist()]
    theirs = [_ch([f"toString({name}({_lit(v)}))"])[0] for v in TEXTS]
    assert ours == theirs, name


def test_strict_datetime_text_is_an_error():
    from skipidx.errors import SkipidxError

    with pytest.raises(SkipidxError, match="cannot parse 'bad'"):
        D.parse_datetime(pa.array(["bad"]), "toDateTime")


def _cmp(ours: list, exprs: list[str]):
    theirs = _ch(exprs)
    assert [_norm(v) for v in ours] == theirs, list(zip(ours, theirs, exprs))


def test_integer_conversions_wrap_and_truncate():
    ints = [300, -129, -1, 0, 2**40, None]
    lit = ["NULL" if v is None else str(v) for v in ints]
    _cmp(C.to_int(pa.array(ints, pa.int64()), "UInt8").to_pylist(), [f"toUInt8(toInt64({v}))" for v in lit])
    _cmp(C.to_int(pa.array(ints, pa.int64()), "Int8").to_pylist(), [f"toInt8(toInt64({v}))" for v in lit])
    fl = [3.99, -3.99, 1e10, -0.5, None]
    flit = ["NULL" if v is None else repr(v) for v in fl]
    _cmp(C.to_int(pa.array(fl), "Int32").to_pylist(), [f"toInt32({v})" for v in flit])
    _cmp(C.to_int(pa.array(fl), "UInt16").to_pylist(), [f"toUInt16({v})" for v in flit])
    _cmp([C.to_int(pa.array(["200"]), "Int8")[0].as_py(), C.to_int(pa.array(["+5"]), "Int64")[0].as_py()],
         ["toInt8('200')", "toInt64('+5')"])


def test_text_to_number_or_zero_or_null():
    ss = ["123", " 42", "-7", "12a", "", None, "18446744073709551615", "300"]
    lit = [_lit(v) for v in ss]
    _cmp(C.to_int(pa.array(ss), "Int64", "zero").to_pylist(), [f"toInt64OrZero({v})" for v in lit])
    _cmp(C.to_int(pa.array(ss), "UInt64", "null").to_pylist(), [f"toUInt64OrNull({v})" for v in lit])
    _cmp(C.to_int(pa.array(ss), "UInt8", "zero").to_pylist(), [f"toUInt8OrZero({v})" for v in lit])
    fs = ["1.5", "inf", "-nan", "1e3", "x", None, " 2 "]
    _cmp(C.to_float(pa.array(fs), "Float64", "null").to_pylist(), [f"toFloat64OrNull({_lit(v)})" for v in fs])


def test_to_string_of_each_type():
    vals = [1.5, 0.1, 1e20, 1e21, 1e-7, 123456.789, -0.0, 1 / 3]
    _cmp(C.to_string(pa.array(vals)).to_pylist(), [f"toString(toFloat64({v!r}))" for v in vals])
    _cmp(C.to_string(pa.array(vals, pa.float32())).to_pylist(), [f"toString(toFloat32({v!r}))" for v in vals])
    ours = [C.to_string(pa.array([True]))[0].as_py(), C.to_string(pa.array([-5]))[0].as_py(),
            C.to_string(pa.array([dt.date(2020, 1, 2)]))[0].as_py(),
            C.to_string(pa.array([dt.datetime(2020, 1, 2, 3, 4, 5)], pa.timestamp("s")))[0].as_py(),
            C.to_string(pa.array([dt.datetime(2020, 1, 2, 3, 4, 5, 120000)], pa.timestamp("ms")))[0].as_py(),
            C.to_string(pa.array([decimal.Decimal("1.20")], pa.decimal128(5, 2)))[0].as_py(),
            C.to_string(pa.array([["a", "b'"]]))[0].as_py(), C.to_string(pa.array([[1, 2]]))[0].as_py()]
    _cmp(ours, ["toString(true)", "toString(-5)", "toString(toDate('2020-01-02'))",
                "toString(toDateTime('2020-01-02 03:04:05'))", "toString(toDateTime64('2020-01-02 03:04:05.12', 3))",
                "toString(CAST(1.20 AS Decimal(5,2)))", "toString(['a','b\\''])", "toString([1,2])"])


def test_conditionals():
    _cmp(C.if_(pa.array([1, 0, None]), pa.array(["a", "b", "c"]), pa.array(["x", "y", "z"])).to_pylist(),
         ["if(1,'a','x')", "if(0,'b','y')", "if(NULL,'c','z')"])
    _cmp(C.multi_if(pa.array([0, 1]), pa.array([1, 2]), pa.array([1, 0]), pa.array([3, 4]), pa.array([5, 6])).to_pylist(),
         ["multiIf(0,1,1,3,5)", "multiIf(1,2,0,4,6)"])
    _cmp([C.coalesce(pa.array([None]), pa.array([2]))[0].as_py(), C.null_if(pa.array([1]), pa.array([1]))[0].as_py(),
          C.null_if(pa.array([1]), pa.array([2]))[0].as_py()], ["coalesce(NULL, 2)", "nullIf(1,1)", "nullIf(1,2)"])


def test_hashes_of_each_type():
    one = lambda arr: arr[0].as_py()  # noqa: E731
    ours = [one(C.city_hash64(pa.array(["abc"]))), one(C.city_hash64(pa.array([1], pa.uint8()))),
            one(C.city_hash64(pa.array(["a"]), pa.array(["b"]))), one(C.city_hash64(pa.array([1.5]))),
            one(C.city_hash64(pa.array([dt.date(2020, 1, 1)]))), one(C.city_hash64(pa.array(["a"]), pa.array([7], pa.int32()))),
            one(C.city_hash64(pa.array([-1], pa.int8()))), one(C.city_hash64(pa.array([-1], pa.int64()))),
            one(C.xx_hash64(pa.array(["abc"]))), one(C.xx_hash64(pa.array([1], pa.uint8()))),
            one(C.xx_hash64(pa.array([1], pa.int64()))), one(C.xx_hash64(pa.array([1.5])))]
    _cmp(ours, ["cityHash64('abc')", "cityHash64(1)", "cityHash64('a','b')", "cityHash64(1.5)",
                "cityHash64(toDate('2020-01-01'))", "cityHash64('a', toInt32(7))", "cityHash64(toInt8(-1))",
                "cityHash64(toInt64(-1))", "xxHash64('abc')", "xxHash64(1)", "xxHash64(toInt64(1))", "xxHash64(1.5)"])
    assert C.city_hash64(pa.array([None, "a"]))[0].as_py() is None


def test_to_string_whole_columns(tmp_path):
    """toString over whole columns (the vectorised float/Decimal/UUID/array text) row by row vs chDB."""
    from functions_corpus import chdb_columns, write_parquet

    rng = np.random.default_rng(20261127)
    n = 4000
    wide = rng.standard_normal(n) * 10.0 ** rng.integers(-25, 25, n)
    wide[:12] = [1e20, 1e21, -1e16, 1e-7, 1.5e-5, 0.0, -0.0, 5e-324, 1.7976931348623157e308, 123456789012.5,
                 float("inf"), float("nan")]
    nulls = rng.random(n) < 0.05
    ints = rng.integers(-10**9, 10**9, n)
    lists = [[] if i % 17 == 0 else [float(x) for x in wide[i:i + i % 4]] for i in range(n)]
    words = [[] if i % 13 == 0 else [f"w'{i}", None, "a\\b\tc"][: i % 4] for i in range(n)]
    dates = [[dt.date(2020, 1, 1) + dt.timedelta(days=int(i))] for i in range(n)]
    table = pa.table({
        "f64": pa.array(wide, mask=nulls), "f32": pa.array(wide.astype(np.float32), mask=nulls),
        "dec": pa.array([decimal.Decimal(int(v)).scaleb(-4) for v in ints], pa.decimal128(18, 4)),
        "u": pa.array([bytes(rng.integers(0, 256, 16, dtype=np.uint8)) for _ in range(n)], pa.binary(16)),
        "lf": pa.array(lists, pa.list_(pa.float64())), "ls": pa.array(words, pa.list_(pa.string())),
        "ld": pa.array(dates, pa.list_(pa.date32())),
    })
    path = write_parquet(table, tmp_path / "t.parquet")
    exprs = ["toString(f64)", "toString(f32)", "toString(dec)", "toString(toUUID(hex(u)))", "toString(lf)",
             "toString(ls)", "toString(ld)"]
    # ClickHouse reads FixedString(16) as binary; build the UUID text from the same bytes on its side
    exprs[3] = ("lower(concat(substring(hex(u),1,8),'-',substring(hex(u),9,4),'-',substring(hex(u),13,4),'-',"
                "substring(hex(u),17,4),'-',substring(hex(u),21,12)))")
    theirs = chdb_columns(path, exprs)
    cols = ["f64", "f32", "dec", "u", "lf", "ls", "ld"]
    for name, expr, want in zip(cols, exprs, theirs):
        col = table.column(name).combine_chunks()
        got = (C.uuid_texts(col) if name == "u" else C.to_string(col)).to_pylist()
        want = [None if w is None else (w.decode() if isinstance(w, bytes) else w) for w in want]
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        assert not bad, f"{expr}: {len(bad)} rows differ, first: " + "; ".join(
            f"#{i} {col[i].as_py()!r}: ours={got[i]!r} chdb={want[i]!r}" for i in bad[:4])
