"""skipidx: an embedded, ClickHouse-style data-skipping-index engine.

    import skipidx
    db = skipidx.connect("path/to/db")
    db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'timeout')").fetchall()
"""
from __future__ import annotations

from skipidx.core.errors import BindError, CorruptionError, ParseError, SkipidxError

__version__ = "0.1.0"

__all__ = ["connect", "SkipidxError", "ParseError", "BindError", "CorruptionError", "__version__"]


def connect(path: str | None = None, *, kms=None):
    """Open (or create) the database directory `path`.

    With no path, a temporary database is created and removed on close().
    `kms`: a KMS client with pyarrow's KmsClient methods (``wrap_key``,
    ``unwrap_key``) for tables with sensitive columns (``SETTINGS
    encrypted_columns = 'col:keyid, ...', footer_key = 'keyid'``).
    """
    from skipidx.engine import Database

    return Database(path, kms=kms)
