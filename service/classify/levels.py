"""Robust levels of a series on each side of a step, found by bisection (no scan of history).

classify_move runs for every live move each night, on series with a year of points: each
lookup is O(log n) to find the step plus O(k) for the k nightlies read on each side.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from datetime import datetime
from statistics import median

from service.domain import MAD_TO_SIGMA
from service.records import SeriesData, aware, naive


def _date(p) -> datetime:
    return p.date


def _usable(p) -> bool:
    return p.is_trend and p.value is not None and p.value > 0 and math.isfinite(p.value)


def _comparable(series: SeriesData, date: datetime) -> datetime:
    """`date` in the same tz convention as the series (records are tz-aware UTC; be lenient)."""
    if not series.points:
        return date
    return naive(date) if series.points[0].date.tzinfo is None else aware(date)


def values_before(series: SeriesData, date: datetime, n: int) -> list[float]:
    """Up to n trend values at or before `date`, oldest first."""
    pts = series.points
    date = _comparable(series, date)
    i = bisect_right(pts, date, key=_date) - 1
    out: list[float] = []
    budget = 4 * n + 8  # skip at most this many failed / non-trend points
    while i >= 0 and len(out) < n and budget > 0:
        p = pts[i]
        if _usable(p):
            out.append(float(p.value))
        else:
            budget -= 1
        i -= 1
    out.reverse()
    return out


def values_after(series: SeriesData, date: datetime, n: int) -> list[float]:
    """Up to n trend values at or after `date`, oldest first."""
    pts = series.points
    date = _comparable(series, date)
    i = bisect_left(pts, date, key=_date)
    out: list[float] = []
    budget = 4 * n + 8
    while i < len(pts) and len(out) < n and budget > 0:
        p = pts[i]
        if _usable(p):
            out.append(float(p.value))
        else:
            budget -= 1
        i += 1
    return out


def robust_sigma(logs: list[float]) -> float | None:
    """MAD-based sigma of log values around their median; None with fewer than 3 values."""
    if len(logs) < 3:
        return None
    m = median(logs)
    return MAD_TO_SIGMA * median(abs(x - m) for x in logs)


@dataclass(frozen=True)
class Step:
    """A series' level just before vs just after a step date (linear units) and its noise."""

    before: float
    after: float
    sigma: float  # pooled robust sigma of log values, floored
    n_before: int
    n_after: int

    @property
    def log_step(self) -> float:
        return math.log(self.after / self.before)

    @property
    def pct(self) -> float:
        return (self.after / self.before - 1.0) * 100.0

    @property
    def significance(self) -> float:
        return abs(self.log_step) / self.sigma


def step_of(
    series: SeriesData | None, last_good: datetime, first_bad: datetime, n: int, floor: float
) -> Step | None:
    """Median level of up to n nightlies up to last_good vs from first_bad on; None without data."""
    if series is None or not series.points:
        return None
    b = values_before(series, last_good, n)
    a = values_after(series, first_bad, n)
    if not b or not a:
        return None
    lb, la = [math.log(v) for v in b], [math.log(v) for v in a]
    mb, ma = median(lb), median(la)
    resid = [x - mb for x in lb] + [x - ma for x in la]
    s = robust_sigma(resid)
    return Step(math.exp(mb), math.exp(ma), max(s or 0.0, floor), len(b), len(a))
