"""Blind evaluation set P (seeds 151, 152, 153). Do not read this package's code or print its labels
if you work on the service. See README.md."""
from .world import WINDOW_END, World, build_world

__all__ = ["WINDOW_END", "World", "build_world"]
