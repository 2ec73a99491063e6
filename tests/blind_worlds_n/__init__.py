"""Blind worlds, set n: labeled nightly histories on the real Helion `main`, for scoring benchwatch.

Written blind (from tests/shared docs, the shared datasets and the real repo only). See README.md.

    from tests.blind_worlds_n import build_world, WINDOW_END
    w = build_world(131, workdir, nights=150)
"""
from __future__ import annotations

from pathlib import Path

from .world import WINDOW_END, World

__all__ = ["build_world", "WINDOW_END", "World"]


def build_world(seed: int, workdir, nights: int = 150) -> World:
    """Simulate every nightly of the seed's window, publish the last `nights` of them."""
    return World(seed, Path(workdir), nights)
