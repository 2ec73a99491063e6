"""One group as on-call reads it: a frozen `GroupView`, read from the store once and shown by
every surface (the Slack message, the web group page, `alerts --groups` and `/api/groups/{id}`).

Everything a renderer needs is decided here (the effective cause, one row per kernel with its
speedup and latency side by side, the commit to blame with its author, the GitHub links, the
headline and the next step in words), so the numbers cannot differ between Slack and the page.
Rendering (render.py, the group template) and deciding what to send (decide.py) work on this
value only: they are testable with a hand-made view and never touch the database. The words
(headline, next steps) are pure functions of the view's fields, in `service/notify/words.py`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from service.domain import ACTIVE_STATUSES, HEADLINE, LATENCY, AlertStatus, Cause, Direction, MoveState, group_cause

_SHA = re.compile(r"[0-9a-f]{40}")

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from service.config import Settings
    from service.notify.links import Links
    from service.store.run_reads import RunStamp
    from service.store.tables import AlertGroup

CLOSED = frozenset(AlertStatus) - ACTIVE_STATUSES  # resolved or dismissed: nobody's work any more
# audit actions a person takes that the group page and Slack show
HUMAN_ACTIONS = ("acknowledged", "assigned", "resolved", "dismissed", "reopened", "reclassified", "note")


@dataclass(frozen=True)
class RunAt:
    """A nightly: GitHub Actions run id (the dashboard's ``run_id``), commit and date."""

    run_id: str
    sha: str
    full_sha: str
    date: str  # ISO-8601 UTC with Z
    actions_url: str | None = None  # the nightly's GitHub Actions run, when the id is one


@dataclass(frozen=True)
class CommitView:
    """The commit a person should look at: the culprit (real) or the change commit."""

    role: str  # "culprit" | "change"
    sha: str
    full_sha: str
    subject: str
    author: str | None
    url: str | None


@dataclass(frozen=True)
class KernelRow:
    """One kernel of the group: its speedup and latency moves side by side."""

    platform_short: str
    kernel: str
    lead_alert_id: int  # the alert standing for the kernel (headline metric first)
    alert_ids: tuple[int, ...]
    speedup_pct: float | None  # the headline metric's change
    latency_pct: float | None
    other: tuple[tuple[str, float], ...]  # (metric words, change %) of the other moved metrics
    direction: str  # of the lead alert (a Direction)
    status: str  # the least settled member status (open < acknowledged < resolved/dismissed)
    true_speedup: float | None
    true_speedup_reason: str

    @property
    def main_pct(self) -> float | None:
        """The number that stands for this kernel (speedup, else latency, else another)."""
        if self.speedup_pct is not None:
            return self.speedup_pct
        if self.latency_pct is not None:
            return self.latency_pct
        return self.other[0][1] if self.other else None


@dataclass(frozen=True)
class AuditEntry:
    """A person's action, once per group action (the same click recorded on every member)."""

    at: str | None
    by: str
    action: str
    new: str | None
    note: str | None
    alert_ids: tuple[int, ...]


@dataclass(frozen=True)
class GroupView:
    id: int
    parent_id: int | None
    source: str
    platform_short: str | None
    platforms: tuple[str, ...]
    cause: str  # the effective cause (a person's verdict beats the machine's)
    cause_by_human: bool
    machine_cause: str
    kind: str  # the mechanism under the cause ("" when unknown)
    direction: str | None  # regression | improvement, None when members disagree
    confidence: float
    state: str  # provisional | confirmed | ended | retracted
    revision: int
    first_bad: RunAt
    first_bad_date: datetime  # naive UTC, for age decisions
    last_good: RunAt | None
    end: RunAt | None  # an ended move's first nightly back at the old level
    kernels: tuple[KernelRow, ...]  # headline moves first, then by size
    commit: CommitView | None
    compare_url: str | None  # GitHub compare last_good...first_bad
    group_url: str  # this group's page (what Slack links to)
    evidence: tuple[str, ...]  # sentences, deduplicated (group first, then the lead alert)
    statuses: tuple[tuple[str, int], ...]
    all_closed: bool
    assignee: str | None
    audit: tuple[AuditEntry, ...]  # oldest first
    child_group_ids: tuple[int, ...] = ()
    alerts: tuple[dict, ...] = field(default=(), compare=False)  # member alerts as JSON (live first)

    @property
    def alert_ids(self) -> tuple[int, ...]:
        return tuple(a["id"] for a in self.alerts)

    @property
    def status(self) -> str:
        return group_status([s for s, _ in self.statuses])

    @property
    def withdrawn(self) -> bool:
        """Retracted by the detector or called noise (by it or on-call): it reads "Retracted",
        with no commit, evidence or work to show."""
        return self.state == MoveState.RETRACTED or self.cause == Cause.NOISE

    @property
    def revert(self) -> str | None:
        """The commit that undid the change, when the level came back after one (the members'
        "episode" evidence names it; `culprit.reverts`): the end's reason, said beside its date."""
        for a in self.alerts:
            for e in a.get("evidence") or ():
                sha = (e.get("facts") or {}).get("revert") if e.get("check") == "episode" else None
                if isinstance(sha, str) and _SHA.fullmatch(sha):
                    return sha
        return None

    @property
    def postable(self) -> bool:
        """Worth a Slack message: something moved, it is not noise, and someone still has work."""
        return bool(self.alerts) and not self.withdrawn and not self.all_closed

    def to_json(self) -> dict[str, Any]:
        """The view as scripts see it (`alerts --groups --format json`, `/api/groups/{id}`)."""
        from service.notify import words

        out = asdict(self)
        out.pop("first_bad_date")
        out["platforms"] = list(self.platforms)
        out["statuses"] = dict(self.statuses)
        out["alerts"] = list(self.alerts)
        out["alert_ids"] = list(self.alert_ids)
        out["child_group_ids"] = list(self.child_group_ids)
        out["headline"] = words.headline(self)
        out["next_steps"] = list(words.next_steps(self))
        for row, data in zip(self.kernels, out["kernels"]):
            data["other"] = [{"metric": m, "change_pct": p} for m, p in row.other]
            data["alert_ids"] = list(row.alert_ids)
        for entry in out["audit"]:
            entry["alert_ids"] = list(entry["alert_ids"])
        return out


# --- pure helpers (hand-made alert dicts in tests) ----------------------------------------


def group_status(statuses) -> str:
    """Open while any member is open; then acknowledged; dismissed only when all are."""
    s = set(statuses)
    if not s or AlertStatus.OPEN in s:
        return AlertStatus.OPEN.value
    if AlertStatus.ACKNOWLEDGED in s:
        return AlertStatus.ACKNOWLEDGED.value
    if s == {AlertStatus.DISMISSED}:
        return AlertStatus.DISMISSED.value
    return AlertStatus.RESOLVED.value


_RANK = {AlertStatus.OPEN.value: 0, AlertStatus.ACKNOWLEDGED.value: 1}  # the rest (settled): 2


def _status_rank(status: str) -> int:
    return _RANK.get(status, 2)


def kernel_rows(alerts: list[dict], metric_words) -> tuple[KernelRow, ...]:
    """Member alerts folded into one row per (platform, kernel), biggest headline move first."""
    by_kernel: dict[tuple[str, str], list[dict]] = {}
    for a in alerts:
        by_kernel.setdefault((a["platform_short"], a["kernel"]), []).append(a)
    rows = []
    for (platform, kernel), mine in by_kernel.items():
        mine.sort(key=lambda a: (a["metric"] not in HEADLINE, a["metric"] != LATENCY, -abs(a["change_pct"] or 0)))
        lead = mine[0]
        speed = next((a["change_pct"] for a in mine if a["metric"] in HEADLINE), None)
        lat = next((a["change_pct"] for a in mine if a["metric"] == LATENCY), None)
        other = tuple((metric_words(a["metric"]), a["change_pct"]) for a in mine
                      if a["metric"] not in HEADLINE and a["metric"] != LATENCY)
        honest = next((a for a in mine if a.get("true_speedup") is not None), None)
        rows.append(KernelRow(
            platform, kernel, lead["id"], tuple(a["id"] for a in mine), speed, lat, other,
            lead.get("direction") or Direction.REGRESSION.value,
            min((a["status"] for a in mine), key=_status_rank),
            honest["true_speedup"] if honest else None,
            (honest.get("true_speedup_reason") or "") if honest else "",
        ))
    rows.sort(key=lambda r: (r.speedup_pct is None, -abs(r.main_pct or 0.0), r.platform_short, r.kernel))
    return tuple(rows)


def audit_entries(alerts: list[dict]) -> tuple[AuditEntry, ...]:
    """People's actions over the members; one group action (same time, person, action, note)
    recorded on every member is one entry naming all of them."""
    merged: dict[tuple, list[int]] = {}
    for a in alerts:
        for h in a.get("history") or ():
            if h.get("by") == "benchwatch" or h.get("action") not in HUMAN_ACTIONS:
                continue
            key = (h.get("at"), h["by"], h["action"], h.get("new"), h.get("note"))
            merged.setdefault(key, []).append(a["id"])
    entries = [AuditEntry(at, by, action, new, note, tuple(ids))
               for (at, by, action, new, note), ids in merged.items()]
    entries.sort(key=lambda e: (e.at or "", min(e.alert_ids)))
    return tuple(entries)


def most_common_commit(alerts: list[dict], field_name: str) -> dict | None:
    seen: dict[str, tuple[int, dict]] = {}
    for a in alerts:
        c = a.get(field_name)
        if c and c.get("full_sha"):
            n, _ = seen.get(c["full_sha"], (0, c))
            seen[c["full_sha"]] = (n + 1, c)
    if not seen:
        return None
    return max(seen.values(), key=lambda t: t[0])[1]


# --- the store read -------------------------------------------------------------------------


def member_alerts(session: Session, group: AlertGroup, children: tuple[int, ...] | None = None):
    """The group's alerts and its child groups' (a cross-platform parent holds none itself)."""
    from service.store.alert_reads import load_alerts
    from service.store.group_reads import child_group_ids
    from service.store.tables import Alert

    if children is None:
        children = child_group_ids(session, group.id)
    return load_alerts(session, Alert.group_id.in_((group.id, *children)))


def group_view(session: Session, group: AlertGroup, settings: Settings | None = None) -> GroupView:
    """Read one move group (a cross-platform parent shows its platforms' alerts)."""
    from service.config import Settings
    from service.notify.authors import author_of
    from service.notify.links import Links
    from service.notify.words import metric_words
    from service.store.alert_reads import alerts_json, human_decisions
    from service.store.group_reads import child_group_ids
    from service.store.run_reads import runs_by_pk

    settings = settings or Settings()
    links = Links(settings.helion.github_url)
    children = child_group_ids(session, group.id)
    alerts = alerts_json(session, member_alerts(session, group, children))
    live = [a for a in alerts if a["state"] != MoveState.RETRACTED] or alerts
    live.sort(key=lambda a: (a["metric"] not in HEADLINE, -abs(a["change_pct"] or 0.0)))
    cause, by_human = group_cause(group.cause, alerts, human_decisions(session, [a["id"] for a in alerts]))
    runs = runs_by_pk(session, (group.first_bad_run_pk, group.end_run_pk))
    run, end = runs[group.first_bad_run_pk], runs.get(group.end_run_pk) if group.end_run_pk else None
    lead = live[0] if live else None

    commit = None
    pick = (("culprit", "culprit"),) if cause == Cause.REAL else (("change_commit", "change"),) \
        if cause in (Cause.METHOD_CHANGE, Cause.HARDWARE) else ()
    for field_name, role in pick:
        c = most_common_commit(live, field_name)
        if c:
            commit = CommitView(role, c["sha"], c["full_sha"], c.get("subject") or "",
                                author_of(settings.helion.repo, c["full_sha"]), links.commit(c["full_sha"]))
    last_good = None
    if lead is not None:
        lg = lead["last_good"]
        last_good = RunAt(lg["run_id"], lg["sha"], lg["full_sha"], lg["date"], links.run(lg["run_id"]))
    dirs = {a.get("direction") for a in live}
    assigned = [e for e in audit_entries(alerts) if e.action == "assigned"]
    return GroupView(
        id=group.id,
        parent_id=group.parent_id,
        source=group.source,
        platform_short=group.platform_short,
        platforms=tuple(sorted({a["platform_short"] for a in live})),
        cause=cause,
        cause_by_human=by_human,
        machine_cause=group.cause,
        kind=group.cause_kind or "",
        direction=dirs.pop() if len(dirs) == 1 else None,
        confidence=float(group.confidence),
        state=group.state,
        revision=group.revision,
        first_bad=_run_at(run, links),
        first_bad_date=run.date,
        last_good=last_good,
        end=_run_at(end, links) if end else None,
        kernels=kernel_rows(live, metric_words),
        commit=commit,
        compare_url=links.compare(last_good.full_sha, lead["first_bad"]["full_sha"]) if lead else None,
        group_url=f"{settings.web.base_url.rstrip('/')}/groups/{group.id}",
        evidence=_sentences(list(group.evidence or []) + list(lead["evidence"] if lead else [])),
        statuses=tuple(sorted(Counter(a["status"] for a in alerts).items())),
        all_closed=bool(alerts) and all(a["status"] in CLOSED for a in alerts),
        assignee=assigned[-1].new if assigned else None,
        audit=audit_entries(alerts),
        child_group_ids=children,
        alerts=tuple(live),
    )


def list_group_views(session: Session, settings: Settings | None = None, *,
                     status: str | None = AlertStatus.OPEN.value, platform: str | None = None,
                     cause: str | None = None, source: str | None = None) -> list[GroupView]:
    """Top-level move groups, newest first-bad first (`alerts --groups`): filtered on the
    group's status (as the queue reads it), platform, effective cause and source."""
    from service.store.group_reads import top_move_groups

    out = []
    for group in top_move_groups(session, source):
        view = group_view(session, group, settings)
        if status not in (None, "all") and view.status != status:
            continue
        if platform is not None and platform not in view.platforms:
            continue
        if cause is not None and view.cause != cause:
            continue
        out.append(view)
    return out


def _run_at(run: RunStamp, links: Links) -> RunAt:
    from service.store.alert_reads import iso

    return RunAt(run.run_id, run.full_sha[:8], run.full_sha, iso(run.date) or "", links.run(run.run_id))


def _sentences(evidence: list[dict]) -> tuple[str, ...]:
    """The sentences people read; the internal check names stay in the JSON of each alert."""
    out: list[str] = []
    for e in evidence:
        d = str(e.get("detail") or "").strip()
        if d and d not in out:
            out.append(d)
    return tuple(out)
