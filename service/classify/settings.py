"""Classifier settings: the typed `[classify]` section of `Settings`, validated with the whole config
at start.

Every threshold the classifier uses is a field here, so a person tuning the triage can override the
whole rule in one place; `config/default.toml` explains each one. The field defaults exist because
pydantic needs them and `tests/test_config_defaults.py` holds them equal to the file.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from service.errors import BenchwatchError, invalid


class ClassifySettings(BaseModel):
    """Thresholds that turn levels into observations; how observations are weighed is the
    likelihood table in `config/causes.toml`, not here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_significance: float = Field(3.0, gt=0)
    level_nights: int = Field(5, ge=1, le=60)
    noise_floor: float = Field(0.01, gt=0, le=1)
    sibling_sigma: float = Field(3.0, gt=0)
    sibling_min_pct: float = Field(2.0, ge=0)
    sibling_step_ratio: float = Field(0.5, gt=0, le=1)
    compile_drop_pct: float = Field(25.0, gt=0, le=100)
    autotune_moved_pct: float = Field(15.0, gt=0, le=100)
    most_fraction: float = Field(0.6, gt=0, le=1)
    most_min_kernels: int = Field(3, ge=2)
    machine_fraction: float = Field(0.3, gt=0, le=1)
    culprit_min_score: float = Field(0.4, ge=0, le=1)
    culprit_strong_score: float = Field(0.6, ge=0, le=1)
    culprit_report_score: float = Field(0.05, ge=0, le=1)
    group_min_kernels: int = Field(3, ge=2)
    crowd_fraction: float = Field(0.3, gt=0, le=1)
    own_cause_ratio: float = Field(4.0, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> "ClassifySettings":
        if self.culprit_strong_score < self.culprit_min_score:
            raise ValueError("culprit_strong_score must be >= culprit_min_score")
        return self

    @classmethod
    def from_mapping(cls, data: "ClassifySettings | Mapping[str, Any] | None") -> "ClassifySettings":
        """The section itself (`settings.classify` is already typed), or a raw mapping validated
        here; a bad key or value is a one-line config error."""
        if isinstance(data, cls):
            return data
        try:
            return cls(**dict(data or {}))
        except ValidationError as exc:
            raise invalid("config", exc, "classify") from None
        except TypeError as exc:  # e.g. a non-string key
            raise BenchwatchError(f"config: classify: {exc}") from None
