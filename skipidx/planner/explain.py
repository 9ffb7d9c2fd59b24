"""``EXPLAIN indexes = 1 SELECT ...`` in ClickHouse's shape.

The pruning runs for real (indexes are read, nothing else), and the text
follows ClickHouse's ``ReadFromMergeTree`` / ``Indexes:`` / ``Skip`` blocks::

    ReadFromMergeTree (logs)
    Parts: 3/8 | Granules: 40/1221
    Indexes:
      Skip
        Name: msg_tokens
        Description: tokenbf_v1 GRANULARITY 1
        Condition: hasToken(msg, 'kraken'): all of {kraken}
        Parts: 3/8
        Granules: 40/1221
      Skip
        Name: <Combined skip indexes>
        Description: Final set of granules after AND/OR processing
        Parts: 3/8
        Granules: 40/1221
      Ranges: 31
    Not used:
      msg_ngrams (ngrambf_v1 GRANULARITY 1): pattern yields no complete token

Per index, ``Granules: a/b`` is what that index *alone* would keep (the
WHERE clause's RPN evaluated with only its answers) out of all granules;
the combined block is the final selection, shown when more than one index
answered. Every index that was not read gets one "Not used" line saying why.
"""
from __future__ import annotations

from typing import Any, Callable

from skipidx.expr.visitors import columns_of, text_of
from skipidx.planner.plan import QueryPlan, prune_plan
from skipidx.planner.rpn import Op
from skipidx.planner.stats import QueryStats


def explain_lines(plan: QueryPlan, indexes: bool = True,
                  direct_count: Callable[[QueryPlan, list], Any] | None = None,
                  direct_rows: Callable[[QueryPlan, list], list[str] | None] | None = None,
                  row_filter: Callable[[QueryPlan, list], list[str] | None] | None = None,
                  ) -> tuple[list[str], QueryStats]:
    """EXPLAIN's lines; `direct_count` (the engine's count-from-postings reader) says
    whether a count() would be answered from index postings, `direct_rows` which indexes'
    postings would answer the WHERE of another SELECT, `row_filter` which indexes' postings
    give the rows of a WHERE that is scanned (its columns read, not evaluated per row); both
    get the pruning's selections and must decide as the query's read path does."""
    bs = plan.select
    stats = QueryStats(table=bs.table)
    _selections = prune_plan(plan, stats)
    # an external table's parts are data files and its granules row groups
    ext = plan.snapshot.kind == "external"
    zoned = ext and plan.snapshot.state.zone_rows
    P, G = ("Files", "Zones" if zoned else "Row groups") if ext else ("Parts", "Granules")
    lines = ["Expression"]
    if bs.distinct:
        lines.append("  Distinct")
    if bs.having is not None:
        lines.append(f"  Filter (HAVING): {text_of(bs.having)}")
    if bs.aggregate:
        lines.append("  Aggregating")
    if bs.order_by:
        lines.append("  Sorting")
    if bs.limit is not None:
        lines.append(f"  Limit {bs.limit}" + (f" offset {bs.offset}" if bs.offset else ""))
    if bs.where is not None:
        lines.append(f"  Filter: {text_of(bs.where)}")
    direct = False
    if direct_count is not None and plan.direct_read and not ext and stats.parts_selected:
        got = direct_count(plan, [p for p in plan.snapshot.parts])
        direct = got is not None
        if got is not None:
            lines.append(f"  ReadFromTextIndexCount ({bs.table}): count() from the postings of "
                         f"{', '.join(got[1])}, no column read")
        elif direct_rows is not None:
            names = direct_rows(plan, _selections)
            direct = names is not None
            if names is not None:
                out = [c for c in plan.columns if c in bs.output_columns()]
                lines.append(f"  ReadFromTextIndex ({bs.table}): WHERE from the postings of {', '.join(names)}; "
                             f"columns read: {', '.join(out) or 'none'}")
    if row_filter is not None and not direct and not ext and stats.parts_selected and bs.where is not None:
        names = row_filter(plan, _selections)
        if names is not None:
            lines.append(f"  FilterFromTextIndex ({bs.table}): WHERE rows from the postings of {', '.join(names)}; "
                         f"columns still read: {', '.join(plan.columns)}; the WHERE not evaluated per row")
    lines.append(f"  {'ReadFromParquetFiles' if ext else 'ReadFromMergeTree'} ({bs.table})")
    lines.append(f"    Columns: {', '.join(plan.columns) if plan.columns else '(none: row counts from marks)'}")
    pw = plan.prewhere
    if pw is not None:
        need = columns_of(pw)
        first = [c for c in plan.columns if c in need]
        rest = [c for c in plan.columns if c not in need]
        how = "PREWHERE clause" if plan.prewhere_explicit else "moved from WHERE"
        lines.append(f"    Prewhere ({how}): {text_of(pw)}; "
                     f"read first: {', '.join(first) or 'none'}; then, for granules with a match: "
                     f"{', '.join(rest)}")
    elif plan.prewhere_note:
        lines.append(f"    Prewhere: not used ({plan.prewhere_note})")
    lines.append(f"    {P}: {stats.parts_selected}/{stats.parts_total} | "
                 f"{G}: {stats.granules_selected}/{stats.granules_total}")
    if zoned:
        kept = sum(len(sel.part.row_groups_of(sel.ranges)) for sel in _selections)
        total = sum(int(p._info.rg_marks.shape[0] - 1) for p in plan.snapshot.parts)
        lines.append(f"    Row groups: {kept}/{total} (zones of {zoned} rows)")
    for n in stats.notes:
        lines.append(f"    Note: {n}")
    if not indexes:
        return lines, stats
    used = [u for u in plan.uses if u.useful]
    lines.append("    Indexes:")
    if not used and any(it.op in (Op.FALSE, Op.NULL) for it in plan.rpn.items):
        lines.append("      Condition: constant (decided without reading any index)")
    for u in sorted(used, key=lambda x: not x.is_primary_key):
        s = u.stats
        if u.is_primary_key:
            lines.append("      PrimaryKey")
            lines.append(f"        Keys: {u.itype.definition.column} (row-group min/max)")
        else:
            lines.append("      Skip")
            lines.append(f"        Name: {u.name}")
            lines.append(f"        Description: {u.description}")
        for c in s.conditions:
            lines.append(f"        Condition: {c}")
        lines.append(f"        {P}: {s.parts_after}/{s.parts_before}")
        lines.append(f"        {G}: {s.granules_after}/{s.granules_before}")
        if s.groups_total:
            # the summary level: groups whose filter passed / groups probed (summed over atoms)
            lines.append(f"        Groups: {s.groups_selected}/{s.groups_total} (a summary filter per group of granules; "
                         f"only the granules of passing groups probed)")
        if s.note:
            lines.append(f"        Note: {s.note}")
    if len(used) > 1:
        lines.append("      Skip")
        lines.append("        Name: <Combined skip indexes>")
        lines.append("        Description: Final set of granules after AND/OR processing")
        lines.append(f"        {P}: {stats.parts_selected}/{stats.parts_total}")
        lines.append(f"        {G}: {stats.granules_selected}/{stats.granules_total}")
    lines.append(f"      Ranges: {stats.ranges}")
    unused = [u for u in plan.uses if not u.useful]
    if unused:
        lines.append("    Not used:")
        for u in unused:
            lines.append(f"      {u.name} ({u.description}): {u.note or 'no usable atom'}")
    return lines, stats

