"""Merging parts (OPTIMIZE TABLE [FINAL]).

A merge reads its source parts (checksums verified as they are read),
re-sorts the rows by the ORDER BY key, writes one new part with every index
of the current metadata rebuilt, and publishes it while retiring the sources
in one state change. Readers that pinned an older snapshot keep the sources
until they close it (see :mod:`skipidx.store.commit`).

A merge streams: it holds the sort key of its sources and one chunk of rows
(``writer.INDEX_CHUNK_ROWS``) at a time, so a FINAL merge of a table of any
size needs bounded memory.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skipidx.store.commit import ConflictError, commit_parts, crash_point, new_part_name, stage_dir
from skipidx.store.metadata import TableMeta
from skipidx.store.part import Part
from skipidx.store import writer as _writer
from skipidx.store.writer import PartWriter

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
        if len(parts) == 1 and not _encrypted_as(parts[0], snapshot.meta):
            return [parts]   # key rotation: rewritten under the table's current key ids
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


def _encrypted_as(part: Part, meta: TableMeta) -> bool:
    """True when `part` is encrypted as `meta`'s settings say (same footer and column key ids)."""
    enc, want = part.encryption, meta.encryption
    if enc is None or want is None:
        return enc is None and want is None
    return enc.get("footer_key") == want[0] and enc.get("columns") == want[1]


def merge_order(meta: TableMeta, parts: list[Part]) -> tuple[np.ndarray, np.ndarray]:
    """(perm, offsets): merged row i is row perm[i] of the parts' concatenation; part j's
    rows are offsets[j]:offsets[j + 1] of it."""
    rows = np.array([p.num_rows for p in parts], dtype=np.int64)
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    total = int(offsets[-1])
    if meta.order_by:
        keys = pa.concat_tables([p.read(meta.order_by) for p in parts])
        perm = pc.sort_indices(keys, sort_keys=[(k, "ascending", "at_end") for k in meta.order_by]).to_numpy()
        del keys
    else:
        perm = np.arange(total, dtype=np.int64)
    return perm, offsets


def _use_merged_indexes(meta: TableMeta, parts: list[Part], writer: PartWriter,
                        order: tuple[np.ndarray, np.ndarray]) -> None:
    """Indexes that merge their sources' postings (the text index) instead of re-tokenizing:
    handed the sources' granules and where each source row lands. A source whose index is
    missing or damaged leaves that index to be rebuilt from the rows."""
    from skipidx.core.errors import SkipidxError

    perm, offsets = order
    inv = None
    for im in meta.indexes:
        agg = writer.merged_index(im.name)
        if agg is None or not all(p.has_index(im.name) for p in parts):
            continue
        try:
            sources = [p.load_index(im.name) for p in parts]
        except SkipidxError:
            continue
        if inv is None:
            inv = np.empty(perm.shape[0], dtype=np.int64)
            inv[perm] = np.arange(perm.shape[0], dtype=np.int64)
        agg.use_merged(sources, [inv[offsets[j]:offsets[j + 1]] for j in range(len(parts))])


def merged_chunks(meta: TableMeta, parts: list[Part], step: int,
                  order: tuple[np.ndarray, np.ndarray] | None = None) -> Iterator[pa.Table]:
    """The rows of `parts` in ORDER BY order, as tables of `step` rows.

    Only the sort key of all parts is held at once (to compute the merged
    order, a stable sort, so equal keys keep part order); then each output
    chunk reads, from every part it draws on, the granules covering the rows
    it needs. Because every part is sorted, those rows are a contiguous run of
    each part, so the data is read about once in total.
    """
    perm, offsets = merge_order(meta, parts) if order is None else order
    total = int(offsets[-1])
    part_of = np.searchsorted(offsets, perm, side="right") - 1
    local = perm - offsets[part_of]
    del perm
    cols = meta.column_names
    for s in range(0, total, step):
        pj = part_of[s:s + step]
        lr = local[s:s + step]
        order = np.argsort(pj, kind="stable")
        sorted_pj = pj[order]
        bounds = np.flatnonzero(np.diff(sorted_pj)) + 1
        idx = np.empty(pj.shape[0], dtype=np.int64)
        pieces = []
        base = 0
        for grp in np.split(order, bounds):
            j = int(pj[grp[0]])
            need = lr[grp]
            lo, hi = int(need.min()), int(need.max()) + 1
            marks = parts[j].marks
            ga = int(np.searchsorted(marks, lo, side="right") - 1)
            gb = int(np.searchsorted(marks, hi - 1, side="right"))
            t = parts[j].read(cols, [(ga, gb)]).slice(lo - int(marks[ga]), hi - lo)
            idx[grp] = base + need - lo
            base += hi - lo
            pieces.append(t)
        yield pa.concat_tables(pieces).combine_chunks().take(pa.array(idx))


def merge_parts(table_dir: str, meta: TableMeta, parts: list[Part]) -> str:
    """Merge `parts` into one new part and publish it; returns its name.
    Memory: one chunk of rows (plus the sort key of all parts), whatever the
    size of the merge. Raises ConflictError (nothing changed) if a source was
    retired meanwhile."""
    level = max(p.level for p in parts) + 1
    name = new_part_name(level)
    staged = stage_dir(table_dir, name)
    writer = None
    try:
        writer = PartWriter(staged.path, meta, name, level=level, keyring=parts[0].keyring)
        m = writer.chunk_multiple()
        step = max(1, _writer.INDEX_CHUNK_ROWS // m) * m
        order = merge_order(meta, parts)
        _use_merged_indexes(meta, parts, writer, order)
        for chunk in merged_chunks(meta, parts, step, order):
            writer.write(chunk)
        writer.finish()
        staged.rows = writer.rows
        crash_point("merge:staged")

        def check(cur: TableMeta) -> None:
            if cur.columns != meta.columns:
                raise ConflictError("table columns changed during the merge")

        commit_parts(table_dir, [staged], retire=[p.name for p in parts], meta_check=check)
    except BaseException:
        if writer is not None:
            writer.abort()
        staged.discard()
        raise
    return name
