"""Parquet bloom filters written by Spark (parquet-java): read, compare byte for byte, size rule.

One real local Spark session (``local[1]``) for the module. parquet-java's own
``BlockSplitBloomFilter`` class, reached through the session's JVM, is the
oracle for its sizing rule.
"""
from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from skipidx.core.hashing import parquet_xxh64
from skipidx.core.parquet_bloom import read_bloom_filter
from skipidx.core.sbbf import SBBF, optimal_num_bytes

pytestmark = pytest.mark.spark

#: parquet-java's default ``parquet.bloom.filter.max.bytes``.
JAVA_MAX_BYTES = 1024 * 1024

COLUMNS = {
    # name: Spark SQL expression over `id` (0 .. N-1)
    "i": "cast(id % 3000 * 7919 - 1000000 as int)",
    "l": "(id % 4000) * 1000003 - 4611686018427387904",
    "f": "cast(cast(id % 2000 as float) / 7 as float)",
    "d": "cast(id % 2500 as double) / 3 - 0.5",
    "s": "concat('user-', id % 3500, '-é')",
    "b": "cast(concat('bin', id % 1500, repeat('x', cast(id % 7 as int))) as binary)",
}
N_ROWS = 60_000


def _write(spark, path: str, ndv: int, fpp: float) -> str:
    df = spark.range(0, N_ROWS, 1, 1).selectExpr(*[f"{e} AS {c}" for c, e in COLUMNS.items()])
    # parquet-java writes no bloom filter for a chunk whose pages are all dictionary-encoded
    # (the dictionary answers exactly), so dictionaries are off to get a filter everywhere.
    w = (df.coalesce(1).write.mode("overwrite").option("parquet.block.size", str(512 * 1024))
         .option("parquet.enable.dictionary", "false"))
    for c in COLUMNS:
        w = (w.option(f"parquet.bloom.filter.enabled#{c}", "true")
              .option(f"parquet.bloom.filter.expected.ndv#{c}", str(ndv))
              .option(f"parquet.bloom.filter.fpp#{c}", str(fpp)))
    w.parquet(path)
    files = glob.glob(os.path.join(path, "*.parquet"))
    assert len(files) == 1, files
    return files[0]


NDV_FPP = [(500, 0.1), (3000, 0.01), (20000, 0.001), (200_000, 0.01)]


@pytest.mark.parametrize("ndv, fpp", NDV_FPP, ids=[f"ndv{n}-fpp{p}" for n, p in NDV_FPP])
def test_spark_written_filters_equal_ours(spark, tmp_path, ndv, fpp):
    path = _write(spark, str(tmp_path / "out"), ndv, fpp)
    pf = pq.ParquetFile(path)
    md = pf.metadata
    assert md.num_row_groups >= 2, "the test wants several row groups"
    assert "parquet-mr" in md.created_by
    expected_bytes = optimal_num_bytes(ndv, fpp, sizing="parquet-java", max_bytes=JAVA_MAX_BYTES)
    for rg in range(md.num_row_groups):
        table = pf.read_row_group(rg)
        for c in COLUMNS:
            theirs = read_bloom_filter(path, rg, c)
            assert theirs is not None, (rg, c)
            assert theirs.num_bytes == expected_bytes, f"for_ndv(sizing='parquet-java') must pick Spark's size ({c})"
            hashes = parquet_xxh64(table[c])
            assert theirs.check_hashes(hashes).all(), f"a written value of {c} is missing in row group {rg}"
            ours = SBBF.for_ndv(ndv, fpp, sizing="parquet-java", max_bytes=JAVA_MAX_BYTES)
            ours.insert_hashes(hashes)
            assert ours.to_bytes() == theirs.to_bytes(), f"bitset of {c} differs in row group {rg}"


def test_parquet_java_sizing_rule_against_its_own_class(spark):
    """optimal_num_bytes(sizing='parquet-java') == parquet-java's optimalNumOfBits + constructor."""
    jvm = spark._jvm
    bsbf = jvm.org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter
    rng = np.random.default_rng(7)
    cases = [(int(n), float(p)) for n, p in zip(rng.integers(1, 3_000_000, 150),
                                                  rng.choice([0.3, 0.1, 0.05, 0.01, 0.001, 1e-4], 150))]
    # Values whose m lies just around powers of two, where the Java rounding differs from Arrow's.
    for p in (0.1, 0.01):
        c = -8 / np.log(1 - p ** (1 / 8))
        for bits in (512, 1024, 4096, 65536, 1 << 20):
            for delta in (-300, -200, -40, -1, 1, 40, 200, 300):
                cases.append((max(1, int((bits + delta) / c)), p))
    differ_from_arrow = 0
    for ndv, fpp in cases:
        java_bits = bsbf.optimalNumOfBits(ndv, fpp)
        java_bytes = bsbf(java_bits // 8, JAVA_MAX_BYTES).getBitsetSize()
        assert optimal_num_bytes(ndv, fpp, "parquet-java", JAVA_MAX_BYTES) == java_bytes, (ndv, fpp, java_bits)
        differ_from_arrow += optimal_num_bytes(ndv, fpp, "parquet", JAVA_MAX_BYTES) != java_bytes
    assert differ_from_arrow > 0, "the boundary cases should exercise the Java rounding"


def test_parquet_java_hashes_equal_ours(spark):
    """parquet-java's BlockSplitBloomFilter.hash(...) equals parquet_xxh64 of the same value."""
    import pyarrow as pa

    jvm = spark._jvm
    f = jvm.org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter(1024)
    for v in (0, -1, 2**31 - 1, -(2**31)):
        assert f.hash(v) % 2**64 == int(parquet_xxh64(pa.array([v], pa.int32()))[0])
    # (py4j passes a Python int that fits 32 bits as Integer, so the longs lie outside that range)
    for v in (2**40, -(2**40) - 5, 2**63 - 1, -(2**63)):
        assert f.hash(v) % 2**64 == int(parquet_xxh64(pa.array([v], pa.int64()))[0])
    for v in (0.0, -0.0, 1.5, float("inf")):
        assert f.hash(v) % 2**64 == int(parquet_xxh64(pa.array([v], pa.float64()))[0])
    binary = jvm.org.apache.parquet.io.api.Binary
    for s in ("", "abc", "héllo wörld", "x" * 100):
        assert f.hash(binary.fromString(s)) % 2**64 == int(parquet_xxh64(pa.array([s]))[0])
