"""Bytes on disk: skipidx's data and index files vs ClickHouse's (chDB) for the same rows and DDL.

    python bench/bench_bytes.py                 # 1M log rows (bench_query.py's table and DDL)
    python bench/bench_bytes.py --rows 10000000

One run generates the seeded log table (skipidx.apps.datagen) and loads it
into three tables, all merged into one part as bench_query.py does:

- skipidx "before": every column PLAIN (or dictionary, same policy) and index
  files uncompressed -- the writer's behaviour before per-column encodings;
- skipidx "after": the writer's defaults (encodings chosen per column from
  the data, index files zstd-compressed where it pays);
- chDB with ClickHouse's defaults (LZ4; the same CODEC(LZ4) id columns).

The two skipidx tables get the same batches in alternation, so their insert
times (printed, with the ratio) share the machine's load. Bytes: per column
(skipidx: the column chunks of data.parquet; chDB: system.columns
data_compressed_bytes), the whole data file vs chDB's data_compressed_bytes
and bytes_on_disk, and per index (skipidx: idx.<name>.arrow; chDB:
system.data_skipping_indices data_compressed_bytes + marks).
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import shutil
import sys
import tempfile
import time

import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402
from skipidx.store import encoding as _encoding  # noqa: E402
from skipidx.store import writer as _writer  # noqa: E402

from bench_query import CH_INDEXES, OUR_EXTRA, SCHEMA_SQL  # noqa: E402


class _Before:
    """The writer as it was before per-column encodings and compressed index files."""

    def __enter__(self):
        self.saved = (_encoding.ENCODING_MAX_RATIO, _writer.INDEX_COMPRESS_MAX_RATIO)
        _encoding.ENCODING_MAX_RATIO = 0.0       # no encoding is ever chosen: PLAIN
        _writer.INDEX_COMPRESS_MAX_RATIO = 0.0   # never pays: uncompressed
        return self

    def __exit__(self, *exc):
        _encoding.ENCODING_MAX_RATIO, _writer.INDEX_COMPRESS_MAX_RATIO = self.saved


def _part_dir(db_path: str) -> str:
    parts = glob.glob(os.path.join(db_path, "logs", "parts", "*", "manifest.json"))
    assert len(parts) == 1, f"expected one part, found {len(parts)}"
    return os.path.dirname(parts[0])


def _parquet_columns(path: str) -> dict[str, int]:
    md = pq.read_metadata(path)
    out: collections.Counter = collections.Counter()
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        for j in range(rg.num_columns):
            c = rg.column(j)
            out[c.path_in_schema] += c.total_compressed_size
    return dict(out)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:5.2f}x" if b else "   - "


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--batch-rows", type=int, default=250_000, help="rows per insert (alternating tables)")
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed)")
    ap.add_argument("--no-before", action="store_true",
                    help="skip the 'before' table (halves the run; its columns print as 0)")
    args = ap.parse_args(argv)
    names = ("after",) if args.no_before else ("before", "after")

    from chdb import session as chs

    work = args.dir or tempfile.mkdtemp(prefix="skipidx-bytes-")
    os.makedirs(work, exist_ok=True)
    try:
        ddl = SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES + OUR_EXTRA)
        dbs = {}
        for name in names:
            p = os.path.join(work, name)
            shutil.rmtree(p, ignore_errors=True)
            dbs[name] = skipidx.connect(p)
            dbs[name].sql(ddl)
        parquet = os.path.join(work, "logs.parquet")
        writer = None
        t_ins = {"before": 0.0, "after": 0.0}
        print(f"load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; rows {args.rows:,}", flush=True)
        for k, batch in enumerate(datagen.generate(args.rows, args.seed, batch_rows=args.batch_rows)):
            if writer is None:
                writer = pq.ParquetWriter(parquet, batch.schema)
            writer.write_batch(batch)
            order = names if k % 2 == 0 else names[::-1]
            for name in order:
                t0 = time.perf_counter()
                if name == "before":
                    with _Before():
                        dbs[name].insert("logs", batch)
                else:
                    dbs[name].insert("logs", batch)
                t_ins[name] += time.perf_counter() - t0
        writer.close()
        t_opt = {}
        for name in names:
            t0 = time.perf_counter()
            tbl = dbs[name].catalog.table("logs")
            if name == "before":
                with _Before():
                    tbl.optimize(final=True, max_part_rows=args.rows)
            else:
                tbl.optimize(final=True, max_part_rows=args.rows)
            t_opt[name] = time.perf_counter() - t0
        for db in dbs.values():
            db.close()

        ch = chs.Session(os.path.join(work, "chdb"))
        ch.query("DROP TABLE IF EXISTS logs")
        ch.query(SCHEMA_SQL.format(table="logs", indexes=CH_INDEXES))
        t0 = time.perf_counter()
        ch.query(f"INSERT INTO logs SELECT * FROM file('{parquet}', Parquet)")
        t_ch = time.perf_counter() - t0
        ch.query("OPTIMIZE TABLE logs FINAL")

        def q(sql: str) -> list[list[str]]:
            return [line.split("\t") for line in str(ch.query(sql, "TSV")).strip().splitlines()]

        ch_cols = {r[0]: int(r[1]) for r in q("SELECT name, data_compressed_bytes FROM system.columns "
                                               "WHERE database = currentDatabase() AND table = 'logs'")}
        [[ch_data, ch_disk, ch_rows]] = q("SELECT sum(data_compressed_bytes), sum(bytes_on_disk), sum(rows) "
                                          "FROM system.parts WHERE database = currentDatabase() "
                                          "AND table = 'logs' AND active")
        ch_idx = {r[0]: int(r[1]) + int(r[2]) for r in q(
            "SELECT name, data_compressed_bytes, marks_bytes FROM system.data_skipping_indices "
            "WHERE database = currentDatabase() AND table = 'logs'")}
        assert int(ch_rows) == args.rows

        parts = {name: _part_dir(os.path.join(work, name)) for name in names}
        cols = {name: _parquet_columns(os.path.join(parts[name], "data.parquet")) for name in parts}
        cols.setdefault("before", {})
        import json
        with open(os.path.join(parts["after"], "manifest.json")) as f:
            encodings = json.load(f).get("encodings", {})

        print(f"\ninsert ({args.rows:,} rows in batches of {args.batch_rows:,}, 8 indexes, alternating): "
              f"before {t_ins['before']:.1f} s, after {t_ins['after']:.1f} s "
              f"(after/before {_ratio(t_ins['after'], t_ins['before'])}); "
              f"OPTIMIZE FINAL before {t_opt.get('before', 0.0):.1f} s, after {t_opt['after']:.1f} s; "
              f"chDB INSERT from Parquet {t_ch:.1f} s")
        print("\ndata, per column (bytes)          before        after         chDB   after/chDB  encoding (after)")
        for c in cols["after"]:
            print(f"  {c:<28} {cols['before'].get(c, 0):>12,} {cols['after'][c]:>12,} {ch_cols.get(c, 0):>12,}"
                  f"   {_ratio(cols['after'][c], ch_cols.get(c, 0))}   {encodings.get(c, 'PLAIN/dictionary')}")
        size = {name: os.path.getsize(os.path.join(parts[name], "data.parquet")) for name in parts}
        size.setdefault("before", 0)
        print(f"  {'data file (with footer)':<28} {size['before']:>12,} {size['after']:>12,} {int(ch_data):>12,}"
              f"   {_ratio(size['after'], int(ch_data))}   (chDB: data_compressed_bytes)")

        print("\nindex files (bytes)                before        after         chDB   after/chDB")
        tot = {"before": 0, "after": 0, "ch": 0, "before_ch": 0, "after_ch": 0}
        for f in sorted(os.listdir(parts["after"])):
            if not f.startswith("idx."):
                continue
            name = f[len("idx."):-len(".arrow")]
            b = os.path.getsize(os.path.join(parts["before"], f)) if "before" in parts else 0
            a = os.path.getsize(os.path.join(parts["after"], f))
            c = ch_idx.get(name)
            tot["before"] += b
            tot["after"] += a
            if c is not None:
                tot["ch"] += c
                tot["before_ch"] += b
                tot["after_ch"] += a
            print(f"  {name:<28} {b:>12,} {a:>12,} {'' if c is None else f'{c:,}':>12}"
                  f"   {'' if c is None else _ratio(a, c)}")
        print(f"  {'the 4 ClickHouse indexes':<28} {tot['before_ch']:>12,} {tot['after_ch']:>12,} {tot['ch']:>12,}"
              f"   {_ratio(tot['after_ch'], tot['ch'])}")
        print(f"  {'all 8 indexes':<28} {tot['before']:>12,} {tot['after']:>12,}")
        print(f"\nchDB bytes_on_disk (data + its 4 indexes + marks): {int(ch_disk):,}; skipidx part "
              f"(data + the same 4 indexes): {size['after'] + tot['after_ch']:,} "
              f"({_ratio(size['after'] + tot['after_ch'], int(ch_disk))})")
        print(f"load: {os.getloadavg()[0]:.1f} (1 min)")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
