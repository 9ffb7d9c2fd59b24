"""Scale with data: the generated log table at 1M, 10M and 100M rows.

    nice python bench/bench_100m.py [--dir /work/tmp/skipidx-100m] [--sizes 1,10,100] [--repeat 15]
    nice python bench/bench_100m.py --keep        # keep the tables afterwards (default: removed)
    nice python bench/bench_100m.py --queries-only  # rerun only the timed query section

For each size (millions of rows) one table of the seeded log data
(skipidx.apps.datagen) with ClickHouse's index DDL for the selective queries
(tokenbf_v1 on msg, bloom_filter on trace_id and user_id; background merges
off): insert in segments of 10M rows (each committed on its own), then
OPTIMIZE FINAL into one part, so a lookup checks every index granule of one
part (1M: ~122, 10M: ~1.2k, 100M: ~12.2k granules per index). Each step's
wall and process CPU time is recorded in ``state.json`` in the work
directory: an interrupted run resumes where it stopped (a table's row count
says which segments are in).

The timed query section takes ``/tmp/bench.lock`` (flock) and runs the
selective queries (hasToken rare and absent, trace_id =, user_id IN (10))
round-robin over the sizes: the median latency, the median prune time
(``stats.prune_ms``: loading the kept index granules from cache and
evaluating the RPN over all granules), the first (cold-cache) prune time,
and granules kept / total. Ratios show how prune cost grows with granules:
linear growth is 10x per size step; the target for a lookup is 100M within
2x of 10M. Asserts nothing; prints progress.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402

INDEXES = """,
    INDEX msg_tokens msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1"""
SEGMENT = 10_000_000
#: the work directory (set by main)
WORK = "."


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class State:
    def __init__(self, path: str) -> None:
        self.path = path
        try:
            with open(path) as f:
                self.d = json.load(f)
        except (OSError, ValueError):
            self.d = {}

    def get(self, key: str):
        return self.d.get(key)

    def put(self, key: str, value) -> None:
        self.d[key] = value
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.d, f, indent=1)
        os.replace(tmp, self.path)


def batches_from(rows: int, start: int, stop: int):
    """The generated batches of rows [start, stop) of a `rows`-row table (1M-row batches)."""
    done = start
    for b in datagen.generate(rows, 42, batch_rows=1_000_000, start=start):
        yield b
        done += b.num_rows
        if done >= stop:
            return


def table_bytes(db, name: str) -> tuple[int, int]:
    snap = db.catalog.table(name).snapshot()
    data = idx = 0
    for p in snap.parts:
        for f, e in p.manifest["files"].items():
            if f == "data.parquet":
                data += int(e["size"])
            else:
                idx += int(e["size"])
    snap.close()
    return data, idx


def load(db, st: State, millions: int, optimize: bool = True) -> None:
    rows = millions * 1_000_000
    name = f"logs_{millions}m"
    if name not in db.tables():
        db.sql((datagen.SCHEMA_SQL + " SETTINGS background_merges = 0").format(table=name, indexes=INDEXES))
    have = db.sql(f"SELECT count() FROM {name}").fetchall()[0][0]
    seg = min(SEGMENT, rows)
    ins = st.get(f"{name}.insert") or {"wall_s": 0.0, "cpu_s": 0.0}
    while have < rows:
        stop = min(rows, have + seg)
        log(f"{name}: inserting rows {have:,}..{stop:,}")
        w0 = time.perf_counter()
        # the segment goes through a Parquet file (generation timed apart): the insert
        # streams it in blocks, as INSERT ... FROM INFILE does
        seg_file = os.path.join(WORK, f"segment_{name}.parquet")
        import pyarrow.parquet as pq

        pw = None
        for b in batches_from(rows, have, stop):
            if pw is None:
                pw = pq.ParquetWriter(seg_file, b.schema)
            pw.write_batch(b)
        pw.close()
        gen_s = time.perf_counter() - w0
        w1, c1 = time.perf_counter(), cpu_s()
        db.sql(f"INSERT INTO {name} FROM INFILE '{seg_file}' FORMAT Parquet")
        os.unlink(seg_file)
        ins["wall_s"] += time.perf_counter() - w1
        ins["cpu_s"] += cpu_s() - c1
        ins["gen_s"] = ins.get("gen_s", 0.0) + gen_s
        ins["peak_rss_mib"] = max(ins.get("peak_rss_mib", 0), peak_mib())
        st.put(f"{name}.insert", ins)
        have = db.sql(f"SELECT count() FROM {name}").fetchall()[0][0]
        log(f"{name}: {have:,} rows in ({time.perf_counter() - w0:.0f} s this segment, "
            f"insert total {ins['wall_s']:.0f} s wall / {ins['cpu_s']:.0f} s CPU)")
    if optimize and (st.get(f"{name}.optimize") is None or len(db.catalog.table(name).state.parts) > 1):
        log(f"{name}: OPTIMIZE FINAL of {len(db.catalog.table(name).state.parts)} parts")
        w0, c0 = time.perf_counter(), cpu_s()
        db.sql(f"OPTIMIZE TABLE {name} FINAL")
        st.put(f"{name}.optimize", {"wall_s": time.perf_counter() - w0, "cpu_s": cpu_s() - c0,
                                     "peak_rss_mib": peak_mib()})
        log(f"{name}: optimized in {time.perf_counter() - w0:.0f} s")
    d, i = table_bytes(db, name)
    st.put(f"{name}.bytes", {"data": d, "index": i})


def picks(db, name: str) -> dict:
    """Lookup constants drawn from the table's rows (seeded): one trace id, ten user ids >= 200."""
    n = db.sql(f"SELECT count() FROM {name}").fetchall()[0][0]
    rng = np.random.default_rng(7)
    rows = sorted(int(x) for x in rng.integers(0, n, 40))
    ids = ", ".join(str(r) for r in rows)
    t = db.sql(f"SELECT trace_id, user_id FROM {name} WHERE id IN ({ids})").to_arrow()
    users = [u for u in t.column("user_id").to_pylist() if u >= 200][:10]
    return {"trace": t.column("trace_id")[0].as_py(), "users": users}


def queries(p: dict) -> list[tuple[str, str]]:
    return [
        ("hasToken rare", f"hasToken(msg, '{datagen.RARE_TOKEN}')"),
        ("hasToken absent", f"hasToken(msg, '{datagen.ABSENT_TOKEN}')"),
        ("trace_id =", f"trace_id = '{p['trace']}'"),
        ("user_id IN (10)", f"user_id IN ({', '.join(str(u) for u in p['users'])})"),
    ]


def timed(db, sizes: list[int], repeat: int) -> dict:
    from skipidx.core.lru import clear_caches

    out: dict = {}
    qs = {m: queries(picks(db, f"logs_{m}m")) for m in sizes}
    labels = [q[0] for q in qs[sizes[0]]]
    for _label, where in qs[sizes[0]]:   # one-time costs (kernels, imports) out of the cold figures
        db.sql(f"SELECT count() FROM logs_{sizes[0]}m WHERE {where}")
    for li, label in enumerate(labels):
        cold = {}
        for m in sizes:
            clear_caches()
            r = db.sql(f"SELECT count() FROM logs_{m}m WHERE {qs[m][li][1]}")
            cold[m] = r.stats.prune_ms
        samples = {m: ([], []) for m in sizes}
        for _ in range(repeat):
            for m in sizes:
                t0 = time.perf_counter()
                r = db.sql(f"SELECT count() FROM logs_{m}m WHERE {qs[m][li][1]}")
                samples[m][0].append((time.perf_counter() - t0) * 1000)
                samples[m][1].append(r.stats.prune_ms)
        for m in sizes:
            st = r.stats if m == sizes[-1] else db.sql(f"SELECT count() FROM logs_{m}m WHERE {qs[m][li][1]}").stats
            out[(label, m)] = {"ms": statistics.median(samples[m][0]), "prune_ms": statistics.median(samples[m][1]),
                               "cold_prune_ms": cold[m], "kept": st.granules_selected, "total": st.granules_total,
                               "rows": db.sql(f"SELECT count() FROM logs_{m}m WHERE {qs[m][li][1]}").fetchall()[0][0]}
        log("  " + label + ": " + ", ".join(
            f"{m}M {out[(label, m)]['ms']:.1f} ms (prune {out[(label, m)]['prune_ms']:.2f} ms, "
            f"{out[(label, m)]['kept']}/{out[(label, m)]['total']})" for m in sizes))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/work/tmp/skipidx-100m")
    ap.add_argument("--sizes", default="1,10,100", help="millions of rows, comma-separated")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--keep", action="store_true", help="keep the tables afterwards")
    ap.add_argument("--queries-only", action="store_true")
    ap.add_argument("--no-optimize", action="store_true",
                    help="leave the inserted parts as they are (the query section then prunes over many parts)")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    os.makedirs(args.dir, exist_ok=True)
    global WORK
    WORK = args.dir
    st = State(os.path.join(args.dir, "state.json"))
    db = skipidx.connect(os.path.join(args.dir, "db"))
    try:
        if not args.queries_only:
            for m in sizes:
                load(db, st, m, optimize=not args.no_optimize)
        log("timed query section: waiting for /tmp/bench.lock")
        with open("/tmp/bench.lock", "a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            la0 = os.getloadavg()
            log(f"lock taken; load {la0[0]:.2f}")
            res = timed(db, sizes, args.repeat)
            la1 = os.getloadavg()
        print()
        parts = {m: len(db.catalog.table(f"logs_{m}m").state.parts) for m in sizes}
        print(f"sizes {sizes} M rows (parts {parts}), 8192-row granules; indexes: tokenbf_v1(32768,3,0) on msg, "
              f"bloom_filter on trace_id and user_id; {os.cpu_count()} cores; load {la0[0]:.2f} -> {la1[0]:.2f}")
        print(f"{'size':>5s} {'insert s':>9s} {'ins CPU s':>9s} {'rows/s':>9s} {'OPTIMIZE s':>10s} "
              f"{'opt CPU s':>9s} {'data MiB':>9s} {'index MiB':>9s} {'peak RSS MiB':>12s}")
        for m in sizes:
            ins, opt, b = (st.get(f"logs_{m}m.insert") or {}), (st.get(f"logs_{m}m.optimize") or {}), \
                (st.get(f"logs_{m}m.bytes") or {})
            print(f"{m:>4d}M {ins.get('wall_s', 0):9.1f} {ins.get('cpu_s', 0):9.1f} "
                  f"{m * 1e6 / max(ins.get('wall_s', 1), 1e-9):9.0f} {opt.get('wall_s', 0):10.1f} "
                  f"{opt.get('cpu_s', 0):9.1f} {b.get('data', 0) / 2**20:9.0f} {b.get('index', 0) / 2**20:9.0f} "
                  f"{max(ins.get('peak_rss_mib', 0), opt.get('peak_rss_mib', 0)):12.0f}")
        print()
        print(f"{'query':16s} {'size':>5s} {'rows':>6s} {'kept/total':>13s} {'ms':>8s} {'prune ms':>9s} "
              f"{'cold prune':>10s} {'us/granule':>10s} {'prune vs prev size':>18s}")
        labels = []
        for (label, _m) in res:
            if label not in labels:
                labels.append(label)
        for label in labels:
            prev = None
            for m in sizes:
                r = res[(label, m)]
                grow = f"{r['prune_ms'] / prev:8.2f}x" if prev else "-"
                print(f"{label:16s} {m:>4d}M {r['rows']:>6d} {r['kept']:>6d}/{r['total']:<6d} {r['ms']:8.2f} "
                      f"{r['prune_ms']:9.3f} {r['cold_prune_ms']:10.2f} "
                      f"{1000 * r['prune_ms'] / max(r['total'], 1):10.3f} {grow:>18s}")
                prev = r["prune_ms"]
        print("\nprune ms: median stats.prune_ms of the repeated query (index granules cached); cold: the first "
              "run after clear_caches(); granule growth per size step is 10x (linear cost would be 10x)")
    finally:
        db.close()
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)
        log(f"removed {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
