"""Query results: a cursor over Arrow data.

A :class:`Result` holds what one statement produced: the rows of a SELECT
(or SHOW / DESCRIBE / EXPLAIN), the :class:`QueryStats` of how its WHERE
pruned, or, for DDL and INSERT, a message (``Ok, 1,000 rows inserted``).

It is a DB-API style cursor: ``fetchone()`` advances and returns ``None`` at
the end, ``fetchmany(n)``, iteration and ``fetchall()`` hand out the rows not
fetched yet. ``arrow()`` / ``to_arrow()`` / ``df()`` / ``pl()`` give the whole
result, whatever was fetched. ``fetch_record_batch(n)`` is a
``pyarrow.RecordBatchReader`` of the rows not fetched yet, and the Arrow
PyCapsule protocol (``__arrow_c_stream__``) lets DuckDB, Polars and pyarrow
read a result without a copy through Python.

A SELECT without aggregation, ORDER BY or DISTINCT with a large result is *streamed*: its
granules are read as the consumer pulls (``fetch_record_batch``, the
capsule stream, ``fetchone``/``fetchmany``/iteration), so memory stays
bounded by a few scan batches whatever the result size. Such a result can be
read once: after rows were handed out, ``arrow()`` of the whole result is an
error. Its ``stats.rows_read`` grows as it is read.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from skipidx.core.closing import Closing
from skipidx.core.errors import SkipidxError
from skipidx.engine.formats import ch_type_name, types_of as _types_of
from skipidx.planner.stats import IndexStats, QueryStats

__all__ = ["Result", "QueryStats", "IndexStats", "ch_type_name"]

#: Rows shown by ``repr(result)`` (DuckDB's relation preview shows a few too).
REPR_ROWS = 10


class Result(Closing):
    """The result of one statement: a cursor over its rows, plus stats for a SELECT.

    `format_name` and `outfile` are a SELECT's ``FORMAT name`` and ``INTO OUTFILE
    'path'`` (None when not written); whoever prints or writes the result uses them."""

    def __init__(self, table: pa.Table | None = None, stats: QueryStats | None = None,
                 message: str | None = None, *, types: Sequence[str] | None = None,
                 stream: Iterator[pa.Table] | None = None, schema: pa.Schema | None = None,
                 on_close: Callable[[], None] | None = None, rows_affected: int | None = None) -> None:
        self.stats = stats
        #: a short text for statements without rows ("created table t", "inserted 3 rows")
        self.message = message
        #: rows written by an INSERT (None for other statements)
        self.rows_affected = rows_affected
        #: the output format and file a query asked for (``FORMAT f``, ``INTO OUTFILE 'p'``)
        self.format_name: str | None = None
        self.outfile: str | None = None
        self._on_close = on_close
        if stream is not None:
            if schema is None:
                raise ValueError("a streamed Result needs its schema")
            self._table: pa.Table | None = None
            self._schema = schema
            self._stream: Iterator[pa.Table] | None = stream
        else:
            self._table = table if table is not None else pa.table({})
            self._schema = self._table.schema
            self._stream = None
            self._close_source()
        self._types = list(types) if types is not None else None
        self._pos = 0                      # rows handed out by the cursor
        self._pending: pa.Table | None = None   # streamed rows pulled but not handed out
        self._handed_out = False           # a streamed result gave rows away: it is read once

    # -- description ------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        """Column names."""
        return list(self._schema.names)

    column_names = columns

    @property
    def types(self) -> list[str]:
        """ClickHouse type names of the columns (``UInt64``, ``Nullable(String)``, ...)."""
        if self._types is None:
            self._types = _types_of(self._schema, self._table)
        return list(self._types)

    @property
    def description(self) -> list[tuple] | None:
        """PEP 249: one 7-tuple per column (name, type_code, display_size,
        internal_size, precision, scale, null_ok); None for a statement without rows."""
        if not self._schema.names:
            return None
        return [(n, t, None, None, None, None, t.startswith("Nullable("))
                for n, t in zip(self.columns, self.types)]

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def streaming(self) -> bool:
        """Whether rows are still read from the table as they are pulled."""
        return self._stream is not None

    # -- whole result --------------------------------------------------------
    def _materialize(self) -> pa.Table:
        if self._table is None:
            if self._handed_out:
                raise SkipidxError("this streamed result was already read (fetch/iteration/stream); "
                                   "a large result is read once: run the query again")
            parts = [self._pending] if self._pending is not None else []
            self._pending = None
            parts.extend(self._drain())
            self._table = (pa.concat_tables(parts) if parts else self._schema.empty_table())
        return self._table

    def _drain(self) -> Iterator[pa.Table]:
        stream, self._stream = self._stream, None
        if stream is None:
            return
        try:
            for t in stream:
                yield self._conform(t)
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
            self._close_source()

    def _conform(self, t: pa.Table) -> pa.Table:
        if not t.schema.equals(self._schema):
            try:
                t = t.cast(self._schema)
            except (pa.ArrowInvalid, ValueError):
                t = pa.Table.from_arrays(t.columns, schema=self._schema)
        return t

    def _close_source(self) -> None:
        cb, self._on_close = self._on_close, None
        if cb is not None:
            cb()

    @property
    def num_rows(self) -> int:
        return self._materialize().num_rows

    def __len__(self) -> int:
        return self.num_rows

    def to_arrow(self) -> pa.Table:
        """The whole result as a pyarrow Table."""
        return self._materialize()

    arrow = to_arrow

    def to_pandas(self):
        """The whole result as a pandas DataFrame."""
        return self._materialize().to_pandas()

    df = to_pandas

    def pl(self):
        """The whole result as a polars DataFrame (polars must be installed)."""
        try:
            import polars
        except ImportError:
            raise SkipidxError("Result.pl() needs polars: pip install polars") from None
        return polars.from_arrow(self._materialize())

    def scalar(self) -> Any:
        """The single value of a one-row, one-column result (e.g. ``count()``)."""
        t = self._materialize()
        if t.num_columns != 1 or t.num_rows != 1:
            raise SkipidxError(f"scalar() needs a 1x1 result, got {t.num_rows} rows "
                               f"x {t.num_columns} columns")
        return t.column(0)[0].as_py()

    # -- cursor ------------------------------------------------------------------
    def _next_table(self, n: int | None) -> pa.Table | None:
        """Up to `n` (None: all) rows not handed out yet, as a table; None at the end."""
        if self._table is not None:
            left = self._table.num_rows - self._pos
            if left <= 0:
                return None
            take = left if n is None else min(n, left)
            t = self._table.slice(self._pos, take)
            self._pos += take
            return t
        got: list[pa.Table] = []
        want = n
        while want is None or want > 0:
            if self._pending is None or self._pending.num_rows == 0:
                self._pending = None
                nxt = self._pull()
                if nxt is None:
                    break
                self._pending = nxt
                continue
            take = self._pending.num_rows if want is None else min(want, self._pending.num_rows)
            got.append(self._pending.slice(0, take))
            self._pending = self._pending.slice(take) if take < self._pending.num_rows else None
            if want is not None:
                want -= take
        if not got:
            return None
        self._handed_out = True
        t = pa.concat_tables(got) if len(got) > 1 else got[0]
        self._pos += t.num_rows
        return t

    def _pull(self) -> pa.Table | None:
        if self._stream is None:
            return None
        try:
            t = next(self._stream)
        except StopIteration:
            self._stream = None
            self._close_source()
            return None
        except BaseException:
            self.close()
            raise
        return self._conform(t)

    @staticmethod
    def _rows(t: pa.Table) -> list[tuple]:
        try:
            cols = [c.to_pylist() for c in t.columns]
        except UnicodeDecodeError:
            # only bytes no skipidx writer made (a data file edited with its
            # checksums recomputed, or another tool's) get here
            raise SkipidxError("a String value read is not valid UTF-8 (a damaged or foreign data file); "
                               "use to_arrow() to read the raw values") from None
        if not cols:
            return []
        return list(zip(*cols))

    def fetchone(self) -> tuple | None:
        """The next row as a tuple, or None when every row was fetched."""
        t = self._next_table(1)
        return None if t is None else self._rows(t)[0]

    def fetchmany(self, size: int = 1) -> list[tuple]:
        """The next `size` rows (fewer at the end, [] when none are left)."""
        if size is None or size < 0:
            raise SkipidxError(f"fetchmany size must be >= 0, got {size!r}")
        t = self._next_table(int(size)) if size else None
        return [] if t is None else self._rows(t)

    def fetchall(self) -> list[tuple]:
        """The rows not fetched yet (all of them on a fresh result), as Python
        tuples (strings as str, DateTime as datetime, NULL as None)."""
        if self._table is None and not self._handed_out and self._pos == 0:
            self._materialize()
        t = self._next_table(None)
        return [] if t is None else self._rows(t)

    def fetch_arrow_table(self) -> pa.Table:
        """The rows not fetched yet, as a pyarrow Table."""
        t = self._next_table(None)
        return self._schema.empty_table() if t is None else t

    def __iter__(self) -> Iterator[tuple]:
        while True:
            t = self._next_table(1024)
            if t is None:
                return
            yield from self._rows(t)

    def fetch_record_batch(self, rows_per_batch: int = 65536) -> pa.RecordBatchReader:
        """A ``pyarrow.RecordBatchReader`` of the rows not fetched yet, in
        batches of at most `rows_per_batch` rows; a streamed result reads its
        granules as the reader is pulled."""
        n = int(rows_per_batch)
        if n <= 0:
            raise SkipidxError(f"rows_per_batch must be > 0, got {rows_per_batch!r}")

        def batches() -> Iterator[pa.RecordBatch]:
            while True:
                t = self._next_table(n)
                if t is None:
                    return
                for b in t.to_batches(max_chunksize=n):
                    if b.num_rows:
                        yield b

        return pa.RecordBatchReader.from_batches(self._schema, batches())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """Arrow PyCapsule stream: the whole result of a materialized result
        (so it can be read again), the rows not read yet of a streamed one."""
        if self._table is not None:
            reader = pa.RecordBatchReader.from_batches(self._schema, self._table.to_batches())
        else:
            reader = self.fetch_record_batch()
        return reader.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        return self._schema.__arrow_c_schema__()

    def close(self) -> None:
        """Stop a streamed result (its table snapshot is released)."""
        stream, self._stream = self._stream, None
        self._pending = None
        if stream is not None:
            close = getattr(stream, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    pass
        self._close_source()


    # -- display -------------------------------------------------------------------
    def __repr__(self) -> str:
        if not self._schema.names:
            if self.rows_affected is not None:
                return f"Ok, {self.rows_affected:,} row{'s' if self.rows_affected != 1 else ''} inserted"
            return f"Ok, {self.message}" if self.message else "Ok"
        from skipidx.engine.formats import preview

        if self._table is not None:
            head, total = self._table.slice(0, REPR_ROWS), self._table.num_rows
        else:
            # a streamed result: preview what is pulled already (or the first chunk), count unknown
            if self._pending is None and not self._handed_out:
                self._pending = self._pull()
            head = self._pending.slice(0, REPR_ROWS) if self._pending is not None else self._schema.empty_table()
            total = None
        return preview(head, self.types, total)
