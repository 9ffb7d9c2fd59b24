"""Scaling with cores: insert, scan, index build and OPTIMIZE FINAL at 1 vs N threads.

    python bench/bench_scaling.py [--rows 2000000] [--repeat 2]

Two ways of giving the engine fewer cores, both printed:

- threads: in one process, ``max_threads``-style settings: INSERT with
  ``threads=t`` (``SET max_insert_threads``), the scan with ``SETTINGS
  max_threads = t``, the index build with ``threads=t`` (PartWriter of the
  indexes alone over an existing data file), ``optimize(final=True,
  threads=t)``;
- affinity: the same steps with default settings in a child process run under
  ``taskset -c 0`` vs one that may use every core (the defaults follow the
  process's CPU affinity).

Data: the seeded log table (skipidx.apps.datagen) from one Parquet file,
ClickHouse's index DDL of bench/bench_query.py (tokenbf_v1, ngrambf_v1, two
bloom_filter); insert parts of rows/4, so OPTIMIZE merges 4 parts. The scan
is the non-selective ``count()`` of ``msg LIKE '%timeout%'`` (no granule
pruned), median of 3. Rounds interleave the settings. Prints wall, CPU and
speed-up (1-thread wall / N-thread wall) and the load average. Asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402

CH_INDEXES = """,
    INDEX msg_tokens msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1,
    INDEX msg_ngrams msg TYPE ngrambf_v1(3, 65536, 2, 0) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1"""
STEPS = ("insert", "scan", "build", "optimize")


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def run_steps(work: str, src: str, rows: int, threads: int | None) -> dict[str, tuple[float, float]]:
    """{step: (wall s, CPU s)} of one round at `threads` (None: the defaults)."""
    from skipidx.store.commit import stage_dir
    from skipidx.store.writer import PartWriter

    out = {}
    d = tempfile.mkdtemp(dir=work)
    db = skipidx.connect(os.path.join(d, "db"))
    try:
        db.sql((datagen.SCHEMA_SQL + f" SETTINGS background_merges = 0, max_part_rows = {max(1, rows // 4)}")
               .format(table="logs", indexes=CH_INDEXES))
        t = db.catalog.table("logs")
        w0, c0 = time.perf_counter(), cpu_s()
        from skipidx.store.ingest import insert_any

        insert_any(t, src, threads=threads)
        out["insert"] = (time.perf_counter() - w0, cpu_s() - c0)

        q = f"SELECT count() FROM logs WHERE msg LIKE '%{datagen.FREQUENT_TOKEN}%'" + \
            (f" SETTINGS max_threads = {threads}" if threads else "")
        db.sql(q)
        samples = []
        for _ in range(3):
            w0, c0 = time.perf_counter(), cpu_s()
            db.sql(q)
            samples.append((time.perf_counter() - w0, cpu_s() - c0))
        out["scan"] = (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))

        snap = t.snapshot()
        part = snap.parts[0]
        cols = sorted({im.definition.column for im in snap.meta.indexes})
        data = part.read(cols)
        staged = stage_dir(t.path, "p_build")
        w0, c0 = time.perf_counter(), cpu_s()
        pw = PartWriter(staged.path, snap.meta, "p_build", reuse={"data.parquet": os.path.join(part.path, "data.parquet")},
                        threads=threads, build_threads=threads)
        step = pw.chunk_multiple() * max(1, (1 << 20) // pw.chunk_multiple())
        for off in range(0, data.num_rows, step):
            pw.write(data.slice(off, step))
        pw.abort()
        out["build"] = (time.perf_counter() - w0, cpu_s() - c0)
        staged.discard()
        snap.close()
        del data

        w0, c0 = time.perf_counter(), cpu_s()
        t.optimize(final=True, threads=threads)
        out["optimize"] = (time.perf_counter() - w0, cpu_s() - c0)
        assert len(t.state.parts) == 1
    finally:
        db.close()
        shutil.rmtree(d, ignore_errors=True)
    return out


def child(args) -> int:
    res = run_steps(args.work, args.src, args.rows, None)
    print("RESULT " + json.dumps(res))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-affinity", action="store_true", help="skip the taskset runs")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--src", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    from skipidx.core.threads import available_cores

    n = available_cores()
    work = tempfile.mkdtemp(prefix="skipidx-scaling-")
    try:
        import pyarrow.parquet as pq

        src = os.path.join(work, "logs.parquet")
        w = None
        for b in datagen.generate(args.rows, 42, batch_rows=1_000_000):
            if w is None:
                w = pq.ParquetWriter(src, b.schema)
            w.write_batch(b)
        w.close()
        run_steps(work, src, min(args.rows, 200_000), 1)   # warm-up: kernels, imports
        la0 = os.getloadavg()
        res: dict[str, list[dict]] = {}
        for r in range(args.repeat):
            order = [1, n] if r % 2 == 0 else [n, 1]
            for t in order:
                key = f"threads={t}"
                res.setdefault(key, []).append(run_steps(work, src, args.rows, t))
                print(f"  round {r + 1} {key}: " + ", ".join(f"{s} {res[key][-1][s][0]:.2f} s"
                                                            for s in STEPS), flush=True)
            if args.no_affinity or not shutil.which("taskset"):
                continue
            for cpus in (["0"], [",".join(str(c) for c in sorted(os.sched_getaffinity(0)))])[:: 1 if r % 2 == 0 else -1]:
                key = f"taskset -c {cpus[0]}"
                cmd = ["taskset", "-c", cpus[0], sys.executable, os.path.abspath(__file__), "--child",
                       "--work", work, "--src", src, "--rows", str(args.rows)]
                outp = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                line = [x for x in outp.splitlines() if x.startswith("RESULT ")][-1]
                res.setdefault(key, []).append({k: tuple(v) for k, v in json.loads(line[7:]).items()})
                print(f"  round {r + 1} {key}: " + ", ".join(f"{s} {res[key][-1][s][0]:.2f} s"
                                                            for s in STEPS), flush=True)
        la1 = os.getloadavg()
        print(f"\n{args.rows:,} rows, 4 insert parts merged by OPTIMIZE FINAL, 4 ClickHouse-DDL indexes; "
              f"{n} cores available; median of {args.repeat}; load average {la0[0]:.2f} -> {la1[0]:.2f}")
        pairs = [("threads=1", f"threads={n}")]
        if any(k.startswith("taskset") for k in res):
            pairs.append(("taskset -c 0", [k for k in res if k.startswith("taskset") and k != "taskset -c 0"][0]))
        print(f"{'step':9s} {'setting':22s} {'wall s':>8s} {'CPU s':>7s} {'wall s':>8s} {'CPU s':>7s} {'speed-up':>8s}")
        for one, many in pairs:
            for s in STEPS:
                w1 = statistics.median(x[s][0] for x in res[one])
                c1 = statistics.median(x[s][1] for x in res[one])
                wn = statistics.median(x[s][0] for x in res[many])
                cn = statistics.median(x[s][1] for x in res[many])
                print(f"{s:9s} {one + ' vs ' + many.split()[-1]:22s} {w1:8.2f} {c1:7.2f} {wn:8.2f} {cn:7.2f} "
                      f"{w1 / wn:7.2f}x")
        print("speed-up = wall at one core / wall at all cores (ideal here: "
              f"{n}.00x); on a shared machine the load above takes cores from both")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
