"""The main job on the embedded engine: ``skipidx demo`` / ``make demo``.

Generates the seeded log dataset (skipidx.apps.datagen), creates a table with the
index types of the design (tokenbf_v1, ngrambf_v1, bloom_filter, minmax, set
and the adaptive sbbf), inserts it, then runs every ``sql_examples/*.sql``
and prints each result with its pruning, ending with a summary table.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

from skipidx.apps import datagen
from skipidx.core.errors import SkipidxError
from skipidx.core.progress import Progress

DEMO_TABLE = "logs"
DEMO_INDEXES = """,
    INDEX msg_tokens msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1,
    INDEX msg_ngrams msg TYPE ngrambf_v1(3, 65536, 2, 0) GRANULARITY 1,
    INDEX msg_tokens_auto msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX msg_ngrams_auto msg TYPE sbbf('ngram', n = 4, min_n = 3, fpp = 0.01) GRANULARITY 1,
    INDEX msg_lower lower(msg) TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1,
    INDEX ts_minmax ts TYPE minmax GRANULARITY 1,
    INDEX status_set http_status TYPE set(100) GRANULARITY 4"""


def demo_ddl(table: str = DEMO_TABLE) -> str:
    """The demo table's CREATE TABLE statement."""
    return datagen.SCHEMA_SQL.format(table=table, indexes=DEMO_INDEXES)


def default_examples_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "sql_examples"


def build_demo_table(db, rows: int, seed: int = 42, table: str = DEMO_TABLE, quiet: bool = False) -> float:
    """Create and fill the demo table; returns seconds spent inserting (index builds included)."""
    db.sql(f"DROP TABLE IF EXISTS {table}")
    db.sql(demo_ddl(table))
    stream = open("/dev/null", "w") if quiet else None
    t_insert = 0.0
    with Progress("insert", rows, stream=stream) as bar:
        for batch in datagen.generate(rows, seed, batch_rows=min(rows, 1_000_000) or 1):
            t0 = time.perf_counter()
            db.insert(table, batch)
            t_insert += time.perf_counter() - t0
            bar.update(int(batch.column(0)[-1].as_py()) + 1)
    if stream is not None:
        stream.close()
    return t_insert


def example_files(examples_dir: Path) -> list[Path]:
    files = sorted(p for p in examples_dir.glob("*.sql"))
    if not files:
        raise SkipidxError(f"no .sql files in {examples_dir}")
    return files


def render_results(results) -> str:
    """The deterministic text of a list of Results (what the .out files hold)."""
    import io

    from skipidx.apps.render import print_result

    buf = io.StringIO()
    for res in results:
        print_result(res, out=buf, show_stats=False)
    return buf.getvalue()


#: the dataset the .out files of sql_examples/ were written for
EXPECTED_ROWS, EXPECTED_SEED = 1_000_000, 42


def _without_indexes(db, text: str):
    """(granules kept/total, ms) of the last SELECT of `text` with the skip indexes
    off (``use_skip_indexes = 0``: only the ORDER BY key's min/max prunes)."""
    from skipidx.sql import parse
    from skipidx.sql.ast import Select

    stmts = parse(text)
    if not stmts or not isinstance(stmts[-1], Select) or stmts[-1].table is None:
        return None
    db.sql("SET use_skip_indexes = 0")
    try:
        t0 = time.perf_counter()
        res = db.execute(dataclasses.replace(stmts[-1], format=None, outfile=None))
        ms = (time.perf_counter() - t0) * 1000
    finally:
        db.sql("SET use_skip_indexes = 1")
    st = res.stats
    if st is None or st.granules_total is None:
        return None
    return f"{st.granules_selected}/{st.granules_total}", ms


def run_demo(dbdir: str | None, rows: int = 1_000_000, examples_dir: str | None = None, seed: int = 42,
             write_expected: bool = False) -> int:
    """Build the demo table, run every example (its result, pruning and cost
    without indexes), check each against its .out file; 1 if any differs."""
    import skipidx
    from skipidx.apps.render import format_table, print_result

    ex_dir = Path(examples_dir) if examples_dir else default_examples_dir()
    files = example_files(ex_dir)
    check = (rows, seed) == (EXPECTED_ROWS, EXPECTED_SEED) and not write_expected
    failed: list[str] = []
    with skipidx.connect(dbdir) as db:
        where = db.path
        print(f"skipidx demo: {rows:,} log rows (seed {seed}) into table '{DEMO_TABLE}' "
              f"in {where}{' (temporary)' if dbdir is None else ''}", flush=True)
        t_insert = build_demo_table(db, rows, seed)
        print(f"inserted {rows:,} rows with 9 indexes in {t_insert:.1f} s "
              f"({rows / max(t_insert, 1e-9):,.0f} rows/s)\n", flush=True)
        summary = []
        for path in files:
            text = path.read_text(encoding="utf-8")
            comment = [ln[2:].strip() for ln in text.splitlines() if ln.startswith("--")]
            print(f"=== {path.name}: {comment[0] if comment else ''}")
            body = "\n".join(ln for ln in text.splitlines() if not ln.startswith("--")).strip()
            print(body)
            t0 = time.perf_counter()
            results = db.sql_all(text)
            ms = (time.perf_counter() - t0) * 1000
            for res in results:
                print_result(res)
            got = render_results(results)
            expected = path.with_suffix(".out")
            if write_expected:
                expected.write_text(got, encoding="utf-8")
                verdict = "written"
            elif not check:
                verdict = "-"
            elif not expected.exists():
                verdict = "no .out"
            else:
                verdict = "pass" if got == expected.read_text(encoding="utf-8") else "FAIL"
                if verdict == "FAIL":
                    failed.append(path.name)
            st = results[-1].stats if results else None
            kept = f"{st.granules_selected}/{st.granules_total}" if st is not None and st.granules_total is not None else "-"
            base = _without_indexes(db, text)
            summary.append((path.stem, kept, f"{ms:.1f}", base[0] if base else "-",
                            f"{base[1]:.1f}" if base else "-", verdict))
            print()
        print(format_table(["example", "granules kept/total", "ms", "without indexes: granules", "ms", "check"],
                           summary))
        if check:
            n = len(files)
            print(f"\n{n - len(failed)}/{n} examples match their .out files"
                  + (f"; differ: {', '.join(failed)}" if failed else ""))
        else:
            print(f"\n(.out files hold the {EXPECTED_ROWS:,}-row, seed {EXPECTED_SEED} answers: not checked "
                  f"for {rows:,} rows, seed {seed})")
        if dbdir is None:
            print(f"\nThe database was temporary ({where}) and is removed now. Keep one with "
                  "`skipidx demo ./demo_db`, then try:")
            shown = "./demo_db"
        else:
            print(f"\nThe database is in {where}. Try:")
            shown = dbdir
        print(f"  skipidx sql {shown}                      # the REPL: SELECT ... FROM logs WHERE hasToken(msg, 'kraken');")
        print(f"  skipidx sql {shown} \"EXPLAIN indexes = 1 SELECT count() FROM logs WHERE hasToken(msg, 'kraken')\"")
        print(f"  skipidx sql {shown} \"SELECT * FROM logs WHERE hasToken(msg, 'kraken') LIMIT 5\" --format JSONEachRow --stats")
        print("  python -c \"import skipidx, duckdb; db = skipidx.connect('" + shown + "'); "
              "r = db.scan('logs', where=\\\"hasToken(msg, 'kraken')\\\"); "
              "print(duckdb.sql('SELECT service, count(*) FROM r GROUP BY ALL'))\"")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_demo(None))
