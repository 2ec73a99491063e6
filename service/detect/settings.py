"""Detector knobs: one validated model whose defaults equal `[detect]` in config/default.toml.

The pass hands us the raw `[detect]` table (file + env overrides, so values may be strings);
`from_mapping` validates it here when a detect pass (or `investigate`) builds its stages, so a
typo fails that command in one line naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from service.errors import BenchwatchError, invalid


class DetectSettings(BaseModel):
    """How steps are searched, filtered and confirmed (see docs in each field)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # search: "pelt" + "l2"/"rbf" run ruptures' C kernel path (~1 ms per 365-point series);
    # "binseg" and "l1" use ruptures' pure-Python classes (10-1000x slower, for comparison only).
    method: Literal["pelt", "binseg"] = "pelt"
    cost: Literal["l2", "l1", "rbf"] = "l2"
    # series of 256+ points: search on sums of this many nights, then refine to the exact night
    # (1 = full resolution; 2 makes ruptures' O(n^2) C Pelt ~4x cheaper, the stage ~2x)
    search_stride: int = Field(2, ge=1, le=8)
    # penalty per change = penalty * log(n) on values scaled by the robust noise sigma,
    # i.e. penalty * sigma^2 * log(n) on the log values (BIC-like when penalty ~ 2).
    penalty: float = Field(5.0, gt=0, le=1000)
    min_size: int = Field(3, ge=2, le=100)  # shortest regime the search may return
    # a kept step must move the robust level by >= min_change_pct % (log series only) ...
    min_change_pct: float = Field(3.0, ge=0, le=1000)
    # ... and by >= min_significance noise sigmas
    min_significance: float = Field(3.1, ge=0, le=1000)
    # a step seen on a single new night must clear this many sigmas (one bad night is usually
    # an outlier; from the second night on, each night needs min_significance)
    first_night_significance: float = Field(6.0, ge=0, le=1000)
    # how many bad nights before a fresh step is reported at all: 2 means a lone outlier never
    # reaches on-call, and a regression on nightly N is still reported on N+1 (issue: by N+2)
    report_after_nights: int = Field(2, ge=1, le=10)
    confirm_nights: int = Field(3, ge=1, le=60)  # nightlies at/after first-bad to confirm
    # an excursion lasting <= revert_nights that comes back to within revert_tolerance
    # (fraction of the excursion) of the old level is noise, not two steps
    revert_nights: int = Field(4, ge=0, le=60)
    revert_tolerance: float = Field(0.5, ge=0, le=1)
    # a step that comes back to the old level within this many nightlies is one episode with an
    # end (e.g. a week of thermal throttling), not two moves; <= revert_nights turns it off
    episode_nights: int = Field(14, ge=0, le=120)
    # reconcile: a fresh move is the stored one if its first-bad is within this many nights
    match_nights: int = Field(2, ge=0, le=30)
    # a confirmed move this many nightlies old keeps its stored verdict: its evidence has settled,
    # and re-weighing hundreds of old moves every night would cost seconds for nothing
    settle_nights: int = Field(14, ge=1, le=365)
    # platform-wide steps (detect/pooled.py): on a nightly where at least pooled_fraction of the
    # series of one platform and metric that ran (and at least pooled_min_series; 0 = off) moved
    # the same way by pooled_sigma standard errors (median of pooled_window nights after vs
    # before, given the series' own noise), their Stouffer sum over every series that ran is at
    # least pooled_combined, and the median move is at least pooled_min_pct %, each is a move
    pooled_min_series: int = Field(3, ge=0, le=1000)
    pooled_fraction: float = Field(0.5, gt=0, le=1)
    pooled_sigma: float = Field(1.5, gt=0, le=100)  # a member's step, in standard errors
    pooled_combined: float = Field(5.0, gt=0, le=100)  # Stouffer's z over the series that ran
    pooled_window: int = Field(7, ge=3, le=60)
    pooled_min_pct: float = Field(1.5, ge=0, le=1000)
    pooled_noise_floor: float = Field(0.002, ge=0, le=1)  # smallest log-unit sigma assumed

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> "DetectSettings":
        """Validate the `[detect]` table; raise one-line BenchwatchError naming the key."""
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
