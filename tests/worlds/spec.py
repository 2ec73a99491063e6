"""What a generated world is asked to contain, and the labels it hands back.

A world is a seeded year (or less) of Helion nightlies with planted events of every cause;
the labels are the ground truth the quality benchmark and the end-to-end tests score against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

CAUSES = ("real", "method_change", "hardware", "noise")
PLATFORMS = ("h100", "b200", "b200_cute", "mi350x", "tpu")


@dataclass(frozen=True)
class EventSpec:
    """One planted event.

    kind refines the cause: method_change -> "baseline" | "cudagraph" | "shapes" (dashboard) or
    "cudagraph_flip" | "baselines" (pretuned); hardware -> "runner" (a runner-label commit) |
    "thermal" (no commit); noise -> "blip" (reverts after 2 nights) | "outlier" (one night);
    real -> "code". magnitude is the relative step of the headline speedup (-0.2 = 20% worse).
    """

    cause: str
    source: str
    platform_short: str
    kernels: tuple[str, ...]
    night: int  # index of the first-bad nightly
    magnitude: float = -0.2
    kind: str = ""


@dataclass(frozen=True)
class WorldSpec:
    seed: int = 0
    nightlies: int = 120
    start: date = date(2026, 1, 5)
    platforms: tuple[str, ...] = PLATFORMS
    max_kernels_per_platform: int | None = None
    pretuned: bool = True
    events: tuple[EventSpec, ...] | None = None  # None: planned from the seed
    n_events: int | None = None  # how many to plan (default: one per ~9 nightlies)
    with_git: bool = True
    repo_dir: str | None = None  # where to build the git repo (default: a temp dir)
    failure_rate: float = 0.01
    manual_runs: bool = True
    churn: bool = True  # kernels added late and removed early
    gaps: bool = True  # a few kernels missing from a few nightlies
    commits_per_day: int = 3


@dataclass(frozen=True)
class Label:
    """Ground truth for one planted event, in the terms benchwatch reports."""

    event: EventSpec
    series: tuple[tuple[str, str, str, str], ...]  # (source, platform_short, kernel, metric) that step
    first_bad_run_id: str
    last_good_run_id: str
    culprit: str | None = None  # full sha of the planted code commit (real)
    change_commit: str | None = None  # full sha of the harness/runner commit (method/hardware)
    true_speedup: dict[str, float] = field(default_factory=dict)  # kernel -> honest headline value

    @property
    def cause(self) -> str:
        return self.event.cause
