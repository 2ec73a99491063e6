"""Detector behaviour on seeded synthetic nightly series: what is a move and what is noise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.detect import DetectSettings, change_points, detect_series
from tests.synthetic_series import S, make_series, noisy


@pytest.mark.parametrize("seed", range(8))
def test_clean_noisy_series_has_no_move(seed):
    assert detect_series(make_series(noisy(365, seed)), S) == []


@pytest.mark.parametrize("seed", range(5))
def test_step_found_at_the_right_night_confirmed(seed):
    x = noisy(200, seed)
    x[120:] *= 0.9  # speedup drops 10%: a regression
    moves = detect_series(make_series(x), S)
    assert len(moves) == 1
    m = moves[0]
    assert m.first_bad.run_id == "r120" and m.last_good.run_id == "r119"
    assert m.direction == "regression" and m.state == "confirmed"
    assert m.nights_after == 80
    assert m.change_pct == pytest.approx(-10.0, abs=1.0)
    assert m.before == pytest.approx(1.5, rel=0.01) and m.after == pytest.approx(1.35, rel=0.01)
    assert m.noise_sigma == pytest.approx(0.01, rel=0.3)
    assert m.significance == pytest.approx(abs(math.log(m.after / m.before)) / m.noise_sigma, rel=1e-6)
    assert m.first_bad.value == pytest.approx(x[120]) and m.last_good.value == pytest.approx(x[119])


def test_improvement_direction():
    x = noisy(100, 11)
    x[60:] *= 1.2
    (m,) = detect_series(make_series(x), S)
    assert m.direction == "improvement" and m.first_bad.run_id == "r60"


def test_latency_metric_higher_is_a_regression():
    x = noisy(100, 12, level=0.8)
    x[50:] *= 1.15
    (m,) = detect_series(make_series(x, metric="helion_latency_avg_ms"), S)
    assert m.direction == "regression" and m.change_pct > 0
    (m,) = detect_series(make_series(x[::-1].copy(), metric="helion_latency_avg_ms"), S)
    assert m.direction == "improvement"


@pytest.mark.parametrize("seed", range(4))
def test_a_step_two_nights_after_another_is_found_on_its_own_night(seed):
    """Two steps two nightlies apart (a new regime, then a second change): the search keeps each
    regime three nights long, which used to put the second step a night late."""
    x = noisy(150, seed)
    x[100:] *= 0.6
    x[102:] *= 0.85
    got = sorted(m.first_bad.run_id for m in detect_series(make_series(x), S))
    assert got == ["r100", "r102"]


@pytest.mark.parametrize("tail", [1, 2])
def test_step_in_the_last_nights_is_provisional(tail):
    x = noisy(120, 3)
    x[-tail:] *= 0.85
    moves = detect_series(make_series(x), DetectSettings(report_after_nights=1))
    assert len(moves) == 1
    m = moves[0]
    assert m.first_bad.run_id == f"r{120 - tail}"
    assert m.state == "provisional" and m.nights_after == tail
    assert m.direction == "regression"


def test_step_becomes_confirmed_after_confirm_nights():
    x = noisy(123, 4)
    x[120:] *= 0.85
    (m,) = detect_series(make_series(x), S)
    assert m.first_bad.run_id == "r120" and m.nights_after == 3 and m.state == "confirmed"


@pytest.mark.parametrize("seed", range(4))
def test_single_outlier_in_the_middle_is_not_a_move(seed):
    x = noisy(200, seed)
    x[90] *= 0.5
    x[150] *= 1.6
    assert detect_series(make_series(x), S) == []


def test_one_bad_night_is_not_a_move():
    x = noisy(200, 21)
    x[100] *= 0.8
    assert detect_series(make_series(x), S) == []


@pytest.mark.parametrize("length", [2, 3])
def test_blip_that_reverts_is_an_ended_excursion_never_a_live_move(length):
    """In one series a blip is noise; reported as an *ended* move so the event stage can see many
    kernels of one platform blipping together (a hardware episode) and drop the lone ones."""
    x = noisy(200, 21)
    x[100 : 100 + length] *= 0.8
    (m,) = detect_series(make_series(x), S)
    assert m.state == "ended"
    assert (m.first_bad.run_id, m.end.run_id) == ("r100", f"r{100 + length}")
    assert m.direction == "regression" and m.change_pct == pytest.approx(-20, abs=3)


def test_week_long_excursion_is_one_episode_not_two_moves():
    x = noisy(200, 22)
    x[100:107] *= 0.85
    (m,) = detect_series(make_series(x), S)
    assert (m.state, m.first_bad.run_id, m.end.run_id) == ("ended", "r100", "r107")
    # longer than episode_nights: a step and a recovery, two moves
    y = noisy(200, 22)
    y[100:130] *= 0.85
    assert [mv.state for mv in detect_series(make_series(y), S)] == ["confirmed", "confirmed"]


@pytest.mark.parametrize("seed", range(8))
def test_throttling_worst_on_its_first_nights_is_one_episode_to_its_last_bad_night(seed):
    # 30% down for three nights, then 15% down for three, then back: the search returns two short
    # segments on one side; judged one at a time the milder half read as "back", so the week
    # vanished as a blip (or became a regression and two fixes)
    x = noisy(200, seed)
    x[100:103] *= 0.70
    x[103:106] *= 0.85
    (m,) = detect_series(make_series(x), S)
    assert (m.state, m.direction, m.first_bad.run_id, m.end.run_id) == ("ended", "regression", "r100", "r106")


@pytest.mark.parametrize("seed", range(8))
def test_no_second_move_inside_an_episode(seed):
    # two deep nights, then four milder ones, on a noisy series: whatever the search makes of
    # it, a night of the series belongs to one move at most (the deep nights were reported as an
    # excursion of their own beside the episode that holds them: two alerts for one week)
    x = noisy(200, seed, rel_sigma=0.04)
    x[100:102] *= 0.65
    x[102:106] *= 0.85
    spans = sorted((int(m.first_bad.run_id[1:]), int(m.end.run_id[1:]) if m.end else 200)
                   for m in detect_series(make_series(x), S))
    assert spans and spans[0][0] == 100
    assert all(b <= c for (_, b), (c, _) in zip(spans, spans[1:]))


@pytest.mark.parametrize("seed", range(8))
def test_a_bad_week_two_nights_into_a_new_series_is_an_episode_not_a_gain(seed):
    # a new kernel publishes two good nightlies, then three 18% slower, then recovers: the search
    # cannot place a two-night regime, so the good nights joined the bad ones and the recovery
    # alone was reported, as an 18% improvement no commit made
    x = noisy(60, seed)
    x[2:5] *= 0.82
    (m,) = detect_series(make_series(x), S)
    assert (m.state, m.direction, m.first_bad.run_id, m.end.run_id) == ("ended", "regression", "r2", "r5")
    # the same on a time, where up is worse
    (m,) = detect_series(make_series(1.0 / x, metric="helion_latency_avg_ms"), S)
    assert (m.state, m.direction, m.first_bad.run_id, m.end.run_id) == ("ended", "regression", "r2", "r5")


@pytest.mark.parametrize("seed", range(4))
def test_a_new_series_that_starts_high_and_settles_keeps_its_one_step(seed):
    # the reverse: two fast opening nights, then the level the series keeps. Nothing came back,
    # so there is no episode to make; and a gain given back at night 2 stays the one move the
    # series has (no known worse side here would make it an episode)
    x = noisy(60, seed)
    x[:2] *= 1.2
    moves = detect_series(make_series(x), S)
    assert all(m.state != "ended" for m in moves)
    y = noisy(60, seed)
    y[2:5] *= 1.2  # three good nights between ordinary ones: an improvement that went away
    assert all(m.state != "ended" for m in detect_series(make_series(y), S))


def test_a_gain_given_back_within_the_episode_span_is_a_regression_not_an_ended_gain():
    # a speed-up lands on night 100; another change gives most of it back on night 110: on-call
    # must hear of the second as a regression (an episode is a move for the worse that recovered)
    x = noisy(200, 23)
    x[100:] *= 1.15
    x[110:] /= 1.12
    moves = detect_series(make_series(x), S)
    assert [(m.first_bad.run_id, m.direction, m.state) for m in moves] == [
        ("r100", "improvement", "confirmed"), ("r110", "regression", "confirmed")]
    # the same shape for the worse is one episode that ended, on a time (lower is better) as well
    (m,) = detect_series(make_series(x, metric="helion_latency_avg_ms"), S)  # up is slower here
    assert (m.state, m.direction, m.first_bad.run_id, m.end.run_id) == ("ended", "regression", "r100", "r110")


def test_small_step_below_the_magnitude_floor_is_ignored():
    x = noisy(300, 5, rel_sigma=0.002)
    x[150:] *= 0.985  # 1.5%: highly significant, but under the 3% floor
    assert detect_series(make_series(x), S) == []
    assert len(detect_series(make_series(x), DetectSettings(min_change_pct=1.0))) == 1


def test_failures_and_gaps_are_skipped_and_the_window_spans_them():
    x = list(noisy(150, 6))
    for i in range(70, 78):
        x[i] = None  # a week of failed runs, during which the step happened
    x = [None if v is None else (v * 0.88 if i >= 74 else v) for i, v in enumerate(x)]
    x[30] = None
    (m,) = detect_series(make_series(x), S)
    assert m.last_good.run_id == "r69" and m.first_bad.run_id == "r78"
    assert m.nights_after == 150 - 78
    assert m.state == "confirmed"


def test_series_that_starts_late_and_stops_early():
    x = [None] * 40 + list(noisy(100, 7)) + [None] * 30
    x = [v * 1.1 if v is not None and i >= 90 else v for i, v in enumerate(x)]
    (m,) = detect_series(make_series(x), S)
    assert m.first_bad.run_id == "r90" and m.direction == "improvement"
    assert m.nights_after == 50


def test_manual_runs_are_ignored_even_when_they_spike():
    x = list(noisy(120, 8))
    trend = [True] * 120
    for i in (40, 41, 42, 80, 81, 82, 83, 117, 118, 119):
        x[i] *= 0.5
        trend[i] = False  # manual dispatches on a slow machine
    assert detect_series(make_series(x, trend=trend), S) == []
    # the same values as nightlies would be moves: the flag is what is honoured
    assert detect_series(make_series(x), S) != []


def test_too_short_series_and_all_failures():
    assert detect_series(make_series([1.0, 1.0]), S) == []
    assert detect_series(make_series([None] * 20), S) == []
    assert detect_series(make_series([]), S) == []


def test_constant_series_with_a_step_has_finite_significance():
    x = [2.0] * 30 + [1.5] * 30
    (m,) = detect_series(make_series(x), S)
    assert m.first_bad.run_id == "r30" and math.isfinite(m.significance)


def test_two_steps_regression_then_fix():
    x = noisy(240, 9)
    x[80:160] *= 0.8
    moves = detect_series(make_series(x), S)
    assert [(m.first_bad.run_id, m.direction) for m in moves] == [("r80", "regression"), ("r160", "improvement")]


def test_change_points_raw_mode_handles_negative_values():
    rng = np.random.default_rng(13)
    x = rng.normal(0.0, 1.0, 300)
    x[100:] -= 6.0
    x[220:] += 10.0
    assert change_points(x, S) == [100, 220]
    assert change_points(rng.normal(-5.0, 1.0, 300), S) == []
    with pytest.raises(ValueError):
        change_points(x, S, log=True)
    with pytest.raises(ValueError):
        change_points([1.0, float("nan"), 2.0], S)


@pytest.mark.parametrize("method,cost", [("pelt", "rbf"), ("binseg", "l2")])
def test_other_search_methods_find_the_same_step(method, cost):
    x = noisy(120, 14)
    x[70:] *= 0.85
    s = DetectSettings(method=method, cost=cost)
    assert [m.first_bad.run_id for m in detect_series(make_series(x), s)] == ["r70"]


@pytest.mark.parametrize("at", [200, 201, 362])
@pytest.mark.parametrize("stride", [1, 2])
def test_year_long_series_exact_night_with_and_without_the_coarse_search(at, stride):
    """A year of nightlies runs the coarse (2-night) search by default: the night must stay exact."""
    s = DetectSettings(search_stride=stride)
    for seed in range(3):
        x = noisy(365, 30 + seed)
        x[at:] *= 0.9
        moves = detect_series(make_series(x), s)
        assert [m.first_bad.run_id for m in moves] == [f"r{at}"]
        assert moves[0].state == ("confirmed" if 365 - at >= 3 else "provisional")


def test_coarse_search_finds_close_steps_and_keeps_min_size():
    x = noisy(365, 33)
    x[150:] *= 0.85
    x[157:] *= 0.85  # a second drop a week later
    moves = detect_series(make_series(x), S)
    assert [m.first_bad.run_id for m in moves] == ["r150", "r157"]
    assert all(m.direction == "regression" for m in moves)


def test_a_lone_bad_last_night_waits_for_a_second_by_default():
    x = noisy(120, 3)
    x[-1:] *= 0.7
    assert DetectSettings().report_after_nights == 2
    assert detect_series(make_series(x), S) == []
    x = noisy(121, 3)
    x[-2:] *= 0.85
    (m,) = detect_series(make_series(x), S)
    assert m.state == "provisional" and m.nights_after == 2


def test_a_step_after_two_nightlies_starts_on_the_third():
    """A young series (two nightlies, then a step): the first bad nightly is the third, not the fourth."""
    import numpy as np

    from service.detect.core import change_points
    from service.detect.settings import DetectSettings

    rng = np.random.default_rng(7)
    for _ in range(5):
        x = np.r_[1.0 + rng.normal(0, 0.01, 2), 0.8 + rng.normal(0, 0.01, 12)]
        assert change_points(x, DetectSettings(), log=True) == [2]
    # a step after three nightlies stays where it is
    x = np.r_[1.0 + rng.normal(0, 0.01, 3), 0.8 + rng.normal(0, 0.01, 12)]
    assert change_points(x, DetectSettings(), log=True) == [3]


def test_trend_points_are_read_once_and_each_caller_gets_its_own_list():
    """The usable nightly points are kept on the series (five detectors read them each pass):
    a caller that edits its list changes nobody else's, and a series made anew from it with other
    points (`dataclasses.replace`) is read anew."""
    from dataclasses import replace

    from service.detect.series import trend_points

    sd = make_series([1.0, None, 2.0, float("nan"), 3.0, 4.0], trend=[1, 1, 1, 1, 0, 1])
    first = trend_points(sd)
    assert [p.value for p in first] == [1.0, 2.0, 4.0]
    first.clear()
    assert [p.value for p in trend_points(sd)] == [1.0, 2.0, 4.0]
    fewer = replace(sd, points=sd.points[:3])
    assert [p.value for p in trend_points(fewer)] == [1.0, 2.0]
