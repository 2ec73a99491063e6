"""Alerts as the JSON objects scripts see (`alerts --format json`, `/api/alerts`). A group's JSON
is its `GroupView` (service/notify/view.py: `/api/groups`, `alerts --groups`), not built here.

One builder for both the CLI and the web API so the two can never drift; the field set is the
contract in docs (investigate fields + id, group_id, state, status, created_at, history,
machine_cause, human_cause). Shas are 8-hex, dates ISO-8601 UTC with a trailing Z.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from service.errors import BenchwatchError
from service.domain import CAUSES, SOURCES, STATUSES, AlertStatus
from service.records import RankedCommit, RunRef
from service.store.db import chunks
from service.store.tables import Alert, AlertHistory, Run, Series, Track

def iso(dt: datetime | None) -> str | None:
    """ISO-8601 UTC with Z (store datetimes are naive UTC)."""
    if dt is None:
        return None
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def run_json(ref: RunRef | None) -> dict | None:
    if ref is None:
        return None
    return {
        "run_id": ref.run_id,
        "sha": ref.full_sha[:8] if ref.full_sha else ref.sha[:8],
        "full_sha": ref.full_sha,
        "date": iso(ref.date),
        "value": ref.value,
    }


def commit_json(c: RankedCommit | None) -> dict | None:
    if c is None:
        return None
    return {
        "sha": c.full_sha[:8],
        "full_sha": c.full_sha,
        "subject": c.subject,
        "date": iso(c.date),
        "score": round(float(c.score), 4),
        "reasons": list(c.reasons),
    }


def related_json(items) -> list[dict]:
    out = []
    for r in items or ():
        out.append(
            {
                "platform_short": r.get("platform_short"),
                "kernel": r.get("kernel"),
                "metric": r.get("metric"),
                "change_pct": None if r.get("change_pct") is None else round(float(r["change_pct"]), 2),
            }
        )
    return out


class AlertRows(NamedTuple):
    """An alert with the rows its JSON needs, read in one statement (see `load_alerts`)."""

    alert: Alert
    series: Series
    track: Track
    last_good: Run
    first_bad: Run
    end: Run | None = None  # an ended move's first nightly back to normal


_LastGood = aliased(Run)
_FirstBad = aliased(Run)
_End = aliased(Run)


def _with_rows():
    return (
        select(Alert, Series, Track, _LastGood, _FirstBad, _End)
        .join(Series, Series.id == Alert.series_id)
        .join(Track, Track.id == Series.track_id)
        .join(_LastGood, _LastGood.id == Alert.last_good_run_pk)
        .join(_FirstBad, _FirstBad.id == Alert.first_bad_run_pk)
        .outerjoin(_End, _End.id == Alert.end_run_pk)
    )


def load_alert(session: Session, alert_id: int) -> AlertRows | None:
    """One joined read instead of five primary-key gets (the alert page's first render)."""
    row = session.execute(_with_rows().where(Alert.id == alert_id)).first()
    return AlertRows(*row) if row is not None else None


def load_alerts(session: Session, *where) -> list[AlertRows]:
    """Alerts matching ``where`` (SQL conditions) with their rows, in id order, in one read."""
    return [AlertRows(*row) for row in session.execute(_with_rows().where(*where).order_by(Alert.id))]


def _histories(session: Session, alert_ids: list[int]) -> dict[int, list[dict]]:
    """The audit trails of several alerts in one query (a list was one query per alert)."""
    out: dict[int, list[dict]] = {a: [] for a in alert_ids}
    for chunk in chunks(alert_ids, 500):
        for h in session.scalars(
            select(AlertHistory).where(AlertHistory.alert_id.in_(chunk)).order_by(AlertHistory.id)
        ):
            out[h.alert_id].append(
                {"at": iso(h.at), "by": h.by, "action": h.action, "old": h.old_value,
                 "new": h.new_value, "note": h.note}
            )
    return out


def _run_obj(run: Run, value: float | None) -> dict:
    return {
        "run_id": run.run_id, "sha": run.full_sha[:8], "full_sha": run.full_sha,
        "date": iso(run.date), "value": value,
    }


def _alert_obj(rows: AlertRows, history: list[dict]) -> dict[str, Any]:
    alert, series, track = rows.alert, rows.series, rows.track
    return {
        "id": alert.id,
        "group_id": alert.group_id,
        "state": alert.state,
        "status": alert.status,
        "created_at": iso(alert.created_at),
        "source": track.source,
        "platform_short": track.platform_short,
        "kernel": track.kernel,
        "metric": series.metric,
        "cause": alert.effective_cause,
        "kind": alert.cause_kind or "",
        "machine_cause": alert.cause,
        "human_cause": alert.human_cause,
        "direction": alert.direction,
        "confidence": round(float(alert.confidence), 3),
        "last_good": _run_obj(rows.last_good, alert.last_good_value),
        "first_bad": _run_obj(rows.first_bad, alert.first_bad_value),
        "end": _run_obj(rows.end, None) if rows.end is not None else None,
        "before": alert.before,
        "after": alert.after,
        "change_pct": round(float(alert.change_pct), 2),
        "true_speedup": alert.true_speedup,
        "true_speedup_reason": alert.true_speedup_reason or "",
        "culprit": alert.culprit,
        "change_commit": alert.change_commit,
        "candidates": list(alert.candidates or []),
        "evidence": list(alert.evidence or []),
        "related": list(alert.related or []),
        "history": history,
    }


def alerts_json(session: Session, rows: list[AlertRows]) -> list[dict[str, Any]]:
    """Several alerts as JSON with one extra query for all their audit trails."""
    histories = _histories(session, [r.alert.id for r in rows])
    return [_alert_obj(r, histories[r.alert.id]) for r in rows]


def alert_json(session: Session, alert: Alert | AlertRows) -> dict[str, Any]:
    if not isinstance(alert, AlertRows):
        alert = load_alert(session, alert.id)
    return alerts_json(session, [alert])[0]


def check_choice(name: str, value: str | None, allowed) -> None:
    """A filter value must be one of ``allowed`` (None: no filter)."""
    if value is not None and value not in allowed:
        raise BenchwatchError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")


def list_alerts(
    session: Session,
    status: str | None = AlertStatus.OPEN,
    platform: str | None = None,
    cause: str | None = None,
    source: str | None = None,
    limit: int | None = None,
) -> list[dict]:
    """Alerts newest first; ``status`` None or "all" means every status; cause is the effective one."""
    if status == "all":
        status = None
    check_choice("status", status, STATUSES)
    check_choice("cause", cause, CAUSES)
    check_choice("source", source, SOURCES)
    if limit is not None and limit < 1:
        raise BenchwatchError("limit must be a positive number")
    q = _with_rows().order_by(Alert.created_at.desc(), Alert.id.desc())
    if status is not None:
        q = q.where(Alert.status == status)
    if platform is not None:
        q = q.where(Track.platform_short == platform)
    if source is not None:
        q = q.where(Track.source == source)
    if cause is not None:
        q = q.where(Alert.effective_cause == cause)
    if limit is not None:
        q = q.limit(limit)
    return alerts_json(session, [AlertRows(*row) for row in session.execute(q)])


def get_alert(session: Session, alert_id: int) -> dict:
    rows = load_alert(session, alert_id)
    if rows is None:
        raise BenchwatchError(f"no alert with id {alert_id}")
    return alert_json(session, rows)


def human_decisions(session: Session, alert_ids: list[int] | None = None) -> dict[int, int]:
    """Alert id -> audit-trail id of its latest re-classification (all alerts when None)."""
    stmt = (select(AlertHistory.alert_id, func.max(AlertHistory.id))
            .where(AlertHistory.action == "reclassified").group_by(AlertHistory.alert_id))
    if alert_ids is None:
        return {a: h for a, h in session.execute(stmt)}
    out: dict[int, int] = {}
    for chunk in chunks(alert_ids, 500):
        out.update({a: h for a, h in session.execute(stmt.where(AlertHistory.alert_id.in_(chunk)))})
    return out
