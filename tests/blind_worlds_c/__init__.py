"""Third blind evaluation set for benchwatch (see README.md in this folder)."""
from .build import build_world, World  # noqa: F401
