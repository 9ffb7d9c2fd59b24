"""The ``skipidx`` command.

    skipidx sql DBDIR "SQL; SQL; ..."      run statements, print their results
    skipidx sql DBDIR -f FILE.sql          the same, from a file (-f - : stdin)
    echo 'SELECT 1' | skipidx sql DBDIR    the same, from stdin
    skipidx sql DBDIR                      on a terminal: an interactive REPL
    skipidx demo [DBDIR] [--rows N]        the main job on the embedded engine
    skipidx bench fpp|indexes ...          the research bench
    skipidx advise DATA.parquet ...        index sizing advice
    skipidx build DBDIR TABLE --from PATH  bulk build (embedded or Spark)

Results are written in ClickHouse's formats (``--format`` or the query's
``FORMAT``): Pretty on a terminal, TabSeparated otherwise (as
clickhouse-client). ``--stats`` prints each SELECT's pruning figures and
``--time`` its elapsed time to stderr; ``--param_NAME=VALUE`` fills the
query parameter ``{NAME:Type}``.

A user error prints ``error: ...`` (with line and column where known) to
stderr and exits 1, never with a traceback. An internal error exits 2 with a
one-line message (set SKIPIDX_DEBUG=1 for the traceback).
"""
from __future__ import annotations

import os
import sys
import time
from typing import IO, TYPE_CHECKING, Sequence

from skipidx.apps.render import format_table, print_result, stats_footer
from skipidx.core.errors import SkipidxError

if TYPE_CHECKING:
    import argparse

__all__ = ["main", "run", "build_parser", "format_table", "print_result", "write_result"]

_FORMAT_HELP = ("output format (ClickHouse's names): TabSeparated/TSV, TabSeparatedWithNames, CSV, "
                "CSVWithNames, JSONEachRow, JSON, Pretty, PrettyCompact, Vertical, Markdown, Parquet; "
                "default Pretty on a terminal, TabSeparated otherwise")


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def write_result(res, fmt: str | None, out: IO[bytes], err: IO[str], *, stats: bool = False,
                 elapsed: float | None = None, interactive: bool = False) -> None:
    """Write one statement's result: rows in the format the query asked for
    (else `fmt`), the pruning footer / time to `err`."""
    from skipidx.engine.formats import canonical_format, write_batches

    rows = None
    if res.columns and getattr(res, "outfile", None) is None:
        name = res.format_name or fmt
        if name is None and res.columns == ["explain"]:
            # EXPLAIN's lines as they are (clickhouse-client prints them raw too)
            for (line,) in res.fetchall():
                out.write((line + "\n").encode("utf-8"))
            rows = None
        else:
            name = canonical_format(name or "TabSeparated")
            if name == "Parquet" and _is_tty(out):
                raise SkipidxError("refusing to write Parquet to a terminal; redirect stdout or use INTO OUTFILE")
            st = None
            if name == "JSON":
                st = {"elapsed": round(elapsed or 0.0, 9),
                      "rows_read": getattr(res.stats, "rows_read", 0) if res.stats else 0}
            rows = write_batches(res.fetch_record_batch(), res.schema, res.types, name, out, stats=st)
        out.flush()
    elif interactive and res.message:
        err.write(f"Ok. ({res.message})\n" if not res.outfile else f"Ok. {res.message}\n")
    if stats or interactive:
        foot = stats_footer(res, rows)
        if foot:
            err.write(foot + "\n")
    if elapsed is not None:
        err.write(f"{elapsed:.3f}\n" if not interactive else f"Elapsed: {elapsed:.3f} sec.\n")
    err.flush()


def _run_text(db, text: str, args, out: IO[bytes], err: IO[str], interactive: bool = False) -> None:
    from skipidx.sql.parser import parse

    statements = parse(text)
    if not statements:
        raise SkipidxError("empty statement: the SQL text holds no statement")
    for stmt in statements:
        t0 = time.perf_counter()
        res = db.execute(stmt, args.params or None)
        elapsed = time.perf_counter() - t0 if (args.time or interactive) else None
        fmt = args.format
        if fmt is None:
            fmt = "PrettyCompact" if interactive else ("Pretty" if _is_tty(out) else "TabSeparated")
        write_result(res, fmt, out, err, stats=args.stats, elapsed=elapsed, interactive=interactive)


def _read_sql(args) -> str | None:
    if getattr(args, "query", None) is not None and (args.file is not None or args.statements is not None):
        raise SkipidxError("give the SQL once: as text, with -q/--query or with -f/--file")
    if args.file is not None:
        if args.file == "-":
            return sys.stdin.read()
        try:
            with open(args.file, "rb") as fh:
                raw = fh.read()
        except OSError as e:
            raise SkipidxError(f"cannot read {args.file}: {e.strerror}") from None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw.count(b"\n", 0, e.start) + 1
            raise SkipidxError("the SQL file is not UTF-8 text", path=args.file, line=line,
                               column=e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1) from None
    if args.statements is not None:
        return args.statements
    if getattr(args, "query", None) is not None:
        return args.query
    if not _is_tty(sys.stdin):
        return sys.stdin.read()
    return None


def _cmd_sql(args) -> int:
    import skipidx

    if args.format is not None:
        from skipidx.engine.formats import canonical_format

        args.format = canonical_format(args.format)
    text = _read_sql(args)
    with skipidx.connect(args.dbdir) as db:
        if text is None:
            return repl(db, args)
        out = sys.stdout.buffer
        _run_text(db, text, args, out, sys.stderr)
    return 0


# -- REPL -------------------------------------------------------------------

def _statement_complete(text: str) -> bool:
    """Enter runs the input when it ends with ';' (outside quotes and comments)
    or is a command (\\q, exit, quit); otherwise it starts a new line."""
    s = text.strip()
    if not s:
        return True
    if s.startswith("\\") or s.lower() in ("exit", "quit", "q", "help"):
        return True
    # strip -- comments at line ends, then look at the last character outside quotes
    in_q: str | None = None
    last = ""
    i = 0
    while i < len(s):
        ch = s[i]
        if in_q:
            if ch == "\\":
                i += 2
                continue
            if ch == in_q:
                in_q = None
            last = ch
        elif ch in "'\"`":
            in_q = ch
            last = ch
        elif s.startswith("--", i):
            j = s.find("\n", i)
            i = len(s) if j < 0 else j
            continue
        elif not ch.isspace():
            last = ch
        i += 1
    return in_q is None and last == ";"


_REPL_HELP = """Enter SQL statements ending with ';' (several lines are fine).
  \\q, exit, quit or Ctrl-D   leave
  Ctrl-C                     cancel the running query (or clear the input)
  \\format NAME               output format (now {fmt})
  \\stats                     toggle the pruning footer
  \\dt                        list tables
"""


def repl(db, args) -> int:
    """The interactive shell (prompt_toolkit: history file, multi-line input until ';')."""
    try:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.key_binding import KeyBindings
    except ImportError:
        raise SkipidxError("the interactive shell needs prompt_toolkit: pip install prompt_toolkit") from None
    import skipidx

    kb = KeyBindings()

    @kb.add("enter")
    def _(event):
        buf = event.current_buffer
        if _statement_complete(buf.text):
            buf.validate_and_handle()
        else:
            buf.insert_text("\n")

    hist_path = os.environ.get("SKIPIDX_HISTORY", os.path.join(os.path.expanduser("~"), ".skipidx_history"))
    try:
        history = FileHistory(hist_path)
    except OSError:
        history = None
    session = PromptSession(history=history, key_bindings=kb, multiline=True,
                            prompt_continuation=lambda width, line_no, soft: ":-] ".rjust(width))
    out = sys.stdout.buffer
    fmt = args.format or "PrettyCompact"
    print(f"skipidx {skipidx.__version__} on {db.path}. End statements with ';'. \\q or Ctrl-D to leave, "
          "\\? for help.", flush=True)
    while True:
        try:
            text = session.prompt("skipidx :) ")
        except KeyboardInterrupt:
            continue          # Ctrl-C at the prompt clears the input
        except EOFError:
            break
        s = text.strip()
        if not s:
            continue
        low = s.rstrip(";").strip().lower()
        if low in ("\\q", "exit", "quit", "q"):
            break
        if low in ("\\?", "help", "\\h"):
            sys.stdout.write(_REPL_HELP.format(fmt=fmt))
            sys.stdout.flush()
            continue
        if low.startswith("\\format"):
            from skipidx.engine.formats import canonical_format

            try:
                fmt = canonical_format(s.split(None, 1)[1].rstrip(";").strip())
            except (IndexError, SkipidxError) as e:
                print(f"error: {e}" if isinstance(e, SkipidxError) else "usage: \\format NAME",
                      file=sys.stderr, flush=True)
            continue
        if low == "\\stats":
            args.stats = not args.stats
            print(f"pruning footer {'on' if args.stats else 'off'}", flush=True)
            continue
        if low == "\\dt":
            s = "SHOW TABLES;"
        saved = args.format
        args.format = fmt
        try:
            _run_text(db, s, args, out, sys.stderr, interactive=True)
        except KeyboardInterrupt:
            print("Query was cancelled.", file=sys.stderr, flush=True)
        except SkipidxError as e:
            print(f"error: {e}", file=sys.stderr, flush=True)
        except Exception as e:   # a bug must not end the session
            if os.environ.get("SKIPIDX_DEBUG"):
                raise
            print(f"internal error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        finally:
            args.format = saved
    print("Bye.", flush=True)
    return 0


def _cmd_demo(args) -> int:
    from skipidx.apps.demo import run_demo

    return run_demo(args.dbdir, rows=args.rows, examples_dir=args.examples, seed=args.seed,
                    write_expected=args.write_expected)


def _delegate(module: str, func: str, argv: list[str]) -> int:
    import importlib

    return int(getattr(importlib.import_module(module), func)(argv) or 0)


_DELEGATED = {
    "bench": ("skipidx.apps.research.cli", "bench_main", "the research bench: filter sizes, fpp, tokenizers"),
    "advise": ("skipidx.apps.research.cli", "advise_main", "index sizing advice for a Parquet file"),
    "build": ("skipidx.apps.pipeline", "build_main",
              "bulk build a table with indexes from Parquet/CSV/JSON files (embedded or Spark)"),
    "warm": ("skipidx.apps.warm", "main", "compile the numba kernels ahead of the first query (make runs it)"),
}


def _version() -> str:
    import skipidx

    return f"skipidx {skipidx.__version__}"


def build_parser() -> argparse.ArgumentParser:
    import argparse

    p = argparse.ArgumentParser(prog="skipidx", description="ClickHouse-style data-skipping indexes, embedded.")
    p.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("sql", help="run SQL statements against a database directory (no SQL: a REPL)",
                       description="Run SQL statements against a database directory. With no SQL text, "
                                   "-f or piped stdin, an interactive shell opens.",
                       epilog="--param_NAME=VALUE fills the query parameter {NAME:Type} (repeatable).")
    s.add_argument("dbdir", help="database directory (created if missing)")
    s.add_argument("statements", nargs="?", help="SQL text (several statements separated by ';')")
    s.add_argument("-f", "--file", help="read SQL from this file ('-': standard input)")
    s.add_argument("-q", "--query", default=None, metavar="SQL",
                   help="SQL text, as clickhouse-local's --query (instead of the positional text)")
    s.add_argument("--format", "-F", default=None, metavar="FORMAT", help=_FORMAT_HELP)
    s.add_argument("--stats", action="store_true", help="print each SELECT's pruning figures to stderr")
    s.add_argument("--time", action="store_true", help="print each statement's elapsed seconds to stderr")
    s.set_defaults(func=_cmd_sql)
    d = sub.add_parser("demo", help="the main job: build a log table with indexes and run sql_examples/",
                       description="Generate the seeded log dataset, build its indexes, run every "
                                   "sql_examples/*.sql and check it against its .out file.")
    d.add_argument("dbdir", nargs="?", default=None, help="database directory (default: a temporary one)")
    d.add_argument("--rows", type=int, default=1_000_000, help="log rows to generate (default 1,000,000)")
    d.add_argument("--seed", type=int, default=42, help="random seed of the dataset (default 42)")
    d.add_argument("--examples", default=None, help="folder of .sql demos (default: the project's sql_examples/)")
    d.add_argument("--write-expected", action="store_true", help=argparse.SUPPRESS)
    d.set_defaults(func=_cmd_demo)
    for name, (_, _, text) in _DELEGATED.items():  # listed for --help; main() hands them their arguments
        sub.add_parser(name, help=f"{text} (see `skipidx {name} --help`)", add_help=False)
    return p


def _split_params(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """``--param_x=1`` / ``--param_x 1`` out of argv (clickhouse-client's spelling)."""
    rest: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--param_"):
            body = a[len("--param_"):]
            if "=" in body:
                k, v = body.split("=", 1)
            else:
                if i + 1 >= len(argv):
                    raise SkipidxError(f"{a} needs a value (--param_NAME=VALUE)")
                k, v = body, argv[i + 1]
                i += 1
            if not k:
                raise SkipidxError("--param_ needs a name: --param_NAME=VALUE")
            params[k] = v
        else:
            rest.append(a)
        i += 1
    return rest, params


_SQL_FLAGS = {"--stats": "stats", "--time": "time"}
_SQL_VALUED = {"--format": "format", "-F": "format"}


def _sql_args(argv: list[str]) -> "argparse.Namespace | None":
    """``build_parser().parse_args(argv)`` for the common ``sql DBDIR [SQL] [--format F] [--stats]
    [--time]`` spellings, without importing argparse or building its subcommand tree (a short
    command's start-up); None for anything else, which argparse then parses (and reports)."""
    if not argv or argv[0] != "sql":
        return None
    pos: list[str] = []
    vals = {"format": None, "stats": False, "time": False}
    run_ended = False   # argparse reads the positionals as one run: SQL after an option is an error there
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in _SQL_FLAGS:
            vals[_SQL_FLAGS[a]] = True
        elif a in _SQL_VALUED:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            i += 1
            vals[_SQL_VALUED[a]] = argv[i]
        elif a.startswith("-") or run_ended or len(pos) == 2:
            return None
        else:
            pos.append(a)
            run_ended = i + 1 < len(argv) and argv[i + 1].startswith("-")
        i += 1
    if not pos:
        return None
    ns = _Namespace(command="sql", dbdir=pos[0], statements=pos[1] if len(pos) > 1 else None, file=None,
                    query=None, func=_cmd_sql, **vals)
    return ns


class _Namespace:
    """What argparse.Namespace is to the commands: attributes (and equality, for the tests)."""

    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)

    def __eq__(self, other) -> bool:
        return vars(self) == vars(other)

    def __repr__(self) -> str:
        return "Namespace(" + ", ".join(f"{k}={v!r}" for k, v in sorted(vars(self).items())) + ")"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in _DELEGATED:
            # these subcommands own their whole argument list (including --help)
            return _delegate(*_DELEGATED[argv[0]][:2], argv[1:])
        argv, params = _split_params(argv)
        args = _sql_args(argv) or build_parser().parse_args(argv)
        args.params = params
        return args.func(args)
    except SkipidxError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `skipidx sql ... | head`: the reader left; not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as e:  # a bug in skipidx, not the user's input: still no traceback by default
        if os.environ.get("SKIPIDX_DEBUG"):
            raise
        print(f"internal error: {type(e).__name__}: {e} (set SKIPIDX_DEBUG=1 for the traceback)", file=sys.stderr)
        return 2


def run() -> None:
    """The ``skipidx`` program (``python -m skipidx``, the installed command): :func:`main`,
    then the exit, with the process's objects left to the operating system: ``gc.freeze()``
    keeps the interpreter's last collections from walking and freeing every module's objects
    on the way out (atexit handlers, thread joins and the flush of stdout/stderr still run).
    Only here, where the process ends: in-process callers of main() keep their collector."""
    code = main()
    import gc

    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
