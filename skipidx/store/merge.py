"""Merging parts (OPTIMIZE TABLE [FINAL]).

A merge reads its source parts (checksums verified as they are read),
re-sorts the rows by the ORDER BY key, writes one new part with every index
of the current metadata rebuilt, and publishes it while retiring the sources
in one state change. Readers that pinned an older snapshot keep the sources
until they close it (see :mod:`skipidx.store.commit`).

The rows of one merge are held in memory (Arrow): a FINAL merge of a large
table needs about the table's decoded size. Non-FINAL merges are bounded by
``max_part_rows``.
"""
from __future__ import annotations

import pyarrow as pa

from skipidx.store.commit import ConflictError, commit_parts, crash_point
from skipidx.store.metadata import TableMeta
from skipidx.store.part import Part, build_part, sort_rows

__all__ = ["plan_merges", "merge_parts"]


def plan_merges(snapshot, *, final: bool, max_rows: int) -> list[list[Part]]:
    """Groups of parts to merge. FINAL: all parts into one (a lone part only
    when it lacks an index of the current metadata). Otherwise consecutive
    runs of parts whose total stays within `max_rows`, two or more per group."""
    parts = list(snapshot.parts)
    if final:
        if len(parts) > 1:
            return [parts]
        if len(parts) == 1 and not all(parts[0].has_index(i.name) for i in snapshot.meta.indexes):
            return [parts]
        return []
    groups: list[list[Part]] = []
    cur: list[Part] = []
    rows = 0
    for p in parts:
        if p.num_rows >= max_rows or rows + p.num_rows > max_rows:
            if len(cur) > 1:
                groups.append(cur)
            cur, rows = ([], 0) if p.num_rows >= max_rows else ([p], p.num_rows)
            continue
        cur.append(p)
        rows += p.num_rows
    if len(cur) > 1:
        groups.append(cur)
    return groups


def merge_parts(table_dir: str, meta: TableMeta, parts: list[Part]) -> str:
    """Merge `parts` into one new part and publish it; returns its name.
    Raises ConflictError (nothing changed) if a source was retired meanwhile."""
    tables = [p.read(meta.column_names) for p in parts]
    data = sort_rows(meta, pa.concat_tables(tables).combine_chunks())
    del tables
    level = max(p.level for p in parts) + 1
    staged = build_part(table_dir, meta, data, level=level, prepare=False)
    del data
    crash_point("merge:staged")
    try:
        def check(cur: TableMeta) -> None:
            if cur.columns != meta.columns:
                raise ConflictError("table columns changed during the merge")

        commit_parts(table_dir, [staged], retire=[p.name for p in parts], meta_check=check)
    except BaseException:
        staged.discard()
        raise
    return staged.name
