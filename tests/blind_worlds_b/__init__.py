"""Second, independently designed blind evaluation set for benchwatch (see README.md beside this file).

Written from the shared docs (helion-dashboard.md) and the real Helion repository only, never from
the classifier. Published seeds 11, 12, 13 (nightlies 2026-01-13..06-20, 2026-04-12..08-21,
2025-12-21..2026-05-26). Every seed carries every mechanism the real history allows inside its window:

- real regressions / improvements (code, heuristics), noise (blip, scatter), thermal throttling, an
  outage, a driver change reverted a few nights later (simulated: no real revert falls between two
  nightlies of any window), and method changes by cudagraph, baseline (torch pin), timer, harness,
  autotune and shapes: all seeds.
- hardware "runner" (a runner label changed at a real commit): seeds 11 and 12 only. Seed 13's window
  holds no runner-label change for a platform the worlds model (h100, b200, b200_cute, mi350x, tpu):
  the only one, 9eefa499 (2026-03-09), moves mi325x, which the worlds do not model; H100's first
  runner change (b33ae6b9) is 2026-05-29, three days after seed 13 ends.
- pretuned labels: seed 12 only (the pretuned nightly starts with c51cbd12, 2026-06-30, after the
  windows of seeds 11 and 13 end; those seeds publish no pretuned document at all).
"""
from tests.blind_worlds.world import Label, Night

from .world import BlindWorldB, build_world

__all__ = ["BlindWorldB", "Label", "Night", "build_world"]
