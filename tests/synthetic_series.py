"""Synthetic nightly series for the detector's tests and benchmarks (a helper module: it holds no
tests): one point per night, manual runs on demand, and a night-by-night replay of detect +
reconcile as the nightly pass runs them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from service.detect import DetectSettings, detect_series, reconcile
from service.records import Move, SeriesData, SeriesKey, SeriesPoint

T0 = datetime(2026, 1, 1, 8, 0, tzinfo=timezone.utc)
S = DetectSettings()


def make_series(values, *, metric="helion_speedup_geomean", trend=None, start=T0, kernel="softmax") -> SeriesData:
    """One point per night; ``trend[i] is False`` marks a manual run (same day, later)."""
    pts = []
    for i, v in enumerate(values):
        is_trend = True if trend is None else bool(trend[i])
        date = start + timedelta(days=i, hours=0 if is_trend else 5)
        sha = f"{i:08x}"
        pts.append(SeriesPoint(f"r{i}", sha, sha * 5, date, None if v is None else float(v), is_trend))
    return SeriesData(SeriesKey("dashboard", "h100", kernel, metric), tuple(pts))


def replay(x, start: int, settings: DetectSettings = S) -> list[list[Move]]:
    """Detect + reconcile night by night from `start`, as the nightly pass does: the stored moves
    after each night (retracted ones shown that night, then dropped)."""
    stored: list[Move] = []
    nights = []
    for n in range(start, len(x) + 1):
        stored = reconcile(stored, detect_series(make_series(x[:n]), settings), settings)
        nights.append(list(stored))
        stored = [m for m in stored if m.state != "retracted"]
    return nights


def noisy(n, seed, level=1.5, rel_sigma=0.01):
    """``n`` nights of a flat level with log-normal scatter (seeded): a series with no move."""
    rng = np.random.default_rng(seed)
    return level * np.exp(rng.normal(0.0, rel_sigma, n))
