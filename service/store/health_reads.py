"""Read what the health checks need from the store as plain records (service/health/records.py):
a source's recent main nightlies, each nightly's rows (did the kernel produce a value; the
summary flags and low per-shape accuracy on the newest), and health alerts as JSON."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.domain import AlertStatus
from service.health.records import KernelResult, Nightly
from service.domain import HEADLINE
from service.records import aware
from service.store.alert_reads import iso
from service.store.tables import (
    AlertGroup, HealthAlert, HealthHistory, Observation, Point, Run, Series, ShapeValue, Track, TrackFlags,
)


HISTORY_PREFIX = "health-history:"  # health_key of a group of outages found after the fact


def is_history_group(group: AlertGroup) -> bool:
    """A group of outages found in the stored history (health_writer.record_past), not live."""
    return (group.health_key or "").startswith(HISTORY_PREFIX)


def recent_nightlies(session: Session, source: str, n: int) -> list[tuple[int, Nightly]]:
    """The newest ``n`` main nightlies of a source, oldest first, with their run keys."""
    rows = session.execute(
        select(Run.id, Run.run_id, Run.sha, Run.full_sha, Run.date)
        .where(Run.source == source, Run.is_trend)
        .order_by(Run.date.desc(), Run.id.desc()).limit(n)
    ).all()
    return [(pk, Nightly(rid, sha, full, aware(d))) for pk, rid, sha, full, d in reversed(rows)]


def night_rows(session: Session, run_pks: list[int], newest_pk: int | None,
               min_accuracy: float) -> dict[int, dict[tuple[str, str], KernelResult]]:
    """Per nightly: (platform, kernel) -> its row. Only the newest carries flags and accuracy."""
    out: dict[int, dict[tuple[str, str], KernelResult]] = {pk: {} for pk in run_pks}
    if not run_pks:
        return out
    failed = {
        (tid, pk): bool(f)
        for tid, pk, f in session.execute(
            select(Series.track_id, Point.run_pk, Point.failed)
            .join(Point, Point.series_id == Series.id)
            .where(Point.run_pk.in_(run_pks), Series.metric.in_(HEADLINE))
        )
    }
    for tid, pk, p, k, error in session.execute(
        select(Observation.track_id, Observation.run_pk, Track.platform_short, Track.kernel, Observation.error)
        .join(Track, Track.id == Observation.track_id)
        .where(Observation.run_pk.in_(run_pks))
    ):
        out[pk][(p, k)] = KernelResult(p, k, failed=failed.get((tid, pk), False) or error is not None,
                                       error=error)
    if newest_pk is None:
        return out
    low: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for p, k, shape, acc in session.execute(
        select(Track.platform_short, Track.kernel, ShapeValue.shape, ShapeValue.helion_accuracy)
        .join(Track, Track.id == ShapeValue.track_id)
        .where(ShapeValue.run_pk == newest_pk, ShapeValue.helion_accuracy < min_accuracy)
        .order_by(ShapeValue.track_id, ShapeValue.shape_index)
    ):
        low[(p, k)].append((shape, float(acc)))
    rows = out[newest_pk]
    flags = {
        (p, k): f for p, k, f in session.execute(
            select(Track.platform_short, Track.kernel, TrackFlags)
            .join(Track, Track.id == TrackFlags.track_id).where(TrackFlags.run_pk == newest_pk)
        )
    }
    for key in set(rows) | set(flags) | set(low):
        base = rows.get(key) or KernelResult(*key, infra_missing=True)  # flagged but absent
        f = flags.get(key)
        rows[key] = KernelResult(
            *key, failed=base.failed, error=base.error or (f.error if f else None),
            infra_missing=base.infra_missing or (key not in rows),
            run_failures=tuple(f.run_failures or ()) if f else (),
            accuracy_failures=tuple(f.accuracy_failures or ()) if f else (),
            low_accuracy=tuple(low.get(key, ())),
        )
    return out


def health_json(alert: HealthAlert, history: list[dict] | None = None) -> dict[str, Any]:
    return {
        "id": f"H{alert.id}",
        "kind": alert.kind,
        "group_id": alert.group_id,
        "source": alert.source,
        "platform_short": alert.platform_short,
        "kernel": alert.kernel,
        "detail": alert.detail,
        "shapes": list(alert.shapes or []),
        "state": alert.state,
        "status": alert.status,
        "created_at": iso(alert.created_at),
        "recovered_at": iso(alert.recovered_at),
        "history": history if history is not None else [],
    }


def _histories(session: Session, ids: list[int]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {i: [] for i in ids}
    if ids:
        for h in session.scalars(select(HealthHistory).where(HealthHistory.health_alert_id.in_(ids))
                                 .order_by(HealthHistory.id)):
            out[h.health_alert_id].append({"at": iso(h.at), "by": h.by, "action": h.action,
                                           "old": h.old_value, "new": h.new_value, "note": h.note})
    return out


def health_alerts_json(session: Session, alerts: list[HealthAlert]) -> list[dict[str, Any]]:
    hist = _histories(session, [a.id for a in alerts])
    return [health_json(a, hist[a.id]) for a in alerts]


def list_health(session: Session, status: str | None = AlertStatus.OPEN, platform: str | None = None,
                source: str | None = None, limit: int | None = None) -> list[dict]:
    """Health alerts newest first (filters already checked by the caller)."""
    q = select(HealthAlert).order_by(HealthAlert.created_at.desc(), HealthAlert.id.desc())
    if status is not None:
        q = q.where(HealthAlert.status == status)
    if platform is not None:
        q = q.where(HealthAlert.platform_short == platform)
    if source is not None:
        q = q.where(HealthAlert.source == source)
    if limit is not None:
        q = q.limit(limit)
    return health_alerts_json(session, list(session.scalars(q)))


def health_group_view(session: Session, group: AlertGroup) -> dict[str, Any]:
    """What the health message of one nightly shows (render_health works on this dict only)."""
    alerts = list(session.scalars(select(HealthAlert).where(HealthAlert.group_id == group.id)
                                  .order_by(HealthAlert.id)))
    run = session.get(Run, group.first_bad_run_pk)
    return {
        "id": group.id,
        "kind": "health",
        "source": group.source,
        "day": (group.health_key or "")[-10:],
        "revision": group.revision,
        "state": group.state,
        "nightly": {"sha": run.full_sha[:8], "full_sha": run.full_sha, "date": iso(run.date)} if run else None,
        "alerts": health_alerts_json(session, alerts),
    }
