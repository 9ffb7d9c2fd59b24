"""A ``bloom_filter`` index granule is, byte for byte, the Parquet bloom filter pyarrow writes.

For every zone: write the zone's values with pyarrow (``bloom_filter_options``
with ndv = the zone's distinct count and the index's fpp), read the filter
back -- with a small Thrift-compact reader written here (independent of
skipidx.core.parquet_bloom) and with skipidx.core.parquet_bloom.read_bloom_filter --
and compare the bytes.
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from skipidx.indexes.base import IndexDef, get_index_type
from skipidx.core.parquet_bloom import read_bloom_filter


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = v = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def parquet_filter_bytes(path, row_group: int = 0, column: int = 0) -> bytes | None:
    """The bitset of a column chunk's bloom filter, straight from the file (Thrift compact header)."""
    md = pq.ParquetFile(path).metadata.row_group(row_group).column(column)
    off, length = md.bloom_filter_offset, md.bloom_filter_length
    if off is None or off <= 0:
        return None
    assert length, "pyarrow records bloom_filter_length (header + bitset)"
    with open(path, "rb") as f:
        f.seek(off)
        raw = f.read(length)
    # BloomFilterHeader field 1 (numBytes, i32): compact type 5, delta 1 -> byte 0x15, zigzag varint
    assert raw[0] == 0x15, f"unexpected header start {raw[:4]!r}"
    z, _ = _varint(raw, 1)
    num_bytes = (z >> 1) ^ -(z & 1)
    assert 32 <= num_bytes <= length
    return raw[length - num_bytes:]


def build_and_compare(arr: pa.Array, zone: int, fpp: float, tmp_path) -> int:
    idx = get_index_type("bloom_filter")(IndexDef("bf", "v", None, "bloom_filter", (fpp,)), arr.type)
    n = len(arr)
    zs = np.arange(0, n, zone, dtype=np.int64)
    zl = np.minimum(zone, n - zs)
    g = idx.aggregator().build(arr, zs, zl)
    checked = 0
    for z, (s, ln) in enumerate(zip(zs, zl)):
        part = arr.slice(int(s), int(ln))
        ndv = int(g.ndv[z])
        distinct = len(pa.compute.unique(part.drop_null()))
        assert ndv == distinct or (pa.types.is_floating(arr.type) and ndv >= distinct), \
            f"zone {z}: ndv {ndv} != distinct {distinct}"
        if ndv == 0:
            continue   # pyarrow needs ndv >= 1 (and writes no filter for an all-NULL chunk)
        path = tmp_path / f"z{z}.parquet"
        pq.write_table(pa.table({"v": part}), path, bloom_filter_options={"v": {"ndv": ndv, "fpp": fpp}})
        mine = g.filter_bytes(z)
        theirs = parquet_filter_bytes(path)
        assert theirs is not None, "pyarrow wrote no bloom filter"
        assert len(mine) == len(theirs), f"zone {z}: size {len(mine)} != pyarrow's {len(theirs)}"
        assert mine == theirs, f"zone {z}: filter bytes differ from pyarrow's"
        via_reader = read_bloom_filter(path, 0, "v")
        assert via_reader is not None and via_reader.to_bytes() == mine
        checked += 1
    return checked


rng = np.random.default_rng(20261121)
CASES = [
    ("string", pa.array([f"trace-{i:05d}" for i in rng.integers(0, 3000, 5000)], pa.string()), 1024, 0.025),
    ("string-nulls-utf8", pa.array([None if i % 7 == 0 else f"ü{i % 500}東" for i in range(3000)]), 700, 0.01),
    ("large_string", pa.array([str(i) for i in range(2000)], pa.large_string()), 999, 0.025),
    ("binary", pa.array([bytes([i % 256, i // 256]) for i in range(1500)], pa.binary()), 500, 0.1),
    ("int64", pa.array(rng.integers(-10**12, 10**12, 4000), pa.int64()), 1000, 0.025),
    ("uint64", pa.array(rng.integers(0, 2**63, 4000, dtype=np.uint64) * np.uint64(2), pa.uint64()), 2048, 0.05),
    ("int32", pa.array(rng.integers(-2**31, 2**31, 3000), pa.int32()), 1000, 0.025),
    ("int8", pa.array(rng.integers(-128, 128, 3000), pa.int8()), 1000, 0.025),
    ("uint16", pa.array(rng.integers(0, 65536, 3000), pa.uint16()), 1000, 0.025),
    ("float64", pa.array(rng.normal(size=3000)), 1000, 0.001),
    ("float32", pa.array(rng.normal(size=3000).astype(np.float32)), 1000, 0.025),
    ("date32", pa.array(rng.integers(0, 20000, 3000).astype("int32"), pa.date32()), 1000, 0.025),
    ("timestamp", pa.array(rng.integers(0, 2**40, 3000), pa.timestamp("s")), 1000, 0.025),
    ("lowcardinality", pa.array([f"svc{i % 24}" for i in range(3000)]).dictionary_encode(), 1000, 0.025),
]


@pytest.mark.parametrize("arr,zone,fpp", [(a, z, f) for _, a, z, f in CASES], ids=[c[0] for c in CASES])
def test_bloom_filter_equals_pyarrow(arr, zone, fpp, tmp_path):
    assert build_and_compare(arr, zone, fpp, tmp_path) >= 1


def test_one_value_and_huge_ndv_sizes(tmp_path):
    # ndv 1 -> the 32-byte minimum; many distinct values -> a multi-block filter
    assert build_and_compare(pa.array(["only"] * 10), 10, 0.025, tmp_path) == 1
    big = pa.array([f"id{i}" for i in range(40_000)])
    assert build_and_compare(big, 40_000, 0.01, tmp_path) == 1


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text(max_size=8)), min_size=1, max_size=200),
       zone=st.integers(1, 64), fpp=st.sampled_from([0.001, 0.025, 0.2, 0.9]))
def test_bloom_filter_equals_pyarrow_random(values, zone, fpp, tmp_path_factory):
    build_and_compare(pa.array(values, pa.string()), zone, fpp, tmp_path_factory.mktemp("bf"))


def test_sizes_follow_ndv():
    idx = get_index_type("bloom_filter")(IndexDef("bf", "v", None, "bloom_filter", ()), pa.int64())
    arr = pa.array(np.concatenate([np.arange(10), np.arange(100_000)]))
    g = idx.aggregator().build(arr, np.array([0, 10]), np.array([10, 100_000]))
    assert g.ndv.tolist() == [10, 100_000]
    m = -8 * 100_000 / math.log(1 - 0.025 ** (1 / 8))
    assert g.num_bytes.tolist() == [32, 1 << math.ceil(math.log2(m)) >> 3]
