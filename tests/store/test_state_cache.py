"""The table state kept between queries (store/commit.py ``_HeldStates``): one stat per
read while the file this process parsed is unchanged, and every change -- a commit by
this or another Database or process, a DROP and CREATE, an outside write in place --
seen by the next read."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import skipidx
from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.store import commit


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.uint64()),
                     "s": [f"v{i % 7}" for i in range(start, start + n)]})


def _count(db, where: str = "") -> int:
    return db.sql(f"SELECT count() FROM t {where}").fetchall()[0][0]


@pytest.fixture
def db(tmp_path):
    with skipidx.connect(str(tmp_path / "db")) as d:
        d.sql("CREATE TABLE t (id UInt64, s String, INDEX sb s TYPE bloom_filter GRANULARITY 1) "
              "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 64")
        d.insert("t", _rows(0, 100))
        yield d


def _held_fds(table_dir: str) -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(table_dir + os.sep) or target.startswith(table_dir + "-"):
            out.append(target)
    return out


CHILD = r"""
import sys
import skipidx
db = skipidx.connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    line = sys.stdin.readline()
    if not line:
        break
    what = line.split()[0]
    if what == "insert":
        db.sql(f"INSERT INTO t (id, s) VALUES ({1000 + i}, 'child')")
    elif what == "optimize":
        db.sql("OPTIMIZE TABLE t FINAL")
    elif what == "truncate":
        db.sql("TRUNCATE TABLE t")
    elif what == "alter":
        db.sql(f"ALTER TABLE t ADD COLUMN c{i} UInt8 DEFAULT 7")
    elif what == "recreate":
        db.sql("DROP TABLE t")
        db.sql("CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
        db.sql("INSERT INTO t VALUES (5, 'a'), (6, 'b'), (7, 'c')")
    print("done", flush=True)
db.close()
"""


def test_another_process_s_commits_are_seen_by_the_next_query(db):
    """Each commit of another process lands right before this Database's next query
    (well within one timestamp tick): every one is seen."""
    steps = ["insert"] * 6 + ["optimize", "insert", "alter", "insert", "truncate", "insert", "recreate", "insert"]
    child = subprocess.Popen([sys.executable, "-c", CHILD, db.path, str(len(steps))], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        want = 100
        assert _count(db) == want
        for i, what in enumerate(steps):
            child.stdin.write(what + "\n")
            child.stdin.flush()
            assert child.stdout.readline().split() == ["done"], what
            want = {"insert": want + 1, "optimize": want, "alter": want, "truncate": 0, "recreate": 3}[what]
            assert _count(db) == want, (i, what)
            assert _count(db, "WHERE s = 'child'") == (
                0 if what in ("truncate", "recreate") else _count(db, "WHERE s = 'child'")), what
            if what == "alter":
                cols = [r[0] for r in db.sql("DESCRIBE TABLE t").fetchall()]
                assert cols[-1] == f"c{i}", cols
                assert db.sql(f"SELECT count() FROM t WHERE c{i} = 7").fetchall() == [(want,)]
        assert db.sql("SELECT id FROM t ORDER BY id").fetchall() == [(5,), (6,), (7,), (1000 + len(steps) - 1,)]
    finally:
        child.stdin.close()
        child.wait(timeout=120)
    assert child.returncode == 0


def test_another_database_s_changes_are_seen(db):
    other = skipidx.connect(db.path)
    try:
        for step in range(3):
            other.insert("t", _rows(1000 + step, 1))
            assert _count(db) == 101 + step
        other.sql("OPTIMIZE TABLE t FINAL")
        assert _count(db) == 103 and _count(db, "WHERE s = 'v3'") == _count(other, "WHERE s = 'v3'")
        other.sql("ALTER TABLE t ADD COLUMN z UInt8 DEFAULT 3")
        assert db.sql("SELECT sum(z) FROM t").fetchall() == [(309,)]
        other.sql("TRUNCATE TABLE t")
        assert _count(db) == 0
        other.sql("DROP TABLE t")
        with pytest.raises(SkipidxError, match="unknown table"):
            _count(db)
        other.sql("CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
        other.insert("t", _rows(0, 4))
        assert _count(db) == 4
    finally:
        other.close()


def test_a_write_in_place_is_seen(db):
    """Not a skipidx commit (they rename a new file over the state): an outside write into
    the file itself, same size, is seen too (its times change)."""
    assert _count(db) == 100
    path = os.path.join(db.path, "t", commit.STATE_FILE)
    raw = bytearray(open(path, "rb").read())
    i = raw.index(b'"gen"')
    raw[i + 1] = ord("G")          # same size, checksummed body changed
    time.sleep(0.02)               # (a coarse file-system clock moves on)
    with open(path, "r+b") as f:
        f.write(raw)
    with pytest.raises(CorruptionError, match="state"):
        _count(db)


def test_held_descriptors_are_bounded_and_let_go(db, monkeypatch):
    tdir = os.path.join(db.path, "t")
    assert _count(db) == 100
    assert len(_held_fds(tdir)) == 1, "the state file read last is held"
    monkeypatch.setattr(commit._HELD, "size", 2)
    for n in range(4):
        db.sql(f"CREATE TABLE u{n} (id UInt64) ENGINE = MergeTree ORDER BY id")
        db.sql(f"SELECT count() FROM u{n}").fetchall()
    assert len(commit._HELD._d) <= 2
    assert _held_fds(tdir) == [], "evicted entries close their descriptor"
    assert _count(db) == 100
    db.sql("DROP TABLE t")
    assert _held_fds(tdir) == [], "DROP TABLE lets go of the table's state file"
    commit.clear_state_cache()
    assert not commit._HELD._d


def test_a_symbolic_link_state_is_refused_after_a_cached_read(db):
    assert _count(db) == 100
    tdir = os.path.join(db.path, "t")
    path = os.path.join(tdir, commit.STATE_FILE)
    os.replace(path, path + ".real")
    os.symlink(path + ".real", path)
    with pytest.raises(SkipidxError, match="symbolic link"):
        commit.read_state(tdir)


def test_a_forked_child_reads_states_while_a_thread_held_the_lock(db):
    """A fork taken while another thread is inside the state cache leaves the child a working cache."""
    import threading

    assert _count(db) == 100
    held = threading.Event()
    release = threading.Event()

    def hold():
        with commit._HELD._lock:
            held.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:      # the child: one read of the state, then out (a deadlock ends by SIGALRM)
            import signal

            signal.alarm(20)
            ok = commit.read_state(os.path.join(db.path, "t")).gen >= 0
            os._exit(0 if ok else 1)
    finally:
        release.set()
        t.join()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
