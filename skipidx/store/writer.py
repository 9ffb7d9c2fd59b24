"""Writing a part: data file, every index, checksums and the manifest last.

Granule = row group. To read k granules of a part the reader must touch O(k)
bytes, and pyarrow reads whole row groups (it has no row-range read through
the page index), so the data file has one row group per data granule
(``bench/bench_store.py`` compares the layouts). Parquet's per-row-group
statistics of the ORDER BY key and the fixed-width columns then double as a
free min/max per granule for DuckDB and Spark (:func:`statistics_columns`).

Index files are Arrow IPC, not Parquet: IPC opens with no decoding, and
``pyarrow.ipc.open_file(path).read_all()`` reads them. A filter column sized
for its fpp is near-random bits that compression cannot shrink, but a sparse
one (fixed-size filters of few tokens) shrinks many times: each file's buffers
are zstd-compressed (IPC's own buffer compression, recorded in the file) when
its first chunk shows it pays (:func:`index_compression`).
"""
from __future__ import annotations

import json
import math
import os
import time
from typing import Sequence

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import parquet as pq

from skipidx.core.crypto import seal_index_table
from skipidx.core.sizing import SUMMARY_MIN_GRANULES
from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.kms import KeyRing, parquet_encryption
from skipidx.expr.index_expressions import apply_expression
from skipidx.indexes.base import index_from_meta
from skipidx.store import commit as _commit
from skipidx.store.checksums import FileSum, file_sum
from skipidx.store.commit import StagedPart, crash_point, fsync_dir, fsync_file, new_part_name
from skipidx.store.conform import conform, sort_rows
from skipidx.store.encoding import (
    choose_column_encodings, choose_dictionary_columns, linked_column_encodings, linked_dictionary_columns,
)
from skipidx.store.manifest import DATA_FILE, KEY_STATS, MANIFEST, index_file_name, key_stats_from_footer, zones
from skipidx.store.metadata import FORMAT_VERSION, IndexMeta, TableMeta

__all__ = ["INDEX_CHUNK_ROWS", "EncodingPlan", "PartWriter", "write_part", "build_part", "index_values", "statistics_columns",
           "write_batch_rows", "WRITE_BATCH_MAX_BYTES"]

#: Rows per chunk a part is written in (rounded to whole index granules):
#: the rows handed to an index aggregator at once, so building a part's
#: indexes needs memory for one chunk whatever the part's size.
INDEX_CHUNK_ROWS = 1 << 20
#: An insert's first part of at least this many rows decides the encodings (dictionary or
#: not, PLAIN / DELTA / BYTE_STREAM_SPLIT) of the insert's other parts (:class:`EncodingPlan`).
PLAN_MIN_ROWS = 1 << 16
#: Arrow's writer encodes a column in batches of rows and checks a page's size after
#: each: a part's batches are a whole granule where a granule of its widest column is at
#: most this many bytes (halved until it is, down to Arrow's own 1024 rows), so pages stay
#: near Arrow's 1 MiB and each granule costs one batch instead of eight.
WRITE_BATCH_MAX_BYTES = 2 << 20


class EncodingPlan:
    """The encodings an insert's first part chose from its rows, for its other parts: the
    trials cost ~12 ms a part and one statement's chunks are alike. The other parts wait
    for the first part's choice (never for long: it is made when its writer opens), so the
    files are the same whatever the insert's threads. A first part smaller than
    :data:`PLAN_MIN_ROWS` (or one that failed) leaves every part to decide for itself."""

    def __init__(self) -> None:
        import threading

        self._ready = threading.Event()
        self._choice = None
        self._first = None

    def claim(self, owner: object) -> None:
        """`owner` (the first part's writer) decides."""
        self._first = owner

    def first_of(self, writer: object) -> bool:
        return self._first is writer

    def decide(self, choice) -> None:
        self._choice = choice
        self._ready.set()

    def release(self) -> None:
        """No choice after all (the first part failed or wrote nothing): the others decide."""
        self._ready.set()

    def wait(self):
        self._ready.wait()
        return self._choice


def write_batch_rows(sample: pa.Table | None, granule_rows: int) -> int:
    """Rows per batch of Arrow's column writer for a part whose first chunk is `sample`
    (:data:`WRITE_BATCH_MAX_BYTES`)."""
    rows = 1024
    if sample is None or sample.num_rows == 0 or granule_rows <= rows:
        return rows
    widest = max((c.nbytes for c in sample.columns), default=0) / sample.num_rows
    rows = granule_rows
    while rows > 1024 and rows * widest > WRITE_BATCH_MAX_BYTES:
        rows //= 2
    return max(rows, 1024)


def index_values(meta: IndexMeta, column: pa.Array) -> pa.Array:
    """The index expression's values over a whole column: the column itself or
    e.g. ``lower(column)``, through the registry the planner also uses for
    query constants (:mod:`skipidx.expr.index_expressions`), so both sides agree."""
    return apply_expression(meta.definition.expr_func, column)


def _leaf_paths(name: str, t: pa.DataType) -> list[tuple[str, pa.DataType]]:
    """(Parquet column path, Arrow leaf type) of each leaf of a column, as pyarrow's writer
    names them (compliant nested types: ``a.list.element``)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_paths(f"{name}.list.element", t.value_type)
    if pa.types.is_map(t):
        return _leaf_paths(f"{name}.key_value.key", t.key_type) + _leaf_paths(f"{name}.key_value.value", t.item_type)
    if pa.types.is_struct(t):
        return [p for i in range(t.num_fields) for p in _leaf_paths(f"{name}.{t.field(i).name}", t.field(i).type)]
    return [(name, t)]


def _bytes_like(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t))


def statistics_columns(meta: TableMeta) -> list[str]:
    """The Parquet columns written with min/max statistics: the ORDER BY key (the
    pruner reads its row-group statistics), every fixed-width column (a vectorized
    min/max) and LowCardinality columns (few distinct values). Not the other String /
    binary / FixedString columns: their min/max is a comparison per value (a few
    percent of an insert's CPU), and a granule's min/max of free text or ids prunes
    nothing; ClickHouse keeps no per-granule min/max of them either."""
    out = []
    for c in meta.columns:
        keep = c.name in meta.order_by or c.type.low_cardinality
        for path, t in _leaf_paths(c.name, c.type.arrow_type):
            if keep or not _bytes_like(t):
                out.append(path)
    return out


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


def _takes_threads(idx) -> bool:
    """Whether an index type's ``aggregator`` takes a thread count (a third-party type may not)."""
    import inspect

    try:
        return "threads" in inspect.signature(idx.aggregator).parameters
    except (TypeError, ValueError):
        return False


def _takes_chunked(iw: "_IndexWriter") -> bool:
    """Whether an index's build takes a chunked column as it is: a plain column (no
    expression, no function) and an aggregator that says so."""
    d = iw.im.definition
    return d.expression is None and d.expr_func is None and iw.agg.takes_chunked


#: An index file's buffers are compressed (Arrow IPC's own buffer compression, which
#: every Arrow reader undoes: the filter bytes read back are the same) when zstd
#: shrinks its first chunk to at most this fraction. Sparse filters (fixed-size
#: filters of few tokens) shrink 10-30x; filters sized for their fpp are near half
#: full and shrink 0-25 %, saturated ones not at all.
INDEX_COMPRESS_MAX_RATIO = 0.85
INDEX_CODEC = "zstd"


def index_compression(t: pa.Table) -> str | None:
    """The codec for an index file whose (first) chunk is `t`: :data:`INDEX_CODEC` where it pays."""
    raw = packed = 0
    for col in t.columns:
        for chunk in col.chunks:
            for b in chunk.buffers():
                if b is None or b.size == 0:
                    continue
                b = b.slice(0, min(b.size, 1 << 20))   # a sample of a large buffer decides
                raw += b.size
                packed += pa.compress(b, codec=INDEX_CODEC, asbytes=False).size
    return INDEX_CODEC if raw and packed <= INDEX_COMPRESS_MAX_RATIO * raw else None


def _ipc_options(codec: str | None) -> pa.ipc.IpcWriteOptions:
    return pa.ipc.IpcWriteOptions(compression=codec)


class _IndexWriter:
    """Builds one index chunk by chunk (whole index granules at a time) into
    an Arrow IPC file: one record batch group per chunk."""

    def __init__(self, path: str, part_name: str, im: IndexMeta, arrow_type: pa.DataType,
                 threads: int | None = None, seal: tuple[str, bytes, str] | None = None,
                 expected_rows: int | None = None, index_granularity: int = 1) -> None:
        idx = index_from_meta(im.definition, arrow_type, im.params)
        #: (key id, data key, wrapped data key) of a sensitive column's index:
        #: its chunks are kept and sealed as one table on close
        self.seal = seal
        self._chunks: list[pa.Table] = []
        # a third-party index type whose aggregator takes no thread count is asked without one
        self.agg = idx.aggregator(threads=threads) if threads is not None and _takes_threads(idx) \
            else idx.aggregator()
        # a whole-part aggregator (the text index's dictionary) gathers every chunk
        # (``add``) and is written once at close (``finish``)
        self.whole_part = self.agg.whole_part
        # group summaries for parts of many index granules (or of a size not known up front);
        # never for a sensitive column's index (a summary would be stored unsealed)
        if seal is not None or (expected_rows is not None and -(-int(expected_rows) // max(
                1, index_granularity * im.definition.granularity)) < SUMMARY_MIN_GRANULES):
            self.agg.set_summaries(False)
        self.im = im
        self.path = path
        self.part_name = part_name
        self.sink = pa.OSFile(path, "wb")
        self.writer: pa.ipc.RecordBatchFileWriter | None = None
        self.schema: pa.Schema | None = None
        self.zones = 0
        #: the IPC buffer codec of this file (None: uncompressed), chosen from its first chunk
        self.compression: str | None = None

    def write(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray, row0: int) -> None:
        """Index `values` (rows starting at part row `row0`); zones relative to `values`."""
        if self.whole_part:
            self.agg.add(values, zone_start, zone_length, row0)
            self.zones += int(zone_start.shape[0])
            return
        g = self.agg.build(values, zone_start, zone_length)
        g.zone_start = np.asarray(g.zone_start, dtype=np.int64) + row0
        t = g.to_arrow(self.part_name)
        if self.seal is not None:
            self._chunks.append(t)
            self.zones += int(zone_start.shape[0])
            return
        if self.writer is None:
            self.schema = t.schema
            self.compression = index_compression(t)
            self.writer = pa.ipc.new_file(self.sink, self.schema, options=_ipc_options(self.compression))
        elif not t.schema.equals(self.schema, check_metadata=False):
            t = t.cast(self.schema)
        # the chunk's group summaries ride on its first record batch (zones relative to it)
        summary = g.summary_metadata()
        for k, batch in enumerate(t.replace_schema_metadata(self.schema.metadata).to_batches()):
            self.writer.write_batch(batch, custom_metadata=summary if k == 0 else None)
        self.zones += int(zone_start.shape[0])

    def close(self, complete: bool = True) -> None:
        t = None
        if complete and self.whole_part and self.writer is None:
            t = self.agg.finish().to_arrow(self.part_name)
        elif complete and self.seal is not None and self._chunks:
            first = self._chunks[0].schema
            t = pa.concat_tables([c if c.schema.equals(first, check_metadata=False) else c.cast(first)
                                  for c in self._chunks]).replace_schema_metadata(first.metadata)
        self._chunks = []
        if t is not None:
            if self.seal is not None:
                t = seal_index_table(t, self.seal[1], self.seal[0], self.seal[2])
            else:
                self.compression = index_compression(t)
            self.writer = pa.ipc.new_file(self.sink, t.schema, options=_ipc_options(self.compression))
            self.writer.write_table(t)
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
    `build_threads`: threads each index build may use (None: the index
    type's default, e.g. ``SKIPIDX_BUILD_THREADS`` or the machine's cores).
    `threads`: how many of a chunk's writes (the data file, each index) run
    at once (None: the cores this process may use; 1: one after the other);
    the files are the same either way. `expected_rows`: the part's rows when known up
    front; parts of fewer than ``SUMMARY_MIN_GRANULES`` index granules get no group
    summaries (unknown: they do). `large_merge`: the part merges sources of at least
    ``metadata.LARGE_MERGE_BYTES`` (see ``TableMeta.parquet_compression``).
    """

    def __init__(self, part_dir: str, meta: TableMeta, part_name: str, *, level: int = 0,
                 indexes: Sequence[IndexMeta] | None = None, reuse: dict[str, str] | None = None,
                 reuse_sums: dict[str, dict] | None = None,
                 reuse_layout: tuple[list[int], list[list[int]]] | None = None,
                 build_threads: int | None = None, keyring: KeyRing | None = None,
                 threads: int | None = None, expected_rows: int | None = None,
                 large_merge: bool = False, plan: "EncodingPlan | None" = None) -> None:
        from skipidx.core.threads import resolve_threads

        self.dir = part_dir
        #: a merge of large parts: default-codec columns compress as ClickHouse's (zstd)
        self.large_merge = large_merge
        #: the encodings of an insert's first part, shared with its other parts
        self._plan = plan
        self.threads = resolve_threads(threads)
        self._pool = None
        self.keyring = keyring
        # sensitive columns: the manifest's "encryption" entry and a fresh data
        # key per key id for this part's index files (stored wrapped)
        self._enc = meta.encryption
        self._dek: dict[str, tuple[bytes, str]] = {}
        if self._enc is not None:
            ring = keyring if keyring is not None else KeyRing(None)
            for kid in [self._enc[0], *sorted(set(self._enc[1].values()))]:
                if kid not in self._dek:
                    self._dek[kid] = ring.new_key(kid)
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
        #: {column: Parquet encoding} of the columns not written PLAIN (None: not known)
        self.column_encodings: dict[str, str] | None = None
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
                kid = self._enc[1].get(col.name) if self._enc is not None else None
                seal = (kid, *self._dek[kid]) if kid is not None else None
                self._iw[im.name] = _IndexWriter(os.path.join(part_dir, fname), part_name, im, col.type.arrow_type,
                                                build_threads, seal, expected_rows, meta.index_granularity)

    def _open_data(self, sample: pa.Table | None) -> None:
        """Open the Parquet writer, the encodings chosen from `sample` (the first chunk)."""
        meta = self.meta
        sorting = [pq.SortingColumn(meta.column_names.index(k), nulls_first=False) for k in meta.order_by]
        # per column: its CODEC, else the table's compression setting
        comp, level = meta.parquet_compression(large=self.large_merge)
        plan = self._plan if sample is not None else None
        chosen = plan.wait() if plan is not None and not plan.first_of(self) else None
        if chosen is not None:
            self.dictionary_columns, self.column_encodings = list(chosen[0]), dict(chosen[1])
        else:
            self.dictionary_columns = (choose_dictionary_columns(meta, sample, self.G)
                                       if sample is not None else [])
            self.column_encodings = (choose_column_encodings(meta, sample, self.G, self.dictionary_columns,
                                                             comp, level)
                                     if sample is not None else {})
            if plan is not None and plan.first_of(self):
                plan.decide((self.dictionary_columns, self.column_encodings) if sample.num_rows >= PLAN_MIN_ROWS
                            else None)
        enc = None
        if self._enc is not None:
            # Parquet modular encryption: footer and each sensitive column
            # under their key ids (data keys random, wrapped in the file)
            by_key: dict[str, list[str]] = {}
            for c, kid in self._enc[1].items():
                by_key.setdefault(kid, []).append(c)
            enc = parquet_encryption(self.keyring.kms, self._enc[0], by_key)
        schema = meta.arrow_schema()
        if sample is not None and enc is None:
            # LowCardinality columns that arrive as Arrow dictionaries are written as they
            # are (conform.dictionary_passthrough_columns); the other chunks are made alike
            for i, c in enumerate(meta.columns):
                t = sample.schema.field(c.name).type
                if c.type.low_cardinality and pa.types.is_dictionary(t):
                    schema = schema.set(i, schema.field(i).with_type(t))
        #: the Arrow schema the Parquet writer takes (every chunk is cast to it)
        self._write_schema = schema
        stored = meta.arrow_schema()
        own_schema = not schema.equals(stored)
        self._pw = pq.ParquetWriter(self._data_path, schema,
                                    compression=comp, compression_level=level or None,
                                    use_dictionary=self.dictionary_columns,
                                    column_encoding=self.column_encodings or None,
                                    write_statistics=statistics_columns(meta), encryption_properties=enc,
                                    write_batch_size=write_batch_rows(sample, self.G),
                                    store_schema=not own_schema, sorting_columns=sorting or None)
        if own_schema:
            # the file's stored Arrow schema is the table's (plain strings), as pyarrow
            # would store it: readers get the same columns whatever was handed to the writer
            import base64

            kv = {k.decode(): v.decode() for k, v in (stored.metadata or {}).items()}
            kv["ARROW:schema"] = base64.b64encode(stored.serialize().to_pybytes()).decode()
            self._pw.add_key_value_metadata(kv)

    def merged_index(self, name: str) -> object | None:
        """The aggregator of index `name` when it can take merged postings instead of
        tokenizing (``use_merged``), else None."""
        iw = self._iw.get(name)
        return iw.agg if iw is not None and iw.agg.merges_granules else None

    def _manifest_encryption(self) -> dict | None:
        """The manifest's record of which key protects what in this part's data
        file (no secret: key ids, and data keys only wrapped, which the reader
        unwraps to learn whether the KMS grants a key before pyarrow is asked)."""
        if self._linked_from is not None:
            try:
                with open(os.path.join(os.path.dirname(self._linked_from), MANIFEST), "rb") as f:
                    src = json.loads(f.read()).get("encryption")
            except (OSError, ValueError) as e:
                raise CorruptionError(f"cannot read the linked part's manifest: {e}",
                                      path=self._linked_from) from None
            return src
        if self._enc is None:
            return None
        footer, cols = self._enc
        return {"footer_key": footer, "columns": dict(cols),
                "keys": {kid: self._dek[kid][1] for kid in self._dek}}

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
        if self._writes_data and self._pw is None:
            self._open_data(chunk)
        if self._writes_data and not chunk.schema.equals(self._write_schema, check_metadata=False):
            chunk = _to_schema(chunk, self._write_schema)
        # the data file and each index are independent writes of the same
        # rows (Parquet encoding and the index kernels release the GIL)
        jobs = ([lambda: self._pw.write_table(chunk, row_group_size=self.G)] if self._writes_data else [])
        # a column that several indexes read is made contiguous once per chunk, unless
        # every index of it takes the chunks as they are (streamed inserts arrive chunked)
        combined: dict[str, pa.Array | pa.ChunkedArray] = {}
        for iw in self._iw.values():
            name = iw.im.definition.column
            if iw.im.definition.expression is None and name not in combined:
                col = chunk.column(name)
                if col.num_chunks == 1:
                    combined[name] = col.chunk(0)
                elif all(_takes_chunked(w) for w in self._iw.values() if w.im.definition.column == name
                         and w.im.definition.expression is None):
                    combined[name] = col
                else:
                    combined[name] = col.combine_chunks()
        jobs += [lambda iw=iw: self._write_index(iw, chunk, n, combined) for iw in self._iw.values()]
        if self.threads <= 1 or len(jobs) <= 1:
            for job in jobs:
                job()
        else:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=min(self.threads, 1 + len(self._iw)),
                                                thread_name_prefix="skipidx-write")
            futures = [self._pool.submit(job) for job in jobs]
            err = None
            for f in futures:   # every job ends before the chunk does (no write outlives an error)
                try:
                    f.result()
                except BaseException as e:   # noqa: BLE001 - re-raised below
                    err = err or e
            if err is not None:
                raise err
        self.rows += n

    def _write_index(self, iw: "_IndexWriter", chunk: pa.Table, n: int, combined: dict[str, pa.Array]) -> None:
        im = iw.im
        if im.definition.expression is not None:
            from skipidx.expr.index_expressions import evaluate_index_expression

            arr = evaluate_index_expression(im.definition.expression, chunk, self.meta)
        else:
            arr = combined[im.definition.column]
        if isinstance(arr, pa.ChunkedArray) and not (_takes_chunked(iw) and arr.num_chunks > 1):
            arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
        zl_rows = self.G * im.definition.granularity
        zs = np.arange(0, n, zl_rows, dtype=np.int64)
        zl = np.minimum(zs + zl_rows, n) - zs
        iw.write(index_values(im, arr), zs, zl, self.rows)

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def abort(self) -> None:
        self._close_pool()
        for iw in self._iw.values():
            try:
                iw.close(complete=False)
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
        self._close_pool()
        if self._writes_data and self._pw is None:
            self._open_data(None)   # no rows: an empty file (refused below)
        written = None
        if self._pw is not None:
            self._pw.close()
            if self._enc is None:
                # the footer just written, as the writer built it (no re-read and parse of the file)
                written = self._pw.writer.metadata
            self._pw = None
        crash_point("part:data_written")
        for iw in self._iw.values():
            iw.close()
        if self._linked_from is not None:
            self.dictionary_columns = linked_dictionary_columns(self._linked_from)
            self.column_encodings = linked_column_encodings(self._linked_from)
        # the ORDER BY columns' row-group statistics (not for a linked data file: its
        # source manifest's bytes are not re-read here)
        key_stats: dict = {}
        if self._pw is None and self._reuse_layout is not None:
            # a linked data file: its layout is the source part's (never
            # re-read from bytes that may have been damaged since)
            marks = np.asarray(self._reuse_layout[0], dtype=np.int64)
            spans = [list(x) for x in self._reuse_layout[1]]
        else:
            md = written if written is not None else pq.read_metadata(self._data_path, decryption_properties=(
                self.keyring.parquet_decryption() if self._enc is not None else None))
            rg_rows = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)], dtype=np.int64)
            marks = np.zeros(rg_rows.shape[0] + 1, dtype=np.int64)
            np.cumsum(rg_rows, out=marks[1:])
            if int(marks[-1]) != md.num_rows:
                raise AssertionError("row groups do not add up to the file's rows")
            spans = _row_group_spans(md)
            if self._enc is None:
                # (never for sensitive columns: the footer keeps their statistics encrypted)
                key_stats = key_stats_from_footer(md, self.meta)
        n_rows = int(marks[-1])
        if n_rows == 0:
            raise AssertionError("a part needs at least one row")
        if self._iw and self.rows != n_rows:
            raise AssertionError(f"indexes saw {self.rows} rows, the data file has {n_rows}")
        for name, iw in self._iw.items():
            zs, _ = zones(marks, iw.im.definition.granularity)
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
        enc_entry = self._manifest_encryption()
        if enc_entry is not None:
            manifest["encryption"] = enc_entry
        if self.dictionary_columns is not None:
            # a read hint (Part.read can return these as Arrow dictionaries);
            # absent in parts written before: read decoded
            manifest["dictionary"] = list(self.dictionary_columns)
        if key_stats:
            manifest[KEY_STATS] = key_stats
        if self.column_encodings:
            # what the writer chose per column (the file records it too; readers need nothing)
            manifest["encodings"] = dict(sorted(self.column_encodings.items()))
        raw = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        crash_point("part:before_manifest")
        _commit.write_file_durably(os.path.join(self.dir, MANIFEST), raw)
        fsync_dir(self.dir)
        crash_point("part:manifest_written")
        return manifest


def _to_schema(chunk: pa.Table, schema: pa.Schema) -> pa.Table:
    """`chunk` with each column of another type than `schema` says cast to it (a
    LowCardinality column decoded, or dictionary-encoded, as the part's first chunk had it)."""
    from skipidx.core.lazy import compute as pc

    cols = []
    for f in schema:
        col = chunk.column(f.name)
        if col.type != f.type:
            if pa.types.is_dictionary(f.type):
                col = pc.dictionary_encode(col.cast(f.type.value_type))
                if col.type != f.type:
                    col = col.cast(f.type)
            else:
                col = col.cast(f.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


def write_part(part_dir: str, meta: TableMeta, data: pa.Table | None, part_name: str, *, level: int = 0,
               indexes: Sequence[IndexMeta] | None = None, reuse: dict[str, str] | None = None,
               build_threads: int | None = None, keyring: KeyRing | None = None,
               threads: int | None = None, plan: EncodingPlan | None = None, plan_first: bool = False) -> dict:
    """Write a complete part from one table of rows (conformed and sorted)
    into the empty directory `part_dir`, in chunks of ~INDEX_CHUNK_ROWS rows.
    See :class:`PartWriter` for `indexes`, `reuse`, `build_threads` and `threads`. Returns the manifest."""
    w = PartWriter(part_dir, meta, part_name, level=level, indexes=indexes, reuse=reuse,
                   build_threads=build_threads, keyring=keyring, threads=threads,
                   expected_rows=data.num_rows if data is not None else 0, plan=plan)
    if plan is not None and plan_first:
        plan.claim(w)
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
               level: int = 0, detached: bool = False, prepare: bool = True,
               build_threads: int | None = None, keyring: KeyRing | None = None,
               threads: int | None = None, plan: EncodingPlan | None = None,
               plan_first: bool = False) -> StagedPart:
    """Write `data` as a new staged part of the table at `table_dir`.

    With ``prepare`` the rows are conformed (checked, cast) and sorted here;
    pass ``prepare=False`` for rows that already are. ``detached=True`` is for
    parts written by a process that will not live until the commit (a Spark
    task): cleanup then keeps the staged dir for a day instead of removing it
    as soon as its writer is gone. Publish with
    :func:`skipidx.store.commit.commit_parts`. Needs no Catalog. `build_threads`
    and `threads` as :class:`PartWriter`'s.
    """
    if prepare:
        data = sort_rows(meta, conform(meta, data))
    if data.num_rows == 0:
        raise SkipidxError("cannot build a part of zero rows")
    name = part_name or new_part_name(level)
    staged = _commit.stage_dir(table_dir, name, detached=detached)
    try:
        write_part(staged.path, meta, data, name, level=level, build_threads=build_threads, keyring=keyring,
                   threads=threads, plan=plan, plan_first=plan_first)
    except BaseException:
        staged.discard()
        raise
    staged.rows = data.num_rows
    return staged

