"""ENGINE = Iceberg: selective queries on an Iceberg table vs pyiceberg's scan and DuckDB.

    flock /tmp/bench.lock python bench/bench_iceberg.py                  # 1M rows
    python bench/bench_iceberg.py --rows 200000 --repeat 3               # smaller

The table: the seeded log rows of ``skipidx.apps.datagen`` appended by pyiceberg
in 4 commits to a local SqlCatalog (sqlite) warehouse, 64k-row row groups
(``write.parquet.row-group-limit``). skipidx attaches it (``ENGINE = Iceberg``)
with an adaptive token index on msg and a value index on trace_id (sidecars,
also written to the Puffin statistics file). Queries, median of interleaved warm
runs, each returning the matching ids:

* skipidx: ``SELECT id FROM t WHERE hasToken(msg, rare)`` / ``trace_id = x``;
* pyiceberg: ``scan(row_filter=EqualTo('trace_id', x))`` (manifest and row-group
  statistics pruning) -- pyiceberg has no token predicate, so for hasToken it
  scans (id, msg) and filters with pyarrow's regex (the scan is what it costs);
* DuckDB ``read_parquet`` over the snapshot's data files (the table has no deletes).

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

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402

INDEXES = "INDEX tok msg TYPE sbbf('token', fpp = 0.01), INDEX tr trace_id TYPE sbbf('value', fpp = 0.01, seed = 1)"


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo

    work = args.dir or tempfile.mkdtemp(prefix="skipidx-iceberg-bench-")
    shutil.rmtree(work, ignore_errors=True)
    wh = os.path.join(work, "wh")
    os.makedirs(wh)
    uri = f"sqlite:///{wh}/catalog.db"
    cat = SqlCatalog("default", uri=uri, warehouse=f"file://{wh}")
    cat.create_namespace("ns")
    t0 = time.perf_counter()
    tbl = None
    for batch in datagen.generate(args.rows, seed=42, batch_rows=-(-args.rows // 4)):
        t = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        t = t.cast(pa.schema([pa.field(f.name, pa.timestamp("us") if pa.types.is_timestamp(f.type) else f.type)
                              for f in t.schema]))
        if tbl is None:
            tbl = cat.create_table("ns.logs", schema=t.schema,
                                   properties={"write.parquet.row-group-limit": "65536"})
        tbl.append(t)
    write_s = time.perf_counter() - t0
    tbl = cat.load_table("ns.logs")
    files = [task.file.file_path[len("file://"):] for task in tbl.scan().plan_files()]
    db = skipidx.connect(os.path.join(work, "db"))
    t0 = time.perf_counter()
    db.sql(f"CREATE TABLE t ({INDEXES}) ENGINE = Iceberg('{uri}', 'ns.logs')")
    build_s = time.perf_counter() - t0
    con = duckdb.connect()
    con.sql("SET threads = 2")
    flist = "[" + ", ".join(f"'{f}'" for f in files) + "]"
    tr = con.sql(f"SELECT trace_id FROM read_parquet({flist}) WHERE id % 99991 = 17 LIMIT 1").fetchall()[0][0]
    rare = datagen.RARE_TOKEN
    rx = f"(^|[^A-Za-z0-9]){rare}([^A-Za-z0-9]|$)"

    def sk(where):
        return lambda: sorted(r[0] for r in db.sql(f"SELECT id FROM t WHERE {where}").fetchall())

    def dk(where):
        return lambda: sorted(r[0] for r in con.sql(f"SELECT id FROM read_parquet({flist}) WHERE {where}").fetchall())

    def pyice_token():
        a = tbl.scan(selected_fields=("id", "msg")).to_arrow()
        return sorted(a.filter(pc.fill_null(pc.match_substring_regex(a.column("msg"), rx), False)).column("id").to_pylist())

    def pyice_eq():
        return sorted(tbl.scan(row_filter=EqualTo("trace_id", tr), selected_fields=("id",)).to_arrow()
                      .column("id").to_pylist())

    queries = [("hasToken rare", sk(f"hasToken(msg, '{rare}')"), pyice_token, dk(f"regexp_matches(msg, '{rx}')")),
               ("trace_id =", sk(f"trace_id = '{tr}'"), pyice_eq, dk(f"trace_id = '{tr}'"))]
    print(f"# {args.rows} rows, {len(files)} data files (pyiceberg appends, 64k-row row groups); "
          f"write {write_s:.1f} s, skipidx sidecars + Puffin {build_s:.1f} s")
    print(f"# load before: {load()}")
    print("| query | skipidx ms | pyiceberg scan ms | DuckDB ms | vs pyiceberg | vs DuckDB | zones kept/total |")
    print("|---|---|---|---|---|---|---|")
    for name, a, b, c in queries:
        ra, rb, rc = a(), b(), c()
        assert ra == rb == rc, (name, len(ra), len(rb), len(rc))
        ta, tb, tc = [], [], []
        for _ in range(args.repeat):
            for fn, acc in ((a, ta), (b, tb), (c, tc)):
                s = time.perf_counter()
                fn()
                acc.append((time.perf_counter() - s) * 1000)
        ma, mb, mc = statistics.median(ta), statistics.median(tb), statistics.median(tc)
        st = db.sql(f"SELECT id FROM t WHERE {'hasToken(msg, ' + repr(rare) + ')' if 'hasToken' in name else 'trace_id = ' + repr(tr)}").stats
        print(f"| {name} ({len(ra)} rows) | {ma:.1f} | {mb:.1f} | {mc:.1f} | {mb / ma:.1f}x | {mc / ma:.1f}x | "
              f"{st.granules_selected}/{st.granules_total} |")
    print(f"# load after: {load()}")
    db.close()
    if args.dir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
