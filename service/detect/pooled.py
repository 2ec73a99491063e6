"""Steps too small for one series but plain across many: the platform-wide detector.

A torch pin that moves every baseline by 4%, or a runner that is 5% slower, hides inside the
2-4% scatter of each series, so the per-series search (`series.detect_series`) misses it; a
person looking at the platform's chart sees every line drop on the same night. This does what
that person does: for each nightly it measures every series' step there (median of the nights
after minus median of the nights before, in standard errors of that difference given the
series' own noise), and where most of the series that ran stepped the same way, and their
combined evidence (Stouffer's sum over every series that ran) is strong, it reports each of
the series that stepped as a move.

Medians keep a single-night outlier or a one-night shock shared by the whole platform from
counting (it moves neither median), and a blip that comes back within the window is no step.
Pure: series in, moves out; the pass decides what to do with them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import bottleneck as bn
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from service.detect.core import noise_sigma
from service.detect.series import _ref, direction_of, trend_points
from service.detect.settings import DetectSettings
from service.records import Move, SeriesData, SeriesKey


def _windowed_steps(v: np.ndarray, w: int, after_min: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every split j (first index of the new regime): median of up to w points before and
    after it (at least 3 before, ``after_min`` after). Returns (j, before, after)."""
    m = v.size
    pad = np.concatenate((np.full(w, np.nan), v, np.full(w, np.nan)))
    win = sliding_window_view(pad, w)  # win[k] = pad[k:k+w]
    js = np.arange(3, m - after_min + 1)
    if js.size == 0:
        return js, np.empty(0), np.empty(0)
    # bottleneck's nanmedian: numpy's answer without its masked-array path (~40x faster here,
    # and this runs for every series of a platform on every pass)
    before = bn.nanmedian(win[js], axis=1)  # pad[j:j+w] = v[j-w:j]
    after = bn.nanmedian(win[js + w], axis=1)  # pad[j+w:j+2w] = v[j:j+w]
    return js, before, after


def pooled_moves(
    series: Iterable[SeriesData],
    night_of: Mapping[str, int],
    s: DetectSettings,
    known: Mapping[SeriesKey, Sequence[Move]] | None = None,
    suite_of: Mapping[SeriesKey, str | None] | None = None,
) -> dict[SeriesKey, list[Move]]:
    """Moves found only by the platform-wide rule, per series (none where ``known`` already
    has a move of that series within ``match_nights`` of the night).

    ``night_of`` maps a run_id to its index among the source's nightlies, so series that
    skipped nights still line up. ``suite_of`` (the baseline a series is compared with, e.g.
    FLA for the linear-attention suite) pools each suite of a platform on its own: a suite runs
    in its own job against its own baseline, so a pin or harness change can move one suite
    whole, and counted among every kernel of the platform it would be a minority.
    """
    if s.pooled_min_series <= 0:
        return {}
    known = known or {}
    suite_of = suite_of or {}
    groups: dict[tuple[str, str, str | None], list[SeriesData]] = defaultdict(list)
    for sd in series:
        groups[(sd.key.platform_short, sd.key.metric, suite_of.get(sd.key))].append(sd)
    out: dict[SeriesKey, list[Move]] = {}
    for members in groups.values():
        if len(members) >= s.pooled_min_series:
            for key, moves in _platform_moves(members, night_of, s, known).items():
                out.setdefault(key, []).extend(moves)
    return out


def _platform_moves(members: list[SeriesData], night_of: Mapping[str, int], s: DetectSettings,
                    known: Mapping[SeriesKey, Sequence[Move]]) -> dict[SeriesKey, list[Move]]:
    w, after_min = s.pooled_window, s.report_after_nights
    nights = 1 + max(night_of.values(), default=-1)
    if nights <= 0:
        return {}
    z = np.full((len(members), nights), np.nan)  # signed step / sigma at each nightly
    rel = np.full((len(members), nights), np.nan)  # the step in log units
    at: list[dict[int, int]] = []  # per series: night -> index into its trend points
    pts_of = []
    sigma_of: list[float] = []  # each series' own noise (what its moves report)
    for i, sd in enumerate(members):
        pts = [p for p in trend_points(sd) if p.run_id in night_of]
        pts_of.append(pts)
        at.append({})
        sigma_of.append(0.0)
        if len(pts) < 3 + after_min:
            continue
        v = np.log(np.fromiter((p.value for p in pts), dtype=float, count=len(pts)))
        sigma_of[i] = noise_sigma(v)
        sigma = max(sigma_of[i], s.pooled_noise_floor)
        js, before, after = _windowed_steps(v, w, after_min)
        cols = np.fromiter((night_of[pts[j].run_id] for j in js), dtype=int, count=js.size)
        # in standard errors of a difference of two medians (pi/2 x the variance of a mean)
        nb = np.minimum(js, w)
        na = np.minimum(v.size - js, w)
        se = sigma * np.sqrt(math.pi / 2 * (1.0 / nb + 1.0 / na))
        z[i, cols] = (after - before) / se
        rel[i, cols] = after - before
        at[i] = {int(c): int(j) for c, j in zip(cols, js)}
    ran = np.sum(~np.isnan(z), axis=0)
    need = np.maximum(s.pooled_min_series, np.ceil(s.pooled_fraction * ran))
    zz = np.nan_to_num(z)
    up, down = zz >= s.pooled_sigma, zz <= -s.pooled_sigma
    strength = np.zeros(nights)
    sign = np.zeros(nights)
    # Stouffer's combination over every series that ran: quiet ones pull it back towards 0
    combined = zz.sum(axis=0) / np.sqrt(np.maximum(ran, 1))
    for mask, sg in ((up, 1.0), (down, -1.0)):
        cnt = mask.sum(axis=0)
        ok = (cnt >= need) & (ran >= s.pooled_min_series) & (combined * sg >= s.pooled_combined)
        total = np.where(mask, np.abs(zz), 0.0).sum(axis=0)
        better = ok & (total > strength)
        strength = np.where(better, total, strength)
        sign = np.where(better, sg, sign)
    found: dict[SeriesKey, list[Move]] = {}
    peaks = _peaks(strength, w // 2)
    for peak in peaks:
        if any(sign[o] == -sign[peak] and 0 < abs(o - peak) <= s.episode_nights for o in peaks):
            continue  # out and back: an episode, which the per-series detector reports with its end
        sg = sign[peak]
        moved = [i for i in range(len(members)) if not math.isnan(z[i, peak]) and z[i, peak] * sg >= s.pooled_sigma]
        t = _best_split(members, pts_of, at, moved, peak, w, after_min, night_of)
        # the moves this rule adds are the series whose own search found nothing near the night;
        # the magnitude floor is theirs: three kernels that fell 10% (found one by one) are a
        # platform "consensus" that would otherwise drag in its quiet kernels' 1% wobbles
        added = [i for i in moved if t in at[i] and not any(
            abs(night_of.get(r.run_id, -10**6) - t) <= s.match_nights
            for m in known.get(members[i].key, ()) for r in (m.first_bad, m.end) if r is not None)]
        steps = [rel[i, t] for i in added]
        if not steps or abs(math.expm1(float(np.median(steps)))) * 100.0 < s.pooled_min_pct:
            continue
        for i in added:
            sd = members[i]
            found.setdefault(sd.key, []).append(move_at(sd, pts_of[i], at[i][t], float(abs(z[i, t])), sigma_of[i], s))
    return found


def _best_split(members, pts_of, at, moved: list[int], peak: int, w: int, after_min: int,
                night_of: Mapping[str, int]) -> int:
    """The nightly within ±1 of ``peak`` where two flat levels fit the moved series best.

    Windowed medians blur a step over a night or two (at the newest nights most of all, where
    the window after is short); the least-squares split of the same points is exact for a step.
    Near the newest nightly the blur reaches further back (a window after of two nights, one of
    them new, already looks stepped), so there every later night the data allows is tried too:
    a step is never blamed on a night before it.
    """
    near = {i: [(night_of[p.run_id], math.log(p.value)) for p in pts_of[i]
                if peak - w <= night_of[p.run_id] < peak + w] for i in moved}
    newest = max((n for pts in near.values() for n, _ in pts), default=peak)
    last = newest - after_min + 1
    candidates = range(peak - 1, max(peak + 1, last) + 1 if last - peak < w else peak + 2)
    best, best_cost = peak, math.inf
    for c in candidates:
        cost, ok = 0.0, False
        for i in moved:
            left = np.array([v for n, v in near[i] if n < c])
            right = np.array([v for n, v in near[i] if n >= c])
            if left.size < 2 or right.size < after_min or c not in at[i]:
                continue
            ok = True
            cost += float(((left - left.mean()) ** 2).sum() + ((right - right.mean()) ** 2).sum())
        if ok and cost < best_cost - 1e-15:
            best, best_cost = c, cost
    return _not_early(near, moved, best, candidates)


def _not_early(near: dict[int, list[tuple[int, float]]], moved: list[int], c: int, candidates: range) -> int:
    """With fewer than 3 nights after the split, least squares can put one old night on the new
    side; where most moved series' first-bad night sits nearer the level before than the nights
    after it, the step began a night later."""
    while c + 1 in candidates:
        early = votes = 0
        for i in moved:
            left = [v for n, v in near[i] if n < c]
            first = [v for n, v in near[i] if n == c]
            later = [v for n, v in near[i] if n > c]
            if not left or not first or not later or len(later) + 1 >= 3:
                continue
            votes += 1
            lv, rv = float(np.median(left)), float(np.median(later))
            early += abs(first[0] - lv) < abs(first[0] - rv)
        if not votes or early * 2 <= votes:
            return c
        c += 1
    return c


def _peaks(strength: np.ndarray, radius: int) -> list[int]:
    """Nights whose strength is positive and the largest within ±radius (earliest on a tie)."""
    out = []
    n = strength.size
    for t in np.flatnonzero(strength > 0):
        lo, hi = max(0, t - radius), min(n, t + radius + 1)
        win = strength[lo:hi]
        if strength[t] >= win.max() and int(np.argmax(win)) + lo == t:
            out.append(int(t))
    return out


def move_at(sd: SeriesData, pts, j: int, significance: float, sigma: float, s: DetectSettings,
            end: int | None = None) -> Move:
    """A move of ``sd`` whose first bad point is ``pts[j]``, levels the medians of a window each
    side (the one after stopping at ``end``, where another step begins)."""
    vals = [p.value for p in pts]
    before = float(np.median(vals[max(0, j - s.pooled_window):j]))
    after = float(np.median(vals[j:min(j + s.pooled_window, end if end is not None else len(vals))]))
    nights_after = len(pts) - j
    return Move(
        key=sd.key, last_good=_ref(pts[j - 1]), first_bad=_ref(pts[j]), before=before, after=after,
        change_pct=(after - before) / before * 100.0, direction=direction_of(sd.key.metric, before, after),
        significance=significance,
        state="provisional" if nights_after < s.confirm_nights else "confirmed",
        nights_after=nights_after, noise_sigma=float(sigma),
    )
