"""Column types: the ClickHouse type names of the design, mapped to Arrow.

=========================  ===============================  ======================
ClickHouse name            Arrow type                       range checked on cast
=========================  ===============================  ======================
UInt8 .. UInt64            uint8 .. uint64                  yes
Int8 .. Int64              int8 .. int64                    yes
Float32, Float64           float32, float64                 no (IEEE semantics)
Bool                       bool                             0/1 from integers
String                     string                           --
LowCardinality(String)     string (flag kept)               --
FixedString(n)             fixed_size_binary(n)             length <= n, 0-padded
UUID                       arrow.uuid (fixed_size_binary)   text parsed
Enum8/Enum16(...)          string (the names)               name or number known
Decimal(P, S)              decimal128(P, S) / decimal256    fits P, S truncated
Date                       date32                           1970-01-01..2149-06-06
DateTime[('tz')]           timestamp[s, tz]                 1970-01-01..2106-02-07
DateTime64(p[, 'tz'])      timestamp[ms|us|ns, tz]          1900-01-01..2299-12-31
Array(T)                   list<T>                          per element
Nullable(T)                T, nulls allowed                 --
=========================  ===============================  ======================

Type names are read as ClickHouse reads them: its aliases (``INT``,
``BIGINT``, ``TEXT``, ``VARCHAR(255)``, ``DOUBLE PRECISION``, ...) and the
case-insensitive families (``datetime64``, ``decimal``) map to the canonical
name, which is what DESCRIBE and SHOW CREATE print. ``DateTime64(2)`` keeps
ticks of 10 ms in a millisecond timestamp (values are truncated to the
precision, as ClickHouse truncates); a sub-second value into ``DateTime`` is
truncated to the second. Enum values are stored as their names (Parquet
readers see text); the name <-> number map stays in the table's metadata.

Date and DateTime keep ClickHouse's ranges (Date is a UInt16 day number,
DateTime a UInt32 second count) so a value stored here reads back the same
in ClickHouse (chDB, the oracle of the tests).

:func:`cast_to` is the single gate every inserted column goes through: it
converts what a user hands in (pandas, CSV, JSON, Arrow of any compatible
type) to the declared type and rejects -- with a :class:`SkipidxError` naming
the column and the first offending value -- anything that would change a
value: out of range, fractional into integer, NULL into a non-Nullable
column, or a type that does not convert (text into a number, ...).
"""
from __future__ import annotations

import datetime as _dt
import re
from skipidx.core.dataclass_codes import dataclass

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.core.arrays import from_numpy, one_array, split_digits_at, to_numpy
from skipidx.core.arrays import scalar as arrow_scalar

__all__ = ["ColumnType", "parse_type", "cast_to", "ch_type_of", "is_uuid", "parse_uuid_texts", "uuid_array",
           "uuid_order_key", "sort_key_table"]

_INTS: dict[str, pa.DataType] = {
    "UInt8": pa.uint8(), "UInt16": pa.uint16(), "UInt32": pa.uint32(), "UInt64": pa.uint64(),
    "Int8": pa.int8(), "Int16": pa.int16(), "Int32": pa.int32(), "Int64": pa.int64(),
}
_SCALARS: dict[str, pa.DataType] = {
    **_INTS,
    "Float32": pa.float32(), "Float64": pa.float64(),
    "Bool": pa.bool_(),
    "String": pa.string(),
    "Date": pa.date32(),
    "DateTime": pa.timestamp("s"),
}
# ClickHouse spells some types in several ways; canonical spelling wins.
# ClickHouse's aliases (system.data_type_families.alias_to); all of them are
# case-insensitive, as are the families in _CI_FAMILIES.
_ALIASES_CI = {
    "bool": "Bool", "boolean": "Bool",
    "tinyint": "Int8", "int1": "Int8", "byte": "Int8", "tinyint signed": "Int8", "int1 signed": "Int8",
    "smallint": "Int16", "smallint signed": "Int16",
    "int": "Int32", "integer": "Int32", "mediumint": "Int32", "int signed": "Int32",
    "integer signed": "Int32", "mediumint signed": "Int32",
    "bigint": "Int64", "signed": "Int64", "bigint signed": "Int64",
    "tinyint unsigned": "UInt8", "int1 unsigned": "UInt8",
    "smallint unsigned": "UInt16", "year": "UInt16",
    "int unsigned": "UInt32", "integer unsigned": "UInt32", "mediumint unsigned": "UInt32",
    "bigint unsigned": "UInt64", "unsigned": "UInt64", "bit": "UInt64", "set": "UInt64",
    "float": "Float32", "real": "Float32", "single": "Float32",
    "double": "Float64", "double precision": "Float64",
    "timestamp": "DateTime", "dec": "Decimal", "fixed": "Decimal", "numeric": "Decimal",
    "enum": "Enum", "binary": "FixedString",
    **{a: "String" for a in (
        "text", "varchar", "char", "character", "varchar2", "nvarchar", "nchar", "clob", "blob",
        "bytea", "longblob", "longtext", "mediumblob", "mediumtext", "tinyblob", "tinytext",
        "varbinary", "char varying", "character varying", "char large object",
        "character large object", "binary large object", "binary varying", "national char",
        "national character", "national char varying", "national character varying",
        "national character large object", "nchar varying", "nchar large object")},
}
_CI_FAMILIES = {n.lower(): n for n in (
    "Bool", "Date", "DateTime", "DateTime64", "Decimal", "Decimal32", "Decimal64", "Decimal128",
    "Decimal256")}
# String aliases take a length in ClickHouse (VARCHAR(255)) and ignore it.
_LENGTH_IGNORED = {"String"}

DATE_MIN = _dt.date(1970, 1, 1)
DATE_MAX = _dt.date(2149, 6, 6)          # UInt16 days
DATETIME_MAX_S = 2**32 - 1                # UInt32 seconds: 2106-02-07 06:28:15
DATETIME64_MIN_S = -2208988800            # 1900-01-01 00:00:00
DATETIME64_MAX_S = 10413791999            # 2299-12-31 23:59:59
_DECIMAL_SHORT = {"Decimal32": 9, "Decimal64": 18, "Decimal128": 38, "Decimal256": 76}


@dataclass(frozen=True)
class ColumnType:
    """A declared column type.

    ``name`` is the canonical ClickHouse spelling (``Nullable(String)``,
    ``LowCardinality(String)``...), ``arrow_type`` the Arrow type of stored
    values (never a dictionary type: LowCardinality only changes the
    Parquet encoding, which is dictionary anyway). ``element`` is the element
    type of an Array, ``enum`` the (name, number) pairs of an Enum,
    ``precision`` the digits of a DateTime64 or the P of a Decimal.
    """

    name: str
    arrow_type: pa.DataType
    nullable: bool = False
    low_cardinality: bool = False
    element: "ColumnType | None" = None
    enum: tuple[tuple[str, int], ...] = ()
    precision: int | None = None

    def __str__(self) -> str:
        return self.name

    @property
    def base_name(self) -> str:
        """The name without Nullable/LowCardinality wrappers."""
        n = self.name
        for w in ("LowCardinality(", "Nullable("):
            if n.startswith(w):
                n = n[len(w):-1]
        return n


# --- type-name syntax: Name [ '(' arg, ... ')' ], arg = type | number | 'string' ['=' number]

_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^'\\]|\\.|'')*')|(?P<num>[+-]?\d+)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
                    r"|(?P<punct>[(),=]))")


def _lex(text: str, full: str) -> list[tuple[str, str]]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m:
            raise SkipidxError(f"bad type name {full!r} at {text[i:i + 10]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        i = m.end()
    return out


def _unquote(tok: str) -> str:
    body = tok[1:-1]
    return re.sub(r"\\(.)|''", lambda m: m.group(1) if m.group(1) is not None else "'", body)


class _TypeReader:
    def __init__(self, text: str) -> None:
        self.full = text
        self.toks = _lex(text, text)
        self.i = 0

    def peek(self, k: int = 0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else (None, None)

    def take(self, kind: str | None = None, value: str | None = None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind) or (value and tok[1] != value):
            want = value or kind or "more"
            raise SkipidxError(f"bad type name {self.full!r}: expected {want}")
        self.i += 1
        return tok[1]

    def node(self):
        """(name, args): multi-word names (DOUBLE PRECISION, INT UNSIGNED) joined by one space."""
        words = [self.take("name")]
        while self.peek()[0] == "name" and " ".join(words + [self.peek()[1]]).lower() in _ALIASES_CI:
            words.append(self.take("name"))
        # longest alias that is a prefix of what follows (e.g. NATIONAL CHARACTER VARYING)
        while self.peek()[0] == "name" and any(a.startswith(" ".join(words + [self.peek()[1]]).lower() + " ")
                                               or a == " ".join(words + [self.peek()[1]]).lower()
                                               for a in _ALIASES_CI):
            words.append(self.take("name"))
        name = " ".join(words)
        args = None
        if self.peek() == ("punct", "("):
            self.take()
            args = []
            if self.peek() != ("punct", ")"):
                while True:
                    args.append(self.arg())
                    if self.peek() == ("punct", ","):
                        self.take()
                        continue
                    break
            self.take("punct", ")")
        return name, args

    def arg(self):
        kind, val = self.peek()
        if kind == "num":
            self.take()
            return int(val)
        if kind == "str":
            self.take()
            s = _unquote(val)
            if self.peek() == ("punct", "="):
                self.take()
                return (s, int(self.take("num")))
            return s
        return self.node()


def parse_type(name: str) -> ColumnType:
    """Parse a ClickHouse type name (``UInt8``, ``Nullable(String)``, ``Array(DateTime64(3, 'UTC'))``...).

    Raises :class:`SkipidxError` for unknown or malformed types.
    """
    if not isinstance(name, str) or not name.strip():
        raise SkipidxError(f"empty or invalid type name {name!r}")
    r = _TypeReader(name.strip())
    node = r.node()
    if r.peek()[0] is not None:
        raise SkipidxError(f"bad type name {name!r}: unexpected {r.peek()[1]!r}")
    return _build(node, name)


def _canonical(word: str) -> str:
    low = word.lower()
    if low in _ALIASES_CI:
        return _ALIASES_CI[low]
    if low in _CI_FAMILIES:
        return _CI_FAMILIES[low]
    return word


def _build(node, full: str, *, inside_nullable: bool = False) -> ColumnType:
    raw, args = node
    base = _canonical(raw)
    if base in ("Nullable", "LowCardinality"):
        if not args or len(args) != 1 or not isinstance(args[0], tuple):
            raise SkipidxError(f"type {full!r}: {base} takes one type")
        inner = _build(args[0], full, inside_nullable=inside_nullable or base == "Nullable")
        if base == "Nullable":
            if inner.nullable:
                raise SkipidxError(f"nested Nullable in type {full!r}")
            if inner.element is not None or inner.low_cardinality:
                if inner.element is not None:
                    raise SkipidxError(f"type {full!r}: Nested type Array cannot be inside Nullable type")
                return ColumnType(f"LowCardinality(Nullable({inner.base_name}))", inner.arrow_type, True, True)
            return ColumnType(f"Nullable({inner.name})", inner.arrow_type, True, False, None, inner.enum,
                              inner.precision)
        if inner.low_cardinality:
            raise SkipidxError(f"nested LowCardinality in type {full!r}")
        if inner.base_name != "String" and not inner.base_name.startswith("FixedString("):
            raise SkipidxError(f"type {full!r}: LowCardinality is supported for String and FixedString only")
        b = inner.base_name
        spelled = f"LowCardinality(Nullable({b}))" if inner.nullable else f"LowCardinality({b})"
        return ColumnType(spelled, inner.arrow_type, inner.nullable, True)
    if base == "Array":
        if not args or len(args) != 1 or not isinstance(args[0], tuple):
            raise SkipidxError(f"type {full!r}: Array takes one type")
        el = _build(args[0], full)
        return ColumnType(f"Array({el.name})", pa.list_(pa.field("item", el.arrow_type, nullable=el.nullable)),
                          element=el)
    if base in _SCALARS:
        if args and not (base in _LENGTH_IGNORED and all(isinstance(a, int) for a in args)):
            if base == "DateTime" and len(args) == 1 and isinstance(args[0], str):
                tz = _check_tz(args[0], full)
                return ColumnType(f"DateTime('{tz}')", pa.timestamp("s", tz))
            raise SkipidxError(f"type {full!r}: {base} takes no arguments")
        return ColumnType(base, _SCALARS[base])
    if base == "DateTime64":
        if not args or len(args) > 2 or not isinstance(args[0], int) or not 0 <= args[0] <= 9:
            raise SkipidxError(f"type {full!r}: DateTime64(precision [, 'timezone']) with precision 0..9")
        p = args[0]
        tz = None
        if len(args) == 2:
            if not isinstance(args[1], str):
                raise SkipidxError(f"type {full!r}: the time zone is a string")
            tz = _check_tz(args[1], full)
        unit = "s" if p == 0 else "ms" if p <= 3 else "us" if p <= 6 else "ns"
        spelled = f"DateTime64({p}, '{tz}')" if tz else f"DateTime64({p})"
        return ColumnType(spelled, pa.timestamp(unit, tz), precision=p)
    if base == "Decimal" or base in _DECIMAL_SHORT:
        if base in _DECIMAL_SHORT:
            if not args or len(args) != 1 or not isinstance(args[0], int):
                raise SkipidxError(f"type {full!r}: {base}(scale)")
            prec, scale = _DECIMAL_SHORT[base], args[0]
        else:
            args = args or []
            if len(args) > 2 or not all(isinstance(a, int) for a in args):
                raise SkipidxError(f"type {full!r}: Decimal(P, S)")
            prec = args[0] if args else 10
            scale = args[1] if len(args) == 2 else 0
        if not 1 <= prec <= 76:
            raise SkipidxError(f"type {full!r}: Decimal precision must be 1..76")
        if not 0 <= scale <= prec:
            raise SkipidxError(f"type {full!r}: Decimal scale must be 0..{prec}")
        at = pa.decimal128(prec, scale) if prec <= 38 else pa.decimal256(prec, scale)
        return ColumnType(f"Decimal({prec}, {scale})", at, precision=prec)
    if base == "FixedString":
        if not args or len(args) != 1 or not isinstance(args[0], int) or args[0] < 1:
            raise SkipidxError(f"type {full!r}: FixedString(n) with n >= 1")
        return ColumnType(f"FixedString({args[0]})", pa.binary(args[0]))
    if base == "UUID":
        if args:
            raise SkipidxError(f"type {full!r}: UUID takes no arguments")
        return ColumnType("UUID", pa.uuid())
    if base in ("Enum", "Enum8", "Enum16"):
        return _enum_type(base, args or [], full)
    raise SkipidxError(f"unknown type {raw!r} in {full!r}{_hint(raw)}")


def _enum_type(base: str, args: list, full: str) -> ColumnType:
    if not args:
        raise SkipidxError(f"type {full!r}: Enum needs at least one value")
    pairs: list[tuple[str, int]] = []
    nxt = 1
    explicit = [a for a in args if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], int)]
    if explicit and len(explicit) != len(args) and base != "Enum":
        raise SkipidxError(f"type {full!r}: every value of {base} needs a number")
    for a in args:
        if isinstance(a, str):
            pairs.append((a, nxt))
        elif isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str):
            pairs.append(a)
        else:
            raise SkipidxError(f"type {full!r}: Enum values are 'name' = number")
        nxt = pairs[-1][1] + 1
    names = [n for n, _ in pairs]
    nums = [v for _, v in pairs]
    if len(set(names)) != len(names) or len(set(nums)) != len(nums):
        raise SkipidxError(f"type {full!r}: duplicate Enum name or value")
    if base == "Enum":
        base = "Enum8" if all(-128 <= v <= 127 for v in nums) else "Enum16"
    lo, hi = (-128, 127) if base == "Enum8" else (-32768, 32767)
    if not all(lo <= v <= hi for v in nums):
        raise SkipidxError(f"type {full!r}: {base} values must be in [{lo}, {hi}]")
    def q(n: str) -> str:
        return "'" + n.replace("\\", "\\\\").replace("'", "\\'") + "'"
    spelled = f"{base}(" + ", ".join(f"{q(n)} = {v}" for n, v in pairs) + ")"
    return ColumnType(spelled, pa.string(), enum=tuple(pairs))


def _check_tz(tz: str, full: str) -> str:
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(tz)
    except Exception:
        raise SkipidxError(f"type {full!r}: unknown time zone {tz!r}") from None
    return tz


def _hint(word: str) -> str:
    import difflib

    known = list(_SCALARS) + ["Array", "Nullable", "LowCardinality", "DateTime64", "Decimal", "FixedString",
                              "UUID", "Enum8", "Enum16"]
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f"; known: {', '.join(known)}"


def is_uuid(t: pa.DataType) -> bool:
    return isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid"


_is_uuid = is_uuid


def ch_type_of(arrow_type: pa.DataType) -> str:
    """The ClickHouse name of an Arrow type (for DESCRIBE); SkipidxError if none."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        inner = ch_type_of(t.value_type)
        return f"LowCardinality({inner})"
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "String"
    if _is_uuid(t):
        return "UUID"
    if pa.types.is_timestamp(t):
        p = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        if p == 0:
            return f"DateTime('{t.tz}')" if t.tz else "DateTime"
        return f"DateTime64({p}, '{t.tz}')" if t.tz else f"DateTime64({p})"
    if pa.types.is_decimal(t):
        return f"Decimal({t.precision}, {t.scale})"
    if pa.types.is_fixed_size_binary(t):
        return f"FixedString({t.byte_width})"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return f"Array({ch_type_of(t.value_type)})"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "String"
    for n, at in _SCALARS.items():
        if at == t:
            return n
    if pa.types.is_date64(t):
        return "Date"
    raise SkipidxError(f"no ClickHouse type for Arrow type {t}")


def _bad(column: str, ctype: ColumnType, value, why: str) -> SkipidxError:
    return SkipidxError(f"column {column!r} ({ctype.name}): {why}: {value!r}")


def _first(arr: pa.Array, mask: pa.Array):
    """The first value of `arr` where `mask` is true (for error messages)."""
    idx = pc.index(mask, True).as_py()
    return arr[idx].as_py()


def _check_int_range(column: str, ctype: ColumnType, arr: pa.Array) -> None:
    """Out-of-range values of an integer input for an integer target -> error."""
    target = ctype.arrow_type
    info = np.iinfo(target.to_pandas_dtype())
    src = arr.type
    src_info = np.iinfo(src.to_pandas_dtype())
    if src_info.min >= info.min and src_info.max <= info.max:
        return
    lo = pc.min(arr).as_py()
    hi = pc.max(arr).as_py()
    if lo is None:
        return
    if lo < info.min:
        raise _bad(column, ctype, lo, f"value out of range [{info.min}, {info.max}]")
    if hi > info.max:
        raise _bad(column, ctype, hi, f"value out of range [{info.min}, {info.max}]")


def _check_float_to_int(column: str, ctype: ColumnType, arr: pa.Array) -> None:
    info = np.iinfo(ctype.arrow_type.to_pandas_dtype())
    vals = arr.to_numpy(zero_copy_only=False)
    valid = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False))
    v = vals[valid].astype(np.float64, copy=False)
    if v.size == 0:
        return
    bad = ~np.isfinite(v) | (v != np.floor(v))
    if bad.any():
        raise _bad(column, ctype, float(v[bad][0]), "not an integer")
    # float(info.max) + 1 is exactly 2**bits (or 2**(bits-1)) even where
    # float(info.max) itself rounds up (64-bit types), so `>=` is exact.
    over = (v < float(info.min)) | (v >= float(info.max) + 1.0)
    if over.any():
        raise _bad(column, ctype, float(v[over][0]), f"value out of range [{info.min}, {info.max}]")


def _unwrap(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    return one_array(arr, plain_strings=True)


def cast_to(column_type: ColumnType, values: pa.Array | pa.ChunkedArray, column: str = "?") -> pa.Array:
    """Convert `values` to `column_type`'s Arrow type, checking every value.

    Accepts any Arrow input whose values convert without change. Raises
    :class:`SkipidxError` naming `column` and the first bad value otherwise.
    """
    ctype = column_type
    target = ctype.arrow_type
    arr = _unwrap(values)
    src = arr.type

    if arr.null_count and not ctype.nullable:
        raise SkipidxError(
            f"column {column!r} ({ctype.name}): NULL in a non-Nullable column "
            f"(row {pc.index(arr.is_null(), True).as_py()})"
        )
    if pa.types.is_null(src):
        return pa.nulls(len(arr), target)
    special = _cast_special(ctype, arr, column)
    if special is not None:
        return special
    if src == target and not (pa.types.is_date32(target) or pa.types.is_timestamp(target)):
        out = arr
    elif pa.types.is_integer(target):
        if pa.types.is_integer(src):
            _check_int_range(column, ctype, arr)
            out = arr.cast(target, safe=False)
        elif pa.types.is_boolean(src):
            out = arr.cast(target)
        elif pa.types.is_floating(src):
            _check_float_to_int(column, ctype, arr)
            out = arr.cast(target, safe=False)
        else:
            raise _mistyped(column, ctype, src)
    elif pa.types.is_floating(target):
        if pa.types.is_integer(src) or pa.types.is_floating(src) or pa.types.is_boolean(src):
            # IEEE conversion (rounding to nearest), as ClickHouse converts.
            out = arr.cast(target, safe=False)
        else:
            raise _mistyped(column, ctype, src)
    elif pa.types.is_boolean(target):
        if pa.types.is_integer(src):
            bad = pc.and_(pc.not_equal(arr, 0), pc.not_equal(arr, 1))
            if pc.any(bad).as_py():
                raise _bad(column, ctype, _first(arr, pc.fill_null(bad, False)), "not a Bool (0 or 1)")
            out = arr.cast(target)
        else:
            raise _mistyped(column, ctype, src)
    elif pa.types.is_string(target):
        if pa.types.is_binary(src) or pa.types.is_large_binary(src):
            try:
                out = arr.cast(pa.string())
                out.validate(full=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                raise SkipidxError(f"column {column!r} ({ctype.name}): binary values are not valid UTF-8")
        else:
            raise _mistyped(column, ctype, src)
    elif pa.types.is_date32(target):
        if pa.types.is_date(src):
            out = arr.cast(target)
        elif pa.types.is_timestamp(src):
            out = arr.cast(target)
            # Arrow truncates the time of day silently; Date must not lose it
            back = out.cast(pa.timestamp(src.unit, src.tz))
            if not pc.all(pc.equal(back, arr)).as_py() in (True, None):
                raise SkipidxError(f"column {column!r} ({ctype.name}): timestamps with a time of day do not fit Date")
        else:
            raise _mistyped(column, ctype, src)
        lo, hi = pc.min(out).as_py(), pc.max(out).as_py()
        if lo is not None and lo < DATE_MIN:
            raise _bad(column, ctype, lo, f"value out of range [{DATE_MIN}, {DATE_MAX}]")
        if hi is not None and hi > DATE_MAX:
            raise _bad(column, ctype, hi, f"value out of range [{DATE_MIN}, {DATE_MAX}]")
    elif pa.types.is_timestamp(target):
        if pa.types.is_timestamp(src) or pa.types.is_date(src):
            if pa.types.is_timestamp(src) and src.tz is not None:
                arr = arr.cast(pa.timestamp(src.unit))  # UTC instants, as ClickHouse stores them
            out = _truncate_to_unit(arr, target)
        elif pa.types.is_integer(src):
            out = arr.cast(pa.int64(), safe=False).cast(target)  # seconds since the epoch
        else:
            raise _mistyped(column, ctype, src)
        ints = out.cast(pa.int64())
        lo, hi = pc.min(ints).as_py(), pc.max(ints).as_py()
        if lo is not None and (lo < 0 or hi > DATETIME_MAX_S):
            v = lo if lo < 0 else hi
            raise _bad(column, ctype, _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=v),
                       "value out of range [1970-01-01 00:00:00, 2106-02-07 06:28:15]")
    else:  # pragma: no cover - every ColumnType target is handled above
        raise AssertionError(f"unhandled target type {target}")
    return out


_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _truncate_to_unit(arr: pa.Array, target: pa.DataType, ticks_ns: int | None = None) -> pa.Array:
    """Timestamps (or dates) to `target`'s unit, truncating finer parts as ClickHouse does.

    `ticks_ns` is the tick of a DateTime64(p) whose p is not a whole unit
    (DateTime64(2): 10 ms ticks in a millisecond timestamp).
    """
    if pa.types.is_date(arr.type):
        arr = arr.cast(pa.timestamp("s"))
    src_ns = _UNIT_NS[arr.type.unit]
    tick = ticks_ns or _UNIT_NS[target.unit]
    ints = arr.cast(pa.int64())
    if tick > src_ns:
        step = tick // src_ns
        # floor division: ClickHouse truncates toward the earlier instant
        ints = _floor_ints(ints, step, step)
    target_step = _UNIT_NS[target.unit]
    if target_step > src_ns:
        vals = _floor_ints(ints, target_step // src_ns, 1)
    elif target_step == src_ns:
        vals = ints
    else:
        vals = pc.multiply_checked(ints, src_ns // target_step)
    return vals.cast(pa.timestamp(target.unit, target.tz))


def _floor_ints(ints: pa.Array, step: int, times: int) -> pa.Array:
    """floor(ints / step) * times over an int64 array, NULLs kept (numpy without
    pyarrow's converters, which import pandas)."""
    if ints.null_count:
        filled = to_numpy(ints.fill_null(arrow_scalar(0, pa.int64())))
        out = from_numpy(np.floor_divide(filled, step) * times, pa.int64())
        return pc.if_else(ints.is_null(), arrow_scalar(None, pa.int64()), out)
    return from_numpy(np.floor_divide(to_numpy(ints), step) * times, pa.int64())


def _cast_special(ctype: ColumnType, arr: pa.Array, column: str) -> pa.Array | None:
    """The types beyond the numeric/string/date core; None for the others."""
    target = ctype.arrow_type
    src = arr.type
    if ctype.element is not None:
        if not (pa.types.is_list(src) or pa.types.is_large_list(src) or pa.types.is_fixed_size_list(src)):
            raise _mistyped(column, ctype, src)
        if not pa.types.is_list(src):
            arr = arr.cast(pa.list_(src.value_type))
        flat = arr.flatten() if arr.offset == 0 and not arr.null_count else None
        if flat is None:
            arr = pa.ListArray.from_arrays(arr.offsets, arr.values, mask=arr.is_null()) if arr.null_count else arr
            offsets = pc.subtract(arr.offsets, arr.offsets[0])
            flat = arr.values.slice(arr.offsets[0].as_py(), offsets[-1].as_py())
        else:
            offsets = pc.subtract(arr.offsets, arr.offsets[0])
        values = cast_to(ctype.element, flat, f"{column}[]")
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if _is_uuid(target):
        return _cast_uuid(ctype, arr, column)
    if pa.types.is_fixed_size_binary(target):
        if pa.types.is_fixed_size_binary(src) and src.byte_width == target.byte_width:
            return arr
        if not (pa.types.is_string(src) or pa.types.is_binary(src) or pa.types.is_large_binary(src)
                or pa.types.is_fixed_size_binary(src)):
            raise _mistyped(column, ctype, src)
        b = arr.cast(pa.binary())
        n = target.byte_width
        lens = pc.binary_length(b)
        if pc.max(lens).as_py() is not None and pc.max(lens).as_py() > n:
            raise _bad(column, ctype, _first(b, pc.fill_null(pc.greater(lens, n), False)),
                       f"too large value for FixedString({n})")
        return _pad_right(b, n)
    if ctype.enum:
        return _cast_enum(ctype, arr, column)
    if pa.types.is_decimal(target):
        return _cast_decimal(ctype, arr, column)
    if pa.types.is_timestamp(target) and (target.unit != "s" or target.tz is not None):
        if pa.types.is_timestamp(src) or pa.types.is_date(src):
            if pa.types.is_timestamp(src) and src.tz is not None:
                arr = arr.cast(pa.timestamp(src.unit))
            p = ctype.precision if ctype.precision is not None else 0
            out = _truncate_to_unit(arr, target, 10 ** (9 - p) if target.unit != "s" else None)
        elif pa.types.is_integer(src):
            secs = arr.cast(pa.int64(), safe=False)
            out = pc.multiply_checked(secs, 10**9 // _UNIT_NS[target.unit]).cast(pa.timestamp(target.unit, target.tz))
        else:
            raise _mistyped(column, ctype, src)
        secs = pc.divide(out.cast(pa.int64()), 10**9 // _UNIT_NS[target.unit])
        lo, hi = pc.min(secs).as_py(), pc.max(secs).as_py()
        if ctype.precision is None:   # DateTime('tz'): UInt32 seconds
            lo_ok, hi_ok, rng = 0, DATETIME_MAX_S, "[1970-01-01 00:00:00, 2106-02-07 06:28:15]"
        else:
            lo_ok, hi_ok, rng = DATETIME64_MIN_S, DATETIME64_MAX_S, "[1900-01-01 00:00:00, 2299-12-31 23:59:59]"
        if lo is not None and (lo < lo_ok or hi > hi_ok):
            v = lo if lo < lo_ok else hi
            raise _bad(column, ctype, _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=v), f"value out of range {rng}")
        return out
    return None


def _pad_right(b: pa.Array, n: int) -> pa.Array:
    """Binary values right-padded with zero bytes to n, as a fixed_size_binary(n) array."""
    b = b.cast(pa.binary())
    if b.offset or b.null_count:
        b = pa.concat_arrays([b])
    offsets = np.frombuffer(b.buffers()[1], dtype=np.int32, count=len(b) + 1, offset=b.offset * 4)
    data = np.frombuffer(b.buffers()[2], dtype=np.uint8) if b.buffers()[2] is not None else np.zeros(0, np.uint8)
    out = np.zeros((len(b), n), dtype=np.uint8)
    lens = np.diff(offsets)
    if lens.size and lens.sum():
        rows = np.repeat(np.arange(len(b)), lens)
        cols = np.arange(lens.sum()) - np.repeat(offsets[:-1] - offsets[0], lens)
        out[rows, cols] = data[offsets[0]:offsets[-1]]
    validity = b.buffers()[0]
    return pa.Array.from_buffers(pa.binary(n), len(b), [validity, pa.py_buffer(out.tobytes())], null_count=b.null_count)


_UUID_TEXT = r"^([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}|[0-9A-Fa-f]{32})$"


def parse_uuid_texts(text: pa.Array) -> tuple[pa.Array, pa.Array]:
    """UUID texts (8-4-4-4-12 or 32 hex digits, as ClickHouse reads them) -> (fixed_size_binary(16)
    storage, mask of the non-null texts that are not UUIDs; their storage is zero bytes)."""
    text = one_array(text).cast(pa.string())
    ok = pc.match_substring_regex(text, _UUID_TEXT)
    bad = pc.fill_null(pc.invert(ok), False)
    hexes = pc.replace_substring(pc.if_else(pc.fill_null(ok, False), text, "0" * 32), "-", "")
    hexes = pa.concat_arrays([hexes])
    start = int(np.frombuffer(hexes.buffers()[1], np.int32)[hexes.offset]) if len(hexes) else 0
    raw = np.frombuffer(hexes.buffers()[2], dtype=np.uint8)[start:start + 32 * len(hexes)]
    nib = np.where(raw <= ord("9"), raw - ord("0"), (raw | 0x20) - ord("a") + 10).astype(np.uint8)
    packed = (nib[0::2] << 4) | nib[1::2]
    storage = pa.Array.from_buffers(pa.binary(16), len(text), [None, pa.py_buffer(packed.tobytes())])
    if text.null_count:
        storage = pc.if_else(pc.is_valid(text), storage, pa.scalar(None, pa.binary(16)))
    return storage, bad


def uuid_array(storage: pa.Array) -> pa.Array:
    return pa.ExtensionArray.from_storage(pa.uuid(), storage)


def uuid_order_key(arr: pa.Array) -> pa.Array:
    """16-byte keys whose byte order is ClickHouse's UUID order: UUID is a UInt128 whose high 64 bits
    are the text's last 16 hex digits, so it sorts by the second half, then the first."""
    x = one_array(arr)
    if is_uuid(x.type):
        x = x.storage
    n = len(x)
    raw = np.frombuffer(x.buffers()[1], np.uint8)[x.offset * 16:(x.offset + n) * 16].reshape(n, 16)
    swapped = np.concatenate([raw[:, 8:], raw[:, :8]], axis=1)
    validity = x.buffers()[0] if x.null_count else None
    if validity is not None and x.offset:
        return pc.if_else(x.is_valid(), pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(swapped.tobytes())]),
                          pa.scalar(None, pa.binary(16)))
    return pa.Array.from_buffers(pa.binary(16), n, [validity, pa.py_buffer(swapped.tobytes())], null_count=x.null_count)


def sort_key_table(keys: pa.Table) -> pa.Table:
    """Sort-key columns as Arrow's sort takes them: a UUID (an extension type it refuses)
    as its ClickHouse order key."""
    if not any(is_uuid(f.type) for f in keys.schema):
        return keys
    cols = [pa.chunked_array([uuid_order_key(c) for c in col.chunks], type=pa.binary(16)) if is_uuid(col.type)
            else col for col in keys.columns]
    return pa.table(cols, names=keys.column_names)


def _cast_uuid(ctype: ColumnType, arr: pa.Array, column: str) -> pa.Array:
    src = arr.type
    if _is_uuid(src):
        return arr
    if pa.types.is_fixed_size_binary(src) and src.byte_width == 16:
        storage = arr
    elif pa.types.is_string(src) or pa.types.is_binary(src) or pa.types.is_large_binary(src) \
            or pa.types.is_large_string(src):
        text = pc.utf8_trim_whitespace(arr.cast(pa.string()))
        storage, bad = parse_uuid_texts(text)
        if pc.any(bad).as_py():
            raise _bad(column, ctype, _first(text, bad), "cannot parse UUID")
    else:
        raise _mistyped(column, ctype, src)
    return pa.ExtensionArray.from_storage(pa.uuid(), storage)


def _cast_enum(ctype: ColumnType, arr: pa.Array, column: str) -> pa.Array:
    names = [n for n, _ in ctype.enum]
    src = arr.type
    if pa.types.is_string(src) or pa.types.is_binary(src):
        s = arr.cast(pa.string())
        known = pc.is_in(s, value_set=pa.array(names, pa.string()))
        bad = pc.and_(pc.invert(known), pc.is_valid(s))
        if pc.any(bad).as_py():
            raise _bad(column, ctype, _first(s, bad), f"unknown element for {ctype.base_name}")
        return s
    if pa.types.is_integer(src):
        nums = pa.array([v for _, v in ctype.enum], pa.int64())
        idx = pc.index_in(arr.cast(pa.int64()), value_set=nums)
        bad = pc.and_(pc.is_null(idx), pc.is_valid(arr))
        if pc.any(bad).as_py():
            raise _bad(column, ctype, _first(arr, bad), f"unknown element for {ctype.base_name}")
        return pc.take(pa.array(names, pa.string()), idx)
    raise _mistyped(column, ctype, src)


def _cast_decimal(ctype: ColumnType, arr: pa.Array, column: str) -> pa.Array:
    import decimal as _dec

    target = ctype.arrow_type
    src = arr.type
    if pa.types.is_decimal(src) or pa.types.is_integer(src) or pa.types.is_boolean(src):
        if pa.types.is_boolean(src):
            arr = arr.cast(pa.int8())
        # Arrow's decimal casts refuse to lose digits; ClickHouse truncates the extra scale.
        if pa.types.is_decimal(src) and src.scale > target.scale:
            wide = pa.decimal256(76, src.scale) if src.precision > 38 else pa.decimal128(38, src.scale)
            arr = _truncate_decimal(arr.cast(wide), target.scale)
        try:
            return arr.cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise _bad(column, ctype, _first_overflow(arr, target), "value out of range of the Decimal") from None
    if pa.types.is_floating(src) or pa.types.is_string(src):
        fast = _decimal_from_text(arr, target)
        if fast is not None:
            return fast
        # what the column-wise path leaves (odd spellings, errors) goes value by value,
        # so the first bad value is the one reported
        ctx = _dec.Context(prec=80, rounding=_dec.ROUND_DOWN)
        q = _dec.Decimal(1).scaleb(-target.scale)
        limit = _dec.Decimal(10) ** (target.precision - target.scale)
        out = []
        for v in arr.to_pylist():
            if v is None:
                out.append(None)
                continue
            try:
                d = _dec.Decimal(v.strip()) if isinstance(v, str) else _dec.Decimal(repr(float(v)))
            except (_dec.InvalidOperation, ValueError):
                raise _bad(column, ctype, v, "cannot parse Decimal") from None
            if not d.is_finite():
                raise _bad(column, ctype, v, "not a finite number")
            d = d.quantize(q, rounding=_dec.ROUND_DOWN, context=ctx)
            if abs(d) >= limit:
                raise _bad(column, ctype, v, "value out of range of the Decimal")
            out.append(d)
        return pa.array(out, target)
    raise _mistyped(column, ctype, src)


_PLAIN_NUMBER = r"^(?P<sign>[+-]?)(?P<int>\d*)(?:\.(?P<frac>\d*))?(?:[eE](?P<exp>[+-]?\d{1,4}))?$"


def _decimal_from_text(arr: pa.Array, target: pa.DataType) -> pa.Array | None:
    """Floats (their shortest round-trip text, as ``Decimal(repr(x))``) and numeric
    text to Decimal, truncated toward zero, column-wise; None when any value needs
    the value-by-value path (other spellings, non-finite, out of range)."""
    if pa.types.is_floating(arr.type):
        if not pc.all(pc.is_finite(arr.fill_null(0.0))).as_py():
            return None
        text = arr.cast(pa.float64()).cast(pa.string())
    else:
        text = pc.utf8_trim_whitespace(arr)
    parts = pc.extract_regex(text, _PLAIN_NUMBER)
    if parts.null_count != arr.null_count:
        return None   # a non-null value that is not a plain number
    sign, ip, fp, ex = (parts.field(i).fill_null("") for i in range(4))
    digits = pc.binary_join_element_wise(ip, fp, "")
    if not pc.all(pc.or_(arr.is_null(), pc.greater(pc.binary_length(digits), 0))).as_py():
        return None   # '', '.', '+'
    exp = pc.utf8_ltrim(pc.if_else(pc.equal(ex, ""), "0", ex), characters="+").cast(pa.int32()) \
        .to_numpy(zero_copy_only=False)
    # the unscaled integer: the first (digits before the point + scale) digits, zero-padded
    keep = pc.binary_length(ip).to_numpy(zero_copy_only=False).astype(np.int64) + exp + target.scale
    if keep.max(initial=0) > target.precision + 40:
        return None   # out of range: the value path reports it
    head, _ = split_digits_at(digits, np.maximum(keep, 0))
    out = pc.if_else(pc.equal(head, ""), "0", head)
    unscaled = pc.binary_join_element_wise(sign, out, "")
    wide = pa.decimal256(76, 0) if target.precision > 38 else pa.decimal128(38, 0)
    try:
        val = unscaled.cast(wide).view(pa.decimal256(76, target.scale) if target.precision > 38
                                       else pa.decimal128(38, target.scale))
        val = val.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return pc.if_else(arr.is_null(), pa.scalar(None, target), val) if arr.null_count else val


def _truncate_decimal(arr: pa.Array, scale: int) -> pa.Array:
    import decimal as _dec

    q = _dec.Decimal(1).scaleb(-scale)
    return pa.array([None if v is None else v.quantize(q, rounding=_dec.ROUND_DOWN) for v in arr.to_pylist()],
                    pa.decimal256(76, scale) if arr.type.precision > 38 else pa.decimal128(38, scale))


def _first_overflow(arr: pa.Array, target: pa.DataType):
    for v in arr.to_pylist():
        if v is None:
            continue
        try:
            pa.array([v], arr.type).cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return v
    return None


def _mistyped(column: str, ctype: ColumnType, src: pa.DataType) -> SkipidxError:
    return SkipidxError(f"column {column!r} is {ctype.name}, got values of type {src}")
