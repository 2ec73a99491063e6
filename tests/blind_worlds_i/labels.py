"""The two record types a world hands to the scorer (same fields as tests/blind_worlds/world.py).

Defined here rather than imported so this set does not depend on another set's module; the
fields and their meaning are the scorer's (`tests/blind_worlds/score.py`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime


@dataclass(frozen=True)
class Night:
    run_id: str
    full_sha: str
    sha: str
    date: datetime
    p_run_id: str | None = None  # that day's pretuned nightly run (None before the suite existed)
    p_full_sha: str | None = None


@dataclass(frozen=True)
class Label:
    id: str
    source: str  # dashboard | pretuned
    cause: str  # real | method_change | hardware | noise
    kind: str
    direction: str  # regression | improvement | mixed | none
    members: tuple  # ((platform_short, kernel), ...)
    metrics: tuple
    first_bad_run_id: str
    last_good_run_id: str
    end_run_id: str | None
    culprit_sha: str | None
    change_sha: str | None
    honest_speedup: dict  # "platform/kernel" -> honest headline value
    note: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["members"] = [list(m) for m in self.members]
        d["metrics"] = list(self.metrics)
        return d
