"""Sensitive columns: encrypted data files and encrypted indexes, end to end.

Oracles: the same rows in an unencrypted skipidx table (answers, and index
bytes after decryption), chDB (answers), pyarrow and DuckDB reading the
encrypted data files with the same KMS client, and the raw bytes of every
file (no plaintext value or filter bit pattern of a sensitive column).
"""
from __future__ import annotations

import base64
import glob
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

import skipidx
from encryption_kms import MemoryKms, master_keys
from skipidx.core.crypto import DecryptionError
from skipidx.core.kms import KeyUnavailableError
from skipidx.store.checksums import VERIFIER

KEYS = master_keys(11)
N = 6000
SETTINGS = "encrypted_columns = 'user_id:k1, n:k1, msg:k2', footer_key = 'kf'"
DDL = """CREATE TABLE t (
    id UInt64, user_id String, n Int32, msg String, level String,
    INDEX mm n TYPE minmax GRANULARITY 1,
    INDEX st n TYPE set(100) GRANULARITY 2,
    INDEX bf user_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX tb msg TYPE tokenbf_v1(512, 3, 0) GRANULARITY 1,
    INDEX ng msg TYPE ngrambf_v1(3, 512, 3, 0) GRANULARITY 1,
    INDEX sb msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX tx msg TYPE text(tokenizer = splitByNonAlpha),
    INDEX lv level TYPE set(10) GRANULARITY 1
) ORDER BY id SETTINGS index_granularity = 256, compression = 'none'{extra}"""

QUERIES = [
    "hasToken(msg, 'zebrafish4242')",
    "hasToken(msg, 'common')",
    "msg LIKE '%fish17%'",
    "user_id = 'customer-000123'",
    "user_id IN ('customer-000007', 'customer-000999', 'nobody-at-all')",
    "n = 77",
    "n BETWEEN 10 AND 12",
    "n > 990",
    "level = 'warn' AND hasToken(msg, 'zebrafish100')",
    "hasToken(msg, 'zebrafish5') OR user_id = 'customer-000042'",
    "NOT hasToken(msg, 'common')",
    "id < 300",
]


def _rows(seed: int, n: int, start: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.uint64)
    u = rng.integers(0, 1500, n)
    return pa.table({
        "id": ids,
        "user_id": [f"customer-{x:06d}" for x in u],
        "n": pa.array(rng.integers(0, 1000, n), pa.int32()),
        "msg": [f"common words zebrafish{i} tail{x % 50}" for i, x in zip(ids.tolist(), u.tolist())],
        "level": rng.choice(["info", "warn", "error"], n).tolist(),
    })


def _make(path, kms, encrypted=True):
    db = skipidx.connect(str(path), kms=kms)
    db.sql(DDL.format(extra=(", " + SETTINGS) if encrypted else ""))
    db.insert("t", _rows(1, N // 2, 0))
    db.insert("t", _rows(2, N // 2, N // 2))
    return db


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    d = tmp_path_factory.mktemp("enc")
    kms = MemoryKms(KEYS)
    enc = _make(d / "enc", kms)
    plain = _make(d / "plain", None, encrypted=False)
    yield enc, plain, d, kms
    enc.close()
    plain.close()


def _all_files(root):
    return [p for p in glob.glob(os.path.join(str(root), "**", "*"), recursive=True) if os.path.isfile(p)]


def test_answers_equal_unencrypted_table(dbs):
    enc, plain, _, _ = dbs
    for w in QUERIES:
        q = f"SELECT count(), sum(id) FROM t WHERE {w}"
        got = enc.sql(q)
        assert got.fetchall() == plain.sql(q).fetchall(), w
        # the same pruning: an encrypted index answers as the plaintext one
        ref = plain.sql(q).stats
        assert got.stats.granules_selected == ref.granules_selected, w
    rows = enc.sql("SELECT id, user_id, n, msg FROM t WHERE hasToken(msg, 'zebrafish4242')").fetchall()
    assert rows == [(4242, rows[0][1], rows[0][2], rows[0][3])] and rows[0][3].startswith("common words zebrafish4242 ")


@pytest.mark.chdb
def test_answers_equal_chdb(dbs, tmp_path):
    pytest.importorskip("chdb")
    from skipidx.apps.research import chdb_session as ch

    enc, _, _, _ = dbs
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.concat_tables([_rows(1, N // 2, 0), _rows(2, N // 2, N // 2)]), str(path))
    name = ch.scratch_database("enc")
    try:
        ch.query(f"CREATE TABLE {name}.t (id UInt64, user_id String, n Int32, msg String, level String) "
                 f"ENGINE = MergeTree ORDER BY id")
        ch.query(f"INSERT INTO {name}.t SELECT * FROM file('{path}', Parquet)")
        for w in QUERIES:
            want = str(ch.query(f"SELECT count(), sum(id) FROM {name}.t WHERE {w}", "CSV")).strip()
            c, s = enc.sql(f"SELECT count(), sum(id) FROM t WHERE {w}").fetchall()[0]
            assert f"{c},{s if s is not None else 0}" == want, w
    finally:
        ch.query(f"DROP DATABASE {name}")


def test_indexes_are_sealed_and_decrypt_to_the_plaintext_build(dbs):
    enc, plain, _, _ = dbs
    te, tp = enc.catalog.table("t"), plain.catalog.table("t")
    with te.snapshot() as se, tp.snapshot() as sp:
        assert len(se.parts) == len(sp.parts) == 2
        for pe_, pp in zip(se.parts, sp.parts):
            assert pe_.encryption["columns"] == {"user_id": "k1", "n": "k1", "msg": "k2"}
            for im in te.meta.indexes:
                raw = pa.ipc.open_file(os.path.join(pe_.path, f"idx.{im.name}.arrow")).read_all()
                sealed = b"skipidx.encryption" in (raw.schema.metadata or {})
                assert sealed == (im.name != "lv"), im.name
                if sealed:
                    assert set(raw.column_names) <= {"fragment_id", "zone_start", "zone_length", "bloom_filter_data"}
                ge, gp = pe_.load_index(im.name).to_arrow("x"), pp.load_index(im.name).to_arrow("x")
                assert ge.equals(gp), im.name


def test_no_plaintext_of_sensitive_columns_on_disk(dbs):
    enc, plain, d, kms = dbs
    files = _all_files(d / "enc")
    blobs = {p: open(p, "rb").read() for p in files}
    needles = [b"zebrafish4242", b"customer-000123", b"common words", b"tail17"]
    # filter bit patterns: every 32-byte block with bits set of the plaintext build's filters
    tp = plain.catalog.table("t")
    with tp.snapshot() as sp:
        for p in sp.parts:
            for name in ("bf", "tb", "ng", "sb"):
                t = pa.ipc.open_file(os.path.join(p.path, f"idx.{name}.arrow")).read_all()
                for f in t.column("bloom_filter_data").to_pylist()[:4]:
                    needles += [f[i:i + 32] for i in range(0, len(f), 32) if any(f[i:i + 32])][:8]
    for path, b in blobs.items():
        for s in needles:
            assert s not in b, (path, s[:16])
    # control: uncompressed, the same search finds all of them in the unencrypted table's files
    plain_blob = b"".join(open(p, "rb").read() for p in _all_files(d / "plain"))
    assert all(s in plain_blob for s in needles)
    # no key in any form: master keys, data keys (the connection's cache), base64 of them
    deks = list(enc.keyring._cache.values())
    assert deks
    for k in list(KEYS.values()) + deks:
        for path, b in blobs.items():
            assert k not in b and base64.b64encode(k) not in b, path


def test_metadata_records_settings_never_keys(dbs):
    enc, _, d, _ = dbs
    text = enc.sql("SHOW CREATE TABLE t").fetchall()[0][0]
    assert "encrypted_columns = 'user_id:k1, n:k1, msg:k2'" in text and "footer_key = 'kf'" in text
    for k in list(KEYS.values()) + list(enc.keyring._cache.values()):
        assert base64.b64encode(k).decode() not in text and k.hex() not in text
    meta = enc.catalog.table("t").meta
    assert meta.settings["encrypted_columns"] == "user_id:k1, n:k1, msg:k2"
    assert meta.settings["footer_key"] == "kf"
    assert meta.encryption == ("kf", {"user_id": "k1", "n": "k1", "msg": "k2"})


def test_other_readers_with_the_same_keys(dbs):
    enc, plain, d, kms = dbs
    files = sorted(glob.glob(str(d / "enc" / "t" / "parts" / "*" / "data.parquet")))
    assert files and all(open(f, "rb").read(4) == b"PARE" for f in files)
    cf = pe.CryptoFactory(lambda _c: MemoryKms(KEYS))
    t = pa.concat_tables([pq.read_table(f, decryption_properties=cf.file_decryption_properties(
        pe.KmsConnectionConfig())) for f in files])
    assert t.num_rows == N and sorted(t.column("id").to_pylist()) == list(range(N))
    assert t.filter(pa.compute.equal(t["id"], 4242))["msg"][0].as_py().startswith("common words zebrafish4242")
    with pytest.raises(Exception):
        pq.read_table(files[0])   # no keys: pyarrow refuses the encrypted footer


def test_without_keys(dbs):
    _, _, d, _ = dbs
    partial = skipidx.connect(str(d / "enc"), kms=MemoryKms({k: v for k, v in KEYS.items() if k != "k2"}))
    try:
        # plaintext columns and k1's columns answer
        assert partial.sql("SELECT count() FROM t WHERE level = 'warn'").fetchall()[0][0] > 0
        assert partial.sql("SELECT count() FROM t WHERE user_id = 'customer-000123'").fetchall() == \
            skipidx.connect(str(d / "plain")).sql("SELECT count() FROM t WHERE user_id = 'customer-000123'").fetchall()
        for q in ("SELECT count() FROM t WHERE hasToken(msg, 'zebrafish1')",
                  "SELECT msg FROM t WHERE id = 5",
                  "SELECT * FROM t LIMIT 1",
                  "EXPLAIN indexes = 1 SELECT count() FROM t WHERE msg LIKE '%fish%'"):
            with pytest.raises(KeyUnavailableError, match="'k2'") as ei:
                partial.sql(q)
            assert "msg" in str(ei.value) or "index" in str(ei.value)
        ex = partial.sql("EXPLAIN indexes = 1 SELECT count() FROM t WHERE level = 'warn'").fetchall()
        assert "zebrafish" not in str(ex)
    finally:
        partial.close()
    none = skipidx.connect(str(d / "enc"))
    try:
        with pytest.raises(KeyUnavailableError, match="'kf'"):
            none.sql("SELECT count() FROM t WHERE level = 'warn'")
        assert "t" in [r[0] for r in none.sql("SHOW TABLES").fetchall()]
        with pytest.raises(KeyUnavailableError, match="'kf'.*no KMS client"):
            none.insert("t", _rows(3, 10, 10_000))
    finally:
        none.close()


def test_wrong_master_key(dbs):
    _, _, d, _ = dbs
    wrong = skipidx.connect(str(d / "enc"), kms=MemoryKms({**KEYS, "k2": bytes(16)}))
    try:
        with pytest.raises(skipidx.SkipidxError, match="'k2'"):
            wrong.sql("SELECT count() FROM t WHERE hasToken(msg, 'zebrafish1')")
    finally:
        wrong.close()


def test_create_refuses_bad_settings(tmp_path):
    db = skipidx.connect(str(tmp_path / "db"), kms=MemoryKms(KEYS))
    bad = [
        ("encrypted_columns = 'nosuch:k1', footer_key = 'kf'", "unknown column"),
        ("encrypted_columns = 'msg'", "go together"),
        ("encrypted_columns = 'msg:', footer_key = 'kf'", "not 'column:keyid'"),
        ("encrypted_columns = 'msg:k1, msg:k2', footer_key = 'kf'", "twice"),
        ("encrypted_columns = 'msg:k9', footer_key = 'kf'", "'k9'"),   # the KMS does not know k9
    ]
    for s, msg in bad:
        with pytest.raises(skipidx.SkipidxError, match=msg):
            db.sql(f"CREATE TABLE x (id UInt64, msg String) ORDER BY id SETTINGS {s}")
    with pytest.raises(KeyUnavailableError, match="no KMS client"):
        skipidx.connect(str(tmp_path / "db2")).sql(
            "CREATE TABLE x (id UInt64, msg String) ORDER BY id SETTINGS encrypted_columns = 'msg:k1', "
            "footer_key = 'kf'")
    db.close()


def _one_part_db(path, kms):
    db = skipidx.connect(str(path), kms=kms)
    db.sql(DDL.format(extra=", " + SETTINGS))
    db.insert("t", _rows(5, 2000, 0))
    return db


def test_tampered_index_module_is_an_error(tmp_path, monkeypatch):
    kms = MemoryKms(KEYS)
    db = _one_part_db(tmp_path / "db", kms)
    t = db.catalog.table("t")
    with t.snapshot() as s:
        p = s.parts[0]
        path = os.path.join(p.path, "idx.tb.arrow")
    data = bytearray(open(path, "rb").read())
    raw = pa.ipc.open_file(path).read_all()
    blob = raw.column("bloom_filter_data")[3].as_py()
    i = bytes(data).index(blob)
    data[i + len(blob) - 40] ^= 0x10   # inside granule 3's bitset ciphertext
    os.chmod(path, 0o644)
    open(path, "wb").write(bytes(data))
    # with the checksums: damage detected, the index not trusted, the answer still exact
    q = "SELECT count() FROM t WHERE hasToken(msg, 'zebrafish700')"
    assert db.sql(q).fetchall() == [(1,)]
    # an attacker who also fixed the checksums meets the GCM tag: an error, never an answer
    monkeypatch.setattr(VERIFIER, "verify", lambda *a, **k: None)
    monkeypatch.setattr(VERIFIER, "read_verified", lambda path, expected, read: read(path))
    db.index_cache.clear()
    with t.snapshot() as s:
        with pytest.raises(DecryptionError, match="granule 3"):
            s.parts[0].load_index("tb")
    db.close()


def test_tampered_data_page_is_an_error(tmp_path, monkeypatch):
    """A changed byte in an encrypted data page: AES-GCM fails, never a wrong row (in a child
    process: a crash there must not take the test run with it)."""
    code = f"""
import os, sys, pyarrow as pa
sys.path.insert(0, {os.path.dirname(__file__)!r})
import skipidx
from encryption_kms import MemoryKms, master_keys
from skipidx.store.checksums import VERIFIER
from test_encryption import _one_part_db, KEYS
db = _one_part_db({str(tmp_path / 'db')!r}, MemoryKms(KEYS))
t = db.catalog.table("t")
with t.snapshot() as s:
    p = s.parts[0]
    path = os.path.join(p.path, "data.parquet")
    spans = p.manifest["row_groups"]
a, b = spans[2]
data = bytearray(open(path, "rb").read())
for off in range(a + 40, b - 40, 97):
    data[off] ^= 0x01
os.chmod(path, 0o644)
open(path, "wb").write(bytes(data))
VERIFIER.verify = lambda *a, **k: None
try:
    print(db.sql("SELECT sum(length(msg)), sum(n), count() FROM t").fetchall())
except skipidx.SkipidxError as e:
    print("SKIPIDXERROR", type(e).__name__, e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "SKIPIDXERROR" in r.stdout, r.stdout


def test_key_rotation_by_rewrite(tmp_path):
    kms = MemoryKms(KEYS)
    db = _make(tmp_path / "db", kms)
    before = {w: db.sql(f"SELECT count(), sum(id) FROM t WHERE {w}").fetchall() for w in QUERIES}
    t = db.catalog.table("t")
    db.sql("ALTER TABLE t MODIFY SETTING encrypted_columns = 'user_id:k1, n:k1, msg:k3'")
    db.sql("OPTIMIZE TABLE t FINAL")
    with t.snapshot() as s:
        assert len(s.parts) == 1 and s.parts[0].encryption["columns"]["msg"] == "k3"
    db.sql("OPTIMIZE TABLE t FINAL")   # already under the current keys: nothing to rewrite
    db.close()
    # k2 revoked: everything still answers with k3
    rotated = skipidx.connect(str(tmp_path / "db"), kms=MemoryKms({k: v for k, v in KEYS.items() if k != "k2"}))
    for w, want in before.items():
        assert rotated.sql(f"SELECT count(), sum(id) FROM t WHERE {w}").fetchall() == want, w
    rotated.close()
    # and k3 is now required for msg
    no3 = skipidx.connect(str(tmp_path / "db"), kms=MemoryKms({k: v for k, v in KEYS.items() if k != "k3"}))
    with pytest.raises(KeyUnavailableError, match="'k3'"):
        no3.sql("SELECT count() FROM t WHERE hasToken(msg, 'zebrafish1')")
    no3.close()


def test_duckdb_reads_the_encrypted_file_with_its_keys(dbs):
    """DuckDB takes raw keys (no KMS): the footer key recovered through the client. DuckDB
    2.0.1 rejects every pyarrow-encrypted file with the right key ("Computed AES tag differs"),
    so this skips there; it checks the read once DuckDB reads such files."""
    duckdb = pytest.importorskip("duckdb")
    _, _, d, kms = dbs
    from skipidx.core import parquet_bloom as pb
    from skipidx.core.kms import unwrap_key_metadata

    files = sorted(glob.glob(str(d / "enc" / "t" / "parts" / "*" / "data.parquet")))
    with open(files[0], "rb") as fh:
        tail = pb._read_tail(fh, os.path.getsize(files[0]), files[0])[1]
    fcm = pb._Reader(tail, 0, files[0]).struct()
    key, mid = unwrap_key_metadata(fcm[2], kms)
    assert mid == "kf"
    con = duckdb.connect()
    con.execute(f"PRAGMA add_parquet_key('kf', '{base64.b64encode(key).decode()}')")
    try:
        n = con.execute(f"SELECT count(*) FROM read_parquet('{files[0]}', encryption_config = "
                        f"{{footer_key: 'kf'}})").fetchone()[0]
        assert n == N // 2
    except duckdb.Error as e:
        pytest.skip(f"DuckDB {duckdb.__version__} cannot read Parquet modular encryption written by Arrow: {e}")


def test_alter_column_keeps_encryption(tmp_path):
    kms = MemoryKms(KEYS)
    db = _one_part_db(tmp_path / "db", kms)
    db.sql("ALTER TABLE t ADD COLUMN extra UInt8")
    assert db.sql("SELECT count() FROM t WHERE hasToken(msg, 'zebrafish700')").fetchall() == [(1,)]
    with db.catalog.table("t").snapshot() as s:
        assert s.parts[0].encryption["columns"]["msg"] == "k2"
        assert open(os.path.join(s.parts[0].path, "data.parquet"), "rb").read(4) == b"PARE"
    db.close()


def test_sensitive_order_by_key(tmp_path):
    """ORDER BY a sensitive column: its row-group statistics (pruning by the key) need its key."""
    kms = MemoryKms(KEYS)
    db = skipidx.connect(str(tmp_path / "db"), kms=kms)
    db.sql("CREATE TABLE k (user_id String, v UInt32) ORDER BY user_id SETTINGS index_granularity = 128, "
           "encrypted_columns = 'user_id:k1', footer_key = 'kf'")
    rows = _rows(7, 3000, 0).select(["user_id"]).append_column("v", pa.array(np.arange(3000), pa.uint32()))
    db.insert("k", rows)
    who = rows["user_id"][0].as_py()
    got = db.sql(f"SELECT count() FROM k WHERE user_id = '{who}'")
    assert got.fetchall()[0][0] >= 1 and got.stats.granules_selected < got.stats.granules_total
    db.close()
    no1 = skipidx.connect(str(tmp_path / "db"), kms=MemoryKms({k: v for k, v in KEYS.items() if k != "k1"}))
    with pytest.raises(KeyUnavailableError, match="'k1'"):
        no1.sql(f"SELECT count() FROM k WHERE user_id = '{who}'")
    assert no1.sql("SELECT count() FROM k WHERE v < 10").fetchall() == [(10,)]
    no1.close()


@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_external_table_refuses_encrypted_files(tmp_path, plaintext_footer):
    """An external table over encrypted Parquet files skips them with the reason, and never
    asks pyarrow for their columns' metadata (that aborts the process without the key)."""
    cf = pe.CryptoFactory(lambda _c: MemoryKms(KEYS))
    props = cf.file_encryption_properties(pe.KmsConnectionConfig(), pe.EncryptionConfiguration(
        footer_key="kf", column_keys={"k1": ["a"]}, plaintext_footer=plaintext_footer))
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}), str(lake / "enc.parquet"),
                   encryption_properties=props)
    pq.write_table(pa.table({"a": [4, 5], "b": ["u", "v"]}), str(lake / "plain.parquet"))
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql(f"CREATE TABLE l (a Int64, b String) ENGINE = ParquetFiles('{lake}/*.parquet')")
    assert db.sql("SELECT count(), sum(a) FROM l").fetchall() == [(2, 9)]
    db.close()
