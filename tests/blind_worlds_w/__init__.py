"""Blind set W: labeled evaluation worlds on the real Helion history (see README.md)."""
from .world import WINDOW_END, build_world

__all__ = ["WINDOW_END", "build_world"]
