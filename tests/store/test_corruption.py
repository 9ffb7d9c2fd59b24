"""Damaged files: every file of a part flipped, truncated or deleted is
detected on read with a CorruptionError naming the file; a damaged index is
reported and never trusted, while the data stays readable."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from _store_helpers import log_rows, log_table, zdef
from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.store import checksums as checksums_mod
from skipidx.store.checksums import VERIFIER
from skipidx.store.part import clear_caches
from skipidx.store.table import Table


@pytest.fixture(autouse=True)
def _fresh_caches():
    """Each case starts like a new process: nothing verified yet."""
    clear_caches()
    yield
    clear_caches()


def _table(tmp_path):
    _, table = log_table(str(tmp_path), granularity=50, indexes=[zdef("z", "msg", 2)])
    table.insert(log_rows(0, 1000))
    return table


def _flip(path: str, where: str) -> None:
    size = os.path.getsize(path)
    off = {"first": 0, "middle": size // 2, "last": size - 1, "footer": size - 12}[where]
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x40]))


def _truncate(path: str, how: str) -> None:
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate({"by1": size - 1, "half": size // 2, "empty": 0}[how])


def _damage(path: str, action: str) -> None:
    kind, _, arg = action.partition(":")
    if kind == "flip":
        _flip(path, arg)
    elif kind == "truncate":
        _truncate(path, arg)
    elif kind == "delete":
        os.unlink(path)
    elif kind == "append":
        with open(path, "ab") as f:
            f.write(b"\0")
    else:
        raise AssertionError(action)


ACTIONS = ["flip:first", "flip:middle", "flip:last", "flip:footer", "truncate:by1", "truncate:half",
           "truncate:empty", "delete", "append"]
FILES = ["data.parquet", "manifest.json", "idx.z.arrow"]
CASES = [(f, a) for f in FILES for a in ACTIONS]


@pytest.mark.parametrize("fname,action", CASES, ids=[f"{f}-{a}" for f, a in CASES])
def test_damaged_part_file_is_detected(tmp_path, fname, action):
    table = _table(tmp_path)
    with table.snapshot() as snap:
        part = snap.parts[0]
        target = os.path.join(part.path, fname)
        part_path = part.path
    _damage(target, action)
    # a new process's view: fresh Table, fresh caches
    table = Table(table.path)
    with table.snapshot() as snap:
        part = snap.parts[0]
        if fname == "manifest.json":
            with pytest.raises(CorruptionError) as ei:
                part.read(["id"])
            assert ei.value.path == target
            return
        if fname == "data.parquet":
            with pytest.raises(CorruptionError) as ei:
                part.read()
            assert ei.value.path == target, str(ei.value)
            assert "data.parquet" in str(ei.value)
            # the index is intact and still loads
            assert len(part.load_index("z")) == 10
            return
        # index file: reported, not trusted; data still fully readable
        assert part.has_index("z")
        with pytest.raises(CorruptionError) as ei:
            part.load_index("z")
        assert ei.value.path == target
        assert part.read(["id"]).num_rows == 1000
        assert os.path.isdir(part_path)


def test_only_the_granules_read_are_verified(tmp_path, monkeypatch):
    """Verification is O(granules read): a flipped byte in granule 7 fails a
    read of granule 7, not a read of granule 0 (small checksum blocks)."""
    monkeypatch.setattr(checksums_mod, "BLOCK_SIZE", 512)
    table = _table(tmp_path)
    with table.snapshot() as snap:
        part = snap.parts[0]
        spans = part.manifest["row_groups"]
        a, b = spans[7]
        path = os.path.join(part.path, "data.parquet")
        assert part.manifest["files"]["data.parquet"]["block_size"] == 512
    with open(path, "r+b") as f:
        f.seek((a + b) // 2)
        c = f.read(1)
        f.seek((a + b) // 2)
        f.write(bytes([c[0] ^ 1]))
    clear_caches()
    table = Table(table.path)
    with table.snapshot() as snap:
        part = snap.parts[0]
        assert part.read(["id"], [(0, 1)]).num_rows == 50
        assert part.read(["id"], [(15, 20)]).num_rows == 250
        with pytest.raises(CorruptionError, match="checksum mismatch") as ei:
            part.read(["id"], [(7, 8)])
        assert ei.value.path == path


def test_verification_is_cached_per_process(tmp_path):
    table = _table(tmp_path)
    with table.snapshot() as snap:
        part = snap.parts[0]
        part.read(["id"])
        before = dict(VERIFIER._done)
        part.read(["id"])
        assert VERIFIER._done == before, "a second read hashes nothing new"
        assert sum(len(v) for v in before.values()) >= 1


def test_damaged_state_is_detected(tmp_path):
    table = _table(tmp_path)
    path = os.path.join(table.path, "state.json")
    with open(path) as f:
        doc = json.load(f)
    doc["state"]["parts"][0]["rows"] += 1    # valid JSON, wrong content
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(CorruptionError, match="table state checksum mismatch") as ei:
        Table(table.path)
    assert ei.value.path == path
    with open(path, "w") as f:
        f.write("{not json")
    with pytest.raises(CorruptionError, match="damaged table state"):
        Table(table.path)


def test_hostile_manifest_cannot_escape(tmp_path):
    """A manifest (with a matching checksum) naming files outside the part is refused."""
    table = _table(tmp_path)
    with table.snapshot() as snap:
        part = snap.parts[0]
        mpath = os.path.join(part.path, "manifest.json")
    with open(mpath) as f:
        m = json.load(f)
    m["files"]["../../state.json"] = m["files"]["data.parquet"]
    raw = json.dumps(m).encode()
    with open(mpath, "wb") as f:
        f.write(raw)
    # re-point the state's manifest checksum, as an attacker could
    import xxhash
    from skipidx.store.commit import PartEntry, TableState, read_state, write_state

    st = read_state(table.path)
    e = st.parts[0]
    write_state(table.path, TableState(st.gen, st.meta, (PartEntry(e.name, e.rows, xxhash.xxh3_128_hexdigest(raw)),),
                                       st.retired, st.table_id))
    with table.snapshot() as snap:
        with pytest.raises(CorruptionError, match="bad file name"):
            snap.parts[0].read(["id"])


def test_index_file_of_another_index_is_refused(tmp_path):
    """Swapping two index files (both with valid checksums otherwise) is caught by the checksum."""
    _, table = log_table(str(tmp_path), granularity=50, indexes=[zdef("a", "msg", 1), zdef("b", "msg", 2)])
    table.insert(log_rows(0, 500))
    with table.snapshot() as snap:
        p = snap.parts[0]
        pa_, pb = os.path.join(p.path, "idx.a.arrow"), os.path.join(p.path, "idx.b.arrow")
    os.replace(pb, pa_ + ".x")
    os.replace(pa_, pb)
    os.replace(pa_ + ".x", pa_)
    table = Table(table.path)
    with table.snapshot() as snap:
        for name in ("a", "b"):
            with pytest.raises(CorruptionError):
                snap.parts[0].load_index(name)


@pytest.mark.parametrize("op", ["drop_index", "materialize"])
def test_alter_never_launders_damage(tmp_path, op):
    """DROP/MATERIALIZE INDEX hard-link the data file into a new part: the new
    manifest keeps the old checksums, so damage stays detectable."""
    _, table = log_table(str(tmp_path), granularity=50, indexes=[zdef("z", "msg", 2)])
    table.insert(log_rows(0, 1000))
    if op == "materialize":
        table.add_index(zdef("z2", "id", 1))
    with table.snapshot() as snap:
        part = snap.parts[0]
        a, b = part.manifest["row_groups"][5]
        path = os.path.join(part.path, "data.parquet")
    with open(path, "r+b") as f:      # damage granule 5 of the data
        f.seek((a + b) // 2)
        c = f.read(1)
        f.seek((a + b) // 2)
        f.write(bytes([c[0] ^ 0x10]))
    clear_caches()
    table = Table(table.path)
    if op == "drop_index":
        table.drop_index("z")
    else:
        with pytest.raises(CorruptionError):
            table.materialize_index("z2")   # it reads the damaged granule
    clear_caches()
    with table.snapshot() as snap:
        with pytest.raises(CorruptionError, match="checksum mismatch"):
            snap.parts[0].read(["msg"])


def test_verification_cache_is_bounded_and_reverifies_after_eviction(tmp_path):
    """The per-process cache of verified blocks keeps the most recently read
    files only; a forgotten file is hashed again (and still caught if damaged)."""
    from skipidx.store.checksums import Verifier, file_sum

    files = []
    for i in range(5):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes([i]) * 3000)
        files.append((str(p), file_sum(str(p), block_size=1024)))
    v = Verifier(max_files=3)
    for p, fs in files:
        v.verify(p, fs)
    assert len(v._done) == 3, f"bounded to 3 files, holds {len(v._done)}"
    kept = {k[1] for k in v._done}
    assert kept == {os.stat(p).st_ino for p, _ in files[2:]}, "the least recently read files are forgotten"
    # f0 was forgotten: damaging it (same size, so the identity is unchanged
    # apart from mtime) is caught on its next read because it is re-hashed
    p0, fs0 = files[0]
    with open(p0, "r+b") as f:
        f.write(b"\xff")
    with pytest.raises(CorruptionError, match="checksum mismatch"):
        v.verify(p0, fs0)
    # reading a remembered file again hashes nothing new and keeps it
    before = {k: set(b) for k, b in v._done.items()}
    v.verify(*files[4])
    assert v._done[next(k for k in v._done if k[1] == os.stat(files[4][0]).st_ino)] == \
        before[next(k for k in before if k[1] == os.stat(files[4][0]).st_ino)]


def test_read_verified_checks_the_bytes_it_returns(tmp_path):
    """An index file is read once and its blocks verified from the bytes read: a flipped
    byte, a short read or a missing file is a CorruptionError naming it; verified blocks
    are not hashed again; what is returned is what was read."""
    from skipidx.store.checksums import Verifier, file_sum

    p = tmp_path / "f"
    p.write_bytes(bytes(range(256)) * 20)            # 5120 bytes: 5 blocks of 1024 and none left
    fs = file_sum(str(p), block_size=1024)
    v = Verifier()
    reads = []

    def read(path):
        reads.append(path)
        with open(path, "rb") as f:
            return f.read()

    assert v.read_verified(str(p), fs, read) == p.read_bytes() and reads == [str(p)]
    assert sum(len(b) for b in v._done.values()) == 5
    # a reader that returns other bytes than the file's (same size): caught, block named
    with pytest.raises(CorruptionError, match=r"checksum mismatch in bytes \[2048, 3072\)") as ei:
        Verifier().read_verified(str(p), fs, lambda path: p.read_bytes()[:2500] + b"\xff" + p.read_bytes()[2501:])
    assert ei.value.path == str(p)
    with pytest.raises(CorruptionError, match="differs from the manifest"):
        Verifier().read_verified(str(p), fs, lambda path: p.read_bytes()[:-1])
    # blocks verified once are trusted for the same file identity (as verify() does)
    assert v.read_verified(str(p), fs, lambda path: p.read_bytes()) == p.read_bytes()
    data = bytearray(p.read_bytes())
    data[10] ^= 1
    before = os.stat(p).st_mtime_ns
    p.write_bytes(bytes(data))
    os.utime(p, ns=(before + 10**9, before + 10**9))   # a new mtime: a new identity, hashed again
    with pytest.raises(CorruptionError, match="checksum mismatch in bytes \\[0, 1024\\)"):
        v.read_verified(str(p), fs, read)
    os.remove(p)
    with pytest.raises(CorruptionError, match="missing"):
        v.read_verified(str(p), fs, read)


def test_damaged_index_file_is_reported_when_loaded(tmp_path):
    table = _table(tmp_path)
    with table.snapshot() as snap:
        part = snap.parts[0]
        target = os.path.join(part.path, part.manifest["indexes"]["z"]["file"])
    size = os.path.getsize(target)
    with open(target, "r+b") as f:
        f.seek(size // 2)
        c = f.read(1)
        f.seek(size // 2)
        f.write(bytes([c[0] ^ 0x10]))
    clear_caches()
    table = Table(table.path)
    with table.snapshot() as snap:
        with pytest.raises(CorruptionError, match="checksum mismatch") as ei:
            snap.parts[0].load_index("z")
        assert ei.value.path == target
