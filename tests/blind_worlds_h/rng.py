"""Keyed random draws: every number in a world comes from a hash of (seed, what, where, when).

Why it exists: the worlds must be byte-identical under any PYTHONHASHSEED and must not depend
on how many nightlies are kept (`nights=N`). Drawing from a generator keyed by
(seed, series, date) instead of one sequential stream gives both: a value never depends on
what was drawn before it, only on its own key.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np


def key_int(*parts) -> int:
    h = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=8)
    return int.from_bytes(h.digest(), "little")


def gen(*parts) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(key_int(*parts)))


def uniform(lo: float, hi: float, *parts) -> float:
    return lo + (hi - lo) * (key_int(*parts) / 2.0 ** 64)


def chance(p: float, *parts) -> bool:
    return key_int(*parts) / 2.0 ** 64 < p


def normal(sd: float, *parts) -> float:
    """A N(0, sd) draw from two keyed uniforms (Box-Muller)."""
    u1 = max(key_int("u1", *parts) / 2.0 ** 64, 1e-12)
    u2 = key_int("u2", *parts) / 2.0 ** 64
    return sd * math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * u2)


def pick(seq, *parts):
    seq = list(seq)
    return seq[key_int(*parts) % len(seq)] if seq else None


def fake_sha(*parts) -> str:
    return hashlib.sha1("\x1f".join(str(p) for p in parts).encode()).hexdigest()
