"""Blind evaluation set I: labeled worlds of Helion benchmark nightlies on the real history.

``build_world(seed, workdir, nights=None)`` returns a world with ``nights``, ``labels``, ``repo``,
``night_of``, ``dashboard_bytes``, ``pretuned_bytes`` and ``series_count`` (see README.md for the
world model and the label conventions). Seeds 81, 82 and 83 end in April, July and August 2026.
"""
from .labels import Label, Night
from .world import World, build_world

__all__ = ["Label", "Night", "World", "build_world"]
