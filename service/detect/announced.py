"""Steps on nightlies where the data, or the repo, says the measurement changed.

The pretuned document publishes, run by run, which baselines a kernel was compared with and
whether it was CUDA-graph timed; "a flip of `cudagraph` or a change in the set of `baselines`
is a method change" (the dashboard's own rule). A step on such a nightly needs no long history
to be believed, because its reason is given: a series with one nightly before the change (a
suite that had just started) is beyond the search, which needs ``min_size`` nights a side, but a
person comparing the two nights would still see it. So here one night before is enough, and
the step must still clear the usual magnitude floor and ``min_significance`` standard errors.
The repo can say it too, near a series' start: `young_steps` names the runs where the data
steps, and the caller keeps those whose window changed that kernel's own measurement or configs.

Pure: a series and the run ids where its track's measurement changed in, moves out.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from service.detect.core import noise_sigma, segment_sse
from service.detect.pooled import move_at
from service.detect.series import _ref, is_trend_value, trend_points
from service.detect.settings import DetectSettings
from service.records import Move, SeriesData


def announced_moves(sd: SeriesData, at_runs: Iterable[str], s: DetectSettings, known: Sequence[Move],
                    night_of: Mapping[str, int]) -> list[Move]:
    """A move at each run of ``at_runs`` where the level steps, unless ``known`` already has a
    move of the series on that night, or up to ``match_nights`` before it.

    A known step a night or two *after* the announced one is another change (the pretuned suite
    gained a baseline on its second night and a new timer on its third): the announced step is
    then read on the nights between the two only, so the later level is not taken for its own."""
    pts = trend_points(sd)
    index = {p.run_id: j for j, p in enumerate(pts)}
    taken = [(night_of[r.run_id], index.get(r.run_id)) for m in known for r in (m.first_bad, m.end)
             if r is not None and r.run_id in night_of]
    w = s.pooled_window
    v = np.log(np.fromiter((p.value for p in pts), dtype=float, count=len(pts)))
    out: list[Move] = []
    for run_id in sorted(set(at_runs), key=lambda r: index.get(r, -1)):
        j = index.get(run_id)
        if j is None or j < 1 or len(pts) - j < s.report_after_nights or run_id not in night_of:
            continue
        night = night_of[run_id]
        near = [(t, k) for t, k in taken if abs(night - t) <= s.match_nights]
        if any(t <= night or k is None or k <= j for t, k in near):
            continue
        end = min([j + w, *(k for _, k in near)])
        z, sigma = _step_at(v, j, end, s)
        if z is None:
            continue
        # up to a later step: the level between the two, not the one after the second
        out.append(move_at(sd, pts, j, z, sigma, s, end=end))
        taken.append((night, j))
    return out


def _step_at(v: np.ndarray, j: int, end: int, s: DetectSettings) -> tuple[float | None, float]:
    """(significance, sigma) of a step at ``j`` of log values ``v``, the level after read up to
    ``end``: the medians of up to ``pooled_window`` nights a side in standard errors (None when
    it misses ``min_significance`` or the magnitude floor)."""
    w = s.pooled_window
    sigma = max(noise_sigma(v[:j]) if j >= 3 else 0.0, noise_sigma(v[j:]), s.pooled_noise_floor)
    before, after = float(np.median(v[max(0, j - w):j])), float(np.median(v[j:end]))
    nb, na = min(j, w), end - j
    z = abs(after - before) / (sigma * math.sqrt(math.pi / 2 * (1.0 / nb + 1.0 / na)))
    if z < s.min_significance or abs(math.expm1(after - before)) * 100.0 < s.min_change_pct:
        return None, sigma
    return z, sigma


def young_steps(sd: SeriesData, s: DetectSettings) -> list[str]:
    """Runs among a series' first ``min_size - 1`` after its first, where its level steps as
    `announced_moves` reads a step: candidates for an announcement the data cannot make.

    Why: the search needs ``min_size`` nights a side, so a step on a series' second or third
    nightly (a pretuned kernel's configs regenerated two nights after it joined the suite) is
    beyond it, and a later outlier can pull it elsewhere. The repo may give the reason (the
    caller reads it, only for the runs named here: most series have none). With so little before
    it, a step is named once ``confirm_nights`` follow it, not on the tail rule's two."""
    # read on the series' first weeks only (its points are in date order): once they are there,
    # later nights (a regime months on) never change what is named, and every series of a pass
    # is asked, so a long one must cost no more than a short one
    first: list = []
    for p in sd.points:
        if is_trend_value(p):
            first.append(p)
            if len(first) == s.min_size + 3 * s.pooled_window:
                break
    logs = [math.log(p.value) for p in first]
    w, out = s.pooled_window, []
    for j in range(1, min(s.min_size, len(first))):
        if len(first) - j < max(s.report_after_nights, s.confirm_nights):
            break  # the scatter is read after the step: two nights of it say nothing yet
        end = min(j + w, len(first))
        # the magnitude floor first, on plain medians: most series fail it, and cost no more
        if abs(math.expm1(statistics.median(logs[j:end]) - statistics.median(logs[max(0, j - w):j]))) * 100.0 \
                < s.min_change_pct:
            continue
        if _step_at(np.asarray(logs), j, end, s)[0] is not None:
            out.append(first[j].run_id)
    return out


def onto_announced(sd: SeriesData, at_runs: Iterable[str], s: DetectSettings, known: Sequence[Move]) -> list[Move]:
    """``known`` with each step found a night or two off a nightly where the measurement
    changed moved onto that nightly, when the series splits there at least as well.

    Why: the search needs two nights a side, so a suite's first change after one nightly (the
    pretuned suite gained a baseline on its second night) is found where it can be placed, a
    night late, and then hides the announced step it is. The reason is given on that night; if
    the numbers agree, that is where the step begins."""
    pts = trend_points(sd)
    index = {p.run_id: j for j, p in enumerate(pts)}
    marks = sorted({index[r] for r in at_runs if index.get(r, 0) >= 1})
    if not marks:
        return list(known)
    v = np.log(np.fromiter((p.value for p in pts), dtype=float, count=len(pts)))
    starts = sorted(index[m.first_bad.run_id] for m in known if m.first_bad.run_id in index)
    seg = segment_sse(v)

    def sse(lo: int, t: int, hi: int) -> float:
        return seg(lo, t) + seg(t, hi)

    out = []
    for m in known:
        jm = index.get(m.first_bad.run_id)
        near = [] if jm is None or m.end is not None or jm in marks else \
            [j for j in marks if 0 < abs(j - jm) <= s.match_nights]
        if not near:
            out.append(m)
            continue
        j = min(near, key=lambda t: (abs(t - jm), t))
        a, b = min(j, jm), max(j, jm)
        lo = max(max((t for t in starts if t < a), default=0), a - s.pooled_window)
        hi = min(min((t for t in starts if t > b), default=len(pts)), b + s.pooled_window)
        if sse(lo, j, hi) > sse(lo, jm, hi) or _two_steps(v, lo, j, jm, hi, s):
            out.append(m)
            continue
        after = len(pts) - j
        out.append(dataclasses.replace(m, last_good=_ref(pts[j - 1]), first_bad=_ref(pts[j]), nights_after=after,
                                       state="provisional" if after < s.confirm_nights else "confirmed"))
    return out


def _two_steps(v: np.ndarray, lo: int, j: int, jm: int, hi: int, s: DetectSettings) -> bool:
    """Do the nights between the announced night ``j`` and the found step ``jm`` sit at a level
    of their own, apart from the found step's other side? Then both are steps (a baseline added,
    then a new timer the next night) and the found one stays where it is."""
    a, b = min(j, jm), max(j, jm)
    mid = v[a:b]
    side = v[b:hi] if jm > j else v[lo:a]
    if not mid.size or not side.size:
        return False
    sigma = max(noise_sigma(v[lo:hi]), s.pooled_noise_floor)
    diff = float(np.median(side)) - float(np.median(mid))
    z = abs(diff) / (sigma * math.sqrt(1.0 / mid.size + 1.0 / side.size))
    return z >= s.min_significance and abs(math.expm1(diff)) * 100.0 >= s.min_change_pct


def measurement_changed_at(runs: Sequence[str], baselines: Mapping[str, Mapping[str, float | None]],
                           cudagraph: Mapping[str, float | None] | None, hold: int = 2) -> list[str]:
    """The runs (of ``runs``, in order) at which the set of baselines reporting a value, or the
    cudagraph flag, differs from the last run the track ran and stays so for ``hold`` runs of it.
    A night it did not run (nothing reported) changes nothing, and a baseline missing for a
    night (it failed) and back the next is a failure, not a new set. A track that ran with no
    per-baseline values (its flag only) and then publishes a set has a new set: the pretuned
    suite's first nightly had none, and its second the torch.compile baseline (df7ebeab)."""
    seen: list[tuple[str, frozenset[str], bool | None]] = []
    for run in runs:
        names = frozenset(m for m, vals in baselines.items() if vals.get(run) is not None)
        cg = cudagraph.get(run) if cudagraph is not None else None
        if names or cg is not None:
            seen.append((run, names, None if cg is None else bool(cg)))
    out: list[str] = []
    if not seen:
        return out
    names_now, cg_now = seen[0][1], seen[0][2]  # what held last
    for i in range(1, len(seen)):
        run, names, cg = seen[i]
        after = seen[i:i + hold]
        if len(after) < hold:
            break
        new_set = bool(names) and names != names_now and all(a[1] == names for a in after)
        new_flag = cg is not None and cg_now is not None and cg != cg_now and all(a[2] == cg for a in after)
        if new_set or new_flag:
            out.append(run)
        if new_set or not names_now:
            names_now = names or names_now
        if new_flag or cg_now is None:
            cg_now = cg if cg is not None else cg_now
    return out
