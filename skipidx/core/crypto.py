"""Parquet modular encryption, the parts skipidx needs: AES-GCM modules and their AADs.

The Parquet modular encryption spec (parquet-format ``Encryption.md``):

* a module is encrypted with AES-GCM under a 16/24/32-byte key, a fresh
  12-byte random nonce per module, and written as
  ``length (4 bytes LE) | nonce (12) | ciphertext | tag (16)`` where length
  counts nonce + ciphertext + tag (section 5.1);
* its AAD is ``aad_prefix + aad_file_unique + module type (1 byte)
  [+ row group ordinal (i16 LE) + column ordinal (i16 LE) [+ page ordinal (i16 LE)]]``
  (section 4.4), with the module types below; the footer has no ordinals,
  only data pages and their headers have a page ordinal.

Keys that wrap keys (parquet-java's and Arrow's key tools, "double
wrapping") use the same cipher without the length prefix and with the key
encryption key's id as AAD; `wrap_key_locally` / `unwrap_key_locally` are
those.

Skipidx index files of sensitive columns are sealed by `seal_index_table`:
each granule's SBBF is stored as the two modules a Parquet file stores a
column chunk's filter as (BloomFilter Header 8, BloomFilter Bitset 9) and
every other column derived from the column's values (min/max, sets, NULL
counts, fill ratios) as one module of type ColumnIndex (6) -- Parquet's own
per-page min/max/null-count structure. Decryption authenticates every
module: a wrong key or a changed byte is a `DecryptionError`, never data.
"""
from __future__ import annotations

import base64
import json
import os
import struct

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError

if TYPE_CHECKING:   # imported where a key is used: opening a database need not load cryptography
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "FOOTER", "COLUMN_META_DATA", "DATA_PAGE", "DICTIONARY_PAGE", "DATA_PAGE_HEADER",
    "DICTIONARY_PAGE_HEADER", "COLUMN_INDEX", "OFFSET_INDEX", "BLOOM_FILTER_HEADER",
    "BLOOM_FILTER_BITSET", "DecryptionError", "module_aad", "cipher", "encrypt_module",
    "decrypt_module", "wrap_key_locally", "unwrap_key_locally", "seal_index_table",
    "open_index_table", "sealed_key_id", "SEAL_META",
]

# Module types (Encryption.md 4.4.2).
FOOTER = 0
COLUMN_META_DATA = 1
DATA_PAGE = 2
DICTIONARY_PAGE = 3
DATA_PAGE_HEADER = 4
DICTIONARY_PAGE_HEADER = 5
COLUMN_INDEX = 6
OFFSET_INDEX = 7
BLOOM_FILTER_HEADER = 8
BLOOM_FILTER_BITSET = 9

NONCE_LEN = 12
TAG_LEN = 16
LEN_PREFIX = 4
_I16_MAX = 0x7FFF


class DecryptionError(SkipidxError):
    """An encrypted module that does not authenticate: wrong key, or changed/truncated bytes."""


def module_aad(file_aad: bytes, module_type: int, row_group: int = -1, column: int = -1,
               page: int = -1) -> bytes:
    """The AAD of one module: file AAD (prefix + file unique id) + type [+ ordinals as i16 LE]."""
    if module_type == FOOTER:
        return bytes(file_aad) + b"\x00"
    for what, v in (("row group", row_group), ("column", column)):
        if not 0 <= v <= _I16_MAX:
            raise SkipidxError(f"encrypted files hold at most 32767 {what}s (ordinal {v})")
    out = bytes(file_aad) + bytes([module_type]) + struct.pack("<hh", row_group, column)
    if module_type in (DATA_PAGE, DATA_PAGE_HEADER):
        if not 0 <= page <= _I16_MAX:
            raise SkipidxError(f"encrypted column chunks hold at most 32767 pages (ordinal {page})")
        out += struct.pack("<h", page)
    return out


def cipher(key: bytes) -> AESGCM:
    if not isinstance(key, (bytes, bytearray)) or len(key) not in (16, 24, 32):
        raise SkipidxError(f"an AES key has 16, 24 or 32 bytes, got {len(key) if isinstance(key, (bytes, bytearray)) else type(key).__name__}")
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(bytes(key))


def encrypt_module(aes: AESGCM, plaintext: bytes, aad: bytes) -> bytes:
    """``length | nonce | ciphertext | tag`` of `plaintext` (a fresh random nonce each call)."""
    nonce = os.urandom(NONCE_LEN)
    ct = aes.encrypt(nonce, bytes(plaintext), aad)
    return struct.pack("<I", NONCE_LEN + len(ct)) + nonce + ct


def decrypt_module(aes: AESGCM, buf: bytes | memoryview, pos: int, aad: bytes, what: str,
                   where: str | None = None) -> tuple[bytes, int]:
    """Decrypt the module at `buf[pos:]` -> (plaintext, position after it)."""
    from cryptography.exceptions import InvalidTag

    end = len(buf)
    if pos + LEN_PREFIX > end:
        raise DecryptionError(f"{what}: truncated encrypted module", path=where)
    (n,) = struct.unpack_from("<I", buf, pos)
    if n < NONCE_LEN + TAG_LEN or pos + LEN_PREFIX + n > end:
        raise DecryptionError(f"{what}: encrypted module of {n} bytes does not fit "
                              f"({end - pos - LEN_PREFIX} left)", path=where)
    start = pos + LEN_PREFIX
    nonce = bytes(buf[start:start + NONCE_LEN])
    try:
        pt = aes.decrypt(nonce, bytes(buf[start + NONCE_LEN:start + n]), aad)
    except InvalidTag:
        raise DecryptionError(f"{what}: authentication failed (wrong key, or the bytes were changed)",
                              path=where) from None
    return pt, start + n


def wrap_key_locally(key: bytes, wrapping_key: bytes, aad: bytes) -> str:
    """Base64 of ``nonce | ciphertext | tag`` (no length prefix), as parquet-java's KeyToolkit."""
    nonce = os.urandom(NONCE_LEN)
    return base64.b64encode(nonce + cipher(wrapping_key).encrypt(nonce, bytes(key), aad)).decode()


def unwrap_key_locally(encoded: str | bytes, wrapping_key: bytes, aad: bytes, what: str = "key") -> bytes:
    from cryptography.exceptions import InvalidTag

    try:
        raw = base64.b64decode(encoded, validate=True)
    except (ValueError, TypeError):
        raise DecryptionError(f"{what}: wrapped key is not base64") from None
    if len(raw) < NONCE_LEN + TAG_LEN:
        raise DecryptionError(f"{what}: wrapped key too short")
    try:
        return cipher(wrapping_key).decrypt(raw[:NONCE_LEN], raw[NONCE_LEN:], aad)
    except InvalidTag:
        raise DecryptionError(f"{what}: cannot unwrap (wrong key encryption key, or changed bytes)") from None


# ------------------------------------------------------------ sealed index tables

#: Schema metadata of a sealed index table: JSON with the key id, the wrapped
#: data key, the file's unique AAD part, the original column order and the
#: sealed ColumnIndex module (base64).
SEAL_META = b"skipidx.encryption"
#: Columns that only say where a granule lies (a function of the part's row
#: count and granularity): they stay readable.
PLAIN_COLUMNS = ("fragment_id", "part", "zone_start", "zone_length")
FILTER_COLUMN = "bloom_filter_data"
_ALGORITHM = "AES_GCM_V1"


def _zone_aad(file_unique: bytes, zone: int, module_type: int) -> bytes:
    # Granules beyond 32767 (the i16 row-group ordinal) carry the high bits in
    # the file-identity part of the AAD, so every granule's modules stay unique.
    return module_aad(file_unique + struct.pack("<I", zone >> 15), module_type, zone & _I16_MAX, 0)


def seal_index_table(table: pa.Table, key: bytes, key_id: str, wrapped_key: str) -> pa.Table:
    """The index table with everything derived from the column's values encrypted under `key`.

    Kept readable: part, zone_start, zone_length and the schema metadata
    that the DDL already says (index type, params, tokenizer). The SBBF of
    each granule becomes header module (8) + bitset module (9), as in a
    Parquet file; all other value-derived columns become one ColumnIndex (6)
    module (an Arrow IPC stream) in the schema metadata.
    """
    from skipidx.core.parquet_thrift import BloomFilterHeader

    aes = cipher(key)
    file_unique = os.urandom(16)
    names = table.column_names
    secret = [c for c in names if c not in PLAIN_COLUMNS and c != FILTER_COLUMN]
    sink = pa.BufferOutputStream()
    sub = table.select(secret).replace_schema_metadata(table.schema.metadata)
    with pa.ipc.new_stream(sink, sub.schema) as w:
        w.write_table(sub)
    stats = encrypt_module(aes, sink.getvalue().to_pybytes(), _zone_aad(file_unique, 0, COLUMN_INDEX))
    fields = [table.schema.field(c) for c in PLAIN_COLUMNS if c in names]
    arrays = [table.column(c) for c in PLAIN_COLUMNS if c in names]
    filter_type = None
    filter_nullable = False
    if FILTER_COLUMN in names:
        col = table.column(FILTER_COLUMN)
        filter_type = str(col.type)
        filter_nullable = table.schema.field(FILTER_COLUMN).nullable
        sealed = []
        for z, b in enumerate(col.to_pylist()):
            sealed.append(encrypt_module(aes, BloomFilterHeader(len(b)).to_bytes(),
                                         _zone_aad(file_unique, z, BLOOM_FILTER_HEADER))
                          + encrypt_module(aes, b, _zone_aad(file_unique, z, BLOOM_FILTER_BITSET)))
        fields.append(pa.field(FILTER_COLUMN, pa.large_binary(), nullable=False))
        arrays.append(pa.array(sealed, pa.large_binary()))
    seal = {"algorithm": _ALGORITHM, "key_id": key_id, "wrapped_key": wrapped_key,
            "file_unique": file_unique.hex(), "columns": names, "filter_type": filter_type, "filter_nullable": filter_nullable,
            "column_index": base64.b64encode(stats).decode()}
    md = dict(table.schema.metadata or {})
    md[SEAL_META] = json.dumps(seal, sort_keys=True).encode()
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=md))


_HEADER_TAIL = b"\x1c\x1c\x00\x00" * 3 + b"\x00"


def _header(hb: bytes, zone: int, where: str | None):
    """The BloomFilterHeader of one granule: the canonical encoding this module
    writes is recognised by re-encoding it (a general parse per granule costs
    more than the decryption); anything else goes through the full parser."""
    from skipidx.core.parquet_thrift import BloomFilterHeader
    from skipidx.core.sbbf import MAX_BYTES

    if len(hb) >= 3 + len(_HEADER_TAIL) and hb[0] == 0x15 and hb.endswith(_HEADER_TAIL):
        z = 0
        for i, b in enumerate(hb[1:len(hb) - len(_HEADER_TAIL)]):
            z |= (b & 0x7F) << (7 * i)
        n = (z >> 1) ^ -(z & 1)
        if 0 < n <= MAX_BYTES and n % 32 == 0:
            h = BloomFilterHeader(n)
            if h.to_bytes() == hb:
                return h
    header, used = BloomFilterHeader.parse(hb, 0, where)
    if used != len(hb):
        raise DecryptionError(f"bloom filter header of granule {zone}: trailing bytes", path=where)
    return header


def sealed_key_id(table_or_schema) -> tuple[str, str] | None:
    """(key id, wrapped data key) of a sealed index table, None for a plaintext one."""
    schema = table_or_schema.schema if isinstance(table_or_schema, pa.Table) else table_or_schema
    raw = (schema.metadata or {}).get(SEAL_META)
    if raw is None:
        return None
    try:
        seal = json.loads(raw)
        return str(seal["key_id"]), str(seal["wrapped_key"])
    except (ValueError, KeyError, TypeError):
        raise DecryptionError("damaged encryption metadata of an index file") from None


def open_index_table(table: pa.Table, key: bytes, where: str | None = None) -> pa.Table:
    """The plaintext index table of a sealed one; DecryptionError if any module fails to authenticate."""
    try:
        seal = json.loads(table.schema.metadata[SEAL_META])
        file_unique = bytes.fromhex(seal["file_unique"])
        names = list(seal["columns"])
        stats_buf = base64.b64decode(seal["column_index"], validate=True)
        filter_type = seal["filter_type"]
        filter_nullable = bool(seal.get("filter_nullable", False))
        if seal["algorithm"] != _ALGORITHM:
            raise DecryptionError(f"unsupported index encryption {seal['algorithm']!r}", path=where)
    except (ValueError, KeyError, TypeError):
        raise DecryptionError("damaged encryption metadata of an index file", path=where) from None
    aes = cipher(key)
    raw, end = decrypt_module(aes, stats_buf, 0, _zone_aad(file_unique, 0, COLUMN_INDEX), "index statistics", where)
    if end != len(stats_buf):
        raise DecryptionError("index statistics: trailing bytes after the module", path=where)
    try:
        sub = pa.ipc.open_stream(pa.BufferReader(raw)).read_all()
    except pa.ArrowException as e:   # authenticated, so this is a writer bug, not tampering
        raise DecryptionError(f"index statistics: unreadable ({e})", path=where) from None
    cols: dict[str, pa.ChunkedArray | pa.Array] = {c: sub.column(c) for c in sub.column_names}
    fields = {f.name: f for f in sub.schema}
    for c in PLAIN_COLUMNS:
        if c in table.column_names:
            cols[c] = table.column(c)
            fields[c] = table.schema.field(c)
    if filter_type is not None:
        if FILTER_COLUMN not in table.column_names:
            raise DecryptionError(f"index file lacks its {FILTER_COLUMN} column", path=where)
        blobs = table.column(FILTER_COLUMN).combine_chunks()
        if not pa.types.is_large_binary(blobs.type) or blobs.null_count:
            raise DecryptionError(f"{FILTER_COLUMN} is not a column of sealed filters", path=where)
        offsets = np.frombuffer(blobs.buffers()[1], dtype=np.int64)[blobs.offset:blobs.offset + len(blobs) + 1]
        data = blobs.buffers()[2]
        mv = memoryview(data) if data is not None else memoryview(b"")
        out = []
        for z in range(len(blobs)):
            lo, hi = int(offsets[z]), int(offsets[z + 1])
            blob = mv[lo:hi]
            hb, p = decrypt_module(aes, blob, 0, _zone_aad(file_unique, z, BLOOM_FILTER_HEADER),
                                   f"bloom filter header of granule {z}", where)
            header = _header(hb, z, where)
            bits, p = decrypt_module(aes, blob, p, _zone_aad(file_unique, z, BLOOM_FILTER_BITSET),
                                     f"bloom filter bitset of granule {z}", where)
            if p != len(blob) or len(bits) != header.num_bytes:
                raise DecryptionError(f"bloom filter of granule {z}: {len(bits)} bytes, header says "
                                      f"{header.num_bytes}", path=where)
            out.append(bits)
        typ = pa.large_binary() if filter_type == "large_binary" else pa.binary()
        cols[FILTER_COLUMN] = pa.array(out, typ)
        fields[FILTER_COLUMN] = pa.field(FILTER_COLUMN, typ, nullable=filter_nullable)
    missing = [c for c in names if c not in cols]
    if missing:
        raise DecryptionError(f"index file lacks columns {missing}", path=where)
    md = dict(sub.schema.metadata or {})
    return pa.Table.from_arrays([cols[c] for c in names], schema=pa.schema([fields[c] for c in names], metadata=md))
