"""Change-point detection: one series of nightly values -> persistent steps (`Move`s).

`change_points` is the generic core (any numeric series); `detect_series` applies it to the
nightly trend of a stored series; `reconcile` keeps moves stable across passes.
"""

from __future__ import annotations

from service.detect.core import change_points, noise_sigma
from service.detect.reconcile import reconcile
from service.detect.series import detect_series, direction_of, trend_points
from service.detect.settings import DetectSettings

__all__ = [
    "DetectSettings",
    "change_points",
    "detect_series",
    "direction_of",
    "noise_sigma",
    "reconcile",
    "trend_points",
]
