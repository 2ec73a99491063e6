"""What the on-call queue is built from: three narrow reads of every alert (with its series),
every group and every health finding, as typed rows.

`service/web/queue.py` folds them into one row per top-level group and caches the result until
the data version moves (store/page_versions.py); the SQL stays here.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.store.tables import Alert, AlertGroup, HealthAlert, Series, Track


class QueueAlert(NamedTuple):
    id: int
    group_id: int | None
    status: str
    cause: str  # the machine's
    human_cause: str | None
    state: str
    change_pct: float
    direction: str
    created_at: datetime
    first_bad_run_pk: int
    kernel: str
    metric: str
    platform_short: str
    source: str
    cause_kind: str | None


class QueueGroup(NamedTuple):
    id: int
    parent_id: int | None
    source: str
    platform_short: str | None
    cause: str
    state: str
    created_at: datetime
    first_bad_run_pk: int
    kind: str  # move | health
    cause_kind: str | None


class QueueFinding(NamedTuple):
    """A health alert, as a member of its nightly's health group."""

    id: int
    group_id: int | None
    kind: str
    kernel: str | None
    platform_short: str | None
    status: str


def queue_alerts(session: Session) -> list[QueueAlert]:
    return [QueueAlert(*r) for r in session.execute(
        select(
            Alert.id, Alert.group_id, Alert.status, Alert.cause, Alert.human_cause, Alert.state,
            Alert.change_pct, Alert.direction, Alert.created_at, Alert.first_bad_run_pk, Track.kernel,
            Series.metric, Track.platform_short, Track.source, Alert.cause_kind,
        )
        .join(Series, Series.id == Alert.series_id)
        .join(Track, Track.id == Series.track_id)
    )]


def queue_groups(session: Session) -> list[QueueGroup]:
    return [QueueGroup(*r) for r in session.execute(
        select(
            AlertGroup.id, AlertGroup.parent_id, AlertGroup.source, AlertGroup.platform_short,
            AlertGroup.cause, AlertGroup.state, AlertGroup.created_at, AlertGroup.first_bad_run_pk,
            AlertGroup.kind, AlertGroup.cause_kind,
        )
    )]


def queue_findings(session: Session) -> list[QueueFinding]:
    return [QueueFinding(*r) for r in session.execute(
        select(HealthAlert.id, HealthAlert.group_id, HealthAlert.kind, HealthAlert.kernel,
               HealthAlert.platform_short, HealthAlert.status)
    )]
