"""External tables over a Parquet lake: index build and selective queries vs DuckDB and Spark.

    flock /tmp/bench.lock python bench/bench_lake.py                 # 10M rows, 20 files
    flock /tmp/bench.lock python bench/bench_lake.py --rows 2000000  # smaller
    python bench/bench_lake.py --dir /tmp/lakebench --reuse          # keep / reuse the lake
    python bench/bench_lake.py --no-spark                            # skip the Spark parts

The lake: the seeded log table of ``skipidx.apps.datagen`` written by pyarrow
into 20 files of 64k-row row groups, with pyarrow's Parquet Bloom filters on
the id columns (trace_id, user_id). No copy is made for skipidx: the external
table indexes the files where they are (sidecars).

Measured:

* index build: ``CREATE TABLE ... ENGINE = ParquetFiles`` (embedded, sidecars
  of the adaptive token and 4-gram ``sbbf`` indexes and a ``bloom_filter`` on
  trace_id), the same with Spark ``local[2]`` tasks (``build_external``), and,
  as the baseline, rewriting the same rows with the same indexes into a
  MergeTree table (``ORDER BY ts``, the lake's own order);
* queries (median of interleaved runs, warm): hasToken rare / absent,
  ``LIKE '%rare%'``, trace_id =, trace_id IN (5), user_id =, user_id IN (5 ids held
  by few rows) -- skipidx on the
  external table vs DuckDB on the same files (its Bloom-filter path serves
  =/IN: DuckDB reads Parquet Bloom filters for equality constants), vs
  Spark SQL on the same files (parquet-java, its own row-group stats and
  Bloom filters) and Spark through the skipidx source;
* zones (8192-row pieces of row groups, the unit pruned and read) and row groups
  kept vs the ideal (those holding a match, from DuckDB's ``file_row_number``);
* the =/IN queries cold too: skipidx's process caches emptied before each run.

Prints ``uptime`` load with the figures.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402

FILES = 20
ROW_GROUP = 65_536
#: the trace_id sidecar hashes with another seed than Parquet's (0): its false positives are
#: then independent of the files' own Bloom filters, which the pruner ANDs with it (two
#: filters of one hash share their false positives: a bigger filter's block is inside a
#: smaller one's)
INDEX_LIST = ["INDEX tok msg TYPE sbbf('token', fpp = 0.01)", "INDEX ng msg TYPE sbbf('ngram', n = 4, fpp = 0.01)",
              "INDEX tr trace_id TYPE sbbf('value', fpp = 0.01, seed = 1)",
              "INDEX us user_id TYPE sbbf('value', fpp = 0.01, seed = 1)"]
INDEXES = ", ".join(INDEX_LIST)


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def write_lake(root: str, rows: int) -> float:
    t0 = time.perf_counter()
    os.makedirs(root, exist_ok=True)
    per = -(-rows // FILES)
    it = datagen.generate(rows, seed=42, batch_rows=per)
    for i, batch in enumerate(it):
        t = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        pq.write_table(t, os.path.join(root, f"part-{i:03d}.parquet"), row_group_size=ROW_GROUP,
                       bloom_filter_options={"trace_id": {"ndv": ROW_GROUP, "fpp": 0.01},
                                             "user_id": {"ndv": ROW_GROUP, "fpp": 0.01}})
    return time.perf_counter() - t0


def timed(fn, repeat: int) -> tuple[float, object]:
    ts = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def page_index_probe(work: str, repeat: int) -> None:
    """What a Parquet page index buys with pyarrow: one 1M-row row group of the log table
    written with ``write_page_index=True`` (1 MiB pages, ~8k rows of msg), then the msg column of
    8192 rows at the start and at the end of the row group vs the whole row group."""
    p = os.path.join(work, "paged.parquet")
    t = datagen.generate_table(1 << 20, seed=7)
    pq.write_table(t, p, row_group_size=1 << 20, write_page_index=True, data_page_size=1 << 20)
    md = pq.ParquetFile(p).metadata
    cc = md.row_group(0).column(t.schema.get_field_index("msg"))
    print(f"\npage index: has_column_index={cc.has_column_index} has_offset_index={cc.has_offset_index}; "
          "pyarrow exposes neither its entries nor a read of a row range: the unit it reads is the row group")

    def whole():
        return pq.ParquetFile(p).read_row_group(0, columns=["msg"]).num_rows

    def head():
        for b in pq.ParquetFile(p).iter_batches(batch_size=8192, columns=["msg"]):
            return b.num_rows

    def tail():
        n = 0
        for b in pq.ParquetFile(p).iter_batches(batch_size=8192, columns=["msg"]):
            n += b.num_rows
        return n

    for name, fn in (("whole row group (1M rows)", whole), ("first 8192 rows (iter_batches, stop)", head),
                     ("last 8192 rows (iter_batches to the end)", tail)):
        fn()
        ms, _ = timed(fn, repeat)
        print(f"  {name:<42}{ms * 1000:8.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--reuse-db", action="store_true", help="keep the sidecars a run with --dir left (REFRESH)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--no-mergetree", action="store_true")
    ap.add_argument("--page-index", action="store_true", help="only the page-index probe")
    ap.add_argument("--text-index", action="store_true", help="also a text index sidecar and its count()/rows queries")
    args = ap.parse_args()
    import duckdb

    work = args.dir or tempfile.mkdtemp(prefix="skipidx-lake-")
    lake = os.path.join(work, "lake")
    glob = f"{lake}/*.parquet"
    if args.page_index:
        os.makedirs(work, exist_ok=True)
        page_index_probe(work, args.repeat)
        print(f"# {load()}")
        return
    print(f"# {args.rows:,} rows, {FILES} files, {ROW_GROUP}-row row groups; {load()}")
    if not (args.reuse and os.path.isdir(lake)):
        shutil.rmtree(lake, ignore_errors=True)
        print(f"lake written by pyarrow in {write_lake(lake, args.rows):.1f} s")
    size = sum(os.path.getsize(os.path.join(lake, f)) for f in os.listdir(lake))
    print(f"lake: {size / 2**20:.0f} MiB")

    # ---- build: embedded sidecars vs MergeTree rewrite -------------------------------------
    dbdir = os.path.join(work, "db")
    if not (args.reuse_db and os.path.isdir(os.path.join(dbdir, "logs"))):
        shutil.rmtree(dbdir, ignore_errors=True)
    db = skipidx.connect(dbdir)
    t0 = time.perf_counter()
    if "logs" in db.tables():
        msg = db.sql("ALTER TABLE logs REFRESH").message
    else:
        msg = db.sql(f"CREATE TABLE logs ({INDEXES}) ENGINE = ParquetFiles('{glob}')").message
    build_ext = time.perf_counter() - t0
    sdir = os.path.join(dbdir, "logs", "sidecars")
    sbytes = sum(os.path.getsize(os.path.join(sdir, f)) for f in os.listdir(sdir))
    print(f"build embedded (sidecars): {build_ext:.1f} s, {sbytes / 2**20:.1f} MiB of sidecars; {msg}; {load()}")
    build_mt = None
    if not args.no_mergetree:
        cols = ", ".join(f"{n} {t}" for n, t, _ in db.sql("DESCRIBE TABLE logs").fetchall())
        db.sql(f"CREATE TABLE mt ({cols}, {INDEXES}) ENGINE = MergeTree ORDER BY ts")
        t0 = time.perf_counter()
        mt = db.catalog.table("mt")
        for f in sorted(os.listdir(lake)):
            mt.insert(pq.read_table(os.path.join(lake, f)))
        build_mt = time.perf_counter() - t0
        print(f"rewrite into MergeTree (same indexes): {build_mt:.1f} s; sidecar build / MergeTree insert = "
              f"{build_ext / build_mt:.2f}; {load()}")
        db.sql("DROP TABLE mt")

    spark = None
    if not args.no_spark:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        t0 = time.perf_counter()
        spark = (SparkSession.builder.master("local[2]").appName("bench_lake")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.driver.memory", "2g")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        from skipidx.apps.spark import register

        register(spark)
        print(f"spark local[2] started in {time.perf_counter() - t0:.1f} s")
        from skipidx.apps.pipeline import build_external

        sdb = os.path.join(work, "sparkdb")
        shutil.rmtree(sdb, ignore_errors=True)
        s = build_external(sdb, "logs", glob, engine="spark", master="local[2]", quiet=True,
                           indexes=INDEX_LIST)
        print(f"build on spark local[2] (about two tasks per core): {s['seconds']:.1f} s"
              + (f"; / MergeTree insert = {s['seconds'] / build_mt:.2f}" if build_mt else "") + f"; {load()}")

    # ---- queries ---------------------------------------------------------------------------
    ids = duckdb.sql(f"SELECT trace_id, user_id FROM read_parquet('{glob}') WHERE id % {max(args.rows // 11, 7)} = 17").fetchall()
    tr = ids[0][0]
    trs = [x[0] for x in ids[:5]]
    uid = ids[1][1]
    in_list = ", ".join(f"'{x}'" for x in trs)
    # user ids held by few rows (some ids are held by many: IN over those is a scan for everyone)
    rare_uids = [x[0] for x in duckdb.sql(
        f"SELECT user_id FROM read_parquet('{glob}') WHERE user_id IN (SELECT user_id FROM read_parquet('{glob}') "
        f"WHERE id % {max(args.rows // 101, 7)} = 17) GROUP BY 1 HAVING count(*) < 50 ORDER BY 1 LIMIT 5").fetchall()]
    uid_list = ", ".join(str(x) for x in rare_uids)
    queries = [
        ("hasToken rare", f"hasToken(msg, '{datagen.RARE_TOKEN}')", f"msg LIKE '%{datagen.RARE_TOKEN}%'"),
        ("hasToken absent", f"hasToken(msg, '{datagen.ABSENT_TOKEN}')", f"msg LIKE '%{datagen.ABSENT_TOKEN}%'"),
        ("LIKE '%rare%'", f"msg LIKE '%{datagen.RARE_TOKEN}%'", f"msg LIKE '%{datagen.RARE_TOKEN}%'"),
        ("trace_id =", f"trace_id = '{tr}'", f"trace_id = '{tr}'"),
        ("trace_id IN (5)", f"trace_id IN ({in_list})", f"trace_id IN ({in_list})"),
        ("user_id =", f"user_id = {uid}", f"user_id = {uid}"),
        ("user_id IN (5)", f"user_id IN ({uid_list})", f"user_id IN ({uid_list})"),
    ]
    con = duckdb.connect()
    con.sql("SET threads = 2")
    with db.catalog.table("logs").snapshot() as snap:
        zmarks = {f.data_path: np.asarray(f.marks) for f in snap.parts}
        frows = {f.data_path: f.num_rows for f in snap.parts}
    print(f"\n{'query':<17}{'skipidx ms':>11}{'duckdb ms':>10}{'ratio':>7}{'spark ms':>10}{'sp+skipidx':>11}"
          f"{'zones kept':>11}{'ideal':>6}{'total':>6}{'rg kept':>8}{'ideal':>6}{'total':>6}  rows")
    for name, where, dwhere in queries:
        sk = lambda: db.sql(f"SELECT count() FROM logs WHERE {where}")   # noqa: E731
        dk = lambda: con.sql(f"SELECT count(*) FROM read_parquet('{glob}') WHERE {dwhere}").fetchall()  # noqa: E731
        sk()
        dk()
        st, dt = [], []
        for _ in range(args.repeat):      # interleaved
            t0 = time.perf_counter()
            r = sk()
            st.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            d = dk()
            dt.append(time.perf_counter() - t0)
        n = r.fetchall()[0][0]
        assert n == d[0][0], (name, n, d)
        hits = con.sql(f"SELECT filename, file_row_number FROM "
                       f"read_parquet('{glob}', filename = true, file_row_number = true) WHERE {dwhere}").fetchall()
        ideal_z = len({(f, int(np.searchsorted(zmarks[f], i, side="right"))) for f, i in hits})
        ideal = len({(f, i // ROW_GROUP) for f, i in hits})
        rg_kept = sum(len(rgs) for _, rgs in db.prune("logs", where))
        sms = "-"
        ssk = "-"
        if spark is not None:
            df = spark.read.parquet(glob)
            sq = dwhere.replace("msg LIKE", "msg LIKE")
            df.filter(sq).count()
            sp, c = timed(lambda: df.filter(sq).count(), max(2, args.repeat // 3))
            assert c == n, (name, c, n)
            sms = f"{sp * 1000:.0f}"
            src = spark.read.format("skipidx").option("where", where).load(os.path.join(dbdir, "logs"))
            src.count()
            sp2, c2 = timed(lambda: src.count(), max(2, args.repeat // 3))
            assert c2 == n, (name, c2, n)
            ssk = f"{sp2 * 1000:.0f}"
        sm, dm = statistics.median(st) * 1000, statistics.median(dt) * 1000
        print(f"{name:<17}{sm:>11.1f}{dm:>10.1f}{dm / sm:>6.1f}x{sms:>10}{ssk:>11}"
              f"{r.stats.granules_selected:>11}{ideal_z:>6}{r.stats.granules_total:>6}{rg_kept:>8}{ideal:>6}"
              f"{sum(-(-v // ROW_GROUP) for v in frows.values()):>6}  {n}")
    print(f"# ratio = DuckDB ms / skipidx ms; {load()}")
    # cold: the process's caches emptied before each query (parsed footers, page layouts, decoded
    # dictionary pages), as a new process would start; DuckDB keeps no Parquet cache either
    from skipidx.core.lru import clear_caches

    for name, where, dwhere in queries[3:]:
        st, dt = [], []
        for _ in range(max(3, args.repeat // 2)):
            clear_caches()
            t0 = time.perf_counter()
            db.sql(f"SELECT count() FROM logs WHERE {where}")
            st.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            con.sql(f"SELECT count(*) FROM read_parquet('{glob}') WHERE {dwhere}").fetchall()
            dt.append(time.perf_counter() - t0)
        sm, dm = statistics.median(st) * 1000, statistics.median(dt) * 1000
        print(f"cold {name:<17}{sm:>9.1f} ms  duckdb {dm:>8.1f} ms  {dm / sm:>5.1f}x")
    print(f"# {load()}")
    if args.text_index:
        # ClickHouse's text index as a sidecar: exact row postings per file, so count() of a
        # whole-token predicate is answered without reading msg (ReadFromTextIndexCount)
        t0 = time.perf_counter()
        if "tx" not in [i.name for i in db.table_meta("logs").indexes]:
            db.sql("ALTER TABLE logs ADD INDEX tx msg TYPE text(tokenizer = splitByNonAlpha)")
        db.sql("ALTER TABLE logs MATERIALIZE INDEX tx")
        print(f"\ntext index sidecars built in {time.perf_counter() - t0:.1f} s; {load()}")
        for name, sql, dsql in [
                ("count() hasToken rare", f"SELECT count() FROM logs WHERE hasToken(msg, '{datagen.RARE_TOKEN}')",
                 f"SELECT count(*) FROM read_parquet('{glob}') WHERE msg LIKE '%{datagen.RARE_TOKEN}%'"),
                ("ids hasToken rare", f"SELECT id FROM logs WHERE hasToken(msg, '{datagen.RARE_TOKEN}')",
                 f"SELECT id FROM read_parquet('{glob}') WHERE msg LIKE '%{datagen.RARE_TOKEN}%'")]:
            db.sql(sql)
            st, dt = [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                r = db.sql(sql)
                st.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                d = con.sql(dsql).fetchall()
                dt.append(time.perf_counter() - t0)
            assert sorted(r.fetchall()) == sorted(d), name
            sm, dm = statistics.median(st) * 1000, statistics.median(dt) * 1000
            print(f"{name:<24}{sm:>9.1f} ms  duckdb {dm:>8.1f} ms  {dm / sm:>6.1f}x  "
                  f"rg read {r.stats.granules_selected}/{r.stats.granules_total}")
        print(f"# {load()}")
    if spark is not None:
        spark.stop()
    db.close()
    if args.dir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
