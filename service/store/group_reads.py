"""Alert groups as notify walks them: the top-level groups, a group's children, and the Slack
message state of each (its outbox rows, a child's thread a parent can adopt).

Groups come back as ORM rows because every caller hands them on to a store reader that reads
the whole group (`notify.view.group_view`, `health_reads.health_group_view`); everything else is
a typed row.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.domain import GroupKind
from service.store.tables import AlertGroup, OutboxMessage, Run, SlackThread


class OutboxEntry(NamedTuple):
    """What deciding a group's next message reads of one of its outbox rows."""

    id: int
    kind: str  # post | update
    state: str
    revision: int


class PostedThread(NamedTuple):
    group_id: int
    channel: str
    ts: str


def child_group_ids(session: Session, group_id: int) -> tuple[int, ...]:
    """The platform groups under a cross-platform parent, in id order (none for a platform group)."""
    return tuple(session.scalars(
        select(AlertGroup.id).where(AlertGroup.parent_id == group_id).order_by(AlertGroup.id)
    ))


def top_groups(session: Session) -> list[AlertGroup]:
    """Every group with no parent (move and health groups alike), in id order."""
    return list(session.scalars(
        select(AlertGroup).where(AlertGroup.parent_id.is_(None)).order_by(AlertGroup.id)
    ))


def top_move_groups(session: Session, source: str | None = None) -> list[AlertGroup]:
    """Move groups with no parent, newest first-bad nightly first."""
    q = (select(AlertGroup).join(Run, Run.id == AlertGroup.first_bad_run_pk)
         .where(AlertGroup.parent_id.is_(None), AlertGroup.kind == GroupKind.MOVE)
         .order_by(Run.date.desc(), AlertGroup.id.desc()))
    if source is not None:
        q = q.where(AlertGroup.source == source)
    return list(session.scalars(q))


def outbox_by_group(session: Session) -> dict[int, list[OutboxEntry]]:
    """Every group's outbox rows, oldest first."""
    out: dict[int, list[OutboxEntry]] = defaultdict(list)
    for group_id, *rest in session.execute(
        select(OutboxMessage.group_id, OutboxMessage.id, OutboxMessage.kind, OutboxMessage.state,
               OutboxMessage.revision)
        .where(OutboxMessage.group_id.is_not(None)).order_by(OutboxMessage.id)
    ):
        out[group_id].append(OutboxEntry(*rest))
    return dict(out)


def oldest_child_thread(session: Session, group_id: int) -> PostedThread | None:
    """The first Slack message of a platform group under this cross-platform parent."""
    row = session.execute(
        select(SlackThread.group_id, SlackThread.channel, SlackThread.ts)
        .join(AlertGroup, AlertGroup.id == SlackThread.group_id)
        .where(AlertGroup.parent_id == group_id)
        .order_by(SlackThread.posted_at, SlackThread.group_id)
        .limit(1)
    ).first()
    return PostedThread(*row) if row is not None else None
