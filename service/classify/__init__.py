"""Classify moves: evidence checks, the cause of a move and of a group, and the honest speedup.

Pure functions over `service.records` data plus a `MoveContext` the caller gathers; see
`verdict.py` for how the six checks are weighed and `truth.py` for the true-speedup rules.
"""

from __future__ import annotations

from service.classify.context import MoveContext
from service.classify.groups import MoveGroup, classify_group, group_moves
from service.classify.settings import ClassifySettings
from service.classify.verdict import classify_move

__all__ = ["ClassifySettings", "MoveContext", "MoveGroup", "classify_group", "classify_move", "group_moves"]
