"""Registers the built-in index types (imported lazily by ``get_index_type``)."""
from __future__ import annotations

from skipidx.indexes.bloom import AdaptiveSBBFIndex, BloomFilterIndex, NgramBFIndex, TokenBFIndex
from skipidx.indexes.minmax import MinMaxIndex
from skipidx.indexes.set_index import SetIndex
from skipidx.indexes.text import TextIndex

BUILTIN_INDEX_TYPES = (MinMaxIndex, SetIndex, BloomFilterIndex, TokenBFIndex, NgramBFIndex, AdaptiveSBBFIndex,
                       TextIndex)

__all__ = ["BUILTIN_INDEX_TYPES", "MinMaxIndex", "SetIndex", "BloomFilterIndex", "TokenBFIndex",
           "NgramBFIndex", "AdaptiveSBBFIndex", "TextIndex"]
