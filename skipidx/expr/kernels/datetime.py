"""Date and time functions (ClickHouse 26.9 semantics, checked against chDB).

DateTime values are instants (Arrow timestamps); a column's time zone
(``DateTime('Asia/Tokyo')``) is its Arrow timestamp's zone and the calendar
parts are read in it; without a zone they are read in UTC, the session time
zone skipidx runs with (and the tests give chDB).
"""
from __future__ import annotations

import datetime as _dt

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.core.arrays import one_array

ArrayLike = pa.Array | pa.ChunkedArray

_UNIT_S = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}
#: ClickHouse's Date is days since 1970 as UInt16: toDate(n) reads n < 65536 as days, else as seconds.
_DATE_DAYS_LIMIT = 65536


def _one(a: ArrayLike) -> pa.Array:
    return one_array(a)


def _temporal(a: ArrayLike, fn: str) -> pa.Array:
    a = _one(a)
    if not (pa.types.is_timestamp(a.type) or pa.types.is_date(a.type)):
        raise SkipidxError(f"{fn}: expected a Date or DateTime argument, got {a.type}")
    return a


def part(a: ArrayLike, which: str) -> pa.Array:
    """toYear .. toSecond, toQuarter, toDayOfWeek (1 = Monday), toDayOfYear, toYYYYMM, toYYYYMMDD."""
    a = _temporal(a, which)
    if which == "year":
        return pc.year(a).cast(pa.uint16())
    if which == "quarter":
        return pc.quarter(a).cast(pa.uint8())
    if which == "month":
        return pc.month(a).cast(pa.uint8())
    if which == "day":
        return pc.day(a).cast(pa.uint8())
    if which == "day_of_week":
        return pc.add(pc.day_of_week(a), 1).cast(pa.uint8())
    if which == "day_of_year":
        return pc.day_of_year(a).cast(pa.uint16())
    if which in ("hour", "minute", "second"):
        if pa.types.is_date(a.type):
            return pa.array(np.zeros(len(a), np.uint8), pa.uint8(), mask=_mask(a))
        return getattr(pc, which)(a).cast(pa.uint8())
    if which == "yyyymm":
        return pc.add(pc.multiply(pc.year(a), 100), pc.month(a)).cast(pa.uint32())
    if which == "yyyymmdd":
        return pc.add(pc.add(pc.multiply(pc.year(a), 10000), pc.multiply(pc.month(a), 100)), pc.day(a)).cast(pa.uint32())
    raise SkipidxError(f"unknown date part {which!r}")


def _mask(a: pa.Array) -> np.ndarray | None:
    return a.is_null().to_numpy(zero_copy_only=False) if a.null_count else None


def start_of(a: ArrayLike, unit: str) -> pa.Array:
    """toStartOfMinute/Hour/Day (DateTime) and toStartOfWeek (Sunday)/Month/Quarter/Year (Date)."""
    a = _temporal(a, f"toStartOf{unit}")
    if unit in ("minute", "hour", "day"):
        if pa.types.is_date(a.type):
            a = a.cast(pa.timestamp("s"))
        tz = a.type.tz
        if not tz:
            return pc.floor_temporal(a, unit=unit).cast(pa.timestamp("s"))
        if unit == "day":
            # the instant of local midnight (a DST change during the day moves it off the clock math)
            local_midnight = to_date(a).cast(pa.timestamp("s"))
            return pc.assume_timezone(local_midnight, timezone=tz, ambiguous="earliest",
                                      nonexistent="earliest").cast(pa.timestamp("s", tz))
        # within an hour local and UTC clocks move together: take off the local remainder
        local = pc.local_timestamp(a).cast(pa.timestamp(a.type.unit))
        rem = pc.subtract(local.cast(pa.int64()), pc.floor_temporal(local, unit=unit).cast(pa.int64()))
        inst = pc.subtract(a.cast(pa.timestamp(a.type.unit)).cast(pa.int64()), rem)
        return inst.cast(pa.timestamp(a.type.unit)).cast(pa.timestamp("s")).cast(pa.timestamp("s", tz))
    if unit == "week":   # mode 0: weeks start on Sunday
        d = to_date(a)
        days = d.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        # 1970-01-01 was a Thursday: (days + 4) % 7 is the weekday with Sunday = 0
        start = days - (days + 4) % 7
        start = np.maximum(start, 0)     # ClickHouse clamps to the Date range
        return pa.array(start.astype(np.int32), pa.int32(), mask=_mask(d)).cast(pa.date32())
    if unit in ("month", "quarter", "year"):
        return pc.floor_temporal(to_date(a), unit=unit)
    raise SkipidxError(f"unknown unit {unit!r}")


def to_date(a: ArrayLike) -> pa.Array:
    """toDate: a DateTime's calendar day in its zone; a number below 65536 is a day number,
    a larger one seconds since the epoch; a String 'YYYY-MM-DD[ hh:mm:ss]'."""
    a = _one(a)
    t = a.type
    if pa.types.is_date32(t):
        return a
    if pa.types.is_date64(t):
        return a.cast(pa.date32())
    if pa.types.is_timestamp(t):
        if t.tz:
            local = pc.local_timestamp(a).cast(pa.timestamp(t.unit))
            days = pc.floor_temporal(local, unit="day").cast(pa.date32())
        else:
            days = pc.floor_temporal(a, unit="day").cast(pa.date32())
        # Date starts at 1970-01-01: ClickHouse clamps earlier days to it
        v = np.maximum(days.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False), 0)
        return pa.array(v.astype(np.int32), pa.int32(), mask=_mask(days)).cast(pa.date32())
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        v = a.cast(pa.int64(), safe=False).fill_null(0).to_numpy(zero_copy_only=False)
        days = np.where(v < _DATE_DAYS_LIMIT, v, np.floor_divide(v, 86400))
        return pa.array(days.astype(np.int32), pa.int32(), mask=_mask(a)).cast(pa.date32())
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        return parse_datetime(a, "toDate", date_only=True)
    raise SkipidxError(f"toDate: cannot convert {t}")


def to_datetime(a: ArrayLike, tz: str | None = None, precision: int | None = None,
                name: str = "toDateTime") -> pa.Array:
    """toDateTime / toDateTime64(x, p): Strings parse as 'YYYY-MM-DD[ hh:mm:ss[.f]]' in `tz`
    (UTC when none), numbers are seconds since the epoch, Dates are midnight."""
    a = _one(a)
    t = a.type
    unit = "s" if not precision else "ms" if precision <= 3 else "us" if precision <= 6 else "ns"
    target = pa.timestamp(unit, tz)
    if pa.types.is_timestamp(t):
        return _retick(a.cast(pa.timestamp(t.unit)), unit, precision).cast(target)
    if pa.types.is_date(t) or pa.types.is_integer(t):
        secs = a.cast(pa.timestamp("s")).cast(pa.int64()) if pa.types.is_date(t) else a.cast(pa.int64(), safe=False)
        if unit == "s":   # DateTime is UInt32 seconds: ClickHouse wraps what does not fit
            secs = pa.array(np.mod(secs.fill_null(0).to_numpy(zero_copy_only=False), 2**32), pa.int64(),
                            mask=_mask(a))
        return pc.multiply(secs, _UNIT_S[unit]).cast(pa.timestamp(unit)).cast(target)
    if pa.types.is_floating(t):
        v = a.cast(pa.float64()).to_numpy(zero_copy_only=False)
        ticks = np.trunc(np.nan_to_num(v) * _UNIT_S[unit]).astype(np.int64)
        return pa.array(ticks, pa.int64(), mask=_mask(a)).cast(pa.timestamp(unit)).cast(target)
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        # toDateTime / CAST / toDateTime64 read a text as parseDateTimeBestEffort does ('T',
        # a fraction, no seconds, one-digit fields, Z or an offset; the day checked against
        # the month), as ClickHouse 26.9 does; only the OrNull/OrZero forms are strict
        naive = parse_datetime(a, name, unit=unit, best_effort=True)
        if tz:
            s = a.cast(pa.string()) if not pa.types.is_string(t) else a
            zoned = pc.match_substring_regex(
                s, pattern=r"(:\d{2}(\.\d+)?\s*(Z|[+-]\d{2}(:?\d{2})?)|^\s*\d{9,10})\s*$").fill_null(False)
            local = pc.assume_timezone(naive, timezone=tz, ambiguous="earliest", nonexistent="earliest")
            naive = pc.if_else(zoned, naive.cast(pa.timestamp(naive.type.unit, tz)), local)
        return _retick(naive.cast(pa.timestamp(unit, tz) if tz else pa.timestamp(unit)), unit, precision).cast(target)
    raise SkipidxError(f"{name}: cannot convert {t}")


def _retick(a: pa.Array, unit: str, precision: int | None) -> pa.Array:
    """Truncate to `unit` (and to DateTime64(p)'s tick when p is not a whole unit)."""
    src = _UNIT_S[a.type.unit]
    dst = _UNIT_S[unit]
    v = a.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if src > dst:
        v = np.floor_divide(v, src // dst)
    elif dst > src:
        v = v * (dst // src)
    if precision is not None and precision not in (0, 3, 6, 9):
        tick = 10 ** ({"s": 0, "ms": 3, "us": 6, "ns": 9}[unit] - precision)
        v = np.floor_divide(v, tick) * tick
    return pa.array(v, pa.int64(), mask=_mask(a)).cast(pa.timestamp(unit))


_ISO = (r"^\s*(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})(?:[T ](?P<h>\d{1,2}):(?P<mi>\d{2})"
        r"(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?)?)?\s*(?P<z>Z|[+-]\d{2}(?::?\d{2})?)?\s*$")


def parse_datetime(a: ArrayLike, name: str, *, date_only: bool = False, unit: str = "s",
                   on_error: str = "raise", best_effort: bool = False) -> pa.Array:
    """Text to a (naive, UTC-read) timestamp or a Date. `on_error`: raise | null | zero.

    Strict form (toDate/toDateTime): YYYY-MM-DD[ hh:mm:ss[.fraction]]. `best_effort`
    (parseDateTimeBestEffort) also takes 'T', 'Z' and offsets, and a bare epoch number."""
    a = _one(a)
    s = a.cast(pa.string()) if not pa.types.is_string(a.type) else a
    if best_effort or date_only:
        pattern = _ISO
    else:   # toDateTimeOrNull/OrZero: two-digit fields, seconds required, a fraction only for DateTime64
        pattern = (r"^\s*(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})(?:[ T](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
                   + (r"(?:\.(?P<f>\d{1,9}))?" if unit != "s" else r"(?P<f>)") + r")?(?P<z>)\s*$")
    parts = pc.extract_regex(s, pattern=pattern)
    ok = pc.is_valid(parts)
    n = len(s)
    valid_in = pc.is_valid(s).to_numpy(zero_copy_only=False)
    okn = ok.to_numpy(zero_copy_only=False)

    def field(i: int, default: int = 0) -> np.ndarray:
        f = pc.struct_field(parts, [i])
        f = pc.if_else(pc.equal(pc.utf8_length(pc.fill_null(f, "")), 0), None, f)
        return pc.fill_null(pc.cast(f, pa.int64(), safe=False), default).to_numpy(zero_copy_only=False)

    if best_effort or not date_only:
        # a text of digits is seconds since the epoch: 9-10 of them for the best-effort forms,
        # any number (no blanks) for toDateTimeOrNull/OrZero, as ClickHouse reads them
        pat = r"^\s*\d{9,10}\s*$" if best_effort else r"^\d{1,10}$"
        digits = pc.match_substring_regex(s, pattern=pat).fill_null(False).to_numpy(zero_copy_only=False)
    else:
        digits = np.zeros(n, bool)
    y, mo, d = field(0, 1970), field(1, 1), field(2, 1)
    hh, mi, ss = field(3), field(4), field(5)
    frac_txt = pc.fill_null(pc.struct_field(parts, [6]), "")
    frac_len = pc.utf8_length(frac_txt).to_numpy(zero_copy_only=False)
    frac_val = pc.fill_null(pc.cast(pc.if_else(pc.equal(frac_txt, ""), None, frac_txt), pa.int64(), safe=False), 0) \
        .to_numpy(zero_copy_only=False)
    per = _UNIT_S[unit]
    sub = np.zeros(n, np.int64)
    if per > 1:
        scale = np.power(10.0, np.clip(9 - frac_len, 0, 9)).astype(np.int64)
        nanos = frac_val * scale
        sub = nanos // (10**9 // per)
    offset_s = np.zeros(n, np.int64)
    if best_effort:
        off = pc.fill_null(pc.struct_field(parts, [7]), "").to_pylist()
        for i, o in enumerate(off):
            if o and o != "Z":
                sign = -1 if o[0] == "-" else 1
                digs = o[1:].replace(":", "")
                offset_s[i] = sign * (int(digs[:2]) * 3600 + (int(digs[2:4]) if len(digs) > 2 else 0) * 60)
    good = okn & (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= 31) & (hh < 24) & (mi < 60) & (ss < 60)
    days = np.zeros(n, np.int64)
    if good.any():
        # toDate/toDateTime do not check the day against the month (2021-02-30 is 2021-03-02);
        # parseDateTimeBestEffort does
        if best_effort:
            ny, nm = np.where(mo == 12, y + 1, y), np.where(mo == 12, 1, mo + 1)
            good &= d <= _days_from_civil(ny, nm, np.ones_like(nm)) - _days_from_civil(y, mo, np.ones_like(mo))
        days = np.where(good, _days_from_civil(y, mo, d), 0)
    secs = days * 86400 + hh * 3600 + mi * 60 + ss - offset_s
    if digits.any():
        epoch = pc.fill_null(pc.cast(pc.if_else(pa.array(digits), pc.utf8_trim_whitespace(s), None), pa.int64(),
                                     safe=False), 0).to_numpy(zero_copy_only=False)
        secs = np.where(digits, epoch, secs)
        sub = np.where(digits, 0, sub)
        good = good | digits
    bad = valid_in & ~good
    if bad.any():
        if on_error == "raise":
            first = s[int(np.argmax(bad))].as_py()
            want = "YYYY-MM-DD" if date_only else "YYYY-MM-DD hh:mm:ss"
            raise SkipidxError(f"{name}: cannot parse {first!r} (expected {want})")
    mask = ~valid_in | (bad if on_error == "null" else np.zeros(n, bool))
    secs = np.where(bad, 0, secs)
    sub = np.where(bad, 0, sub)
    if date_only:
        return pa.array(np.floor_divide(secs, 86400).astype(np.int32), pa.int32(), mask=mask).cast(pa.date32())
    return pa.array(secs * per + sub, pa.int64(), mask=mask).cast(pa.timestamp(unit))


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_RELATIVE = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def date_diff(unit: str, a: ArrayLike, b: ArrayLike) -> pa.Array:
    """dateDiff(unit, a, b): boundaries of `unit` crossed from a to b (Int64), as ClickHouse counts."""
    u = unit.lower().rstrip("s") if isinstance(unit, str) else unit.decode().lower().rstrip("s")
    aliases = {"ss": "second", "mi": "minute", "hh": "hour", "dd": "day", "d": "day", "wk": "week",
               "mm": "month", "m": "month", "qq": "quarter", "yy": "year", "yyyy": "year"}
    u = aliases.get(u, u)
    x, y = _one(a), _one(b)
    if u in _RELATIVE:
        return pc.subtract(_relative(y, u), _relative(x, u))
    if u == "week":   # ClickHouse's toRelativeWeekNum: weeks start on Monday
        return pc.subtract(_week_num(y), _week_num(x))
    if u in ("month", "quarter", "year"):
        def num(t):
            yr = pc.year(t).cast(pa.int64())
            if u == "year":
                return yr
            if u == "quarter":
                return pc.add(pc.multiply(yr, 4), pc.subtract(pc.quarter(t).cast(pa.int64()), 1))
            return pc.add(pc.multiply(yr, 12), pc.subtract(pc.month(t).cast(pa.int64()), 1))
        return pc.subtract(num(y), num(x))
    raise SkipidxError(f"dateDiff: unknown unit {unit!r}")


def _seconds(t: pa.Array) -> pa.Array:
    if pa.types.is_date(t.type):
        return pc.multiply(t.cast(pa.int32()).cast(pa.int64()), 86400)
    if t.type.tz:
        t = pc.local_timestamp(t)
    v = t.cast(pa.timestamp(t.type.unit)).cast(pa.int64())
    return pc.divide(v, _UNIT_S[t.type.unit]) if _UNIT_S[t.type.unit] > 1 else v


def _relative(t: pa.Array, u: str) -> pa.Array:
    s = _seconds(t).to_numpy(zero_copy_only=False) if not _seconds(t).null_count else \
        _seconds(t).fill_null(0).to_numpy(zero_copy_only=False)
    return pa.array(np.floor_divide(s, _RELATIVE[u]), pa.int64(), mask=_mask(t))


def _week_num(t: pa.Array) -> pa.Array:
    days = _relative(t, "day").fill_null(0).to_numpy(zero_copy_only=False)
    return pa.array(np.floor_divide(days + 3, 7), pa.int64(), mask=_mask(t))


def add_interval(a: ArrayLike, unit: str, n: int) -> pa.Array:
    """See :func:`_add_interval`; DateTime and Date results saturate at their ranges, as ClickHouse's do."""
    out = _add_interval(a, unit, n)
    # calendar units saturate at the type's range; fixed-length units wrap around it (UInt16
    # days, UInt32 seconds), as ClickHouse's arithmetic does
    calendar = unit in ("month", "quarter", "year")
    if pa.types.is_date(out.type):
        v = out.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        v = np.clip(v, 0, 65535) if calendar else np.mod(v, 65536)
        return pa.array(v.astype(np.int32), pa.int32(), mask=_mask(out)).cast(pa.date32())
    if out.type.unit == "s":
        v = out.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        v = np.clip(v, 0, 2**32 - 1) if calendar else np.mod(v, 2**32)
        return pa.array(v, pa.int64(), mask=_mask(out)).cast(out.type)
    return out


def _add_interval(a: ArrayLike, unit: str, n: int) -> pa.Array:
    """Date/DateTime + n units (n may be negative). Months and years clamp the day to the
    month's last day (2020-01-31 + 1 month = 2020-02-29); a Date plus a sub-day unit is a DateTime."""
    x = _one(a)
    if unit in ("second", "minute", "hour", "millisecond", "microsecond", "nanosecond"):
        step = {"second": 1, "minute": 60, "hour": 3600}.get(unit)
        if pa.types.is_date(x.type):
            x = x.cast(pa.timestamp("s"))
        tu = x.type.unit
        if step is None:
            sub = {"millisecond": 1000, "microsecond": 10**6, "nanosecond": 10**9}[unit]
            if _UNIT_S[tu] < sub:
                raise SkipidxError(f"INTERVAL {unit} needs a DateTime64 of that precision")
            delta = n * (_UNIT_S[tu] // sub)
        else:
            delta = n * step * _UNIT_S[tu]
        return pc.add(x.cast(pa.int64()), _int64(delta)).cast(pa.timestamp(tu, x.type.tz))
    if unit in ("day", "week"):
        days = n * (7 if unit == "week" else 1)
        if pa.types.is_date(x.type):
            return pc.add(x.cast(pa.int32()).cast(pa.int64()), _int64(days)).cast(pa.int32()).cast(pa.date32())
        return pc.add(x.cast(pa.int64()), _int64(days * 86400 * _UNIT_S[x.type.unit])).cast(x.type)
    if unit in ("month", "quarter", "year"):
        months = n * {"month": 1, "quarter": 3, "year": 12}[unit]
        return _add_months(x, months)
    raise SkipidxError(f"unknown interval unit {unit!r}")


def _int64(v):
    """A step (a Python int, or per row a numpy array) as pyarrow.compute takes it."""
    return pa.array(v, pa.int64()) if isinstance(v, np.ndarray) else v


def _add_months(x: pa.Array, months: int) -> pa.Array:
    is_date = pa.types.is_date(x.type)
    d = x if is_date else (pc.local_timestamp(x) if x.type.tz else x)
    y = pc.year(d).cast(pa.int64()).fill_null(1970).to_numpy(zero_copy_only=False)
    m = pc.month(d).cast(pa.int64()).fill_null(1).to_numpy(zero_copy_only=False)
    day = pc.day(d).cast(pa.int64()).fill_null(1).to_numpy(zero_copy_only=False)
    total = y * 12 + (m - 1) + months
    ny, nm = np.floor_divide(total, 12), total % 12 + 1
    last = _days_from_civil(np.where(nm == 12, ny + 1, ny), np.where(nm == 12, 1, nm + 1), np.ones_like(nm)) - \
        _days_from_civil(ny, nm, np.ones_like(nm))
    nd = np.minimum(day, last)
    days = _days_from_civil(ny, nm, nd)
    if is_date:
        return pa.array(days.astype(np.int32), pa.int32(), mask=_mask(x)).cast(pa.date32())
    unit = x.type.unit
    per = _UNIT_S[unit]
    within = _seconds(d).fill_null(0).to_numpy(zero_copy_only=False) % 86400
    ticks = d.cast(pa.timestamp(unit)).cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False) % per \
        if per > 1 else 0
    local = (days * 86400 + within) * per + ticks
    out = pa.array(local, pa.int64(), mask=_mask(x)).cast(pa.timestamp(unit))
    if x.type.tz:
        out = pc.assume_timezone(out, timezone=x.type.tz, ambiguous="earliest", nonexistent="earliest")
    return out


def now(tz: str | None = None) -> _dt.datetime:
    """The statement's current time, to the second (one value per statement, as ClickHouse)."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0, tzinfo=None)


def today() -> _dt.date:
    return _dt.datetime.now(_dt.timezone.utc).date()


def to_unix_timestamp(a: ArrayLike) -> pa.Array:
    """toUnixTimestamp: seconds since the epoch (UInt32) of a DateTime[64] (its fraction
    dropped), of a Date's midnight in UTC, or of a String read as a DateTime."""
    a = _one(a)
    t = a.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        a = parse_datetime(a, "toUnixTimestamp")
        t = a.type
    if pa.types.is_date(t):
        a = a.cast(pa.date32()).cast(pa.timestamp("s"))
    elif not pa.types.is_timestamp(t):
        raise SkipidxError(f"toUnixTimestamp: expected a DateTime, Date or String argument, got {t}")
    secs = pc.floor_temporal(a, unit="second").cast(pa.timestamp(a.type.unit, None) if a.type.tz else a.type)
    v = secs.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False) // _UNIT_S[a.type.unit]
    return pa.array(v.astype(np.uint32), pa.uint32(), mask=_mask(a))


def to_monday(a: ArrayLike) -> pa.Array:
    """toMonday: the Date of the Monday of the value's week (in its zone)."""
    d = to_date(_temporal(a, "toMonday"))
    days = d.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    # 1970-01-01 was a Thursday: (days + 3) % 7 is the weekday with Monday = 0
    start = np.maximum(days - (days + 3) % 7, 0)     # clamped to the Date range as ClickHouse does
    return pa.array(start.astype(np.int32), pa.int32(), mask=_mask(d)).cast(pa.date32())


def start_of_minutes(a: ArrayLike, k: int, name: str) -> pa.Array:
    """toStartOfFiveMinutes / TenMinutes / FifteenMinutes: the DateTime floored to k minutes
    of the epoch (ClickHouse floors the instant, not the local clock: in a +05:45 zone
    toStartOfTenMinutes gives hh:55), its zone kept."""
    a = _one(a)
    if not pa.types.is_timestamp(a.type):
        raise SkipidxError(f"Illegal argument of type {a.type} for function {name} (a DateTime is required)")
    tz = a.type.tz
    utc = a.cast(pa.timestamp(a.type.unit))
    return pc.floor_temporal(utc, multiple=k, unit="minute").cast(pa.timestamp("s")).cast(pa.timestamp("s", tz))


def add_units(a: ArrayLike, n, unit: str, sign: int = 1) -> pa.Array:
    """addSeconds .. addYears / subtract* (and Date/DateTime +- an integer): `n` (a Python int
    or an integer column) units added, with add_interval's wrap-around and saturation."""
    if isinstance(n, int):
        return add_interval(a, unit, sign * n)
    x = _one(a)
    k = _one(n)
    if not pa.types.is_integer(k.type):
        raise SkipidxError(f"the number of {unit}s must be an integer, got {k.type}")
    steps = k.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) * sign
    out = add_interval(x, unit, steps)
    if k.null_count:
        out = pc.if_else(k.is_valid(), out, pa.scalar(None, out.type))
    return out


#: formatDateTime's specifiers (ClickHouse's MySQL-style set) as Arrow strftime text; those
#: Arrow has no spelling for (%e unpadded, %Q quarter, %f microseconds) are computed
_FORMAT_SPECS = {
    "a": "%a", "b": "%b", "c": "%m", "C": "%C", "d": "%d", "D": "%m/%d/%y", "F": "%Y-%m-%d", "G": "%G",
    "h": "%I", "H": "%H", "i": "%M", "I": "%I", "j": "%j", "k": "%H", "l": "%I", "m": "%m", "M": "%B",
    "p": "%p", "r": "%I:%M %p", "R": "%H:%M", "s": "%S", "S": "%S", "T": "%H:%M:%S", "u": "%u", "V": "%V",
    "w": "%w", "W": "%A", "y": "%y", "Y": "%Y", "z": "%z", "n": "\n", "t": "\t", "%": "%%",
}
_FORMAT_COMPUTED = ("e", "Q", "f")


def format_pieces(fmt: bytes | str) -> list[tuple[str, str]]:
    """A formatDateTime format as pieces: ("strftime", Arrow format) or ("computed", letter);
    SkipidxError for a specifier ClickHouse does not know."""
    f = fmt.decode("utf-8", "replace") if isinstance(fmt, bytes) else fmt
    out: list[tuple[str, str]] = []
    buf = []
    i = 0
    while i < len(f):
        ch = f[i]
        if ch != "%":
            buf.append("%%" if ch == "%" else ch)
            i += 1
            continue
        if i + 1 >= len(f):
            raise SkipidxError(f"the format {f!r} ends with '%'")
        spec = f[i + 1]
        if spec in _FORMAT_COMPUTED:
            if buf:
                out.append(("strftime", "".join(buf)))
                buf = []
            out.append(("computed", spec))
        elif spec in _FORMAT_SPECS:
            buf.append(_FORMAT_SPECS[spec])
        else:
            raise SkipidxError(f"the format {f!r} has an unsupported specifier '%{spec}'")
        i += 2
    if buf:
        out.append(("strftime", "".join(buf)))
    return out


def format_datetime(a: ArrayLike, fmt, tz=None) -> pa.Array:
    """formatDateTime(t, format[, zone]): the Date/DateTime's text by ClickHouse's specifiers."""
    x = _temporal(a, "formatDateTime")
    if isinstance(tz, bytes):
        tz = tz.decode()
    frac = None
    if pa.types.is_timestamp(x.type) and x.type.unit != "s":
        per = _UNIT_S[x.type.unit]
        ticks = x.cast(pa.timestamp(x.type.unit)).cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        frac = (ticks % per) * (10**6 // per) if per <= 10**6 else (ticks % per) // (per // 10**6)
    zone = tz or (x.type.tz if pa.types.is_timestamp(x.type) else None) or "UTC"
    if pa.types.is_date(x.type):
        secs = x.cast(pa.date32()).cast(pa.timestamp("s")).cast(pa.timestamp("s", "UTC"))
        if tz:
            secs = pc.assume_timezone(x.cast(pa.date32()).cast(pa.timestamp("s")), timezone=tz)
    else:
        t = x.type
        utc = x.cast(pa.timestamp(t.unit))
        secs = pc.floor_temporal(utc, unit="second").cast(pa.timestamp("s")).cast(pa.timestamp("s", zone))
    pieces = []
    for kind, v in format_pieces(fmt):
        if kind == "strftime":
            pieces.append(pc.strftime(secs, format=v))
        elif v == "e":
            pieces.append(pc.day(secs).cast(pa.string()))
        elif v == "Q":
            pieces.append(pc.quarter(secs).cast(pa.string()))
        else:   # f: microseconds, six digits
            us = np.zeros(len(secs), np.int64) if frac is None else frac
            pieces.append(pc.utf8_lpad(pa.array(us.astype(np.int64)).cast(pa.string()), width=6, padding="0"))
    if not pieces:
        return pa.array([""] * len(x), pa.string(), mask=_mask(x))
    out = pieces[0] if len(pieces) == 1 else pc.binary_join_element_wise(*pieces, "")
    return out if not x.null_count else pc.if_else(x.is_valid(), out, pa.scalar(None, pa.string()))


def minus_temporal(a: ArrayLike, b: ArrayLike) -> pa.Array:
    """Date - Date (days) and DateTime - DateTime (seconds) as ClickHouse's Int32 (wrapping)."""
    x, y = _one(a), _one(b)
    if pa.types.is_date(x.type) and pa.types.is_date(y.type):
        xv, yv = (v.cast(pa.date32()).cast(pa.int32()).cast(pa.int64()) for v in (x, y))
    elif pa.types.is_timestamp(x.type) and pa.types.is_timestamp(y.type):
        xv, yv = (v.cast(pa.timestamp(v.type.unit)).cast(pa.timestamp("s"), safe=False).cast(pa.int64()) for v in (x, y))
    else:
        raise SkipidxError(f"Illegal types {x.type} and {y.type} of arguments of function minus")
    d = pc.subtract(xv, yv)
    mask = d.is_null().to_numpy(zero_copy_only=False) if d.null_count else None
    v = d.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).astype(np.int32)
    return pa.array(v, pa.int32(), mask=mask)


def to_last_day_of_month(a: ArrayLike) -> pa.Array:
    d = to_date(_temporal(a, "toLastDayOfMonth"))
    first = pc.floor_temporal(d, unit="month")
    nxt = _add_months(first, 1)
    days = pc.subtract(nxt.cast(pa.int32()), 1)
    return days.cast(pa.int32()).cast(pa.date32())


def iso_part(a: ArrayLike, which: str) -> pa.Array:
    x = _temporal(a, "toISOWeek" if which == "week" else "toISOYear")
    if pa.types.is_timestamp(x.type) and x.type.tz:
        x = pc.local_timestamp(x)
    return pc.iso_week(x).cast(pa.uint8()) if which == "week" else pc.iso_year(x).cast(pa.uint16())


def start_of_interval(a: ArrayLike, unit: str, n: int) -> pa.Array:
    """toStartOfInterval(t, INTERVAL n unit): seconds and minutes floored on the epoch, hours
    within the local day, days on the local day number, weeks from Monday 1970-01-05, months,
    quarters and years on their count (Date results); never before the epoch."""
    x = _one(a)
    if n <= 0:
        raise SkipidxError("toStartOfInterval: the interval must be positive")
    if unit in ("week", "month", "quarter", "year"):
        d = to_date(_temporal(x, "toStartOfInterval"))
        days = d.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if unit == "week":
            weeks = np.floor_divide(days - 4, 7)
            out = np.maximum((weeks - np.mod(weeks, n)) * 7 + 4, 0)
        else:
            y = pc.year(d).cast(pa.int64()).fill_null(1970).to_numpy(zero_copy_only=False)
            m = pc.month(d).cast(pa.int64()).fill_null(1).to_numpy(zero_copy_only=False)
            if unit == "year":
                ny, nm = y - np.mod(y, n), np.ones_like(m)
            else:
                k = n * (3 if unit == "quarter" else 1)
                months = (y - 1970) * 12 + (m - 1)
                months = months - np.mod(months, k)
                ny, nm = 1970 + np.floor_divide(months, 12), np.mod(months, 12) + 1
            out = np.maximum(_days_from_civil(ny, nm, np.ones_like(nm)), 0)
        return pa.array(out.astype(np.int32), pa.int32(), mask=_mask(d)).cast(pa.date32())
    if pa.types.is_date(x.type):
        if unit != "day":
            raise SkipidxError(f"toStartOfInterval: illegal interval kind {unit} for a Date")
        days = x.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        out = np.minimum((days - np.mod(days, n)) * 86400, 2**32 - 1)    # DateTime saturates
        return pa.array(out, pa.int64(), mask=_mask(x)).cast(pa.timestamp("s"))
    if not pa.types.is_timestamp(x.type):
        raise SkipidxError(f"toStartOfInterval: expected a Date or DateTime argument, got {x.type}")
    tz = x.type.tz
    secs = pc.floor_temporal(x.cast(pa.timestamp(x.type.unit)), unit="second").cast(pa.timestamp("s")) \
        .cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if unit in ("second", "minute"):
        step = n * (60 if unit == "minute" else 1)
        out = secs - np.mod(secs, step)
    elif unit == "hour":
        local = (pc.local_timestamp(x) if tz else x).cast(pa.timestamp(x.type.unit))
        lsec = pc.floor_temporal(local, unit="second").cast(pa.timestamp("s")).cast(pa.int64()) \
            .fill_null(0).to_numpy(zero_copy_only=False)
        sod = np.mod(lsec, 86400)
        hod = sod // 3600
        # the local clock's floored hour, back to an instant (a DST change within the day counts)
        floored = pa.array(lsec - sod + (hod - np.mod(hod, n)) * 3600, pa.int64()).cast(pa.timestamp("s"))
        if tz:
            floored = pc.assume_timezone(floored, timezone=tz, ambiguous="earliest", nonexistent="earliest")
        out = floored.cast(pa.timestamp("s", tz) if tz else pa.timestamp("s")).cast(pa.int64()).to_numpy(
            zero_copy_only=False)
    elif unit == "day":
        d = to_date(x)
        days = d.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)

        def midnight(day_numbers: np.ndarray) -> np.ndarray:
            mid = pa.array(day_numbers * 86400, pa.int64()).cast(pa.timestamp("s"))
            if tz:
                mid = pc.assume_timezone(mid, timezone=tz, ambiguous="earliest", nonexistent="earliest")
            return mid.cast(pa.timestamp("s", tz) if tz else pa.timestamp("s")).cast(pa.int64()).to_numpy(
                zero_copy_only=False)
        out = midnight(days - np.mod(days, n))
        # an interval starting before the epoch gives the first local midnight after it (as ClickHouse)
        if np.any(out < 0):
            out = np.where(out < 0, midnight(np.ones_like(days)), out)
    else:
        raise SkipidxError(f"toStartOfInterval: unsupported interval unit {unit!r}")
    out = np.maximum(out, 0)
    return pa.array(out, pa.int64(), mask=_mask(x)).cast(pa.timestamp("s")).cast(pa.timestamp("s", tz))
