"""Cost of checking String columns for valid UTF-8 as parts are read
(store/part.check_utf8): string scans without the check, with it on row
groups already checked (every scan after the first in a process), and with
it on row groups read for the first time; interleaved in one process; best of --rounds, wall and CPU (all threads)
milliseconds.

    python bench/utf8_check.py [--rows 1000000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import numpy as np
    import pyarrow as pa

    import skipidx
    import skipidx.store.part as part

    work = tempfile.mkdtemp(prefix="skipidx-utf8-")
    db = skipidx.connect(os.path.join(work, "db"))
    db.sql("CREATE TABLE t (id UInt64, msg String, svc LowCardinality(String)) ORDER BY id "
           "SETTINGS background_merges = 0")
    rng = np.random.default_rng(0)
    n = a.rows
    db.insert("t", pa.table({"id": pa.array(np.arange(n, dtype=np.uint64)),
                             "msg": [f"GET /api/v1/items/{i} user=u{i % 977} status=200 took={i % 313}ms é"
                                     for i in rng.integers(0, 10 ** 9, n).tolist()],
                             "svc": [f"svc{i % 7}" for i in range(n)]}))
    queries = {"like": "SELECT count() FROM t WHERE msg LIKE '%u5%'",
               "max": "SELECT max(length(msg)) FROM t",
               "lowcard": "SELECT count() FROM t WHERE svc = 'svc3'"}
    real = part.check_utf8
    best: dict = {}
    for _ in range(a.rounds):
        for mode in ("check", "first", "none"):
            part.check_utf8 = real if mode != "none" else (lambda *args: None)
            for name, sql in queries.items():
                if mode == "first":
                    part._UTF8_CHECKED.clear()   # as the first scan of these parts in a process
                t0, c0 = time.perf_counter(), time.process_time()
                db.sql(sql).fetchall()
                ms = (time.perf_counter() - t0) * 1000
                cpu = (time.process_time() - c0) * 1000
                k = (name, mode)
                best[k] = min(best.get(k, ms), ms)
                best[k + ("cpu",)] = min(best.get(k + ("cpu",), cpu), cpu)
    part.check_utf8 = real
    for name in queries:
        c, f, o = best[(name, "check")], best[(name, "first")], best[(name, "none")]
        print(json.dumps({"query": name, "rows": n, "none_ms": round(o, 1), "checked_before_ms": round(c, 1),
                          "ratio": round(c / o, 3), "first_check_ms": round(f, 1), "first_ratio": round(f / o, 3),
                          "cpu_ms": {m: round(best[(name, m, "cpu")], 1) for m in ("none", "check", "first")}}))
    print(json.dumps({"load": os.getloadavg()}))
    db.close()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
