"""The layers are an import-linter contract (pyproject.toml): imports point only down,
and no two modules of the query stages import each other."""
from __future__ import annotations

import textwrap
from pathlib import Path

import grimp
from importlinter import cli

ROOT = Path(__file__).resolve().parents[1]


def test_layers_contract_holds():
    assert cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_an_upward_import_breaks_the_contract(tmp_path, monkeypatch):
    pkg = tmp_path / "layered_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "high.py").write_text("")
    (pkg / "low.py").write_text("import layered_demo.high\n")   # points up
    cfg = tmp_path / "contract.toml"
    cfg.write_text(textwrap.dedent("""
        [tool.importlinter]
        root_packages = ["layered_demo"]
        [[tool.importlinter.contracts]]
        name = "demo layers"
        type = "layers"
        layers = ["layered_demo.high", "layered_demo.low"]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli.lint_imports(config_filename=str(cfg), no_cache=True) == 1


def test_no_import_cycles_in_the_query_stages():
    g = grimp.build_graph("skipidx")
    stages = ("skipidx.expr", "skipidx.planner", "skipidx.execution", "skipidx.engine.query")
    mods = [m for m in g.modules if m.startswith(stages)]
    cycles = sorted({tuple(sorted((m, d))) for m in mods for d in g.find_modules_directly_imported_by(m)
                     if d.startswith(stages) and m in g.find_modules_that_directly_import(d)
                     and m in g.find_modules_directly_imported_by(d)})
    assert cycles == []
    # nor longer ones: every stage module's imports reach back to it nowhere
    for m in mods:
        upstream = g.find_upstream_modules(m)
        assert m not in upstream, m


def test_no_two_modules_import_each_other():
    """Anywhere in skipidx (function-level imports included, grimp sees them): no pair of
    modules imports each other."""
    g = grimp.build_graph("skipidx")
    pairs = sorted({tuple(sorted((m, d))) for m in g.modules for d in g.find_modules_directly_imported_by(m)
                    if m in g.find_modules_directly_imported_by(d)})
    assert pairs == [], pairs
