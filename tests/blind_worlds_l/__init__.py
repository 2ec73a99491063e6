"""Blind labeled worlds, set L (seeds 111, 112, 113). See README.md."""
from __future__ import annotations

from pathlib import Path

from .world import WINDOWS, LWorld

SEEDS = (111, 112, 113)


def build_world(seed: int, workdir: Path, nights: int | None = None) -> LWorld:
    """Build the world for ``seed`` under ``workdir`` (call ``close()`` to remove its temp dirs).

    ``nights``: only the first ``nights`` nightlies of the seed's window (small test builds)."""
    if seed not in WINDOWS:
        raise ValueError(f"set L knows seeds {sorted(WINDOWS)}, not {seed}")
    return LWorld(seed, Path(workdir), nights)


__all__ = ["build_world", "SEEDS", "WINDOWS"]
