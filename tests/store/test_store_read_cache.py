"""The read path's process-wide caches never serve a stale table.

* ``read_state`` reuses the parse of identical ``state.json`` bytes: a commit
  by another Database object or another process (new bytes) is seen at once,
  and a state damaged after it was cached is still reported.
* ``Part.read`` reuses idle open Parquet readers by file identity: a merged
  or dropped part is never read through a reader of its old file, and a
  query after OPTIMIZE reads the merged part only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pyarrow as pa
import pytest

import skipidx
from skipidx.core.errors import CorruptionError
from skipidx.store import commit as C
from skipidx.store import checksums, manifest, reader_pool

DDL = """CREATE TABLE t (id UInt64, s String,
    INDEX s_bf s TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY id
    SETTINGS index_granularity = 64"""


def _rows(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, hi), pa.uint64()),
                     "s": pa.array([f"v{i}" for i in range(lo, hi)], pa.string())})


def _count(db, where: str = "1") -> int:
    return db.sql(f"SELECT count() FROM t WHERE {where}").fetchall()[0][0]


@pytest.fixture()
def dbpath(tmp_path):
    p = str(tmp_path / "db")
    with skipidx.connect(p) as db:
        db.sql(DDL)
        db.insert("t", _rows(0, 1000))
    return p


def test_state_parse_is_reused_for_identical_bytes(dbpath):
    tdir = os.path.join(dbpath, "t")
    a = C.read_state(tdir)
    b = C.read_state(tdir)
    assert a is b, "identical state bytes must reuse the parsed state"
    C.clear_state_cache()
    c = C.read_state(tdir)
    assert c is not a and c == a, "after clearing, the same state is parsed again"


def test_second_database_sees_commits_of_another(dbpath):
    with skipidx.connect(dbpath) as reader, skipidx.connect(dbpath) as writer:
        assert _count(reader) == 1000
        writer.insert("t", _rows(1000, 1500))
        assert _count(reader) == 1500, "a commit through another Database must be seen by the next query"
        assert _count(reader, "s = 'v1200'") == 1, "the new part's rows (and index) must be read"
        writer.sql("OPTIMIZE TABLE t FINAL")
        assert _count(reader) == 1500, "after a merge the rows are counted once"
        writer.sql("ALTER TABLE t DROP INDEX s_bf")
        r = reader.sql("SELECT count() FROM t WHERE s = 'v7'")
        assert r.fetchall()[0][0] == 1
        assert [i.name for i in r.stats.indexes if i.used] == [], "a dropped index is no longer used"


def test_commit_by_another_process_is_seen(dbpath):
    code = ("import sys, pyarrow as pa, skipidx\n"
            "db = skipidx.connect(sys.argv[1])\n"
            "db.insert('t', pa.table({'id': pa.array([5000, 5001], pa.uint64()), 's': ['x', 'y']}))\n")
    with skipidx.connect(dbpath) as db:
        assert _count(db) == 1000
        subprocess.run([sys.executable, "-c", code, dbpath], check=True, timeout=120)
        assert _count(db) == 1002, "a commit by another process must be seen by the next query"
        assert _count(db, "s = 'y'") == 1


def test_state_damaged_after_caching_is_reported(dbpath):
    tdir = os.path.join(dbpath, "t")
    C.read_state(tdir)   # cached
    path = os.path.join(tdir, C.STATE_FILE)
    doc = json.loads(open(path, "rb").read())
    doc["state"]["gen"] += 1   # a change the checksum does not cover
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(CorruptionError, match="checksum"):
        C.read_state(tdir)


def test_merged_parts_are_not_read_through_pooled_readers(dbpath):
    with skipidx.connect(dbpath) as db:
        db.insert("t", _rows(1000, 2000))
        assert _count(db, "s IN ('v3', 'v1003')") == 2
        old = {p.path for p in db.catalog.table("t").snapshot().parts}
        db.sql("OPTIMIZE TABLE t FINAL")
        r = db.sql("SELECT count() FROM t WHERE s IN ('v3', 'v1003')")
        assert r.fetchall()[0][0] == 2
        snap = db.catalog.table("t").snapshot()
        try:
            new = {p.path for p in snap.parts}
        finally:
            snap.close()
        assert not (new & old), "OPTIMIZE FINAL must replace the parts"
        pooled = {k[1] for k in reader_pool.READERS._idle}
        inodes_new = {os.stat(os.path.join(p, manifest.DATA_FILE)).st_ino for p in new}
        assert _count(db) == 2000
        assert {k[1] for k in reader_pool.READERS._idle} - pooled <= inodes_new, \
            "reads after the merge open the merged part's file only"


def test_replaced_data_file_is_another_reader(dbpath):
    """A data file replaced under the same path (a damaged copy) is detected, not read
    through the reader of the old file."""
    with skipidx.connect(dbpath) as db:
        assert _count(db, "s = 'v10'") == 1
        snap = db.catalog.table("t").snapshot()
        path = os.path.join(snap.parts[0].path, manifest.DATA_FILE)
        snap.close()
        data = bytearray(open(path, "rb").read())
        data[len(data) // 3] ^= 0xFF
        checksums.VERIFIER.forget()   # as a new process would: checksums not yet verified
        tmp = path + ".new"
        with open(tmp, "wb") as f:
            f.write(bytes(data))
        os.replace(tmp, path)
        with pytest.raises(skipidx.SkipidxError):
            db.sql("SELECT count() FROM t WHERE id >= 0 AND s != ''").fetchall()


def test_pooled_readers_under_concurrent_queries(dbpath):
    with skipidx.connect(dbpath) as db:
        db.insert("t", _rows(1000, 3000))
        want = _count(db, "id % 7 = 3")
        errors: list[BaseException] = []
        got: list[int] = []

        def run() -> None:
            try:
                for _ in range(20):
                    got.append(_count(db, "id % 7 = 3"))
            except BaseException as e:   # reported below
                errors.append(e)

        th = [threading.Thread(target=run) for _ in range(4)]
        for x in th:
            x.start()
        for x in th:
            x.join()
        assert not errors, errors
        assert got == [want] * 80, "every concurrent query must see the same answer"
        assert all(len(v) <= reader_pool.READERS.per_file for v in reader_pool.READERS._idle.values())


def test_reader_pool_bounds():
    pool = reader_pool.ReaderPool(max_files=2, per_file=1)

    class FakeReader:
        closed = False

        def close(self, force=False):
            self.closed = True

    a, b, c, d = (FakeReader() for _ in range(4))
    pool.give(("f1",), a)
    pool.give(("f1",), b)         # over per_file: closed
    assert b.closed and not a.closed
    pool.give(("f2",), c)
    pool.give(("f3",), d)         # over max_files: the least recently used file's reader is closed
    assert a.closed and not c.closed and not d.closed
    assert pool.take(("f1",)) is None
    assert pool.take(("f3",)) is d and pool.take(("f3",)) is None
    pool.clear()
    assert c.closed
