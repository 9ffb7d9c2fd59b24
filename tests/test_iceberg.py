"""External tables over Iceberg tables (ENGINE = Iceberg) through pyiceberg.

A local SqlCatalog (sqlite) warehouse in tmp_path, written by pyiceberg. The row
oracle is pyiceberg's own ``scan().to_arrow()`` (it applies the deletes), queried
with DuckDB. The Puffin statistics file is read back with pyiceberg's Puffin
reader and checked byte by byte against the spec. The data files' bytes and
modification times are checked unchanged at the end of every test.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.core.errors import SkipidxError

pytest.importorskip("pyiceberg")
duckdb = pytest.importorskip("duckdb")
pytest.importorskip("sqlalchemy")

from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent, ManifestWriterV2  # noqa: E402

WORDS = np.array(["alpha", "beta", "gamma", "delta", "error", "timeout", "disk", "user"])
INDEXES = ("INDEX tok msg TYPE tokenbf_v1(2048, 3, 0), INDEX ng msg TYPE sbbf('ngram', n = 4), "
           "INDEX tr trace_id TYPE bloom_filter(0.01), INDEX mm n TYPE minmax")


def _rows(seed: int, start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    msg = np.char.add(np.char.add(rng.choice(WORDS, n), " "), rng.choice(WORDS, n)).astype(object)
    for k, i in enumerate(rng.choice(n, 3, replace=False)):
        msg[i] = f"kraken{seed} rare event {k}"
    msg[rng.random(n) < 0.05] = None
    nn = rng.integers(0, 1000, n).astype(object)
    nn[rng.random(n) < 0.03] = None
    return pa.table({
        "id": pa.array(np.arange(start, start + n), pa.int64()),
        "msg": pa.array(msg, pa.string()),
        "trace_id": pa.array([f"t{seed}-{i:06d}" for i in range(n)], pa.string()),
        "n": pa.array(nn, pa.int32()),
    })


def _snapshot_files(root: str) -> dict:
    out = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith(".parquet"):
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    out[p] = (hashlib.sha256(fh.read()).hexdigest(), os.stat(p).st_mtime_ns)
    return out


@pytest.fixture
def lake(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    uri = f"sqlite:///{wh}/catalog.db"
    cat = SqlCatalog("default", uri=uri, warehouse=f"file://{wh}")
    cat.create_namespace("ns")
    first = _rows(1, 0, 20000)
    tbl = cat.create_table("ns.logs", schema=first.schema)
    tbl.append(first)
    tbl.append(_rows(2, 20000, 12000))
    tbl.append(_rows(3, 32000, 9000))
    db = skipidx.connect(str(tmp_path / "db"))
    before = _snapshot_files(str(wh))
    yield db, cat, uri, str(wh)
    db.close()
    after = _snapshot_files(str(wh))
    for p, v in before.items():         # pyiceberg never rewrites a data file in place
        assert after.get(p) == v, p


def _oracle(cat, where: str) -> list:
    t = cat.load_table("ns.logs").scan().to_arrow()
    con = duckdb.connect()
    con.register("t", t)
    return sorted(r[0] for r in con.sql(f"SELECT id FROM t WHERE {where}").fetchall())


def _ours(db, where: str) -> list:
    return sorted(r[0] for r in db.sql(f"SELECT id FROM lg WHERE {where}").fetchall())


def _tok(word: str) -> str:
    return f"regexp_matches(msg, '(^|[^A-Za-z0-9]){word}([^A-Za-z0-9]|$)')"


CASES = [
    ("hasToken(msg, 'kraken2')", _tok("kraken2")),
    ("hasToken(msg, 'timeout')", _tok("timeout")),
    ("hasToken(msg, 'nothere')", _tok("nothere")),
    ("msg LIKE '%ken3 rare%'", "msg LIKE '%ken3 rare%'"),
    ("msg LIKE 'gamma d%'", "msg LIKE 'gamma d%'"),
    ("trace_id = 't2-000417'", "trace_id = 't2-000417'"),
    ("trace_id IN ('t1-000005', 't3-008999', 'nope')", "trace_id IN ('t1-000005', 't3-008999', 'nope')"),
    ("id >= 19990 AND id < 20010", "id >= 19990 AND id < 20010"),
    ("n > 990", "n > 990"),
    ("msg IS NULL AND id < 25000", "msg IS NULL AND id < 25000"),
    ("n IS NULL", "n IS NULL"),
    ("hasToken(msg, 'kraken1') OR trace_id = 't3-000001'", f"{_tok('kraken1')} OR trace_id = 't3-000001'"),
]


def _check_all(db, cat):
    for ours, theirs in CASES:
        assert _ours(db, ours) == _oracle(cat, theirs), ours
    n = db.sql("SELECT count() FROM lg").fetchall()[0][0]
    assert n == len(cat.load_table("ns.logs").scan().to_arrow())


def _create(db, uri):
    return db.sql(f"CREATE TABLE lg ({INDEXES}) ENGINE = Iceberg('{uri}', 'ns.logs')")


def test_queries_equal_pyiceberg_scan_and_prune(lake):
    db, cat, uri, wh = lake
    res = _create(db, uri)
    assert "indexed 3 new files" in res.message and "Puffin statistics file" in res.message
    _check_all(db, cat)
    # pruning: a rare token keeps one zone of one file
    r = db.sql("SELECT id FROM lg WHERE hasToken(msg, 'kraken2')")
    assert r.stats.parts_total == 3 and r.stats.parts_selected == 1
    assert r.stats.granules_selected < r.stats.granules_total
    ex = "\n".join(x[0] for x in db.sql("EXPLAIN indexes = 1 SELECT id FROM lg WHERE trace_id = 't2-000417'").fetchall())
    assert "Files: 1/3" in ex and "Iceberg snapshot" in ex and "Zones:" in ex
    # columns from the Iceberg schema; SHOW CREATE round-trips the engine
    sc = db.sql("SHOW CREATE TABLE lg").fetchall()[0][0]
    assert f"ENGINE = Iceberg('{uri}', 'ns.logs', 'default')" in sc
    assert db.prune("lg", "hasToken(msg, 'kraken3')")[0][1] == [0]
    with pytest.raises(SkipidxError, match="Iceberg table"):
        db.sql("INSERT INTO lg VALUES (1, 'x', 'y', 2)")


def test_delete_and_overwrite_picked_up_by_refresh(lake):
    db, cat, uri, wh = lake
    _create(db, uri)
    tbl = cat.load_table("ns.logs")
    tbl.delete("id < 100")                                   # copy-on-write: one file rewritten
    stale = _ours(db, "id < 5")
    assert stale == [0, 1, 2, 3, 4]                         # the snapshot of the last REFRESH
    notes = db.sql("SELECT id FROM lg WHERE id < 5").stats.notes
    assert any("current snapshot is now" in n for n in notes), notes
    rep = db.sql("ALTER TABLE lg REFRESH")
    assert not any("current snapshot is now" in n for n in db.sql("SELECT id FROM lg WHERE id < 5").stats.notes)
    kinds = [r[0] for r in rep.fetchall()]
    assert kinds.count("indexed") == 1 and kinds.count("removed") == 1
    assert "unchanged 2" in rep.message                     # the other two files' sidecars kept
    _check_all(db, cat)
    assert _ours(db, "id < 150") == list(range(100, 150))
    tbl = cat.load_table("ns.logs")
    tbl.overwrite(_rows(4, 50000, 5000))
    db.sql("ALTER TABLE lg REFRESH")
    _check_all(db, cat)
    assert _ours(db, "hasToken(msg, 'kraken4')") != [] and _ours(db, "hasToken(msg, 'kraken1')") == []
    tbl = cat.load_table("ns.logs")
    tbl.append(_rows(5, 60000, 3000))
    rep = db.sql("ALTER TABLE lg REFRESH")
    assert "indexed 1 new files" in rep.message and "unchanged 1" in rep.message
    _check_all(db, cat)


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg writes no delete files; its own manifest writer, told it writes deletes."""

    def content(self):
        return ManifestContent.DELETES

    @property
    def _meta(self):
        return {**super()._meta, "content": "deletes"}


def _add_position_deletes(tbl, wh: str, deletes: dict[str, list[int]]) -> None:
    """Commit one Parquet position-delete file (file_path, pos) as the Iceberg spec lays it out."""
    paths, pos = [], []
    for p, ps in deletes.items():
        paths += [p] * len(ps)
        pos += ps
    t = pa.table({"file_path": pa.array(paths, pa.string()), "pos": pa.array(pos, pa.int64())})
    order = pa.compute.sort_indices(t, [("file_path", "ascending"), ("pos", "ascending")])
    local = os.path.join(wh, f"posdel-{len(os.listdir(wh))}.parquet")
    pq.write_table(t.take(order), local)
    df = DataFile.from_args(content=DataFileContent.POSITION_DELETES, file_path=f"file://{local}",
                            file_format=FileFormat.PARQUET, partition={}, record_count=t.num_rows,
                            file_size_in_bytes=os.path.getsize(local))
    df.spec_id = 0
    with tbl.transaction() as tx:
        with tx.update_snapshot().fast_append() as fa:
            fa.new_manifest_writer = lambda spec, fa=fa: _DeleteManifestWriter(
                spec, fa.schema(), fa.new_manifest_output(), fa._snapshot_id, fa._compression)
            fa.append_data_file(df)


def test_position_deletes_respected(lake):
    db, cat, uri, wh = lake
    _create(db, uri)
    tbl = cat.load_table("ns.logs")
    files = {t.file.record_count: t.file.file_path for t in tbl.scan().plan_files()}
    # rows of the 12000-row file (ids 20000..31999): the rare rows and a run across zones
    t2 = pq.read_table(files[12000][len("file://"):])
    rare = [i for i, m in enumerate(t2.column("msg").to_pylist()) if m and m.startswith("kraken2")]
    _add_position_deletes(tbl, wh, {files[12000]: rare[:2] + list(range(8100, 8300)),
                                    files[9000]: [0, 8999]})
    tbl = cat.load_table("ns.logs")
    # (without file_path bounds the delete file is attached to every data file; it names two)
    assert [len(t.delete_files) for t in tbl.scan().plan_files()] == [1, 1, 1]
    rep = db.sql("ALTER TABLE lg REFRESH")
    assert "2 with deletes" in rep.message and "unchanged 3" in rep.message
    _check_all(db, cat)
    assert len(_ours(db, "hasToken(msg, 'kraken2')")) == 1
    assert _ours(db, "id >= 28090 AND id < 28110") == list(range(28090, 28100))
    assert db.sql("SELECT count() FROM lg").fetchall()[0][0] == 41000 - 204
    # streaming reads and db.scan drop them too; a file reader given (file, row groups) would not
    got = db.scan("lg", where="id >= 32000", columns=["id"]).read_all().column("id").to_pylist()
    assert sorted(got) == list(range(32001, 40999))
    with pytest.raises(SkipidxError, match="deleted by Iceberg delete files"):
        db.prune("lg", "id >= 32000")
    # a damaged deleted-positions file is detected, never read as "no deletes"
    root = db.catalog.path
    ddir = os.path.join(root, "lg", "deletes")
    for f in os.listdir(ddir):
        with open(os.path.join(ddir, f), "r+b") as fh:
            fh.write(b"\x07")
    db.close()
    db2 = skipidx.connect(root)
    with pytest.raises(SkipidxError, match="checksum mismatch"):
        db2.sql("SELECT count() FROM lg WHERE id >= 32000").fetchall()
    db2.close()


def test_puffin_statistics_file(lake):
    from pyiceberg.table.puffin import PuffinFile

    db, cat, uri, wh = lake
    _create(db, uri)
    tbl = cat.load_table("ns.logs")
    snap = tbl.current_snapshot()
    stats = [s for s in tbl.metadata.statistics if s.snapshot_id == snap.snapshot_id]
    assert len(stats) == 1
    sf = stats[0]
    path = sf.statistics_path[len("file://"):]
    data = open(path, "rb").read()
    # the spec, byte by byte: Magic Blob* Magic FooterPayload FooterPayloadSize Flags Magic
    assert data[:4] == b"PFA1" and data[-4:] == b"PFA1"
    size = struct.unpack("<i", data[-12:-8])[0]
    assert data[-8:-4] == b"\0\0\0\0"
    assert data[len(data) - 12 - size - 4:len(data) - 12 - size] == b"PFA1"
    assert sf.file_size_in_bytes == len(data) and sf.file_footer_size_in_bytes == size + 16
    footer = json.loads(data[-12 - size:-12])
    # an independent reader: pyiceberg's
    pf = PuffinFile(data)
    assert len(pf.footer.blobs) == 3 * 4 == len(footer["blobs"])
    ids = {f.name: f.field_id for f in tbl.schema().fields}
    table_dir = os.path.join(db.catalog.path, "lg")
    state = json.load(open(os.path.join(table_dir, "external.json")))["state"]
    by_file = {r["identity"]["path"]: r for r in state["files"].values()}
    for b, raw in zip(pf.footer.blobs, footer["blobs"]):
        assert b.type == "skipidx-zone-index-v1" and raw["compression-codec"] == "zstd"
        assert b.snapshot_id == snap.snapshot_id and b.sequence_number == snap.sequence_number
        props = b.properties
        local = props["skipidx.data-file"][len("file://"):]
        entry = by_file[local]["sidecars"][props["skipidx.index"]]
        col = {"tok": "msg", "ng": "msg", "tr": "trace_id", "mm": "n"}[props["skipidx.index"]]
        assert b.fields == [ids[col]]
        payload = pf.get_blob_payload(b)
        assert payload == open(os.path.join(table_dir, "sidecars", entry["file"]), "rb").read()
        # the payload is the sidecar: an Arrow IPC file in the Lance zone schema
        zt = pa.ipc.open_file(pa.BufferReader(payload)).read_all()
        assert zt.num_rows >= 1
    # a REFRESH with nothing new keeps the file
    rep = db.sql("ALTER TABLE lg REFRESH")
    assert "up to date" in rep.message
    # another database attaching the table takes the sidecars from the blobs instead of building
    # them (same bytes), and only those built for the same index definition
    db2 = skipidx.connect(os.path.join(os.path.dirname(db.catalog.path), "db2"))
    rep = db2.sql(f"CREATE TABLE lg ({INDEXES}, INDEX tok2 msg TYPE tokenbf_v1(1024, 2, 0)) "
                  f"ENGINE = Iceberg('{uri}', 'ns.logs')")
    assert "12 sidecar(s) taken from the table's Puffin statistics files" in rep.message
    assert "rebuilt 3" in rep.message      # tok2 only
    st2 = json.load(open(os.path.join(db2.catalog.path, "lg", "external.json")))["state"]
    for r in st2["files"].values():
        for name, e in r["sidecars"].items():
            if name != "tok2":
                assert e == by_file[r["identity"]["path"]]["sidecars"][name]
    _check_all(db2, cat)
    db2.close()
    # its statistics file kept the first database's blobs and added its own
    tbl = cat.load_table("ns.logs")
    sf = [s for s in tbl.metadata.statistics if s.snapshot_id == snap.snapshot_id][0]
    pf2 = PuffinFile(open(sf.statistics_path[len("file://"):], "rb").read())
    assert sorted(b.properties["skipidx.index"] for b in pf2.footer.blobs) == sorted(["tok", "ng", "tr", "mm", "tok2"] * 3)
    assert "up to date" in db.sql("ALTER TABLE lg REFRESH").message
    # a new snapshot gets its own statistics file
    tbl.append(_rows(7, 90000, 100))
    db.sql("ALTER TABLE lg REFRESH")
    tbl = cat.load_table("ns.logs")
    assert {s.snapshot_id for s in tbl.metadata.statistics} == {snap.snapshot_id, tbl.current_snapshot().snapshot_id}
    assert len(tbl.scan().to_arrow()) == 41100      # pyiceberg still loads and reads the table


def test_attach_api_local_table_and_errors(lake, tmp_path):
    db, cat, uri, wh = lake
    tbl = cat.load_table("ns.logs")
    db.attach_iceberg("lg", tbl, ["INDEX tok msg TYPE tokenbf_v1(2048, 3, 0)"])
    assert _ours(db, "hasToken(msg, 'kraken3')") == _oracle(cat, _tok("kraken3"))
    db.attach_iceberg("lg2", "ns.logs", catalog=uri)
    assert db.sql("SELECT count() FROM lg2 WHERE n IS NULL").fetchall()[0][0] == len(_oracle(cat, "n IS NULL"))
    with pytest.raises(SkipidxError, match="INDEX clause"):
        db.attach_iceberg("lg3", tbl, ["tok msg TYPE minmax"])
    # a table directory without its catalog: read-only, no statistics registered
    db.sql(f"CREATE TABLE loc ENGINE = IcebergLocal('{tbl.location()[len('file://'):]}')")
    assert db.sql("SELECT count() FROM loc WHERE hasToken(msg, 'kraken3')").fetchall() == [
        (len(_oracle(cat, _tok("kraken3"))),)]
    # indexes added later are built for the snapshot's files; SHOW CREATE round-trips; DROP leaves Iceberg alone
    db.sql("ALTER TABLE lg ADD INDEX tr trace_id TYPE bloom_filter(0.01)")
    db.sql("ALTER TABLE lg MATERIALIZE INDEX tr")
    r = db.sql("SELECT id FROM lg WHERE trace_id = 't2-000417'")
    assert [x[0] for x in r.fetchall()] == _oracle(cat, "trace_id = 't2-000417'") and r.stats.parts_selected == 1
    sc = db.sql("SHOW CREATE TABLE lg").fetchall()[0][0]
    db.sql("DROP TABLE lg")
    db.sql(sc.replace("CREATE TABLE default.lg", "CREATE TABLE lg"))   # (db.table names: not parsed here yet)
    assert db.sql("SHOW CREATE TABLE lg").fetchall()[0][0] == sc
    assert len(cat.load_table("ns.logs").scan().to_arrow()) == 41000
    for bad, msg in [
        (f"CREATE TABLE x ENGINE = Iceberg('{uri}', 'ns.nope')", "NoSuchTable"),
        (f"CREATE TABLE x ENGINE = Iceberg('{uri}')", "two or three strings"),
        ("CREATE TABLE x ENGINE = Iceberg('s3://bucket/x', 'ns.logs')", "cannot load"),
        (f"CREATE TABLE x (nope String) ENGINE = Iceberg('{uri}', 'ns.logs')", "nope"),
    ]:
        with pytest.raises(SkipidxError, match=msg):
            db.sql(bad)


def test_equality_deletes_refused():
    from skipidx.store.iceberg import _position_deletes

    df = DataFile.from_args(content=DataFileContent.EQUALITY_DELETES, file_path="file:///x/eq.parquet",
                            file_format=FileFormat.PARQUET, partition={}, record_count=1, file_size_in_bytes=10,
                            equality_ids=[1])
    with pytest.raises(SkipidxError, match="equality delete"):
        _position_deletes(None, df, {})


def test_query_path_does_not_import_pyiceberg(lake):
    db, cat, uri, wh = lake
    _create(db, uri)
    path = db.catalog.path
    db.close()
    code = textwrap.dedent(f"""
        import sys, skipidx
        db = skipidx.connect({path!r})
        r = db.sql("SELECT count() FROM lg WHERE hasToken(msg, 'kraken1')").fetchall()
        print(r[0][0], "pyiceberg" in sys.modules)
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(len(_oracle(cat, _tok("kraken1")))), "False"]


def _add_deletion_vector(tbl, wh: str, data_uri: str, positions: list[int]) -> None:
    """Commit a Puffin deletion vector (blob deletion-vector-v1: length, magic D1D33964, a
    portable 64-bit roaring bitmap, CRC-32), written with skipidx's Puffin writer."""
    import zlib

    from pyroaring import BitMap

    from skipidx.store.puffin import Blob, write_puffin

    vec = (1).to_bytes(8, "little") + (0).to_bytes(4, "little") + BitMap(positions).serialize()
    body = bytes.fromhex("D1D33964") + vec
    payload = len(body).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")
    local = os.path.join(wh, "dv.puffin")
    snap = tbl.current_snapshot()
    write_puffin(local, [Blob("deletion-vector-v1", [2147483645], snap.snapshot_id, snap.sequence_number, payload,
                              {"referenced-data-file": data_uri, "cardinality": str(len(positions))},
                              compression_codec=None)])
    df = DataFile.from_args(content=DataFileContent.POSITION_DELETES, file_path=f"file://{local}",
                            file_format=FileFormat.PUFFIN, partition={}, record_count=len(positions),
                            file_size_in_bytes=os.path.getsize(local))
    df.spec_id = 0
    with tbl.transaction() as tx:
        with tx.update_snapshot().fast_append() as fa:
            fa.new_manifest_writer = lambda spec, fa=fa: _DeleteManifestWriter(
                spec, fa.schema(), fa.new_manifest_output(), fa._snapshot_id, fa._compression)
            fa.append_data_file(df)


def test_deletion_vector_respected(lake):
    db, cat, uri, wh = lake
    _create(db, uri)
    tbl = cat.load_table("ns.logs")
    files = {t.file.record_count: t.file.file_path for t in tbl.scan().plan_files()}
    _add_deletion_vector(tbl, wh, files[20000], [0, 1, 8191, 8192, 19999])
    tbl = cat.load_table("ns.logs")
    assert len(tbl.scan().to_arrow()) == 41000 - 5           # pyiceberg applies it (the oracle)
    rep = db.sql("ALTER TABLE lg REFRESH")
    assert "1 with deletes" in rep.message
    _check_all(db, cat)
    assert _ours(db, "id < 3 OR (id >= 8190 AND id < 8194) OR id = 19999") == [2, 8190, 8193]


def test_partitioned_table(tmp_path):
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    wh = tmp_path / "wh"
    wh.mkdir()
    uri = f"sqlite:///{wh}/catalog.db"
    cat = SqlCatalog("default", uri=uri, warehouse=f"file://{wh}")
    cat.create_namespace("ns")
    t = _rows(1, 0, 6000)
    t = t.append_column("region", pa.array(np.array(["eu", "us", "ap"])[np.arange(6000) % 3], pa.string()))
    tbl = cat.create_table("ns.logs", schema=t.schema)
    fid = {f.name: f.field_id for f in tbl.schema().fields}["region"]
    with tbl.update_spec() as u:
        u.add_field("region", IdentityTransform(), "region")
    tbl = cat.load_table("ns.logs")
    tbl.append(t)
    assert len(tbl.scan().plan_files()) == 3
    assert isinstance(tbl.spec(), PartitionSpec) and tbl.spec().fields[0].source_id == fid
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql(f"CREATE TABLE lg ({INDEXES}) ENGINE = Iceberg('{uri}', 'ns.logs')")
        for region in ("eu", "us", "ap"):
            r = db.sql(f"SELECT id FROM lg WHERE region = '{region}' AND hasToken(msg, 'kraken1')")
            assert r.stats.parts_selected <= 1
            assert sorted(x[0] for x in r.fetchall()) == _oracle(cat, f"region = '{region}' AND {_tok('kraken1')}")
        assert db.sql("SELECT id FROM lg WHERE region = 'us'").stats.parts_selected == 1
        assert sorted(x[0] for x in db.sql("SELECT id FROM lg WHERE region IN ('eu', 'ap')").fetchall()) == _oracle(
            cat, "region IN ('eu', 'ap')")


def test_queries_during_refresh_see_one_snapshot(lake):
    import threading

    db, cat, uri, wh = lake
    _create(db, uri)
    tbl = cat.load_table("ns.logs")
    files = {t.file.record_count: t.file.file_path for t in tbl.scan().plan_files()}
    _add_position_deletes(tbl, wh, {files[20000]: list(range(0, 20000, 2))})
    cat.load_table("ns.logs").append(_rows(6, 70000, 4000))
    old, new = 41000, 41000 - 10000 + 4000
    done = threading.Event()
    errors = []

    def refresh():
        try:
            db.sql("ALTER TABLE lg REFRESH")
        except Exception as e:          # reported below
            errors.append(e)
        finally:
            done.set()

    th = threading.Thread(target=refresh)
    th.start()
    seen = set()
    while not done.is_set():
        seen.add(db.sql("SELECT count() FROM lg WHERE id >= 0").fetchall()[0][0])
    th.join()
    assert not errors, errors
    seen.add(db.sql("SELECT count() FROM lg WHERE id >= 0").fetchall()[0][0])
    assert seen <= {old, new} and new in seen, seen


def test_puffin_writer_reader_roundtrip_and_damage(tmp_path):
    from skipidx.core.errors import CorruptionError
    from skipidx.store.puffin import Blob, blob_payload, read_footer, write_puffin

    p = str(tmp_path / "x.stats")
    blobs = [Blob("skipidx-zone-index-v1", [1], 7, 3, b"abc" * 1000, {"k": "v"}),
             Blob("other", [], 7, 3, b"", compression_codec=None)]
    f = write_puffin(p, blobs, {"created-by": "test"})
    data = open(p, "rb").read()
    g = read_footer(data)
    assert g.blobs == f.blobs and g.properties == {"created-by": "test"} and g.footer_size == f.footer_size
    assert blob_payload(data, g.blobs[0]) == b"abc" * 1000 and blob_payload(data, g.blobs[1]) == b""
    assert g.blobs[0]["offset"] == 4 and g.blobs[1]["offset"] == 4 + g.blobs[0]["length"]
    for bad in (data[:-1], b"XXXX" + data[4:], data[:-12] + struct.pack("<i", 10**6) + data[-8:],
                data[:-8] + b"\1\0\0\0" + data[-4:], data[:8]):
        with pytest.raises(CorruptionError):
            read_footer(bad)
