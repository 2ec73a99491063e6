"""Set K: blind labeled worlds on the real Helion history (see README.md)."""
from .world import WINDOW_END, KWorld, build_world  # noqa: F401
