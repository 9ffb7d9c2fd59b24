"""The import contracts (pyproject.toml, ``[tool.importlinter]``) break on a real upward
import: a copy of the package with one injected import fails ``lint-imports`` and names it.
(tests/test_layers.py checks that the package itself keeps them.)"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_LINT = ("import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")


def _copy_with(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """lint-imports over a copy of skipidx/ and tokenizers/ (as skipidx_tokenizers/) with
    `line` appended to `module` (a path under the copy); the copy is first on the path."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "skipidx", tmp_path / "skipidx", ignore=ignore)
    shutil.copytree(ROOT / "tokenizers", tmp_path / "skipidx_tokenizers", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + "\n" + line + "\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    return subprocess.run([sys.executable, "-c", _LINT], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_unchanged_copy_keeps_the_contracts(tmp_path):
    r = _copy_with(tmp_path, "skipidx/core/errors.py", "# nothing injected")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("module, line, says", [
    ("skipidx/core/errors.py", "import skipidx.apps.demo",
     ["skipidx.core is not allowed to import skipidx.apps", "skipidx.core.errors -> skipidx.apps.demo"]),
    ("skipidx/store/part.py", "from skipidx.planner import prune",
     ["skipidx.store is not allowed to import skipidx.planner", "skipidx.store.part -> skipidx.planner.prune"]),
    ("skipidx/indexes/bloom.py", "from skipidx_tokenizers import _arrow",
     ["skipidx.indexes.bloom -> skipidx_tokenizers._arrow"]),
], ids=["core->apps", "store->planner", "indexes->plugin private"])
def test_an_injected_upward_import_breaks_a_contract(tmp_path, module, line, says):
    r = _copy_with(tmp_path, module, line)
    assert r.returncode != 0, r.stdout
    for s in says:
        assert s in r.stdout, r.stdout
