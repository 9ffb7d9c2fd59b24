"""Crash safety: a child process is killed with SIGKILL at each crash point of
an insert, a merge and the ALTERs (and after random delays during a large
insert); afterwards the table opens, cleans up, and holds exactly the
committed state -- as before the operation or as after it, never between."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from _store_helpers import log_rows, log_table, zdef
from skipidx.store.commit import read_state
from skipidx.store.table import Table

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/: the helpers

CHILD = r'''
import os, sys, time
sys.path.insert(0, {tests_dir!r})
import _store_helpers as h
from skipidx.store import commit
from skipidx.store.catalog import Catalog

db, op, point, marker = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
seen = {{}}

def hook(name):
    seen[name] = seen.get(name, 0) + 1
    if name == point:
        with open(marker, "w") as f:
            f.write(name)
        time.sleep(3600)   # the parent kills us here

if point != "-":
    commit.CRASH_HOOK = hook
table = Catalog(db).table("logs")
if op == "insert":
    table.insert(h.log_rows(1000, 5000), max_part_rows=2000)
elif op == "big_insert":
    with open(marker, "w") as f:
        f.write("started")
    table.insert(h.log_rows(1000, 60000), max_part_rows=6000)
elif op == "merge":
    table.optimize(final=True)
elif op == "materialize":
    table.materialize_index("z2")
elif op == "drop_index":
    table.drop_index("zmsg")
elif op == "add_index":
    table.add_index(h.zdef("z3", "msg", 1))
with open(marker + ".done", "w") as f:
    f.write("done")
'''


def _setup(tmp_path, parts: int = 3, extra_index: bool = False):
    db = str(tmp_path / "db")
    _, table = log_table(db, granularity=100)
    for i in range(parts):
        table.insert(log_rows(i * 100, 100))
    if extra_index:
        table.add_index(zdef("z2", "msg", 4))
    return db, table


def _run_child(tmp_path, db: str, op: str, point: str, kill_after: float | None = None) -> bool:
    """Run the child until it reaches `point` (then SIGKILL it) or finishes.
    Returns True if it was killed."""
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(tests_dir=TESTS_DIR))
    marker = str(tmp_path / f"marker-{op}-{point.replace(':', '_')}")
    proc = subprocess.Popen([sys.executable, str(script), db, op, point, marker])
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            if kill_after is None and os.path.exists(marker):
                break
            if kill_after is not None and os.path.exists(marker):
                time.sleep(kill_after)
                break
            if proc.poll() is not None:
                break
            time.sleep(0.01)
        killed = proc.poll() is None
        if killed:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    if kill_after is None and point != "-":
        assert killed, f"the child never reached crash point {point} (exit code {proc.returncode})"
    if not killed:
        assert proc.returncode == 0, f"the child failed (exit code {proc.returncode})"
    return killed


def _check_clean(table: Table) -> None:
    """After open: no staged leftovers, no part dir the state does not list, all data verifies."""
    st = read_state(table.path)
    tmp = os.listdir(os.path.join(table.path, "tmp"))
    assert tmp == [], f"leftovers in tmp/: {tmp}"
    on_disk = set(os.listdir(os.path.join(table.path, "parts")))
    assert on_disk == {p.name for p in st.parts}, "unreferenced part dirs were removed"
    assert not [n for n in os.listdir(table.path) if n.endswith(".tmp")]
    with table.snapshot() as snap:
        for p in snap.parts:
            p.verify()


def _ids(table: Table) -> list[int]:
    return sorted(table.read(["id"]).column("id").to_pylist())


INSERT_POINTS = [
    ("part:data_written", False), ("part:indexes_written", False), ("part:before_manifest", False),
    ("part:manifest_written", False), ("commit:locked", False), ("commit:renamed:0", False),
    ("commit:renamed:2", False), ("state:tmp_written", False), ("state:renamed", True), ("commit:done", True),
]


@pytest.mark.parametrize("point,committed", INSERT_POINTS, ids=[p for p, _ in INSERT_POINTS])
def test_kill_during_insert(tmp_path, point, committed):
    db, table = _setup(tmp_path)
    _run_child(tmp_path, db, "insert", point)
    table = Table(table.path)      # open = recovery
    expected = list(range(300)) + (list(range(1000, 6000)) if committed else [])
    assert _ids(table) == expected
    _check_clean(table)
    table.insert(log_rows(300, 10))   # and the table keeps working
    assert len(_ids(table)) == len(expected) + 10


MERGE_POINTS = [("part:manifest_written", False), ("merge:staged", False), ("commit:renamed:0", False),
                ("state:tmp_written", False), ("state:renamed", True)]


@pytest.mark.parametrize("point,committed", MERGE_POINTS, ids=[p for p, _ in MERGE_POINTS])
def test_kill_during_merge(tmp_path, point, committed):
    db, table = _setup(tmp_path, parts=4)
    before = [p.name for p in read_state(table.path).parts]
    _run_child(tmp_path, db, "merge", point)
    table = Table(table.path)
    assert _ids(table) == list(range(400))
    names = [p.name for p in read_state(table.path).parts]
    if committed:
        assert len(names) == 1 and names[0] not in before
    else:
        assert names == before
    _check_clean(table)


ALTER_CASES = [
    ("materialize", "commit:renamed:0", False), ("materialize", "state:renamed", True),
    # DROP INDEX: one metadata commit (the index is gone for queries), then the
    # files leave the parts part by part (a crash there leaves unused files)
    ("drop_index", "state:tmp_written", False), ("drop_index", "state:renamed", True),
    ("drop_index", "part:manifest_written", True),
    ("add_index", "state:tmp_written", False), ("add_index", "state:renamed", True),
]


@pytest.mark.parametrize("op,point,committed", ALTER_CASES, ids=[f"{o}-{p}" for o, p, _ in ALTER_CASES])
def test_kill_during_alter(tmp_path, op, point, committed):
    db, table = _setup(tmp_path, parts=3, extra_index=True)
    _run_child(tmp_path, db, op, point)
    table = Table(table.path)
    assert _ids(table) == list(range(300))
    with table.snapshot() as snap:
        names = [i.name for i in snap.meta.indexes]
        if op == "materialize":
            # each part is published on its own: the first one, or none
            assert sum(p.has_index("z2") for p in snap.parts) == (1 if committed else 0)
        elif op == "drop_index":
            assert ("zmsg" in names) == (not committed)
            if not committed:
                for p in snap.parts:
                    assert os.path.exists(os.path.join(p.path, "idx.zmsg.arrow"))
        else:
            assert ("z3" in names) == committed
    _check_clean(table)


@pytest.mark.parametrize("seed", range(4), ids=[f"seed{s}" for s in range(4)])
def test_kill_at_random_moments_of_a_large_insert(tmp_path, seed):
    """No crash hook: SIGKILL after a random delay. Whatever the moment, all
    10 parts of the insert are there, or none."""
    db, table = _setup(tmp_path, parts=1)
    delay = random.Random(seed).uniform(0.0, 3.0)
    _run_child(tmp_path, db, "big_insert", "-", kill_after=delay)
    table = Table(table.path)
    ids = _ids(table)
    assert ids in (list(range(100)), list(range(100)) + list(range(1000, 61000))), len(ids)
    _check_clean(table)
