"""The Slack outbox: intents to post/edit written before Slack is called, and the thread map.

Why an outbox: a crash between "Slack posted" and "we noted the ts" must not lead to a second
post. Every intent has a unique ``key`` (``post:<group>``, ``update:<group>:r<revision>``,
``digest:...``), so planning the same change twice inserts nothing, and delivery can tell a
message it may already have sent (``outcome_unknown``: attempted, and Slack never answered)
from a fresh one or one Slack refused.

States: ``pending`` (to deliver), ``sent`` (Slack has it; ``sent_at``), ``superseded`` (a newer
intent for the same group was delivered instead), ``logged`` (no Slack token: written to the
log), ``historic`` (a group too old to post one by one; counted in a digest), ``dead`` (Slack
refused the payload itself, e.g. ``invalid_blocks``: retrying cannot help).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.records import naive
from service.store.tables import OutboxMessage, SlackThread

PENDING, SENT, SUPERSEDED, LOGGED, HISTORIC, DEAD = (
    "pending", "sent", "superseded", "logged", "historic", "dead",
)
STATES = (PENDING, SENT, SUPERSEDED, LOGGED, HISTORIC, DEAD)


def post_key(group_id: int) -> str:
    return f"post:{group_id}"


def update_key(group_id: int, revision: int) -> str:
    return f"update:{group_id}:r{revision}"


def enqueue(
    session: Session,
    *,
    key: str,
    kind: str,
    payload: dict,
    now: datetime,
    group_id: int | None = None,
    revision: int = 1,
    state: str = PENDING,
) -> OutboxMessage | None:
    """Insert an intent unless its key exists; None when it was already there (idempotent)."""
    if by_key(session, key) is not None:
        return None
    row = OutboxMessage(
        group_id=group_id, kind=kind, revision=revision, key=key, payload=payload, state=state,
        attempts=0, created_at=naive(now),
    )
    session.add(row)
    session.flush()
    return row


def by_key(session: Session, key: str) -> OutboxMessage | None:
    return session.scalar(select(OutboxMessage).where(OutboxMessage.key == key))


def group_rows(session: Session, group_id: int) -> list[OutboxMessage]:
    return list(
        session.scalars(
            select(OutboxMessage).where(OutboxMessage.group_id == group_id).order_by(OutboxMessage.id)
        )
    )


def pending(session: Session) -> list[OutboxMessage]:
    return list(
        session.scalars(select(OutboxMessage).where(OutboxMessage.state == PENDING).order_by(OutboxMessage.id))
    )


def claim(session: Session, row_id: int) -> bool:
    """Count an attempt *before* calling Slack and mark its outcome unknown until Slack answers.

    Returns whether the previous attempt's outcome is unknown (it may have reached Slack): only
    then is the message looked for before it is posted again. A post Slack refused is simply
    posted again, whatever the state of the history lookup.
    """
    row = session.get(OutboxMessage, row_id)
    unsure = bool(row.outcome_unknown)
    row.attempts += 1
    row.outcome_unknown = True
    return unsure


def mark_sent(
    session: Session, row_id: int, *, now: datetime, channel: str | None = None, ts: str | None = None,
    shown_revision: int | None = None,
) -> None:
    """Mark delivered; for a group message also record (or move) its thread to ``ts``."""
    row = session.get(OutboxMessage, row_id)
    row.state = SENT
    row.sent_at = naive(now)
    row.last_error = None
    row.outcome_unknown = False
    if row.group_id is not None and ts is not None and channel is not None:
        record_thread(session, row.group_id, channel=channel, ts=ts,
                      revision=shown_revision or row.revision, now=now)


def mark_failed(session: Session, row_id: int, error: str, *, dead: bool = False,
                answered: bool = True) -> None:
    """``answered``: Slack replied with the error, so nothing was posted; False for a dropped
    connection or a timeout, after which the message may be in the channel."""
    row = session.get(OutboxMessage, row_id)
    row.last_error = error[:2000]
    row.outcome_unknown = not answered
    if dead:
        row.state = DEAD


def supersede(session: Session, row_ids: list[int], now: datetime, state: str = SUPERSEDED) -> None:
    for rid in row_ids:
        row = session.get(OutboxMessage, rid)
        if row is not None and row.state == PENDING:
            row.state = state
            row.sent_at = naive(now)


def thread_of(session: Session, group_id: int) -> SlackThread | None:
    return session.get(SlackThread, group_id)


def record_thread(session: Session, group_id: int, *, channel: str, ts: str, revision: int, now: datetime) -> None:
    thread = session.get(SlackThread, group_id)
    if thread is None:
        session.add(SlackThread(group_id=group_id, channel=channel, ts=ts, revision=revision,
                                posted_at=naive(now), updated_at=naive(now)))
    else:
        thread.channel, thread.ts = channel, ts
        thread.revision = max(thread.revision, revision)
        thread.updated_at = naive(now)
    session.flush()


def backlog(session: Session) -> dict[str, int]:
    """Rows per state (every state present, zeros included): for `/status` and `status`."""
    counts = Counter(dict(session.execute(
        select(OutboxMessage.state, func.count()).group_by(OutboxMessage.state)
    ).all()))
    return {s: int(counts.get(s, 0)) for s in STATES}
