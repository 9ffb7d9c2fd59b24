"""Table metadata: schema, ORDER BY key, granularity, indexes, settings.

Serialized as JSON (never pickle) and validated field by field on load, so a
hand-edited or damaged file gives a :class:`SkipidxError`/``CorruptionError``
naming the field, never a ``KeyError``.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import field
from skipidx.core.dataclass_codes import dataclass
from typing import Any, Iterable

import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.expr.index_expressions import get_expression
from skipidx.indexes.base import IndexDef, get_index_type, indexed_type
from skipidx.core.types import ColumnType, parse_type

__all__ = [
    "FORMAT_VERSION", "ColumnMeta", "IndexMeta", "TableMeta", "check_identifier",
    "make_index_meta", "normalize_codec", "codec_parquet",
]

#: Version of the on-disk layout (table state, part manifest, file names).
FORMAT_VERSION = 1

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: A KMS master key id (no ',', ':', ';' or blanks: they separate the settings' lists).
_KEY_ID = re.compile(r"^[A-Za-z0-9_.\-/@#+=]{1,256}$")
MAX_IDENT = 128

#: Settings a table accepts (besides index_granularity), with their checks.
KNOWN_SETTINGS: dict[str, tuple[type, int, int]] = {
    # rows per part written by one insert chunk (bounded memory); also the
    # target size of a non-FINAL merge.
    "max_part_rows": (int, 1, 1 << 40),
    # Parquet compression of column data.
    "compression": (str, 0, 0),
    # Sensitive columns: 'col:keyid, ...' (master key ids of the connection's
    # KMS) and the key id of the encrypted Parquet footer (skipidx.core.kms).
    "encrypted_columns": (str, 0, 0),
    "footer_key": (str, 0, 0),
    # background merges (store/merge.py; ClickHouse's MergeTree settings)
    "background_merges": (int, 0, 1),
    "merge_selector_base": (float, 2, 1000),
    "max_parts_to_merge_at_once": (int, 2, 10000),
    "parts_to_delay_insert": (int, 1, 1 << 30),
    "parts_to_throw_insert": (int, 1, 1 << 30),
}
_COMPRESSIONS = ("zstd", "snappy", "lz4", "none", "gzip")
#: A merge whose source parts hold at least this many compressed bytes writes the
#: columns without a CODEC as ZSTD(3) (tables without a ``compression`` setting):
#: ClickHouse's default (chDB 26.9: sources of 92 MB merge into an LZ4 part, 105 MB
#: into a ZSTD(3) one), so large merged parts are no bigger than ClickHouse's.
LARGE_MERGE_BYTES = 100_000_000
LARGE_MERGE_ZSTD_LEVEL = 3
#: ClickHouse MergeTree settings that only shape ClickHouse's own files, merges or
#: checks: accepted, recorded (SHOW CREATE prints them) and without effect here;
#: docs/settings.md says why for each.
CLICKHOUSE_ONLY_SETTINGS = frozenset("""
    index_granularity_bytes min_index_granularity_bytes enable_mixed_granularity_parts
    min_bytes_for_wide_part min_rows_for_wide_part min_bytes_for_compact_part min_rows_for_compact_part
    vertical_merge_algorithm_min_rows_to_activate vertical_merge_algorithm_min_columns_to_activate
    vertical_merge_algorithm_min_bytes_to_activate enable_vertical_merge_algorithm
    allow_nullable_key storage_policy compress_marks compress_primary_key
    merge_max_block_size max_parts_in_total
    old_parts_lifetime ratio_of_defaults_for_sparse_serialization replace_long_file_name_to_hash
    min_age_to_force_merge_seconds min_age_to_force_merge_on_partition_only
    add_minmax_index_for_numeric_columns add_minmax_index_for_string_columns
    use_const_adaptive_granularity write_marks_for_substreams_in_compact_parts
    auto_statistics_types serialization_info_version string_serialization_version
    max_suspicious_broken_parts allow_experimental_replacing_merge_with_cleanup
    cache_populated_by_fetch primary_key_lazy_load index_granularity_bytes_for_wide_part
    marks_compress_block_size primary_key_compress_block_size
""".split())

# ---- column codecs (ClickHouse's ``CODEC(...)``) ----------------------------
#
# Column data is Parquet, which compresses each column chunk's pages with ONE
# general-purpose codec. So exactly the ClickHouse codecs that are one such
# codec map honestly: LZ4 -> Parquet LZ4_RAW (pyarrow 'lz4'; the same LZ4 block
# format ClickHouse uses), ZSTD(level) -> ZSTD at that level, NONE ->
# UNCOMPRESSED. ClickHouse's transforms (Delta, DoubleDelta, Gorilla, T64, ...)
# and chains have no Parquet equivalent with the same meaning, and LZ4HC has
# no Parquet writer in pyarrow: they are rejected rather than silently mapped.

#: Canonical codec expressions are written as ClickHouse's DESCRIBE prints them.
_ZSTD_LEVELS = (1, 22)
_CODEC_TEXT = re.compile(r"^(LZ4|NONE|ZSTD\(([0-9]+)\))$")
#: ClickHouse codecs skipidx knows of but cannot store in Parquet with the same meaning.
_UNSUPPORTED_CODECS = ("Default", "LZ4HC", "Delta", "DoubleDelta", "Gorilla", "FPC", "T64", "GCD",
                       "ZSTD_QAT", "DEFLATE_QPL", "AES_128_GCM_SIV", "AES_256_GCM_SIV")
_SUPPORTED_TEXT = "LZ4, ZSTD, ZSTD(level 1..22), NONE"


def normalize_codec(codecs: Any) -> str:
    """The canonical codec expression (``'LZ4'``, ``'ZSTD(3)'``, ``'NONE'``) of a
    ``CODEC(...)`` list given as ``[(name, [args...]), ...]``; SkipidxError for
    anything else. Names are case-sensitive, as in ClickHouse; ``ZSTD`` alone
    is ``ZSTD(1)`` (ClickHouse's default level)."""
    items = list(codecs)
    if not items:
        raise SkipidxError("CODEC needs at least one codec")
    if len(items) > 1:
        names = ", ".join(str(n) for n, _ in items)
        raise SkipidxError(
            f"codec chains are not supported (CODEC({names})): column data is Parquet, which compresses "
            f"a column with one codec; supported: {_SUPPORTED_TEXT}")
    name, args = items[0]
    args = list(args)
    if name in ("LZ4", "NONE"):
        if args:
            raise SkipidxError(f"codec {name} takes no arguments")
        return name
    if name == "ZSTD":
        if not args:
            return "ZSTD(1)"
        if len(args) != 1:
            raise SkipidxError(f"codec ZSTD takes at most one argument (the level), got {len(args)}")
        lvl = args[0]
        lo, hi = _ZSTD_LEVELS
        if isinstance(lvl, bool) or not isinstance(lvl, int) or not lo <= lvl <= hi:
            raise SkipidxError(f"ZSTD level must be an integer in [{lo}, {hi}], got {lvl!r}")
        return f"ZSTD({lvl})"
    if name in _UNSUPPORTED_CODECS:
        raise SkipidxError(f"codec {name} is not supported: column data is Parquet, which has no "
                           f"equivalent; supported: {_SUPPORTED_TEXT}")
    hint = ""
    if isinstance(name, str) and name.upper() in ("LZ4", "ZSTD", "NONE"):
        hint = f" (codec names are case-sensitive, as in ClickHouse: {name.upper()})"
    raise SkipidxError(f"unknown codec {name!r}{hint}; supported: {_SUPPORTED_TEXT}")


def codec_parquet(codec: str) -> tuple[str, int | None]:
    """(pyarrow Parquet compression, compression level or None) of a canonical codec expression."""
    m = _CODEC_TEXT.match(codec)
    if m is None:
        raise SkipidxError(f"invalid codec {codec!r}; expected one of {_SUPPORTED_TEXT}")
    if m.group(1) == "LZ4":
        return "lz4", None      # pyarrow writes Parquet LZ4_RAW (the LZ4 block format)
    if m.group(1) == "NONE":
        return "none", None
    lvl = int(m.group(2))
    if not _ZSTD_LEVELS[0] <= lvl <= _ZSTD_LEVELS[1]:
        raise SkipidxError(f"invalid codec {codec!r}: ZSTD level must be in [{_ZSTD_LEVELS[0]}, {_ZSTD_LEVELS[1]}]")
    return "zstd", lvl


def check_identifier(name: Any, what: str) -> str:
    """`name` if it is an identifier ``[A-Za-z_][A-Za-z0-9_]*`` of at most 128
    characters, else SkipidxError. Table and index names become file names:
    this is what keeps them inside the database directory."""
    if not isinstance(name, str) or not _IDENT.match(name) or len(name) > MAX_IDENT:
        raise SkipidxError(
            f"invalid {what} name {name!r}: expected an identifier [A-Za-z_][A-Za-z0-9_]* "
            f"of at most {MAX_IDENT} characters"
        )
    return name


@dataclass(frozen=True)
class ColumnMeta:
    """A column: name, type and its ``CODEC`` (canonical expression such as
    ``'LZ4'`` or ``'ZSTD(3)'``; None when not declared: the table's
    ``compression`` setting applies)."""

    name: str
    type: ColumnType
    codec: str | None = None
    #: the ``DEFAULT expr`` as SQL text (None: the type's default value)
    default: str | None = None


@dataclass(frozen=True)
class IndexMeta:
    """A declared index plus what its type normalized at CREATE/ALTER time."""

    definition: IndexDef
    params: dict = field(default_factory=dict)
    version: int = 1                   # the index type's version
    tokenizer: str | None = None
    tokenizer_version: str | None = None

    @property
    def name(self) -> str:
        return self.definition.name

    def to_json(self) -> dict:
        d = self.definition
        return {
            "name": d.name,
            "column": d.column,
            "expr_func": d.expr_func,
            "type": d.type_name,
            "args": list(d.args),
            "kwargs": [[k, v] for k, v in d.kwargs],
            "granularity": d.granularity,
            **({"group": list(d.group)} if d.group is not None else {}),
            **({"expression": d.expression, "expression_type": d.expression_type,
                "expression_columns": list(d.expression_columns)} if d.expression is not None else {}),
            "params": self.params,
            "version": self.version,
            "tokenizer": self.tokenizer,
            "tokenizer_version": self.tokenizer_version,
        }

    @staticmethod
    def from_json(obj: Any, where: str) -> "IndexMeta":
        o = _obj(obj, where)
        name = check_identifier(_get(o, "name", str, where), "index")
        w = f"{where}: index {name!r}"
        expr_func = _get(o, "expr_func", (str, type(None)), w)
        get_expression(expr_func)   # SkipidxError for an unknown function
        gran = _get(o, "granularity", int, w)
        if gran < 1:
            raise SkipidxError(f"{w}: granularity must be >= 1")
        kwargs = _get(o, "kwargs", list, w)
        if not all(isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], str) for kv in kwargs):
            raise SkipidxError(f"{w}: kwargs must be [key, value] pairs")
        args = _get(o, "args", list, w)
        # DDL arguments are literals: a nested list or object is damage
        if not all(_is_literal(a) for a in args) or not all(_is_literal(v) for _, v in kwargs):
            raise SkipidxError(f"{w}: index arguments must be literals")
        group = None
        if "group" in o:
            g = _get(o, "group", list, w)
            if len(g) != 3 or not isinstance(g[0], str) or isinstance(g[1], bool) or not isinstance(g[1], int) \
                    or not isinstance(g[2], str):
                raise SkipidxError(f"{w}: group must be [name, position, tuple SQL]")
            group = (g[0], g[1], g[2])
        defn = IndexDef(
            name=name,
            column=_get(o, "column", str, w),
            expr_func=expr_func,
            type_name=_get(o, "type", str, w),
            args=tuple(args),
            kwargs=tuple((k, v) for k, v in kwargs),
            granularity=gran,
            group=group,
            expression=_get(o, "expression", str, w) if "expression" in o else None,
            expression_type=_get(o, "expression_type", str, w) if "expression" in o else None,
            expression_columns=tuple(_get(o, "expression_columns", list, w)) if "expression" in o else (),
        )
        if defn.expression is not None:
            parse_type(defn.expression_type)      # SkipidxError for a damaged type
            if defn.column != defn.expression or not all(isinstance(c, str) for c in defn.expression_columns):
                raise SkipidxError(f"{w}: malformed expression index")
        return IndexMeta(
            definition=defn,
            params=_get(o, "params", dict, w),
            version=_get(o, "version", int, w),
            tokenizer=_get(o, "tokenizer", (str, type(None)), w),
            tokenizer_version=_get(o, "tokenizer_version", (str, type(None), int), w),
        )

    def fingerprint(self) -> str:
        """Identity of the index *as built*: a part's index file is used only
        while the table's index of that name has the same fingerprint (so
        DROP + ADD of a different index under the same name never reads a
        stale file)."""
        body = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:32]


def make_index_meta(defn: IndexDef, column_type: ColumnType) -> IndexMeta:
    """Validate `defn` with its index type and return the IndexMeta to store."""
    check_identifier(defn.name, "index")
    get_expression(defn.expr_func)   # SkipidxError for an unknown function
    if defn.expr_func is not None and not pa.types.is_string(column_type.arrow_type):
        raise SkipidxError(f"index {defn.name!r}: {defn.expr_func}() needs a String column, "
                           f"{defn.column!r} is {column_type.name}")
    if not isinstance(defn.granularity, int) or defn.granularity < 1:
        raise SkipidxError(f"index {defn.name!r}: GRANULARITY must be a positive integer, got {defn.granularity!r}")
    cls = get_index_type(defn.type_name)
    params = cls.validate(defn, indexed_type(defn, column_type.arrow_type))
    if not isinstance(params, dict):
        raise SkipidxError(f"index {defn.name!r}: index type {defn.type_name!r} returned bad params")
    try:
        json.dumps(params)
    except (TypeError, ValueError) as e:
        raise SkipidxError(f"index {defn.name!r}: parameters are not JSON-serializable: {e}") from None
    tok = params.get("tokenizer")
    tok_version = params.get("tokenizer_version")
    if isinstance(tok, str) and tok_version is None:
        # recorded so a later change of the tokenizer's semantics is visible
        from skipidx.core.tokenizer_api import get_tokenizer

        tp = params.get("tokenizer_params")
        tok_version = get_tokenizer(tok, **(tp if isinstance(tp, dict) else {})).version
    return IndexMeta(
        definition=defn,
        params=params,
        version=int(cls.version),
        tokenizer=tok if isinstance(tok, str) else None,
        tokenizer_version=str(tok_version) if tok_version is not None else None,
    )


@dataclass(frozen=True)
class TableMeta:
    """Everything a table declares. Validated by :meth:`validate`."""

    name: str
    columns: list[ColumnMeta]
    order_by: list[str] = field(default_factory=list)
    index_granularity: int = 8192
    indexes: list[IndexMeta] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    #: ``PRIMARY KEY`` when written apart from ORDER BY (a prefix of it); None otherwise
    primary_key: list[str] | None = None
    #: ``PARTITION BY`` as SQL text: recorded and shown; parts are not split by it
    partition_by: str | None = None
    #: the declared engine: MergeTree, or a log/memory engine stored as MergeTree ORDER BY tuple()
    engine: str = "MergeTree"

    # ---- lookups -------------------------------------------------------
    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> ColumnMeta:
        for c in self.columns:
            if c.name == name:
                return c
        for im in self.indexes:       # the virtual column of an index on an expression
            d = im.definition
            if d.expression is not None and d.column == name:
                return ColumnMeta(name, parse_type(d.expression_type))
        raise SkipidxError(f"table {self.name!r} has no column {name!r}; columns: {', '.join(self.column_names)}")

    def index(self, name: str) -> IndexMeta:
        for i in self.indexes:
            if i.name == name:
                return i
        known = ", ".join(i.name for i in self.indexes) or "none"
        raise SkipidxError(f"table {self.name!r} has no index {name!r}; indexes: {known}")

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type.arrow_type, nullable=c.type.nullable) for c in self.columns])

    @property
    def max_part_rows(self) -> int:
        return int(self.settings.get("max_part_rows", 1 << 20))

    @property
    def compression(self) -> str:
        """The table-wide Parquet compression (setting ``compression``, default lz4).

        LZ4 by default, as ClickHouse's MergeTree: after pruning, a selective
        text query's time is mostly decompressing the kept granules (lz4 is
        faster there and on insert, for more bytes; figures in bench/NOTES.md).
        ``SETTINGS compression = 'zstd'`` (or a column's ``CODEC(ZSTD)``)
        trades that speed for the bytes. A table created before this default
        changed (no setting stored) writes its new parts with lz4 too; every
        part's Parquet footer names its own codec, so old and new parts read alike.
        """
        return str(self.settings.get("compression", "lz4"))

    def parquet_compression(self, large: bool = False) -> tuple[dict[str, str], dict[str, int]]:
        """Per-column arguments for ``pq.ParquetWriter``: ({column: compression},
        {column: compression_level}). A column with a CODEC gets its codec, the
        others the table's ``compression`` setting at pyarrow's default level.

        `large` (a merge of at least :data:`LARGE_MERGE_BYTES`): where the table
        sets no ``compression``, the columns without a CODEC get zstd level 3, as
        ClickHouse's merges write ZSTD(3) from that size on (LZ4 below it)."""
        comp: dict[str, str] = {}
        level: dict[str, int] = {}
        default_zstd = large and "compression" not in self.settings
        for c in self.columns:
            if c.codec is None and default_zstd:
                comp[c.name], level[c.name] = "zstd", LARGE_MERGE_ZSTD_LEVEL
            elif c.codec is None:
                comp[c.name] = self.compression
            else:
                comp[c.name], lvl = codec_parquet(c.codec)
                if lvl is not None:
                    level[c.name] = lvl
        return comp, level

    def with_indexes(self, indexes: Iterable[IndexMeta]) -> "TableMeta":
        return TableMeta(self.name, list(self.columns), list(self.order_by), self.index_granularity,
                         list(indexes), dict(self.settings), self.format_version,
                         None if self.primary_key is None else list(self.primary_key))

    # ---- validation ----------------------------------------------------
    def validate(self) -> "TableMeta":
        check_identifier(self.name, "table")
        if self.format_version != FORMAT_VERSION:
            raise SkipidxError(f"table {self.name!r}: unsupported format version {self.format_version} "
                               f"(this skipidx reads version {FORMAT_VERSION})")
        if not self.columns:
            raise SkipidxError(f"table {self.name!r}: a table needs at least one column")
        seen: set[str] = set()
        for c in self.columns:
            if not isinstance(c.name, str) or not c.name or len(c.name) > 1024:
                raise SkipidxError(f"table {self.name!r}: invalid column name {c.name!r}")
            if c.name in seen:
                raise SkipidxError(f"table {self.name!r}: duplicate column {c.name!r}")
            seen.add(c.name)
            if c.codec is not None:
                if not isinstance(c.codec, str):
                    raise SkipidxError(f"table {self.name!r}: column {c.name!r}: codec must be a string")
                try:
                    codec_parquet(c.codec)
                except SkipidxError as e:
                    raise SkipidxError(f"table {self.name!r}: column {c.name!r}: {e.message}") from None
        for k in self.order_by:
            if k not in seen:
                raise SkipidxError(f"table {self.name!r}: ORDER BY column {k!r} is not a column")
        if len(set(self.order_by)) != len(self.order_by):
            raise SkipidxError(f"table {self.name!r}: ORDER BY lists a column twice")
        if not isinstance(self.index_granularity, int) or not (1 <= self.index_granularity <= 1 << 24):
            raise SkipidxError(f"table {self.name!r}: index_granularity must be an integer in [1, 16777216], "
                               f"got {self.index_granularity!r}")
        names: set[str] = set()
        for im in self.indexes:
            check_identifier(im.name, "index")
            if im.name in names:
                raise SkipidxError(f"table {self.name!r}: duplicate index {im.name!r}")
            names.add(im.name)
            d = im.definition
            if d.expression is not None:
                missing = [c for c in d.expression_columns if c not in seen]
                if missing:
                    raise SkipidxError(f"table {self.name!r}: index {im.name!r} reads unknown column {missing[0]!r}")
            elif im.definition.column not in seen:
                raise SkipidxError(f"table {self.name!r}: index {im.name!r} reads unknown column "
                                   f"{im.definition.column!r}")
        if self.primary_key is not None:
            if self.primary_key != self.order_by[: len(self.primary_key)]:
                raise SkipidxError(f"table {self.name!r}: PRIMARY KEY must be a prefix of ORDER BY")
        for c in self.columns:
            if c.default is not None and not isinstance(c.default, str):
                raise SkipidxError(f"table {self.name!r}: column {c.name!r}: default must be SQL text")
        for k, v in self.settings.items():
            if k in CLICKHOUSE_ONLY_SETTINGS:
                if not isinstance(v, (int, float, str)):
                    raise SkipidxError(f"table {self.name!r}: setting {k} must be a number or a string")
                continue
            if k not in KNOWN_SETTINGS:
                from skipidx.core.hints import did_you_mean

                known = ["index_granularity", *KNOWN_SETTINGS, *sorted(CLICKHOUSE_ONLY_SETTINGS)]
                raise SkipidxError(f"table {self.name!r}: unknown setting {k!r}{did_you_mean(k, known)}; known: "
                                   f"index_granularity, {', '.join(KNOWN_SETTINGS)} and ClickHouse's file-layout "
                                   "settings (docs/settings.md)")
            typ, lo, hi = KNOWN_SETTINGS[k]
            if typ is int and (not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi):
                raise SkipidxError(f"table {self.name!r}: setting {k} must be an integer in [{lo}, {hi}]")
            if typ is str and not isinstance(v, str):
                raise SkipidxError(f"table {self.name!r}: setting {k} must be a string")
            if typ is float and (not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= v <= hi):
                raise SkipidxError(f"table {self.name!r}: setting {k} must be a number in [{lo}, {hi}]")
            if k == "compression" and v not in _COMPRESSIONS:
                raise SkipidxError(f"table {self.name!r}: compression must be one of {', '.join(_COMPRESSIONS)}")
        enc = self.encryption
        if enc is not None:
            for c in enc[1]:
                if c not in seen:
                    raise SkipidxError(f"table {self.name!r}: encrypted_columns names unknown column {c!r}")
        return self

    @property
    def encryption(self) -> tuple[str, dict[str, str]] | None:
        """(footer key id, {column: key id}) of a table with sensitive columns, else None.

        Settings ``encrypted_columns = 'col:keyid, ...'`` and ``footer_key =
        'keyid'``, both or neither: the data file's footer is encrypted too
        (it holds the columns' statistics and key metadata)."""
        spec = self.settings.get("encrypted_columns")
        footer = self.settings.get("footer_key")
        if spec is None and footer is None:
            return None
        if not isinstance(spec, str) or not isinstance(footer, str):
            raise SkipidxError(f"table {self.name!r}: encrypted_columns and footer_key go together "
                               f"(SETTINGS encrypted_columns = 'col:keyid, ...', footer_key = 'keyid')")
        if not _KEY_ID.match(footer):
            raise SkipidxError(f"table {self.name!r}: footer_key {footer!r} is not a key id")
        cols: dict[str, str] = {}
        for item in spec.split(","):
            col, sep, kid = item.strip().rpartition(":")
            col, kid = col.strip(), kid.strip()
            if not sep or not col or not _KEY_ID.match(kid):
                raise SkipidxError(f"table {self.name!r}: encrypted_columns entry {item.strip()!r} is not "
                                   f"'column:keyid'")
            if col in cols:
                raise SkipidxError(f"table {self.name!r}: encrypted_columns names {col!r} twice")
            cols[col] = kid
        return footer, cols

    # ---- JSON ----------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "format_version": self.format_version,
            "name": self.name,
            # "codec" and "default" only where declared: without "codec" a column
            # takes the table's compression setting
            "columns": [{"name": c.name, "type": c.type.name, **({"codec": c.codec} if c.codec else {}),
                         **({"default": c.default} if c.default is not None else {})}
                        for c in self.columns],
            "order_by": list(self.order_by),
            "index_granularity": self.index_granularity,
            "indexes": [i.to_json() for i in self.indexes],
            "settings": dict(self.settings),
            **({"primary_key": list(self.primary_key)} if self.primary_key is not None else {}),
            **({"partition_by": self.partition_by} if self.partition_by is not None else {}),
            **({"engine": self.engine} if self.engine != "MergeTree" else {}),
        }

    @staticmethod
    def from_json(obj: Any, where: str = "metadata") -> "TableMeta":
        o = _obj(obj, where)
        cols = []
        for i, c in enumerate(_get(o, "columns", list, where)):
            w = f"{where}: columns[{i}]"
            co = _obj(c, w)
            codec = _get(co, "codec", str, w) if "codec" in co else None
            default = _get(co, "default", str, w) if "default" in co else None
            cols.append(ColumnMeta(_get(co, "name", str, w), parse_type(_get(co, "type", str, w)), codec, default))
        order_by = _get(o, "order_by", list, where)
        if not all(isinstance(k, str) for k in order_by):
            raise SkipidxError(f"{where}: order_by must be a list of column names")
        meta = TableMeta(
            name=_get(o, "name", str, where),
            columns=cols,
            order_by=order_by,
            index_granularity=_get(o, "index_granularity", int, where),
            indexes=[IndexMeta.from_json(x, where) for x in _get(o, "indexes", list, where)],
            settings=_get(o, "settings", dict, where),
            format_version=_get(o, "format_version", int, where),
            primary_key=_get(o, "primary_key", list, where) if "primary_key" in o else None,
            partition_by=_get(o, "partition_by", str, where) if "partition_by" in o else None,
            engine=_get(o, "engine", str, where) if "engine" in o else "MergeTree",
        )
        meta.validate()
        for im in meta.indexes:
            _check_index_params(im, meta, where)
        return meta


def _is_literal(v: Any) -> bool:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return True
    if isinstance(v, int):
        return -(1 << 64) < v < 1 << 64
    return isinstance(v, float)


def _check_index_params(im: IndexMeta, meta: "TableMeta", where: str) -> None:
    """An index read from disk is validated again by its type, and what the
    type derives must be what was stored: stored parameters are then only
    ever values its own validation produced (ranges included)."""
    from skipidx.indexes._common import stored_definitions

    w = f"{where}: index {im.name!r}"
    try:
        with stored_definitions():
            again = make_index_meta(im.definition, meta.column(im.definition.column).type)
    except SkipidxError as e:
        raise SkipidxError(f"{w}: {e.message}") from None
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as e:
        raise SkipidxError(f"{w}: invalid index definition ({type(e).__name__})") from None
    if json.dumps(again.params, sort_keys=True) != json.dumps(im.params, sort_keys=True, default=str):
        raise SkipidxError(f"{w}: stored index parameters do not match its definition")
    if again.version != im.version:
        raise SkipidxError(f"{w}: index type version {im.version!r} is not this skipidx's {again.version}")


def _obj(obj: Any, where: str) -> dict:
    if not isinstance(obj, dict):
        raise SkipidxError(f"{where}: expected an object, got {type(obj).__name__}")
    return obj


def _get(o: dict, key: str, typ, where: str):
    if key not in o:
        raise SkipidxError(f"{where}: missing field {key!r}")
    v = o[key]
    if typ is int and isinstance(v, bool):
        raise SkipidxError(f"{where}: field {key!r} must be an integer")
    if not isinstance(v, typ):
        raise SkipidxError(f"{where}: field {key!r} has the wrong type ({type(v).__name__})")
    return v
