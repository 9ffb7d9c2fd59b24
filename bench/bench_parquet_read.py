"""Reading a Snappy Parquet file as an INSERT does: skipidx's import path against
pyarrow's own reader, chDB and DuckDB, CPU per full read, one interleaved run.

    python bench/bench_parquet_read.py --src logs.parquet [--repeat 5]

- skipidx: ``store.ingest.open_file_batches`` (Snappy row groups decompressed by
  cramjam, decoded by pyarrow: store/parquet_transcode.py), every block consumed;
- pyarrow: ``ParquetReader.iter_batches`` over the same row groups, the same block
  size and memory pool (what the import did before);
- chDB: ``SELECT sum(length(...)), ... FROM file(src, Parquet)`` touching every column;
- DuckDB: the same aggregate over ``read_parquet(src)``.

Each read runs in a fresh child process; CPU is its user+sys time over the read.
Prints medians and ratios (skipidx / other) and the load average. Asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

ENGINES = ("skipidx", "pyarrow", "chDB", "DuckDB")


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _aggregate_sql(src: str, names: list[str], types: list[str]) -> str:
    parts = []
    for n, t in zip(names, types):
        parts.append(f"sum(length({n}))" if t in ("string", "large_string") else f"count({n})")
    return ", ".join(parts)


def child(engine: str, src: str) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(src).schema_arrow
    names = schema.names
    types = [str(f.type) for f in schema]
    rows = 0
    if engine == "skipidx":
        import skipidx
        from skipidx.store import ingest

        db = skipidx.connect(tempfile.mkdtemp(prefix="skipidx-read-"))
        # Nullable: the blocks are consumed as read (no NULL filled with a default)
        cols = ", ".join(f"{n} Nullable({'String' if t in ('string', 'large_string') else 'Int64'})"
                         for n, t in zip(names, types))
        db.sql(f"CREATE TABLE r ({cols}) ENGINE = MergeTree ORDER BY tuple()")
        meta = db.catalog.table("r")._current().meta
        c0, w0 = _cpu(), time.perf_counter()
        for b in ingest.open_file_batches(src, "Parquet", meta):
            rows += b.num_rows
    elif engine == "pyarrow":
        c0, w0 = _cpu(), time.perf_counter()
        r = pq.ParquetReader(memory_pool=pa.system_memory_pool())
        r.open(src, pre_buffer=False, buffer_size=1 << 20)
        for g in range(r.metadata.num_row_groups):
            for b in r.iter_batches(16 * 1024, [g], use_threads=False):
                rows += b.num_rows
    elif engine == "chDB":
        from chdb import session as chs

        ch = chs.Session(tempfile.mkdtemp(prefix="skipidx-read-ch-"))
        q = f"SELECT count(), {_aggregate_sql(src, names, types)} FROM file('{src}', Parquet)"
        c0, w0 = _cpu(), time.perf_counter()
        rows = int(str(ch.query(q, "CSV")).split(",")[0])
    else:
        import duckdb

        con = duckdb.connect()
        q = f"SELECT count(*), {_aggregate_sql(src, names, types)} FROM read_parquet('{src}')"
        c0, w0 = _cpu(), time.perf_counter()
        rows = con.execute(q).fetchone()[0]
    return {"cpu": _cpu() - c0, "wall": time.perf_counter() - w0, "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", help="a Parquet file (flat columns)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--child", nargs=2, metavar=("ENGINE", "SRC"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    if not args.src:
        ap.error("--src is required")
    res: dict[str, list[dict]] = {e: [] for e in ENGINES}
    for r in range(args.repeat):
        order = list(ENGINES) if r % 2 == 0 else list(reversed(ENGINES))
        for eng in order:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", eng, args.src],
                                 capture_output=True, text=True, check=True)
            d = json.loads(out.stdout.strip().splitlines()[-1])
            res[eng].append(d)
            print(f"  round {r + 1} {eng:8s} CPU {d['cpu']:6.2f} s  wall {d['wall']:6.2f} s  rows {d['rows']:,}",
                  flush=True)
    la = os.getloadavg()
    med = {e: statistics.median(x["cpu"] for x in res[e]) for e in ENGINES}
    print(f"\nmedian of {args.repeat}; load average {la[0]:.2f} {la[1]:.2f}; cores {os.cpu_count()}")
    print(f"{'engine':8s} {'CPU s':>7s} {'skipidx / engine':>17s}")
    for e in ENGINES:
        print(f"{e:8s} {med[e]:7.2f} {med['skipidx'] / med[e]:16.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
