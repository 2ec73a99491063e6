"""Everything the classifier weighs about one move, gathered by the caller (detect pass).

A plain frozen record so the classifier stays a pure function: tests build one by hand, the
detect pass builds one from the store and the culprit search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from service.records import AttributeChange, CommitWindow, FactChange, Move, RankedCommit, SeriesData


@dataclass(frozen=True)
class MoveContext:
    move: Move
    # the other metrics of the same track, by metric name (never the moved metric itself)
    siblings: dict[str, SeriesData] = field(default_factory=dict)
    # live moves of other series of the same source, first-bad on the same nightly +-1
    peer_moves: tuple[Move, ...] = ()
    platform_kernel_count: int = 0  # kernels the move's platform runs (this one included)
    other_platforms_count: int = 0  # platforms of the source other than the move's
    shapes_before: tuple[str, ...] | None = None  # shape labels nearest before the step
    shapes_after: tuple[str, ...] | None = None
    attribute_changes: tuple[AttributeChange, ...] = ()
    window: CommitWindow | None = None
    candidates: tuple[RankedCommit, ...] = ()  # culprit ranking, best first
    harness_commit: RankedCommit | None = None
    runner_commit: RankedCommit | None = None
    repo_facts: tuple[FactChange, ...] = ()
    # the moved series itself (optional): scatter before/after and the level of a noise move
    series: SeriesData | None = None
