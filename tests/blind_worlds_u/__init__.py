"""Blind world set U: labeled evaluation worlds on the real Helion history (see README.md)."""
from __future__ import annotations

from pathlib import Path

WINDOW_END = {201: "2026-05-05", 202: "2026-07-25", 203: "2026-08-22"}


def build_world(seed: int, workdir: Path, nights: int | None = None):
    from .world_u import build
    return build(seed, Path(workdir), nights)
