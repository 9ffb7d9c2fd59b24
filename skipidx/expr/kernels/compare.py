"""Literals, comparisons, IN, NULL tests and three-valued logic over Arrow arrays (ClickHouse semantics)."""
from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc
from skipidx.core.lazy import njit, use_numpy_path

from skipidx.core.arrays import array_of, from_numpy, scalar, to_numpy
from skipidx.core.lru import LRU
from skipidx.core.errors import SkipidxError
from skipidx.core.types import is_uuid, uuid_order_key
from skipidx.expr import dates
from skipidx.expr.kernels._arrow import (
    _is_stringish, _as_bytes, _map_chunks, _string_fn, _binary_view, _with_nulls_of, _const_bool, ArrayLike,
)

# --------------------------------------------------------------------------
# Literals, comparisons, IN, NULL tests, three-valued logic
# --------------------------------------------------------------------------

def literal(value: Any) -> pa.Scalar:
    """A ClickHouse-typed scalar for a SQL literal.

    Integers take the smallest type ClickHouse gives them (UInt8, UInt16,
    UInt32, UInt64 for non-negative; Int8..Int64 for negative), floats are
    Float64, strings String (as binary bytes), NULL a null scalar.
    """
    if value is None:
        return scalar(None, type=pa.null())
    if isinstance(value, bool):
        return scalar(int(value), type=pa.uint8())
    if isinstance(value, int):
        if value >= 0:
            for t, hi in ((pa.uint8(), 2**8), (pa.uint16(), 2**16), (pa.uint32(), 2**32), (pa.uint64(), 2**64)):
                if value < hi:
                    return scalar(value, type=t)
        else:
            for t, lo in ((pa.int8(), -2**7), (pa.int16(), -2**15), (pa.int32(), -2**31), (pa.int64(), -2**63)):
                if value >= lo:
                    return scalar(value, type=t)
        raise SkipidxError(f"integer literal {value} is out of the 64-bit range")
    if isinstance(value, float):
        return scalar(value, type=pa.float64())
    if isinstance(value, (bytes, str)):
        return scalar(_as_bytes(value, "literal"), type=pa.binary())
    raise SkipidxError(f"unsupported literal {value!r}")


_OPS = {"=": "equal", "==": "equal", "!=": "not_equal", "<>": "not_equal",
        "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_FLIP = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _np_cmp(op: str, a: Any, b: Any) -> Any:
    return {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
            "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal}[op](a, b)


def _type_kind(t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "uint"
    if pa.types.is_unsigned_integer(t):
        return "uint"
    if pa.types.is_signed_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if _is_stringish(t) or (pa.types.is_dictionary(t) and _is_stringish(t.value_type)):
        return "string"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "datetime"
    if pa.types.is_null(t):
        return "null"
    raise SkipidxError(f"unsupported type in comparison: {t}")


def _parse_date(text: str) -> _dt.date:
    try:
        return dates.parse_date(text)
    except ValueError:
        raise SkipidxError(
            f"Cannot parse date: expected a date in the YYYY-MM-DD or YYYYMMDD format: while converting '{text}' to Date"
        ) from None


def _parse_datetime(text: str) -> _dt.datetime:
    try:
        return dates.parse_datetime(text)
    except ValueError:
        raise SkipidxError(f"Cannot parse DateTime from '{text}'") from None


def _coerce_temporal(value: Any, t: pa.DataType) -> pa.Scalar:
    """A string literal compared with a Date/DateTime column is parsed as that type."""
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if isinstance(value, (bytes, str)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        v: Any = _parse_date(text) if pa.types.is_date(t) else dates.truncate_to_unit(_parse_datetime(text), t.unit)
        if pa.types.is_timestamp(t) and t.tz is not None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return scalar(v, type=t)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return scalar(value, type=t)
    if isinstance(value, int) and not isinstance(value, bool):
        # ClickHouse compares a Date with a number as its day number, a DateTime as seconds.
        if pa.types.is_date(t):
            return scalar(value, type=pa.int32()).cast(pa.date32()).cast(t)
        return scalar(value, type=pa.int64()).cast(pa.timestamp("s")).cast(t)
    raise SkipidxError(f"cannot compare {t} with {value!r}")


def _as_py_number(v: Any) -> Any:
    """A constant as a Python int/float (Bool true/false are 1/0, as in ClickHouse)."""
    v = v.as_py() if isinstance(v, pa.Scalar) else v
    return int(v) if isinstance(v, bool) else v


def _compare_int_column_const(op: str, chunk: pa.Array, c: int | float) -> pa.Array:
    """Exact Int/UInt column vs Python number constant (no float rounding, no wrap)."""
    t = chunk.type
    info = np.iinfo(t.to_pandas_dtype()) if not pa.types.is_boolean(t) else np.iinfo(np.uint8)
    if isinstance(c, float):
        if math.isnan(c):
            return _const_bool(chunk, op == "not_equal")
        if math.isinf(c) or c != math.floor(c):
            # Not an integer: '=' never holds; order vs c equals order vs ceil/floor.
            if op == "equal":
                return _const_bool(chunk, False)
            if op == "not_equal":
                return _const_bool(chunk, True)
            if math.isinf(c):
                return _const_bool(chunk, (c > 0) == (op in ("less", "less_equal")))
            c = math.ceil(c) if op in ("less", "greater_equal") else math.floor(c)
            # x < 2.5 <=> x < 3 ; x >= 2.5 <=> x >= 3 ; x <= 2.5 <=> x <= 2 ; x > 2.5 <=> x > 2
        else:
            c = int(c)
    c = int(c)
    if c < info.min or c > info.max:
        below = c < info.min  # the constant is below every value of the column
        val = {"equal": False, "not_equal": True,
               "less": not below, "less_equal": not below,
               "greater": below, "greater_equal": below}[op]
        return _const_bool(chunk, val)
    const = scalar(c, type=t if not pa.types.is_boolean(t) else pa.uint8())
    col = chunk if not pa.types.is_boolean(t) else chunk.cast(pa.uint8())
    return getattr(pc, op)(col, const)


def _exact_int_float(op: str, i: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Exact comparison of 64-bit integers with float64 values (NaN: IEEE, unordered)."""
    fi = i.astype(np.float64)
    res = _np_cmp(op, fi, f)
    tie = fi == f  # only here can rounding of i hide the true order
    if tie.any():
        it = i[tie]
        ft = f[tie]
        # ft is an integral float in [-2^63, 2^64]; 2^63 / 2^64 lie above every int64 / uint64.
        limit = 2.0**63 if i.dtype == np.int64 else 2.0**64
        over = ft >= limit
        iv = np.where(over, 0, ft).astype(i.dtype)
        # sign: -1 if i < f, 0 if equal, 1 if greater
        sign = np.where(over, -1, np.where(it < iv, -1, np.where(it > iv, 1, 0)))
        res[tie] = {"equal": sign == 0, "not_equal": sign != 0, "less": sign < 0,
                    "less_equal": sign <= 0, "greater": sign > 0, "greater_equal": sign >= 0}[op]
    return res


def _valid_and(a: pa.Array, b: pa.Array) -> pa.Array | None:
    if a.null_count == 0 and b.null_count == 0:
        return None
    return pc.and_(a.is_valid(), b.is_valid())


def _compare_arrays(op: str, a: pa.Array, b: pa.Array) -> pa.Array:
    if pa.types.is_boolean(a.type) != pa.types.is_boolean(b.type):
        # Bool against a number compares as UInt8, as ClickHouse (`length(b) <= bo`)
        a, b = (x.cast(pa.uint8()) if pa.types.is_boolean(x.type) else x for x in (a, b))
    ka, kb = _type_kind(a.type), _type_kind(b.type)
    if ka == "null" or kb == "null":
        return pa.nulls(len(a), pa.bool_())
    if ka == "string" and kb == "string":
        da = a if not pa.types.is_dictionary(a.type) else a.cast(a.type.value_type)
        db = b if not pa.types.is_dictionary(b.type) else b.cast(b.type.value_type)
        return getattr(pc, op)(_binary_view(da).cast(pa.large_binary()), _binary_view(db).cast(pa.large_binary()))
    if {ka, kb} <= {"int", "uint"} and ka != kb:
        # Int vs UInt: compare through int64 unless a UInt64 holds values above 2^63-1.
        big_side = a if ka == "uint" else b
        if pa.types.is_uint64(big_side.type):
            ai = a.to_numpy(zero_copy_only=False) if a.null_count == 0 else a.fill_null(0).to_numpy()
            bi = b.to_numpy(zero_copy_only=False) if b.null_count == 0 else b.fill_null(0).to_numpy()
            u, s = (ai, bi) if ka == "uint" else (bi, ai)
            u = u.astype(np.uint64)
            s = s.astype(np.int64)
            # sign of (u - s): u above int64 max or s negative settle it
            sign = np.where(u > np.uint64(2**63 - 1), 1,
                            np.where(s < 0, 1, np.sign(u.astype(np.int64) - s)))
            if ka != "uint":
                sign = -sign
            vals = {"equal": sign == 0, "not_equal": sign != 0, "less": sign < 0, "less_equal": sign <= 0,
                    "greater": sign > 0, "greater_equal": sign >= 0}[op]
            out = array_of(vals, pa.bool_())
            valid = _valid_and(a, b)
            return out if valid is None else pc.if_else(valid, out, scalar(None, pa.bool_()))
        return getattr(pc, op)(a.cast(pa.int64()), b.cast(pa.int64()))
    if {ka, kb} <= {"int", "uint", "float"} and "float" in (ka, kb) and ka != kb:
        ints, flts = (a, b) if ka != "float" else (b, a)
        if ints.type.bit_width <= 32:
            return getattr(pc, op)(a.cast(pa.float64()), b.cast(pa.float64()))
        iv = ints.fill_null(0).to_numpy(zero_copy_only=False)
        fv = flts.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        eff = op if ints is a else {"less": "greater", "greater": "less", "less_equal": "greater_equal",
                                    "greater_equal": "less_equal"}.get(op, op)
        out = array_of(_exact_int_float(eff, iv, fv), pa.bool_())
        valid = _valid_and(a, b)
        return out if valid is None else pc.if_else(valid, out, scalar(None, pa.bool_()))
    if ka in ("date", "datetime") and kb == "string":
        raise SkipidxError("comparing a Date/DateTime column with a String column is not supported")
    try:
        return getattr(pc, op)(a, b)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SkipidxError(f"cannot compare {a.type} with {b.type}: {e}") from None


def _fixed_as_binary(a: Any) -> Any:
    if isinstance(a, (pa.Array, pa.ChunkedArray)) and is_uuid(a.type):
        a = _map_chunks(a, lambda c: c.storage)
    if isinstance(a, (pa.Array, pa.ChunkedArray)) and pa.types.is_fixed_size_binary(a.type):
        return a.cast(pa.binary())
    return a


def _uuid_keys(a: Any) -> Any:
    """UUID arrays (and the binder's 16-byte UUID constants) as keys in ClickHouse's UUID order."""
    if isinstance(a, (pa.Array, pa.ChunkedArray)) and is_uuid(a.type):
        return _map_chunks(a, uuid_order_key)
    if isinstance(a, bytes) and len(a) == 16:
        return a[8:] + a[:8]
    return a


def compare(op: str, left: ArrayLike, right: ArrayLike | Any) -> ArrayLike:
    """ClickHouse comparison ``left op right`` (op in = == != <> < <= > >=).

    `right` is an array of the same length or a constant (Python value or
    pyarrow Scalar). Semantics:

    - numbers compare exactly across types (Int vs UInt, integers vs floats:
      ``toUInt64(9007199254740993) = 9007199254740992.0`` is 0, ``-1 <
      toUInt64(1)`` is 1; a constant outside a column's range or a fractional
      constant gives the mathematically right answer);
    - NaN is unordered: ``=``/``<``/``>`` false, ``!=`` true;
    - strings compare byte-wise;
    - a Date/DateTime column compared with a string constant parses it as
      that type (``YYYY-MM-DD`` / ``YYYYMMDD`` / ``YYYY-MM-DD hh:mm:ss``), a
      bad one raises `SkipidxError`; DateTime values are taken in UTC;
    - a NULL on either side gives NULL.
    """
    if op not in _OPS:
        raise SkipidxError(f"unknown comparison operator {op!r}")
    fn = _OPS[op]
    if any(isinstance(x, (pa.Array, pa.ChunkedArray)) and is_uuid(x.type) for x in (left, right)):
        left, right = _uuid_keys(left), _uuid_keys(right)
    # FixedString compares as its bytes, padding included (the binder pads constants)
    left, right = _fixed_as_binary(left), _fixed_as_binary(right)
    if isinstance(right, (pa.Array, pa.ChunkedArray)):
        la = left.combine_chunks() if isinstance(left, pa.ChunkedArray) else left
        ra = right.combine_chunks() if isinstance(right, pa.ChunkedArray) else right
        if len(la) != len(ra):
            raise SkipidxError(f"comparison of arrays of different lengths ({len(la)} and {len(ra)})")
        out = _compare_arrays(fn, la, ra)
        return pa.chunked_array([out]) if isinstance(left, pa.ChunkedArray) else out

    def one(chunk: pa.Array) -> pa.Array:
        k = _type_kind(chunk.type)
        v = right
        if v is None or (isinstance(v, pa.Scalar) and not v.is_valid):
            return pa.nulls(len(chunk), pa.bool_())
        if k in ("int", "uint"):
            num = _as_py_number(v)
            if isinstance(num, (int, float)):
                return _compare_int_column_const(fn, chunk, num)
            raise SkipidxError(f"cannot compare {chunk.type} with {v!r}")
        if k == "float":
            num = _as_py_number(v)
            if not isinstance(num, (int, float)):
                raise SkipidxError(f"cannot compare {chunk.type} with {v!r}")
            if isinstance(num, int) and not -2**63 <= num < 2**64:
                raise SkipidxError(f"integer literal {num} is out of the 64-bit range")
            if isinstance(num, int) and abs(num) > 2**53:
                const = np.full(len(chunk), num, dtype=np.uint64 if num > 0 else np.int64)
                return _compare_arrays(fn, chunk, pa.array(const))
            return getattr(pc, fn)(chunk.cast(pa.float64()), scalar(float(num), pa.float64()))
        if k == "string":
            if isinstance(v, pa.Scalar):
                v = v.as_py()
            b = _as_bytes(v, "comparison constant")
            return _string_fn(lambda c: getattr(pc, fn)(_binary_view(c), scalar(b, pa.binary())))(chunk) \
                if not pa.types.is_large_string(chunk.type) and not pa.types.is_large_binary(chunk.type) \
                else getattr(pc, fn)(_binary_view(chunk), scalar(b, pa.large_binary()))
        if k in ("date", "datetime"):
            return getattr(pc, fn)(chunk, _coerce_temporal(v, chunk.type))
        raise SkipidxError(f"cannot compare {chunk.type} with {v!r}")

    return _map_chunks(left, one)


#: Up to this many values, IN on a fixed-width integer/temporal column runs
#: :func:`_in_bitmap_kernel` over the raw values (its cost per row does not grow
#: with the list, unlike chained equality tests); larger lists use pc.is_in.
_IN_EQ_MAX = 1024
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(nogil=True, cache=True)
def _in_bitmap_kernel(vals, bits, shift, want, out):  # pragma: no cover - numba
    """out (packed, LSB first) = whether each of `vals` is in sorted `want`.

    A value's multiplicative hash picks one bit of the `bits` bitmap (set for
    every wanted value); only the rare rows whose bit is set are looked up in
    `want` by binary search, so most rows cost a multiply, a load and a shift.
    """
    n = vals.shape[0]
    nw = want.shape[0]
    for k in range((n + 7) // 8):
        byte = 0
        for q in range(8):
            i = k * 8 + q
            if i >= n:
                break
            v = np.uint64(vals[i])
            h = (v * np.uint64(0x9E3779B97F4A7C15)) >> shift
            if (bits[h >> np.uint64(6)] >> (h & np.uint64(63))) & np.uint64(1):
                lo = 0
                hi = nw
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if want[mid] < v:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo < nw and want[lo] == v:
                    byte |= 1 << q
        out[k] = byte


class _Membership:
    """A set of unsigned integers prepared for :func:`_in_bitmap_kernel`."""

    __slots__ = ("want", "bits", "shift")

    def __init__(self, wanted: np.ndarray) -> None:
        want = np.unique(np.asarray(wanted).astype(np.uint64))
        # a bitmap of 2^bits_log2 bits, >= 64 per wanted value: few false hits
        bits_log2 = max(12, min(16, int(max(1, len(want)) * 64 - 1).bit_length()))
        self.shift = np.uint64(64 - bits_log2)
        h = (want * _GOLDEN) >> self.shift
        bits = np.zeros(1 << (bits_log2 - 6), dtype=np.uint64)
        np.bitwise_or.at(bits, (h >> np.uint64(6)).astype(np.intp), np.left_shift(np.uint64(1), h & np.uint64(63)))
        self.want = want
        self.bits = bits

    def packed(self, vals: np.ndarray) -> np.ndarray:
        """Bit-packed (LSB first, as Arrow's boolean buffers) whether each of
        `vals` (unsigned integers) is in the set."""
        if use_numpy_path(vals.nbytes):
            # np.isin (a sort/search of the same set) answers the same without loading numba
            return np.packbits(np.isin(vals.astype(np.uint64), self.want), bitorder="little")
        out = np.empty((vals.shape[0] + 7) // 8, dtype=np.uint8)
        if vals.shape[0]:
            _in_bitmap_kernel(vals, self.bits, self.shift, self.want, out)
        return out


def _is_in_small_fixed(chunks: list[pa.Array], vt: pa.DataType, m: _Membership) -> list[pa.Array]:
    """Per chunk, whether each row's value is in `m`, from the chunk's value
    buffer (null slots hold arbitrary values: the caller lays the nulls over
    the answer). Values are compared as unsigned integers of their width
    (same bits, same equality)."""
    udt = np.dtype(f"uint{vt.bit_width}")
    out = []
    for c in chunks:
        n = len(c)
        buf = c.buffers()[1]
        if buf is None or n == 0:   # an all-null chunk may have no value buffer (nulls are laid over)
            packed = np.zeros((n + 7) // 8, dtype=np.uint8)
        else:
            packed = m.packed(np.frombuffer(buf, dtype=udt, count=c.offset + n)[c.offset:])
        out.append(pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(packed)]))
    return out


class _InPlan:
    """An IN list prepared for one column type: the value set, the kind, and
    for fixed-width columns the bitmap membership (None: use pc.is_in)."""

    __slots__ = ("kind", "vset", "membership", "_vset32")

    def __init__(self, kind: str, vset: pa.Array, membership: _Membership | None) -> None:
        self.kind = kind
        self.vset = vset
        self.membership = membership
        self._vset32: pa.Array | None = None

    def vset32(self) -> pa.Array:
        """The string value set as binary (32-bit offsets): a string / binary column
        is looked up as it is, not copied into 64-bit offsets first."""
        if self._vset32 is None:
            self._vset32 = self.vset.cast(pa.binary())
        return self._vset32


def _in_plan_uncached(vals: tuple, vt: pa.DataType) -> _InPlan:
    k = _type_kind(vt)
    keep: list[Any] = []
    if k in ("int", "uint"):
        info = np.iinfo(np.uint8) if pa.types.is_boolean(vt) else np.iinfo(vt.to_pandas_dtype())
        lo, hi = int(info.min), int(info.max)
        for v in vals:
            if isinstance(v, bool) and pa.types.is_boolean(vt):
                v = int(v)          # a Bool column compares as UInt8 (true IN (1) holds)
            if isinstance(v, float):
                if not math.isfinite(v) or v != math.floor(v):
                    continue
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, int):
                raise SkipidxError(f"IN list value {v!r} does not fit a {vt} column")
            if lo <= v <= hi:
                keep.append(v)
        vset = array_of(keep, type=vt if not pa.types.is_boolean(vt) else pa.uint8())
    elif k == "float":
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise SkipidxError(f"IN list value {v!r} does not fit a {vt} column")
            if pa.types.is_float32(vt) and float(np.float32(v)) != float(v):
                continue  # not representable in Float32: cannot match
            if isinstance(v, int) and float(v) != v:
                continue
            keep.append(float(v))
        vset = array_of(keep, type=vt)
    elif k == "string":
        vset = array_of([_as_bytes(v, "IN list value") for v in vals], type=pa.large_binary())
    elif k in ("date", "datetime"):
        vset = pa.array([_coerce_temporal(v, vt).as_py() for v in vals], type=vt)
    else:
        raise SkipidxError(f"IN is not supported for {vt}")
    membership = None
    if (k in ("int", "uint", "date", "datetime") and not pa.types.is_boolean(vt)
            and 0 < len(vset) <= _IN_EQ_MAX):
        width = vt.bit_width
        udt = np.dtype(f"uint{width}")
        if pa.types.is_integer(vt):
            want = to_numpy(vset).view(udt)
        else:   # date32 / date64 / timestamp: integers underneath
            want = to_numpy(vset.view(pa.from_numpy_dtype(np.dtype(f"int{width}")))).view(udt)
        membership = _Membership(want)
    return _InPlan(k, vset, membership)


#: Prepared IN lists by (column type, values); see :func:`_in_plan`.
_IN_PLANS = LRU(256, "expr.in_plans", "prepared IN-list membership plans, by (values, value type)")


def _in_plan(vals: list, vt: pa.DataType) -> _InPlan:
    """The prepared IN list (cached: a scan evaluates the same list once per
    job, and preparing it costs more than testing a granule against it).
    Keyed by each value's type and repr too: ``IN (1)`` and ``IN (True)``
    differ, and so do ``IN (0.)`` and ``IN (-0.)`` (equal to Python, not to
    ClickHouse, which compares floats in IN by their bits)."""
    try:
        key = (vt, tuple((type(v), v, repr(v)) for v in vals))
        hash(key)
    except TypeError:
        return _in_plan_uncached(tuple(vals), vt)
    plan = _IN_PLANS.get(key)
    if plan is None:
        plan = _in_plan_uncached(tuple(vals), vt)
        _IN_PLANS.put(key, plan)
    return plan


def is_in(arr: ArrayLike, values: Iterable[Any], negated: bool = False) -> ArrayLike:
    """ClickHouse ``x IN (v, ...)`` / ``NOT IN`` with ``transform_null_in = 0``.

    - a NULL in the list never matches anything and does not make the answer
      NULL: ``1 NOT IN (2, NULL)`` is 1, ``x IN (NULL)`` is 0 for any non-NULL x;
    - a NULL x gives NULL, for IN and NOT IN alike;
    - constants are compared exactly with the column's type: a value the type
      cannot hold (2.5 or 300 or -1 for a UInt8 column) matches nothing.
    """
    vals = [v.as_py() if isinstance(v, pa.Scalar) else v for v in values]
    vals = [v for v in vals if v is not None]
    arr = _fixed_as_binary(arr)
    if not isinstance(arr, (pa.Array, pa.ChunkedArray)):
        raise SkipidxError(f"expected a pyarrow Array or ChunkedArray, got {type(arr).__name__}")
    # The value set and the column's view are decided once per call from the
    # column type (every chunk has it), and the column goes to ONE pc.is_in
    # call, which builds its hash set once: per chunk, the set building and
    # the per-call overhead cost more than the lookups (a scan hands over one
    # chunk per mark range).
    t = arr.type
    vt = t.value_type if pa.types.is_dictionary(t) else t
    plan = _in_plan(vals, vt)
    k, vset = plan.kind, plan.vset

    # a string / binary column (32-bit offsets) is looked up as binary, as it is; a large one as large_binary
    small = k == "string" and (pa.types.is_string(vt) or pa.types.is_binary(vt)) and len(vset) > 0
    if small:
        vset = plan.vset32()

    def view(chunk: pa.Array) -> pa.Array:
        if k == "string":
            col = chunk.cast(vt) if pa.types.is_dictionary(t) else chunk
            col = _binary_view(col)
            return col if small else col.cast(pa.large_binary())
        if pa.types.is_boolean(vt):
            return chunk.cast(pa.uint8())
        return chunk

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    if len(vset) == 0:
        found = [from_numpy(np.zeros(len(c), dtype=np.bool_)) for c in chunks]
    elif plan.membership is not None and not pa.types.is_dictionary(t):
        found = _is_in_small_fixed(chunks, vt, plan.membership)
    else:
        views = [view(c) for c in chunks]
        if not views:
            views = [pa.array([], type=vset.type)]
        hit = pc.is_in(pa.chunked_array(views, type=views[0].type), value_set=vset, skip_nulls=True)
        found = hit.chunks if len(hit.chunks) == len(chunks) else [hit.combine_chunks()]
        if len(found) != len(chunks):   # chunk boundaries lost: lay the answer back over them
            offs = np.cumsum([0] + [len(c) for c in chunks])
            found = [found[0].slice(int(a), int(b - a)) for a, b in zip(offs[:-1], offs[1:])]
    out = []
    for res, chunk in zip(found, chunks):
        # pc.is_in answers false for a NULL input; ClickHouse answers NULL.
        res = _with_nulls_of(res, chunk)
        out.append(pc.invert(res) if negated else res)
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array(out, type=pa.bool_())
    return out[0]


def is_null(arr: ArrayLike) -> ArrayLike:
    """``x IS NULL`` (never NULL itself)."""
    return pc.is_null(arr, nan_is_null=False)


def is_not_null(arr: ArrayLike) -> ArrayLike:
    """``x IS NOT NULL`` (never NULL itself)."""
    return pc.is_valid(arr)


def and_(*args: ArrayLike) -> ArrayLike:
    """Three-valued AND (Kleene): false wins over NULL, NULL over true."""
    if not args:
        raise SkipidxError("AND needs at least one argument")
    acc = args[0]
    for a in args[1:]:
        acc = pc.and_kleene(acc, a)
    return acc


def or_(*args: ArrayLike) -> ArrayLike:
    """Three-valued OR (Kleene): true wins over NULL, NULL over false."""
    if not args:
        raise SkipidxError("OR needs at least one argument")
    acc = args[0]
    for a in args[1:]:
        acc = pc.or_kleene(acc, a)
    return acc


def not_(arr: ArrayLike) -> ArrayLike:
    """Three-valued NOT: NULL stays NULL."""
    return pc.invert(arr)


def where_mask(arr: ArrayLike) -> ArrayLike:
    """The WHERE filter: a row passes iff its value is true (NULL and false drop it).

    Numeric conditions (``WHERE id % 2``) are true iff non-zero, as in ClickHouse.
    """
    t = arr.type
    if not pa.types.is_boolean(t):
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            arr = pc.not_equal(arr, scalar(0, t))
        elif pa.types.is_null(t):
            return _map_chunks(arr, lambda c: from_numpy(np.zeros(len(c), dtype=np.bool_)))
        else:
            raise SkipidxError(f"Illegal type {t} of column for filter. Must be UInt8 or Nullable(UInt8)")
    if arr.null_count == 0:
        return arr   # (pc.fill_null's call alone costs ~50 us: a point query's filter)
    return pc.fill_null(arr, scalar(False, pa.bool_()))   # (a Python False: pyarrow imports pandas)


