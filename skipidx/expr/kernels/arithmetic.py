"""Arithmetic with ClickHouse's result types (plus, minus, multiply, divide, modulo, negate)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.expr.kernels.compare import literal
from skipidx.expr.kernels._arrow import (
    ArrayLike,
)

# --------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------

def _int_type(signed: bool, size: int) -> pa.DataType:
    return {(True, 1): pa.int8(), (True, 2): pa.int16(), (True, 4): pa.int32(), (True, 8): pa.int64(),
            (False, 1): pa.uint8(), (False, 2): pa.uint16(), (False, 4): pa.uint32(),
            (False, 8): pa.uint64()}[(signed, size)]


def _next_size(n: int) -> int:
    return min(n * 2, 8)


def arithmetic_result_type(op: str, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """ClickHouse's result type of ``a op b`` for numeric types (op in + - * / %).

    ``+``/``*``: next size of the larger operand, signed if either is, capped at
    64 bits (UInt8+UInt8 -> UInt16, Int32*Int32 -> Int64); ``-``: the same but
    always signed (UInt64-UInt64 -> Int64); ``/``: Float64; ``%``: signed iff
    the left operand is, sized by the right operand (the next size when
    signed): UInt64 % UInt8 -> UInt8, Int8 % UInt8 -> Int16, UInt8 % Int64 ->
    UInt64. Any float operand makes the result Float64.
    """
    for t in (a, b):
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            raise SkipidxError(f"Illegal types {a} and {b} of arguments of arithmetic operator {op}")
    if op == "/" or pa.types.is_floating(a) or pa.types.is_floating(b):
        return pa.float64()
    sa = pa.types.is_signed_integer(a)
    sb = pa.types.is_signed_integer(b)
    wa = 1 if pa.types.is_boolean(a) else a.bit_width // 8
    wb = 1 if pa.types.is_boolean(b) else b.bit_width // 8
    if op in ("+", "*"):
        return _int_type(sa or sb, _next_size(max(wa, wb)))
    if op == "-":
        return _int_type(True, _next_size(max(wa, wb)))
    if op == "%":
        return _int_type(sa, _next_size(wb) if sa else wb)
    raise SkipidxError(f"unknown arithmetic operator {op!r}")


def negate_result_type(t: pa.DataType) -> pa.DataType:
    """ClickHouse's result type of ``negate(x)`` (unary minus): IntN -> IntN, UIntN (and
    Bool) -> the signed type twice as wide (UInt64 -> Int64), floats keep their type."""
    if pa.types.is_floating(t):
        return t
    if pa.types.is_boolean(t):
        return pa.int16()
    if not pa.types.is_integer(t):
        raise SkipidxError(f"Illegal type {t} of argument of function negate")
    if pa.types.is_signed_integer(t):
        return t
    return _int_type(True, _next_size(t.bit_width // 8))


def negate(arr: ArrayLike) -> ArrayLike:
    """ClickHouse ``-x`` (negate) of a numeric column: integers wrap (``-x`` of the
    smallest IntN is itself; a UInt64 above 2^63 wraps through Int64, as ClickHouse),
    floats flip the sign bit (-(0.) is -0.); NULL stays NULL."""
    rt = negate_result_type(arr.type)
    if arr.type != rt:
        # UIntN -> signed 2N exact; UInt64 -> Int64 wraps (bits kept), as ClickHouse
        arr = pc.cast(arr, rt, safe=False)
    return pc.negate(arr)


def arithmetic(op: str, left: ArrayLike | Any, right: ArrayLike | Any) -> ArrayLike:
    """ClickHouse ``left op right`` for + - * / % over numeric arrays/constants.

    The result has `arithmetic_result_type`; integer results wrap on overflow
    (as ClickHouse's do). ``/`` is float division (x/0 is inf or nan). ``%``
    takes the sign of the dividend (C semantics, -7 % 2 = -1); an integer
    ``% 0`` raises `SkipidxError` ("Division by zero"); float % is a - trunc(a / b) * b.
    Constants are typed with `literal`. NULL on either side gives NULL.
    """
    chunked = isinstance(left, pa.ChunkedArray) or isinstance(right, pa.ChunkedArray)

    def as_arr(x: Any) -> tuple[pa.Array | pa.Scalar, bool]:
        if isinstance(x, pa.ChunkedArray):
            return x.combine_chunks(), True
        if isinstance(x, pa.Array):
            return x, True
        return (x if isinstance(x, pa.Scalar) else literal(x)), False

    la, l_is_arr = as_arr(left)
    ra, r_is_arr = as_arr(right)
    if not (l_is_arr or r_is_arr):
        raise SkipidxError("arithmetic needs at least one column argument")
    n = len(la) if l_is_arr else len(ra)
    rt = arithmetic_result_type(op, la.type, ra.type)

    def values(x: Any, is_arr: bool) -> np.ndarray:
        if is_arr:
            v = x.cast(x.type if not pa.types.is_boolean(x.type) else pa.uint8())
            v = v.fill_null(0) if v.null_count else v
            return v.to_numpy(zero_copy_only=False)
        return np.full(n, x.as_py() if x.is_valid else 0)

    av, bv = values(la, l_is_arr), values(ra, r_is_arr)
    npt = rt.to_pandas_dtype()
    with np.errstate(all="ignore"):
        if op == "/":
            out = av.astype(np.float64) / bv.astype(np.float64)
        elif op == "%":
            if pa.types.is_floating(rt):
                # ClickHouse's float modulo is a - trunc(a / b) * b, not fmod: 1 % 0.1 is 0
                # (fmod: 0.0999...), 1e20 % 3 is 0 (fmod: 1), -0. % 0.1 is 0 (fmod: -0.)
                a64, b64 = av.astype(np.float64), bv.astype(np.float64)
                out = a64 - np.trunc(a64 / b64) * b64
            else:
                valid_rows = np.ones(n, dtype=np.bool_)
                for x, is_arr in ((la, l_is_arr), (ra, r_is_arr)):
                    if is_arr and x.null_count:
                        valid_rows &= x.is_valid().to_numpy(zero_copy_only=False)
                    elif not is_arr and not x.is_valid:
                        valid_rows[:] = False
                if np.any((bv == 0) & valid_rows):
                    raise SkipidxError("Division by zero")
                # |a % b| < |b| and its sign is a's (C semantics); compute in uint64
                # for an unsigned dividend and int64 for a signed one, then narrow.
                b_big = (bv.astype(np.uint64) > np.uint64(2**63 - 1)) if bv.dtype.kind == "u" \
                    else np.zeros(n, dtype=np.bool_)
                b_abs = np.where(b_big, np.uint64(1),
                                 np.abs(np.where(bv == 0, 1, bv).astype(np.int64)).astype(np.uint64)) \
                    if bv.dtype.kind != "u" or b_big.any() else np.where(bv == 0, 1, bv).astype(np.uint64)
                if av.dtype.kind == "u":
                    a_u = av.astype(np.uint64)
                    b_u = np.where(bv == 0, 1, bv).astype(np.uint64) if bv.dtype.kind == "u" else b_abs
                    out = a_u % b_u
                else:
                    a64 = av.astype(np.int64)
                    # A UInt64 divisor above 2^63-1 exceeds |a| for every int64 a but -2^63.
                    out = np.where(b_big, a64, np.fmod(a64, np.where(b_big, 1, b_abs).astype(np.int64)))
        else:
            ufunc = {"+": np.add, "-": np.subtract, "*": np.multiply}.get(op)
            if ufunc is None:
                raise SkipidxError(f"unknown arithmetic operator {op!r}")
            if pa.types.is_floating(rt):
                out = ufunc(av.astype(np.float64), bv.astype(np.float64))
            else:
                # Cast both to the result type first: numpy then wraps like C++.
                out = ufunc(av.astype(npt), bv.astype(npt))
    res = pa.array(np.asarray(out).astype(npt), type=rt)
    mask = None
    for x, is_arr in ((la, l_is_arr), (ra, r_is_arr)):
        if is_arr and x.null_count:
            m = x.is_null().to_numpy(zero_copy_only=False)
            mask = m if mask is None else (mask | m)
        elif not is_arr and not x.is_valid:
            mask = np.ones(n, dtype=np.bool_)
    if mask is not None:
        res = pa.array(np.asarray(out).astype(npt), type=rt, mask=mask)
    return pa.chunked_array([res]) if chunked else res
