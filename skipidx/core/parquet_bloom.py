"""Parquet bloom filters on disk: the ``BloomFilterHeader`` and reading SBBFs from files.

In a Parquet file a column chunk's bloom filter is a Thrift *compact protocol*
``BloomFilterHeader`` followed by the bitset (``numBytes`` bytes, the SBBF
layout of `skipidx.core.sbbf`). The column chunk's metadata points at it with
``bloom_filter_offset`` and, since format 2.10, ``bloom_filter_length``
(header + bitset); pyarrow exposes both on ``ColumnChunkMetaData``::

    struct BloomFilterHeader {
      1: required i32 numBytes;
      2: required BloomFilterAlgorithm algorithm;        // union { 1: SplitBlockAlgorithm BLOCK }
      3: required BloomFilterHash hash;                  // union { 1: XxHash XXHASH }
      4: required BloomFilterCompression compression;    // union { 1: Uncompressed UNCOMPRESSED }
    }

Every writer in use emits the same 15 bytes around ``numBytes``. The reader
here is a general, bounds-checked compact-protocol reader: unknown fields are
skipped (forward compatibility), nesting depth and element counts are bounded
by the bytes actually present, and every malformed input raises
`SkipidxError` (never IndexError or struct.error).

Writing Parquet files with bloom filters is pyarrow's job
(``pq.write_table(..., bloom_filter_options={"col": {"ndv": n, "fpp": p}})``,
pyarrow >= 24); `bloom_filter_options` builds that argument. pyarrow 26
builds each column chunk's filter at ``SBBF.for_ndv(n, p)``, inserts the
chunk's values, and folds it (``SBBF.fold_to_target_fpp(p)``, Arrow's
``BloomFilterOptions.fold``, on by default) before writing; the same steps
here with ``parquet_xxh64`` give the same bytes (tests/test_parquet_bloom.py
checks every row group).
"""
from __future__ import annotations

import os
from skipidx.core.dataclass_codes import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import parquet as pq

from skipidx.core.errors import SkipidxError
from skipidx.core.parquet_thrift import (  # noqa: F401  (BloomFilterHeader is a public name here)
    _T_STOP, BloomFilterHeader, _Reader,
)
from skipidx.core.sbbf import SBBF

__all__ = [
    "BloomFilterHeader",
    "read_bloom_filter",
    "read_bloom_filters",
    "parse_bloom_filter",
    "serialize_bloom_filter",
    "bloom_filter_options",
    "read_column_chunk_filters",
]

#: A header is tiny; when a file gives no bloom_filter_length we read this much to parse it.
_HEADER_PROBE = 256


def serialize_bloom_filter(f: SBBF) -> bytes:
    """Header + bitset, as a Parquet file stores a column chunk's bloom filter."""
    if not isinstance(f, SBBF):
        raise SkipidxError(f"expected an SBBF, got {type(f).__name__}")
    return BloomFilterHeader(f.num_bytes).to_bytes() + f.to_bytes()


def parse_bloom_filter(buf: bytes | bytearray | memoryview, where: str | None = None) -> SBBF:
    """An SBBF from header + bitset bytes (extra bytes after the bitset are an error)."""
    header, used = BloomFilterHeader.parse(buf, 0, where)
    body = bytes(buf[used:])
    if len(body) != header.num_bytes:
        raise SkipidxError(
            f"bloom filter bitset has {len(body)} bytes, header says {header.num_bytes}", path=where
        )
    return SBBF.from_bytes(body)


# ------------------------------------------------------------------ files

def _open_metadata(path: str | os.PathLike) -> tuple[pq.FileMetaData, str]:
    where = os.fspath(path)
    try:
        return pq.ParquetFile(where).metadata, where
    except (OSError, pa.ArrowException, ValueError) as e:
        raise SkipidxError(f"cannot read Parquet metadata: {e}", path=where) from None


def _column_index(md: pq.FileMetaData, column: str | int, where: str) -> int:
    return _resolve_column([md.schema.column(i).path for i in range(md.num_columns)], column, where)


def _read_at(fh, offset: int, length: int, size: int, where: str) -> bytes:
    if offset < 0 or length < 0 or offset + length > size:
        raise SkipidxError(f"bloom filter at [{offset}, {offset + length}) lies outside the file ({size} bytes)",
                           path=where)
    fh.seek(offset)
    b = fh.read(length)
    if len(b) != length:
        raise SkipidxError("file shorter than its metadata says", path=where)
    return b


def _read_one(fh, size: int, md: pq.FileMetaData, row_group: int, col: int, where: str) -> SBBF | None:
    cc = md.row_group(row_group).column(col)
    offset = cc.bloom_filter_offset
    if offset is None:
        return None
    length = cc.bloom_filter_length
    if length is not None:
        return parse_bloom_filter(_read_at(fh, offset, length, size, where), where)
    # Older writers record only the offset: parse the header, then read numBytes.
    probe = _read_at(fh, offset, min(_HEADER_PROBE, max(0, size - offset)), size, where)
    header, used = BloomFilterHeader.parse(probe, 0, where)
    return SBBF.from_bytes(_read_at(fh, offset + used, header.num_bytes, size, where))


# ------------------------------------------------------- encrypted files
#
# An encrypted file (Parquet modular encryption) is read here, not by pyarrow:
# pyarrow exposes neither the filters' offsets of an encrypted-footer file
# without handing it the keys, nor any data key to Python, and it aborts the
# process when asked for an encrypted column's metadata without its key. The
# footer (Thrift compact) is decoded by _Reader.struct; the field ids are
# parquet.thrift's.

_MAGIC_PLAIN, _MAGIC_ENC = b"PAR1", b"PARE"


@dataclass
class _Footer:
    """A decoded FileMetaData plus what decrypting its modules needs."""

    md: dict                  # FileMetaData {field id: value}
    file_aad: bytes | None    # aad_prefix + aad_file_unique (None: not encrypted)
    footer_key: bytes | None  # the footer's data key (encrypted files, when known)
    where: str


def _read_tail(fh, size: int, where: str) -> tuple[bytes, bytes]:
    if size < 12:
        raise SkipidxError(f"not a Parquet file ({size} bytes)", path=where)
    fh.seek(size - 8)
    tail = fh.read(8)
    n = int.from_bytes(tail[:4], "little")
    magic = tail[4:]
    if magic not in (_MAGIC_PLAIN, _MAGIC_ENC):
        raise SkipidxError("not a Parquet file (bad magic)", path=where)
    if n <= 0 or n > size - 12:
        raise SkipidxError(f"footer length {n} does not fit the file", path=where)
    fh.seek(size - 8 - n)
    buf = fh.read(n)
    if len(buf) != n:
        raise SkipidxError("file shorter than its footer length says", path=where)
    return magic, buf


def _file_aad(alg: Any, where: str) -> bytes:
    if not isinstance(alg, dict) or len(alg) != 1:
        raise SkipidxError("malformed encryption algorithm", path=where)
    (kind, a), = alg.items()
    if kind not in (1, 2) or not isinstance(a, dict):
        raise SkipidxError(f"unknown encryption algorithm (union member {kind})", path=where)
    if a.get(3) and not a.get(1):
        raise SkipidxError("the file was encrypted with an AAD prefix it does not store; "
                           "reading it needs that prefix", path=where)
    return bytes(a.get(1, b"")) + bytes(a.get(2, b""))


def _read_footer(fh, size: int, where: str, kms: Any) -> _Footer:
    from skipidx.core import crypto
    from skipidx.core.kms import unwrap_key_metadata

    magic, buf = _read_tail(fh, size, where)
    if magic == _MAGIC_ENC:
        r = _Reader(buf, 0, where, "FileCryptoMetaData")
        fcm = r.struct()
        file_aad = _file_aad(fcm.get(1), where)
        if 2 not in fcm:
            raise SkipidxError("encrypted footer without key metadata: its key cannot come from a KMS", path=where)
        key, _ = unwrap_key_metadata(fcm[2], kms, where)
        plain, end = crypto.decrypt_module(crypto.cipher(key), buf, r.pos,
                                           crypto.module_aad(file_aad, crypto.FOOTER), "footer", where)
        if end != len(buf):
            raise SkipidxError("bytes after the encrypted footer", path=where)
        return _Footer(_Reader(plain, 0, where, "FileMetaData").struct(), file_aad, key, where)
    md = _Reader(buf, 0, where, "FileMetaData").struct()
    if 8 not in md:
        return _Footer(md, None, None, where)
    # plaintext footer mode: the footer key (for footer-key columns) from field 9
    key = None
    if 9 in md and kms is not None:
        key, _ = unwrap_key_metadata(md[9], kms, where)
    return _Footer(md, _file_aad(md[8], where), key, where)


def _leaf_paths(footer: _Footer) -> list[str]:
    """Dotted paths of the leaf columns, from the flattened schema (depth-first)."""
    schema = footer.md.get(2)
    if not isinstance(schema, list) or not schema:
        raise SkipidxError("footer has no schema", path=footer.where)
    paths: list[str] = []

    def walk(i: int, prefix: list[str]) -> int:
        if i >= len(schema) or not isinstance(schema[i], dict):
            raise SkipidxError("malformed schema in the footer", path=footer.where)
        el = schema[i]
        name = bytes(el.get(4, b"")).decode("utf-8", "replace")
        kids = el.get(5, 0)
        i += 1
        if not kids:
            paths.append(".".join(prefix + [name]))
            return i
        for _ in range(kids):
            i = walk(i, prefix + [name])
        return i

    root = schema[0]
    i = 1
    for _ in range(root.get(5, 0) if isinstance(root, dict) else 0):
        i = walk(i, [])
    return paths


def _resolve_column(paths: list[str], column: str | int, where: str) -> int:
    if isinstance(column, bool):
        raise SkipidxError(f"bad column {column!r}", path=where)
    if isinstance(column, (int, np.integer)):
        if not 0 <= column < len(paths):
            raise SkipidxError(f"column index {column} out of range ({len(paths)} leaf columns)", path=where)
        return int(column)
    if not isinstance(column, str):
        raise SkipidxError(f"column must be a name or a leaf index, got {type(column).__name__}", path=where)
    if column in paths:
        return paths.index(column)
    under = [i for i, p in enumerate(paths) if p.split(".", 1)[0] == column]
    if len(under) == 1:
        return under[0]
    if under:
        raise SkipidxError(f"column {column!r} has {len(under)} leaves; name one of: "
                           f"{', '.join(paths[i] for i in under)}", path=where)
    raise SkipidxError(f"no column {column!r}; columns: {', '.join(paths)}", path=where)


def _read_one_encrypted(fh, size: int, footer: _Footer, row_group: int, col: int, kms: Any) -> SBBF | None:
    from skipidx.core import crypto
    from skipidx.core.kms import KeyUnavailableError, unwrap_key_metadata

    where = footer.where
    rgs = footer.md.get(4) or []
    if not 0 <= row_group < len(rgs):
        raise SkipidxError(f"row group {row_group!r} out of range ({len(rgs)} row groups)", path=where)
    rg = rgs[row_group]
    chunks = rg.get(1) if isinstance(rg, dict) else None
    if not isinstance(chunks, list) or not 0 <= col < len(chunks) or not isinstance(chunks[col], dict):
        raise SkipidxError(f"row group {row_group} has no column chunk {col}", path=where)
    cc = chunks[col]
    rg_ordinal = rg.get(7, row_group)
    crypto_md = cc.get(8)
    key = None
    if crypto_md is None:
        cmd = cc.get(3)       # a plaintext column of an encrypted file
    elif isinstance(crypto_md, dict) and 1 in crypto_md:
        key = footer.footer_key
        if key is None:
            raise KeyUnavailableError("<footer key>", "the column is encrypted with the footer key; pass kms=",
                                      path=where)
        cmd = cc.get(3)
    elif isinstance(crypto_md, dict) and isinstance(crypto_md.get(2), dict):
        km = crypto_md[2].get(2)
        if km is None:
            raise SkipidxError("column key without key metadata: its key cannot come from a KMS", path=where)
        key, _ = unwrap_key_metadata(km, kms, where)
        enc = cc.get(9)
        if enc is None:
            raise SkipidxError("encrypted column without encrypted column metadata", path=where)
        plain, end = crypto.decrypt_module(
            crypto.cipher(key), enc, 0,
            crypto.module_aad(footer.file_aad, crypto.COLUMN_META_DATA, rg_ordinal, col),
            "column metadata", where)
        cmd = _Reader(plain, 0, where, "ColumnMetaData").struct()
    else:
        raise SkipidxError("malformed column crypto metadata", path=where)
    if not isinstance(cmd, dict):
        raise SkipidxError("column chunk without metadata", path=where)
    offset = cmd.get(14)
    if offset is None:
        return None
    if key is None:
        length = cmd.get(15)
        if length is not None:
            return parse_bloom_filter(_read_at(fh, offset, length, size, where), where)
        probe = _read_at(fh, offset, min(_HEADER_PROBE, max(0, size - offset)), size, where)
        header, used = BloomFilterHeader.parse(probe, 0, where)
        return SBBF.from_bytes(_read_at(fh, offset + used, header.num_bytes, size, where))
    # Encrypted filter: header module (8) then bitset module (9), each length-prefixed.
    aes = crypto.cipher(key)
    head = _read_at(fh, offset, 4, size, where)
    n = int.from_bytes(head, "little")
    hmod = _read_at(fh, offset, 4 + n, size, where)
    hb, _ = crypto.decrypt_module(aes, hmod, 0, crypto.module_aad(footer.file_aad, crypto.BLOOM_FILTER_HEADER,
                                                                 rg_ordinal, col), "bloom filter header", where)
    header, used = BloomFilterHeader.parse(hb, 0, where)
    pos = offset + 4 + n
    m = int.from_bytes(_read_at(fh, pos, 4, size, where), "little")
    bmod = _read_at(fh, pos, 4 + m, size, where)
    bits, _ = crypto.decrypt_module(aes, bmod, 0, crypto.module_aad(footer.file_aad, crypto.BLOOM_FILTER_BITSET,
                                                                   rg_ordinal, col), "bloom filter bitset", where)
    if len(bits) != header.num_bytes:
        raise SkipidxError(f"bloom filter bitset has {len(bits)} bytes, header says {header.num_bytes}", path=where)
    return SBBF.from_bytes(bits)


def _is_encrypted(fh, size: int, where: str) -> bool:
    """True for a file with Parquet modular encryption (either footer mode)."""
    magic, buf = _read_tail(fh, size, where)
    return magic == _MAGIC_ENC or plaintext_footer_encrypted(buf, where)


def plaintext_footer_encrypted(footer: bytes, where: str = "<footer>") -> bool:
    """True when a plaintext (PAR1) footer belongs to an encrypted file (it has
    an encryption_algorithm): pyarrow must not be asked for its columns' metadata."""
    r = _Reader(bytes(footer), 0, where, "FileMetaData")
    last = 0
    while True:
        t, fid = r.field(last)
        if t == _T_STOP:
            return False
        if fid == 8:
            return True
        r.skip(t, 1)
        last = fid


def _check_row_group(row_group: Any, n: int, where: str) -> int:
    if isinstance(row_group, bool) or not isinstance(row_group, (int, np.integer)) or not 0 <= row_group < n:
        raise SkipidxError(f"row group {row_group!r} out of range ({n} row groups)", path=where)
    return int(row_group)


def _read_filters(path: str | os.PathLike, column: str | int, row_groups: Sequence[int] | None,
                  kms: Any) -> list[SBBF | None]:
    where = os.fspath(path)
    try:
        with open(where, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            # pyarrow must never see an encrypted file's column metadata (it
            # aborts the process without the key): those files are read here.
            if kms is not None or _is_encrypted(fh, size, where):
                footer = _read_footer(fh, size, where, kms)
                if footer.file_aad is None and kms is not None:
                    footer = None   # a plaintext file: pyarrow's path below
                else:
                    col = _resolve_column(_leaf_paths(footer), column, where)
                    n = len(footer.md.get(4) or [])
                    rgs = range(n) if row_groups is None else [_check_row_group(g, n, where) for g in row_groups]
                    return [_read_one_encrypted(fh, size, footer, g, col, kms) for g in rgs]
            md, _ = _open_metadata(where)
            col = _column_index(md, column, where)
            n = md.num_row_groups
            rgs = range(n) if row_groups is None else [_check_row_group(g, n, where) for g in row_groups]
            return [_read_one(fh, size, md, g, col, where) for g in rgs]
    except OSError as e:
        raise SkipidxError(f"cannot read bloom filter: {e}", path=where) from None


def read_bloom_filter(path: str | os.PathLike, row_group: int, column: str | int, *,
                      kms: Any = None) -> SBBF | None:
    """The bloom filter of one column chunk of a Parquet file, or None if that chunk has none.

    `column` is a leaf's dotted path (``"a.b"``), a top-level name with a
    single leaf, or a leaf index. Bad files, offsets, headers, row groups or
    column names raise SkipidxError naming the file.

    Encrypted files (Parquet modular encryption, e.g. Spark / parquet-java
    with ``parquet.crypto.factory.class``): pass the KMS client (pyarrow's
    KmsClient interface); each key is recovered from the file's own key
    material through it, and the filter's modules are decrypted and
    authenticated. A refused key is a SkipidxError naming the key id.
    """
    return _read_filters(path, column, [row_group], kms)[0]


def read_bloom_filters(path: str | os.PathLike, column: str | int, *, kms: Any = None) -> list[SBBF | None]:
    """`read_bloom_filter` for every row group of the file, in order."""
    return _read_filters(path, column, None, kms)


def read_column_chunk_filters(fh, md: pq.FileMetaData, column: int, where: str) -> list[SBBF | None]:
    """The bloom filters of leaf `column` in every row group, read through the open binary
    file `fh` (closed afterwards) whose parsed footer is `md`: for callers that hold the
    file open and its footer already (no second parse, and the bytes of the version they checked)."""
    with fh:
        size = os.fstat(fh.fileno()).st_size
        return [_read_one(fh, size, md, rg, int(column), where) for rg in range(md.num_row_groups)]


def bloom_filter_options(columns: Iterable[str] | Mapping[str, Mapping[str, float]], ndv: int | None = None,
                         fpp: float | None = None) -> dict[str, dict[str, float]]:
    """The ``bloom_filter_options`` argument of ``pq.write_table`` (pyarrow >= 24).

    ``bloom_filter_options(["a", "b"], ndv=10_000, fpp=0.01)`` ->
    ``{"a": {"ndv": 10000, "fpp": 0.01}, "b": {...}}``; a mapping passes through
    after validation. pyarrow sizes each chunk's filter as
    ``SBBF.for_ndv(ndv, fpp)`` and then folds it to `fpp` (defaults: ndv
    1_048_576 (the maximum row-group length), fpp 0.05).
    """
    from skipidx.core.sizing import check_ndv_fpp

    if isinstance(columns, Mapping):
        out: dict[str, dict[str, float]] = {}
        for name, o in columns.items():
            if not isinstance(o, Mapping) or set(o) - {"ndv", "fpp"}:
                raise SkipidxError(f"bloom filter options for {name!r} must be a dict with 'ndv'/'fpp'")
            n, p = check_ndv_fpp(o.get("ndv", 1_048_576), o.get("fpp", 0.05))
            out[str(name)] = {"ndv": n, "fpp": p}
        return out
    cols = [columns] if isinstance(columns, str) else list(columns)
    opts: dict[str, float] = {}
    n, p = check_ndv_fpp(1_048_576 if ndv is None else ndv, 0.05 if fpp is None else fpp)
    if ndv is not None:
        opts["ndv"] = n
    if fpp is not None:
        opts["fpp"] = p
    return {str(c): dict(opts) for c in cols}
