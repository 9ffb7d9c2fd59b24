"""Parquet bloom filters: the Thrift header, files written by pyarrow and DuckDB, hostile bytes."""
from __future__ import annotations

import math
import os
import zlib
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx.core.parquet_bloom as pb
from skipidx.core.errors import SkipidxError
from skipidx.core.hashing import parquet_xxh64
from skipidx.core.parquet_bloom import (
    BloomFilterHeader,
    bloom_filter_options,
    parse_bloom_filter,
    read_bloom_filter,
    read_bloom_filters,
    serialize_bloom_filter,
)
from skipidx.core.sbbf import MAX_BYTES, SBBF, optimal_num_bytes

# ------------------------------------------------------------------ header

HEADER_32 = bytes.fromhex("15 40 1c1c0000 1c1c0000 1c1c0000 00".replace(" ", ""))


def test_header_golden_bytes():
    # field 1 i32 zigzag(32) = 0x40; fields 2..4: union member 1 = empty struct; STOP.
    assert BloomFilterHeader(32).to_bytes() == HEADER_32
    assert BloomFilterHeader.parse(HEADER_32) == (BloomFilterHeader(32), 15)


@pytest.mark.parametrize("n", [32, 64, 1024, 96, 32 * 12345, 1 << 20, MAX_BYTES])
def test_header_round_trip(n):
    b = BloomFilterHeader(n).to_bytes()
    h, used = BloomFilterHeader.parse(b + b"trailing", 0)
    assert h.num_bytes == n and used == len(b)
    assert BloomFilterHeader.parse(b"xyz" + b, 3)[1] == len(b)


def _field(fid: int, last: int, t: int) -> bytes:
    delta = fid - last
    if 0 < delta <= 15:
        return bytes([(delta << 4) | t])
    z = (fid << 1) ^ (fid >> 15)
    return bytes([t]) + bytes([z])  # small ids only in these tests


def test_header_skips_unknown_fields():
    body = bytes.fromhex("1540")  # numBytes = 32
    # field 2 algorithm
    body += b"\x1c\x1c\x00\x00"
    # an unknown field 9 (long-form id) holding a struct with a binary, a list<i32>, a bool and a map
    body += _field(9, 2, 12)
    body += b"\x18\x03abc"                  # field 1 binary "abc"
    body += b"\x19\x35\x02\x04\x06"         # field 2 list<i32> of 3
    body += b"\x11"                         # field 3 bool true
    body += b"\x1b\x01\x55\x02\x04"         # field 4 map<i32, i32> {1: 2}
    body += b"\x00"
    # back to field 3 hash (long form, since 3 < 9), field 4 compression
    body += _field(3, 9, 12) + b"\x1c\x00\x00"
    body += b"\x1c\x1c\x00\x00"
    body += b"\x26\x02"                     # unknown field 6: i64 = 1
    body += b"\x00"
    h, used = BloomFilterHeader.parse(body)
    assert h == BloomFilterHeader(32) and used == len(body)


@pytest.mark.parametrize(
    "data, match",
    [
        (b"", "truncated"),
        (b"\x15", "truncated"),
        (b"\x15\x40\x00", "missing"),
        (b"\x15\x40\x1c\x2c\x00\x00\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x00", "unsupported algorithm"),
        (b"\x15\x40\x1c\x00\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x00", "no member"),
        (b"\x15\x40\x1c\x1c\x00\x2c\x00\x00", "more than one"),
        (b"\x16\x40\x00", "wrong type"),
        (b"\x15\x3f\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x00", "not a valid SBBF size"),  # -32
        (b"\x15\x42\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x00", "not a valid SBBF size"),  # 33
        (BloomFilterHeader(32).to_bytes().replace(b"\x15\x40", b"\x15\x80\x80\x80\x80\x10"), "fit 32 bits"),
        (b"\x15\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "too long"),
        (b"\x59\xf5\xff\xff\xff\x0f", "collection"),           # field 5: list of 2**32-1 i32 in 0 bytes
        (b"\x5c" + b"\x1c" * 200, "too deep"),
        (b"\x5f", "unknown compact type"),
        (b"\x58\x10abc", "more bytes"),                           # binary longer than the input
    ],
    ids=["empty", "field-only", "required-missing", "algorithm-2", "empty-union", "two-members", "numBytes-i64",
         "negative", "not-multiple", "varint-overflow", "varint-endless", "list-bomb", "deep", "bad-type",
         "short-binary"],
)
def test_header_rejects(data, match):
    with pytest.raises(SkipidxError, match=match):
        BloomFilterHeader.parse(data)


def test_header_every_truncation_is_an_error():
    b = BloomFilterHeader(1 << 20).to_bytes()
    for k in range(len(b)):
        with pytest.raises(SkipidxError):
            BloomFilterHeader.parse(b[:k])


@pytest.mark.parametrize("n", [0, -32, 2**31, 32.0, True])
def test_header_write_rejects(n):
    with pytest.raises(SkipidxError):
        BloomFilterHeader(n).to_bytes()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64))
def test_header_random_bytes_only_skipidx_error(data):
    try:
        h, used = BloomFilterHeader.parse(data)
    except SkipidxError:
        return
    assert 0 < used <= len(data) and h.num_bytes % 32 == 0


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 14), st.integers(0, 255), st.integers(1, 32).map(lambda k: 32 * k))
def test_header_mutations_only_skipidx_error(pos, byte, n):
    data = bytearray(BloomFilterHeader(n).to_bytes())
    data[min(pos, len(data) - 1)] = byte
    try:
        BloomFilterHeader.parse(bytes(data))
    except SkipidxError:
        pass


def test_serialize_parse_round_trip_and_trailing_bytes():
    f = SBBF(256)
    f.insert_hashes(np.arange(50, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    b = serialize_bloom_filter(f)
    assert b[:16] == BloomFilterHeader(256).to_bytes() and parse_bloom_filter(b) == f
    with pytest.raises(SkipidxError, match="bitset has"):
        parse_bloom_filter(b + b"\x00")
    with pytest.raises(SkipidxError, match="bitset has"):
        parse_bloom_filter(b[:-1])


# ---------------------------------------------------- files written by pyarrow

def _values(kind: str, n: int, distinct: int, seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, distinct, size=n)
    if kind == "int32":
        return pa.array((ids * 7919 - 2**30).astype(np.int32))
    if kind == "int64":
        return pa.array(ids.astype(np.int64) * 10**12 - 2**62)
    if kind == "float":
        return pa.array((ids / 7.0 - 1000).astype(np.float32))
    if kind == "double":
        return pa.array(ids / 3.0 - 0.5)
    if kind == "string":
        return pa.array([f"user-{i}-é" for i in ids])
    if kind == "binary":
        return pa.array([int(i).to_bytes(8, "little") * (int(i) % 5) for i in ids], pa.binary())
    if kind == "uint32":
        return pa.array((ids * 2654435761 % 2**32).astype(np.uint32))
    if kind == "int8":
        return pa.array((ids % 256 - 128).astype(np.int8))
    if kind == "date32":
        return pa.array(ids.astype(np.int32), pa.date32())
    if kind == "timestamp":
        return pa.array(ids.astype(np.int64) * 1_000_003, pa.timestamp("us"))
    if kind == "fixed_size_binary":
        return pa.array([int(i).to_bytes(6, "big") for i in ids], pa.binary(6))
    if kind == "large_string":
        return pa.array([f"k{i}" for i in ids], pa.large_string())
    if kind == "dictionary":
        return pa.array([f"level-{i % 40}" for i in ids]).dictionary_encode()
    raise AssertionError(kind)


KINDS = ["int32", "int64", "float", "double", "string", "binary",
         "uint32", "int8", "date32", "timestamp", "fixed_size_binary", "large_string", "dictionary"]
NDV_FPP = [(100, 0.1), (3000, 0.01), (20000, 0.001)]


@pytest.mark.parametrize("ndv, fpp", NDV_FPP, ids=[f"ndv{n}-fpp{p}" for n, p in NDV_FPP])
@pytest.mark.parametrize("kind", KINDS)
def test_pyarrow_written_filters_equal_ours(tmp_path, kind, ndv, fpp):
    n, rg_rows = 9000, 4000  # three row groups of 4000, 4000, 1000 rows
    col = _values(kind, n, distinct=min(ndv, 5000), seed=zlib.crc32(f"{kind}/{ndv}".encode()))
    with_nulls = pa.array(col.to_pylist()[:-3] + [None] * 3, col.type)  # NULLs are not inserted
    table = pa.table({"c": with_nulls, "other": pa.array(np.arange(n))})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=rg_rows, bloom_filter_options=bloom_filter_options(["c"], ndv, fpp))
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 3
    theirs_all = read_bloom_filters(path, "c")
    for rg in range(3):
        theirs = read_bloom_filter(path, rg, "c")
        assert theirs == theirs_all[rg]
        values = table["c"].slice(rg * rg_rows, rg_rows)
        hashes = parquet_xxh64(values)
        assert theirs.check_hashes(hashes).all(), "a written value is missing from pyarrow's filter"
        # pyarrow 26: filter sized by for_ndv(ndv, fpp), values inserted, folded to fpp
        big = SBBF.for_ndv(ndv, fpp)
        big.insert_hashes(hashes)
        ours = big.fold_to_target_fpp(fpp)
        assert ours.num_bytes == theirs.num_bytes, "for_ndv + fold_to_target_fpp must pick pyarrow's size"
        assert ours.to_bytes() == theirs.to_bytes(), f"bitset differs in row group {rg}"
        # and the folded filter is the one built directly at that size
        direct = SBBF(theirs.num_bytes)
        direct.insert_hashes(hashes)
        assert direct == theirs
    assert read_bloom_filter(path, 0, "other") is None  # no filter asked for that column


def test_pyarrow_fold_rule_near_size_boundaries(tmp_path):
    """Distinct counts right around the points where the folded size flips: sizes and bytes equal pyarrow's."""
    rng = np.random.default_rng(2026)
    path = tmp_path / "b.parquet"
    for _ in range(60):
        fpp = float(rng.choice([0.3, 0.1, 0.05, 0.01, 0.001]))
        bits_per_value = -8 / math.log(1 - fpp ** (1 / 8))
        distinct = max(1, int(2 ** int(rng.integers(8, 16)) / bits_per_value * rng.uniform(0.9, 1.1)))
        ndv = int(rng.choice([int(distinct * rng.uniform(0.3, 5)) + 1, 1_048_576]))
        values = pa.array(rng.integers(0, 2**40, size=distinct))
        pq.write_table(pa.table({"c": values}), path, bloom_filter_options={"c": {"ndv": ndv, "fpp": fpp}})
        big = SBBF.for_ndv(ndv, fpp)
        big.insert_hashes(parquet_xxh64(values))
        assert big.fold_to_target_fpp(fpp) == read_bloom_filter(path, 0, "c"), (distinct, ndv, fpp)


def test_pyarrow_all_null_chunk(tmp_path):
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"c": pa.nulls(100, pa.int64())}), path, bloom_filter_options={"c": {"ndv": 5000, "fpp": 0.01}})
    theirs = read_bloom_filter(path, 0, "c")
    assert theirs is None or theirs == SBBF.for_ndv(5000, 0.01).fold_to_target_fpp(0.01) == SBBF(32)


def test_pyarrow_defaults_and_plain_encoding(tmp_path):
    col = _values("string", 3000, 2000, 1)
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"s": col}), path, use_dictionary=False, bloom_filter_options={"s": True})
    theirs = read_bloom_filter(path, 0, "s")
    big = SBBF.for_ndv(1_048_576, 0.05)  # pyarrow's defaults: 1 MiB before folding
    big.insert_hashes(parquet_xxh64(col))
    assert big.num_bytes == 1 << 20
    assert big.fold_to_target_fpp(0.05) == theirs


def test_nested_column_by_path(tmp_path):
    t = pa.table({"s": pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}])})
    path = tmp_path / "n.parquet"
    pq.write_table(t, path, bloom_filter_options={"s.b": {"ndv": 10, "fpp": 0.1}})
    f = read_bloom_filter(path, 0, "s.b")
    assert f.check_hashes(parquet_xxh64(pa.array(["x", "y"]))).all()
    assert read_bloom_filter(path, 0, "s.a") is None
    with pytest.raises(SkipidxError, match="2 leaves"):
        read_bloom_filter(path, 0, "s")
    assert read_bloom_filter(path, 0, 1) == f  # by leaf index


# ---------------------------------------------------- files written by DuckDB

def test_duckdb_written_filters(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "duck.parquet"
    duckdb.sql(
        "COPY (SELECT (i % 700)::INT AS i32, (i % 900)::BIGINT * 1000003 AS i64, (i % 300)::FLOAT / 7 AS f,"
        " (i % 500)::DOUBLE / 3 AS d, 'v-' || (i % 800) AS s FROM range(20000) t(i))"
        f" TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 8000)"
    )
    table = pq.read_table(path)
    md = pq.ParquetFile(path).metadata
    checked = 0
    for rg in range(md.num_row_groups):
        start = sum(md.row_group(k).num_rows for k in range(rg))
        for name in table.column_names:
            theirs = read_bloom_filter(path, rg, name)
            if theirs is None:
                continue
            values = table[name].slice(start, md.row_group(rg).num_rows)
            hashes = parquet_xxh64(values)
            assert theirs.check_hashes(hashes).all(), name
            ours = SBBF(theirs.num_bytes)
            ours.insert_hashes(hashes)
            assert ours == theirs, name
            checked += 1
    assert checked >= 4


# ------------------------------------------------------------ hostile files

@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"c": pa.array(np.arange(1000))}), path, bloom_filter_options={"c": {"ndv": 1000, "fpp": 0.01}})
    return path


def test_bad_arguments(good_file, tmp_path):
    with pytest.raises(SkipidxError, match="row group"):
        read_bloom_filter(good_file, 1, "c")
    with pytest.raises(SkipidxError, match="row group"):
        read_bloom_filter(good_file, -1, "c")
    with pytest.raises(SkipidxError, match="no column"):
        read_bloom_filter(good_file, 0, "nope")
    with pytest.raises(SkipidxError, match="out of range"):
        read_bloom_filter(good_file, 0, 3)
    with pytest.raises(SkipidxError):
        read_bloom_filter(tmp_path / "missing.parquet", 0, "c")


def test_garbage_and_truncated_files(good_file, tmp_path):
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(SkipidxError):
        read_bloom_filter(junk, 0, "c")
    data = good_file.read_bytes()
    for cut in (0, 4, len(data) // 2, len(data) - 9, len(data) - 1):
        t = tmp_path / f"cut{cut}.parquet"
        t.write_bytes(data[:cut])
        with pytest.raises(SkipidxError):
            read_bloom_filter(t, 0, "c")


@pytest.mark.parametrize(
    "patch",
    [b"\xff" * 15, b"\x15\x60", b"\x15\x20", b"\x15\x40\x1c\x2c"],
    ids=["garbage", "numBytes-48", "numBytes-16", "algorithm-2"],
)
def test_corrupt_filter_header_in_file(good_file, tmp_path, patch):
    md = pq.ParquetFile(good_file).metadata
    off = md.row_group(0).column(0).bloom_filter_offset
    bad = tmp_path / "bad.parquet"
    data = bytearray(good_file.read_bytes())
    data[off: off + len(patch)] = patch
    bad.write_bytes(bytes(data))
    with pytest.raises(SkipidxError):
        read_bloom_filter(bad, 0, "c")


def test_reader_without_bloom_filter_length(good_file):
    """Files from older writers give only the offset: the header then says how much to read."""
    md = pq.ParquetFile(good_file).metadata
    cc = md.row_group(0).column(0)
    fake = SimpleNamespace(row_group=lambda i: SimpleNamespace(
        column=lambda j: SimpleNamespace(bloom_filter_offset=cc.bloom_filter_offset, bloom_filter_length=None)))
    size = good_file.stat().st_size
    with open(good_file, "rb") as fh:
        got = pb._read_one(fh, size, fake, 0, 0, str(good_file))
    assert got == read_bloom_filter(good_file, 0, "c")
    # an offset beyond the file
    far = SimpleNamespace(row_group=lambda i: SimpleNamespace(
        column=lambda j: SimpleNamespace(bloom_filter_offset=size + 10, bloom_filter_length=None)))
    with open(good_file, "rb") as fh, pytest.raises(SkipidxError, match="outside the file"):
        pb._read_one(fh, size, far, 0, 0, str(good_file))


def test_bloom_filter_options_helper():
    assert bloom_filter_options(["a", "b"], ndv=10, fpp=0.1) == {"a": {"ndv": 10, "fpp": 0.1}, "b": {"ndv": 10, "fpp": 0.1}}
    assert bloom_filter_options("a") == {"a": {}}
    assert bloom_filter_options({"a": {"ndv": 5}}) == {"a": {"ndv": 5, "fpp": 0.05}}
    for bad in ({"a": {"ndv": 0}}, {"a": {"fpp": 1.0}}, {"a": {"size": 3}}):
        with pytest.raises(SkipidxError):
            bloom_filter_options(bad)
    with pytest.raises(SkipidxError):
        bloom_filter_options(["a"], ndv=-1)


# ------------------------------------------- a Spark-written file, checked in

SPARK_FIXTURE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "spark_bloom_ndv580_fpp0.05.parquet")


def test_spark_fixture_without_spark():
    """parquet-java 1.17 output (see tests/fixtures/README.md): sizes, bytes, membership."""
    pf = pq.ParquetFile(SPARK_FIXTURE)
    md = pf.metadata
    assert "parquet-mr version 1.17.0" in md.created_by and md.num_row_groups == 4
    java = SBBF.for_ndv(580, 0.05, sizing="parquet-java", max_bytes=1 << 20)
    assert java.num_bytes == 1024 and SBBF.for_ndv(580, 0.05).num_bytes == 512  # the rules differ here
    for rg in range(md.num_row_groups):
        table = pf.read_row_group(rg)
        for name in ("i", "l", "f", "d", "s", "b"):
            theirs = read_bloom_filter(SPARK_FIXTURE, rg, name)
            assert theirs.num_bytes == 1024, (rg, name)
            hashes = parquet_xxh64(table[name])
            assert theirs.check_hashes(hashes).all(), (rg, name)
            ours = SBBF(1024)
            ours.insert_hashes(hashes)
            assert ours == theirs, (rg, name)
