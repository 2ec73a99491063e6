"""Blind worlds, set V: labeled evaluation worlds on the real Helion history (seeds 211-213).

Written without looking at the service. Each world clones the Helion bundle, puts its nightlies on
the real first-parent shas, runs on each night what the real files at that commit say (kernels,
shapes, CUDA-graph flags, lanes, runners, images, pretuned kernels and baselines), simulates the
per-shape timings, and feeds them to Helion's own dashboard builders (imported from a temporary
checkout) to produce the two live documents after every nightly. See README.md."""
from __future__ import annotations

from .build import NIGHTS, WINDOW_END, build_world

__all__ = ["build_world", "WINDOW_END", "NIGHTS"]
