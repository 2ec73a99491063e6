"""Blind evaluation set O (seeds 141, 142, 143): labeled benchmark-dashboard worlds on the real Helion
history. Do not read this package's code or print its labels if you work on the service."""
from .world import WINDOW_END, World, build_world

__all__ = ["WINDOW_END", "World", "build_world"]
