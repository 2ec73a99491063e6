"""The queue's read model: one row per top-level alert group (or per alert with no group).

Built from the narrow reads of store/queue_reads.py and cached until the data changes (a one-row
"version" query: counts and newest ids/timestamps of alerts, groups and audit entries), so 20 on-call
browsers refreshing the queue cost a few milliseconds each; filtering and paging then run
over the cached rows in memory.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from service.domain import (
    ACTIVE_STATUSES, CAUSES, HEADLINE, SOURCES, STATUSES, Cause, Direction, GroupKind, MoveState,
    badge_label, effective_cause, group_cause,
)
from service.errors import BenchwatchError
from service.notify.view import group_status
from service.store.alert_reads import check_choice, human_decisions
from service.store.queue_reads import queue_alerts, queue_findings, queue_groups
from service.store.run_reads import runs_by_pk

# "active": open or acknowledged (the default view); "all": every status
STATUS_FILTERS = ("active", *STATUSES, "all")
# the words a row's badge can say besides a cause, as plain strings (a row's label is read thousands
# of times per page; an enum member lookup costs several times a plain name's)
HEALTH = GroupKind.HEALTH.value  # a nightly's health group: its label where a move's cause would be
IMPROVEMENT, RETRACTED = Direction.IMPROVEMENT.value, MoveState.RETRACTED.value
_REAL, _NOISE = Cause.REAL.value, Cause.NOISE.value
# what the queue's cause filter offers: the causes, real improvements apart from real regressions
# (nothing to fix), and health findings. A retracted move reads "Retracted" and sits under noise.
QUEUE_CAUSES = (*CAUSES, IMPROVEMENT, HEALTH)
# not on-call work: hidden from the default (active) view, shown under their filter or status=all
NOT_WORK = (IMPROVEMENT, RETRACTED)


@dataclass(frozen=True)
class Member:
    alert_id: int
    kernel: str
    metric: str
    platform_short: str
    change_pct: float
    status: str
    cause: str  # effective: human verdict when there is one
    direction: str = Direction.REGRESSION.value


@dataclass(frozen=True)
class QueueRow:
    group_id: int | None  # None: an alert that no group holds (shown on its own)
    source: str
    platform: str | None  # None: a cross-platform group
    platforms: tuple[str, ...]
    cause: str
    machine_cause: str
    reclassified: bool
    state: str
    status: str
    first_bad_date: datetime | None
    first_bad_sha: str
    created_at: datetime
    members: tuple[Member, ...] = field(default_factory=tuple)
    shown: tuple[Member, ...] = field(default_factory=tuple)  # one per kernel, largest move first
    kind: str = ""  # the mechanism under the machine's cause

    @property
    def label(self) -> str:
        """What the row's badge says, as Slack does: "retracted" once the move is withdrawn,
        "improvement" for a real move for the better, else the effective cause."""
        better = bool(self.members) and all(m.direction == IMPROVEMENT for m in self.members)
        return badge_label(self.state, self.cause, IMPROVEMENT if better else None)

    @property
    def filter_cause(self) -> str:
        label = self.label
        return _NOISE if label == RETRACTED else label

    @property
    def link(self) -> str:
        if self.group_id is not None:
            return f"/groups/{self.group_id}"
        return f"/alerts/{self.members[0].alert_id}"



def _shown(members: tuple[Member, ...]) -> tuple[Member, ...]:
    """One member per kernel, largest first: its headline speedup move when it has one (what
    people compare across kernels), else its largest move."""
    best: dict[tuple[str, str], Member] = {}

    def rank(m: Member) -> tuple[bool, float]:
        return (m.metric in HEADLINE, abs(m.change_pct))

    for m in members:
        k = (m.platform_short, m.kernel)
        if k not in best or rank(m) > rank(best[k]):
            best[k] = m
    return tuple(sorted(best.values(), key=lambda m: -abs(m.change_pct)))


@dataclass(frozen=True)
class QueuePage:
    rows: tuple[QueueRow, ...]
    total: int
    page: int
    pages: int
    cause_counts: dict[str, int]
    platforms: tuple[str, ...]
    hidden: int = 0  # improvements and retracted moves left out of the default view


def build_rows(session: Session) -> list[QueueRow]:
    """Every top-level row, newest first-bad first."""
    alerts = queue_alerts(session)
    groups = {g.id: g for g in queue_groups(session)}
    health: dict[int, list[Member]] = defaultdict(list)
    for h in queue_findings(session):
        health[h.group_id].append(Member(h.id, h.kernel or "-", h.kind, h.platform_short or "-", 0.0,
                                         h.status, HEALTH, HEALTH))
    runs = {pk: (r.date, r.full_sha) for pk, r in runs_by_pk(
        session, [a.first_bad_run_pk for a in alerts] + [g.first_bad_run_pk for g in groups.values()]).items()}

    def top(gid: int) -> int:
        seen = set()
        while groups[gid].parent_id is not None and groups[gid].parent_id in groups and gid not in seen:
            seen.add(gid)
            gid = groups[gid].parent_id
        return gid

    decided = human_decisions(session) if any(a.human_cause for a in alerts) else {}
    by_group: dict[int, list] = defaultdict(list)
    rows: list[QueueRow] = []
    for a in alerts:
        member = Member(a.id, a.kernel, a.metric, a.platform_short, float(a.change_pct), a.status,
                        effective_cause(a.cause, a.human_cause), a.direction)
        if a.group_id is not None and a.group_id in groups:
            by_group[top(a.group_id)].append((a, member))
            continue
        date, full_sha = runs.get(a.first_bad_run_pk, (None, ""))
        rows.append(QueueRow(
            None, a.source, a.platform_short, (a.platform_short,), member.cause, a.cause,
            a.human_cause is not None, a.state, a.status, date, full_sha[:8], a.created_at, (member,),
            (member,), a.cause_kind or "",
        ))
    for gid, g in groups.items():
        if g.parent_id is not None and g.parent_id in groups:
            continue
        if g.kind == GroupKind.HEALTH:
            members = tuple(health.get(gid, ()))
            date, full_sha = runs.get(g.first_bad_run_pk, (None, ""))
            plats = tuple(sorted({m.platform_short for m in members if m.platform_short != "-"}))
            rows.append(QueueRow(gid, g.source, None, plats, HEALTH, HEALTH, False, g.state,
                                 group_status([m.status for m in members]), date, full_sha[:8],
                                 g.created_at, members, members))
            continue
        pairs = by_group.get(gid, [])
        members = tuple(sorted((m for _, m in pairs), key=lambda m: m.alert_id))
        cause, _ = group_cause(g.cause, [{"id": a.id, "human_cause": a.human_cause}
                                             for a, _ in sorted(pairs, key=lambda p: p[0].id)], decided)
        date, full_sha = runs.get(g.first_bad_run_pk, (None, ""))
        plats = tuple(sorted({m.platform_short for m in members} | ({g.platform_short} if g.platform_short else set())))
        rows.append(QueueRow(
            gid, g.source, g.platform_short, plats, cause, g.cause, cause != g.cause, g.state,
            group_status([m.status for m in members]), date, full_sha[:8], g.created_at, members,
            _shown(members), g.cause_kind or "",
        ))
    floor = datetime.min
    rows.sort(key=lambda r: (r.first_bad_date or floor, r.created_at or floor, r.group_id or 0), reverse=True)
    return rows


class QueueCache:
    """The rows of the last build, reused while the data version is unchanged."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: tuple | None = None
        self._rows: list[QueueRow] = []

    def rows(self, version: tuple, session_factory) -> list[QueueRow]:
        with self._lock:
            if version == self._version:
                return self._rows
        with session_factory() as session:
            rows = build_rows(session)
        with self._lock:
            self._version, self._rows = version, rows
        return rows


def _status_ok(row: QueueRow, status: str) -> bool:
    if status == "all":
        return True
    if status == "active":
        return row.status in ACTIVE_STATUSES
    return row.status == status


def select_page(
    rows: list[QueueRow],
    *,
    status: str = "active",
    cause: str | None = None,
    platform: str | None = None,
    source: str | None = None,
    page: int = 1,
    page_size: int = 50,
) -> QueuePage:
    """Filter + paginate; per-cause counts ignore the cause filter (they are its menu)."""
    check_choice("status", status, STATUS_FILTERS)
    check_choice("cause", cause, QUEUE_CAUSES)
    check_choice("source", source, SOURCES)
    if page < 1:
        raise BenchwatchError("page must be a positive number")
    platforms = tuple(sorted({p for r in rows for p in r.platforms}))
    if platform is not None and len(platform) > 64:
        raise BenchwatchError("platform name too long")
    base = [
        r for r in rows
        if _status_ok(r, status)
        and (platform is None or platform in r.platforms)
        and (source is None or r.source == source)
    ]
    counts = Counter(r.filter_cause for r in base)
    if cause is not None:
        chosen = [r for r in base if r.filter_cause == cause]
    elif status == "active":  # the default view: the work
        chosen = [r for r in base if r.label not in NOT_WORK]
    else:
        chosen = base
    pages = max(1, -(-len(chosen) // page_size))
    start = (page - 1) * page_size
    return QueuePage(
        tuple(chosen[start : start + page_size]), len(chosen), page, pages,
        {c: counts.get(c, 0) for c in QUEUE_CAUSES}, platforms,
        len(base) - len(chosen) if cause is None else 0,  # what the default view left out
    )
