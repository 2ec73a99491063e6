"""Blind labeled evaluation set J: worlds on the real Helion history (see README.md)."""
from __future__ import annotations

from pathlib import Path


def build_world(seed: int, workdir: Path, nights: int | None = None):
    from .world import WorldJ
    return WorldJ(seed, Path(workdir), nights)
