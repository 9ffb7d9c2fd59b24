"""Wide results of the id lookups: skipidx (PREWHERE on and off) vs chDB.

    python bench/bench_select_star.py                   # 1M log rows (skipidx.apps.datagen)
    python bench/bench_select_star.py --rows 10000000 --dir /tmp/ss --reuse

Same data and DDL as bench/bench_query.py (one merged part each side). For
``SELECT *`` and a 3-column projection of the trace_id = / trace_id IN /
user_id IN lookups it prints, in one interleaved run, the median ms of
skipidx with ``optimize_move_to_prewhere = 1`` (the default: the WHERE
columns are read first, the others only for granules with a match), of
skipidx with it off (every column of every kept granule), and of chDB
(result as an Arrow table on both sides), the ratios, and skipidx's
``bytes_read`` both ways.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402
from bench_query import CH_INDEXES, OUR_EXTRA, SCHEMA_SQL, _chdb_rows, interleaved_median_ms  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--load-only", action="store_true", help="load the data (into --dir) and stop: the timed "
                    "part then runs with --reuse (e.g. under flock /tmp/bench.lock)")
    ap.add_argument("--id-indexes-only", action="store_true",
                    help="skipidx gets ClickHouse's DDL plus the adaptive id indexes only (the adaptive msg "
                         "indexes answer none of these lookups and cost most of the load)")
    args = ap.parse_args(argv)
    from chdb import session as chs

    work = args.dir or tempfile.mkdtemp(prefix="skipidx-ss-")
    os.makedirs(work, exist_ok=True)
    parquet = os.path.join(work, "logs.parquet")
    try:
        db = skipidx.connect(os.path.join(work, "skipidx"))
        reuse = (args.reuse and os.path.exists(parquet) and "logs" in db.tables()
                 and pq.read_metadata(parquet).num_rows == args.rows)
        if not reuse:
            print(f"generating {args.rows:,} rows ...", flush=True)
            db.sql("DROP TABLE IF EXISTS logs")
            extra = OUR_EXTRA
            if args.id_indexes_only:
                extra = ",\n" + ",\n".join(x for x in OUR_EXTRA.split(",\n") if "trace_auto" in x or "user_auto" in x)
            db.sql(SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES + extra))
            writer = None
            for batch in datagen.generate(args.rows, args.seed, batch_rows=1_000_000):
                if writer is None:
                    writer = pq.ParquetWriter(parquet, batch.schema)
                writer.write_batch(batch)
                db.insert("logs", batch)
            writer.close()
            tbl = db.catalog.table("logs")
            if len(tbl.state.parts) > 1:
                tbl.optimize(final=True, max_part_rows=args.rows)
        ch = chs.Session(os.path.join(work, "chdb"))
        if not (reuse and _chdb_rows(ch) == args.rows):
            ch.query("DROP TABLE IF EXISTS logs")
            ch.query(SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES))
            ch.query(f"INSERT INTO logs SELECT * FROM file('{parquet}', Parquet)")
            ch.query("OPTIMIZE TABLE logs FINAL")
        if args.load_only:
            print("loaded", flush=True)
            return 0

        rng = np.random.default_rng(7)
        ids = pq.read_table(parquet, columns=["trace_id", "user_id"]).take(rng.integers(0, args.rows, 30))
        traces = ids.column("trace_id").to_pylist()
        users = [u for u in ids.column("user_id").to_pylist() if u >= 200][:10]
        tr5 = ", ".join(f"'{t}'" for t in traces[:5])
        lookups = [("trace_id =", f"trace_id = '{traces[10]}'"),
                   ("trace_id IN (5)", f"trace_id IN ({tr5})"),
                   ("user_id IN (10)", f"user_id IN ({', '.join(map(str, users))})")]
        print(f"rows {args.rows:,}, repeat {args.repeat}, load {os.getloadavg()[0]:.1f}")
        print(f"{'query':34} {'prewhere':>9} {'off':>8} {'chDB':>8} {'off/pw':>7} {'chDB/pw':>8} "
              f"{'bytes pw':>9} {'bytes off':>10}")
        for label, where in lookups:
            for cols in ("*", "ts, service, msg"):
                q = f"SELECT {cols} FROM logs WHERE {where}"
                q_off = q + " SETTINGS optimize_move_to_prewhere = 0"
                a, b = db.sql(q), db.sql(q_off)
                c = ch.query(q, "ArrowTable")
                assert a.to_arrow().num_rows == b.to_arrow().num_rows == c.num_rows, label
                t_pw, t_off, t_ch = interleaved_median_ms(
                    [lambda: db.sql(q).to_arrow(), lambda: db.sql(q_off).to_arrow(),
                     lambda: ch.query(q, "ArrowTable")], args.repeat)
                name = f"SELECT {'*' if cols == '*' else '3 cols'} {label}"
                print(f"{name:34} {t_pw:8.2f}  {t_off:7.2f}  {t_ch:7.2f}  {t_off / t_pw:6.2f}x "
                      f"{t_ch / t_pw:7.2f}x {a.stats.bytes_read:9d} {b.stats.bytes_read:10d}", flush=True)
        print(f"load after {os.getloadavg()[0]:.1f}")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"({time.perf_counter() - t0:.0f} s)")
    sys.exit(rc)
