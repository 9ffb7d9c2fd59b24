"""Column types: the ClickHouse type names of the design, mapped to Arrow.

=========================  ==========================  ======================
ClickHouse name            Arrow type                  range checked on cast
=========================  ==========================  ======================
UInt8 .. UInt64            uint8 .. uint64             yes
Int8 .. Int64              int8 .. int64               yes
Float32, Float64           float32, float64            no (IEEE semantics)
Bool                       bool                        0/1 from integers
String                     string                      --
LowCardinality(String)     string (flag kept)          --
Date                       date32                      1970-01-01..2149-06-06
DateTime                   timestamp[s]                1970-01-01..2106-02-07
Nullable(T)                T, nulls allowed            --
=========================  ==========================  ======================

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
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skipidx.core.errors import SkipidxError

__all__ = ["ColumnType", "parse_type", "cast_to", "ch_type_of"]

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
_ALIASES = {"Boolean": "Bool", "Float": "Float32", "Double": "Float64"}
#: ClickHouse's case-insensitive type names and aliases (system.data_type_families,
#: alias_to; one-word names), upper-cased -> canonical type. A length argument
#: (VARCHAR(255)) is accepted and ignored, as ClickHouse does.
_CI_ALIASES = {
    "BOOL": "Bool", "BOOLEAN": "Bool", "DATE": "Date", "DATETIME": "DateTime", "TIMESTAMP": "DateTime",
    "FLOAT": "Float32", "REAL": "Float32", "SINGLE": "Float32", "DOUBLE": "Float64",
    "TINYINT": "Int8", "INT1": "Int8", "BYTE": "Int8", "SMALLINT": "Int16",
    "INT": "Int32", "INTEGER": "Int32", "MEDIUMINT": "Int32", "BIGINT": "Int64", "SIGNED": "Int64",
    "YEAR": "UInt16", "UNSIGNED": "UInt64", "BIT": "UInt64", "SET": "UInt64",
    **{w: "String" for w in ("BLOB", "BYTEA", "CHAR", "CHARACTER", "CLOB", "LONGBLOB", "LONGTEXT", "MEDIUMBLOB",
                             "MEDIUMTEXT", "NCHAR", "NVARCHAR", "TEXT", "TINYBLOB", "TINYTEXT", "VARBINARY",
                             "VARCHAR", "VARCHAR2")},
}
_ALIAS_WITH_ARGS = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\(\s*[0-9]*\s*(,\s*[0-9]+\s*)?\))?$")


def _canonical_base(text: str) -> str:
    base = _ALIASES.get(text, text)
    if base in _SCALARS:
        return base
    m = _ALIAS_WITH_ARGS.match(text)
    if m:
        alias = _CI_ALIASES.get(m.group(1).upper())
        # only the String aliases take a (length) argument
        if alias is not None and (m.group(2) is None or alias == "String"):
            return alias
    return base

DATE_MIN = _dt.date(1970, 1, 1)
DATE_MAX = _dt.date(2149, 6, 6)          # UInt16 days
DATETIME_MAX_S = 2**32 - 1                # UInt32 seconds: 2106-02-07 06:28:15


@dataclass(frozen=True)
class ColumnType:
    """A declared column type.

    ``name`` is the canonical ClickHouse spelling (``Nullable(String)``,
    ``LowCardinality(String)``...), ``arrow_type`` the Arrow type of stored
    values (never a dictionary type: LowCardinality only changes the
    Parquet encoding, which is dictionary anyway).
    """

    name: str
    arrow_type: pa.DataType
    nullable: bool = False
    low_cardinality: bool = False

    def __str__(self) -> str:
        return self.name

    @property
    def base_name(self) -> str:
        """The name without Nullable/LowCardinality wrappers."""
        return ch_type_of(self.arrow_type)


_WRAP = re.compile(r"^\s*(Nullable|LowCardinality)\s*\((.*)\)\s*$", re.S)


def parse_type(name: str) -> ColumnType:
    """Parse a ClickHouse type name (``UInt8``, ``Nullable(String)``, ...).

    Raises :class:`SkipidxError` for unknown or unsupported types (arrays are
    not supported yet).
    """
    if not isinstance(name, str) or not name.strip():
        raise SkipidxError(f"empty or invalid type name {name!r}")
    text = name.strip()
    nullable = False
    low_card = False
    # Wrappers in either order: Nullable(LowCardinality(String)) is what users
    # write, LowCardinality(Nullable(String)) is what ClickHouse prints.
    for _ in range(2):
        m = _WRAP.match(text)
        if not m:
            break
        wrapper, inner = m.group(1), m.group(2).strip()
        if wrapper == "Nullable":
            if nullable:
                raise SkipidxError(f"nested Nullable in type {name!r}")
            nullable = True
        else:
            if low_card:
                raise SkipidxError(f"nested LowCardinality in type {name!r}")
            low_card = True
        text = inner
    base = _canonical_base(text)
    if base.startswith("Array"):
        raise SkipidxError(f"type {name!r}: Array types are not supported")
    if base not in _SCALARS:
        from skipidx.core.hints import did_you_mean

        raise SkipidxError(
            f"unknown type {name!r}{did_you_mean(text, list(_SCALARS) + list(_ALIASES))}; supported: {', '.join(_SCALARS)}, "
            "LowCardinality(String), Nullable(T)"
        )
    if low_card and base != "String":
        raise SkipidxError(f"type {name!r}: LowCardinality is supported for String only")
    canonical = base
    if low_card and nullable:
        canonical = f"LowCardinality(Nullable({base}))"
    elif low_card:
        canonical = f"LowCardinality({base})"
    elif nullable:
        canonical = f"Nullable({base})"
    return ColumnType(canonical, _SCALARS[base], nullable, low_card)


def ch_type_of(arrow_type: pa.DataType) -> str:
    """The ClickHouse name of an Arrow type (for DESCRIBE); SkipidxError if none."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        inner = ch_type_of(t.value_type)
        return f"LowCardinality({inner})"
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "String"
    if pa.types.is_timestamp(t):
        return "DateTime"
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
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.string())
    return arr


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
            try:
                out = arr.cast(target, safe=True)
            except pa.ArrowInvalid:
                raise SkipidxError(
                    f"column {column!r} ({ctype.name}): sub-second timestamps do not fit DateTime "
                    "(round them first)"
                ) from None
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


def _mistyped(column: str, ctype: ColumnType, src: pa.DataType) -> SkipidxError:
    return SkipidxError(f"column {column!r} is {ctype.name}, got values of type {src}")
