"""A kernel's two timers read together: one step night for both (`align_timers`), and the steps
only both together show (`joint_moves`).

The timers of a kernel that stepped a night apart are one move.

Helion's speedup (CUDA-graph timed) and its latency (do_bench) are separate measurements of the
same kernel. Scatter, or a stray outlier on one timer, can put one series' split a night off
the other's; a person looking at both charts sees one step, on the night both agree on. That
night is the one where two flat levels fit the stacked series best, each series in units of
its own scatter (so a quiet timer weighs more than a noisy one). Pure: moves and series in,
moves out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

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
        noise_sigma=m.noise_sigma, joint=m.joint,
    )


# --- steps only the two timers together show ---------------------------------------------------


def joint_moves(speedup: SeriesData, latency: SeriesData, s: DetectSettings, known: Sequence[Move],
                night_of: Mapping[str, int]) -> list[Move]:
    """Steps of one kernel that both its timers show and neither shows alone.

    Why: a Helion change moves the CUDA-graph speedup and the do_bench latency together. A 10%
    step on a timer with 4% night-to-night scatter is 2.5 sigmas, under each series' one-night
    bar, yet a person sees it at once on the two charts side by side. Each timer is put in units
    of its own scatter and signed so that "Helion slower" is up on both; their sum / sqrt(2) has
    unit noise and twice the evidence of a step both share, while a stray outlier on one timer
    counts half. The usual search and filters run on that sum (its step must clear
    ``joint_significance``); a step it keeps is a move of both series where each timer moved the
    same way by ``min_change_pct`` and ``joint_min_sigma`` of its own scatter (one timer moving
    alone is its own search's, or a method change's), and neither series has a move of that
    direction within ``match_nights``. Under each timer's own bar, such a step is believed once
    ``confirm_nights`` nightlies hold it: two bad nights on both timers at the newest end may be
    a blip that comes back (the one-series tail rule stays each series' own)."""
    from service.detect.core import steps
    from service.detect.pooled import move_at

    both = _signed_timers(speedup, latency, night_of, 2 * s.min_size + 1)
    if both is None:
        return []
    ps, pl, pairs, a, b, sa, sb = both
    found, _ = steps((a / sa + b / sb) / np.sqrt(2.0), s.model_copy(update={"min_significance": s.joint_significance}),
                     log=False, worse=1.0)
    cps = [st.index for st in found if st.end is None]
    bounds = [0, *cps, len(pairs)]
    out: list[Move] = []
    for k, c in enumerate(cps):
        if len(pairs) - c < s.confirm_nights:
            continue  # under each timer's bar, a step is believed once confirm_nights hold it, not on the tail rule
        lo, hi = bounds[k], bounds[k + 2]
        da = float(np.median(a[c:hi]) - np.median(a[lo:c]))
        db = float(np.median(b[c:hi]) - np.median(b[lo:c]))
        if da * db <= 0:
            continue  # the timers disagree: not a step of the kernel's speed
        if min(abs(da) / sa, abs(db) / sb) < s.joint_min_sigma:
            continue
        if min(abs(np.expm1(da)), abs(np.expm1(db))) * 100.0 < s.min_change_pct:
            continue
        night = night_of[ps[pairs[c][0]].run_id]
        together = next(st.significance for st in found if st.index == c and st.end is None)
        moves = [replace(move_at(speedup, ps, pairs[c][0], together, sa, s), joint=True),
                 replace(move_at(latency, pl, pairs[c][1], together, sb, s), joint=True)]
        if any(m.key == n.key and m.direction == n.direction and n.first_bad.run_id in night_of
               and abs(night_of[n.first_bad.run_id] - night) <= s.match_nights for m in moves for n in known):
            continue
        out += moves
    return out


# --- one bad night on both timers ----------------------------------------------------------------


def one_night_dips(speedup: SeriesData, latency: SeriesData, s: DetectSettings,
                   night_of: Mapping[str, int]) -> list[Move]:
    """Single nightlies on which both timers of a kernel left their level together and the next
    nightly came back: ended moves of both series (``nights_after`` 1, ``end`` the night back).

    Why: one bad night in one series is an outlier, and every filter drops it. A change merged
    one evening and reverted the next morning leaves exactly that in every kernel it touched,
    on both timers at once; a stray outlier hits one timer. So each such night is offered to
    the event stage, which keeps it only where several kernels of a platform share it and a
    revert in the window that followed names the change (`pipeline.events`); alone it is noise.
    Each timer in units of its own scatter and signed so "Helion slower" is up: their sum /
    sqrt(2) beyond ``min_significance`` of the level of the ``pooled_window`` nights before (a
    night with fewer before it is never one), each timer the same way by ``joint_significance``
    of its own (a stray outlier on one timer rarely has the other that far out beside it) and
    ``min_change_pct``; the nights either side within ``revert_tolerance`` of the excursion."""
    from service.detect.pooled import move_at

    w = s.pooled_window
    both = _signed_timers(speedup, latency, night_of, w + 2)
    if both is None:
        return []
    ps, pl, pairs, a, b, sa, sb = both
    n = len(pairs)
    la, lb = _levels_before(a, w), _levels_before(b, w)
    za, zb = (a - la) / sa, (b - lb) / sb
    z = (za + zb) / np.sqrt(2.0)
    night = np.arange(n)
    ok = (night >= w) & (night < n - 1) & (za * zb > 0) & (np.abs(z) >= s.min_significance)
    ok &= np.minimum(np.abs(za), np.abs(zb)) >= s.joint_significance
    ok &= np.minimum(np.abs(np.expm1(a - la)), np.abs(np.expm1(b - lb))) * 100.0 >= s.min_change_pct
    out: list[Move] = []
    for k in np.flatnonzero(ok):
        # the nights either side, against the same level: back within revert_tolerance
        side = [((a[j] - la[k]) / sa + (b[j] - lb[k]) / sb) / np.sqrt(2.0) for j in (k - 1, k + 1)]
        if any(abs(v) > s.revert_tolerance * abs(z[k]) for v in side):
            continue
        for sd, pts, j, sigma in ((speedup, ps, pairs[k][0], sa), (latency, pl, pairs[k][1], sb)):
            m = move_at(sd, pts, j, float(abs(z[k])), sigma, s, end=j + 1)
            out.append(replace(m, state="ended", nights_after=1, end=_ref(pts[j + 1]), joint=True))
    return out


def _levels_before(x: np.ndarray, w: int) -> np.ndarray:
    """For each index k >= w, the median of the ``w`` values before it (NaN before): the
    platform-wide rule's windowed medians (`pooled._windowed_steps`), its full windows only."""
    from service.detect.pooled import _windowed_steps

    out = np.full(x.size, np.nan)
    js, before, _ = _windowed_steps(x, w, 1)
    full = js >= w
    out[js[full]] = before[full]
    return out


def _signed_timers(speedup: SeriesData, latency: SeriesData, night_of: Mapping[str, int], least: int):
    """A kernel's two timers on the nightlies both ran, each as log values signed so "Helion
    slower" is up, with its own noise sigma: (speedup points, latency points, index pairs, speedup
    values, latency values, their sigmas); None with fewer than ``least`` such nightlies or a
    timer without scatter."""
    from service.detect.core import noise_sigma

    ps, pl = trend_points(speedup), trend_points(latency)
    lat_at = {p.run_id: j for j, p in enumerate(pl)}
    pairs = [(i, lat_at[p.run_id]) for i, p in enumerate(ps) if p.run_id in lat_at and p.run_id in night_of]
    if len(pairs) < least:
        return None
    a = -np.log([ps[i].value for i, _ in pairs])  # speedup down = Helion slower: up
    b = np.log([pl[j].value for _, j in pairs])  # latency up = Helion slower: up
    sa, sb = noise_sigma(a), noise_sigma(b)
    if sa <= 0 or sb <= 0:
        return None
    return ps, pl, pairs, a, b, sa, sb
