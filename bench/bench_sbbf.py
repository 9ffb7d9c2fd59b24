"""SBBF and Parquet-hash throughput, against a per-value Python baseline measured in the same run.

    .venv/bin/python bench/bench_sbbf.py            # full sizes (1M and 10M hashes)
    .venv/bin/python bench/bench_sbbf.py --quick    # 10x smaller, for a smoke run

Every figure is the best of a few repeats (wall clock, one thread). Three
implementations per row where they exist:

- ``skipidx``: what the library runs (numba kernels in ``skipidx.core._kernels``);
- ``numpy``: the best straightforward numpy formulation (``np.bitwise_or.at``
  for insert, a gather for check, XXH64 in uint64 array arithmetic), shown
  because it is why the library uses numba;
- ``python``: one Python call per value (``array.to_pylist()`` then
  ``xxhash.xxh64_intdigest`` of the PLAIN bytes; the spec's block insert and
  check per hash on a list of ints), measured on a slice and reported as a rate.

The ratio column is skipidx / python.
"""
from __future__ import annotations

import argparse
import struct
import sys
import time
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from skipidx.core.hashing import parquet_xxh64
from skipidx.core.sbbf import SALT, SBBF, SBBFBank

M32 = 0xFFFFFFFF
SALT_PY = [int(s) for s in SALT]


def best(fn: Callable[[], object], repeat: int = 3) -> float:
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


# ------------------------------------------------------------ baselines

def py_insert(words: list[int], num_blocks: int, hashes: list[int]) -> None:
    for h in hashes:
        base = (((h >> 32) * num_blocks) >> 32) * 8
        key = h & M32
        for i in range(8):
            words[base + i] |= 1 << (((key * SALT_PY[i]) & M32) >> 27)


def py_check(words: list[int], num_blocks: int, hashes: list[int]) -> list[bool]:
    out = []
    for h in hashes:
        base = (((h >> 32) * num_blocks) >> 32) * 8
        key = h & M32
        ok = True
        for i in range(8):
            if not (words[base + i] >> (((key * SALT_PY[i]) & M32) >> 27)) & 1:
                ok = False
                break
        out.append(ok)
    return out


def np_masks(hashes: np.ndarray, num_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    block = ((hashes >> np.uint64(32)) * np.uint64(num_blocks)) >> np.uint64(32)
    key = (hashes & np.uint64(M32)).astype(np.uint32)
    bits = (key[:, None] * SALT[None, :]) >> np.uint32(27)  # uint32 products wrap mod 2**32
    idx = (block.astype(np.int64) * 8)[:, None] + np.arange(8)
    return idx, (np.uint32(1) << bits)


def np_insert(words: np.ndarray, num_blocks: int, hashes: np.ndarray) -> None:
    idx, masks = np_masks(hashes, num_blocks)
    np.bitwise_or.at(words, idx.ravel(), masks.ravel())  # unbuffered: repeated words all set


def np_check(words: np.ndarray, num_blocks: int, hashes: np.ndarray) -> np.ndarray:
    idx, masks = np_masks(hashes, num_blocks)
    return ((words[idx] & masks) != 0).all(axis=1)


P1, P2, P3, P4, P5 = (np.uint64(x) for x in (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                                             0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5))


def np_xxh64_int64(v: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of 8-byte values in numpy uint64 arithmetic."""
    x = v.view(np.uint64)
    with np.errstate(over="ignore"):
        k = x * P2
        k = (k << np.uint64(31)) | (k >> np.uint64(33))
        k *= P1
        h = (P5 + np.uint64(8)) ^ k
        h = ((h << np.uint64(27)) | (h >> np.uint64(37))) * P1 + P4
        h ^= h >> np.uint64(33)
        h *= P2
        h ^= h >> np.uint64(29)
        h *= P3
        h ^= h >> np.uint64(32)
    return h


def py_hash_int64(arr: pa.Array) -> list[int]:
    pack = struct.Struct("<q").pack
    return [xxhash.xxh64_intdigest(pack(v)) for v in arr.to_pylist()]


def py_hash_str(arr: pa.Array) -> list[int]:
    return [xxhash.xxh64_intdigest(v.encode()) for v in arr.to_pylist()]


# ------------------------------------------------------------------ data

def hex_strings(n: int, rng: np.random.Generator) -> pa.Array:
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    hexd = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    chars = np.empty((n, 32), dtype=np.uint8)
    chars[:, 0::2] = hexd[raw >> 4]
    chars[:, 1::2] = hexd[raw & 15]
    offsets = np.arange(0, 32 * n + 1, 32, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())])


def log_lines(n: int, rng: np.random.Generator) -> pa.Array:
    levels = np.array(["INFO ", "WARN ", "ERROR", "DEBUG"])
    paths = np.array(["/api/v1/orders", "/api/v1/users/login", "/healthz", "/api/v2/search?q=timeout",
                      "/static/app.js", "/api/v1/payments/refund"])
    lv = levels[rng.integers(0, 4, n)]
    pa_ = paths[rng.integers(0, len(paths), n)]
    ms = rng.integers(0, 60_000, n)
    rid = rng.integers(0, 2**48, n)
    lat = rng.integers(0, 5000, n)
    usr = rng.integers(0, 100_000, n)
    lines = [f"2026-11-21T08:{m // 1000 % 60:02d}:{m % 60:02d}.{m % 1000:03d}Z {l} [worker-{u % 16:02d}] "
             f"request_id={r:012x} user=u{u} GET {p} status=200 latency_ms={t}"
             for m, l, r, u, p, t in zip(ms.tolist(), lv.tolist(), rid.tolist(), usr.tolist(), pa_.tolist(),
                                         lat.tolist())]
    return pa.array(lines, pa.string())


# ------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10x smaller inputs")
    args = ap.parse_args(argv)
    scale = 10 if args.quick else 1
    sizes = [1_000_000 // scale, 10_000_000 // scale]
    py_n = 200_000 // scale  # the per-value Python baseline runs on this many values
    rng = np.random.default_rng(42)
    rows: list[tuple[str, int, float, float | None, float]] = []

    def row(name: str, n: int, t_lib: float, t_np: float | None, py_rate: float) -> None:
        rows.append((name, n, n / t_lib, (n / t_np) if t_np else None, py_rate))
        lib, nump = n / t_lib, (f"{n / t_np / 1e6:8.1f}" if t_np else "       -")
        print(f"  {name:<44} {n:>11,} {lib / 1e6:9.1f} {nump} {py_rate / 1e6:8.2f} {lib / py_rate:8.0f}x",
              flush=True)

    print(f"{'case':<46} {'values':>11} {'skipidx':>9} {'numpy':>8} {'python':>8} {'ratio':>9}")
    print(f"{'':<46} {'':>11} {'M/s':>9} {'M/s':>8} {'M/s':>8} {'lib/py':>9}")

    # Warm the JIT (cached on disk after the first run).
    SBBF(32).insert_hashes(np.zeros(1, np.uint64))
    SBBF(32).check_hashes(np.zeros(1, np.uint64))
    SBBFBank.fixed(2, 32).insert(np.zeros(1, np.int64), np.zeros(1, np.uint64))

    # --- single filters
    for nbytes, label in ((32 * 1024, "32 KiB"), (4 * 1024 * 1024, "4 MiB")):
        nb = nbytes // 32
        hp = rng.integers(0, 2**64, size=py_n, dtype=np.uint64).tolist()
        words_py = [0] * (nbytes // 4)
        py_ins = py_n / best(lambda: py_insert(words_py, nb, hp), 1)
        py_chk = py_n / best(lambda: py_check(words_py, nb, hp), 1)
        for n in sizes:
            h = rng.integers(0, 2**64, size=n, dtype=np.uint64)
            f = SBBF(nbytes)
            t_ins = best(lambda: f.insert_hashes(h))
            w = np.zeros(nbytes // 4, np.uint32)
            t_np_ins = best(lambda: np_insert(w, nb, h), 1) if n <= sizes[0] else None
            assert n > sizes[0] or np.array_equal(w, f.words)
            row(f"SBBF insert, {label}", n, t_ins, t_np_ins, py_ins)
            probe = rng.integers(0, 2**64, size=n, dtype=np.uint64)
            t_chk = best(lambda: f.check_hashes(probe))
            t_np_chk = best(lambda: np_check(f.words, nb, probe), 1) if n <= sizes[0] else None
            row(f"SBBF check, {label}", n, t_chk, t_np_chk, py_chk)

    # --- a bank of 1221 per-granule filters of 32 KiB (10M rows / 8192 per granule)
    n_gran = 1221
    bank = SBBFBank.fixed(n_gran, 32 * 1024)
    words_py = [[0] * (32 * 1024 // 4) for _ in range(4)]
    hp = rng.integers(0, 2**64, size=py_n, dtype=np.uint64).tolist()

    def py_bank_insert() -> None:
        per = len(hp) // 4
        for g in range(4):
            py_insert(words_py[g], 1024, hp[g * per:(g + 1) * per])

    py_bank = py_n / best(py_bank_insert, 1)
    for n in sizes:
        h = rng.integers(0, 2**64, size=n, dtype=np.uint64)
        ids = (np.arange(n, dtype=np.int64) * n_gran) // n  # granule by granule, as a part is built
        t = best(lambda: bank.insert(ids, h))
        row(f"bank insert, {n_gran} x 32 KiB", n, t, None, py_bank)
        t = best(lambda: bank.check_pairs(ids, h))
        row(f"bank check (own granule), {n_gran} x 32 KiB", n, t, None, py_bank)

    # --- one hash against every granule (the planner's question for `col = const`)
    n_gran2 = 10_000 // scale
    gran_bytes = 2048  # ~1000 distinct values per 8192-row granule at fpp 1 %
    bank2 = SBBFBank.fixed(n_gran2, gran_bytes)
    fill = rng.integers(0, 2**64, size=n_gran2 * 1000, dtype=np.uint64)
    bank2.insert(np.repeat(np.arange(n_gran2, dtype=np.int64), 1000), fill)
    one = fill[:1]
    t = best(lambda: bank2.check_all(one), 20)
    two = bank2.as_2d()
    wl = [two[g].tolist() for g in range(min(n_gran2, 2000))]
    hv = [int(one[0])]
    t_py = best(lambda: [py_check(w, gran_bytes // 32, hv) for w in wl], 1) / len(wl) * n_gran2
    row(f"1 hash vs all {n_gran2:,} granules ({gran_bytes} B)", n_gran2, t, None, n_gran2 / t_py)
    mask = bank2.check_all(one)
    assert mask[0], "the granule holding the value must be kept"
    print(f"    (one call: {t * 1e6:.0f} us for {n_gran2:,} granules, {mask.mean():.2%} kept)")

    # --- parquet_xxh64 over Arrow arrays
    n = sizes[-1]
    ints = pa.array(rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64))
    parquet_xxh64(ints.slice(0, 10))
    py_rate = py_n / best(lambda: py_hash_int64(ints.slice(0, py_n)), 1)
    t = best(lambda: parquet_xxh64(ints))
    t_np = best(lambda: np_xxh64_int64(ints.to_numpy()))
    assert np.array_equal(np_xxh64_int64(ints.slice(0, 1000).to_numpy()), parquet_xxh64(ints.slice(0, 1000)))
    row("parquet_xxh64 int64", n, t, t_np, py_rate)

    n_s = sizes[0] * 2
    hexs = hex_strings(n_s, rng)
    py_rate = py_n / best(lambda: py_hash_str(hexs.slice(0, py_n)), 1)
    t = best(lambda: parquet_xxh64(hexs))
    row("parquet_xxh64 32-byte hex strings", n_s, t, None, py_rate)

    logs = log_lines(sizes[0], rng)
    avg = float(pc.mean(pc.binary_length(logs)).as_py())
    py_rate = py_n / best(lambda: py_hash_str(logs.slice(0, py_n)), 1)
    t = best(lambda: parquet_xxh64(logs))
    row(f"parquet_xxh64 log lines (avg {avg:.0f} B)", len(logs), t, None, py_rate)
    print(f"    (log lines: {len(logs) * avg / t / 1e9:.2f} GB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
