"""Counts for `benchwatch status` and the web status page.

Every value except the `*_at` timestamps depends only on the stored data, so re-ingesting
the same file leaves them equal (the idempotence check users and tests rely on).
"""

from __future__ import annotations

from sqlalchemy import func, select
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


def store_status(session: Session) -> dict[str, int | str | None]:
    out: dict[str, int | str | None] = {}
    for source in SOURCES:
        out[f"runs_{source}"] = _count(
            session, select(func.count()).select_from(Run).where(Run.source == source)
        )
        out[f"trend_runs_{source}"] = _count(
            session,
            select(func.count()).select_from(Run).where(Run.source == source, Run.is_trend),
        )
        out[f"tracks_{source}"] = _count(
            session, select(func.count()).select_from(Track).where(Track.source == source)
        )
    out["runs"] = out["runs_dashboard"] + out["runs_pretuned"]  # type: ignore[operator]
    out["series"] = _count(session, select(func.count()).select_from(Series))
    out["points"] = _count(session, select(func.count()).select_from(Point))
    out["failed_points"] = _count(
        session, select(func.count()).select_from(Point).where(Point.failed)
    )
    out["observations"] = _count(session, select(func.count()).select_from(Observation))
    out["shape_rows"] = _count(session, select(func.count()).select_from(ShapeValue))
    out["conflicts"] = _count(
        session, select(func.count(func.distinct(IngestConflict.detail))).select_from(IngestConflict)
    )
    out["alerts"] = _count(session, select(func.count()).select_from(Alert))
    out["alerts_open"] = _count(
        session, select(func.count()).select_from(Alert).where(Alert.status == AlertStatus.OPEN)
    )
    out["alert_groups"] = _count(session, select(func.count()).select_from(AlertGroup))
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
