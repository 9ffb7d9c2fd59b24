"""A seeded file-mutation fuzzer for a table directory (used by
tests/test_file_fuzz.py and bench/fuzz_files.py).

Each case copies a template database, damages one file -- state.json, a
part manifest, an index file or a Parquet footer -- and then *recomputes every
checksum above it* (the file's block sums in its manifest, the manifest's hash
in the state, the state's own checksum), as a hand edit, another tool or
damage before the manifest was written would. So the damage reaches the
parsers behind the checksums. Statements then run on it in a worker process:
each must give an answer or raise SkipidxError; any other exception is a
failure, and a worker that dies (abort, segfault) or hangs is a crash.

The worker runs many cases in a row (the import is paid once); the parent
hears which case each worker is on, so a crash is pinned to its case and a
new worker resumes after it.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import xxhash

QUERIES = [
    "SELECT count() FROM t",
    "SELECT count() FROM t WHERE hasToken(msg, 'w3')",
    "SELECT count() FROM t WHERE msg LIKE '%m1%'",
    "SELECT id FROM t WHERE id IN (5, 77, 300) ORDER BY id",
    "SELECT count() FROM t WHERE s = 'v3'",
    "SELECT count() FROM t WHERE s IN ('v1', 'v9')",
    "SELECT sum(id) FROM t WHERE id > 100",
    "SELECT count() FROM t WHERE lvl IS NULL",
    "SELECT * FROM t WHERE id < 3 ORDER BY id",
    "SHOW PARTS t",
    "INSERT INTO t VALUES (100000, 'm x w3', 'v3', NULL)",
    "OPTIMIZE TABLE t FINAL",
    "ALTER TABLE t ATTACH PARTS",
    "SELECT count() FROM t",
]

TARGETS = ("state", "manifest", "index", "footer", "data")


def make_template(path: str) -> None:
    """The database every case starts from: 3 parts, five index types."""
    import numpy as np
    import pyarrow as pa

    import skipidx

    db = skipidx.connect(path)
    db.sql("CREATE TABLE t (id UInt64, msg String, s LowCardinality(String), lvl Nullable(String), "
           "INDEX tk msg TYPE tokenbf_v1(512, 2, 0) GRANULARITY 1, "
           "INDEX ng msg TYPE ngrambf_v1(3, 512, 2, 0) GRANULARITY 2, "
           "INDEX bf s TYPE bloom_filter(0.01) GRANULARITY 1, "
           "INDEX mm id TYPE minmax GRANULARITY 1, "
           "INDEX st lvl TYPE set(10) GRANULARITY 1) "
           "ORDER BY id SETTINGS index_granularity = 32, background_merges = 0")
    for k in range(3):
        ids = np.arange(k * 200, k * 200 + 200, dtype=np.uint64)
        db.insert("t", pa.table({
            "id": pa.array(ids),
            "msg": pa.array([f"m{i} w{i % 7} é" for i in ids.tolist()]),
            "s": pa.array([f"v{i % 11}" for i in ids.tolist()]),
            "lvl": pa.array([None if i % 5 == 0 else ("INFO", "WARN")[i % 2] for i in ids.tolist()]),
        }))
    db.close()


# ---------------------------------------------------------------- mutation
def _canonical(body) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _weird(rng: random.Random):
    return rng.choice([None, True, -1, 0, 2 ** 31, 2 ** 63, 2 ** 70, -2 ** 70, 1e308, float("nan") if False else 0.5,
                       "", "x" * 3, "\udcff" if False else "\u00ff", [], [[]], {}, {"a": []}, [1, "a"], "../../x",
                       "p_0", 10 ** 30])


def _mutate_json(obj, rng: random.Random, depth: int = 0):
    """Replace, delete or retype one randomly chosen value somewhere in `obj`."""
    if isinstance(obj, dict) and obj:
        k = rng.choice(sorted(obj, key=str))
        r = rng.random()
        if r < 0.15 and depth > 0:
            del obj[k]
        elif r < 0.55 and isinstance(obj[k], (dict, list)) and obj[k]:
            _mutate_json(obj[k], rng, depth + 1)
        else:
            obj[k] = _weird(rng)
    elif isinstance(obj, list) and obj:
        i = rng.randrange(len(obj))
        r = rng.random()
        if r < 0.1:
            del obj[i]
        elif r < 0.2:
            obj.append(obj[i] if rng.random() < 0.5 else _weird(rng))
        elif r < 0.6 and isinstance(obj[i], (dict, list)) and obj[i]:
            _mutate_json(obj[i], rng, depth + 1)
        else:
            obj[i] = _weird(rng)
    return obj


def _mutate_bytes(raw: bytes, rng: random.Random, lo: int = 0, hi: int | None = None) -> bytes:
    b = bytearray(raw)
    hi = len(b) if hi is None else hi
    if hi <= lo:
        return bytes(b)
    r = rng.random()
    if r < 0.5:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(lo, hi)
            b[i] ^= 1 << rng.randrange(8)
    elif r < 0.8:
        i = rng.randrange(lo, hi)
        n = rng.randint(1, 8)
        b[i:i + n] = bytes(rng.randrange(256) for _ in range(n))
    elif r < 0.9:
        i = rng.randrange(lo, hi)
        b[i:i + 4] = rng.choice([b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00"])
    else:
        cut = rng.randrange(lo, hi)
        del b[cut:cut + rng.randint(1, 64)]
    return bytes(b)


def _file_sum_json(path: str, block_size: int) -> dict:
    blocks = []
    size = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(block_size)
            if not chunk:
                break
            size += len(chunk)
            blocks.append(xxhash.xxh3_128_hexdigest(chunk))
    if not blocks:
        blocks.append(xxhash.xxh3_128_hexdigest(b""))
    return {"size": size, "block_size": block_size, "xxh3_128": blocks}


def _load_state(tdir: str) -> dict:
    with open(os.path.join(tdir, "state.json"), "rb") as f:
        return json.loads(f.read())


def _write_state(tdir: str, doc: dict) -> None:
    doc["xxh3_128"] = xxhash.xxh3_128_hexdigest(_canonical(doc["state"]))
    data = json.dumps(doc).encode()
    for n in ("state.json", "state.backup.json"):
        with open(os.path.join(tdir, n), "wb") as f:
            f.write(data)


def mutate(db_dir: str, seed: int) -> str:
    """Damage one file of table t under `db_dir` (checksums recomputed); a description."""
    rng = random.Random(seed)
    tdir = os.path.join(db_dir, "t")
    target = TARGETS[seed % len(TARGETS)]
    doc = _load_state(tdir)
    parts = doc["state"]["parts"]
    pi = rng.randrange(len(parts))
    pname = parts[pi]["name"]
    pdir = os.path.join(tdir, "parts", pname)
    if target == "state":
        if rng.random() < 0.7:
            _mutate_json(doc["state"], rng)
            _write_state(tdir, doc)
        else:
            raw = json.dumps(doc).encode()
            data = _mutate_bytes(raw, rng)
            for n in ("state.json", "state.backup.json"):
                with open(os.path.join(tdir, n), "wb") as f:
                    f.write(data)
        return "state.json"
    mpath = os.path.join(pdir, "manifest.json")
    with open(mpath, "rb") as f:
        man = json.loads(f.read())
    if target == "manifest":
        _mutate_json(man, rng)
        what = "manifest"
    else:
        if target == "index":
            files = sorted(f for f in man["files"] if f.startswith("idx."))
            fname = rng.choice(files)
            lo, hi = 0, None
        else:
            fname = "data.parquet"
            size = os.path.getsize(os.path.join(pdir, fname))
            with open(os.path.join(pdir, fname), "rb") as f:
                f.seek(size - 8)
                flen = int.from_bytes(f.read(4), "little")
            if target == "footer":
                lo, hi = max(4, size - 8 - flen), size   # the Thrift footer, its length and magic
            else:
                lo, hi = 4, max(5, size - 8 - flen)       # the column chunks
        fpath = os.path.join(pdir, fname)
        with open(fpath, "rb") as f:
            raw = f.read()
        new = _mutate_bytes(raw, rng, lo, hi)
        os.unlink(fpath)   # files are hard-linked between parts: never write through a link
        with open(fpath, "wb") as f:
            f.write(new)
        bs = man["files"][fname].get("block_size", 1 << 20)
        man["files"][fname] = _file_sum_json(fpath, bs if isinstance(bs, int) and 0 < bs < 1 << 30 else 1 << 20)
        what = f"{fname}"
    raw = json.dumps(man).encode()
    os.unlink(mpath)
    with open(mpath, "wb") as f:
        f.write(raw)
    parts[pi]["manifest_xxh3_128"] = xxhash.xxh3_128_hexdigest(raw)
    _write_state(tdir, doc)
    return f"{pname}/{what}"


# ---------------------------------------------------------------- worker
def _worker(template: str, work: str) -> None:
    """Read case seeds from stdin; for each: 'START seed', then 'DONE seed json'."""
    import skipidx
    from skipidx import SkipidxError
    from skipidx.store.part import clear_caches

    for line in sys.stdin:
        seed = int(line)
        print(f"START {seed}", flush=True)
        case = os.path.join(work, f"c{seed}")
        shutil.copytree(template, case, symlinks=True)
        res = {"seed": seed, "ok": 0, "skipidx_error": 0, "other": []}
        try:
            res["target"] = mutate(case, seed)
        except Exception as e:   # noqa: BLE001 - the mutation itself failed: skip the case
            res["target"] = f"unmutated ({type(e).__name__})"
        clear_caches()
        db = None
        try:
            db = skipidx.connect(case)
            for q in QUERIES:
                try:
                    r = db.sql(q)
                    r.fetchall()
                    res["ok"] += 1
                except SkipidxError as e:
                    res["skipidx_error"] += 1
                    if e.path is None and "t" not in str(e):
                        res.setdefault("unnamed", []).append(str(e)[:200])
                except Exception as e:   # noqa: BLE001 - what the fuzzer looks for
                    res["other"].append(f"{q}: {type(e).__name__}: {str(e)[:200]}")
        except SkipidxError:
            res["skipidx_error"] += 1
        except Exception as e:   # noqa: BLE001
            res["other"].append(f"connect: {type(e).__name__}: {str(e)[:200]}")
        finally:
            if db is not None:
                try:
                    db.close()
                except Exception as e:   # noqa: BLE001
                    res["other"].append(f"close: {type(e).__name__}: {str(e)[:200]}")
        shutil.rmtree(case, ignore_errors=True)
        print("DONE " + json.dumps(res), flush=True)


def _new_summary() -> dict:
    return {"cases": 0, "non_skipidx_error": 0, "crashes": 0, "hangs": 0, "statements_ok": 0,
            "statements_skipidx_error": 0, "failures": []}


def _run_group(seeds, template: str, work: str, env: dict, case_timeout: float, log) -> dict:
    import selectors

    summary = _new_summary()
    todo = list(seeds)
    while todo:
        proc = subprocess.Popen(
            [sys.executable, "-c", f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
             f"import _file_fuzz; _file_fuzz._worker({template!r}, {work!r})"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        proc.stdin.write("".join(f"{s}\n" for s in todo))
        proc.stdin.close()
        current = None
        started = time.monotonic()
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            if not sel.select(timeout=1.0):
                if current is not None and time.monotonic() - started > case_timeout:
                    proc.kill()
                    proc.wait()
                    summary["hangs"] += 1
                    summary["cases"] += 1
                    summary["failures"].append({"seed": current, "hang": True})
                    todo = todo[todo.index(current) + 1:]
                    break
                continue
            line = proc.stdout.readline()
            if not line:
                rc = proc.wait()
                if current is not None:
                    summary["crashes"] += 1
                    summary["cases"] += 1
                    summary["failures"].append({"seed": current, "crash": rc, "stderr": proc.stderr.read()[-800:]})
                    todo = todo[todo.index(current) + 1:]
                else:
                    todo = []
                break
            if line.startswith("START "):
                current = int(line.split()[1])
                started = time.monotonic()
            elif line.startswith("DONE "):
                res = json.loads(line[5:])
                summary["cases"] += 1
                summary["statements_ok"] += res["ok"]
                summary["statements_skipidx_error"] += res["skipidx_error"]
                if res["other"]:
                    summary["non_skipidx_error"] += 1
                    summary["failures"].append(res)
                if log is not None:
                    log(res)
                current = None
                todo = todo[todo.index(res["seed"]) + 1:]
        sel.close()
        proc.stderr.close()
        proc.stdout.close()
    return summary


def run_cases(seeds, *, workers: int = 1, case_timeout: float = 120.0, log=None) -> dict:
    """Run the cases in `workers` worker processes at a time; the summary
    (counts and the failing cases)."""
    from concurrent.futures import ThreadPoolExecutor

    seeds = list(seeds)
    work = tempfile.mkdtemp(prefix="skipidx-fuzz-")
    template = os.path.join(work, "template")
    env = dict(os.environ, SKIPIDX_MERGES="off")
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
                    f"import _file_fuzz; _file_fuzz.make_template({template!r})"], check=True, env=env)
    try:
        groups = [seeds[i::workers] for i in range(workers)]
        with ThreadPoolExecutor(max_workers=workers) as ex:
            parts = list(ex.map(lambda g: _run_group(g, template, work, env, case_timeout, log), groups))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = _new_summary()
    for p in parts:
        for k, v in p.items():
            out[k] = out[k] + v
    return out


if __name__ == "__main__":   # pragma: no cover - a worker entry for debugging one case
    print(json.dumps(run_cases([int(a) for a in sys.argv[1:]]), indent=1))
