"""Plan a seeded mix of events when a test does not list its own.

Events are spaced so that two never share a platform within 12 nightlies, the first comes
after a month of clean history (detectors need a baseline), and every cause appears on both
sources.
"""

from __future__ import annotations

import numpy as np

from tests.worlds.catalog import PRETUNED_ROWS, platform_kernels
from tests.worlds.spec import EventSpec, WorldSpec

_DASH_KINDS = {
    "real": ("code",),
    "method_change": ("baseline", "cudagraph", "shapes"),
    "hardware": ("runner", "thermal"),
    "noise": ("blip", "outlier"),
}
_PRE_KINDS = {
    "real": ("code",),
    "method_change": ("cudagraph_flip", "baselines"),
    "hardware": ("runner", "thermal"),
    "noise": ("blip", "outlier"),
}


def _kernels_for(rng: np.random.Generator, cause: str, pool: list[str]) -> tuple[str, ...]:
    if cause == "hardware":
        k = max(3, int(round(len(pool) * rng.uniform(0.6, 0.9))))
    elif cause == "noise":
        k = 1
    else:
        k = int(rng.integers(1, min(3, len(pool)) + 1))
    return tuple(sorted(rng.choice(pool, size=min(k, len(pool)), replace=False).tolist()))


def plan_events(spec: WorldSpec, kernels_of: dict[str, tuple[str, ...]]) -> tuple[EventSpec, ...]:
    rng = np.random.default_rng(spec.seed + 7919)
    n = spec.n_events if spec.n_events is not None else max(0, (spec.nightlies - 40) // 9)
    first, last = 30, spec.nightlies - 4
    if n == 0 or last <= first:
        return ()
    nights = np.linspace(first, last, n).round().astype(int).tolist()
    causes = ["real", "method_change", "hardware", "noise"]
    pre_platforms = sorted({p for p, _, _ in PRETUNED_ROWS if p in spec.platforms})
    busy: dict[str, int] = {}
    out: list[EventSpec] = []
    for i, night in enumerate(nights):
        cause = causes[i % 4]
        source = "pretuned" if (spec.pretuned and pre_platforms and i % 5 == 4) else "dashboard"
        choices = pre_platforms if source == "pretuned" else [p for p in spec.platforms if kernels_of.get(p)]
        free = [p for p in choices if night - busy.get(p, -99) >= 12] or choices
        platform = free[int(rng.integers(len(free)))]
        if source == "pretuned":
            pool = [k for p, _, k in PRETUNED_ROWS if p == platform]
            kinds = _PRE_KINDS[cause]
        else:
            pool = list(kernels_of[platform])
            kinds = _DASH_KINDS[cause]
        if cause == "method_change" and source == "dashboard" and platform == "tpu":
            kinds = ("baseline", "shapes")
        kind = kinds[int(rng.integers(len(kinds)))]
        mag = -float(rng.uniform(0.15, 0.35))
        if cause == "real" and rng.random() < 0.25:
            mag = float(rng.uniform(0.15, 0.3))  # a real improvement
        if cause == "noise":
            mag = -float(rng.uniform(0.2, 0.4))
        out.append(EventSpec(cause, source, platform, _kernels_for(rng, cause, pool), night, mag, kind))
        busy[platform] = night
    return tuple(out)


def kernels_of_spec(spec: WorldSpec) -> dict[str, tuple[str, ...]]:
    out = {}
    for p in spec.platforms:
        ks = platform_kernels(p)
        if spec.max_kernels_per_platform is not None:
            ks = ks[: spec.max_kernels_per_platform]
        out[p] = ks
    return out
