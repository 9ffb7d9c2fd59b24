"""Compile the numba kernels ahead of the first real query (``skipidx warm``).

    python -m skipidx.apps.warm          # or: skipidx warm

numba compiles a kernel the first time a process calls it and keeps the
machine code in its cache (``__pycache__`` next to the package, or
``NUMBA_CACHE_DIR``); later processes load it in milliseconds. A fresh
install has an empty cache, so its first query would spend seconds
compiling. ``make`` runs this once when it sets up ``.venv``: a small
temporary table with every built-in index type is loaded, merged and
queried with each kind of condition, large enough that the compiled paths
(not only the small-input numpy ones) run, so every kernel an insert, a
merge or a query uses is compiled and cached. It prints what it took.
"""
from __future__ import annotations

import sys
import time

_DDL = """CREATE TABLE w (
    id UInt64, ts DateTime, k Int32, f Float64, s String, lc LowCardinality(String), n Nullable(UInt16),
    INDEX i_tok s TYPE tokenbf_v1(4096, 3, 0) GRANULARITY 1,
    INDEX i_ngr s TYPE ngrambf_v1(3, 4096, 2, 0) GRANULARITY 1,
    INDEX i_stok s TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX i_sngr s TYPE sbbf('ngram', n = 4, min_n = 3, fpp = 0.01) GRANULARITY 1,
    INDEX i_low lower(s) TYPE tokenbf_v1(4096, 3, 0) GRANULARITY 1,
    INDEX i_bf k TYPE bloom_filter GRANULARITY 1,
    INDEX i_val id TYPE sbbf('value', fpp = 0.001) GRANULARITY 2,
    INDEX i_sbf s TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX i_mm ts TYPE minmax GRANULARITY 1,
    INDEX i_set lc TYPE set(100) GRANULARITY 1
) ENGINE = MergeTree ORDER BY ts SETTINGS index_granularity = 256"""

_QUERIES = [
    "SELECT count() FROM w WHERE hasToken(s, 'alpha')",
    "SELECT count() FROM w WHERE hasTokenCaseInsensitive(s, 'ALPHA')",
    "SELECT count() FROM w WHERE s LIKE '%lph%'",
    "SELECT count() FROM w WHERE s LIKE '%ab%' OR s NOT LIKE 'x%'",
    "SELECT count() FROM w WHERE startsWith(s, 'alpha') OR endsWith(s, 'beta')",
    "SELECT count() FROM w WHERE multiSearchAny(s, ['alp', 'gamm'])",
    "SELECT count() FROM w WHERE match(s, 'al.ha')",
    "SELECT count() FROM w WHERE s = 'alpha beta 7' AND k = 5",
    "SELECT count() FROM w WHERE k IN ({many})",
    "SELECT count() FROM w WHERE id IN ({many})",
    "SELECT count() FROM w WHERE s IN ({strs})",
    "SELECT count() FROM w WHERE lc = 'c3' AND n IS NULL",
    "SELECT count(), sum(f) FROM w WHERE ts > '2024-01-01 00:10:00' AND hasToken(s, 'beta')",
    "SELECT lc, count() FROM w WHERE hasToken(s, 'gamma') GROUP BY lc ORDER BY lc",
]


def warm(rows: int = 40_000, out=sys.stdout) -> float:
    """Run the warm-up workload in a temporary database; returns its seconds."""
    import numpy as np
    import pyarrow as pa

    import skipidx

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    words = np.array(["alpha", "beta", "gamma", "delta", "café", "東京", "timeout", "x1"])
    with skipidx.connect() as db:
        db.sql(_DDL)
        for part in range(2):
            w = words[rng.integers(0, len(words), (rows, 3))]
            s = [f"{a} {b} {c} {i}" for i, (a, b, c) in enumerate(w.tolist())]
            db.insert("w", pa.table({
                "id": np.arange(part * rows, (part + 1) * rows, dtype=np.uint64),
                "ts": pa.array((1_704_067_200 + np.arange(rows) // 8 + part * rows).astype("datetime64[s]")),
                "k": rng.integers(0, 10_000, rows).astype(np.int32),
                "f": rng.normal(0, 1, rows),
                "s": pa.array(s),
                "lc": pa.array([f"c{i % 10}" for i in range(rows)]).dictionary_encode(),
                "n": pa.array([None if i % 5 == 0 else i % 300 for i in range(rows)], pa.uint16()),
            }))
        db.sql("OPTIMIZE TABLE w FINAL")
        many = ", ".join(str(v) for v in range(0, 40_000, 7))
        strs = ", ".join(f"'alpha beta {i}'" for i in range(3000))
        for q in _QUERIES:
            db.sql(q.format(many=many, strs=strs)).fetchall()
    # external tables' dictionary pages: the RLE / bit-packed decoder
    from skipidx.core._kernels.rle import rle_hybrid

    rle_hybrid(np.array([3, 0xAA], dtype=np.uint8), 0, 2, 1, 0, 8, np.empty(8, dtype=np.int32))
    took = time.perf_counter() - t0
    print(f"skipidx: kernels compiled and cached in {took:.1f} s", file=out)
    return took


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="skipidx warm", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=40_000, help="rows per part of the warm-up table")
    args = ap.parse_args(argv)
    warm(args.rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
