"""On-call actions on an alert or a whole group: acknowledge, assign, resolve, reclassify,
dismiss, reopen, add a note.

The CLI and the web page call these same functions. Every action writes an `AlertHistory` row
(who, when, what, old -> new, note), so `alerts --format json` shows the audit trail. A human's
cause goes to ``human_cause``, which detection never overwrites. An action that changes what the
Slack message shows (status, cause) bumps the group's ``revision`` (and its parent's), which
makes the notifier edit that message on the next run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import BenchwatchError
from service.domain import CAUSES, AlertStatus
from service.store.alert_reads import alert_json
from service.store.alerts_writer import add_history
from service.records import naive
from service.store.tables import Alert, AlertGroup, AlertHistory

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


def assign(session: Session, alert_id: int, *, to: str, by: str, note: str | None = None,
           now: datetime | None = None) -> dict:
    """Name who owns it. Kept in the audit trail only (``assigned``, old -> new owner): the
    latest one is the owner the group page and Slack show; the status is left alone."""
    owner, by, note, at = clean_name(to), clean_name(by), clean_note(note), _now(now)
    alert = _alert(session, alert_id)
    previous = session.scalar(
        select(AlertHistory.new_value).where(AlertHistory.alert_id == alert.id, AlertHistory.action == "assigned")
        .order_by(AlertHistory.id.desc()).limit(1))
    if previous == owner:
        if note:
            add_history(session, alert.id, at, "note", note=note, by=by)
    else:
        add_history(session, alert.id, at, "assigned", previous, owner, note, by=by)
        alert.updated_at = at
        bump_group(session, alert.group_id, at)
    session.flush()
    return alert_json(session, alert)


# --- the same actions on a whole group ------------------------------------------------------

GROUP_ACTIONS = ("acknowledge", "assign", "resolve", "dismiss", "reopen", "reclassify", "add_note")


@dataclass(frozen=True)
class GroupResult:
    """What a group action did: the members it reached and the ones it could not (why)."""

    group_id: int
    action: str
    done: tuple[int, ...]
    skipped: tuple[tuple[int, str], ...]

    def line(self) -> str:
        text = f"group {self.group_id}: {self.action} on {len(self.done)} alert(s)"
        if self.skipped:
            text += "; skipped " + "; ".join(why for _, why in self.skipped)
        return text


def group_members(session: Session, group_id: int) -> list[int]:
    """Alert ids of a group and, for a cross-platform parent, of its platform groups."""
    if not isinstance(group_id, int) or isinstance(group_id, bool) or group_id < 1:
        raise BenchwatchError(f"group id must be a positive number, not {group_id!r}")
    group = session.get(AlertGroup, group_id)
    if group is None:
        raise BenchwatchError(f"no alert group with id {group_id}")
    if group.kind == "health":
        raise BenchwatchError(f"group {group_id} is a health group: act on its alerts (H<id>)")
    ids = [group_id] + list(session.scalars(select(AlertGroup.id).where(AlertGroup.parent_id == group_id)))
    return list(session.scalars(select(Alert.id).where(Alert.group_id.in_(ids)).order_by(Alert.id)))


def act_on_group(session: Session, group_id: int, action: str, *, by: str, note: str | None = None,
                 cause: str | None = None, to: str | None = None, now: datetime | None = None) -> GroupResult:
    """Run one on-call action on every member, with one timestamp, so each member's audit trail
    records it and the group page shows it once. A member the action cannot apply to (resolving
    an already dismissed alert) is skipped and named; if it applies to none, nothing is written."""
    if action not in GROUP_ACTIONS:
        raise BenchwatchError(f"action must be one of {', '.join(GROUP_ACTIONS)}, not {action!r}")
    clean_name(by)
    clean_note(note)
    at = _now(now)
    members = group_members(session, group_id)
    if not members:
        raise BenchwatchError(f"group {group_id} has no alerts")
    kw: dict = {"by": by, "now": at}
    if action == "reclassify":
        kw["cause"] = cause
    if action == "assign":
        kw["to"] = to
    done, skipped = [], []
    for alert_id in members:
        try:  # each action validates before it writes: a refused member leaves no row behind
            _BY_NAME[action](session, alert_id, note=note, **kw)
        except BenchwatchError as exc:
            if action in ("reclassify", "assign", "add_note"):
                raise  # bad input: the same for every member
            skipped.append((alert_id, exc.message))
        else:
            done.append(alert_id)
    if not done:
        raise BenchwatchError(f"group {group_id}: {skipped[0][1]}" if skipped else f"group {group_id}: nothing to do")
    return GroupResult(group_id, action, tuple(done), tuple(skipped))


_BY_NAME = {"acknowledge": acknowledge, "assign": assign, "resolve": resolve, "dismiss": dismiss,
            "reopen": reopen, "reclassify": reclassify, "add_note": add_note}
