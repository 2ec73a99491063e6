"""Plain data passed between stages (ingest -> store -> detect -> classify -> notify).

Every stage takes and returns these frozen dataclasses, never ORM objects, so each
stage can be tested alone with hand-made inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import NamedTuple

# The vocabulary lives in service/domain.py; these names stay importable from here.
from service.domain import (  # noqa: E402,F401 - re-exported
    CAUSE_WORDS,
    CAUSES,
    DASHBOARD_METRICS,
    HEADLINE,
    LOWER_IS_BETTER,
    Cause,
    Direction,
    MoveState,
    Source,
    baseline_metric,
)


def aware(dt: datetime) -> datetime:
    """Records carry tz-aware UTC; the store keeps naive UTC (`naive` is the way back)."""
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def naive(dt: datetime) -> datetime:
    return dt.astimezone(timezone.utc).replace(tzinfo=None) if dt.tzinfo else dt


@dataclass(frozen=True)
class SeriesKey:
    source: str
    platform_short: str
    kernel: str
    metric: str


class SeriesPoint(NamedTuple):
    """One run's value in a series. ``value is None`` means the run failed (0 / missing).

    A NamedTuple, not a dataclass: a detect pass builds ~200k of them every night, and a
    tuple is several times cheaper to make; it is just as immutable.
    """

    run_id: str
    sha: str
    full_sha: str
    date: datetime
    value: float | None
    is_trend: bool = True  # nightly on main; manual/side-branch runs are False


@dataclass(frozen=True)
class SeriesData:
    key: SeriesKey
    points: tuple[SeriesPoint, ...]  # date order, all runs (trend and not)


@dataclass(frozen=True)
class RunRef:
    run_id: str
    sha: str
    full_sha: str
    date: datetime
    value: float | None


@dataclass(frozen=True)
class Move:
    """A persistent step found by the detector in one series."""

    key: SeriesKey
    last_good: RunRef
    first_bad: RunRef
    before: float  # robust level before the step (linear units)
    after: float  # robust level after the step
    change_pct: float  # (after - before) / before * 100
    direction: str  # "regression" or "improvement" (metric-aware)
    significance: float  # |log step| / robust noise sigma
    state: str  # provisional | confirmed | ended | retracted
    nights_after: int  # trend nightlies seen at/after first_bad
    noise_sigma: float  # robust scatter of log values
    end: RunRef | None = None  # state "ended": the first nightly back at the old level
    # found by both timers of the kernel together (`detect.joint`): each timer alone is under
    # the one-night bar, so ``significance`` is the two timers' together
    joint: bool = False
    # under the one-night bar, found because both levels held long (`detect.core._held`)
    held: bool = False


@dataclass(frozen=True)
class Evidence:
    check: str  # e.g. "persistence", "helion_only", "timer_agreement", "breadth", ...
    verdict: str  # a cause it supports ("real", "method_change", "hardware", "noise") or "neutral"
    detail: str  # one sentence a person reads
    # structured facts behind the sentence (counts, shas, values, "decisive"): code reads these,
    # never the prose
    facts: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class CommitInfo:
    sha: str  # 8 hex
    full_sha: str  # 40 hex
    subject: str
    date: datetime
    files: tuple[str, ...] = ()
    # lines added + deleted per file, in `files` order (``git log --numstat``); empty when unknown,
    # None for a binary file. Why: between commits with equal evidence, the one that changed
    # more of the code a move runs through is the one a person reads first.
    lines: tuple[int | None, ...] = ()
    # the files the commit created (``--name-status`` A): a commit that only adds a new example
    # kernel changed nothing a kernel that already ran runs through
    new_files: tuple[str, ...] = ()

    def lines_in(self, files) -> int:
        """Lines changed in those of ``files`` this commit touched (binary and unknown count 0)."""
        wanted = set(files)
        return sum(n or 0 for f, n in zip(self.files, self.lines) if f in wanted)


# How many ranked commits a real move keeps as its candidates (the store, the alert page, Slack):
# a person reads the first few; the rest of a 60-commit window is the window, not a lead.
CANDIDATES_SHOWN = 10


@dataclass(frozen=True)
class RankedCommit:
    sha: str
    full_sha: str
    subject: str
    date: datetime
    score: float
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Classification:
    cause: str
    confidence: float
    evidence: tuple[Evidence, ...]
    true_speedup: float | None
    true_speedup_reason: str
    culprit: RankedCommit | None = None
    change_commit: RankedCommit | None = None
    candidates: tuple[RankedCommit, ...] = ()
    related: tuple[dict, ...] = field(default_factory=tuple)
    # the mechanism under the cause (method_change: cudagraph | shapes | baseline | autotune |
    # timer | harness; hardware: runner | driver | thermal | outage; real: code | heuristics)
    kind: str = ""


@dataclass(frozen=True)
class CommitWindow:
    """First-parent commits in (last_good, first_bad], oldest first, from the local Helion clone.

    ``complete`` is False when the clone lacks an end of the window (or has no clone at all);
    ``problem`` then says what a person should do ("window not in the local clone; fetch it").
    """

    last_good: str  # full sha
    first_bad: str  # full sha
    commits: tuple[CommitInfo, ...] = ()
    complete: bool = True
    problem: str | None = None

    @cached_property
    def touched_paths(self) -> frozenset[str]:
        """Every file some commit of the window touched (files no commit touched are the same at
        both ends); worked out once per window, which the process keeps."""
        return frozenset(f for c in self.commits for f in c.files)


@dataclass(frozen=True)
class Revert:
    """A commit of the nights a move lasted that undid a commit of its window."""

    revert: CommitInfo  # the commit that undid it
    reverted: CommitInfo  # the commit of the move's window it undid
    kind: str  # what the reverted commit changed: code | harness | runner


@dataclass(frozen=True)
class FactChange:
    """A fact read from Helion's repo files that differs between the two ends of a window.

    kind: "cudagraph_flag" (a KERNEL_MAPPINGS entry gained/lost ``remove_flags: [--cudagraph]``),
    "num_inputs", "kernel_dropped"/"kernel_added" (a platform's `kernels*` default list),
    "runner_label" (a workflow's runs-on/runner changed), "toolchain_pin" (a pin file of the
    platform's compiler DSL or runtime, `PlatformRule.toolchain_files`), "toolchain" (CUDA/ROCm image or
    runtime of this platform), "baseline_pin" (torch/triton/tritonbench pins: the baselines),
    "autotune" (``HELION_AUTOTUNE_*`` settings), "linattn_shapes", "latency_mode", "bench_command"
    (the run.py invocations of a benchmark workflow and what they measure), "bench_args" (a
    kernel's other benchmark arguments or the Helion variant it measures), "baseline_impl" (the
    implementation a kernel's speedups divide: run.py's metric mapping, run_tpu.py's baseline),
    "pretuned_baseline", "pretuned_cudagraph", "pretuned_timer", "pretuned_config".
    ``suggests`` is the cause it points at ("method_change", "hardware" or "real").
    """

    kind: str
    detail: str
    suggests: str
    path: str = ""
    old: str | None = None
    new: str | None = None
    # the kernels the fact is about (None: every kernel of the platform it was read for)
    kernels: tuple[str, ...] | None = None
    # the commit in the window that made the change, once attributed (40 hex)
    commit: str | None = None
    # the suite with a job of its own (`[suites]` of slices.toml) whose step the fact was read
    # from: it is about that suite's kernels only (None: every kernel of the platform)
    suite: str | None = None


@dataclass(frozen=True)
class AttributeChange:
    """A track attribute that differs between the last-good and first-bad runs (a method tell)."""

    attribute: str  # baseline_label | cudagraph | platform | compute | baselines
    old: str | None
    new: str | None
    run_id: str | None  # the run at which it was first seen, when known
    detail: str
