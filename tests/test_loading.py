"""Loading that just works: ISO 8601 / fractional / offset / epoch timestamps
parse as ClickHouse's best-effort parsing reads them (chDB is the oracle),
CSV header detection, `skipidx build --from` schema inference, and a failing
file leaves the database as it was (a table the build created is removed)."""
from __future__ import annotations

import datetime as dt
import json

import pytest

import skipidx
from skipidx.apps.pipeline import build, infer_columns
from skipidx.core.errors import SkipidxError

STAMPS = ["2024-01-02 03:04:05", "2024-01-02T03:04:05", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123Z",
          "2024-01-02 03:04:05.5", "2024-01-02T03:04:05+02:00", "2024-01-02T03:04:05.987654-05:30",
          "2024-01-02T23:59:59+0100", "2024-02-29", "1704164645"]


def _chdb_parse(values: list[str], typ: str) -> list:
    from skipidx.apps.research import chdb_session as ch

    func = {"DateTime": "parseDateTimeBestEffort({v})", "DateTime64(3)": "parseDateTime64BestEffort({v}, 3)",
            "Date": "toDate(parseDateTimeBestEffort({v}))"}[typ]
    out = []
    for v in values:
        arg = f"'{v}'"      # (a number is read as unix time, as best_effort reads it)
        r = ch.query(f"SELECT toString({func.format(v=arg)}) SETTINGS session_timezone = 'UTC'", "TSV")
        out.append(r.bytes().decode().strip())
    return out


@pytest.mark.chdb
def test_json_timestamps_parse_as_clickhouse_best_effort(tmp_path):
    pytest.importorskip("chdb")
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps({"id": i, "t": s, "t3": s, "d": s}) + "\n" for i, s in enumerate(STAMPS)))
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE e (id UInt32, t DateTime, t3 DateTime64(3), d Date) ORDER BY id")
        db.sql(f"INSERT INTO e FROM INFILE '{path}'")          # the format from the extension
        got = db.sql("SELECT id, t, t3, d FROM e ORDER BY id FORMAT TabSeparated")
        import io

        from skipidx.engine.formats import write_batches
        buf = io.BytesIO()
        write_batches(got.fetch_record_batch(), got.schema, got.types, "TabSeparated", buf)
        rows = [ln.split("\t") for ln in buf.getvalue().decode().splitlines()]
    assert [r[1] for r in rows] == _chdb_parse(STAMPS, "DateTime")
    assert [r[2] for r in rows] == _chdb_parse(STAMPS, "DateTime64(3)")
    assert [r[3] for r in rows] == _chdb_parse(STAMPS, "Date")


def test_bad_timestamp_names_file_line_and_column(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": 1, "t": "2024-01-02 03:04:05"}\n{"id": 2, "t": "yesterday"}\n')
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE e (id UInt32, t DateTime) ORDER BY id")
        with pytest.raises(SkipidxError) as ei:
            db.insert("e", str(path))
        msg = str(ei.value)
        # the place, never the value (an error does not echo a file's bytes)
        assert "bad.jsonl" in msg and "line 2" in msg and "'t'" in msg and "yesterday" not in msg, msg
        assert db.sql("SELECT count() FROM e").scalar() == 0
        path.write_text('{"id": 1, "t": "2024-01-02 03:04:05"}\n{"id": "two", "t": "2024-01-02 03:04:05"}\n')
        with pytest.raises(SkipidxError) as ei:
            db.insert("e", str(path))
        msg = str(ei.value)
        assert "bad.jsonl" in msg and "line 2" in msg and "'id'" in msg and "UInt32" in msg, msg


def test_csv_header_detection(tmp_path):
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE t (id UInt32, name String, ts DateTime) ORDER BY id")
        (tmp_path / "with_header.csv").write_text("name,id,ts\nx,1,2024-01-02T03:04:05Z\ny,2,2024-01-02 04:00:00\n")
        (tmp_path / "plain.csv").write_text("3,z,1704164645\n")
        db.sql(f"INSERT INTO t FROM INFILE '{tmp_path / 'with_header.csv'}'")
        db.sql(f"INSERT INTO t FROM INFILE '{tmp_path / 'plain.csv'}' FORMAT CSV")
        assert db.sql("SELECT id, name, ts FROM t ORDER BY id").fetchall() == [
            (1, "x", dt.datetime(2024, 1, 2, 3, 4, 5)), (2, "y", dt.datetime(2024, 1, 2, 4, 0, 0)),
            (3, "z", dt.datetime(2024, 1, 2, 3, 4, 5))]
        (tmp_path / "bad.csv").write_text("id,name,ts\n4,a,2024-01-01 00:00:00\nfive,b,2024-01-01 00:00:00\n")
        with pytest.raises(SkipidxError) as ei:
            db.sql(f"INSERT INTO t FROM INFILE '{tmp_path / 'bad.csv'}'")
        msg = str(ei.value)
        assert "bad.csv" in msg and "line 3" in msg and "column 1" in msg and "'id'" in msg, msg
        assert db.sql("SELECT count() FROM t").scalar() == 3          # nothing of the bad file


def test_schema_inference(tmp_path):
    csv_path = tmp_path / "logs.csv"
    csv_path.write_text("ts,level,code,latency,ok,note\n"
                        "2024-01-02T03:04:05.123Z,INFO,200,1.5,true,\n"
                        "2024-01-02T03:04:06.5Z,WARN,404,2,false,slow\n")
    assert infer_columns(str(csv_path), "CSV") == ("ts DateTime64(3), level String, code Int64, latency Float64, "
                                                   "ok Bool, note Nullable(String)")
    (tmp_path / "nohead.csv").write_text("1,a\n2,b\n")
    assert infer_columns(str(tmp_path / "nohead.csv"), "CSV") == "c1 Int64, c2 String"
    js = tmp_path / "e.jsonl"
    js.write_text('{"a": 1, "b": "2024-01-02", "c": null, "d": 1.5}\n{"a": 2, "b": "2024-01-03", "c": "x", "d": 2}\n')
    assert infer_columns(str(js), "JSONEachRow") == "a Int64, b Date, c Nullable(String), d Float64"


def test_build_from_infers_schema_and_a_failed_build_leaves_nothing(tmp_path, capsys):
    db = str(tmp_path / "db")
    csv_path = tmp_path / "logs.csv"
    csv_path.write_text("ts,level,msg\n2024-01-02T03:04:05Z,INFO,connection timeout\n"
                        "2024-01-02 03:04:06,WARN,all good\n")
    s = build(db, "logs", str(csv_path), order_by="ts",
              indexes=["INDEX m msg TYPE tokenbf_v1(256, 2, 0) GRANULARITY 1"])
    out = capsys.readouterr().out
    assert "ts DateTime, level String, msg String" in out and s["rows"] == 2
    with skipidx.connect(db) as d:
        assert d.sql("SELECT count() FROM logs WHERE hasToken(msg, 'timeout')").scalar() == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("id,name\n1,a\n" + "2,b\n" * 10 + "x,c\n")
    with pytest.raises(SkipidxError):
        build(db, "fresh", str(bad), fmt="csv", columns="id UInt32, name String")
    with pytest.raises(SkipidxError):
        build(db, "logs", str(bad))               # an existing table: unchanged
    with skipidx.connect(db) as d:
        assert d.tables() == ["logs"]             # the table the failed build created is gone
        assert d.sql("SELECT count() FROM logs").scalar() == 2
    s = build(db, "fresh", str(csv_path))         # the retry is not blocked
    assert s["rows"] == 2
