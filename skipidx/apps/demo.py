"""The main job on the embedded engine: ``skipidx demo`` / ``make demo``.

Generates the seeded log dataset (skipidx.apps.datagen), creates a table with the
index types of the design (tokenbf_v1, ngrambf_v1, bloom_filter, minmax, set
and the adaptive sbbf), inserts it, then runs every ``sql_examples/*.sql``
and prints each result with its pruning, ending with a summary table.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from skipidx.apps import datagen
from skipidx.core.errors import SkipidxError
from skipidx.apps.progress import Progress

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


def run_demo(dbdir: str | None, rows: int = 1_000_000, examples_dir: str | None = None, seed: int = 42,
             write_expected: bool = False) -> int:
    import skipidx
    from skipidx.apps.render import format_table, print_result

    ex_dir = Path(examples_dir) if examples_dir else default_examples_dir()
    files = example_files(ex_dir)
    with skipidx.connect(dbdir) as db:
        print(f"skipidx demo: {rows:,} log rows (seed {seed}) into table '{DEMO_TABLE}'", flush=True)
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
            if write_expected:
                path.with_suffix(".out").write_text(render_results(results), encoding="utf-8")
            st = results[-1].stats if results else None
            kept = f"{st.granules_selected}/{st.granules_total}" if st is not None and st.granules_total is not None else "-"
            summary.append((path.stem, kept, f"{ms:.1f}"))
            print()
        print(format_table(["example", "granules kept/total", "ms"], summary))
    return 0


if __name__ == "__main__":
    sys.exit(run_demo(None))
