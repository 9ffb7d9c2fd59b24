"""Run the quick variant of every benchmark that has one (``make bench``).

    python bench/run_all.py                 # sbbf, tokenizers, build, query, research (--quick each)
    python bench/run_all.py --spark         # also bench_spark.py --quick (needs Java 17+)
    python bench/run_all.py --only query    # one of them

Each script runs in its own process and prints its own figures; this prints
the machine's load before each and a summary of what ran. Use the scripts'
own options for full-size runs (see each one's --help).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (name, script, arguments) of the quick runs, cheapest first.
QUICK = [
    ("sbbf", "bench_sbbf.py", ["--quick"]),
    ("tokenizers", "bench_tokenizers.py", ["--quick"]),
    ("build", "bench_build.py", ["--quick"]),
    ("query", "bench_query.py", ["--quick"]),
    ("research", "bench_research.py", ["--quick"]),
]
SPARK = ("spark", "bench_spark.py", ["--quick"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spark", action="store_true", help="also run the Spark benchmark")
    ap.add_argument("--only", choices=[n for n, _, _ in QUICK + [SPARK]], help="run one benchmark")
    args = ap.parse_args(argv)
    runs = QUICK + ([SPARK] if args.spark else [])
    if args.only:
        runs = [r for r in QUICK + [SPARK] if r[0] == args.only]
    summary = []
    for name, script, extra in runs:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"\n=== {name}: {script} {' '.join(extra)}  (load {load:.2f})", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(HERE / script), *extra])
        summary.append((name, rc, time.perf_counter() - t0))
    print("\n=== summary")
    for name, rc, secs in summary:
        print(f"  {name:<11} {'ok' if rc == 0 else f'FAILED (exit {rc})':<16} {secs:7.1f} s")
    return 0 if all(rc == 0 for _, rc, _ in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
