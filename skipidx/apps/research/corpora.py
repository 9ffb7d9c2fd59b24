"""Corpora that nobody on this project wrote, built offline, seeded and reproducible.

* ``stdlib``: the Python standard library's source, one row per line of every
  ``.py`` file under ``sysconfig.get_paths()['stdlib']`` (site-packages
  excluded); files sorted by relative path, then shuffled by ``seed``, lines
  kept in file order (a code corpus with real locality).
* ``site-packages``: the installed third-party packages' ``.py`` source
  (the site-packages directory on ``sys.path`` with the most ``.py`` files:
  the project's venv), sampled as ``stdlib``; the description counts files
  and top-level packages and gives a sha256 of the files used.
* ``debian``: Debian's package descriptions from the apt list on this machine
  (``/var/lib/apt/lists/*_Packages[.lz4]``), one row per package: the short
  description and the long one joined by spaces; packages in the list's order
  (by name), a window of `rows` packages from a ``seed``-chosen start.

Each loader returns (pyarrow string array, description) where the description
names the source, its version / checksum, the seed and the rows kept.
"""
from __future__ import annotations

import glob
import hashlib
import os
import subprocess
import sys
import sysconfig

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError

CORPORA = ("stdlib", "site-packages", "debian")


def _source_lines(root: str, files: list[str], rows: int, seed: int) -> tuple[list[str], int, str]:
    """Lines of `files` (relative to `root`, sorted) in a `seed`-shuffled file order, whole files
    until `rows` lines; (lines, files used, sha256 prefix of the bytes of the files used)."""
    order = np.random.default_rng(seed).permutation(len(files))
    out: list[str] = []
    used = 0
    digest = hashlib.sha256()
    for i in order:
        with open(os.path.join(root, files[i]), "rb") as fh:
            raw = fh.read()
        digest.update(files[i].encode() + b"\0" + raw)
        out.extend(raw.decode("utf-8", "replace").splitlines())
        used += 1
        if len(out) >= rows:
            break
    return out[:rows], used, digest.hexdigest()[:16]


def stdlib_lines(rows: int, seed: int = 1) -> tuple[pa.Array, str]:
    root = sysconfig.get_paths()["stdlib"]
    files = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "**", "*.py"), recursive=True)
                   if "site-packages" not in p and "dist-packages" not in p)
    if not files:
        raise SkipidxError("no .py files under the standard library path", path=root)
    out, used, digest = _source_lines(root, files, rows, seed)
    desc = (f"Python {sys.version.split()[0]} standard library ({root}): {len(files)} .py files, "
            f"shuffled with seed {seed}, first {used} files' lines, {len(out):,} rows (one per source line); "
            f"sha256 of the files used {digest}")
    return pa.array(out, pa.string()), desc


def site_packages_root() -> str:
    """The installed site-packages directory on sys.path holding the most ``.py`` files (the
    project's .venv, or the shared venv a worktree's .venv points to)."""
    best, best_n = None, 0
    for p in dict.fromkeys(x for x in sys.path if os.path.basename(x.rstrip(os.sep)) in ("site-packages",
                                                                                            "dist-packages")):
        if not os.path.isdir(p):
            continue
        n = sum(1 for _ in glob.iglob(os.path.join(p, "**", "*.py"), recursive=True))
        if n > best_n:
            best, best_n = p, n
    if best is None:
        raise SkipidxError("no site-packages directory with .py files on sys.path")
    return best


def site_packages_lines(rows: int, seed: int = 1) -> tuple[pa.Array, str]:
    """Every installed package's ``.py`` source (tests and vendored copies included, as installed),
    one row per line; files sorted by relative path, shuffled by `seed`, lines in file order."""
    root = site_packages_root()
    files = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "**", "*.py"), recursive=True)
                   if not os.path.basename(p).startswith("__editable__"))
    tops = {f.split(os.sep, 1)[0] for f in files if os.sep in f}
    out, used, digest = _source_lines(root, files, rows, seed)
    desc = (f"installed site-packages source ({root}): {len(files):,} .py files in {len(tops)} top-level "
            f"packages, shuffled with seed {seed}, first {used} files' lines, {len(out):,} rows (one per source "
            f"line); sha256 of the files used {digest}")
    return pa.array(out, pa.string()), desc


def _packages_text() -> tuple[str, str]:
    cands = sorted(glob.glob("/var/lib/apt/lists/*_Packages*"))
    if not cands:
        raise SkipidxError("no Debian package list under /var/lib/apt/lists (run `apt-get update`)")
    path = cands[0]
    with open(path, "rb") as fh:
        raw = fh.read()
    digest = hashlib.sha256(raw).hexdigest()[:16]
    if path.endswith(".lz4"):
        try:
            raw = subprocess.run(["lz4cat", path], check=True, capture_output=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            raise SkipidxError(f"cannot decompress the package list with lz4cat: {e}", path=path) from None
    return raw.decode("utf-8", "replace"), f"{os.path.basename(path)} (sha256 {digest})"


def debian_descriptions(rows: int, seed: int = 1) -> tuple[pa.Array, str]:
    text, src = _packages_text()
    descs: list[str] = []
    for stanza in text.split("\n\n"):
        lines = stanza.split("\n")
        for j, ln in enumerate(lines):
            if ln.startswith("Description:"):
                body = [ln[len("Description:"):].strip()]
                for cont in lines[j + 1:]:
                    if not cont.startswith(" "):
                        break
                    c = cont.strip()
                    body.append("" if c == "." else c)
                descs.append(" ".join(b for b in body if b))
                break
    if not descs:
        raise SkipidxError("the package list holds no Description fields")
    n = min(rows, len(descs))
    start = int(np.random.default_rng(seed).integers(0, len(descs) - n + 1))
    desc = (f"Debian package descriptions from {src}: {len(descs):,} packages in list order, rows "
            f"{start:,}..{start + n - 1:,} (start drawn with seed {seed}), one row per package")
    return pa.array(descs[start:start + n], pa.string()), desc


def load_corpus(name: str, rows: int, seed: int = 1) -> tuple[pa.Array, str]:
    if rows < 1:
        raise SkipidxError(f"rows must be >= 1, got {rows}")
    if name == "stdlib":
        return stdlib_lines(rows, seed)
    if name == "debian":
        return debian_descriptions(rows, seed)
    if name == "site-packages":
        return site_packages_lines(rows, seed)
    if name == "demo" or name.startswith("demo"):
        from skipidx.apps.datagen import generate_table

        return generate_table(rows, seed=42).column("msg").combine_chunks(), \
            f"skipidx demo log table (synthetic, seed 42), {rows:,} rows"
    raise SkipidxError(f"unknown corpus {name!r}; expected one of {', '.join(CORPORA)} or demo")
