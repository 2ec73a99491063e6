"""The platform-wide rule: steps too small for one series, plain across many (pure, no database)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from service.detect import DetectSettings, detect_series
from service.detect.pooled import pooled_moves
from service.records import SeriesData, SeriesKey, SeriesPoint

T0 = datetime(2026, 3, 1, 8, tzinfo=timezone.utc)
N = 60


def _series(kernel: str, values, platform: str = "b200", metric: str = "helion_speedup_geomean") -> SeriesData:
    pts = tuple(SeriesPoint(f"{1000 + i}", f"{i:08x}", f"{i:040x}", T0 + timedelta(days=i), float(v))
                for i, v in enumerate(values))
    return SeriesData(SeriesKey("dashboard", platform, kernel, metric), pts)


def _platform(seed: int, n_kernels: int, step_at: int | None, step: float, scatter: float = 0.035,
              moving: int | None = None, platform: str = "b200") -> list[SeriesData]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_kernels):
        v = np.exp(rng.normal(0, scatter, N)) * (1.0 + 0.1 * k)
        if step_at is not None and (moving is None or k < moving):
            v[step_at:] *= 1.0 + step
        out.append(_series(f"k{k}", v, platform))
    return out


NIGHTS = {f"{1000 + i}": i for i in range(N)}
S = DetectSettings()


def test_a_small_step_on_most_kernels_is_found_on_its_night_though_no_series_shows_it_alone():
    plat = _platform(1, 12, 40, -0.04, scatter=0.03)
    assert sum(1 for sd in plat if detect_series(sd, S)) <= 2  # 4% in 3% scatter: (nearly) invisible alone
    found = pooled_moves(plat, NIGHTS, S)
    assert len(found) >= 8
    firsts = {m.first_bad.run_id for ms in found.values() for m in ms}
    assert firsts == {"1040"}
    m = next(iter(found.values()))[0]
    assert m.direction == "regression" and m.last_good.run_id == "1039" and m.state == "confirmed"


def test_quiet_platforms_and_a_one_night_shock_on_every_kernel_give_nothing():
    for seed in range(5):
        assert pooled_moves(_platform(seed, 12, None, 0.0), NIGHTS, S) == {}
    plat = _platform(7, 12, None, 0.0)
    shocked = [SeriesData(sd.key, tuple(p._replace(value=p.value * (0.8 if i == 30 else 1.0))
                                        for i, p in enumerate(sd.points))) for sd in plat]
    assert pooled_moves(shocked, NIGHTS, S) == {}  # a bad night for the machine, not a step


def test_a_step_on_a_minority_of_kernels_is_left_to_the_per_series_detector():
    assert pooled_moves(_platform(3, 12, 40, -0.045, moving=3), NIGHTS, S) == {}


def test_platforms_and_metrics_are_pooled_separately_and_known_moves_are_not_repeated():
    moved = _platform(4, 10, 40, 0.05, platform="h100")
    quiet = _platform(5, 10, None, 0.0, platform="b200")
    found = pooled_moves(moved + quiet, NIGHTS, S)
    assert found and {k.platform_short for k in found} == {"h100"}
    key = next(iter(found))
    again = pooled_moves(moved + quiet, NIGHTS, S, known={key: found[key]})
    assert key not in again and len(again) == len(found) - 1


def _with_known(plat: list[SeriesData]) -> dict:
    return {sd.key: ms for sd in plat if (ms := detect_series(sd, S))}


def test_kernels_found_alone_do_not_drag_the_quiet_ones_wobbles_in():
    # three kernels fall 12% (each found by its own search); the seven others wobble by a
    # fraction of a percent the same night: no platform-wide step, and none of them is a move
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        plat = []
        for k in range(10):
            v = np.exp(rng.normal(0, 0.006, N)) * (1.0 + 0.1 * k)
            v[40:] *= 0.88 if k < 3 else 0.993
            plat.append(_series(f"k{k}", v))
        known = _with_known(plat)
        assert {k.kernel for k in known} == {"k0", "k1", "k2"}
        assert pooled_moves(plat, NIGHTS, S, known=known) == {}


def test_a_platform_step_half_found_alone_still_brings_in_the_rest():
    # a 5% step on every kernel: the quiet kernels find it alone, the noisy ones cannot; the
    # noisy ones are the moves this rule adds, at their own (full-size) step
    rng = np.random.default_rng(7)
    plat = []
    for k in range(10):
        v = np.exp(rng.normal(0, 0.004 if k < 5 else 0.03, N)) * (1.0 + 0.1 * k)
        v[40:] *= 0.95
        plat.append(_series(f"k{k}", v))
    known = _with_known(plat)
    assert {f"k{k}" for k in range(5)} <= {k.kernel for k in known}
    found = pooled_moves(plat, NIGHTS, S, known=known)
    assert found and not set(found) & set(known)
    assert all(m.first_bad.run_id == "1040" for ms in found.values() for m in ms)


def test_each_suite_of_a_platform_is_pooled_against_its_own_baseline():
    """A pin moves the 10 kernels compared with one baseline; the platform's 12 kernels compared
    with another (the linear-attention suite, FLA) stay put. Counted together the movers are a
    minority of the platform; pooled by suite they are all of theirs, and the others stay quiet."""
    moved = _platform(8, 10, 40, -0.045)
    other = [SeriesData(SeriesKey("dashboard", "b200", f"la{i}", sd.key.metric), sd.points)
             for i, sd in enumerate(_platform(9, 12, None, 0.0))]
    assert pooled_moves(moved + other, NIGHTS, S) == {}
    suite = {sd.key: "FLA" for sd in other}
    found = pooled_moves(moved + other, NIGHTS, S, suite_of=suite)
    assert len(found) >= 6 and not {k.kernel for k in found} & {sd.key.kernel for sd in other}
    assert {m.first_bad.run_id for ms in found.values() for m in ms} == {"1040"}


def test_a_step_in_the_last_two_nights_is_found_and_is_provisional():
    found = pooled_moves(_platform(6, 12, N - 2, -0.06), NIGHTS, S)
    ms = [m for v in found.values() for m in v]
    assert ms and {m.first_bad.run_id for m in ms} == {f"{1000 + N - 2}"}
    assert all(m.state == "provisional" for m in ms)


def test_off_when_min_series_is_zero():
    assert pooled_moves(_platform(1, 12, 40, -0.05), NIGHTS, DetectSettings(pooled_min_series=0)) == {}


def test_a_platform_wide_episode_that_comes_back_is_left_to_the_per_series_detector():
    plat = _platform(8, 12, 30, -0.05)
    back = [SeriesData(sd.key, tuple(p._replace(value=p.value / (0.95 if i >= 38 else 1.0))
                                     for i, p in enumerate(sd.points))) for sd in plat]
    assert pooled_moves(back, NIGHTS, S) == {}  # neither the drop nor the recovery is a step


def test_a_step_in_the_newest_nights_is_not_blamed_on_a_night_before_it():
    """Windowed medians with a short window after make the night before a fresh step look
    stepped already; the split must land on the step's own night (a few near-ties aside)."""
    exact = early = total = 0
    for seed in range(40):
        for at in (N - 4, N - 3, N - 2):
            for ms in pooled_moves(_platform(seed, 12, at, -0.05, scatter=0.03), NIGHTS, S).values():
                for m in ms:
                    total += 1
                    off = int(m.first_bad.run_id) - 1000 - at
                    exact += off == 0
                    early += off <= -2
    assert total >= 800
    assert exact / total >= 0.96 and early == 0


def test_a_platform_wide_step_on_the_newest_nightly_is_reported_at_once_when_the_repo_explains_it():
    """The night a runner change lands, most kernels of the platform step: with that fact in the
    window the move is reported on its first night (provisional); without one it waits for a
    second bad night like any fresh step."""
    from types import SimpleNamespace

    from service.pipeline.detect_pass import _newest_night_moves
    from service.records import FactChange

    runner = FactChange("runner_label", "b200 runner a -> b", "hardware", ".github/workflows/x.yml", "a", "b")
    one_kernel = FactChange("num_inputs", "k0 inputs 5 -> 3", "method_change", "benchmarks/run.py", "5", "3",
                            kernels=("k0",))
    plat = _platform(4, 12, N - 1, -0.08, scatter=0.02)
    view = SimpleNamespace(trend=[None] * N, suites=lambda series: {}, source="dashboard", refs=(), data={})
    assert pooled_moves(plat, NIGHTS, S) == {}  # one night after: too early for the rule alone
    for facts, want in (((runner,), True), ((one_kernel,), False), ((), False)):
        stages = SimpleNamespace(dset=S, facts=lambda m, suite=None, f=facts: f, detect=detect_series)
        found = _newest_night_moves(stages, view, plat, NIGHTS, {})
        ms = [m for v in found.values() for m in v]
        assert bool(ms) is want, facts
        if want:
            assert len(ms) >= 8 and {m.first_bad.run_id for m in ms} == {f"{1000 + N - 1}"}
            assert all(m.state == "provisional" and m.nights_after == 1 for m in ms)
    quiet = _platform(5, 12, None, 0.0, scatter=0.02)
    stages = SimpleNamespace(dset=S, facts=lambda m, suite=None: (runner,), detect=detect_series)
    assert _newest_night_moves(stages, view, quiet, NIGHTS, {}) == {}


def test_one_kernels_step_on_the_newest_nightly_is_reported_at_once_when_the_repo_explains_it():
    """A torch pin bump lands in the last nightly: each kernel's baselines move their own way
    (one up 12%, one down 15%, the rest flat), so no same-way rule across the platform sees it.
    With the pin in the window each kernel that clears the ordinary bar on its one night is
    reported at once; without it, or for a kernel inside its scatter, nothing is."""
    from types import SimpleNamespace

    from service.pipeline.detect_pass import _newest_night_moves
    from service.records import FactChange

    pin = FactChange("baseline_pin", "torch 2.12 -> 2.13", "method_change", ".github/workflows/benchmark.yml",
                     "torch==2.12", "torch==2.13")
    plat = _platform(6, 8, None, 0.0, scatter=0.015)
    for k, factor in ((0, 1.12), (1, 0.85), (2, 1.01)):
        pts = list(plat[k].points)
        pts[-1] = pts[-1]._replace(value=pts[-1].value * factor)
        plat[k] = SeriesData(plat[k].key, tuple(pts))
    view = SimpleNamespace(trend=[None] * N, suites=lambda series: {}, source="dashboard", refs=(), data={})
    assert not any(m.first_bad.run_id == f"{1000 + N - 1}" for sd in plat for m in detect_series(sd, S))
    for facts, want in (((pin,), {"k0", "k1"}), ((), set())):
        stages = SimpleNamespace(dset=S, facts=lambda m, suite=None, f=facts: f, detect=detect_series)
        found = _newest_night_moves(stages, view, plat, NIGHTS, {})
        assert {k.kernel for k in found} == want, facts
        for ms in found.values():
            assert [m.first_bad.run_id for m in ms] == [f"{1000 + N - 1}"] and ms[0].state == "provisional"
    # a step the detector already holds on that night is not found twice
    stages = SimpleNamespace(dset=S, facts=lambda m, suite=None: (pin,), detect=detect_series)
    lone = S.model_copy(update={"report_after_nights": 1, "first_night_significance": S.min_significance})
    held = {plat[0].key: [m for m in detect_series(plat[0], lone) if m.first_bad.run_id == f"{1000 + N - 1}"]}
    assert held[plat[0].key]
    assert set(_newest_night_moves(stages, view, plat, NIGHTS, held)) == {plat[1].key}


def _timers(seed: int, n_kernels: int, moving: int, speed: float, latency: float) -> tuple[list[SeriesData], object]:
    """A platform's two timers per kernel (1.5% scatter), the first ``moving`` kernels' newest
    nightly off by ``speed`` and ``latency``; and the view `_newest_night_moves` reads them from."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    heads, data, refs = [], {}, []
    for k in range(n_kernels):
        for metric, off in (("helion_speedup_geomean", speed), ("helion_latency_avg_ms", latency)):
            v = np.exp(rng.normal(0, 0.015, N)) * (1.0 + 0.1 * k)
            if k < moving:
                v[-1] *= 1.0 + off
            sd = _series(f"k{k}", v, metric=metric)
            data[len(refs)] = sd
            refs.append(SimpleNamespace(key=sd.key, series_id=len(refs)))
            if metric == "helion_speedup_geomean":
                heads.append(sd)
    return heads, SimpleNamespace(trend=[None] * N, suites=lambda series: {}, source="dashboard", refs=refs,
                                  data=data)


def test_several_kernels_whose_helion_time_stepped_on_the_newest_nightly_are_reported_at_once():
    """A change in the last nightly slows four kernels by 10% on both timers, with nothing in the
    repo to explain it: the crowd stands in for a second night. Two kernels, or four whose
    speedup alone moved (their latency flat: the baselines' night, not Helion's), wait."""
    from types import SimpleNamespace

    from service.pipeline.detect_pass import _newest_night_moves

    stages = SimpleNamespace(dset=S, facts=lambda m, suite=None: (), detect=detect_series)
    newest = f"{1000 + N - 1}"
    heads, view = _timers(8, 8, 4, -0.10, 0.11)
    found = _newest_night_moves(stages, view, heads, NIGHTS, {})
    assert {k.kernel for k in found} == {"k0", "k1", "k2", "k3"}
    assert all([m.first_bad.run_id for m in ms] == [newest] and ms[0].state == "provisional"
               and ms[0].direction == "regression" for ms in found.values())
    off = S.model_copy(update={"newest_crowd_kernels": 0})
    assert _newest_night_moves(SimpleNamespace(dset=off, facts=stages.facts, detect=detect_series),
                               view, heads, NIGHTS, {}) == {}
    for moving, latency in ((2, 0.11), (4, 0.0), (4, -0.11)):
        heads, view = _timers(9, 8, moving, -0.10, latency)
        assert _newest_night_moves(stages, view, heads, NIGHTS, {}) == {}, (moving, latency)
