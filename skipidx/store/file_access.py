"""Which files SQL may read and write: ClickHouse's ``user_files_path``.

``skipidx.connect(path, user_files_path=DIR)`` confines ``INSERT ... FROM
INFILE``, the ``file()`` table function and ``INTO OUTFILE`` to DIR: a
relative path is taken relative to it (as ClickHouse does), and a path that
resolves outside it -- by ``..``, an absolute path, or a symbolic link -- is
refused. ``allow_file_access=False`` refuses them all (an application that
passes its users' SQL through). The policy of the running statement is a
context variable the database sets around each statement; without one (the
default) access is unrestricted, as before. A Python caller's own
``db.insert(path)`` is the application's choice and is not confined.

Refusals name the path, never anything read from it.
"""
from __future__ import annotations

import contextvars
import glob
import os
import re
from skipidx.core.dataclass_codes import dataclass

from skipidx.core.errors import SkipidxError

__all__ = ["FileAccess", "POLICY", "resolve", "resolve_many"]


@dataclass(frozen=True)
class FileAccess:
    user_files_path: str | None = None
    allowed: bool = True

    @staticmethod
    def make(user_files_path, allow_file_access: bool) -> "FileAccess":
        root = None
        if user_files_path is not None:
            root = os.path.realpath(os.fspath(user_files_path))
            if not os.path.isdir(root):
                raise SkipidxError("user_files_path is not a directory", path=root)
        return FileAccess(root, bool(allow_file_access))


#: The policy of the statement running in this context (None: unrestricted).
POLICY: contextvars.ContextVar[FileAccess | None] = contextvars.ContextVar("skipidx_file_access", default=None)


def _refuse(what: str, path: str, why: str) -> SkipidxError:
    return SkipidxError(f"{what}: {why}", path=path)


def _inside(root: str, real: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def resolve(path: str, what: str = "file access", *, write: bool = False) -> str:
    """`path` as the running statement may use it (joined to user_files_path
    when relative); SkipidxError when the policy forbids it."""
    pol = POLICY.get()
    path = os.fspath(path)
    if pol is None:
        return path
    if not pol.allowed:
        raise _refuse(what, path, "file access is disabled for this connection (allow_file_access=False)")
    if pol.user_files_path is None:
        return path
    full = path if os.path.isabs(path) else os.path.join(pol.user_files_path, path)
    # symbolic links resolved: a link inside the directory may not lead out
    real = os.path.realpath(full if not write else os.path.dirname(full) or ".")
    if write:
        real = os.path.join(real, os.path.basename(full))
        if os.path.islink(real):
            raise _refuse(what, path, "the target is a symbolic link")
    if not _inside(pol.user_files_path, real):
        raise _refuse(what, path, f"outside user_files_path ({pol.user_files_path})")
    return real


_GLOB = re.compile(r"[*?\[]")


def resolve_many(spec: str, what: str = "file access") -> str:
    """A path or glob pattern as the running statement may use it: joined to
    user_files_path when relative; its fixed directory part and every file it
    matches must lie inside (checked again by :func:`resolve` per file)."""
    pol = POLICY.get()
    spec = os.fspath(spec)
    if pol is None:
        return spec
    if not pol.allowed or pol.user_files_path is None:
        return resolve(spec, what)
    full = spec if os.path.isabs(spec) else os.path.join(pol.user_files_path, spec)
    if not _GLOB.search(full):
        return resolve(full, what)
    for hit in glob.glob(full, recursive=True):
        resolve(hit, what)
    fixed = full[:_GLOB.search(full).start()]
    if not _inside(pol.user_files_path, os.path.realpath(os.path.dirname(fixed) or ".")):
        raise _refuse(what, spec, f"outside user_files_path ({pol.user_files_path})")
    return full
