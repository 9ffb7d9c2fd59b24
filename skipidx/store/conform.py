"""Conforming input rows to a table: columns checked and cast to the declared
types, then sorted by the ORDER BY key (what every write path does first)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.arrays import to_numpy
from skipidx.core.errors import SkipidxError
from skipidx.core.types import cast_to, sort_key_table
from skipidx.store.metadata import TableMeta

__all__ = ["conform", "sort_rows", "non_decreasing"]


def conform(meta: TableMeta, data: pa.Table) -> pa.Table:
    """Check `data`'s columns against the table and cast every column to its
    declared type (range-checked). SkipidxError names the column."""
    names = data.column_names
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise SkipidxError(f"table {meta.name!r}: input has duplicate columns: {', '.join(dup)}")
    want = meta.column_names
    missing = [c for c in want if c not in names]
    extra = [c for c in names if c not in want]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns: {', '.join(missing)}")
        if extra:
            parts.append(f"unknown columns: {', '.join(extra)}")
        raise SkipidxError(f"table {meta.name!r}: " + "; ".join(parts) + f" (table columns: {', '.join(want)})")
    arrays = [_cast_column(c, data.column(c.name)) for c in meta.columns]
    return pa.Table.from_arrays(arrays, schema=meta.arrow_schema())


def _cast_column(c, col: pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """One column cast chunk by chunk (a streamed file's blocks are not copied into one
    array; the Parquet writer takes chunks as they are). A bad value is reported by the
    whole column's cast, so the error (its row number) is the one of unchunked input."""
    if isinstance(col, pa.ChunkedArray) and col.num_chunks > 1:
        try:
            return pa.chunked_array([cast_to(c.type, x, c.name) for x in col.chunks], type=c.type.arrow_type)
        except (SkipidxError, pa.ArrowException):
            pass
    return cast_to(c.type, col, c.name)


def sort_rows(meta: TableMeta, data: pa.Table) -> pa.Table:
    """`data` sorted by the ORDER BY key (stable; NULLs last, as ClickHouse)."""
    if not meta.order_by or data.num_rows <= 1:
        return data
    if non_decreasing(data.select(meta.order_by)):
        return data   # already sorted (time-ordered logs): no sort, no gather
    idx = pc.sort_indices(sort_key_table(data.select(meta.order_by)),
                          sort_keys=[(k, "ascending", "at_end") for k in meta.order_by])
    # already sorted input (common for time-ordered logs) costs no gather
    if pc.all(pc.equal(idx, pa.array(np.arange(data.num_rows, dtype=np.uint64)))).as_py():
        return data
    return data.take(idx)


def non_decreasing(keys: pa.Table) -> bool:
    """True when a one-column sort key without NULLs (numbers, dates, times) is
    already in order; False where unsure (the caller sorts)."""
    if keys.num_columns != 1 or keys.num_rows < 2:
        return keys.num_rows < 2
    col = keys.column(0)
    t = col.type
    if col.null_count or not (pa.types.is_integer(t) or pa.types.is_temporal(t) or pa.types.is_floating(t)):
        return False
    if pa.types.is_floating(t) and pc.any(pc.is_nan(col)).as_py():
        return False
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    last = None
    for ch in chunks:
        if len(ch) == 0:
            continue
        try:
            if pa.types.is_temporal(t):   # their integer storage orders them
                ch = ch.view(pa.int64() if t.bit_width == 64 else pa.int32())
            a = to_numpy(ch)   # each chunk in place, no copy of the column (nor pandas' converters)
        except (pa.ArrowException, TypeError, ValueError):
            return False
        if (last is not None and a[0] < last) or not np.all(a[1:] >= a[:-1]):
            return False
        last = a[-1]
    return True
