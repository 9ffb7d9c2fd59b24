"""Peak RSS of the bounded-memory paths (issue 13), each in its own process:

  infile   INSERT ... FROM INFILE of an N-row Parquet file (default 10M rows,
           row groups of 128k rows; ids + ~40-byte messages, a tokenbf index)
  orchain  a WHERE of K `id = c` terms OR-ed (default 100k) and of K AND-ed `id != c`
  cli      `skipidx sql DB "SELECT * FROM t LIMIT N"` (the CLI prints 200 rows)

    python bench/mem_rss.py [infile|orchain|cli ...] [--rows N] [--terms K]

Prints peak RSS (ru_maxrss) before and after the measured step, seconds and load.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

CHILD = textwrap.dedent("""
    import json, sys, time
    import skipidx
    def rss():   # VmHWM: this process's own peak (ru_maxrss carries the parent's over fork+exec)
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    db = skipidx.connect(sys.argv[1])
    before = rss(); t0 = time.time()
    sql = open(sys.argv[2][1:]).read() if sys.argv[2].startswith("@") else sys.argv[2]
    r = db.sql(sql)
    out = r.fetchall() if r.columns else r.message
    print(json.dumps({"rss_before_mb": round(before), "rss_peak_mb": round(rss()), "s": round(time.time() - t0, 1),
                      "result": str(out)[:80]}))
""")


def make_parquet(path: str, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    words = np.array(["alpha", "beta", "gamma", "delta", "error", "timeout", "user", "request", "ok", "db"])
    rng = np.random.default_rng(1)
    with pq.ParquetWriter(path, pa.schema([("id", pa.uint64()), ("msg", pa.string())])) as w:
        for off in range(0, rows, 1 << 20):
            n = min(1 << 20, rows - off)
            idx = rng.integers(0, len(words), (n, 4))
            msg = pa.array([" ".join(r) for r in words[idx].tolist()])
            w.write_table(pa.table({"id": pa.array(np.arange(off, off + n, dtype=np.uint64)), "msg": msg}),
                          row_group_size=128 * 1024)


def child(db: str, sql: str) -> dict:
    if len(sql) > 10_000:   # beyond what argv takes: through a file
        f = os.path.join(os.path.dirname(db), "q.sql")
        with open(f, "w") as fh:
            fh.write(sql)
        sql = "@" + f
    out = subprocess.run([sys.executable, "-c", CHILD, db, sql], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr[-400:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="*", default=["infile", "orchain", "cli"])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--terms", type=int, default=100_000)
    ap.add_argument("--chain-rows", type=int, default=1_000_000)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="skipidx-mem-")
    db = os.path.join(work, "db")
    import skipidx

    d = skipidx.connect(db)
    d.sql("CREATE TABLE t (id UInt64, msg String, INDEX tk msg TYPE tokenbf_v1(4096, 3, 0) GRANULARITY 1) "
          "ORDER BY id")
    d.close()
    pq_path = os.path.join(work, "in.parquet")
    t0 = time.time()
    make_parquet(pq_path, a.rows)
    print(f"data: {a.rows} rows, {os.path.getsize(pq_path) / 2**20:.0f} MiB Parquet ({time.time() - t0:.0f} s)")
    res = {}
    if "infile" in a.which or "cli" in a.which:
        res["infile"] = child(db, f"INSERT INTO t FROM INFILE '{pq_path}' FORMAT Parquet")
        print("infile", res["infile"], "load", os.getloadavg(), flush=True)
    if "orchain" in a.which:
        # a table of --chain-rows rows (a 100k-term AND is 100k comparisons of the whole column)
        import numpy as np
        import pyarrow as pa

        db2 = os.path.join(work, "db2")
        d = skipidx.connect(db2)
        d.sql("CREATE TABLE t (id UInt64) ORDER BY id")
        d.insert("t", pa.table({"id": pa.array(np.arange(a.chain_rows, dtype=np.uint64))}))
        d.close()
        db = db2
        k = a.terms
        ors = " OR ".join(f"id = {i * 97}" for i in range(k))
        res["orchain"] = child(db, f"SELECT count() FROM t WHERE {ors}")
        print("orchain", k, res["orchain"], "load", os.getloadavg(), flush=True)
        ands = " AND ".join(f"id != {i * 97}" for i in range(k))
        res["andchain"] = child(db, f"SELECT count() FROM t WHERE {ands}")
        print("andchain", k, res["andchain"], "load", os.getloadavg(), flush=True)
    if "cli" in a.which:
        t0 = time.time()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "skipidx", "sql", os.path.join(work, "db"),
                              "SELECT * FROM t LIMIT 5000000", "--format", "PrettyCompact"],
                             capture_output=True, text=True)
        res["cli"] = {"rss_peak_mb": round(int(out.stderr.strip().splitlines()[-1]) / 1024)
                      if out.stderr.strip().splitlines()[-1].isdigit() else None,
                      "s": round(time.time() - t0, 1), "rc": out.returncode, "stdout_lines": out.stdout.count("\n")}
        print("cli", res["cli"], "load", os.getloadavg(), flush=True)
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
