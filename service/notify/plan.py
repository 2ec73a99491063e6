"""Write the Slack messages the store calls for to the outbox.

For each top-level group (a platform group, or a cross-platform parent) the pure `decide`
(decide.py, where the rules are) says post / adopt / digest / update / skip; this module builds
the `GroupView` when a decision needs it, renders it, and enqueues the rows (``post:<id>``,
``update:<id>:r<rev>``, one backfill digest per pass). Health groups are posted once and edited
when revised. Planning twice over the same store writes nothing the second time (unique keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.config import Settings
from service.domain import GroupKind, MoveState
from service.notify.render import render_daily_digest, render_group, render_history_digest
from service.notify.render_health import render_health
from service.notify.decide import Action, decide, posted_and_current, too_old
from service.notify.view import GroupView, group_view
from service.store.group_reads import (
    OutboxEntry, oldest_child_thread, outbox_by_group, top_groups, top_move_groups,
)
from service.store.health_reads import health_group_view, is_history_group
from service.store import outbox
from service.records import naive
from service.store.tables import AlertGroup, HealthAlert, Run


@dataclass
class PlanSummary:
    posts: int = 0
    updates: int = 0
    historic: int = 0
    digests: int = 0
    adopted: int = 0

    def line(self) -> str:
        return (f"notify plan: {self.posts} new posts, {self.updates} edits, {self.historic} historic "
                f"groups ({self.digests} digest), {self.adopted} adopted")


def _payload(view: GroupView) -> dict:
    msg = render_group(view)
    msg["group_id"] = view.id
    msg["revision"] = view.revision
    return msg


def _health_payload(session: Session, group: AlertGroup, settings: Settings) -> dict:
    msg = render_health(health_group_view(session, group), settings)
    msg["group_id"] = group.id
    msg["revision"] = group.revision
    return msg


def plan_health_group(session: Session, group: AlertGroup, settings: Settings, now: datetime,
                      summary: PlanSummary, rows: list[OutboxEntry], historic: list[tuple[int, int, int]]) -> None:
    """A nightly's health message: posted once (however old: silence is always news), edited
    whenever its revision grows (a finding added, recovered, or acted on). Outages found after
    the fact in the stored history are news only while recent: older ones go to the backfill
    digest, as old moves do."""
    if any(r.kind == "post" and r.state == outbox.HISTORIC for r in rows):
        return  # counted in a backfill digest: it has no message to edit
    if not rows and is_history_group(group) and too_old(
            session.get(Run, group.first_bad_run_pk).date, now, settings.notify.max_age_days):
        outbox.enqueue(session, key=outbox.post_key(group.id), kind="post", group_id=group.id,
                       revision=group.revision, payload={"historic": True}, now=now, state=outbox.HISTORIC)
        outages = session.scalar(select(func.count(HealthAlert.id)).where(HealthAlert.group_id == group.id))
        historic.append((group.id, 0, outages or 0))
        summary.historic += 1
    elif not rows:
        outbox.enqueue(session, key=outbox.post_key(group.id), kind="post", group_id=group.id,
                       revision=group.revision, payload=_health_payload(session, group, settings), now=now)
        summary.posts += 1
    elif group.revision > max(r.revision for r in rows):
        made = outbox.enqueue(session, key=outbox.update_key(group.id, group.revision), kind="update",
                              group_id=group.id, revision=group.revision,
                              payload=_health_payload(session, group, settings), now=now)
        summary.updates += made is not None


def plan_group(session: Session, group: AlertGroup, settings: Settings, now: datetime,
               summary: PlanSummary, historic: list[tuple[int, int, int]], rows: list[OutboxEntry]) -> None:
    """Carry out `decide` for one top-level group (the rules are there)."""
    if group.kind == GroupKind.HEALTH:
        plan_health_group(session, group, settings, now, summary, rows, historic)
        return
    if posted_and_current(group.revision, rows):
        return  # the common case: no view to build
    view = group_view(session, group, settings)
    thread = None if any(r.kind == "post" for r in rows) else oldest_child_thread(session, group.id)
    intent = decide(view, rows, now, max_age_days=settings.notify.max_age_days,
                    child_posted=thread is not None)
    if intent.action is Action.ADOPT:
        outbox.record_thread(session, group.id, channel=thread.channel, ts=thread.ts, revision=0, now=now)
        outbox.enqueue(session, key=outbox.post_key(group.id), kind="post", group_id=group.id,
                       revision=0, payload={"adopted": True}, now=now, state=outbox.SENT)
        outbox.enqueue(session, key=outbox.update_key(group.id, group.revision), kind="update",
                       group_id=group.id, revision=group.revision, payload=_payload(view), now=now)
        summary.adopted += 1
    elif intent.action is Action.DIGEST:
        outbox.enqueue(session, key=outbox.post_key(group.id), kind="post", group_id=group.id,
                       revision=group.revision, payload={"historic": True}, now=now,
                       state=outbox.HISTORIC)
        historic.append((group.id, len(view.alerts), 0))
        summary.historic += 1
    elif intent.action is Action.POST:
        outbox.enqueue(session, key=outbox.post_key(group.id), kind="post", group_id=group.id,
                       revision=group.revision, payload=_payload(view), now=now)
        summary.posts += 1
    elif intent.action is Action.UPDATE:
        made = outbox.enqueue(session, key=outbox.update_key(group.id, group.revision), kind="update",
                              group_id=group.id, revision=group.revision, payload=_payload(view), now=now)
        summary.updates += made is not None


def plan_notifications(session: Session, settings: Settings, now: datetime | None = None) -> PlanSummary:
    """Write the intents the store calls for; see the module docstring."""
    now = now or datetime.now(timezone.utc)
    summary = PlanSummary()
    historic: list[tuple[int, int, int]] = []
    tops = top_groups(session)
    by_group = outbox_by_group(session)
    for group in tops:
        plan_group(session, group, settings, now, summary, historic, by_group.get(group.id, []))
    if historic:
        ids = sorted(g for g, _, _ in historic)
        moves = sum(n for _, n, _ in historic)
        move_groups = sum(1 for _, n, _ in historic if n)
        outages = sum(o for _, _, o in historic)
        made = outbox.enqueue(
            session, key=f"digest:history:{ids[0]}-{ids[-1]}:{len(ids)}", kind="digest",
            payload=render_history_digest(moves, move_groups, settings, outages=outages), now=now,
        )
        summary.digests += made is not None
    session.flush()
    return summary


def plan_daily_digest(session: Session, settings: Settings, now: datetime | None = None) -> bool:
    """One digest of open groups per UTC day (key ``digest:daily:<date>``); True if written."""
    now = now or datetime.now(timezone.utc)
    rows = []
    for group in top_move_groups(session):
        if group.state == MoveState.RETRACTED:
            continue
        view = group_view(session, group, settings)
        if not view.postable:
            continue
        rows.append({"cause": view.cause, "age_days": max(0, (naive(now) - view.first_bad_date).days),
                     "platforms": list(view.platforms), "kernels": len(view.kernels)})
    made = outbox.enqueue(session, key=f"digest:daily:{naive(now):%Y-%m-%d}", kind="digest",
                          payload=render_daily_digest(rows, settings, now), now=now)
    return made is not None

