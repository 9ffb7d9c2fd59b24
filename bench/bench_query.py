"""Query benchmark: skipidx vs chDB (same data, same indexes) vs DuckDB on Parquet.

    python bench/bench_query.py            # 10M log rows (skipidx.datagen)
    python bench/bench_query.py --quick    # 1M rows
    python bench/bench_query.py --rows 3000000 --repeat 7

One run loads the same seeded log table into skipidx (ClickHouse's index DDL
plus the adaptive ``sbbf`` indexes), into chDB (the same ClickHouse indexes,
loaded from a Parquet file) and writes that Parquet file for DuckDB. For
each query it prints the median latency of each engine, the granules kept by
skipidx (all indexes; and the ClickHouse-equivalent index alone) and by chDB
(from ``EXPLAIN indexes = 1``), the ideal (granules holding a match, from a
full scan), and ratios. A plain pyarrow scan is the baseline of the
non-selective query: pruning must not cost when it cannot help.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from skipidx import datagen  # noqa: E402

CH_INDEXES = """,
    INDEX msg_tokens msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1,
    INDEX msg_ngrams msg TYPE ngrambf_v1(3, 65536, 2, 0) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1"""
OUR_EXTRA = """,
    INDEX msg_tokens_auto msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX msg_ngrams_auto msg TYPE sbbf('ngram', n = 4, fpp = 0.01) GRANULARITY 1,
    INDEX trace_auto trace_id TYPE sbbf('value', fpp = 0.001) GRANULARITY 1,
    INDEX user_auto user_id TYPE sbbf('value', fpp = 0.001) GRANULARITY 1"""


def median_ms(fn, repeat: int) -> float:
    fn()  # warm-up (JIT, caches, file handles)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def chdb_granules(sess, where: str) -> int | None:
    text = str(sess.query(f"EXPLAIN indexes = 1 SELECT count() FROM logs WHERE {where}", "TSV"))
    m = re.search(r"Parts: \d+ \| Granules: (\d+)", text.replace("\\n", "\n"))
    return int(m.group(1)) if m else None


def ideal_granules(db, where: str) -> int:
    """Granules holding at least one row that satisfies `where` (a full scan with the exact evaluator)."""
    from skipidx.execution.evaluate import where_mask
    from skipidx.planner.binder import bind_where
    from skipidx.planner.bound import columns_of
    from skipidx.sql.parser import parse_expression

    snap = db.catalog.table("logs").snapshot()
    bound = bind_where(snap.meta, parse_expression(where))
    cols = [c for c in snap.meta.column_names if c in columns_of(bound)]
    total = 0
    for p in snap.parts:
        t = p.read(cols)
        m = where_mask(bound, t)
        hit = np.ones(t.num_rows, bool) if m is None else m.to_numpy(zero_copy_only=False)
        g = np.searchsorted(p.marks, np.flatnonzero(hit), side="right") - 1
        total += int(np.unique(g).shape[0])
    snap.close()
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true", help="1M rows")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed)")
    args = ap.parse_args(argv)
    rows = 1_000_000 if args.quick else args.rows

    import chdb  # noqa: F401
    import duckdb
    from chdb import session as chs

    work = args.dir or tempfile.mkdtemp(prefix="skipidx-bench-")
    os.makedirs(work, exist_ok=True)
    parquet = os.path.join(work, "logs.parquet")
    try:
        print(f"generating {rows:,} rows (seed {args.seed}) ...", flush=True)
        t0 = time.perf_counter()
        writer = None
        picks: dict[str, list] = {"trace": [], "user": []}
        rng = np.random.default_rng(7)
        db = skipidx.connect(os.path.join(work, "skipidx"))
        db.sql("DROP TABLE IF EXISTS logs")
        db.sql(datagen.SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES + OUR_EXTRA))
        t_ins = 0.0
        for batch in datagen.generate(rows, args.seed, batch_rows=1_000_000):
            if writer is None:
                writer = pq.ParquetWriter(parquet, batch.schema)
            writer.write_batch(batch)
            idx = rng.integers(0, batch.num_rows, 3)
            picks["trace"] += [batch.column("trace_id")[int(i)].as_py() for i in idx]
            picks["user"] += [batch.column("user_id")[int(i)].as_py() for i in idx]
            ti = time.perf_counter()
            db.insert("logs", batch)
            t_ins += time.perf_counter() - ti
        writer.close()
        print(f"  generated + written in {time.perf_counter() - t0 - t_ins:.1f} s; "
              f"skipidx insert (8 indexes) {t_ins:.1f} s", flush=True)

        t0 = time.perf_counter()
        ch = chs.Session(os.path.join(work, "chdb"))
        ch.query("DROP TABLE IF EXISTS logs")
        ch.query(datagen.SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES))
        ch.query(f"INSERT INTO logs SELECT * FROM file('{parquet}', Parquet)")
        ch.query("OPTIMIZE TABLE logs FINAL")
        print(f"  chDB load {time.perf_counter() - t0:.1f} s", flush=True)
        duck = duckdb.connect()

        # user ids outside the heavy range (1..199) make IN selective
        users = [u for u in picks["user"] if u >= 200][:10]
        traces = picks["trace"]
        tr1 = traces[len(traces) // 2]
        tr5 = ", ".join(f"'{t}'" for t in traces[:5])
        us10 = ", ".join(str(u) for u in users)
        rare, absent, freq = datagen.RARE_TOKEN, datagen.ABSENT_TOKEN, datagen.FREQUENT_TOKEN
        queries = [
            # (label, skipidx/chDB WHERE, DuckDB WHERE, CH-equivalent index, adaptive sbbf index)
            ("hasToken rare", f"hasToken(msg, '{rare}')", f"msg LIKE '%{rare}%'", "msg_tokens", "msg_tokens_auto"),
            ("hasToken absent", f"hasToken(msg, '{absent}')", f"msg LIKE '%{absent}%'", "msg_tokens",
             "msg_tokens_auto"),
            ("LIKE '%rare%'", f"msg LIKE '%{rare}%'", f"msg LIKE '%{rare}%'", "msg_ngrams", "msg_ngrams_auto"),
            ("trace_id =", f"trace_id = '{tr1}'", f"trace_id = '{tr1}'", "trace_bf", "trace_auto"),
            ("trace_id IN (5)", f"trace_id IN ({tr5})", f"trace_id IN ({tr5})", "trace_bf", "trace_auto"),
            ("user_id IN (10)", f"user_id IN ({us10})", f"user_id IN ({us10})", "user_bf", "user_auto"),
            ("multiSearchAny", f"multiSearchAny(msg, ['{rare}', '{absent}'])",
             f"(msg LIKE '%{rare}%' OR msg LIKE '%{absent}%')", "msg_ngrams", "msg_ngrams_auto"),
            ("non-selective", f"msg LIKE '%{freq}%'", f"msg LIKE '%{freq}%'", "msg_ngrams", "msg_ngrams_auto"),
        ]
        res = []
        for label, where, dwhere, ch_index, auto_index in queries:
            q = f"SELECT count() FROM logs WHERE {where}"
            ours = db.sql(q)
            n_ours = ours.fetchall()[0][0]
            n_ch = int(str(ch.query(q, "TSV")).strip())
            n_duck = duck.execute(f"SELECT count(*) FROM read_parquet('{parquet}') WHERE {dwhere}").fetchone()[0]
            assert n_ours == n_ch, f"{label}: skipidx {n_ours} != chDB {n_ch}"
            st = ours.stats
            t_ours = median_ms(lambda: db.sql(q), args.repeat)
            t_ch = median_ms(lambda: ch.query(q, "TSV"), args.repeat)
            t_duck = median_ms(lambda: duck.execute(
                f"SELECT count(*) FROM read_parquet('{parquet}') WHERE {dwhere}").fetchone(), args.repeat)
            g_ch = chdb_granules(ch, where)
            ideal = ideal_granules(db, where)
            alone = st.index(ch_index).granules_after
            auto = st.index(auto_index).granules_after
            res.append((label, n_ours, n_duck, t_ours, t_ch, t_duck, st.granules_selected, alone, auto, g_ch, ideal,
                        st.granules_total))
            print(f"  {label:18s} rows {n_ours:>8,}  skipidx {t_ours:8.1f} ms  chDB {t_ch:8.1f} ms  "
                  f"DuckDB {t_duck:8.1f} ms  granules {st.granules_selected}/{st.granules_total} "
                  f"({ch_index} alone {alone}, {auto_index} alone {auto}, chDB {g_ch}, ideal {ideal})", flush=True)

        # plain pyarrow scan of the non-selective query (same predicate, all rows)
        def pyarrow_scan():
            t = pq.read_table(parquet, columns=["msg"])
            return pc.sum(pc.match_substring(t.column("msg"), freq)).as_py()

        t_pa = median_ms(pyarrow_scan, args.repeat)

        print()
        print(f"{rows:,} rows, {res[0][-1]} granules of 8192 rows; median of {args.repeat} runs")
        hdr = (f"{'query':18s} {'rows':>8s} {'skipidx ms':>10s} {'chDB ms':>8s} {'DuckDB ms':>9s} "
               f"{'vs chDB':>8s} {'vs Duck':>8s} {'kept':>6s} {'CH-idx':>6s} {'chDB':>6s} {'sbbf':>6s} "
               f"{'ideal':>6s} {'sbbf/ideal':>10s}")
        print(hdr)
        print("-" * len(hdr))
        for (label, n, nd, to, tc, td, kept, alone, auto, gch, ideal, total) in res:
            ratio_ideal = f"{auto / ideal:.2f}" if ideal else ("-" if auto == 0 else "inf")
            print(f"{label:18s} {n:>8,} {to:>10.1f} {tc:>8.1f} {td:>9.1f} {tc / to:>7.2f}x {td / to:>7.1f}x "
                  f"{kept:>6d} {alone:>6d} {gch if gch is not None else -1:>6d} {auto:>6d} {ideal:>6d} "
                  f"{ratio_ideal:>10s}")
        ns = res[-1]
        print(f"\nnon-selective: skipidx {ns[3]:.1f} ms vs plain pyarrow scan {t_pa:.1f} ms "
              f"(ratio {ns[3] / t_pa:.2f}, target <= 1.5)")
        print("'vs chDB' / 'vs Duck' = their latency / skipidx latency (higher is better for skipidx); "
              "'kept' = granules skipidx kept with all its indexes; 'CH-idx' = kept by the ClickHouse-equivalent "
              "index alone (same DDL and bytes as chDB's); 'sbbf' = kept by the adaptive sbbf index alone")
        db.close()
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
