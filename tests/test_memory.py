"""Bounded memory (issue 13), measured as peak RSS in child processes: long
OR/AND chains are accumulated into one mask (OR chains of `=` folded into
IN), and INSERT ... FROM INFILE of Parquet streams a row group at a time.
bench/mem_rss.py measures the full sizes (10M-row INFILE, 100k-term chains)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import skipidx

CHILD = textwrap.dedent("""
    import json, sys
    import skipidx
    def rss():   # VmHWM: this process's own peak (ru_maxrss carries the parent's over fork+exec)
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    db = skipidx.connect(sys.argv[1])
    db.sql("SELECT count() FROM t WHERE id = 1").fetchall()   # imports and caches warm
    if len(sys.argv) > 3:
        db.sql(sys.argv[3])   # the measured statement's kernels compiled (numba) before measuring
    before = rss()
    r = db.sql(sys.argv[2])
    out = r.fetchall() if r.columns else r.message
    print(json.dumps({"before": before, "peak": rss(), "result": str(out)}))
""")


def _child(db: str, sql: str, warm: str | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, db, sql] + ([warm] if warm else []),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _table(path: str, rows: int) -> None:
    db = skipidx.connect(path)
    db.sql("CREATE TABLE t (id UInt64, s String) ORDER BY id SETTINGS index_granularity = 8192")
    db.insert("t", pa.table({"id": pa.array(np.arange(rows, dtype=np.uint64)),
                             "s": pa.array(np.char.add("v", np.arange(rows).astype(str)))}))
    db.close()


def test_long_or_and_chains_use_bounded_memory(tmp_path):
    path = str(tmp_path / "db")
    _table(path, 1_000_000)
    k = 3000   # before: one 1M-row mask per term (~125 KB each, ~375 MB here)
    r = _child(path, "SELECT count() FROM t WHERE " + " OR ".join(f"id = {i * 7}" for i in range(k)))
    assert r["result"] == f"[({k},)]"
    assert r["peak"] - r["before"] < 100, r
    r = _child(path, "SELECT count() FROM t WHERE " + " AND ".join(f"id != {i * 7}" for i in range(k // 2)))
    assert r["result"] == f"[({1_000_000 - k // 2},)]"
    assert r["peak"] - r["before"] < 100, r


def test_or_of_equals_folded_into_in_is_exact(tmp_path):
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE n (id UInt64, x Nullable(Int32), s LowCardinality(String)) ORDER BY id "
           "SETTINGS index_granularity = 16")
    xs = [None if i % 7 == 0 else (i % 50) - 10 for i in range(400)]
    db.insert("n", pa.table({"id": pa.array(np.arange(400, dtype=np.uint64)), "x": pa.array(xs, pa.int32()),
                             "s": pa.array([f"k{i % 13}" for i in range(400)])}))
    consts = [-10, -3, 0, 5, 7, 11, 20, 39, 2 ** 40, -2 ** 40]
    ors = " OR ".join(f"x = {c}" for c in consts)
    got = db.sql(f"SELECT id FROM n WHERE {ors} OR s = 'k3' ORDER BY id").fetchall()
    want = [(i,) for i in range(400) if (xs[i] is not None and xs[i] in consts) or i % 13 == 3]
    assert got == want
    # NOT of the chain: NULL x stays NULL (row dropped) exactly as with the terms
    got = db.sql(f"SELECT count() FROM n WHERE NOT ({ors})").fetchall()
    assert got == [(sum(1 for v in xs if v is not None and v not in consts),)]
    sors = " OR ".join(f"s = 'k{c}'" for c in range(0, 26, 2))
    assert db.sql(f"SELECT count() FROM n WHERE {sors}").fetchall() == \
        [(sum(1 for i in range(400) if (i % 13) % 2 == 0),)]
    db.close()


def test_and_of_not_equals_bound_as_not_in_is_exact(tmp_path):
    """A long AND of `x != c` is bound as one NOT IN (and a long OR of `=` as one
    IN): one atom for EXPLAIN and the indexes, the same rows as the terms give."""
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE n (id UInt64, x Nullable(Int32), s String, INDEX bx x TYPE minmax GRANULARITY 1) "
           "ORDER BY id SETTINGS index_granularity = 16")
    xs = [None if i % 7 == 0 else (i % 50) - 10 for i in range(400)]
    db.insert("n", pa.table({"id": pa.array(np.arange(400, dtype=np.uint64)), "x": pa.array(xs, pa.int32()),
                             "s": pa.array([f"k{i % 13}" for i in range(400)])}))
    consts = [-10, -3, 0, 5, 7, 11, 20, 39, 5, 2 ** 40]
    ands = " AND ".join(f"x != {c}" for c in consts)
    keep = [i for i in range(400) if xs[i] is not None and xs[i] not in consts]
    assert db.sql(f"SELECT id FROM n WHERE {ands} ORDER BY id").fetchall() == [(i,) for i in keep]
    assert db.sql(f"SELECT count() FROM n WHERE NOT ({ands})").fetchall() == \
        [(sum(1 for v in xs if v is not None and v in consts),)]
    got = db.sql(f"SELECT id FROM n WHERE ({ands}) AND s != 'k1' AND id > 30 ORDER BY id").fetchall()
    assert got == [(i,) for i in keep if i % 13 != 1 and i > 30]
    sands = " AND ".join(f"s != 'k{c}'" for c in range(0, 26, 2))
    assert db.sql(f"SELECT count() FROM n WHERE {sands}").fetchall() == \
        [(sum(1 for i in range(400) if (i % 13) % 2 == 1),)]
    text = "\n".join(r[0] for r in db.sql(f"EXPLAIN indexes = 1 SELECT id FROM n WHERE {ands}").fetchall())
    assert text.count("Condition:") == 1, text   # one atom (one mask per part), not nine
    ors = " OR ".join(f"x = {c}" for c in list(range(100, 140)) + [-10])   # -10: in 1 granule of 25
    r = db.sql(f"SELECT count() FROM n WHERE {ors}")
    assert r.fetchall() == [(sum(1 for v in xs if v == -10),)]
    assert 0 < r.stats.granules_selected < r.stats.granules_total
    db.close()


def test_parquet_infile_streams_row_groups(tmp_path):
    """A Parquet file is read a row group at a time (no pre-buffering): the
    peak of an INFILE does not grow with the file (an 8x larger file: the
    same peak within noise, where buffering the file would add its size)."""
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE w (id UInt64, s String) ORDER BY id")
    db.close()
    warm = str(tmp_path / "w.parquet")
    pq.write_table(pa.table({"id": pa.array([1], pa.uint64()), "s": ["x"]}), warm)
    peaks, sizes = [], []
    for rows in (150_000, 2_400_000):
        p = str(tmp_path / f"in{rows}.parquet")
        rng = np.random.default_rng(rows)
        s = pa.array(np.char.add(np.char.add(rng.integers(0, 2**62, rows).astype(str), "-"),
                                 rng.integers(0, 2**62, rows).astype(str)))
        pq.write_table(pa.table({"id": pa.array(np.arange(rows, dtype=np.uint64)), "s": s}), p,
                       row_group_size=50_000)
        sizes.append(pq.read_table(p).nbytes / 2**20)
        path = str(tmp_path / f"db{rows}")
        db = skipidx.connect(path)
        # background merges off: this measures the INFILE reader, not a merge running beside it
        db.sql("CREATE TABLE t (id UInt64, s String) ORDER BY id SETTINGS max_part_rows = 100000, background_merges = 0")
        db.sql("CREATE TABLE w (id UInt64, s String) ORDER BY id")
        db.close()
        # one insert worker: the reader's own peak, not the workers' chunks in flight
        r = _child(path, f"SET max_insert_threads = 1; INSERT INTO t FROM INFILE '{p}' FORMAT Parquet",
                   warm=f"INSERT INTO w FROM INFILE '{warm}' FORMAT Parquet")
        assert r["result"] == f"inserted {rows} rows"
        peaks.append(r["peak"] - r["before"])
    # the larger file is ~100 MB bigger in memory; a streaming reader's peak grows by a fraction
    # of that (allocator and thread-pool noise: 20-35 MB measured), a buffering one by all of it
    assert sizes[1] - sizes[0] > 90
    assert peaks[1] - peaks[0] < 0.5 * (sizes[1] - sizes[0]), (peaks, sizes)


def _like_runs_loop(pattern: bytes):
    """The per-byte reference of like_runs (the escape-aware loop)."""
    from skipidx.core.text_patterns import Literal

    runs, cur, at_start, i = [], bytearray(), True, 0
    while i < len(pattern):
        c = pattern[i]
        if c == 0x5C:
            if i + 1 < len(pattern) and pattern[i + 1] in (0x25, 0x5F, 0x5C):
                cur.append(pattern[i + 1])
                i += 2
                continue
            cur.append(c)
        elif c in (0x25, 0x5F):
            if cur:
                runs.append(Literal(bytes(cur), at_start, False))
                cur = bytearray()
            at_start = False
        else:
            cur.append(c)
        i += 1
    if cur:
        runs.append(Literal(bytes(cur), at_start, True))
    return runs


def test_like_runs_fast_path_equals_the_loop():
    import random

    from skipidx.core.text_patterns import like_runs

    rng = random.Random(3)
    for _ in range(3000):
        p = bytes(rng.choice(b"ab%_\\\xc3\xa9") for _ in range(rng.randrange(0, 12)))
        assert like_runs(p) == _like_runs_loop(p), p
    long = b"%" + b"abcdefghij" * 100_000 + b"%"
    assert like_runs(long) == _like_runs_loop(long)
