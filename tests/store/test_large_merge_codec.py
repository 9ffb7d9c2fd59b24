"""A merge of large sources writes the default-codec columns as ZSTD(3), as ClickHouse's
merges do from ~100 MB of sources on; smaller merges, CODEC columns and tables that set
``compression`` keep their codec. Any Parquet reader reads the result."""
from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.store import merge

DDL = """CREATE TABLE t (ts DateTime, msg String, n UInt32 CODEC(LZ4),
    INDEX tk msg TYPE tokenbf_v1(512, 3, 0) GRANULARITY 1
) ENGINE = MergeTree ORDER BY ts SETTINGS index_granularity = 64, background_merges = 0{extra}"""


def _codecs(db_path: str) -> dict[str, set[str]]:
    (path,) = glob.glob(os.path.join(db_path, "t", "parts", "*", "data.parquet"))
    md = pq.read_metadata(path)
    out: dict[str, set[str]] = {}
    for i in range(md.num_row_groups):
        for j in range(md.num_columns):
            c = md.row_group(i).column(j)
            out.setdefault(c.path_in_schema, set()).add(c.compression)
    return out


def _load(db, rows: int = 3000) -> pa.Table:
    data = pa.table({"ts": pa.array(range(1_700_000_000, 1_700_000_000 + rows), pa.timestamp("s")),
                     "msg": pa.array([f"GET /api/{i % 17} user {i}" for i in range(rows)]),
                     "n": pa.array(range(rows), pa.uint32())})
    for off in range(0, rows, 1000):
        db.insert("t", data.slice(off, 1000))
    return data


@pytest.mark.parametrize("threshold, extra, want", [
    (1, "", "ZSTD"),                              # large: default columns become zstd
    (10**12, "", "LZ4"),                          # small: the table's default (lz4)
    (1, ", compression = 'lz4'", "LZ4"),          # a table that says lz4 keeps it
])
def test_large_merge_codec(tmp_path, monkeypatch, threshold, extra, want):
    monkeypatch.setattr(merge, "LARGE_MERGE_BYTES", threshold)
    p = str(tmp_path / "db")
    with skipidx.connect(p) as db:
        db.sql(DDL.format(extra=extra))
        data = _load(db)
        db.sql("OPTIMIZE TABLE t FINAL")
        codecs = _codecs(p)
        assert codecs["ts"] == {want} and codecs["msg"] == {want}
        assert codecs["n"] == {"LZ4"}   # its own CODEC either way
        got = db.sql("SELECT ts, msg, n FROM t ORDER BY ts").to_arrow()
        assert got.column("msg").to_pylist() == data.column("msg").to_pylist()
        assert db.sql("SELECT count() FROM t WHERE hasToken(msg, 'user')").fetchall() == [(3000,)]
    (path,) = glob.glob(os.path.join(p, "t", "parts", "*", "data.parquet"))
    assert pq.read_table(path).num_rows == 3000
    duckdb = pytest.importorskip("duckdb")
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{path}')").fetchall() == [(3000,)]
