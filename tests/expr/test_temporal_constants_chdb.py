"""Comparisons of Date / DateTime / DateTime64 columns with typed constants
(``toDate(...)``, ``toDateTime(...)``, ``toDateTime64(..., 3)``, ``now()``), the
answers and the minmax pruning against chDB: a Date against a DateTime compares as
its midnight, a DateTime against a fractional DateTime64 as the integer rule."""
from __future__ import annotations

import datetime as dt

import pytest

import skipidx

pytestmark = pytest.mark.chdb

DDL = ("CREATE TABLE tc (d Date, ts DateTime, t3 DateTime64(3), "
       "INDEX d_mm d TYPE minmax GRANULARITY 1, INDEX ts_mm ts TYPE minmax GRANULARITY 1) "
       "ENGINE = MergeTree ORDER BY tuple() SETTINGS index_granularity = 4")

CONSTANTS = ["toDate('2020-01-02')", "toDateTime('2020-01-02 00:00:00')", "toDateTime('2020-01-02 12:00:00')",
             "toDateTime64('2020-01-02 00:00:01.500', 3)", "toDateTime64('2020-01-02 00:00:01.000', 3)",
             "'2020-01-02'", "'2020-01-02 00:00:01'", "'2020-01-02 00:00:01.5'"]
OPS = ["=", "!=", "<", "<=", ">", ">="]


def _rows():
    base = dt.datetime(2020, 1, 1, 23, 59, 59)
    out = []
    for i in range(40):
        t = base + dt.timedelta(seconds=i * 4001 % 90000)
        out.append((t.date().isoformat(), t.strftime("%Y-%m-%d %H:%M:%S"),
                    (t + dt.timedelta(milliseconds=500 * (i % 3))).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]))
    out += [("2020-01-02", "2020-01-02 00:00:00", "2020-01-02 00:00:01.500"),
            ("2020-01-02", "2020-01-02 00:00:01", "2020-01-02 00:00:01.000")]
    return out


@pytest.fixture(scope="module")
def tables(tmp_path_factory, chdb):
    rows = _rows()
    values = ", ".join(f"('{d}', '{ts}', '{t3}')" for d, ts, t3 in rows)
    db = skipidx.connect(str(tmp_path_factory.mktemp("temporal") / "db"))
    db.sql(DDL)
    db.sql(f"INSERT INTO tc VALUES {values}")
    name = chdb.scratch_database("temporal")
    chdb.query(DDL.replace("CREATE TABLE tc", f"CREATE TABLE {name}.tc"), "TSV")
    chdb.query(f"INSERT INTO {name}.tc VALUES {values}", "TSV")
    yield db, name
    db.close()


@pytest.mark.parametrize("column", ["d", "ts", "t3"])
@pytest.mark.parametrize("const", CONSTANTS, ids=range(len(CONSTANTS)))
def test_comparisons_with_typed_constants(tables, chdb, column, const):
    """Where chDB refuses a comparison (a fractional text for a DateTime, a DateTime64
    in the IN list of a Date) skipidx answers it as the comparison of the values; only
    the cases chDB answers are compared."""
    db, name = tables
    for where in [f"{column} {op} {const}" for op in OPS] + [f"{column} IN ({const}, {const})"]:
        try:
            theirs = int(chdb.query(f"SELECT count() FROM {name}.tc WHERE {where}", "TSV").bytes().decode())
        except Exception as e:  # noqa: BLE001 -- chDB's refusal
            assert "TYPE_MISMATCH" in str(e), f"{where}: chDB failed otherwise: {e}"
            continue
        mine = db.sql(f"SELECT count() FROM tc WHERE {where}").fetchall()[0][0]
        assert mine == theirs, f"{where}: skipidx {mine}, chDB {theirs}"


def test_now_and_today(tables):
    db, _ = tables
    assert db.sql("SELECT count() FROM tc WHERE ts < now() AND d <= today()").fetchall()[0][0] == 42
