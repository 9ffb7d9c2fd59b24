"""Index granules an external data file gives for free: footer statistics, its own
Parquet Bloom filters, and its Hive partition values (one granule per row group).

Each loader raises CorruptionError when the file cannot answer (no statistics,
unusable values); the planner then leaves that file UNKNOWN for the atom.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.parquet_bloom import read_column_chunk_filters
from skipidx.core.sbbf import SBBF, SBBFBank

__all__ = ["stats_granules", "bloom_granules", "stats_type_ok"]


def stats_type_ok(t: pa.DataType) -> bool:
    """Types whose footer min/max prune exactly (floats left out: NaN)."""
    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            or pa.types.is_string(t) or pa.types.is_boolean(t))


def _leaf(md: Any, column: str) -> int | None:
    for j in range(md.num_columns):
        if md.schema.column(j).path == column:
            return j
    return None


def _zone_nulls(rg_nulls: np.ndarray, rg_len: np.ndarray, zone_rg: np.ndarray, zone_len: np.ndarray) -> np.ndarray:
    """Null counts of zones from their row groups': all (the row group is all NULL), none,
    or 1 ("some": a zone of a row group of several rows has at least two rows)."""
    n = rg_nulls[zone_rg]
    return np.where(n == 0, 0, np.where(n == rg_len[zone_rg], zone_len, np.minimum(1, zone_len)))


def _zones_of_row_groups(f: Any):
    """(zone marks, row-group marks, each zone's row group) of an ExternalFile."""
    info = getattr(f, "_info", None)
    marks = np.asarray(f.marks, dtype=np.int64)
    if info is None:
        return marks, marks, np.arange(marks.shape[0] - 1)
    return marks, np.asarray(info.rg_marks, dtype=np.int64), np.asarray(info.zone_rg)


def stats_granules(f: Any, column: str, col_type: pa.DataType) -> Any:
    """MinMax granules of `column` in data file `f` (an ExternalFile): per zone, its row
    group's footer min/max (and null count: all, none or some); a partition column or a
    column the file lacks is constant."""
    from skipidx.indexes.minmax import MinMaxGranules

    zmarks, marks, zone_rg = _zones_of_row_groups(f)
    if column in f.partition or column not in f._file_cols:
        marks = zmarks
    n = marks.shape[0] - 1
    lengths = np.diff(marks)
    zs = marks[:-1].copy()
    zero = np.zeros(n, dtype=np.int64)
    if column in f.partition or column not in f._file_cols:
        v = f.partition.get(column)
        if v is None:
            nulls = lengths.copy()
            empty = pa.nulls(n, col_type)
            return MinMaxGranules(zs, lengths, nulls, zero, empty, empty)
        vals = pa.array([v] * n, col_type)
        return MinMaxGranules(zs, lengths, zero.copy(), zero, vals, vals)
    return _expand_minmax(_rg_stats(f, column, col_type, marks), zmarks, marks, zone_rg)


def _expand_minmax(g: Any, zmarks: np.ndarray, marks: np.ndarray, zone_rg: np.ndarray) -> Any:
    from skipidx.indexes.minmax import MinMaxGranules

    if zmarks.shape[0] == marks.shape[0]:
        return g
    zl = np.diff(zmarks)
    take = pa.array(zone_rg)
    return MinMaxGranules(zmarks[:-1].copy(), zl, _zone_nulls(np.asarray(g.null_count), np.diff(marks), zone_rg, zl),
                          np.zeros(zl.shape[0], dtype=np.int64), g.min.take(take), g.max.take(take))


def _rg_stats(f: Any, column: str, col_type: pa.DataType, marks: np.ndarray) -> Any:
    from skipidx.indexes.minmax import MinMaxGranules

    n = marks.shape[0] - 1
    lengths = np.diff(marks)
    zs = marks[:-1].copy()
    md = f.md
    j = _leaf(md, column)
    if j is None:
        raise CorruptionError(f"no leaf column {column} in the data file", path=f.data_path)
    phys = md.schema.to_arrow_schema().field(column).type
    if pa.types.is_dictionary(phys):
        phys = phys.value_type
    # statistics convert exactly only from the file's own type; a declared type that
    # differs (an older file's int32 under Int64) is cast, which never reorders
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls = np.zeros(n, dtype=np.int64)
    for g in range(n):
        st = md.row_group(g).column(j).statistics
        if st is None:
            raise CorruptionError("row group without statistics", path=f.data_path)
        if not st.has_null_count:
            raise CorruptionError("row group without a null count", path=f.data_path)
        nulls[g] = st.null_count
        if st.has_min_max:
            # a truncated bound (is_*_exact False) still bounds, but a truncated min == max
            # could claim "all rows equal": refuse it
            if not (getattr(st, "is_min_value_exact", True) in (True, None)
                    and getattr(st, "is_max_value_exact", True) in (True, None)):
                raise CorruptionError("truncated min/max statistics", path=f.data_path)
            mins.append(st.min)
            maxs.append(st.max)
        elif nulls[g] == lengths[g]:
            mins.append(None)
            maxs.append(None)
        else:
            raise CorruptionError("row group without min/max statistics", path=f.data_path)
    try:
        amin, amax = pa.array(mins, phys), pa.array(maxs, phys)
        if phys != col_type:
            amin, amax = amin.cast(col_type), amax.cast(col_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise CorruptionError(f"unusable row-group statistics: {e}", path=f.data_path) from None
    return MinMaxGranules(zs, lengths, nulls, np.zeros(n, dtype=np.int64), amin, amax)


def bloom_granules(f: Any, column: str, col_type: pa.DataType, itype: Any) -> Any:
    """The file's own Parquet Bloom filters of `column` as ``bloom_filter`` granules (one per
    row group). A row group without a filter gets an all-ones filter (answers "maybe").
    Only where the file stores the column with the declared type: Parquet hashes the
    physical value, so an int32 file column cannot answer an Int64 probe."""
    from skipidx.indexes.bloom import SBBFGranules

    md = f.md
    j = _leaf(md, column)
    if j is None or column in f.partition:
        raise CorruptionError(f"no column {column} in the data file", path=f.data_path)
    phys = md.schema.to_arrow_schema().field(column).type
    if pa.types.is_dictionary(phys):
        phys = phys.value_type
    if pa.types.is_large_string(phys) or pa.types.is_string_view(phys):
        phys = pa.string()
    if phys != col_type:
        raise CorruptionError(f"column stored as {phys}, declared {col_type}: its Bloom filters hash other bytes",
                              path=f.data_path)
    zmarks, marks, zone_rg = _zones_of_row_groups(f)
    n = marks.shape[0] - 1
    try:
        filters = read_column_chunk_filters(os.fdopen(os.dup(f.fd), "rb"), md, j, f.data_path)
    except (SkipidxError, OSError) as e:
        raise CorruptionError(f"unreadable Bloom filter: {getattr(e, 'message', e)}", path=f.data_path) from None
    if not any(x is not None for x in filters):
        raise CorruptionError("no Bloom filter", path=f.data_path)
    full = SBBF.from_bytes(b"\xff" * 32)
    filters = [x if x is not None else full for x in filters]
    nulls = np.zeros(n, dtype=np.int64)
    for g in range(n):
        st = md.row_group(g).column(j).statistics
        if st is not None and st.has_null_count:
            nulls[g] = st.null_count
            continue
        nulls[g] = -1       # unknown: "some"
    zl = np.diff(zmarks)
    rl = np.diff(marks)
    znulls = np.where(nulls[zone_rg] < 0, np.minimum(1, zl), _zone_nulls(np.maximum(nulls, 0), rl, zone_rg, zl))
    bank = SBBFBank.from_filters([filters[g] for g in zone_rg.tolist()])
    p = itype.params
    return SBBFGranules(itype.name, p, p["tokenizer"], str(itype.tokenizer.version), zmarks[:-1].copy(),
                        zl, znulls, bank, None)
