"""The database's log of recent SELECTs (ClickHouse's ``system.query_log``, kept small).

Each SELECT that ran (through ``db.sql``, ``db.execute`` or a cursor) appends
one JSON line to ``<database>/query_log``: the statement as SQL text with its
``{name:Type}`` placeholders, the parameter values it ran with (as text), the
event time, the duration, and the pruning figures (granules total / selected).
Bounded by rotation: when the file passes ``QUERY_LOG_MAX_BYTES`` it is renamed
to ``query_log.1`` (replacing the older one), so an append is one short write
and the log never holds more than about twice that; reading keeps the last
``QUERY_LOG_MAX_ENTRIES`` entries of the two files.

The log is advisory (``skipidx advise`` reads it): a failed write never fails
the query, and a line that does not parse is skipped on read. ``db.query_log()``
returns it as an Arrow table with ClickHouse's column names; ``SELECT ... FROM
system.query_log`` reads it as ClickHouse's table (engine/system_tables.py: also
``read_rows``, ``result_rows``, ``tables``, ``query_id`` of each entry).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import uuid
from typing import Any, Mapping

import pyarrow as pa

QUERY_LOG_FILE = "query_log"
QUERY_LOG_MAX_ENTRIES = 1000
#: the size at which the log rotates (the log holds at most about twice this)
QUERY_LOG_MAX_BYTES = 1 << 20
#: the longest query text kept (a generated IN list of a million values is not a workload sample)
QUERY_LOG_MAX_CHARS = 100_000


def _param_text(v: Any) -> Any:
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [_param_text(x) for x in v]
    return str(v)


def log_select(db_path: str, query: str, params: Mapping[str, Any] | None, duration_s: float,
               stats: Any = None, *, result_rows: int | None = None, tables: list[str] | None = None,
               failure: tuple[str, str, int] | None = None) -> None:
    """Append one SELECT to the log (best effort: an OSError is swallowed). `result_rows`:
    the rows of a result computed at once (None for a streamed one: its scan has not run, so
    its ``read_rows`` is left out too); `tables`: what it read (``default.t``, ``system.parts``);
    `failure`: (ClickHouse's query_log type, message, code) of a SELECT that failed."""
    if len(query) > QUERY_LOG_MAX_CHARS:
        return
    rec = {"event_time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds"),
           "query": query, "params": {k: _param_text(v) for k, v in (params or {}).items()},
           "query_duration_ms": round(duration_s * 1e3, 3), "query_id": str(uuid.uuid4())}
    if stats is not None:
        # pruning figures only: a streamed result's rows_read grows after the statement returns
        for k in ("granules_total", "granules_selected"):
            v = getattr(stats, k, None)
            if v is not None:
                rec[k] = int(v)
        if result_rows is not None and getattr(stats, "rows_read", None) is not None:
            rec["read_rows"] = int(stats.rows_read)
    if result_rows is not None:
        rec["result_rows"] = int(result_rows)
    if tables:
        rec["tables"] = list(tables)
    if failure is not None:
        rec["type"], rec["exception"], rec["exception_code"] = failure
    path = os.path.join(db_path, QUERY_LOG_FILE)
    line = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > QUERY_LOG_MAX_BYTES:
            # another process may rotate at the same moment: a lost rename only drops old entries
            os.replace(path, path + ".1")
    except OSError:
        pass


def read_entries(db_path: str, limit: int | None = None, failed: bool = False) -> list[dict]:
    """The logged SELECTs that ran, oldest first (the last `limit` of them, at most
    QUERY_LOG_MAX_ENTRIES); `failed`: those that failed too."""
    path = os.path.join(db_path, QUERY_LOG_FILE)
    raw: list[bytes] = []
    for p in (path + ".1", path):
        try:
            with open(p, "rb") as fh:
                raw += fh.read().splitlines()
        except FileNotFoundError:
            pass
    out = []
    for ln in raw:
        try:
            rec = json.loads(ln)
        except ValueError:
            continue   # a torn or foreign line: the log is advisory
        if isinstance(rec, dict) and isinstance(rec.get("query"), str) and (failed or "exception" not in rec):
            out.append(rec)
    out = out[-QUERY_LOG_MAX_ENTRIES:]
    return out[-limit:] if limit else out


def query_log_table(db_path: str, limit: int | None = None) -> pa.Table:
    """The log as ClickHouse's ``system.query_log`` columns (those it has)."""
    recs = read_entries(db_path, limit)

    def col(name, typ, default=None):
        return pa.array([r.get(name, default) for r in recs], typ)

    times = [_dt.datetime.fromisoformat(r["event_time"]) if isinstance(r.get("event_time"), str) else None
             for r in recs]
    return pa.table({
        "event_time": pa.array(times, pa.timestamp("us", tz="UTC")),
        "query": col("query", pa.string()),
        "query_parameters": pa.array([json.dumps(r.get("params") or {}, ensure_ascii=False) for r in recs],
                                     pa.string()),
        "query_duration_ms": col("query_duration_ms", pa.float64()),
        "granules_total": col("granules_total", pa.uint64()),
        "granules_selected": col("granules_selected", pa.uint64()),
    })
