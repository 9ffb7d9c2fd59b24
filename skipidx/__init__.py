"""skipidx: an embedded, ClickHouse-style data-skipping-index engine.

    import skipidx
    db = skipidx.connect("path/to/db")
    res = db.sql("SELECT ts, msg FROM logs WHERE hasToken(msg, 'timeout')")
    res.fetchone(); res.fetchmany(10); res.arrow(); res.df()
    db.scan("logs", where="hasToken(msg, 'timeout')")   # a pruned Arrow stream
    skipidx.sql("SELECT 1")                              # the default temporary database

Importing skipidx before numpy sets ``OPENBLAS_THREAD_TIMEOUT=4`` unless it is set:
numpy's OpenBLAS then parks its idle threads at once instead of letting them spin
for a while after numpy's import (CPU every new process pays, on every core).
skipidx does no BLAS work; BLAS results and the thread count are unchanged,
idle threads just sleep sooner. Set the variable to keep OpenBLAS's default.
"""
from __future__ import annotations

import os
import sys
import threading

if "numpy" not in sys.modules:   # read once, when numpy loads OpenBLAS
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from skipidx.core.errors import BindError, CorruptionError, ParseError, SkipidxError

__version__ = "0.1.0"

__all__ = ["connect", "sql", "default_connection", "SkipidxError", "ParseError", "BindError",
           "CorruptionError", "__version__"]

#: DB-API 2.0 module globals
apilevel = "2.0"
threadsafety = 1
paramstyle = "pyformat"

_default = None
_default_lock = threading.Lock()


def connect(path: str | None = None, *, kms=None, user_files_path=None, allow_file_access: bool = True,
            max_threads: int | None = None):
    """Open (or create) the database directory `path`.

    With no path, a temporary database is created and removed on close().
    `kms`: a KMS client with pyarrow's KmsClient methods (``wrap_key``,
    ``unwrap_key``) for tables with sensitive columns (``SETTINGS
    encrypted_columns = 'col:keyid, ...', footer_key = 'keyid'``).
    `user_files_path`: the directory SQL's ``INFILE``, ``file()`` and ``INTO
    OUTFILE`` are confined to (ClickHouse's setting; relative paths are
    relative to it); ``allow_file_access=False`` forbids them.
    `max_threads`: concurrent scan reads of its queries (None or 0: the cores this
    process may use; a query's ``SETTINGS max_threads`` asks for its own).
    """
    from skipidx.engine import Database

    return Database(path, kms=kms, user_files_path=user_files_path, allow_file_access=allow_file_access,
                    max_threads=max_threads)


def default_connection():
    """The process-wide temporary database that module-level :func:`sql` uses
    (created on first use, removed at exit)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            import atexit

            _default = connect()
            atexit.register(_default.close)
        return _default


def sql(query: str, params: dict | None = None):
    """Run `query` on the default temporary database (as ``duckdb.sql``)."""
    return default_connection().sql(query, params)


# `skipidx.sql("SELECT 1")` (as ``duckdb.sql``): the SQL front end's package
# `skipidx.sql` takes this attribute once imported, so that module is made
# callable here, at the top, which may use every layer (skipidx.sql itself
# never reaches up to the engine).
import importlib as _importlib  # noqa: E402
import types as _types  # noqa: E402

_sql_package = _importlib.import_module("skipidx.sql")


class _CallableSQLModule(_types.ModuleType):
    def __call__(self, query: str, params: dict | None = None):
        """Run `query` on the default temporary database (:func:`default_connection`)."""
        return default_connection().sql(query, params)


_sql_package.__class__ = _CallableSQLModule
