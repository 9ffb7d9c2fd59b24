"""File import (Parquet, CSV, CSVWithNames, JSONEachRow): values as chDB
(ClickHouse) reads the same file with the same structure, streamed in bounded
chunks, schema errors with the file named, nothing written on error."""
from __future__ import annotations

from skipidx.apps.research import chdb_session as chdb_oracle  # one chDB per process
import datetime as dt
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _store_helpers import make_meta, zdef
from skipidx.core.errors import SkipidxError
from skipidx.store.catalog import Catalog

COLUMNS = [("id", "UInt8"), ("s", "String"), ("ns", "Nullable(String)"), ("n", "Int32"),
           ("nn", "Nullable(Int64)"), ("f", "Float64"), ("b", "Bool"), ("d", "Date"), ("ts", "DateTime"),
           ("nts", "Nullable(DateTime)")]
STRUCTURE = ", ".join(f"{n} {t}" for n, t in COLUMNS)

CSV_ROWS = [
    '1,,\\N,,,1.5,true,2024-01-02,2024-01-02 03:04:05,',
    '2,"",x,5,-7,-0.25,false,1970-01-01,1970-01-01 00:00:00,2106-02-07 06:28:15',
    '3,"a ""q"", b",,\\N,\\N,1e3,1,2149-06-06,2000-02-29 23:59:59,\\N',
    '4,"multi\nline é 日本",,-2147483648,9223372036854775807,0,0,2000-01-01,2024-05-06 07:08:09,',
    '5,\\N,"",2147483647,,,,,,',
]
JSON_ROWS = [
    {"id": 1, "s": "", "ns": None, "n": 0, "nn": None, "f": 1.5, "b": True, "d": "2024-01-02",
     "ts": "2024-01-02 03:04:05", "nts": None},
    {"id": 2, "s": "é 日本", "ns": "x", "n": -5, "nn": 9223372036854775807, "f": -0.25, "b": False,
     "d": "1970-01-01", "ts": "1970-01-01 00:00:00", "nts": "2106-02-07 06:28:15"},
    {"id": 3, "s": "a \"q\"\nb", "n": 7},   # omitted keys: defaults / NULL
]


def _oracle(path: str, fmt: str) -> list[tuple]:
    chdb = pytest.importorskip("chdb")
    t = chdb_oracle.query(f"SELECT * FROM file('{path}', {fmt}, '{STRUCTURE}') ORDER BY id "
                   "SETTINGS session_timezone = 'UTC'", "ArrowTable")
    # chDB's Arrow output carries DateTime as its UInt32 seconds
    for name in ("ts", "nts"):
        i = t.column_names.index(name)
        t = t.set_column(i, name, t.column(name).cast(pa.int64()).cast(pa.timestamp("s")))
    return _rows(t)


def _rows(t: pa.Table) -> list[tuple]:
    out = []
    for r in t.to_pylist():
        vals = []
        for v in r.values():
            if isinstance(v, dt.datetime) and v.tzinfo is not None:
                v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
            vals.append(v)
        out.append(tuple(vals))
    return out


def _table(tmp_path, settings=None):
    cat = Catalog(str(tmp_path / "db"))
    return cat.create_table(make_meta("t", COLUMNS, ["id"], 2, [zdef("z", "s")], settings))


def _ours(table) -> list[tuple]:
    t = table.read()
    t = t.sort_by("id")
    return _rows(t)


@pytest.mark.parametrize("fmt", ["CSV", "CSVWithNames"])
def test_csv_matches_chdb(tmp_path, fmt):
    path = str(tmp_path / "in.csv")
    with open(path, "w", encoding="utf-8") as f:
        if fmt == "CSVWithNames":
            f.write(",".join(n for n, _ in COLUMNS) + "\n")
        f.write("\n".join(CSV_ROWS) + "\n")
    table = _table(tmp_path)
    assert table.insert_file(path, fmt) == 5
    assert _ours(table) == _oracle(path, fmt)


def test_json_each_row_matches_chdb(tmp_path):
    path = str(tmp_path / "in.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for r in JSON_ROWS:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    table = _table(tmp_path)
    assert table.insert_file(path, "JSONEachRow") == 3
    assert _ours(table) == _oracle(path, "JSONEachRow")


def test_parquet_import_streams_in_parts(tmp_path):
    n = 1000
    src = pa.table({
        "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i) for i in range(n)], pa.timestamp("us")),
        "id": pa.array([i % 256 for i in range(n)], pa.int64()),
        "s": [f"s{i}" for i in range(n)], "ns": [None] * n, "n": pa.array(range(n), pa.int32()),
        "nn": pa.array(range(n), pa.int64()), "f": [0.5] * n, "b": [True] * n,
        "d": pa.array([dt.date(2024, 1, 1)] * n), "nts": pa.nulls(n, pa.timestamp("s")),
    })
    path = str(tmp_path / "in.parquet")
    pq.write_table(src, path, row_group_size=100)
    table = _table(tmp_path, {"max_part_rows": 300})
    assert table.insert_file(path) == n            # format from the extension
    with table.snapshot() as snap:
        assert [p.num_rows for p in snap.parts] == [300, 300, 300, 100]
    got = table.read()
    assert sorted(got.column("n").to_pylist()) == list(range(n))
    assert got.schema.field("ts").type == pa.timestamp("s")


FILE_ERRORS = [
    ("CSV", "1,a,b,2\n", "CSV"),                                       # too few columns
    ("CSV", "300,,,,,,,,,\n", "'id' (UInt8): value out of range [0, 255]: 300"),
    ("CSV", "1,,,abc,,,,,,\n", "CSV"),                                 # not a number
    ("CSV", "1,,,1.5,,,,,,\n", "CSV"),
    ("CSVWithNames", "id,s\n1,a\n", "missing columns: ns"),
    ("CSVWithNames", ",".join([n for n, _ in COLUMNS] + ["extra"]) + "\n" + "1,,,,,,,,,,1\n", "unknown columns: extra"),
    ("JSONEachRow", '{"id": 1, "zzz": 2}\n', "JSONEachRow"),
    ("JSONEachRow", '{"id": "one"}\n', "JSONEachRow"),
    ("JSONEachRow", '{"id": 1, "d": "yesterday"}\n', "'d': cannot parse a value as Date"),
    ("JSONEachRow", '{"id": 1}\n{"id": 1000}\n', "value out of range [0, 255]: 1000"),
    ("Parquet", "not a parquet file", "Parquet"),
]


@pytest.mark.parametrize("fmt,text,msg", FILE_ERRORS, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(FILE_ERRORS)])
def test_bad_files_write_nothing(tmp_path, fmt, text, msg):
    path = str(tmp_path / "bad.dat")
    with open(path, "w") as f:
        f.write(text)
    table = _table(tmp_path)
    with pytest.raises(SkipidxError) as ei:
        table.insert_file(path, fmt)
    assert msg in str(ei.value), str(ei.value)
    assert table.num_rows == 0
    assert os.listdir(os.path.join(table.path, "tmp")) == []


def test_format_and_path_errors(tmp_path):
    table = _table(tmp_path)
    with pytest.raises(SkipidxError, match="unknown format 'XML'"):
        table.insert_file(str(tmp_path), "XML")
    with pytest.raises(SkipidxError, match="no such file"):
        table.insert_file(str(tmp_path / "nope.csv"), "CSV")
    with pytest.raises(SkipidxError, match="cannot tell the format"):
        table.insert_file(str(tmp_path / "x.unknown"))
    p = tmp_path / "x.csv"
    p.write_text("1,,,,,,,,,\n")
    with pytest.raises(SkipidxError, match="delimiter must be one character"):
        table.insert_file(str(p), "CSV", delimiter=";;")
    with pytest.raises(SkipidxError, match="takes no options"):
        table.insert_file(str(p), "JSONEachRow", delimiter=";")
    assert table.insert_file(str(p), "csv") == 1   # format names are case-insensitive


def test_parquet_nulls_into_non_nullable_take_defaults_as_chdb(tmp_path):
    src = pa.table({c: pa.array([None] * 2, _arrow) for c, _arrow in [
        ("id", pa.int64()), ("s", pa.string()), ("ns", pa.string()), ("n", pa.int32()), ("nn", pa.int64()),
        ("f", pa.float64()), ("b", pa.bool_()), ("d", pa.date32()), ("ts", pa.timestamp("s")),
        ("nts", pa.timestamp("s"))]})
    src = src.set_column(0, "id", pa.array([1, 2], pa.int64()))
    path = str(tmp_path / "nulls.parquet")
    pq.write_table(src, path)
    table = _table(tmp_path)
    assert table.insert_file(path, "Parquet") == 2
    assert _ours(table) == _oracle(path, "Parquet")
