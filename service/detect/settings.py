"""Detector knobs: the typed `[detect]` section of `Settings`, validated with the whole config at start.

`config/default.toml` is where each knob is explained; the field defaults here exist because
pydantic needs them (tests build `DetectSettings()` directly) and `tests/test_config_defaults.py`
holds them equal to the file. Bounds live here: a typo'd key or an out-of-range value stops every
command at start in one line naming the key (`config: detect.penalti: ...`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from service.errors import BenchwatchError, invalid


class DetectSettings(BaseModel):
    """How steps are searched, filtered and confirmed (each knob: `[detect]` in config/default.toml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Literal["pelt", "binseg"] = "pelt"
    cost: Literal["l2", "l1", "rbf"] = "l2"
    search_stride: int = Field(2, ge=1, le=8)
    penalty: float = Field(5.0, gt=0, le=1000)
    min_size: int = Field(3, ge=2, le=100)
    min_change_pct: float = Field(3.0, ge=0, le=1000)
    min_significance: float = Field(3.1, ge=0, le=1000)
    held_nights: int = Field(10, ge=2, le=365)
    held_standard_errors: float = Field(5.0, gt=0, le=1000)
    held_min_sigma: float = Field(2.0, ge=0, le=1000)
    held_min_change_pct: float = Field(5.0, ge=0, le=1000)
    first_night_significance: float = Field(6.0, ge=0, le=1000)
    report_after_nights: int = Field(2, ge=1, le=10)
    newest_crowd_kernels: int = Field(3, ge=0, le=1000)
    confirm_nights: int = Field(3, ge=1, le=60)
    revert_nights: int = Field(4, ge=0, le=60)
    revert_tolerance: float = Field(0.5, ge=0, le=1)
    episode_nights: int = Field(14, ge=0, le=120)
    match_nights: int = Field(2, ge=0, le=30)
    settle_nights: int = Field(14, ge=1, le=365)
    pooled_min_series: int = Field(3, ge=0, le=1000)
    pooled_fraction: float = Field(0.5, gt=0, le=1)
    pooled_sigma: float = Field(1.5, gt=0, le=100)
    pooled_combined: float = Field(5.0, gt=0, le=100)
    pooled_window: int = Field(7, ge=3, le=60)
    pooled_min_pct: float = Field(1.5, ge=0, le=1000)
    pooled_noise_floor: float = Field(0.002, ge=0, le=1)
    joint_significance: float = Field(2.5, ge=0, le=1000)
    joint_min_sigma: float = Field(1.5, ge=0, le=100)

    @classmethod
    def from_mapping(cls, data: "DetectSettings | Mapping[str, Any] | None") -> "DetectSettings":
        """The section itself (`settings.detect` is already typed), or a raw table validated here
        with a one-line BenchwatchError naming the key (tests and benchmarks pass tables)."""
        if isinstance(data, cls):
            return data
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise BenchwatchError("config: detect: must be a table of settings")
        try:
            return cls(**{str(k): v for k, v in data.items()})
        except ValidationError as exc:
            raise invalid("config", exc, "detect") from None
        except TypeError as exc:  # e.g. non-string keys
            raise BenchwatchError(f"config: detect: {exc}") from None
