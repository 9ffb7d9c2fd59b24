"""One embedded ClickHouse (chDB) per process, for the oracles in tests and benches.

chDB's embedded server is initialised once per process with one data path:
while it is open, any connection with another path — a second
``chdb.session.Session(path)`` or a plain ``chdb.query`` (which asks for
``:memory:``) — fails with "EmbeddedServer already initialized". So every
caller in a process shares this session; tables go into a scratch database
of their own (:func:`scratch_database`) so callers never collide.

chDB is an optional dependency (extras ``dev`` and ``bench``).
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
import uuid

_lock = threading.Lock()
_session = None
_path: str | None = None


def session():
    """The process-wide chDB session (created on first use, removed at exit)."""
    global _session, _path
    with _lock:
        if _session is None:
            from chdb import session as chs

            _path = tempfile.mkdtemp(prefix="skipidx-chdb-")
            _session = chs.Session(_path)
            _session.query("SET session_timezone = 'UTC'")
            atexit.register(_close)
        return _session


def query(sql: str, fmt: str = "CSV"):
    """Run one statement in the shared session; `fmt` as chDB's output formats
    ("CSV", "TabSeparatedRaw", "JSONEachRow", "ArrowTable", ...).

    ``Python(name)`` table functions see the caller's variables (chDB walks
    the stack), so they work through this wrapper too.
    """
    return session().query(sql, fmt)


def scratch_database(prefix: str = "t") -> str:
    """Create a fresh, empty database and return its name (qualify tables with it)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    query(f"CREATE DATABASE {name}")
    return name


def _close() -> None:
    global _session
    if _session is not None:
        try:
            _session.close()
        finally:
            _session = None
            if _path:
                shutil.rmtree(_path, ignore_errors=True)
