"""Date and DateTime text as ClickHouse reads it in a comparison (``d = '2024-01-02'``).

The one parser for the binder (constants) and the kernels (string literals
compared with Date/DateTime arrays). ClickHouse accepts ``YYYY-M-D`` and
``YYYYMMDD``, and for DateTime an optional `` hh:mm:ss`` or ``Thh:mm:ss``.
"""
from __future__ import annotations

import datetime as _dt
import re

_DATE = r"(\d{4})-(\d{1,2})-(\d{1,2})|(\d{4})(\d{2})(\d{2})"
_DATE_RE = re.compile(rf"^\s*(?:{_DATE})\s*$")
_DATETIME_RE = re.compile(rf"^\s*(?:{_DATE})(?:[ T](\d{{1,2}}):(\d{{2}}):(\d{{2}})(?:\.(\d{{1,9}}))?)?\s*$")


def _ymd(groups: tuple) -> tuple[int, int, int]:
    g = [x for x in groups[:6] if x is not None]
    return int(g[0]), int(g[1]), int(g[2])


def parse_date(text: str | bytes) -> _dt.date:
    """The date `text` names; ValueError when it is not one."""
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    m = _DATE_RE.match(s)
    if m is None:
        raise ValueError(s)
    return _dt.date(*_ymd(m.groups()))


def parse_datetime(text: str | bytes) -> _dt.datetime:
    """The date and time `text` names (time 00:00:00 when absent); ValueError when it is not one."""
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    m = _DATETIME_RE.match(s)
    if m is None:
        raise ValueError(s)
    hh, mi, ss, frac = m.groups()[6:]
    micro = int((frac or "0")[:6].ljust(6, "0"))
    return _dt.datetime(*_ymd(m.groups()), int(hh or 0), int(mi or 0), int(ss or 0), micro)


def truncate_to_unit(v: _dt.datetime, unit: str) -> _dt.datetime:
    """`v` cut to a DateTime/DateTime64 column's unit (text converts so: fractions dropped)."""
    if unit == "s":
        return v.replace(microsecond=0)
    if unit == "ms":
        return v.replace(microsecond=v.microsecond // 1000 * 1000)
    return v
