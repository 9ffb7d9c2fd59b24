"""Reading a published part: its manifest, data granules and index granules.

Every byte read is verified against the manifest's checksums (once per
process, :mod:`skipidx.store.checksums`); data files are read through the
reader pool (:mod:`skipidx.store.reader_pool`). Writing a part is
:mod:`skipidx.store.writer`.
"""
from __future__ import annotations

import json
import os
from typing import Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
from pyarrow._parquet import FileMetaData

from skipidx.core.crypto import DecryptionError, open_index_table, sealed_key_id
from skipidx.core.lru import LRU, clear_caches as clear_lru_caches
from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.kms import KeyRing, KeyUnavailableError
from skipidx.indexes.base import IndexGranules, index_from_meta
from skipidx.store import commit as _commit
from skipidx.store.checksums import VERIFIER, FileSum
from skipidx.store.commit import PartEntry
from skipidx.store.encoding import dictionary_readable
from skipidx.store.manifest import DATA_FILE, MANIFEST, PartInfo, key_stats_of, read_manifest, zones
from skipidx.store.metadata import IndexMeta, TableMeta
from skipidx.store.parquet_check import check_footer
from skipidx.store.part_pages import read_dictionary_columns
from skipidx.store.reader_pool import READERS, DataReader, read_footer, release_readers

__all__ = ["Part", "normalize_ranges", "index_fingerprint", "clear_caches", "release_readers"]

#: Parsed Parquet footers by file identity: parsing a footer with many row
#: groups costs ~ms; a part's footer is parsed once per process.
_FOOTERS = LRU(512, "store.footers", "parsed Parquet footers of part data files, by file identity")
#: Index instances that read index files, by definition, column type and
#: params: building one makes (and probes) its tokenizer, which would
#: otherwise be paid for every part loaded.
_UTF8_CHECKED = LRU(4096, "store.checked_strings",
                    "row groups of data files whose String columns were found valid UTF-8, by file and column")
_PAGE_LAYOUTS = LRU(64, "store.string_page_layouts",
                    "page headers of String column chunks of data files (read in place by string_pages), "
                    "by file and column (and ~32 MiB: about 2.7 KB per row group)", max_bytes=32 << 20)
_INDEX_TYPES = LRU(256, "store.index_types", "index instances for reading index files, by definition and params")

#: Reads of at least this many row groups use pyarrow's pre-buffering (the
#: column chunks fetched ahead on its I/O threads while earlier ones decode);
#: smaller reads do not: the hand-off to the I/O threads costs more than it
#: overlaps (bench/bench_store.py).
PRE_BUFFER_MIN_ROW_GROUPS = 8

#: Per TableMeta object (id, with the object held so the id is not reused
#: while cached): its column names as a set and its Arrow schema, built once
#: per meta instead of once per read; metas are frozen and the table state
#: cache hands the same object to every snapshot of a state.
_META_DERIVED = LRU(256, "store.table_meta", "column-name set and Arrow schema per TableMeta object")


def _meta_derived(meta: TableMeta) -> tuple[frozenset, pa.Schema]:
    hit = _META_DERIVED.get(id(meta))
    if hit is not None and hit[0] is meta:
        return hit[1], hit[2]
    names, schema = frozenset(meta.column_names), meta.arrow_schema()
    _META_DERIVED.put(id(meta), (meta, names, schema))
    return names, schema


#: Parsed manifests (:class:`PartInfo`) by (part dir, manifest checksum):
#: parts are immutable, so a snapshot does not re-parse or re-validate the
#: manifests an earlier one already read; a different manifest (another
#: checksum in the table state) is another key.
_MANIFESTS = LRU(4096, "store.manifests", "parsed part manifests, by (part dir, manifest checksum)")

#: Index fingerprints by IndexMeta object (id), with the object itself held so
#: the id cannot be reused while the entry lives: a fingerprint is a SHA-256
#: over the index's JSON, and every granule of every part asks for it.
_FINGERPRINTS = LRU(1024, "store.fingerprints", "index fingerprints per IndexMeta object")


def index_fingerprint(im: IndexMeta) -> str:
    """``im.fingerprint()``, computed once per IndexMeta object (metas are frozen)."""
    hit = _FINGERPRINTS.get(id(im))
    if hit is not None and hit[0] is im:
        return hit[1]
    fp = im.fingerprint()
    _FINGERPRINTS.put(id(im), (im, fp))
    return fp


def clear_caches() -> None:
    """Forget verified checksums, pooled readers and every parsed or derived value
    (:func:`skipidx.core.lru.clear_caches`), as a new process would."""
    VERIFIER.forget()
    READERS.clear()
    clear_lru_caches()


def granules_from_table(table: pa.Table, meta: TableMeta, im: IndexMeta, marks: np.ndarray, path: str, *,
                        what: str = "index table", unit: str = "the part's granules") -> IndexGranules:
    """Index `im`'s granules from its zone table (read from `path`), checked against the
    zones `marks` gives; CorruptionError naming `path` when the table is damaged or its
    zones are not those (`what` and `unit` name the file and the granules in the message)."""
    col = meta.column(im.definition.column)
    inst = _index_instance(im, col.type.arrow_type)
    try:
        g = inst.granules_from_arrow(table)
    except CorruptionError as ex:
        raise CorruptionError(ex.message, path=path) from None
    except SkipidxError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, pa.ArrowException) as ex:
        raise CorruptionError(f"damaged {what} ({type(ex).__name__}: {ex})", path=path) from None
    zs, zl = zones(marks, im.definition.granularity)
    if (len(g) != zs.shape[0] or not np.array_equal(np.asarray(g.zone_start, dtype=np.int64), zs)
            or not np.array_equal(np.asarray(g.zone_length, dtype=np.int64), zl)):
        raise CorruptionError(f"{what.split()[0]} zones do not match {unit}", path=path)
    return g


def _read_whole(path: str) -> pa.Buffer:
    with pa.OSFile(path, "r") as src:
        return src.read_buffer()


def _has_utf8(t: pa.DataType) -> bool:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return True
    if pa.types.is_dictionary(t):
        return _has_utf8(t.value_type)
    return any(_has_utf8(t.field(i).type) for i in range(t.num_fields))


def check_utf8(t: pa.Table, part: str, path: str, seen: tuple | None = None) -> None:
    """CorruptionError naming the part and file when a String value read is
    not UTF-8. pyarrow's Parquet reader does not check it, and the bytes would
    pass every kernel and fail only where a value becomes a Python str, far
    from the file; no skipidx writer makes such a file. A dictionary column
    checks its distinct values only. `seen`: (file identity, row groups in the
    file, row groups read): each row group's columns are checked once per
    process (parts are immutable), so repeated scans pay nothing."""
    for i, f in enumerate(t.schema):
        if not _has_utf8(f.type):
            continue
        done = None
        if seen is not None:
            ident, n, rgs = seen
            done = _UTF8_CHECKED.get((ident, f.name))
            if done is None or done.shape[0] != n:
                done = np.zeros(n, dtype=bool)
            elif done[rgs].all():
                continue
        try:
            t.column(i).validate(full=True)
        except (pa.ArrowException, ValueError):
            raise CorruptionError(f"part {part}: column {f.name!r} holds a String value that is not "
                                  "valid UTF-8", path=path) from None
        if done is not None:
            done[rgs] = True
            _UTF8_CHECKED.put((ident, f.name), done)


def _index_instance(im: IndexMeta, arrow_type: pa.DataType):
    try:
        key = (im.definition, str(arrow_type), json.dumps(im.params, sort_keys=True, default=repr))
        hash(key)
    except TypeError:
        return index_from_meta(im.definition, arrow_type, im.params)
    inst = _INDEX_TYPES.get(key)
    if inst is None:
        inst = index_from_meta(im.definition, arrow_type, im.params)
        _INDEX_TYPES.put(key, inst)
    return inst


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

    #: rows of the data file a reader must not return (Iceberg deletes); a part has none
    deleted_rows: int = 0

    def __init__(self, table_dir: str, entry: PartEntry, meta: TableMeta, *,
                 keyring: KeyRing | None = None) -> None:
        self.table_dir = table_dir
        #: the connection's keys (sensitive columns); None: no KMS client
        self.keyring = keyring
        self.name = entry.name
        self.path = os.path.join(table_dir, _commit.PARTS_DIR, entry.name)
        self.num_rows = entry.rows
        self.meta = meta
        self._entry = entry
        self._info: PartInfo | None = None

    def __repr__(self) -> str:
        return f"Part({self.name!r}, rows={self.num_rows})"

    # ---- manifest-derived ------------------------------------------------
    @property
    def _part_info(self) -> PartInfo:
        if self._info is None:
            key = (self.path, self._entry.manifest_hash)
            info = _MANIFESTS.get(key)
            if info is None:
                m, _ = read_manifest(self.path, self._entry.manifest_hash)
                if m["part"] != self.name or m["rows"] != self.num_rows:
                    raise CorruptionError("part manifest does not match the table state",
                                          path=os.path.join(self.path, MANIFEST))
                info = PartInfo(m)
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
            self.require_keys(missing)
            key, pf = self._data_reader(pooled=True)
            path = os.path.join(self.path, DATA_FILE)
            try:
                md = pf.metadata
            finally:
                READERS.give(key, pf, path)
            pos = {md.schema.column(j).name: j for j in range(md.num_columns)}
            n = md.num_row_groups
            sample = sorted({int(i) for i in np.linspace(0, n - 1, min(n, 32))}) if n else []
            for c in missing:
                j = pos.get(c)
                tot = sum(md.row_group(i).column(j).total_compressed_size for i in sample) if j is not None else 0
                cache[c] = tot / max(1, len(sample))
        return float(sum(cache[c] for c in columns))

    #: read a WHERE's dictionary-encoded String columns as Arrow dictionaries for reads of at
    #: least this many granules (below, the dictionary path's fixed cost outweighs what
    #: filtering distinct values saves)
    dictionary_min_granules = 2

    #: a reader that skips pages lacking a needle has ``needle_column(needles)`` (external
    #: Parquet files); a part reads whole granules
    needle_column: Callable[[dict], str | None] | None = None

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

    def key_statistics(self, column: str) -> tuple[list, list, np.ndarray] | None:
        """(mins, maxs, null counts) per granule of ORDER BY column `column` as the
        manifest records them (the footer's row-group statistics, written with the
        part); None for a part that does not record them (then read the footer).
        CorruptionError naming the manifest when the entry is malformed."""
        return key_stats_of(self.manifest, column, np.diff(self.marks), os.path.join(self.path, MANIFEST))

    # ---- sensitive columns -------------------------------------------------
    @property
    def encryption(self) -> dict | None:
        """The manifest's "encryption" entry (footer key id, {column: key id},
        wrapped data keys), None for a part without sensitive columns."""
        return self.manifest.get("encryption")

    def require_keys(self, columns: Iterable[str] = ()) -> None:
        """KeyUnavailableError naming the key id unless the KMS grants the
        footer key and the keys of `columns`. Checked before pyarrow touches
        the file: it aborts the process for an encrypted column it has no key for."""
        enc = self.encryption
        if enc is None:
            return
        ring = self.keyring if self.keyring is not None else KeyRing(None)
        try:
            keys, cols = enc["keys"], enc["columns"]
            need = [(None, enc["footer_key"])] + [(c, cols[c]) for c in columns if c in cols]
            for col, kid in need:
                try:
                    ring.unwrap(kid, keys[kid])
                except KeyUnavailableError as e:
                    what = f"column {col!r}" if col is not None else "the data file's footer"
                    raise KeyUnavailableError(kid, f"{what} of table {self.meta.name!r} is encrypted with it; "
                                                   f"{e.reason}") from None
        except (KeyError, TypeError, AttributeError):
            raise CorruptionError("bad encryption entry in the part manifest",
                                  path=os.path.join(self.path, MANIFEST)) from None

    def _decryption(self):
        return self.keyring.parquet_decryption() if self.encryption is not None else None

    def _filesum(self, fname: str) -> FileSum:
        return self._part_info.filesum(fname, os.path.join(self.path, fname))

    # ---- data ------------------------------------------------------------
    def data_metadata(self, columns: Iterable[str] = ()) -> FileMetaData:
        """The data file's footer (row-group statistics) for the pruner; the keys of
        encrypted `columns` are made available first."""
        self.require_keys(list(columns))
        path = os.path.join(self.path, DATA_FILE)
        fs = self._filesum(DATA_FILE)
        ident = VERIFIER._identity(path, fs)
        if self.encryption is not None:
            ident = ident + ("keys", id(self.keyring))
        return self._footer(path, fs, ident)

    def _open_data(self) -> DataReader:
        """A new reader of the data file (footer verified and parsed once per process)."""
        return self._data_reader()[1]

    def _data_reader(self, pooled: bool = False, pre_buffer: bool = True,
                     read_dictionary: tuple[str, ...] = ()) -> tuple[tuple, DataReader]:
        """(pool key, reader). `pooled`: an idle reader of the same file (and
        `pre_buffer` mode and `read_dictionary` columns) from :data:`READERS` if there is one; a new one
        otherwise -- either way on loan: give it back with
        ``READERS.give(key, reader, path)`` or close it with
        ``READERS.discard(reader, path)`` (path: the data file's)."""
        path = os.path.join(self.path, DATA_FILE)
        fs = self._filesum(DATA_FILE)
        ident = VERIFIER._identity(path, fs)
        if self.encryption is not None:
            # footers and readers of an encrypted file carry one connection's keys
            self.require_keys()
            ident = ident + ("keys", id(self.keyring))
        key = ident + (bool(pre_buffer), read_dictionary)
        if pooled:
            pf = READERS.take(key, path)
            if pf is not None:
                return key, pf
            try:
                return key, self._new_reader(path, fs, ident, pre_buffer, read_dictionary)
            except BaseException:
                READERS.cancel(path)   # end the loan taken above
                raise
        return key, self._new_reader(path, fs, ident, pre_buffer, read_dictionary)

    def _new_reader(self, path: str, fs: FileSum, ident: tuple, pre_buffer: bool,
                    read_dictionary: tuple[str, ...] = ()) -> DataReader:
        """A new reader of data file `path` (identity `ident`) over its memory mapping."""
        md = self._footer(path, fs, ident)
        try:
            # The file memory-mapped and read as one in-memory buffer: Arrow
            # reads a buffer synchronously, while from a file object every
            # column chunk goes through its I/O executor (a thread hand-off
            # per chunk), and from a path it resolves the file system on every
            # open. Parts are immutable, so the mapping never sees a change;
            # an unlinked part stays readable while mapped. A truncation by an
            # outside actor racing a read of the mapping raises SIGBUS (the
            # size check in VERIFIER._identity catches one made before). The
            # pool closes readers of retired parts (release_readers, sweep).
            with pa.memory_map(path, "r") as mm:
                buf = mm.read_buffer()    # zero-copy: keeps the mapping alive
            return DataReader(pa.BufferReader(buf), metadata=md, pre_buffer=pre_buffer,
                              read_dictionary=list(read_dictionary) or None,
                              decryption_properties=self._decryption(), buffer=buf)
        except (OSError, pa.ArrowException, ValueError) as e:   # ValueError: undecodable names
            raise CorruptionError(f"cannot open Parquet file: {type(e).__name__}", path=path) from None

    def _footer(self, path: str, fs: FileSum, ident: tuple) -> FileMetaData:
        """The data file's footer, verified, checked and parsed once per file identity."""
        md = _FOOTERS.get(ident)
        if md is None:
            spans = self.manifest["row_groups"]
            # the leading magic and the footer: everything outside the row groups
            VERIFIER.verify(path, fs, 0, spans[0][0])
            VERIFIER.verify(path, fs, spans[-1][1], fs.size)
            # pyarrow aborts the process on some footers its parser accepts
            # (see store/parquet_check): decoded and checked here first
            check_footer(path, fs.size)
            try:
                md = read_footer(path, decryption_properties=self._decryption())
            except (OSError, pa.ArrowException, ValueError) as e:
                raise CorruptionError(f"unreadable Parquet footer: {type(e).__name__}", path=path) from None
            if md.num_row_groups != self.n_granules or md.num_rows != self.num_rows:
                raise CorruptionError("Parquet footer does not match the part manifest", path=path)
            _FOOTERS.put(ident, md)
        return md

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
            rgs.extend(range(a, b))
        if ranges:
            VERIFIER.verify_spans(path, fs, [(spans[a][0], spans[b - 1][1]) for a, b in ranges])
        if not rgs:
            return schema.empty_table().select(cols)
        self.require_keys(cols)
        as_dict = tuple(c for c in cols if c in dictionary and c in self.dictionary_columns
                        and dictionary_readable(schema.field(c).type)) if dictionary else ()
        key, pf = self._data_reader(pooled=True, pre_buffer=len(rgs) >= PRE_BUFFER_MIN_ROW_GROUPS,
                                    read_dictionary=as_dict)
        t = None
        if as_dict and len(as_dict) == len(cols) and self.encryption is None and pf.buffer is not None:
            try:
                t = self._read_dictionaries(path, fs, key[:4], pf.buffer, rgs, cols, schema)
            except BaseException:
                READERS.discard(pf, path)
                raise
            if t is not None:
                READERS.give(key, pf, path)
        if t is None:
            try:
                if use_threads is None:
                    use_threads = len(cols) > 1 and len(rgs) > 1
                t = pf.read_row_groups(rgs, columns=cols, use_threads=use_threads)
            except BaseException as e:
                READERS.discard(pf, path)
                if isinstance(e, (OSError, pa.ArrowException)):
                    raise CorruptionError(f"unreadable Parquet data: {e}", path=path) from None
                raise
            READERS.give(key, pf, path)
        expect = int(sum(int(self.marks[b] - self.marks[a]) for a, b in ranges))
        if t.num_rows != expect:
            raise CorruptionError(f"read {t.num_rows} rows, the manifest says {expect}", path=path)
        check_utf8(t, self.name, path, (key[:4], self.n_granules, rgs))
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

    def _read_dictionaries(self, path: str, fs: FileSum, ident: tuple, buf: pa.Buffer, rgs: list[int],
                           cols: list[str], schema: pa.Schema) -> pa.Table | None:
        """Row groups `rgs` of the dictionary-encoded String columns `cols` as Arrow
        dictionaries, their dictionary pages decoded once per process
        (:mod:`skipidx.store.part_pages`); None where that does not apply."""
        fields = [schema.field(c) for c in cols]
        got = read_dictionary_columns(path, ident, self._footer(path, fs, ident), rgs, fields, buf)
        if got is None:
            return None
        return pa.Table.from_arrays(got, schema=pa.schema(
            [f.with_type(pa.dictionary(pa.int32(), f.type)) for f in fields]))

    def string_pages(self, column: str, mark_ranges: Sequence[tuple[int, int]],
                     visit: Callable[[object], object] | None = None) -> list | None:
        """String column `column` over granules `mark_ranges`, read without building Arrow
        strings: the data pages decompressed and their values' bounds walked
        (:func:`skipidx.store.parquet_pages.string_pages`), one list per range of each
        :class:`~skipidx.store.parquet_pages.StringPage` or, with `visit`, of
        ``visit(page)`` (each page dropped before the next is decompressed, so its memory
        is reused), checksums verified as :meth:`read` does. None where this reader does not apply (the caller then
        uses :meth:`read`): encryption, a dictionary-encoded or non-PLAIN chunk, a
        type that is not a flat String/binary, row groups whose UTF-8 :meth:`read` has
        not yet checked in this process (it checks them), anything that does not add up.
        """
        from skipidx.store import parquet_pages as pp

        names, schema = _meta_derived(self.meta)
        if column not in names or self.encryption is not None or column in self.dictionary_columns:
            return None
        typ = schema.field(column).type
        if not (pa.types.is_string(typ) or pa.types.is_binary(typ)):
            return None
        ranges = normalize_ranges(mark_ranges, self.n_granules)
        if not ranges:
            return None
        path = os.path.join(self.path, DATA_FILE)
        fs = self._filesum(DATA_FILE)
        ident = VERIFIER._identity(path, fs)
        rgs = [g for a, b in ranges for g in range(a, b)]
        if pa.types.is_string(typ):
            done = _UTF8_CHECKED.get((ident, column))
            if done is None or done.shape[0] != self.n_granules or not done[rgs].all():
                return None
        spans = self.manifest["row_groups"]
        VERIFIER.verify_spans(path, fs, [(spans[a][0], spans[b - 1][1]) for a, b in ranges])
        key, pf = self._data_reader(pooled=True)
        try:
            buf = pf.buffer
            md = pf.metadata
            if buf is None:
                return None
            layouts = _PAGE_LAYOUTS.get((ident, column))
            if layouts is None:
                layouts = {}
                _PAGE_LAYOUTS.put((ident, column), layouts, nbytes=2800 * self.n_granules)
            j = next((k for k in range(md.num_columns) if md.schema.column(k).path == column), -1)
            if j < 0 or md.schema.column(j).max_repetition_level:
                return None
            max_def = md.schema.column(j).max_definition_level
            out = []
            for a, b in ranges:
                got = []
                rows = 0
                for g in range(a, b):
                    lay = layouts.get(g)
                    if lay is None:
                        rg = md.row_group(g)
                        lay = layouts[g] = pp.chunk_layout(buf, rg.column(j), rg.num_rows, path)
                    for page in pp.string_pages(buf, lay, max_def):
                        rows += page.rows
                        got.append(page if visit is None else visit(page))
                if rows != int(self.marks[b] - self.marks[a]):
                    return None
                out.append(got)
            return out
        except (SkipidxError, pa.ArrowException, OSError, ValueError, IndexError):
            return None
        finally:
            READERS.give(key, pf, path)

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
        try:
            # Read into memory, not memory-mapped: the loaded granules are
            # cached long after their part may be merged away or dropped, and a
            # mapping would keep the deleted file's disk space allocated. The
            # bytes read are the bytes verified (one read of the file).
            buf = VERIFIER.read_verified(path, fs, _read_whole)
            reader = pa.ipc.open_file(pa.BufferReader(buf))
            batches, pieces, z = [], [], 0
            for i in range(reader.num_record_batches):
                got = reader.get_batch_with_custom_metadata(i)
                batches.append(got.batch)
                md = got.custom_metadata
                pieces.append((z, got.batch.num_rows, dict(md) if md else None))
                z += got.batch.num_rows
            table = pa.Table.from_batches(batches, schema=reader.schema)
            table.validate(full=True)   # offsets/lengths in range before any kernel touches them
        except (OSError, pa.ArrowException, ValueError) as ex:   # ValueError: undecodable field names
            raise CorruptionError(f"unreadable index file: {ex}", path=path) from None
        sealed = sealed_key_id(table)
        if sealed is not None:
            # a sensitive column's index: every module authenticated (a wrong
            # key or a changed byte is an error, never a pruning answer)
            ring = self.keyring if self.keyring is not None else KeyRing(None)
            try:
                dek = ring.unwrap(sealed[0], sealed[1], path)
            except KeyUnavailableError as e:
                raise KeyUnavailableError(sealed[0], f"index {name!r} of table {self.meta.name!r} is encrypted "
                                                     f"with it; {e.reason}", path=path) from None
            table = open_index_table(table, dek, path)
        elif im.definition.column in ((self.encryption or {}).get("columns") or {}):
            raise DecryptionError(f"index {name!r} of sensitive column {im.definition.column!r} is not encrypted",
                                  path=path)
        g = granules_from_table(table, self.meta, im, self.marks, path)
        if sealed is None and any(md for _, _, md in pieces):
            g.attach_summaries(pieces)
        return g

    def index_zones(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(zone_start, zone_length) in rows of index `name`'s granules."""
        return zones(self.marks, self.meta.index(name).definition.granularity)

    def verify(self) -> None:
        """Verify every file of the part in full (CorruptionError naming the first bad one)."""
        for fname in self.manifest["files"]:
            VERIFIER.verify(os.path.join(self.path, fname), self._filesum(fname))
