"""A source Parquet file's row groups with their Snappy pages decompressed here, for
pyarrow to decode.

Snappy is the default codec of pyarrow's, Spark's and DuckDB's files, and
decompressing it is most of what reading one costs. Arrow's bundled Snappy
decompresses log text at ~0.76 GB/s, cramjam's (the Rust ``snap`` crate) at
~1.3 GB/s (bench/NOTES.md). So a row group whose chunks are Snappy is rewritten
in memory as a Parquet file of its own: each Snappy page decompressed by cramjam
behind a copy of its header that gives its new size (no CRC, which was of the
compressed bytes), the chunk marked UNCOMPRESSED, chunks in other codecs copied
as they are, and a footer that keeps the file's schema, key-value metadata
(pyarrow's ARROW:schema), created_by and column orders. pyarrow then decodes that
file as it would the original: every encoding, level and type is still pyarrow's.

Anything unexpected (encrypted or nested columns, a chunk in another file, a page
that does not decompress to its declared size, a header that does not parse, a
row group too large to hold decompressed) gives None, and the caller reads that
row group from the file with pyarrow as before, which reports a damaged file in
its own words.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.core.parquet_thrift import _Reader, _T_FALSE, _T_I32, _T_I64, _T_LIST, \
    _T_STOP, _T_STRUCT, fast_struct, varint, zigzag_varint

__all__ = ["RowGroupTranscoder", "TRANSCODE_MAX_BYTES"]

#: A row group is decompressed here only up to this many bytes (decompressed chunks and
#: the compressed ones together): it is held whole while pyarrow decodes it.
TRANSCODE_MAX_BYTES = 512 << 20

_SNAPPY, _UNCOMPRESSED = 1, 0
_DATA_PAGE, _INDEX_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 1, 2, 3
#: bytes read at the end of the file to find its footer
_TAIL = 64 << 10


def _fields(r: _Reader) -> list[tuple[int, int, bytes]]:
    """The fields of the struct at `r` as (field id, compact type, value bytes), the
    value bytes exactly as written (a bool's value is in its type)."""
    out = []
    last = 0
    while True:
        t, fid = r.field(last)
        if t == _T_STOP:
            return out
        s = r.pos
        r.skip(t, 1)
        out.append((fid, t, bytes(r.buf[s:r.pos])))
        last = fid


#: the compact types of the fields read here, by structure: Thrift's generated readers
#: (pyarrow's) skip a field of another type and keep the last of a field given twice
_ROW_GROUP = {1: _T_LIST, 3: _T_I64}
_COLUMN_CHUNK = {3: _T_STRUCT}
_COLUMN_META = {1: _T_I32, 2: _T_LIST, 3: _T_LIST, 4: _T_I32, 5: _T_I64, 6: _T_I64, 7: _T_I64, 9: _T_I64, 11: _T_I64}
_PAGE_HEADER = {1: _T_I32, 2: _T_I32, 3: _T_I32, 8: _T_STRUCT}
_PAGE_V2 = {5: _T_I32, 6: _T_I32}


def _by_id(fields, types: dict[int, int]) -> dict[int, tuple[int, int, bytes]]:
    """{field id: field} as a Thrift reader sees the struct: the last of each id, a field
    whose compact type is not its `types` one left out."""
    return {f[0]: f for f in fields if types.get(f[0], f[1]) == f[1]}


def _struct(fields) -> bytes:
    """A compact struct of (field id, compact type, value bytes), in field id order."""
    out = bytearray()
    last = 0
    for fid, t, raw in sorted(fields, key=lambda f: f[0]):
        d = fid - last
        out += bytes([(d << 4) | t]) if 0 < d <= 15 else bytes([t]) + zigzag_varint(fid)
        out += raw
        last = fid
    out.append(_T_STOP)
    return bytes(out)


def _int(raw: bytes) -> int:
    return _Reader(raw, 0, "<footer>", "FileMetaData").zigzag(64)


def _list(raw: bytes) -> list[bytes]:
    """The struct elements of a compact list value, each as its bytes."""
    return _Reader(raw, 0, "<footer>", "FileMetaData").struct_elements()


#: a page header's type, sizes and CRC (its other fields walked, not built)
_SIZE_FIELDS = {1: None, 2: None, 3: None, 4: None}


def _v1_header(win: bytes) -> tuple[int, int, int, int, bytes] | None:
    """A v1 data or dictionary page's header at the start of `win`, as almost every
    writer lays it out (type, sizes and CRC first, each a one-byte field header), read
    without building its statistics: (type, uncompressed size, compressed size, header
    length, the header for the page stored decompressed); None for anything else (the
    caller reads it field by field)."""
    r = _Reader(win, 0, "<page>", "PageHeader")
    p, last, vals = 0, 0, {}
    try:
        while True:
            t, fid = r.field(last)
            if t != _T_I32 or not last < fid <= 4:
                break
            vals[fid] = r.zigzag(32)
            p, last = r.pos, fid
    except SkipidxError:
        return None
    if not all(k in vals for k in (1, 2, 3)) or vals[1] not in (_DATA_PAGE, _DICTIONARY_PAGE):
        return None
    b = win[p]
    d, t = b >> 4, b & 0x0F
    if not d or t == _T_STOP:
        return None
    ends: list = []
    top = fast_struct(win, _SIZE_FIELDS, ends)
    if top is None or any(top.get(k) != vals.get(k) for k in (1, 2, 3, 4)):
        return None     # a size or type given again later (Thrift keeps the last): field by field
    hl = ends[0]
    fid = last + d
    if not 3 < fid <= 18:
        return None
    # fields 1-3 anew (no CRC), then the rest as written, its first field header now after field 3
    hdr = (bytes([0x15]) + zigzag_varint(vals[1]) + bytes([0x15]) + zigzag_varint(vals[2]) + bytes([0x15])
           + zigzag_varint(vals[2]) + bytes([((fid - 3) << 4) | t]) + win[p + 1:hl])
    return vals[1], vals[2], vals[3], hl, hdr


def _list_value(elems: list[bytes]) -> bytes:
    n = len(elems)
    head = bytes([(n << 4) | _T_STRUCT]) if n < 15 else bytes([0xF0 | _T_STRUCT]) + varint(n)
    return head + b"".join(elems)


def _anonymous(n: int) -> np.ndarray:
    """`n` writable bytes of an anonymous memory map. Not numpy's allocator: it asks for
    transparent huge pages on large arrays, and their first touch compacts memory (system
    time that varied 3x from run to run)."""
    import mmap

    return np.frombuffer(mmap.mmap(-1, max(n, 1)), dtype=np.uint8)


class RowGroupTranscoder:
    """Row groups of one Parquet file (an open file descriptor), each as the bytes of a
    one-row-group Parquet file with its Snappy pages decompressed
    (:meth:`row_group`). The buffers are reused from one row group to the next when
    nothing read from the last one still holds them."""

    def __init__(self, fd: int, file_size: int, where: str = "<file>") -> None:
        self.fd = fd
        self.where = where
        import cramjam   # imported here: only a Parquet import needs it

        self.codec = cramjam.snappy
        self._bad_input = cramjam.DecompressionError
        self._in = np.empty(0, dtype=np.uint8)
        self._out = np.empty(0, dtype=np.uint8)
        # the count of a buffer held by this object alone, measured rather than assumed
        # (the interpreter's own references differ between Python versions)
        self._idle_refs = sys.getrefcount(self._out)
        self._top: list[tuple[int, int, bytes]] = []
        self._groups: list[tuple[list, int]] = []
        self._read_footer(file_size)

    # ---- the footer ------------------------------------------------------------
    def _read_footer(self, file_size: int) -> None:
        if file_size < 12:
            return
        tail = os.pread(self.fd, min(_TAIL, file_size), max(0, file_size - _TAIL))
        n = int.from_bytes(tail[-8:-4], "little")
        if tail[-4:] != b"PAR1" or not 0 < n <= file_size - 12:
            return          # encrypted footers ("PARE") and anything odd: not here
        foot = tail[-8 - n:-8] if n + 8 <= len(tail) else os.pread(self.fd, n, file_size - 8 - n)
        if len(foot) != n:
            return
        top = _fields(_Reader(foot, 0, self.where, "FileMetaData"))
        if any(fid in (8, 9) for fid, _, _ in top):
            return          # encryption_algorithm / footer signing key: encrypted columns
        groups = []
        lists = [raw for fid, t, raw in top if fid == 4 and t == _T_LIST]
        for rg in _list(lists[-1]) if lists else []:
            f = _by_id(_fields(_Reader(rg, 0, self.where, "RowGroup")), _ROW_GROUP)
            if 1 not in f or 3 not in f:
                return
            cols = []
            for cc in _list(f[1][2]):
                c = _by_id(_fields(_Reader(cc, 0, self.where, "ColumnChunk")), _COLUMN_CHUNK)
                # a chunk in another file, encrypted, or without its metadata: not here
                if 1 in c or 8 in c or 9 in c or 3 not in c:
                    cols.append(None)
                    continue
                cols.append(_by_id(_fields(_Reader(c[3][2], 0, self.where, "ColumnMetaData")), _COLUMN_META))
            groups.append((cols, _int(f[3][2])))
        self._top = [f for f in top if f[0] not in (3, 4)]
        self._groups = groups

    def applies(self) -> bool:
        """Whether some row group has a Snappy chunk this can decompress."""
        return any(self._snappy_chunks(i) for i in range(len(self._groups)))

    def _snappy_chunks(self, i: int) -> int:
        cols, _ = self._groups[i]
        if any(c is None or not all(k in c for k in (1, 4, 5, 6, 7, 9)) for c in cols):
            return 0
        return sum(1 for c in cols if _int(c[4][2]) == _SNAPPY)

    # ---- one row group ----------------------------------------------------------
    def row_group(self, i: int) -> pa.Buffer | None:
        """Row group `i` as a Parquet file of its own, its Snappy chunks decompressed;
        None where this cannot be done (the caller reads the row group from the file)."""
        if not 0 <= i < len(self._groups) or not self._snappy_chunks(i):
            return None
        try:
            return self._transcode(i)
        except (SkipidxError, ValueError, OSError, OverflowError, IndexError, KeyError, TypeError,
                self._bad_input):
            return None

    def _transcode(self, i: int) -> pa.Buffer | None:
        cols, num_rows = self._groups[i]
        spans = []
        for c in cols:
            start = _int(c[9][2])
            if 11 in c:
                start = min(start, _int(c[11][2]))
            spans.append((start, _int(c[7][2])))
        unc = sum(_int(c[6][2]) for c in cols)
        if min(s for s, _ in spans) < 4 or unc > TRANSCODE_MAX_BYTES:
            return None
        # the page headers first (a window read at each), for the size of the result
        plans = []
        total = 4
        for c, (start, size) in zip(cols, spans):
            pages = self._pages(start, size, _int(c[4][2]) == _SNAPPY)
            plans.append(pages)
            total += sum(len(h) + osize for h, _, _, _, osize, _, _ in pages)
        if total > TRANSCODE_MAX_BYTES:
            return None
        out = self._output(total + (1 << 16))
        pos = 4
        out[:4] = np.frombuffer(b"PAR1", dtype=np.uint8)
        chunks = []
        decompress = self.codec.decompress_raw_into
        for c, pages in zip(cols, plans):
            first = pos
            dict_at = data_at = None
            for hdr, kind, body, blen, osize, levels, comp in pages:
                if kind == _DICTIONARY_PAGE and dict_at is None:
                    dict_at = pos
                elif kind != _DICTIONARY_PAGE and data_at is None:
                    data_at = pos
                out[pos:pos + len(hdr)] = np.frombuffer(hdr, dtype=np.uint8)
                pos += len(hdr)
                # stored bytes go straight to their place; compressed ones through a small
                # buffer that stays in cache, which the decompressor reads
                self._read(out[pos:pos + (levels if comp else blen)], body)
                if comp:
                    src = self._input(blen - levels)
                    self._read(src[:blen - levels], body + levels)
                    if decompress(src[:blen - levels], out[pos + levels:pos + osize]) != osize - levels:
                        return None
                pos += osize
            if data_at is None:
                return None
            chunks.append(self._chunk(c, first, pos - first, data_at, dict_at, transcoded=_int(c[4][2]) == _SNAPPY))
        foot = self._footer(chunks, num_rows, pos - 4)
        end = pos + len(foot) + 8
        if end > len(out):
            out = self._grow_output(out, pos, end)
        out[pos:pos + len(foot)] = np.frombuffer(foot, dtype=np.uint8)
        pos += len(foot)
        out[pos:pos + 4] = np.frombuffer(len(foot).to_bytes(4, "little"), dtype=np.uint8)
        out[pos + 4:pos + 8] = np.frombuffer(b"PAR1", dtype=np.uint8)
        return pa.py_buffer(out).slice(0, pos + 8)

    def _read(self, dest: np.ndarray, off: int) -> None:
        if len(dest) and os.preadv(self.fd, [memoryview(dest)], off) != len(dest):
            raise SkipidxError("short read")

    def _pages(self, off: int, size: int, snappy: bool) -> list:
        """The pages of the chunk at file offset `off`: each (new header bytes, page
        type, body offset, body length, bytes it takes in the result, uncompressed level
        bytes before the compressed values, whether the values are decompressed)."""
        pages = []
        pos, end = off, off + size
        while pos < end:
            win = os.pread(self.fd, min(end - pos, 4096), pos)
            quick = _v1_header(win)
            if quick is not None:
                kind, usize, csize, hl, hdr = quick
                body = pos + hl
                if csize < 0 or usize < 0 or body + csize > end:
                    raise SkipidxError("page runs past its chunk")
                pos = body + csize
                pages.append((hdr, kind, body, csize, usize, 0, True) if snappy else
                             (win[:hl], kind, body, csize, csize, 0, False))
                continue
            r = _Reader(win, 0, self.where, "PageHeader")
            try:
                fields = _fields(r)
            except SkipidxError:
                win = os.pread(self.fd, min(end - pos, 1 << 20), pos)
                r = _Reader(win, 0, self.where, "PageHeader")
                fields = _fields(r)
            hl = r.pos
            f = _by_id(fields, _PAGE_HEADER)
            if not all(k in f for k in (1, 2, 3)):
                raise SkipidxError("bad page header")
            kind, usize, csize = _int(f[1][2]), _int(f[2][2]), _int(f[3][2])
            body = pos + hl
            if csize < 0 or usize < 0 or body + csize > end:
                raise SkipidxError("page runs past its chunk")
            pos = body + csize
            if kind == _INDEX_PAGE:
                continue
            if kind not in (_DATA_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2):
                raise SkipidxError(f"page type {kind}")
            if not snappy:
                pages.append((win[:hl], kind, body, csize, csize, 0, False))
                continue
            levels = 0
            comp = True
            keep = [x for x in fields if x[0] not in (3, 4)]     # the size is new, the CRC was of the old bytes
            if kind == _DATA_PAGE_V2:
                if 8 not in f:
                    raise SkipidxError("v2 page without its header")
                v2 = _by_id(_fields(_Reader(f[8][2], 0, self.where, "DataPageHeaderV2")), _PAGE_V2)
                levels = sum(_int(v2[k][2]) for k in (5, 6) if k in v2)
                comp = not (7 in v2 and v2[7][1] == _T_FALSE)
                v2[7] = (7, _T_FALSE, b"")                        # the values are stored as they are now
                keep = [x for x in keep if x[0] != 8] + [(8, _T_STRUCT, _struct(v2.values()))]
                if levels > min(csize, usize):
                    raise SkipidxError("levels longer than the page")
            if not comp and csize != usize:
                raise SkipidxError("uncompressed page of two sizes")
            hdr = _struct(keep + [(3, _T_I32, zigzag_varint(usize))])
            pages.append((hdr, kind, body, csize, usize, levels, comp))
        if pos != end:
            raise SkipidxError("pages do not fill their chunk")
        return pages

    @staticmethod
    def _chunk(c: dict, start: int, size: int, data_at: int, dict_at: int | None, transcoded: bool) -> bytes:
        """A ColumnChunk for the rewritten chunk: the original metadata's type, encodings,
        path, value count, key-value metadata and encoding stats; new codec, sizes and
        offsets; no statistics, bloom filter or index offsets (pyarrow's reading needs none)."""
        keep = [c[k] for k in (1, 2, 3, 5, 8, 13) if k in c]
        unc = _int(c[6][2]) if not transcoded else size
        meta = keep + [(4, _T_I32, zigzag_varint(_UNCOMPRESSED if transcoded else _int(c[4][2]))),
                       (6, _T_I64, zigzag_varint(unc)),
                       (7, _T_I64, zigzag_varint(size)),
                       (9, _T_I64, zigzag_varint(data_at))]
        if dict_at is not None:
            meta.append((11, _T_I64, zigzag_varint(dict_at)))
        return _struct([(2, _T_I64, zigzag_varint(start)), (3, _T_STRUCT, _struct(meta))])

    def _footer(self, chunks: list[bytes], num_rows: int, size: int) -> bytes:
        rg = _struct([(1, _T_LIST, _list_value(chunks)), (2, _T_I64, zigzag_varint(size)),
                      (3, _T_I64, zigzag_varint(num_rows))])
        return _struct(self._top + [(3, _T_I64, zigzag_varint(num_rows)), (4, _T_LIST, _list_value([rg]))])

    # ---- buffers, reused while nothing read from them is alive ------------------------
    # (an eighth more than asked: a file's row groups differ by a few bytes, and each new
    # buffer is fresh pages the kernel has to zero)
    def _input(self, n: int) -> np.ndarray:
        if len(self._in) < n:
            self._in = np.empty(n + (n >> 3), dtype=np.uint8)
        return self._in

    def _output(self, n: int) -> np.ndarray:
        # pyarrow's arrays may keep slices of the last file's pages (each holds the
        # buffer through its py_buffer): a new buffer then, never one still read from
        if len(self._out) < n or sys.getrefcount(self._out) > self._idle_refs:
            self._out = _anonymous(n + (n >> 3))
        return self._out

    def _grow_output(self, out: np.ndarray, used: int, n: int) -> np.ndarray:
        new = _anonymous(n)
        new[:used] = out[:used]
        self._out = new
        return new
