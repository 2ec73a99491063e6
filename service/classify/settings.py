"""Classifier settings: the `[classify]` section of the config, validated once per pass.

Every threshold and weight the classifier uses lives here, so a person tuning the triage can
read (and override) the whole rule in one place; the defaults equal `config/default.toml`.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from service.errors import BenchwatchError, invalid

CHECKS = (
    "persistence",
    "helion_only",
    "timer_agreement",
    "breadth",
    "method_tells",
    "commit_window",
)


class ClassifySettings(BaseModel):
    """Thresholds of the evidence checks and the weight each check has in the verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # persistence / noise
    min_significance: float = Field(3.0, gt=0)  # |log step| / noise below this => noise
    min_nights_after: int = Field(3, ge=1)  # provisional, or fewer nightlies after => "too early"
    # sibling levels around the step
    level_nights: int = Field(5, ge=1, le=60)  # nightlies each side for robust levels
    sibling_sigma: float = Field(3.0, gt=0)  # a sibling "stepped" at this many of its own sigmas
    min_step_pct: float = Field(3.0, ge=0)  # ... and by at least this much
    sibling_step_ratio: float = Field(0.5, gt=0, le=1)  # ... and by this share of our own log step
    noise_floor: float = Field(0.01, gt=0, le=1)  # lowest noise sigma (log units) ever assumed
    # scatter (method tell)
    scatter_nights: int = Field(10, ge=4, le=120)
    scatter_ratio: float = Field(3.0, gt=1)  # sigma after/before beyond this (or 1/this) = changed
    scatter_floor: float = Field(0.003, gt=0)  # sigma below this counts as this (quiet series)
    # breadth
    broad_fraction: float = Field(0.4, gt=0, le=1)  # share of the platform's other kernels
    broad_min_kernels: int = Field(2, ge=2)  # ...and at least this many of them
    isolated_max_kernels: int = Field(1, ge=0)  # at most this many other kernels => isolated
    other_platform_min_kernels: int = Field(2, ge=1)  # an other platform "stepped" with this many
    # commit window
    # a ranked candidate below this matches no slice (culprit scores are in [0, 1]; 0.4 = at
    # least a slice tag or a backend path on a code commit, see config/slices.toml)
    culprit_min_score: float = Field(0.4, ge=0, le=1)
    # a step on most of one platform (others quiet) needs a candidate aimed at it: tag + path
    culprit_broad_score: float = Field(0.7, ge=0, le=1)
    # combination
    confidence_prior: float = Field(1.0, ge=0)  # damps confidence when little evidence speaks
    weight_persistence: float = Field(1.0, ge=0)
    weight_helion_only: float = Field(2.0, ge=0)
    weight_timer_agreement: float = Field(1.5, ge=0)
    weight_breadth: float = Field(2.0, ge=0)
    weight_method_tells: float = Field(2.5, ge=0)
    weight_commit_window: float = Field(2.0, ge=0)
    # groups
    group_min_kernels: int = Field(3, ge=2)  # a platform-wide tell needs this many kernels
    group_tell_fraction: float = Field(0.5, gt=0, le=1)

    @model_validator(mode="after")
    def _some_weight(self) -> "ClassifySettings":
        if not any(self.weight(c) > 0 for c in CHECKS):
            raise ValueError("at least one weight_* must be positive")
        return self

    def weight(self, check: str) -> float:
        return float(getattr(self, f"weight_{check}", 0.0))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> "ClassifySettings":
        """Validate the `[classify]` mapping; a bad key or value is a one-line config error."""
        try:
            return cls(**dict(data or {}))
        except ValidationError as exc:
            raise invalid("config", exc, "classify") from None
        except TypeError as exc:  # e.g. a non-string key
            raise BenchwatchError(f"config: classify: {exc}") from None
