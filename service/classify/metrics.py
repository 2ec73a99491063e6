"""What the classifier asks of a metric name, answered by the catalogue in `service.domain`.

Which moves have a second timer (latency), which are the comparators' speedups (evidence about
the baselines), which have a true speedup to report, and which hardware family a platform is.
"""

from __future__ import annotations

from functools import lru_cache

from service.domain import CATALOGUE, COMPARATOR_SPEEDUPS, LATENCY, metric

__all__ = ["COMPARATOR_SPEEDUPS", "LATENCY", "family", "is_baseline_metric", "is_speedup"]


def is_baseline_metric(name: str) -> bool:
    """A pretuned per-baseline geomean: Helion's speedup against one named baseline."""
    return metric(name).baseline is not None


def is_speedup(name: str) -> bool:
    """A speedup the catalogue knows (a name it does not know is not reported as one)."""
    m = metric(name)
    return m.is_speedup and (name in CATALOGUE or m.baseline is not None)


@lru_cache(maxsize=256)
def family(platform_short: str) -> str:
    """Hardware family: b200 and b200_cute run on the same machines, so they are one family."""
    return platform_short.split("_", 1)[0].lower()
