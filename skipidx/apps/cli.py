"""The ``skipidx`` command.

    skipidx sql DBDIR "SQL; SQL; ..."      run statements, print results as tables
    skipidx sql DBDIR -f FILE.sql          the same, from a file
    skipidx demo [DBDIR] [--rows N]        the main job on the embedded engine
    skipidx bench fpp|indexes ...          the research bench
    skipidx advise DATA.parquet ...        index sizing advice
    skipidx build DBDIR TABLE --from PATH  bulk build (embedded or Spark)

A user error prints ``error: ...`` (with line and column where known) to
stderr and exits 1, never with a traceback. An internal error exits 2 with a
one-line message (set SKIPIDX_DEBUG=1 for the traceback).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from skipidx.core.errors import SkipidxError


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
    """Render rows as a box table (ClickHouse's PrettyCompact look)."""
    shown = [[_cell(v) for v in r] for r in rows[:max_rows]]
    widths = [len(n) for n in names]
    for r in shown:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    def line(l, m, r):
        return l + m.join("─" * (w + 2) for w in widths) + r
    out = [line("┌", "┬", "┐"),
           "│" + "│".join(f" {n:<{w}} " for n, w in zip(names, widths)) + "│",
           line("├", "┼", "┤")]
    for r in shown:
        out.append("│" + "│".join(f" {c:<{w}} " for c, w in zip(r, widths)) + "│")
    out.append(line("└", "┴", "┘"))
    if len(rows) > max_rows:
        out.append(f"... {len(rows) - max_rows} more rows")
    return "\n".join(out)


def print_result(res, out=sys.stdout, show_stats: bool = True) -> None:
    """Print one statement's result: a table for rows, a pruning footer for SELECTs."""
    table = res.to_arrow()
    if table.num_columns == 0:
        return
    names = table.column_names
    rows = res.fetchall()
    if names == ["explain"]:
        out.write("\n".join(_cell(r[0]) for r in rows) + "\n")
        return
    out.write(format_table(names, rows) + "\n")
    st = getattr(res, "stats", None)
    if show_stats and st is not None and getattr(st, "granules_total", None) is not None:
        total_ms = (getattr(st, "prune_ms", 0) or 0) + (getattr(st, "scan_ms", 0) or 0)
        out.write(f"{len(rows)} row{'s' if len(rows) != 1 else ''}; "
                  f"granules {st.granules_selected}/{st.granules_total} kept, "
                  f"parts {st.parts_selected}/{st.parts_total}, rows read {st.rows_read:,}, "
                  f"{total_ms:.1f} ms\n")


def _cmd_sql(args) -> int:
    import skipidx

    if args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as e:
            raise SkipidxError(f"cannot read {args.file}: {e.strerror}") from None
    elif args.statements is not None:
        text = args.statements
    else:
        raise SkipidxError("give SQL text or -f FILE.sql")
    with skipidx.connect(args.dbdir) as db:
        for res in db.sql_all(text):
            print_result(res)
    return 0


def _cmd_demo(args) -> int:
    from skipidx.apps.demo import run_demo

    return run_demo(args.dbdir, rows=args.rows, examples_dir=args.examples, seed=args.seed,
                    write_expected=args.write_expected)


def _delegate(module: str, func: str, argv: list[str]) -> int:
    import importlib

    return int(getattr(importlib.import_module(module), func)(argv) or 0)


_DELEGATED = {
    "bench": ("skipidx.apps.research.cli", "bench_main"),
    "advise": ("skipidx.apps.research.cli", "advise_main"),
    "build": ("skipidx.apps.pipeline", "build_main"),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skipidx", description="ClickHouse-style data-skipping indexes, embedded.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sql", help="run SQL statements against a database directory")
    s.add_argument("dbdir")
    s.add_argument("statements", nargs="?", help="SQL text (several statements separated by ';')")
    s.add_argument("-f", "--file", help="read SQL from this file")
    s.set_defaults(func=_cmd_sql)
    d = sub.add_parser("demo", help="the main job: build a log table with indexes and run sql_examples/")
    d.add_argument("dbdir", nargs="?", default=None, help="database directory (default: a temporary one)")
    d.add_argument("--rows", type=int, default=1_000_000)
    d.add_argument("--seed", type=int, default=42)
    d.add_argument("--examples", default=None, help="folder of .sql demos (default: the project's sql_examples/)")
    d.add_argument("--write-expected", action="store_true", help=argparse.SUPPRESS)
    d.set_defaults(func=_cmd_demo)
    for name in _DELEGATED:  # listed for --help; main() hands them their arguments untouched
        sub.add_parser(name, help=f"see `skipidx {name} --help`", add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in _DELEGATED:
            # these subcommands own their whole argument list (including --help)
            return _delegate(*_DELEGATED[argv[0]], argv[1:])
        args = build_parser().parse_args(argv)
        return args.func(args)
    except SkipidxError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug in skipidx, not the user's input: still no traceback by default
        if os.environ.get("SKIPIDX_DEBUG"):
            raise
        print(f"internal error: {type(e).__name__}: {e} (set SKIPIDX_DEBUG=1 for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
