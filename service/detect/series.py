"""One stored series -> the persistent steps in its nightly trend, as `Move`s.

Only nightly-on-main points count (manual and side-branch runs must never raise alerts);
failed runs (value None) are skipped, so a step hidden inside a run of failures gets a
last-good / first-bad pair that spans the gap, which is exactly the commit window to search.
"""

from __future__ import annotations

import math
from datetime import datetime
from operator import attrgetter

import numpy as np

from service.detect.core import steps
from service.detect.settings import DetectSettings
from service.records import LOWER_IS_BETTER, Move, RunRef, SeriesData, SeriesPoint


_DATE = attrgetter("date")


def is_trend_value(p: SeriesPoint) -> bool:
    """A nightly point with a usable (positive, finite) value. `0 < v < inf` also rejects NaN
    (every comparison with NaN is False)."""
    return p.is_trend and p.value is not None and 0 < p.value < math.inf


def trend_points(series: SeriesData) -> list[SeriesPoint]:
    """Nightly points with a usable (positive, finite) value, in date order."""
    pts = [p for p in series.points if is_trend_value(p)]
    pts.sort(key=_DATE)  # stable: runs of the same instant keep their given order
    return pts


def _ref(p: SeriesPoint) -> RunRef:
    return RunRef(p.run_id, p.sha, p.full_sha, p.date, p.value)


def direction_of(metric: str, before: float, after: float) -> str:
    """'regression' when the metric got worse: up for times, down for everything else."""
    worse = after > before if metric in LOWER_IS_BETTER else after < before
    return "regression" if worse else "improvement"


def detect_series(series: SeriesData, settings: DetectSettings, data_start: datetime | None = None) -> list[Move]:
    """Steps in the series' nightly trend, oldest first (see `core.steps` for the rules).

    ``data_start``: the source's first stored nightly. A series that begins there begins with
    the data, not with its kernel, so its first nights are not a young kernel's own regime."""
    pts = trend_points(series)
    if len(pts) < settings.min_size + 1:
        return []
    values = np.fromiter((p.value for p in pts), dtype=float, count=len(pts))
    found, sigma = steps(np.log(values), settings, log=True, head=_young_head(pts, settings, data_start))
    moves: list[Move] = []
    steps_ = [st for st in found if st.end is None]
    bounds = [0, *(st.index for st in steps_), len(pts)]
    for st in found:
        if st.end is not None:
            moves.append(_episode(series, pts, values, st, sigma))
    for k, st in enumerate(steps_):
        i = st.index
        before = float(np.median(values[bounds[k] : i]))
        after = float(np.median(values[i : bounds[k + 2]]))
        nights_after = len(pts) - i
        moves.append(
            Move(
                key=series.key,
                last_good=_ref(pts[i - 1]),
                first_bad=_ref(pts[i]),
                before=before,
                after=after,
                change_pct=(after - before) / before * 100.0,
                direction=direction_of(series.key.metric, before, after),
                significance=float(st.significance),
                state="provisional" if nights_after < settings.confirm_nights else "confirmed",
                nights_after=nights_after,
                noise_sigma=float(sigma),
            )
        )
    moves.sort(key=lambda m: m.first_bad.date)
    return moves


def _young_head(pts: list[SeriesPoint], settings: DetectSettings, data_start: datetime | None) -> int:
    """How many first nights may stand as a regime of their own: the run of nightlies, each at
    most a day and a half after the one before, up to min_size - 1 (and the night after them).
    A kernel that ran once and then not for days (its job switched off) is not "a step on its
    second night". Negative: the series begins with the source's data, where a step needs two
    nights (one is the edge of the data, not a kernel's first run)."""
    if not settings.head_steps:
        return 0
    n = 0
    while n < settings.min_size - 1 and n + 1 < len(pts) and \
            (pts[n + 1].date - pts[n].date).total_seconds() <= 36 * 3600:
        n += 1
    if data_start is not None and pts[0].date <= data_start:
        return -n  # the data's own first night is no kernel's first: a lone night there is not a regime
    return n


def _episode(series: SeriesData, pts: list[SeriesPoint], values: np.ndarray, st, sigma: float) -> Move:
    """An excursion that came back: one move from its first night to its end."""
    i, j = st.index, st.end
    before, after = float(np.exp(st.before)), float(np.median(values[i:j]))
    return Move(
        key=series.key, last_good=_ref(pts[i - 1]), first_bad=_ref(pts[i]), before=before, after=after,
        change_pct=(after - before) / before * 100.0, direction=direction_of(series.key.metric, before, after),
        significance=float(st.significance), state="ended", nights_after=j - i, noise_sigma=float(sigma),
        end=_ref(pts[j]) if j < len(pts) else None,
    )
