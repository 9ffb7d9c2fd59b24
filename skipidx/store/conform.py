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

__all__ = ["conform", "sort_rows", "non_decreasing", "dictionary_passthrough_columns", "DICT_PASS_MAX_ENTRIES"]

#: A LowCardinality column's Arrow dictionary is written as it is only up to this many
#: entries (its whole dictionary becomes each row group's dictionary page).
DICT_PASS_MAX_ENTRIES = 1024


def dictionary_passthrough_columns(meta: TableMeta) -> list[str]:
    """LowCardinality(String) columns that an insert may hand to the Parquet writer as
    Arrow dictionaries (read so from a Parquet file: no strings are built, and the writer
    puts the dictionary once per row group and the indices as they are instead of hashing
    every value). Not a column of the ORDER BY key or read by an index (their code takes
    plain strings), nor in a table with encrypted columns."""
    if meta.encryption is not None:
        return []
    used = set(meta.order_by)
    for im in meta.indexes:
        d = im.definition
        used.add(d.column)
        if d.expression is not None:
            used.update(d.expression_columns)
    return [c.name for c in meta.columns if c.type.low_cardinality and pa.types.is_string(c.type.arrow_type)
            and c.name not in used]


def _dictionary_kept(c, col: pa.ChunkedArray | pa.Array, granule_rows: int) -> pa.ChunkedArray | None:
    """`col` (a dictionary<int32, string> column of LowCardinality column `c`) with one
    dictionary for all its chunks, when it can be written as it is; else None (decoded).

    Parquet's dictionary page of a row group is then the whole Arrow dictionary, so it is
    kept only when that is what the data holds: at most :data:`DICT_PASS_MAX_ENTRIES`
    entries, every one of them used by the first and by the middle granule, no NULL
    among them (and no NULL row in a non-Nullable column: the cast reports it)."""
    t = col.type
    if not (pa.types.is_dictionary(t) and t.index_type == pa.int32() and pa.types.is_string(t.value_type)):
        return None
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col])
    if col.null_count and not c.type.nullable:
        return None
    chunks = [ch for ch in col.chunks if len(ch)]
    if not chunks:
        return None
    first = chunks[0].dictionary
    if any(ch.dictionary is not first and not ch.dictionary.equals(first) for ch in chunks[1:]):
        col = pa.table({"c": col}).unify_dictionaries().column(0)
        chunks = [ch for ch in col.chunks if len(ch)]
        first = chunks[0].dictionary
    if len(first) > DICT_PASS_MAX_ENTRIES or first.null_count:
        return None
    n = len(col)
    g = max(1, min(granule_rows, n))
    for s0 in sorted({0, ((n // g) // 2) * g}):
        idx = col.slice(s0, g)
        idx = pa.chunked_array([ch.indices for ch in idx.chunks], type=pa.int32())
        if pc.count_distinct(idx, mode="only_valid").as_py() != len(first):
            return None
    return col


def conform(meta: TableMeta, data: pa.Table, dictionary: list[str] | tuple[str, ...] = ()) -> pa.Table:
    """Check `data`'s columns against the table and cast every column to its
    declared type (range-checked). SkipidxError names the column.

    `dictionary`: LowCardinality(String) columns (:func:`dictionary_passthrough_columns`)
    kept as Arrow dictionaries where they arrive as such and fit (:func:`_dictionary_kept`);
    the result's schema then says so for them. Every other column, and these where they do
    not fit, are cast to the declared type as always."""
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
    schema = meta.arrow_schema()
    arrays = []
    for i, c in enumerate(meta.columns):
        col = data.column(c.name)
        kept = _dictionary_kept(c, col, meta.index_granularity) if c.name in dictionary else None
        if kept is None:
            arrays.append(_cast_column(c, col))
        else:
            arrays.append(kept)
            schema = schema.set(i, schema.field(i).with_type(kept.type))
    return pa.Table.from_arrays(arrays, schema=schema)


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
