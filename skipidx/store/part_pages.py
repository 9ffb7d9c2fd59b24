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


def _leaves(md: FileMetaData, path: str, ident: tuple) -> dict[str, tuple[int, int]]:
    """Top-level flat leaves of the file: column name -> (leaf index, max definition level)."""
    key = (path, ident)
    hit = _LAYOUTS.get(key)
    if hit is None:
        hit = {}
        schema = md.schema
        for j in range(md.num_columns):
            c = schema.column(j)
            if c.max_repetition_level == 0 and c.max_definition_level <= 1 and "." not in c.path:
                hit[c.path] = (j, c.max_definition_level)
        _LAYOUTS.put(key, hit)
    return hit


def _layout(fd: pa.Buffer, md: FileMetaData, ident: tuple, g: int, j: int, max_def: int, path: str):
    """(page layout, the one data page's (offset, length, header length, uncompressed size,
    rows, codec) where the chunk is that simple -- one v1 page of a required column -- else
    None), or None where this path does not apply."""
    from skipidx.store import parquet_pages as pp

    key = (path, ident, g, j)
    got = _LAYOUTS.get(key)
    if got is None:
        try:
            rg = md.row_group(g)
            lay = pp.chunk_layout(fd, rg.column(j), rg.num_rows, path)
            # pyarrow names the LZ4_RAW codec "LZ4" (the framed Hadoop LZ4 is another
            # codec); every part is written by pyarrow, whose "lz4" is LZ4_RAW
            if lay.codec == "LZ4":
                lay = dataclasses.replace(lay, codec="LZ4_RAW")
            if not pp.dictionary_pages(lay, np.arange(lay.offsets.shape[0])):
                got = False
            else:
                simple = None
                if lay.offsets.shape[0] == 1 and int(lay.kinds[0]) == 0 and max_def == 0:
                    simple = (int(lay.offsets[0]), int(lay.lengths[0]), int(lay.header_lengths[0]),
                              int(lay.uncompressed[0]), int(lay.rows[0]),
                              None if lay.codec == "UNCOMPRESSED" else pp._codec(lay.codec))
                got = (lay, simple)
        except _ERRORS:
            got = False
        _LAYOUTS.put(key, got)
    return got or None


def _simple_indices(src: pa.Buffer, simple: tuple, dict_size: int) -> np.ndarray | None:
    """The dictionary indices of a chunk's one v1 data page of a required column (`simple`
    from :func:`_layout`) in `src` (the whole file), range-checked; None where the page
    does not add up."""
    from skipidx.core._kernels.rle import rle_hybrid

    off, length, hl, usize, rows, codec = simple
    if off < 0 or off + length > src.size or length <= hl:
        return None
    body = src.slice(off + hl, length - hl)
    data = np.frombuffer(body if codec is None else codec.decompress(body, usize), dtype=np.uint8)
    if data.shape[0] < 1:
        return None
    bw = int(data[0])
    out = np.empty(rows, dtype=np.int32)
    if bw == 0:
        out[:] = 0
    elif bw > 31 or rle_hybrid(data, 1, data.shape[0], bw, 0, rows, out) != rows:
        return None     # (a width of 32 could wrap to negative indices: the general decoder checks those)
    if rows and int(out.max()) >= dict_size:
        return None
    return out


def read_dictionary_columns(path: str, ident: tuple, md: FileMetaData, rgs: Sequence[int],
                            fields: Sequence[pa.Field], src: pa.Buffer) -> list[pa.ChunkedArray] | None:
    """Row groups `rgs` (whole) of the String / Binary columns `fields` (each with its
    declared value type) of the part data file `path` (identity `ident`: device, inode,
    size, mtime, ...; `src`: its bytes, the reader pool's memory mapping of that file), as
    ``dictionary<int32, type>`` chunked arrays (one chunk per row group); None where this
    path does not apply -- read with pyarrow then."""
    if not numba_loaded():
        return None     # (the kernels would load numba: a first small query reads with pyarrow)
    from skipidx.expr.evaluate import register_stable_dictionary
    from skipidx.store import parquet_pages as pp

    leaves = _leaves(md, path, ident)
    js = [leaves.get(f.name) for f in fields]
    if None in js:
        return None
    typ = {f.type: pa.dictionary(pa.int32(), f.type) for f in fields}
    if src.size != ident[2]:
        return None
    fd = src
    try:
        out = []
        for f, (j, max_def) in zip(fields, js):
            chunks = []
            for g in rgs:
                got = _layout(fd, md, ident, g, j, max_def, path)
                if got is None:
                    return None
                lay, simple = got
                key = (path, ident, g, j)
                dic = _DICTIONARIES.get(key)
                if dic is None:
                    dic = pp.plain_string_dictionary(lay, pp.dictionary_page(fd, lay), f.type)
                    if dic is None or len(dic) != lay.dict_values:
                        return None     # not UTF-8 (pyarrow's read and its check report it)
                    _DICTIONARIES.put(key, dic, dic.nbytes)
                    register_stable_dictionary(dic)
                idx = _simple_indices(fd, simple, len(dic)) if simple is not None else None
                valid = None
                if idx is None:
                    idx, valid = pp.dictionary_indices(fd, lay, np.arange(lay.offsets.shape[0]), max_def, len(dic))
                    if valid is not None and not f.nullable:
                        return None
                ind = pa.array(idx, type=pa.int32(), mask=None if valid is None else ~valid)
                chunks.append(pa.DictionaryArray.from_arrays(ind, dic, safe=False))
            out.append(pa.chunked_array(chunks, type=typ[f.type]))
        return out
    except _ERRORS:
        return None
