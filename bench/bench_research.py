"""The research bench's report: `bench fpp`, then `bench indexes` on the synthetic log table and on
the Python standard library's source lines.

    python bench/bench_research.py [--rows 10000000] [--out bench/out/research]
                                   [--skip-fpp] [--skip-logs] [--skip-stdlib] [--quick]

Writes, into --out: fpp.{md,json,png}; logs.parquet + logs.{md,json} + logs_pareto.png +
logs_families.png + logs_queries.sql; stdlib.parquet + stdlib.* likewise. Prints every table.
Everything goes through the same entry points as the `skipidx bench` command.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq


def stdlib_lines_parquet(path: str) -> int:
    """Every non-blank source line of the running Python's standard library (sorted by file), as Parquet."""
    root = os.path.join(sys.base_prefix, "lib", "python%d.%d" % sys.version_info[:2])
    files = sorted(f for f in glob.glob(os.path.join(root, "**", "*.py"), recursive=True)
                   if "site-packages" not in f)
    names, linenos, lines = [], [], []
    for f in files:
        with open(f, "rb") as fh:
            for i, raw in enumerate(fh, 1):
                s = raw.rstrip(b"\r\n")
                if s.strip():
                    names.append(os.path.relpath(f, root))
                    linenos.append(i)
                    lines.append(s)
    t = pa.table({"file": pa.array(names), "lineno": pa.array(linenos, pa.int32()),
                  "line": pa.array(lines, pa.binary()).cast(pa.string(), safe=False)})
    pq.write_table(t, path)
    return t.num_rows


def logs_parquet(path: str, rows: int) -> int:
    from skipidx.apps.datagen import generate_table

    t = generate_table(rows, seed=42)
    pq.write_table(t.select(["id", "msg"]), path, row_group_size=1 << 20)
    return t.num_rows


def main(argv: list[str] | None = None) -> int:
    from skipidx.apps.research.cli import bench_main

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000, help="rows of the synthetic log table")
    p.add_argument("--out", default="bench/out/research")
    p.add_argument("--skip-fpp", action="store_true")
    p.add_argument("--skip-logs", action="store_true")
    p.add_argument("--skip-stdlib", action="store_true")
    p.add_argument("--quick", action="store_true", help="the --quick presets everywhere")
    p.add_argument("--logs-tokenizers", default="token,ngram3,ngram4,value")
    p.add_argument("--logs-chdb-kinds", default="same-bytes")
    p.add_argument("--stdlib-chdb-kinds", default="same-bytes")
    p.add_argument("--no-chdb-latency", action="store_true", help="chDB granule counts only (both datasets)")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.perf_counter()
    q = ["--quick"] if a.quick else []
    if not a.skip_fpp:
        bench_main(["fpp", "--out", a.out] + q)
    if not a.skip_stdlib:
        sp = os.path.join(a.out, "stdlib.parquet")
        if not os.path.exists(sp):
            print(f"stdlib lines: {stdlib_lines_parquet(sp):,}", file=sys.stderr)
        bench_main(["indexes", sp, "--column", "line", "--out", a.out, "--name", "stdlib",
                    "--write-queries", os.path.join(a.out, "stdlib_queries.sql")]
                   + ([] if a.quick else ["--chdb-kinds", a.stdlib_chdb_kinds])
                   + (["--no-chdb-latency"] if a.no_chdb_latency else []) + q)
    if not a.skip_logs:
        lp = os.path.join(a.out, "logs.parquet")
        if not os.path.exists(lp) or pq.read_metadata(lp).num_rows != a.rows:
            print(f"log table: {logs_parquet(lp, a.rows):,} rows", file=sys.stderr)
        args = ["indexes", lp, "--column", "msg", "--out", a.out, "--name", "logs",
                "--write-queries", os.path.join(a.out, "logs_queries.sql")]
        if not a.quick:
            args += ["--tokenizers", a.logs_tokenizers, "--chdb-kinds", a.logs_chdb_kinds, "--no-chdb-latency",
                     "--fixed-bytes", "1024,4096,16384,65536,262144"]
        bench_main(args + q)
    print(f"\nreport written to {a.out} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
