"""Blind labeled evaluation worlds, set E (see README.md)."""
from __future__ import annotations

from pathlib import Path

from .world_e import SEEDS, WINDOWS, World


def build_world(seed: int, workdir: Path, nights: int | None = None) -> World:
    return World(seed, Path(workdir), nights)


__all__ = ["SEEDS", "WINDOWS", "World", "build_world"]
