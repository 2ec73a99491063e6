"""Classify moves as events: the footprint of one platform's moves on one nightly, explained by
the cause that accounts for every observation (`explain.py`, table in `config/causes.toml`),
the kind under it, and what each member inherits (`event.py`, with the honest speedup).

Pure functions over `service.records` data; the detect pass and `investigate` gather the inputs.
"""

from __future__ import annotations

from service.classify.groups import MoveGroup, group_moves
from service.classify.settings import ClassifySettings

__all__ = ["ClassifySettings", "MoveGroup", "group_moves"]
