"""What the web page cache asks the store: has anything a page shows changed, and for which alerts.

Two reads, each one round trip, returning typed rows: `data_version` (a summary that moves with any
write a page can show) and `alert_fingerprints` (per alert, what a detect pass or on-call can edit
in place). `service/web/cache.py` compares them; the SQL lives here with the rest of the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.store.tables import Alert, AlertGroup, AlertHistory, IngestLog, Run


class DataVersion(NamedTuple):
    """Changes whenever anything a page shows can have changed. The first five parts move only
    with new rows (a nightly: every page may look different); the rest with edits in place."""

    alerts: int
    newest_alert: int | None
    groups: int
    newest_run: int | None
    newest_ingest: int | None
    alert_edited: datetime | None
    group_edited: datetime | None
    group_revisions: int | None  # membership moves, whatever the clock says
    newest_audit: int | None

    @property
    def structural(self) -> tuple:
        return tuple(self[:5])


class AlertFingerprint(NamedTuple):
    """What an alert page shows that can be edited in place. The audit trail's newest entry stands
    for the trail; the timestamp alone is not enough (replays and tests write with a given clock,
    and a group move does not touch it)."""

    group_id: int | None
    updated_at: datetime
    state: str
    status: str
    cause: str
    human_cause: str | None
    change_pct: float
    newest_audit: int | None


def data_version(session: Session) -> DataVersion:
    parts = (
        select(func.count(Alert.id)).scalar_subquery(),
        select(func.max(Alert.id)).scalar_subquery(),
        select(func.count(AlertGroup.id)).scalar_subquery(),
        select(func.max(Run.id)).scalar_subquery(),
        select(func.max(IngestLog.id)).scalar_subquery(),
        select(func.max(Alert.updated_at)).scalar_subquery(),
        select(func.max(AlertGroup.updated_at)).scalar_subquery(),
        select(func.sum(AlertGroup.revision)).scalar_subquery(),
        select(func.max(AlertHistory.id)).scalar_subquery(),
    )
    return DataVersion(*session.execute(select(*parts)).one())


def alert_fingerprints(session: Session) -> dict[int, AlertFingerprint]:
    newest = dict(session.execute(
        select(AlertHistory.alert_id, func.max(AlertHistory.id)).group_by(AlertHistory.alert_id)
    ).all())
    rows = session.execute(select(Alert.id, Alert.group_id, Alert.updated_at, Alert.state, Alert.status,
                                  Alert.cause, Alert.human_cause, Alert.change_pct))
    return {aid: AlertFingerprint(*rest, newest.get(aid)) for aid, *rest in rows}
