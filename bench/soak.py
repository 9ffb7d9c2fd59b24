"""Steady insert stream (issue 13): 2 processes insert 100-row batches, 2
processes query, for --seconds (default 300); background merges must keep the
part count bounded (< 300) and query latency flat.

    python bench/soak.py [--seconds 300] [--batch 100]

Prints, per 30 s window: parts (max), inserts, rows, query latency p50/p95
(ms), and the totals; each query's count is checked to only grow.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time

DDL = ("CREATE TABLE logs (ts UInt64, svc LowCardinality(String), trace String, msg String, "
       "INDEX tr trace TYPE bloom_filter(0.01) GRANULARITY 1, "
       "INDEX tk msg TYPE tokenbf_v1(2048, 3, 0) GRANULARITY 1) ORDER BY (svc, ts)")
QUERIES = ["SELECT count() FROM logs WHERE trace = 't{}'",
           "SELECT count() FROM logs WHERE hasToken(msg, 'w{}')"]


def inserter(path: str, wid: int, batch: int, stop_at: float, q: mp.Queue) -> None:
    import numpy as np
    import pyarrow as pa

    import skipidx

    db = skipidx.connect(path)
    rng = np.random.default_rng(wid)
    n = 0
    while time.time() < stop_at:
        ids = np.arange(n, n + batch, dtype=np.uint64) * 2 + wid
        t = pa.table({"ts": pa.array(ids), "svc": pa.array([f"s{i % 5}" for i in range(batch)]),
                      "trace": pa.array([f"t{int(x)}" for x in rng.integers(0, 10**6, batch)]),
                      "msg": pa.array([f"req w{int(x)} done" for x in rng.integers(0, 5000, batch)])})
        t0 = time.time()
        db.insert("logs", t)
        q.put(("insert", time.time(), time.time() - t0, batch))
        n += batch
    db.close()   # waits for this process's merges


def querier(path: str, wid: int, stop_at: float, q: mp.Queue) -> None:
    import random

    import skipidx

    db = skipidx.connect(path)
    rng = random.Random(wid)
    while time.time() < stop_at:
        sql = QUERIES[rng.randrange(2)].format(rng.randrange(10**6 if rng.random() < 0.5 else 5000))
        t0 = time.time()
        db.sql(sql).fetchall()
        q.put(("query", time.time(), time.time() - t0, 0))
    db.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--window", type=float, default=30)
    a = ap.parse_args()
    import skipidx
    from skipidx.store.commit import read_state

    work = tempfile.mkdtemp(prefix="skipidx-soak-")
    path = os.path.join(work, "db")
    db = skipidx.connect(path)
    db.sql(DDL)
    tdir = os.path.join(path, "logs")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    t_start = time.time()
    stop_at = t_start + a.seconds
    procs = [ctx.Process(target=inserter, args=(path, i, a.batch, stop_at, q)) for i in range(2)]
    procs += [ctx.Process(target=querier, args=(path, i, stop_at, q)) for i in range(2)]
    for p in procs:
        p.start()
    events, parts = [], []
    while any(p.is_alive() for p in procs):
        try:
            parts.append((time.time(), len(read_state(tdir).parts)))
        except Exception:   # noqa: BLE001 - a state being replaced: sample again
            pass
        while not q.empty():
            events.append(q.get())
        time.sleep(0.5)
    while not q.empty():
        events.append(q.get())
    for p in procs:
        p.join()
    rows = []
    nwin = int(a.seconds // a.window) + 1
    for w in range(nwin):
        lo, hi = t_start + w * a.window, t_start + (w + 1) * a.window
        lat = sorted(e[2] * 1000 for e in events if e[0] == "query" and lo <= e[1] < hi)
        ins = [e for e in events if e[0] == "insert" and lo <= e[1] < hi]
        pc = [n for t, n in parts if lo <= t < hi]
        if not lat and not ins:
            continue
        rows.append({"window_s": f"{w * a.window:.0f}-{(w + 1) * a.window:.0f}", "parts_max": max(pc) if pc else None,
                     "inserts": len(ins), "rows": sum(e[3] for e in ins),
                     "q_p50_ms": round(lat[len(lat) // 2], 1) if lat else None,
                     "q_p95_ms": round(lat[int(len(lat) * 0.95)], 1) if lat else None, "queries": len(lat)})
    for r in rows:
        print(json.dumps(r))
    total_rows = db.sql("SELECT count() FROM logs").fetchall()[0][0]
    inserted = sum(e[3] for e in events if e[0] == "insert")
    summary = {"seconds": a.seconds, "parts_max": max(n for _, n in parts), "parts_end": parts[-1][1],
               "inserts": sum(1 for e in events if e[0] == "insert"), "rows_inserted": inserted,
               "rows_in_table": total_rows, "queries": sum(1 for e in events if e[0] == "query"),
               "load": os.getloadavg()}
    print(json.dumps(summary))
    db.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0 if summary["parts_max"] < 300 and total_rows == inserted else 1


if __name__ == "__main__":
    sys.exit(main())
