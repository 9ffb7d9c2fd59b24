"""The database directory: list, create, drop and open tables.

Table names are identifiers (:func:`check_identifier`), so a name can never
point outside the database directory. A table is created in a hidden
temporary directory and renamed into place (atomic); a dropped table is first
renamed to a hidden name (atomic), then removed. Both run under the
catalog's flock, and hidden leftovers of a crash are removed on open.

The directory is the engine's own only where it made something: the hidden
names are ``.skipidx-tmp-*`` / ``.skipidx-dropped-*`` and a leftover is
removed only when it is a real directory holding the marker file every table
directory is created with (:data:`TABLE_MARK`). Anything else in the database
directory -- a user's file, a symbolic link -- is never removed or followed.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import sys
from typing import TYPE_CHECKING

from skipidx.core.errors import SkipidxError
from skipidx.core.kms import KeyRing
from skipidx.store import commit as _commit
from skipidx.store.commit import (TableGoneError, TableState, check_layout, fsync_dir, new_table_id, os_error,
                                  write_file_durably, write_state)
from skipidx.store.metadata import TableMeta, check_identifier
from skipidx.store.reader_pool import release_readers
from skipidx.store.table import Table

from skipidx.core.lazy import kernels as _lazy_module

#: rmtree on cleanup paths only: a process that only reads does not import it
shutil = _lazy_module("shutil")

if TYPE_CHECKING:
    from skipidx.store.external import ExternalTable

__all__ = ["Catalog"]

CATALOG_LOCK = ".catalog.lock"
TABLE_MARK = _commit.TABLE_MARK
EXTERNAL_STATE = _commit.EXTERNAL_STATE
_TMP_PREFIX = ".skipidx-tmp-"
_DROPPED_PREFIX = ".skipidx-dropped-"
_LEFTOVER = re.compile(r"^\.skipidx-(tmp|dropped)-[A-Za-z0-9_]{1,128}-[0-9a-f]{8}$")


class _CatalogLock:
    def __init__(self, root: str) -> None:
        self.path = os.path.join(root, CATALOG_LOCK)

    def __enter__(self) -> "_CatalogLock":
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise SkipidxError("the catalog lock is a symbolic link; skipidx does not follow symbolic "
                                   "links inside the database directory", path=self.path) from None
            raise os_error(e, self.path) from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.fd)


class Catalog:
    """A database directory (created if missing)."""

    def __init__(self, path: str, *, keyring: KeyRing | None = None) -> None:
        self.path = os.path.abspath(str(path))
        #: the connection's keys for tables with sensitive columns
        self.keyring = keyring
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as e:
            raise SkipidxError(f"cannot create database directory: {e.strerror}", path=self.path) from None
        if not os.path.isdir(self.path):
            raise SkipidxError("not a directory", path=self.path)
        self._tables: dict[str, Table] = {}
        with _CatalogLock(self.path):
            left = [os.path.join(self.path, n) for n in os.listdir(self.path) if _LEFTOVER.match(n)]
            removed = []
            for p in left:
                if not _is_real_dir(p):
                    continue
                if os.path.lexists(os.path.join(p, TABLE_MARK)):
                    shutil.rmtree(p, ignore_errors=True)
                    removed.append(p)
                else:
                    try:
                        os.rmdir(p)   # a crash right after mkdir: empty, so surely ours
                    except OSError:
                        pass
            release_readers(removed)

    def _dir(self, name: str) -> str:
        return os.path.join(self.path, check_identifier(name, "table"))

    def list_tables(self) -> list[str]:
        """Names of the tables, sorted."""
        out = []
        for n in os.listdir(self.path):
            if n.startswith("."):
                continue
            try:
                check_identifier(n, "table")
            except SkipidxError:
                continue
            if _is_real_dir(os.path.join(self.path, n)) and self._has_state(os.path.join(self.path, n)):
                out.append(n)
        return sorted(out)

    @staticmethod
    def _has_state(d: str) -> bool:
        """A table directory: its state, its backup or skipidx's marker is there
        (damaged or not: a damaged table is still a table, to repair or drop)."""
        return (os.path.lexists(os.path.join(d, _commit.STATE_FILE))
                or os.path.lexists(os.path.join(d, _commit.BACKUP_FILE))
                or os.path.lexists(os.path.join(d, TABLE_MARK))
                or os.path.lexists(os.path.join(d, EXTERNAL_STATE)))

    def exists(self, name: str) -> bool:
        return self._has_state(self._dir(name))

    def create_table(self, meta: TableMeta, if_not_exists: bool = False) -> Table | None:
        """Create a table from validated `meta`; returns it (None when it
        existed and `if_not_exists`)."""
        meta.validate()
        if meta.encryption is not None:
            # every key id must be one the KMS grants now: a typo fails here,
            # not at the first insert
            ring = self.keyring if self.keyring is not None else KeyRing(None)
            footer, cols = meta.encryption
            for kid in [footer, *sorted(set(cols.values()))]:
                ring.new_key(kid)
        def fill(tmp: str) -> None:
            for d in (_commit.PARTS_DIR, _commit.TMP_DIR, _commit.READERS_DIR):
                os.mkdir(os.path.join(tmp, d))
            write_state(tmp, TableState(0, meta, table_id=new_table_id()))

        if not self._publish_table_dir(meta.name, if_not_exists, fill)[0]:
            return None
        return self.table(meta.name)

    def _publish_table_dir(self, name: str, if_not_exists: bool, fill) -> tuple[bool, object]:
        """Create table `name`'s directory atomically: `fill(tmp)` writes its contents into a
        staging directory, which is renamed into place under the catalog lock. (False, None)
        when it exists and `if_not_exists`; else (True, what `fill` returned)."""
        target = self._dir(name)
        with _CatalogLock(self.path):
            if os.path.lexists(target):
                if if_not_exists:
                    return False, None
                if not self._has_state(target):
                    # not a table: a user's file or directory is never replaced
                    raise SkipidxError(f"cannot create table {name!r}: an entry of that name that "
                                       "skipidx did not create is in the database directory", path=target)
                raise SkipidxError(f"table {name!r} already exists")
            tmp = os.path.join(self.path, f"{_TMP_PREFIX}{name}-{os.urandom(4).hex()}")
            try:
                os.mkdir(tmp)
            except OSError as e:
                raise os_error(e, tmp) from None
            try:
                write_file_durably(os.path.join(tmp, TABLE_MARK), b"skipidx table directory\n")
                out = fill(tmp)
                fsync_dir(tmp)
                os.rename(tmp, target)
                fsync_dir(self.path)
            except BaseException as e:
                shutil.rmtree(tmp, ignore_errors=True)
                if isinstance(e, OSError):
                    raise os_error(e, tmp) from None
                raise
        return True, out

    def create_external_table(self, meta: TableMeta, source: str, partition_columns: list[str],
                              if_not_exists: bool = False, builder=None, create=None):
        """Create an external table (ENGINE = ParquetFiles) over the files of glob `source`
        and index them; (table, refresh report), or (None, None) when it existed and
        `if_not_exists`. Only metadata and sidecars are written, into the table directory."""
        meta.validate()
        if meta.encryption is not None:
            raise SkipidxError("encrypted_columns / footer_key are for MergeTree tables: an external "
                               "table never writes its Parquet files")
        # `create(tmp)` fills the directory for another engine (store.iceberg.create_iceberg_table)
        created, report = self._publish_table_dir(
            meta.name, if_not_exists,
            create or (lambda tmp: _external().create_external_table(tmp, meta, source, partition_columns, builder)))
        if not created:
            return None, None
        return self.table(meta.name), report

    def drop_table(self, name: str, if_exists: bool = False) -> bool:
        """Drop a table; False if it did not exist and `if_exists` (an external
        table's data files stay where they are: only its directory goes)."""
        target = self._dir(name)
        with _CatalogLock(self.path):
            if not self._has_state(target):
                if if_exists:
                    return False
                raise self._unknown(name)
            # a symbolic link is refused, not followed: deleting through it
            # would delete outside the database directory
            if os.path.lexists(os.path.join(target, EXTERNAL_STATE)):
                _commit.check_real_dir(target, missing_ok=False)
            else:
                check_layout(target)
            from skipidx.store.merge import stop_merges

            stop_merges(target)   # this process's background merge of it, if any
            _commit.forget_state(target)   # (no descriptor of ours left in the directory removed below)
            with _commit.WriteLock(target):
                gone = os.path.join(self.path, f"{_DROPPED_PREFIX}{name}-{os.urandom(4).hex()}")
                if not os.path.lexists(os.path.join(target, TABLE_MARK)):
                    # a table made before the marker existed: mark it, so a
                    # crash before the removal leaves a recognisable leftover
                    write_file_durably(os.path.join(target, TABLE_MARK), b"skipidx table directory\n")
                os.rename(target, gone)
            fsync_dir(self.path)
            self._tables.pop(name, None)
            shutil.rmtree(gone, ignore_errors=True)
            # pooled readers know the files by their path before the rename;
            # evicted after the deletion (none can be taken after it), under
            # the catalog lock (no new table of that name meanwhile)
            release_readers([target, gone])
        return True

    def table(self, name: str) -> Table:
        """Open table `name`; SkipidxError listing the known tables if unknown."""
        d = self._dir(name)
        t = self._tables.get(name)
        ext = sys.modules.get("skipidx.store.external")   # no ExternalTable exists before its import
        if ext is not None and isinstance(t, ext.ExternalTable):
            if os.path.isfile(os.path.join(d, EXTERNAL_STATE)):
                return t
            self._tables.pop(name, None)
            t = None
        if os.path.isfile(os.path.join(d, EXTERNAL_STATE)):
            _commit.check_real_dir(d, missing_ok=False)
            t = open_external(d)
            self._tables[name] = t
            return t
        if t is not None:
            try:
                if _commit.read_state(d).table_id == t.table_id:
                    return t
            except TableGoneError:
                self._tables.pop(name, None)
                raise self._unknown(name) from None
            # dropped and created again (by another Database or process)
        if not self._has_state(d):
            raise self._unknown(name)
        t = Table(d, keyring=self.keyring)
        self._tables[name] = t
        return t

    def repair_table(self, name: str) -> str:
        """Make a table whose state.json is damaged readable again
        (``ALTER TABLE t ATTACH PARTS``); returns what was done."""
        from skipidx.store.repair import repair_table

        d = self._dir(name)
        with _CatalogLock(self.path):
            if not self._has_state(d):
                raise self._unknown(name)
            check_layout(d)
            self._tables.pop(name, None)
            return repair_table(d)

    def _unknown(self, name: str) -> SkipidxError:
        from skipidx.core.hints import did_you_mean

        tables = self.list_tables()
        known = ", ".join(tables) or "none"
        return SkipidxError(f"unknown table {name!r}{did_you_mean(name, tables)}; tables: {known}")

    def __repr__(self) -> str:
        return f"Catalog({self.path!r})"


def _external():
    # imported when an external table is touched: a MergeTree query does not need it
    from skipidx.store import external

    return external


def open_external(table_dir: str) -> ExternalTable:
    """The external table in `table_dir`, as the class of its engine."""
    ext = _external()
    if ext._read_state(table_dir).engine == ext.ENGINE:
        return ext.ExternalTable(table_dir)
    from skipidx.store.iceberg import IcebergTable

    return IcebergTable(table_dir)


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
