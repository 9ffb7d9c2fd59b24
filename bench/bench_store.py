"""Storage micro-benchmarks: the figures behind the layout choices of skipidx.store.

1. Checksum speed: XXH3-128 vs XXH64 vs SHA-256 vs CRC32 (why manifests use XXH3-128).
2. Reading k granules from one part under three Parquet layouts:
   a row group per data granule (what skipidx writes), a row group per 16
   granules, and one row group per part (optionally with a page index) --
   pyarrow reads whole row groups, so the row group is the unit of cost.
3. skipidx's own Part.read of k granules (checksum verification included,
   first read in the process vs cached).

    python bench/bench_store.py [--rows 1000000]

Prints figures and ratios; asserts nothing (numbers depend on the machine).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import time
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash


def _best(f, repeat: int = 5) -> float:
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def bench_checksums() -> None:
    b = os.urandom(64 << 20)
    print("checksum speed over 64 MiB of random bytes:")
    base = None
    for name, f in [("xxh3_128", xxhash.xxh3_128_digest), ("xxh64", xxhash.xxh64_digest),
                    ("crc32", zlib.crc32), ("sha256", lambda x: hashlib.sha256(x).digest())]:
        dt = _best(lambda: f(b), 3)
        gbs = 64 / 1024 / dt
        base = base or gbs
        print(f"  {name:9s} {gbs:6.2f} GB/s   ({base / gbs:4.1f}x slower than xxh3_128)")


def make_rows(n: int) -> pa.Table:
    from skipidx.apps.datagen import generate_table  # the seeded synthetic log table of the benchmarks

    return generate_table(n, seed=42)


def _fallback_rows(n: int) -> pa.Table:
    rng = np.random.default_rng(42)
    words = np.array(["error", "timeout", "user", "login", "db", "cache", "miss", "ok", "retry", "GET", "POST"])
    msg = [" ".join(words[rng.integers(0, len(words), 12)]) for _ in range(n)]
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.uint64)),
        "ts": pa.array(np.sort(rng.integers(1.6e9, 1.7e9, n)).astype("datetime64[s]")),
        "level": pa.array(rng.choice(["INFO", "WARN", "ERROR"], n)),
        "msg": pa.array(msg),
    })


def bench_layouts(rows: pa.Table, granule: int = 8192) -> None:
    n = rows.num_rows
    n_gran = -(-n // granule)
    d = tempfile.mkdtemp()
    layouts = {
        "rg per granule": dict(row_group_size=granule),
        "rg per 16 granules": dict(row_group_size=granule * 16),
        "one rg per part": dict(row_group_size=n),
        "one rg + page index": dict(row_group_size=n, write_page_index=True, max_rows_per_page=granule),
    }
    rng = np.random.default_rng(1)
    print(f"\nreading k granules of a {n}-row part ({n_gran} granules of {granule} rows), all columns:")
    results = {}
    for name, opts in layouts.items():
        path = os.path.join(d, name.replace(" ", "_") + ".parquet")
        rgs = opts.pop("row_group_size")
        pq.write_table(rows, path, row_group_size=rgs, compression="zstd", **opts)
        md = pq.read_metadata(path)
        footer = md.serialized_size
        pf = pq.ParquetFile(path)
        per_rg = rgs // granule
        out = {}
        for k in (1, 8, 64):
            picks = np.sort(rng.choice(n_gran, size=min(k, n_gran), replace=False))
            need = sorted({int(g // per_rg) for g in picks})
            out[k] = _best(lambda: pf.read_row_groups(need))
        # footer parse cost (once per process per part in skipidx: cached)
        parse = _best(lambda: pq.read_metadata(path))
        results[name] = out
        print(f"  {name:22s} k=1 {out[1] * 1e3:7.2f} ms  k=8 {out[8] * 1e3:7.2f} ms  k=64 {out[64] * 1e3:7.2f} ms"
              f"  | file {os.path.getsize(path) / 2**20:6.1f} MiB, footer {footer / 1024:6.1f} KiB"
              f" parsed in {parse * 1e3:5.2f} ms")
    base = results["rg per granule"]
    for name, out in results.items():
        print(f"  ratio {name:22s} / rg-per-granule: k=1 {out[1] / base[1]:6.1f}x  k=8 {out[8] / base[8]:6.1f}x")


def bench_part_read(rows: pa.Table) -> None:
    from skipidx.store.catalog import Catalog
    from skipidx.store.checksums import VERIFIER
    from skipidx.store.metadata import ColumnMeta, TableMeta
    from skipidx.store.part import _FOOTERS
    from skipidx.core.types import ch_type_of, parse_type

    d = tempfile.mkdtemp()
    cols = [ColumnMeta(f.name, parse_type(f"Nullable({ch_type_of(f.type)})" if rows.column(f.name).null_count
                                          else ch_type_of(f.type))) for f in rows.schema]
    meta = TableMeta("logs", cols, [cols[0].name], 8192, [], {"max_part_rows": rows.num_rows})
    t = Catalog(d).create_table(meta)
    t0 = time.perf_counter()
    t.insert(rows)
    ins = time.perf_counter() - t0
    print(f"\nskipidx insert of {rows.num_rows} rows (no index): {ins:.2f} s ({rows.num_rows / ins / 1e6:.2f} M rows/s)")
    with t.snapshot() as s:
        p = s.parts[0]
        n = p.n_granules
        from skipidx.store.manifest import DATA_FILE

        path = os.path.join(p.path, DATA_FILE)
        fs = p._filesum(DATA_FILE)
        spans = p.manifest["row_groups"]
        for k in (1, 8, 64):
            ranges = [(g, g + 1) for g in np.linspace(0, n - 1, k).astype(int)]

            def verify_only():
                VERIFIER.forget()
                VERIFIER.verify(path, fs, spans[-1][1], fs.size)   # footer
                for a, b in ranges:
                    VERIFIER.verify(path, fs, spans[a][0], spans[b - 1][1])

            ver = _best(verify_only)
            warm = _best(lambda: p.read(None, ranges))
            print(f"  Part.read k={k:3d} granules: {warm * 1e3:8.2f} ms; checksum verification of those bytes"
                  f" (first read in a process only) {ver * 1e3:6.2f} ms = {ver / warm:5.1%} of the read")
        VERIFIER.forget()
        _FOOTERS.clear()
        full = _best(lambda: p.read(None), 3)
        print(f"  Part.read all {n} granules: {full * 1e3:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--only", choices=["checksums", "layouts", "part"], default=None)
    args = ap.parse_args()
    only = args.only
    if only in (None, "checksums"):
        bench_checksums()
    try:
        rows = make_rows(args.rows)
    except Exception:   # datagen missing or different: a simple stand-in
        rows = _fallback_rows(args.rows)
    if only in (None, "layouts"):
        bench_layouts(rows)
    if only in (None, "part"):
        bench_part_read(rows)


if __name__ == "__main__":
    main()
