"""Dictionary-encoded String columns of a part read page by page, against dictionaries decoded once.

A lookup (``trace_id IN (...)``, ``=``) reads a few row groups of one
dictionary-encoded String column as Arrow dictionaries; pyarrow decodes each
chunk's dictionary page (tens of KB of strings, most of such a read) on every
read. A part is immutable, so here each chunk's dictionary page is decoded
once per data-file identity (:data:`_DICTIONARIES`, bounded by bytes) and
only the data pages' RLE / bit-packed indices are decoded per read (the
numba kernels of :mod:`skipidx.store.parquet_pages`). The bytes were
verified against the part's checksums by the caller before the read, as for
pyarrow's read.

Anything this path does not handle (a chunk with PLAIN pages after its
dictionary overflowed, nested or encrypted columns, a codec Arrow does not
have, a dictionary that is not UTF-8, a page that does not add up) returns
None and the caller reads with pyarrow as before.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Sequence

import numpy as np
import pyarrow as pa
from pyarrow._parquet import FileMetaData

from skipidx.core.errors import SkipidxError
from skipidx.core.lazy import numba_loaded
from skipidx.core.lru import LRU

__all__ = ["read_dictionary_columns"]

#: (page layout or False where this path does not apply, max definition level) per column chunk
_LAYOUTS = LRU(16384, "store.part_page_layouts",
               "page layouts of parts' dictionary-read column chunks, by (file, identity, row group, leaf)")
_DICTIONARIES = LRU(16384, "store.part_dictionaries",
                    "decoded dictionary pages of parts' String column chunks, by (file, identity, row group, "
                    "leaf) (and 64 MiB)", max_bytes=64 << 20)

_ERRORS = (SkipidxError, OSError, pa.ArrowException, ValueError, IndexError, KeyError, TypeError)


def _leaves(md: FileMetaData, path: str, ident: tuple) -> dict[str, int]:
    """Top-level flat leaves of the file: column name -> leaf index."""
    key = (path, ident)
    hit = _LAYOUTS.get(key)
    if hit is None:
        hit = {}
        schema = md.schema
        for j in range(md.num_columns):
            c = schema.column(j)
            if c.max_repetition_level == 0 and c.max_definition_level <= 1 and "." not in c.path:
                hit[c.path] = j
        _LAYOUTS.put(key, hit)
    return hit


def _layout(fd: int, md: FileMetaData, ident: tuple, g: int, j: int, path: str):
    from skipidx.store import parquet_pages as pp

    key = (path, ident, g, j)
    lay = _LAYOUTS.get(key)
    if lay is None:
        try:
            rg = md.row_group(g)
            lay = pp.chunk_layout(fd, rg.column(j), rg.num_rows, path)
            # pyarrow names the LZ4_RAW codec "LZ4" (the framed Hadoop LZ4 is another
            # codec); every part is written by pyarrow, whose "lz4" is LZ4_RAW
            if lay.codec == "LZ4":
                lay = dataclasses.replace(lay, codec="LZ4_RAW")
            if not pp.dictionary_pages(lay, np.arange(lay.offsets.shape[0])):
                lay = False
        except _ERRORS:
            lay = False
        _LAYOUTS.put(key, lay)
    return lay or None


def read_dictionary_columns(path: str, ident: tuple, md: FileMetaData, rgs: Sequence[int],
                            fields: Sequence[pa.Field]) -> list[pa.ChunkedArray] | None:
    """Row groups `rgs` (whole) of the String / Binary columns `fields` (each with its
    declared value type) of the part data file `path` (identity `ident`: device, inode,
    size, mtime, ...), as ``dictionary<int32, type>`` chunked arrays (one chunk per row
    group); None where this path does not apply -- read with pyarrow then."""
    if not numba_loaded():
        return None     # (the kernels would load numba: a first small query reads with pyarrow)
    from skipidx.expr.evaluate import register_stable_dictionary
    from skipidx.store import parquet_pages as pp

    leaves = _leaves(md, path, ident)
    js = [leaves.get(f.name) for f in fields]
    if None in js:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != tuple(ident[:4]):
            return None     # replaced since the caller looked: pyarrow's read reports it
        out = []
        for f, j in zip(fields, js):
            max_def = md.schema.column(j).max_definition_level
            chunks = []
            for g in rgs:
                lay = _layout(fd, md, ident, g, j, path)
                if lay is None:
                    return None
                key = (path, ident, g, j)
                dic = _DICTIONARIES.get(key)
                if dic is None:
                    dic = pp.plain_string_dictionary(lay, pp.dictionary_page(fd, lay), f.type)
                    if dic is None or len(dic) != lay.dict_values:
                        return None     # not UTF-8 (pyarrow's read and its check report it)
                    _DICTIONARIES.put(key, dic, dic.nbytes)
                    register_stable_dictionary(dic)
                idx, valid = pp.dictionary_indices(fd, lay, np.arange(lay.offsets.shape[0]), max_def, len(dic))
                if valid is not None and not f.nullable:
                    return None
                ind = pa.array(idx, type=pa.int32(), mask=None if valid is None else ~valid)
                chunks.append(pa.DictionaryArray.from_arrays(ind, dic, safe=False))
            out.append(pa.chunked_array(chunks, type=pa.dictionary(pa.int32(), f.type)))
        return out
    except _ERRORS:
        return None
    finally:
        os.close(fd)
