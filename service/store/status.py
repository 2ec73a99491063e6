"""Counts for `benchwatch status` and the web status page, each source's last ingest, and the
store's size on disk.

Every count except the `*_at` timestamps depends only on the stored data, so re-ingesting
the same file leaves them equal (the idempotence check users and tests rely on).
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from service.domain import SOURCES, AlertStatus
from service.store.ingest_writer import FAILED
from service.store.outbox import DEAD, PENDING, backlog
from service.store.tables import (
    Alert,
    AlertGroup,
    HealthAlert,
    IngestConflict,
    IngestLog,
    Observation,
    Point,
    Run,
    Series,
    ShapeValue,
    Track,
)



def _count(session: Session, stmt) -> int:
    return int(session.scalar(stmt) or 0)


def _counts(session: Session, named: dict[str, object]) -> dict[str, int]:
    """Several counts in one statement: each statement compiled is ~2 ms of a command a person
    waits for (`benchwatch status` ran 15 of them one by one)."""
    row = session.execute(select(*[stmt.scalar_subquery().label(name) for name, stmt in named.items()])).one()
    return {name: int(value or 0) for name, value in zip(named, row)}


def store_status(session: Session) -> dict[str, int | str | None]:
    count = select(func.count())
    named: dict[str, object] = {}
    for source in SOURCES:
        named[f"runs_{source}"] = count.select_from(Run).where(Run.source == source)
        named[f"trend_runs_{source}"] = count.select_from(Run).where(Run.source == source, Run.is_trend)
        named[f"tracks_{source}"] = count.select_from(Track).where(Track.source == source)
    named.update(
        series=count.select_from(Series),
        points=count.select_from(Point),
        failed_points=count.select_from(Point).where(Point.failed),
        observations=count.select_from(Observation),
        shape_rows=count.select_from(ShapeValue),
        conflicts=select(func.count(func.distinct(IngestConflict.detail))).select_from(IngestConflict),
        alerts=count.select_from(Alert),
        alerts_open=count.select_from(Alert).where(Alert.status == "open"),
        alert_groups=count.select_from(AlertGroup),
    )
    counts = _counts(session, named)
    out: dict[str, int | str | None] = {}
    for source in SOURCES:
        for key in (f"runs_{source}", f"trend_runs_{source}", f"tracks_{source}"):
            out[key] = counts[key]
    out["runs"] = counts["runs_dashboard"] + counts["runs_pretuned"]
    for key in ("series", "points", "failed_points", "observations", "shape_rows", "conflicts", "alerts",
                "alerts_open", "alert_groups"):
        out[key] = counts[key]
    queue = backlog(session)
    out["outbox_pending"] = queue[PENDING]
    out["outbox_dead"] = queue[DEAD]  # Slack refused the payload itself: never delivered
    for source in SOURCES:
        last = session.scalar(
            select(func.max(IngestLog.finished_at))
            .where(IngestLog.source == source, IngestLog.outcome != FAILED)
        )
        out[f"last_ingest_{source}_at"] = last.isoformat() + "Z" if last else None
        out[f"last_ingest_{source}_error"] = last_failure(session, source)
    out.update(freshness(session))
    return out


def freshness(session: Session) -> dict[str, int | str | None]:
    """Data freshness (what the health checks watch): the newest main nightly per source and
    per (source, platform), open health alerts, and failed fetches in a row per source."""
    from service.store.health_writer import fetch_state

    out: dict[str, int | str | None] = {}
    out["health_alerts_open"] = _count(
        session, select(func.count()).select_from(HealthAlert).where(HealthAlert.status == AlertStatus.OPEN)
    )
    for source in SOURCES:
        newest = session.scalar(select(func.max(Run.date)).where(Run.source == source, Run.is_trend))
        out[f"newest_nightly_{source}_at"] = newest.isoformat() + "Z" if newest else None
        out[f"fetch_failures_{source}"] = int(fetch_state(session, source)["failures"])
    for source, platform, newest in session.execute(
        select(Track.source, Track.platform_short, func.max(Run.date))
        .join(Observation, Observation.track_id == Track.id).join(Run, Run.id == Observation.run_pk)
        .where(Run.is_trend).group_by(Track.source, Track.platform_short)
        .order_by(Track.source, Track.platform_short)
    ):
        out[f"newest_{source}_{platform}_at"] = newest.isoformat() + "Z" if newest else None
    return out


def last_failure(session: Session, source: str) -> str | None:
    """Why the newest ingest of a source failed; None once it has ingested (or never failed)."""
    row = session.execute(
        select(IngestLog.outcome, IngestLog.message)
        .where(IngestLog.source == source)
        .order_by(IngestLog.id.desc())
        .limit(1)
    ).first()
    return row.message if row is not None and row.outcome == FAILED else None


class IngestSummary(NamedTuple):
    """One ingest as the status page lists it."""

    started_at: datetime
    finished_at: datetime | None  # None: still running (or killed)
    outcome: str
    message: str | None
    runs_added: int
    points_added: int
    conflicts: int


def last_ingest(session: Session, source: str) -> IngestSummary | None:
    """The newest-started ingest of a source (None: never ingested)."""
    row = session.execute(
        select(IngestLog.started_at, IngestLog.finished_at, IngestLog.outcome, IngestLog.message,
               IngestLog.runs_added, IngestLog.points_added, IngestLog.conflicts)
        .where(IngestLog.source == source).order_by(IngestLog.started_at.desc()).limit(1)
    ).first()
    return IngestSummary(*row) if row is not None else None


def store_size(session: Session) -> int | None:
    """Bytes on disk: the SQLite file (+ WAL) or pg_database_size; None when unknown."""
    bind = session.get_bind()
    if bind.dialect.name == "sqlite":
        path = make_url(str(bind.url)).database
        if not path or path == ":memory:":
            return None
        return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    if bind.dialect.name == "postgresql":
        return int(session.scalar(select(func.pg_database_size(func.current_database()))) or 0)
    return None
