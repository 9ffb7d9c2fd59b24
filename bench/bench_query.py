"""Query benchmark: skipidx vs chDB (same data, same indexes) vs DuckDB on Parquet.

    python bench/bench_query.py            # 10M log rows (skipidx.apps.datagen)
    python bench/bench_query.py --quick    # 1M rows
    python bench/bench_query.py --rows 3000000 --repeat 7
    python bench/bench_query.py --dir /tmp/qb --reuse   # reuse the data a run with --dir left

One run loads the same seeded log table into skipidx (ClickHouse's index DDL
plus the adaptive ``sbbf`` indexes), into chDB (the same ClickHouse indexes,
loaded from a Parquet file) and writes that Parquet file for DuckDB. For
each query it prints the median latency of each engine, the granules kept by
skipidx (all indexes; and the ClickHouse-equivalent index alone) and by chDB
(from ``EXPLAIN indexes = 1``), the ideal (granules holding a match, from a
full scan), and ratios. A plain pyarrow scan is the baseline of the
non-selective query: pruning must not cost when it cannot help.

Layout: both engines query one merged part (chDB after ``OPTIMIZE TABLE
logs FINAL``, skipidx after ``optimize(final=True)`` into one part), with
8192-row granules.

Codecs: the id columns (trace_id, user_id) are declared ``CODEC(LZ4)`` in the
DDL both skipidx and chDB get (ClickHouse's default codec is LZ4 anyway;
skipidx's default is the table's ``compression`` setting, lz4 too). skipidx
stores them as Parquet LZ4_RAW. DuckDB scans the Parquet file this script
writes with pyarrow's defaults (Snappy for every column); for the id queries
it is also timed on a copy of the id columns compressed with LZ4_RAW, so the
ratio is shown against both.
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
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402

#: The log table's DDL with CODEC(LZ4) on the id columns (same text for skipidx and chDB).
SCHEMA_SQL = (datagen.SCHEMA_SQL
              .replace("    trace_id String,\n", "    trace_id String CODEC(LZ4),\n")
              .replace("    user_id UInt64,\n", "    user_id UInt64 CODEC(LZ4),\n"))
assert SCHEMA_SQL.count("CODEC(LZ4)") == 2, "datagen.SCHEMA_SQL changed: update the CODEC edit"
ID_COLUMNS = ("trace_id", "user_id")

CH_INDEXES = """,
    INDEX msg_tokens msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1,
    INDEX msg_ngrams msg TYPE ngrambf_v1(3, 65536, 2, 0) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1"""
OUR_EXTRA = """,
    INDEX msg_tokens_auto msg TYPE sbbf('token', fpp = 0.005) GRANULARITY 1,
    INDEX msg_ngrams_auto msg TYPE sbbf('ngram', n = 4, min_n = 3, fpp = 0.01) GRANULARITY 1,
    INDEX trace_auto trace_id TYPE sbbf('value', fpp = 0.00002) GRANULARITY 1,
    INDEX user_auto user_id TYPE sbbf('value', fpp = 0.0001) GRANULARITY 1"""
#: The fpp of each adaptive index is chosen for its lookups: a lookup probes
#: every granule's filter, so it expects (values looked up) x (granules
#: without a match) x fpp false-positive granules on top of the true ones.
#: - user_id, fpp = 0.0001: with ~1200 granules a one-value lookup at
#:   0.001 already expects 1.2 extra granules; 0.0001 ~= 1 / (8 x granules)
#:   expects ~0.12 per value, next to the ~4 granules a user's rows fall in
#:   (kept/ideal ~1.03), for ~1.6x the bytes of fpp 0.001 (26 vs 17 bits per
#:   distinct value; ClickHouse's bloom_filter(0.025) uses ~8.6).
#: - trace_id, fpp = 0.00002 ~= 1 / (40 x granules): a trace's rows sit in ONE
#:   granule, so any false positive doubles a lookup's granules. At 0.0001,
#:   11 % of 300 random lookups kept 2 (mean kept/ideal 1.11); at 0.00002 a
#:   lookup expects 0.024 extra granules, for 36 vs 26 bits per distinct value
#:   (+2.6 MiB here). The bench prints the mean over many lookups, not just
#:   the one drawn for the table.
#: - tokens, fpp = 0.005: a rare token in ~35 of ~1200 granules expects 12
#:   extra granules at 0.01 (1.34x, with a binomial spread that reaches 1.5x;
#:   this data set's rare token drew 22 = 1.63x) and 6 at 0.005, for +16 %
#:   bytes (41 vs 35 KB per granule; tokenbf_v1 here: 32 KB).
#: - ngrams stay at 0.01: a pattern needs all its n-grams, so the chance of a
#:   false positive is the product over them.
#: The bytes of every index, against chDB's, are printed at the end.


def interleaved_median_ms(fns: list, repeat: int) -> list[float]:
    """Median latency of each of `fns`, measured in rounds that run every fn once.

    On a shared machine the load changes from second to second: timing the
    engines one after the other would give each a different load. In rounds,
    every engine's samples are spread over the same stretch of time, so the
    ratios between them are fair even when the absolute figures are not.
    """
    for fn in fns:
        fn()  # warm-up (JIT, caches, file handles)
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append((time.perf_counter() - t0) * 1000)
    return [statistics.median(t) for t in times]


def chdb_granules(sess, where: str) -> int | None:
    text = str(sess.query(f"EXPLAIN indexes = 1 SELECT count() FROM logs WHERE {where}", "TSV"))
    m = re.search(r"Parts: \d+ \| Granules: (\d+)", text.replace("\\n", "\n"))
    return int(m.group(1)) if m else None


def ideal_granules(db, where: str) -> int:
    """Granules holding at least one row that satisfies `where` (a full scan with the exact evaluator)."""
    from skipidx.expr.evaluate import where_mask
    from skipidx.expr.binder import bind_where
    from skipidx.expr.visitors import columns_of
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


def lookup_sample(db, ch, column: str, values: list, indexes: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Granules kept by each of `indexes` alone, and the ideal, for ``column = v`` over every v of `values`;
    and the latency of each lookup in skipidx and in chDB (``ms_skipidx``, ``ms_chdb``).

    One lookup is one draw of a probabilistic filter: whether it keeps a false
    positive granule is luck (fpp x granules without a match). The mean of
    kept/ideal over many random lookups is what the fpp controls, so the
    bench prints it next to the single query of the table. The ideal of each
    value comes from one pass over the column (granules holding it).
    Every lookup has new constants, so nothing a repeated query could reuse
    (hashes of its constants, chDB's caches of a query) helps: the median
    latency over them is the cold-query figure next to the table's repeated one.
    Both engines' counts are compared on every lookup.
    """
    snap = db.catalog.table("logs").snapshot()
    ideal = {v: set() for v in values}
    for p in snap.parts:
        col = p.read([column]).column(0)
        rows = pc.indices_nonzero(pc.is_in(col, value_set=pa.array(values, col.type))).to_numpy()
        granules = np.searchsorted(p.marks, rows, side="right") - 1
        for v, g in zip(col.take(pa.array(rows)).to_pylist(), granules.tolist()):
            ideal[v].add((p.name, g))
    snap.close()
    out = {name: np.zeros(len(values)) for name in (*indexes, "ms_skipidx", "ms_chdb")}
    out["ideal"] = np.array([len(ideal[v]) for v in values], dtype=float)
    for i, v in enumerate(values):
        lit = f"'{v}'" if isinstance(v, str) else str(v)
        q = f"SELECT count() FROM logs WHERE {column} = {lit}"
        t0 = time.perf_counter()
        res = db.sql(q)
        t1 = time.perf_counter()
        n_ch = int(str(ch.query(q, "TSV")).strip())
        t2 = time.perf_counter()
        out["ms_skipidx"][i], out["ms_chdb"][i] = (t1 - t0) * 1000, (t2 - t1) * 1000
        n = res.fetchall()[0][0]
        assert n == n_ch, f"{q}: skipidx {n} != chDB {n_ch}"
        for name in indexes:
            out[name][i] = res.stats.index(name).granules_after
    return out


def _expected_meta(db):
    """The metadata this script's CREATE TABLE gives (to check that reused data is the same table)."""
    probe = skipidx.connect()
    try:
        probe.sql(SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES + OUR_EXTRA))
        return probe.table_meta("logs")
    finally:
        probe.close()


def _sync_indexes(db) -> bool:
    """Bring a reused table's indexes to this script's DDL (ALTER DROP / ADD +
    MATERIALIZE only the ones that differ); False if its columns differ."""
    want, have = _expected_meta(db), db.table_meta("logs")
    if have.columns != want.columns or have.order_by != want.order_by:
        return False
    w = {i.name: i.fingerprint() for i in want.indexes}
    h = {i.name: i.fingerprint() for i in have.indexes}
    ddl = {line.split()[1]: line.strip().rstrip(",") for line in (CH_INDEXES + OUR_EXTRA).splitlines()
           if line.strip().startswith("INDEX ")}
    for name in h:
        if w.get(name) != h[name]:
            print(f"  --reuse: dropping index {name} (its definition changed)", flush=True)
            db.sql(f"ALTER TABLE logs DROP INDEX {name}")
    for name in w:
        if h.get(name) != w[name]:
            t0 = time.perf_counter()
            db.sql(f"ALTER TABLE logs ADD {ddl[name]}")
            db.sql(f"ALTER TABLE logs MATERIALIZE INDEX {name}")
            print(f"  --reuse: built index {name} in {time.perf_counter() - t0:.1f} s", flush=True)
    return True


def parquet_column_bytes(paths: list[str], columns: tuple[str, ...]) -> dict[str, tuple[int, int, str]]:
    """{column: (compressed bytes, uncompressed bytes, codec(s))} summed over the files' column chunks."""
    out: dict[str, list] = {c: [0, 0, set()] for c in columns}
    for path in paths:
        md = pq.read_metadata(path)
        for rg in range(md.num_row_groups):
            g = md.row_group(rg)
            for i in range(g.num_columns):
                cc = g.column(i)
                if cc.path_in_schema in out:
                    o = out[cc.path_in_schema]
                    o[0] += cc.total_compressed_size
                    o[1] += cc.total_uncompressed_size
                    o[2].add(cc.compression)
    return {c: (a, b, "/".join(sorted(k))) for c, (a, b, k) in out.items()}


def write_id_copy(src: str, dst: str, compression: str) -> None:
    """The id columns of `src` with `compression`, row group by row group (same row groups)."""
    f = pq.ParquetFile(src)
    schema = pa.schema([f.schema_arrow.field(c) for c in ID_COLUMNS])
    with pq.ParquetWriter(dst, schema, compression=compression) as w:
        for rg in range(f.num_row_groups):
            w.write_table(f.read_row_group(rg, columns=list(ID_COLUMNS)))


def _chdb_rows(sess) -> int | None:
    try:
        return int(str(sess.query("SELECT count() FROM logs", "TSV")).strip())
    except Exception:   # no such table yet
        return None


def index_bytes(db, ch) -> list[tuple[str, int, tuple[int, int] | None]]:
    """(index, skipidx bytes on disk, chDB's (uncompressed, compressed) bytes of the same-named index or None)."""
    snap = db.catalog.table("logs").snapshot()
    ours: dict[str, int] = {}
    for p in snap.parts:
        for name, e in p.manifest["indexes"].items():
            ours[name] = ours.get(name, 0) + os.path.getsize(os.path.join(p.path, e["file"]))
    snap.close()
    theirs: dict[str, tuple[int, int]] = {}
    text = str(ch.query("SELECT name, data_uncompressed_bytes, data_compressed_bytes "
                        "FROM system.data_skipping_indices "
                        "WHERE database = currentDatabase() AND table = 'logs'", "TSV"))
    for line in text.strip().splitlines():
        name, u, c = line.split("\t")
        theirs[name] = (int(u), int(c))
    return [(n, b, theirs.get(n)) for n, b in ours.items()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true", help="1M rows")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--lookups", type=int, default=300,
                    help="random rows whose ids are looked up one by one for the mean kept/ideal")
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed)")
    ap.add_argument("--reuse", action="store_true",
                    help="with --dir: reuse the tables and Parquet file an earlier run left there "
                         "(same --rows/--seed) instead of generating and loading them again")
    args = ap.parse_args(argv)
    rows = 1_000_000 if args.quick else args.rows
    if args.reuse and args.dir is None:
        ap.error("--reuse needs --dir")

    import chdb  # noqa: F401
    import duckdb
    from chdb import session as chs

    work = args.dir or tempfile.mkdtemp(prefix="skipidx-bench-")
    os.makedirs(work, exist_ok=True)
    parquet = os.path.join(work, "logs.parquet")
    try:
        batch_rows = 1_000_000
        # the rows whose ids the id queries look up: 3 random rows of every generated batch
        rng = np.random.default_rng(7)
        pick_rows = [b + int(i) for b in range(0, rows, batch_rows)
                     for i in rng.integers(0, min(batch_rows, rows - b), 3)]
        db = skipidx.connect(os.path.join(work, "skipidx"))
        reuse = (args.reuse and os.path.exists(parquet) and "logs" in db.tables()
                 and pq.read_metadata(parquet).num_rows == rows
                 and db.sql("SELECT count() FROM logs").fetchall()[0][0] == rows
                 and _sync_indexes(db))
        if args.reuse and not reuse:
            print("  --reuse: no matching data in the work directory; generating it", flush=True)
        if not reuse:
            print(f"generating {rows:,} rows (seed {args.seed}) ...", flush=True)
            t0 = time.perf_counter()
            writer = None
            db.sql("DROP TABLE IF EXISTS logs")
            db.sql(SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES + OUR_EXTRA))
            t_ins = 0.0
            for batch in datagen.generate(rows, args.seed, batch_rows=batch_rows):
                if writer is None:
                    writer = pq.ParquetWriter(parquet, batch.schema)
                writer.write_batch(batch)
                ti = time.perf_counter()
                db.insert("logs", batch)
                t_ins += time.perf_counter() - ti
            writer.close()
            print(f"  generated + written in {time.perf_counter() - t0 - t_ins:.1f} s; "
                  f"skipidx insert (8 indexes) {t_ins:.1f} s", flush=True)
        # Same physical layout on both sides: chDB gets OPTIMIZE TABLE ... FINAL
        # (one merged part); skipidx merges its 1M-row insert parts into one
        # part too (its default max_part_rows would otherwise keep 1M-row
        # parts, and every query would pay per-part overhead chDB does not).
        tbl = db.catalog.table("logs")
        if len(tbl.state.parts) > 1:
            t0 = time.perf_counter()
            tbl.optimize(final=True, max_part_rows=rows)
            print(f"  skipidx OPTIMIZE FINAL into one part {time.perf_counter() - t0:.1f} s", flush=True)
        ids_lz4 = os.path.join(work, "logs_ids_lz4.parquet")
        if not (reuse and os.path.exists(ids_lz4) and pq.read_metadata(ids_lz4).num_rows == rows):
            write_id_copy(parquet, ids_lz4, "lz4")
        ids = pq.read_table(parquet, columns=["trace_id", "user_id"]).take(pick_rows)
        picks = {"trace": ids.column("trace_id").to_pylist(), "user": ids.column("user_id").to_pylist()}

        t0 = time.perf_counter()
        ch = chs.Session(os.path.join(work, "chdb"))
        if reuse and _chdb_rows(ch) == rows:
            print("  reusing the chDB table", flush=True)
        else:
            ch.query("DROP TABLE IF EXISTS logs")
            ch.query(SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES))
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
            dq = f"SELECT count(*) FROM read_parquet('{parquet}') WHERE {dwhere}"
            fns = [lambda: db.sql(q), lambda: ch.query(q, "TSV"), lambda: duck.execute(dq).fetchone()]
            id_query = ch_index in ("trace_bf", "user_bf")
            if id_query:    # DuckDB also on the LZ4 copy of the id columns
                dq4 = f"SELECT count(*) FROM read_parquet('{ids_lz4}') WHERE {dwhere}"
                n_d4 = duck.execute(dq4).fetchone()[0]
                assert n_d4 == n_duck, f"{label}: DuckDB on the LZ4 copy {n_d4} != {n_duck}"
                fns.append(lambda: duck.execute(dq4).fetchone())
            times = interleaved_median_ms(fns, args.repeat)
            t_ours, t_ch, t_duck = times[:3]
            t_duck4 = times[3] if id_query else None
            g_ch = chdb_granules(ch, where)
            ideal = ideal_granules(db, where)
            alone = st.index(ch_index).granules_after
            auto = st.index(auto_index).granules_after
            res.append((label, n_ours, n_duck, t_ours, t_ch, t_duck, st.granules_selected, alone, auto, g_ch, ideal,
                        st.granules_total, t_duck4))
            d4 = f" (LZ4 copy {t_duck4:.1f} ms)" if t_duck4 is not None else ""
            print(f"  {label:18s} rows {n_ours:>8,}  skipidx {t_ours:8.1f} ms  chDB {t_ch:8.1f} ms  "
                  f"DuckDB {t_duck:8.1f} ms{d4}  granules {st.granules_selected}/{st.granules_total} "
                  f"({ch_index} alone {alone}, {auto_index} alone {auto}, chDB {g_ch}, ideal {ideal})", flush=True)

        # one-value lookups of many random ids: the mean kept/ideal the fpp controls
        rng_l = np.random.default_rng(11)
        sample = pq.read_table(parquet, columns=["trace_id", "user_id"]).take(
            rng_l.integers(0, rows, args.lookups))
        lookups = []
        for column, names, vals in (
                ("trace_id", ("trace_bf", "trace_auto"), sorted(set(sample.column("trace_id").to_pylist()))),
                ("user_id", ("user_bf", "user_auto"),
                 sorted({u for u in sample.column("user_id").to_pylist() if u >= 200}))):
            t0 = time.perf_counter()
            lookups.append((column, names, len(vals), lookup_sample(db, ch, column, vals, names)))
            print(f"  {len(vals)} one-value lookups of {column} in {time.perf_counter() - t0:.1f} s", flush=True)

        # plain pyarrow scan of the non-selective query (same predicate, all rows)
        def pyarrow_scan():
            t = pq.read_table(parquet, columns=["msg"])
            return pc.sum(pc.match_substring(t.column("msg"), freq)).as_py()

        ns_q = f"SELECT count() FROM logs WHERE {queries[-1][1]}"
        t_ns, t_pa = interleaved_median_ms([lambda: db.sql(ns_q), pyarrow_scan], args.repeat)

        print()
        print(f"{rows:,} rows, {res[0][11]} granules of 8192 rows; median of {args.repeat} runs; "
              f"load average {os.getloadavg()[0]:.2f}")
        hdr = (f"{'query':18s} {'rows':>8s} {'skipidx ms':>10s} {'chDB ms':>8s} {'DuckDB ms':>9s} "
               f"{'vs chDB':>8s} {'vs Duck':>8s} {'kept':>6s} {'CH-idx':>6s} {'chDB':>6s} {'sbbf':>6s} "
               f"{'ideal':>6s} {'sbbf/ideal':>10s}")
        print(hdr)
        print("-" * len(hdr))
        for (label, n, nd, to, tc, td, kept, alone, auto, gch, ideal, total, _td4) in res:
            ratio_ideal = f"{auto / ideal:.2f}" if ideal else ("-" if auto == 0 else "inf")
            print(f"{label:18s} {n:>8,} {to:>10.1f} {tc:>8.1f} {td:>9.1f} {tc / to:>7.2f}x {td / to:>7.1f}x "
                  f"{kept:>6d} {alone:>6d} {gch if gch is not None else -1:>6d} {auto:>6d} {ideal:>6d} "
                  f"{ratio_ideal:>10s}")
        print("\nDuckDB on the LZ4_RAW copy of the id columns (same rows, same row groups):")
        for (label, n, nd, to, tc, td, *_rest, td4) in res:
            if td4 is not None:
                print(f"  {label:18s} DuckDB Snappy file {td:8.1f} ms ({td / to:5.1f}x skipidx)   "
                      f"LZ4 copy {td4:8.1f} ms ({td4 / to:5.1f}x skipidx)")
        print("\none-value lookups (`col = v`) of random ids: granules kept by each index alone vs the ideal")
        for column, names, n, r in lookups:
            print(f"  {column:9s} latency of {n} lookups with new constants each: median skipidx "
                  f"{np.median(r['ms_skipidx']):6.2f} ms, chDB {np.median(r['ms_chdb']):6.2f} ms "
                  f"(vs chDB {np.median(r['ms_chdb']) / np.median(r['ms_skipidx']):.2f}x; p90 skipidx "
                  f"{np.percentile(r['ms_skipidx'], 90):.2f} ms, chDB {np.percentile(r['ms_chdb'], 90):.2f} ms)")
            for name in names:
                ratio = r[name] / r["ideal"]
                print(f"  {column:9s} {name:11s} {n:4d} lookups  mean kept/ideal {ratio.mean():6.3f}  "
                      f"mean extra granules {float((r[name] - r['ideal']).mean()):7.3f}  "
                      f"lookups above 1.5x the ideal {100 * float((ratio > 1.5).mean()):5.1f} %")
        snap = db.catalog.table("logs").snapshot()
        part_files = [os.path.join(p.path, "data.parquet") for p in snap.parts]
        snap.close()
        print("\nid column bytes (Parquet, compressed / uncompressed):")
        for what, paths in (("skipidx parts", part_files), ("DuckDB's file", [parquet]), ("LZ4 copy", [ids_lz4])):
            for c, (cb, ub, codec) in parquet_column_bytes(paths, ID_COLUMNS).items():
                print(f"  {what:14s} {c:9s} {codec:8s} {cb / 2**20:8.2f} / {ub / 2**20:8.2f} MiB")
        print(f"\nnon-selective (timed in rounds with the scan): skipidx {t_ns:.1f} ms vs plain pyarrow scan "
              f"{t_pa:.1f} ms (ratio {t_ns / t_pa:.2f}, target <= 1.5)")
        print("'vs chDB' / 'vs Duck' = their latency / skipidx latency (higher is better for skipidx); "
              "'kept' = granules skipidx kept with all its indexes; 'CH-idx' = kept by the ClickHouse-equivalent "
              "index alone (same DDL and bytes as chDB's); 'sbbf' = kept by the adaptive sbbf index alone")
        print("\nindex bytes: skipidx files on disk (uncompressed Arrow IPC) | chDB's same index: "
              "uncompressed / compressed on disk")
        for name, b, c in index_bytes(db, ch):
            vs = (f"{c[0] / 2**20:9.2f} / {c[1] / 2**20:7.2f} MiB (skipidx/chDB uncompressed {b / c[0]:.2f}x)"
                  if c else "        -")
            print(f"  {name:18s} {b / 2**20:9.2f} MiB | {vs}")
        db.close()
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
