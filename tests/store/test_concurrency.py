"""Concurrency: reader processes read while two writer processes insert and
merge. Every snapshot a reader takes holds whole inserts only (the ids of
each writer are exactly a prefix of what that writer committed), and its
parts stay readable until it closes the snapshot, whatever merges retire
meanwhile."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from _store_helpers import log_rows, log_table
from skipidx.store.commit import read_state
from skipidx.store.table import Table

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/: the helpers

# Batch sizes of each writer: their prefix sums are the only legal totals.
SIZES_A = [37 + (i * 11) % 50 for i in range(40)]
SIZES_B = [23 + (i * 7) % 40 for i in range(40)]
B_BASE = 1_000_000

READER = r'''
import json, os, sys, time
sys.path.insert(0, {tests_dir!r})
import numpy as np
import _store_helpers  # registers the test index type
from skipidx.store.table import Table

table_dir, stop, out = sys.argv[1], sys.argv[2], sys.argv[3]
ok_a = set(np.cumsum([0] + {sizes_a!r}).tolist())
ok_b = set(np.cumsum([0] + {sizes_b!r}).tolist())
table = Table(table_dir)
checks, bad, totals = 0, [], set()
while not os.path.exists(stop) or checks < 5:
    with table.snapshot() as snap:
        ids = []
        for p in snap.parts:
            ids.append(p.read(["id"]).column("id").to_numpy())
            time.sleep(0.002)   # stay in the snapshot while merges retire parts
        ids = np.sort(np.concatenate(ids)) if ids else np.zeros(0, np.uint64)
    a = ids[ids < {b_base}]
    b = ids[ids >= {b_base}] - {b_base}
    checks += 1
    totals.add(len(ids))
    if len(a) not in ok_a or not np.array_equal(a, np.arange(len(a))):
        bad.append(("A", int(len(a))))
    if len(b) not in ok_b or not np.array_equal(b, np.arange(len(b))):
        bad.append(("B", int(len(b))))
with open(out, "w") as f:
    json.dump({{"checks": checks, "bad": bad[:20], "distinct_totals": len(totals)}}, f)
'''

WRITER_B = r'''
import sys
sys.path.insert(0, {tests_dir!r})
import pyarrow as pa
import _store_helpers as h
from skipidx.store.table import Table

table = Table(sys.argv[1])
start = 0
for n in {sizes_b!r}:
    t = h.log_rows(start, n)
    t = t.set_column(0, "id", pa.array(t.column("id").to_numpy() + {b_base}))
    table.insert(t)
    start += n
'''


def test_readers_see_whole_inserts_while_writers_insert_and_merge(tmp_path):
    _, table = log_table(str(tmp_path / "db"), granularity=16, settings={"max_part_rows": 200})
    fmt = dict(tests_dir=TESTS_DIR, sizes_a=SIZES_A, sizes_b=SIZES_B, b_base=B_BASE)
    (tmp_path / "reader.py").write_text(READER.format(**fmt))
    (tmp_path / "writer_b.py").write_text(WRITER_B.format(**fmt))
    stop = str(tmp_path / "stop")
    outs = [str(tmp_path / f"out{i}.json") for i in range(2)]
    readers = [subprocess.Popen([sys.executable, str(tmp_path / "reader.py"), table.path, stop, o]) for o in outs]
    writer_b = subprocess.Popen([sys.executable, str(tmp_path / "writer_b.py"), table.path])
    try:
        time.sleep(1.0)   # let the readers start
        start = 0
        for i, n in enumerate(SIZES_A):
            table.insert(log_rows(start, n))
            start += n
            if i % 4 == 3:
                table.optimize()
            if i % 13 == 12:
                table.optimize(final=True)
        assert writer_b.wait(timeout=300) == 0
        table.optimize(final=True)
    finally:
        with open(stop, "w") as f:
            f.write("stop")
        for r in readers:
            r.wait(timeout=300)
        if writer_b.poll() is None:
            writer_b.kill()
    for o in outs:
        with open(o) as f:
            res = json.load(f)
        assert res["bad"] == [], res
        assert res["checks"] >= 5
    ids = sorted(table.read(["id"]).column("id").to_pylist())
    assert ids == list(range(sum(SIZES_A))) + [B_BASE + i for i in range(sum(SIZES_B))]
    # after the readers are gone, one more commit frees every retired part
    table.insert(log_rows(sum(SIZES_A), 1))
    st = read_state(table.path)
    assert st.retired == ()
    assert set(os.listdir(os.path.join(table.path, "parts"))) == {p.name for p in st.parts}
    assert len(st.parts) == 2


def test_in_process_snapshot_survives_merge_and_drop(tmp_path):
    """Same process, several snapshots: each keeps its own generation's parts."""
    _, table = log_table(str(tmp_path / "db"), granularity=16)
    for i in range(4):
        table.insert(log_rows(i * 10, 10))
    s1 = table.snapshot()
    table.optimize(final=True)
    s2 = table.snapshot()
    table.insert(log_rows(40, 10))
    table.optimize(final=True)
    t2 = Table(table.path)   # an open (cleanup) while s1 and s2 are pinned
    assert len(s1.parts) == 4 and len(s2.parts) == 1
    assert sorted(s1.read(["id"]).column("id").to_pylist()) == list(range(40))
    assert sorted(s2.read(["id"]).column("id").to_pylist()) == list(range(40))
    s1.close()
    s2.close()
    t2.insert(log_rows(50, 1))
    assert len(os.listdir(os.path.join(table.path, "parts"))) == 2
