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

CPU is the process's user+sys time over the statement (both engines run in
this process; every thread counts). Prints the medians and the ratios, the
peak RSS of the run, and the load average. Asserts nothing.
"""
from __future__ import annotations

import argparse
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None, help="skipidx max_insert_threads (default: cores)")
    ap.add_argument("--no-chdb", action="store_true")
    ap.add_argument("--only", choices=["plain", "indexed"], default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--rss", action="store_true",
                    help="also: peak RSS of a fresh process that only inserts the file (with the indexes)")
    ap.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_child:
        db = skipidx.connect(os.path.join(os.path.dirname(args.rss_child), "rss_db"))
        db.sql((datagen.SCHEMA_SQL + " SETTINGS background_merges = 0").format(table="logs", indexes=CH_INDEXES))
        base = peak_mib()
        c0, w0 = cpu_s(), time.perf_counter()
        db.sql(f"INSERT INTO logs FROM INFILE '{args.rss_child}' FORMAT Parquet")
        print(f"RSS peak {peak_mib():.0f} MiB (before the insert {base:.0f} MiB); insert CPU {cpu_s() - c0:.1f} s, "
              f"wall {time.perf_counter() - w0:.1f} s")
        db.close()
        return 0

    work = tempfile.mkdtemp(prefix="skipidx-insert-")
    src = os.path.join(work, "logs.parquet")
    try:
        t0 = time.perf_counter()
        write_parquet(src, args.rows)
        print(f"{args.rows:,} rows written to Parquet in {time.perf_counter() - t0:.1f} s "
              f"({os.path.getsize(src) / 2**20:.0f} MiB)", flush=True)
        if args.rss:
            import subprocess

            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss-child", src],
                                 capture_output=True, text=True, check=True).stdout.strip()
            print(f"fresh process, INSERT FROM INFILE with the 4 indexes: {out}", flush=True)
            shutil.rmtree(os.path.join(work, "rss_db"), ignore_errors=True)
        settings = ""
        ddl_ours = datagen.SCHEMA_SQL + " SETTINGS background_merges = 0"
        db = skipidx.connect(os.path.join(work, "skipidx"))
        if args.threads:
            db.sql(f"SET max_insert_threads = {args.threads}")
        if args.profile:
            import cProfile
            import pstats

            db.sql(ddl_ours.format(table="logs", indexes=CH_INDEXES))
            pr = cProfile.Profile()
            c0, w0 = cpu_s(), time.perf_counter()
            pr.enable()
            db.sql(f"INSERT INTO logs FROM INFILE '{src}' FORMAT Parquet{settings}")
            pr.disable()
            print(f"profiled insert: CPU {cpu_s() - c0:.1f} s, wall {time.perf_counter() - w0:.1f} s")
            pstats.Stats(pr).sort_stats("cumulative").print_stats(35)
            pstats.Stats(pr).sort_stats("tottime").print_stats(25)
            return 0
        ch = None
        if not args.no_chdb:
            from chdb import session as chs

            ch = chs.Session(os.path.join(work, "chdb"))
        kinds = [("plain", ""), ("indexed", CH_INDEXES)]
        if args.only:
            kinds = [k for k in kinds if k[0] == args.only]
        res: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for r in range(args.repeat):
            for kind, idx in kinds:
                engines = [("skipidx", db)] + ([("chDB", ch)] if ch is not None else [])
                if r % 2:
                    engines.reverse()
                for eng, conn in engines:
                    if eng == "skipidx":
                        db.sql("DROP TABLE IF EXISTS logs")
                        db.sql(ddl_ours.format(table="logs", indexes=idx))
                        stmt = f"INSERT INTO logs FROM INFILE '{src}' FORMAT Parquet{settings}"
                        run = lambda: db.sql(stmt)   # noqa: E731
                    else:
                        ch.query("DROP TABLE IF EXISTS logs")
                        ch.query(datagen.SCHEMA_SQL.format(table="logs", indexes=idx))
                        stmt = f"INSERT INTO logs SELECT * FROM file('{src}', Parquet)"
                        run = lambda: ch.query(stmt)   # noqa: E731
                    c0, w0 = cpu_s(), time.perf_counter()
                    run()
                    c, w = cpu_s() - c0, time.perf_counter() - w0
                    res.setdefault((kind, eng), []).append((c, w))
                    print(f"  round {r + 1} {kind:8s} {eng:8s} CPU {c:6.1f} s  wall {w:6.1f} s", flush=True)
        n_ours = db.sql("SELECT count() FROM logs").fetchall()[0][0]
        assert n_ours == args.rows, n_ours
        print(f"\n{args.rows:,} rows from one Parquet file; median of {args.repeat}; "
              f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; cores {os.cpu_count()}; "
              f"peak RSS of the process {peak_mib():.0f} MiB")
        print(f"{'DDL':8s} {'skipidx CPU':>11s} {'chDB CPU':>9s} {'CPU ratio':>9s} "
              f"{'skipidx wall':>12s} {'chDB wall':>9s} {'wall ratio':>10s}")
        for kind, _ in kinds:
            o = res[(kind, "skipidx")]
            oc, ow = statistics.median(x[0] for x in o), statistics.median(x[1] for x in o)
            if ch is None:
                print(f"{kind:8s} {oc:11.1f} {'-':>9s} {'-':>9s} {ow:12.1f}")
                continue
            t = res[(kind, "chDB")]
            tc, tw = statistics.median(x[0] for x in t), statistics.median(x[1] for x in t)
            print(f"{kind:8s} {oc:11.1f} {tc:9.1f} {oc / tc:8.2f}x {ow:12.1f} {tw:9.1f} {ow / tw:9.2f}x")
        print("ratio = skipidx / chDB (<= 1.0: skipidx at or below chDB)")
        db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
