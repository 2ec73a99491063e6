"""What the web's action buttons do: the on-call lifecycle in `service.store.oncall`.

The web never writes alerts itself; it calls the same functions as the CLI, so the audit
trail, the rules on which transitions are allowed and the Slack refresh (group revision bump)
are the same whichever way on-call acts.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from service.errors import BenchwatchError
from service.store import oncall

# URL segment -> (label on the button)
ACTIONS = {
    "ack": "Acknowledge",
    "resolve": "Resolve",
    "dismiss": "Dismiss",
    "reopen": "Reopen",
    "assign": "Assign",
    "reclassify": "Reclassify",
    "note": "Add note",
}


def perform(
    session: Session, action: str, alert_id: int, by: str, note: str | None, cause: str | None = None
) -> dict:
    """Run one on-call action; BenchwatchError (bad input, a transition not allowed) goes back
    to the page as a one-line message."""
    note = note or None
    if action == "ack":
        return oncall.acknowledge(session, alert_id, by=by, note=note)
    if action == "resolve":
        return oncall.resolve(session, alert_id, by=by, note=note)
    if action == "dismiss":
        return oncall.dismiss(session, alert_id, by=by, note=note)
    if action == "reopen":
        return oncall.reopen(session, alert_id, by=by, note=note)
    if action == "reclassify":
        return oncall.reclassify(session, alert_id, cause=cause, by=by, note=note)
    if action == "note":
        return oncall.add_note(session, alert_id, by=by, note=note or "")
    raise BenchwatchError(f"unknown action {action!r}")


# URL segment -> the name of the action in service.store.oncall
_ONCALL = {"ack": "acknowledge", "resolve": "resolve", "dismiss": "dismiss", "reopen": "reopen",
           "reclassify": "reclassify", "note": "add_note", "assign": "assign"}


def perform_on_group(session: Session, action: str, group_id: int, by: str, note: str | None,
                     cause: str | None = None, assignee: str | None = None) -> oncall.GroupResult:
    """The same action on every member of a group (each member's audit trail records it)."""
    if action not in _ONCALL:
        raise BenchwatchError(f"unknown action {action!r}")
    if action == "note" and not (note or "").strip():
        raise BenchwatchError("the note is empty")
    return oncall.act_on_group(session, group_id, _ONCALL[action], by=by, note=note or None,
                               cause=cause, to=assignee)
