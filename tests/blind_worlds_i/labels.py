"""The two record types a world hands to the scorer: the label format every blind set shares,
defined once beside the first set's world (`tests/blind_worlds/world.py`); the fields and their
meaning are the scorer's (`tests/blind_worlds/score.py`)."""
from __future__ import annotations

from tests.blind_worlds.world import Label, Night

__all__ = ["Label", "Night"]
