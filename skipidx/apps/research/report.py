"""Output helpers of the research bench: markdown tables, JSON next to them, run metadata.

Every bench writes ``NAME.md`` (the human table), ``NAME.json`` (the same
figures, machine-readable, so runs can be compared with a diff or pandas) and
its PNG plots into one output directory.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
from typing import Any, Sequence

import numpy as np

from skipidx.core.errors import SkipidxError


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub markdown table. ``align``: one char per column, 'l' or 'r' (default: right for numbers)."""
    if align is None:
        align = "".join("r" if rows and isinstance(rows[0][i], (int, float, np.integer, np.floating))
                        and not isinstance(rows[0][i], bool) else "l" for i in range(len(header)))
    sep = ["---:" if a == "r" else ":---" for a in align]
    out = ["| " + " | ".join(str(h) for h in header) + " |", "| " + " | ".join(sep) + " |"]
    for r in rows:
        out.append("| " + " | ".join(fmt_cell(v) for v in r) + " |")
    return "\n".join(out)


def fmt_cell(v: Any) -> str:
    """Compact, stable text for a table cell."""
    if v is None:
        return "—"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "—"
        if f == 0:
            return "0"
        if abs(f) >= 1000:
            return f"{f:,.0f}"
        if abs(f) >= 10:
            return f"{f:.1f}"
        return f"{f:.3g}"
    return str(v).replace("|", "\\|")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, bytes):
        return o.decode("utf-8", "replace")
    raise TypeError(f"not JSON-serializable: {type(o).__name__}")


def run_metadata() -> dict:
    """Where and when a run happened (kept in every JSON so runs stay comparable)."""
    import skipidx

    return {
        "skipidx_version": skipidx.__version__,
        "utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def ensure_dir(path: str) -> str:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise SkipidxError(f"cannot create output directory {path!r}: {e.strerror}") from None
    return path


def write_outputs(out_dir: str, name: str, markdown: str, data: dict) -> dict[str, str]:
    """Write ``name.md`` and ``name.json`` into `out_dir`; returns their paths."""
    ensure_dir(out_dir)
    md_path = os.path.join(out_dir, f"{name}.md")
    js_path = os.path.join(out_dir, f"{name}.json")
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(markdown)
    with open(js_path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, default=_json_default, allow_nan=True)
        f.write("\n")
    return {"markdown": md_path, "json": js_path}
