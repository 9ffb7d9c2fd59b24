"""A third-party tokenizer plugin, installed as a separate distribution, used end to end.

``tests/plugin_dist`` is a tiny distribution (``skipidx-words-lower``) whose
``pyproject.toml`` registers ``words_lower`` in the ``skipidx.tokenizers``
entry-point group. The test installs it into a temporary directory — with
``pip install --no-deps --no-build-isolation --no-index --target`` when the
environment's build backend can build it offline, otherwise by writing the
same ``.dist-info`` (METADATA, entry_points.txt, RECORD) from its
``pyproject.toml`` — puts that directory on ``sys.path`` and lets
``importlib.metadata`` discover it, exactly as for a plugin from PyPI.
"""
from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from skipidx.core.errors import SkipidxError
from skipidx.core.tokenizer_api import TokenRequirement, get_tokenizer, known_tokenizers, refresh_tokenizers

PLUGIN_SRC = Path(__file__).parents[1] / "plugin_dist"
DIST_NAME = "skipidx-words-lower"


def _load_pyproject(path: Path) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads(path.read_text())


def _write_dist_info(src: Path, target: Path) -> None:
    """Install by hand what a wheel install writes: the module and its .dist-info."""
    meta = _load_pyproject(src / "pyproject.toml")["project"]
    modules = _load_pyproject(src / "pyproject.toml")["tool"]["setuptools"]["py-modules"]
    for m in modules:
        shutil.copy(src / f"{m}.py", target / f"{m}.py")
    info = target / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
        f"Summary: {meta.get('description', '')}\n")
    eps = ["[" + group + "]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items())
           for group, entries in meta["entry-points"].items()]
    (info / "entry_points.txt").write_text("\n".join(eps))
    (info / "INSTALLER").write_text("skipidx-tests\n")
    files = [f"{m}.py" for m in modules] + [f"{info.name}/{f}" for f in ("METADATA", "entry_points.txt", "INSTALLER")]
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files + [f"{info.name}/RECORD"]))


def _install(tmp: Path) -> tuple[Path, str]:
    src = tmp / "src"
    shutil.copytree(PLUGIN_SRC, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp / "site"
    target.mkdir()
    try:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                            "--no-index", "--disable-pip-version-check", "--quiet", "--target", str(target),
                            str(src)], capture_output=True, text=True, timeout=180)
        if r.returncode == 0 and list(target.glob("*.dist-info/entry_points.txt")):
            return target, "pip"
    except (OSError, subprocess.TimeoutExpired):
        pass
    shutil.rmtree(target)
    target.mkdir()
    _write_dist_info(src, target)
    return target, "dist-info"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    target, how = _install(tmp_path_factory.mktemp("plugin"))
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    refresh_tokenizers()
    try:
        yield target, how
    finally:
        sys.path.remove(str(target))
        sys.modules.pop("skipidx_words_lower", None)
        refresh_tokenizers()


def test_discovered_through_entry_points(plugin):
    target, how = plugin
    assert "words_lower" in known_tokenizers(), f"installed via {how} into {target}"
    eps = [ep for ep in importlib.metadata.entry_points(group="skipidx.tokenizers") if ep.name == "words_lower"]
    assert len(eps) == 1 and eps[0].dist is not None and eps[0].dist.name == DIST_NAME
    tok = get_tokenizer("words_lower", min_len=3)
    assert tok.name == "words_lower" and tok.version == "1" and tok.params == {"min_len": 3}
    assert type(tok).__module__ == "skipidx_words_lower"
    assert Path(sys.modules["skipidx_words_lower"].__file__).parent == target


def test_fresh_process_discovers_plugin(plugin):
    target, _ = plugin
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(target)] + sys.path))
    r = subprocess.run([sys.executable, "-c",
                        "from skipidx.core.tokenizer_api import known_tokenizers; print(','.join(known_tokenizers()))"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "words_lower" in r.stdout.strip().split(","), r.stdout


@pytest.mark.parametrize("params,match", [
    ({"min_len": 0}, "min_len must be an integer"),
    ({"min_len": "3"}, "min_len must be an integer"),
    ({"mode": "x"}, "takes only min_len"),
], ids=["zero", "string", "unknown"])
def test_plugin_bad_params(plugin, params, match):
    with pytest.raises(SkipidxError, match=match):
        get_tokenizer("words_lower", **params)


def test_unknown_name_lists_the_plugin(plugin):
    with pytest.raises(SkipidxError, match="words_lower"):
        get_tokenizer("words_upper")


def test_plugin_index_side(plugin):
    tok = get_tokenizer("words_lower", min_len=3)
    arr = pa.array(["Connection TIMEOUT to db-01", None, "ok", "Ünïcode Wörds, go"])
    tk = tok.tokenize(arr)
    assert list(zip(tk.rows.tolist(), tk.to_pylist())) == [
        (0, b"connection"), (0, b"timeout"), (3, "Ünïcode".encode()), (3, "wörds".encode())]
    rows, hashes = tok.hash_column(pa.chunked_array([arr[:2], arr[2:]]), 99)
    assert rows.tolist() == [0, 0, 3, 3]
    assert hashes.tolist() == [xxhash.xxh64_intdigest(t, 99) for t in tk.to_pylist()]
    assert hashes.dtype == np.uint64


def test_plugin_query_side(plugin):
    tok = get_tokenizer("words_lower", min_len=3)
    assert tok.requirement("hasToken", (b"Timeout",)) == TokenRequirement(((b"timeout",),))
    assert tok.requirement("hasToken", (b"ok",)) is None, "words shorter than min_len are not indexed"
    assert tok.requirement("like", (b"%Connection TIMEOUT to%",)) == TokenRequirement(((b"timeout",),))
    assert tok.requirement("in", ((b"A Foo", b"bar"),)) == TokenRequirement(((b"foo",), (b"bar",)))
    with pytest.raises(SkipidxError, match="Needle must not contain"):
        tok.requirement("hasToken", (b"a b",))


def test_plugin_index_in_the_engine(plugin, tmp_path):
    import skipidx

    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]
    msgs = [f"Request {words[i % 8].upper()} served in {i % 97} ms" for i in range(4000)]
    msgs[2500] = "Connection TIMEOUT talking to db-01"
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE logs (id UInt64, msg String, "
               "INDEX w msg TYPE sbbf('words_lower', min_len = 3) GRANULARITY 1) "
               "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 256")
        assert db.insert("logs", pa.table({"id": pa.array(range(4000), pa.uint64()), "msg": msgs})) == 4000
        res = db.sql("SELECT id FROM logs WHERE hasToken(msg, 'TIMEOUT')")
        assert res.fetchall() == [(2500,)]
        st = res.stats
        assert st.granules_total == 16
        assert st.granules_selected == 1, f"the plugin's index should keep one granule of 16: {st}"
        res = db.sql("SELECT count() FROM logs WHERE msg LIKE '%served in 5 ms%' OR hasToken(msg, 'GAMMA')")
        assert res.fetchall() == [(sum(("served in 5 ms" in m) or (" GAMMA " in m) for m in msgs),)]
