"""Bytes on disk and short-substring LIKEs of the tables an earlier bench_query.py run left in --dir.

    python bench/bench_query.py --dir /tmp/bq10 ...          # loads them once
    python bench/bench_bytes_reuse.py --dir /tmp/bq10         # no load: reads the files and chDB's tables
    python bench/bench_bytes_reuse.py --dir /tmp/bq10 --like xyz,err --repeat 7

Bytes, as bench/bench_bytes.py counts them: skipidx's data.parquet (footer
included) vs chDB's ``system.parts`` data_compressed_bytes; each index file
(``idx.<name>.arrow``) vs chDB's same-named index (``system.data_skipping_indices``
data_compressed_bytes + marks_bytes); the whole part vs chDB's bytes_on_disk.
It also says whether the part's index files hold group summaries (what a part
written before they were limited to parts of >= 4096 index granules carries).

``--like``: ``SELECT count() ... WHERE msg LIKE '%s%'`` for each pattern,
skipidx vs chDB in one interleaved run (median of --repeat), with the granules
each kept (chDB's from ``EXPLAIN indexes = 1``).
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import sys

import pyarrow as pa

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from bench_query import interleaved_median_ms  # noqa: E402


def _has_summaries(path: str) -> bool:
    from skipidx.indexes.summary import META_SUMMARY

    with pa.OSFile(path, "r") as f:
        r = pa.ipc.open_file(f)
        for i in range(r.num_record_batches):
            md = r.get_batch_with_custom_metadata(i).custom_metadata
            if md is not None and META_SUMMARY in dict(md):
                return True
    return False


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}x" if b else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="a bench_query.py --dir work directory")
    ap.add_argument("--like", default="", help="comma-separated substrings for LIKE '%%s%%' timings")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    from chdb import session as chs

    parts = glob.glob(os.path.join(args.dir, "skipidx", "logs", "parts", "*"))
    if len(parts) != 1:
        print(f"expected one merged skipidx part under {args.dir}, found {len(parts)}")
        return 1
    part = parts[0]
    ch = chs.Session(os.path.join(args.dir, "chdb"))

    def q(sql: str) -> list[list[str]]:
        return [line.split("\t") for line in str(ch.query(sql, "TSV")).strip().splitlines()]

    [[ch_data, ch_disk, ch_rows]] = q("SELECT sum(data_compressed_bytes), sum(bytes_on_disk), sum(rows) "
                                      "FROM system.parts WHERE database = currentDatabase() "
                                      "AND table = 'logs' AND active")
    ch_idx = {r[0]: int(r[1]) + int(r[2]) for r in q(
        "SELECT name, data_compressed_bytes, marks_bytes FROM system.data_skipping_indices "
        "WHERE database = currentDatabase() AND table = 'logs'")}
    data = os.path.getsize(os.path.join(part, "data.parquet"))
    print(f"{int(ch_rows):,} rows; skipidx part {os.path.basename(part)}")
    print(f"  data file (with footer)      {data:>14,}  chDB data_compressed_bytes {int(ch_data):>14,}  "
          f"{_ratio(data, int(ch_data))}")
    ours_ch = theirs = allidx = 0
    summaries = []
    for f in sorted(os.listdir(part)):
        if not f.startswith("idx."):
            continue
        name = f[len("idx."):-len(".arrow")]
        b = os.path.getsize(os.path.join(part, f))
        allidx += b
        if _has_summaries(os.path.join(part, f)):
            summaries.append(name)
        c = ch_idx.get(name)
        if c is not None:
            ours_ch += b
            theirs += c
        print(f"  {name:<28} {b:>14,}  " + (f"chDB {c:>14,}  {_ratio(b, c)}" if c is not None else "(skipidx only)"))
    print(f"  {'the ClickHouse indexes':<28} {ours_ch:>14,}  chDB {theirs:>14,}  {_ratio(ours_ch, theirs)}")
    print(f"  {'all indexes':<28} {allidx:>14,}")
    print(f"  part (data + the ClickHouse indexes) {data + ours_ch:,} vs chDB bytes_on_disk {int(ch_disk):,}: "
          f"{_ratio(data + ours_ch, int(ch_disk))}")
    print(f"  index files with group summaries: {', '.join(summaries) or 'none'}")

    pats = [p for p in args.like.split(",") if p]
    if pats:
        db = skipidx.connect(os.path.join(args.dir, "skipidx"))
        print(f"\nLIKE, median of {args.repeat} interleaved runs (ms)")
        for p in pats:
            sql = f"SELECT count() FROM logs WHERE msg LIKE '%{p}%'"
            r = db.sql(sql)
            n = r.fetchall()[0][0]
            nc = int(str(ch.query(sql, "TSV")).strip())
            assert n == nc, (p, n, nc)
            ex = str(ch.query(f"EXPLAIN indexes = 1 {sql}", "TSVRaw"))
            ch_kept = min([int(x) for x in re.findall(r"Granules: (\d+)/\d+", ex)] or [-1])
            t_s, t_c = interleaved_median_ms([lambda: db.sql(sql), lambda: ch.query(sql, "TSV")], args.repeat)
            st = r.stats
            print(f"  '%{p}%' rows {n:>9,}  skipidx {t_s:8.1f}  chDB {t_c:8.1f}  skipidx/chDB {t_s / t_c:.2f}  "
                  f"kept {st.granules_selected}/{st.granules_total} (chDB {ch_kept})  "
                  + ", ".join(f"{i.name} {i.granules_after}" for i in st.indexes if i.used))
        db.close()
    print(f"load: {os.getloadavg()[0]:.1f} (1 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
