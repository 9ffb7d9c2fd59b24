"""Table-wide changes: TRUNCATE, ADD/DROP COLUMN and MODIFY SETTING.

Each is one atomic commit (:func:`skipidx.store.commit.commit_parts`): the
table is as before or as after, never between. ADD and DROP COLUMN rewrite
every part (its data file gains or loses the column, its indexes are
rebuilt), so a part's files always hold exactly the table's columns; the
new column's values come from `fill(part_data) -> Arrow array`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.store import commit as _commit
from skipidx.store.commit import ConflictError, commit_parts
from skipidx.store.metadata import ColumnMeta, TableMeta
from skipidx.store.writer import build_part

__all__ = ["truncate", "add_column", "drop_column", "modify_settings"]


def truncate(table: Any) -> int:
    """Remove every part (TRUNCATE TABLE); returns the rows removed."""
    for _ in range(20):
        with table.snapshot() as snap:
            rows = sum(int(p.num_rows) for p in snap.parts)
            try:
                commit_parts(table.path, [], retire=[p.name for p in snap.parts], expect_gen=snap.gen)
            except ConflictError:
                continue
        _commit.cleanup(table.path)
        return rows
    raise ConflictError("TRUNCATE: the table kept changing; retry")


def _rewrite_all(table: Any, new_meta: TableMeta, transform: Callable[[pa.Table], pa.Table]) -> None:
    """Every part rewritten through `transform` under `new_meta`, in one commit.

    Parts are rewritten one by one and kept; when inserts committed new parts
    meanwhile (the commit's generation check fails), only those are rewritten
    before the next try, so steady inserts never starve the ALTER (each try
    has less to catch up). Background merges wait (merge lock) meanwhile."""
    from skipidx.store.merge import _MergeLock

    done: dict[str, Any] = {}   # source part name -> its staged rewrite
    try:
        with _MergeLock(table.path, blocking=True):
            for _ in range(1000):
                with table.snapshot() as snap:
                    active = {p.name for p in snap.parts}
                    for gone in [n for n in done if n not in active]:
                        done.pop(gone).discard()   # retired meanwhile (an ALTER of its own)
                    for p in snap.parts:
                        if p.name not in done:
                            data = transform(p.read())
                            done[p.name] = build_part(table.path, new_meta, data, level=int(p.manifest.get("level", 0)),
                                                      keyring=table.keyring)
                    try:
                        commit_parts(table.path, [done[p.name] for p in snap.parts],
                                     retire=[p.name for p in snap.parts], meta=new_meta, expect_gen=snap.gen,
                                     expect_id=table.table_id)
                    except ConflictError:
                        continue
                    done.clear()
                    break
            else:
                raise ConflictError("ALTER: the table kept changing; retry")
    finally:
        for s in done.values():
            s.discard()
    _commit.cleanup(table.path)


def add_column(table: Any, column: ColumnMeta, *, after: str | None = None, first: bool = False,
               if_not_exists: bool = False, fill: Callable[[pa.Table], pa.Array]) -> bool:
    """ADD COLUMN: False if it exists and `if_not_exists`."""
    meta = table.meta
    if column.name in meta.column_names:
        if if_not_exists:
            return False
        raise SkipidxError(f"table {meta.name!r} already has a column {column.name!r}")
    cols = list(meta.columns)
    if first:
        pos = 0
    elif after is not None:
        if after not in meta.column_names:
            from skipidx.core.hints import did_you_mean

            raise SkipidxError(f"ADD COLUMN ... AFTER {after}: no such column{did_you_mean(after, meta.column_names)}")
        pos = meta.column_names.index(after) + 1
    else:
        pos = len(cols)
    cols.insert(pos, column)
    new_meta = dataclasses.replace(meta, columns=cols).validate()

    def transform(t: pa.Table) -> pa.Table:
        arr = fill(t)
        return t.add_column(pos, pa.field(column.name, arr.type), arr)

    _rewrite_all(table, new_meta, transform)
    return True


def drop_column(table: Any, name: str, *, if_exists: bool = False) -> bool:
    """DROP COLUMN: refused for a sorting-key column or one an index reads, as ClickHouse."""
    meta = table.meta
    if name not in meta.column_names:
        if if_exists:
            return False
        from skipidx.core.hints import did_you_mean

        raise SkipidxError(f"table {meta.name!r} has no column {name!r}{did_you_mean(name, meta.column_names)}")
    if name in meta.order_by:
        raise SkipidxError(f"cannot drop column {name!r}: it is part of the sorting key (ORDER BY)")
    users = [i.name for i in meta.indexes if i.definition.column == name or name in i.definition.expression_columns]
    if users:
        raise SkipidxError(f"cannot drop column {name!r}: index {', '.join(users)} depends on it; drop the index first")
    if len(meta.columns) == 1:
        raise SkipidxError(f"cannot drop column {name!r}: a table needs at least one column")
    new_meta = dataclasses.replace(meta, columns=[c for c in meta.columns if c.name != name]).validate()
    _rewrite_all(table, new_meta, lambda t: t.drop_columns([name]))
    return True


def modify_settings(table: Any, settings: dict[str, Any], index_granularity: int | None = None) -> None:
    """MODIFY SETTING (metadata only: existing parts keep their layout)."""
    meta = table.meta
    if index_granularity is not None and index_granularity != meta.index_granularity:
        raise SkipidxError("index_granularity cannot be changed after CREATE (the parts' granules are cut by it)")
    new_meta = dataclasses.replace(meta, settings={**meta.settings, **settings}).validate()

    def check(cur: TableMeta) -> None:
        if cur != meta:
            raise ConflictError(f"table {meta.name!r} changed concurrently; retry MODIFY SETTING")

    commit_parts(table.path, [], meta=new_meta, meta_check=check)
