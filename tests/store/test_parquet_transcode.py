"""store/parquet_transcode: a Snappy row group decompressed here and decoded by pyarrow
reads back exactly as pyarrow reads it from the file, for files written by pyarrow
(drawn types, page versions, dictionaries, checksums, codecs per column), DuckDB and
polars; anything it cannot do is None, so the import reads the file as before."""
from __future__ import annotations

import datetime as dt
import decimal
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import skipidx
from skipidx.core.errors import SkipidxError
from skipidx.store import ingest
from skipidx.store.parquet_transcode import RowGroupTranscoder


def _transcoder(path: str) -> tuple[RowGroupTranscoder, int]:
    fd = os.open(path, os.O_RDONLY)
    return RowGroupTranscoder(fd, os.fstat(fd).st_size, path), fd


def _check_file(path: str, read_dictionary=None, expect_all: bool = True) -> int:
    """Every row group read through the transcoder equals pyarrow's read of the file;
    returns how many went through it."""
    pf = pq.ParquetFile(path, read_dictionary=read_dictionary)
    tc, fd = _transcoder(path)
    done = 0
    try:
        for i in range(pf.metadata.num_row_groups):
            buf = tc.row_group(i)
            want = pf.read_row_group(i)
            g = pf.metadata.row_group(i)
            # (pyarrow stores a chunk that Snappy does not shrink UNCOMPRESSED)
            snappy = g.num_rows > 0 and any(g.column(j).compression == "SNAPPY" for j in range(g.num_columns))
            if buf is None:
                assert not (expect_all and snappy), f"row group {i} of {path} was not transcoded"
                continue
            got = pq.ParquetFile(pa.BufferReader(buf), read_dictionary=read_dictionary).read()
            assert got.schema.equals(want.schema, check_metadata=True), (got.schema, want.schema)
            assert got.equals(want), f"row group {i} differs"
            # the import reads it in batches: the same batches as from the file
            one = pq.ParquetFile(pa.BufferReader(buf), read_dictionary=read_dictionary)
            mine = list(one.iter_batches(97))
            theirs = list(pf.iter_batches(97, row_groups=[i]))
            assert len(mine) == len(theirs) and all(a.equals(b) for a, b in zip(mine, theirs)), \
                f"row group {i} in batches differs"
            done += 1
    finally:
        os.close(fd)
    return done


_KINDS = ["int8", "uint16", "int32", "uint64", "float32", "float64", "bool", "string", "binary", "ts_tz",
          "date", "decimal", "dict_string", "list_int", "struct", "large_string"]


def _column(kind: str, n: int, rng: np.random.Generator, nulls: bool) -> pa.Array:
    mask = (rng.random(n) < 0.2) if nulls else None
    if kind in ("int8", "uint16", "int32", "uint64"):
        t = getattr(pa, kind)()
        info = np.iinfo(t.to_pandas_dtype())
        vals = rng.integers(max(info.min, -1000), min(info.max, 1000), n)
        return pa.array(vals, type=t, mask=mask)
    if kind in ("float32", "float64"):
        return pa.array(rng.standard_normal(n), type=getattr(pa, kind)(), mask=mask)
    if kind == "bool":
        return pa.array(rng.random(n) < 0.5, mask=mask)
    words = np.array(["GET", "POST", "error", "timeout", "user", "ÿ∂", "", "a" * 40])
    strs = [" ".join(rng.choice(words, rng.integers(0, 6))) for _ in range(n)]
    if kind in ("string", "large_string"):
        return pa.array(strs, type=pa.string() if kind == "string" else pa.large_string(), mask=mask)
    if kind == "binary":
        return pa.array([s.encode() + bytes([i % 256]) for i, s in enumerate(strs)], type=pa.binary(), mask=mask)
    if kind == "dict_string":
        return pa.array(rng.choice(["api", "db", "edge", "web"], n), mask=mask).dictionary_encode()
    if kind == "ts_tz":
        return pa.array(rng.integers(0, 2 ** 40, n), type=pa.timestamp("ms", tz="Europe/Berlin"), mask=mask)
    if kind == "date":
        return pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 900, n)],
                        type=pa.date32(), mask=mask)
    if kind == "decimal":
        return pa.array([decimal.Decimal(int(v)) / 100 for v in rng.integers(-10 ** 6, 10 ** 6, n)],
                        type=pa.decimal128(12, 2), mask=mask)
    if kind == "list_int":
        return pa.array([None if (nulls and i % 7 == 0) else list(range(i % 4)) for i in range(n)],
                        type=pa.list_(pa.int32()))
    if kind == "struct":
        return pa.StructArray.from_arrays([pa.array(rng.integers(0, 9, n)), pa.array(strs)], names=["x", "y"])
    raise AssertionError(kind)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds=st.lists(st.sampled_from(_KINDS), min_size=1, max_size=5), rows=st.integers(0, 1500),
       seed=st.integers(0, 2 ** 31), nulls=st.booleans(), version=st.sampled_from(["1.0", "2.0"]),
       dictionary=st.booleans(), checksum=st.booleans(), stats=st.booleans(),
       page_size=st.sampled_from([64, 1024, 1 << 20]), rg=st.integers(1, 2000),
       other=st.sampled_from(["snappy", "zstd", "none", "gzip", "lz4"]))
def test_pyarrow_files_read_back_equal(tmp_path_factory, kinds, rows, seed, nulls, version, dictionary, checksum,
                                       stats, page_size, rg, other):
    rng = np.random.default_rng(seed)
    cols = {f"c{i}_{k}": _column(k, rows, rng, nulls) for i, k in enumerate(kinds)}
    t = pa.table(cols)
    names = list(cols)
    # the first column Snappy, the others Snappy or another codec each
    codecs = {n: ("snappy" if i == 0 or rng.random() < 0.5 else other) for i, n in enumerate(names)}
    path = str(tmp_path_factory.mktemp("tc") / "f.parquet")
    pq.write_table(t, path, compression=codecs, data_page_version=version, use_dictionary=dictionary,
                   write_page_checksum=checksum, write_statistics=stats, data_page_size=page_size,
                   row_group_size=rg)
    _check_file(path)
    if any(k in ("string", "dict_string") for k in kinds):
        _check_file(path, read_dictionary=[n for n in names if n.endswith("string") and "large" not in n])


def test_duckdb_and_polars_files(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    polars = pytest.importorskip("polars")
    p1 = str(tmp_path / "duck.parquet")
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT i AS id, i % 7 AS small, 'msg ' || (i * 7919 % 1000) || ' user' AS msg,
                    CASE WHEN i % 5 = 0 THEN NULL ELSE i::VARCHAR END AS maybe,
                    TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND AS ts, [i, i + 1] AS arr
                    FROM range(300000) t(i))
                    TO '{p1}' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 100000)""")
    assert _check_file(p1) == pq.ParquetFile(p1).metadata.num_rows // 100000
    p2 = str(tmp_path / "polars.parquet")
    polars.DataFrame({"a": list(range(50000)), "s": [f"v{i % 977}" for i in range(50000)],
                      "f": [i / 3 for i in range(50000)]}).write_parquet(p2, compression="snappy",
                                                                       row_group_size=20000)
    assert _check_file(p2) >= 1


def test_not_snappy_or_damaged_is_none(tmp_path):
    t = pa.table({"s": [f"value {i}" for i in range(20000)]})
    plain = str(tmp_path / "zstd.parquet")
    pq.write_table(t, plain, compression="zstd")
    tc, fd = _transcoder(plain)
    assert not tc.applies() and tc.row_group(0) is None, "a file without Snappy chunks is read by pyarrow"
    os.close(fd)

    good = str(tmp_path / "snappy.parquet")
    pq.write_table(t, good, compression="snappy", use_dictionary=False)
    raw = bytearray(open(good, "rb").read())
    md = pq.ParquetFile(good).metadata.row_group(0).column(0)
    body = md.data_page_offset + 40                      # inside the first page's compressed bytes
    for i in range(body, body + 64):
        raw[i] ^= 0x5A
    bad = str(tmp_path / "bad.parquet")
    open(bad, "wb").write(bytes(raw))
    tc, fd = _transcoder(bad)
    assert tc.applies()
    got = tc.row_group(0)
    if got is not None:      # the damage may still decompress to the declared size: pyarrow then decides
        try:
            assert not pq.ParquetFile(pa.BufferReader(got)).read().equals(t)
        except (pa.ArrowException, OSError):
            pass
    os.close(fd)
    assert _transcoder(str(tmp_path / "zstd.parquet"))[0].row_group(5) is None, "no such row group"


def test_truncated_and_foreign_files(tmp_path):
    p = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"s": ["x" * 50] * 5000}), p, compression="snappy")
    data = open(p, "rb").read()
    for name, blob in [("short", data[:len(data) // 2]), ("pare", data[:-4] + b"PARE"), ("tiny", b"PAR1")]:
        q = str(tmp_path / f"{name}.parquet")
        open(q, "wb").write(blob)
        tc, fd = _transcoder(q)
        assert not tc.applies() and tc.row_group(0) is None, name
        os.close(fd)


def test_buffer_not_reused_while_read_from(tmp_path):
    """Arrays read from one row group stay valid while later ones are decompressed."""
    p = str(tmp_path / "rg.parquet")
    t = pa.table({"s": [f"row {i} " * (i % 5) for i in range(40000)], "n": np.arange(40000)})
    pq.write_table(t, p, compression="snappy", row_group_size=10000)
    tc, fd = _transcoder(p)
    held = []
    for i in range(4):
        held.append(pq.ParquetFile(pa.BufferReader(tc.row_group(i))).read())
    os.close(fd)
    assert pa.concat_tables(held).equals(t)


def test_insert_from_snappy_file(tmp_path, monkeypatch):
    """INSERT ... FROM INFILE goes through the transcoder for Snappy files and stores the
    same rows; a damaged file still fails with the file named and leaves the table as it was."""
    from skipidx.store import parquet_transcode

    used = []
    real = parquet_transcode.RowGroupTranscoder.row_group

    def spy(self, i):
        out = real(self, i)
        used.append(out is not None)
        return out

    monkeypatch.setattr(parquet_transcode.RowGroupTranscoder, "row_group", spy)
    n = 30000
    t = pa.table({"id": pa.array(np.arange(n), pa.uint64()), "level": [["INFO", "WARN", "ERROR"][i % 3] for i in range(n)],
                  "msg": [f"request {i} took {i % 97} ms" for i in range(n)]})
    src = str(tmp_path / "src.parquet")
    pq.write_table(t, src, compression="snappy", row_group_size=7000)
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE t (id UInt64, level LowCardinality(String), msg String) ENGINE = MergeTree ORDER BY id")
    db.sql(f"INSERT INTO t FROM INFILE '{src}' FORMAT Parquet")
    assert used and all(used), used
    got = db.sql("SELECT id, level, msg FROM t ORDER BY id").arrow()
    assert got.column("msg").to_pylist() == t.column("msg").to_pylist()
    assert got.column("level").to_pylist() == t.column("level").to_pylist()

    raw = bytearray(open(src, "rb").read())
    cc = pq.ParquetFile(src).metadata.row_group(2).column(2)
    raw[cc.data_page_offset + 30:cc.data_page_offset + 90] = b"\xff" * 60
    bad = str(tmp_path / "bad.parquet")
    open(bad, "wb").write(bytes(raw))
    with pytest.raises(SkipidxError) as e:
        db.sql(f"INSERT INTO t FROM INFILE '{bad}' FORMAT Parquet")
    assert "bad.parquet" in str(e.value), str(e.value)
    assert db.sql("SELECT count() FROM t").fetchall() == [(n,)], "the failed insert left the table unchanged"


def test_batches_equal_pyarrow_reader(tmp_path):
    """open_file_batches over a Snappy file gives pyarrow's rows, in order, whatever the row groups."""
    n = 50000
    t = pa.table({"a": pa.array(np.arange(n), pa.int64()), "s": [f"s{i % 1013}" for i in range(n)]})
    src = str(tmp_path / "b.parquet")
    pq.write_table(t, src, compression="snappy", row_group_size=12345, data_page_size=4096)
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE b (a Int64, s String) ENGINE = MergeTree ORDER BY a")
    meta = db.catalog.table("b")._current().meta
    got = pa.concat_tables(list(ingest.open_file_batches(src, None, meta)))
    assert got.column("a").to_pylist() == t.column("a").to_pylist()
    assert got.column("s").to_pylist() == t.column("s").to_pylist()
