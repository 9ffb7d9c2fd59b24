"""Steady insert stream (issue 13): 2 processes insert 100-row batches, 2
processes query, for --seconds (default 300); background merges must keep the
part count bounded (< 300) and query latency flat.

    python bench/soak.py [--seconds 300] [--batch 100] [--window 60] [--rate N] [--profile DIR]

Before the stream starts, 2,000 seed rows are inserted whose answers never
change however the table grows, so their latency must stay flat:
``lookup`` (``trace = 'seed<k>'``: one row, found through the bloom filter)
and ``window`` (``svc = 's<j>' AND ts >= SEED_TS``: 400 rows through the
primary key). ``token`` (``hasToken(msg, 'w<x>')``: the word is in most
granules) reads more as the table grows and is shown for contrast; the first
querier runs lookup and window, the second token. Every answer of a fixed
query is checked.

Prints, per window: parts (max), inserts, rows, and per query kind the
latency p50/p95 (ms), the querying process's CPU time p50 (ms: less
sensitive to the machine's load than the wall time) and the mean granules
read; then the totals.
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
#: The seed rows' ts lie far above the stream's, so the window holds only them.
SEED_TS = 10**12
SEED_ROWS = 2000
QUERIES = {
    "lookup": ("SELECT count() FROM logs WHERE trace = 'seed{}'", SEED_ROWS, lambda k: 1),
    "window": ("SELECT count() FROM logs WHERE svc = 's{}' AND ts >= %d" % SEED_TS, 5,
               lambda j: SEED_ROWS // 5),
    "token": ("SELECT count() FROM logs WHERE hasToken(msg, 'w{}')", 5000, None),
}
KINDS = list(QUERIES)


def seed_table():
    import pyarrow as pa

    n = SEED_ROWS
    return pa.table({"ts": pa.array([SEED_TS + i for i in range(n)], pa.uint64()),
                     "svc": pa.array([f"s{i % 5}" for i in range(n)]),
                     "trace": pa.array([f"seed{i}" for i in range(n)]),
                     "msg": pa.array([f"seed w{i % 5000} done" for i in range(n)])})


def inserter(path: str, wid: int, batch: int, stop_at: float, q: mp.Queue, rate: float = 0.0) -> None:
    import numpy as np
    import pyarrow as pa

    import skipidx

    db = skipidx.connect(path)
    rng = np.random.default_rng(wid)
    n = 0
    t_next = time.time()
    while time.time() < stop_at:
        if rate > 0:
            # a paced stream: the queries' catch-up work per query follows the insert rate,
            # which otherwise follows whatever CPU the machine leaves the inserters
            t_next += 1.0 / rate
            time.sleep(max(0.0, t_next - time.time()))
        ids = np.arange(n, n + batch, dtype=np.uint64) * 2 + wid
        t = pa.table({"ts": pa.array(ids), "svc": pa.array([f"s{i % 5}" for i in range(batch)]),
                      "trace": pa.array([f"t{int(x)}" for x in rng.integers(0, 10**6, batch)]),
                      "msg": pa.array([f"req w{int(x)} done" for x in rng.integers(0, 5000, batch)])})
        t0 = time.time()
        db.insert("logs", t)
        q.put(("insert", time.time(), time.time() - t0, batch))
        n += batch
    db.close()   # waits for this process's merges


def querier(path: str, wid: int, stop_at: float, q: mp.Queue, profile: str | None,
            t_start: float = 0.0, window: float = 60.0) -> None:
    import random

    import skipidx

    db = skipidx.connect(path)
    rng = random.Random(wid)
    # querier 0 runs the fixed-size queries, querier 1 the growing one: a
    # querier catches up with the parts committed since its last query, so a
    # lookup sharing a process with ever slower hasToken scans would see more
    # new parts per query as the table grows
    mine = KINDS[:2] if wid == 0 else KINDS[2:]
    prof = None
    win = 0
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    while time.time() < stop_at:
        if prof is not None and time.time() >= t_start + (win + 1) * window:
            # one profile per window: what grows shows as a difference between them
            prof.disable()
            prof.dump_stats(os.path.join(profile, f"querier{wid}.w{win}.prof"))
            win = int((time.time() - t_start) // window)
            prof = cProfile.Profile()
            prof.enable()
        kind = mine[rng.randrange(len(mine))]
        sql, span, expect = QUERIES[kind]
        k = rng.randrange(span)
        t0, c0 = time.time(), time.process_time()
        r = db.sql(sql.format(k))
        got = r.fetchall()[0][0]
        q.put((kind, time.time(), time.time() - t0, time.process_time() - c0, r.stats.granules_selected))
        if expect is not None and got != expect(k):
            q.put(("wrong", time.time(), 0, f"{kind} {k}: {got} != {expect(k)}"))
    if prof is not None:
        prof.disable()
        prof.dump_stats(os.path.join(profile, f"querier{wid}.w{win}.prof"))
    import resource

    # peak resident memory of the querying process (MB): caches of merged-away parts would grow it
    q.put(("rss", time.time(), 0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, wid))
    db.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--window", type=float, default=60)
    ap.add_argument("--rate", type=float, default=0.0,
                    help="inserts per second per inserting process (0: as fast as they go)")
    ap.add_argument("--profile", default=None, help="dump each querier's cProfile stats in this folder, one file per window")
    a = ap.parse_args()
    import skipidx
    from skipidx.store.commit import read_state

    work = tempfile.mkdtemp(prefix="skipidx-soak-")
    path = os.path.join(work, "db")
    db = skipidx.connect(path)
    db.sql(DDL)
    db.insert("logs", seed_table())
    tdir = os.path.join(path, "logs")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    t_start = time.time()
    stop_at = t_start + a.seconds
    procs = [ctx.Process(target=inserter, args=(path, i, a.batch, stop_at, q, a.rate)) for i in range(2)]
    procs += [ctx.Process(target=querier, args=(path, i, stop_at, q, a.profile, t_start, a.window)) for i in range(2)]
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
        ins = [e for e in events if e[0] == "insert" and lo <= e[1] < hi]
        pc = [n for t, n in parts if lo <= t < hi]
        row = {"window_s": f"{w * a.window:.0f}-{(w + 1) * a.window:.0f}", "parts_max": max(pc) if pc else None,
               "inserts": len(ins), "rows_end": SEED_ROWS + sum(e[3] for e in events if e[0] == "insert" and e[1] < hi),
               "insert_p50_ms": round(_pct(sorted(e[2] * 1000 for e in ins), 0.5) or 0, 1)}
        for kind in KINDS:
            lat = sorted(e[2] * 1000 for e in events if e[0] == kind and lo <= e[1] < hi)
            cpu = sorted(e[3] * 1000 for e in events if e[0] == kind and lo <= e[1] < hi)
            gran = [e[4] for e in events if e[0] == kind and lo <= e[1] < hi]
            if lat:
                row[kind] = {"n": len(lat), "p50": round(_pct(lat, 0.5), 1), "p95": round(_pct(lat, 0.95), 1),
                             "cpu_p50": round(_pct(cpu, 0.5), 1), "granules": round(sum(gran) / len(gran), 2)}
        if not ins and len(row) == 5:
            continue
        rows.append(row)
    for r in rows:
        print(json.dumps(r))
    total_rows = db.sql("SELECT count() FROM logs").fetchall()[0][0]
    inserted = sum(e[3] for e in events if e[0] == "insert") + SEED_ROWS
    wrong = [e[3] for e in events if e[0] == "wrong"]
    summary = {"seconds": a.seconds, "parts_max": max(n for _, n in parts), "parts_end": parts[-1][1],
               "inserts": sum(1 for e in events if e[0] == "insert"), "rows_inserted": inserted,
               "rows_in_table": total_rows, "queries": {k: sum(1 for e in events if e[0] == k) for k in KINDS},
               "wrong_answers": len(wrong), "querier_peak_rss_mb": [round(e[3]) for e in events if e[0] == "rss"],
               "load": os.getloadavg()}
    print(json.dumps(summary))
    for w in wrong[:10]:
        print("wrong:", w)
    db.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0 if summary["parts_max"] < 300 and total_rows == inserted and not wrong else 1


def _pct(xs: list, p: float):
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else None


if __name__ == "__main__":
    sys.exit(main())
