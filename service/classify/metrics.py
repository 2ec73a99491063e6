"""What kind of quantity each metric name is: which moves have a second timer, a baseline, a true speedup."""

from __future__ import annotations

from functools import lru_cache

DASH_SPEEDUPS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
HELION_SPEEDUP = "helion_speedup_geomean"
LATENCY = "helion_latency_avg_ms"
# The comparators' own speedups (baseline time / Triton or torch.compile time): evidence about the
# baselines, never a move of Helion itself.
COMPARATOR_SPEEDUPS = ("triton_speedup_geomean", "torch_compile_speedup_geomean")
PRETUNED_HEADLINE = ("geomean", "best_speedup")
# Hardware families: b200 and b200_cute run on the same machines, so they are one family.
KNOWN_FAMILIES = ("h100", "b200", "mi350x", "mi300x", "a100", "tpu")


def is_baseline_metric(metric: str) -> bool:
    """A pretuned per-baseline geomean: Helion's speedup against one named baseline."""
    return metric.startswith("baseline:") and metric.endswith(":geomean")


def is_speedup(metric: str) -> bool:
    return metric in DASH_SPEEDUPS or metric in PRETUNED_HEADLINE or is_baseline_metric(metric)


@lru_cache(maxsize=256)
def family(platform_short: str) -> str:
    return platform_short.split("_", 1)[0].lower()
