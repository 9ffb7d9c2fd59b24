"""Query results.

A :class:`Result` wraps the Arrow table a statement produced (empty, with no
columns, for DDL/DML) and, for a SELECT or EXPLAIN, the :class:`QueryStats`
of how its WHERE clause pruned.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from skipidx.planner.stats import IndexStats, QueryStats

__all__ = ["Result", "QueryStats", "IndexStats"]


class Result:
    """The result of one statement: rows as Arrow, plus stats for a SELECT.

    `format_name` and `outfile` are a SELECT's ``FORMAT name`` and ``INTO OUTFILE
    'path'`` (None when not written); whoever prints or writes the result uses them."""

    format_name: str | None = None
    outfile: str | None = None

    def __init__(self, table: pa.Table | None = None, stats: QueryStats | None = None,
                 message: str | None = None) -> None:
        self._table = table if table is not None else pa.table({})
        self.stats = stats
        #: a short text for statements without rows ("created table t", "inserted 3 rows")
        self.message = message

    @property
    def column_names(self) -> list[str]:
        return list(self._table.column_names)

    @property
    def num_rows(self) -> int:
        return self._table.num_rows

    def to_arrow(self) -> pa.Table:
        return self._table

    def fetchall(self) -> list[tuple]:
        """All rows as Python tuples (strings as str, DateTime as datetime, NULL as None)."""
        cols = [c.to_pylist() for c in self._table.columns]
        return list(zip(*cols)) if cols else []

    def fetchone(self) -> tuple | None:
        if self._table.num_rows == 0:
            return None
        return tuple(c[0].as_py() for c in self._table.columns)

    def scalar(self) -> Any:
        """The single value of a one-row, one-column result (e.g. ``count()``)."""
        if self._table.num_columns != 1 or self._table.num_rows != 1:
            from skipidx.core.errors import SkipidxError

            raise SkipidxError(f"scalar() needs a 1x1 result, got {self._table.num_rows} rows "
                               f"x {self._table.num_columns} columns")
        return self._table.column(0)[0].as_py()

    def to_pandas(self):
        return self._table.to_pandas()

    df = to_pandas

    def __len__(self) -> int:
        return self._table.num_rows

    def __repr__(self) -> str:
        return f"Result({self._table.num_rows} rows x {self._table.num_columns} columns: {self.column_names})"
