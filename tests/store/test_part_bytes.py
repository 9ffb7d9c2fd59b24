"""Bytes on disk: per-column Parquet encodings chosen from the data (recorded in the
manifest) and index files compressed with Arrow IPC's buffer compression where it pays.

Readers are unchanged: pyarrow and DuckDB read the data file as before, the
filters read back are the bytes written, old (uncompressed, PLAIN) parts read
as they did, and a damaged compressed index file is still detected.
"""
from __future__ import annotations

import glob
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.store import encoding as _encoding
from skipidx.store import writer as _writer

DDL = """CREATE TABLE t (id UInt64, ts DateTime, rnd UInt64, x Float64, s String, tag String,
    INDEX sparse s TYPE ngrambf_v1(3, 65536, 2, 0) GRANULARITY 1,
    INDEX dense s TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX tb tag TYPE bloom_filter GRANULARITY 1)
    ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2048"""

N = 12_000


def _rows(seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(N, dtype=np.uint64)
    return pa.table({
        "id": ids,                                                       # sorted: delta packs to ~nothing
        "ts": pa.array((1_700_000_000 + ids // 3).astype("datetime64[s]")),
        "rnd": rng.integers(0, 2**63, N).astype(np.uint64),             # random: nothing beats PLAIN
        "x": np.round(rng.normal(100, 5, N), 2),
        "s": pa.array([f"event {i % 50} ok" for i in range(N)]),         # few grams: sparse filters
        "tag": pa.array([f"t{i}" for i in rng.integers(0, 10**9, N).tolist()]),
    })


class _Before:
    def __enter__(self):
        self.saved = (_encoding.ENCODING_MAX_RATIO, _writer.INDEX_COMPRESS_MAX_RATIO)
        _encoding.ENCODING_MAX_RATIO = 0.0
        _writer.INDEX_COMPRESS_MAX_RATIO = 0.0

    def __exit__(self, *exc):
        _encoding.ENCODING_MAX_RATIO, _writer.INDEX_COMPRESS_MAX_RATIO = self.saved


def _part(path: str) -> str:
    [m] = glob.glob(os.path.join(path, "t", "parts", "*", "manifest.json"))
    return os.path.dirname(m)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    out = {}
    data = _rows()
    for name in ("before", "after"):
        path = str(tmp_path_factory.mktemp(name))
        with skipidx.connect(path) as db:
            db.sql(DDL)
            if name == "before":
                with _Before():
                    db.insert("t", data)
            else:
                db.insert("t", data)
        out[name] = path
    return out, data


def test_encodings_are_chosen_from_the_data_and_recorded(tables):
    paths, _ = tables
    part = _part(paths["after"])
    with open(os.path.join(part, "manifest.json")) as f:
        enc = json.load(f)["encodings"]
    assert enc["id"] == "DELTA_BINARY_PACKED" and enc["ts"] == "DELTA_BINARY_PACKED"
    assert "rnd" not in enc                     # random bits: PLAIN stays
    md = pq.read_metadata(os.path.join(part, "data.parquet"))
    cols = {md.row_group(0).column(j).path_in_schema: md.row_group(0).column(j).encodings
            for j in range(md.num_columns)}
    for c, e in enc.items():
        assert e in cols[c], (c, e, cols[c])
    before = pq.read_metadata(os.path.join(_part(paths["before"]), "data.parquet"))
    col_bytes = lambda m, c: sum(m.row_group(i).column(m.schema.names.index(c)).total_compressed_size  # noqa: E731
                                 for i in range(m.num_row_groups))
    assert col_bytes(md, "id") < col_bytes(before, "id") / 10
    assert os.path.getsize(os.path.join(part, "data.parquet")) < \
        os.path.getsize(os.path.join(_part(paths["before"]), "data.parquet"))
    with open(os.path.join(_part(paths["before"]), "manifest.json")) as f:
        assert "encodings" not in json.load(f)


def test_data_file_reads_the_same_in_pyarrow_and_duckdb(tables):
    duckdb = pytest.importorskip("duckdb")
    paths, data = tables
    for name in ("before", "after"):
        f = os.path.join(_part(paths[name]), "data.parquet")
        got = pq.read_table(f).select(data.column_names)
        assert got.equals(data.cast(got.schema))
        con = duckdb.connect()
        row = con.execute(f"SELECT count(*), sum(id), sum(rnd::HUGEINT), round(sum(x), 2), "
                          f"count(DISTINCT s), max(ts) FROM '{f}'").fetchone()
        assert row[0] == N and row[1] == int(data["id"].to_numpy().sum())
        assert row[2] == sum(int(v) for v in data["rnd"].to_pylist())
        assert row[4] == 50


def test_sparse_index_files_are_compressed_dense_ones_not(tables):
    paths, _ = tables
    a, b = _part(paths["after"]), _part(paths["before"])
    size = lambda p, n: os.path.getsize(os.path.join(p, f"idx.{n}.arrow"))  # noqa: E731
    assert size(a, "sparse") < size(b, "sparse") / 5       # 64 KiB filters of ~150 grams
    assert size(a, "tb") == size(b, "tb")                   # sized for its fpp: left as is
    for n in ("sparse", "dense", "tb"):
        ta = pa.ipc.open_file(os.path.join(a, f"idx.{n}.arrow")).read_all()
        tb = pa.ipc.open_file(os.path.join(b, f"idx.{n}.arrow")).read_all()
        assert ta.schema.equals(tb.schema)
        same = [c for c in ta.column_names if c not in ("fragment_id", "part")]   # the part's own id
        assert ta.select(same).equals(tb.select(same)), n


@pytest.mark.parametrize("query", [
    "SELECT count() FROM t WHERE s LIKE '%event 7 %'",
    "SELECT count() FROM t WHERE hasToken(s, 'ok') AND id < 5000",
    "SELECT count(), sum(rnd) FROM t WHERE tag IN ('t1', 't2', 'nope')",
])
def test_old_and_new_parts_answer_alike_and_prune_alike(tables, query):
    paths, _ = tables
    res = {}
    for name in ("before", "after"):
        with skipidx.connect(paths[name]) as db:
            r = db.sql(query)
            res[name] = (r.fetchall(), r.stats.granules_selected)
    assert res["before"] == res["after"]


def test_damaged_compressed_index_is_detected_and_the_answer_stays_exact(tables, tmp_path):
    import shutil

    paths, data = tables
    copy = str(tmp_path / "db")
    shutil.copytree(paths["after"], copy)
    f = os.path.join(_part(copy), "idx.sparse.arrow")
    raw = bytearray(open(f, "rb").read())
    raw[len(raw) // 2] ^= 0x5A
    with open(f, "wb") as fh:
        fh.write(raw)
    want = sum(1 for v in data["s"].to_pylist() if "event 7 " in v)
    with skipidx.connect(copy) as db:
        r = db.sql("SELECT count() FROM t WHERE s LIKE '%event 7 %'")
        assert r.fetchall() == [(want,)]
        text = str(db.sql("EXPLAIN indexes = 1 SELECT count() FROM t WHERE s LIKE '%event 7 %'").fetchall())
    assert "sparse" in text and ("damag" in text.lower() or "corrupt" in text.lower() or "unreadable" in text.lower())
