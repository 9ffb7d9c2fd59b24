"""db.scan into DuckDB vs DuckDB over the same table's Parquet files, and
fetch_record_batch streaming vs arrow() of a large SELECT.

    flock /tmp/bench.lock .venv/bin/python bench/bench_scan_duckdb.py [ROWS]

Prints medians of interleaved runs: a rare-token query answered by skipidx's
pruned scan handed to DuckDB (GROUP BY there), DuckDB reading every data file
of the table with LIKE, and the answers compared.
"""
from __future__ import annotations

import glob
import os
import statistics
import sys
import time

import duckdb

import skipidx
from skipidx.apps.demo import build_demo_table


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    db = skipidx.connect()
    build_demo_table(db, rows, quiet=True)
    files = sorted(glob.glob(os.path.join(db.path, "logs", "**", "*.parquet"), recursive=True))
    con = duckdb.connect()
    q_pruned = "SELECT service, count(*) AS n FROM r GROUP BY service ORDER BY service"
    q_duck = (f"SELECT service, count(*) AS n FROM read_parquet({files!r}) "
              "WHERE regexp_matches(msg, '(^|[^A-Za-z0-9])kraken([^A-Za-z0-9]|$)') GROUP BY service ORDER BY service")
    t_s, t_d, t_stream, t_whole = [], [], [], []
    for _ in range(7):
        t0 = time.perf_counter()
        r = db.scan("logs", where="hasToken(msg, 'kraken')", columns=["service"])
        a = con.sql(q_pruned).fetchall()
        t_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = con.sql(q_duck).fetchall()
        t_d.append(time.perf_counter() - t0)
        assert a == b, (a[:3], b[:3])
        t0 = time.perf_counter()
        n = sum(x.num_rows for x in db.sql("SELECT id, msg FROM logs WHERE id % 2 = 0").fetch_record_batch())
        t_stream.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        m = db.sql("SELECT id, msg FROM logs WHERE id % 2 = 0").arrow().num_rows
        t_whole.append(time.perf_counter() - t0)
        assert n == m
    st = db.scan_result("logs", where="hasToken(msg, 'kraken')", columns=["service"])
    st.fetch_record_batch().read_all()
    print(f"{rows:,} log rows; load: {os.getloadavg()[0]:.1f}")
    print(f"hasToken(msg, 'kraken') GROUP BY service: db.scan -> DuckDB {statistics.median(t_s) * 1000:.1f} ms "
          f"(granules {st.stats.granules_selected}/{st.stats.granules_total}); DuckDB over the {len(files)} data "
          f"files {statistics.median(t_d) * 1000:.1f} ms; same answer")
    print(f"SELECT id, msg WHERE id % 2 = 0 ({n:,} rows): fetch_record_batch {statistics.median(t_stream) * 1000:.0f} ms,"
          f" arrow() {statistics.median(t_whole) * 1000:.0f} ms")
    db.close()


if __name__ == "__main__":
    main()
