"""The plain records health checks take and return (no ORM objects, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping

# Finding kinds, in the order a message lists them.
KINDS = (
    "no_nightly", "fetch_failing", "detect_failing", "platform_outage", "partial_outage", "failing_kernel",
    "accuracy", "matrix_change",
)
KIND_WORDS = {
    "no_nightly": "No nightly",
    "fetch_failing": "Fetch failing",
    "detect_failing": "Detection failing",
    "platform_outage": "Platform outage",
    "partial_outage": "Partial outage",
    "failing_kernel": "Failing kernel",
    "accuracy": "Accuracy failure",
    "matrix_change": "Removed from the matrix",
}


@dataclass(frozen=True)
class Nightly:
    """A main nightly run of one source."""

    run_id: str
    sha: str
    full_sha: str
    date: datetime  # tz-aware UTC


@dataclass(frozen=True)
class KernelResult:
    """One kernel's row on one nightly, with the summary flags when it is the newest nightly."""

    platform_short: str
    kernel: str
    failed: bool = False  # the run produced nothing (headline 0 / no value, or a pretuned error)
    error: str | None = None  # pretuned error string
    infra_missing: bool = False
    run_failures: tuple[str, ...] = ()
    accuracy_failures: tuple[str, ...] = ()
    low_accuracy: tuple[tuple[str, float], ...] = ()  # (shape, helion_accuracy) below the floor


@dataclass(frozen=True)
class Expected:
    """What the workflows at a nightly's sha say should run (None / absent: not known)."""

    sha: str
    platforms: frozenset[str] | None = None
    kernels: Mapping[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class SourceNights:
    """One source's recent nightlies, oldest first, and each one's rows (parallel tuples)."""

    source: str
    nights: tuple[Nightly, ...]
    results: tuple[Mapping[tuple[str, str], KernelResult], ...]
    expected: Expected | None = None
    removed_in: Mapping[tuple[str, str], str] = field(default_factory=dict)  # -> sha that dropped it


@dataclass(frozen=True)
class Finding:
    """One health condition. ``key`` identifies it across passes: the same key while active is
    the same alert; a key that is no longer found has recovered. ``info`` findings are news
    (a kernel removed from the matrix), never a failure."""

    kind: str
    source: str
    detail: str  # one line, plain text (renderers escape it)
    platform_short: str | None = None
    kernel: str | None = None
    shapes: tuple[str, ...] = ()
    info: bool = False

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.source}:{self.platform_short or '-'}:{self.kernel or '-'}"
