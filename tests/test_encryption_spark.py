"""Encrypted Parquet files between skipidx and parquet-java (Spark 4.x).

Spark writes files with Parquet modular encryption through parquet-java's
PropertiesDrivenCryptoFactory and a small KMS compiled here with javac
(tests/fixtures/java/skipidxtest/TestKms.java, wrapping exactly as
encryption_kms.MemoryKms). Oracles: the values themselves (pyarrow reads the
encrypted file with the same KMS client), SBBFs built here from them, and
Spark reading the files skipidx writes.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

pytest.importorskip("pyspark")

import skipidx  # noqa: E402
from conftest import get_spark  # noqa: E402
from encryption_kms import MemoryKms, java_key_list, master_keys  # noqa: E402
from skipidx.core.crypto import DecryptionError  # noqa: E402
from skipidx.core.kms import KeyUnavailableError  # noqa: E402
from skipidx.core.parquet_bloom import read_bloom_filter, read_bloom_filters  # noqa: E402
from skipidx.core.sbbf import SBBF  # noqa: E402
from skipidx.hashing import parquet_xxh64  # noqa: E402

pytestmark = pytest.mark.spark

KEYS = master_keys(5)
JAVA_MAX_BYTES = 1024 * 1024
NDV, FPP = 3000, 0.01
FACTORY = "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory"


@pytest.fixture(scope="module")
def spark_kms(tmp_path_factory):
    """The shared Spark session with TestKms on its class path."""
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac")
    spark = get_spark()
    jars = os.path.join(os.path.dirname(__import__("pyspark").__file__), "jars", "*")
    out = tmp_path_factory.mktemp("testkms")
    src = os.path.join(os.path.dirname(__file__), "fixtures", "java", "skipidxtest", "TestKms.java")
    subprocess.run([javac, "-d", str(out / "cls"), "-cp", jars, src], check=True, capture_output=True)
    subprocess.run(["jar", "cf", str(out / "testkms.jar"), "-C", str(out / "cls"), "."], check=True)
    spark.sparkContext._jsc.addJar(str(out / "testkms.jar"))
    return spark


def _crypto_options(w, keys=KEYS, plaintext_footer=False, uniform=False):
    w = (w.option("parquet.crypto.factory.class", FACTORY)
         .option("parquet.encryption.kms.client.class", "skipidxtest.TestKms")
         .option("skipidx.test.master.keys", java_key_list(keys))
         .option("parquet.encryption.plaintext.footer", str(plaintext_footer).lower()))
    if uniform:   # every column and the footer under one key (columns "with the footer key")
        return w.option("parquet.encryption.uniform.key", "kf")
    return (w.option("parquet.encryption.footer.key", "kf")
            .option("parquet.encryption.column.keys", "k1:user_id;k2:msg"))


def _write_encrypted(spark, path, plaintext_footer=False, uniform=False):
    df = spark.range(0, 40_000, 1, 1).selectExpr(
        "id", "concat('user-', id % 3500) AS user_id", "concat('event ', id % 997, ' done') AS msg",
        "cast(id % 1234 as int) AS n")
    w = (df.coalesce(1).write.mode("overwrite").option("parquet.block.size", str(256 * 1024))
         .option("parquet.enable.dictionary", "false"))
    for c in ("user_id", "msg", "n"):
        w = (w.option(f"parquet.bloom.filter.enabled#{c}", "true")
              .option(f"parquet.bloom.filter.expected.ndv#{c}", str(NDV))
              .option(f"parquet.bloom.filter.fpp#{c}", str(FPP)))
    _crypto_options(w, plaintext_footer=plaintext_footer, uniform=uniform).parquet(path)
    files = glob.glob(os.path.join(path, "*.parquet"))
    assert len(files) == 1
    return files[0]


def _pyarrow_read(path, kms):
    cf = pe.CryptoFactory(lambda _cfg: kms)
    return pq.ParquetFile(path, decryption_properties=cf.file_decryption_properties(pe.KmsConnectionConfig()))


@pytest.mark.parametrize("plaintext_footer, uniform", [(False, False), (True, False), (False, True)],
                         ids=["encrypted-footer", "plaintext-footer", "uniform-key"])
def test_parquet_java_encrypted_filters_byte_equal(spark_kms, tmp_path, plaintext_footer, uniform):
    path = _write_encrypted(spark_kms, str(tmp_path / "out"), plaintext_footer, uniform)
    with open(path, "rb") as f:
        head = f.read(4)
    assert head == (b"PAR1" if plaintext_footer else b"PARE")
    kms = MemoryKms(KEYS)
    pf = _pyarrow_read(path, kms)
    assert pf.metadata.num_row_groups >= 2
    for c in ("user_id", "msg", "n"):
        filters = read_bloom_filters(path, c, kms=kms)
        assert len(filters) == pf.metadata.num_row_groups
        for rg, theirs in enumerate(filters):
            assert theirs is not None, (c, rg)
            vals = pf.read_row_group(rg, columns=[c])[c]
            ours = SBBF.for_ndv(NDV, FPP, sizing="parquet-java", max_bytes=JAVA_MAX_BYTES)
            ours.insert_hashes(parquet_xxh64(vals))
            assert ours.to_bytes() == theirs.to_bytes(), (c, rg)
    # the column without a filter: None, also when it is encrypted
    assert read_bloom_filter(path, 0, "id", kms=kms) is None
    # the ciphertext holds no filter bit pattern: the plaintext bitset is nowhere in the file
    raw = open(path, "rb").read()
    bits = read_bloom_filter(path, 0, "msg", kms=kms).to_bytes()
    assert bits[:64] not in raw and b"user-17" not in raw


def test_parquet_java_encrypted_without_keys(spark_kms, tmp_path):
    path = _write_encrypted(spark_kms, str(tmp_path / "out"))
    # no KMS at all: the footer key is needed first
    with pytest.raises(KeyUnavailableError, match="'kf'"):
        read_bloom_filter(path, 0, "msg")
    # the KMS lacks k2: msg fails naming k2, user_id still reads
    partial = MemoryKms({k: v for k, v in KEYS.items() if k != "k2"})
    assert read_bloom_filter(path, 0, "user_id", kms=partial) is not None
    with pytest.raises(KeyUnavailableError, match="'k2'"):
        read_bloom_filter(path, 0, "msg", kms=partial)
    # a different master key under the same id: refused, never a filter
    wrong = MemoryKms({**KEYS, "k2": bytes(16)})
    with pytest.raises(skipidx.SkipidxError):
        read_bloom_filter(path, 0, "msg", kms=wrong)


def test_parquet_java_encrypted_tampered_filter(spark_kms, tmp_path):
    path = _write_encrypted(spark_kms, str(tmp_path / "out"))
    kms = MemoryKms(KEYS)
    good = read_bloom_filter(path, 0, "msg", kms=kms)
    # find the filter: flip a byte inside the bitset module (after the header module)
    from skipidx.core import parquet_bloom as pb

    with open(path, "rb") as fh:
        footer = pb._read_footer(fh, os.path.getsize(path), path, kms)
    leaf = pb._leaf_paths(footer).index("msg")
    from skipidx.core import crypto
    from skipidx.core.kms import unwrap_key_metadata

    cc = footer.md[4][0][1][leaf]
    key, _ = unwrap_key_metadata(cc[8][2][2], kms)
    cmd, _ = crypto.decrypt_module(crypto.cipher(key), cc[9], 0,
                                   crypto.module_aad(footer.file_aad, crypto.COLUMN_META_DATA, 0, leaf), "cmd")
    off = pb._Reader(cmd, 0, path).struct()[14]
    data = bytearray(open(path, "rb").read())
    hlen = int.from_bytes(data[off:off + 4], "little")
    pos = off + 4 + hlen + 4 + 12 + 100   # inside the bitset's ciphertext
    data[pos] ^= 0x01
    bad = str(tmp_path / "bad.parquet")
    open(bad, "wb").write(bytes(data))
    with pytest.raises(DecryptionError, match="authentication failed"):
        read_bloom_filter(bad, 0, "msg", kms=kms)
    assert read_bloom_filter(path, 0, "msg", kms=kms).to_bytes() == good.to_bytes()


def test_spark_reads_skipidx_encrypted_data(spark_kms, tmp_path):
    """A skipidx table's data files are standard encrypted Parquet: Spark reads them with the same keys."""
    kms = MemoryKms(KEYS)
    with skipidx.connect(str(tmp_path / "db"), kms=kms) as db:
        db.sql("CREATE TABLE t (id UInt64, user_id String, msg String, INDEX m msg TYPE tokenbf_v1(256, 3, 0)) "
               "ORDER BY id SETTINGS index_granularity = 1024, encrypted_columns = 'user_id:k1, msg:k2', "
               "footer_key = 'kf'")
        ids = np.arange(5000, dtype=np.uint64)
        db.insert("t", pa.table({"id": ids, "user_id": [f"u{i % 77}" for i in range(5000)],
                                 "msg": [f"hello {i % 13}" for i in range(5000)]}))
        files = glob.glob(str(tmp_path / "db" / "t" / "**" / "data.parquet"), recursive=True)
        assert files
    r = _crypto_options(spark_kms.read).parquet(*files)
    rows = sorted(r.select("id", "user_id", "msg").collect())
    assert len(rows) == 5000
    assert rows[0]["user_id"] == "u0" and rows[4999]["msg"] == f"hello {4999 % 13}"
