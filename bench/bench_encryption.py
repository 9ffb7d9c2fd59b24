"""Cost of sensitive columns: an encrypted table vs the same unencrypted one.

    flock /tmp/bench.lock python bench/bench_encryption.py              # 1M log rows
    flock /tmp/bench.lock python bench/bench_encryption.py --rows 10000000

The seeded log table (skipidx.apps.datagen) goes into two tables with the
same indexes; one declares ``encrypted_columns = 'msg:k2, trace_id:k1,
user_id:k1', footer_key = 'kf'`` (Parquet modular encryption of the data,
sealed indexes). Build = insert + OPTIMIZE FINAL (one part), the two
tables built alternately. Queries (alternating plain/encrypted, same
connection): warm median (index granules cached, data decrypted per read),
and cold (a new connection: index files read, decrypted and authenticated,
data keys unwrapped through the KMS). Answers are checked equal.
"""
from __future__ import annotations

import argparse
import base64
import os
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet.encryption as pe
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402

INDEXES = """,
    INDEX msg_tokens msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1"""
ENC = " SETTINGS encrypted_columns = 'msg:k2, trace_id:k1, user_id:k1', footer_key = 'kf'"


class MemoryKms(pe.KmsClient):
    """Master keys in memory; keys wrapped with AES-GCM (AAD = key id)."""

    def __init__(self) -> None:
        super().__init__()
        self.keys = {k: os.urandom(16) for k in ("kf", "k1", "k2")}

    def wrap_key(self, key_bytes, master_key_identifier):
        n = os.urandom(12)
        return base64.b64encode(n + AESGCM(self.keys[master_key_identifier]).encrypt(
            n, bytes(key_bytes), master_key_identifier.encode()))

    def unwrap_key(self, wrapped_key, master_key_identifier):
        raw = base64.b64decode(wrapped_key)
        return AESGCM(self.keys[master_key_identifier]).decrypt(raw[:12], raw[12:], master_key_identifier.encode())


def build(path: str, data: pa.Table, kms, encrypted: bool) -> float:
    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    with skipidx.connect(path, kms=kms) as db:
        db.sql(datagen.SCHEMA_SQL.format(table="logs", indexes=INDEXES) + (ENC if encrypted else ""))
        db.insert("logs", data)
        db.sql("OPTIMIZE TABLE logs FINAL")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--builds", type=int, default=2)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    root = a.dir or tempfile.mkdtemp(prefix="bench-enc-")
    data = datagen.generate_table(a.rows, 42)
    kms = MemoryKms()
    paths = {"plain": os.path.join(root, "plain"), "enc": os.path.join(root, "enc")}
    builds: dict[str, list[float]] = {"plain": [], "enc": []}
    for r in range(a.builds):
        for k in (("plain", "enc") if r % 2 == 0 else ("enc", "plain")):   # alternate who goes first
            builds[k].append(build(paths[k], data, kms, k == "enc"))
    traces = data.column("trace_id").to_pylist()
    users = data.column("user_id").to_pylist()
    step = max(1, a.rows // 10)
    queries = {
        "hasToken rare": f"SELECT count() FROM logs WHERE hasToken(msg, '{datagen.RARE_TOKEN}')",
        "trace_id =": f"SELECT count() FROM logs WHERE trace_id = '{traces[a.rows // 3]}'",
        "trace_id IN (5)": "SELECT count() FROM logs WHERE trace_id IN ("
                           + ", ".join(f"'{traces[i]}'" for i in range(7, a.rows, a.rows // 5)) + ")",
        "user_id IN (10)": "SELECT count() FROM logs WHERE user_id IN ("
                           + ", ".join(str(users[i]) for i in range(3, a.rows, step)) + ")",
        "non-selective LIKE": "SELECT count() FROM logs WHERE msg LIKE '%timeout%'",
    }
    dbs = {k: skipidx.connect(paths[k], kms=kms) for k in paths}
    print(f"rows {a.rows:,}  load {os.getloadavg()[0]:.2f}  (uptime: {os.popen('uptime').read().strip()})")
    print(f"build (insert + OPTIMIZE FINAL) s: plain {statistics.median(builds['plain']):.2f}  "
          f"enc {statistics.median(builds['enc']):.2f}  ratio "
          f"{statistics.median(builds['enc']) / statistics.median(builds['plain']):.2f}x")
    print(f"{'query':22s} {'plain ms':>9s} {'enc ms':>9s} {'ratio':>6s}   {'cold plain':>10s} {'cold enc':>9s} "
          f"{'ratio':>6s}  granules")
    for name, q in queries.items():
        cold: dict[str, list[float]] = {"plain": [], "enc": []}
        for _ in range(3):
            for k in paths:
                with skipidx.connect(paths[k], kms=kms) as fresh:
                    t0 = time.perf_counter()
                    fresh.sql(q).fetchall()
                    cold[k].append((time.perf_counter() - t0) * 1e3)
        warm: dict[str, list[float]] = {"plain": [], "enc": []}
        answers = {}
        for k in paths:
            answers[k] = dbs[k].sql(q).fetchall()   # warm-up
        assert answers["plain"] == answers["enc"], (name, answers)
        for _ in range(a.repeat):
            for k in paths:
                t0 = time.perf_counter()
                r = dbs[k].sql(q)
                r.fetchall()
                warm[k].append((time.perf_counter() - t0) * 1e3)
        st = r.stats
        wp, we = statistics.median(warm["plain"]), statistics.median(warm["enc"])
        cp, ce = statistics.median(cold["plain"]), statistics.median(cold["enc"])
        print(f"{name:22s} {wp:9.2f} {we:9.2f} {we / wp:5.2f}x   {cp:10.1f} {ce:9.1f} {ce / cp:5.2f}x  "
              f"{st.granules_selected}/{st.granules_total}")
    for db in dbs.values():
        db.close()
    if a.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
