"""Throughput of the exact-evaluation functions on synthetic log lines.

Prints rows/s and MB/s for each function next to a plain pyarrow baseline
(``pc.match_substring``, a single byte-wise substring scan), and the same
query in chDB over the same data in memory (Arrow table via Python) when chDB
is installed. Usage::

    python bench/bench_functions.py [--rows 1000000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

import pyarrow as pa
import pyarrow.compute as pc

from skipidx.execution import aggregates as A
from skipidx.expr import kernels as F

WORDS = ["error", "timeout", "connection", "refused", "GET", "POST", "user", "login", "failed", "ok",
         "request", "retry", "cache", "miss", "hit", "disk", "full", "db", "caf\u00e9", "shard", "node"]


def make_rows(n: int, seed: int = 7) -> pa.Array:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 12)))
        out.append(f"{rnd.choice(['INFO', 'WARN', 'ERROR'])} [10.0.{i % 256}.{rnd.randint(0, 255)}] "
                   f"/api/v{rnd.randint(1, 3)}/{rnd.choice(WORDS)}?id={rnd.randint(0, 10**6)} {words}")
    # one rare token, 100 rows
    for i in rnd.sample(range(n), min(100, n)):
        out[i] += " zebracorn"
    return pa.array(out, pa.string())


def timeit(fn, repeat: int) -> float:
    fn()  # warm-up (numba JIT cache load, RE2 compile)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    arr = make_rows(args.rows)
    mb = arr.nbytes / 1e6
    base = timeit(lambda: pc.match_substring(arr, pattern="timeout"), args.repeat)
    cases = {
        "pc.match_substring('timeout') [baseline]": lambda: pc.match_substring(arr, pattern="timeout"),
        "hasToken(frequent 'timeout')": lambda: F.has_token(arr, b"timeout"),
        "hasToken(rare 'zebracorn')": lambda: F.has_token(arr, b"zebracorn"),
        "hasToken(absent 'qqqq')": lambda: F.has_token(arr, b"qqqq"),
        "hasTokenCaseInsensitive('TIMEOUT')": lambda: F.has_token(arr, b"TIMEOUT", case_insensitive=True),
        "LIKE '%zebra%'": lambda: F.like(arr, b"%zebra%"),
        "LIKE 'ERROR%timeout%'": lambda: F.like(arr, b"ERROR%timeout%"),
        "ILIKE '%ZEBRA%'": lambda: F.like(arr, b"%ZEBRA%", case_insensitive=True),
        "startsWith('ERROR')": lambda: F.starts_with(arr, b"ERROR"),
        "multiSearchAny(5 needles)": lambda: F.multi_search_any(arr, [b"zebra", b"qqq", b"xyz", b"refused", b"pqr"]),
        "match('id=12+3')": lambda: F.match(arr, b"id=12+3"),
        "lower(s)": lambda: F.lower(arr),
        "IN (3 strings)": lambda: F.is_in(arr, [b"a", b"b", b"c"]),
    }
    print(f"{args.rows} rows, {mb:.1f} MB of string data; median of {args.repeat}")
    print(f"{'function':45s} {'ms':>9s} {'MB/s':>9s} {'x baseline':>11s}")
    for name, fn in cases.items():
        t = timeit(fn, args.repeat)
        print(f"{name:45s} {t * 1e3:9.1f} {mb / t:9.0f} {t / base:11.2f}")
    table = pa.table({"k": pc.binary_length(arr), "s": arr, "n": pa.array(range(args.rows), pa.int64())})
    specs = [("count", None, "c"), ("sum", "n", "s_n"), ("avg", "n", "a"), ("uniqExact", "k", "u"), ("max", "s", "mx")]
    t = timeit(lambda: A.aggregate(table, [], specs), args.repeat)
    print(f"{'aggregate(whole table, 5 aggs)':45s} {t * 1e3:9.1f}")
    t = timeit(lambda: A.aggregate(table, ["k"], specs), args.repeat)
    print(f"{'aggregate(GROUP BY length, 5 aggs)':45s} {t * 1e3:9.1f}")
    try:
        import chdb
    except ImportError:
        return
    sess_tbl = pa.table({"s": arr})
    for name, sql in [("chDB hasToken(rare)", "SELECT count() FROM Python(sess_tbl) WHERE hasToken(s, 'zebracorn')"),
                      ("chDB LIKE '%zebra%'", "SELECT count() FROM Python(sess_tbl) WHERE s LIKE '%zebra%'")]:
        t = timeit(lambda: chdb.query(sql, "CSV"), args.repeat)
        print(f"{name:45s} {t * 1e3:9.1f}  (includes handing the Arrow table to chDB)")


if __name__ == "__main__":
    main()
