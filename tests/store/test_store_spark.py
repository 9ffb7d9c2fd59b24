"""Spark (parquet-java) reads a part's data file as is: every type, NULLs,
non-ASCII, one row group per granule."""
from __future__ import annotations

import datetime as dt
import decimal
import os

import pyarrow as pa
import pytest

from _store_helpers import make_meta
from skipidx.store.catalog import Catalog
from skipidx.store.manifest import DATA_FILE

pytestmark = pytest.mark.spark


def test_spark_reads_a_part_as_is(tmp_path, spark):
    meta = make_meta("t", [("k", "Int32"), ("u8", "UInt8"), ("u32", "UInt32"), ("u64", "UInt64"), ("i8", "Int8"),
                           ("f", "Float64"), ("b", "Bool"), ("s", "Nullable(String)"), ("lc", "LowCardinality(String)"),
                           ("d", "Date"), ("ts", "DateTime")], ["k"], 2)
    table = Catalog(str(tmp_path)).create_table(meta)
    data = pa.table({
        "k": pa.array([5, 1, 3, 2, 4], pa.int32()),
        "u8": pa.array([255, 0, 1, 2, 3], pa.uint8()),
        "u32": pa.array([2**32 - 1, 0, 1, 2, 3], pa.uint32()),
        "u64": pa.array([2**64 - 1, 0, 1, 2, 3], pa.uint64()),
        "i8": pa.array([-128, 127, 0, 1, 2], pa.int8()),
        "f": [0.5, -1.25, 1e300, 0.0, 3.0],
        "b": [True, False, True, False, True],
        "s": ["日本", None, "", "é", "x"],
        "lc": ["a", "b", "a", "a", "c"],
        "d": pa.array([dt.date(2149, 6, 6), dt.date(1970, 1, 1), dt.date(2000, 2, 29), dt.date(2024, 1, 1),
                       dt.date(1999, 12, 31)]),
        "ts": pa.array([dt.datetime(2106, 2, 7, 6, 28, 15), dt.datetime(1970, 1, 1), dt.datetime(2000, 1, 1, 12),
                        dt.datetime(2024, 5, 6, 7, 8, 9), dt.datetime(2001, 1, 1)], pa.timestamp("s")),
    })
    table.insert(data)
    with table.snapshot() as snap:
        [part] = snap.parts
        assert part.n_granules == 3
        path = os.path.join(part.path, DATA_FILE)
    df = spark.read.parquet(path)
    rows = [tuple(r) for r in df.orderBy("k").collect()]
    expected = data.sort_by("k").to_pylist()
    assert len(rows) == 5
    for got, exp in zip(rows, expected):
        exp = dict(exp)
        exp["u64"] = decimal.Decimal(exp["u64"])     # Spark reads UINT_64 as DECIMAL(20, 0)
        assert got == tuple(exp.values()), (got, exp)
    # Spark's pushed filter meets the per-granule row-group statistics
    assert [tuple(r) for r in spark.read.parquet(path).where("k = 3").select("s").collect()] == [("",)]
