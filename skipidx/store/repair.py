"""Repair of a table whose ``state.json`` is damaged (``ALTER TABLE t ATTACH PARTS``).

Every commit writes the state twice: ``state.json``, then the same bytes as
``state.backup.json``. Repair, under the table's commit lock:

1. ``state.json`` valid: nothing to repair (its parts are checked to be there).
2. Otherwise the backup (the same generation, or the one before if the
   damage struck between the two writes) becomes the state again.
3. Neither valid: the state is rebuilt from the committed parts' manifests --
   columns and ORDER BY from the manifests, every part whose manifest is
   valid and agrees on them; indexes are not recoverable this way (re-add
   them with ALTER TABLE ... ADD INDEX + MATERIALIZE INDEX).

Either way only parts whose manifest reads back whole are attached, and the
result is written as a new generation (state and backup).
"""
from __future__ import annotations

import os
import re
import stat

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.types import parse_type
from skipidx.store import commit as _commit
from skipidx.store.commit import PartEntry, TableState
from skipidx.store.manifest import read_manifest
from skipidx.store.metadata import ColumnMeta, TableMeta

__all__ = ["repair_table", "detached_parts"]


def _valid_parts(table_dir: str, st: TableState) -> tuple[list[PartEntry], list[str]]:
    keep, lost = [], []
    for e in st.parts:
        try:
            m, h = read_manifest(os.path.join(table_dir, _commit.PARTS_DIR, e.name), e.manifest_hash)
        except SkipidxError:
            lost.append(e.name)
            continue
        keep.append(e)
    return keep, lost


def _from_manifests(table_dir: str, name: str) -> TableState:
    pdir = os.path.join(table_dir, _commit.PARTS_DIR)
    found = []
    for n in sorted(os.listdir(pdir)):
        if not re.fullmatch(r"[a-z0-9_]{1,100}", n):
            continue
        try:
            m, h = read_manifest(os.path.join(pdir, n))
        except SkipidxError:
            continue
        if m["part"] != n:
            continue
        found.append((m, h))
    if not found:
        raise CorruptionError("the table state and its backup are damaged and no part has a readable manifest; "
                              "the table cannot be repaired (DROP TABLE it)", path=table_dir)
    # the most common (columns, ORDER BY) among the parts describes the table
    shapes: dict[str, int] = {}
    for m, _ in found:
        key = repr((m["columns"], m["order_by"], m["index_granularity"]))
        shapes[key] = shapes.get(key, 0) + 1
    best = max(shapes, key=lambda k: shapes[k])
    m0 = next(m for m, _ in found if repr((m["columns"], m["order_by"], m["index_granularity"])) == best)
    try:
        cols = [ColumnMeta(str(c), parse_type(str(t))) for c, t in m0["columns"]]
        meta = TableMeta(name, cols, [str(k) for k in m0["order_by"]], int(m0["index_granularity"])).validate()
    except (SkipidxError, TypeError, ValueError) as e:
        raise CorruptionError(f"cannot rebuild the table metadata from the part manifests ({e})",
                              path=table_dir) from None
    parts = []
    for m, h in found:
        if repr((m["columns"], m["order_by"], m["index_granularity"])) != best:
            continue
        # a merge result and its sources may both be on disk (the state that
        # said which is which is gone): a part whose rows are covered by a
        # higher-level part made later is left out, as ClickHouse's
        # covered-parts rule on ATTACH
        parts.append((int(m.get("level", 0)), m["part"], int(m["rows"]), h, float(m.get("created_unix", 0))))
    parts.sort(key=lambda x: (x[4], x[1]))
    chosen = _drop_covered(parts)
    entries = tuple(PartEntry(n, rows, h) for _lvl, n, rows, h, _t in chosen)
    return TableState(0, meta, entries, (), _commit.new_table_id())


def _drop_covered(parts: list[tuple]) -> list[tuple]:
    """Without the state, a merge result and its not-yet-removed sources look
    alike; keep the newest highest-level parts and drop older lower-level
    parts whose total rows a later merge result accounts for. Conservative:
    when in doubt a part is kept (a duplicate row is visible and removable,
    a lost one is not)."""
    out = list(parts)
    for i in range(len(out) - 1, -1, -1):
        lvl, name, rows, h, t = out[i]
        if lvl == 0:
            continue
        # sources of a merge are older and of a lower level; take the
        # contiguous older run of lower-level parts whose rows add up exactly
        acc, j = 0, i - 1
        while j >= 0 and acc < rows:
            if out[j][0] < lvl:
                acc += out[j][2]
            j -= 1
        if acc == rows:
            out = out[:j + 1] + [p for p in out[j + 1:i] if p[0] >= lvl] + out[i:]
    return out


DETACHED_DIR = "detached"


def _detach_unreferenced(table_dir: str, referenced: set[str]) -> int:
    """Move part directories the repaired state does not list to
    ``detached/`` (as ClickHouse does): the next commit's cleanup would
    otherwise delete them, and a repair never deletes data."""
    pdir = os.path.join(table_dir, _commit.PARTS_DIR)
    ddir = os.path.join(table_dir, DETACHED_DIR)
    n = 0
    for name in sorted(os.listdir(pdir)):
        p = os.path.join(pdir, name)
        if name in referenced or not re.fullmatch(r"[a-z0-9_]{1,100}", name) or not _commit._is_real_dir(p):
            continue
        if not _commit.check_real_dir(ddir):
            os.mkdir(ddir)
        os.rename(p, os.path.join(ddir, name))
        n += 1
    if n:
        _commit.fsync_dir(pdir)
        _commit.fsync_dir(ddir)
    return n


def detached_parts(table_dir: str) -> list[dict]:
    """The part directories a repair moved to ``detached/``: name, path, bytes on disk (their
    files, symbolic links not followed) and modification time (unix seconds); sorted by name."""
    ddir = os.path.join(table_dir, DETACHED_DIR)
    if not _commit._is_real_dir(ddir):
        return []
    out = []
    for name in sorted(os.listdir(ddir)):
        p = os.path.join(ddir, name)
        try:
            st = os.lstat(p)
            if not stat.S_ISDIR(st.st_mode):
                continue
            size = 0
            with os.scandir(p) as it:
                for e in it:
                    if e.is_file(follow_symlinks=False):
                        size += e.stat(follow_symlinks=False).st_size
        except OSError:
            continue        # removed meanwhile
        out.append({"name": name, "path": p, "bytes": size, "mtime": st.st_mtime})
    return out


def repair_table(table_dir: str) -> str:
    """Repair the table at `table_dir`; returns a one-line report."""
    name = os.path.basename(table_dir)
    with _commit.WriteLock(table_dir):
        _commit.clear_state_cache()
        try:
            st = _commit.read_state(table_dir)
            keep, lost = _valid_parts(table_dir, st)
            if not lost:
                return "table state is valid; nothing to repair"
            how = "table state valid"
        except SkipidxError:   # damaged, or missing
            try:
                st = _commit.read_backup_state(table_dir)
                keep, lost = _valid_parts(table_dir, st)
                how = "restored the table state from its backup"
            except SkipidxError:
                st = _from_manifests(table_dir, name)
                keep, lost = list(st.parts), []
                how = ("rebuilt the table state from the parts' manifests (indexes are not recoverable: "
                       "re-add them and MATERIALIZE them)")
        if st.meta.name != name:
            raise CorruptionError(f"the state belongs to table {st.meta.name!r}", path=table_dir)
        new = TableState(st.gen + 1, st.meta, tuple(keep), (), st.table_id or _commit.new_table_id())
        _commit.write_state(table_dir, new)
        detached = _detach_unreferenced(table_dir, {e.name for e in keep})
    _commit.clear_state_cache()
    msg = f"{how}; {len(keep)} parts attached"
    if detached:
        msg += f"; {detached} other part directories moved to detached/ (nothing is deleted)"
    if lost:
        msg += f", {len(lost)} unreadable parts left out ({', '.join(lost[:5])}{', ...' if len(lost) > 5 else ''})"
    return msg
