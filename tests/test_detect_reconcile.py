"""Moves stay stable across nightly passes: matched, shifted, ended, retracted; settings."""

from __future__ import annotations

import dataclasses
import tomllib
from datetime import timedelta

import numpy as np
import pytest

from service.config import DEFAULT_CONFIG
from service.detect import DetectSettings, detect_series, reconcile
from service.errors import BenchwatchError
from tests.synthetic_series import make_series, noisy, replay

S = DetectSettings()


def _moves(values, **kw):
    return detect_series(make_series(values, **kw), S)


def test_reconcile_of_the_same_moves_is_identity():
    x = noisy(240, 1)
    x[80:160] *= 0.8
    x[-2:] *= 0.8
    moves = _moves(x)
    assert len(moves) == 3
    assert reconcile(moves, moves, S) == moves
    retracted = [dataclasses.replace(moves[0], state="retracted"), *moves[1:]]
    assert reconcile(retracted, retracted, S) == retracted
    assert reconcile([], [], S) == []


def test_a_provisional_step_that_reverts_ends_and_is_matched_not_duplicated():
    x = noisy(120, 2)
    x[-2:] *= 0.85
    night_n = _moves(x)
    assert [m.state for m in night_n] == ["provisional"]
    y = np.append(x, x[-3])  # the next night is normal again: it was two bad nights
    night_n1 = _moves(y)
    assert [(m.state, m.first_bad.run_id) for m in night_n1] == [("ended", night_n[0].first_bad.run_id)]
    out = reconcile(night_n, night_n1, S)
    assert out == night_n1  # the stored move became the ended one; nothing retracted, nothing doubled


def test_a_stored_move_that_vanishes_is_retracted():
    x = noisy(120, 2)
    x[-3:] *= 0.85
    (m,) = _moves(x)
    out = reconcile([m], [], S)
    assert len(out) == 1 and out[0].state == "retracted"
    assert dataclasses.replace(out[0], state=m.state) == m
    assert reconcile(out, [], S) == []  # a stored retracted move that stays gone is not reported again


def test_first_bad_shift_by_one_night_is_the_same_move():
    x = noisy(150, 3)
    x[100:] *= 0.85
    current = _moves(x)
    (m,) = current
    earlier = dataclasses.replace(
        m,
        first_bad=dataclasses.replace(m.first_bad, run_id="r99", date=m.first_bad.date - timedelta(days=1)),
        state="provisional",
        nights_after=1,
    )
    out = reconcile([earlier], current, S)
    assert out == current  # the fresh numbers win, nothing retracted


def test_too_far_or_opposite_direction_do_not_match():
    x = noisy(150, 4)
    x[100:] *= 0.85
    (m,) = _moves(x)
    far = dataclasses.replace(m, first_bad=dataclasses.replace(m.first_bad, date=m.first_bad.date - timedelta(days=5)))
    out = reconcile([far], [m], S)
    assert out == [m, dataclasses.replace(far, state="retracted")]
    other = dataclasses.replace(m, direction="improvement")
    out = reconcile([other], [m], S)
    assert out == [m, dataclasses.replace(other, state="retracted")]
    wide = DetectSettings(match_nights=6)
    assert reconcile([far], [m], wide) == [m]


def test_a_retracted_move_that_comes_back_is_matched():
    x = noisy(150, 5)
    x[100:] *= 0.85
    (m,) = _moves(x)
    gone = dataclasses.replace(m, state="retracted")
    assert reconcile([gone], [m], S) == [m]


def test_closest_previous_wins_and_each_move_matches_once():
    x = noisy(150, 6)
    x[100:] *= 0.85
    (m,) = _moves(x)

    def shifted(days, run):
        fb = dataclasses.replace(m.first_bad, run_id=run, date=m.first_bad.date + timedelta(days=days))
        return dataclasses.replace(m, first_bad=fb)

    a, b = shifted(-2, "ra"), shifted(1, "rb")
    out = reconcile([a, b], [m], S)
    assert out == [m, dataclasses.replace(a, state="retracted")]
    assert reconcile([b, a], [m], S) == [m, dataclasses.replace(a, state="retracted")]


def test_settings_defaults_equal_the_config_file():
    table = tomllib.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))["detect"]
    assert DetectSettings.from_mapping(table) == DetectSettings()
    assert set(table) == set(DetectSettings.model_fields)


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"penalty": -1}, "config: detect.penalty:"),
        ({"method": "dynp"}, "config: detect.method:"),
        ({"min_size": 1}, "config: detect.min_size:"),
        ({"revert_tolerance": 2}, "config: detect.revert_tolerance:"),
        ({"penalti": 3}, "config: detect.penalti:"),
        (["penalty"], "config: detect:"),
    ],
)
def test_bad_settings_name_the_key(data, needle):
    with pytest.raises(BenchwatchError) as exc:
        DetectSettings.from_mapping(data)
    assert str(exc.value).startswith(needle)
    assert "\n" not in str(exc.value)


def test_env_style_strings_are_coerced():
    s = DetectSettings.from_mapping({"penalty": "4.5", "confirm_nights": "2", "cost": "rbf"})
    assert (s.penalty, s.confirm_nights, s.cost) == (4.5, 2, "rbf")
    assert DetectSettings.from_mapping(None) == DetectSettings()


def _replay(x, start):
    return [[(m.first_bad.run_id, m.state, m.nights_after) for m in night] for night in replay(x, start)]


@pytest.mark.parametrize("seed", range(3))
def test_replay_real_step_is_heard_on_the_second_night_and_never_retracted(seed):
    x = noisy(130, 40 + seed)
    x[120:] *= 0.9
    history = _replay(x, 120)
    assert history[0] == []  # night before the step
    assert history[1] == []  # one bad night: could be an outlier, wait for the second
    assert history[2] == [("r120", "provisional", 2)]
    for k, night in enumerate(history[3:], start=3):
        assert night == [("r120", "confirmed", k)]


@pytest.mark.parametrize("seed", range(3))
def test_replay_two_night_blip_is_reported_then_ends(seed):
    """Per series the blip ends; the detect pass retracts a lone one (tests/test_loop_e2e.py)."""
    x = noisy(130, 50 + seed)
    x[120:122] *= 0.85
    history = _replay(x, 120)
    assert history[1] == []
    assert history[2] == [("r120", "provisional", 2)]
    assert all(night == [("r120", "ended", 2)] for night in history[3:])


def test_stored_moves_with_naive_utc_dates_still_match():
    """The store hands back naive UTC datetimes; fresh moves are tz-aware."""
    x = noisy(150, 8)
    x[100:] *= 0.85
    (m,) = _moves(x)
    stored = dataclasses.replace(
        m, first_bad=dataclasses.replace(m.first_bad, date=m.first_bad.date.replace(tzinfo=None))
    )
    assert reconcile([stored], [m], S) == [m]
