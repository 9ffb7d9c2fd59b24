"""The `skipidx sql DBDIR` REPL driven through a pseudo-terminal (pexpect):
a multi-line query, an error that keeps the shell, Ctrl-C cancelling a
running query, \\q and Ctrl-D to leave; stdin and `-f -` without a terminal."""
from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

import skipidx

pexpect = pytest.importorskip("pexpect")
pytest.importorskip("prompt_toolkit")

PROMPT = r"skipidx :\)"


def _spawn(dbdir, tmp_path):
    env = dict(os.environ, SKIPIDX_HISTORY=str(tmp_path / "history"), TERM="xterm")
    env.pop("SKIPIDX_DEBUG", None)
    p = pexpect.spawn(sys.executable, ["-m", "skipidx", "sql", str(dbdir)], env=env, encoding="utf-8",
                      timeout=60, dimensions=(40, 200))
    p.expect(PROMPT)
    return p


def test_repl_multiline_error_cancel_and_exit(tmp_path):
    dbdir = tmp_path / "db"
    with skipidx.connect(str(dbdir)) as db:
        db.sql("CREATE TABLE t (s String) ORDER BY tuple()")
        base = pa.array(["lorem ipsum dolor sit amet " * 10 + str(i) for i in range(20000)])
        db.insert("t", pa.table({"s": pa.concat_arrays([base] * 10)}))
    p = _spawn(dbdir, tmp_path)
    # a statement over two lines: Enter before ';' continues the input
    p.send("SELECT count() AS n,\r")
    p.expect(":-]")
    p.send("  max(length(s)) AS m FROM t;\r")
    p.expect("200000")
    p.expect(PROMPT)
    # an error is printed and the shell stays
    p.send("SELECT nope FROM t;\r")
    p.expect("error: .*nope")
    p.expect(PROMPT)
    # Ctrl-C cancels the running statements (40 regex scans, seconds of work) and keeps the shell
    slow = "SELECT count() FROM t WHERE match(s, '(\\\\w+\\\\s+){30}9999'); " * 40
    p.send(slow + "\r")
    p.expect("│ +10 │")          # the first statement answered: the run is under way
    p.sendintr()
    p.expect("Query was cancelled")
    p.expect(PROMPT)
    p.send("SELECT 40 + 2 AS answer;\r")
    p.expect("42")
    p.expect(PROMPT)
    p.send("\\q\r")
    p.expect(pexpect.EOF)
    p.close()
    assert p.exitstatus == 0
    assert "count() AS n" in (tmp_path / "history").read_text()     # the history file keeps statements
    # Ctrl-D leaves too
    p = _spawn(dbdir, tmp_path)
    p.sendeof()
    p.expect(pexpect.EOF)
    p.close()
    assert p.exitstatus == 0


def test_sql_from_stdin_and_dash_f(tmp_path):
    db = str(tmp_path / "db")
    cmd = [sys.executable, "-m", "skipidx", "sql", db]
    r = subprocess.run(cmd, input="SELECT 1 AS x, 'a' AS y;\nSELECT 2", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "1\ta\n2\n", (r.stdout, r.stderr)
    r = subprocess.run(cmd + ["-f", "-", "--format", "JSONEachRow"], input="SELECT 1 AS x", capture_output=True,
                       text=True, timeout=120)
    assert r.stdout == '{"x":1}\n', r.stdout
    r = subprocess.run(cmd + ["SELECT {x:UInt8} + 1 AS y", "--param_x=41", "--format", "CSVWithNames", "--time"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == '"y"\n42\n', (r.stdout, r.stderr)
    assert float(r.stderr.strip().splitlines()[-1]) >= 0
    r = subprocess.run([sys.executable, "-m", "skipidx", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == f"skipidx {skipidx.__version__}"
    r = subprocess.run(cmd + ["SELECT 1", "--format", "XML"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.startswith("error: unknown output format")
