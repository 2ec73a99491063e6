"""Groups of moves that stepped on the same nightly: the events `service/pipeline/events.py` explains.

Grouping (`group_moves`): every live move is grouped, whatever its metric, so each alert
belongs to exactly one platform group; a person reads "b200 stepped on run X" once, with the
latency, baseline and speedup moves of that night under it. Moves join the nightly that most
moves share (their first-bad run), within +-1 nightly (36 h) of it; no chaining, so a slow
drift of first-bad dates cannot glue a week into one group. Then one group per platform, plus
a parent across platforms when several platforms stepped that night.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Sequence

from service.records import Move

NIGHT_TOLERANCE = timedelta(hours=36)  # +-1 nightly (they are 24 h apart), never +-2


@dataclass(frozen=True)
class MoveGroup:
    moves: tuple[Move, ...]
    platform_short: str | None  # None: the cross-platform parent
    first_bad_run_id: str
    children: tuple["MoveGroup", ...] = ()
    part: str = ""  # which part of the platform nightly (see `group_moves`)

    @property
    def source(self) -> str:
        return self.moves[0].key.source if self.moves else ""

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(sorted({m.key.platform_short for m in self.moves}))

    @property
    def kernels(self) -> tuple[str, ...]:
        return tuple(sorted({m.key.kernel for m in self.moves}))


def _sort_key(m: Move) -> tuple:
    return (m.key.platform_short, m.key.kernel, m.key.metric, m.first_bad.date)


def _clusters(moves: list[Move]) -> list[tuple[str, list[Move]]]:
    """Moves of one source -> (anchor run_id, moves); the busiest nightly anchors first."""
    by_run: dict[str, list[Move]] = defaultdict(list)
    for m in moves:
        by_run[m.first_bad.run_id].append(m)
    date = {r: min(m.first_bad.date for m in ms) for r, ms in by_run.items()}
    order = sorted(by_run, key=lambda r: (-len(by_run[r]), date[r], r))
    taken: set[str] = set()
    out = []
    for anchor in order:
        if anchor in taken:
            continue
        taken.add(anchor)
        members = list(by_run[anchor])
        for r in order:
            if r not in taken and abs(date[r] - date[anchor]) <= NIGHT_TOLERANCE:
                taken.add(r)
                members.extend(by_run[r])
        out.append((anchor, members))
    out.sort(key=lambda c: (date[c[0]], c[0]))
    return out


def group_moves(moves: Sequence[Move], part: Callable[[Move], str] | None = None) -> list[MoveGroup]:
    """Platform groups (and a parent per multi-platform nightly, after its children).

    The list is flat: for each nightly, its platform groups sorted by platform, then the
    parent (whose `children` are those same platform groups). Retracted moves are left out.
    ``part`` splits a platform's nightly further: a fact scoped to some kernels (their inputs
    or timing changed in the window) explains those kernels' moves and says nothing of the
    others that stepped that night; kept together, the explained kernels would lend their cause
    to the rest, so each part is an event (and a group) of its own.
    """
    live = [m for m in moves if m.state != "retracted"]
    by_source: dict[str, list[Move]] = defaultdict(list)
    for m in live:
        by_source[m.key.source].append(m)
    out: list[MoveGroup] = []
    for source in sorted(by_source):
        for anchor, members in _clusters(by_source[source]):
            per_platform: dict[tuple[str, str], list[Move]] = defaultdict(list)
            for m in members:
                per_platform[(m.key.platform_short, part(m) if part else "")].append(m)
            children = tuple(
                MoveGroup(tuple(sorted(ms, key=_sort_key)), plat, _first_bad(ms, anchor), part=p)
                for (plat, p), ms in sorted(per_platform.items())
            )
            out.extend(children)
            if len({c.platform_short for c in children}) > 1:
                out.append(MoveGroup(tuple(sorted(members, key=_sort_key)), None, anchor, children))
    return out


def _first_bad(moves: list[Move], anchor: str) -> str:
    """The run most of these moves share (the anchor on a tie)."""
    counts = Counter(m.first_bad.run_id for m in moves)
    best = max(counts.values())
    return anchor if counts.get(anchor) == best else min(r for r, n in counts.items() if n == best)


def event_ended(moves: Sequence[Move]) -> bool:
    """Did the event's level come back: every move of it for the worse ended (and one did)?

    Why not every move: when a machine throttles, Helion and the baselines slow down unevenly,
    so a kernel's speedup can rise for the week while its latency rises too. A rise in a speedup
    that goes away is, on its own series, a gain and then a separate loss (`detect.core`), so it
    never reads as ended; the week is over when every move for the worse is."""
    return any(m.state == "ended" for m in moves) and all(
        m.state == "ended" for m in moves if m.direction == "regression")


def short_event_stands(moves: Sequence[Move], kernels: int, min_kernels: int, reverted: bool, hardware: bool,
                       timers: tuple[str, str] | None = None) -> bool:
    """Is a short excursion that came back an event with an end, or a bad stretch (noise)?

    Many kernels of the platform out together, with something that explains the end: a machine
    that came back (more than one night), or a commit that undid a change of the start window as
    the level came back. A revert is that explanation for as few as two kernels, when each of
    them left its level on both timers (``timers``: the headline and the latency metric): a stray
    night is one series, and a change merged and reverted three nights later on the two kernels
    it touched is not noise. One bad night is an event only beside its revert, and then only on
    many kernels: a machine having a bad night is what noise is."""
    one_night = all(m.state == "ended" and m.nights_after <= 1 for m in moves)
    if kernels >= min_kernels:
        return reverted or (hardware and not one_night)
    if not reverted or one_night or timers is None or kernels < 2:
        return False  # one kernel's few nights are its own scatter, whatever landed beside them
    by_kernel: dict[str, set[str]] = {}
    for m in moves:
        if m.state == "ended":
            by_kernel.setdefault(m.key.kernel, set()).add(m.key.metric)
    return len(by_kernel) == kernels and all(set(timers) <= ms for ms in by_kernel.values())
