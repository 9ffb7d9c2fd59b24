"""The `skipidx` command: results as tables, `error: ...` with a place and a
non-zero exit on bad input (never a traceback), and the demo end to end."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skipidx.apps.cli import format_table, main

SKIPIDX = [sys.executable, "-m", "skipidx.apps.cli"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("SKIPIDX_DEBUG", None)
    return subprocess.run([*SKIPIDX, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_sql_creates_inserts_and_selects(tmp_path):
    db = str(tmp_path / "db")
    r = run("sql", db, "CREATE TABLE t (id UInt32, msg String, INDEX i msg TYPE tokenbf_v1(256, 2, 0)) "
                       "ENGINE = MergeTree ORDER BY id; "
                       "INSERT INTO t VALUES (1, 'connection timeout'), (2, 'ok'), (3, NULL_IS_NOT_HERE_BUT_A_STRING);")
    # the third row is bad on purpose: an unknown identifier in VALUES
    assert r.returncode != 0 and r.stderr.startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr
    r = run("sql", db, "INSERT INTO t VALUES (1, 'connection timeout'), (2, 'ok'); "
                       "SELECT id, msg FROM t WHERE hasToken(msg, 'timeout')", "--stats")
    assert r.returncode == 0, r.stderr
    # not a terminal: TabSeparated (as clickhouse-client); the pruning footer goes to stderr
    assert r.stdout == "1\tconnection timeout\n", r.stdout
    assert "granules 1/1 kept" in r.stderr, r.stderr
    r = run("sql", db, "SELECT id, msg FROM t WHERE hasToken(msg, 'timeout')", "--format", "PrettyCompact")
    assert "connection timeout" in r.stdout and "│  1 │" in r.stdout, r.stdout


def test_sql_from_file(tmp_path):
    f = tmp_path / "q.sql"
    f.write_text("-- a comment\nCREATE TABLE t (x UInt8) ORDER BY x;\nINSERT INTO t VALUES (1), (2), (3);\n"
                 "SELECT count(), sum(x) FROM t;\n")
    r = run("sql", str(tmp_path / "db"), "-f", str(f), "--format", "Pretty")
    assert r.returncode == 0, r.stderr
    assert "│       3 │      6 │" in r.stdout, r.stdout


@pytest.mark.parametrize(
    "sql, needle",
    [
        ("SELEC 1", "line 1, column 1"),
        ("SELECT count() FROM nowhere", "nowhere"),
        ("CREATE TABLE t (x UInt8) ORDER BY x;\nSELECT y FROM t", "line 2"),
        ("   -- only a comment\n", "empty statement"),
        ("SELECT 'unterminated", "line 1"),
    ],
    ids=["typo", "unknown-table", "unknown-column-line2", "empty", "unterminated-string"],
)
def test_bad_statements_print_error_with_place(tmp_path, sql, needle):
    r = run("sql", str(tmp_path / "db"), sql)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith("error: "), r.stderr
    assert needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_database_still_answers_after_an_error(tmp_path):
    db = str(tmp_path / "db")
    assert run("sql", db, "CREATE TABLE t (x UInt8) ORDER BY x; INSERT INTO t VALUES (1)").returncode == 0
    bad = run("sql", db, "INSERT INTO t VALUES (300)")  # out of range for UInt8
    assert bad.returncode == 1 and "error:" in bad.stderr, bad.stderr
    ok = run("sql", db, "SELECT count() FROM t")
    assert ok.returncode == 0 and ok.stdout == "1\n", ok.stdout


def test_missing_sql_file_is_a_clean_error(tmp_path):
    r = run("sql", str(tmp_path / "db"), "-f", str(tmp_path / "nope.sql"))
    assert r.returncode == 1 and r.stderr.startswith("error: cannot read"), r.stderr


def test_main_returns_codes_in_process(tmp_path, capsys):
    assert main(["sql", str(tmp_path / "db"), "SELECT 1 +"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "line 1" in err, err


def test_format_table_golden():
    got = format_table(["a", "long_name"], [(1, None), (22, b"x")])
    assert got.splitlines() == [
        "┌────┬───────────┐",
        "│ a  │ long_name │",
        "├────┼───────────┤",
        "│ 1  │ NULL      │",
        "│ 22 │ x         │",
        "└────┴───────────┘",
    ], got


def test_demo_runs_end_to_end(tmp_path):
    r = run("demo", str(tmp_path / "demo"), "--rows", "30000")
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ("01_hastoken_rare", "06_trace_eq", "15_explain"):
        assert name in r.stdout, f"{name} missing from the demo summary"
    assert "granules kept/total" in r.stdout


@pytest.mark.parametrize("sub", ["bench", "advise", "build"])
def test_delegated_subcommands_show_their_own_help(sub):
    r = run(sub, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: skipidx {sub}"), r.stdout[:200]


_TOKENS = ["sql", "db", "SELECT 1", "", "x y", "--format", "-F", "TSV", "JSON", "--stats", "--time", "--st",
           "--form", "-q", "--query", "-f", "--file", "q.sql", "-", "--", "-1", "-FTSV", "--format=CSV",
           "--help", "-h", "--version", "demo", "--rows", "5"]
#: what the parser-free path reads (most argv of these only take it)
_COMMON = ["db", "SELECT 1", "", "TSV", "--format", "-F", "--stats", "--time"]


def _argparse_args(argv):
    from skipidx.apps.cli import build_parser

    try:
        return build_parser().parse_args(argv)
    except SystemExit:
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens=st.lists(st.sampled_from(_TOKENS), max_size=7) | st.lists(st.sampled_from(_COMMON), max_size=7),
       lead=st.booleans())
def test_sql_fast_arguments_equal_argparse(tokens, lead):
    """The parser-free reading of `sql DBDIR SQL --format F ...` answers exactly as argparse
    does, and leaves to argparse everything else (its errors and help included)."""
    from skipidx.apps.cli import _sql_args

    argv = (["sql"] if lead else []) + tokens
    fast = _sql_args(argv)
    if fast is not None:
        ref = _argparse_args(argv)
        assert ref is not None, argv
        assert vars(fast) == vars(ref), argv


@pytest.mark.parametrize("argv", [["sql", "db", "SELECT 1"], ["sql", "db", "SELECT 1", "--format", "TSV"],
                                  ["sql", "--stats", "-F", "JSON", "db", "S", "--time"], ["sql", "db"],
                                  ["sql", "db", "--format", "CSV", "--format", "TSV"]])
def test_sql_fast_arguments_cover_the_common_calls(argv):
    from skipidx.apps.cli import _sql_args

    fast = _sql_args(argv)
    assert fast is not None and vars(fast) == vars(_argparse_args(argv)), argv


@pytest.mark.parametrize("argv", [["sql", "db", "--stats", "SELECT 1"], ["sql", "db", "--format", "-x"],
                                  ["sql", "db", "--format"], ["sql", "db", "S", "T"], ["sql"], ["sql", "db", "--bogus"]])
def test_sql_fast_arguments_leave_argparse_errors_to_argparse(argv):
    from skipidx.apps.cli import _sql_args

    assert _argparse_args(argv) is None and _sql_args(argv) is None, argv


def test_top_level_help_lists_every_command():
    r = run("--help")
    assert r.returncode == 0, r.stderr
    for name in ("sql", "demo", "bench", "advise", "build", "warm"):
        assert f"    {name}" in r.stdout, (name, r.stdout)
    r = run("sql", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: skipidx sql"), r.stdout[:200]


def test_program_exits_with_mains_code_and_flushed_output(tmp_path):
    """`python -m skipidx` (cli.run): main()'s exit code, every row written, errors on stderr."""
    db = str(tmp_path / "db")
    r = subprocess.run([sys.executable, "-m", "skipidx", "sql", db, "SELECT number FROM numbers(50000)"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(i) for i in range(50000)]
    r = subprocess.run([sys.executable, "-m", "skipidx", "sql", db, "SELECT 1 +"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1 and r.stderr.startswith("error: ") and r.stdout == "", r.stderr


@pytest.mark.parametrize("preset", [None, "3"])
def test_program_runs_blas_single_threaded_unless_told(tmp_path, preset):
    """`python -m skipidx` sets OPENBLAS_NUM_THREADS=1 before numpy loads (skipidx does no BLAS
    work; OpenBLAS's idle threads would spin); a value the caller set is kept."""
    code = ("import os, runpy, sys\nsys.argv = ['skipidx', 'sql', %r, 'SELECT 1']\n"
            "try:\n    runpy.run_module('skipidx', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)" % str(tmp_path / "db"))
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset:
        env["OPENBLAS_NUM_THREADS"] = preset
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout == "1\n", r.stderr
    assert r.stderr.strip().splitlines()[-1] == (preset or "1")
