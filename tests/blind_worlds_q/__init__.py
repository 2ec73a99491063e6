"""Blind world set Q for benchwatch (see README.md; do not read this package if you work on the service).

`build_world(seed, workdir, nights=None)` builds one world: 150 nightlies (or the last `nights`) on
the real first-parent history of Helion's `main`, simulated per-shape times, and the two published
documents made by Helion's own dashboard builders from the world's clone.
"""
from __future__ import annotations

from pathlib import Path

# the last nightly of each seed's window (161: before the pretuned suite; 163: with pretuned, TPU,
# CuTe and linear attention; 162: between, with TPU and CuTe arriving)
WINDOW_END: dict[int, str] = {161: "2026-03-26", 162: "2026-06-08", 163: "2026-08-19"}


def build_world(seed: int, workdir: Path, nights: int | None = None):
    from .world import QWorld

    if seed not in WINDOW_END:
        raise ValueError(f"world Q has seeds {sorted(WINDOW_END)}, not {seed}")
    return QWorld(seed, Path(workdir), nights, WINDOW_END[seed])
