"""SELECT DISTINCT ... ORDER BY timings: this checkout's select vs another select.py (a baseline).

    python bench/bench_distinct.py [--rows 1000000] [--baseline path/to/select.py]

Same process, same table, interleaved rounds (median of --repeat); prints ms per query,
the ratio new/baseline, whether the answers agree, and the load average.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import skipidx
import skipidx.engine.query as query

QUERIES = [
    "SELECT DISTINCT service, user_id FROM t ORDER BY service, user_id",
    "SELECT DISTINCT service, user_id FROM t ORDER BY service, user_id LIMIT 10",
    "SELECT DISTINCT service, user_id FROM t ORDER BY user_id DESC LIMIT 10",
    "SELECT DISTINCT service, user_id FROM t ORDER BY ts DESC LIMIT 10",
    "SELECT DISTINCT service, user_id FROM t ORDER BY status",
    "SELECT DISTINCT service, user_id FROM t ORDER BY status, user_id LIMIT 10",
    "SELECT DISTINCT service FROM t ORDER BY ts",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--baseline", required=True, help="a select.py to compare with (e.g. from git show)")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("select_baseline", args.baseline)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    new_run = query.run_select

    def old_run(bs, chunks, sort_key=None):   # the baseline may not take sort_key
        return old.run_select(bs, chunks)

    rnd = np.random.default_rng(7)
    n = args.rows
    db = skipidx.connect(os.path.join(tempfile.mkdtemp(), "db"))
    db.sql("CREATE TABLE t (ts UInt64, service LowCardinality(String), user_id UInt64, status UInt16) "
           "ENGINE = MergeTree ORDER BY ts")
    db.insert("t", pa.table({
        "ts": np.arange(n, dtype=np.uint64),
        "service": np.array([f"svc{i:02d}" for i in range(20)])[rnd.integers(0, 20, n)],
        "user_id": rnd.integers(0, 50_000, n).astype(np.uint64),
        "status": rnd.choice(np.array([200, 201, 301, 404, 500], dtype=np.uint16), n),
    }))
    print(f"rows {n:,}  load average {os.getloadavg()}")
    for sql in QUERIES:
        times = {"baseline": [], "new": []}
        answers = {}
        for _ in range(args.repeat):
            for name, fn in (("baseline", old_run), ("new", new_run)):
                query.run_select = fn
                t0 = time.perf_counter()
                answers[name] = db.sql(sql).to_arrow()
                times[name].append((time.perf_counter() - t0) * 1000)
        query.run_select = new_run
        b, m = statistics.median(times["baseline"]), statistics.median(times["new"])
        same = answers["baseline"].equals(answers["new"])
        print(f"{sql}\n  baseline {b:8.1f} ms   new {m:8.1f} ms   new/baseline {m / b:5.2f}   "
              f"same answer: {same}  ({answers['new'].num_rows} rows)", flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
