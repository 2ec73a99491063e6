"""Explanations, not votes: which cause accounts for *every* observation of an event best.

Each observation has a value (``timers = speedup_only``); `config/causes.toml` says how likely
that value is under each cause. A cause's score is the sum of the log likelihoods, so one
observation that only one cause can produce (a runner change for this platform; a harness
change to these kernels' measurement) outweighs several that every cause produces about as
often. The table is data a person reads and adjusts; this module only does the arithmetic and
says which observation decided.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from service.domain import Cause
from service.errors import BenchwatchError, invalid

# the causes an explanation chooses among (noise is decided before: one series, or within scatter)
CAUSES = tuple(c.value for c in Cause if c is not Cause.NOISE)


def default_table_path() -> Path:
    """Beside the other config files (the checkout, or BENCHWATCH_HOME in the image)."""
    from service.config import project_root

    return project_root() / "config" / "causes.toml"


class LikelihoodTable(BaseModel):
    """observation -> value -> cause -> likelihood (> 0), and the decisive ratio."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    causes: tuple[str, ...] = CAUSES
    observations: dict[str, dict[str, dict[str, float]]]
    explain: dict[str, float] = Field(default_factory=lambda: {"decisive_ratio": 8.0})
    # mechanism -> observation -> what a method change through that mechanism predicts for it:
    # the name of the cause whose prediction it shares (an autotune change alters the config
    # Helion runs: it predicts Helion's own footprint, as a real change does), or its own
    # likelihood per value (a torch pin moves the baselines: the comparators move with Helion);
    # read off the facts of the event's observations
    mechanisms: dict[str, dict[str, str | dict[str, float]]] = Field(default_factory=dict)

    @field_validator("mechanisms")
    @classmethod
    def _mechanisms(cls, v: dict[str, dict[str, str | dict[str, float]]]) -> dict[str, dict[str, str | dict[str, float]]]:
        for mech, rows in v.items():
            for obs, said in rows.items():
                if isinstance(said, dict):
                    if any(not (x > 0 and math.isfinite(x)) for x in said.values()):
                        raise ValueError(f"{mech}.{obs}: likelihoods must be positive numbers")
                elif said not in CAUSES:
                    raise ValueError(f"{mech}.{obs} must name one of {', '.join(CAUSES)}, not {said!r}")
        return v

    @model_validator(mode="after")
    def _mechanism_values(self) -> "LikelihoodTable":
        for mech, rows in self.mechanisms.items():
            for obs, said in rows.items():
                if isinstance(said, dict) and (unknown := set(said) - set(self.observations.get(obs, {}))):
                    raise ValueError(f"mechanisms.{mech}.{obs}: {', '.join(sorted(unknown))} is not a value of "
                                     f"observation {obs}")
        return self

    @field_validator("causes")
    @classmethod
    def _causes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if set(v) != set(CAUSES):
            raise ValueError(f"must list exactly {', '.join(CAUSES)}")
        return v

    @field_validator("observations")
    @classmethod
    def _rows(cls, v: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, dict[str, float]]]:
        for obs, values in v.items():
            for value, row in values.items():
                if set(row) != set(CAUSES):
                    raise ValueError(f"{obs}.{value} must give a likelihood for each of {', '.join(CAUSES)}")
                if any(not (x > 0 and math.isfinite(x)) for x in row.values()):
                    raise ValueError(f"{obs}.{value}: likelihoods must be positive numbers")
        return v

    @property
    def decisive_ratio(self) -> float:
        return float(self.explain.get("decisive_ratio", 8.0))

    def row(self, observation: str, value: str) -> dict[str, float] | None:
        return self.observations.get(observation, {}).get(value)


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> LikelihoodTable:
    try:
        data: Any = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BenchwatchError(f"cause table {path}: {exc}") from None
    try:
        return LikelihoodTable(**data)
    except ValidationError as exc:
        raise invalid(f"cause table {path}", exc) from None
    except TypeError as exc:
        raise BenchwatchError(f"cause table {path}: {exc}") from None


def load_table(path: Path | None = None) -> LikelihoodTable:
    """The validated table (cached per file version): a typo fails in one line naming the row."""
    p = path or default_table_path()
    try:
        mtime = p.stat().st_mtime
    except OSError:
        raise BenchwatchError(f"cause table {p} is missing") from None
    return _load(str(p), mtime)


@dataclass(frozen=True)
class Observation:
    """One thing a person would look at, its value, and the sentence that says it."""

    name: str  # a row of the table, e.g. "timers"
    value: str  # e.g. "speedup_only"
    detail: str
    facts: dict[str, Any] = field(default_factory=dict)  # structured: counts, shas, kinds


@dataclass(frozen=True)
class Explanation:
    cause: str
    confidence: float  # posterior share of the winner (flat prior)
    scores: dict[str, float]  # cause -> sum of log likelihoods
    decisive: Observation | None  # the observation that settles it, when one does
    observations: tuple[Observation, ...]
    # per observation: the cause it favours most and by how much (log ratio to the runner-up)
    leaning: tuple[tuple[str, str, float], ...] = ()


METHOD = Cause.METHOD_CHANGE.value


def mechanism_of(observations: list[Observation] | tuple[Observation, ...], table: LikelihoodTable) -> str | None:
    """The one mechanism the event's parsed method facts name (the kinds of its global and
    kernel method facts), when the table says how a method change through it looks. Facts of
    two mechanisms (a pin and the autotune budget in one window) predict a mixture: none."""
    kinds: set[str] = set()
    for ob in observations:
        if ob.name in ("global_method", "kernel_method") and ob.facts:
            kinds.update(ob.facts.get("kinds") or [ob.facts.get("kind")])
    kinds.discard(None)
    return next(iter(kinds)) if len(kinds) == 1 and next(iter(kinds)) in table.mechanisms else None


def _rows(observations, table: LikelihoodTable):
    """Each observation with the row it is weighed by: the table's, with the method-change
    column taken from what the event's mechanism predicts (another cause's column, or its own)."""
    shared = table.mechanisms.get(mechanism_of(observations, table) or "", {})
    for ob in observations:
        row = table.row(ob.name, ob.value)
        if row is None:
            continue
        said = shared.get(ob.name)
        if isinstance(said, dict):
            row = {**row, METHOD: said.get(ob.value, row[METHOD])}
        elif said is not None:
            row = {**row, METHOD: row[said]}
        yield ob, row


def best_cause(scores: dict[str, float]) -> str:
    """The cause with the highest summed log likelihood; ties go to the order of CAUSES."""
    return max(CAUSES, key=lambda c: (scores[c], -CAUSES.index(c)))


def explain(observations: list[Observation] | tuple[Observation, ...], table: LikelihoodTable) -> Explanation:
    """The cause with the highest summed log likelihood; ties go to the order of CAUSES."""
    scores = {c: 0.0 for c in CAUSES}
    leaning: list[tuple[str, str, float]] = []
    best_single: tuple[float, Observation] | None = None
    rows = list(_rows(observations, table))
    for ob, row in rows:
        for c in CAUSES:
            scores[c] += math.log(row[c])
        ranked = sorted(CAUSES, key=lambda c: -row[c])
        margin = math.log(row[ranked[0]] / row[ranked[1]])
        leaning.append((ob.name, ranked[0], round(margin, 3)))
    cause = best_cause(scores)
    top = max(scores.values())
    z = sum(math.exp(v - top) for v in scores.values())
    confidence = 1.0 / z
    # decisive: the observation favouring the winner by the decisive ratio or more (the largest)
    for ob, row in rows:
        others = max(row[c] for c in CAUSES if c != cause)
        ratio = row[cause] / others
        if ratio >= table.decisive_ratio and (best_single is None or ratio > best_single[0]):
            best_single = (ratio, ob)
    return Explanation(cause, round(confidence, 3), {c: round(v, 3) for c, v in scores.items()},
                       best_single[1] if best_single else None, tuple(observations), tuple(leaning))
