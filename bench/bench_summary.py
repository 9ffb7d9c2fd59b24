"""Group summaries vs the flat filter check, at ~1.2k and ~12.2k index granules.

Builds the index granules of a generated log table (``skipidx.apps.datagen``)
chunk by chunk as the part writer does (1M rows = 128 granules of 8192 rows
per chunk, summaries per chunk), without writing data files, so ~100M rows'
worth of filters (12.2k granules) fit in a few minutes and in memory. Then,
per index and query kind (``=``, ``IN (10)``, ``IN (100)``, ``hasToken``), it
times the check of all granules (the condition's ``mask`` as the pruner runs
it, with a different constant every round so the probes miss the cache as
the lookups of an application would), flat vs through the summaries, over
the first 1.2k granules and over all of them; the needles come from the
first 1.2k granules' rows. Each index is built several ways to compare the
group size G and the summary fpp (summary bytes printed with each).

    python bench/bench_summary.py --chunks 100 --lock /tmp/bench.lock
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

from skipidx.apps import datagen
from skipidx.core import sizing
from skipidx.indexes import bloom
from skipidx.indexes.base import Atom, IndexDef, get_index_type
from skipidx.planner.prune import _concat_sbbf

GRANULE = 8192
CHUNK = 1 << 20

# (label, definition, column, group, summary fpp)
CONFIGS = [
    ("bloom_filter(trace_id) G64", IndexDef("b", "trace_id", None, "bloom_filter"), "trace_id", 64, 0.01),
    ("sbbf(trace_id, 2e-5) G32", IndexDef("a", "trace_id", None, "sbbf", ("value",), (("fpp", 0.00002),)),
     "trace_id", 32, 0.01),
    ("sbbf(trace_id, 2e-5) G64", IndexDef("a", "trace_id", None, "sbbf", ("value",), (("fpp", 0.00002),)),
     "trace_id", 64, 0.01),
    ("bloom_filter(user_id) G64", IndexDef("u", "user_id", None, "bloom_filter"), "user_id", 64, 0.01),
    ("sbbf(user_id, 1e-4) G64", IndexDef("v", "user_id", None, "sbbf", ("value",), (("fpp", 0.0001),)),
     "user_id", 64, 0.01),
    ("tokenbf_v1(msg) G64", IndexDef("m", "msg", None, "tokenbf_v1", (32768, 3, 0)), "msg", 64, 0.01),
]


def build(chunks: int, seed: int, configs: list, msg: bool):
    parts: dict[str, list] = {c[0]: [] for c in configs}
    types = {}
    needles = {"trace_id": [], "user_id": [], "msg": []}
    rng = np.random.default_rng(seed)
    done = 0
    t0 = time.perf_counter()
    for batch in datagen.generate(chunks * CHUNK, seed=seed, batch_rows=CHUNK):
        t = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        n = t.num_rows
        zs = np.arange(0, n, GRANULE)
        zl = np.minimum(zs + GRANULE, n) - zs
        if done < 10:
            pick = rng.integers(0, n, 40)
            needles["trace_id"] += t.column("trace_id").take(pa.array(pick)).to_pylist()
            needles["user_id"] += t.column("user_id").take(pa.array(pick)).to_pylist()
        for label, d, col, group, sfpp in configs:
            if col == "msg" and not msg:
                continue
            it = types.get(label)
            if it is None:
                it = types[label] = get_index_type(d.type_name)(d, t.schema.field(col).type)
            agg = it.aggregator(threads=1)
            agg.summary_group = group
            saved = sizing.SUMMARY_FPP
            sizing.SUMMARY_FPP = sfpp
            try:
                parts[label].append(agg.build(t.column(col).combine_chunks(), zs, zl))
            finally:
                sizing.SUMMARY_FPP = saved
        done += 1
        if done % 10 == 0:
            print(f"  built {done} chunks ({time.perf_counter() - t0:.0f} s)", flush=True)
    return parts, types, needles


def timed(cond_list, g, summary: bool, reps: int) -> float:
    """Median ms of the check (the pruner's ``mask`` call) over all granules of `g`."""
    saved = g.summary
    if not summary:
        g.summary = None
    xs = []
    try:
        for i in range(reps):
            c = cond_list[i % len(cond_list)]
            t0 = time.perf_counter()
            c.mask(g)
            xs.append((time.perf_counter() - t0) * 1e3)
    finally:
        g.summary = saved
    return statistics.median(xs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100, help="1M-row chunks (100 -> ~12.2k granules)")
    ap.add_argument("--small", type=int, default=10, help="chunks of the small part (10 -> ~1.2k granules)")
    ap.add_argument("--reps", type=int, default=41)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--lock", default=None, help="take this flock for the timed part only (e.g. /tmp/bench.lock)")
    ap.add_argument("--only", default=None, help="comma-separated substrings of the configurations to run")
    ap.add_argument("--no-msg", action="store_true", help="skip the tokenbf_v1 index (the slow build)")
    args = ap.parse_args(argv)
    configs = [c for c in CONFIGS if args.only is None or any(o in c[0] for o in args.only.split(","))]
    parts, types, needles = build(args.chunks, args.seed, configs, not args.no_msg)
    if args.lock:
        # the build needs no quiet machine; the timed checks do
        import fcntl
        import os

        fd = os.open(args.lock, os.O_RDWR | os.O_CREAT)
        t0 = time.perf_counter()
        fcntl.flock(fd, fcntl.LOCK_EX)
        print(f"(waited {time.perf_counter() - t0:.0f} s for {args.lock}; load {os.getloadavg()[0]:.1f})", flush=True)
    rng = np.random.default_rng(7)
    words = ["kraken", "zyzzyva", "timeout", "connection", "retry", "Zürich"]
    print(f"\ngranules small / large: {sum(len(g) for g in parts[configs[0][0]][:args.small])} / "
          f"{sum(len(g) for g in parts[configs[0][0]])}; median ms of the check over all granules, "
          f"{args.reps} rounds, a different constant each round")
    print("| index | summary bytes (% of filters) | query | small flat | small summary | large flat | large summary "
          "| large/small (summary) | large/small (flat) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, d, col, group, sfpp in configs:
        if not parts[label]:
            continue
        it = types[label]
        small = _concat_sbbf(parts[label][:args.small])
        large = _concat_sbbf(parts[label])
        sb = large.summary.nbytes if large.summary is not None else 0
        fb = large.words.nbytes
        if col == "msg":
            kinds = {"hasToken": [Atom("hasToken", col, None, (w.encode(),)) for w in words]}
        else:
            pool = needles[col]
            enc = (lambda v: v.encode()) if col == "trace_id" else (lambda v: v)

            def atoms(k: int) -> list:
                out = []
                for _ in range(12):
                    vals = [enc(pool[i]) for i in rng.choice(len(pool), k, replace=False)]
                    out.append(Atom("equals", col, None, (vals[0],)) if k == 1 else Atom("in", col, None, (tuple(vals),)))
                return out

            kinds = {"=": atoms(1), "IN (10)": atoms(10), "IN (100)": atoms(100)}
        for kind, atom_list in kinds.items():
            conds = [it.condition(a) for a in atom_list]
            r = [timed(conds, g, s, args.reps) for g in (small, large) for s in (False, True)]
            # the kept granules agree with or are within the flat check's
            for c in conds[:3]:
                saved = large.summary
                large.summary = None
                flat = np.asarray(c.mask(large).can_be_true)
                large.summary = saved
                withs = np.asarray(c.mask(large).can_be_true)
                assert not np.any(withs & ~flat)
            print(f"| {label} | {sb / 1e6:.1f} MB ({sb / fb:.0%}) | {kind} | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} "
                  f"| {r[3]:.3f} | {r[3] / r[1]:.1f}x | {r[2] / r[0]:.1f}x |", flush=True)
    import os

    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
