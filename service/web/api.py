"""JSON API under /api/: the same objects the CLI prints (`alerts --format json`), so scripts
and the web can never disagree. Schema at /api/openapi.json."""

from __future__ import annotations

from typing import Any, Optional

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from sqlalchemy.orm import Session

from service.errors import BenchwatchError
from service.domain import STATUSES, AlertStatus, Cause, GroupKind, Source
from service.records import SeriesKey
from service.notify.view import group_view, list_group_views
from service.store.alert_reads import check_choice, get_alert, iso, list_alerts
from service.store.health_reads import health_group_view
from service.store.series_io import load_one, series_refs
from service.store.status import store_status
from service.store.tables import AlertGroup
from service.web.deps import DbId, db, scheduler_info

router = APIRouter(prefix="/api", tags=["api"])
STATUS_CHOICES = (*STATUSES, "all")



@router.get("/alerts", summary="Alerts, newest first (same objects as `benchwatch alerts --format json`)")
def api_alerts(
    status: str = Query(AlertStatus.OPEN.value, description=" | ".join(STATUS_CHOICES)),
    platform: Optional[str] = Query(None, max_length=64),
    cause: Optional[Cause] = None,
    source: Optional[Source] = None,
    limit: Optional[int] = Query(None, ge=1, le=10000),
    session: Session = Depends(db),
) -> list[dict[str, Any]]:
    return list_alerts(session, status=status, platform=platform, cause=cause, source=source, limit=limit)


@router.get("/alerts/{alert_id}", summary="One alert with its evidence, commits and audit trail")
def api_alert(alert_id: DbId, session: Session = Depends(db)) -> dict[str, Any]:
    try:
        return get_alert(session, alert_id)
    except BenchwatchError as exc:
        raise HTTPException(404, exc.message) from None


@router.get("/groups", summary="Move groups, newest first (same objects as `benchwatch alerts --groups --format json`)")
def api_groups(
    request: Request,
    status: str = Query(AlertStatus.OPEN.value, description=" | ".join(STATUS_CHOICES)),
    platform: Optional[str] = Query(None, max_length=64),
    cause: Optional[Cause] = None,
    source: Optional[Source] = None,
    session: Session = Depends(db),
) -> list[dict[str, Any]]:
    check_choice("status", status, STATUS_CHOICES)
    views = list_group_views(session, request.app.state.settings, status=status, platform=platform,
                             cause=cause, source=source)
    return [v.to_json() for v in views]


@router.get("/groups/{group_id}", summary="One alert group as its page and Slack show it, with its member alerts")
def api_group(request: Request, group_id: DbId, session: Session = Depends(db)) -> dict[str, Any]:
    group = session.get(AlertGroup, group_id)
    if group is None:
        raise HTTPException(404, f"no alert group with id {group_id}")
    if group.kind == GroupKind.HEALTH:
        return health_group_view(session, group)
    return group_view(session, group, request.app.state.settings).to_json()


@router.get("/series", summary="Series keys matching a filter, or one series' points when fully named")
def api_series(
    source: Optional[Source] = None,
    platform: Optional[str] = Query(None, max_length=64),
    kernel: Optional[str] = Query(None, max_length=255),
    metric: Optional[str] = Query(None, max_length=255),
    session: Session = Depends(db),
) -> dict[str, Any]:
    if source and platform and kernel and metric:
        found = load_one(session, SeriesKey(source, platform, kernel, metric))
        if found is None:
            raise HTTPException(404, "no such series")
        _, data = found
        return {
            "key": {"source": source, "platform_short": platform, "kernel": kernel, "metric": metric},
            "points": [
                {"run_id": p.run_id, "sha": p.full_sha[:8] if p.full_sha else p.sha, "full_sha": p.full_sha,
                 "date": iso(p.date), "value": p.value, "is_trend": p.is_trend}
                for p in data.points
            ],
        }
    refs = series_refs(session, source=source, platform_short=platform, kernel=kernel, metric=metric)
    return {
        "series": [
            {"source": r.key.source, "platform_short": r.key.platform_short, "kernel": r.key.kernel,
             "metric": r.key.metric}
            for r in refs
        ]
    }


@router.get("/status", summary="Store counts, last ingests, outbox backlog and the scheduler")
def api_status(request: Request, session: Session = Depends(db)) -> dict[str, Any]:
    return {"store": store_status(session), "scheduler": scheduler_info(request)}
