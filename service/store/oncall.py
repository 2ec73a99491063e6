"""On-call actions on an alert: acknowledge, resolve, reclassify, dismiss, add a note.

The CLI and the web page call these same functions. Every action writes an `AlertHistory` row
(who, when, what, old -> new, note), so `alerts --format json` shows the audit trail. A human's
cause goes to ``human_cause``, which detection never overwrites. An action that changes what the
Slack message shows (status, cause) bumps the group's ``revision`` (and its parent's), which
makes the notifier edit that message on the next run.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from sqlalchemy.orm import Session

from service.errors import BenchwatchError
from service.domain import CAUSES, AlertStatus
from service.store.alert_reads import alert_json
from service.store.alerts_writer import add_history
from service.records import naive
from service.store.tables import Alert, AlertGroup

OPEN, ACKNOWLEDGED, RESOLVED, DISMISSED = (s.value for s in AlertStatus)
MAX_NOTE = 2000
_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,255}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _now(now: datetime | None) -> datetime:
    return naive(now or datetime.now(timezone.utc))


def clean_name(by: str | None) -> str:
    """Who acted: 1-255 printable characters (it is shown on pages and in Slack, escaped)."""
    name = (by or "").strip()
    if not _NAME.match(name):
        raise BenchwatchError("--by must be 1 to 255 printable characters")
    return name


def clean_note(note: str | None) -> str | None:
    if note is None:
        return None
    note = note.strip()
    if not note:
        return None
    if len(note) > MAX_NOTE:
        raise BenchwatchError(f"a note is at most {MAX_NOTE} characters, not {len(note)}")
    if _CONTROL.search(note):
        raise BenchwatchError("a note must not contain control characters")
    return note


def _alert(session: Session, alert_id: int) -> Alert:
    if not isinstance(alert_id, int) or isinstance(alert_id, bool) or alert_id < 1:
        raise BenchwatchError(f"alert id must be a positive number, not {alert_id!r}")
    alert = session.get(Alert, alert_id, with_for_update=True)
    if alert is None:
        raise BenchwatchError(f"no alert with id {alert_id}")
    return alert


def bump_group(session: Session, group_id: int | None, at: datetime) -> None:
    """The Slack message of this group (or of its cross-platform parent) must be edited."""
    seen: set[int] = set()
    while group_id is not None and group_id not in seen:
        seen.add(group_id)
        group = session.get(AlertGroup, group_id)
        if group is None:
            return
        group.revision += 1
        group.updated_at = at
        group_id = group.parent_id


def _change(session: Session, alert: Alert, field: str, new: str, old: str | None, action: str,
            by: str, note: str | None, at: datetime) -> dict:
    """Set a field on-call owns (status, human cause). The same value again only records the
    note; a change is logged old -> new and marks the group's Slack message for an edit."""
    if getattr(alert, field) == new:
        if note:
            add_history(session, alert.id, at, "note", note=note, by=by)
    else:
        add_history(session, alert.id, at, action, old, new, note, by=by)
        setattr(alert, field, new)
        alert.updated_at = at
        bump_group(session, alert.group_id, at)
    session.flush()
    return alert_json(session, alert)


def _set_status(session: Session, alert_id: int, status: str, action: str, by: str | None,
                note: str | None, now: datetime | None, allowed_from: tuple[str, ...]) -> dict:
    by, note, at = clean_name(by), clean_note(note), _now(now)
    alert = _alert(session, alert_id)
    if alert.status != status and alert.status not in allowed_from:
        raise BenchwatchError(f"alert {alert.id} is {alert.status}; it cannot be {status}")
    return _change(session, alert, "status", status, alert.status, action, by, note, at)


def acknowledge(session: Session, alert_id: int, *, by: str, note: str | None = None,
                now: datetime | None = None) -> dict:
    """Someone is looking at it. Acknowledging twice only adds the note."""
    return _set_status(session, alert_id, ACKNOWLEDGED, "acknowledged", by, note, now, (OPEN,))


def resolve(session: Session, alert_id: int, *, by: str, note: str | None = None,
            now: datetime | None = None) -> dict:
    """Dealt with (fixed, accepted, explained). If the move comes back later, detection opens a
    new alert linked to this one."""
    return _set_status(session, alert_id, RESOLVED, "resolved", by, note, now, (OPEN, ACKNOWLEDGED))


def dismiss(session: Session, alert_id: int, *, by: str, note: str | None = None,
            now: datetime | None = None) -> dict:
    """Not worth anyone's time (a false alarm); kept for the record, hidden from the open queue."""
    return _set_status(session, alert_id, DISMISSED, "dismissed", by, note, now, (OPEN, ACKNOWLEDGED))


def reopen(session: Session, alert_id: int, *, by: str, note: str | None = None,
           now: datetime | None = None) -> dict:
    """Undo a resolve/dismiss/ack by hand."""
    return _set_status(session, alert_id, OPEN, "reopened", by, note, now,
                       (ACKNOWLEDGED, RESOLVED, DISMISSED))


def reclassify(session: Session, alert_id: int, *, cause: str, by: str, note: str | None = None,
               now: datetime | None = None) -> dict:
    """A human's verdict: stored in ``human_cause``, which later detect runs never overwrite."""
    if cause not in CAUSES:
        raise BenchwatchError(f"cause must be one of {', '.join(CAUSES)}, not {cause!r}")
    by, note, at = clean_name(by), clean_note(note), _now(now)
    alert = _alert(session, alert_id)
    return _change(session, alert, "human_cause", cause, alert.effective_cause,
                   "reclassified", by, note, at)


def add_note(session: Session, alert_id: int, *, by: str, note: str, now: datetime | None = None) -> dict:
    """A comment in the audit trail; changes nothing else (so Slack is not edited)."""
    by, text, at = clean_name(by), clean_note(note), _now(now)
    if text is None:
        raise BenchwatchError("the note is empty")
    alert = _alert(session, alert_id)
    add_history(session, alert.id, at, "note", note=text, by=by)
    session.flush()
    return alert_json(session, alert)
