"""Peak memory and throughput of a large streamed insert (and a FINAL merge).

    python bench/bench_store_insert.py [--rows 10000000] [--index] [--merge]

Generates the seeded log table batch by batch (skipidx.apps.datagen), inserts it
as a RecordBatchReader (so the input never sits in memory whole), and prints
rows/s and the process's peak RSS. With --merge, then merges everything into
one part (OPTIMIZE FINAL, streamed) and prints its peak too. Prints figures;
asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time

import pyarrow as pa


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    from skipidx.apps.datagen import SCHEMA_SQL, generate
    from skipidx.indexes.base import IndexDef
    from skipidx.store.catalog import Catalog
    from skipidx.store.metadata import ColumnMeta, TableMeta, make_index_meta
    from skipidx.core.types import parse_type

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--index", action="store_true", help="with a tokenbf_v1 index on msg")
    ap.add_argument("--merge", action="store_true", help="then OPTIMIZE FINAL")
    args = ap.parse_args()

    cols = [ColumnMeta(n, parse_type(t)) for n, t in [
        ("id", "UInt64"), ("ts", "DateTime"), ("level", "LowCardinality(String)"),
        ("service", "LowCardinality(String)"), ("trace_id", "String"), ("user_id", "UInt64"),
        ("http_status", "Nullable(UInt16)"), ("msg", "String")]]
    assert "ORDER BY ts" in SCHEMA_SQL
    idx = [make_index_meta(IndexDef("tok", "msg", None, "tokenbf_v1", (10240, 3, 0)), cols[-1].type)] if args.index else []
    d = tempfile.mkdtemp()
    try:
        table = Catalog(d).create_table(TableMeta("logs", cols, ["ts"], 8192, idx, {}))
        first = next(generate(1000, seed=42, batch_rows=1000))
        reader = pa.RecordBatchReader.from_batches(first.schema, generate(args.rows, seed=42, batch_rows=256_000))
        base = peak_mib()
        t0, c0 = time.perf_counter(), cpu_s()
        n = table.insert(reader)
        dt, cpu = time.perf_counter() - t0, cpu_s() - c0
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(table.path) for f in fs)
        print(f"insert {n} rows ({'tokenbf_v1 on msg' if args.index else 'no index'}): {dt:.1f} s, "
              f"{n / dt / 1e6:.2f} M rows/s, CPU {cpu:.1f} s (incl. data generation), {len(table.snapshot().parts)} parts, "
              f"{size / 2**20:.0f} MiB on disk; peak RSS {peak_mib():.0f} MiB (before: {base:.0f} MiB)")
        if args.merge:
            t0, c0 = time.perf_counter(), cpu_s()
            table.optimize(final=True)
            dt, cpu = time.perf_counter() - t0, cpu_s() - c0
            print(f"OPTIMIZE FINAL of {n} rows: {dt:.1f} s, {n / dt / 1e6:.2f} M rows/s, CPU {cpu:.1f} s; "
                  f"peak RSS {peak_mib():.0f} MiB")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
