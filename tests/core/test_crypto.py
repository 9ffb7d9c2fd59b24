"""skipidx.core.crypto / kms: AES-GCM modules, the spec's AADs, sealed index tables, key material."""
from __future__ import annotations

import base64
import json
import os
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from encryption_kms import MemoryKms, master_keys
from skipidx.core import crypto
from skipidx.core.crypto import DecryptionError
from skipidx.core.errors import SkipidxError
from skipidx.core.kms import KeyRing, KeyUnavailableError, unwrap_key_metadata
from skipidx.core.parquet_bloom import BloomFilterHeader
from skipidx.core.sbbf import SBBF

KEY = bytes(range(16))


def test_module_aad_layout():
    fa = b"prefix" + b"U" * 8
    assert crypto.module_aad(fa, crypto.FOOTER) == fa + b"\x00"
    assert crypto.module_aad(fa, crypto.BLOOM_FILTER_HEADER, 3, 258) == fa + b"\x08" + b"\x03\x00" + b"\x02\x01"
    assert crypto.module_aad(fa, crypto.BLOOM_FILTER_BITSET, 0, 1) == fa + b"\x09\x00\x00\x01\x00"
    assert crypto.module_aad(fa, crypto.DATA_PAGE, 1, 2, 5) == fa + b"\x02\x01\x00\x02\x00\x05\x00"
    with pytest.raises(SkipidxError):
        crypto.module_aad(fa, crypto.COLUMN_META_DATA, 40000, 0)


def test_module_round_trip_and_layout():
    aes = crypto.cipher(KEY)
    aad = crypto.module_aad(b"f", crypto.BLOOM_FILTER_BITSET, 0, 0)
    m = crypto.encrypt_module(aes, b"x" * 100, aad)
    (n,) = struct.unpack_from("<I", m)
    assert n == len(m) - 4 == 12 + 100 + 16
    # exactly AES-GCM(nonce, plaintext, aad) behind the length
    assert AESGCM(KEY).decrypt(m[4:16], m[16:], aad) == b"x" * 100
    assert crypto.decrypt_module(aes, m, 0, aad, "t") == (b"x" * 100, len(m))
    # a fresh nonce per module
    assert crypto.encrypt_module(aes, b"x" * 100, aad)[4:16] != m[4:16]


@pytest.mark.parametrize("change", ["flip", "aad", "key", "truncate"])
def test_module_tamper_is_an_error(change):
    aes = crypto.cipher(KEY)
    aad = crypto.module_aad(b"f", crypto.BLOOM_FILTER_HEADER, 0, 0)
    m = bytearray(crypto.encrypt_module(aes, b"header", aad))
    key = KEY
    if change == "flip":
        m[20] ^= 0x40
    elif change == "aad":
        aad = crypto.module_aad(b"f", crypto.BLOOM_FILTER_HEADER, 1, 0)   # another granule's place
    elif change == "key":
        key = bytes(16)
    else:
        m = m[:-3]
    with pytest.raises(DecryptionError):
        crypto.decrypt_module(crypto.cipher(key), bytes(m), 0, aad, "header")


def _bloom_table(n_zones=5, nbytes=64):
    rng = np.random.default_rng(1)
    filters = []
    for z in range(n_zones):
        f = SBBF(nbytes * (1 + z % 2))
        f.insert_hashes(rng.integers(0, 2**63, 20, dtype=np.uint64).astype(np.uint64))
        filters.append(f.to_bytes())
    md = {b"skipidx.index_type": b"bloom_filter", b"skipidx.params": b"{}"}
    return pa.table({"part": ["p"] * n_zones, "zone_start": pa.array(np.arange(n_zones) * 10, pa.uint64()),
                     "zone_length": pa.array([10] * n_zones, pa.uint64()),
                     "has_null": [False, True, False, False, False][:n_zones],
                     "null_count": pa.array([0, 1, 0, 0, 0][:n_zones], pa.uint64()),
                     "bloom_filter_data": pa.array(filters, pa.binary()),
                     "ndv": pa.array([20] * n_zones, pa.uint64())}).replace_schema_metadata(md)


def test_seal_open_index_table():
    t = _bloom_table()
    s = crypto.seal_index_table(t, KEY, "k2", "wrapped")
    assert crypto.sealed_key_id(s) == ("k2", "wrapped")
    assert set(s.column_names) == {"part", "zone_start", "zone_length", "bloom_filter_data"}
    # no bitset, no null flag in the clear
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, s.schema) as w:
        w.write_table(s)
    raw = sink.getvalue().to_pybytes()
    for b in t.column("bloom_filter_data").to_pylist():
        assert b[:32] not in raw
    # every filter is header module (8) + bitset module (9)
    blob = s.column("bloom_filter_data")[1].as_py()
    fu = bytes.fromhex(json.loads(s.schema.metadata[crypto.SEAL_META])["file_unique"])
    aes = crypto.cipher(KEY)
    zaad = fu + b"\0\0\0\0"
    hb, p = crypto.decrypt_module(aes, blob, 0, crypto.module_aad(zaad, 8, 1, 0), "h")
    assert BloomFilterHeader.parse(hb)[0].num_bytes == 128
    bits, p = crypto.decrypt_module(aes, blob, p, crypto.module_aad(zaad, 9, 1, 0), "b")
    assert bits == t.column("bloom_filter_data")[1].as_py() and p == len(blob)
    back = crypto.open_index_table(s, KEY)
    assert back.equals(t) and back.schema.metadata == t.schema.metadata


def test_open_index_table_rejects_swaps_and_wrong_keys():
    t = _bloom_table()
    s = crypto.seal_index_table(t, KEY, "k2", "w")
    with pytest.raises(DecryptionError):
        crypto.open_index_table(s, bytes(16))
    # granules 0 and 2 swapped: each module is bound to its granule
    col = s.column("bloom_filter_data").to_pylist()
    col[0], col[2] = col[2], col[0]
    swapped = s.set_column(s.column_names.index("bloom_filter_data"), "bloom_filter_data",
                           pa.array(col, pa.large_binary()))
    with pytest.raises(DecryptionError, match="granule 0"):
        crypto.open_index_table(swapped, KEY)
    # a module from another index file (same key): another file identity
    other = crypto.seal_index_table(t, KEY, "k2", "w")
    col = s.column("bloom_filter_data").to_pylist()
    col[1] = other.column("bloom_filter_data")[1].as_py()
    mixed = s.set_column(s.column_names.index("bloom_filter_data"), "bloom_filter_data",
                         pa.array(col, pa.large_binary()))
    with pytest.raises(DecryptionError):
        crypto.open_index_table(mixed, KEY)
    # the statistics module flipped
    md = dict(s.schema.metadata)
    seal = json.loads(md[crypto.SEAL_META])
    ci = bytearray(base64.b64decode(seal["column_index"]))
    ci[30] ^= 1
    seal["column_index"] = base64.b64encode(bytes(ci)).decode()
    md[crypto.SEAL_META] = json.dumps(seal).encode()
    with pytest.raises(DecryptionError, match="index statistics"):
        crypto.open_index_table(s.replace_schema_metadata(md), KEY)


def test_keyring_wraps_and_names_missing_keys():
    kms = MemoryKms(master_keys(1))
    ring = KeyRing(kms)
    dek, wrapped = ring.new_key("k1")
    assert isinstance(wrapped, str) and base64.b64decode(wrapped) and dek not in base64.b64decode(wrapped)
    assert KeyRing(kms).unwrap("k1", wrapped) == dek
    with pytest.raises(KeyUnavailableError, match="'k1'"):
        KeyRing(MemoryKms({"kf": bytes(16)})).unwrap("k1", wrapped)
    with pytest.raises(KeyUnavailableError, match="'k9'"):
        ring.new_key("k9")
    with pytest.raises(KeyUnavailableError, match="no KMS client"):
        KeyRing(None).unwrap("k1", wrapped)
    with pytest.raises(SkipidxError, match="wrap_key"):
        KeyRing(object())


def test_unwrap_pyarrow_key_material(tmp_path):
    """Data keys of a pyarrow-encrypted file recovered through the KMS: they decrypt its footer."""
    kms = MemoryKms(master_keys(2))
    cf = pe.CryptoFactory(lambda _c: kms)
    for double in (True, False):
        props = cf.file_encryption_properties(pe.KmsConnectionConfig(), pe.EncryptionConfiguration(
            footer_key="kf", column_keys={"k1": ["a"]}, double_wrapping=double))
        path = str(tmp_path / f"f{double}.parquet")
        pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), path, encryption_properties=props)
        from skipidx.core import parquet_bloom as pb

        with open(path, "rb") as fh:
            footer = pb._read_footer(fh, os.path.getsize(path), path, kms)
        assert pb._leaf_paths(footer) == ["a", "b"]
        cc = footer.md[4][0][1][0]
        dek, mid = unwrap_key_metadata(cc[8][2][2], kms)
        assert mid == "k1" and len(dek) == 16
        assert pb.read_bloom_filters(path, "a", kms=kms) == [None]
