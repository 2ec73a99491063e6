"""Blind world set R: labeled nightly worlds on the real Helion history (see README.md).

`build_world(seed, workdir, nights=None)` clones the Helion bundle into `workdir`, reads what each
nightly ran from the real files at its commit, simulates the measurements, plants and labels events,
and publishes both dashboard documents with Helion's own builders, nightly by nightly."""
from __future__ import annotations

from pathlib import Path

# last nightly of each seed's 150-nightly window
WINDOW_END: dict[int, str] = {
    171: "2026-03-18",  # before the pretuned suite, TPU, CuTe and linear attention
    172: "2026-05-27",  # MI350X, TPU and CuTe arrive; MI325X retired
    173: "2026-08-20",  # pretuned suite, TPU bridge, CuTe, linear attention
}


def build_world(seed: int, workdir: Path, nights: int | None = None):
    from .world import RWorld

    if seed not in WINDOW_END:
        raise ValueError(f"unknown seed {seed}; choose from {sorted(WINDOW_END)}")
    return RWorld(seed, Path(workdir), WINDOW_END[seed], nights)
