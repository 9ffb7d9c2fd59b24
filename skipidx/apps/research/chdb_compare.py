"""The same indexes in ClickHouse (chDB), side by side with skipidx's.

The column (plus a ``__row`` number) goes to a Parquet file; a MergeTree
table ``ORDER BY __row`` with ``index_granularity = G`` and
``index_granularity_bytes = 0`` (fixed-row granules, so its granules are ours
row for row) loads it and is merged to one part. Each index is then added
with ``ALTER TABLE ... ADD INDEX`` and built with ``MATERIALIZE INDEX``
(``mutations_sync = 2``), which times its build alone; its size comes from
``system.data_skipping_indices`` (uncompressed = the bitsets, compressed = on
disk).

For every query and index, ``EXPLAIN indexes = 1 SELECT count() ... SETTINGS
ignore_data_skipping_indices = <all other indexes>`` gives that index's
``Granules: kept/total`` (ClickHouse applies skip indexes one after another,
so the others are switched off to get each one's own figure), with
``use_query_condition_cache = 0`` so no cached condition prunes first. The
same query without EXPLAIN gives the latency; ``uniqExact(intDiv(__row, G))``
gives ClickHouse's own ideal, checked against the bench's full scan.

Candidates: every fixed/same-bytes skipidx candidate becomes ClickHouse's
``tokenbf_v1(bytes, k, 0)`` / ``ngrambf_v1(n, bytes, k, 0)`` with the same
bytes and ``k`` = ClickHouse's best-practice k for the bits per distinct
token measured in the data (`fpp.clickhouse_best_k`); every adaptive
``value`` candidate becomes ``bloom_filter(fpp)``.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.apps.research.fpp import clickhouse_best_k
from skipidx.apps.research.indexes import BenchResult, Candidate

_SKIP_RE = re.compile(r"Skip\s*\n\s*Name:\s*(\S+).*?Granules:\s*(\d+)/(\d+)", re.S)


def chdb_available() -> bool:
    try:
        import chdb  # noqa: F401
        from chdb import session  # noqa: F401
    except ImportError:
        return False
    return True


KINDS = ("fixed", "same-bytes", "same-bytes-exact")


def clickhouse_candidates(result: BenchResult, kinds: tuple[str, ...] = KINDS) -> list[tuple[str, str, Candidate]]:
    """(ClickHouse index name, TYPE clause, the skipidx candidate it mirrors) for candidates of `kinds`.

    Kinds: ``fixed`` (the grid's fixed sizes), ``same-bytes`` (the twins of the engine-sized
    adaptive candidates), ``same-bytes-exact`` (the twins of the exact-sized ones).
    """
    out = []
    for r in result.candidates:
        c = r.candidate
        kind = "same-bytes-exact" if c.kind == "same-bytes" and "_exact_" in (c.matched_to or "") else c.kind
        if kind in kinds and c.tokenizer in ("token", "ngram"):
            bits = c.num_bytes * 8 / max(r.ndv_mean, 1.0)
            k = clickhouse_best_k(max(bits, 1.0))
            if c.tokenizer == "token":
                t = f"tokenbf_v1({c.num_bytes}, {k}, 0)"
            else:
                t = f"ngrambf_v1({c.n}, {c.num_bytes}, {k}, 0)"
            out.append(("ch_" + c.name, t, c))
        elif c.kind == "adaptive" and c.tokenizer == "value" and getattr(c, "sizing", "parquet") == "parquet":
            out.append(("ch_" + c.name, f"bloom_filter({c.fpp:g})", c))
    return out


def parse_explain_skip(text: str) -> dict[str, tuple[int, int]]:
    """``{index name: (granules kept, granules before)}`` from ``EXPLAIN indexes = 1`` text."""
    return {m.group(1): (int(m.group(2)), int(m.group(3))) for m in _SKIP_RE.finditer(text)}


def _q(s, sql: str, fmt: str = "CSV") -> str:
    try:
        return str(s.query(sql, fmt))
    except Exception as e:  # chDB raises a plain RuntimeError carrying ClickHouse's message
        raise SkipidxError(f"chDB failed on: {sql[:200]}: {str(e).strip()[:500]}") from None


def run_chdb(result: BenchResult, values: pa.ChunkedArray, *, workdir: str | None = None,
             show_progress: bool = True, measure_latency: bool = True,
             kinds: tuple[str, ...] = KINDS, build: str = "alter") -> dict:
    """Build the mirrored indexes in chDB and measure them on the bench's queries (see module doc).

    ``build="alter"`` adds and materializes the indexes one by one (a build time per index);
    ``build="insert"`` declares them all in CREATE TABLE and builds them in the one INSERT (much
    faster on big data; one build time for all, no per-index figure).
    """
    if build not in ("alter", "insert"):
        raise SkipidxError(f"chDB build mode must be 'alter' or 'insert', got {build!r}")
    import chdb
    import pyarrow.parquet as pq

    from skipidx.core.progress import Progress

    col = result.column
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", col):
        raise SkipidxError(f"column name {col!r} cannot be used unquoted in ClickHouse DDL")
    own_tmp = workdir is None
    root = tempfile.mkdtemp(prefix="skipidx_chdb_") if own_tmp else workdir
    try:
        pq_path = os.path.join(root, "data.parquet")
        n = len(values)
        table = pa.table({"__row": pa.array(np.arange(n, dtype=np.uint64)), col: values})
        pq.write_table(table, pq_path, row_group_size=1 << 20)
        del table
        # chDB allows one embedded server (one data path) per process: share it
        from skipidx.apps.research import chdb_session as _chdb

        s = _chdb.session()
        dbn = _chdb.scratch_database("bench")
        try:
            ig = result.index_granularity
            cands = clickhouse_candidates(result, kinds)
            names_seen = [n for n, _, _ in cands]
            if len(set(names_seen)) != len(names_seen):
                raise AssertionError(f"duplicate ClickHouse index names: {names_seen}")
            decl = "".join(f", INDEX {name} {col} TYPE {tsql} GRANULARITY {c.granularity}"
                           for name, tsql, c in cands) if build == "insert" else ""
            _q(s, f"CREATE TABLE {dbn}.t (__row UInt64, {col} String{decl}) ENGINE = MergeTree ORDER BY __row "
                  f"SETTINGS index_granularity = {ig}, index_granularity_bytes = 0")
            t0 = time.perf_counter()
            _q(s, f"INSERT INTO {dbn}.t SELECT __row, {col} FROM file('{pq_path}', Parquet)")
            _q(s, f"OPTIMIZE TABLE {dbn}.t FINAL")
            load_s = time.perf_counter() - t0
            parts = int(_q(s, f"SELECT count() FROM system.parts WHERE database = '{dbn}' AND table = 't' "
                              "AND active").strip())
            out = {"version": _q(s, "SELECT version()").strip().strip('"'), "load_s": load_s, "parts": parts,
                   "build": build, "indexes": []}
            if build == "insert":
                out["indexes"] = [{"name": name, "type_sql": tsql, "granularity": c.granularity,
                                   "mirrors": c.name, "build_s": None} for name, tsql, c in cands]
            else:
                bar = Progress("chdb build", max(len(cands), 1), unit="indexes") if show_progress else None
                for i, (name, tsql, c) in enumerate(cands):
                    _q(s, f"ALTER TABLE {dbn}.t ADD INDEX {name} {col} TYPE {tsql} GRANULARITY {c.granularity}")
                    t0 = time.perf_counter()
                    _q(s, f"ALTER TABLE {dbn}.t MATERIALIZE INDEX {name} SETTINGS mutations_sync = 2")
                    build_s = time.perf_counter() - t0
                    out["indexes"].append({"name": name, "type_sql": tsql, "granularity": c.granularity,
                                           "mirrors": c.name, "build_s": build_s})
                    if bar:
                        bar.update(i + 1)
                if bar:
                    bar.__exit__(None, None, None)
            sizes = _q(s, "SELECT name, data_uncompressed_bytes, data_compressed_bytes FROM "
                          f"system.data_skipping_indices WHERE database = '{dbn}' AND table = 't'", "TSVRaw")
            size_of = {}
            for line in sizes.strip().splitlines():
                nm, unc, comp = line.split("\t")
                size_of[nm] = (int(unc), int(comp))
            names = [x["name"] for x in out["indexes"]]
            for x in out["indexes"]:
                x["bytes_uncompressed"], x["bytes_compressed"] = size_of.get(x["name"], (0, 0))
                x["kept"] = []
                x["latency_ms"] = []
            ideal = []
            total = len(result.queries) * max(len(names), 1)
            bar = Progress("chdb queries", total, unit="queries") if show_progress else None
            done = 0
            for qi in result.queries:
                where = qi.query.where
                ideal.append(int(_q(s, f"SELECT uniqExact(intDiv(__row, {ig})) FROM {dbn}.t WHERE {where} "
                                       "SETTINGS use_skip_indexes = 0, use_query_condition_cache = 0").strip()))
                for x in out["indexes"]:
                    others = ",".join(nm for nm in names if nm != x["name"])
                    settings = "use_query_condition_cache = 0"
                    if others:
                        settings += f", ignore_data_skipping_indices = '{others}'"
                    text = _q(s, f"EXPLAIN indexes = 1 SELECT count() FROM {dbn}.t WHERE {where} "
                                 f"SETTINGS {settings}", "TSVRaw")
                    got = parse_explain_skip(text)
                    kept, before = got.get(x["name"], (None, None))
                    if kept is None:
                        # No Skip entry: the index did not take part; it kept every granule.
                        kept = out.get("granules_total", result.granules)
                    x["kept"].append(kept)
                    if before is not None:
                        out["granules_total"] = before
                    if measure_latency:
                        t0 = time.perf_counter()
                        _q(s, f"SELECT count() FROM {dbn}.t WHERE {where} SETTINGS {settings}")
                        x["latency_ms"].append((time.perf_counter() - t0) * 1000)
                    done += 1
                    if bar:
                        bar.update(done)
            if bar:
                bar.__exit__(None, None, None)
            out["ideal"] = ideal
            out["ideal_matches_scan"] = ideal == [q.ideal for q in result.queries]
        finally:
            _q(s, f"DROP DATABASE IF EXISTS {dbn}")
        return out
    finally:
        if own_tmp:
            shutil.rmtree(root, ignore_errors=True)
