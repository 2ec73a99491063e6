"""Blind worlds, set S (seeds 181-183). See README.md. Do not read this package's code or print its
labels if you work on the service."""
from __future__ import annotations

from .world_s import SWorld

WINDOW_END = {181: "2026-02-25", 182: "2026-06-25", 183: "2026-08-10"}
SEEDS = (181, 182, 183)


def build_world(seed: int, workdir, nights: int | None = None) -> SWorld:
    from .plans import PLANS

    if seed not in WINDOW_END:
        raise ValueError(f"set S has seeds {SEEDS}, not {seed}")
    return SWorld(seed, workdir, WINDOW_END[seed], PLANS[seed], nights=nights)
