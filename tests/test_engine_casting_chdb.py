"""Comparisons of columns with literals of other types, against chDB.

ClickHouse decides ``UInt8 = 300`` (false), ``UInt64 > -1`` (true),
``Int8 < 2.5`` (``< 3``), ``Float32 = 0.1`` (false: the column is widened),
``Date = '2024-01-02'`` (parsed), NULLs in IN lists (ignored) and so on; the
binder folds and casts the same way. Each clause runs in skipidx on a table
and in chDB on the same rows given with the ``values`` table function.
"""
from __future__ import annotations

from skipidx.apps.research import chdb_session as chdb_oracle  # one chDB per process
import datetime as dt

import pyarrow as pa
import pytest

import skipidx
from skipidx.core.errors import SkipidxError

chdb = pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

SCHEMA = "u8 UInt8, i8 Int8, u64 UInt64, n Nullable(UInt16), f Float32, g Float64, d Date, ts DateTime, s String"
ROWS = [
    (0, -128, 0, None, 0.1, 0.1, "2024-01-01", "2024-01-01 00:00:00", "a"),
    (1, -1, 1, 5, 0.5, -0.0, "2024-01-02", "2024-01-02 03:04:05", "b"),
    (2, 0, 2**63, 70, 16777216.0, 1e300, "2024-02-29", "2024-02-29 23:59:59", ""),
    (255, 127, 2**64 - 1, 65535, float("nan"), float("nan"), "2149-06-06", "2106-02-07 06:28:15", "é"),
    (7, 3, 7, None, -1.5, -1.5, "1970-01-01", "1970-01-01 00:00:00", "7"),
]
CLAUSES = [
    "u8 = 300", "u8 != 300", "u8 < 300", "u8 > -1", "u8 <= -1", "u8 = 255", "u8 >= 2.5", "u8 < 2.5", "u8 = 2.0",
    "u8 = 1.5", "u8 IN (1, 300, -1, NULL, 2.5)", "u8 NOT IN (1, 300, NULL)", "u8 = '7'", "u8 BETWEEN -5 AND 2",
    "i8 = -128", "i8 < -200", "i8 > -129", "i8 = 127", "i8 >= 127.5", "i8 IN (-1, 200, -200)",
    "u64 = 18446744073709551615", "u64 > 9223372036854775807", "u64 = -1", "u64 < 1e19", "u64 >= 1.8446744073709552e19",
    "u64 IN (0, 9223372036854775808)",
    "n = 5", "n != 5", "n = 70000", "n != 70000", "n IN (5, NULL)", "n NOT IN (5, NULL)", "n NOT IN (70000)",
    "n IS NULL", "NOT (n = 5)", "n > -1", "n < 0",
    "f = 0.1", "f < 0.1", "f > 0.1", "f = 0.5", "f = 16777217", "f >= 16777216", "f != 0.5", "f = nan", "f > 1e40",
    "g = 0.1", "g = 0", "g = -0.0", "g > 1e299", "g != g", "g = g",
    "d = '2024-01-02'", "d > '2024-01-15'", "d < '1970-01-02'", "d IN ('2024-02-29', '2024-03-01')",
    "ts = '2024-01-02 03:04:05'", "ts > '2024-01-02'", "ts = '2024-01-02'", "ts > 1704164645", "ts < 0",
    "ts <= 4294967295", "ts > 4294967296", "ts BETWEEN '2024-01-01' AND '2024-02-01'",
    "s = ''", "s > 'a'", "s IN ('a', 'é', 'zz')", "s < '7'", "s = '7'",
    "5 < u8", "300 > u8", "'b' = s", "-1 < i8",
    "u8 = 1 OR NULL", "u8 = 1 AND NULL", "NOT NULL", "NULL OR 1",
]


def _lit(v, typ: str) -> str:
    if v is None:
        return "NULL"
    if typ in ("d", "ts", "s"):
        return "'" + str(v).replace("'", "\\'") + "'"
    if isinstance(v, float) and v != v:
        return "nan"
    return repr(v)


@pytest.fixture(scope="module")
def db():
    cols = list(zip(*ROWS))
    table = pa.table({
        "u8": pa.array(cols[0], pa.uint8()), "i8": pa.array(cols[1], pa.int8()), "u64": pa.array(cols[2], pa.uint64()),
        "n": pa.array(cols[3], pa.uint16()), "f": pa.array(cols[4], pa.float32()), "g": pa.array(cols[5], pa.float64()),
        "d": pa.array([dt.date.fromisoformat(x) for x in cols[6]], pa.date32()),
        "ts": pa.array([dt.datetime.fromisoformat(x) for x in cols[7]], pa.timestamp("s")),
        "s": pa.array(cols[8], pa.string()),
    })
    with skipidx.connect() as d:
        d.sql(f"CREATE TABLE t ({SCHEMA}, INDEX mm u8 TYPE minmax, INDEX st n TYPE set(10), "
              "INDEX fm f TYPE minmax, INDEX dm d TYPE minmax, INDEX tm ts TYPE minmax, INDEX sb s TYPE bloom_filter) "
              "ENGINE = MergeTree ORDER BY u64 SETTINGS index_granularity = 1")
        d.insert("t", table)
        yield d


def _chdb_count(where: str) -> int | None:
    names = ["u8", "i8", "u64", "n", "f", "g", "d", "ts", "s"]
    rows = ", ".join("(" + ", ".join(_lit(v, k) for v, k in zip(r, names)) + ")" for r in ROWS)
    try:
        out = chdb_oracle.query(f"SELECT count() FROM values('{SCHEMA}', {rows}) WHERE {where}", "CSV")
    except Exception:
        return None
    return int(out.bytes().decode().strip())


@pytest.mark.parametrize("where", CLAUSES, ids=CLAUSES)
def test_literal_comparisons_match_chdb(db, where: str) -> None:
    want = _chdb_count(where)
    if want is None:
        with pytest.raises(SkipidxError):
            db.sql(f"SELECT count() FROM t WHERE {where}")
        return
    r = db.sql(f"SELECT count() FROM t WHERE {where}")
    assert r.fetchall() == [(want,)], f"WHERE {where}"
