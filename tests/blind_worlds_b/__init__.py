"""Second, independently designed blind evaluation set for benchwatch (see README of this package)."""
from tests.blind_worlds.world import Label, Night

from .world import BlindWorldB, build_world

__all__ = ["BlindWorldB", "Label", "Night", "build_world"]
