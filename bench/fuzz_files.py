"""File-mutation fuzzer at scale (issue 13): damaged state.json, manifests,
index files and Parquet footers/data with every checksum recomputed; each
statement must answer or raise SkipidxError; worker processes catch aborts.

    python bench/fuzz_files.py --cases 10000 --workers 2 [--start 0]

Prints progress and a summary: cases, non-SkipidxError failures, crashed
and hung workers (all three must be 0), statements answered / refused.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import _file_fuzz  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the summary JSON here")
    a = ap.parse_args()
    t0 = time.time()
    done = [0]

    def log(res):
        done[0] += 1
        if done[0] % 250 == 0:
            print(f"{done[0]} cases, {time.time() - t0:.0f} s", flush=True)

    s = _file_fuzz.run_cases(range(a.start, a.start + a.cases), workers=a.workers, log=log)
    s["seconds"] = round(time.time() - t0, 1)
    s["load"] = os.getloadavg()
    by_target = {}
    for f in s["failures"]:
        by_target[str(f.get("target"))] = by_target.get(str(f.get("target")), 0) + 1
    print(json.dumps({k: v for k, v in s.items() if k != "failures"}, indent=1))
    for f in s["failures"][:20]:
        print(json.dumps(f)[:600])
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(s, fh, indent=1)
    return 0 if not (s["non_skipidx_error"] or s["crashes"] or s["hangs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
