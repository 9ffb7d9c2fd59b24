"""Id lookups on one real part of ~1.2k and of ~12.2k granules: total query time, flat vs summaries.

A narrow table (``id UInt64, trace_id String, user_id UInt64``; trace ids of
32 hex chars spanning 1-8 rows, user ids skewed as in ``skipidx.apps.datagen``)
is written straight through the part writer, one part of 10M and one of 100M
rows (no OPTIMIZE needed), with ClickHouse's DDL (``bloom_filter`` on both
ids) and the adaptive one (``sbbf('value', fpp = 2e-5 / 1e-4)``) as two
tables. Then, in one interleaved run, ``SELECT count()`` of ``trace_id =``,
``trace_id IN (10)``, ``trace_id IN (100)`` and ``user_id IN (10)`` (needles
from the first 10M rows) with the summaries used and not used (the check
forced flat), median ms of the whole ``db.sql`` call and of ``prune_ms``.

    python bench/bench_summary_table.py --dir /tmp/sumtab --lock /tmp/bench.lock
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pyarrow as pa

import skipidx
from skipidx.indexes import bloom

CHUNK = 1 << 20

DDL = {
    "ch": "INDEX t trace_id TYPE bloom_filter, INDEX u user_id TYPE bloom_filter",
    "adaptive": "INDEX t trace_id TYPE sbbf('value', fpp = 0.00002), INDEX u user_id TYPE sbbf('value', fpp = 0.0001)",
}


_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)


def _hex(a: np.ndarray, b: np.ndarray) -> pa.Array:
    """32 hex chars per row from two uint64 arrays, built as one Arrow buffer."""
    n = a.shape[0]
    out = np.empty((n, 32), np.uint8)
    for k, x in enumerate((a, b)):
        by = x.astype(">u8").view(np.uint8).reshape(n, 8)
        out[:, 16 * k:16 * k + 16:2] = _HEX[by >> 4]
        out[:, 16 * k + 1:16 * k + 16:2] = _HEX[by & 15]
    offs = np.arange(0, 32 * n + 1, 32, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs), pa.py_buffer(out.reshape(-1))])


def chunk(i: int) -> pa.Table:
    rng = np.random.default_rng(1000 + i)
    n = CHUNK
    ids = np.arange(i * n, (i + 1) * n, dtype=np.uint64)
    span = rng.integers(1, 9, n // 2)
    trace = np.repeat(np.arange(span.shape[0]), span)[:n].astype(np.uint64) + np.uint64(i * n)
    h = trace * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(31)
    users = np.minimum(rng.zipf(1.3, n), 2_000_000).astype(np.uint64)
    return pa.table({"id": ids, "trace_id": _hex(h, h * np.uint64(0xBF58476D1CE4E5B9)), "user_id": users})


def load(db, names: list[tuple[str, str]], chunks: int) -> None:
    """One part of `chunks` chunks per table (name, index DDL), each chunk generated once."""
    from skipidx.store import commit as C
    from skipidx.store.commit import new_part_name
    from skipidx.store.conform import conform
    from skipidx.store.writer import PartWriter

    todo = [(n, d) for n, d in names if n not in db.tables()]
    if not todo:
        return
    ws = []
    for name, ddl in todo:
        db.sql(f"CREATE TABLE {name} (id UInt64, trace_id String, user_id UInt64, {ddl}) ORDER BY id")
        tab = db.catalog.table(name)
        part = new_part_name(1)
        staged = C.stage_dir(tab.path, part)
        ws.append((tab, staged, PartWriter(staged.path, tab.snapshot().meta, part, level=1,
                                           expected_rows=chunks * CHUNK)))
    t0 = time.perf_counter()
    for i in range(chunks):
        c = chunk(i)
        for tab, _, w in ws:
            w.write(conform(w.meta, c))
    for tab, staged, w in ws:
        w.finish()
        C.commit_parts(tab.path, [staged])
    print(f"  {', '.join(n for n, _ in todo)}: {chunks}M rows written in {time.perf_counter() - t0:.0f} s", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--small", type=int, default=10)
    ap.add_argument("--large", type=int, default=100)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--lock", default=None)
    args = ap.parse_args(argv)
    db = skipidx.connect(args.dir)
    load(db, [(f"s_{k}", d) for k, d in DDL.items()], args.small)
    load(db, [(f"l_{k}", d) for k, d in DDL.items()], args.large)
    first = pa.concat_tables([chunk(i) for i in range(args.small)])
    rng = np.random.default_rng(5)
    pick = rng.integers(0, first.num_rows, 400)
    tr = first.column("trace_id").take(pa.array(pick)).to_pylist()
    us = [u for u in first.column("user_id").take(pa.array(pick)).to_pylist() if u > 1000][:100]
    del first
    qs = {
        "trace_id =": [f"trace_id = '{tr[i]}'" for i in range(12)],
        "trace_id IN (10)": ["trace_id IN (%s)" % ", ".join(f"'{x}'" for x in tr[20 + 10 * i:30 + 10 * i]) for i in range(12)],
        "trace_id IN (100)": ["trace_id IN (%s)" % ", ".join(f"'{x}'" for x in tr[150 + 20 * i:250 + 20 * i]) for i in range(8)],
        "user_id IN (10)": ["user_id IN (%s)" % ", ".join(str(x) for x in us[(5 * i) % 90:(5 * i) % 90 + 10]) for i in range(12)],
    }
    if args.lock:
        import fcntl

        fd = os.open(args.lock, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
    print(f"load {os.getloadavg()[0]:.1f}")
    print("| DDL | query | granules 1.2k / 12.2k | kept 1.2k / 12.2k | total ms 1.2k flat / summary "
          "| total ms 12.2k flat / summary | prune ms 12.2k flat / summary | 12.2k ÷ 1.2k total (summary) |")
    print("|---|---|---|---|---|---|---|---|")
    saved = bloom.SUMMARY_MIN_PROBES
    for kind in DDL:
        for qname, wheres in qs.items():
            res = {}
            for rnd in range(args.reps):
                for size in ("s", "l"):
                    for mode in ("flat", "summary"):
                        bloom.SUMMARY_MIN_PROBES = 1 << 62 if mode == "flat" else saved
                        w = wheres[rnd % len(wheres)]
                        t0 = time.perf_counter()
                        r = db.sql(f"SELECT count() FROM {size}_{kind} WHERE {w}")
                        r.fetchall()
                        dt = (time.perf_counter() - t0) * 1e3
                        e = res.setdefault((size, mode), [[], [], 0, 0])
                        e[0].append(dt)
                        e[1].append(r.stats.prune_ms)
                        e[2], e[3] = r.stats.granules_total, r.stats.granules_selected
            bloom.SUMMARY_MIN_PROBES = saved
            med = {k: (statistics.median(v[0]), statistics.median(v[1]), v[2], v[3]) for k, v in res.items()}
            s_f, s_s, l_f, l_s = med[("s", "flat")], med[("s", "summary")], med[("l", "flat")], med[("l", "summary")]
            print(f"| {kind} | {qname} | {s_f[2]} / {l_f[2]} | {s_s[3]} / {l_s[3]} | {s_f[0]:.2f} / {s_s[0]:.2f} "
                  f"| {l_f[0]:.2f} / {l_s[0]:.2f} | {l_f[1]:.2f} / {l_s[1]:.2f} | {l_s[0] / s_s[0]:.2f}x |", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
