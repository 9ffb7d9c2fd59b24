"""The process's pool of open Parquet readers of part data files."""
from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from typing import Iterable

import pyarrow as pa
from pyarrow._parquet import FileDecryptionProperties, FileMetaData, ParquetReader

__all__ = ["DataReader", "read_footer", "ReaderPool", "READERS", "release_readers"]


def _open(source: pa.NativeFile, metadata: FileMetaData | None, pre_buffer: bool,
          read_dictionary: list[str] | None, decryption: FileDecryptionProperties | None) -> ParquetReader:
    """Arrow's Parquet reader over `source`, opened with the options ``pyarrow.parquet.ParquetFile`` passes."""
    reader = ParquetReader()
    reader.open(source, use_memory_map=False, buffer_size=0, pre_buffer=pre_buffer,
                read_dictionary=read_dictionary, metadata=metadata, binary_type=None, list_type=None,
                coerce_int96_timestamp_unit=None, decryption_properties=decryption,
                thrift_string_size_limit=None, thrift_container_size_limit=None, schema_depth_limit=None,
                page_checksum_verification=False, arrow_extensions_enabled=True)
    return reader


class DataReader:
    """An open reader of a part's data file: what the store uses of ``pyarrow.parquet.ParquetFile``
    (same reader, options and column selection) without importing ``pyarrow.parquet``, whose
    import (with ``pyarrow.fs`` and its cloud file systems) a query over parts does not need.

    Opened over a buffer it does not own (a memory mapping): ``close()`` leaves it open,
    ``close(force=True)`` closes it, as ParquetFile does for such a source.
    """

    __slots__ = ("reader", "_paths", "buffer")

    def __init__(self, source: pa.BufferReader, *, metadata: FileMetaData | None = None, pre_buffer: bool = True,
                 read_dictionary: list[str] | None = None,
                 decryption_properties: FileDecryptionProperties | None = None,
                 buffer: pa.Buffer | None = None) -> None:
        self.reader = _open(source, metadata, pre_buffer, read_dictionary, decryption_properties)
        #: the whole file's bytes `source` reads (a memory map), for page-level reads; None: unknown
        self.buffer = buffer
        # ParquetFile's column selection: a name selects the leaf columns under it ('a' -> 'a.b', 'a.c.d')
        paths: dict[str, list[int]] = {}
        for i, path in enumerate(self.reader.column_paths):
            key = path[0]
            paths.setdefault(key, []).append(i)
            for part in path[1:]:
                key = key + "." + part
                paths.setdefault(key, []).append(i)
        self._paths = paths

    @property
    def metadata(self) -> FileMetaData:
        return self.reader.metadata

    @property
    def schema_arrow(self) -> pa.Schema:
        return self.reader.schema_arrow

    @property
    def num_row_groups(self) -> int:
        return self.reader.num_row_groups

    def _indices(self, columns: list[str] | None) -> list[int] | None:
        if columns is None:
            return None
        out: list[int] = []
        for c in columns:
            out.extend(self._paths.get(c, ()))
        return out

    def read_row_groups(self, row_groups: list[int], columns: list[str] | None = None,
                        use_threads: bool = True) -> pa.Table:
        return self.reader.read_row_groups(row_groups, column_indices=self._indices(columns), use_threads=use_threads)

    def read_row_group(self, i: int, columns: list[str] | None = None, use_threads: bool = True) -> pa.Table:
        return self.reader.read_row_group(i, column_indices=self._indices(columns), use_threads=use_threads)

    def close(self, force: bool = False) -> None:
        if force:
            self.reader.close()

    @property
    def closed(self) -> bool:
        return self.reader.closed


def read_footer(path: str, decryption_properties: FileDecryptionProperties | None = None) -> FileMetaData:
    """The footer of the Parquet file at `path`, as ``pyarrow.parquet.read_metadata(path)`` reads it."""
    with pa.OSFile(path, "r") as f:
        return _open(f, None, True, None, decryption_properties).metadata


#: Called by every :meth:`ReaderPool.sweep`: other holders of open files (the table states
#: store/commit.py keeps) let go of the ones deleted or replaced meanwhile, at the same pace.
SWEEP_HOOKS: list = []
#: Called by :func:`release_readers` with its directories (being retired or deleted).
EVICT_HOOKS: list = []


class ReaderPool:
    """Idle open readers (:class:`DataReader` over a memory-mapped file) by data-file identity.

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
    :attr:`SWEEP_INTERVAL_S`: one ``os.stat`` per pooled file, small beside
    the reads of that second (each read already stats its own file for the key).
    """

    #: seconds between two sweeps for files deleted or replaced by other processes
    SWEEP_INTERVAL_S = 1.0

    # at most max_files x per_file open descriptors (128 by default): well
    # under the usual 1024 limit whatever the number of parts
    def __init__(self, max_files: int = 64, per_file: int = 2) -> None:
        self.max_files = max_files
        self.per_file = per_file
        self._idle: "OrderedDict[tuple, list[DataReader]]" = OrderedDict()
        self._paths: dict[tuple, str] = {}      # key -> file path (for evict / sweep)
        self._busy: dict[str, int] = {}         # path -> readers checked out (or being opened)
        self._doomed: set[str] = set()          # busy paths evicted: close their readers on give
        self._lock = threading.Lock()
        self._next_sweep = time.monotonic() + self.SWEEP_INTERVAL_S

    def take(self, key: tuple, path: str | None = None) -> DataReader | None:
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

    def give(self, key: tuple, pf: DataReader, path: str | None = None) -> None:
        """Return a reader (taken or newly opened) for `key`; `path` as given to :meth:`take`."""
        drop: list[DataReader] = []
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

    def discard(self, pf: DataReader, path: str | None = None) -> None:
        """Close a reader (not given back); `path` ends its loan as :meth:`give` would."""
        if path is not None:
            with self._lock:
                self._release(path)
        try:
            pf.close(force=True)   # force: the reader does not own a file object it was given
        except Exception:  # closing is best effort: the file is garbage either way
            pass

    def _drop_keys(self, keys: Iterable[tuple]) -> list[DataReader]:
        """Remove `keys` from the pool (lock held); their idle readers."""
        out: list[DataReader] = []
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
        another file now (deleted or replaced by another process). Returns how many.
        The :data:`SWEEP_HOOKS` run first (other files the process holds open)."""
        for hook in SWEEP_HOOKS:
            hook()
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


READERS = ReaderPool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=READERS._after_fork)


def release_readers(dirs: Iterable[str]) -> int:
    """Close this process's pooled readers of files under `dirs` (part or
    table directories being retired or deleted), so their memory mappings do
    not keep deleted files' disk space allocated. Readers in use are closed
    when their read ends. Returns the idle readers closed. The :data:`EVICT_HOOKS` let
    go of the other files they hold under `dirs`."""
    dirs = list(dirs)
    for hook in EVICT_HOOKS:
        hook(dirs)
    return READERS.evict(dirs)

