"""The selective rows of bench_query.py in several interleaved rounds (skipidx / chDB / DuckDB).

    python bench/bench_lookup_rounds.py --dir /tmp/bq10 --rounds 5 --repeat 11
    python bench/bench_lookup_rounds.py --dir /tmp/bq10 --only "trace_id IN (5)" --rounds 9

Reuses the tables a ``bench_query.py --dir DIR`` run left in DIR (same rows and seed;
nothing is generated or loaded here) and the same queries. Each round times every
query with ``interleaved_median_ms`` (skipidx, chDB, DuckDB on the Parquet file, one
after the other, ``--repeat`` times, after one warm-up each); the figure per query is
the median over rounds of each round's ratio, so a ratio near a target is judged on
several rounds, not one. Answers are checked against chDB's and DuckDB's first.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from bench_query import interleaved_median_ms  # noqa: E402
from skipidx.apps import datagen  # noqa: E402


def queries(parquet: str, rows: int) -> list[tuple[str, str, str]]:
    """(label, skipidx/chDB WHERE, DuckDB WHERE) of bench_query.py's selective rows, same constants."""
    rng = np.random.default_rng(7)
    pick_rows = [b + int(i) for b in range(0, rows, 1_000_000)
                 for i in rng.integers(0, min(1_000_000, rows - b), 3)]
    ids = pq.read_table(parquet, columns=["trace_id", "user_id"]).take(pick_rows)
    traces = ids.column("trace_id").to_pylist()
    users = [u for u in ids.column("user_id").to_pylist() if u >= 200][:10]
    tr1 = traces[len(traces) // 2]
    tr5 = ", ".join(f"'{t}'" for t in traces[:5])
    us10 = ", ".join(str(u) for u in users)
    rare, absent = datagen.RARE_TOKEN, datagen.ABSENT_TOKEN
    return [
        ("hasToken rare", f"hasToken(msg, '{rare}')", f"msg LIKE '%{rare}%'"),
        ("hasToken absent", f"hasToken(msg, '{absent}')", f"msg LIKE '%{absent}%'"),
        ("LIKE '%rare%'", f"msg LIKE '%{rare}%'", f"msg LIKE '%{rare}%'"),
        ("trace_id =", f"trace_id = '{tr1}'", f"trace_id = '{tr1}'"),
        ("trace_id IN (5)", f"trace_id IN ({tr5})", f"trace_id IN ({tr5})"),
        ("user_id IN (10)", f"user_id IN ({us10})", f"user_id IN ({us10})"),
        ("multiSearchAny", f"multiSearchAny(msg, ['{rare}', '{absent}'])",
         f"(msg LIKE '%{rare}%' OR msg LIKE '%{absent}%')"),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="a bench_query.py --dir work directory")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--only", action="append", default=None, help="a query label (repeatable)")
    ap.add_argument("--no-duckdb", action="store_true", help="skip DuckDB (its scans take most of a round)")
    args = ap.parse_args(argv)

    import duckdb
    from chdb import session as chs

    parquet = os.path.join(args.dir, "logs.parquet")
    rows = pq.read_metadata(parquet).num_rows
    db = skipidx.connect(os.path.join(args.dir, "skipidx"))
    ch = chs.Session(os.path.join(args.dir, "chdb"))
    duck = duckdb.connect()
    every = queries(parquet, rows)
    qs = [q for q in every if args.only is None or q[0] in args.only]
    if not qs:
        ap.error(f"no query labelled {args.only}")
    # every query's answer is checked against chDB's, the ones timed against DuckDB's too (the
    # process then has what bench_query.py's has when it times a row: the text queries ran)
    for label, where, dwhere in every:
        q = f"SELECT count() FROM logs WHERE {where}"
        n = db.sql(q).fetchall()[0][0]
        n_ch = int(str(ch.query(q, "TSV")).strip())
        assert n == n_ch, f"{label}: skipidx {n} != chDB {n_ch}"
        if not args.no_duckdb and (label, where, dwhere) in qs:
            n_d = duck.execute(f"SELECT count(*) FROM read_parquet('{parquet}') WHERE {dwhere}").fetchone()[0]
            assert n == n_d, f"{label}: skipidx {n} != DuckDB {n_d}"
    print(f"{rows:,} rows; {args.rounds} rounds x {args.repeat} interleaved runs; load {os.getloadavg()}", flush=True)
    per: dict[str, list[tuple[float, float, float | None]]] = {label: [] for label, _, _ in qs}
    for r in range(args.rounds):
        t0 = time.time()
        for label, where, dwhere in qs:
            q = f"SELECT count() FROM logs WHERE {where}"
            dq = f"SELECT count(*) FROM read_parquet('{parquet}') WHERE {dwhere}"
            fns = [lambda: db.sql(q), lambda: ch.query(q, "TSV")]
            if not args.no_duckdb:
                fns.append(lambda: duck.execute(dq).fetchone())
            t = interleaved_median_ms(fns, args.repeat)
            per[label].append((t[0], t[1], t[2] if len(t) > 2 else None))
        print(f"round {r + 1}: {time.time() - t0:.1f} s, load {os.getloadavg()[0]:.2f}: " + "; ".join(
            f"{label} {v[-1][0]:.2f}/{v[-1][1]:.2f} ms {v[-1][1] / v[-1][0]:.2f}x" for label, v in per.items()),
            flush=True)
    print(f"\nload average at the end {os.getloadavg()}")
    print(f"{'query':18s} {'skipidx ms':>10s} {'chDB ms':>8s} {'DuckDB ms':>9s}  {'vs chDB per round':30s} "
          f"{'median':>7s} {'min':>6s} {'vs Duck':>8s}")
    for label, v in per.items():
        ratios = [c / s for s, c, _ in v]
        duck_r = [d / s for s, _c, d in v if d is not None]
        print(f"{label:18s} {statistics.median(s for s, _, _ in v):10.2f} {statistics.median(c for _, c, _ in v):8.2f} "
              f"{statistics.median(d for *_, d in v) if duck_r else float('nan'):9.1f}  "
              f"{' '.join(f'{x:.2f}' for x in ratios):30s} {statistics.median(ratios):6.2f}x {min(ratios):5.2f}x "
              f"{statistics.median(duck_r) if duck_r else float('nan'):7.1f}x")
    db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
