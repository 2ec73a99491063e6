"""Blind worlds, set T: labeled nightly histories on the real Helion first-parent history.

Written without reading how benchwatch decides (see README.md in this folder). What runs each night
is read from the real workflow and benchmark files at that night's commit; per-shape times are
simulated; both dashboard documents are made by Helion's own builders from the bundle; events of
every mechanism sit on the real commits that carry them. ``build_world(seed, workdir, nights)``.
"""
from __future__ import annotations

from pathlib import Path

from .world_t import World, build

# seed -> ISO date of the last nightly. 191 ends before the pretuned suite existed
# (pretuned_kernels/ appeared 2026-05-07, its nightly workflow 2026-06-30).
WINDOW_END: dict[int, str] = {191: "2026-03-26", 192: "2026-06-16", 193: "2026-08-20"}
DEFAULT_NIGHTS: dict[int, int] = {191: 160, 192: 180, 193: 180}


def build_world(seed: int, workdir: Path, nights: int | None = None) -> World:
    if seed not in WINDOW_END:
        raise KeyError(f"set T has seeds {sorted(WINDOW_END)}")
    return build(seed, WINDOW_END[seed], Path(workdir), nights or DEFAULT_NIGHTS[seed])


__all__ = ["WINDOW_END", "build_world", "World"]
