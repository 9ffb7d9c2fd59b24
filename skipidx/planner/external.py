"""Index uses of external tables that come from the data files themselves.

Besides the declared indexes (sidecars, loaded like a part's index files),
an external table's files prune with what they already hold: per column,
the row groups' footer min/max (``FooterStats(col)``, a minmax index), the
Parquet Bloom filters the writer stored (``ParquetBloom(col)``, answered by
the ``bloom_filter`` condition: Parquet hashes values exactly as it does),
and Hive partition values (``Partition(col)``, constant per file). They are
ordinary :class:`~skipidx.planner.prune.IndexUse` objects with a loader, so
the pruner probes, narrows and reports them like any index; a file that
cannot answer (no statistics, no filter) stays UNKNOWN for them.
"""
from __future__ import annotations

import os
from typing import Any

from skipidx.indexes.base import IndexDef, get_index_type
from skipidx.planner.rpn import RPN
from skipidx.planner.stats import IndexStats

__all__ = ["external_uses", "external_meta_from_ast", "iceberg_meta_from_ast"]


def _use(name: str, type_label: str, description: str, d: IndexDef, col_type: Any, cache: Any, loader: Any, rpn: RPN):
    from skipidx.planner.prune import IndexUse

    itype = cache.index_type(d, col_type) if cache is not None else get_index_type(d.type_name)(d, col_type)
    use = IndexUse(name, type_label, 1, itype, loader=loader)
    use.label = description
    use.stats = IndexStats(name=name, type=type_label, description=description)
    for i, atom in enumerate(rpn.atoms):
        cond = itype.condition(atom)
        if cond is not None:
            use.conditions[i] = cond
            use.stats.conditions.append(cond.describe())
    return use if use.conditions else None


def external_uses(snapshot: Any, rpn: RPN, cache: Any, declared: list) -> list:
    """The footer, Bloom-filter and partition uses of `snapshot` (an ExternalSnapshot)
    for the columns the RPN's atoms read. A column whose declared minmax index of
    GRANULARITY 1 already answers is not given a second one."""
    from skipidx.store.lake_stats import bloom_granules, stats_granules, stats_type_ok

    meta = snapshot.meta
    wanted = []
    for a in rpn.atoms:
        if a.expr_func is None and a.column not in wanted:
            wanted.append(a.column)
    covered = {u.itype.definition.column for u in declared
               if u.itype is not None and u.type_name == "minmax" and u.granularity == 1
               and u.itype.definition.expr_func is None}
    parts = set(snapshot.state.partition_columns)
    blooms = snapshot.bloom_columns() if wanted else set()
    out = []
    for col in wanted:
        try:
            ct = meta.column(col).type.arrow_type
        except Exception:
            continue
        if col not in covered and stats_type_ok(ct):
            d = IndexDef(name=f"Partition({col})" if col in parts else f"FooterStats({col})", column=col,
                         expr_func=None, type_name="minmax")
            desc = ("Hive partition value of each file" if col in parts
                    else f"min/max of {col} in each row group's Parquet footer")

            def load(f: Any, col: str = col, ct: Any = ct) -> Any:
                return stats_granules(f, col, ct)
            u = _use(d.name, "partition" if col in parts else "footer stats", desc, d, ct, cache, load, rpn)
            if u is not None:
                out.append(u)
        if col in blooms:
            d = IndexDef(name=f"ParquetBloom({col})", column=col, expr_func=None, type_name="bloom_filter")
            itype = cache.index_type(d, ct) if cache is not None else get_index_type("bloom_filter")(d, ct)

            def loadb(f: Any, col: str = col, ct: Any = ct, itype: Any = itype) -> Any:
                return bloom_granules(f, col, ct, itype)
            u = _use(d.name, "parquet bloom filter", f"the data files' own Parquet Bloom filters of {col}",
                     d, ct, cache, loadb, rpn)
            if u is not None:
                out.append(u)
    return out


def external_meta_from_ast(s: Any) -> tuple[Any, str, list[str]]:
    """``CREATE TABLE t [(columns, INDEX ...)] ENGINE = ParquetFiles('glob')``: (TableMeta,
    absolute glob, partition columns). Columns omitted: inferred from the files' footers
    (Nullable where Parquet says optional) and the Hive ``key=value`` directories."""
    from skipidx.core.errors import SkipidxError
    from skipidx.planner.ddl import _at, _err, _literal_value
    from skipidx.store.external import lake_columns, resolve_source

    if len(s.engine_args) != 1 or s.engine_args[0].kind != "string":
        raise _err("ENGINE = ParquetFiles takes one string: the path or glob of the data files", s)
    if s.order_by is not None:
        raise _err("an external table has no ORDER BY (its files are never rewritten)", s)
    for kv in s.settings:
        raise _err(f"an external table takes no SETTINGS ({kv.name})", kv)
    try:
        src = resolve_source(_literal_value(s.engine_args[0]))
        found, left_out, ptypes, _half = lake_columns(src)
    except SkipidxError as e:
        raise _at(e, s.engine_args[0]) from None
    meta = _declared_meta(s, found, ptypes, src)
    return meta, src, [c for c in meta.column_names if c in ptypes]


def _declared_meta(s: Any, found: list, ptypes: dict, src: str) -> Any:
    """The TableMeta of an external CREATE TABLE: its declared columns (each one the data
    holds: `found` file columns, `ptypes` partition keys) or those found, and its indexes
    (as sidecars)."""
    from skipidx.core.errors import SkipidxError
    from skipidx.core.types import parse_type
    from skipidx.planner.ddl import _at, _err, index_def_from_ast
    from skipidx.store.metadata import ColumnMeta, TableMeta, make_index_meta
    from skipidx.store.sidecar import sidecar_index_def

    if s.columns:
        known = {n for n, _ in found} | set(ptypes)
        cols = []
        for c in s.columns:
            if c.codec:
                raise _err(f"column {c.name!r}: CODEC does not apply to an external table", c)
            try:
                ctype = parse_type(c.type.to_sql())
            except SkipidxError as e:
                raise _at(e, c.type) from None
            if (found or ptypes) and c.name not in known:
                raise _err(f"column {c.name!r} is in no data file of {src!r} and is no partition key; "
                           f"the files hold: {', '.join(sorted(known))}", c)
            cols.append(ColumnMeta(c.name, ctype))
    else:
        if not found and not ptypes:
            raise _err(f"ENGINE = {s.engine}({src!r}): no readable Parquet file matches, so the columns "
                       "cannot be inferred; declare them", s.engine_args[0])
        cols = [ColumnMeta(n, t) for n, t in found] + [ColumnMeta(k, t) for k, t in ptypes.items()]
    names = [c.name for c in cols]
    by_name = {c.name: c for c in cols}
    indexes = []
    for ic in s.indexes:
        defn = index_def_from_ast(ic, names)
        try:
            indexes.append(make_index_meta(sidecar_index_def(defn), by_name[defn.column].type))
        except SkipidxError as e:
            raise _at(e, ic) from None
    meta = TableMeta(name=s.table.name, columns=cols, order_by=[], indexes=indexes)
    try:
        meta.validate()
    except SkipidxError as e:
        raise _at(e, s) from None
    return meta


def iceberg_meta_from_ast(s: Any) -> tuple[Any, dict, str, dict, str]:
    """``CREATE TABLE t [(columns, INDEX ...)] ENGINE = Iceberg('catalog', 'namespace.table')``
    (or ``IcebergLocal('table directory')``): (TableMeta, catalog spec, identifier, field id
    per column, local table location). Columns omitted: the Iceberg schema's."""
    from skipidx.core.errors import SkipidxError
    from skipidx.planner.ddl import _at, _err, _literal_value
    from skipidx.store import iceberg as ice

    local = s.engine == ice.LOCAL_ENGINE
    want = (1,) if local else (2, 3)
    if len(s.engine_args) not in want or any(a.kind != "string" for a in s.engine_args):
        raise _err("ENGINE = IcebergLocal takes one string: the table directory (or its metadata.json)" if local
                   else "ENGINE = Iceberg takes two or three strings: the catalog (a URI such as "
                   "'sqlite:///wh/catalog.db', or a configured pyiceberg catalog's name), the table "
                   "('namespace.table') and, with a URI, the catalog's name (default 'default')", s)
    if s.order_by is not None:
        raise _err("an external table has no ORDER BY (its files are never rewritten)", s)
    for kv in s.settings:
        raise _err(f"an external table takes no SETTINGS ({kv.name})", kv)
    try:
        spec = ice.catalog_spec(_literal_value(s.engine_args[0]), local=local,
                                name=_literal_value(s.engine_args[2]) if len(s.engine_args) > 2 else None)
        ident = "" if local else str(_literal_value(s.engine_args[1]))
        tbl = ice.load_iceberg(spec, ident)
        found, ids, _left = ice.iceberg_columns(tbl)
        if local:
            ident = ".".join(tbl.name()) if tbl.name() else os.path.basename(spec["metadata"].rstrip("/"))
        location = ice.local_location(tbl)
    except SkipidxError as e:
        raise _at(e, s.engine_args[0]) from None
    meta = _declared_meta(s, found, {}, spec.get("metadata") or ident)
    return meta, spec, ident, {c: ids[c] for c in meta.column_names if c in ids}, location
