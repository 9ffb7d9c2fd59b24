"""Parts: writing one (data + every index + manifest) and reading granules.

A part directory::

    data.parquet        the rows, sorted by the ORDER BY key; one Parquet row
                        group per data granule (see "Granule = row group")
    idx.<index>.arrow   one Arrow IPC file per index: the Lance zone table
    manifest.json       written last: rows, marks, row-group byte spans,
                        columns, index fingerprints, and the size and block
                        checksums of every other file

Granule = row group. To read k granules of a part the reader must touch O(k)
bytes. pyarrow reads whole row groups (it has no row-range read through the
page index), so the unit of reading is the row group. Measured by
``bench/bench_store.py`` (1M rows of the seeded log table, 8 columns, zstd,
8192-row granules = 123 granules; 2-core VM shared with other jobs, load ~8,
so absolute times are inflated -- the ratios are the point):

=========================  =========  =========  ============  ==========
layout                     k=1        k=8        file          footer
=========================  =========  =========  ============  ==========
row group per granule      11 ms      83 ms      59.6 MiB      132 KiB
row group per 16 granules  192 ms     1496 ms    58.9 MiB      9.5 KiB
  (ratio)                  17x        18x
one row group per part     1178 ms    1468 ms    55.3 MiB      2 KiB
  (ratio)                  105x       18x
one row group + page index 1212 ms    1360 ms    55.3 MiB      2.2 KiB
  (ratio)                  108x       16x
=========================  =========  =========  ============  ==========

One row group per data granule it is: 17-100x cheaper for selective reads,
for 8 % more bytes and a footer that takes 0.8 ms to parse -- once per
process per part (cached). Parquet's per-row-group statistics then double as
a free min/max per granule for DuckDB and Spark. Checksum verification of the
bytes read (first read in a process only) costs 1-4 % of the read.

Index files are Arrow IPC (uncompressed), not Parquet: a filter column is
random bits that compression cannot shrink, and IPC opens by memory-map with
zero copy and no decoding, so loading a part's filters costs only the pages
the planner touches. ``pyarrow.ipc.open_file(path).read_all()`` reads them.
"""
from __future__ import annotations

import json
import math
import os
import threading
import time
from collections import OrderedDict
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from skipidx.core.lru import LRU
from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.expr.index_expressions import apply_expression
from skipidx.indexes.base import IndexGranules, index_from_meta
from skipidx.store import commit as _commit
from skipidx.store.commit import PartEntry, StagedPart, crash_point, fsync_dir, fsync_file, new_part_name
from skipidx.store.manifest import VERIFIER, FileSum, file_sum
from skipidx.store.metadata import FORMAT_VERSION, IndexMeta, TableMeta
from skipidx.core.types import cast_to

__all__ = [
    "DATA_FILE", "MANIFEST", "Part", "build_part", "write_part", "conform", "sort_rows",
    "index_values", "read_manifest", "manifest_matches_meta", "index_file_name",
]

DATA_FILE = "data.parquet"
MANIFEST = "manifest.json"
#: Rows per chunk a part is written in (rounded to whole index granules):
#: the rows handed to an index aggregator at once, so building a part's
#: indexes needs memory for one chunk whatever the part's size.
INDEX_CHUNK_ROWS = 1 << 20


def index_file_name(index: str) -> str:
    return f"idx.{index}.arrow"


# ------------------------------------------------------------------ input
def conform(meta: TableMeta, data: pa.Table) -> pa.Table:
    """Check `data`'s columns against the table and cast every column to its
    declared type (range-checked). SkipidxError names the column."""
    names = data.column_names
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise SkipidxError(f"table {meta.name!r}: input has duplicate columns: {', '.join(dup)}")
    want = meta.column_names
    missing = [c for c in want if c not in names]
    extra = [c for c in names if c not in want]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns: {', '.join(missing)}")
        if extra:
            parts.append(f"unknown columns: {', '.join(extra)}")
        raise SkipidxError(f"table {meta.name!r}: " + "; ".join(parts) + f" (table columns: {', '.join(want)})")
    arrays = [cast_to(c.type, data.column(c.name), c.name) for c in meta.columns]
    return pa.Table.from_arrays(arrays, schema=meta.arrow_schema())


def sort_rows(meta: TableMeta, data: pa.Table) -> pa.Table:
    """`data` sorted by the ORDER BY key (stable; NULLs last, as ClickHouse)."""
    if not meta.order_by or data.num_rows <= 1:
        return data
    idx = pc.sort_indices(data.select(meta.order_by),
                          sort_keys=[(k, "ascending", "at_end") for k in meta.order_by])
    # already sorted input (common for time-ordered logs) costs no gather
    if pc.all(pc.equal(idx, pa.array(np.arange(data.num_rows, dtype=np.uint64)))).as_py():
        return data
    return data.take(idx)


def index_values(meta: IndexMeta, column: pa.Array) -> pa.Array:
    """The index expression's values over a whole column: the column itself or
    e.g. ``lower(column)``, through the registry the planner also uses for
    query constants (:mod:`skipidx.expr.index_expressions`), so both sides agree."""
    return apply_expression(meta.definition.expr_func, column)


# ------------------------------------------------------------------ write
def _zones(marks: np.ndarray, granularity: int) -> tuple[np.ndarray, np.ndarray]:
    ng = marks.shape[0] - 1
    first = np.arange(0, ng, granularity, dtype=np.int64)
    last = np.minimum(first + granularity, ng)
    start = marks[first]
    return start, marks[last] - start


def _row_group_spans(md: pq.FileMetaData) -> list[list[int]]:
    spans = []
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        lo, hi = None, None
        for j in range(rg.num_columns):
            c = rg.column(j)
            b = c.dictionary_page_offset if c.has_dictionary_page and c.dictionary_page_offset else c.data_page_offset
            e = b + c.total_compressed_size
            lo = b if lo is None else min(lo, b)
            hi = e if hi is None else max(hi, e)
        spans.append([int(lo), int(hi)])
    return spans


#: A String/binary column is written dictionary-encoded when its values
#: repeat at least this often on average within a granule (distinct/rows at
#: most 1/3), else PLAIN. Measured on 10M generated log rows (8192-row row
#: groups, 40 scattered granules read): trace_id (distinct/rows 0.22) reads
#: in 9.1 ms as an Arrow dictionary vs 12.1 ms from PLAIN (15.5 vs 15.9 MiB
#: LZ4), and a filter on it runs over the 22 % distinct values only; msg
#: (1.0) reads in 84 ms PLAIN vs 90 ms dictionary-decoded (90.5 vs 93.6 MiB).
DICT_MAX_RATIO_STRING = 1 / 3
#: A fixed-width column (numbers, dates) only when nearly constant
#: (distinct/rows at most 1/20): user_id (0.82) reads 2.85 vs 3.20 ms PLAIN
#: and takes 8.9 vs 10.8 MiB; ts (0.10, sorted) 0.54 vs 0.98 MiB under
#: zstd; http_status (0.001) 0.50 vs 0.99 MiB dictionary-encoded.
DICT_MAX_RATIO_FIXED = 1 / 20
#: Granules of the first chunk whose distinct counts decide (first, middle, last).
DICT_SAMPLE_GRANULES = 3


def choose_dictionary_columns(meta: TableMeta, sample: pa.Table, granule_rows: int) -> list[str]:
    """The columns to write dictionary-encoded, from a sample of the part's rows.

    Parquet dictionary encoding is per column chunk, and a column chunk here
    is one granule (one row group per granule), so what decides is how often
    values repeat *within a granule*: the distinct/rows ratio of up to
    :data:`DICT_SAMPLE_GRANULES` granules of `sample` (the part's first chunk;
    ~0.1-2 ms per granule and column, once per part). LowCardinality columns
    are always dictionary-encoded (declared so); booleans never (Parquet
    bit-packs them).
    """
    n = sample.num_rows
    if n == 0:
        return []
    g = max(1, min(granule_rows, n))
    starts = sorted({0, ((n // g) // 2) * g, max(0, ((n - 1) // g) * g)})[:DICT_SAMPLE_GRANULES]
    out = []
    for c in meta.columns:
        t = c.type.arrow_type
        if c.type.low_cardinality:
            out.append(c.name)
            continue
        if pa.types.is_boolean(t) or pa.types.is_null(t):
            continue
        limit = DICT_MAX_RATIO_FIXED if pa.types.is_primitive(t) else DICT_MAX_RATIO_STRING
        col = sample.column(c.name)
        ratios = []
        for s0 in starts:
            piece = col.slice(s0, g)
            ratios.append(pc.count_distinct(piece, mode="all").as_py() / max(1, len(piece)))
        if sum(ratios) / len(ratios) <= limit:
            out.append(c.name)
    return out


def _linked_dictionary_columns(data_path: str) -> list[str] | None:
    """The dictionary columns recorded by the part whose data file `data_path`
    is (a hard link keeps the encodings); None when unknown (a read hint only)."""
    try:
        with open(os.path.join(os.path.dirname(data_path), MANIFEST), "rb") as f:
            d = json.loads(f.read()).get("dictionary")
    except (OSError, ValueError, AttributeError):
        return None
    return list(d) if isinstance(d, list) and all(isinstance(x, str) for x in d) else None


class _IndexWriter:
    """Builds one index chunk by chunk (whole index granules at a time) into
    an Arrow IPC file: one record batch group per chunk."""

    def __init__(self, path: str, part_name: str, im: IndexMeta, arrow_type: pa.DataType) -> None:
        self.agg = index_from_meta(im.definition, arrow_type, im.params).aggregator()
        self.im = im
        self.path = path
        self.part_name = part_name
        self.sink = pa.OSFile(path, "wb")
        self.writer: pa.ipc.RecordBatchFileWriter | None = None
        self.schema: pa.Schema | None = None
        self.zones = 0

    def write(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray, row0: int) -> None:
        """Index `values` (rows starting at part row `row0`); zones relative to `values`."""
        g = self.agg.build(values, zone_start, zone_length)
        g.zone_start = np.asarray(g.zone_start, dtype=np.int64) + row0
        t = g.to_arrow(self.part_name)
        if self.writer is None:
            self.schema = t.schema
            self.writer = pa.ipc.new_file(self.sink, self.schema)
        elif not t.schema.equals(self.schema, check_metadata=False):
            t = t.cast(self.schema)
        self.writer.write_table(t.replace_schema_metadata(self.schema.metadata))
        self.zones += int(zone_start.shape[0])

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.sink.close()


class PartWriter:
    """Writes one part into an existing empty directory, chunk by chunk, so a
    part of any size needs memory for one chunk only (merges stream through it).

    Every chunk but the last must hold a multiple of :meth:`chunk_multiple`
    rows, so that data granules (row groups) and index granules never straddle
    chunks. Rows must arrive in the part's final order. `reuse` maps file
    names to files of another part to hard-link instead of writing (data
    file: then chunks only carry the columns the new indexes read).
    """

    def __init__(self, part_dir: str, meta: TableMeta, part_name: str, *, level: int = 0,
                 indexes: Sequence[IndexMeta] | None = None, reuse: dict[str, str] | None = None,
                 reuse_sums: dict[str, dict] | None = None,
                 reuse_layout: tuple[list[int], list[list[int]]] | None = None) -> None:
        self.dir = part_dir
        self._reuse_layout = reuse_layout
        self._reuse_sums = dict(reuse_sums or {})
        self.meta = meta
        self.name = part_name
        self.level = level
        self.indexes = list(meta.indexes if indexes is None else indexes)
        self.G = meta.index_granularity
        reuse = dict(reuse or {})
        self.rows = 0
        self._last = False
        self._data_path = os.path.join(part_dir, DATA_FILE)
        self._pw: pq.ParquetWriter | None = None
        # the data file is written here (else hard-linked from another part);
        # its writer is opened by the first chunk, which decides the encodings
        self._writes_data = DATA_FILE not in reuse
        #: columns written dictionary-encoded (None: not decided / not known)
        self.dictionary_columns: list[str] | None = None
        self._linked_from: str | None = None
        if DATA_FILE in reuse:
            self._linked_from = reuse.pop(DATA_FILE)
            _link(self._linked_from, self._data_path)
        self._linked: dict[str, bool] = {}
        self._iw: dict[str, _IndexWriter] = {}
        for im in self.indexes:
            fname = index_file_name(im.name)
            if fname in reuse:
                _link(reuse.pop(fname), os.path.join(part_dir, fname))
                self._linked[im.name] = True
            else:
                col = meta.column(im.definition.column)
                self._iw[im.name] = _IndexWriter(os.path.join(part_dir, fname), part_name, im, col.type.arrow_type)

    def _open_data(self, sample: pa.Table | None) -> None:
        """Open the Parquet writer, the encodings chosen from `sample` (the first chunk)."""
        meta = self.meta
        sorting = [pq.SortingColumn(meta.column_names.index(k), nulls_first=False) for k in meta.order_by]
        # per column: its CODEC, else the table's compression setting
        comp, level = meta.parquet_compression()
        self.dictionary_columns = (choose_dictionary_columns(meta, sample, self.G)
                                   if sample is not None else [])
        self._pw = pq.ParquetWriter(self._data_path, meta.arrow_schema(),
                                    compression=comp, compression_level=level or None,
                                    use_dictionary=self.dictionary_columns,
                                    write_statistics=True,
                                    store_schema=True, sorting_columns=sorting or None)

    def chunk_multiple(self) -> int:
        """Rows per chunk must be a multiple of this (but for the last chunk)."""
        m = 1
        for im in self.indexes:
            m = math.lcm(m, im.definition.granularity)
        return self.G * m

    def write(self, chunk: pa.Table) -> None:
        n = chunk.num_rows
        if n == 0:
            return
        if self._last:
            raise AssertionError("a chunk after a short chunk would split granules")
        if n % self.chunk_multiple():
            self._last = True
        if self._writes_data:
            if self._pw is None:
                self._open_data(chunk)
            self._pw.write_table(chunk, row_group_size=self.G)
        for name, iw in self._iw.items():
            im = iw.im
            arr = chunk.column(im.definition.column)
            arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
            zl_rows = self.G * im.definition.granularity
            zs = np.arange(0, n, zl_rows, dtype=np.int64)
            zl = np.minimum(zs + zl_rows, n) - zs
            iw.write(index_values(im, arr), zs, zl, self.rows)
        self.rows += n

    def abort(self) -> None:
        for iw in self._iw.values():
            try:
                iw.close()
            except Exception:
                pass
        if self._pw is not None:
            try:
                self._pw.close()
            except Exception:
                pass
            self._pw = None

    def finish(self) -> dict:
        """Close the files, fsync them, write the manifest last, fsync the dir."""
        if self._writes_data and self._pw is None:
            self._open_data(None)   # no rows: an empty file (refused below)
        if self._pw is not None:
            self._pw.close()
            self._pw = None
        crash_point("part:data_written")
        for iw in self._iw.values():
            iw.close()
        if self._linked_from is not None:
            self.dictionary_columns = _linked_dictionary_columns(self._linked_from)
        if self._pw is None and self._reuse_layout is not None:
            # a linked data file: its layout is the source part's (never
            # re-read from bytes that may have been damaged since)
            marks = np.asarray(self._reuse_layout[0], dtype=np.int64)
            spans = [list(x) for x in self._reuse_layout[1]]
        else:
            md = pq.read_metadata(self._data_path)
            rg_rows = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)], dtype=np.int64)
            marks = np.zeros(rg_rows.shape[0] + 1, dtype=np.int64)
            np.cumsum(rg_rows, out=marks[1:])
            if int(marks[-1]) != md.num_rows:
                raise AssertionError("row groups do not add up to the file's rows")
            spans = _row_group_spans(md)
        n_rows = int(marks[-1])
        if n_rows == 0:
            raise AssertionError("a part needs at least one row")
        if self._iw and self.rows != n_rows:
            raise AssertionError(f"indexes saw {self.rows} rows, the data file has {n_rows}")
        for name, iw in self._iw.items():
            zs, _ = _zones(marks, iw.im.definition.granularity)
            if iw.zones != zs.shape[0]:
                raise AssertionError(f"index {name}: {iw.zones} zones written, {zs.shape[0]} expected")
        crash_point("part:indexes_written")
        index_entries = {im.name: {"file": index_file_name(im.name), "fingerprint": im.fingerprint(),
                                   "granularity": im.definition.granularity} for im in self.indexes}
        files = {}
        for fname in sorted(os.listdir(self.dir)):
            if fname.startswith("."):
                continue
            path = os.path.join(self.dir, fname)
            fsync_file(path)
            if fname in self._reuse_sums:
                # a hard link of an immutable file: its recorded checksums
                # stay the reference (never re-derived from bytes that may
                # have rotted since)
                prev = FileSum.from_json(self._reuse_sums[fname], path)
                if os.path.getsize(path) != prev.size:
                    raise CorruptionError(f"file size {os.path.getsize(path)} differs from the manifest's {prev.size}",
                                          path=path)
                files[fname] = prev.to_json()
            else:
                files[fname] = file_sum(path).to_json()
        manifest = {
            "format_version": FORMAT_VERSION,
            "part": self.name,
            "level": self.level,
            "rows": int(marks[-1]),
            "index_granularity": self.G,
            "marks": marks.tolist(),
            "row_groups": spans,
            "columns": [[c.name, c.type.name] for c in self.meta.columns],
            "order_by": list(self.meta.order_by),
            "indexes": index_entries,
            "files": files,
            "created_unix": time.time(),
        }
        if self.dictionary_columns is not None:
            # a read hint (Part.read can return these as Arrow dictionaries);
            # absent in parts written before: read decoded
            manifest["dictionary"] = list(self.dictionary_columns)
        raw = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        crash_point("part:before_manifest")
        _commit.write_file_durably(os.path.join(self.dir, MANIFEST), raw)
        fsync_dir(self.dir)
        crash_point("part:manifest_written")
        return manifest


def write_part(part_dir: str, meta: TableMeta, data: pa.Table | None, part_name: str, *, level: int = 0,
               indexes: Sequence[IndexMeta] | None = None, reuse: dict[str, str] | None = None) -> dict:
    """Write a complete part from one table of rows (conformed and sorted)
    into the empty directory `part_dir`, in chunks of ~INDEX_CHUNK_ROWS rows.
    See :class:`PartWriter` for `indexes` and `reuse`. Returns the manifest."""
    w = PartWriter(part_dir, meta, part_name, level=level, indexes=indexes, reuse=reuse)
    try:
        if data is not None and data.num_rows:
            m = w.chunk_multiple()
            step = max(1, INDEX_CHUNK_ROWS // m) * m
            for off in range(0, data.num_rows, step):
                w.write(data.slice(off, step))
        return w.finish()
    except BaseException:
        w.abort()
        raise


def _link(src: str, dst: str) -> None:
    """Hard-link an immutable file of another part (copy where links fail)."""
    try:
        os.link(src, dst)
    except OSError:
        import shutil

        shutil.copyfile(src, dst)


def build_part(table_dir: str, meta: TableMeta, data: pa.Table, part_name: str | None = None, *,
               level: int = 0, detached: bool = False, prepare: bool = True) -> StagedPart:
    """Write `data` as a new staged part of the table at `table_dir`.

    With ``prepare`` the rows are conformed (checked, cast) and sorted here;
    pass ``prepare=False`` for rows that already are. ``detached=True`` is for
    parts written by a process that will not live until the commit (a Spark
    task): cleanup then keeps the staged dir for a day instead of removing it
    as soon as its writer is gone. Publish with
    :func:`skipidx.store.commit.commit_parts`. Needs no Catalog.
    """
    if prepare:
        data = sort_rows(meta, conform(meta, data))
    if data.num_rows == 0:
        raise SkipidxError("cannot build a part of zero rows")
    name = part_name or new_part_name(level)
    staged = _commit.stage_dir(table_dir, name, detached=detached)
    try:
        write_part(staged.path, meta, data, name, level=level)
    except BaseException:
        staged.discard()
        raise
    staged.rows = data.num_rows
    return staged


# ------------------------------------------------------------------ manifest
def read_manifest(part_dir: str, expected_hash: str | None = None) -> tuple[dict, str]:
    """Load and validate a part's manifest; (manifest, xxh3_128 hex of its bytes)."""
    path = os.path.join(part_dir, MANIFEST)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise CorruptionError("part manifest is missing", path=path) from None
    except OSError as e:
        raise CorruptionError(f"cannot read part manifest: {e.strerror}", path=path) from None
    h = xxhash.xxh3_128_hexdigest(raw)
    if expected_hash is not None and h != expected_hash:
        raise CorruptionError("part manifest checksum mismatch", path=path)
    try:
        m = json.loads(raw)
        if m["format_version"] != FORMAT_VERSION:
            raise CorruptionError(f"unsupported part format version {m['format_version']!r}", path=path)
        _commit.check_part_name(m["part"], path)
        rows = m["rows"]
        marks = m["marks"]
        if (not isinstance(rows, int) or not isinstance(marks, list) or len(marks) < 2
                or marks[0] != 0 or marks[-1] != rows or not all(isinstance(x, int) for x in marks)
                or any(b <= a for a, b in zip(marks, marks[1:]))):
            raise CorruptionError("bad rows/marks in part manifest", path=path)
        spans = m["row_groups"]
        if len(spans) != len(marks) - 1 or not all(
                isinstance(s, list) and len(s) == 2 and all(isinstance(x, int) for x in s) and 0 <= s[0] < s[1]
                for s in spans):
            raise CorruptionError("bad row-group spans in part manifest", path=path)
        if DATA_FILE not in m["files"]:
            raise CorruptionError("part manifest lists no data file", path=path)
        for fname, fs in m["files"].items():
            if not isinstance(fname, str) or "/" in fname or fname.startswith(".") or fname in ("", MANIFEST):
                raise CorruptionError(f"bad file name {fname!r} in part manifest", path=path)
            FileSum.from_json(fs, os.path.join(part_dir, fname))
        for iname, e in m["indexes"].items():
            if e["file"] != index_file_name(iname) or e["file"] not in m["files"]:
                raise CorruptionError(f"bad entry for index {iname!r} in part manifest", path=path)
            if not isinstance(e["fingerprint"], str):
                raise CorruptionError(f"bad entry for index {iname!r} in part manifest", path=path)
        if not isinstance(m["columns"], list) or not isinstance(m["index_granularity"], int):
            raise CorruptionError("bad columns in part manifest", path=path)
        d = m.get("dictionary")
        if d is not None and not (isinstance(d, list) and all(isinstance(x, str) for x in d)):
            raise CorruptionError("bad dictionary columns in part manifest", path=path)
    except CorruptionError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise CorruptionError(f"damaged part manifest ({type(e).__name__}: {e})", path=path) from None
    return m, h


def manifest_matches_meta(m: dict, meta: TableMeta, where: str) -> None:
    cols = [[c.name, c.type.name] for c in meta.columns]
    if m["columns"] != cols:
        raise SkipidxError(f"part columns {m['columns']} do not match table {meta.name!r} columns {cols}",
                           path=where)


# ------------------------------------------------------------------ read
#: Parsed Parquet footers by file identity: parsing a footer with many row
#: groups costs ~ms; a part's footer is parsed once per process.
_FOOTERS = LRU(512)

#: Reads of at least this many row groups use pyarrow's pre-buffering (the
#: column chunks fetched ahead on its I/O threads while earlier ones decode:
#: ~15 % faster for a 16-granule read of a wide column); smaller ones do not
#: (measured on the id lookups' reads of 3-7 scattered granules: 20 % more
#: CPU with it -- the hand-off to the I/O threads costs more than it overlaps).
PRE_BUFFER_MIN_ROW_GROUPS = 8

#: Per TableMeta object (id, with the object held so the id is not reused
#: while cached): its column names as a set and its Arrow schema. Building
#: them costs ~0.1 ms, once per read otherwise; metas are frozen and the
#: table state cache hands the same object to every snapshot of a state.
_META_DERIVED: "OrderedDict[int, tuple[TableMeta, frozenset, pa.Schema]]" = OrderedDict()
_META_DERIVED_LOCK = threading.Lock()


def _meta_derived(meta: TableMeta) -> tuple[frozenset, pa.Schema]:
    k = id(meta)
    with _META_DERIVED_LOCK:
        hit = _META_DERIVED.get(k)
        if hit is not None and hit[0] is meta:
            _META_DERIVED.move_to_end(k)
            return hit[1], hit[2]
    names, schema = frozenset(meta.column_names), meta.arrow_schema()
    with _META_DERIVED_LOCK:
        _META_DERIVED[k] = (meta, names, schema)
        while len(_META_DERIVED) > 256:
            _META_DERIVED.popitem(last=False)
    return names, schema


def _dictionary_readable(t: pa.DataType) -> bool:
    """Parquet BYTE_ARRAY columns: the ones pyarrow can return as dictionaries."""
    return pa.types.is_string(t) or pa.types.is_binary(t)


class _ReaderPool:
    """Idle open readers (``pq.ParquetFile`` over a memory-mapped file) by data-file identity.

    Opening a reader per read costs more than decoding the one granule a
    point query reads, so :meth:`Part.read` takes an idle reader of the same
    file (identity = device, inode, size, mtime: a replaced or rewritten file
    is another key) and gives it back after the read. A reader is used by one
    thread at a time (checked out while reading), so pyarrow's reader
    objects are never shared concurrently. Bounded (LRU over files, a few
    readers per file); evicted readers' files are closed. A forked child
    starts with an empty pool.

    A pooled reader maps its file, so it keeps a deleted file's disk space
    allocated: when this process retires parts (merge, DROP TABLE, cleanup)
    it calls :meth:`evict` with their directories -- idle readers there are
    closed at once, readers checked out by a running query are closed when
    given back (never under the query). Files deleted by another process are
    found by :meth:`sweep`, run by :meth:`take` at most every
    :attr:`SWEEP_INTERVAL_S`: one ``os.stat`` (~4 us) per pooled file, so at
    most ~0.25 ms per second of reads (each read already stats its own file
    for the key; the loan bookkeeping adds ~0.8 us to a take + give).
    """

    #: seconds between two sweeps for files deleted or replaced by other processes
    SWEEP_INTERVAL_S = 1.0

    # at most max_files x per_file open descriptors (128 by default): well
    # under the usual 1024 limit whatever the number of parts
    def __init__(self, max_files: int = 64, per_file: int = 2) -> None:
        self.max_files = max_files
        self.per_file = per_file
        self._idle: "OrderedDict[tuple, list[pq.ParquetFile]]" = OrderedDict()
        self._paths: dict[tuple, str] = {}      # key -> file path (for evict / sweep)
        self._busy: dict[str, int] = {}         # path -> readers checked out (or being opened)
        self._doomed: set[str] = set()          # busy paths evicted: close their readers on give
        self._lock = threading.Lock()
        self._next_sweep = time.monotonic() + self.SWEEP_INTERVAL_S

    def take(self, key: tuple, path: str | None = None) -> pq.ParquetFile | None:
        """An idle reader for `key` (None: open one and :meth:`give` it back).
        With `path`, the caller holds a loan on it until :meth:`give` or
        :meth:`discard` with the same path (even when None is returned: a
        reader opened meanwhile is evicted on give if its part is retired)."""
        now = time.monotonic()
        if now >= self._next_sweep:   # unlocked read: at worst one extra sweep
            self._next_sweep = now + self.SWEEP_INTERVAL_S
            self.sweep()
        with self._lock:
            if path is not None:
                self._busy[path] = self._busy.get(path, 0) + 1
            lst = self._idle.get(key)
            if not lst:
                return None
            self._idle.move_to_end(key)
            return lst.pop()

    def _release(self, path: str | None) -> bool:
        """End a loan on `path` (lock held); True if its readers must be closed."""
        if path is None:
            return False
        n = self._busy.get(path, 0) - 1
        doomed = path in self._doomed
        if n > 0:
            self._busy[path] = n
        else:
            self._busy.pop(path, None)
            self._doomed.discard(path)
        return doomed

    def give(self, key: tuple, pf: pq.ParquetFile, path: str | None = None) -> None:
        """Return a reader (taken or newly opened) for `key`; `path` as given to :meth:`take`."""
        drop: list[pq.ParquetFile] = []
        with self._lock:
            if self._release(path):
                drop.append(pf)   # its part was retired while the query read it
            else:
                lst = self._idle.setdefault(key, [])
                if path is not None:
                    self._paths[key] = path
                self._idle.move_to_end(key)
                if len(lst) < self.per_file:
                    lst.append(pf)
                else:
                    drop.append(pf)
                while len(self._idle) > self.max_files:
                    k, old = self._idle.popitem(last=False)
                    self._paths.pop(k, None)
                    drop.extend(old)
        for d in drop:
            self.discard(d)

    def cancel(self, path: str) -> None:
        """End a loan on `path` that produced no reader (opening it failed)."""
        with self._lock:
            self._release(path)

    def discard(self, pf: pq.ParquetFile, path: str | None = None) -> None:
        """Close a reader (not given back); `path` ends its loan as :meth:`give` would."""
        if path is not None:
            with self._lock:
                self._release(path)
        try:
            pf.close(force=True)   # force: the reader does not own a file object it was given
        except Exception:  # closing is best effort: the file is garbage either way
            pass

    def _drop_keys(self, keys: Iterable[tuple]) -> list[pq.ParquetFile]:
        """Remove `keys` from the pool (lock held); their idle readers."""
        out: list[pq.ParquetFile] = []
        for k in keys:
            out.extend(self._idle.pop(k, ()))
            self._paths.pop(k, None)
        return out

    def evict(self, dirs: Iterable[str]) -> int:
        """Close the readers of files under any of `dirs` (retired part
        directories, or a dropped table's directory): idle ones now, those
        checked out when given back. Returns the idle readers closed."""
        prefixes = tuple(os.path.join(os.path.abspath(d), "") for d in dirs)
        if not prefixes:
            return 0
        with self._lock:
            drop = self._drop_keys([k for k, p in self._paths.items() if p.startswith(prefixes)])
            self._doomed.update(p for p in self._busy if p.startswith(prefixes))
        for pf in drop:
            self.discard(pf)
        return len(drop)

    def sweep(self) -> int:
        """Close idle readers whose file no longer exists under its path or is
        another file now (deleted or replaced by another process). Returns how many."""
        with self._lock:
            items = list(self._paths.items())
        stale = []
        for k, p in items:
            try:
                st = os.stat(p)
            except OSError:
                stale.append(k)
                continue
            if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != tuple(k[:4]):
                stale.append(k)
        if not stale:
            return 0
        with self._lock:
            drop = self._drop_keys(stale)
        for pf in drop:
            self.discard(pf)
        return len(drop)

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, OrderedDict()
            self._paths = {}
        for lst in idle.values():
            for pf in lst:
                self.discard(pf)

    def _after_fork(self) -> None:
        # a forked child starts empty (its copies of the descriptors close with the readers)
        self._idle = OrderedDict()
        self._paths = {}
        self._busy = {}
        self._doomed = set()
        self._lock = threading.Lock()


_READERS = _ReaderPool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_READERS._after_fork)


def release_readers(dirs: Iterable[str]) -> int:
    """Close this process's pooled readers of files under `dirs` (part or
    table directories being retired or deleted), so their memory mappings do
    not keep deleted files' disk space allocated. Readers in use are closed
    when their read ends. Returns the idle readers closed."""
    return _READERS.evict(dirs)


class _PartInfo:
    """What a part's manifest says, parsed once: the manifest itself, the
    marks as a read-only int64 array, and the file checksums (parsed on first
    use). Shared by every snapshot that sees the part (parts are immutable)."""

    __slots__ = ("manifest", "marks", "_sums", "dictionary", "column_bytes", "__weakref__")

    def __init__(self, manifest: dict) -> None:
        self.manifest = manifest
        #: columns written dictionary-encoded (empty for parts written before this was recorded)
        self.dictionary = frozenset(manifest.get("dictionary") or ())
        #: mean compressed bytes per granule by column (filled from the footer on demand)
        self.column_bytes: dict[str, float] = {}
        marks = np.asarray(manifest["marks"], dtype=np.int64)
        marks.flags.writeable = False   # shared between snapshots and threads
        self.marks = marks
        self._sums: dict[str, FileSum] = {}

    def filesum(self, fname: str, where: str) -> FileSum:
        fs = self._sums.get(fname)
        if fs is None:
            fs = FileSum.from_json(self.manifest["files"][fname], where)
            self._sums[fname] = fs
        return fs


#: Parsed manifests (:class:`_PartInfo`) by (part dir, manifest checksum):
#: parts are immutable, so a snapshot does not re-parse or re-validate the
#: manifests an earlier one already read; a different manifest (another
#: checksum in the table state) is another key.
_MANIFESTS = LRU(4096)

#: Index fingerprints by IndexMeta object (id), with the object itself held so
#: the id cannot be reused while the entry lives: a fingerprint is a SHA-256
#: over the index's JSON, and every granule of every part asks for it.
_FINGERPRINTS: "OrderedDict[int, tuple[IndexMeta, str]]" = OrderedDict()
_FINGERPRINTS_LOCK = threading.Lock()


def index_fingerprint(im: IndexMeta) -> str:
    """``im.fingerprint()``, computed once per IndexMeta object (metas are frozen)."""
    k = id(im)
    with _FINGERPRINTS_LOCK:
        hit = _FINGERPRINTS.get(k)
        if hit is not None and hit[0] is im:
            _FINGERPRINTS.move_to_end(k)
            return hit[1]
    fp = im.fingerprint()
    with _FINGERPRINTS_LOCK:
        _FINGERPRINTS[k] = (im, fp)
        while len(_FINGERPRINTS) > 1024:
            _FINGERPRINTS.popitem(last=False)
    return fp


def clear_caches() -> None:
    """Forget verified checksums, parsed footers and manifests (as a new process would)."""
    VERIFIER.forget()
    _FOOTERS.clear()
    _MANIFESTS.clear()
    _READERS.clear()
    _commit.clear_state_cache()
    with _FINGERPRINTS_LOCK:
        _FINGERPRINTS.clear()


def normalize_ranges(mark_ranges: Iterable[tuple[int, int]], n_granules: int) -> list[tuple[int, int]]:
    """Sorted, merged, validated [a, b) granule ranges (empty ones dropped)."""
    rs = []
    for r in mark_ranges:
        try:
            a, b = int(r[0]), int(r[1])
        except (TypeError, ValueError, IndexError):
            raise SkipidxError(f"bad mark range {r!r}") from None
        if not 0 <= a <= b <= n_granules:
            raise SkipidxError(f"mark range [{a}, {b}) out of [0, {n_granules})")
        if a < b:
            rs.append((a, b))
    rs.sort()
    out: list[tuple[int, int]] = []
    for a, b in rs:
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


class Part:
    """A published part of a table snapshot (immutable)."""

    def __init__(self, table_dir: str, entry: PartEntry, meta: TableMeta) -> None:
        self.table_dir = table_dir
        self.name = entry.name
        self.path = os.path.join(table_dir, _commit.PARTS_DIR, entry.name)
        self.num_rows = entry.rows
        self.meta = meta
        self._entry = entry
        self._info: _PartInfo | None = None

    def __repr__(self) -> str:
        return f"Part({self.name!r}, rows={self.num_rows})"

    # ---- manifest-derived ------------------------------------------------
    @property
    def _part_info(self) -> _PartInfo:
        if self._info is None:
            key = (self.path, self._entry.manifest_hash)
            info = _MANIFESTS.get(key)
            if info is None:
                m, _ = read_manifest(self.path, self._entry.manifest_hash)
                if m["part"] != self.name or m["rows"] != self.num_rows:
                    raise CorruptionError("part manifest does not match the table state",
                                          path=os.path.join(self.path, MANIFEST))
                info = _PartInfo(m)
                _MANIFESTS.put(key, info)
            self._info = info
        return self._info

    @property
    def manifest(self) -> dict:
        return self._part_info.manifest

    @property
    def marks(self) -> np.ndarray:
        """int64 row offset of every granule, plus the row count at the end (read-only)."""
        return self._part_info.marks

    def granule_bytes(self, columns: Sequence[str]) -> float:
        """Mean compressed bytes per granule of `columns` in the data file (what
        reading one granule of them costs), from the Parquet footer: a sample
        of up to 32 row groups, once per part and column per process."""
        info = self._part_info
        cache = info.column_bytes
        missing = [c for c in columns if c not in cache]
        if missing:
            key, pf = self._data_reader(pooled=True)
            path = os.path.join(self.path, DATA_FILE)
            try:
                md = pf.metadata
            finally:
                _READERS.give(key, pf, path)
            pos = {md.schema.column(j).name: j for j in range(md.num_columns)}
            n = md.num_row_groups
            sample = sorted({int(i) for i in np.linspace(0, n - 1, min(n, 32))}) if n else []
            for c in missing:
                j = pos.get(c)
                tot = sum(md.row_group(i).column(j).total_compressed_size for i in sample) if j is not None else 0
                cache[c] = tot / max(1, len(sample))
        return float(sum(cache[c] for c in columns))

    @property
    def dictionary_columns(self) -> frozenset:
        """Columns this part wrote dictionary-encoded (empty if not recorded: older parts)."""
        return self._part_info.dictionary

    @property
    def n_granules(self) -> int:
        return int(self.marks.shape[0] - 1)

    @property
    def index_granularity(self) -> int:
        return int(self.manifest["index_granularity"])

    @property
    def level(self) -> int:
        return int(self.manifest.get("level", 0))

    def _filesum(self, fname: str) -> FileSum:
        return self._part_info.filesum(fname, os.path.join(self.path, fname))

    # ---- data ------------------------------------------------------------
    def _open_data(self) -> pq.ParquetFile:
        """A new reader of the data file (footer verified and parsed once per process)."""
        return self._data_reader()[1]

    def _data_reader(self, pooled: bool = False, pre_buffer: bool = True,
                     read_dictionary: tuple[str, ...] = ()) -> tuple[tuple, pq.ParquetFile]:
        """(pool key, reader). `pooled`: an idle reader of the same file (and
        `pre_buffer` mode and `read_dictionary` columns) from :data:`_READERS` if there is one; a new one
        otherwise -- either way on loan: give it back with
        ``_READERS.give(key, reader, path)`` or close it with
        ``_READERS.discard(reader, path)`` (path: the data file's)."""
        path = os.path.join(self.path, DATA_FILE)
        fs = self._filesum(DATA_FILE)
        ident = VERIFIER._identity(path, fs)
        key = ident + (bool(pre_buffer), read_dictionary)
        if pooled:
            pf = _READERS.take(key, path)
            if pf is not None:
                return key, pf
            try:
                return key, self._new_reader(path, fs, ident, pre_buffer, read_dictionary)
            except BaseException:
                _READERS.cancel(path)   # end the loan taken above
                raise
        return key, self._new_reader(path, fs, ident, pre_buffer, read_dictionary)

    def _new_reader(self, path: str, fs: FileSum, ident: tuple, pre_buffer: bool,
                    read_dictionary: tuple[str, ...] = ()) -> pq.ParquetFile:
        """A new reader of data file `path` (identity `ident`) over its memory mapping."""
        md = _FOOTERS.get(ident)
        if md is None:
            spans = self.manifest["row_groups"]
            # the leading magic and the footer: everything outside the row groups
            VERIFIER.verify(path, fs, 0, spans[0][0])
            VERIFIER.verify(path, fs, spans[-1][1], fs.size)
            try:
                md = pq.read_metadata(path)
            except (OSError, pa.ArrowException) as e:
                raise CorruptionError(f"unreadable Parquet footer: {e}", path=path) from None
            if md.num_row_groups != self.n_granules or md.num_rows != self.num_rows:
                raise CorruptionError("Parquet footer does not match the part manifest", path=path)
            _FOOTERS.put(ident, md)
        try:
            # The file memory-mapped and read as one in-memory buffer: Arrow
            # reads a buffer synchronously, while from a file object (OSFile or
            # memory_map alike) every column chunk goes through its I/O
            # executor (thread hand-off + fadvise per chunk): 39 scattered
            # granules of a UInt64 column decode in ~1.6 ms from the buffer vs
            # ~6.6 ms from the file (2-core machine). Parts are immutable (a
            # new file under a new name), so the mapping never sees a change;
            # an unlinked part stays readable while mapped, as an open file.
            # Not a path either: pyarrow resolves a path's file system on every
            # open (~0.2 ms, a point query's whole decode).
            # The size check in VERIFIER._identity catches a file damaged
            # (truncated) before this read; a truncation racing a read of the
            # mapping cannot be caught and raises SIGBUS (parts are never
            # truncated by skipidx: only an outside actor can do that).
            # The mapping lives as long as the reader: the pool closes
            # readers of retired parts (release_readers / _ReaderPool.sweep).
            with pa.memory_map(path, "r") as mm:
                buf = mm.read_buffer()    # zero-copy: keeps the mapping alive
            return pq.ParquetFile(pa.BufferReader(buf), metadata=md, pre_buffer=pre_buffer,
                                  read_dictionary=list(read_dictionary) or None)
        except (OSError, pa.ArrowException) as e:
            raise CorruptionError(f"cannot open Parquet file: {e}", path=path) from None

    def read(self, columns: Sequence[str] | None = None,
             mark_ranges: Sequence[tuple[int, int]] | None = None, *,
             use_threads: bool | None = None, dictionary: Iterable[str] = ()) -> pa.Table:
        """Rows of granules [a, b) for each range (None: all), `columns` (None: all).

        `dictionary`: String columns the caller takes as Arrow dictionary
        arrays (``dictionary<int32, string>``, one dictionary per chunk, NULLs
        in the indices). Of these, the columns this part wrote
        dictionary-encoded (:attr:`dictionary_columns`) come back so, without
        being decoded (cheaper, and a filter can run on the distinct values);
        every other column comes back with its declared type.

        Verifies the checksums of the bytes read (once per process).
        `use_threads` is Arrow's (decode the columns in its CPU pool); the
        default uses it only for several columns over several granules:
        Arrow parallelizes across columns, so a one-column or one-granule
        read gains nothing and pays the hand-off (a caller that already runs
        reads concurrently, like the scan, passes False).
        """
        names, schema = _meta_derived(self.meta)
        cols = self.meta.column_names if columns is None else list(columns)
        for c in cols:
            if c not in names:
                raise SkipidxError(f"table {self.meta.name!r} has no column {c!r}")
        ranges = [(0, self.n_granules)] if mark_ranges is None else normalize_ranges(mark_ranges, self.n_granules)
        path = os.path.join(self.path, DATA_FILE)
        fs = self._filesum(DATA_FILE)
        spans = self.manifest["row_groups"]
        rgs: list[int] = []
        for a, b in ranges:
            VERIFIER.verify(path, fs, spans[a][0], spans[b - 1][1])
            rgs.extend(range(a, b))
        if not rgs:
            return schema.empty_table().select(cols)
        as_dict = tuple(c for c in cols if c in dictionary and c in self.dictionary_columns
                        and _dictionary_readable(schema.field(c).type)) if dictionary else ()
        key, pf = self._data_reader(pooled=True, pre_buffer=len(rgs) >= PRE_BUFFER_MIN_ROW_GROUPS,
                                    read_dictionary=as_dict)
        try:
            if use_threads is None:
                use_threads = len(cols) > 1 and len(rgs) > 1
            t = pf.read_row_groups(rgs, columns=cols, use_threads=use_threads)
        except BaseException as e:
            _READERS.discard(pf, path)
            if isinstance(e, (OSError, pa.ArrowException)):
                raise CorruptionError(f"unreadable Parquet data: {e}", path=path) from None
            raise
        _READERS.give(key, pf, path)
        expect = int(sum(int(self.marks[b] - self.marks[a]) for a, b in ranges))
        if t.num_rows != expect:
            raise CorruptionError(f"read {t.num_rows} rows, the manifest says {expect}", path=path)
        got = t.schema
        if got.names == cols and all(
                (got.field(i).type == schema.field(c).type if c not in as_dict
                 else got.field(i).type == pa.dictionary(pa.int32(), schema.field(c).type))
                and got.field(i).nullable == schema.field(c).nullable for i, c in enumerate(cols)):
            return t
        want = pa.schema([schema.field(c) if c not in as_dict else
                          schema.field(c).with_type(pa.dictionary(pa.int32(), schema.field(c).type))
                          for c in cols])
        if not t.schema.equals(want, check_metadata=False):
            try:
                t = t.cast(want)
            except (pa.ArrowException, ValueError) as e:
                raise CorruptionError(f"Parquet columns do not match the table schema: {e}", path=path) from None
        return t

    # ---- indexes ---------------------------------------------------------
    def index_entry(self, name: str) -> dict | None:
        """The manifest entry of index `name` if this part holds it *as the
        table currently defines it* (same fingerprint), else None."""
        e = self.manifest["indexes"].get(name)
        if e is None:
            return None
        try:
            im = self.meta.index(name)
        except SkipidxError:
            return None
        return e if e["fingerprint"] == index_fingerprint(im) else None

    def has_index(self, name: str) -> bool:
        """True when the index is materialized in this part (it may still be damaged)."""
        return self.index_entry(name) is not None

    def load_index(self, name: str) -> IndexGranules:
        """The index granules of index `name`. CorruptionError (naming the file)
        if the file is missing, damaged or inconsistent; SkipidxError if the
        part does not hold the index."""
        e = self.index_entry(name)
        if e is None:
            raise SkipidxError(f"part {self.name} has no materialized index {name!r}")
        im = self.meta.index(name)
        path = os.path.join(self.path, e["file"])
        fs = self._filesum(e["file"])
        VERIFIER.verify(path, fs)
        try:
            # Read into memory, not memory-mapped: the loaded granules are
            # cached (IndexCache) long after their part may be merged away or
            # dropped, and a mapping would keep the deleted file's disk space
            # allocated for as long. No slower: 0.20 ms vs 0.25 ms mapped for a
            # 2 MB bloom index file (the mapping's page faults cost more than
            # the copy of a just-verified, page-cached file).
            with pa.OSFile(path, "r") as src:
                buf = src.read_buffer()
            table = pa.ipc.open_file(pa.BufferReader(buf)).read_all()
            table.validate(full=True)   # offsets/lengths in range before any kernel touches them
        except (OSError, pa.ArrowException) as ex:
            raise CorruptionError(f"unreadable index file: {ex}", path=path) from None
        col = self.meta.column(im.definition.column)
        inst = index_from_meta(im.definition, col.type.arrow_type, im.params)
        try:
            g = inst.granules_from_arrow(table)
        except CorruptionError as ex:
            raise CorruptionError(ex.message, path=path) from None
        except SkipidxError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, pa.ArrowException) as ex:
            raise CorruptionError(f"damaged index table ({type(ex).__name__}: {ex})", path=path) from None
        zs, zl = _zones(self.marks, im.definition.granularity)
        if (len(g) != zs.shape[0] or not np.array_equal(np.asarray(g.zone_start, dtype=np.int64), zs)
                or not np.array_equal(np.asarray(g.zone_length, dtype=np.int64), zl)):
            raise CorruptionError("index zones do not match the part's granules", path=path)
        return g

    def index_zones(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(zone_start, zone_length) in rows of index `name`'s granules."""
        return _zones(self.marks, self.meta.index(name).definition.granularity)

    def verify(self) -> None:
        """Verify every file of the part in full (CorruptionError naming the first bad one)."""
        for fname in self.manifest["files"]:
            VERIFIER.verify(os.path.join(self.path, fname), self._filesum(fname))
