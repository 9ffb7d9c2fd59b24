"""Result text shared by the command line and the demo (one module both import:
the demo's expected .out files and ``skipidx sql`` print tables the same way).

:func:`format_table` / :func:`print_result` are the demo's box tables (what
``sql_examples/*.out`` hold); a Result that asked for a ``FORMAT`` is written
in that format instead (:mod:`skipidx.engine.formats`).
"""
from __future__ import annotations

import sys
from typing import IO, Sequence

from skipidx.engine.formats import text_width


def _cell(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return repr(v) if v == v else "nan"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_cell(x) if not isinstance(x, str) else repr(x) for x in v) + "]"
    return str(v)


def format_table(names: Sequence[str], rows: Sequence[Sequence], max_rows: int = 200) -> str:
    """Render rows as a box table; widths are display widths (wcwidth), so
    wide and combining characters line up."""
    shown = [[_cell(v) for v in r] for r in rows[:max_rows]]
    widths = [text_width(n) for n in names]
    for r in shown:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], text_width(c))

    def line(l, m, r):
        return l + m.join("─" * (w + 2) for w in widths) + r

    def cell(c: str, w: int) -> str:
        return " " + c + " " * (w - text_width(c)) + " "

    out = [line("┌", "┬", "┐"),
           "│" + "│".join(cell(n, w) for n, w in zip(names, widths)) + "│",
           line("├", "┼", "┤")]
    for r in shown:
        out.append("│" + "│".join(cell(c, w) for c, w in zip(r, widths)) + "│")
    out.append(line("└", "┴", "┘"))
    if len(rows) > max_rows:
        out.append(f"... {len(rows) - max_rows} more rows")
    return "\n".join(out)


def stats_footer(res, rows: int | None = None) -> str | None:
    """One line of pruning figures of a SELECT's Result (None for other statements)."""
    st = getattr(res, "stats", None)
    if st is None or getattr(st, "granules_total", None) is None:
        return None
    total_ms = (getattr(st, "prune_ms", 0) or 0) + (getattr(st, "scan_ms", 0) or 0)
    head = f"{rows} row{'s' if rows != 1 else ''}; " if rows is not None else ""
    return (f"{head}granules {st.granules_selected}/{st.granules_total} kept, "
            f"parts {st.parts_selected}/{st.parts_total}, rows read {st.rows_read:,}, {total_ms:.1f} ms")


def print_result(res, out: IO[str] = sys.stdout, show_stats: bool = True) -> None:
    """Print one statement's result as the demo shows it: a table for rows (or
    the text of the FORMAT the query asked for), a pruning footer for SELECTs."""
    if getattr(res, "format_name", None) and res.columns and not getattr(res, "outfile", None):
        import io

        from skipidx.engine.formats import write_batches

        buf = io.BytesIO()
        # the whole result (a printed Result can be printed again), streamed only when it streams
        src = res.fetch_record_batch() if res.streaming else res.to_arrow().to_batches()
        write_batches(src, res.schema, res.types, res.format_name, buf)
        out.write(buf.getvalue().decode("utf-8", "replace"))
        return
    table = res.to_arrow()
    if table.num_columns == 0:
        return
    names = table.column_names
    cols = [c.to_pylist() for c in table.columns]
    rows = list(zip(*cols))
    if names == ["explain"]:
        out.write("\n".join(_cell(r[0]) for r in rows) + "\n")
        return
    out.write(format_table(names, rows) + "\n")
    if show_stats:
        foot = stats_footer(res, len(rows))
        if foot:
            out.write(foot + "\n")
