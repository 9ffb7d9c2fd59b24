"""Insert CPU and wall: skipidx vs chDB, same rows, same DDL, one interleaved run.

    python bench/bench_insert_cpu.py [--rows 10000000] [--repeat 2] [--threads N]
    python bench/bench_insert_cpu.py --profile        # cProfile of one skipidx insert (with indexes)

The seeded log table (skipidx.apps.datagen) is written once to a Parquet
file; then, round by round, each engine loads that file into a fresh table,
without indexes and with ClickHouse's index DDL of bench/bench_query.py
(tokenbf_v1, ngrambf_v1, two bloom_filter):

- skipidx: ``INSERT INTO logs FROM INFILE 'file' FORMAT Parquet`` (streamed in
  blocks, parts of ``max_part_rows``), background merges off so the figure is
  the insert alone (as chDB's, whose merges run after its INSERT returns);
- chDB: ``INSERT INTO logs SELECT * FROM file('file', Parquet)``.

Each insert runs in a fresh child process (engine started and table created
before the clock starts): CPU is that process's user+sys time over the
statement (every thread counts), RSS its peak resident set (the figure printed
beside it: the peak during the statement's process minus nothing; the
"before" column is the process before the INSERT). Prints the medians, the
ratios and the load average. Asserts nothing.

    --src FILE   load an existing Parquet file instead of generating one
"""
from __future__ import annotations

import argparse
import json
import subprocess
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import pyarrow.parquet as pq  # noqa: E402

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402

CH_INDEXES = """,
    INDEX msg_tokens msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1,
    INDEX msg_ngrams msg TYPE ngrambf_v1(3, 65536, 2, 0) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1"""


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_parquet(path: str, rows: int, seed: int = 42) -> None:
    w = None
    for b in datagen.generate(rows, seed, batch_rows=1_000_000):
        if w is None:
            w = pq.ParquetWriter(path, b.schema)
        w.write_batch(b)
    w.close()


def child(engine: str, kind: str, src: str, work: str, threads: int | None) -> dict:
    """One insert in this (fresh) process: CPU, wall, peak RSS before/after."""
    idx = CH_INDEXES if kind == "indexed" else ""
    if engine == "skipidx":
        db = skipidx.connect(os.path.join(work, "skipidx"))
        if threads:
            db.sql(f"SET max_insert_threads = {threads}")
        db.sql("DROP TABLE IF EXISTS logs")
        db.sql((datagen.SCHEMA_SQL + " SETTINGS background_merges = 0").format(table="logs", indexes=idx))
        run = lambda: db.sql(f"INSERT INTO logs FROM INFILE '{src}' FORMAT Parquet")   # noqa: E731
        count = lambda: db.sql("SELECT count() FROM logs").fetchall()[0][0]   # noqa: E731
    else:
        from chdb import session as chs

        ch = chs.Session(os.path.join(work, "chdb"))
        ch.query("DROP TABLE IF EXISTS logs")
        ch.query(datagen.SCHEMA_SQL.format(table="logs", indexes=idx))
        run = lambda: ch.query(f"INSERT INTO logs SELECT * FROM file('{src}', Parquet)")   # noqa: E731
        count = lambda: int(str(ch.query("SELECT count() FROM logs", "CSV")).strip())   # noqa: E731
    base = peak_mib()
    c0, w0 = cpu_s(), time.perf_counter()
    run()
    c, w = cpu_s() - c0, time.perf_counter() - w0
    return {"cpu": c, "wall": w, "rss_before": base, "rss_peak": peak_mib(), "rows": count()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--src", default=None, help="an existing Parquet file of the datagen schema (else generated)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None, help="skipidx max_insert_threads (default: cores)")
    ap.add_argument("--no-chdb", action="store_true")
    ap.add_argument("--only", choices=["plain", "indexed"], default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--child", nargs=4, metavar=("ENGINE", "KIND", "SRC", "WORK"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child, args.threads)))
        return 0

    work = tempfile.mkdtemp(prefix="skipidx-insert-")
    src = args.src
    try:
        if src is None:
            src = os.path.join(work, "logs.parquet")
            t0 = time.perf_counter()
            write_parquet(src, args.rows)
            print(f"{args.rows:,} rows written to Parquet in {time.perf_counter() - t0:.1f} s "
                  f"({os.path.getsize(src) / 2**20:.0f} MiB)", flush=True)
        rows = pq.ParquetFile(src).metadata.num_rows
        if args.profile:
            import cProfile
            import pstats

            db = skipidx.connect(os.path.join(work, "skipidx"))
            if args.threads:
                db.sql(f"SET max_insert_threads = {args.threads}")
            db.sql((datagen.SCHEMA_SQL + " SETTINGS background_merges = 0").format(table="logs", indexes=CH_INDEXES))
            pr = cProfile.Profile()
            c0, w0 = cpu_s(), time.perf_counter()
            pr.enable()
            db.sql(f"INSERT INTO logs FROM INFILE '{src}' FORMAT Parquet")
            pr.disable()
            print(f"profiled insert: CPU {cpu_s() - c0:.1f} s, wall {time.perf_counter() - w0:.1f} s")
            pstats.Stats(pr).sort_stats("cumulative").print_stats(35)
            pstats.Stats(pr).sort_stats("tottime").print_stats(25)
            return 0
        kinds = ["plain", "indexed"] if args.only is None else [args.only]
        res: dict[tuple[str, str], list[dict]] = {}
        for r in range(args.repeat):
            for kind in kinds:
                engines = ["skipidx"] + ([] if args.no_chdb else ["chDB"])
                if r % 2:
                    engines.reverse()
                for eng in engines:
                    d = os.path.join(work, f"{eng}-{kind}-{r}")
                    os.makedirs(d)
                    cmd = [sys.executable, os.path.abspath(__file__), "--child", eng, kind, src, d]
                    if args.threads:
                        cmd += ["--threads", str(args.threads)]
                    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True)
                                     .stdout.strip().splitlines()[-1])
                    shutil.rmtree(d, ignore_errors=True)
                    assert out["rows"] == rows, out
                    res.setdefault((kind, eng), []).append(out)
                    print(f"  round {r + 1} {kind:8s} {eng:8s} CPU {out['cpu']:6.1f} s  wall {out['wall']:6.1f} s  "
                          f"peak RSS {out['rss_peak']:6.0f} MiB (before the insert {out['rss_before']:.0f})",
                          flush=True)
        la = os.getloadavg()
        print(f"\n{rows:,} rows from one Parquet file; median of {args.repeat}; load average {la[0]:.2f} {la[1]:.2f}; "
              f"cores {os.cpu_count()}; skipidx threads {args.threads or 'default'}")
        print(f"{'DDL':8s} {'skipidx CPU':>11s} {'chDB CPU':>9s} {'CPU ratio':>9s} "
              f"{'skipidx wall':>12s} {'chDB wall':>9s} {'wall ratio':>10s} {'skipidx RSS':>11s} {'chDB RSS':>9s}")
        med = statistics.median
        for kind in kinds:
            o = res[(kind, "skipidx")]
            oc, ow, orss = med(x["cpu"] for x in o), med(x["wall"] for x in o), max(x["rss_peak"] for x in o)
            if args.no_chdb:
                print(f"{kind:8s} {oc:11.1f} {'-':>9s} {'-':>9s} {ow:12.1f} {'-':>9s} {'-':>10s} {orss:9.0f} M")
                continue
            t = res[(kind, "chDB")]
            tc, tw, trss = med(x["cpu"] for x in t), med(x["wall"] for x in t), max(x["rss_peak"] for x in t)
            print(f"{kind:8s} {oc:11.1f} {tc:9.1f} {oc / tc:8.2f}x {ow:12.1f} {tw:9.1f} {ow / tw:9.2f}x "
                  f"{orss:9.0f} M {trss:7.0f} M")
        print("ratio = skipidx / chDB (<= 1.0: skipidx at or below chDB); RSS = peak resident set of the "
              "inserting process (MiB)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
