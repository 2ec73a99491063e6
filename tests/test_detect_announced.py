"""Steps on nightlies where the data says the measurement changed (pure, no database): one night
before is enough there, and the usual floors still hold."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from service.detect import DetectSettings, detect_series
from service.detect.announced import announced_moves, measurement_changed_at, onto_announced, young_steps
from service.detect.pooled import move_at
from service.detect.series import trend_points
from service.records import SeriesData, SeriesKey, SeriesPoint

T0 = datetime(2026, 7, 1, 8, tzinfo=timezone.utc)
S = DetectSettings()


def _series(values) -> SeriesData:
    pts = tuple(SeriesPoint(f"{1000 + i}", f"{i:08x}", f"{i:040x}", T0 + timedelta(days=i), float(v))
                for i, v in enumerate(values))
    return SeriesData(SeriesKey("pretuned", "b200", "rms_norm", "geomean"), pts)


def _young(step: float, nights: int = 12, scatter: float = 0.015, seed: int = 3) -> SeriesData:
    """A suite's first nightly, then a step on the second: what the search cannot see."""
    v = np.exp(np.random.default_rng(seed).normal(0, scatter, nights)) * 1.4
    v[1:] *= 1.0 + step
    return _series(v)


NIGHTS = {f"{1000 + i}": i for i in range(40)}


def test_one_night_before_a_change_the_data_announces_is_enough():
    sd = _young(-0.15)
    assert detect_series(sd, S) == []  # the search needs min_size nights before a step
    [m] = announced_moves(sd, ["1001"], S, [], NIGHTS)
    assert (m.last_good.run_id, m.first_bad.run_id) == ("1000", "1001")
    assert m.direction == "regression" and m.change_pct == pytest.approx(-15, abs=5)  # one night before: its noise


def test_no_announced_night_or_no_step_there_gives_nothing():
    sd = _young(-0.15)
    assert announced_moves(sd, [], S, [], NIGHTS) == []
    assert announced_moves(sd, ["1005"], S, [], NIGHTS) == []  # the level did not move at 1005
    assert announced_moves(_young(-0.01), ["1001"], S, [], NIGHTS) == []  # within the floors
    assert announced_moves(sd, ["1000"], S, [], NIGHTS) == []  # no night before it


def test_a_step_the_search_already_has_is_not_reported_twice():
    v = np.exp(np.random.default_rng(5).normal(0, 0.01, 30)) * 1.4
    v[15:] *= 0.85
    sd = _series(v)
    known = detect_series(sd, S)
    assert [m.first_bad.run_id for m in known] == ["1015"]
    assert announced_moves(sd, ["1015"], S, known, NIGHTS) == []
    assert announced_moves(sd, ["1016"], S, known, NIGHTS) == []  # within match_nights of it


# a pretuned kernel's first two nightlies, its configs regenerated on the third, and one stray night
# back at the old level four nights later (the shape of nvfp4_gemv's first week in the suite)
NVFP4 = [1.0194, 1.0533, 0.9255, 0.9418, 0.9282, 0.9386, 1.0878, 0.9344, 0.925, 0.9358, 0.9479, 0.9228,
         0.9533, 0.9432, 0.9606, 0.9305, 0.9421, 0.9157, 0.9601, 0.9234]


def test_a_step_on_a_series_third_nightly_is_beyond_the_search_but_named_for_the_repo_to_confirm():
    sd = _series(NVFP4)
    assert detect_series(sd, S) == []  # two nights before it, and the stray night pulls the search away
    assert young_steps(sd, S) == ["1002"]
    [m] = announced_moves(sd, young_steps(sd, S), S, [], NIGHTS)
    assert m.first_bad.run_id == "1002" and m.direction == "regression"


def test_young_steps_names_only_the_first_nights_and_only_where_the_level_steps():
    flat = _series(np.exp(np.random.default_rng(7).normal(0, 0.015, 20)) * 1.4)
    assert young_steps(flat, S) == []
    later = np.exp(np.random.default_rng(7).normal(0, 0.015, 20)) * 1.4
    later[6:] *= 0.85  # a step the search can place is not a young one
    assert young_steps(_series(later), S) == []
    assert young_steps(_series(NVFP4[:4]), S) == []  # two nights after: the scatter after is not known yet
    assert young_steps(_series(NVFP4[:5]), S) == ["1002"]
    assert young_steps(_series([1.4]), S) == []


def test_a_step_needs_the_nights_after_it_that_any_step_needs():
    sd = _series([1.4, 1.2])  # one night after: report_after_nights is 2
    assert announced_moves(sd, ["1001"], S, [], NIGHTS) == []
    assert len(announced_moves(_series([1.4, 1.2, 1.2]), ["1001"], S, [], NIGHTS)) == 1


def test_the_nights_where_the_published_measurement_changed_and_stayed():
    runs = [str(i) for i in range(1, 10)]
    torch = dict.fromkeys(runs, 1.0)
    compile_ = {r: (1.1 if int(r) >= 3 else None) for r in runs}
    vllm = {r: (None if r == "6" else 1.2) for r in runs}  # one night it failed: a failure, not a new set
    torch["5"] = compile_["5"] = vllm["5"] = None  # night 5: nothing reported (the track did not run)
    baselines = {"baseline:torch:geomean": torch, "baseline:torch_compile:geomean": compile_,
                 "baseline:vllm:geomean": vllm}
    assert measurement_changed_at(runs, baselines, None) == ["3"]  # torch.compile added, and it stayed
    flags = {"1": 1.0, "2": 1.0, "3": None, "4": 0.0, "5": 0.0, "6": 1.0, "7": 0.0, "8": 0.0, "9": 0.0}
    assert measurement_changed_at(runs, {}, flags) == ["4"]  # 6 flipped for one night only
    assert measurement_changed_at(runs, {}, None) == []
    assert measurement_changed_at(runs[:3], baselines, None) == []  # one night of the new set: not yet
    # a first night that published its flag but no baseline values, then a set that stays: a new
    # set (the pretuned suite's first nightly, then df7ebeab's torch.compile baseline)
    late = {b: {r: (None if r == "1" else 1.0) for r in runs[:6]} for b in ("baseline:torch:geomean",
                                                                          "baseline:torch_compile:geomean")}
    assert measurement_changed_at(runs[:6], late, dict.fromkeys(runs[:6], 0.0)) == ["2"]
    assert measurement_changed_at(runs[:6], late, None) == []  # nothing at all on night 1: the track began on 2


def test_a_step_found_a_night_after_the_announced_nightly_is_moved_onto_it():
    """One nightly before the change: a rule that needs two nights a side (the platform-wide one
    here, built by hand) places the step on the third night, where it would hide the announced
    step it is; it belongs on the announced night."""
    v = np.exp(np.random.default_rng(4).normal(0, 0.01, 20)) * 1.3
    v[1:] *= 0.83
    sd = _series(v)
    found = [move_at(sd, trend_points(sd), 2, 6.0, 0.01, S)]
    [m] = onto_announced(sd, ["1001"], S, found)
    assert (m.last_good.run_id, m.first_bad.run_id) == ("1000", "1001") and m.nights_after == 19
    assert announced_moves(sd, ["1001"], S, [m], NIGHTS) == []  # and is not reported twice


def test_a_step_is_left_where_the_series_splits_better_than_on_the_announced_night():
    v = np.exp(np.random.default_rng(5).normal(0, 0.01, 30)) * 1.4
    v[15:] *= 0.85
    sd = _series(v)
    known = detect_series(sd, S)
    assert onto_announced(sd, ["1014"], S, known) == known  # the level moved on 1015, not 1014
    assert onto_announced(sd, ["1010"], S, known) == known  # too far to be the same step


def test_an_announced_step_a_night_before_another_step_is_read_on_the_night_between():
    """A baseline added on the suite's second night and a new timer on its third: the step the
    search has on the third night does not hide the announced one before it, which is read
    on its own night (the later level is not its)."""
    v = np.exp(np.random.default_rng(6).normal(0, 0.01, 20)) * 1.3
    v[1:] *= 0.83
    v[2:] *= 0.9
    sd = _series(v)
    third = move_at(sd, trend_points(sd), 2, 6.0, 0.01, S)
    assert onto_announced(sd, ["1001"], S, [third]) == [third]  # the third night's step is its own
    [m] = announced_moves(sd, ["1001"], S, [third], NIGHTS)
    assert (m.last_good.run_id, m.first_bad.run_id) == ("1000", "1001")
    assert m.change_pct == pytest.approx(-17, abs=4) and m.direction == "regression"
    # a known step on the announced night itself, or a night before it, still covers it
    assert announced_moves(sd, ["1002"], S, [third], NIGHTS) == []
