"""Planted events: what changes in the measured world, when, for which series, and its label.

Why it exists: an event is one mechanism (a Helion commit, a runner swap, a hot machine, a
flaky night) acting on a set of series. It is written once, as an `Effect` (multiplicative
factors on the timer components of `sim.Factors`, active from a commit on main or over a time
span) plus the label fields a careful Helion engineer would write for it. The first-bad /
last-good / end nightlies are *derived* from the activation, never typed in, so a label can
only point where the data actually moves. Method changes that follow from the files (cudagraph
flags, shape counts, pins, harness switches) are found by `changes.py` and use the same
`LabelSpec`.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

COMPONENTS = ("helion", "cg_only", "db_only", "baseline", "triton", "tc", "machine", "compile")

SPEED = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
HEL = ("helion_speedup_geomean", "helion_latency_avg_ms")


@dataclass
class Effect:
    """Factors on the components of each member series while active.

    members: {(platform, kernel): {component: factor, "shapes": {label: helion factor},
    "fail": True}}. Activation: by commit (run's main sha index in [start_sha, end_sha)), by time
    ([start_t, end_t)), or on listed nightly dates only (`dates`, scheduled runs only).
    """
    id: str
    source: str
    members: dict
    start_sha: int | None = None
    end_sha: int | None = None
    start_t: dt.datetime | None = None
    end_t: dt.datetime | None = None
    dates: tuple = ()
    jitter: float = 0.0          # per-night relative wobble of the factors (thermal)
    transient: bool = False      # excluded from the honest (true) level: hardware episodes, noise

    def active(self, run) -> bool:
        if self.dates:
            return run.is_nightly and run.branch == "main" and run.day in self.dates
        if self.start_sha is not None:
            if run.sha_idx < self.start_sha:
                return False
            return self.end_sha is None or run.sha_idx < self.end_sha
        if self.start_t is not None:
            return self.start_t <= run.time < (self.end_t or dt.datetime.max.replace(tzinfo=dt.timezone.utc))
        return False


@dataclass
class LabelSpec:
    """A label before its run ids are known (world.py resolves first-bad/last-good/end)."""
    id: str
    source: str
    cause: str
    kind: str
    members: tuple
    metrics: tuple
    note: str
    effect: Effect | None = None      # planted: first-bad from its activation
    first_night: int | None = None    # file-derived: the nightly where the facts differ
    end_night: int | None = None
    culprit_sha: str | None = None
    change_sha: str | None = None
    honest: str = "after"             # after | before | normal | cudagraph_side:<before|after>
    direction: str | None = None      # computed from the noise-free levels when None
    primary_metric: str = "helion_speedup_geomean"
    extra: dict = field(default_factory=dict)


def scale(members, **factors) -> dict:
    return {m: dict(factors) for m in members}


def per_member(pairs) -> dict:
    """[((platform, kernel), {component: factor}), ...] -> members dict."""
    return {m: dict(f) for m, f in pairs}
