"""skipidx.spark.register: the module docstring's example runs as written in a
plain Python session (no PYSPARK_PYTHON set: the workers run the driver's
interpreter), and a table written from Spark without CREATE TABLE needs its
indexes option (a clear error otherwise)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import skipidx.apps.spark as spark_pkg

pytestmark = pytest.mark.spark


def _docstring_example() -> str:
    doc = spark_pkg.__doc__
    block = doc.split("this runs as written::", 1)[1].split("\n\n", 1)[1]
    lines = []
    for ln in block.splitlines():
        if ln.strip() and not ln.startswith("    "):
            break
        lines.append(ln[4:])
    return "\n".join(lines).strip() + "\n"


def test_docstring_example_runs_and_indexes_option_is_needed(tmp_path):
    pytest.importorskip("pyspark")
    code = _docstring_example()
    assert "register(spark)" in code and ".save(" in code
    code += textwrap_after
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=400,
                       env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "connection timeout" in r.stdout and "all good" not in r.stdout, r.stdout
    m = re.search(r"^NO_INDEXES: (.*)$", r.stdout, re.M)
    assert m and "indexes" in m.group(1) and "CREATE TABLE" in m.group(1), r.stdout[-2000:]
    assert os.path.isdir(tmp_path / "demo_db" / "logs") and not os.path.exists(tmp_path / "demo_db" / "plain")


textwrap_after = """
try:
    df.write.format("skipidx").mode("append").save("demo_db/plain")
    print("NO_INDEXES: written")
except Exception as e:
    print("NO_INDEXES: " + " ".join(str(e).split())[:2000])
spark.stop()
"""
