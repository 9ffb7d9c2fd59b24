"""Which columns of a part are written dictionary-encoded, and which ones a
reader may take back as Arrow dictionaries."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.compute as pc

from skipidx.store.manifest import MANIFEST
from skipidx.store.metadata import TableMeta

__all__ = ["DICT_MAX_RATIO_STRING", "DICT_MAX_RATIO_FIXED", "DICT_SAMPLE_GRANULES",
           "choose_dictionary_columns", "linked_dictionary_columns", "dictionary_readable"]

#: A String/binary column is written dictionary-encoded when its values
#: repeat at least this often on average within a granule (distinct/rows at
#: most 1/3), else PLAIN: repeated strings then read faster as an Arrow
#: dictionary (and a filter runs over the distinct values only), unique ones
#: read faster PLAIN (figures in bench/NOTES.md).
DICT_MAX_RATIO_STRING = 1 / 3
#: A fixed-width column (numbers, dates) only when nearly constant
#: (distinct/rows at most 1/20): below that PLAIN reads faster and is smaller.
DICT_MAX_RATIO_FIXED = 1 / 20
#: Granules of the first chunk whose distinct counts decide (first, middle, last).
DICT_SAMPLE_GRANULES = 3


def choose_dictionary_columns(meta: TableMeta, sample: pa.Table, granule_rows: int) -> list[str]:
    """The columns to write dictionary-encoded, from a sample of the part's rows.

    Parquet dictionary encoding is per column chunk, and a column chunk here
    is one granule (one row group per granule), so what decides is how often
    values repeat *within a granule*: the distinct/rows ratio of up to
    :data:`DICT_SAMPLE_GRANULES` granules of `sample` (the part's first
    chunk, once per part). LowCardinality columns
    are always dictionary-encoded (declared so); booleans never (Parquet
    bit-packs them).
    """
    n = sample.num_rows
    if n == 0:
        return []
    g = max(1, min(granule_rows, n))
    starts = sorted({0, ((n // g) // 2) * g, max(0, ((n - 1) // g) * g)})[:DICT_SAMPLE_GRANULES]
    out = []
    for c in meta.columns:
        t = c.type.arrow_type
        if c.type.low_cardinality:
            out.append(c.name)
            continue
        if (pa.types.is_boolean(t) or pa.types.is_null(t) or pa.types.is_nested(t)
                or isinstance(t, pa.BaseExtensionType)):
            continue
        limit = DICT_MAX_RATIO_FIXED if pa.types.is_primitive(t) else DICT_MAX_RATIO_STRING
        col = sample.column(c.name)
        ratios = []
        for s0 in starts:
            piece = col.slice(s0, g)
            ratios.append(pc.count_distinct(piece, mode="all").as_py() / max(1, len(piece)))
        if sum(ratios) / len(ratios) <= limit:
            out.append(c.name)
    return out


def linked_dictionary_columns(data_path: str) -> list[str] | None:
    """The dictionary columns recorded by the part whose data file `data_path`
    is (a hard link keeps the encodings); None when unknown (a read hint only)."""
    try:
        with open(os.path.join(os.path.dirname(data_path), MANIFEST), "rb") as f:
            d = json.loads(f.read()).get("dictionary")
    except (OSError, ValueError, AttributeError):
        return None
    return list(d) if isinstance(d, list) and all(isinstance(x, str) for x in d) else None


def dictionary_readable(t: pa.DataType) -> bool:
    """Parquet BYTE_ARRAY columns: the ones pyarrow can return as dictionaries."""
    return pa.types.is_string(t) or pa.types.is_binary(t)
