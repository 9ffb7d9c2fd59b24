"""What the pruner needs from a part: the granule-source protocol.

In the spirit of DataFusion's ``PruningStatistics``: the planner prunes
anything that can say where its granules start, what each of its indexes
holds and what its data file's row-group statistics are. ``store.Part``
(a MergeTree part) and ``store.external.ExternalFile`` (a Parquet file of an
external table, a granule per row group) implement it.
"""
from __future__ import annotations

from typing import Iterable, Protocol, runtime_checkable

import numpy as np
from skipidx.core.lazy import parquet as pq

from skipidx.indexes.base import IndexGranules


@runtime_checkable
class GranuleSource(Protocol):
    name: str
    path: str

    @property
    def marks(self) -> np.ndarray:
        """Row offset of every data granule, plus the row count at the end."""

    def index_entry(self, name: str) -> dict | None:
        """The index's entry (file, fingerprint); None when not materialized here."""

    def load_index(self, name: str) -> IndexGranules:
        """The index's granules, checked; CorruptionError when damaged."""

    def data_metadata(self, columns: Iterable[str] = ()) -> pq.FileMetaData:
        """The data file's footer (row-group statistics), readable for `columns`."""

    def key_statistics(self, column: str) -> tuple[list, list, np.ndarray] | None:
        """(mins, maxs, null counts) per granule of ORDER BY column `column` recorded
        apart from the footer; None: read them from :meth:`data_metadata`."""


@runtime_checkable
class SnapshotSource(Protocol):
    """What the planner needs from a table at one generation: ``store.TableSnapshot``
    (kind "merge_tree") and ``store.external.ExternalSnapshot`` (kind "external")."""

    kind: str
    meta: object
    parts: list

    @property
    def notes(self) -> list[str]:
        """Lines the query's statistics carry about the parts (skipped or stale files)."""
