"""Capabilities are typed attributes with defaults on the base classes (granules, conditions,
aggregators, index types), so the pruner, scan and store ask them directly instead of sniffing
objects with getattr/hasattr."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from skipidx.indexes.base import Atom, IndexAggregator, IndexCondition, IndexDef, IndexGranules, IndexType, \
    get_index_type

ROOT = Path(__file__).resolve().parents[2]


def test_base_defaults():
    assert IndexGranules.saturated is None
    assert IndexCondition.exact is False
    assert IndexAggregator.whole_part is False
    assert IndexType.accepts_stored_params is False and IndexType.version == 1


def test_granules_capabilities_of_the_builtins():
    d = IndexDef("i", "s", None, "minmax")
    mm = get_index_type("minmax")(d, pa.string())
    g = mm.aggregator().build(pa.array(["a", "b", "c"]), np.array([0, 2]), np.array([2, 1]))
    assert g.saturated is None and g.saturated_count == 0 and g.nbytes == 64 * len(g)
    cond = mm.condition(Atom("equals", "s", None, (b"a",)))
    assert cond.exact is False and cond.exact_rows(g) is None
    assert not mm.aggregator().merges_granules and not mm.aggregator().whole_part

    bf = get_index_type("tokenbf_v1")(IndexDef("t", "s", None, "tokenbf_v1", (32, 2, 0)), pa.string())
    sg = bf.aggregator().build(pa.array(["a b", "c"]), np.array([0, 1]), np.array([1, 1]))
    assert sg.saturated is not None and sg.saturated_count == int(sg.saturated.sum())
    assert sg.nbytes == sg.words.nbytes

    tx = get_index_type("text")(IndexDef("x", "s", None, "text", (), (("tokenizer", "splitByNonAlpha"),)),
                                pa.string())
    agg = tx.aggregator()
    assert agg.whole_part and agg.merges_granules


#: getattr/hasattr left in these packages: the user's inputs (Arrow protocols), os, pyarrow.compute
#: and pyiceberg's objects, whose attributes differ across its versions.
_ALLOWED = re.compile(r"hasattr\((data|src), \"__(arrow_c_stream|arrow_c_array|next)__\"\)"
                      r"|hasattr\(os, \"register_at_fork\"\)|getattr\(pc, func\)"
                      r"|getattr\(tbl\.metadata, \"statistics\", \[\]\)|hasattr\(tbl, \"update_statistics\"\)")
#: files other work owns at the moment (the text index, external tables), not scanned here
_NOT_SCANNED = {"indexes/text.py", "indexes/text_postings.py", "store/external.py", "store/lake.py",
                "store/lake_stats.py", "store/sidecar.py"}


def test_no_attribute_sniffing_at_the_pruner_scan_store_and_indexes():
    found = []
    for pkg in ("planner", "indexes", "execution", "store"):
        for p in sorted((ROOT / "skipidx" / pkg).rglob("*.py")):
            rel = p.relative_to(ROOT / "skipidx").as_posix()
            if rel in _NOT_SCANNED:
                continue
            for n, line in enumerate(p.read_text().splitlines(), 1):
                for m in re.finditer(r"\b(getattr|hasattr)\([^)]*\)?", line):
                    if not _ALLOWED.search(line[m.start():]):
                        found.append(f"{rel}:{n}: {line.strip()}")
    assert found == []
