"""``q UNION ALL q ...`` / ``UNION DISTINCT``: each query runs on its own (its ORDER BY and
LIMIT its own, as in ClickHouse), the columns take the first query's names and, position
by position, the least supertype of the queries' ClickHouse types (getLeastSupertype:
UInt8 and Int8 give Int16, a number and a Float64 give Float64, Date and DateTime give
DateTime, String and LowCardinality(String) give String, Nullable where any is or a NULL
stands); the rows of every query follow one another, DISTINCT keeps each row once."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from skipidx.core.errors import BindError, SkipidxError
from skipidx.sql import ast as A

__all__ = ["union_table", "supertype_name", "union_columns"]


_err = BindError.at   # (the error at the node's position)


def union_columns(u: A.Union, parts: list[tuple[list[str], list[str]]]) -> tuple[list[str], list[str]]:
    """(names, ClickHouse types) of the union of queries with these (names, types)."""
    names0, _ = parts[0]
    for (names, _types), q in zip(parts[1:], u.queries[1:]):
        if len(names) != len(names0):
            raise _err(f"Different number of columns in UNION_ALL elements: {', '.join(names0)} and "
                       f"{', '.join(names)} (UNION_ALL_RESULT_STRUCTURES_MISMATCH)", q)
    types = []
    for i in range(len(names0)):
        try:
            types.append(supertype_name([t[i] for _n, t in parts]))
        except SkipidxError as e:
            raise _err(f"{e.message} (column {i + 1}, {names0[i]!r}, of the UNION)", u) from None
    return names0, types


def union_table(db: Any, u: A.Union, run: Any) -> tuple[pa.Table, Any, list[str]]:
    """(rows, stats of the first query, ClickHouse types) of union `u`; `run(db, q)` gives
    (table, stats, types or None) of one query."""
    from skipidx.core.types import cast_to, parse_type
    from skipidx.engine.result import Result

    tables, parts, stats = [], [], None
    for q in u.queries:
        t, st, types = run(db, q)
        if types is None:
            types = Result(t).types
        tables.append(t)
        parts.append((list(t.column_names), list(types)))
        stats = stats if stats is not None else st
    names, types = union_columns(u, parts)
    cts = [parse_type(t) for t in types]
    cols = []
    for i, ct in enumerate(cts):
        chunks = []
        for t in tables:
            col = t.column(i)
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            chunks.append(cast_to(ct, col, names[i]) if col.type != ct.arrow_type or len(col) == 0 else col)
        cols.append(pa.chunked_array([c for c in chunks if len(c)] or [pa.array([], ct.arrow_type)],
                                     ct.arrow_type))
    out = pa.table(cols, schema=pa.schema([pa.field(n, ct.arrow_type, nullable=True) for n, ct in zip(names, cts)]))
    if u.distinct:
        out = _distinct(out)
    return out, stats, types


def _distinct(t: pa.Table) -> pa.Table:
    """Each row once, in first-seen order."""
    import numpy as np

    keys = [f"_k{i}" for i in range(t.num_columns)]
    idx = pa.table([*t.columns, pa.array(np.arange(t.num_rows))], names=[*keys, "_row"])
    try:
        first = idx.group_by(keys, use_threads=False).aggregate([("_row", "min")]).column("_row_min")
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise SkipidxError("UNION DISTINCT over Array columns is not supported") from None
    return t.take(pa.array(np.sort(first.to_numpy())))


def supertype_name(types: list[str]) -> str:
    """ClickHouse's least supertype of these type names (a clear error where there is none)."""
    from skipidx.core.types import ch_type_of, parse_type
    from skipidx.expr.binder import least_supertype

    nothing = ("Nothing", "Nullable(Nothing)")
    real = [t for t in types if t not in nothing]
    nullable = len(real) < len(types)
    if not real:
        return "Nullable(Nothing)"
    nullable = nullable or any(t.startswith("Nullable(") for t in real)
    bases = [_strip(t, "Nullable(") for t in real]
    if all(b == bases[0] for b in bases):
        base = bases[0]
    else:
        plain = [_strip(b, "LowCardinality(") for b in bases]
        if all(b == plain[0] for b in plain):
            base = plain[0]
        elif all(b.startswith("Array(") for b in plain):
            base = f"Array({supertype_name([b[len('Array('):-1] for b in plain])})"
        else:
            cts = [parse_type(b) for b in plain]
            if any(ct.enum or ct.name.startswith(("Decimal", "UUID", "FixedString", "Array")) for ct in cts):
                raise _no_supertype(plain)
            try:
                base = ch_type_of(least_supertype([ct.arrow_type for ct in cts]))
            except SkipidxError:
                raise _no_supertype(plain) from None
    if nullable and not base.startswith(("Array(", "LowCardinality(", "Nullable(")):
        return f"Nullable({base})"
    return base


def _strip(t: str, wrapper: str) -> str:
    return t[len(wrapper):-1] if t.startswith(wrapper) else t


def _no_supertype(types: list[str]) -> SkipidxError:
    # chDB 26.9 (use_variant_as_common_type) makes such a column a Variant, a type skipidx does not have
    return SkipidxError(f"There is no supertype for types {', '.join(types)} (NO_COMMON_TYPE; ClickHouse "
                        "makes it a Variant, which skipidx does not have)")
