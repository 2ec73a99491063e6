"""On-call actions on a health alert (``H<id>``): the same verbs, rules and audit trail as a
move's (service/store/oncall.py), and the same effect on Slack (the nightly's message is edited).
A health alert has no cause, so it cannot be reclassified."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy.orm import Session

from service.errors import BenchwatchError
from service.records import naive
from service.store.health_reads import health_alerts_json
from service.store.health_writer import add_history, bump
from service.store.oncall import ACKNOWLEDGED, DISMISSED, OPEN, RESOLVED, clean_name, clean_note
from service.store.tables import AlertGroup, HealthAlert

_FROM = {
    ACKNOWLEDGED: (OPEN,),
    RESOLVED: (OPEN, ACKNOWLEDGED),
    DISMISSED: (OPEN, ACKNOWLEDGED),
    OPEN: (ACKNOWLEDGED, RESOLVED, DISMISSED),
}
_ACTION = {ACKNOWLEDGED: "acknowledged", RESOLVED: "resolved", DISMISSED: "dismissed", OPEN: "reopened"}  # audit verbs


def _alert(session: Session, alert_id: int) -> HealthAlert:
    alert = session.get(HealthAlert, alert_id, with_for_update=True)
    if alert is None:
        raise BenchwatchError(f"no health alert H{alert_id}")
    return alert


def _json(session: Session, alert: HealthAlert) -> dict:
    return health_alerts_json(session, [alert])[0]


def set_status(session: Session, alert_id: int, status: str, *, by: str, note: str | None = None,
               now: datetime | None = None) -> dict:
    by, note, at = clean_name(by), clean_note(note), naive(now or datetime.now(timezone.utc))
    alert = _alert(session, alert_id)
    if alert.status == status:
        if note:
            add_history(session, alert.id, at, "note", note=note, by=by)
    else:
        if alert.status not in _FROM[status]:
            raise BenchwatchError(f"alert H{alert.id} is {alert.status}; it cannot be {status}")
        add_history(session, alert.id, at, _ACTION[status], alert.status, status, note, by=by)
        alert.status, alert.updated_at = status, at
        bump(session.get(AlertGroup, alert.group_id), at)
    session.flush()
    return _json(session, alert)


def add_note(session: Session, alert_id: int, *, by: str, note: str, now: datetime | None = None) -> dict:
    by, text, at = clean_name(by), clean_note(note), naive(now or datetime.now(timezone.utc))
    if text is None:
        raise BenchwatchError("the note is empty")
    alert = _alert(session, alert_id)
    add_history(session, alert.id, at, "note", note=text, by=by)
    session.flush()
    return _json(session, alert)
