"""What a querying process pays after each insert, as the table grows (issue 13's
flat soak latency, without the soak's scheduling noise).

    python bench/catchup.py [--big 0 3 9] [--inserts 60]

For each --big k: a table of the soak's schema (bench/soak.py) with 2,000 seed
rows and k parts of 300,000 rows (background merges off); then --inserts
100-row inserts, each followed by the soak's lookup and window queries in
another Database of the same process (its own caches: the inserts write,
they do not read). Prints per k the CPU time p50 (ms) of the first query after
an insert (it catches up on the new part) and of warm repeats, per query kind.
Flat means the first-after-insert figures do not grow with k.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak import DDL, SEED_TS, seed_table  # noqa: E402

import skipidx  # noqa: E402

QUERIES = {"lookup": "SELECT count() FROM logs WHERE trace = 'seed7'",
           "window": f"SELECT count() FROM logs WHERE svc = 's1' AND ts >= {SEED_TS}"}


def _batch(rng, n0: int, n: int) -> pa.Table:
    ids = np.arange(n0, n0 + n, dtype=np.uint64)
    return pa.table({"ts": pa.array(ids), "svc": pa.array([f"s{i % 5}" for i in range(n)]),
                     "trace": pa.array([f"t{int(x)}" for x in rng.integers(0, 10**6, n)]),
                     "msg": pa.array([f"req w{int(x)} done" for x in rng.integers(0, 5000, n)])})


def run(big: int, inserts: int) -> dict:
    rng = np.random.default_rng(0)
    work = tempfile.mkdtemp(prefix="skipidx-catchup-")
    path = os.path.join(work, "db")
    with skipidx.connect(path) as db:
        db.sql(DDL + " SETTINGS background_merges = 0")
        db.insert("logs", seed_table())
        for k in range(big):
            db.insert("logs", _batch(rng, 10**9 + k * 300_000, 300_000))
    q = skipidx.connect(path)
    w = skipidx.connect(path)
    first: dict[str, list[float]] = {k: [] for k in QUERIES}
    warm: dict[str, list[float]] = {k: [] for k in QUERIES}
    for i in range(inserts):
        w.insert("logs", _batch(rng, i * 100, 100))
        time.sleep(0.02)   # the insert's threads are done before the clock starts
        for kind, sql in QUERIES.items():
            for rep in range(4):
                c0 = time.process_time()
                n = q.sql(sql).fetchall()[0][0]
                (first if rep == 0 else warm)[kind].append(time.process_time() - c0)
                assert n == (1 if kind == "lookup" else 400), (kind, n)
    q.close()
    w.close()
    shutil.rmtree(work, ignore_errors=True)
    out = {"big_parts": big, "rows": 2000 + big * 300_000 + inserts * 100, "inserts": inserts}
    for kind in QUERIES:
        out[kind] = {"first_cpu_p50_ms": round(float(np.median(first[kind][5:])) * 1000, 2),
                     "warm_cpu_p50_ms": round(float(np.median(warm[kind])) * 1000, 2)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", type=int, nargs="+", default=[0, 3, 9])
    ap.add_argument("--inserts", type=int, default=60)
    a = ap.parse_args()
    for big in a.big:
        r = run(big, a.inserts)
        r["load"] = round(os.getloadavg()[0], 2)
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
