"""Output formats with ClickHouse's names, written as ClickHouse writes them.

``TabSeparated`` (``TSV``), ``TabSeparatedWithNames``, ``CSV``,
``CSVWithNames``, ``JSONEachRow``, ``JSON``, ``Pretty``, ``PrettyCompact``,
``Vertical``, ``Markdown`` and ``Parquet``. Used by ``INTO OUTFILE`` in the
engine and by the command line (``--format`` / ``FORMAT``).

Values are converted column by column (pyarrow.compute casts, replaces and
joins), never a Python call per cell except for arrays and the rare float
spelled with an exponent. The text forms follow ClickHouse: floats in their
shortest round-trip digits, positional below 1e21 (``100000000000000000000``,
``1e21``, ``1e-7``), NaN/inf as ``nan``/``inf`` (``null`` in JSON),
Bool as ``true``/``false``, Date and DateTime as ``2024-01-02 03:04:05``,
NULL as ``\\N`` (TSV, CSV, Markdown), ``null`` (JSON) or ``ᴺᵁᴸᴸ`` (Pretty,
Vertical); TSV escapes ``\\ \\t \\n \\0 \\r \\b \\f '`` with a backslash,
CSV quotes strings, dates and arrays (``"`` doubled), JSON escapes ``"``,
``\\``, ``/`` and control characters.

Pretty formats show at most :data:`PRETTY_MAX_ROWS` rows (the first and
last halves, ``Showed 1000 out of N rows.``), and only those rows are
converted to text: a result of millions of rows is counted, not formatted.
Widths are display widths (wcwidth: wide East Asian characters count two,
combining marks zero). Not followed: ClickHouse's terminal niceties -- the
readable-number tips (``-- 1.23 million``), the switch to Vertical for wide
tables, colours.
"""
from __future__ import annotations

import io
from collections import deque
from typing import IO, Any, Iterable, Sequence

import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.arrays import array_of, cast, scalar
from skipidx.core.errors import SkipidxError
from skipidx.expr.kernels.convert import decimal_texts, float_texts, list_texts, quoted_texts, uuid_texts
from skipidx.core.arrays import one_array

__all__ = ["FORMATS", "canonical_format", "format_from_path", "write_table", "write_batches",
           "preview", "text_width", "PRETTY_MAX_ROWS"]

#: names (case-insensitive) -> ClickHouse's canonical name
FORMATS = {n.lower(): n for n in (
    "TabSeparated", "TabSeparatedWithNames", "CSV", "CSVWithNames", "JSONEachRow", "JSON",
    "Pretty", "PrettyCompact", "Vertical", "Markdown", "Parquet")}
FORMATS.update({"tsv": "TabSeparated", "tsvwithnames": "TabSeparatedWithNames",
                "jsonlines": "JSONEachRow", "ndjson": "JSONEachRow"})
_BY_EXT = {".tsv": "TabSeparated", ".tab": "TabSeparated", ".csv": "CSV", ".json": "JSON",
           ".jsonl": "JSONEachRow", ".ndjson": "JSONEachRow", ".parquet": "Parquet",
           ".pq": "Parquet", ".md": "Markdown", ".txt": "TabSeparated"}

#: ClickHouse's output_format_pretty_max_rows
PRETTY_MAX_ROWS = 1000
#: ClickHouse's output_format_pretty_display_footer_column_names_min_rows
PRETTY_FOOTER_MIN_ROWS = 50
NULL_PRETTY = "ᴺᵁᴸᴸ"


def ch_type_name(t: pa.DataType, nullable: bool = False) -> str:
    """ClickHouse's name of a result column of Arrow type `t`."""
    if pa.types.is_dictionary(t):
        inner = ch_type_name(t.value_type, nullable)
        return f"LowCardinality({inner})"
    base: str
    if pa.types.is_timestamp(t):
        tz = f", '{t.tz}'" if t.tz else ""
        if t.unit == "s":
            base = f"DateTime('{t.tz}')" if t.tz else "DateTime"
        else:
            base = f"DateTime64({ {'ms': 3, 'us': 6, 'ns': 9}[t.unit]}{tz})"
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if pa.types.is_null(t.value_type):
            from skipidx.expr.types import is_nullable_nothing_list

            # `[]` is Array(Nothing); `[NULL]`, arrayMap(x -> NULL, ...) Array(Nullable(Nothing))
            return "Array(Nullable(Nothing))" if is_nullable_nothing_list(t) else "Array(Nothing)"
        return f"Array({ch_type_name(t.value_type, t.value_field.nullable and not pa.types.is_nested(t.value_type))})"
    elif pa.types.is_decimal(t):
        base = f"Decimal({t.precision}, {t.scale})"
    elif pa.types.is_fixed_size_binary(t):
        base = "UUID" if "uuid" in str(t).lower() else f"FixedString({t.byte_width})"
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        base = "String"
    elif pa.types.is_null(t):
        return "Nullable(Nothing)"
    else:
        from skipidx.core.types import ch_type_of

        try:
            base = ch_type_of(t)
        except SkipidxError:
            base = str(t)
    return f"Nullable({base})" if nullable else base


def types_of(schema: pa.Schema, table: pa.Table | None = None) -> list[str]:
    """ClickHouse type names of a result's columns (Nullable where a column holds a NULL)."""
    out = []
    for i, f in enumerate(schema):
        nullable = table is not None and table.column(i).null_count > 0
        out.append(ch_type_name(f.type, nullable))
    return out


def canonical_format(name: str) -> str:
    """ClickHouse's spelling of an output format name; SkipidxError if unknown."""
    canon = FORMATS.get(str(name).strip().lower())
    if canon is None:
        names = sorted({v for v in FORMATS.values()} | {"TSV"})
        raise SkipidxError(f"unknown output format {name!r}; supported: {', '.join(names)}")
    return canon


def format_from_path(path: str, default: str = "TabSeparated") -> str:
    """The format an ``INTO OUTFILE`` path implies by its extension (ClickHouse does the same)."""
    import os

    p = path[:-3] if path.endswith(".gz") else path
    return _BY_EXT.get(os.path.splitext(p)[1].lower(), default)


# ---------------------------------------------------------------------------
# column -> text
# ---------------------------------------------------------------------------

def _is_num(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _align_right(t: pa.DataType) -> bool:
    """ClickHouse right-aligns numbers, dates and times (shouldAlignRightInPrettyFormats)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return _is_num(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)


_TSV_ESC = [("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\0", "\\0"), ("\r", "\\r"),
            ("\b", "\\b"), ("\f", "\\f"), ("'", "\\'")]
_JSON_ESC = [("\\", "\\\\"), ('"', '\\"'), ("/", "\\/"), ("\n", "\\n"), ("\t", "\\t"),
             ("\r", "\\r"), ("\b", "\\b"), ("\f", "\\f")]
_JSON_CTRL = {i: f"\\u{i:04X}" for i in range(0x20) if chr(i) not in "\n\t\r\b\f"}


def _replace_all(s: pa.Array, pairs) -> pa.Array:
    for a, b in pairs:
        if pc.any(pc.match_substring(s, a)).as_py():
            s = pc.replace_substring(s, a, b)
    return s


def _json_string(s: pa.Array) -> pa.Array:
    s = _replace_all(s, _JSON_ESC)
    if pc.any(pc.match_substring_regex(s, "[\\x00-\\x1f]")).as_py():
        if pa.types.is_binary(s.type):
            s = pa.array([None if v is None else v.decode("utf-8", "surrogateescape").translate(_JSON_CTRL)
                          .encode("utf-8", "surrogateescape") for v in s.to_pylist()], pa.binary())
        else:
            s = pa.array([None if v is None else v.translate(_JSON_CTRL) for v in s.to_pylist()], pa.string())
    return pc.binary_join_element_wise(_lit('"', s), s, _lit('"', s), _lit("", s))


def _plain(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    return one_array(arr, plain_strings=True)


def _is_uuid(t: pa.DataType) -> bool:
    return isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid"


def _stringish(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)


def _as_str(arr: pa.Array) -> pa.Array:
    if pa.types.is_string(arr.type):
        return arr
    # String columns hold bytes: invalid UTF-8 stays binary and passes through as written
    # (the writers join it as bytes and write it back with surrogateescape)
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        return arr.cast(pa.binary())


def _lit(v: str, like: pa.Array) -> pa.Scalar:
    """A literal text as a scalar of `like`'s type (string, or binary for invalid UTF-8)."""
    return pa.scalar(v.encode("utf-8") if pa.types.is_binary(like.type) else v, like.type)


def _join(parts: list[Any], *tail: str) -> list[str]:
    """Row texts: the parts (literal strs or text arrays) joined per row, as Python strs
    (a binary part -- a String that is not UTF-8 -- is joined as bytes and decoded with
    surrogateescape, which the writer undoes)."""
    arrays = [p for p in parts if not isinstance(p, str)]
    if not any(pa.types.is_binary(a.type) for a in arrays):
        try:
            return pc.binary_join_element_wise(*parts, *tail).to_pylist()
        except (pa.ArrowInvalid, UnicodeDecodeError):
            pass     # a text that is not UTF-8 (an array's items): joined as bytes below
    conv = [p.encode("utf-8") if isinstance(p, str) else _bytes_view(p) for p in parts]
    rows = pc.binary_join_element_wise(*conv, *(t.encode("utf-8") for t in tail)).to_pylist()
    return [r.decode("utf-8", "surrogateescape") for r in rows]


def _bytes_view(a: pa.Array) -> pa.Array:
    return a.view(pa.binary()) if pa.types.is_string(a.type) else a.cast(pa.binary())


def _pylist(arr: pa.Array) -> list[str]:
    if pa.types.is_string(arr.type):
        try:
            return arr.to_pylist()
        except UnicodeDecodeError:
            arr = arr.view(pa.binary())
    vals = arr.to_pylist()
    if pa.types.is_binary(arr.type):
        return [None if v is None else v.decode("utf-8", "surrogateescape") for v in vals]
    return vals


def _timestamp_text(arr: pa.Array) -> pa.Array:
    # Arrow's %S carries the fraction in the unit's digits: DateTime64(3) -> 05.100
    return pc.strftime(arr, format="%Y-%m-%d %H:%M:%S")


def _json_elements(values: pa.Array) -> pa.Array:
    """JSON text of array elements (non-finite floats and NULL as null)."""
    s = _text(values, "json")
    if pa.types.is_binary(s.type):
        s = s.view(pa.string())     # items that are not UTF-8: bytes as they are (as quoted_texts gives them)
    return s.fill_null("null") if s.null_count else s


def _text(arr: pa.Array | pa.ChunkedArray, mode: str) -> pa.Array:
    """A string array of the column's text for `mode` (raw | tsv | csv | json); nulls stay null."""
    arr = _plain(arr)
    t = arr.type
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.string())
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        s = list_texts(arr, _json_elements if mode == "json" else quoted_texts)
        return pc.binary_join_element_wise('"', pc.replace_substring(s, '"', '""'), '"', "") if mode == "csv" else s
    if pa.types.is_boolean(t):
        return pc.if_else(arr, "true", "false")
    if pa.types.is_integer(t):
        return integer_texts(arr)
    if pa.types.is_floating(t):
        s = float_texts(arr)
        if mode == "json":
            finite = pc.is_finite(arr)
            s = pc.if_else(finite, s, pa.scalar(None, pa.string()))
        return s
    if pa.types.is_decimal(t):
        return decimal_texts(arr)
    if (pa.types.is_fixed_size_binary(t) and t.byte_width == 16 and mode != "raw-bytes") or _is_uuid(t):
        s = uuid_texts(arr)
    elif pa.types.is_date(t):
        s = pc.cast(arr.cast(pa.date32()), pa.string())
    elif pa.types.is_timestamp(t):
        s = _timestamp_text(arr)
    elif _stringish(t) or pa.types.is_fixed_size_binary(t):
        s = _as_str(arr if not pa.types.is_fixed_size_binary(t) else arr.cast(pa.binary()))
        if mode == "tsv":
            return _replace_all(s, _TSV_ESC)
        if mode == "csv":
            return pc.binary_join_element_wise(_lit('"', s), pc.replace_substring(s, '"', '""'), _lit('"', s),
                                               _lit("", s))
    else:
        try:
            s = pc.cast(arr, pa.string())
        except pa.ArrowNotImplementedError:
            s = pa.array([None if v is None else str(v) for v in arr.to_pylist()], pa.string())
    if mode == "csv":
        return pc.binary_join_element_wise('"', pc.replace_substring(s, '"', '""'), '"', "")
    if mode == "json":
        return _json_string(s)
    return s


#: integer columns up to this many rows are written through Python's int text
SMALL_INTEGER_TEXTS = 64


def integer_texts(arr: pa.Array) -> pa.Array:
    """The decimal text of an integer array (nulls stay null), as Arrow's cast to string writes
    it. A short one without NULLs (a count, a LIMIT 10) takes Python's ``str`` of each value:
    the same text, without loading pyarrow's compute module in a process that prints a count."""
    if len(arr) <= SMALL_INTEGER_TEXTS and not arr.null_count:
        return array_of([str(v) for v in arr.to_pylist()], pa.string())
    return cast(arr, pa.string())


def column_texts(arr: pa.Array | pa.ChunkedArray, mode: str, null: str) -> pa.Array:
    """The column's text in `mode` with NULL written as `null`, no nulls left."""
    s = _text(arr, mode)
    return s.fill_null(_lit(null, s)) if s.null_count else s


# ---------------------------------------------------------------------------
# writers
# ---------------------------------------------------------------------------

def _lines(cols: list[pa.Array], sep: str) -> list[str]:
    if not cols:
        return []
    if len(cols) == 1:
        return _pylist(cols[0])
    return _join(cols, sep)


def _json_name(n: str) -> str:
    return _json_string(pa.array([n], pa.string()))[0].as_py()


def _as_table(b: pa.RecordBatch | pa.Table) -> pa.Table:
    return b if isinstance(b, pa.Table) else pa.Table.from_batches([b])


class _Writer:
    def __init__(self, out: IO[bytes], names: list[str], types: list[str], schema: pa.Schema,
                 stats: dict | None) -> None:
        self.out, self.names, self.types, self.schema, self.stats = out, names, types, schema, stats
        self.rows = 0

    def w(self, s: str) -> None:
        self.out.write(s.encode("utf-8", "surrogateescape"))

    def begin(self) -> None: ...

    def batch(self, t: pa.Table) -> None: ...

    def end(self) -> None: ...


class _Delimited(_Writer):
    def __init__(self, *a, mode: str, sep: str, header: bool) -> None:
        super().__init__(*a)
        self.mode, self.sep, self.header = mode, sep, header

    def begin(self) -> None:
        if self.header:
            if self.mode == "csv":
                self.w(",".join('"' + n.replace('"', '""') + '"' for n in self.names) + "\n")
            else:
                self.w("\t".join(_replace_all(pa.array(self.names, pa.string()), _TSV_ESC).to_pylist()) + "\n")

    def batch(self, t: pa.Table) -> None:
        if not t.num_rows:
            return
        cols = [column_texts(c, self.mode, "\\N") for c in t.columns]
        lines = _lines(cols, self.sep)
        self.w("\n".join(lines) + "\n")


class _JSONEachRow(_Writer):
    def batch(self, t: pa.Table) -> None:
        if not t.num_rows:
            return
        parts: list[Any] = []
        for i, (n, c) in enumerate(zip(self.names, t.columns)):
            parts.append(("{" if i == 0 else ",") + _json_name(n) + ":")
            parts.append(column_texts(c, "json", "null"))
        if not parts:
            self.w("{}\n" * t.num_rows)
            return
        lines = _join(parts, "}", "")
        self.w("\n".join(lines) + "\n")


class _JSON(_Writer):
    def begin(self) -> None:
        meta = ",\n".join(f'\t\t{{\n\t\t\t"name": {_json_name(n)},\n\t\t\t"type": {_json_name(t)}\n\t\t}}'
                          for n, t in zip(self.names, self.types))
        self.w('{\n\t"meta":\n\t[\n' + meta + '\n\t],\n\n\t"data":\n\t[\n')

    def batch(self, t: pa.Table) -> None:
        if not t.num_rows:
            return
        parts: list[Any] = []
        for i, (n, c) in enumerate(zip(self.names, t.columns)):
            parts.append(("\t\t{\n" if i == 0 else ",\n") + "\t\t\t" + _json_name(n) + ": ")
            parts.append(column_texts(c, "json", "null"))
        lines = _join(parts, "\n\t\t}", "") if parts \
            else ["\t\t{\n\t\t}"] * t.num_rows
        self.w((",\n" if self.rows else "") + ",\n".join(lines))
        self.rows += t.num_rows

    def end(self) -> None:
        self.w(("\n" if self.rows else "\n") + f'\t],\n\n\t"rows": {self.rows}')
        if self.stats is not None:
            body = ",\n".join(f'\t\t"{k}": {v}' for k, v in self.stats.items())
            self.w(',\n\n\t"statistics":\n\t{\n' + body + "\n\t}")
        self.w("\n}\n")


class _Markdown(_Writer):
    def begin(self) -> None:
        self.w("| " + " | ".join(self.names) + " |\n")
        self.w("|" + "|".join("-:" if _align_right(f.type) else ":-" for f in self.schema) + "|\n")

    def batch(self, t: pa.Table) -> None:
        if not t.num_rows:
            return
        cols = [column_texts(c, "tsv", "\\N") for c in t.columns]
        lines = _lines(cols, " | ")
        self.w("\n".join("| " + ln + " |" for ln in lines) + "\n")


class _Parquet(_Writer):
    def begin(self) -> None:
        import pyarrow.parquet as pq

        self.pw = pq.ParquetWriter(self.out, self.schema)

    def batch(self, t: pa.Table) -> None:
        if t.num_rows:
            self.pw.write_table(t)

    def end(self) -> None:
        self.pw.close()


def text_width(s: str, prefix: int = 0) -> int:
    """Display width of `s` on a terminal (wcwidth: wide East Asian characters
    two, combining marks zero), a tab advancing to the next multiple of 8
    counted from column `prefix` (as ClickHouse counts)."""
    try:
        from wcwidth import wcwidth
    except ImportError:  # pragma: no cover - wcwidth is a dependency
        def wcwidth(c):
            return 1
    if s.isprintable() and s.isascii():
        return len(s)
    w = 0
    for ch in s:
        if ch == "\t":
            w += 8 - (prefix + w) % 8
            continue
        cw = wcwidth(ch)     # (control characters: -1, they take no room)
        w += cw if cw > 0 else 0
    return w


class _Kept:
    """The rows a Pretty format shows: the first half as they come, the last
    half in a ring, so only those rows are ever converted to text."""

    def __init__(self, max_rows: int) -> None:
        self.head_n = (max_rows + 1) // 2
        self.tail_n = max_rows // 2
        self.max_rows = max_rows
        self.head: list[pa.Table] = []
        self.head_rows = 0
        self.tail: deque = deque()
        self.tail_rows = 0
        self.total = 0

    def add(self, t: pa.Table) -> None:
        self.total += t.num_rows
        if self.head_rows < self.max_rows:
            take = min(t.num_rows, self.max_rows - self.head_rows)
            self.head.append(t.slice(0, take))
            self.head_rows += take
            t = t.slice(take)
        if t.num_rows and self.tail_n:
            self.tail.append(t.slice(max(0, t.num_rows - self.tail_n)))
            self.tail_rows += self.tail[-1].num_rows
            while self.tail and self.tail_rows - self.tail[0].num_rows >= self.tail_n:
                self.tail_rows -= self.tail.popleft().num_rows

    def rows(self) -> tuple[pa.Table | None, pa.Table | None]:
        """(first rows, last rows); last is None when nothing was cut."""
        head = pa.concat_tables(self.head) if self.head else None
        if self.total <= self.max_rows:
            return head, None
        # cut in the middle: the first half, then the last half of everything
        first = head.slice(0, self.head_n)
        rest = [head.slice(self.head_n)] + list(self.tail)
        last = pa.concat_tables([r for r in rest if r.num_rows])
        return first, last.slice(max(0, last.num_rows - self.tail_n))


class _Pretty(_Writer):
    def __init__(self, *a, style: str, max_rows: int = PRETTY_MAX_ROWS) -> None:
        super().__init__(*a)
        self.style = style           # full | compact
        self.kept = _Kept(max_rows)
        self.max_rows = max_rows

    def batch(self, t: pa.Table) -> None:
        self.kept.add(t)

    def end(self) -> None:
        first, last = self.kept.rows()
        total = self.kept.total
        if not total:
            return
        self.w(render_pretty(self.names, self.schema, first, last, total, self.style))
        if last is not None:
            self.w(f"Showed {self.max_rows} out of {total} rows.\n")


def _cells(t: pa.Table) -> list[list[str]]:
    cols = [_pylist(column_texts(c, "raw", NULL_PRETTY)) for c in t.columns]
    return [list(r) for r in zip(*cols)] if cols else []


def render_pretty(names: Sequence[str], schema: pa.Schema, first: pa.Table, last: pa.Table | None,
                  total: int, style: str = "compact", row_numbers: bool = True,
                  start_row: int = 0) -> str:
    """ClickHouse's Pretty / PrettyCompact text of the rows `first` (+ `last`
    after a cut), numbered out of `total`."""
    rows = _cells(first) + (_cells(last) if last is not None else [])
    cut_at = first.num_rows if last is not None else None
    ncols = len(names)
    right = [_align_right(f.type) for f in schema]
    rn_width = (len(str(total)) + 2) if row_numbers else 0
    # widths of the fragments of each cell (a value may hold newlines); tabs count from their column
    frags = [[c.split("\n") for c in r] for r in rows]
    widths = [0] * ncols
    fw: list[list[list[int]]] = [[[] for _ in range(ncols)] for _ in rows]
    prefix = rn_width + 2
    for i in range(ncols):
        for j, r in enumerate(frags):
            fw[j][i] = [text_width(f, prefix) for f in r[i]]
            widths[i] = max(widths[i], max(fw[j][i]))
        widths[i] = max(widths[i], text_width(names[i]))
        prefix += widths[i] + 3
    blank = " " * rn_width
    name_w = [text_width(n) for n in names]

    def bar(l: str, h: str, m: str, r: str) -> str:
        return blank + l + m.join(h * (w + 2) for w in widths) + r + "\n"

    def pad(s: str, sw: int, w: int, rt: bool) -> str:
        return (" " * (w - sw) + s) if rt else (s + " " * (w - sw))

    out: list[str] = []
    footer = total >= PRETTY_FOOTER_MIN_ROWS
    if style == "full":
        out.append(bar("┏", "━", "┳", "┓"))
        out.append(blank + "┃ " + " ┃ ".join(pad(n, nw, w, rt) for n, nw, w, rt in zip(names, name_w, widths, right))
                   + " ┃\n")
        out.append(bar("┡", "━", "╇", "┩"))
    else:
        out.append(_compact_names(blank, names, name_w, widths, right, "┌", "┬", "┐"))
    sep = bar("├", "─", "┼", "┤")
    filler_len = sum(w + 3 for w in widths) + 1
    filler = blank + "".join("─" if k % 2 == 0 else " " for k in range(filler_len)) + "\n"
    for j, r in enumerate(rows):
        if j and style == "full":
            out.append(sep)
        if cut_at is not None and j == cut_at:
            out.append(filler)
            if style == "full":
                out.append(sep)
        number = j + 1 + start_row if cut_at is None or j < cut_at else total - (len(rows) - j) + 1
        nlines = max(len(c) for c in frags[j]) if ncols else 1
        for k in range(nlines):
            line = (f"{number}.".rjust(rn_width - 1) + " " if k == 0 else blank) if row_numbers else ""
            line += "│"
            for i in range(ncols):
                parts = frags[j][i]
                if k < len(parts):
                    body = pad(parts[k], fw[j][i][k], widths[i], right[i])
                    lead = "↳" if k > 0 else " "
                    trail = "↴" if k + 1 < len(parts) else " "
                    line += lead + body + trail + "│"
                else:
                    line += " " * (widths[i] + 2) + "│"
            out.append(line + "\n")
    if style == "full":
        if footer:
            out.append(bar("┢", "━", "╈", "┪"))
            out.append(blank + "┃ " + " ┃ ".join(pad(n, nw, w, rt) for n, nw, w, rt in zip(names, name_w, widths, right))
                       + " ┃\n")
            out.append(bar("┗", "━", "┻", "┛"))
        else:
            out.append(bar("└", "─", "┴", "┘"))
    else:
        if footer:
            out.append(_compact_names(blank, names, name_w, widths, right, "└", "┴", "┘"))
        else:
            out.append(bar("└", "─", "┴", "┘"))
    return "".join(out)


def _compact_names(blank, names, name_w, widths, right, l, m, r) -> str:
    cells = []
    for n, nw, w, rt in zip(names, name_w, widths, right):
        fill = "─" * (w - nw)
        cells.append((fill + n) if rt else (n + fill))
    return blank + l + "─" + ("─" + m + "─").join(cells) + "─" + r + "\n"


class _Vertical(_Writer):
    def begin(self) -> None:
        nw = [text_width(n) for n in self.names]
        width = max(nw, default=0) + 2
        self.labels = [n + ":" + " " * (width - w - 1) for n, w in zip(self.names, nw)]

    def batch(self, t: pa.Table) -> None:
        if not t.num_rows:
            return
        cols = [_pylist(column_texts(c, "raw", NULL_PRETTY)) for c in t.columns]
        buf = []
        for j in range(t.num_rows):
            self.rows += 1
            head = f"Row {self.rows}:"
            buf.append(("\n" if self.rows > 1 else "") + head + "\n" + "─" * len(head) + "\n")
            for lab, c in zip(self.labels, cols):
                buf.append(lab + c[j] + "\n")
        self.w("".join(buf))


def _writer(fmt: str, out, names, types, schema, stats, pretty_max_rows) -> _Writer:
    a = (out, names, types, schema, stats)
    if fmt == "TabSeparated":
        return _Delimited(*a, mode="tsv", sep="\t", header=False)
    if fmt == "TabSeparatedWithNames":
        return _Delimited(*a, mode="tsv", sep="\t", header=True)
    if fmt == "CSV":
        return _Delimited(*a, mode="csv", sep=",", header=False)
    if fmt == "CSVWithNames":
        return _Delimited(*a, mode="csv", sep=",", header=True)
    if fmt == "JSONEachRow":
        return _JSONEachRow(*a)
    if fmt == "JSON":
        return _JSON(*a)
    if fmt == "Markdown":
        return _Markdown(*a)
    if fmt == "Parquet":
        return _Parquet(*a)
    if fmt == "Vertical":
        return _Vertical(*a)
    if fmt in ("Pretty", "PrettyCompact"):
        return _Pretty(*a, style="full" if fmt == "Pretty" else "compact", max_rows=pretty_max_rows)
    raise SkipidxError(f"unknown output format {fmt!r}")


def write_batches(batches: Iterable[pa.RecordBatch | pa.Table], schema: pa.Schema, types: Sequence[str],
                  fmt: str, out: IO[bytes], *, stats: dict | None = None,
                  pretty_max_rows: int = PRETTY_MAX_ROWS) -> int:
    """Write a stream of batches in format `fmt` to the binary stream `out`; rows written."""
    fmt = canonical_format(fmt)
    w = _writer(fmt, out, list(schema.names), list(types), schema, stats, pretty_max_rows)
    w.begin()
    n = 0
    for b in batches:
        t = _as_table(b)
        n += t.num_rows
        w.batch(t)
    w.end()
    return n


def write_table(table: pa.Table, fmt: str, out: IO[bytes] | None = None, types: Sequence[str] | None = None,
                **kw: Any) -> bytes | None:
    """Write a whole table; with no `out`, return the bytes."""
    types = list(types) if types is not None else types_of(table.schema, table)
    buf = io.BytesIO() if out is None else out
    write_batches([table], table.schema, types, fmt, buf, **kw)
    return buf.getvalue() if out is None else None


def preview(head: pa.Table, types: Sequence[str], total: int | None) -> str:
    """A few rows as a PrettyCompact table plus the shape (``repr(result)``)."""
    body = render_pretty(head.column_names, head.schema, head, None,
                         max(head.num_rows, 1), "compact") if head.num_rows else ""
    if total is None:
        shape = f"(streaming result, {head.num_columns} columns: {', '.join(head.column_names)})"
    else:
        more = f", showing first {head.num_rows}" if total > head.num_rows else ""
        shape = f"{total:,} row{'s' if total != 1 else ''} x {head.num_columns} column{'s' if head.num_columns != 1 else ''}{more}"
    if not head.num_rows:
        shape += " [" + ", ".join(f"{n} {t}" for n, t in zip(head.column_names, types)) + "]"
    return body + shape
