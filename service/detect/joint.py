"""One kernel, one step night: the timers of a kernel that stepped a night apart are one move.

Helion's speedup (CUDA-graph timed) and its latency (do_bench) are separate measurements of the
same kernel. Scatter, or a stray outlier on one timer, can put one series' split a night off
the other's; a person looking at both charts sees one step, on the night both agree on. That
night is the one where two flat levels fit the stacked series best, each series in units of
its own scatter (so a quiet timer weighs more than a noisy one). Pure: moves and series in,
moves out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from service.detect.series import _ref, trend_points
from service.detect.settings import DetectSettings
from service.records import Move, SeriesData, SeriesKey


def align_timers(moves: Sequence[Move], series: Mapping[SeriesKey, SeriesData], night_of: Mapping[str, int],
                 s: DetectSettings) -> list[Move]:
    """The moves of one kernel, with those of one direction whose first-bad nightlies lie one
    apart re-split on the night the stacked series fit best. Episodes (moves that ended) and
    moves further apart are returned as they are; the order is kept."""
    out = list(moves)
    steps = [i for i, m in enumerate(out) if m.state != "ended" and m.first_bad.run_id in night_of]
    for direction in {out[i].direction for i in steps}:
        mine = sorted((i for i in steps if out[i].direction == direction),
                      key=lambda i: night_of[out[i].first_bad.run_id])
        for cluster in _clusters(mine, out, night_of):
            nights = sorted({night_of[out[i].first_bad.run_id] for i in cluster})
            if len(nights) < 2:
                continue
            best = _best_night([(out[i], series.get(out[i].key)) for i in cluster], nights, night_of,
                               s.pooled_window)
            for i in cluster:
                out[i] = _resplit(out[i], series.get(out[i].key), best, night_of, s)
    return out


def _clusters(idx: list[int], moves: list[Move], night_of: Mapping[str, int]) -> list[list[int]]:
    """Runs of moves (sorted by night) whose first-bad nights are within one of the run's first."""
    out: list[list[int]] = []
    for i in idx:
        n = night_of[moves[i].first_bad.run_id]
        if out and n - night_of[moves[out[-1][0]].first_bad.run_id] <= 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def _best_night(pairs: list[tuple[Move, SeriesData | None]], nights: list[int], night_of: Mapping[str, int],
                window: int) -> int:
    """The candidate night with the least summed squared error of two flat levels, each series'
    log values divided by its own noise; ties go to the earlier night."""
    lo, hi = nights[0] - window, nights[-1] + window
    best, best_cost = nights[0], np.inf
    for c in nights:
        cost = 0.0
        for m, sd in pairs:
            if sd is None:
                continue
            pts = [(night_of[p.run_id], np.log(p.value)) for p in trend_points(sd)
                   if p.run_id in night_of and lo <= night_of[p.run_id] < hi]
            sigma = max(m.noise_sigma, 1e-3)
            left = np.array([v for n, v in pts if n < c]) / sigma
            right = np.array([v for n, v in pts if n >= c]) / sigma
            if left.size and right.size:
                cost += float(((left - left.mean()) ** 2).sum() + ((right - right.mean()) ** 2).sum())
        if cost < best_cost - 1e-12:
            best, best_cost = c, cost
    return best


def _resplit(m: Move, sd: SeriesData | None, night: int, night_of: Mapping[str, int], s: DetectSettings) -> Move:
    """The move with its step on ``night`` (its levels kept: one night moves them by little)."""
    if sd is None or night_of.get(m.first_bad.run_id) == night:
        return m
    pts = [p for p in trend_points(sd) if p.run_id in night_of]
    j = next((k for k, p in enumerate(pts) if night_of[p.run_id] >= night), None)
    if j is None or j == 0:
        return m
    nights_after = len(pts) - j
    return Move(
        key=m.key, last_good=_ref(pts[j - 1]), first_bad=_ref(pts[j]), before=m.before, after=m.after,
        change_pct=m.change_pct, direction=m.direction, significance=m.significance,
        state="provisional" if nights_after < s.confirm_nights else "confirmed", nights_after=nights_after,
        noise_sigma=m.noise_sigma,
    )
