"""Bulk import of files: Parquet, CSV (with or without a header row),
JSONEachRow -- streamed in blocks, so memory stays bounded by the insert's
part size whatever the file size.

As ClickHouse by default: in text formats ``\\N`` is NULL; an empty unquoted
CSV field, a NULL (any format, Parquet included) or an omitted JSON key in a
non-Nullable column takes the type's default value (``input_format_null_as_default``,
``input_format_csv_empty_as_default``, ``input_format_defaults_for_omitted_fields``);
everything else must parse as the column's type and fit its range.
"""
from __future__ import annotations

import os
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.store.metadata import TableMeta

__all__ = ["FORMATS", "open_file_batches", "normalize_format"]

#: Accepted format names (case-insensitive) -> canonical name.
FORMATS = {
    "parquet": "Parquet",
    "csv": "CSV",
    "csvwithnames": "CSVWithNames",
    "jsoneachrow": "JSONEachRow",
    "jsonlines": "JSONEachRow",
    "ndjson": "JSONEachRow",
}
_BY_EXT = {".parquet": "Parquet", ".pq": "Parquet", ".csv": "CSV",
           ".jsonl": "JSONEachRow", ".ndjson": "JSONEachRow", ".json": "JSONEachRow"}
BLOCK_BYTES = 16 << 20


def normalize_format(fmt: str | None, path: str) -> str:
    if fmt is None:
        ext = os.path.splitext(path)[1].lower()
        if ext not in _BY_EXT:
            raise SkipidxError(f"cannot tell the format of {path!r} from its extension; "
                               f"say FORMAT {' | '.join(sorted(set(FORMATS.values())))}")
        return _BY_EXT[ext]
    canon = FORMATS.get(str(fmt).lower())
    if canon is None:
        raise SkipidxError(f"unknown format {fmt!r}; supported: {', '.join(sorted(set(FORMATS.values())))}")
    return canon


def _parse_type(t: pa.DataType) -> pa.DataType:
    """Type a text reader parses a column as (cast_to then range-checks)."""
    if pa.types.is_unsigned_integer(t) and t.bit_width == 64:
        return pa.uint64()
    if pa.types.is_integer(t):
        return pa.int64()
    if pa.types.is_floating(t):
        return pa.float64()
    return t


def _default(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_string(t):
        return pa.scalar("", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False)
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return pa.scalar(0, pa.int64()).cast(pa.int32() if pa.types.is_date32(t) else pa.int64()).cast(t)
    return pa.scalar(0, t)


def _defaults_for_nulls(meta: TableMeta, batch: pa.RecordBatch | pa.Table) -> pa.Table:
    t = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    cols = []
    for name in t.column_names:
        c = t.column(name)
        try:
            ctype = meta.column(name).type
        except SkipidxError:
            cols.append(c)
            continue
        if c.null_count and not ctype.nullable and not pa.types.is_null(c.type):
            c = pc.fill_null(c, _default(c.type))
        cols.append(c)
    return pa.Table.from_arrays(cols, names=t.column_names)


def _wrap(it: Iterator, fmt: str, path: str) -> Iterator[pa.Table]:
    try:
        for b in it:
            yield b
    except SkipidxError:
        raise
    except (pa.ArrowException, OSError, ValueError) as e:
        raise SkipidxError(f"{fmt}: {e}", path=path) from None


def open_file_batches(path: str, fmt: str | None, meta: TableMeta, **options: Any) -> Iterator[pa.Table]:
    """Stream `path` as Arrow tables with the table's column names; parsing
    errors become SkipidxError naming the file."""
    path = os.fspath(path)
    fmt = normalize_format(fmt, path)
    if not os.path.isfile(path):
        raise SkipidxError("no such file", path=path)
    if options and fmt not in ("CSV", "CSVWithNames"):
        raise SkipidxError(f"format {fmt} takes no options (got {', '.join(sorted(options))})")
    if fmt == "Parquet":
        return _wrap(_parquet(path, meta), fmt, path)
    if fmt in ("CSV", "CSVWithNames"):
        return _wrap(_csv(path, fmt, meta, **options), fmt, path)
    return _wrap(_json(path, meta), fmt, path)


def _parquet(path: str, meta: TableMeta) -> Iterator[pa.Table]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    for b in pf.iter_batches(batch_size=64 * 1024):
        yield _defaults_for_nulls(meta, b)


def _csv(path: str, fmt: str, meta: TableMeta, **options: Any) -> Iterator[pa.Table]:
    import pyarrow.csv as pcsv

    header = fmt.endswith("WithNames")
    delimiter = options.pop("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
        raise SkipidxError(f"CSV delimiter must be one character other than a quote or newline, got {delimiter!r}")
    if options:
        raise SkipidxError(f"unknown import options: {', '.join(sorted(options))}")
    types = {c.name: _parse_type(c.type.arrow_type) for c in meta.columns}
    ro = pcsv.ReadOptions(block_size=BLOCK_BYTES, column_names=None if header else meta.column_names)
    # RFC 4180 quoting as ClickHouse's CSV: "..." with "" for a quote
    po = pcsv.ParseOptions(delimiter=delimiter, quote_char='"', double_quote=True, newlines_in_values=True)
    co = pcsv.ConvertOptions(column_types=types, null_values=["\\N", ""], strings_can_be_null=True,
                             quoted_strings_can_be_null=False, true_values=["true", "1"],
                             false_values=["false", "0"], timestamp_parsers=["%Y-%m-%d %H:%M:%S", pcsv.ISO8601])
    reader = pcsv.open_csv(path, read_options=ro, parse_options=po, convert_options=co)
    for b in reader:
        yield _defaults_for_nulls(meta, b)


def _json(path: str, meta: TableMeta) -> Iterator[pa.Table]:
    import pyarrow.json as pj

    fields = []
    temporal = []
    for c in meta.columns:
        t = c.type.arrow_type
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            fields.append(pa.field(c.name, pa.string()))   # parsed below, with ClickHouse's text forms
            temporal.append(c)
        else:
            fields.append(pa.field(c.name, _parse_type(t)))
    schema = pa.schema(fields)
    ro = pj.ReadOptions(block_size=BLOCK_BYTES)
    po = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error", newlines_in_values=False)
    for b in pj.open_json(path, read_options=ro, parse_options=po):
        t = pa.Table.from_batches([b])
        for c in temporal:
            i = t.column_names.index(c.name)
            t = t.set_column(i, c.name, _parse_temporal(t.column(c.name), c.type.arrow_type, c.name))
        yield _defaults_for_nulls(meta, t)


def _parse_temporal(col: pa.ChunkedArray, t: pa.DataType, name: str) -> pa.ChunkedArray:
    try:
        if pa.types.is_date32(t):
            return pc.cast(col, t)
        # "YYYY-MM-DD hh:mm:ss" (ClickHouse's text form) or ISO 8601 with T
        norm = pc.replace_substring(col, " ", "T", max_replacements=1)
        return pc.cast(pc.cast(norm, pa.timestamp("s")), t)
    except pa.ArrowInvalid as e:
        raise SkipidxError(f"column {name!r}: cannot parse a value as {'Date' if pa.types.is_date32(t) else 'DateTime'}: {e}") from None
