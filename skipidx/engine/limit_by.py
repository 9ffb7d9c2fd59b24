"""ClickHouse's ``LIMIT n [OFFSET m] BY keys``: after ORDER BY (and DISTINCT), keep rows
m+1 .. m+n of each distinct value of the keys, in the result's order; then LIMIT.

The query runs without its LIMIT BY and LIMIT, with the keys as extra output columns
(an integer literal key is a position in the SELECT list); the rows are then kept by
their rank among the rows of the same key (whole-column numpy), the key columns dropped
and the LIMIT applied."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import BindError, SkipidxError
from skipidx.sql import ast as A

__all__ = ["limit_by_table", "limit_by_query", "keep_by_rank", "group_ids", "value_codes"]

_KEY = "__limit_by_{}"


_err = BindError.at   # (the error at the node's position)


def _count(v: Any, node: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise _err(f"LIMIT BY takes a non-negative integer, got {v!r}", node)
    return v


def limit_by_query(s: A.Select) -> tuple[A.Select, list[int | None]]:
    """(the query to run: `s` without LIMIT BY and LIMIT, with hidden key columns, the
    output position of each key where it is an output column already, else None)."""
    lb = s.limit_by
    items = list(s.items)
    star = any(isinstance(i.expr, A.Star) for i in items)
    positions: list[int | None] = []
    hidden: list[A.SelectItem] = []
    for i, e in enumerate(lb.exprs):
        if isinstance(e, A.Literal) and e.kind == "int":
            k = int(e.value)
            if star or not 1 <= k <= len(items):
                raise _err(f"LIMIT BY position {k} is out of range: the SELECT list has {len(items)} items"
                           if not star else "LIMIT BY with a position and SELECT * is not supported: name the key", e)
            positions.append(k - 1)
            continue
        positions.append(None)
        if s.distinct:
            # DISTINCT runs before LIMIT BY: a key outside the output would change which rows are distinct
            raise _err("LIMIT BY with SELECT DISTINCT: name the key by its position in the SELECT list", e)
        hidden.append(A.SelectItem(e, _KEY.format(i), pos=e.pos))
    q = dataclasses.replace(s, items=tuple(items) + tuple(hidden), limit=None, offset=None, limit_by=None,
                            format=None, outfile=None)
    return q, positions


def limit_by_table(db: Any, s: A.Select, run: Callable[[Any, A.Select], tuple]) -> tuple[pa.Table, Any, list[str]]:
    """(rows, stats, ClickHouse types) of SELECT `s` with its LIMIT BY; `run(db, q)` gives
    (table, stats, types or None) of a query without one."""
    from skipidx.engine.result import Result

    lb = s.limit_by
    n, m = _count(lb.limit, lb), _count(lb.offset or 0, lb)
    q, positions = limit_by_query(s)
    table, stats, types = run(db, q)
    if types is None:
        types = Result(table).types
    nhidden = sum(p is None for p in positions)
    width = table.num_columns - nhidden
    it = iter(range(width, table.num_columns))
    keys = [table.column(p) if p is not None else table.column(next(it)) for p in positions]
    table = table.select(list(range(width)))
    table = table.filter(pa.array(keep_by_rank(keys, n, m)))
    limit = _count(s.limit, s) if s.limit is not None else None
    offset = _count(s.offset or 0, s)
    if offset:
        table = table.slice(min(offset, table.num_rows))
    if limit is not None:
        table = table.slice(0, min(limit, table.num_rows))
    return table, stats, list(types[:width])


def keep_by_rank(keys: list[Any], n: int, m: int) -> np.ndarray:
    """Which rows are among rows m+1 .. m+n of their key (the keys' values together),
    counting in row order."""
    rows = len(keys[0]) if keys else 0
    if rows == 0:
        return np.zeros(0, dtype=bool)
    gid = group_ids(keys)
    order = np.argsort(gid, kind="stable")
    sg = gid[order]
    starts = np.r_[0, np.flatnonzero(sg[1:] != sg[:-1]) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, rows]))
    rank = np.empty(rows, dtype=np.int64)
    rank[order] = np.arange(rows) - first
    return (rank >= m) & (rank < m + n)


def value_codes(col: Any) -> np.ndarray:
    """Integer codes of a column's values (equal values, NULLs included, share a code)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type) or pa.types.is_struct(col.type):
        # (Arrow cannot dictionary-encode these): each row's text decides equality
        col = pa.array([repr(v) for v in col.to_pylist()], pa.string())
    try:
        enc = pc.dictionary_encode(col, null_encoding="encode")
    except pa.ArrowNotImplementedError:
        raise SkipidxError(f"LIMIT BY on a column of type {col.type} is not supported") from None
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def group_ids(keys: list[Any]) -> np.ndarray:
    """One int64 id per row for the keys' values together (rows with equal keys share it)."""
    codes = np.column_stack([value_codes(k) for k in keys])
    _, gid = np.unique(codes, axis=0, return_inverse=True)
    return gid.reshape(-1).astype(np.int64)
