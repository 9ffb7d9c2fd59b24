"""Index build benchmark: skipidx's index types vs the same DDL in chDB, in one run.

Data: the seeded synthetic log table of ``skipidx.apps.datagen`` (id, ts, level,
service, trace_id, user_id, http_status, msg of 60-200 bytes), written once
to a Parquet file that both sides read.

skipidx side: every index is built the way the store builds it -- parts of at
most ``--part-rows`` rows (default 1M), index granules of 8192 rows -- in a
fresh worker process per index (so its peak memory is its own: ru_maxrss of
the worker minus its RSS after loading the column). Timed: the aggregator's
``build`` over all parts (tokenize, hash, size, insert, fill statistics) and,
separately, ``to_arrow`` (the Lance zone table the store writes).

chDB side: MergeTree ``INSERT INTO t SELECT * FROM file(...)`` with exactly one
index, minus the same INSERT without indexes, so the difference is what
ClickHouse spends on that index. ``--repeat`` rounds run every configuration
in turn; the cost is the median over rounds of the difference within a round
(pairing cancels load that drifts between rounds, which a difference of two
best-of-N figures does not). skipidx builds each index ``--repeat`` times
and keeps the best pass.
Both sides are measured in CPU seconds of all their threads
(``time.process_time``; chDB runs in-process) -- **the ratio the targets use**,
because it stays comparable when the machine is shared -- and in wall
seconds (chDB's INSERT runs reading, sorting and index building in parallel
streams, so its wall difference can be far below its CPU difference, or
negative under noise). As a cross-check the table also shows ClickHouse's
own account of the index work, the ``MergeTreeDataWriterSkipIndicesCalculationMicroseconds``
profile event of the INSERT ("CH calc s": elapsed time of the index
calculation in the part writer; no subtraction, but it includes time the
writer thread waits for a CPU, so on a loaded machine it overstates the work
and no ratio is taken against it).

The adaptive ``sbbf`` forms have no ClickHouse counterpart; each is compared
with the ClickHouse index it replaces, doing the same job:

* ``sbbf('token')`` vs ``tokenbf_v1(32768, 3, 0)``: the same tokens
  (ClickHouse's splitByNonAlpha is skipidx's ``token`` tokenizer), the same
  8192-row granules, and filters of about the same size (fpp 0.01 for ~27k
  distinct tokens per granule sizes them at ~35 KiB on average against
  tokenbf's fixed 32 KiB; the MiB columns show both). The work differs in
  kind: tokenbf_v1 hashes every token and sets 3 bits per token occurrence;
  sbbf counts each granule's distinct tokens exactly, sizes the filter from
  that count and inserts each distinct token once. (ClickHouse's ``text``
  index also keeps exact per-granule dictionaries, but builds posting lists
  too -- about 10x tokenbf_v1's cost on these rows -- so it is not the
  like-for-like reference.)
* ``sbbf('ngram', n=3)`` vs ``ngrambf_v1(3, 65536, 2, 0)``: the same trigrams
  and granules; sbbf's filters are ~12x smaller (sized for the ~20k distinct
  trigrams).

Usage::

    python bench/bench_build.py            # 10M rows
    python bench/bench_build.py --quick    # 1M rows
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq

GRANULE = 8192

#: (label, column, skipidx type, args, kwargs, chDB TYPE clause or None, chDB label compared against)
SPECS = [
    ("tokenbf_v1(32768,3,0) msg", "msg", "tokenbf_v1", (32768, 3, 0), (), "tokenbf_v1(32768, 3, 0)", None),
    ("ngrambf_v1(3,65536,2,0) msg", "msg", "ngrambf_v1", (3, 65536, 2, 0), (), "ngrambf_v1(3, 65536, 2, 0)", None),
    ("bloom_filter trace_id", "trace_id", "bloom_filter", (), (), "bloom_filter", None),
    ("bloom_filter user_id", "user_id", "bloom_filter", (), (), "bloom_filter", None),
    ("minmax ts", "ts", "minmax", (), (), "minmax", None),
    ("sbbf('token') msg", "msg", "sbbf", ("token",), (), None, "tokenbf_v1(32768,3,0) msg"),
    ("sbbf('ngram', n=3) msg", "msg", "sbbf", ("ngram",), (("n", 3),), None, "ngrambf_v1(3,65536,2,0) msg"),
]


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _reset_hwm() -> bool:
    """Reset VmHWM (Linux >= 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _hwm_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _build_pass(agg, values, part_rows: int) -> dict:
    """One pass over the column: every part built, timed (wall and CPU of all threads) and written to Arrow."""
    n = len(values)
    build_s = arrow_s = cpu_s = 0.0
    filter_bytes = table_bytes = zones = 0
    fpp_max = 0.0
    saturated = 0
    for r0 in range(0, n, part_rows):
        part = values.slice(r0, min(part_rows, n - r0))
        m = len(part)
        zs = np.arange(0, m, GRANULE, dtype=np.int64)
        zl = np.minimum(GRANULE, m - zs)
        t0, c0 = time.perf_counter(), time.process_time()
        g = agg.build(part, zs, zl)
        t1, c1 = time.perf_counter(), time.process_time()
        cpu_s += c1 - c0
        t = g.to_arrow(f"part_{r0}")
        t2 = time.perf_counter()
        build_s += t1 - t0
        arrow_s += t2 - t1
        table_bytes += t.nbytes
        zones += len(g)
        if hasattr(g, "bank"):
            filter_bytes += g.nbytes
            fpp_max = max(fpp_max, float(g.fpp_estimate.max()) if len(g) else 0.0)
            saturated += int(g.saturated.sum())
    return {"build_s": build_s, "cpu_s": cpu_s, "arrow_s": arrow_s, "filter_bytes": filter_bytes,
            "table_bytes": table_bytes, "zones": zones, "fpp_max": fpp_max, "saturated": saturated}


def worker(path: str, spec_no: int, part_rows: int, repeat: int = 1) -> dict:
    """Build one index over the whole file in parts, `repeat` times (the best pass is kept, as for chDB);
    runs in its own process."""
    from skipidx.indexes.base import IndexDef, get_index_type

    label, col, type_name, args, kwargs, _, _ = SPECS[spec_no]
    values = pq.read_table(path, columns=[col]).column(col).combine_chunks()
    n = len(values)
    idx = get_index_type(type_name)(IndexDef("i", col, None, type_name, args, kwargs), values.type)
    agg = idx.aggregator()
    # warm-up: load the numba kernels from the on-disk cache (or compile them once)
    w = min(n, 3 * GRANULE)
    wzs = np.arange(0, w, GRANULE, dtype=np.int64)
    agg.build(values.slice(0, w), wzs, np.minimum(GRANULE, w - wzs))
    # peak memory of the build alone: reset the kernel's high-water mark (VmHWM)
    # after loading the column, read it back at the end
    rss0 = _rss_kib()
    hwm_reset = _reset_hwm()
    best = None
    for _ in range(max(1, repeat)):
        run = _build_pass(agg, values, part_rows)
        if best is None or run["cpu_s"] < best["cpu_s"]:
            best = {**run, "build_s": min(run["build_s"], best["build_s"]) if best else run["build_s"]}
        else:
            best["build_s"] = min(best["build_s"], run["build_s"])
    build_s, cpu_s, arrow_s = best["build_s"], best["cpu_s"], best["arrow_s"]
    filter_bytes, table_bytes, zones = best["filter_bytes"], best["table_bytes"], best["zones"]
    fpp_max, saturated = best["fpp_max"], best["saturated"]
    peak_kib = _hwm_kib() if hwm_reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"label": label, "rows": n, "build_s": build_s, "cpu_s": cpu_s, "to_arrow_s": arrow_s, "zones": zones,
            "filter_bytes": filter_bytes, "table_bytes": table_bytes, "fpp_max": fpp_max, "saturated": saturated,
            "peak_delta_mib": max(0, peak_kib - rss0) / 1024, "peak_mib": peak_kib / 1024,
            "threads": __import__("skipidx.indexes.bloom", fromlist=["BUILD_THREADS"]).BUILD_THREADS}


def run_worker(path: str, spec_no: int, part_rows: int, repeat: int = 1) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", str(spec_no), "--file", path,
                          "--part-rows", str(part_rows), "--repeat", str(repeat)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"worker {SPECS[spec_no][0]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


#: ClickHouse's profile event for the time its part writer spends calculating skip indexes.
_CH_INDEX_EVENT = "MergeTreeDataWriterSkipIndicesCalculationMicroseconds"


def chdb_insert_times(path: str, repeat: int) -> tuple[dict, dict, dict, dict]:
    """Per chDB configuration (no index, each index alone, all five): best INSERT ... SELECT FROM file()
    wall and CPU seconds, index bytes, and ClickHouse's own index-calculation seconds (profile event)."""
    from skipidx.apps.research import chdb_session as _chdb
    from skipidx.apps.datagen import SCHEMA_SQL

    db = _chdb.scratch_database("bench_build")   # the process-wide chDB session, a database of our own

    def event_us() -> int:
        r = str(_chdb.query(f"SELECT value FROM system.events WHERE event = '{_CH_INDEX_EVENT}'", "CSV")).strip()
        return int(r) if r else 0

    def insert(index_sql: str) -> tuple[float, float, int, float]:
        _chdb.query(f"DROP TABLE IF EXISTS {db}.t SYNC")
        _chdb.query(SCHEMA_SQL.format(table=f"{db}.t", indexes=index_sql))
        e0 = event_us()
        t0, c0 = time.perf_counter(), time.process_time()   # chDB runs in-process: CPU of all its threads
        _chdb.query(f"INSERT INTO {db}.t SELECT * FROM file('{path}', Parquet)")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        calc = (event_us() - e0) / 1e6
        r = _chdb.query(f"SELECT sum(data_uncompressed_bytes) FROM system.data_skipping_indices "
                        f"WHERE database = '{db}' AND table = 't'", "CSV")
        return wall, cpu, int(float(str(r).strip() or 0)), calc

    configs = [("(no index)", "")]
    configs += [(label, f",\n    INDEX i {col} TYPE {ch_type} GRANULARITY 1")
                for label, col, _, _, _, ch_type, _ in SPECS if ch_type is not None]
    configs.append(("(all five)", "".join(f",\n    INDEX i{k} {c} TYPE {t} GRANULARITY 1"
                                          for k, (_, c, _, _, _, t, _) in enumerate(SPECS) if t is not None)))
    times = {k: [] for k, _ in configs}
    cpus, calcs, sizes = {k: [] for k in times}, {k: [] for k in times}, {}
    insert("")   # warm-up, not counted: the session's first INSERT from the file pays one-off costs
    for rep in range(repeat):   # configurations in turn within each round
        for label, sql in configs:
            t, c, b, e = insert(sql)
            times[label].append(t)
            cpus[label].append(c)
            calcs[label].append(e)
            sizes[label] = b
            print(f"  chDB [{rep + 1}/{repeat}] {label:<33} INSERT {t:7.2f} s (cpu {c:7.2f} s, "
                  f"index calc {e:6.2f} s)", flush=True)
    _chdb.query(f"DROP DATABASE IF EXISTS {db} SYNC")
    return times, cpus, sizes, calcs


def paired_cost(runs: dict[str, list[float]], label: str) -> float | None:
    """What `label` adds to the no-index INSERT: the median over rounds of (its INSERT - the no-index
    INSERT of the same round). Pairing within a round cancels the machine's load drifting between
    rounds; a difference of the two best-of-round figures does not (it pairs the quietest moment of
    one configuration with that of another)."""
    if label not in runs:
        return None
    return float(np.median(np.subtract(runs[label], runs["(no index)"])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true", help="1M rows")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--part-rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1,
                    help="passes per index on both sides: skipidx builds and chDB INSERT rounds (see the doc)")
    ap.add_argument("--no-chdb", action="store_true")
    ap.add_argument("--data", default=None,
                    help="Parquet file of the data: reused if it exists (with its own row count), else written there")
    ap.add_argument("--only", default="", help="comma-separated substrings of index labels to run")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--file", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        print(json.dumps(worker(a.file, a.worker, a.part_rows, a.repeat)))
        return
    rows = 1_000_000 if a.quick else a.rows

    from skipidx.apps.datagen import generate

    tmp = tempfile.mkdtemp(prefix="bench_build_")
    path = os.path.abspath(a.data) if a.data else os.path.join(tmp, "logs.parquet")
    t0 = time.perf_counter()
    if a.data and os.path.exists(path):
        rows = pq.ParquetFile(path).metadata.num_rows
        print(f"data: reusing {path} ({rows:,} rows, {os.path.getsize(path) / 2**20:.0f} MiB)")
    else:
        writer = None
        for batch in generate(rows, a.seed):
            if writer is None:
                writer = pq.ParquetWriter(path, batch.schema)
            writer.write_batch(batch)
        writer.close()
        print(f"data: {rows:,} rows (seed {a.seed}) -> {path} ({os.path.getsize(path) / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - t0:.1f} s")
    print(f"granule {GRANULE} rows, parts of {a.part_rows:,} rows")
    print(f"machine: {os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.2f}")

    chosen = [i for i, s in enumerate(SPECS) if not a.only or any(o in s[0] for o in a.only.split(","))]
    ours = {}
    for i in chosen:
        r = run_worker(path, i, a.part_rows, a.repeat)
        ours[r["label"]] = r
        print(f"  skipidx {r['label']:<30} {r['build_s']:7.2f} s build (cpu {r['cpu_s']:.2f} s, "
              f"+{r['to_arrow_s']:.2f} s to_arrow)  "
              f"{r['rows'] / r['build_s'] / 1e6:6.2f} M rows/s  index {r['table_bytes'] / 2**20:7.1f} MiB  "
              f"peak +{r['peak_delta_mib']:.0f} MiB  max fpp {r['fpp_max']:.2g}  saturated {r['saturated']}",
              flush=True)

    ch_times, ch_cpus, ch_sizes, ch_calcs = ({}, {}, {}, {}) if a.no_chdb else chdb_insert_times(path, a.repeat)
    if ch_times:
        base = min(ch_times["(no index)"])
        print(f"  chDB INSERT without indexes {base:.2f} s (best); with all five {min(ch_times['(all five)']):.2f} s "
              f"(+{paired_cost(ch_times, '(all five)'):.2f} s wall, +{paired_cost(ch_cpus, '(all five)'):.2f} s cpu)")

    print()
    print(f"{'index':<44} {'skipidx s':>9} {'chDB s':>7} {'ratio':>6} {'cpu s':>7} {'chDB cpu':>8} {'ratio':>6} "
          f"{'CH calc s':>9} {'MiB':>6} {'chDB MiB':>8} {'Mrows/s':>7} {'peak MiB':>8}")
    fmt = lambda v, w, d=2: " " * w if v is None else f"{v:{w}.{d}f}"
    for label, r in ours.items():
        spec = next(s for s in SPECS if s[0] == label)
        ref = spec[6] or label
        cost, cpu_cost = paired_cost(ch_times, ref), paired_cost(ch_cpus, ref)
        calc = float(np.median(ch_calcs[ref])) if ref in ch_calcs else None
        ratio = None if not cost or cost <= 0 else r["build_s"] / cost
        cpu_ratio = None if not cpu_cost or cpu_cost <= 0 else r["cpu_s"] / cpu_cost
        ch_mib = None if ref not in ch_sizes else ch_sizes[ref] / 2**20
        name = label + ("" if spec[6] is None else f" (vs {spec[6].split(' ')[0]})")
        print(f"{name:<44} {r['build_s']:9.2f} {fmt(cost, 7)} {fmt(ratio, 6)} {r['cpu_s']:7.2f} {fmt(cpu_cost, 8)} "
              f"{fmt(cpu_ratio, 6)} {fmt(calc, 9)} {r['table_bytes'] / 2**20:6.1f} "
              f"{fmt(ch_mib, 8, 1)} {r['rows'] / r['build_s'] / 1e6:7.2f} {r['peak_delta_mib']:8.0f}")
    threads = next(iter(ours.values()))["threads"] if ours else "?"
    print(f"\nchDB s / cpu = its INSERT-time cost of the index: INSERT with the index minus INSERT without in the "
          f"same round, median of {a.repeat} rounds; skipidx s / cpu = best of {a.repeat} builds; CH calc s = ClickHouse's own index-calculation time of that INSERT "
          f"({_CH_INDEX_EVENT}); ratios = skipidx / chDB. The target (<= 2x) is the cpu ratio: CPU seconds of all "
          f"threads on both sides (skipidx builds on {threads} threads), comparable on a shared machine where "
          "wall times are not. CH calc s is elapsed time in one writer thread: it grows when that thread waits for "
          "a CPU, so it is shown as a cross-check, not as a ratio. sbbf rows are set against the ClickHouse index they replace (same tokens, same "
          "granules; see the module doc).")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
