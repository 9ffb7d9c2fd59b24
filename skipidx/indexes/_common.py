"""Helpers shared by the built-in index types (not part of the public interface)."""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.indexes.base import Atom, BoolMask, IndexDef

#: Comparison atoms and the pyarrow.compute function of each.
COMPARISONS = {
    "equals": "equal",
    "notEquals": "not_equal",
    "less": "less",
    "lessOrEquals": "less_equal",
    "greater": "greater",
    "greaterOrEquals": "greater_equal",
}

#: Atoms whose truth depends only on whether the row is NULL.
NULL_FUNCS = ("isNull", "isNotNull")


def index_error(definition: IndexDef, message: str) -> SkipidxError:
    """A CREATE-time error that names the index, as ClickHouse's 'When validating secondary index'."""
    return SkipidxError(f"index {definition.name!r} ({definition.type_name}): {message}")


_PROBE_TOKENIZERS = contextvars.ContextVar("skipidx_probe_tokenizers", default=True)


@contextlib.contextmanager
def stored_definitions() -> Iterator[None]:
    """Validation of definitions that were validated when they were stored (a table's
    metadata read back, an index object for a stored definition): parameters are checked
    again, but the tokenizer is not asked to hash an empty column of the type (it did
    at CREATE; asking loads its compiled kernels, seconds in a new process)."""
    token = _PROBE_TOKENIZERS.set(False)
    try:
        yield
    finally:
        _PROBE_TOKENIZERS.reset(token)


def probe_tokenizers() -> bool:
    """False inside :func:`stored_definitions`."""
    return _PROBE_TOKENIZERS.get()


def int_arg(definition: IndexDef, value: Any, what: str, *, minimum: int, maximum: int | None = None) -> int:
    """A whole-number DDL parameter in [minimum, maximum]; bools and floats are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise index_error(definition, f"{what} must be an unsigned integer, got {value!r}")
    v = int(value)
    if v < minimum or (maximum is not None and v > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise index_error(definition, f"{what} must be {bound}, got {v}")
    return v


def fpp_arg(definition: IndexDef, value: Any, what: str = "false positive probability") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise index_error(definition, f"{what} must be a number in (0, 1), got {value!r}")
    v = float(value)
    if not (0.0 < v < 1.0):
        raise index_error(definition, f"{what} must be in (0, 1), got {v!r}")
    return v


def value_type(t: pa.DataType) -> pa.DataType:
    """The logical value type (LowCardinality = dictionary is decoded)."""
    return t.value_type if pa.types.is_dictionary(t) else t


def is_uuid_type(t: pa.DataType) -> bool:
    from skipidx.core.types import is_uuid

    return is_uuid(value_type(t))


def index_values(vals: pa.Array) -> pa.Array:
    """The values an ordered index (minmax, set) keeps: a UUID as its 16-byte key in
    ClickHouse's UUID order (the second 8 bytes first), binary so that bytewise order is
    that order; others as they are."""
    if is_uuid_type(vals.type):
        from skipidx.core.types import uuid_order_key

        return uuid_order_key(vals).cast(pa.binary())
    return vals


def stored_value_type(t: pa.DataType) -> pa.DataType:
    """The type of the values :func:`index_values` gives for a column of type `t`."""
    return pa.binary() if is_uuid_type(t) else value_type(t)


def _uuid_key(v: Any) -> Any:
    """A UUID constant (16 bytes as the binder casts it, a uuid.UUID, or its text) as its
    :func:`index_values` key; anything else as a value no index places (answered 'maybe')."""
    import uuid as _uuid

    if v is None:
        return None
    if isinstance(v, _uuid.UUID):
        v = v.bytes
    elif isinstance(v, str) or (isinstance(v, (bytes, bytearray)) and len(v) != 16):
        try:
            v = _uuid.UUID(v.decode() if isinstance(v, (bytes, bytearray)) else v).bytes
        except (ValueError, UnicodeDecodeError):
            return object()
    if not isinstance(v, (bytes, bytearray)):
        return object()
    return bytes(v[8:16]) + bytes(v[0:8])


def index_atom_args(func: str, args: tuple, column_type: pa.DataType) -> tuple:
    """An atom's constants in the form :func:`index_values` keeps (UUID keys for a UUID column)."""
    if not is_uuid_type(column_type):
        return args
    if func in ("in", "notIn"):
        return (tuple(_uuid_key(v) for v in args[0]),) + tuple(args[1:]) if args else args
    return tuple(_uuid_key(v) for v in args)


def is_string_like(t: pa.DataType) -> bool:
    t = value_type(t)
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_string_view(t) or pa.types.is_binary_view(t))


def is_orderable(t: pa.DataType) -> bool:
    t = value_type(t)
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_date(t) or pa.types.is_timestamp(t) or is_string_like(t))


def plain(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous, non-dictionary array of the logical values."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_string_view(values.type):
        values = values.cast(pa.string())
    elif pa.types.is_binary_view(values.type):
        values = values.cast(pa.binary())
    return values


def null_counts(values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray) -> np.ndarray:
    """NULLs per zone, from the validity bitmap in one pass (prefix sums, so empty zones give 0)."""
    if values.null_count == 0:
        return np.zeros(zone_start.shape[0], dtype=np.int64)
    isnull = values.is_null().to_numpy(zero_copy_only=False)
    cs = np.concatenate([[0], np.cumsum(isnull, dtype=np.int64)])
    return cs[zone_start + zone_length] - cs[zone_start]


def segment_any(flags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """any(flags[offsets[i]:offsets[i+1]]) for every segment i (empty segments -> False)."""
    cs = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
    return (cs[offsets[1:]] - cs[offsets[:-1]]) > 0


def subject_matches(definition: IndexDef, atom: Atom) -> bool:
    """The atom's subject is this index's expression (same column, same function)."""
    return atom.column == definition.column and atom.expr_func == definition.expr_func


def null_mask(func: str, has_null: np.ndarray, non_null: np.ndarray) -> BoolMask:
    """isNull / isNotNull from the per-zone NULL bookkeeping (exact for every index type).

    ``lower(NULL)`` is NULL, so an index on ``lower(col)`` answers them for ``col`` too.
    """
    if func == "isNull":
        return BoolMask(has_null.copy(), non_null.copy())
    return BoolMask(non_null.copy(), has_null.copy())


def null_subject_matches(definition: IndexDef, atom: Atom) -> bool:
    return atom.func in NULL_FUNCS and atom.column == definition.column and atom.expr_func in (None, definition.expr_func)


def sql_literal(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        s = bytes(v).decode("utf-8", "backslashreplace")
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if v is None:
        return "NULL"
    if isinstance(v, tuple):
        return "(" + ", ".join(sql_literal(x) for x in v) + ")"
    return repr(v)


def atom_text(atom: Atom) -> str:
    if atom.text:
        return atom.text
    subject = f"{atom.expr_func}({atom.column})" if atom.expr_func else atom.column
    return f"{atom.func}({', '.join([subject] + [sql_literal(a) for a in atom.args])})"


def to_scalar(value: Any, t: pa.DataType) -> pa.Scalar | None:
    """The atom constant as a pyarrow scalar comparable with values of type ``t``.

    Strings compare bytewise (as ClickHouse's memcmp), so string types are
    compared as binary. None when the constant cannot be represented (the
    caller then answers 'maybe').
    """
    t = value_type(t)
    try:
        if is_string_like(t):
            if isinstance(value, str):
                value = value.encode("utf-8")
            if not isinstance(value, (bytes, bytearray)):
                return None
            return pa.scalar(bytes(value), pa.binary())
        if isinstance(value, (bytes, bytearray, str)):
            return None
        return pa.scalar(value, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None


def comparable(arr: pa.Array) -> pa.Array:
    """Strings as binary so comparisons are bytewise."""
    t = arr.type
    if pa.types.is_string(t):
        return arr.cast(pa.binary())
    if pa.types.is_large_string(t):
        return arr.cast(pa.large_binary())
    return arr


def scalar_for(arr: pa.Array, s: pa.Scalar) -> pa.Scalar:
    if pa.types.is_large_binary(arr.type) and pa.types.is_binary(s.type):
        return s.cast(pa.large_binary())
    if pa.types.is_fixed_size_binary(arr.type):
        return s  # compared after casting the array to binary
    return s


def cmp(arr: pa.Array, func: str, s: pa.Scalar) -> np.ndarray:
    """Element-wise comparison -> numpy bool (NULL -> False)."""
    if pa.types.is_fixed_size_binary(arr.type):
        arr = arr.cast(pa.binary())
    res = getattr(pc, func)(arr, scalar_for(arr, s))
    return res.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
