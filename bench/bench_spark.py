"""Spark benchmark: building the log table on Spark vs in-process, and selective
queries through the ``skipidx`` source vs Spark reading plain Parquet.

Data: the seeded log table of ``skipidx.datagen`` (``--rows``, default 10M;
``--quick`` 1M), written once as a directory of Parquet files that both
builds read. Indexes: the token SBBF on msg, a bloom_filter on trace_id and
on user_id, granules of 8192 rows, ORDER BY ts.

Build (``skipidx.pipeline.build``, the ``skipidx build`` command):

* embedded: one atomic insert of all files (the store's two writer threads;
  numba kernels come from their on-disk cache);
* Spark ``local[2]`` and ``local[1]``: one task per input split (or
  ``--partitions`` tasks after a shuffle); each sorts its rows and writes one
  part. The session start-up and a warm-up build of one file (worker
  start, imports) are printed separately: the figure is the job itself.

Queries (one warm-up run, then best of ``--repeat``, each collecting the
matching rows):

* ``trace_id = X`` through the source (pushed EqualTo, bloom-filter pruning)
  vs Spark on a plain Parquet copy written by Spark *with* Parquet bloom
  filters on trace_id (so Spark's own row-group bloom filtering is on);
* ``hasToken(msg, 'kraken')`` through the source's ``where`` option vs
  ``msg LIKE '%kraken%'`` on the plain copy (Spark has no hasToken; LIKE is
  the cheaper superset for it).

Usage::

    python bench/bench_spark.py            # 10M rows
    python bench/bench_spark.py --quick    # 1M rows
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

INDEXES = [
    "INDEX msg_tokens msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1",
    "INDEX trace_bf trace_id TYPE bloom_filter(0.01) GRANULARITY 1",
    "INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1",
]
COLUMNS = ("id UInt64, ts DateTime, level LowCardinality(String), service LowCardinality(String), "
           "trace_id String, user_id UInt64, http_status Nullable(UInt16), msg String")


def _session(master: str, memory: str):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    t0 = time.perf_counter()
    spark = (SparkSession.builder.master(master).appName(f"bench_spark {master}")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", memory).config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    import skipidx.spark

    skipidx.spark.register(spark)
    return spark, time.perf_counter() - t0


def _best(fn, repeat: int) -> tuple[float, object]:
    """Best of `repeat` timed runs after one untimed warm-up run (worker start, caches)."""
    fn()
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true", help="1M rows")
    ap.add_argument("--partitions", type=int, default=None,
                    help="repartition the input to N Spark tasks (default: Spark's own input splits, "
                         "one per file here: 8, no shuffle)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", default="2g", help="Spark driver memory")
    ap.add_argument("--workdir", default=None, help="keep the data here (default: a temporary dir)")
    args = ap.parse_args(argv)
    rows = 1_000_000 if args.quick else args.rows
    parts = args.partitions
    work = args.workdir or tempfile.mkdtemp(prefix="bench_spark-")
    os.makedirs(work, exist_ok=True)
    print(f"rows {rows:,}, Spark build tasks {parts or 'input splits'}, work dir {work}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    from skipidx.datagen import RARE_TOKEN, generate
    from skipidx.pipeline import build

    src = os.path.join(work, f"src_{rows}")
    if not os.path.isfile(os.path.join(src, "_SUCCESS")):
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        t0 = time.perf_counter()
        # 8 files: 8 input splits, so both Spark cores get work without a shuffle
        for i, b in enumerate(generate(rows, seed=42, batch_rows=max(1, -(-rows // 8)))):
            pq.write_table(pa.Table.from_batches([b]), os.path.join(src, f"part-{i:05d}.parquet"))
        open(os.path.join(src, "_SUCCESS"), "wb").close()
        print(f"data generated and written as Parquet (8 files): {time.perf_counter() - t0:.1f} s")
    first = pq.read_table(os.path.join(src, "part-00000.parquet"), columns=["trace_id"])
    trace = first.column("trace_id")[min(123_457, first.num_rows - 1)].as_py()

    db = os.path.join(work, "db")
    shutil.rmtree(db, ignore_errors=True)
    common = dict(columns=COLUMNS, order_by="ts", indexes=INDEXES, index_granularity=8192, quiet=True)
    emb = build(db, "logs_embedded", src, engine="embedded", **common)
    print(f"embedded build: {emb['seconds']:.1f} s, {emb['parts']} parts, index {emb['index_bytes'] / 2**20:.1f} MiB")

    figures = {}
    for master in ("local[2]", "local[1]"):
        spark, start = _session(master, args.memory)
        # warm-up on one file: Python workers started, skipidx imported, cached kernels loaded
        w = build(db, f"warmup_{master[6]}", os.path.join(src, "part-00000.parquet"), engine="spark",
                  master=master, **common)
        s = build(db, f"logs_{master[6]}", src, engine="spark", master=master, partitions=parts, **common)
        figures[master] = s["seconds"]
        print(f"Spark {master} build: {s['seconds']:.1f} s, {s['parts']} parts, index "
              f"{s['index_bytes'] / 2**20:.1f} MiB (session start {start:.1f} s and warm-up build of "
              f"one file {w['seconds']:.1f} s not counted)")
        if master == "local[1]":
            spark.stop()
            break
        # queries on the local[2] session
        plain = os.path.join(work, f"plain_bf_{rows}")
        if not os.path.isdir(plain):
            t0 = time.perf_counter()
            (spark.read.parquet(src).write.mode("overwrite")
             .option("parquet.bloom.filter.enabled#trace_id", "true")
             .option("parquet.bloom.filter.expected.ndv#trace_id", str(max(rows // 4, 1000)))
             .parquet(plain))
            print(f"plain Parquet copy with bloom filters on trace_id: {time.perf_counter() - t0:.1f} s")
        table = os.path.join(db, "logs_2")
        q = {
            "trace_id = X via skipidx": lambda: spark.read.format("skipidx").load(table)
            .filter(f"trace_id = '{trace}'").collect(),
            "trace_id = X via Parquet+bloom": lambda: spark.read.parquet(plain)
            .filter(f"trace_id = '{trace}'").collect(),
            "hasToken via skipidx where": lambda: spark.read.format("skipidx")
            .option("where", f"hasToken(msg, '{RARE_TOKEN}')").load(table).collect(),
            "LIKE '%token%' via Parquet": lambda: spark.read.parquet(plain)
            .filter(f"msg LIKE '%{RARE_TOKEN}%'").collect(),
        }
        res = {}
        for name, fn in q.items():
            sec, out = _best(fn, args.repeat)
            res[name] = sec
            print(f"  {name:34s} {sec * 1000:9.1f} ms  ({len(out)} rows)")
        names = list(q)
        print(f"  speed-up trace_id = X : {res[names[1]] / res[names[0]]:.1f}x")
        print(f"  speed-up hasToken     : {res[names[3]] / res[names[2]]:.1f}x")
        spark.stop()
    print(f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"Spark local[2] / embedded build time: {figures['local[2]'] / emb['seconds']:.2f}x")
    print(f"Spark local[1] / local[2] build time: {figures['local[1]'] / figures['local[2]']:.2f}x (scaling with cores)")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
