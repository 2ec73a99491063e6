"""Which stretch of real history a seed covers, and when each nightly ran on which sha.

Why: the three evaluation seeds must see different real commits (windows ending in April, in
July and at the end of the bundle), and every nightly must sit on the sha main had at its cron
time, so a commit window (last good, first bad] is the real list of commits a triager reads.
Run ids are GitHub-like 11-digit numbers that grow with time.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from .rand import rng

T0 = datetime(2025, 11, 1, tzinfo=timezone.utc)
BUNDLE_END = datetime(2026, 8, 22, tzinfo=timezone.utc)


def run_id_at(t: datetime, salt: int) -> str:
    return str(19_000_000_000 + int((t - T0).total_seconds() * 290) + salt % 997)


@dataclass(frozen=True)
class Window:
    start: datetime  # first nightly's day
    end: datetime  # last nightly's day
    days: int


def choose_window(seed: int) -> Window:
    """Seeds ≡ 0, 1, 2 (mod 3) end in late April, mid/late July, and on the bundle's last day."""
    r = rng(seed, "window")
    slot = seed % 3
    if slot == 0:
        end = datetime(2026, 4, 21, tzinfo=timezone.utc) + timedelta(days=int(r.integers(0, 9)))
    elif slot == 1:
        end = datetime(2026, 7, 13, tzinfo=timezone.utc) + timedelta(days=int(r.integers(0, 13)))
    else:
        end = BUNDLE_END
    days = int(r.integers(120, 181))
    return Window(end - timedelta(days=days - 1), end, days)


def nightly_times(seed: int, w: Window) -> list[tuple[datetime, datetime]]:
    """(dashboard cron run time, pretuned cron run time) for each day: the 08:00 and 10:00 UTC
    crons fire a few minutes late, as GitHub's do."""
    out = []
    for d in range(w.days):
        day = w.start + timedelta(days=d)
        r = rng(seed, "cron", d)
        t1 = day.replace(hour=8, minute=int(r.integers(2, 38)), second=int(r.integers(0, 60)))
        t2 = day.replace(hour=10, minute=int(r.integers(1, 30)), second=int(r.integers(0, 60)))
        out.append((t1, t2))
    return out
