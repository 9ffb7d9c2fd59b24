"""Spark benchmark: building the log table on Spark vs in-process, and selective
queries through the ``skipidx`` source vs Spark reading plain Parquet.

Data: the seeded log table of ``skipidx.apps.datagen`` (``--rows``, default 10M;
``--quick`` 1M), written once as a directory of Parquet files that both
builds read. Indexes: the token SBBF on msg, a bloom_filter on trace_id and
on user_id, granules of 8192 rows, ORDER BY ts.

Build (``skipidx.apps.pipeline.build``, the ``skipidx build`` command):

* embedded: one atomic insert of all files (the store's two writer threads;
  numba kernels come from their on-disk cache);
* Spark ``local[2]`` and ``local[1]``: one task per input split (or
  ``--partitions`` tasks after a shuffle); each sorts its rows and writes one
  part. The session start-up and a warm-up build of one file (worker
  start, imports) are printed separately: the figure is the job itself.

Queries, on the ``local[2]`` session, against the Spark-built table:

* ``trace_id = X`` through the source (pushed EqualTo, bloom-filter pruning)
  vs Spark on a plain Parquet copy written by Spark *with* Parquet bloom
  filters on trace_id (so Spark's own row-group bloom filtering is on). The
  bench checks both that every file of the copy holds the filters
  (:mod:`skipidx.core.parquet_bloom` reads them) and, from Spark's scan metrics,
  that Spark skipped row groups with them;
* ``hasToken(msg, 'kraken')`` through the source's ``where`` option vs
  ``msg LIKE '%kraken%'`` on the plain copy (Spark has no hasToken; LIKE is
  the cheaper superset for it).

Method: one Spark session, the same configuration for every query (below);
``--warmup`` untimed rounds, then ``--repeat`` timed rounds; a round runs
every query once, in the same order, so load drifting on a shared machine
hits all of them alike. Each run collects the matching rows to the driver.
Figures: the median (and range) per query; the speed-up is the ratio of the
medians, and beside it the median of the per-round ratios. CPU: seconds of
the Spark JVM and its Python workers per query (from /proc; steadier than
wall time on a busy machine).

Session configuration (both sides): ``spark.python.worker.reuse = true``
(Spark's default, set explicitly: Python workers -- and the source's loaded
indexes and imports -- live across queries, which is how a Python data
source is meant to run), ``spark.sql.python.filterPushdown.enabled = true``
(needed by the source, no effect on Parquet), ``spark.ui.enabled = false``,
``spark.sql.session.timeZone = UTC``, ``spark.sql.shuffle.partitions = 4``.

Usage::

    python bench/bench_spark.py                  # 10M rows
    python bench/bench_spark.py --quick          # 1M rows
    python bench/bench_spark.py --workdir W      # keep data and tables in W ...
    python bench/bench_spark.py --workdir W --queries-only   # ... and time the queries again
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


#: The session configuration of every query, both sides (see the module docstring).
SESSION_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",
}


def _session(master: str, memory: str):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    t0 = time.perf_counter()
    b = SparkSession.builder.master(master).appName(f"bench_spark {master}").config("spark.driver.memory", memory)
    for k, v in SESSION_CONF.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import skipidx.apps.spark

    skipidx.apps.spark.register(spark)     # also sets spark.sql.python.filterPushdown.enabled = true
    return spark, time.perf_counter() - t0


# ------------------------------------------------------------------ CPU of the Spark processes
_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _tree_cpu(root: int) -> float | None:
    """CPU seconds (user + system, with reaped children) of process `root` and its
    descendants (the JVM and its Python daemons and workers); None without /proc."""
    procs: dict[int, tuple[int, float]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for d in names:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", encoding="ascii", errors="replace") as fh:
                st = fh.read()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        procs[int(d)] = (int(f[1]), sum(int(x) for x in f[11:15]) / _HZ)
    if root not in procs:
        return None
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += procs[pid][1]
        stack.extend(kids.get(pid, []))
    return total


def _rounds(queries: dict, warmup: int, repeat: int, jvm_pid: int | None) -> tuple[dict, dict, dict]:
    """`warmup` untimed then `repeat` timed rounds of every query in the same order:
    (wall seconds per query per round, CPU seconds per query, rows of the last run)."""
    for i in range(warmup):
        for fn in queries.values():
            fn()
        print(f"  warm-up round {i + 1}/{warmup} done", flush=True)
    times = {k: [] for k in queries}
    cpu = {k: 0.0 for k in queries}
    rows = {}
    for r in range(repeat):
        for k, fn in queries.items():
            c0 = _tree_cpu(jvm_pid) if jvm_pid else None
            t0 = time.perf_counter()
            out = fn()
            times[k].append(time.perf_counter() - t0)
            c1 = _tree_cpu(jvm_pid) if jvm_pid else None
            if c0 is not None and c1 is not None:
                cpu[k] += (c1 - c0) / repeat
            rows[k] = len(out)
        print(f"  round {r + 1}/{repeat}: " + ", ".join(f"{k.split(' via ')[1]} {times[k][-1] * 1000:.0f}"
                                                       for k in queries) + " ms", flush=True)
    return times, cpu, rows


def _scan_rows(df) -> int | None:
    """Spark's `number of output rows` of the (single) file scan of an executed
    DataFrame: rows of the row groups it did not skip (None if unavailable)."""
    try:
        plan = df._jdf.queryExecution().executedPlan()
        if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            plan = plan.finalPhysicalPlan()
        leaves = plan.collectLeaves()
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            m = leaf.metrics()
            if "FileSourceScan" in leaf.getClass().getSimpleName() and m.contains("numOutputRows"):
                return int(m.apply("numOutputRows").value())
    except Exception:       # a Spark without these internals: the figure is only informative
        return None
    return None


def _check_bloom_files(plain: str) -> tuple[int, int, int]:
    """(files, row groups, row groups with a trace_id bloom filter) of the plain copy."""
    from skipidx.core.parquet_bloom import read_bloom_filters

    files = sorted(os.path.join(plain, f) for f in os.listdir(plain) if f.endswith(".parquet"))
    groups = with_bf = 0
    for f in files:
        bfs = read_bloom_filters(f, "trace_id")
        groups += len(bfs)
        with_bf += sum(b is not None for b in bfs)
    return len(files), groups, with_bf


def _median(xs: list[float]) -> float:
    import statistics

    return statistics.median(xs)


def _queries_bench(spark, work: str, rows: int, table: str, trace: str, src: str, warmup: int,
                   repeat: int) -> dict:
    from skipidx.apps.datagen import RARE_TOKEN

    plain = os.path.join(work, f"plain_bf_{rows}")
    if not os.path.isfile(os.path.join(plain, "_SUCCESS")):
        shutil.rmtree(plain, ignore_errors=True)
        t0 = time.perf_counter()
        (spark.read.parquet(src).write.mode("overwrite")
         .option("parquet.bloom.filter.enabled#trace_id", "true")
         .option("parquet.bloom.filter.expected.ndv#trace_id", str(max(rows // 4, 1000)))
         .parquet(plain))
        print(f"plain Parquet copy written by Spark, bloom filters on trace_id: {time.perf_counter() - t0:.1f} s")
    nfiles, ngroups, nbf = _check_bloom_files(plain)
    print(f"plain copy: {nfiles} files, {ngroups} row groups, {nbf} with a trace_id bloom filter")
    if nbf != ngroups:
        raise SystemExit("the plain copy lacks bloom filters: the comparison would not be the one asked for")

    eq_sql, like_sql = f"trace_id = '{trace}'", f"msg LIKE '%{RARE_TOKEN}%'"
    has_token = f"hasToken(msg, '{RARE_TOKEN}')"
    q = {
        "trace_id = X via skipidx": lambda: spark.read.format("skipidx").load(table).filter(eq_sql).collect(),
        "trace_id = X via Parquet+bloom": lambda: spark.read.parquet(plain).filter(eq_sql).collect(),
        "hasToken via skipidx where": lambda: spark.read.format("skipidx").option("where", has_token)
        .load(table).collect(),
        "LIKE '%token%' via Parquet": lambda: spark.read.parquet(plain).filter(like_sql).collect(),
    }
    # untimed: what each side reads (the source's pruning figures, Spark's scan rows)
    st_path = os.path.join(work, "stats.json")
    import json

    explain = {}
    for k, opts, flt in (("trace_id = X via skipidx", {}, eq_sql), ("hasToken via skipidx where",
                                                                    {"where": has_token}, None)):
        r = spark.read.format("skipidx").option("stats_path", st_path)
        for ok, ov in opts.items():
            r = r.option(ok, ov)
        df = r.load(table)
        (df.filter(flt) if flt else df).collect()
        with open(st_path, encoding="utf-8") as fh:
            st = json.load(fh)
        explain[k] = (f"{st['granules_selected']} of {st['granules_total']} granules, "
                      f"{st['rows_selected']:,} rows, {st['tasks']} task(s)")
    scanned = {}
    for k, cond in (("trace_id = X via Parquet+bloom", eq_sql), ("LIKE '%token%' via Parquet", like_sql)):
        df = spark.read.parquet(plain).filter(cond)
        df.collect()
        scanned[k] = n = _scan_rows(df)
        explain[k] = (f"Spark's scan read {n:,} of {rows:,} rows" if n is not None else "scan rows unknown")
    n_eq = scanned["trace_id = X via Parquet+bloom"]
    if n_eq is not None and n_eq >= rows:
        raise SystemExit("Spark did not skip any row group with the bloom filters: check the plain copy")

    jvm = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    times, cpu, nrows = _rounds(q, warmup, repeat, jvm.pid if jvm is not None else None)
    med = {k: _median(v) for k, v in times.items()}
    print(f"queries ({repeat} timed rounds after {warmup} warm-up rounds; median [min - max]; "
          f"CPU = Spark JVM + Python workers per query):")
    for k in q:
        print(f"  {k:32s} {med[k] * 1000:8.1f} ms [{min(times[k]) * 1000:.0f} - {max(times[k]) * 1000:.0f}]"
              f"  CPU {cpu[k] * 1000:6.0f} ms  {nrows[k]} rows  ({explain[k]})")
    names = list(q)
    out = {}
    for label, a, b in (("trace_id = X", names[1], names[0]), ("hasToken    ", names[3], names[2])):
        per_round = _median([x / y for x, y in zip(times[a], times[b])])
        out[label.strip()] = med[a] / med[b]
        print(f"  speed-up {label}: {med[a] / med[b]:.1f}x (median / median; per-round ratios: median "
              f"{per_round:.1f}x, min {min(x / y for x, y in zip(times[a], times[b])):.1f}x)"
              + (f"; CPU {cpu[a] / cpu[b]:.1f}x" if cpu[b] > 0 else ""))
    if nrows[names[0]] != nrows[names[1]] or nrows[names[2]] != nrows[names[3]]:
        print(f"  NOTE: row counts differ: {nrows}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true", help="1M rows")
    ap.add_argument("--partitions", type=int, default=None,
                    help="repartition the input to N Spark tasks (default: Spark's own input splits, "
                         "one per file here: 8, no shuffle)")
    ap.add_argument("--repeat", type=int, default=7, help="timed rounds of the queries (>= 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed rounds of the queries first")
    ap.add_argument("--memory", default="2g", help="Spark driver memory")
    ap.add_argument("--workdir", default=None, help="keep the data here (default: a temporary dir)")
    ap.add_argument("--queries-only", action="store_true",
                    help="skip the builds: time the queries on the table a previous run left in --workdir")
    args = ap.parse_args(argv)
    if args.repeat < 5:
        ap.error("--repeat must be >= 5 (the median of fewer runs says little on a shared machine)")
    rows = 1_000_000 if args.quick else args.rows
    parts = args.partitions
    if args.queries_only and not args.workdir:
        ap.error("--queries-only needs the --workdir of an earlier run")
    work = args.workdir or tempfile.mkdtemp(prefix="bench_spark-")
    os.makedirs(work, exist_ok=True)
    print(f"rows {rows:,}, Spark build tasks {parts or 'input splits'}, work dir {work}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    from skipidx.apps.datagen import generate
    from skipidx.apps.pipeline import build

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
    table = os.path.join(db, "logs_2")
    common = dict(columns=COLUMNS, order_by="ts", indexes=INDEXES, index_granularity=8192, quiet=True)
    figures = {}
    if args.queries_only:
        if not os.path.isdir(table):
            raise SystemExit(f"no table {table}: run once without --queries-only")
        spark, _ = _session("local[2]", args.memory)
        _queries_bench(spark, work, rows, table, trace, src, args.warmup, args.repeat)
        spark.stop()
        print(f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        return 0

    shutil.rmtree(db, ignore_errors=True)
    emb = build(db, "logs_embedded", src, engine="embedded", **common)
    print(f"embedded build: {emb['seconds']:.1f} s, {emb['parts']} parts, index {emb['index_bytes'] / 2**20:.1f} MiB")

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
        if master == "local[2]":
            _queries_bench(spark, work, rows, table, trace, src, args.warmup, args.repeat)
        spark.stop()
    print(f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"Spark local[2] / embedded build time: {figures['local[2]'] / emb['seconds']:.2f}x")
    print(f"Spark local[1] / local[2] build time: {figures['local[1]'] / figures['local[2]']:.2f}x (scaling with cores)")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
