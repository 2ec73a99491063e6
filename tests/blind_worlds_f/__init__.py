"""Blind set F: labeled evaluation worlds for benchwatch on the real Helion history.

A world is a window of 110-160 nightlies of Helion's benchmark dashboard, on the real
first-parent commits of ``main``, with what each nightly runs read from the real workflow and
harness files at its commit, numbers simulated as per-input times under Helion's two timers,
documents built night by night by Helion's own dashboard builders, and labels for every move
that is an event (real, method change, hardware, noise). See README.md for the method.
"""
from .world import SEEDS, WINDOWS, World, build_world

__all__ = ["SEEDS", "WINDOWS", "World", "build_world"]
