"""Validate a Parquet footer before pyarrow's metadata accessors see it.

pyarrow's ``FileMetaData.row_group(i).column(j)`` (and ``to_dict``, and the
dataset fragments' statistics) build Arrow C++ ``ColumnChunkMetaData``
objects whose constructor throws on some inconsistencies -- a size-statistics
histogram of the wrong length, a column chunk with crypto metadata in a
plaintext file, a row group with fewer column chunks than the schema has
leaves -- from a call that is not declared to raise: the exception ends the
process (``std::terminate``, SIGABRT). ``pq.read_metadata`` itself succeeds on
such footers. So the footer's Thrift is decoded here first (the bounds-checked
compact-protocol reader of :mod:`skipidx.core.parquet_bloom`) and exactly
those conditions become a :class:`CorruptionError` naming the file.
"""
from __future__ import annotations

import os

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.parquet_bloom import _Reader
from skipidx.core.parquet_thrift import fast_struct

__all__ = ["check_footer", "check_footer_bytes"]

# parquet.thrift field ids
_FMD_SCHEMA, _FMD_ROW_GROUPS, _FMD_ENCRYPTION = 2, 4, 8
_SE_TYPE, _SE_REPETITION, _SE_NAME, _SE_NUM_CHILDREN = 1, 3, 4, 5
_CMD_TYPE = 1
_RG_COLUMNS = 1
_CC_META, _CC_CRYPTO = 3, 8
_CMD_SIZE_STATS = 16
_SS_REP_HIST, _SS_DEF_HIST = 2, 3
_OPTIONAL, _REPEATED = 1, 2

#: Footers larger than this are not decoded in Python (no skipidx part has
#: one; pyarrow's own checks still apply).
MAX_FOOTER_BYTES = 64 << 20


def _leaf_levels(schema: list, where: str) -> list[tuple[int, int, object]]:
    """(max repetition level, max definition level, physical type) of every leaf, in order."""
    out: list[tuple[int, int, object]] = []
    pos = 1   # element 0 is the root

    def walk(rep: int, dfn: int, depth: int) -> None:
        nonlocal pos
        if depth > 64 or pos >= len(schema):
            raise CorruptionError("malformed Parquet schema in the footer", path=where)
        el = schema[pos]
        pos += 1
        if not isinstance(el, dict):
            raise CorruptionError("malformed Parquet schema in the footer", path=where)
        name = el.get(_SE_NAME, b"")
        try:
            if not isinstance(name, bytes):
                raise TypeError("name is not a string")
            name.decode("utf-8")   # pyarrow decodes names without handling errors
        except (UnicodeDecodeError, TypeError):
            raise CorruptionError("a column name in the Parquet schema is not UTF-8", path=where) from None
        r = el.get(_SE_REPETITION, 0)
        rep2 = rep + (r == _REPEATED)
        dfn2 = dfn + (r in (_OPTIONAL, _REPEATED))
        n = el.get(_SE_NUM_CHILDREN, 0)
        if not isinstance(n, int) or n < 0:
            raise CorruptionError("malformed Parquet schema in the footer", path=where)
        if n == 0:
            out.append((rep2, dfn2, el.get(_SE_TYPE)))
        for _ in range(n):
            walk(rep2, dfn2, depth + 1)

    root = schema[0] if schema else None
    if not isinstance(root, dict):
        raise CorruptionError("Parquet footer without a schema", path=where)
    nroot = root.get(_SE_NUM_CHILDREN, 0)
    if not isinstance(nroot, int) or nroot < 0:
        raise CorruptionError("malformed Parquet schema in the footer", path=where)
    for _ in range(nroot):
        walk(0, 0, 0)
    return out


#: The fields of FileMetaData the checks below read, as a decoding spec: field id -> None
#: (the value, whole) or a spec of the struct it holds (a list field: of each struct element).
_SCHEMA_ELEMENT = {_SE_TYPE: None, _SE_REPETITION: None, _SE_NAME: None, _SE_NUM_CHILDREN: None}
_SIZE_STATS = {_SS_REP_HIST: None, _SS_DEF_HIST: None}
_COLUMN_CHUNK = {_CC_META: {_CMD_TYPE: None, _CMD_SIZE_STATS: _SIZE_STATS}, _CC_CRYPTO: None}
_FOOTER_SPEC = {_FMD_SCHEMA: _SCHEMA_ELEMENT, _FMD_ROW_GROUPS: {_RG_COLUMNS: _COLUMN_CHUNK}, _FMD_ENCRYPTION: None}


def footer_fields(buf: bytes) -> dict | None:
    """``fast_struct(buf)`` with only the fields of :data:`_FOOTER_SPEC` (the same values,
    the same dict/list shapes), or None exactly where fast_struct is None. Every other field
    is walked with the same checks and not built: statistics, encodings, paths and offsets
    are most of a footer's bytes and none of the checks' business."""
    return fast_struct(buf, _FOOTER_SPEC)


def check_footer_bytes(footer: bytes, where: str) -> None:
    """Raise CorruptionError(where) for a footer pyarrow's accessors would abort on."""
    try:
        fmd = footer_fields(footer)
        if fmd is None:   # the reader's own error (or, should the two ever differ, its answer)
            fmd = _Reader(footer, 0, where, "FileMetaData").struct()
    except SkipidxError as e:
        raise CorruptionError(e.message, path=where) from None
    except (TypeError, ValueError, RecursionError) as e:
        raise CorruptionError(f"malformed Parquet footer ({type(e).__name__})", path=where) from None
    if _FMD_ENCRYPTION in fmd:
        return   # a plaintext-footer encrypted file: read through the decryption path only
    schema = fmd.get(_FMD_SCHEMA)
    rgs = fmd.get(_FMD_ROW_GROUPS, [])
    if not isinstance(schema, list) or not isinstance(rgs, list):
        raise CorruptionError("malformed Parquet footer", path=where)
    leaves = _leaf_levels(schema, where)
    for i, rg in enumerate(rgs):
        cols = rg.get(_RG_COLUMNS) if isinstance(rg, dict) else None
        if not isinstance(cols, list) or len(cols) != len(leaves):
            raise CorruptionError(f"Parquet row group {i} has {len(cols) if isinstance(cols, list) else 'no'} "
                                  f"column chunks, the schema {len(leaves)} columns", path=where)
        for j, cc in enumerate(cols):
            if not isinstance(cc, dict):
                raise CorruptionError(f"malformed column chunk {j} of row group {i}", path=where)
            if _CC_CRYPTO in cc:
                raise CorruptionError(f"column chunk {j} of row group {i} is encrypted in a plaintext file",
                                      path=where)
            md = cc.get(_CC_META)
            if not isinstance(md, dict):
                raise CorruptionError(f"column chunk {j} of row group {i} has no metadata", path=where)
            rep, dfn, ptype = leaves[j]
            if md.get(_CMD_TYPE) != ptype:
                raise CorruptionError(f"column chunk {j} of row group {i}: physical type differs from the schema's",
                                      path=where)
            ss = md.get(_CMD_SIZE_STATS)
            if ss is None:
                continue
            if not isinstance(ss, dict):
                raise CorruptionError(f"malformed size statistics in column chunk {j} of row group {i}", path=where)
            for fid, lvl, what in ((_SS_REP_HIST, rep, "repetition"), (_SS_DEF_HIST, dfn, "definition")):
                h = ss.get(fid)
                if h is not None and (not isinstance(h, list) or len(h) not in (0, lvl + 1)):
                    raise CorruptionError(f"{what} level histogram of column chunk {j} of row group {i} "
                                          f"does not match the schema", path=where)


def check_footer(path: str, size: int | None = None) -> None:
    """:func:`check_footer_bytes` of the footer of Parquet file `path`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise CorruptionError(f"cannot open Parquet file: {e.strerror}", path=path) from None
    try:
        size = os.fstat(fd).st_size if size is None else size
        if size < 12:
            raise CorruptionError("not a Parquet file (too short)", path=path)
        tail = os.pread(fd, 8, size - 8)
        if tail[4:] != b"PAR1":
            return   # encrypted footer ("PARE") or not Parquet: pyarrow refuses those itself
        flen = int.from_bytes(tail[:4], "little")
        if flen > min(size - 12, MAX_FOOTER_BYTES):
            if flen > size - 12:
                raise CorruptionError("Parquet footer length exceeds the file", path=path)
            return
        footer = os.pread(fd, flen, size - 8 - flen)
    finally:
        os.close(fd)
    check_footer_bytes(footer, path)
