"""Classifier settings: the `[classify]` section of the config, validated once per pass.

Every threshold and weight the classifier uses lives here, so a person tuning the triage can
read (and override) the whole rule in one place; the defaults equal `config/default.toml`.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from service.errors import BenchwatchError, invalid

class ClassifySettings(BaseModel):
    """Thresholds that turn levels into observations; how observations are weighed is the
    likelihood table in `config/causes.toml`, not here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # a move below this many sigmas of its own series' scatter is noise
    min_significance: float = Field(3.0, gt=0)
    # sibling levels (latency, comparators, compile time, per-baseline) around the step
    level_nights: int = Field(5, ge=1, le=60)  # nightlies each side for a robust (median) level
    noise_floor: float = Field(0.01, gt=0, le=1)  # lowest noise sigma (log units) ever assumed
    sibling_sigma: float = Field(3.0, gt=0)  # a sibling "moved" at this many of its own sigmas...
    sibling_min_pct: float = Field(2.0, ge=0)  # ...and by at least this many percent
    sibling_step_ratio: float = Field(0.5, gt=0, le=1)  # "with Helion": this share of its step
    compile_drop_pct: float = Field(25.0, gt=0, le=100)  # compile time fell this much: capped autotune
    # breadth: "most of the platform" = this share of the kernels that ran that night, and this many
    most_fraction: float = Field(0.6, gt=0, le=1)
    most_min_kernels: int = Field(3, ge=2)
    # culprit scores are in [0, 1] (config/slices.toml): below weak no commit matches the slice
    culprit_min_score: float = Field(0.4, ge=0, le=1)
    culprit_strong_score: float = Field(0.6, ge=0, le=1)
    # a real event still names its best-ranked commit from this score on (with its score and
    # reasons): the lead a person would check first, even when no commit matches the slice well
    culprit_report_score: float = Field(0.2, ge=0, le=1)
    # a short excursion is a hardware episode only when this many kernels made it together
    group_min_kernels: int = Field(3, ge=2)

    @model_validator(mode="after")
    def _ordered(self) -> "ClassifySettings":
        if self.culprit_strong_score < self.culprit_min_score:
            raise ValueError("culprit_strong_score must be >= culprit_min_score")
        return self

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> "ClassifySettings":
        """Validate the `[classify]` mapping; a bad key or value is a one-line config error."""
        try:
            return cls(**dict(data or {}))
        except ValidationError as exc:
            raise invalid("config", exc, "classify") from None
        except TypeError as exc:  # e.g. a non-string key
            raise BenchwatchError(f"config: classify: {exc}") from None
