"""One stored series -> the persistent steps in its nightly trend, as `Move`s.

Only nightly-on-main points count (manual and side-branch runs must never raise alerts);
failed runs (value None) are skipped, so a step hidden inside a run of failures gets a
last-good / first-bad pair that spans the gap, which is exactly the commit window to search.
"""

from __future__ import annotations

import math
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
    """Nightly points with a usable (positive, finite) value, in date order (a new list).

    Kept on the series the first time: a pass reads each series' points through five detectors
    (own steps, pooled, joint, newest night, dips), and filtering a year again each time was a
    tenth of the nightly detect. SeriesData is frozen, so the points never change under it."""
    kept = series.__dict__.get("_trend_points")
    if kept is None:
        pts = [p for p in series.points if is_trend_value(p)]
        pts.sort(key=_DATE)  # stable: runs of the same instant keep their given order
        kept = tuple(pts)
        object.__setattr__(series, "_trend_points", kept)
    return list(kept)


def _ref(p: SeriesPoint) -> RunRef:
    return RunRef(p.run_id, p.sha, p.full_sha, p.date, p.value)


def worse_sign(metric: str) -> float:
    """Which way the metric gets worse: +1 (up) for times, -1 (down) for everything else."""
    return 1.0 if metric in LOWER_IS_BETTER else -1.0


def direction_of(metric: str, before: float, after: float) -> str:
    """'regression' when the metric got worse (see `worse_sign`)."""
    return "regression" if (after - before) * worse_sign(metric) > 0 else "improvement"


def detect_series(series: SeriesData, settings: DetectSettings) -> list[Move]:
    """Steps in the series' nightly trend, oldest first (see `core.steps` for the rules)."""
    pts = trend_points(series)
    if len(pts) < settings.min_size + 1:
        return []
    values = np.fromiter((p.value for p in pts), dtype=float, count=len(pts))
    found, sigma = steps(np.log(values), settings, log=True, worse=worse_sign(series.key.metric))
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
                held=st.held,
            )
        )
    moves.sort(key=lambda m: m.first_bad.date)
    return moves


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
