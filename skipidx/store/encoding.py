"""Which columns of a part are written dictionary-encoded, and which ones a
reader may take back as Arrow dictionaries."""
from __future__ import annotations

import io
import json
import os

import pyarrow as pa
from skipidx.core.lazy import compute as pc
from skipidx.core.lazy import parquet as pq

from skipidx.store.manifest import MANIFEST
from skipidx.store.metadata import TableMeta

__all__ = ["DICT_MAX_RATIO_STRING", "DICT_MAX_RATIO_FIXED", "DICT_SAMPLE_GRANULES", "ENCODING_MAX_RATIO",
           "choose_dictionary_columns", "linked_dictionary_columns", "dictionary_readable",
           "choose_column_encodings", "linked_column_encodings"]

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


#: A non-dictionary column is written in another encoding than PLAIN only when a
#: trial on a sample granule shows it at most this fraction of PLAIN's bytes
#: (under the column's codec): DELTA decodes slower than PLAIN, so a percent or
#: two is not worth it (what the trial saves per column: bench/NOTES.md).
ENCODING_MAX_RATIO = 0.9
#: Samples smaller than this keep PLAIN (a trial on a few rows says nothing, and
#: small inserts should not pay for it).
ENCODING_MIN_SAMPLE_ROWS = 1024


def _encoding_candidates(t: pa.DataType) -> tuple[str, ...]:
    """Parquet encodings pyarrow writes for this Arrow type, besides PLAIN."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date(t) \
            or pa.types.is_time(t) or pa.types.is_duration(t):
        return ("DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT")
    if pa.types.is_floating(t):
        return ("BYTE_STREAM_SPLIT",)
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) \
            or pa.types.is_large_binary(t):
        return ("DELTA_LENGTH_BYTE_ARRAY",)
    return ()


def _encoded_bytes(col: pa.Array | pa.ChunkedArray, encoding: str | None, compression: str,
                   level: int | None) -> int:
    buf = io.BytesIO()
    kw = {} if encoding is None else {"column_encoding": {"c": encoding}}
    pq.write_table(pa.table({"c": col}), buf, compression=compression, compression_level=level,
                   use_dictionary=False, write_statistics=False, **kw)
    return buf.tell()


def choose_column_encodings(meta: TableMeta, sample: pa.Table, granule_rows: int,
                            dictionary_columns: list[str], compression: dict[str, str],
                            levels: dict[str, int]) -> dict[str, str]:
    """{column: Parquet encoding} for the columns not written PLAIN, from the data.

    Each column that is neither dictionary-encoded nor boolean/nested is
    written, for one granule of `sample`, PLAIN and in each encoding pyarrow
    supports for its type (DELTA_BINARY_PACKED and BYTE_STREAM_SPLIT for
    integers and timestamps, BYTE_STREAM_SPLIT for floats,
    DELTA_LENGTH_BYTE_ARRAY for strings), under the column's codec; the
    smallest wins if it is at most :data:`ENCODING_MAX_RATIO` of PLAIN. The
    choice holds for the whole part (one decision per part, as the dictionary's).
    """
    n = sample.num_rows
    if n < ENCODING_MIN_SAMPLE_ROWS:
        return {}
    g = max(1, min(granule_rows, n))
    s0 = ((n // g) // 2) * g   # a middle granule: the first may be unusual (a table's start)
    out: dict[str, str] = {}
    dict_cols = set(dictionary_columns)
    for c in meta.columns:
        if c.name in dict_cols or c.type.low_cardinality:
            continue
        cands = _encoding_candidates(c.type.arrow_type)
        if not cands:
            continue
        piece = sample.column(c.name).slice(s0, g)
        if piece.null_count == len(piece):
            continue
        comp, lvl = compression.get(c.name, "lz4"), levels.get(c.name)
        try:
            plain = _encoded_bytes(piece, None, comp, lvl)
            sizes = {e: _encoded_bytes(piece, e, comp, lvl) for e in cands}
        except (pa.ArrowException, ValueError, TypeError):
            continue   # a type this pyarrow cannot write in those encodings: PLAIN
        best = min(sizes, key=sizes.get)
        if sizes[best] <= ENCODING_MAX_RATIO * plain:
            out[c.name] = best
    return out


def linked_column_encodings(data_path: str) -> dict[str, str] | None:
    """The column encodings recorded by the part whose data file `data_path` is."""
    try:
        with open(os.path.join(os.path.dirname(data_path), MANIFEST), "rb") as f:
            d = json.loads(f.read()).get("encodings")
    except (OSError, ValueError, AttributeError):
        return None
    return dict(d) if isinstance(d, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in d.items()) else None
