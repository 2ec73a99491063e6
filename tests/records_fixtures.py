"""Hand-made moves for the grouping tests (helpers, no tests)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from service.records import (
    Move,
    RunRef,
    SeriesData,
    SeriesKey,
    SeriesPoint,
)

T0 = datetime(2026, 1, 1, 8, 30, tzinfo=timezone.utc)
FB = 12  # index of the first-bad nightly in every test series
N = 20  # nightlies in every test series
JITTER = (0.0, 0.004, -0.003, 0.002, -0.004, 0.003, -0.002)


def night(i: int) -> datetime:
    return T0 + timedelta(days=i)


def run_id(i: int) -> str:
    return str(5000 + i)


def full_sha(i: int) -> str:
    return f"{i + 1:040x}"


def key(metric: str, platform: str = "b200", kernel: str = "softmax", source: str = "dashboard") -> SeriesKey:
    return SeriesKey(source, platform, kernel, metric)


def series(metric: str, before: float, after: float | None = None, *, platform: str = "b200",
           kernel: str = "softmax", source: str = "dashboard", jitter: float = 1.0,
           jitter_after: float | None = None, fb: int = FB, n: int = N) -> SeriesData:
    """A nightly series at `before`, stepping to `after` at night `fb`, with a small fixed wobble."""
    after = before if after is None else after
    ja = jitter if jitter_after is None else jitter_after
    pts = []
    for i in range(n):
        level = before if i < fb else after
        wob = JITTER[i % len(JITTER)] * (jitter if i < fb else ja)
        pts.append(SeriesPoint(run_id(i), full_sha(i)[:8], full_sha(i), night(i), level * (1 + wob)))
        if i == 3:  # a manual run off main: never part of the trend
            pts.append(SeriesPoint("manual", "deadbeef", "d" * 40, night(i) + timedelta(hours=5), level * 3, False))
    return SeriesData(key(metric, platform, kernel, source), tuple(pts))


def ref(i: int, value: float | None = None) -> RunRef:
    return RunRef(run_id(i), full_sha(i)[:8], full_sha(i), night(i), value)


def move(metric: str = "helion_speedup_geomean", before: float = 1.0, after: float = 0.8, *,
         platform: str = "b200", kernel: str = "softmax", source: str = "dashboard", fb: int = FB,
         state: str = "confirmed", nights_after: int = N - FB, significance: float = 20.0,
         noise_sigma: float = 0.01, direction: str | None = None) -> Move:
    if direction is None:
        worse = after < before if metric not in ("helion_latency_avg_ms", "compile_time_geomean_s") else after > before
        direction = "regression" if worse else "improvement"
    return Move(key(metric, platform, kernel, source), ref(fb - 1, before), ref(fb, after), before, after,
                (after - before) / before * 100, direction, significance, state, nights_after, noise_sigma)
