"""Run ClickHouse's own stateless skip-index tests through skipidx and chDB, statement by statement.

    python bench/clickhouse_stateless.py [DIR] [--verbose] [--only NAME]

DIR holds ClickHouse's ``tests/queries/0_stateless/*.sql`` files of interest
(the files matching *bloom_filter*, *tokenbf*, *ngrambf*, *skip_index*,
*set_index*, *minmax*, *hasToken*; ClickHouse is Apache-2.0): by default the
copies in ``bench/clickhouse_stateless/`` (source and licence in its README),
or ``$SKIPIDX_CH_TESTS``.

Each file runs in a fresh skipidx database and a fresh chDB database, every
statement on both. A statement other than SET is *inside the dialect* when
skipidx runs it (or fails it the way ClickHouse does: the test expects an
error, or chDB's error code appears in skipidx's message). For those, the
answers are compared (rows as a multiset unless the query has ORDER BY); a
difference is a *wrong answer*. A statement that chDB rejects but skipidx
runs is listed apart (a query limit that ClickHouse's pruning hits and
skipidx's does not, or the reverse, lands there). Statements outside the
dialect are grouped by the first words of skipidx's error.

Prints per-file figures, the totals, the wrong answers and the classes of
statements outside the dialect.
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import glob
import math
import os
import re
import sys
import time

DEFAULT_DIR = os.environ.get(
    "SKIPIDX_CH_TESTS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "clickhouse_stateless"))
PATTERNS = ("bloom_filter", "tokenbf", "ngrambf", "skip_index", "set_index", "minmax", "hasToken")

_HINT = re.compile(r"--\s*\{\s*(serverError|clientError)\s+([^}]*)\}")


def split_statements(text: str) -> list[tuple[str, str | None]]:
    """(statement, expected error or None) in order; comments dropped, the
    ``-- { serverError X }`` hint kept (after the ';' on the same line, or
    inside a statement before its ';')."""
    out: list[list] = []
    cur: list[str] = []
    hint: str | None = None
    pending: list | None = None      # the statement closed on this line: a hint after ';' is its own
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            m = _HINT.search(text, i, j)
            if m:
                if "".join(cur).strip():
                    hint = m.group(2).strip()
                elif pending is not None:
                    pending[1] = m.group(2).strip()
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c == "\n":
            pending = None
        if c == ";":
            stmt = "".join(cur).strip()
            if stmt:
                pending = [stmt, hint]
                out.append(pending)
            cur, hint = [], None
            i += 1
            continue
        cur.append(c)
        i += 1
    stmt = "".join(cur).strip()
    if stmt:
        out.append([stmt, hint])
    return [(a, b) for a, b in out]


def _norm(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return "nan" if math.isnan(v) else round(v, 9)
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, dt.datetime):
        return int((v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)).timestamp())
    if isinstance(v, dt.date):
        return (v - dt.date(1970, 1, 1)).days
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    return v


def _rows(t) -> list[tuple]:
    import pyarrow as pa

    cols = [(c.cast(pa.binary()) if pa.types.is_string(c.type) else c).to_pylist() for c in t.columns]
    return [tuple(_norm(c[r]) for c in cols) for r in range(t.num_rows)]


def _text(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, float):
        return repr(round(v, 9)).rstrip("0").rstrip(".") if math.isfinite(v) else str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_text(x) for x in v) + "]"
    return str(v)


def _text_rows(t) -> list[tuple]:
    return [tuple(_text(v) for v in r.values()) for r in t.to_pylist()]


def _ch_text_rows(ch, stmt: str) -> list[tuple]:
    import json

    out = ch.query(stmt, "JSONCompactEachRow").bytes().decode("utf-8", "replace")
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [tuple(_text(v) if not isinstance(v, str) or not re.fullmatch(r"-?\d+\.\d+", v)
                  else _text(float(v)) for v in r) for r in rows]


_FIRST_WORD = re.compile(r"^\s*([A-Za-z]+)")
_CHANGES = ("INSERT", "CREATE", "ALTER", "OPTIMIZE", "TRUNCATE", "DROP")
_TARGET = re.compile(r"(?i)\b(?:INTO|TABLE)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?`?([A-Za-z_][A-Za-z0-9_]*)")


def _target_table(stmt: str) -> str | None:
    m = _TARGET.search(stmt)
    return m.group(1) if m else None


def _kind(stmt: str) -> str:
    m = _FIRST_WORD.match(stmt)
    return m.group(1).upper() if m else "?"


def _error_class(msg: str) -> str:
    """A short class of a skipidx error for the 'outside' table."""
    m = re.search(r"unknown function '([^']+)'", msg)
    if m:
        return f"function {m.group(1)}"
    m = re.search(r"unknown type '([^']+)'|type '([^']+)': (Array|LowCardinality)", msg)
    if m:
        t = m.group(1) or m.group(2)
        return f"type {re.sub(r'[(].*', '', t)}"
    m = re.search(r"unknown table function '([^']+)'", msg)
    if m:
        return f"table function {m.group(1)}"
    m = re.search(r"unknown setting '([^']+)'", msg)
    if m:
        return f"setting {m.group(1)}"
    m = re.search(r"unsupported engine '([^']+)'", msg)
    if m:
        return f"engine {m.group(1)}"
    if "index expression must be" in msg:
        return "index on an expression / tuple of columns"
    if "unknown table" in msg:
        return "table not created (an earlier statement is outside)"
    m = re.search(r"syntax error: unexpected ('[^']*'|\S+)", msg)
    if m:
        return f"syntax: {m.group(1)[:30]}"
    return re.sub(r"'[^']*'", "'…'", msg.split("(line")[0])[:70]


def run_file(path: str, verbose: bool = False) -> dict:
    import skipidx
    from skipidx.apps.research import chdb_session as ch

    stats = collections.Counter()
    outside: list[tuple[str, str]] = []
    wrong: list[tuple[str, str]] = []
    ch_only_error: list[tuple[str, str]] = []
    text = open(path, encoding="utf-8").read()
    name = ch.scratch_database("st")
    ch.query(f"USE {name}")
    set_names: set[str] = set()
    diverged: set[str] = set()      # tables whose data differ (a change ran in chDB only)
    db = skipidx.connect()
    try:
        for stmt, expect in split_statements(text):
            kind = _kind(stmt)
            if kind == "SET":
                for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)\s*=", stmt):
                    set_names.add(m.group(1))
            try:
                theirs = ch.query(stmt, "ArrowTable") if kind in ("SELECT", "WITH", "SHOW", "EXISTS", "DESCRIBE",
                                                                 "DESC", "EXPLAIN") else ch.query(stmt)
                their_err = None
            except Exception as e:          # chDB raises its own error types
                theirs, their_err = None, str(e)
                if "IPC file format" in their_err:    # chDB cannot hand an empty result over as Arrow
                    import pyarrow as pa

                    theirs, their_err = pa.table({}), None
            try:
                mine = db.sql(stmt)
                my_err = None
            except skipidx.SkipidxError as e:
                mine, my_err = None, e.message if hasattr(e, "message") else str(e)
            except Exception as e:          # a crash is counted, not hidden
                mine, my_err = None, f"CRASH {type(e).__name__}: {e}"
            if kind == "SET":
                stats["set"] += 1
                continue
            target = _target_table(stmt)
            if target and kind in _CHANGES:
                if their_err is None and my_err is not None:
                    diverged.add(target)
                elif kind in ("CREATE", "DROP") and their_err is None and my_err is None:
                    diverged.discard(target)
            stats["total"] += 1
            short = stmt if len(stmt) < 160 else stmt[:157] + "..."
            if my_err is not None and my_err.startswith("CRASH"):
                stats["crash"] += 1
                outside.append((short, my_err[:120]))
                continue
            if their_err is None and my_err is None:
                stats["inside"] += 1
                if theirs is not None and hasattr(theirs, "column_names") and mine is not None:
                    a, b = _rows(mine.to_arrow()), _rows(theirs)
                    if "ORDER BY" not in stmt.upper():
                        a, b = sorted(a, key=repr), sorted(b, key=repr)
                    if a != b:      # chDB's Arrow output spells some types apart (Enum as its number): by text
                        a, b = _text_rows(mine.to_arrow()), _ch_text_rows(ch, stmt)
                        if "ORDER BY" not in stmt.upper():
                            a, b = sorted(a), sorted(b)
                    if a != b and any(re.search(rf"\b{re.escape(t)}\b", stmt) for t in diverged):
                        stats["diverged"] += 1     # its table missed an earlier change (outside the dialect)
                    elif a != b:
                        stats["wrong"] += 1
                        wrong.append((short, f"skipidx {a[:5]} vs chDB {b[:5]}"))
                    else:
                        stats["compared"] += 1
            elif their_err is not None and my_err is not None:
                code = re.search(r"\(([A-Z_]+)\)\s*(\(version[^)]*\))?\.?\s*$", their_err.strip())
                same = code is not None and code.group(1) in my_err
                if same or expect is not None and not my_err.startswith("syntax error"):
                    stats["inside"] += 1
                    stats["both_error"] += 1
                else:
                    stats["outside"] += 1
                    outside.append((short, _error_class(my_err)))
            elif my_err is not None:
                stats["outside"] += 1
                outside.append((short, _error_class(my_err)))
            else:
                stats["inside"] += 1
                stats["ch_only_error"] += 1
                ch_only_error.append((short, their_err.strip().splitlines()[0][:160]))
            if verbose and my_err is not None:
                print(f"    [{kind}] {short}\n        -> {my_err[:200]}")
    finally:
        db.close()
        ch.query("USE default")
        ch.query(f"DROP DATABASE IF EXISTS {name}")
        for s in set_names:
            try:
                ch.query(f"SET {s} = DEFAULT")
            except Exception:
                pass
    return {"stats": stats, "outside": outside, "wrong": wrong, "ch_only_error": ch_only_error}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default=DEFAULT_DIR)
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--only", default=None, help="run the files whose name contains this")
    args = ap.parse_args()
    files = sorted(f for f in glob.glob(os.path.join(args.dir, "*.sql"))
                   if any(p in os.path.basename(f) for p in PATTERNS))
    if args.only:
        files = [f for f in files if args.only in os.path.basename(f)]
    if not files:
        print(f"no test files in {args.dir} (see the docstring)")
        return 2
    total = collections.Counter()
    outside_classes = collections.Counter()
    wrong_all, ch_only_all = [], []
    t0 = time.time()
    print(f"{'file':60s} {'stmts':>5s} {'inside':>6s} {'wrong':>5s}")
    for f in files:
        r = run_file(f, args.verbose)
        s = r["stats"]
        total.update(s)
        for _stmt, cls in r["outside"]:
            outside_classes[cls] += 1
        wrong_all += [(os.path.basename(f), *w) for w in r["wrong"]]
        ch_only_all += [(os.path.basename(f), *w) for w in r["ch_only_error"]]
        print(f"{os.path.basename(f)[:60]:60s} {s['total']:5d} {s['inside']:6d} {s['wrong']:5d}")
    n = total["total"]
    print()
    print(f"files: {len(files)}; non-SET statements: {n}; SET statements: {total['set']}")
    print(f"inside the dialect: {total['inside']} ({100.0 * total['inside'] / max(1, n):.1f} %)"
          f" -- answers compared equal: {total['compared']}, both failed alike: {total['both_error']},"
          f" chDB failed but skipidx ran: {total['ch_only_error']},"
          f" not comparable (their table missed a change outside the dialect): {total['diverged']}")
    print(f"wrong answers: {total['wrong']}; crashes: {total['crash']}")
    for f, stmt, why in wrong_all:
        print(f"  WRONG {f}: {stmt}\n        {why}")
    if ch_only_all:
        print("chDB failed, skipidx ran:")
        for f, stmt, why in ch_only_all:
            print(f"  {f}: {stmt}\n        chDB: {why}")
    print("outside the dialect, by class (statements):")
    for cls, k in outside_classes.most_common():
        print(f"  {k:5d}  {cls}")
    print(f"({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
