"""Groups of moves that stepped on the same nightly, and the cause of a group as a whole.

Grouping (`group_moves`): every live move is grouped, whatever its metric, so each alert
belongs to exactly one platform group; a person reads "b200 stepped on run X" once, with the
latency, baseline and speedup moves of that night under it. Moves join the nightly that most
moves share (their first-bad run), within +-1 nightly (36 h) of it; no chaining, so a slow
drift of first-bad dates cannot glue a week into one group. Then one group per platform, plus
a parent across platforms when several platforms stepped that night.

Voting (`classify_group`): only the headline metric (helion_speedup_geomean / geomean) of each
kernel votes, one vote per kernel, so a kernel with four moved metrics is not counted four
times; the other metrics are the tells (baselines moved, latency moved).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import Sequence

from service.classify.checks import OTHERS_STEPPED
from service.classify.metrics import COMPARATOR_SPEEDUPS, LATENCY
from service.classify.settings import ClassifySettings
from service.classify.verdict import ORDER  # the causes that vote, in tie order
from service.records import HEADLINE, Classification, Evidence, Move

NIGHT_TOLERANCE = timedelta(hours=36)  # +-1 nightly (they are 24 h apart), never +-2


@dataclass(frozen=True)
class MoveGroup:
    moves: tuple[Move, ...]
    platform_short: str | None  # None: the cross-platform parent
    first_bad_run_id: str
    children: tuple["MoveGroup", ...] = ()

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


def group_moves(moves: Sequence[Move]) -> list[MoveGroup]:
    """Platform groups (and a parent per multi-platform nightly, after its children).

    The list is flat: for each nightly, its platform groups sorted by platform, then the
    parent (whose `children` are those same platform groups). Retracted moves are left out.
    """
    live = [m for m in moves if m.state != "retracted"]
    by_source: dict[str, list[Move]] = defaultdict(list)
    for m in live:
        by_source[m.key.source].append(m)
    out: list[MoveGroup] = []
    for source in sorted(by_source):
        for anchor, members in _clusters(by_source[source]):
            per_platform: dict[str, list[Move]] = defaultdict(list)
            for m in members:
                per_platform[m.key.platform_short].append(m)
            children = tuple(
                MoveGroup(tuple(sorted(ms, key=_sort_key)), plat, _first_bad(ms, anchor))
                for plat, ms in sorted(per_platform.items())
            )
            out.extend(children)
            if len(children) > 1:
                out.append(MoveGroup(tuple(sorted(members, key=_sort_key)), None, anchor, children))
    return out


def _first_bad(moves: list[Move], anchor: str) -> str:
    """The run most of these moves share (the anchor on a tie)."""
    counts = Counter(m.first_bad.run_id for m in moves)
    best = max(counts.values())
    return anchor if counts.get(anchor) == best else min(r for r, n in counts.items() if n == best)


# --- group classification -------------------------------------------------------------------


def _verdicts(c: Classification) -> dict[str, Evidence]:
    return {e.check: e for e in c.evidence}


def _headline_votes(members: list[tuple[Move, Classification]]) -> dict[tuple[str, str], tuple[Move, Classification]]:
    """One (move, classification) per (platform, kernel): the headline metric when it moved,
    else the most confident of that kernel's moves."""
    best: dict[tuple[str, str], tuple[Move, Classification]] = {}
    for m, c in members:
        k = (m.key.platform_short, m.key.kernel)
        cur = best.get(k)
        rank = (m.key.metric in HEADLINE, c.confidence)
        if cur is None or rank > (cur[0].key.metric in HEADLINE, cur[1].confidence):
            best[k] = (m, c)
    return best


def classify_group(
    members: list[tuple[Move, Classification]], settings: ClassifySettings | None = None, *,
    run_id: str,
) -> Classification:
    """The cause of a group from its kernels' causes plus what only the group shows (breadth).

    ``run_id`` is the group's nightly as `group_moves` chose it (`MoveGroup.first_bad_run_id`),
    so the evidence names the same run the stored group and its Slack message do."""
    s = settings or ClassifySettings()
    members = [(m, c) for m, c in members if m.state != "retracted"]
    if not members:
        return Classification("noise", 0.0, (Evidence("members", "noise", "no live moves in the group"),), None,
                              "no live moves")
    votes = _headline_votes(members)
    platforms = sorted({p for p, _ in votes})
    where = platforms[0] if len(platforms) == 1 else f"{len(platforms)} platforms ({', '.join(platforms)})"
    tally = Counter(c.cause for _, c in votes.values())
    mass: dict[str, float] = defaultdict(float)
    conf: dict[str, list[float]] = defaultdict(list)
    for _, c in votes.values():
        mass[c.cause] += max(c.confidence, 0.05)
        conf[c.cause].append(c.confidence)
    counts = ", ".join(f"{n} {cause}" for cause, n in tally.most_common())
    n = len(votes)
    evidence = [Evidence("members", "neutral",
                         f"{n} kernel{'s' if n != 1 else ''} on {where} stepped on run {run_id} "
                         f"({len(members)} moves); their causes: {counts}")]

    live = {k: v for k, v in votes.items() if v[1].cause in ORDER}  # an unknown cause does not vote
    if not live:
        evidence[0] = Evidence("members", "noise", evidence[0].detail)
        return Classification("noise", round(min(conf["noise"], default=0.0), 3), tuple(evidence), None,
                              "every member is noise")

    # the platform-wide tell: many kernels, with their baselines (and latency) moving too
    tell_cause, tell_detail, tell_share = _platform_tell(members, votes, live, s)
    evidence.append(Evidence("group_tells", tell_cause, tell_detail))
    others = any(OTHERS_STEPPED in e.detail for _, c in members for e in c.evidence if e.check == "breadth")
    broad = Evidence("group_breadth", "neutral",
                     f"{len(platforms)} platform{'s' if len(platforms) != 1 else ''} in the group"
                     + ("; members saw other platforms step too" if others else ""))

    ranked = sorted((c for c in mass if c in ORDER), key=lambda c: (-mass[c], ORDER.index(c)))
    cause = ranked[0]
    share = mass[cause] / sum(mass[c] for c in ranked)
    confidence = share * sum(conf[cause]) / len(conf[cause])

    if len(platforms) == 1 and tell_cause == "hardware" and not others:
        cause, confidence = "hardware", max(confidence, 0.5 + 0.4 * tell_share)
        broad = Evidence("group_breadth", "hardware", f"only {platforms[0]} stepped; other platforms quiet")
    elif len(platforms) > 1:
        if cause == "hardware":
            alt = [c for c in ranked if c != "hardware"]
            if alt:
                cause = alt[0]
                confidence = mass[cause] / sum(mass[c] for c in ranked)
            else:
                confidence *= 0.5  # a fleet-wide environment change (image, driver, dependency)
        broad = Evidence("group_breadth", "neutral" if cause == "hardware" else cause,
                         f"{len(platforms)} platforms stepped on the same nightly: a shared change, not one machine")
    evidence.append(broad)
    evidence[0] = Evidence("members", cause, evidence[0].detail)
    return Classification(cause, round(min(1.0, confidence), 3), tuple(evidence), None,
                          "a group has no single speedup; see its members")


def _platform_tell(members, votes, live, s: ClassifySettings) -> tuple[str, str, float]:
    kernels = set(live)
    n = len(kernels)
    base, lat, wide = set(), set(), set()
    for m, c in members:
        k = (m.key.platform_short, m.key.kernel)
        if k not in kernels:
            continue
        if m.key.metric in COMPARATOR_SPEEDUPS:
            base.add(k)
        if m.key.metric == LATENCY:
            lat.add(k)
        ev = _verdicts(c)
        br = ev.get("breadth")
        if br is not None and br.verdict == "hardware":
            wide.add(k)  # this member saw most of its platform step, the other platforms quiet
        ho, ta = ev.get("helion_only"), ev.get("timer_agreement")
        if ho is not None and ho.verdict in ("method_change", "hardware"):
            base.add(k)
        if ta is not None and ta.verdict in ("real", "hardware"):
            lat.add(k)
    dashboard = any(m.key.source == "dashboard" for m, _ in members)
    fb, fl, fw = len(base) / n, len(lat) / n, len(wide) / n
    detail = f"baselines moved for {len(base)} of {n} kernels" + (
        f", latency for {len(lat)} of {n}" if dashboard else "") + (
        f"; {len(wide)} of {n} saw most of their platform step")
    # a few kernels moving with their baselines is what a shape or baseline change looks like
    # too: the tell needs the platform itself to have moved broadly (members' breadth check)
    ok = n >= s.group_min_kernels and fb >= s.group_tell_fraction and fw >= s.group_tell_fraction and (
        not dashboard or fl >= s.group_tell_fraction)
    if ok:
        share = (fb + fl) / 2 if dashboard else fb
        return "hardware", detail + ": the platform moved, not the kernels", share
    return "neutral", detail, 0.0
