"""Page-level reads of a Parquet column chunk: a needle prefilter for external tables.

pyarrow reads whole row groups; a row group the indexes kept for
``hasToken(msg, 'x')`` or ``msg LIKE '%x%'`` usually holds its match in one
page. A value holding a substring holds its bytes contiguously in the page's
decompressed data wherever the values are stored whole (PLAIN and
DELTA_LENGTH_BYTE_ARRAY pages, and a dictionary page), so a page whose
decompressed bytes lack a required substring holds no matching row. This
module walks a chunk's page headers (the Thrift reader of
:mod:`skipidx.core.parquet_thrift`), decompresses the pages with Arrow's codecs,
keeps the pages holding every needle, and decodes only those with pyarrow: the
kept pages (and the chunk's dictionary page) are framed as a one-column Parquet
file of their own (a footer written here, the leaf's schema element copied
from the data file's footer). Decompressing and searching a page costs a
fraction of decoding it into Arrow strings.

Dictionary-encoded pages (a zone read inside a row group, the usual case for
``=`` / ``IN`` on an id column) are decoded here instead: the RLE / bit-packed
indices by a numba kernel, against the chunk's dictionary decoded once per
version of the file (the caller caches it): decoding a ~0.5 MB dictionary page
for every zone cost most of such a read.

Anything unexpected (nested columns, encryption, an unknown codec or page
type, a header that does not parse) makes the caller read the row group as
before: the prefilter only ever skips pages that cannot match.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import parquet as pq

from skipidx.core.errors import SkipidxError
from skipidx.core.parquet_thrift import _Reader, _T_LIST, _T_STOP, varint, zigzag_varint

__all__ = ["PageLayout", "StringPage", "string_pages", "chunk_layout", "footer_schema_elements", "matching_rows", "decode_pages", "write_footer",
           "dictionary_pages", "dictionary_page", "plain_dictionary", "dictionary_indices"]

_PHYSICAL = {"BOOLEAN": 0, "INT32": 1, "INT64": 2, "INT96": 3, "FLOAT": 4, "DOUBLE": 5, "BYTE_ARRAY": 6,
             "FIXED_LEN_BYTE_ARRAY": 7}
# pyarrow's metadata names Parquet's LZ4_RAW (codec 7) "LZ4"; the Hadoop-framed LZ4 (codec 5)
# reads as "UNKNOWN" there and is left to pyarrow
_CODECS = {"UNCOMPRESSED": 0, "SNAPPY": 1, "GZIP": 2, "BROTLI": 4, "LZ4": 7, "ZSTD": 6, "LZ4_RAW": 7}
_ARROW_CODEC = {"SNAPPY": "snappy", "GZIP": "gzip", "BROTLI": "brotli", "ZSTD": "zstd", "LZ4_RAW": "lz4_raw",
                "LZ4": "lz4_raw"}
_ENCODINGS = {"PLAIN": 0, "PLAIN_DICTIONARY": 2, "RLE": 3, "BIT_PACKED": 4, "DELTA_BINARY_PACKED": 5,
              "DELTA_LENGTH_BYTE_ARRAY": 6, "DELTA_BYTE_ARRAY": 7, "RLE_DICTIONARY": 8, "BYTE_STREAM_SPLIT": 9}
_DICT_ENCODED = (2, 8)
#: value encodings whose pages hold each value's bytes contiguously
_WHOLE_VALUES = (0, 6)
_DATA_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 2, 3


@dataclass(frozen=True)
class PageLayout:
    """The pages of one column chunk: byte spans (header included) relative to the file,
    first row and row count per data page, and how each is encoded."""

    start: int                      # file offset of the chunk's first page
    size: int                       # bytes of the chunk
    codec: str
    physical: str
    encodings: tuple
    dict_span: tuple | None         # (offset, length, header length, uncompressed size) of the dictionary page
    dict_plain: bool
    offsets: np.ndarray             # per data page: file offset
    lengths: np.ndarray             # bytes (header + body)
    header_lengths: np.ndarray
    first_rows: np.ndarray          # rows before the page within the row group
    rows: np.ndarray
    kinds: np.ndarray               # page type (0: v1, 3: v2)
    encoding: np.ndarray            # value encoding of each data page
    levels: np.ndarray              # v2: bytes of the (uncompressed) levels before the values
    compressed: np.ndarray          # v2: whether the values are compressed
    uncompressed: np.ndarray        # uncompressed body size
    #: values in the dictionary page (-1: none); v1 pages: whether every definition-level run is RLE
    dict_values: int = -1
    levels_rle: bool = True


def _pread(fd: int | pa.Buffer, n: int, off: int) -> bytes:
    """`n` bytes at `off` of a file descriptor or of a buffer holding the whole file (a memory map)."""
    if isinstance(fd, pa.Buffer):
        if off < 0 or n < 0 or off + n > fd.size:
            raise SkipidxError(f"short read: {n} bytes at {off} beyond {fd.size}")
        return fd.slice(off, n).to_pybytes()
    out = os.pread(fd, n, off)
    if len(out) != n:
        raise SkipidxError(f"short read: {len(out)} of {n} bytes at {off}")
    return out


#: bytes read at a page header to parse it (more where its statistics are longer)
_HEADER_WINDOW = 4096


def chunk_layout(fd: int | pa.Buffer, cc: pq.ColumnChunkMetaData, num_rows: int, where: str = "<file>") -> PageLayout:
    """Walk the page headers of column chunk `cc` (of a row group of `num_rows` rows) through
    `fd` (or a buffer of the whole file); SkipidxError if it is not a flat chunk this module
    can read."""
    if cc.compression not in _CODECS:
        raise SkipidxError(f"codec {cc.compression} not handled")
    start = cc.dictionary_page_offset if cc.has_dictionary_page and cc.dictionary_page_offset is not None \
        else cc.data_page_offset
    size = cc.total_compressed_size
    # the headers are read, not the pages: a window at each header, widened where one is longer
    win, woff = b"", 0
    pos = 0
    dict_span = None
    dict_plain = False
    dict_values = -1
    levels_rle = True
    cols: list[list] = [[] for _ in range(10)]
    row = 0
    while pos < size:
        need = _HEADER_WINDOW
        while True:
            if pos < woff or pos + min(need, size - pos) > woff + len(win):
                win, woff = _pread(fd, min(need, size - pos), start + pos), pos
            r = _Reader(win, pos - woff, where, "PageHeader")
            try:
                h = r.struct()
                break
            except SkipidxError:
                if woff + len(win) >= size:
                    raise
                need *= 16
        hl = woff + r.pos - pos
        kind, usize, csize = h.get(1), h.get(2), h.get(3)
        if not isinstance(csize, int) or csize < 0 or pos + hl + csize > size or not isinstance(usize, int):
            raise SkipidxError("bad page header")
        if kind == _DICTIONARY_PAGE:
            dh = h.get(7) or {}
            dict_span = (start + pos, hl + csize, hl, usize)
            dict_plain = dh.get(2) in (0, 2)
            dict_values = dh.get(1) if isinstance(dh.get(1), int) else -1
        elif kind == _DATA_PAGE:
            dh = h.get(5) or {}
            n = dh.get(1)
            levels_rle = levels_rle and dh.get(3, 3) == 3
            for lst, v in zip(cols, (start + pos, hl + csize, hl, row, n, kind, dh.get(2), 0, 1, usize)):
                lst.append(v)
            row += n
        elif kind == _DATA_PAGE_V2:
            dh = h.get(8) or {}
            n = dh.get(3)
            lv = int(dh.get(5, 0)) + int(dh.get(6, 0))
            for lst, v in zip(cols, (start + pos, hl + csize, hl, row, n, kind, dh.get(4), lv,
                                     1 if dh.get(7, True) else 0, usize)):
                lst.append(v)
            row += n
        elif kind != 1:        # an index page is skipped; anything else is unknown
            raise SkipidxError(f"page type {kind} not handled")
        pos += hl + csize
    if row != num_rows or any(not isinstance(x, int) for x in cols[4] + cols[6]):
        raise SkipidxError("pages do not add up to the row group")
    a = [np.asarray(c, dtype=np.int64) for c in cols]
    return PageLayout(start, size, cc.compression, cc.physical_type, tuple(cc.encodings), dict_span, dict_plain,
                      a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8].astype(bool), a[9], dict_values, levels_rle)


_CODEC_CACHE: dict = {}


def _codec(name: str) -> pa.Codec:
    c = _CODEC_CACHE.get(name)
    if c is None:
        arrow = _ARROW_CODEC.get(name)
        if arrow is None:
            raise SkipidxError(f"codec {name} not handled")
        c = _CODEC_CACHE[name] = pa.Codec(arrow)
    return c


def _holds_all(body, needles: Sequence[bytes]) -> bool:
    """Whether every needle occurs in `body` (bytes-like; a whole-buffer vector search)."""
    from skipidx.expr.kernels._search import contains_rows

    data = np.frombuffer(body, dtype=np.uint8)
    bounds = np.array([0, data.shape[0]], dtype=np.int64)
    return all(bool(contains_rows(bounds, data, x)[0]) for x in needles)


def _page_holds(layout: PageLayout, raw: memoryview, header_len: int, usize: int, needles: Sequence[bytes],
                levels: int = 0, compressed: bool = True) -> bool:
    """Whether the decompressed page (`raw`: header + body) holds every needle."""
    body = raw[header_len:]
    if layout.codec == "UNCOMPRESSED" or not compressed:
        return _holds_all(body, needles)
    if layout.codec not in _ARROW_CODEC:
        return True         # (a codec Arrow has no raw decompressor for: the page is kept)
    if levels:
        return _holds_all(_codec(layout.codec).decompress(body[levels:], usize - levels), needles)
    return _holds_all(_codec(layout.codec).decompress(body, usize), needles)


def matching_pages(fd: int, layout: PageLayout, needles: Sequence[bytes], pages: np.ndarray | None = None) -> np.ndarray:
    """Per data page: whether it may hold a row containing every needle (False only when
    the page stores whole values and its bytes lack one). `pages`: check only these (the
    others are answered False: the caller needs none of their rows)."""
    n = layout.offsets.shape[0]
    todo = np.arange(n) if pages is None else np.asarray(pages, dtype=np.int64)
    hit = np.zeros(n, dtype=bool)
    hit[todo] = True
    dict_hit = None
    if layout.dict_span is not None and layout.dict_plain and np.isin(layout.encoding[todo], _DICT_ENCODED).any():
        off, ln, hl, us = layout.dict_span
        dict_hit = _page_holds(layout, memoryview(_pread(fd, ln, off)), hl, us, needles)
    for i in todo.tolist():
        enc = int(layout.encoding[i])
        if enc in _DICT_ENCODED:
            if dict_hit is not None:
                hit[i] = dict_hit
            continue
        if enc not in _WHOLE_VALUES:
            continue
        raw = memoryview(_pread(fd, int(layout.lengths[i]), int(layout.offsets[i])))
        hit[i] = _page_holds(layout, raw, int(layout.header_lengths[i]), int(layout.uncompressed[i]), needles,
                             int(layout.levels[i]), bool(layout.compressed[i]))
    return hit


def footer_schema_elements(fd: int, file_size: int, where: str = "<file>") -> list[bytes]:
    """The Thrift bytes of each SchemaElement of the file's footer (root first)."""
    tail = _pread(fd, 8, file_size - 8)
    n = int.from_bytes(tail[:4], "little")
    if tail[4:] != b"PAR1" or n <= 0 or n > file_size - 12:
        raise SkipidxError("not a plain Parquet footer")
    buf = _pread(fd, n, file_size - 8 - n)
    r = _Reader(buf, 0, where, "FileMetaData")
    last = 0
    while True:
        t, fid = r.field(last)
        if t == _T_STOP:
            break
        if fid == 2 and t == _T_LIST:
            return r.struct_elements()
        r.skip(t, 1)
        last = fid
    raise SkipidxError("footer without a schema")


# ---- a Thrift compact writer for the few structures of a one-column footer ---------------
class _W:
    def __init__(self) -> None:
        self.out = bytearray()
        self.last = [0]

    def _fh(self, fid: int, t: int) -> None:
        d = fid - self.last[-1]
        self.out += bytes([(d << 4) | t]) if 0 < d <= 15 else bytes([t]) + zigzag_varint(fid)
        self.last[-1] = fid

    def i32(self, fid: int, v: int) -> None:
        self._fh(fid, 5)
        self.out += zigzag_varint(v)

    def i64(self, fid: int, v: int) -> None:
        self._fh(fid, 6)
        self.out += zigzag_varint(v)

    def binary(self, fid: int, v: bytes) -> None:
        self._fh(fid, 8)
        self.out += varint(len(v)) + v

    def list_header(self, fid: int, etype: int, n: int) -> None:
        self._fh(fid, 9)
        self.out += bytes([(n << 4) | etype]) if n < 15 else bytes([0xF0 | etype]) + varint(n)

    def begin(self, fid: int | None = None) -> None:
        if fid is not None:
            self._fh(fid, 12)
        self.last.append(0)

    def end(self) -> None:
        self.out.append(0)
        self.last.pop()


def write_footer(leaf: bytes, name: str, physical: str, codec: str, encodings: Sequence[str], num_rows: int,
                 num_values: int, data_offset: int, dict_offset: int | None, compressed: int, uncompressed: int) -> bytes:
    """A FileMetaData of one row group with one flat column (Thrift compact)."""
    w = _W()
    w.begin()
    w.i32(1, 1)
    w.list_header(2, 12, 2)
    w.begin()                       # the root element
    w.binary(4, b"schema")
    w.i32(5, 1)
    w.end()
    w.out += leaf                   # the leaf, as the data file declares it (a whole struct)
    w.i64(3, num_rows)
    w.list_header(4, 12, 1)
    w.begin()                       # RowGroup
    w.list_header(1, 12, 1)
    w.begin()                       # ColumnChunk
    w.i64(2, data_offset)
    w.begin(3)                      # ColumnMetaData
    w.i32(1, _PHYSICAL[physical])
    encs = [_ENCODINGS[e] for e in encodings if e in _ENCODINGS]
    w.list_header(2, 5, len(encs))
    for e in encs:
        w.out += zigzag_varint(e)
    w.list_header(3, 8, 1)
    b = name.encode()
    w.out += varint(len(b)) + b
    w.i32(4, _CODECS[codec])
    w.i64(5, num_values)
    w.i64(6, uncompressed)
    w.i64(7, compressed)
    w.i64(9, data_offset)
    if dict_offset is not None:
        w.i64(11, dict_offset)
    w.end()
    w.end()                         # ColumnChunk
    w.i64(2, uncompressed)
    w.i64(3, num_rows)
    w.end()                         # RowGroup
    w.end()
    return bytes(w.out)


def decode_pages(fd: int, layout: PageLayout, pages: np.ndarray, leaf: bytes, name: str,
                 dictionary: bool = False) -> pa.ChunkedArray:
    """The values of the data pages `pages` (indices, ascending) of the chunk, decoded by
    pyarrow from a one-column Parquet file of those pages (and the dictionary page).
    `dictionary` (a BYTE_ARRAY column): as an Arrow dictionary array (pyarrow's
    ``read_dictionary``)."""
    parts = [b"PAR1"]
    pos = 4
    dict_off = None
    need_dict = layout.dict_span is not None and bool(np.isin(layout.encoding[pages], _DICT_ENCODED).any())
    if need_dict:
        off, ln, _, us = layout.dict_span
        parts.append(_pread(fd, ln, off))
        dict_off = pos
        pos += ln
    data_off = pos
    unc = 0
    rows = 0
    for i in pages:
        parts.append(_pread(fd, int(layout.lengths[i]), int(layout.offsets[i])))
        pos += int(layout.lengths[i])
        unc += int(layout.uncompressed[i]) + int(layout.header_lengths[i])
        rows += int(layout.rows[i])
    if need_dict:
        unc += layout.dict_span[3] + layout.dict_span[2]
    foot = write_footer(leaf, name, layout.physical, layout.codec, layout.encodings, rows, rows, data_off, dict_off,
                        pos - 4, unc)
    parts += [foot, len(foot).to_bytes(4, "little"), b"PAR1"]
    t = pq.ParquetFile(pa.BufferReader(b"".join(parts)), read_dictionary=[name] if dictionary else None
                       ).read(use_threads=False)
    if t.num_rows != rows:
        raise SkipidxError(f"decoded {t.num_rows} rows of {rows}")
    return t.column(0)


def matching_rows(layout: PageLayout, hit: np.ndarray) -> np.ndarray:
    """Row numbers (within the row group) of the pages `hit`."""
    idx = np.flatnonzero(hit)
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(layout.first_rows[i], layout.first_rows[i] + layout.rows[i]) for i in idx])


# ---- dictionary-encoded pages decoded here: the indices, against a dictionary decoded once ----
def dictionary_pages(layout: PageLayout, pages: np.ndarray) -> bool:
    """Whether the data pages `pages` can be decoded by :func:`dictionary_indices`: all
    dictionary-encoded against a PLAIN dictionary page, levels RLE, a codec Arrow has."""
    return (layout.dict_span is not None and layout.dict_plain and layout.dict_values >= 0 and layout.levels_rle
            and (layout.codec == "UNCOMPRESSED" or layout.codec in _ARROW_CODEC)
            and bool(np.isin(layout.encoding[pages], _DICT_ENCODED).all()))


def dictionary_page(fd: int, layout: PageLayout) -> bytes:
    """The raw bytes (header and compressed body) of the chunk's dictionary page."""
    off, ln, _, _ = layout.dict_span
    return _pread(fd, ln, off)


_PLAIN_DTYPE = {"INT32": "<i4", "INT64": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}


def plain_dictionary(layout: PageLayout, raw: bytes, arrow_type: pa.DataType) -> pa.Array | None:
    """The values of a fixed-width dictionary page (`raw`: its bytes) as `arrow_type` (an
    integer or floating type), or None where this is not such a page."""
    dt = _PLAIN_DTYPE.get(layout.physical)
    if dt is None or not (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)) \
            or pa.types.is_float16(arrow_type):
        return None
    _, _, hl, us = layout.dict_span
    body = memoryview(raw)[hl:]
    data = bytes(body) if layout.codec == "UNCOMPRESSED" else _codec(layout.codec).decompress(body, us)
    n = layout.dict_values
    vals = np.frombuffer(data, dtype=dt, count=n) if len(data) >= n * np.dtype(dt).itemsize else None
    if vals is None:
        raise SkipidxError("short dictionary page")
    # (an unsigned logical type is stored in the signed physical one: astype wraps it back)
    return pa.array(vals.astype(arrow_type.to_pandas_dtype(), copy=False), type=arrow_type)


def plain_string_dictionary(layout: PageLayout, raw: bytes, arrow_type: pa.DataType) -> pa.Array | None:
    """The values of a BYTE_ARRAY dictionary page (`raw`: its bytes) as `arrow_type` (a
    string or binary type), unpacked by a numba kernel; None where this is not such a page
    or a string value is not UTF-8 (the caller then lets pyarrow decode the page)."""
    from skipidx.core._kernels.rle import plain_byte_array

    if layout.physical != "BYTE_ARRAY":
        return None
    _, _, hl, us = layout.dict_span
    body = memoryview(raw)[hl:]
    data = bytes(body) if layout.codec == "UNCOMPRESSED" else _codec(layout.codec).decompress(body, us)
    n = layout.dict_values
    buf = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(max(len(buf) - 4 * n, 0), dtype=np.uint8)
    large = len(buf) >= 1 << 31
    offsets = np.empty(n + 1, dtype=np.int64 if large else np.int32)
    if len(buf) < 4 * n or plain_byte_array(buf, n, offsets, out) < 0:
        raise SkipidxError("short dictionary page")
    string = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
    typ = (pa.large_string() if string else pa.large_binary()) if large else (pa.string() if string else pa.binary())
    arr = pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(out[:int(offsets[-1])])])
    if string:
        try:
            arr.validate(full=True)   # UTF-8
        except pa.ArrowInvalid:
            return None
    return arr if arr.type == arrow_type else arr.cast(arrow_type)


def _rle_hybrid(data: bytes, pos: int, end: int, bw: int, count: int, skip: int = 0) -> np.ndarray:
    """`count` values, after the first `skip`, of an RLE / bit-packed hybrid run sequence
    of width `bw` in ``data[pos:end]`` (the Parquet spec's encoding of levels and
    dictionary indices)."""
    from skipidx.core._kernels.rle import rle_hybrid

    out = np.empty(count, dtype=np.int32)
    if count == 0:
        return out
    if bw == 0:
        out[:] = 0
        return out
    if not 0 < bw <= 32 or end > len(data) or pos < 0 or skip < 0:
        raise SkipidxError(f"bad RLE runs (bit width {bw})")
    if rle_hybrid(np.frombuffer(data, dtype=np.uint8), pos, end, bw, skip, count, out) != count:
        raise SkipidxError("RLE runs end before their values")
    return out


def dictionary_indices(fd: int, layout: PageLayout, pages: np.ndarray, max_def: int, dict_size: int,
                       first: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The dictionary indices of rows [first, stop) of the data pages `pages` (ascending,
    all passing :func:`dictionary_pages`; rows counted over those pages one after the
    other), decoded here: (indices (0 for a NULL row), validity or None when no row is
    NULL). `max_def`: the flat column's maximum definition level (0 required, 1
    optional). SkipidxError on anything that does not add up."""
    if max_def > 1:
        raise SkipidxError("nested levels")
    idx_parts: list[np.ndarray] = []
    valid_parts: list[np.ndarray | None] = []
    any_null = False
    base = 0
    if stop is None:
        stop = int(layout.rows[pages].sum())
    for i in pages.tolist():
        hl, rows, usize = int(layout.header_lengths[i]), int(layout.rows[i]), int(layout.uncompressed[i])
        a, b = max(first - base, 0), min(stop - base, rows)
        base += rows
        if b <= a:
            continue
        raw = _pread(fd, int(layout.lengths[i]), int(layout.offsets[i]))
        body = memoryview(raw)[hl:]
        if int(layout.kinds[i]) == _DATA_PAGE_V2:
            lv = int(layout.levels[i])
            levels = bytes(body[:lv])
            vbody = body[lv:]
            data = bytes(vbody) if layout.codec == "UNCOMPRESSED" or not layout.compressed[i] \
                else _codec(layout.codec).decompress(vbody, usize - lv).to_pybytes()
            defs = _rle_hybrid(levels, 0, lv, 1, rows) if max_def else None
            pos = 0
        else:
            data = bytes(body) if layout.codec == "UNCOMPRESSED" else \
                _codec(layout.codec).decompress(body, usize).to_pybytes()
            pos = 0
            defs = None
            if max_def:
                ln = int.from_bytes(data[:4], "little")
                defs = _rle_hybrid(data, 4, 4 + ln, 1, rows)
                pos = 4 + ln
        if pos >= len(data):
            if defs is None or defs.any():
                raise SkipidxError("page without its indices")
            bw = 0          # (a page of NULLs only may hold no index bytes)
        else:
            bw = data[pos]
            pos += 1
        if defs is None:
            valid = None
            skip, nn = a, b - a
        else:
            ok = defs.astype(bool)
            skip = int(np.count_nonzero(ok[:a]))
            valid = ok[a:b]
            nn = int(np.count_nonzero(valid))
        ind = _rle_hybrid(data, pos, len(data), bw, nn, skip)
        if nn and (int(ind.max()) >= dict_size or int(ind.min()) < 0):
            raise SkipidxError("dictionary index out of range")
        if valid is not None and nn != b - a:
            full = np.zeros(b - a, dtype=np.int32)
            full[valid] = ind
            ind = full
            any_null = True
        idx_parts.append(ind)
        valid_parts.append(valid)
    idx = idx_parts[0] if len(idx_parts) == 1 else np.concatenate(idx_parts)
    if not any_null:
        return idx, None
    return idx, np.concatenate([np.ones(len(x), dtype=bool) if v is None else v
                                for x, v in zip(idx_parts, valid_parts)])


# ---- PLAIN String pages walked in place: value bounds, no Arrow array -------------------
#: codecs whose pages :func:`string_pages` decompresses
_PAGE_CODEC = _ARROW_CODEC


@dataclass(frozen=True)
class StringPage:
    """One decompressed PLAIN BYTE_ARRAY data page: `values` values (the `valid` rows', in
    row order), each a 4-byte length and its bytes, from ``data[start]`` to the page's end.
    :meth:`bounds` walks them (or a search kernel walks them as it goes)."""

    data: np.ndarray                # uint8: the decompressed page (levels included)
    start: int                      # where the first value's length is
    values: int
    valid: np.ndarray | None        # per row: not NULL (None: no NULL in the page)
    rows: int

    def bounds(self) -> np.ndarray:
        """int64, one more than the values: value i is ``data[b[i]:b[i + 1] - 4]`` (the
        next value's length between them: the search kernels' ``gap``). SkipidxError if
        the values do not fill the page exactly."""
        from skipidx.core._kernels.rle import plain_bounds

        b = np.empty(self.values + 1, dtype=np.int64)
        if plain_bounds(self.data, self.start, self.values, b) != self.data.shape[0]:
            raise SkipidxError("PLAIN values do not fill the page")
        return b


def string_pages(file: pa.Buffer, layout: PageLayout, max_def: int) -> Iterator[StringPage]:
    """The data pages of a flat BYTE_ARRAY chunk (`layout`, in `file`: the whole file's
    bytes, a memory map), decompressed one after the other, nothing copied (a caller that
    drops each page before taking the next lets the next one reuse its memory); the
    caller walks the values (:meth:`StringPage.bounds`, or a kernel that checks as it
    goes that they fill the page). SkipidxError on anything but PLAIN pages (a
    dictionary page, another encoding), `max_def` > 1, a codec Arrow lacks, or
    definition levels that do not decode."""
    if layout.physical != "BYTE_ARRAY" or max_def > 1 or layout.dict_span is not None:
        raise SkipidxError("not a flat PLAIN BYTE_ARRAY chunk")
    if layout.codec != "UNCOMPRESSED" and layout.codec not in _PAGE_CODEC:
        raise SkipidxError(f"codec {layout.codec} not handled")
    if not layout.levels_rle or bool((layout.encoding != 0).any()):
        raise SkipidxError("pages not PLAIN")
    codec = None if layout.codec == "UNCOMPRESSED" else _codec_of(layout.codec)
    for i in range(layout.offsets.shape[0]):
        off, hl, rows, usize = (int(layout.offsets[i]), int(layout.header_lengths[i]), int(layout.rows[i]),
                                int(layout.uncompressed[i]))
        body = file.slice(off + hl, int(layout.lengths[i]) - hl)
        pos = 0
        defs = None
        if int(layout.kinds[i]) == _DATA_PAGE_V2:
            lv = int(layout.levels[i])
            vbody = body.slice(lv)
            data = vbody if codec is None or not layout.compressed[i] else codec.decompress(vbody, usize - lv)
            if max_def:
                defs = _rle_hybrid(body.slice(0, lv).to_pybytes(), 0, lv, 1, rows)
        else:
            data = body if codec is None else codec.decompress(body, usize)
            if max_def:
                head = data.slice(0, 4).to_pybytes()
                if len(head) < 4:
                    raise SkipidxError("page without its levels")
                ln = int.from_bytes(head, "little")
                defs = _rle_hybrid(data.slice(0, 4 + ln).to_pybytes(), 4, 4 + ln, 1, rows)
                pos = 4 + ln
        buf = np.frombuffer(data, dtype=np.uint8)
        valid = None
        n = rows
        if defs is not None:
            if int(defs.max(initial=0)) > 1:
                raise SkipidxError("bad definition levels")
            n = int(np.count_nonzero(defs))
            if n != rows:
                valid = defs.astype(bool)
        yield StringPage(buf, pos, n, valid, rows)


def _codec_of(name: str) -> pa.Codec:
    c = _CODEC_CACHE.get(("page", name))
    if c is None:
        c = _CODEC_CACHE[("page", name)] = pa.Codec(_PAGE_CODEC[name])
    return c
