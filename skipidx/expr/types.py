"""Arrow types as ClickHouse sees them: type classes, ClickHouse names, literal types."""
from __future__ import annotations

import datetime as _dt
import uuid as _uuid

from typing import Any

import pyarrow as pa


def value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def is_string(t: pa.DataType) -> bool:
    t = value_type(t)
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t) or pa.types.is_string_view(t)


def is_int(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_boolean(t)


def is_numeric(t: pa.DataType) -> bool:
    return is_int(t) or pa.types.is_floating(t)


def ch_name(t: pa.DataType, nullable: bool = False) -> str:
    """ClickHouse spelling of an Arrow type, for messages."""
    t = value_type(t)
    names = {pa.uint8(): "UInt8", pa.uint16(): "UInt16", pa.uint32(): "UInt32", pa.uint64(): "UInt64",
             pa.int8(): "Int8", pa.int16(): "Int16", pa.int32(): "Int32", pa.int64(): "Int64",
             pa.float32(): "Float32", pa.float64(): "Float64", pa.bool_(): "Bool", pa.date32(): "Date",
             pa.null(): "Nullable(Nothing)"}
    if is_string(t):
        n = "String"
    elif pa.types.is_timestamp(t):
        n = "DateTime"
    elif isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        n = "UUID"
    else:
        n = names.get(t, str(t))
    return f"Nullable({n})" if nullable and n != "Nullable(Nothing)" else n


def _int_range(t: pa.DataType) -> tuple[int, int]:
    if pa.types.is_boolean(t):
        return 0, 1
    bits = t.bit_width
    if pa.types.is_unsigned_integer(t):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def literal_type(value: Any) -> pa.DataType:
    """The type ClickHouse gives a literal (smallest unsigned/signed integer, Float64, String)."""
    if value is None:
        return pa.null()
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        if value >= 0:
            for t in (pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
                if value <= _int_range(t)[1]:
                    return t
        else:
            for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64()):
                if value >= _int_range(t)[0]:
                    return t
        return pa.float64()   # beyond 64 bits: ClickHouse reads it as Float64
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, (bytes, str)):
        return pa.string()
    if isinstance(value, tuple):
        return pa.null()
    if isinstance(value, _dt.datetime):
        return pa.timestamp("us" if value.microsecond else "s")
    if isinstance(value, _dt.date):
        return pa.date32()
    if isinstance(value, _uuid.UUID):
        return pa.uuid()
    raise AssertionError(f"unexpected literal {value!r}")


#: Arrow has no Nothing type: an array of only NULLs (``[NULL]``, ``arrayMap(x -> NULL, a)``) is a
#: list of Arrow nulls like ``[]``; its item field's metadata tells Array(Nullable(Nothing)) from
#: Array(Nothing), as ClickHouse types them
_NULLABLE_NOTHING = {b"clickhouse_type": b"Nullable(Nothing)"}


def nullable_nothing_list() -> pa.DataType:
    """The Arrow type of ClickHouse's Array(Nullable(Nothing))."""
    return pa.list_(pa.field("item", pa.null(), metadata=_NULLABLE_NOTHING))


def is_nullable_nothing_list(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) and pa.types.is_null(t.value_type)
            and (t.value_field.metadata or {}).get(b"clickhouse_type") == b"Nullable(Nothing)")
