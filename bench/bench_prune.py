"""Planning + pruning cost of id lookups, with and without sequential narrowing and the condition memo.

On a table made by ``bench/bench_query.py`` (``logs`` with ``trace_id``/``user_id``
and two indexes per id column), in one process, rounds alternating between

* ``full``: every index probed on every granule and every condition bound
  afresh per index and query (the behaviour before narrowing and the memo),
* ``narrowed``: the default.

Per query it prints the medians of the planning time (bind excluded),
``stats.prune_ms`` and the end-to-end ``db.sql`` time, in three modes: ``warm``
(one query repeated), ``cold`` (a 128 MiB array touched between queries,
as when other engines run in between) and ``vary`` (cold, and no two
queries with the same constants). The granule figures of both settings are
checked equal. Example::

    flock /tmp/skipidx_bench.lock python bench/bench_prune.py /tmp/qb_h18_10m/skipidx --repeat 30
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import contextmanager

import numpy as np

import skipidx
from skipidx.indexes import bloom
from skipidx.planner import prune as PR


@contextmanager
def setting(name: str):
    if name == "narrowed":
        yield
        return
    share, memo = PR.NARROW_MAX_SHARE, bloom._CONDITIONS.size
    PR.NARROW_MAX_SHARE, bloom._CONDITIONS.size = -1.0, 0
    bloom._CONDITIONS.clear()
    try:
        yield
    finally:
        PR.NARROW_MAX_SHARE, bloom._CONDITIONS.size = share, memo


def queries(db, n: int, seed: int) -> dict[str, list[str]]:
    """n distinct queries per kind, constants drawn from the table's rows."""
    rng = np.random.default_rng(seed)
    total = db.sql("SELECT count() FROM logs").scalar()
    ids = rng.integers(0, total, 40 * n).tolist()
    t = db.sql("SELECT trace_id, user_id FROM logs WHERE id IN (%s)" % ", ".join(map(str, ids))).to_arrow() \
        if "id" in db.table_meta("logs").column_names else None
    if t is None or t.num_rows < 20 * n:
        raise SystemExit("needs bench_query's logs table (columns id, trace_id, user_id)")
    tr, us = t.column("trace_id").to_pylist(), [u for u in t.column("user_id").to_pylist() if u >= 200]
    return {
        "tr1": [f"SELECT count() FROM logs WHERE trace_id = '{tr[i]}'" for i in range(n)],
        "tr5": ["SELECT count() FROM logs WHERE trace_id IN (%s)" % ", ".join(f"'{x}'" for x in tr[n + 5 * i:n + 5 * i + 5])
                for i in range(n)],
        "us10": ["SELECT count() FROM logs WHERE user_id IN (%s)" % ", ".join(map(str, us[10 * i:10 * i + 10]))
                 for i in range(n)],
    }


def run(db, qs: list[str], mode: str, repeat: int, junk: np.ndarray) -> tuple[float, float, float, tuple]:
    from skipidx.planner.plan import plan_query
    from skipidx.expr.binder import bind_select
    from skipidx.sql.parser import parse

    e2e, prune, plan = [], [], []
    tab = db.catalog.table("logs")
    for i in range(repeat):
        q = qs[i % len(qs)] if mode == "vary" else qs[0]
        if mode != "warm":
            junk += 1
        t0 = time.perf_counter()
        r = db.sql(q)
        e2e.append((time.perf_counter() - t0) * 1e3)
        prune.append(r.stats.prune_ms)
        s = parse(q)[0]
        with tab.snapshot() as snap:
            bs = bind_select(snap.meta, s)
            if mode != "warm":
                junk += 1
            t0 = time.perf_counter()
            plan_query(snap, bs, db.index_cache)
            plan.append((time.perf_counter() - t0) * 1e3)
    st = r.stats
    figures = (st.granules_selected, tuple((i.name, i.granules_after, i.parts_after) for i in st.indexes))
    return statistics.median(plan), statistics.median(prune), statistics.median(e2e), figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", help="database directory holding bench_query's logs table")
    ap.add_argument("--repeat", type=int, default=30, help="queries per measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of both settings")
    args = ap.parse_args()
    db = skipidx.connect(args.db)
    qs = queries(db, 30, 11)
    junk = np.ones(16 << 20)    # 128 MiB
    res: dict[tuple, list] = {}
    for rnd in range(args.rounds):
        order = ("full", "narrowed") if rnd % 2 == 0 else ("narrowed", "full")
        for name in order:
            with setting(name):
                for k, q in qs.items():
                    for _ in range(3):
                        db.sql(q[0])
                    for mode in ("warm", "cold", "vary"):
                        res.setdefault((name, k, mode), []).append(run(db, q, mode, args.repeat, junk))
        print(f"round {rnd + 1}/{args.rounds} done", flush=True)
    print(f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(f"{'query':10s} {'mode':5s} | {'plan ms':>15s} | {'prune_ms':>15s} {'ratio':>5s} | {'end-to-end ms':>15s} {'ratio':>5s}")
    for k in qs:
        for mode in ("warm", "cold", "vary"):
            f = res[("full", k, mode)]
            n = res[("narrowed", k, mode)]
            med = [[statistics.median(x[j] for x in r) for j in range(3)] for r in (f, n)]
            same = all(a[3] == b[3] for a, b in zip(f, n)) if mode != "vary" else f[-1][3] == n[-1][3]
            assert same, f"{k}/{mode}: granule figures differ between the settings: {f[-1][3]} vs {n[-1][3]}"
            print(f"{k:10s} {mode:5s} | {med[0][0]:6.3f} -> {med[1][0]:6.3f} | {med[0][1]:6.3f} -> {med[1][1]:6.3f} "
                  f"{med[0][1] / med[1][1]:5.2f} | {med[0][2]:6.2f} -> {med[1][2]:6.2f} {med[0][2] / med[1][2]:5.2f}")
    print("(full -> narrowed; the batched bank kernel is in both)")


if __name__ == "__main__":
    main()
