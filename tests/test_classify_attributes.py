"""What about a track changed across a step, read without a database (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from service.classify.attributes import attribute_changes

T = datetime(2026, 5, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Run:
    run_id: str
    date: datetime


@dataclass(frozen=True)
class Logged:
    run_pk: int | None
    attribute: str
    old: str | None
    new: str | None


RUNS = {pk: Run(f"r{pk}", T + timedelta(days=pk)) for pk in range(1, 6)}


def test_events_inside_the_window_only():
    events = [Logged(2, "baseline_label", "torch", "torch 2.9"), Logged(5, "device", "a", "b"),
              Logged(None, "device", "x", "y")]
    got = attribute_changes(events, {}, RUNS, 2, 4)  # (2, 4]: run 2 is the last good, outside
    assert got == []
    got = attribute_changes(events, {}, RUNS, 1, 3)
    assert [(c.attribute, c.old, c.new, c.run_id) for c in got] == [("baseline_label", "torch", "torch 2.9", "r2")]
    assert "changed from torch to torch 2.9" in got[0].detail


def test_cudagraph_flip_and_a_changed_set_of_baselines():
    per_metric = {"cudagraph": {1: 1.0, 3: 0.0},
                  "baseline:torch:geomean": {1: 1.2, 3: 1.1}, "baseline:vllm:geomean": {1: None, 3: 0.9}}
    got = {c.attribute: c for c in attribute_changes([], per_metric, RUNS, 1, 3)}
    assert (got["cudagraph"].old, got["cudagraph"].new) == ("true", "false")
    assert (got["baselines"].old, got["baselines"].new) == ("torch", "torch,vllm")
    assert "added vllm" in got["baselines"].detail


def test_an_unknown_end_says_nothing():
    assert attribute_changes([Logged(2, "device", "a", "b")], {}, RUNS, 1, 99) == []
