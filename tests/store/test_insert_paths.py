"""The plain insert path's shortcuts: the already-sorted check over chunks and temporal
types, floor truncation of finer timestamps with NULLs, and a Parquet import that
never imports pandas (pyarrow's converters would, ~0.3 s of a fresh process)."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

import skipidx
from skipidx.core.types import cast_to, parse_type
from skipidx.store.conform import non_decreasing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_TYPES = [pa.int64(), pa.uint64(), pa.int32(), pa.int16(), pa.float64(), pa.timestamp("s"), pa.timestamp("ms"),
          pa.date32(), pa.date64(), pa.time32("s"), pa.time64("us"), pa.duration("ms")]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=0, max_size=40), st.lists(st.integers(0, 40), max_size=4),
       st.sampled_from(_TYPES))
def test_non_decreasing_over_chunks_equals_numpy(steps, cuts, t):
    vals = np.cumsum(np.array(steps, dtype=np.int64)) + 50
    if pa.types.is_unsigned_integer(t):
        vals = np.abs(vals)
    storage = pa.array(vals, pa.int32() if t.bit_width == 32 else pa.int64())
    arr = storage.cast(pa.float64()) if pa.types.is_floating(t) else (
        storage.cast(t) if pa.types.is_integer(t) else storage.view(t))
    if pa.types.is_date64(t):
        arr = pa.array(vals * 86_400_000, pa.int64()).view(t)
    bounds = sorted({min(c, len(vals)) for c in cuts} | {0, len(vals)})
    col = pa.chunked_array([arr.slice(a, b - a) for a, b in zip(bounds, bounds[1:])] or [arr], type=t)
    expect = bool(np.all(np.diff(vals) >= 0)) if len(vals) > 1 else True
    assert non_decreasing(pa.table({"k": col})) == expect


def test_non_decreasing_refuses_what_it_cannot_tell():
    assert not non_decreasing(pa.table({"k": pa.array([1, None, 3])}))
    assert not non_decreasing(pa.table({"k": pa.array([1.0, float("nan"), 3.0])}))
    assert not non_decreasing(pa.table({"k": pa.array(["a", "b"])}))
    assert not non_decreasing(pa.table({"a": [1, 2], "b": [1, 2]}))
    # a descent exactly at a chunk boundary
    assert not non_decreasing(pa.table({"k": pa.chunked_array([[1, 2, 5], [4, 6]])}))
    assert non_decreasing(pa.table({"k": pa.chunked_array([[1, 2, 5], [], [5, 6]])}))


def test_finer_timestamps_floor_to_seconds_with_nulls():
    ms = [-1500, -1, 0, 999, 1000, None, 1_700_000_000_123]
    arr = pa.array(ms, pa.int64()).view(pa.timestamp("ms"))
    out = cast_to(parse_type("Nullable(DateTime64(1))"), arr, "ts")
    assert out.cast(pa.int64()).to_pylist() == [-1500, -100, 0, 900, 1000, None, 1_700_000_000_100]
    ok = pa.array([0, 999, 1000, None, 1_700_000_000_999], pa.int64()).view(pa.timestamp("ms"))
    out = cast_to(parse_type("Nullable(DateTime)"), ok, "ts")
    assert out.cast(pa.int64()).to_pylist() == [0, 0, 1, None, 1_700_000_000]
    out = cast_to(parse_type("DateTime"), ok.fill_null(pa.scalar(0, pa.timestamp("ms"))), "ts")
    assert out.cast(pa.int64()).to_pylist() == [0, 0, 1, 0, 1_700_000_000]


def test_parquet_import_imports_no_pandas(tmp_path):
    n = 5000
    src = str(tmp_path / "src.parquet")
    pq.write_table(pa.table({
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1500, pa.int64()).view(pa.timestamp("ms")),
        "s": pa.array([f"v{i % 7}" for i in range(n)]),
        "n": pa.array([None if i % 3 else i for i in range(n)], pa.uint16()),
    }), src)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        import skipidx
        db = skipidx.connect({str(tmp_path / 'db')!r})
        db.sql("CREATE TABLE t (ts DateTime, s LowCardinality(String), n Nullable(UInt16)) "
               "ENGINE = MergeTree ORDER BY ts")
        before = "pandas" in sys.modules
        db.sql("INSERT INTO t FROM INFILE {src!r} FORMAT Parquet")
        print(before, "pandas" in sys.modules, db.sql("SELECT count(), max(ts) FROM t").fetchall())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after, rows = out.stdout.split(maxsplit=2)
    assert before == "False" and after == "False", out.stdout
    assert rows.strip() == f"[({n}, datetime.datetime(1970, 1, 1, 2, 4, 58))]"


@pytest.mark.parametrize("kind", ["iterator", "reader"])
def test_as_batches_keeps_no_reference_to_a_yielded_chunk(kind):
    """A streamed insert's chunk is freed as soon as its part is written (the next chunk
    is read into the same pages; peak memory is one chunk, not two)."""
    from skipidx.store.table import as_batches

    def batches():
        for i in range(6):
            yield pa.record_batch({"x": pa.array(range(i * 500, i * 500 + 500), pa.int64())})

    src = batches() if kind == "iterator" else pa.RecordBatchReader.from_batches(
        pa.schema([("x", pa.int64())]), batches())
    gen = as_batches(src, 1000)
    seen = []
    for _ in range(3):
        chunk = next(gen)
        seen.extend(chunk.column("x").to_pylist())
        held = pa.total_allocated_bytes()
        size = chunk.nbytes
        del chunk
        assert held - pa.total_allocated_bytes() >= size   # nothing else kept it
    assert seen == list(range(3000))
    assert next(gen, None) is None



def _data_files(db_dir: str, table: str) -> list[str]:
    import glob

    return sorted(glob.glob(os.path.join(db_dir, table, "parts", "*", "data.parquet")))


def test_statistics_written_for_key_fixed_width_and_low_cardinality(tmp_path):
    """Row-group min/max for the ORDER BY key (a String here), fixed-width and
    LowCardinality columns and non-string array leaves; none for the other String,
    FixedString and string-array columns. The rows read back unchanged."""
    import duckdb

    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE t (k String, n UInt32, f Float64, d Date, lc LowCardinality(String), s String, "
           "fs FixedString(3), a Array(String), ai Array(UInt16), ns Nullable(String)) "
           "ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 64")
    n = 300
    data = pa.table({
        "k": [f"k{i:04d}" for i in range(n)], "n": pa.array(range(n), pa.uint32()),
        "f": [i / 7 for i in range(n)], "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(n)]),
        "lc": [("x", "y", "z")[i % 3] for i in range(n)], "s": [f"msg {i * 7919 % 1000}" for i in range(n)],
        "fs": [b"abc" if i % 2 else b"xyz" for i in range(n)], "a": [[f"t{i}", "u"] for i in range(n)],
        "ai": [[i % 5, 9] for i in range(n)], "ns": [None if i % 4 == 0 else f"v{i}" for i in range(n)],
    })
    db.insert("t", data)
    [path] = _data_files(str(tmp_path / "db"), "t")
    md = pq.read_metadata(path)
    assert md.num_row_groups == 5
    with_stats = set()
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for j in range(rg.num_columns):
            c = rg.column(j)
            if c.statistics is not None and c.statistics.has_min_max:
                with_stats.add(c.path_in_schema)
    assert with_stats == {"k", "n", "f", "d", "lc", "ai.list.element"}
    assert md.row_group(1).column(0).statistics.min == "k0064"
    want = data.sort_by("k")
    got = pq.read_table(path)
    assert got.select(["k", "n", "lc", "s", "a", "ai", "ns"]).equals(
        want.select(["k", "n", "lc", "s", "a", "ai", "ns"]).cast(got.select(["k", "n", "lc", "s", "a", "ai", "ns"]).schema))
    rows = duckdb.sql(f"SELECT k, s, lc, ns, fs FROM '{path}' WHERE k >= 'k0290' ORDER BY k").fetchall()
    assert rows == [(f"k{i:04d}", f"msg {i * 7919 % 1000}", ("x", "y", "z")[i % 3],
                     None if i % 4 == 0 else f"v{i}", b"abc" if i % 2 else b"xyz") for i in range(290, 300)]
    assert db.sql("SELECT count() FROM t WHERE k = 'k0100'").fetchall() == [(1,)]
    assert db.sql("SELECT count() FROM t WHERE k = 'k0100'").stats.granules_selected == 1
