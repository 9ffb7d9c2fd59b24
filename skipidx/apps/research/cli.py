"""Command-line entry points of the research bench (dispatched by ``skipidx bench`` / ``skipidx advise``).

    skipidx bench fpp [--quick] [--out DIR]
    skipidx bench indexes DATA.parquet --column msg [--queries FILE] [--out DIR] [--quick] [--no-chdb] ...
    skipidx bench report RESULT.json [--chdb-from OTHER.json] [--out DIR]   (re-render / merge runs)
    skipidx bench zoo [--corpora stdlib,site-packages,debian,demo] [--tokenizers token,ngram3,...] [--no-chdb]
    skipidx advise DATA.parquet --column msg --fpp 0.01 [--granularity 1] ...   (index sizes)
    skipidx advise DATA.parquet --workload FILE [--column a,b]    (one index per column for the workload)
    skipidx advise DBDIR [--table t] [--workload FILE]            (default workload: the query log)

DATA may also be ``demo`` or ``demo:ROWS``: the shared synthetic log table
(`skipidx.apps.datagen`, seed 42) generated in memory, column ``msg``.

Every bench writes NAME.md, NAME.json and PNGs into --out (default
``bench_results``) and prints the markdown to stdout. Bad arguments raise
SkipidxError, which the ``skipidx`` command prints as ``error: ...``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from skipidx.core.errors import SkipidxError


class _Parser(argparse.ArgumentParser):
    """argparse that raises SkipidxError instead of exiting (the CLI prints `error: ...`)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise SkipidxError(f"{self.prog}: {message}")


def _ints(text: str, what: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SkipidxError(f"{what} must be a comma-separated list of integers, got {text!r}") from None
    if not out:
        raise SkipidxError(f"{what} is empty")
    return out


def _floats(text: str, what: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SkipidxError(f"{what} must be a comma-separated list of numbers, got {text!r}") from None
    if not out:
        raise SkipidxError(f"{what} is empty")
    return out


def load_data(spec: str, column: str, rows: int | None = None):
    """(values, source label) from a Parquet path or ``demo[:ROWS]``; `rows` keeps the first rows."""
    import pyarrow as pa

    from skipidx.apps.research.indexes import load_column

    if spec == "demo" or spec.startswith("demo:"):
        from skipidx.apps.datagen import generate_table

        n = rows or 1_000_000
        if spec.startswith("demo:"):
            try:
                n = int(spec[5:].replace("_", ""))
            except ValueError:
                raise SkipidxError(f"demo:ROWS needs an integer, got {spec!r}") from None
            if rows:
                n = min(n, rows)
        if column != "msg":
            raise SkipidxError(f"the demo table's text column is 'msg', not {column!r}")
        t = generate_table(n, seed=42)
        return t.column("msg"), f"demo log table ({n:,} rows, seed 42)"
    if not os.path.exists(spec):
        raise SkipidxError("no such file", path=spec)
    values = load_column(spec, column)
    if rows is not None:
        values = values.slice(0, rows)
    if not isinstance(values, pa.ChunkedArray):
        values = pa.chunked_array([values])
    return values, os.path.basename(spec)


# ----------------------------------------------------------------------------- bench fpp

def _bench_fpp(argv: list[str]) -> int:
    from skipidx.apps.research.fpp import fpp_markdown, fpp_plot, run_fpp
    from skipidx.apps.research.report import ensure_dir, run_metadata, write_outputs

    p = _Parser(prog="skipidx bench fpp", description="Reproduce the Parquet spec's SBBF sizing table with "
                                                      "confidence intervals, next to ClickHouse's classic filter.")
    p.add_argument("--quick", action="store_true", help="smaller filters and fewer probes (seconds)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--conf", type=float, default=0.999, help="confidence of the Wilson intervals")
    p.add_argument("--out", default="bench_results", help="output directory")
    p.add_argument("--name", default="fpp")
    p.add_argument("--no-plots", action="store_true")
    a = p.parse_args(argv)
    if not (0.0 < a.conf < 1.0):
        raise SkipidxError(f"--conf must lie in (0, 1), got {a.conf}")
    t0 = time.perf_counter()
    rep = run_fpp(quick=a.quick, seed=a.seed, conf=a.conf)
    md = fpp_markdown(rep)
    paths = write_outputs(ensure_dir(a.out), a.name, md, {"meta": run_metadata(), **rep.to_dict(),
                                                         "seconds": time.perf_counter() - t0})
    if not a.no_plots:
        paths["png"] = fpp_plot(rep, os.path.join(a.out, f"{a.name}.png"))
    sys.stdout.write(md)
    sys.stdout.write(f"\nwritten: {', '.join(str(v) for v in paths.values())}\n")
    return 0


# ----------------------------------------------------------------------------- bench indexes

QUICK = dict(tokenizers="token,ngram3,value", fixed_bytes="1024,16384,65536", fpp="0.01", granularity="1,4",
             per_family=2, rows=262_144, chdb_kinds="same-bytes", chdb_latency=False,
             sizing="parquet")
FULL = dict(tokenizers="token,ngram2,ngram3,ngram4,ngram5,value", fixed_bytes="256,1024,4096,16384,65536,262144",
            fpp="0.1,0.01,0.001", granularity="1,4", per_family=3, rows=None,
            chdb_kinds="fixed,same-bytes,same-bytes-exact",
            chdb_latency=True, sizing="parquet,exact")
CHDB_KINDS = ("fixed", "same-bytes", "same-bytes-exact")


def _bench_indexes(argv: list[str]) -> int:
    from skipidx.apps.research.indexes import default_candidates, parse_tokenizer_spec, run_bench_indexes
    from skipidx.apps.research.indexes_report import write_indexes_report
    from skipidx.apps.research.querygen import generate_queries, read_queries, write_queries
    from skipidx.apps.research.report import ensure_dir

    p = _Parser(prog="skipidx bench indexes",
                description="Build candidate skipping indexes over one column and measure their pruning.")
    p.add_argument("data", help="a Parquet file, or demo[:ROWS] for the synthetic log table")
    p.add_argument("--column", required=True)
    p.add_argument("--queries", help="file of WHERE clauses (one per line; '-- family: X' lines); "
                                     "default: generated from the data")
    p.add_argument("--out", default="bench_results")
    p.add_argument("--name", default="indexes")
    p.add_argument("--quick", action="store_true",
                   help=f"first {QUICK['rows']:,} rows, tokenizers {QUICK['tokenizers']}, fixed bytes "
                        f"{QUICK['fixed_bytes']}, fpp {QUICK['fpp']}; chDB mirrors the same-bytes candidates, "
                        "without timed queries")
    p.add_argument("--rows", type=int, help="use only the first ROWS rows")
    p.add_argument("--index-granularity", type=int, default=8192, help="rows per data granule")
    p.add_argument("--granularity", help="GRANULARITY values (data granules per index granule), e.g. 1,4")
    p.add_argument("--tokenizers", help="e.g. token,ngram2,ngram3,ngram4,ngram5,value")
    p.add_argument("--fixed-bytes", help="fixed filter sizes in bytes, e.g. 256,1024,4096")
    p.add_argument("--fpp", help="adaptive sbbf target FPPs, e.g. 0.1,0.01,0.001")
    p.add_argument("--no-same-bytes", action="store_true", help="skip the fixed twins of the adaptive candidates")
    p.add_argument("--adaptive-sizing", help="parquet (the engine's power-of-two sizes) and/or exact "
                                             "(proportional to distinct counts, bench only); default both, "
                                             "--quick: parquet")
    p.add_argument("--per-family", type=int, help="generated queries per family")
    p.add_argument("--seed", type=int, default=7, help="query generator seed")
    p.add_argument("--write-queries", help="also write the (generated) queries to this file")
    p.add_argument("--no-chdb", action="store_true", help="do not run the ClickHouse (chDB) side")
    p.add_argument("--no-chdb-latency", action="store_true", help="chDB: granule counts only, no timed queries")
    p.add_argument("--chdb-kinds", help="which fixed candidates to mirror in ClickHouse: fixed, same-bytes "
                                        "(twins of engine-sized adaptive), same-bytes-exact (default all; "
                                        "--quick: same-bytes); whole-value bloom_filter mirrors are always built")
    p.add_argument("--chdb-build", choices=("alter", "insert"), default="alter",
                   help="alter: ADD + MATERIALIZE INDEX one by one (build time per index); insert: all indexes "
                        "in CREATE TABLE, built by one INSERT (fast on big data)")
    p.add_argument("--engine", action="store_true",
                   help="also build the candidates with skipidx.connect and cross-check every figure")
    p.add_argument("--no-plots", action="store_true")
    a = p.parse_args(argv)
    preset = QUICK if a.quick else FULL
    tokenizers = (a.tokenizers or preset["tokenizers"]).split(",")
    for t in tokenizers:
        parse_tokenizer_spec(t)
    fixed = _ints(a.fixed_bytes or preset["fixed_bytes"], "--fixed-bytes")
    fpps = _floats(a.fpp or preset["fpp"], "--fpp")
    grans = _ints(a.granularity or preset["granularity"], "--granularity")
    per_family = a.per_family or preset["per_family"]
    if a.index_granularity < 1:
        raise SkipidxError(f"--index-granularity must be >= 1, got {a.index_granularity}")
    rows = a.rows if a.rows is not None else preset["rows"]
    if rows is not None and rows < 1:
        raise SkipidxError(f"--rows must be >= 1, got {rows}")
    t_start = time.perf_counter()
    values, source = load_data(a.data, a.column, rows)
    if a.queries:
        queries = read_queries(a.queries)
    else:
        from skipidx.core.progress import Progress

        with Progress("propose queries", len(values), unit="rows") as bar:
            queries = generate_queries(values, a.column, seed=a.seed, per_family=per_family,
                                       granularity=a.index_granularity, progress=bar.update)
    ensure_dir(a.out)
    if a.write_queries:
        write_queries(queries, a.write_queries)
    sizings = [x.strip() for x in (a.adaptive_sizing or preset["sizing"]).split(",") if x.strip()]
    cands = default_candidates(tokenizers, fixed, fpps, grans, adaptive_sizings=sizings)
    res = run_bench_indexes(values, queries, column=a.column, source=source,
                            index_granularity=a.index_granularity, candidates=cands,
                            same_bytes=not a.no_same_bytes)
    res.params = {"tokenizers": tokenizers, "fixed_bytes": fixed, "fpp": fpps, "granularity": grans,
                  "per_family": per_family, "seed": a.seed, "quick": a.quick, "rows_limit": rows,
                  "adaptive_sizing": sizings,
                  "queries_file": a.queries}
    if not a.no_chdb:
        from skipidx.apps.research.chdb_compare import chdb_available, run_chdb

        if chdb_available():
            kinds = tuple(k.strip() for k in (a.chdb_kinds or preset["chdb_kinds"]).split(",") if k.strip())
            bad = set(kinds) - set(CHDB_KINDS)
            if bad:
                raise SkipidxError(f"--chdb-kinds takes {', '.join(CHDB_KINDS)}, got {sorted(bad)}")
            latency = preset["chdb_latency"] and not a.no_chdb_latency
            # The skipidx side is written first: a ClickHouse failure must not lose it.
            write_indexes_report(res, a.out, a.name, plots=False)
            try:
                res.chdb = run_chdb(res, values, measure_latency=latency, kinds=kinds, build=a.chdb_build)
            except SkipidxError as e:
                sys.stderr.write(f"chDB side failed: {e}\n")
                res.chdb = {"error": str(e), "indexes": []}
        else:
            sys.stderr.write("chdb is not installed (pip install 'skipidx[bench]'): ClickHouse columns skipped\n")
    if a.engine:
        from skipidx.apps.research.engine_compare import run_engine

        res.engine = run_engine(res, values)
    res.params["seconds"] = time.perf_counter() - t_start
    paths = write_indexes_report(res, a.out, a.name, plots=not a.no_plots)
    with open(paths["markdown"], encoding="utf-8") as f:
        sys.stdout.write(f.read())
    written = [paths["markdown"], paths["json"]] + list(paths.get("png", []))
    sys.stdout.write(f"\nwritten: {', '.join(written)} ({res.params['seconds']:.1f} s)\n")
    return 0


# ----------------------------------------------------------------------------- bench report

def _bench_report(argv: list[str]) -> int:
    """Re-render a `bench indexes` JSON (optionally taking the chDB/engine sides from another run)."""
    import json

    from skipidx.apps.research.indexes import BenchResult
    from skipidx.apps.research.indexes_report import write_indexes_report
    from skipidx.apps.research.report import ensure_dir

    p = _Parser(prog="skipidx bench report", description="Re-render (and merge) bench indexes results.")
    p.add_argument("result", help="a NAME.json written by `skipidx bench indexes`")
    p.add_argument("--chdb-from", help="take the ClickHouse columns from this run's JSON (same data and queries)")
    p.add_argument("--out", default="bench_results")
    p.add_argument("--name", default="indexes")
    p.add_argument("--no-plots", action="store_true")
    a = p.parse_args(argv)

    def load(path: str) -> dict:
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except OSError as e:
            raise SkipidxError(f"cannot read: {e.strerror}", path=path) from None
        except ValueError as e:
            raise SkipidxError(f"not JSON: {e}", path=path) from None

    res = BenchResult.from_dict(load(a.result))
    if a.chdb_from:
        other = load(a.chdb_from)
        if [q["where"] for q in other.get("queries", [])] != [q.query.where for q in res.queries]:
            raise SkipidxError("the two runs did not run the same queries", path=a.chdb_from)
        if other.get("rows") != res.rows or other.get("index_granularity") != res.index_granularity:
            raise SkipidxError("the two runs did not read the same rows and granules", path=a.chdb_from)
        res.chdb = other.get("chdb")
    paths = write_indexes_report(res, ensure_dir(a.out), a.name, plots=not a.no_plots)
    with open(paths["markdown"], encoding="utf-8") as f:
        sys.stdout.write(f.read())
    return 0


# ----------------------------------------------------------------------------- advise

def _is_database_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.exists(os.path.join(path, "_delta_log")) and any(
        os.path.exists(os.path.join(path, n, "state.json")) for n in os.listdir(path))


def advise_main(argv: list[str]) -> int:
    """``skipidx advise DATA.parquet --column msg --fpp 0.01`` (sizes), ``skipidx advise DATA
    --workload FILE`` or ``skipidx advise DBDIR --table t`` (the database's query log)."""
    from skipidx.apps.research.advise import DEFAULT_ADVISE_TOKENIZERS, advice_markdown, advise
    from skipidx.apps.research.report import ensure_dir, run_metadata, write_outputs

    p = _Parser(prog="skipidx advise", description="Recommend skipping-index definitions and sizes from the data "
                                                   "and, with a workload (a file of SELECTs, or a database's log "
                                                   "of recent SELECTs), one index per column.")
    p.add_argument("data", help="a Parquet file, demo[:ROWS], or a database directory (with --table)")
    p.add_argument("--column", help="column(s), comma-separated (with a workload: default every column its "
                                    "predicates touch)")
    p.add_argument("--table", help="the table of a database directory")
    p.add_argument("--fpp", type=float, default=0.01, help="target false-positive rate per granule lookup")
    p.add_argument("--index-granularity", type=int, default=8192)
    p.add_argument("--granularity", type=int, default=1, help="GRANULARITY of the sized indexes (without a "
                                                              "workload; with one it is chosen from the data)")
    p.add_argument("--tokenizers", default=",".join(DEFAULT_ADVISE_TOKENIZERS))
    p.add_argument("--sample-granules", type=int, default=None,
                   help="data granules sampled (default 64; with a workload 32, in windows of 8)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", help="also write advise.md / advise.json into this directory")
    p.add_argument("--workload", help="a file of SELECTs (default for a database directory: its query log)")
    a = p.parse_args(argv)
    cols = [c.strip() for c in (a.column or "").split(",") if c.strip()] or None
    is_db = _is_database_dir(a.data)
    if a.workload or is_db:
        import pyarrow as pa

        from skipidx.apps.research.workload import (recommend_table, statements_from_log, statements_from_text,
                                                     workload_markdown)

        meta = None
        if is_db:
            import skipidx

            with skipidx.connect(a.data) as db:
                tables = db.tables()
                table = a.table or (tables[0] if len(tables) == 1 else None)
                if table is None:
                    raise SkipidxError(f"{a.data} holds {len(tables)} tables ({', '.join(tables)}): name one with "
                                       "--table")
                if table not in tables:
                    raise SkipidxError(f"no table {table!r} in {a.data}; tables: {', '.join(tables) or 'none'}")
                meta = db.table_meta(table)
                data = db.sql(f"SELECT * FROM {table} SETTINGS log_queries = 0").to_arrow()
                if a.workload:
                    stmts = None
                else:
                    stmts = statements_from_log(db, table)
                    if not stmts:
                        raise SkipidxError(f"the query log of {a.data} holds no SELECT on {table!r}: run the "
                                           "workload first, or pass --workload FILE")
            source = f"{a.data} table {table}"
        else:
            if a.table:
                raise SkipidxError("--table applies to a database directory")
            if a.data == "demo" or a.data.startswith("demo"):
                values, source = load_data(a.data, "msg")
                data = pa.table({"msg": values})
            else:
                if not os.path.exists(a.data):
                    raise SkipidxError("no such file", path=a.data)
                import pyarrow.parquet as pq

                try:
                    data = pq.read_table(a.data)
                except (OSError, pa.ArrowException) as e:
                    raise SkipidxError(f"cannot read the data as Parquet: {e}", path=a.data) from None
                source = os.path.basename(a.data)
            stmts = None
        if stmts is None:
            try:
                with open(a.workload, encoding="utf-8") as fh:
                    stmts = statements_from_text(fh.read())
            except OSError as e:
                raise SkipidxError(f"cannot read the workload: {e.strerror}", path=a.workload) from None
            if not stmts:
                raise SkipidxError("the workload holds no SELECT", path=a.workload)
        got, skipped = recommend_table(data, stmts, columns=cols, fpp=a.fpp, index_granularity=a.index_granularity,
                                       sample_granules=a.sample_granules or 32, seed=a.seed, meta=meta)
        md = f"# advise: {source}, {len(stmts)} SELECTs of the workload\n\n" + "\n".join(
            workload_markdown(w) for w in got)
        if skipped:
            md += "\nstatements not bound (left out): " + "; ".join(f"`{x}`" for x in skipped) + "\n"
        sys.stdout.write(md)
        if a.out:
            paths = write_outputs(ensure_dir(a.out), "advise", md, {"meta": run_metadata(),
                                                                    "columns": [w.to_dict() for w in got]})
            sys.stdout.write(f"\nwritten: {paths['markdown']}, {paths['json']}\n")
        return 0
    if not cols or len(cols) != 1:
        raise SkipidxError("--column names the one column to size (or give a workload: --workload FILE)")
    values, source = load_data(a.data, cols[0])
    adv = advise(values, column=cols[0], source=source, fpp=a.fpp, index_granularity=a.index_granularity,
                 granularity=a.granularity, tokenizers=[t for t in a.tokenizers.split(",") if t],
                 sample_granules=a.sample_granules or 64, seed=a.seed)
    md = advice_markdown(adv)
    sys.stdout.write(md)
    if a.out:
        paths = write_outputs(ensure_dir(a.out), "advise", md, {"meta": run_metadata(), **adv.to_dict()})
        sys.stdout.write(f"\nwritten: {paths['markdown']}, {paths['json']}\n")
    return 0


# ----------------------------------------------------------------------------- bench zoo

def _bench_zoo(argv: list[str]) -> int:
    import json
    import platform

    from skipidx.apps.research import zoo
    from skipidx.apps.research.corpora import CORPORA, load_corpus
    from skipidx.apps.research.report import ensure_dir, run_metadata, write_outputs
    from skipidx.apps.research.zoo_report import zoo_markdown, zoo_plots

    p = _Parser(prog="skipidx bench zoo", description="Every per-granule filter (SBBF adaptive / fixed, classic "
                                                      "Bloom, xor / binary fuse, exact sets, text index) and "
                                                      "ClickHouse's (chDB) on the same corpora, tokenizers and "
                                                      "queries.")
    p.add_argument("--corpora", default="stdlib,site-packages,debian,demo",
                   help=f"comma list of {', '.join(CORPORA)}, demo")
    p.add_argument("--tokenizers", default=",".join(zoo.ZOO_TOKENIZERS),
                   help=f"comma list of {', '.join(zoo.ZOO_TOKENIZERS)} (token: hasToken; the others: LIKE "
                        "'%%substring%%' of 3-12 characters)")
    p.add_argument("--rows", type=int, default=65536, help="rows per corpus")
    p.add_argument("--index-granularity", type=int, default=1024, help="rows per granule")
    p.add_argument("--queries", type=int, default=100, help="present tokens / substrings probed per corpus")
    p.add_argument("--absent", type=int, default=2000, help="absent tokens probed per granule (FPP)")
    p.add_argument("--reps", type=int, default=3, help="probe repetitions (best kept)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-text", action="store_true", help="leave out the engine's text index")
    p.add_argument("--no-chdb", action="store_true", help="leave out ClickHouse's indexes (chDB)")
    p.add_argument("--out", default="bench/out/zoo")
    p.add_argument("--no-plots", action="store_true")
    a = p.parse_args(argv)
    for nm in ("rows", "index_granularity", "queries", "absent", "reps"):
        if getattr(a, nm) < 1:
            raise SkipidxError(f"--{nm.replace('_', '-')} must be >= 1, got {getattr(a, nm)}")
    toks = [x.strip() for x in a.tokenizers.split(",") if x.strip()]
    for t in toks:
        zoo.zoo_tokenizer(t)     # an unknown name fails before any work
    with_chdb = not a.no_chdb
    if with_chdb:
        from skipidx.apps.research.chdb_compare import chdb_available

        if not chdb_available():
            raise SkipidxError("chDB is not installed (pip install chdb), or pass --no-chdb")
    rows, desc = [], {}
    t0 = time.perf_counter()
    loads = [os.getloadavg()[0]]
    for c in [x.strip() for x in a.corpora.split(",") if x.strip()]:
        values, d = load_corpus(c, a.rows, a.seed)
        desc[c] = d
        present = zoo.present_tokens(values, a.queries, a.seed)
        needles = zoo.substring_needles(values, a.queries, a.seed)
        for t in toks:
            rows += zoo.run_corpus(values, corpus=c, rows_per_granule=a.index_granularity, tokens=present,
                                   needles=needles, tokenizer=t, seed=a.seed, n_absent=a.absent, reps=a.reps,
                                   with_text=not a.no_text, with_chdb=with_chdb)
            loads.append(os.getloadavg()[0])
    chdb_v = ""
    if with_chdb:
        from skipidx.apps.research import chdb_session

        chdb_v = f"; chDB {str(chdb_session.query('SELECT version()', 'TSVRaw')).strip()}"
    method = (f"{a.index_granularity} rows/granule, {a.rows:,} rows/corpus, {a.queries} present tokens (hasToken) "
              f"or substrings of 3-12 chars (LIKE), {a.absent} absent hashes x every granule; filters built once "
              f"after a warm-up build, probes best of {a.reps} after a warm-up call (both excluded); SQL indexes: "
              f"one warm-up query, then each query once; {platform.machine()} {os.cpu_count()} CPUs, 1-min load "
              f"{min(loads):.1f}-{max(loads):.1f} during the run; seed {a.seed}{chdb_v}")
    data = zoo.rows_to_dicts(rows)
    md = zoo_markdown(data, desc, method)
    out = ensure_dir(a.out)
    paths = write_outputs(out, "zoo", md, {"meta": run_metadata(), "method": method, "corpora": desc,
                                           "rows": json.loads(json.dumps(data, default=float)),
                                           "seconds": time.perf_counter() - t0})
    written = [str(v) for v in paths.values()]
    if not a.no_plots:
        written += zoo_plots(data, out, method)
    sys.stdout.write(md)
    sys.stdout.write(f"\nwritten: {', '.join(written)}\n")
    return 0


# ----------------------------------------------------------------------------- dispatch

def bench_main(argv: list[str]) -> int:
    """``skipidx bench fpp|indexes ...``."""
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write("usage: skipidx bench fpp [--quick] [--out DIR]\n"
                         "       skipidx bench indexes DATA.parquet --column COL [--queries FILE] [--quick] "
                         "[--out DIR]\n       skipidx bench report RESULT.json [--chdb-from OTHER.json] [--out DIR]\n"
                         "       skipidx bench zoo [--corpora ...] [--tokenizers ...] [--no-chdb] [--out DIR]\n"
                         "(see `skipidx bench fpp --help`, `skipidx bench indexes --help`, `skipidx bench zoo --help`)\n")
        return 0 if argv else 1
    cmd, rest = argv[0], argv[1:]
    if cmd == "fpp":
        return _bench_fpp(rest)
    if cmd == "indexes":
        return _bench_indexes(rest)
    if cmd == "report":
        return _bench_report(rest)
    if cmd == "zoo":
        return _bench_zoo(rest)
    raise SkipidxError(f"unknown bench {cmd!r}: use `skipidx bench fpp`, `skipidx bench indexes`, "
                       "`skipidx bench report` or `skipidx bench zoo`")
