"""Pooled Parquet readers never keep retired parts' files alive.

A pooled reader memory-maps its data file, so an unlinked file stays
allocated while the reader lives (index files are read into memory, not
mapped: their loaded granules are cached). These tests read the process's own
``/proc/self/maps`` and ``/proc/self/fd`` (Linux) and check that after a
merge (OPTIMIZE FINAL), a DROP TABLE, or a deletion by another process, no
mapping or descriptor of the retired files remains -- and that a query holding
a snapshot (and a reader on loan) across a merge still reads its rows.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skipidx
from skipidx.store import manifest, reader_pool

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")

DDL = """CREATE TABLE t (id UInt64, s String,
    INDEX s_bf s TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY id
    SETTINGS index_granularity = 256"""

BATCHES = 3
BATCH_ROWS = 5000


def _rows(k: int) -> pa.Table:
    lo = k * 100_000
    ids = range(lo, lo + BATCH_ROWS)
    return pa.table({"id": pa.array(ids, pa.uint64()),
                     "s": pa.array([f"v{i % 997}" for i in ids], pa.string())})


def _all_rows() -> pa.Table:
    return pa.concat_tables([_rows(k) for k in range(BATCHES)])


def _expected(where_s: str) -> tuple[int, int]:
    """(count, sum(id)) of the rows with s == where_s, computed by pyarrow (the oracle)."""
    t = _all_rows()
    m = t.filter(pc.equal(t["s"], where_s))
    return m.num_rows, int(pc.sum(m["id"]).as_py() or 0)


def _query(db, where_s: str) -> tuple[int, int]:
    r = db.sql(f"SELECT count(), sum(id) FROM t WHERE s = '{where_s}'").fetchall()[0]
    return int(r[0]), int(r[1] or 0)


def _mapped(root: str) -> list[str]:
    """Files under `root` this process maps (with ' (deleted)' for unlinked ones)."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.rstrip("\n").split(None, 5)
            if len(fields) == 6 and fields[5].startswith(root):
                out.append(fields[5])
    return out


def _open_fds(root: str) -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(root):
            out.append(target)
    return out


def _deleted_data(root: str) -> list[str]:
    """Deleted files under `root` still mapped or open (data and index files alike)."""
    return [p for p in _mapped(root) + _open_fds(root) if p.endswith(" (deleted)")]


@pytest.fixture()
def root(tmp_path):
    # a unique directory: the /proc filters see this test's files only
    reader_pool.READERS.clear()
    yield os.path.realpath(str(tmp_path))
    reader_pool.READERS.clear()


def _filled(root: str):
    db = skipidx.connect(os.path.join(root, "db"))
    db.sql(DDL)
    for k in range(BATCHES):
        db.insert("t", _rows(k))
    return db


@pytest.mark.parametrize("probe", ["v0", "v5", "v996"], ids=lambda p: f"s={p}")
def test_merge_then_drop_leave_no_mapping(root, probe):
    want = _expected(probe)
    with _filled(root) as db:
        assert _query(db, probe) == want, "before the merge"
        assert len(reader_pool.READERS._idle) > 0, "the query must have pooled readers (else this test proves nothing)"
        db.sql("OPTIMIZE TABLE t FINAL")
        assert _deleted_data(root) == [], "merged-away parts' files still mapped or open"
        assert _query(db, probe) == want, "after the merge"
        assert _deleted_data(root) == [], "a query after the merge must not map retired files"
        db.sql("DROP TABLE t")
        assert _mapped(root) == [] and _open_fds(root) == [], \
            f"files of the dropped table still mapped/open: {_mapped(root) + _open_fds(root)}"


def test_reader_on_loan_survives_a_merge(root):
    """A query holding a snapshot and a reader across a concurrent merge reads
    correctly; the reader is closed when given back, not under the query."""
    want = _all_rows().num_rows
    with _filled(root) as db:
        tbl = db.catalog.table("t")
        snap = tbl.snapshot()
        loans = []
        for p in snap.parts:
            key, pf = p._data_reader(pooled=True, pre_buffer=False)
            loans.append((p, key, pf, os.path.join(p.path, manifest.DATA_FILE)))
        db.sql("OPTIMIZE TABLE t FINAL")     # retires every part of `snap`
        got = 0
        for p, key, pf, path in loans:
            t = pf.read_row_groups(list(range(p.n_granules)), columns=["id"])
            assert t.num_rows == p.num_rows, "a reader on loan must stay readable across the merge"
            got += t.num_rows
            reader_pool.READERS.give(key, pf, path)
            assert key not in reader_pool.READERS._idle, "a retired part's reader must be closed on give-back"
        assert got == want
        del loans, pf, t                      # the test's own references to the readers
        assert snap.read(["id"]).num_rows == want, "the pinned snapshot still reads its parts"
        snap.close()
        tbl.optimize()                        # cleanup: the snapshot no longer pins the old parts
        assert _deleted_data(root) == [], "retired files still mapped after the snapshot closed"
        assert _query(db, "v7") == _expected("v7")


def test_queries_during_concurrent_merges(root):
    probes = ["v1", "v42", "v500"]
    want = {p: _expected(p) for p in probes}
    errors: list[BaseException] = []
    got: list[tuple[str, tuple[int, int]]] = []
    with _filled(root) as db:
        stop = threading.Event()

        def reader() -> None:
            try:
                while True:   # at least one round, whatever the merges' pace
                    for p in probes:
                        got.append((p, _query(db, p)))
                    if stop.is_set():
                        break
            except BaseException as e:   # reported below
                errors.append(e)

        th = [threading.Thread(target=reader) for _ in range(2)]
        for x in th:
            x.start()
        try:
            for r in range(4):
                # rows no probe matches (answers unchanged), then a merge retiring both parts
                extra = range(10**6 + r * 1000, 10**6 + r * 1000 + 1000)
                db.insert("t", pa.table({"id": pa.array(extra, pa.uint64()),
                                         "s": pa.array(["w"] * len(extra), pa.string())}))
                db.sql("OPTIMIZE TABLE t FINAL")
        finally:
            stop.set()
            for x in th:
                x.join()
        assert not errors, errors
        assert len(got) >= 2 * len(probes), "every reader thread ran at least one round"
        bad = [(p, r) for p, r in got if r != want[p]]
        assert not bad, f"answers changed under concurrent merges: {bad[:3]}"
        assert _query(db, "v1") == want["v1"]
        db.catalog.table("t").optimize()      # cleanup once no query pins old parts
        assert _deleted_data(root) == [], "retired files still mapped after the merges"


def test_files_deleted_by_another_process_are_swept(root, monkeypatch):
    """Another process drops the table: nothing tells this one, so the next
    take (any file) sweeps the pooled readers whose path is gone."""
    dbdir = os.path.join(root, "db")
    with _filled(root) as db:
        db.sql("CREATE TABLE u (id UInt64) ENGINE = MergeTree ORDER BY id")
        db.insert("u", pa.table({"id": pa.array(range(100), pa.uint64())}))
        assert _query(db, "v3") == _expected("v3")
        assert any(manifest.DATA_FILE in m for m in _mapped(os.path.join(dbdir, "t"))), "t's readers pooled"
        code = f"import skipidx\nwith skipidx.connect({dbdir!r}) as d: d.sql('DROP TABLE t')\n"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
        assert _deleted_data(root) != [], "precondition: this process still maps the dropped files"
        monkeypatch.setattr(reader_pool.READERS, "SWEEP_INTERVAL_S", 0.0)
        monkeypatch.setattr(reader_pool.READERS, "_next_sweep", 0.0)
        assert db.sql("SELECT count() FROM u WHERE id < 10").fetchall()[0][0] == 10
        assert _deleted_data(root) == [], "the take after the drop must sweep the deleted files' readers"


class _FakeReader:
    def __init__(self) -> None:
        self.closed = False

    def close(self, force: bool = False) -> None:
        self.closed = True


def test_pool_evict_idle_now_and_busy_on_give(tmp_path):
    pool = reader_pool.ReaderPool()
    pa_dir, pb_dir = str(tmp_path / "pa"), str(tmp_path / "pb")
    fa, fb = os.path.join(pa_dir, manifest.DATA_FILE), os.path.join(pb_dir, manifest.DATA_FILE)
    ka, kb = ("a",), ("b",)
    idle_a, busy_a, idle_b = _FakeReader(), _FakeReader(), _FakeReader()
    assert pool.take(ka, fa) is None           # loan on fa (a reader being opened)
    pool.give(kb, idle_b, fb)                  # fb: no loan, idle
    assert pool.take(ka, fa) is None
    pool.give(ka, idle_a, fa)                  # first loan back: idle
    assert pool.evict([pa_dir]) == 1, "the idle reader under the evicted dir is closed now"
    assert idle_a.closed and not idle_b.closed
    assert ka not in pool._idle and kb in pool._idle
    pool.give(ka, busy_a, fa)                  # the second loan ends after the eviction
    assert busy_a.closed, "a reader in use during the eviction is closed when given back"
    assert ka not in pool._idle
    again = _FakeReader()
    assert pool.take(ka, fa) is None
    pool.give(ka, again, fa)
    assert not again.closed and pool._idle[ka] == [again], "the eviction does not outlive its loans"
    assert pool.evict([str(tmp_path / "p")]) == 0, "a prefix of a name is not its directory"
    pool.clear()
    assert again.closed and idle_b.closed


def test_pool_sweep_drops_missing_and_replaced(tmp_path):
    pool = reader_pool.ReaderPool()
    keep, gone, repl = (str(tmp_path / n) for n in ("keep", "gone", "repl"))
    for f in (keep, gone, repl):
        with open(f, "wb") as fh:
            fh.write(b"x")

    def key(path: str) -> tuple:
        st = os.stat(path)
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, False)

    readers = {f: _FakeReader() for f in (keep, gone, repl)}
    for f, r in readers.items():
        pool.take(key(f), f)
        pool.give(key(f), r, f)
    os.unlink(gone)
    with open(repl + ".new", "wb") as fh:
        fh.write(b"yy")
    os.replace(repl + ".new", repl)            # another file under the same path
    assert pool.sweep() == 2
    assert readers[gone].closed and readers[repl].closed and not readers[keep].closed
    assert list(pool._idle) == [key(keep)]


def test_temporary_database_close_leaves_no_mapping():
    """connect() without a path removes its directory on close(): the pooled
    readers of its files are closed then, not at the next sweep."""
    reader_pool.READERS.clear()
    db = skipidx.connect()
    path = os.path.realpath(db.path)
    db.sql(DDL)
    db.insert("t", _rows(0))
    batch = _rows(0)
    want = batch.filter(pc.equal(batch["s"], "v0"))
    assert _query(db, "v0") == (want.num_rows, int(pc.sum(want["id"]).as_py())), "answer before close"
    assert _mapped(path), "the query should have left a pooled, mapped reader to release"
    db.close()
    assert not os.path.exists(path), "a temporary database is removed on close()"
    assert not _mapped(path) and not _open_fds(path), \
        f"files of the removed temporary database still mapped/open: {_mapped(path) + _open_fds(path)}"
