"""The generic change-point core: robust noise, ruptures search, then filters that make a
change point mean "a persistent step" rather than "the cost dropped".

Works on any numeric series (log perf values, or raw values for the TCPD benchmark).
Indices returned are the first index of each new regime.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from service.detect.settings import DetectSettings
from service.domain import MAD_TO_SIGMA

# MAD -> standard deviation for Gaussian noise; differences of iid noise have sqrt(2) x its sigma.
_SQRT2 = math.sqrt(2.0)


def _median(a: np.ndarray) -> float:
    """np.median without its generic-reduction overhead (~10x faster on short 1-D arrays)."""
    n = a.size
    k = n // 2
    if n % 2:
        return float(np.partition(a, k)[k])
    p = np.partition(a, (k - 1, k))
    return 0.5 * (float(p[k - 1]) + float(p[k]))


def noise_sigma(x: np.ndarray) -> float:
    """Robust scatter of one point: MAD of first differences / sqrt(2).

    Differences cancel slow level changes and steps (a step is one large difference, which
    the median ignores), so this measures night-to-night noise, not how much the series moved.
    Quantised series (many equal neighbours) can give MAD 0; then fall back to the mean
    absolute difference, and finally to a tiny relative floor so division stays finite.
    """
    if x.size < 2:
        return 0.0
    d = np.diff(x)
    mad = float(_median(np.abs(d - _median(d))))
    sigma = MAD_TO_SIGMA * mad / _SQRT2
    if sigma <= 0:
        sigma = float(np.mean(np.abs(d - _median(d)))) / _SQRT2
    if sigma <= 0:
        scale = float(np.max(np.abs(x))) if x.size else 0.0
        sigma = max(scale * 1e-9, 1e-12)
    return sigma


@dataclass(frozen=True)
class Step:
    """One kept change point and the robust levels either side of it."""

    index: int  # first index of the new regime
    before: float  # median of the previous segment (in the analysed scale)
    after: float  # median of the new segment
    significance: float  # |after - before| / sigma
    end: int | None = None  # an episode: first index back at the old level (the regime ended)
    paired: bool = False  # the episode was two kept change points (out and back), not a short blip
    held: bool = False  # under min_significance, kept because both levels held long (`_held`)


# below this many points the full-resolution search is cheap (< 0.5 ms): no coarse pass
_COARSE_MIN_N = 256


def _rpt():
    """ruptures, imported on the first search: it loads SciPy (~0.6 s) for costs we never use,
    and a process that only reads what detection already stored (`investigate` on a current
    store) must not pay for it."""
    import ruptures

    return ruptures


def _algo(s: DetectSettings, min_size: int):
    rpt = _rpt()
    if s.method == "pelt" and s.cost in ("l2", "rbf"):
        # KernelCPD(linear) is exactly Pelt with the l2 cost, in C (jump=1: exact positions)
        return rpt.KernelCPD(kernel="linear" if s.cost == "l2" else "rbf", min_size=min_size)
    if s.method == "pelt":
        return rpt.Pelt(model=s.cost, min_size=min_size, jump=1)
    return rpt.Binseg(model=s.cost, min_size=min_size, jump=1)


def _predict(algo, y: np.ndarray, pen: float) -> list[int]:
    try:
        bkps = algo.fit(y).predict(pen=pen)
    except _rpt().exceptions.BadSegmentationParameters:
        return []
    return [int(b) for b in bkps if 0 < int(b) < y.size]


def segment_sse(x: np.ndarray):
    """``sse(a, b)``: the squared deviations of ``x[a:b]`` from its mean, from cumulative sums
    (O(1) a segment: the refinements below try every split near a change point)."""
    c1 = np.concatenate(([0.0], np.cumsum(x)))
    c2 = np.concatenate(([0.0], np.cumsum(x * x)))

    def sse(a: int, b: int) -> float:
        return float(c2[b] - c2[a] - (c1[b] - c1[a]) ** 2 / (b - a))

    return sse


def _refine(z: np.ndarray, coarse: list[int], s: DetectSettings) -> list[int]:
    """Exact positions for change points found on the coarse series (left to right).

    Each moves within +-stride nights to where splitting its two neighbouring segments costs
    least (l2, from cumulative sums), keeping every regime at least min_size long.
    """
    n, w = z.size, s.search_stride
    sse = segment_sse(z)

    out: list[int] = []
    for i, c in enumerate(coarse):
        lo = max(c - w, (out[-1] if out else 0) + s.min_size)
        nxt = coarse[i + 1] if i + 1 < len(coarse) else n
        hi = min(c + w, nxt - s.min_size)
        if lo > hi:
            continue  # no room for a regime of min_size on both sides: drop it
        a = out[-1] if out else 0
        best = min(range(lo, hi + 1), key=lambda t: (sse(a, t) + sse(t, nxt), abs(t - c)))
        out.append(best)
    return out


def _search(z: np.ndarray, s: DetectSettings) -> list[int]:
    """Candidate change points from ruptures, on sigma-scaled values.

    ruptures' C Pelt does not prune, so it costs O(n^2): with search_stride w it runs on sums of
    w consecutive nights (aligned to the newest night, scaled to unit noise, which keeps a step's
    gain and so the penalty unchanged), w^2 times faster; positions are then block boundaries,
    made exact by `_refine` once `_prune` has removed the spurious ones around them.
    """
    n = z.size
    pen = s.penalty * math.log(max(n, 2))
    w = s.search_stride if n >= _COARSE_MIN_N else 1
    if w <= 1:
        return _predict(_algo(s, s.min_size), z, pen) if n >= 2 * s.min_size else []
    m = n // w
    min_c = max(1, math.ceil(s.min_size / w))
    if m < 2 * min_c:
        return []
    off = n - m * w  # the oldest nights that do not fill a block are only seen by _refine
    y = z[off:].reshape(m, w).sum(axis=1) / math.sqrt(w)
    return [off + k * w for k in _predict(_algo(s, min_c), y, pen)]


def _relative_ok(before: float, after: float, s: DetectSettings, log: bool) -> bool:
    """Magnitude floor: relative change of the linear level (only meaningful on log values)."""
    if not log:
        return True
    return abs(math.expm1(after - before)) * 100.0 >= s.min_change_pct


def _levels(x: np.ndarray, cps: list[int]) -> list[float]:
    bounds = [0, *cps, x.size]
    return [float(_median(x[a:b])) for a, b in zip(bounds[:-1], bounds[1:])]


def _scale(x: np.ndarray, a: int, c: int, b: int, lv0: float, lv1: float, sigma: float) -> float:
    """Noise scale a step must beat: sigma, or the scatter of the two regimes if larger.

    On nightly perf data the regimes are flat, their scatter is the night-to-night noise and
    this is sigma. A drifting or trending series has regimes whose scatter is far larger than
    its night-to-night noise; a "step" smaller than that scatter is the drift, not a change.
    """
    r = np.concatenate((x[a:c] - lv0, x[c:b] - lv1))
    spread = MAD_TO_SIGMA * float(_median(np.abs(r)))
    return max(sigma, spread)


# the standard error of a median of n normal values is sqrt(pi / 2) sigma / sqrt(n)
_MEDIAN_SE = math.sqrt(math.pi / 2.0)


def _held(sig: float, n_before: int, n_after: int, before: float, after: float, s: DetectSettings,
          log: bool) -> bool:
    """A step under ``min_significance`` that is still plain: both levels held ``held_nights`` or
    more, and the two medians differ by ``held_standard_errors`` of their difference. A 7% step
    against 3% scatter is 2.3 sigmas of one night, and held for two weeks each side no person
    reading the chart doubts it; a drift is not one (its regimes' own scatter is the scale,
    `_scale`). Log series only: on raw values (TCPD's) there is no relative floor to bound how
    small a held step may be, and a long noisy series splits into many. Off when
    ``held_min_sigma`` is 0."""
    if not log or not s.held_min_sigma or sig < s.held_min_sigma or min(n_before, n_after) < s.held_nights:
        return False
    if abs(math.expm1(after - before)) * 100.0 < s.held_min_change_pct:
        return False
    return sig / (_MEDIAN_SE * math.sqrt(1.0 / n_before + 1.0 / n_after)) >= s.held_standard_errors


def _prune(x: np.ndarray, cps: list[int], sigma: float, s: DetectSettings, log: bool) -> list[int]:
    """Drop, weakest first, change points whose median step is too small or insignificant.

    Medians (not the means the search optimised) make a lone outlier inside a short segment
    harmless: the segment's median is a normal value, so its step vanishes here. Removing a
    change point only changes its two neighbours, so only those are re-scored.
    """
    cps = list(cps)
    if not cps:
        return cps
    bounds = [0, *cps, x.size]
    lv = _levels(x, cps)

    def score(i: int) -> float:  # i indexes cps; math.inf = passes
        scale = _scale(x, bounds[i], bounds[i + 1], bounds[i + 2], lv[i], lv[i + 1], sigma)
        sig = abs(lv[i + 1] - lv[i]) / scale
        if not _relative_ok(lv[i], lv[i + 1], s, log):
            return sig
        if sig < s.min_significance and not _held(sig, bounds[i + 1] - bounds[i], bounds[i + 2] - bounds[i + 1],
                                                   lv[i], lv[i + 1], s, log):
            return sig
        return math.inf

    scores = [score(i) for i in range(len(cps))]
    while scores:
        i = min(range(len(scores)), key=scores.__getitem__)
        if scores[i] == math.inf:
            break
        del bounds[i + 1], scores[i]
        lv[i : i + 2] = [float(_median(x[bounds[i] : bounds[i + 1]]))]
        for j in (i - 1, i):
            if 0 <= j < len(scores):
                scores[j] = score(j)
    return bounds[1:-1]


def _run_back(lv: list[float], bounds: list[int], i: int, sigma: float, s: DetectSettings) -> tuple[int, bool]:
    """Segment ``i`` left the level of segment ``i - 1``: (the segment after the run of segments
    that stayed out, whether that one is back within ``revert_tolerance`` of the run's biggest
    departure).

    Why a run and not one segment: throttling is often worst on its first nights and milder
    after (or the reverse), so the search returns two or three short segments on one side before
    the level comes back. Judged a segment at a time, the milder half reads as "back" and the
    whole week vanished as a blip, or the two halves became a regression and two fixes. A
    segment continues the run when it is short (``revert_nights``), still out by
    ``min_significance`` sigmas on the same side and not the last one, and either not back yet
    or followed by a segment back within ``min_significance`` sigmas of the old level (the true
    return). A drifting series, whose short segments wander and rarely land on the old level
    again, keeps the one-segment reading.
    """
    base = lv[i - 1]
    sign = math.copysign(1.0, lv[i] - base)
    out = abs(lv[i] - base)
    bar = s.min_significance * sigma
    j = i + 1
    while j < len(lv):
        off = (lv[j] - base) * sign
        back = abs(lv[j] - base) <= s.revert_tolerance * out
        still_out = off >= bar and j < len(lv) - 1 and bounds[j + 1] - bounds[j] <= s.revert_nights
        if still_out and (not back or abs(lv[j + 1] - base) < bar):
            out = max(out, off)
            j += 1
            continue
        return j, back
    return j, False


def _drop_blips(x: np.ndarray, cps: list[int], sigma: float, s: DetectSettings) -> list[int]:
    """Remove short excursions that come back: in one series a blip is noise, not a regression
    and a fix (`_excursions` reports them separately, as ended moves, for the event stage)."""
    if s.revert_nights <= 0:
        return cps
    changed = True
    while changed and len(cps) >= 2:
        changed = False
        lv = _levels(x, cps)
        bounds = [0, *cps, x.size]
        for i in range(1, len(lv) - 1):  # interior segments only
            j, back = _run_back(lv, bounds, i, sigma, s)
            if back and bounds[j] - bounds[i] <= s.revert_nights:
                del cps[i - 1 : j]
                changed = True
                break
    return cps


def _excursions(x: np.ndarray, cps: list[int], sigma: float, s: DetectSettings, log: bool) -> list[Step]:
    """Short runs of nights that left their segment's level and came back: 2..revert_nights
    nights in a row, each beyond min_significance sigmas on the same side, with a normal night
    after. One series alone calls this noise; the event stage decides whether many kernels of a
    platform did it together (a hardware episode with a start and an end)."""
    out: list[Step] = []
    bounds = [0, *cps, x.size]
    for a, b in zip(bounds[:-1], bounds[1:]):
        seg = x[a:b]
        if seg.size < s.min_size + 2:
            continue
        level = float(_median(seg))
        dev = (seg - level) / sigma
        i = 1
        while i < seg.size:
            sign = 1.0 if dev[i] >= s.min_significance else -1.0 if dev[i] <= -s.min_significance else 0.0
            if not sign:
                i += 1
                continue
            j = i
            while j < seg.size and dev[j] * sign >= s.min_significance:
                j += 1
            if 2 <= j - i <= s.revert_nights and j < seg.size:
                inner = float(_median(seg[i:j]))
                if _relative_ok(level, inner, s, log):
                    out.append(Step(a + i, level, inner, abs(inner - level) / sigma, end=a + j))
            i = j
    return out


def _pair_episodes(x: np.ndarray, cps: list[int], sigma: float, s: DetectSettings,
                   worse: float = 0.0) -> tuple[list[int], list[tuple[int, int]]]:
    """Kept steps that go out and come back within ``episode_nights``: (remaining cps, episodes).

    With ``worse`` (the sign of a regression in ``x``), only a step for the worse that recovers
    is an episode: an improvement that goes away again is a regression of its own (a speed-up
    landed, and two weeks later another commit gave it back), which on-call must hear of, not
    read as "ended"."""
    if s.episode_nights <= s.revert_nights or len(cps) < 2:
        return cps, []
    lv = _levels(x, cps)
    bounds = [0, *cps, x.size]
    out, eps, i = [], [], 1  # i: the segment a kept change point starts
    while i < len(lv):
        if i < len(lv) - 1:
            j, back = _run_back(lv, bounds, i, sigma, s)
            for_the_worse = worse == 0 or (lv[i] - lv[i - 1]) * worse > 0
            if for_the_worse and back and bounds[j] - bounds[i] <= s.episode_nights:
                eps.append((bounds[i], bounds[j]))
                i = j + 1
                continue
        out.append(bounds[i])
        i += 1
    return out, eps


def _opening_episode(x: np.ndarray, cps: list[int], sigma: float, s: DetectSettings,
                     worse: float = 0.0) -> tuple[list[int], list[tuple[int, int]]]:
    """A series that starts fewer than ``min_size`` nights before an episode: (remaining cps,
    the episode).

    Why: a new kernel or platform published two nightlies, then had a bad week that ended. The
    search cannot place a regime of two nights, so the two good nights join the bad ones and the
    only step found is the recovery, read as an improvement (and on a dozen kernels at once, a
    broad "real" speed-up no commit made). A person reads the opening nights as the level the
    series came back to. They count as that level only when every one of them sits on the
    recovered side of the bad nights by ``min_significance`` sigmas, their median is back within
    ``revert_tolerance`` of the bad nights' departure, and the bad nights were for the worse (with
    no known worse side, a bad week and a gain given back look alike: the one-step reading stays).
    """
    k = s.min_size - 1
    if k < 2 or not cps or not worse or s.episode_nights <= 0:
        return cps, []
    c = cps[0]
    b = cps[1] if len(cps) > 1 else x.size
    if not 2 <= c - k <= s.episode_nights:
        return cps, []
    opening, inner, after = float(_median(x[:k])), float(_median(x[k:c])), float(_median(x[c:b]))
    side = math.copysign(1.0, after - inner)
    if (inner - opening) * worse <= 0:
        return cps, []  # the middle nights were the better ones: a gain that went away is a move of its own
    if np.any((x[:k] - inner) * side < s.min_significance * sigma):
        return cps, []
    if abs(opening - after) > s.revert_tolerance * abs(after - inner):
        return cps, []
    return cps[1:], [(k, c)]


def _tail(x: np.ndarray, cps: list[int], sigma: float, s: DetectSettings, log: bool) -> list[int]:
    """A step in the last nights (the search cannot return a regime shorter than min_size).

    Every one of the last j points must sit on the same side of the last regime's level by
    >= min_significance sigmas (a lone last night: first_night_significance), so on-call hears
    of it at once; one more normal night and the detector forgets it (the move is retracted).
    """
    n = x.size
    start = cps[-1] if cps else 0
    for j in range(s.min_size, s.report_after_nights - 1, -1):
        c = n - j
        if c - start < s.min_size:
            continue
        level = float(_median(x[start:c]))
        spread = MAD_TO_SIGMA * float(_median(np.abs(x[start:c] - level)))
        dev = (x[c:] - level) / max(sigma, spread)
        bar = s.first_night_significance if j == 1 else s.min_significance
        if not (np.all(dev >= bar) or np.all(dev <= -bar)):
            continue
        if _relative_ok(level, float(_median(x[c:])), s, log):
            return [*cps, c]
    return cps


def _young_and_reverted(x: np.ndarray, cps: list[int], s: DetectSettings) -> bool:
    """Is the last regime only a few nights old, with a night already back at the old level?

    The search must give the newest regime at least min_size nights, so a two-night blip plus
    the normal night that ends it, or a step two nights ago plus the normal night before it,
    both come back as a "regime". A young regime counts only if every one of its nights has
    gone more than revert_tolerance of the way to the new level; otherwise the point-by-point
    tail rule decides.
    """
    c = cps[-1]
    if x.size - c > max(s.revert_nights, s.min_size):
        return False
    start = cps[-2] if len(cps) > 1 else 0
    old, new = _median(x[start:c]), _median(x[c:])
    step = new - old
    progress = (x[c:] - old) * math.copysign(1.0, step)
    return bool(np.any(progress <= s.revert_tolerance * abs(step)))


def _unpinned(x: np.ndarray, cps: list[int], min_size: int) -> list[int]:
    """Each change point the search pinned against ``min_size`` moved to where its two
    neighbouring segments split best, down to two nights a side.

    Why: the search keeps every regime ``min_size`` long, so a step after only two nightlies (a
    young pretuned series) or two nightlies after another step (compile time jumps when the
    harness changes, and again when the autotune settings do) can only be placed ``min_size``
    after its neighbour: a night late, and the culprit window with it. Two points are enough to
    say where a step already found begins.
    """
    if min_size <= 2 or not cps:
        return cps
    sse = segment_sse(x)

    out = list(cps)
    for i, c in enumerate(out):
        a = out[i - 1] if i else 0
        b = out[i + 1] if i + 1 < len(out) else x.size
        if (c - a != min_size and b - c != min_size) or c - a < 2 or b - c < 2:
            continue  # not pinned (or a step in the last night, placed by `_tail`): it stands
        lo, hi = max(a + 2, c - (min_size - 2)), min(b - 2, c + (min_size - 2))
        if lo > hi:
            continue
        out[i] = min(range(lo, hi + 1), key=lambda t: (sse(a, t) + sse(t, b), abs(t - c)))
    return out


def steps(x: np.ndarray, s: DetectSettings, *, log: bool, worse: float = 0.0) -> tuple[list[Step], float]:
    """Kept steps of an already-transformed series (log values when ``log``) and the sigma used.
    ``worse``: +1 when up in ``x`` is a regression, -1 when down is, 0 when unknown (see
    `_pair_episodes`)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError("change_points needs a 1-D series of finite numbers")
    sig = noise_sigma(x)
    if x.size < s.min_size + 1 or sig <= 0:
        return [], sig
    z = (x - float(_median(x))) / sig
    cps = _search(z, s)
    cps = _prune(x, cps, sig, s, log)
    if s.search_stride > 1 and x.size >= _COARSE_MIN_N:
        cps = _refine(z, cps, s)
    cps = _drop_blips(x, cps, sig, s)
    cps = _prune(x, cps, sig, s, log)
    if cps and _young_and_reverted(x, cps, s):
        cps.pop()
    cps, long_eps = _pair_episodes(x, cps, sig, s, worse)
    if not long_eps or (cps and long_eps[0][0] > cps[0]):
        cps, opening = _opening_episode(x, cps, sig, s, worse)
        long_eps = opening + long_eps
    cps = _tail(x, cps, sig, s, log)
    cps = _unpinned(x, cps, s.min_size)
    lv = _levels(x, cps)
    out = []
    for i, c in enumerate(cps):
        z = abs(lv[i + 1] - lv[i]) / sig
        out.append(Step(c, lv[i], lv[i + 1], z, held=z < s.min_significance))
    for a, b in long_eps:  # a kept step out and one back: one episode
        before = float(_median(x[max(0, a - 2 * s.episode_nights):a]))
        inner = float(_median(x[a:b]))
        out.append(Step(a, before, inner, abs(inner - before) / sig, end=b, paired=True))
    tail_start = cps[-1] if cps and x.size - cps[-1] < s.min_size else None
    # an excursion inside an episode is that episode's own worst nights, not a second move
    out += [e for e in _excursions(x, cps, sig, s, log) if (tail_start is None or e.index < tail_start)
            and not any(a <= e.index < b for a, b in long_eps)]
    out.sort(key=lambda st: st.index)
    return out, sig


def change_points(
    values: Sequence[float] | np.ndarray, settings: DetectSettings, *, log: bool = False
) -> list[int]:
    """First index of each new regime in ``values`` (raw, or log-transformed when ``log``)."""
    x = np.asarray(values, dtype=float)
    if log:
        if np.any(x <= 0):
            raise ValueError("log=True needs positive values")
        x = np.log(x)
    found, _ = steps(x, settings, log=log)
    # an episode made of two kept change points is still two change points of the series
    out = [st.index for st in found if st.end is None]
    out += [i for st in found if st.paired for i in (st.index, st.end)]
    return sorted(out)
