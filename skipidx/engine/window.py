"""Window functions with ClickHouse's default frame: ``f(...) OVER ([PARTITION BY ...]
[ORDER BY ...])`` as whole items of a SELECT list.

The query runs without its window items and without LIMIT, with each window's arguments,
partition keys and order keys as hidden columns; the rows are then sorted once by
(partition, order keys) and every window function is a segment operation over that order
(numpy / pandas group-wise cumulative kernels), put back in row order; LIMIT / OFFSET
follow. The frame is the whole partition without ORDER BY, and from the partition's
start to the row's last peer (RANGE UNBOUNDED PRECEDING .. CURRENT ROW) with it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa

from skipidx.core.errors import BindError
from skipidx.core.lazy import compute as pc
from skipidx.engine.limit_by import group_ids, value_codes
from skipidx.sql import ast as A

#: the window functions built, by lower-case name: how many arguments each takes
RANKING = {"row_number": 0, "rank": 0, "dense_rank": 0}
AGGREGATES = {"count", "sum", "avg", "min", "max"}
#: lagInFrame / leadInFrame (x[, offset[, default]]): the value `offset` rows before / after in the frame
OFFSETS = {"laginframe", "leadinframe"}


_err = BindError.at   # (the error at the node's position)


def has_windows(s: Any) -> bool:
    return isinstance(s, A.Select) and any(isinstance(i.expr, A.WindowCall) for i in s.items)


def _args(w: A.WindowCall) -> tuple:
    """The window function's value arguments (``count(*)`` has none)."""
    return tuple(a for a in w.func.args if not isinstance(a, A.Star))


def _check(s: A.Select) -> None:
    for it in s.items:
        w = it.expr
        if not isinstance(w, A.WindowCall):
            continue
        f = w.func
        name = f.name.lower()
        if f.params is not None or f.distinct or (name not in RANKING and name not in AGGREGATES
                                                  and name not in OFFSETS):
            raise _err(f"window function {f.to_sql()} is not supported (supported: row_number, rank, dense_rank, "
                       f"count, sum, avg, min, max, lagInFrame, leadInFrame)", f)
        k = len(_args(w))
        if name in OFFSETS:
            if not 1 <= k <= 3:
                raise _err(f"window function {f.name} takes 1 to 3 arguments, got {k}", f)
            if k > 1:
                off = f.args[1]
                if not (isinstance(off, A.Literal) and off.kind == "int" and off.value >= 0):
                    raise _err(f"The offset for function {f.name} must be a non-negative integer constant, "
                               f"{off.to_sql()} given. (BAD_ARGUMENTS)", off)
            continue
        want = 0 if name in RANKING else (None if name == "count" else 1)
        if (want is not None and k != want) or (name == "count" and k > 1):
            raise _err(f"window function {f.name} takes {want if want is not None else '0 or 1'} argument(s), "
                       f"got {k}", f)
    if s.distinct:
        raise _err("DISTINCT with window functions is not supported", s)
    if s.limit_by is not None:
        raise _err("LIMIT ... BY with window functions is not supported", s.limit_by)
    if sum(isinstance(it.expr, A.Star) for it in s.items) > 1:
        raise _err("several * with window functions are not supported", s)


def _order_ref(o: A.OrderItem, s: A.Select) -> int | None:
    """The SELECT-list index of the window item that ORDER BY item `o` names (by alias, position
    or the call itself), else None."""
    e = o.expr
    if isinstance(e, A.WindowCall):
        for i, it in enumerate(s.items):
            if it.expr == e:
                return i
        raise _err("ORDER BY a window function that is not in the SELECT list is not supported", o)
    if isinstance(e, A.Column) and e.table is None:
        for i, it in enumerate(s.items):
            if isinstance(it.expr, A.WindowCall) and it.alias == e.name:
                return i
    if isinstance(e, A.Literal) and e.kind == "int" and not isinstance(e.value, bool):
        if any(isinstance(it.expr, A.Star) for it in s.items):
            raise _err("ORDER BY a position with * and window functions is not supported", o)
        if 0 < e.value <= len(s.items) and isinstance(s.items[e.value - 1].expr, A.WindowCall):
            return e.value - 1
    return None


def _order_spec(s: A.Select, hidden: list) -> tuple:
    """When ORDER BY names a window's result: per ORDER BY item (window item index or None,
    hidden column index or None, desc, nulls_first); its other keys join `hidden`. Else ()."""
    refs = [_order_ref(o, s) for o in s.order_by]
    if all(r is None for r in refs):
        return ()
    spec = []
    for o, r in zip(s.order_by, refs):
        if r is not None:
            spec.append((r, None, o.desc, bool(o.nulls_first)))
            continue
        e = o.expr
        if isinstance(e, A.Literal) and e.kind == "int" and not isinstance(e.value, bool) and 0 < e.value <= len(s.items):
            e = s.items[e.value - 1].expr          # a position: that item's expression
        spec.append((None, len(hidden), o.desc, bool(o.nulls_first)))
        hidden.append(A.SelectItem(e, f"__window_{len(hidden)}", pos=e.pos))
    return tuple(spec)


def window_query(s: A.Select) -> tuple[A.Select, list[tuple[int, A.WindowCall, list[int]]], tuple]:
    """(the query to run: `s` without its window items and LIMIT, with the windows' parts as
    hidden columns; per window: its item index, the call, its hidden columns' indices among
    the hidden ones: arguments, then partition keys, then order keys; the ORDER BY to apply
    after the windows (:func:`_order_spec`), () when the query's own ORDER BY does)."""
    import dataclasses

    _check(s)
    kept, hidden, windows = [], [], []
    for i, it in enumerate(s.items):
        w = it.expr
        if not isinstance(w, A.WindowCall):
            kept.append(it)
            continue
        cols = []
        for e in (*_args(w), *w.partition_by, *(o.expr for o in w.order_by)):
            cols.append(len(hidden))
            hidden.append(A.SelectItem(e, f"__window_{len(hidden)}", pos=e.pos))
        windows.append((i, w, cols))
    order = _order_spec(s, hidden)
    if not kept and not hidden:
        hidden.append(A.SelectItem(A.Literal(0, "int", pos=s.pos), "__window_rows", pos=s.pos))
    # an ORDER BY that names a window's result sorts after the windows are computed (window_table)
    q = dataclasses.replace(s, items=tuple(kept + hidden), limit=None, offset=None, format=None, outfile=None,
                            order_by=() if order else s.order_by)
    return q, windows, order


def window_table(db: Any, s: A.Select, run: Callable[[Any, A.Select], tuple]) -> tuple[pa.Table, Any, list[str]]:
    """(rows, stats, ClickHouse types) of SELECT `s` with window functions; `run(db, q)` gives
    (table, stats, types or None) of a query without them."""
    from skipidx.engine.result import Result

    q, windows, order = window_query(s)
    table, stats, types = run(db, q)
    if types is None:
        types = Result(table).types
    nhidden = len(q.items) - sum(not isinstance(it.expr, A.WindowCall) for it in s.items)
    width = table.num_columns - nhidden
    hidden = [table.column(width + j) for j in range(nhidden)]
    htypes = list(types[width:])
    out_cols = [table.column(i) for i in range(width)]
    out_names = list(table.column_names[:width])
    out_types = list(types[:width])
    from skipidx.expr.binder import output_name

    star_width = width - sum(not isinstance(it.expr, (A.Star, A.WindowCall)) for it in s.items)
    inserts = []
    computed: dict[int, pa.Array] = {}
    for i, w, cols in windows:
        pos = sum(star_width if isinstance(it.expr, A.Star) else 1
                  for it in s.items[:i] if not isinstance(it.expr, A.WindowCall))
        na = len(_args(w))
        np_ = len(w.partition_by)
        args = [hidden[c] for c in cols[:na]]
        parts = [hidden[c] for c in cols[na:na + np_]]
        orders = [(hidden[c], o.desc) for c, o in zip(cols[na + np_:], w.order_by)]
        arr, t = window_column(w.func.name.lower(), args, [htypes[c] for c in cols[:na]], parts, orders,
                               table.num_rows, w.func)
        inserts.append((pos, s.items[i].alias or output_name(w), arr, t))
        computed[i] = arr
    # inserted left to right: each position counts the window items before it too
    for k, (pos, name, arr, t) in enumerate(inserts):
        at = pos + k
        out_cols.insert(at, arr)
        out_names.insert(at, name)
        out_types.insert(at, t)
    res = pa.table(out_cols, names=out_names) if out_cols else table.select([])
    if order and res.num_rows:
        keys = {f"k{j}": _plain(computed[r] if r is not None else hidden[h]) for j, (r, h, _d, _n) in enumerate(order)}
        sort_keys = [(f"k{j}", "descending" if d else "ascending", "at_start" if nf else "at_end")
                     for j, (_r, _h, d, nf) in enumerate(order)]
        res = res.take(pc.sort_indices(pa.table(keys), sort_keys=sort_keys))
    offset = s.offset or 0
    if offset:
        res = res.slice(min(offset, res.num_rows))
    if s.limit is not None:
        res = res.slice(0, min(s.limit, res.num_rows))
    return res, stats, out_types


def _plain(a: Any) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    if pa.types.is_dictionary(a.type):
        a = a.cast(a.type.value_type)
    return a


def segments(parts: list, orders: list[tuple[Any, bool]], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(perm: the rows sorted by partition then order keys (ClickHouse's NULLS LAST, stable);
    part_start / peer_start: bool per sorted row, where a partition / a peer group begins)."""
    if parts:
        gid = group_ids(parts)
    else:
        gid = np.zeros(n, dtype=np.int64)
    cols = {"__g": pa.array(gid)}
    keys = [("__g", "ascending")]
    for j, (c, desc) in enumerate(orders):
        cols[f"__o{j}"] = _plain(c)
        keys.append((f"__o{j}", "descending" if desc else "ascending"))
    # (Arrow's default null placement is at the end: ClickHouse's NULLS LAST, either direction)
    perm = pc.sort_indices(pa.table(cols), sort_keys=keys).to_numpy()
    sg = gid[perm]
    part_start = np.ones(n, dtype=bool)
    part_start[1:] = sg[1:] != sg[:-1]
    peer_start = part_start.copy()
    if orders:
        for c, _desc in orders:
            oc = value_codes(c)[perm]
            peer_start[1:] |= oc[1:] != oc[:-1]
    else:
        peer_start = part_start.copy()
    return perm, part_start, peer_start


def _start_index(flags: np.ndarray) -> np.ndarray:
    """Per row, the index of the last row at or before it where `flags` is set."""
    idx = np.where(flags, np.arange(len(flags)), 0)
    return np.maximum.accumulate(idx) if len(idx) else idx


def _end_index(flags_start: np.ndarray) -> np.ndarray:
    """Per row, the index of the last row of its segment (segments begin where flags_start)."""
    n = len(flags_start)
    is_end = np.ones(n, dtype=bool)
    is_end[:-1] = flags_start[1:]
    idx = np.where(is_end, np.arange(n), n)
    return np.minimum.accumulate(idx[::-1])[::-1] if n else idx


def window_column(func: str, args: list, arg_types: list[str], parts: list, orders: list, n: int,
                  node: Any) -> tuple[pa.Array, str]:
    """The values (in row order) and ClickHouse type of one window function."""
    if n == 0:
        t = _result_type(func, args, arg_types, node)
        return pa.array([], _arrow_of(t, args)), t
    perm, part_start, peer_start = segments(parts, orders, n)
    ar = np.arange(n)
    ps = _start_index(part_start)
    if func == "row_number":
        vals = (ar - ps + 1).astype(np.uint64)
        return _unsort(pa.array(vals), perm), "UInt64"
    if func == "rank":
        vals = (_start_index(peer_start) - ps + 1).astype(np.uint64)
        return _unsort(pa.array(vals), perm), "UInt64"
    if func == "dense_rank":
        c = np.cumsum(peer_start)
        vals = (c - c[ps] + 1).astype(np.uint64)
        return _unsort(pa.array(vals), perm), "UInt64"
    # aggregates: the frame ends at the row's last peer (ORDER BY given) or the partition's end
    frame_end = _end_index(peer_start) if orders else _end_index(part_start)
    if func in OFFSETS:
        return _offset_column(func, args, arg_types[0], ar, ps, frame_end, perm, node), arg_types[0]
    t = _result_type(func, args, arg_types, node)
    if func == "count" and not args:
        vals = (frame_end - ps + 1).astype(np.uint64)
        return _unsort(pa.array(vals), perm), t
    a = _plain(args[0]).take(pa.array(perm))
    valid = a.is_valid().to_numpy(zero_copy_only=False)
    cnt = np.cumsum(valid)
    before = np.where(ps > 0, cnt[ps - 1], 0)
    count = cnt[frame_end] - before
    if func == "count":
        return _unsort(pa.array(count.astype(np.uint64)), perm), t
    import pandas as pd

    group = np.cumsum(part_start)
    at = pa.types
    if func in ("sum", "avg"):
        if at.is_floating(a.type) or func == "avg":
            v = pc.cast(a, pa.float64()).fill_null(0).to_numpy(zero_copy_only=False)
        elif at.is_unsigned_integer(a.type) or at.is_boolean(a.type):
            v = pc.cast(a, pa.uint64()).fill_null(0).to_numpy(zero_copy_only=False)
        else:
            v = pc.cast(a, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        # sequential sums per partition (as ClickHouse adds row by row), read at the frame's end
        cum = pd.Series(v).groupby(group).cumsum().to_numpy()
        s = cum[frame_end]
        if func == "avg":
            with np.errstate(invalid="ignore", divide="ignore"):
                s = s / count
    else:
        textual = at.is_string(a.type) or at.is_binary(a.type)
        if not (at.is_integer(a.type) or at.is_floating(a.type) or at.is_date(a.type) or at.is_timestamp(a.type)
                or textual):
            raise _err(f"window function {func} over values of type {a.type} is not supported", node)
        if textual:
            # strings by their rank among the distinct values (bytewise, as ClickHouse compares them)
            distinct = pc.unique(a.drop_null())
            distinct = distinct.take(pc.sort_indices(distinct))
            ranks = pc.index_in(a, value_set=distinct)
            fill = np.iinfo(np.int64).max if func == "min" else -1
            v = ranks.cast(pa.int64()).fill_null(fill).to_numpy(zero_copy_only=False)
            g = pd.Series(v).groupby(group)
            cum = (g.cummin() if func == "min" else g.cummax()).to_numpy()[frame_end]
            none = count == 0
            res = distinct.take(pa.array(np.where(none, 0, cum), mask=none)) if len(distinct) else \
                pa.nulls(len(cum), a.type)
            return _unsort(res, perm), t
        # as numbers (a date as its days, a time as its ticks); a NULL as the value that never wins
        if at.is_floating(a.type):
            num, dt = pc.cast(a, pa.float64()), np.float64
            fill = np.inf if func == "min" else -np.inf
        else:
            if at.is_date(a.type) or at.is_timestamp(a.type):
                num = pc.cast(pc.cast(a, pa.int32() if at.is_date32(a.type) else pa.int64()), pa.int64())
                dt = np.int64
            elif at.is_unsigned_integer(a.type) and a.type.bit_width == 64:
                num, dt = a, np.uint64
            else:
                num, dt = pc.cast(a, pa.int64()), np.int64
            info = np.iinfo(dt)
            fill = info.max if func == "min" else info.min
        v = num.fill_null(fill).to_numpy(zero_copy_only=False).astype(dt)
        g = pd.Series(v).groupby(group)
        cum = (g.cummin() if func == "min" else g.cummax()).to_numpy().astype(dt)
        res = pa.array(cum[frame_end], mask=(count == 0))
        if at.is_date(a.type) or at.is_timestamp(a.type):
            res = res.cast(pa.int32() if at.is_date32(a.type) else pa.int64()).cast(a.type)
        else:
            res = res.cast(a.type)
        return _unsort(res, perm), t
    res = pa.array(s, mask=(count == 0)) if func != "sum" or t.startswith("Nullable") else pa.array(s)
    res = res.cast(_arrow_of(t, args, a.type), safe=False)
    return _unsort(res, perm), t


def _offset_column(func: str, args: list, arg_type: str, ar: np.ndarray, ps: np.ndarray, frame_end: np.ndarray,
                   perm: np.ndarray, node: Any) -> pa.Array:
    """lagInFrame / leadInFrame over the sorted rows: the value `offset` rows before (not before
    the partition's start) / after (not past the frame's end), else the default."""
    x = _plain(args[0]).take(pa.array(perm))
    k = int(_plain(args[1])[0].as_py()) if len(args) > 1 else 1
    j = ar - k if func == "laginframe" else ar + k
    ok = (j >= ps) if func == "laginframe" else (j <= frame_end)
    vals = x.take(pa.array(np.where(ok, j, 0)))
    if len(args) > 2:
        d = _plain(args[2])
        at = node.args[2] if node is not None else None
        msg = (f"There is no supertype for the argument type '{arg_type}' and the default value "
               f"{at.to_sql() if at is not None else ''} that is the argument type. (BAD_ARGUMENTS)")
        textual = (pa.types.is_string(d.type), pa.types.is_string(x.type))
        if textual[0] != textual[1]:
            raise _err(msg, at)     # ClickHouse converts no String to a number here, nor back
        try:
            default = d.cast(x.type)[0] if d.type != x.type else d[0]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise _err(msg, at) from None
    elif arg_type.startswith("Nullable("):
        default = pa.scalar(None, x.type)
    else:
        default = _type_default(x.type, node)
    return _unsort(pc.if_else(pa.array(ok), vals, default), perm)


def _type_default(t: pa.DataType, node: Any) -> pa.Scalar:
    """ClickHouse's default value of a (non-Nullable) type: 0, '', the epoch."""
    at = pa.types
    if at.is_string(t) or at.is_large_string(t) or at.is_binary(t):
        return pa.scalar(b"" if at.is_binary(t) else "", t)
    if at.is_boolean(t):
        return pa.scalar(False, t)
    if at.is_integer(t) or at.is_floating(t):
        return pa.array([0]).cast(t)[0]
    if at.is_date32(t):
        return pa.array([0], pa.int32()).cast(t)[0]
    if at.is_timestamp(t):
        return pa.array([0], pa.int64()).cast(t)[0]
    raise _err(f"lagInFrame / leadInFrame without a default over values of type {t} is not supported", node)


def _unsort(a: pa.Array, perm: np.ndarray) -> pa.Array:
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    return a.take(pa.array(inv))


def _result_type(func: str, args: list, arg_types: list[str], node: Any) -> str:
    if func in RANKING or func == "count":
        return "UInt64"
    t = arg_types[0]
    nullable = t.startswith("Nullable(") or t.startswith("LowCardinality(Nullable(")
    base = t[len("Nullable("):-1] if t.startswith("Nullable(") else t
    if func in ("min", "max"):
        # the value's type; ClickHouse's min / max of a LowCardinality column is of the plain type
        return t[len("LowCardinality("):-1] if t.startswith("LowCardinality(") else t
    a = _plain(args[0]).type
    if func == "avg":
        if not (pa.types.is_integer(a) or pa.types.is_floating(a) or pa.types.is_boolean(a)):
            raise _err(f"window function avg over values of type {base} is not supported", node)
        out = "Float64"
    elif pa.types.is_floating(a):
        out = "Float64"
    elif pa.types.is_unsigned_integer(a) or pa.types.is_boolean(a):
        out = "UInt64"
    elif pa.types.is_signed_integer(a):
        out = "Int64"
    else:
        raise _err(f"window function sum over values of type {base} is not supported", node)
    return f"Nullable({out})" if nullable else out


def _arrow_of(t: str, args: list, arg_type: Any = None) -> pa.DataType:
    base = t[len("Nullable("):-1] if t.startswith("Nullable(") else t
    fixed = {"UInt64": pa.uint64(), "Int64": pa.int64(), "Float64": pa.float64()}
    if base in fixed:
        return fixed[base]
    return arg_type if arg_type is not None else _plain(args[0]).type
