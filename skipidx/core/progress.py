"""A small progress bar for long work (builds, data generation, benches).

Writes to stderr, redraws in place on a terminal and prints sparse lines
otherwise (CI logs), so long steps always show they are alive.
"""
from __future__ import annotations

import sys
import time


class Progress:
    """``with Progress("insert", total=rows) as p: p.update(done)``."""

    def __init__(self, label: str, total: int | None, unit: str = "rows", stream=None) -> None:
        self.label = label
        #: None: the total is unknown (a stream): the bar shows the count and rate only
        self.total = None if total is None else max(int(total), 1)
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self._last_pct = -1
        self._last_draw = 0.0

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if self.total is None:
            # a stream of unknown size: drawn only once it has taken a second (quiet for small inserts)
            if self.tty and now - self.t0 >= 1.0 and now - self._last_draw >= 0.1:
                rate = done / max(now - self.t0, 1e-9)
                self.stream.write(f"\r{self.label:<12} {done:,} {self.unit} ({rate:,.0f}/s)")
                self.stream.flush()
                self._last_draw = now
            return
        pct = int(100 * min(done, self.total) / self.total)
        if self.tty:
            if now - self._last_draw < 0.1 and done < self.total:
                return
            width = 30
            fill = int(width * pct / 100)
            rate = done / max(now - self.t0, 1e-9)
            self.stream.write(f"\r{self.label:<12} [{'#' * fill}{'.' * (width - fill)}] {pct:3d}% "
                              f"{done:,}/{self.total:,} {self.unit} ({rate:,.0f}/s)")
            self.stream.flush()
            self._last_draw = now
        elif pct // 25 != self._last_pct // 25 or done >= self.total:
            self.stream.write(f"{self.label}: {pct}% ({done:,}/{self.total:,} {self.unit})\n")
            self.stream.flush()
        self._last_pct = pct

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        if self.tty and self._last_draw:
            self.stream.write("\n")
            self.stream.flush()
