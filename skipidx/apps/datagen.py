"""A seeded, realistic log dataset (the demo's and the benchmarks' data).

Columns (ClickHouse types in brackets):

    id          UInt64       0..N-1
    ts          DateTime     increasing from 2024-01-01, ~10 rows/s with jitter
    level       LowCardinality(String)  DEBUG/INFO/WARN/ERROR (60/30/8/2 %)
    service     LowCardinality(String)  24 services, skewed
    trace_id    String       32 hex chars; a trace spans 1-8 nearby rows
    user_id     UInt64       1..2,000,000, skewed (a few heavy users)
    http_status Nullable(UInt16)  NULL for the first 10 % of the time range
                             (before the field existed), else 200/404/500...
    msg         String       60-200 bytes: a template plus words drawn from a
                             Zipf-distributed vocabulary of ~60k words with
                             some UTF-8 (café, Zürich, 東京, ошибка, emoji)

Planted needles make the demo's pruning readable: the token ``kraken`` is in
exactly ``RARE_ROWS`` rows spread over the table, ``zyzzyva`` is in none,
``timeout`` is frequent. Generation is whole-array (numpy + pyarrow.compute)
in batches, so 10M rows take seconds, not minutes.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

RARE_TOKEN = "kraken"
ABSENT_TOKEN = "zyzzyva"
FREQUENT_TOKEN = "timeout"
RARE_ROWS = 35

SCHEMA_SQL = """CREATE TABLE {table} (
    id UInt64,
    ts DateTime,
    level LowCardinality(String),
    service LowCardinality(String),
    trace_id String,
    user_id UInt64,
    http_status Nullable(UInt16),
    msg String{indexes}
) ENGINE = MergeTree ORDER BY ts"""

_SERVICES = np.array([
    "api", "auth", "billing", "cart", "catalog", "checkout", "db-proxy", "edge",
    "email", "feed", "gateway", "geo", "inventory", "ledger", "media", "notify",
    "orders", "payments", "profile", "queue", "search", "session", "shipping", "web",
])
_LEVELS = np.array(["DEBUG", "INFO", "WARN", "ERROR"])
_LEVEL_P = np.array([0.60, 0.30, 0.08, 0.02])
_STATUS = np.array([200, 201, 204, 301, 304, 400, 401, 403, 404, 429, 500, 502, 503], dtype=np.uint16)
_STATUS_P = np.array([0.70, 0.04, 0.03, 0.02, 0.04, 0.03, 0.02, 0.01, 0.06, 0.01, 0.02, 0.01, 0.01])
_VERBS = np.array(["GET", "POST", "PUT", "DELETE", "fetch", "store", "retry", "open", "close", "flush",
                   "connect", "resolve", "render", "index", "sync", "emit"])
_OBJECTS = np.array(["/api/v1/orders", "/api/v1/users", "/login", "/cart/items", "session", "cache",
                     "queue:events", "db:primary", "db:replica", "s3://media/bucket", "/search?q=",
                     "ws://edge/stream", "lock:ledger", "/healthz", "grpc:payments.Charge"])
_UTF8_WORDS = ["café", "naïve", "Zürich", "東京", "ошибка", "données", "größe", "señal", "😀ok", "北京",
               "résumé", "Ελλάδα", "ค่า", "ümlaut", "façade", "日本語", "παράδειγμα", "проверка"]
_FIXED_WORDS = [FREQUENT_TOKEN, "error", "failed", "connection", "refused", "retrying", "user", "request",
                "latency", "slow", "ok", "done", "started", "cache", "miss", "hit", "warning", "exceeded",
                "deadline", "upstream", "reset", "peer", "quota", "throttled", "unavailable"]


def _vocabulary(rng: np.random.Generator, size: int) -> np.ndarray:
    """Pronounceable words from syllables; fixed and UTF-8 words first (most frequent ranks)."""
    syll = np.array(["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "be", "da", "fi", "go", "hu",
                     "ja", "ke", "li", "mo", "nu", "pa", "qi", "re", "so", "tu", "wa", "xe", "yo", "zu",
                     "ar", "en", "il", "or", "ul", "st", "tr", "pl", "gr"])
    n_gen = size * 2
    parts = [syll[rng.integers(0, len(syll), n_gen)] for _ in range(4)]
    lens = rng.integers(2, 5, n_gen)
    words = np.where(lens >= 3, np.char.add(np.char.add(parts[0], parts[1]), parts[2]),
                     np.char.add(parts[0], parts[1]))
    words = np.where(lens >= 4, np.char.add(words, parts[3]), words)
    banned = {RARE_TOKEN, ABSENT_TOKEN}
    seen = set(_FIXED_WORDS) | set(_UTF8_WORDS) | banned
    out = list(_FIXED_WORDS)
    for w in words.tolist():
        if w not in seen and ABSENT_TOKEN not in w and RARE_TOKEN not in w:
            seen.add(w)
            out.append(w)
            if len(out) >= size - len(_UTF8_WORDS):
                break
    # UTF-8 words at moderate ranks so they are common enough to query
    for i, w in enumerate(_UTF8_WORDS):
        out.insert(40 + 7 * i, w)
    return np.array(out, dtype=object)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _hex32(hi: np.ndarray, lo: np.ndarray) -> pa.Array:
    """32 lowercase hex chars per row from two uint64 arrays, built over one byte buffer."""
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    shifts = np.arange(60, -4, -4, dtype=np.uint64)
    nib = np.concatenate([(hi[:, None] >> shifts) & np.uint64(15), (lo[:, None] >> shifts) & np.uint64(15)], axis=1)
    data = digits[nib.astype(np.intp)].reshape(-1)
    offsets = np.arange(0, 32 * (len(hi) + 1), 32, dtype=np.int32)
    return pa.StringArray.from_buffers(len(hi), pa.py_buffer(offsets), pa.py_buffer(data))


def _pick(values: pa.Array, idx: np.ndarray) -> pa.Array:
    return values.take(pa.array(idx))


def generate(rows: int = 1_000_000, seed: int = 42, batch_rows: int = 1_000_000,
             progress: Callable[[int, int], None] | None = None, *, start: int = 0) -> Iterator[pa.RecordBatch]:
    """Yield the log table as record batches of up to `batch_rows` rows (seeded, deterministic).

    `start` (a multiple of `batch_rows`) begins at that row without generating
    the ones before: the batches are the same as a full run's from there (each
    batch draws from its own seeded generator)."""
    if start % batch_rows:
        raise ValueError("start must be a multiple of batch_rows")
    master = np.random.default_rng(seed)
    vocab = pa.array(_vocabulary(master, 60_000), pa.string())
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    zipf_p = 1.0 / ranks ** 1.07
    zipf_cdf = np.cumsum(zipf_p / zipf_p.sum())
    # inverse-CDF lookup table: one integer draw + one gather per word, no per-word search
    lut_bits = 22
    zipf_lut = np.minimum(np.searchsorted(zipf_cdf, (np.arange(1 << lut_bits) + 0.5) / (1 << lut_bits)),
                          len(vocab) - 1).astype(np.int32)
    levels, services = pa.array(_LEVELS.tolist()), pa.array(_SERVICES.tolist())
    verbs, objects = pa.array(_VERBS.tolist()), pa.array(_OBJECTS.tolist())
    rare_rows = np.sort(master.choice(rows, size=min(RARE_ROWS, rows), replace=False))
    t0 = np.int64(1_704_067_200)  # 2024-01-01 00:00:00 UTC
    span_s = max(rows // 10, 1)
    null_until = t0 + span_s // 10
    max_k = 18
    done = start
    while done < rows:
        n = min(batch_rows, rows - done)
        rng = np.random.default_rng([seed, done])
        ids = np.arange(done, done + n, dtype=np.uint64)
        ts = np.maximum.accumulate(t0 + (ids.astype(np.int64) // 10) + rng.integers(0, 2, n))
        level = np.searchsorted(np.cumsum(_LEVEL_P), rng.random(n) * 0.999999)
        service = np.minimum(rng.geometric(0.15, n) - 1, len(_SERVICES) - 1)
        # traces: runs of 1-8 consecutive rows share an id
        trace_no = np.cumsum(rng.random(n) < 0.22).astype(np.uint64) + np.uint64(done)
        trace_hi = _splitmix64(trace_no ^ np.uint64(seed))
        trace_id = _hex32(trace_hi, _splitmix64(trace_hi))
        heavy = rng.random(n) < 0.2
        user_id = np.where(heavy, rng.integers(1, 200, n), rng.integers(1, 2_000_001, n)).astype(np.uint64)
        status = _STATUS[np.searchsorted(np.cumsum(_STATUS_P), rng.random(n) * 0.999999)]
        http_status = pa.array(status, pa.uint16(), mask=ts < null_until)
        # message: "<VERB> <object> user=<id> took <ms>ms <k words>"
        k = rng.integers(5, max_k + 1, n)
        word_idx = zipf_lut[rng.integers(0, 1 << lut_bits, (max_k, n))]
        cols = [_pick(verbs, rng.integers(0, len(verbs), n)),
                _pick(objects, rng.integers(0, len(objects), n)),
                pc.binary_join_element_wise("user=", pc.cast(pa.array(user_id), pa.string()), ""),
                pa.scalar("took"),
                pc.binary_join_element_wise(pc.cast(pa.array(rng.integers(1, 5000, n)), pa.string()), "ms", "")]
        for j in range(max_k):
            w = vocab.take(pa.array(word_idx[j]))
            cols.append(w if j < 5 else pc.if_else(pa.array(j < k), w, pa.scalar(None, pa.string())))
        msg = pc.binary_join_element_wise(*cols, pa.scalar(" "), null_handling="skip")
        # plant the rare token in its rows of this batch
        local = rare_rows[(rare_rows >= done) & (rare_rows < done + n)] - done
        if local.size:
            mask = np.zeros(n, dtype=bool)
            mask[local] = True
            msg = pc.if_else(pa.array(mask), pc.binary_join_element_wise(msg, f"{RARE_TOKEN} sighted", " "), msg)
        batch = pa.RecordBatch.from_arrays(
            [pa.array(ids), pa.array(ts.astype("datetime64[s]"), pa.timestamp("s")),
             _pick(levels, level), _pick(services, service), trace_id, pa.array(user_id), http_status, msg],
            names=["id", "ts", "level", "service", "trace_id", "user_id", "http_status", "msg"])
        yield batch
        done += n
        if progress is not None:
            progress(done, rows)


def generate_table(rows: int = 1_000_000, seed: int = 42, **kw) -> pa.Table:
    """The whole dataset as one pyarrow Table."""
    return pa.Table.from_batches(list(generate(rows, seed, **kw)))
