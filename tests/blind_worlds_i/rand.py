"""Deterministic random streams keyed by name, independent of PYTHONHASHSEED and of call order.

Why: a world must give identical bytes on every run, and building it with fewer nights must not
change the early nights; a stream per (seed, purpose, night, series, ...) key, hashed with
blake2b rather than Python's salted ``hash``, gives both.
"""
from __future__ import annotations

import hashlib

import numpy as np


def key(*parts) -> int:
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little")


def rng(*parts) -> np.random.Generator:
    return np.random.default_rng(key(*parts))


def unit(*parts) -> float:
    """A uniform number in [0, 1) for one key (cheaper than a generator)."""
    return key(*parts) / 2.0 ** 64
