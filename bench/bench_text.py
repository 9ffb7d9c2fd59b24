"""Text index benchmark: skipidx's ``text`` index vs chDB's, same data, same tokenizer.

    flock /tmp/bench.lock python bench/bench_text.py             # 1M log rows
    flock /tmp/bench.lock python bench/bench_text.py --rows 200000 --repeat 3
    flock /tmp/bench.lock python bench/bench_text.py --rows 10000000 --indexes tok --sections build,queries
    flock /tmp/bench.lock python bench/bench_text.py --corpus stdlib --rows 1000000 --sections build,queries

Before timing, a tiny table goes through every path in both engines (warm-up: skipidx
loads its compiled kernels from the numba cache once per process; the text index's slice
and key-range sizes are made tiny for it, so its parts take the paths of the big ones).
Build and merge print wall seconds and, beside them, the process's CPU seconds (chDB
runs in the process, so its threads count too).

One run, interleaved per query. The log table (``skipidx.apps.datagen``, seeded;
columns id, msg) is loaded into both engines as 4 parts, the index is built by
``ALTER TABLE ADD INDEX`` + ``MATERIALIZE INDEX`` (build time), the parts are
merged by ``OPTIMIZE TABLE FINAL`` (merge time), then each query runs
``--repeat`` times after one warm-up (median), with and without direct read
(``query_plan_direct_read_from_text_index``). Index bytes: skipidx's index files
vs chDB's ``system.data_skipping_indices.data_compressed_bytes``.

``--corpus stdlib`` (or ``site-packages``, ``debian``; ``skipidx.apps.research.corpora``,
seeded, its description with the sha256 of the files used is printed) puts a real corpus
in ``msg`` (one row per source line or package description) instead of the log lines; the
queries' tokens and substrings are then picked from the corpus itself (printed): a rare
token (8-40 rows, at least 8 bytes, seeded pick), a second rare one for the OR, the
token co-occurring most with it for hasAllTokens, the most frequent token, an absent
one, and LIKE needles of 3-12 bytes that start at the rare token in a row holding it.

Direct read off is run twice: as it is by default (the column is read, the WHERE's
rows come from the postings: ``text_index_row_filter``, shown ``0``) and with
``text_index_row_filter = 0`` (the WHERE evaluated per row over the column, ``0e``),
each against chDB with direct read off.

Two indexes: ``text(tokenizer = splitByNonAlpha)`` for the token queries and
``text(tokenizer = sparseGrams)`` for ``LIKE '%substring%'`` (3-12 chars); plus
skipidx's ``sbbf('sparse_grams')`` and ``sbbf('ngram', n = 3)`` for the bytes a
short-substring filter costs (#18 item 6). Also the posting-list codec against
pyroaring's portable serialization of the same postings (when installed).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import skipidx  # noqa: E402
from skipidx.apps import datagen  # noqa: E402

def token_queries(rare: str, absent: str, partner: str, other: str, frequent: str) -> list[tuple[str, str]]:
    return [
        ("hasToken rare", f"hasToken(msg, '{rare}')"),
        ("hasToken absent", f"hasToken(msg, '{absent}')"),
        ("hasAnyTokens", f"hasAnyTokens(msg, ['{rare}', '{absent}'])"),
        ("hasAllTokens", f"hasAllTokens(msg, ['{rare}', '{partner}'])"),
        ("OR of two tokens", f"hasToken(msg, '{rare}') OR hasToken(msg, '{other}')"),
        ("hasToken frequent", f"hasToken(msg, '{frequent}')"),
    ]


def like_queries(needles: list[str]) -> list[tuple[str, str]]:
    return [(f"LIKE {len(s)} chars", f"msg LIKE '%{s}%'") for s in needles]


TOKEN_QUERIES = token_queries(datagen.RARE_TOKEN, datagen.ABSENT_TOKEN, "sighted", datagen.ABSENT_TOKEN,
                              datagen.FREQUENT_TOKEN)
LIKE_QUERIES = like_queries(["rak", "krak", "raken", "kraken s", "raken sight", "kraken sight"])


def corpus_queries(msg, seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Token and LIKE queries picked from the corpus (see the module docstring)."""
    import collections
    import re

    split = re.compile(rb"[^0-9A-Za-z\x80-\xff]+")
    rows_of: dict[bytes, list[int]] = collections.defaultdict(list)
    vals = msg.to_pylist()
    for i, v in enumerate(vals):
        for tk in set(split.split(v.encode())):
            if tk:
                rows_of[tk].append(i)
    freq = max(rows_of, key=lambda t: (len(rows_of[t]), t))
    cands = sorted(t for t, r in rows_of.items() if 8 <= len(r) <= 40 and len(t) >= 8 and t.isascii())
    rng = np.random.default_rng(seed)
    rare, other = (cands[int(i)] for i in rng.choice(len(cands), 2, replace=False))
    co = collections.Counter(t for i in rows_of[rare] for t in set(split.split(vals[i].encode())) if t and t != rare)
    partner = max(co, key=lambda t: (co[t], t))
    absent = b"qzxvkjwpt"
    assert absent not in rows_of
    needles = []
    for i in rows_of[rare]:
        v = vals[i].encode()
        pos = v.find(rare)
        piece = v[pos:pos + 12]
        if len(piece) == 12 and piece.isascii() and not any(c in piece for c in b"%_\\'"):
            needles = [piece[:n].decode() for n in (3, 4, 5, 8, 11, 12)]
            break
    print(f"corpus queries: rare {rare.decode()!r} ({len(rows_of[rare])} rows), other rare {other.decode()!r} "
          f"({len(rows_of[other])}), hasAll partner {partner.decode()!r}, frequent {freq.decode()!r} "
          f"({len(rows_of[freq])} rows), absent {absent.decode()!r}, LIKE needles {needles}")
    return (token_queries(rare.decode(), absent.decode(), partner.decode(), other.decode(), freq.decode()),
            like_queries(needles))


def _dir_bytes(path: str, prefix: str) -> int:
    total = 0
    for root, _d, files in os.walk(path):
        for f in files:
            if f.startswith(prefix):
                total += os.path.getsize(os.path.join(root, f))
    return total


def _time(fn, repeat: int) -> tuple[float, object]:
    out = fn()   # warm-up
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1000, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--indexes", default="tok,sg", help="tok (splitByNonAlpha), sg (sparseGrams)")
    ap.add_argument("--sections", default="build,queries,filters,roaring")
    ap.add_argument("--corpus", default="logs", help="logs (skipidx.apps.datagen), stdlib, site-packages, debian")
    ap.add_argument("--seed", type=int, default=1, help="corpus seed")
    args = ap.parse_args()
    from chdb import session as chs

    print(f"load (uptime): {os.getloadavg()}")
    work = tempfile.mkdtemp(prefix="bench_text_")
    try:
        token_qs, like_qs = TOKEN_QUERIES, LIKE_QUERIES
        if args.corpus == "logs":
            t = datagen.generate_table(args.rows, 42).select(["id", "msg"])
            print(f"corpus: skipidx.apps.datagen log table, seed 42, {args.rows:,} rows")
        else:
            import pyarrow as pa

            from skipidx.apps.research.corpora import load_corpus

            msg, desc = load_corpus(args.corpus, args.rows, args.seed)
            msg = msg.cast(pa.string())
            print(f"corpus: {desc}")
            args.rows = len(msg)
            t = pa.table({"id": pa.array(np.arange(len(msg), dtype=np.uint64)), "msg": msg})
            token_qs, like_qs = corpus_queries(msg, args.seed)
        parquet = os.path.join(work, "logs.parquet")
        pq.write_table(t, parquet)
        db = skipidx.connect(os.path.join(work, "sk"))
        ch = chs.Session(os.path.join(work, "ch"))
        S = "SETTINGS enable_full_text_index = 1"
        specs = [(k, v) for k, v in (("tok", "text(tokenizer = splitByNonAlpha)"),
                                     ("sg", "text(tokenizer = sparseGrams)")) if k in args.indexes.split(",")]
        sections = set(args.sections.split(","))
        q = args.rows // 4
        # warm-up, not timed: a tiny table through every path in both engines (skipidx loads its
        # compiled kernels from the numba cache on first use, once per process)
        small = t.slice(0, 2000)
        spq = os.path.join(work, "small.parquet")
        pq.write_table(small, spq)
        # the warm-up's tiny parts take every path of the big ones (slices on threads, merged
        # slices, threaded encoding, OPTIMIZE on key ranges), so no kernel is first loaded
        # inside a timed build or merge
        from skipidx.indexes import text as text_index

        sizes = {k: getattr(text_index, k) for k in ("SLICE_ROWS", "MERGE_RANGE_TOKENS", "ENCODE_RANGE_BLOCKS",
                                                     "MERGE_RANGE_BLOCKS")}
        for k in sizes:
            setattr(text_index, k, 1 if k != "SLICE_ROWS" else 256)
        for name, ddl in specs:
            db.sql(f"CREATE TABLE warm_{name} (id UInt64, msg String) ORDER BY id SETTINGS index_granularity = 8192")
            ch.query(f"CREATE TABLE warm_{name} (id UInt64, msg String) ENGINE = MergeTree ORDER BY id "
                     "SETTINGS index_granularity = 8192, enable_full_text_index = 1")
            for k in range(2):
                db.insert(f"warm_{name}", small.slice(k * 1000, 1000))
                ch.query(f"INSERT INTO warm_{name} SELECT * FROM file('{spq}', Parquet) "
                         f"WHERE id >= {k * 1000} AND id < {(k + 1) * 1000}")
            db.sql(f"ALTER TABLE warm_{name} ADD INDEX {name} msg TYPE {ddl}")
            db.sql(f"ALTER TABLE warm_{name} MATERIALIZE INDEX {name}")
            ch.query(f"ALTER TABLE warm_{name} ADD INDEX {name} msg TYPE {ddl} GRANULARITY 1")
            ch.query(f"ALTER TABLE warm_{name} MATERIALIZE INDEX {name} SETTINGS mutations_sync = 2")
            db.sql(f"OPTIMIZE TABLE warm_{name} FINAL")
            ch.query(f"OPTIMIZE TABLE warm_{name} FINAL")
            for where in ("hasToken(msg, 'x')", "msg LIKE '%kraken%'"):
                for d in (0, 1):
                    db.sql(f"SELECT count() FROM warm_{name} WHERE {where} "
                           f"SETTINGS query_plan_direct_read_from_text_index = {d}").fetchall()
        for k, v in sizes.items():
            setattr(text_index, k, v)
        print(f"rows {args.rows}, 4 parts each; granules of 8192 rows; one table per index "
              f"(chDB allows one text index per column)")
        print("wall s (CPU s of the process: chDB runs in it, so its threads count too); ratio = skipidx / chDB")
        print(f"{'index':<34} {'build skipidx':>16} {'build chDB':>16} {'ratio':>11}  {'bytes skipidx':>13} "
              f"{'bytes chDB':>11} {'ratio':>6}  {'merge skipidx':>16} {'merge chDB':>16} {'ratio':>11}  load")
        for name, ddl in specs:
            tbl = f"logs_{name}"
            ch.query(f"CREATE TABLE {tbl} (id UInt64, msg String) ENGINE = MergeTree ORDER BY id "
                     "SETTINGS index_granularity = 8192, enable_full_text_index = 1")
            db.sql(f"CREATE TABLE {tbl} (id UInt64, msg String) ORDER BY id SETTINGS index_granularity = 8192")
            for k in range(4):
                db.insert(tbl, t.slice(k * q, q if k < 3 else args.rows - 3 * q))
                ch.query(f"INSERT INTO {tbl} SELECT * FROM file('{parquet}', Parquet) "
                         f"WHERE id >= {k * q} AND id < {(k + 1) * q if k < 3 else args.rows}")
            cs, ws = [], []

            def mark() -> None:
                ws.append(time.perf_counter())
                cs.append(time.process_time())

            mark()
            db.sql(f"ALTER TABLE {tbl} ADD INDEX {name} msg TYPE {ddl}")
            db.sql(f"ALTER TABLE {tbl} MATERIALIZE INDEX {name}")
            mark()
            ch.query(f"ALTER TABLE {tbl} ADD INDEX {name} msg TYPE {ddl} GRANULARITY 1")
            ch.query(f"ALTER TABLE {tbl} MATERIALIZE INDEX {name} SETTINGS mutations_sync = 2")
            mark()
            db.sql(f"OPTIMIZE TABLE {tbl} FINAL")
            mark()
            ch.query(f"OPTIMIZE TABLE {tbl} FINAL")
            mark()
            w = [ws[i + 1] - ws[i] for i in range(4)]
            u = [cs[i + 1] - cs[i] for i in range(4)]
            sb = _dir_bytes(os.path.join(work, "sk", tbl), f"idx.{name}.")
            cb = int(str(ch.query(f"SELECT sum(data_compressed_bytes) FROM system.data_skipping_indices "
                                  f"WHERE table = '{tbl}' AND name = '{name}'", "TSV")).strip() or 0)
            def pair(i: int) -> str:
                return f"{w[i]:>7.2f} ({u[i]:>6.2f})"

            def ratio(i: int, j: int) -> str:
                return f"{w[i] / w[j]:>4.2f} ({u[i] / max(u[j], 1e-9):>4.2f})"

            print(f"{ddl:<34} {pair(0):>16} {pair(1):>16} {ratio(0, 1):>11}  "
                  f"{sb / 1e6:>11.2f}MB {cb / 1e6:>9.2f}MB {sb / max(cb, 1):>6.2f}  "
                  f"{pair(2):>16} {pair(3):>16} {ratio(2, 3):>11}  {os.getloadavg()[0]:.1f}")
        data_mb = _dir_bytes(os.path.join(work, "sk", f"logs_{specs[0][0]}"), "data.") / 1e6
        print(f"  (skipidx data file after merge: {data_mb:.1f} MB; index bytes: merged part, the merge's "
              f"retired parts not counted)")

        built = {n for n, _ in specs}
        queries = ([q for q in token_qs if "tok" in built] + [q for q in like_qs if "sg" in built]
                   if "queries" in sections else [])
        if queries:
            print(f"\n{'query':<20} {'direct':>6} {'skipidx ms':>10} {'chDB ms':>8} {'ratio':>6} {'count':>7} "
                  f"{'kept':>5} {'ch kept':>7} {'ideal':>5} {'rows read':>9} {'load':>5}")
        for label, where in queries:
            tbl = "logs_tok" if (label, where) in token_qs else "logs_sg"
            # chDB's kept granules: the last (smallest) Granules: a/b of its EXPLAIN
            ex = str(ch.query(f"EXPLAIN indexes = 1 SELECT count() FROM {tbl} WHERE {where} {S}, "
                              "use_skip_indexes_on_data_read = 0, query_plan_direct_read_from_text_index = 0",
                              "TSVRaw"))
            ch_kept = min([int(x) for x in re.findall(r"Granules: (\d+)/\d+", ex)] or [-1])
            for mode in ((1, 0, "0e") if tbl == "logs_tok" else (1, 0)):
                direct = 0 if mode == "0e" else mode
                st = f"SETTINGS query_plan_direct_read_from_text_index = {direct}"
                if mode == "0e":
                    st += ", text_index_row_filter = 0"
                ms_s, r = _time(lambda: db.sql(f"SELECT count() FROM {tbl} WHERE {where} {st}"), args.repeat)
                ms_c, rc = _time(lambda: ch.query(f"SELECT count() FROM {tbl} WHERE {where} {S}, "
                                                  f"query_plan_direct_read_from_text_index = {direct}", "TSV"),
                                 args.repeat)
                n = r.fetchall()[0][0]
                assert n == int(str(rc).strip()), (label, n, str(rc))
                ideal = len({i // 8192 for (i,) in db.sql(f"SELECT id FROM {tbl} WHERE {where}").fetchall()}) \
                    if n < 200_000 else -1
                print(f"{label:<20} {mode:>6} {ms_s:>10.2f} {ms_c:>8.2f} {ms_s / ms_c:>6.2f} {n:>7} "
                      f"{r.stats.granules_selected:>5} {ch_kept:>7} {ideal:>5} {r.stats.rows_read:>9} "
                      f"{os.getloadavg()[0]:>5.1f}")

        # short substrings: the bytes each filter choice costs (#18 item 6)
        if "filters" in sections and "sg" in built:
            print("\nshort-substring filters (skipidx sbbf, per granule):")
            names = ("ng4", "ng43", "ng3", "sgb")
            for name, ddl in [("ng4", "sbbf('ngram', n = 4)"), ("ng43", "sbbf('ngram', n = 4, min_n = 3)"),
                              ("ng3", "sbbf('ngram', n = 3)"), ("sgb", "sbbf('sparse_grams')")]:
                t0 = time.perf_counter()
                db.sql(f"ALTER TABLE logs_sg ADD INDEX {name} msg TYPE {ddl}")
                db.sql(f"ALTER TABLE logs_sg MATERIALIZE INDEX {name}")
                bt = time.perf_counter() - t0
                sb = _dir_bytes(os.path.join(work, "sk", "logs_sg"), f"idx.{name}.")
                kept = []
                for s in [w[len("msg LIKE '%"):-2] for _, w in (like_qs[0], like_qs[1], like_qs[3])]:
                    others = ",".join(x for x in ("sg",) + names if x != name)
                    r = db.sql(f"SELECT count() FROM logs_sg WHERE msg LIKE '%{s}%' "
                               f"SETTINGS ignore_data_skipping_indices = '{others}'")
                    r.fetchall()
                    kept.append(f"'{s}' {r.stats.granules_selected}/{r.stats.granules_total}")
                print(f"  {ddl:<24} build {bt:6.2f}s  {sb / 1e6:8.2f} MB  kept: {', '.join(kept)}")

        # posting codec vs pyroaring on the merged splitByNonAlpha postings
        if "roaring" in sections and "tok" in built:
            try:
                import pyroaring
            except ImportError:
                pyroaring = None
            if pyroaring is not None:
                snap = db.catalog.table("logs_tok").snapshot()
                with snap:
                    g = snap.parts[0].load_index("tok")
                    td, to, pr, po = g.decode_all()
                    t0 = time.perf_counter()
                    rb = sum(len(pyroaring.BitMap(pr[po[i]:po[i + 1]].astype(np.uint32)).serialize())
                             for i in range(len(po) - 1))
                    rt = time.perf_counter() - t0
                    print(f"\npostings of {len(po) - 1} tokens ({len(pr)} rows): skipidx codec {g.post_blob.nbytes / 1e6:.2f} MB, "
                          f"pyroaring {rb / 1e6:.2f} MB (ratio {g.post_blob.nbytes / rb:.2f}; pyroaring build {rt:.2f}s "
                          f"in a Python loop per token)")
        print(f"load (uptime) after: {os.getloadavg()}")
        db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
