"""The database directory: list, create, drop and open tables.

Table names are identifiers (:func:`check_identifier`), so a name can never
point outside the database directory. A table is created in a hidden
temporary directory and renamed into place (atomic); a dropped table is first
renamed to a hidden name (atomic), then removed. Both run under the
catalog's flock, and hidden leftovers of a crash are removed on open.
"""
from __future__ import annotations

import fcntl
import os
import secrets
import shutil

from skipidx.core.errors import SkipidxError
from skipidx.core.kms import KeyRing
from skipidx.store import commit as _commit
from skipidx.store.commit import TableState, fsync_dir, write_state
from skipidx.store.external import EXTERNAL_STATE, ExternalTable, create_external_table
from skipidx.store.metadata import TableMeta, check_identifier
from skipidx.store.reader_pool import release_readers
from skipidx.store.table import Table

__all__ = ["Catalog"]

CATALOG_LOCK = ".catalog.lock"


class _CatalogLock:
    def __init__(self, root: str) -> None:
        self.path = os.path.join(root, CATALOG_LOCK)

    def __enter__(self) -> "_CatalogLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
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
            left = [os.path.join(self.path, n) for n in os.listdir(self.path)
                    if n.startswith(".tmp-") or n.startswith(".dropped-")]
            for p in left:
                shutil.rmtree(p, ignore_errors=True)
            release_readers(left)

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
            if _is_table(os.path.join(self.path, n)):
                out.append(n)
        return sorted(out)

    def exists(self, name: str) -> bool:
        return _is_table(self._dir(name))

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
        target = self._dir(meta.name)
        with _CatalogLock(self.path):
            if os.path.exists(target):
                if if_not_exists:
                    return None
                raise SkipidxError(f"table {meta.name!r} already exists")
            tmp = os.path.join(self.path, f".tmp-{meta.name}-{secrets.token_hex(4)}")
            os.mkdir(tmp)
            try:
                for d in (_commit.PARTS_DIR, _commit.TMP_DIR, _commit.READERS_DIR):
                    os.mkdir(os.path.join(tmp, d))
                write_state(tmp, TableState(0, meta))
                fsync_dir(tmp)
                os.rename(tmp, target)
                fsync_dir(self.path)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return self.table(meta.name)

    def create_external_table(self, meta: TableMeta, source: str, partition_columns: list[str],
                              if_not_exists: bool = False, builder=None):
        """Create an external table (ENGINE = ParquetFiles) over the files of glob `source`
        and index them; (table, refresh report), or (None, None) when it existed and
        `if_not_exists`. Only metadata and sidecars are written, into the table directory."""
        meta.validate()
        if meta.encryption is not None:
            raise SkipidxError("encrypted_columns / footer_key are for MergeTree tables: an external "
                               "table never writes its Parquet files")
        target = self._dir(meta.name)
        with _CatalogLock(self.path):
            if os.path.exists(target):
                if if_not_exists:
                    return None, None
                raise SkipidxError(f"table {meta.name!r} already exists")
            tmp = os.path.join(self.path, f".tmp-{meta.name}-{secrets.token_hex(4)}")
            os.mkdir(tmp)
            try:
                report = create_external_table(tmp, meta, source, partition_columns, builder)
                fsync_dir(tmp)
                os.rename(tmp, target)
                fsync_dir(self.path)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return self.table(meta.name), report

    def drop_table(self, name: str, if_exists: bool = False) -> bool:
        """Drop a table; False if it did not exist and `if_exists` (an external
        table's data files stay where they are: only its directory goes)."""
        target = self._dir(name)
        with _CatalogLock(self.path):
            if not _is_table(target):
                if if_exists:
                    return False
                raise self._unknown(name)
            with _commit.WriteLock(target):
                gone = os.path.join(self.path, f".dropped-{name}-{secrets.token_hex(4)}")
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
        if t is not None and os.path.isfile(os.path.join(d, EXTERNAL_STATE if isinstance(t, ExternalTable)
                                                         else _commit.STATE_FILE)):
            return t
        if os.path.isfile(os.path.join(d, EXTERNAL_STATE)):
            t = ExternalTable(d)
            self._tables[name] = t
            return t
        if not os.path.isfile(os.path.join(d, _commit.STATE_FILE)):
            raise self._unknown(name)
        t = Table(d, keyring=self.keyring)
        self._tables[name] = t
        return t

    def _unknown(self, name: str) -> SkipidxError:
        from skipidx.core.hints import did_you_mean

        tables = self.list_tables()
        known = ", ".join(tables) or "none"
        return SkipidxError(f"unknown table {name!r}{did_you_mean(name, tables)}; tables: {known}")

    def __repr__(self) -> str:
        return f"Catalog({self.path!r})"


def _is_table(d: str) -> bool:
    return os.path.isfile(os.path.join(d, _commit.STATE_FILE)) or os.path.isfile(os.path.join(d, EXTERNAL_STATE))
