"""Blind evaluation worlds (set D) for benchwatch, built on the real Helion history. See README.md."""
from .world import SEEDS, World, build_world

__all__ = ["build_world", "World", "SEEDS"]
