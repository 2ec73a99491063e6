"""Change-point detection: one series of nightly values -> persistent steps (`Move`s).

`change_points` is the generic core (any numeric series); `detect_series` applies it to the
nightly trend of a stored series; `reconcile` keeps moves stable across passes.

The numpy/ruptures names are loaded on first use (PEP 562): `service.config` imports `detect.settings` for the
typed `[detect]` section, and that must not pull numpy and ruptures into `status` or `alerts`.
"""

from __future__ import annotations

import importlib

# light and eager: `reconcile` is also the name of its submodule, which a lazy lookup would return
from service.detect.reconcile import reconcile
from service.detect.settings import DetectSettings

_WHERE = {
    "change_points": "service.detect.core",
    "noise_sigma": "service.detect.core",
    "detect_series": "service.detect.series",
    "direction_of": "service.detect.series",
    "trend_points": "service.detect.series",
}

__all__ = sorted([*_WHERE, "reconcile", "DetectSettings"])


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'service.detect' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
