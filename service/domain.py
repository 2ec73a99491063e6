"""The words benchwatch speaks, defined once: causes, kinds, verdicts, states, directions,
statuses, sources, the metric catalogue and the rule that a human's cause beats the machine's.

Every value is a `StrEnum` whose string is exactly what the store holds and the JSON shows
(`Cause.REAL == "real"`), so a stored row, a query filter and a template compare equal to a
member without conversion. Nothing here imports anything of ours: every layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache


class Cause(StrEnum):
    REAL = "real"
    METHOD_CHANGE = "method_change"
    HARDWARE = "hardware"
    NOISE = "noise"


CAUSES: tuple[str, ...] = tuple(c.value for c in Cause)
# How a cause reads on every surface (Slack, the web pages, the CLI).
CAUSE_WORDS = {
    Cause.REAL: "Real regression",
    Cause.METHOD_CHANGE: "Benchmark method change",
    Cause.HARDWARE: "Hardware issue",
    Cause.NOISE: "Noise",
}


class Kind(StrEnum):
    """The mechanism under a cause (`Classification.kind`, `alerts.cause_kind`)."""

    # method_change
    CUDAGRAPH = "cudagraph"
    SHAPES = "shapes"
    BASELINE = "baseline"
    AUTOTUNE = "autotune"
    TIMER = "timer"
    HARNESS = "harness"
    # hardware
    RUNNER = "runner"
    DRIVER = "driver"
    THERMAL = "thermal"
    OUTAGE = "outage"
    # real
    CODE = "code"
    HEURISTICS = "heuristics"


class Verdict(StrEnum):
    """What one piece of evidence supports: a cause, or neither way."""

    REAL = "real"
    METHOD_CHANGE = "method_change"
    HARDWARE = "hardware"
    NOISE = "noise"
    NEUTRAL = "neutral"


class MoveState(StrEnum):
    PROVISIONAL = "provisional"
    CONFIRMED = "confirmed"
    ENDED = "ended"  # went out and came back: an episode with an end
    RETRACTED = "retracted"


class Direction(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"


class AlertStatus(StrEnum):
    """Where an alert stands in the on-call queue (move and health alerts alike)."""

    OPEN = "open"
    ACKNOWLEDGED = "acknowledged"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"


STATUSES: tuple[str, ...] = tuple(s.value for s in AlertStatus)
# still on someone's plate: shown in the default ("active") queue, re-opened by a new nightly
ACTIVE_STATUSES = frozenset({AlertStatus.OPEN, AlertStatus.ACKNOWLEDGED})


class GroupKind(StrEnum):
    """What an alert group holds: the moves of one first-bad nightly, or one nightly's health
    findings (its queue label and badge are "health" too)."""

    MOVE = "move"
    HEALTH = "health"


class Source(StrEnum):
    DASHBOARD = "dashboard"
    PRETUNED = "pretuned"


SOURCES: tuple[str, ...] = tuple(s.value for s in Source)

# A MAD (median absolute deviation) of a normal sample times this estimates its sigma.
MAD_TO_SIGMA = 1.4826


def badge_label(state: str, cause: str, direction: str | None) -> str:
    """What a badge says of an alert, a group or a queue row, as Slack does: "retracted" once the
    move is withdrawn, "improvement" for a real move for the better, else the (effective) cause."""
    if state == MoveState.RETRACTED:
        return MoveState.RETRACTED.value
    if cause == Cause.REAL and direction == Direction.IMPROVEMENT:
        return Direction.IMPROVEMENT.value
    return str(cause)


def effective_cause(machine: str, human: str | None) -> str:
    """The cause a person reads for one alert: a human's re-classification beats the machine's."""
    return human or machine


def group_cause(machine: str, members: Iterable[Mapping], decided: Mapping[int, int] | None = None
                ) -> tuple[str, bool]:
    """The cause a person reads for a group (Slack, the queue, the group vote): the latest human
    verdict on any member speaks for the group; otherwise the machine's group verdict.

    ``members`` are mappings with ``id`` and ``human_cause``. ``decided`` maps alert id -> id of
    its latest re-classification in the audit trail (ids only grow, so the largest is the newest
    decision). When two people give members different causes, the later decision wins, not the
    member listed last. Returns (cause, whether a human decided it).
    """
    decided = decided or {}
    human = [(decided.get(a.get("id"), 0), i, a["human_cause"])
             for i, a in enumerate(members) if a.get("human_cause")]
    if not human:
        return machine, False
    return max(human)[2], True


# --- metrics ---------------------------------------------------------------------------------


class MetricKind(StrEnum):
    SPEEDUP = "speedup"  # baseline time / implementation time: higher is better
    TIME = "time"  # seconds or milliseconds: lower is better
    COUNT = "count"  # wins, totals
    FLAG = "flag"  # 1.0 / 0.0 (the pretuned run's cudagraph)


@dataclass(frozen=True)
class Metric:
    """What one stored metric name is. ``headline``: the metric that stands for a kernel (leads
    lists, casts the kernel's vote in a group); ``comparator``: Triton's or torch.compile's own
    speedup, evidence about the baselines, never a move of Helion; ``words``: how it reads after
    a kernel name ("" for the headline, the default reading); ``baseline``: the pretuned baseline
    a ``baseline:<x>:geomean`` metric measures against; ``alerts``: a move of it is an alert of its
    own (False: evidence read beside a kernel's other moves, or a fact about a run);
    ``crowd_alerts``: alerted only where many kernels of a platform moved it together on one
    nightly and their speed did not (one kernel's is noise; beside speed moves it is evidence on
    them); ``unit``: what a chart's axis says ("×" a speedup, "ms", "s", "" a count or flag)."""

    name: str
    kind: MetricKind
    source: Source
    words: str
    headline: bool = False
    comparator: bool = False
    baseline: str | None = None
    alerts: bool = True
    crowd_alerts: bool = False
    unit: str = ""

    @property
    def lower_is_better(self) -> bool:
        return self.kind is MetricKind.TIME

    @property
    def is_speedup(self) -> bool:
        return self.kind is MetricKind.SPEEDUP


_D, _P = Source.DASHBOARD, Source.PRETUNED
CATALOGUE: dict[str, Metric] = {m.name: m for m in (
    Metric("helion_speedup_geomean", MetricKind.SPEEDUP, _D, "", headline=True, unit="×"),
    Metric("triton_speedup_geomean", MetricKind.SPEEDUP, _D, "triton speedup", comparator=True, alerts=False,
           unit="×"),
    Metric("torch_compile_speedup_geomean", MetricKind.SPEEDUP, _D, "torch.compile speedup", comparator=True,
           alerts=False, unit="×"),
    Metric("helion_latency_avg_ms", MetricKind.TIME, _D, "latency", unit="ms"),
    # how long Helion takes to compile and autotune: noisy night to night, and what it tells (a
    # capped autotune compiles much faster) is read beside the kernel's speed, not alerted alone;
    # most of a platform's kernels compiling faster on one night with their speed flat is a
    # change of the benchmark (an autotune budget) that no other metric shows
    Metric("compile_time_geomean_s", MetricKind.TIME, _D, "compile time", alerts=False, crowd_alerts=True,
           unit="s"),
    Metric("geomean", MetricKind.SPEEDUP, _P, "", headline=True, unit="×"),
    Metric("best_speedup", MetricKind.SPEEDUP, _P, "best speedup", unit="×"),
    Metric("helion_wins", MetricKind.COUNT, _P, "helion_wins", alerts=False),
    Metric("total", MetricKind.COUNT, _P, "total", alerts=False),
    Metric("cudagraph", MetricKind.FLAG, _P, "cudagraph", alerts=False),
)}

_BASELINE_PREFIX, _BASELINE_SUFFIX = "baseline:", ":geomean"


def baseline_metric(name: str) -> str:
    """Metric name of one pretuned baseline's geomean, e.g. ``baseline:triton:geomean``."""
    return f"{_BASELINE_PREFIX}{name}{_BASELINE_SUFFIX}"


def _guessed_unit(name: str) -> str:
    """An unknown metric's unit, read off its name the way upstream names them (``_ms``, ``_s``)."""
    if name.endswith("_ms"):
        return "ms"
    if name.endswith("_s"):
        return "s"
    return "×" if "speedup" in name or "geomean" in name else ""


@lru_cache(maxsize=1024)
def metric(name: str) -> Metric:
    """The catalogue entry of a stored metric name; ``baseline:<x>:geomean`` is parsed here, once.
    An unknown name (the upstream schema grows) reads as itself, higher-is-better, its unit
    guessed from its name."""
    known = CATALOGUE.get(name)
    if known is not None:
        return known
    if name.startswith(_BASELINE_PREFIX) and name.endswith(_BASELINE_SUFFIX) \
            and len(name) > len(_BASELINE_PREFIX) + len(_BASELINE_SUFFIX):
        base = name[len(_BASELINE_PREFIX):-len(_BASELINE_SUFFIX)]
        return Metric(name, MetricKind.SPEEDUP, _P, f"{base} baseline", baseline=base, unit="×")
    return Metric(name, MetricKind.SPEEDUP, _D, name, unit=_guessed_unit(name))


def _names(**want) -> tuple[str, ...]:
    return tuple(m.name for m in CATALOGUE.values() if all(getattr(m, k) == v for k, v in want.items()))


HEADLINE = _names(headline=True)
# the metric that stands for a kernel in each source (what an event leads with, what `investigate` reads)
HEADLINE_OF: dict[str, str] = {m.source.value: m.name for m in CATALOGUE.values() if m.headline}
LOWER_IS_BETTER = frozenset(m.name for m in CATALOGUE.values() if m.lower_is_better)
COMPARATOR_SPEEDUPS = _names(comparator=True)
# what the dashboard document yields per run
DASHBOARD_METRICS = _names(source=_D)
# the time a kernel's row shows beside its headline speedup
LATENCY = "helion_latency_avg_ms"
# per source, the catalogue's speedups and times in catalogue order: the lines an alert's chart
# draws beside the moved metric (counts and flags are not trends to read a step against)
CHARTED: dict[str, tuple[str, ...]] = {
    s.value: tuple(m.name for m in CATALOGUE.values()
                   if m.source == s and m.kind in (MetricKind.SPEEDUP, MetricKind.TIME))
    for s in Source
}
