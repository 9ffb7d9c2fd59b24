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

import contextlib
import os
import re
from typing import Any, Iterator

import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.store.metadata import TableMeta

__all__ = ["FORMATS", "open_file_batches", "normalize_format", "insert_any", "expand_paths",
           "parse_datetimes", "detect_csv_header"]

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
#: Rows per block of a Parquet import. Smaller blocks grow (and copy) Arrow's string
#: builders less and touch fewer fresh pages for the same rows (bench/NOTES.md).
PARQUET_BATCH_ROWS = 16 * 1024


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
            if pa.types.is_dictionary(c.type):
                c = c.cast(c.type.value_type)
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
        raise SkipidxError(f"{fmt}: {redact(str(e))}", path=path) from None


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_AFTER_COUNT = re.compile(r"(got \d+( columns)?):.*", re.S)


def redact(msg: str) -> str:
    """An Arrow parse error without the bytes of the file it quotes (a row
    after "got N columns:", quoted values): an error never echoes a file's
    contents (INFILE '/etc/shadow' must not print its first line)."""
    msg = _AFTER_COUNT.sub(r"\1", msg)
    msg = _QUOTED.sub("<value>", msg)
    return msg.splitlines()[0][:300] if msg else msg


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

    # One row group at a time, no pre-buffering: pyarrow's pre_buffer keeps
    # every row group read so far cached for the reader's lifetime (a 10M-row
    # file held ~2.9 GB); without it memory is one row group's column chunks
    # plus one batch, whatever the file size.
    from skipidx.store.parquet_check import check_footer

    check_footer(path)   # pyarrow aborts on some damaged footers it parses
    # The blocks are decoded into the system allocator's memory: Arrow's default
    # (mimalloc) hands a freed block's pages back to the OS at once, so every block
    # of a stream grew into fresh pages the kernel had to zero (~15 % of a plain
    # INSERT's CPU); malloc keeps and reuses them. What pq.ParquetFile opens, with a pool.
    pool = pa.system_memory_pool()
    dictionary = _dictionary_reads(path, meta) or None
    reader = pq.ParquetReader(memory_pool=pool)
    reader.open(path, pre_buffer=False, buffer_size=1 << 20, arrow_extensions_enabled=True,
                read_dictionary=dictionary)
    with _transcoder(path) as tc:
        for rg in range(reader.metadata.num_row_groups):
            # Snappy row groups are decompressed by cramjam and decoded by pyarrow from
            # memory (store/parquet_transcode.py); any other row group is read as it is
            src, at = reader, rg
            own = tc.row_group(rg) if tc is not None else None
            if own is not None:
                one = pq.ParquetReader(memory_pool=pool)
                one.open(pa.BufferReader(own), pre_buffer=False, arrow_extensions_enabled=True,
                         read_dictionary=dictionary)
                if one.schema_arrow.equals(reader.schema_arrow) and one.metadata.num_rows == \
                        reader.metadata.row_group(rg).num_rows:
                    src, at = one, 0
            for b in src.iter_batches(PARQUET_BATCH_ROWS, [at], use_threads=False):
                yield _defaults_for_nulls(meta, b)
            # let go of the decompressed row group before the next one, so its buffer is reused
            own = one = src = None


@contextlib.contextmanager
def _transcoder(path: str) -> Iterator[Any]:
    """A :class:`~skipidx.store.parquet_transcode.RowGroupTranscoder` of the file at
    `path` for a ``with`` block (None where no row group has a Snappy chunk)."""
    from skipidx.store.parquet_transcode import RowGroupTranscoder

    try:
        fd = os.open(path, os.O_RDONLY)   # (not inherited by children: PEP 446)
    except OSError:
        yield None
        return
    try:
        try:
            tc = RowGroupTranscoder(fd, os.fstat(fd).st_size, path)
        except (OSError, SkipidxError, ValueError):
            tc = None
        yield tc if tc is not None and tc.applies() else None
    finally:
        os.close(fd)


#: A source column chunk whose dictionary page is larger than this is read decoded (its
#: dictionary is too large to be written as it is; see conform.DICT_PASS_MAX_ENTRIES).
DICT_READ_MAX_PAGE = 64 << 10


def _dictionary_reads(path: str, meta: TableMeta) -> list[str]:
    """The LowCardinality columns read as Arrow dictionaries from Parquet file `path`
    (:func:`skipidx.store.conform.dictionary_passthrough_columns`): String columns of the
    file whose first row group has them dictionary-encoded with a small dictionary page."""
    import pyarrow.parquet as pq

    from skipidx.store.conform import dictionary_passthrough_columns

    names = dictionary_passthrough_columns(meta)
    if not names:
        return []
    try:
        pf = pq.ParquetFile(path)
        md, schema = pf.metadata, pf.schema_arrow
    except (pa.ArrowException, OSError, ValueError):
        return []
    if md.num_row_groups == 0:
        return []
    rg = md.row_group(0)
    leaf = {rg.column(j).path_in_schema: rg.column(j) for j in range(rg.num_columns)}
    out = []
    for n in names:
        i = schema.get_field_index(n)
        cc = leaf.get(n)
        if i < 0 or cc is None or not pa.types.is_string(schema.field(i).type) or not cc.has_dictionary_page:
            continue
        if cc.dictionary_page_offset is None or not 0 < cc.data_page_offset - cc.dictionary_page_offset <= DICT_READ_MAX_PAGE:
            continue
        out.append(n)
    return out


def detect_csv_header(path: str, names: list[str], delimiter: str = ",") -> bool:
    """Whether the first row of a CSV file names the table's columns
    (ClickHouse's input_format_csv_detect_header): every field is a column
    name and every column is named once."""
    import csv

    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            first = next(csv.reader(fh, delimiter=delimiter), None)
    except OSError as e:
        raise SkipidxError(f"cannot read: {e.strerror}", path=path) from None
    if not first:
        return False
    return sorted(f.strip() for f in first) == sorted(names)


def _csv(path: str, fmt: str, meta: TableMeta, **options: Any) -> Iterator[pa.Table]:
    import pyarrow.csv as pcsv

    delimiter = options.pop("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
        raise SkipidxError(f"CSV delimiter must be one character other than a quote or newline, got {delimiter!r}")
    if options:
        raise SkipidxError(f"unknown import options: {', '.join(sorted(options))}")
    header = fmt.endswith("WithNames") or detect_csv_header(path, meta.column_names, delimiter)
    temporal = {c.name: c for c in meta.columns if _is_temporal(c.type.arrow_type)}
    types = {c.name: (pa.string() if c.name in temporal else _parse_type(c.type.arrow_type)) for c in meta.columns}
    ro = pcsv.ReadOptions(block_size=BLOCK_BYTES, column_names=None if header else meta.column_names)
    # RFC 4180 quoting as ClickHouse's CSV: "..." with "" for a quote
    po = pcsv.ParseOptions(delimiter=delimiter, quote_char='"', double_quote=True, newlines_in_values=True)
    co = pcsv.ConvertOptions(column_types=types, null_values=["\\N", ""], strings_can_be_null=True,
                             quoted_strings_can_be_null=False, true_values=["true", "1"],
                             false_values=["false", "0"])
    try:
        reader = pcsv.open_csv(path, read_options=ro, parse_options=po, convert_options=co)
    except pa.ArrowInvalid as e:
        raise _located(e, path, fmt, meta, header, delimiter, 0) from None
    row = 0
    while True:
        try:
            b = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as e:
            raise _located(e, path, fmt, meta, header, delimiter, row) from None
        t = pa.Table.from_batches([b])
        t = _parse_temporal_columns(t, temporal, path, row + (1 if header else 0))
        row += b.num_rows
        yield _defaults_for_nulls(meta, t)


def _located(e: Exception, path: str, fmt: str, meta: TableMeta, header: bool, delimiter: str,
             from_row: int) -> SkipidxError:
    """A CSV conversion error with the line and column of the first bad value
    (Arrow names only the column): the file is read again as text, from the
    failing block on, and the value found by bisecting casts."""
    import re

    import pyarrow.csv as pcsv

    msg = str(e)
    m = re.search(r"CSV column #(\d+)", msg)
    if m is None:
        line = re.search(r"Row #(\d+)", msg)
        return SkipidxError(f"{fmt}: {redact(msg)}", path=path, **({"line": int(line.group(1))} if line else {}))
    col = int(m.group(1))
    names = meta.column_names
    try:
        ro = pcsv.ReadOptions(block_size=BLOCK_BYTES, column_names=None if header else names)
        po = pcsv.ParseOptions(delimiter=delimiter, quote_char='"', double_quote=True, newlines_in_values=True)
        reader = pcsv.open_csv(path, read_options=ro, parse_options=po,
                               convert_options=pcsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                                                   null_values=["\\N", ""], strings_can_be_null=True))
        name = reader.schema.names[col]
        target = _parse_type(meta.column(name).type.arrow_type)
        row = 0
        for b in reader:
            vals = b.column(col)
            bad = _first_bad(vals, target)
            if bad is not None:
                n = row + bad + 1 + (1 if header else 0)
                # the place, not the value: an error never echoes the file's contents
                return SkipidxError(f"{fmt}: cannot parse the value as {meta.column(name).type.name} "
                                    f"in column {name!r}", path=path, line=n, column=col + 1)
            row += b.num_rows
    except (pa.ArrowException, SkipidxError, KeyError, IndexError):
        pass
    return SkipidxError(f"{fmt}: {redact(msg)}", path=path)


def _first_bad(vals: pa.Array, target: pa.DataType) -> int | None:
    """Index of the first value of the string array `vals` that does not cast to `target`."""
    def ok(a: pa.Array) -> bool:
        try:
            pc.cast(a, target)
            return True
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
    if ok(vals):
        return None
    lo, hi = 0, len(vals)          # the first bad one lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(vals.slice(lo, mid - lo)):
            lo = mid
        else:
            hi = mid
    return lo


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t)


def _json(path: str, meta: TableMeta) -> Iterator[pa.Table]:
    import pyarrow.json as pj

    fields = []
    temporal = {}
    for c in meta.columns:
        t = c.type.arrow_type
        if _is_temporal(t):
            # parsed below with ClickHouse's best-effort text forms (epoch numbers as text too)
            fields.append(pa.field(c.name, pa.string()))
            temporal[c.name] = c
        else:
            fields.append(pa.field(c.name, _parse_type(t)))
    schema = pa.schema(fields)
    ro = pj.ReadOptions(block_size=BLOCK_BYTES)
    po = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error", newlines_in_values=False)
    row = 0
    try:
        reader = pj.open_json(path, read_options=ro, parse_options=po)
        while True:
            try:
                b = reader.read_next_batch()
            except StopIteration:
                return
            t = pa.Table.from_batches([b])
            t = _parse_temporal_columns(t, temporal, path, row)
            row += b.num_rows
            yield _defaults_for_nulls(meta, t)
    except pa.ArrowInvalid as e:
        raise _json_located(e, path, meta, row) from None


def _json_located(e: Exception, path: str, meta: TableMeta, before: int) -> SkipidxError:
    """A JSONEachRow error with its line and column (Arrow says 'Column(/name) ... in
    row N' of the failing block): the place, never the value."""
    import re

    msg = str(e)
    m_row = re.search(r"in row (\d+)", msg)
    m_col = re.search(r"Column\(/([^)]*)\)", msg)
    line = before + int(m_row.group(1)) + 1 if m_row else None
    if m_col and m_col.group(1) in meta.column_names:
        name = m_col.group(1)
        return SkipidxError(f"JSONEachRow: column {name!r}: a value does not read as "
                            f"{meta.column(name).type.name}", path=path, line=line)
    return SkipidxError(f"JSONEachRow: {redact(msg)}", path=path, line=line)


def _parse_temporal_columns(t: pa.Table, temporal: dict, path: str, first_line: int) -> pa.Table:
    for name, c in temporal.items():
        if name not in t.column_names:
            continue
        i = t.column_names.index(name)
        t = t.set_column(i, name, parse_datetimes(t.column(name), c.type.arrow_type, name, path=path,
                                                  first_line=first_line, type_name=c.type.name))
    return t


_DT_RE = (r"^\s*(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})"
          r"(?:[T ](?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d+))?)?)?"
          r"\s*(?P<tz>Z|z|UTC|[+-]\d{2}(?::?\d{2})?)?\s*$")
_EPOCH_RE = r"^\s*-?\d+(?:\.\d+)?\s*$"


def parse_datetimes(col: pa.Array | pa.ChunkedArray, t: pa.DataType, name: str = "?", *, path: str | None = None,
                    first_line: int = 0, type_name: str | None = None) -> pa.Array:
    """Text (or numbers) to Date / DateTime / DateTime64 as ClickHouse's
    best-effort parsing reads them: ``2024-01-02``, ``2024-01-02 03:04:05``,
    ``2024-01-02T03:04:05.123Z``, ``...+02:00`` (converted to UTC), and epoch
    seconds (``1704164645``, ``1704164645.5``). A DateTime drops a fraction,
    a DateTime64 keeps its precision. Whole columns, no Python per value."""
    import numpy as np

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else (col.chunk(0) if col.num_chunks else pa.array([], col.type))
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        col = pc.cast(col, pa.string())
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return pc.cast(col, t)
    unit = t.unit if pa.types.is_timestamp(t) else "s"
    per_s = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[unit]
    n = len(col)
    valid = pc.is_valid(col)
    m = pc.extract_regex(col, _DT_RE)
    is_dt = pc.is_valid(m)
    is_epoch = pc.match_substring_regex(col, _EPOCH_RE)
    bad = pc.and_(valid, pc.invert(pc.or_(pc.fill_null(is_dt, False), pc.fill_null(is_epoch, False))))
    if pc.any(bad).as_py():
        idx = pc.index(bad, True).as_py()
        what = type_name or ("Date" if pa.types.is_date(t) else "DateTime")
        raise SkipidxError(f"column {name!r}: cannot parse a value as {what}",   # the place, not the value
                           path=path, line=first_line + idx + 1)

    def field(f: str, default: int = 0) -> np.ndarray:
        a = pc.struct_field(m, f)
        a = pc.if_else(pc.equal(a, ""), pa.scalar(None, pa.string()), a)
        return pc.fill_null(pc.cast(a, pa.int64()), default).to_numpy(zero_copy_only=False)

    y, mo, d = field("y", 1970), field("mo", 1), field("d", 1)
    # days from the civil date (Howard Hinnant's algorithm), vectorized
    yy = y - (mo <= 2)
    era = np.floor_divide(yy, 400)
    yoe = yy - era * 400
    doy = (153 * (mo + np.where(mo > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    secs = days * 86400 + field("h") * 3600 + field("mi") * 60 + field("s")
    frac_txt = pc.struct_field(m, "f")
    frac_txt = pc.utf8_slice_codeunits(pc.binary_join_element_wise(pc.fill_null(frac_txt, ""), "000000000", ""), 0, 9)
    nanos = pc.cast(frac_txt, pa.int64()).to_numpy(zero_copy_only=False)
    tz = pc.fill_null(pc.struct_field(m, "tz"), "")
    tzs = pc.replace_substring(pc.replace_substring_regex(tz, "^(Z|z|UTC)$", ""), ":", "")
    sign = np.where(pc.starts_with(tzs, "-").to_numpy(zero_copy_only=False), -1, 1)
    oh = pc.utf8_slice_codeunits(tzs, 1, 3)
    om = pc.utf8_slice_codeunits(tzs, 3, 5)

    def num(a):
        a = pc.if_else(pc.equal(a, ""), "0", a)
        return pc.cast(a, pa.int64()).to_numpy(zero_copy_only=False)
    secs = secs - sign * (num(oh) * 3600 + num(om) * 60)
    ticks = secs * per_s + nanos // (10**9 // per_s)
    # epoch numbers
    ep = pc.if_else(pc.fill_null(is_epoch, False), col, "0")
    ep_f = pc.cast(ep, pa.float64()).to_numpy(zero_copy_only=False)
    ep_i = pc.cast(pc.utf8_slice_codeunits(pc.replace_substring_regex(ep, r"\..*$", ""), 0, 20), pa.int64()).to_numpy(zero_copy_only=False)
    ep_frac = np.round((ep_f - ep_i) * per_s).astype(np.int64) if per_s > 1 else 0
    ep_ticks = ep_i * per_s + ep_frac
    out = np.where(pc.fill_null(is_epoch, False).to_numpy(zero_copy_only=False), ep_ticks, ticks)
    mask = pc.invert(valid)
    if pa.types.is_date(t):
        day = np.floor_divide(out, per_s * 86400).astype(np.int32)
        return pc.cast(pa.array(day, pa.int32(), mask=mask.to_numpy(zero_copy_only=False)), pa.date32()).cast(t)
    arr = pa.array(out, pa.int64(), mask=mask.to_numpy(zero_copy_only=False))
    return arr.view(pa.timestamp(unit)).cast(t) if t.tz is None else arr.view(pa.timestamp(unit, t.tz))


# ---------------------------------------------------------------------------
# insert of anything
# ---------------------------------------------------------------------------

def expand_paths(spec: Any) -> list[str] | None:
    """The files a path, glob or list of them names (None if `spec` is no path)."""
    import glob

    if isinstance(spec, (str, os.PathLike)):
        specs = [os.fspath(spec)]
    elif isinstance(spec, (list, tuple)) and spec and all(isinstance(x, (str, os.PathLike)) for x in spec):
        specs = [os.fspath(x) for x in spec]
    else:
        return None
    out: list[str] = []
    for sp in specs:
        if any(ch in sp for ch in "*?["):
            hits = sorted(glob.glob(sp, recursive=True))
            if not hits:
                raise SkipidxError(f"no file matches {sp!r}")
            out.extend(h for h in hits if os.path.isfile(h))
        else:
            if not os.path.exists(sp):
                raise SkipidxError("no such file", path=sp)
            out.append(sp)
    return out


def _file_batches(paths: list[str], fmt: str | None, meta: TableMeta) -> Iterator[pa.Table]:
    for p in paths:
        yield from open_file_batches(p, fmt, meta)


def _as_arrow(data: Any) -> Any:
    """Objects the store's insert does not take itself: dicts of columns,
    Arrow C arrays, datasets/scanners."""
    if isinstance(data, dict):
        try:
            return pa.table(data)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise SkipidxError(f"cannot make a table of the dict of columns: {e}") from None
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return data
    if not hasattr(data, "__arrow_c_stream__") and hasattr(data, "__arrow_c_array__"):
        try:
            return pa.record_batch(data)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise SkipidxError(f"cannot read the Arrow array: {e}") from None
    try:
        import pyarrow.dataset as ds
    except ImportError:  # pragma: no cover
        return data
    if isinstance(data, ds.Dataset):
        return data.scanner().to_reader()
    if isinstance(data, ds.Scanner):
        return data.to_reader()
    return data


def insert_any(table: Any, data: Any, *, format: str | None = None, progress: Any = None,
               threads: int | None = None) -> int:
    """Insert `data` into the store table (all or nothing): everything
    ``Table.insert`` takes, plus dicts of columns, ``__arrow_c_array__``
    objects, pyarrow datasets/scanners and paths/globs of files. `progress`:
    a callable(rows_so_far) called as chunks are read. `threads`: the insert's
    workers (None: the cores)."""
    paths = expand_paths(data)
    if paths is not None:
        meta = table.meta
        src: Any = _file_batches(paths, format, meta)
    else:
        if format is not None:
            raise SkipidxError("format= applies to file paths only")
        src = _as_arrow(data)
    if progress is not None:
        src = _counted(src, progress)
    return table.insert(src) if threads is None else table.insert(src, threads=threads)


def _counted(src: Any, cb) -> Iterator[pa.Table]:
    """`src` as a stream of tables, calling cb(rows) as they pass."""
    if isinstance(src, pa.Table):
        it: Any = (src.slice(o, 1 << 20) for o in range(0, max(src.num_rows, 1), 1 << 20))
    elif isinstance(src, pa.RecordBatch):
        it = iter([src])
    elif hasattr(src, "__next__") or isinstance(src, pa.RecordBatchReader):
        it = src
    elif hasattr(src, "__arrow_c_stream__"):
        it = pa.RecordBatchReader.from_stream(src)
    else:
        return src   # pandas and the rest: handed over as is
    done = 0
    def gen():
        nonlocal done
        for b in it:
            yield b
            done += b.num_rows
            cb(done)
    return gen()
