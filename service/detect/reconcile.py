"""Keep a series' moves stable from one nightly to the next.

Each pass re-detects the whole series; `reconcile` says which fresh moves are the stored ones
(the first-bad may shift by a night as more data arrives) and which stored moves have
disappeared (they reverted: noise), so alerts are updated or retracted instead of duplicated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import timedelta

from service.detect.settings import DetectSettings
from service.records import Move, aware


def _gap(a: Move, b: Move) -> timedelta:
    return abs(aware(a.first_bad.date) - aware(b.first_bad.date))


def reconcile(previous: Sequence[Move], current: Sequence[Move], settings: DetectSettings) -> list[Move]:
    """Current moves (as detected) followed by retracted copies of stored moves now gone.

    A stored and a fresh move are the same step when they go the same direction and their
    first-bad nightlies are at most ``match_nights`` apart (half a day of slack for runs that
    start late). Pairs are taken closest first, live stored moves before retracted ones, each
    move at most once, so the result is deterministic and reconcile(x, x) == x.
    """
    tolerance = timedelta(days=settings.match_nights, hours=12)
    pairs = sorted(
        (p.state == "retracted", _gap(p, c), pi, ci)
        for pi, p in enumerate(previous)
        for ci, c in enumerate(current)
        if p.direction == c.direction and _gap(p, c) <= tolerance
    )
    used_p: set[int] = set()
    used_c: set[int] = set()
    for _, _, pi, ci in pairs:
        if pi not in used_p and ci not in used_c:
            used_p.add(pi)
            used_c.add(ci)
    out = list(current)
    out += [
        dataclasses.replace(p, state="retracted")
        for pi, p in enumerate(previous)
        if pi not in used_p and p.state != "retracted"
    ]
    return out
