"""Reliability regressions (issue 13): table identity under DROP races, background
merges, validated state/manifests with repair, the database directory as the
engine's own (symlinks, foreign entries), OS errors as SkipidxError."""
from __future__ import annotations

import errno
import json
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
import xxhash

import skipidx
from skipidx import SkipidxError
from skipidx.core.errors import CorruptionError
from skipidx.store import commit as _commit
from skipidx.store.merge import select_merge, wait_merges


def _rows(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.uint64)
    return pa.table({"id": pa.array(ids), "msg": pa.array([f"m{i} w{i % 7}" for i in ids.tolist()])})


DDL = ("CREATE TABLE t (id UInt64, msg String, INDEX tk msg TYPE tokenbf_v1(256, 2, 0) GRANULARITY 1) "
       "ORDER BY id SETTINGS index_granularity = 16")


@pytest.fixture
def db(tmp_path):
    d = skipidx.connect(str(tmp_path / "db"))
    yield d
    d.close()


def _leftovers(path: str) -> list[str]:
    return sorted(n for n in os.listdir(path) if n not in (".catalog.lock",))


# ---------------------------------------------------------------- DROP racing an insert
def _batches_then(action, n_before: int = 2):
    """An input generator: `n_before` batches, then `action()` (drop/recreate
    the table from another connection), then more batches."""
    for i in range(n_before):
        yield _rows(i * 100, 100)
    action()
    for i in range(n_before, n_before + 2):
        yield _rows(i * 100, 100)


@pytest.mark.parametrize("threads", [1, 2])
def test_drop_during_insert_leaves_nothing_and_name_is_usable(tmp_path, threads):
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    other = skipidx.connect(path)
    db.sql(DDL)
    t = db.catalog.table("t")
    with pytest.raises(SkipidxError, match="dropped"):
        t.insert(_batches_then(lambda: other.sql("DROP TABLE t")), max_part_rows=100, threads=threads)
    assert _leftovers(path) == [], "no t/, no write.lock, no tmp/ left behind"
    # the name is usable again, and IF EXISTS agrees that it is gone
    assert db.sql("DROP TABLE IF EXISTS t").message == "no such table"
    db.sql(DDL)
    db.insert("t", _rows(0, 10))
    assert db.sql("SELECT count() FROM t").fetchall() == [(10,)]
    db.close()
    other.close()


def test_db_insert_racing_drop_raises_skipidx_error(tmp_path):
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    other = skipidx.connect(path)
    for _ in range(5):
        db.sql(DDL)
        with pytest.raises(SkipidxError):
            db.insert("t", _batches_then(lambda: other.sql("DROP TABLE t"), n_before=1))
        assert _leftovers(path) == []
    db.close()
    other.close()


def test_insert_never_lands_in_a_recreated_table(tmp_path):
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    other = skipidx.connect(path)
    db.sql(DDL)
    recreate = "CREATE TABLE t (id UInt64, msg String) ORDER BY msg SETTINGS index_granularity = 3"

    def drop_and_create():
        other.sql("DROP TABLE t")
        other.sql(recreate)

    with pytest.raises(SkipidxError, match="dropped"):
        db.insert("t", _batches_then(drop_and_create))
    assert db.sql("SELECT count() FROM t").fetchall() == [(0,)]
    assert db.table_meta("t").order_by == ["msg"] and db.table_meta("t").index_granularity == 3
    # the new table works through the first connection too (its cache re-checks the id)
    db.insert("t", _rows(0, 5))
    assert other.sql("SELECT count() FROM t").fetchall() == [(5,)]
    db.close()
    other.close()


def test_stale_table_object_refuses_to_write(tmp_path):
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    db.sql(DDL)
    stale = db.catalog.table("t")
    db.sql("DROP TABLE t")
    db.sql(DDL)
    with pytest.raises(SkipidxError, match="dropped"):
        stale.insert(_rows(0, 5))
    with pytest.raises(SkipidxError, match="dropped"):
        stale.snapshot()
    assert db.sql("SELECT count() FROM t").fetchall() == [(0,)]
    db.close()


# ---------------------------------------------------------------- background merges
def test_selector_merges_similar_neighbours():
    # five equal small parts: merged (the count reaches the base)
    assert select_merge([100] * 5, [0] * 5, base=5, max_rows=10**6, max_parts=100) == (0, 5)
    # four: not yet
    assert select_merge([100] * 4, [0] * 4, base=5, max_rows=10**6, max_parts=100) is None
    # a big part and small ones: the small ones merge among themselves
    r = select_merge([500_000] + [100] * 6, [0] * 7, base=5, max_rows=10**6, max_parts=100)
    assert r == (1, 7)
    # bounded size: parts that would exceed max_rows together are never merged
    assert select_merge([600_000] * 6, [0] * 6, base=5, max_rows=10**6, max_parts=100) is None
    # bounded count
    assert select_merge([10] * 50, [0] * 50, base=5, max_rows=10**6, max_parts=8)[1] - \
        select_merge([10] * 50, [0] * 50, base=5, max_rows=10**6, max_parts=8)[0] <= 8
    # old parts lower the base: four old parts merge
    assert select_merge([100] * 4, [7200] * 4, base=5, max_rows=10**6, max_parts=100) == (0, 4)


def test_background_merges_bound_the_part_count(db):
    db.sql(DDL)
    for i in range(60):
        db.insert("t", _rows(i * 10, 10))
    wait_merges()
    parts = db.sql("SHOW PARTS t").to_arrow()
    assert parts.num_rows < 15
    assert sum(parts.column("rows").to_pylist()) == 600
    assert max(parts.column("level").to_pylist()) >= 1
    assert db.sql("SELECT count(), sum(id) FROM t").fetchall() == [(600, sum(range(600)))]
    assert db.sql("SELECT count() FROM t WHERE hasToken(msg, 'm77')").fetchall() == [(1,)]


def test_background_merges_can_be_stopped(db):
    db.sql(DDL.replace("index_granularity = 16", "index_granularity = 16, background_merges = 0"))
    for i in range(12):
        db.insert("t", _rows(i * 10, 10))
    wait_merges()
    assert db.sql("SHOW PARTS t").to_arrow().num_rows == 12
    db.sql("OPTIMIZE TABLE t FINAL")
    assert db.sql("SHOW PARTS FROM t").to_arrow().num_rows == 1


def test_show_merges_lists_a_running_merge(db, monkeypatch):
    from skipidx.store import merge as merge_mod

    db.sql(DDL.replace("index_granularity = 16", "index_granularity = 16, background_merges = 0"))
    for i in range(3):
        db.insert("t", _rows(i * 10, 10))
    seen = {}
    orig = merge_mod.merged_chunks

    def spy(*args, **kwargs):
        seen["merges"] = db.sql("SHOW MERGES FROM t").fetchall()
        yield from orig(*args, **kwargs)

    monkeypatch.setattr(merge_mod, "merged_chunks", spy)
    db.sql("OPTIMIZE TABLE t FINAL")
    [(table, result, n, sources, rows, elapsed)] = seen["merges"]
    assert (table, n, rows) == ("t", 3, 30) and len(sources) == 3 and elapsed >= 0
    assert db.sql("SHOW MERGES").fetchall() == []


def test_steady_inserts_keep_parts_bounded_and_drop_index_completes(tmp_path):
    """Constant inserts (bounded time) from a thread while DROP INDEX,
    MATERIALIZE INDEX, ADD and DROP COLUMN run: all complete, the part count
    stays bounded."""
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    db.sql(DDL)
    db.sql("ALTER TABLE t ADD INDEX mm id TYPE minmax GRANULARITY 1")
    stop = threading.Event()
    counts = []
    inserted = [0]
    errors = []

    def writer():
        w = skipidx.connect(path)
        i = 0
        while not stop.is_set():
            try:
                w.insert("t", _rows(i * 20, 20))
            except _commit.ConflictError:
                continue   # started before an ADD/DROP COLUMN committed: nothing written
            except SkipidxError as e:
                if "missing columns: c" in str(e):
                    continue   # while column c exists this writer's rows lack it: refused, nothing written
                errors.append(f"{type(e).__name__}: {e}")
                break
            except Exception as e:   # noqa: BLE001 - reported by the assertion below
                errors.append(f"{type(e).__name__}: {e}")
                break
            i += 1
            inserted[0] = i * 20
            counts.append(len(_commit.read_state(os.path.join(path, "t")).parts))
        w.close()

    th = threading.Thread(target=writer)
    th.start()
    try:
        time.sleep(1.0)
        db.sql("ALTER TABLE t DROP INDEX tk")
        db.sql("ALTER TABLE t MATERIALIZE INDEX mm")
        db.sql("ALTER TABLE t ADD COLUMN c UInt8")     # whole-table rewrites catch up, never starve
        db.sql("ALTER TABLE t DROP COLUMN c")
        time.sleep(1.0)
    finally:
        stop.set()
        th.join()
    wait_merges()
    assert errors == []
    assert "tk" not in [i.name for i in db.table_meta("t").indexes]
    assert max(counts) < 60, max(counts)
    assert db.sql("SELECT count() FROM t").fetchall() == [(inserted[0],)]
    db.close()


# ---------------------------------------------------------------- validated state, repair
def _rewrite_state(table_dir: str, edit) -> None:
    """Edit state.json's body and recompute its checksum (a hand edit, another tool)."""
    p = os.path.join(table_dir, "state.json")
    doc = json.loads(open(p, "rb").read())
    edit(doc["state"])
    body = doc["state"]
    doc["xxh3_128"] = xxhash.xxh3_128_hexdigest(
        json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
    open(p, "wb").write(json.dumps(doc).encode())
    _commit.clear_state_cache()


@pytest.mark.parametrize("edit", [
    lambda b: b["meta"]["indexes"][0].__setitem__("args", [[]]),
    lambda b: b["meta"]["indexes"][0].__setitem__("args", [2 ** 70, 2, 0]),
    lambda b: b["meta"]["indexes"][0]["params"].__setitem__("bytes", 2 ** 70),
    lambda b: b["meta"].__setitem__("index_granularity", 0),
    lambda b: b["parts"][0].__setitem__("rows", -1),
    lambda b: b["parts"][0].__setitem__("rows", 2 ** 80),
    lambda b: b.__setitem__("gen", 2 ** 80),
    lambda b: b.__setitem__("parts", {"a": 1}),
    lambda b: b["meta"]["columns"][0].__setitem__("type", "Array(Array(Array(Nope)))"),
], ids=["args-nested", "args-huge", "params-huge", "granularity-0", "rows-negative", "rows-huge", "gen-huge",
        "parts-object", "bad-type"])
def test_checksummed_bad_state_names_the_file_and_repairs(db, edit):
    db.sql(DDL)
    db.insert("t", _rows(0, 50))
    tdir = os.path.join(db.path, "t")
    _rewrite_state(tdir, edit)
    with pytest.raises(CorruptionError) as ei:
        db.sql("SELECT count() FROM t")
    assert ei.value.path == os.path.join(tdir, "state.json")
    assert "ATTACH PARTS" in str(ei.value)
    msg = db.sql("ALTER TABLE t ATTACH PARTS").message
    assert "backup" in msg
    assert db.sql("SELECT count() FROM t WHERE hasToken(msg, 'm7')").fetchall() == [(1,)]


def test_non_utf8_state_names_itself_and_echoes_no_bytes(db):
    db.sql(DDL)
    db.insert("t", _rows(0, 20))
    p = os.path.join(db.path, "t", "state.json")
    raw = bytearray(open(p, "rb").read())
    raw[40:44] = b"\xff\xfe\xc3\x28"
    open(p, "wb").write(bytes(raw))
    _commit.clear_state_cache()
    with pytest.raises(CorruptionError) as ei:
        db.sql("SELECT * FROM t")
    assert ei.value.path == p and "\\xff" not in str(ei.value)
    db.sql("ALTER TABLE t ATTACH PARTS")
    assert db.sql("SELECT count() FROM t").fetchall() == [(20,)]


def test_repair_from_manifests_when_both_states_are_gone(db):
    db.sql(DDL.replace("index_granularity = 16", "index_granularity = 16, background_merges = 0"))
    for i in range(6):
        db.insert("t", _rows(i * 10, 10))
    db.sql("OPTIMIZE TABLE t")   # a merge result next to ... (its sources are collected)
    db.insert("t", _rows(60, 10))
    tdir = os.path.join(db.path, "t")
    os.remove(os.path.join(tdir, "state.json"))
    os.remove(os.path.join(tdir, "state.backup.json"))
    _commit.clear_state_cache()
    with pytest.raises(CorruptionError, match="ATTACH PARTS"):
        db.sql("SELECT count() FROM t")
    assert "manifests" in db.sql("ALTER TABLE t ATTACH PARTS").message
    assert db.sql("SELECT count(), sum(id) FROM t").fetchall() == [(70, sum(range(70)))]
    db.insert("t", _rows(70, 1))
    assert db.sql("SELECT count() FROM t").fetchall() == [(71,)]


def test_manifest_with_huge_block_size_is_corruption(db):
    db.sql(DDL)
    db.insert("t", _rows(0, 50))
    tdir = os.path.join(db.path, "t")
    st = _commit.read_state(tdir)
    mp = os.path.join(tdir, "parts", st.parts[0].name, "manifest.json")
    m = json.loads(open(mp, "rb").read())
    m["files"]["data.parquet"]["block_size"] = 2 ** 70
    raw = json.dumps(m).encode()
    open(mp, "wb").write(raw)
    _rewrite_state(tdir, lambda b: b["parts"][0].__setitem__("manifest_xxh3_128", xxhash.xxh3_128_hexdigest(raw)))
    with pytest.raises(CorruptionError) as ei:
        db.sql("SELECT count() FROM t WHERE id > 3")
    assert ei.value.path is not None and "data.parquet" in ei.value.path


# ---------------------------------------------------------------- OS errors
def test_os_errors_leave_insert_as_skipidx_error_with_file_and_errno(db, monkeypatch):
    db.sql(DDL)
    from skipidx.store import commit as commit_mod

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(commit_mod, "write_file_durably", full)
    for run in (lambda: db.insert("t", _rows(0, 10)),
                lambda: db.sql("INSERT INTO t VALUES (1, 'a')")):
        with pytest.raises(SkipidxError) as ei:
            run()
        assert "ENOSPC" in str(ei.value) and ei.value.path
        assert getattr(ei.value, "errno", None) == errno.ENOSPC
    monkeypatch.undo()
    assert db.sql("SELECT count() FROM t").fetchall() == [(0,)]


# ---------------------------------------------------------------- the directory is the engine's own
def test_foreign_entries_in_the_database_directory_survive(tmp_path):
    path = tmp_path / "db"
    path.mkdir()
    for n in (".tmp-mine", ".dropped-mine", ".skipidx-tmp-x-0123abcd", ".skipidx-dropped-y-0123abcd"):
        (path / n).mkdir()
        (path / n / "keep.txt").write_text("user data")
    (path / "notes.txt").write_text("user data")
    db = skipidx.connect(str(path))
    db.sql(DDL)
    db.sql("DROP TABLE t")
    db.close()
    skipidx.connect(str(path)).close()
    for n in (".tmp-mine", ".dropped-mine", ".skipidx-tmp-x-0123abcd", ".skipidx-dropped-y-0123abcd"):
        assert (path / n / "keep.txt").read_text() == "user data"
    assert (path / "notes.txt").read_text() == "user data"
    # CREATE never replaces a user's entry of the table's name
    (path / "u").mkdir()
    db = skipidx.connect(str(path))
    with pytest.raises(SkipidxError, match="did not create"):
        db.sql("CREATE TABLE u (a UInt8)")
    db.close()


def test_leftovers_of_a_crash_are_recognised_and_removed(tmp_path):
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    db.sql(DDL)
    db.close()
    # a crash between the rename of a DROP and the removal
    os.rename(os.path.join(path, "t"), os.path.join(path, ".skipidx-dropped-t-0123abcd"))
    skipidx.connect(path).close()
    assert _leftovers(path) == []


def test_foreign_entries_in_tmp_and_parts_survive_cleanup(db):
    db.sql(DDL)
    db.insert("t", _rows(0, 10))
    tdir = os.path.join(db.path, "t")
    for d in ("tmp", "parts"):
        open(os.path.join(tdir, d, "README.user"), "w").write("mine")
    db.sql("OPTIMIZE TABLE t FINAL")
    db.insert("t", _rows(10, 10))
    _commit.cleanup(tdir)
    for d in ("tmp", "parts"):
        assert open(os.path.join(tdir, d, "README.user")).read() == "mine"


@pytest.mark.parametrize("sub", ["tmp", "parts", "readers"])
def test_symlinked_table_subdir_is_refused_and_target_untouched(tmp_path, sub):
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    db.sql(DDL)
    db.insert("t", _rows(0, 10))
    db.close()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x")
    (outside / "p_0000000000000000_00000000_0.0123abcd").mkdir()
    tdir = os.path.join(path, "t")
    real = os.path.join(tdir, sub + ".real")
    os.rename(os.path.join(tdir, sub), real)
    os.symlink(str(outside), os.path.join(tdir, sub))
    db = skipidx.connect(path)
    for q in ("SELECT count() FROM t", "INSERT INTO t VALUES (1, 'a')", "OPTIMIZE TABLE t FINAL"):
        with pytest.raises(SkipidxError, match="symbolic link"):
            db.sql(q)
    with pytest.raises(SkipidxError, match="symbolic link"):
        db.sql("DROP TABLE t")
    db.close()
    assert sorted(os.listdir(outside)) == ["p_0000000000000000_00000000_0.0123abcd", "precious"]


def test_dangling_lock_symlink_creates_nothing_outside(tmp_path):
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    db.sql(DDL)
    tdir = os.path.join(path, "t")
    target = tmp_path / "outside-lock"
    os.unlink(os.path.join(tdir, "write.lock")) if os.path.lexists(os.path.join(tdir, "write.lock")) else None
    os.symlink(str(target), os.path.join(tdir, "write.lock"))
    with pytest.raises(SkipidxError, match="symbolic link"):
        db.sql("INSERT INTO t VALUES (1, 'a')")
    assert not target.exists()
    db.close()


def test_symlinked_table_directory_is_refused(tmp_path):
    path = str(tmp_path / "db")
    db = skipidx.connect(path)
    db.sql(DDL)
    db.close()
    elsewhere = tmp_path / "elsewhere"
    os.rename(os.path.join(path, "t"), str(elsewhere))
    os.symlink(str(elsewhere), os.path.join(path, "t"))
    db = skipidx.connect(path)
    with pytest.raises(SkipidxError):
        db.sql("SELECT count() FROM t")
    with pytest.raises(SkipidxError, match="symbolic link"):
        db.sql("DROP TABLE t")
    db.close()
    assert os.path.isdir(elsewhere / "parts") and os.path.islink(os.path.join(path, "t"))
    assert [n for n in os.listdir(path) if "dropped" in n] == []


# ---------------------------------------------------------------- confined file access
def test_user_files_path_confines_infile_file_and_outfile(tmp_path):
    uf = tmp_path / "user_files"
    uf.mkdir()
    (uf / "a.csv").write_text("1,x\n2,y\n")
    secret = tmp_path / "secret.csv"
    secret.write_text("root:$6$hash-that-must-not-leak:19000::\n")
    (uf / "link.csv").symlink_to(secret)
    db = skipidx.connect(str(tmp_path / "db"), user_files_path=str(uf))
    db.sql("CREATE TABLE t (a UInt64, s String)")
    assert db.sql("INSERT INTO t FROM INFILE 'a.csv' FORMAT CSV").message == "inserted 2 rows"
    assert db.sql("SELECT count() FROM file('a*.csv', CSV, 'a UInt64, s String')").fetchall() == [(2,)]
    with pytest.raises(SkipidxError, match="outside user_files_path"):   # a matched link leads out
        db.sql("SELECT count() FROM file('*.csv', CSV, 'a UInt64, s String')")
    refused = [f"INSERT INTO t FROM INFILE '{secret}' FORMAT CSV",
               "INSERT INTO t FROM INFILE '../secret.csv' FORMAT CSV",
               "INSERT INTO t FROM INFILE 'link.csv' FORMAT CSV",
               f"SELECT * FROM file('{secret}', CSV)",
               f"SELECT * FROM t INTO OUTFILE '{tmp_path / 'out.csv'}'"]
    for q in refused:
        with pytest.raises(SkipidxError, match="outside user_files_path") as ei:
            db.sql(q)
        assert "must-not-leak" not in str(ei.value)
    assert not (tmp_path / "out.csv").exists()
    db.sql("SELECT * FROM t INTO OUTFILE 'out.tsv'")
    assert (uf / "out.tsv").read_text().splitlines() == ["1\tx", "2\ty"]
    db.close()
    db = skipidx.connect(str(tmp_path / "db"), allow_file_access=False)
    for q in (f"INSERT INTO t FROM INFILE '{uf / 'a.csv'}' FORMAT CSV", f"SELECT * FROM file('{uf / 'a.csv'}', CSV)",
              f"SELECT * FROM t INTO OUTFILE '{uf / 'o2.tsv'}'"):
        with pytest.raises(SkipidxError, match="allow_file_access=False"):
            db.sql(q)
    db.close()


def test_parse_errors_never_echo_file_contents(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$hash-that-must-not-leak:19000:0:99999:7:::\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("must-not-leak-2,x\n")
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE t (a UInt64, s String)")
    for q in (f"INSERT INTO t FROM INFILE '{secret}' FORMAT CSV", f"INSERT INTO t FROM INFILE '{bad}' FORMAT CSV",
              f"SELECT * FROM file('{bad}', CSV, 'a UInt64, s String')",
              f"INSERT INTO t FROM INFILE '{secret}' FORMAT JSONEachRow"):
        with pytest.raises(SkipidxError) as ei:
            db.sql(q).fetchall()
        assert "must-not-leak" not in str(ei.value).replace(str(tmp_path), ""), str(ei.value)
    db.close()
