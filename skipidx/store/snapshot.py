"""A consistent, pinned view of a table at one generation (what every reader and merge reads)."""
from __future__ import annotations

import os

import pyarrow as pa

from skipidx.core.closing import Closing
from skipidx.core.kms import KeyRing
from skipidx.store.commit import TableState
from skipidx.store.part import Part

__all__ = ["TableSnapshot"]


class TableSnapshot(Closing):
    """A consistent view of a table: its metadata and parts at one generation.

    The parts stay on disk until the snapshot is closed (``close()``, the
    ``with`` block, or garbage collection), even if a merge retires them.
    """

    #: what the planner reads: a MergeTree table ("external": ExternalSnapshot's files)
    kind = "merge_tree"

    def __init__(self, table_dir: str, state: TableState, pin_fd: int | None, *,
                 keyring: KeyRing | None = None) -> None:
        self.table_dir = table_dir
        self.gen = state.gen
        #: the table's incarnation (a DROP and CREATE of the name makes a new one)
        self.table_id = state.table_id
        self.meta = state.meta
        self.parts: list[Part] = [Part(table_dir, e, state.meta, keyring=keyring) for e in state.parts]
        self._pin_fd = pin_fd

    @property
    def notes(self) -> list[str]:
        """What a query should say about the parts it read (nothing to say for MergeTree parts)."""
        return []

    @property
    def num_rows(self) -> int:
        return sum(p.num_rows for p in self.parts)

    def read(self, columns: list[str] | None = None) -> pa.Table:
        """All rows of the snapshot (part by part, each sorted by the key)."""
        schema = self.meta.arrow_schema()
        cols = self.meta.column_names if columns is None else list(columns)
        tables = [p.read(cols) for p in self.parts]
        if not tables:
            return schema.empty_table().select(cols)
        return pa.concat_tables(tables)

    def close(self) -> None:
        if self._pin_fd is not None:
            os.close(self._pin_fd)
            self._pin_fd = None


