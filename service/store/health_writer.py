"""Persist health findings as `HealthAlert`s in one `AlertGroup` (kind "health") per source and
day, so they take the move's path to Slack: the outbox posts the group once and edits it when
its ``revision`` grows.

Rules: a finding whose key has an active alert is that alert (nothing changes, nothing is
posted again); a new key opens an alert in the group of its day (an already-posted message is
edited to add it); an active alert whose key was not found this pass has recovered: state
``recovered``, status ``resolved`` by benchwatch with the note "recovered <date>", and its
message is edited. Info findings (a kernel removed from the matrix) are written once, already
resolved. Also the count of scheduled fetches that failed in a row, per source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.domain import ACTIVE_STATUSES, AlertStatus
from service.health.records import Finding
from service.records import naive
from service.store.health_reads import HISTORY_PREFIX
from service.store.notes import read_note, write_note
from service.store.tables import AlertGroup, HealthAlert, HealthHistory

MACHINE = "benchwatch"
ACTIVE, RECOVERED, INFO = "active", "recovered", "info"


@dataclass
class HealthOutcome:
    opened: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"health: {len(self.opened)} new, {len(self.recovered)} recovered, "
                f"{len(self.info)} matrix changes")


def add_history(session: Session, alert_id: int, at: datetime, action: str, old: str | None = None,
                new: str | None = None, note: str | None = None, *, by: str = MACHINE) -> None:
    session.add(HealthHistory(health_alert_id=alert_id, at=at, by=by, action=action,
                              old_value=old, new_value=new, note=note))


def bump(group: AlertGroup, at: datetime) -> None:
    group.revision += 1
    group.updated_at = at


def _group(session: Session, source: str, day: str, run_pk: int, at: datetime, *, prefix: str = "health:",
           state: str = ACTIVE) -> tuple[AlertGroup, bool]:
    """The health group of a source and day (live findings, or with ``HISTORY_PREFIX`` outages
    found afterwards), made when missing; and whether it was made now."""
    key = f"{prefix}{source}:{day}"
    group = session.scalar(select(AlertGroup).where(AlertGroup.health_key == key))
    if group is not None:
        return group, False
    group = AlertGroup(source=source, first_bad_run_pk=run_pk, platform_short=key, kind="health",
                       health_key=key, cause="health", confidence=1.0, evidence=[], state=state,
                       revision=1, created_at=at, updated_at=at)
    session.add(group)
    session.flush()
    return group, True


def _refresh_state(session: Session, group: AlertGroup) -> None:
    states = set(session.scalars(select(HealthAlert.state).where(HealthAlert.group_id == group.id)))
    group.state = ACTIVE if ACTIVE in states else RECOVERED


def reconcile(session: Session, source: str, findings: list[Finding], *, day_of: dict[str, str],
              run_pk: int, now: datetime) -> HealthOutcome:
    """Bring one source's health alerts in line with this pass's findings (see the module
    docstring). ``day_of[kind]`` is the day whose message a new finding of that kind joins."""
    at = naive(now)
    out = HealthOutcome()
    active = {a.key: a for a in session.scalars(
        select(HealthAlert).where(HealthAlert.source == source, HealthAlert.state == ACTIVE))}
    touched: dict[int, AlertGroup] = {}
    found = set()
    for f in findings:
        found.add(f.key)
        if f.key in active:
            continue
        if f.info and session.scalar(select(HealthAlert.id).where(HealthAlert.key == f.key).limit(1)):
            continue
        group, _ = _group(session, source, day_of[f.kind], run_pk, at)
        alert = HealthAlert(group_id=group.id, kind=f.kind, key=f.key, source=source,
                            platform_short=f.platform_short, kernel=f.kernel, detail=f.detail,
                            shapes=list(f.shapes), state=INFO if f.info else ACTIVE,
                            status=AlertStatus.RESOLVED if f.info else AlertStatus.OPEN, run_pk=run_pk,
                            created_at=at, updated_at=at)
        session.add(alert)
        session.flush()
        add_history(session, alert.id, at, "opened", None, alert.state, f.detail)
        (out.info if f.info else out.opened).append(f.key)
        touched[group.id] = group
    for key, alert in active.items():
        if key in found:
            continue
        alert.state, alert.recovered_at, alert.updated_at = RECOVERED, at, at
        note = f"recovered {at:%Y-%m-%d}"
        add_history(session, alert.id, at, "recovered", ACTIVE, RECOVERED, note)
        if alert.status in ACTIVE_STATUSES:
            add_history(session, alert.id, at, "resolved", alert.status, AlertStatus.RESOLVED, note)
            alert.status = AlertStatus.RESOLVED
        out.recovered.append(key)
        group = session.get(AlertGroup, alert.group_id)
        touched[group.id] = group
    for group in touched.values():
        bump(group, at)  # a posted message is edited; an unposted one is posted at this revision
        _refresh_state(session, group)
    session.flush()
    return out


def record_past(session: Session, source: str, finding: Finding, *, run_pks: list[int], day: str,
                recovered_at: datetime, now: datetime) -> bool:
    """Write an outage found in the stored history (health/history.py) as an alert already
    recovered and resolved, in a history group of its first day, unless an alert of its key was
    opened on one of its nightlies (the live check saw it). True if written."""
    seen = session.scalar(select(HealthAlert.id).where(
        HealthAlert.key == finding.key, HealthAlert.run_pk.in_(run_pks)).limit(1))
    if seen is not None:
        return False
    at, back = naive(now), naive(recovered_at)
    group, made = _group(session, source, day, run_pks[0], at, prefix=HISTORY_PREFIX, state=RECOVERED)
    if not made:
        bump(group, at)
    alert = HealthAlert(group_id=group.id, kind=finding.kind, key=finding.key, source=source,
                        platform_short=finding.platform_short, kernel=finding.kernel, detail=finding.detail,
                        shapes=list(finding.shapes), state=RECOVERED, status=AlertStatus.RESOLVED,
                        run_pk=run_pks[0], created_at=at, updated_at=at, recovered_at=back)
    session.add(alert)
    session.flush()
    note = f"recovered {back:%Y-%m-%d}, found in the stored history"
    add_history(session, alert.id, at, "opened", None, RECOVERED, finding.detail)
    add_history(session, alert.id, at, "resolved", AlertStatus.OPEN, AlertStatus.RESOLVED, note)
    return True


def history_mark(session: Session, source: str) -> str | None:
    """The date (ISO) of the newest nightly the history scan has read, None before the first."""
    return read_note(session, f"health.history.{source}")


def set_history_mark(session: Session, source: str, value: str) -> None:
    write_note(session, f"health.history.{source}", value)


def anchor_open(session: Session, key: str, *, run_pks: list[int], since: str, now: datetime) -> bool:
    """An active outage alert opened on a later nightly of a down streak that began before
    benchwatch saw it: moved to the streak's first nightly (``run_pks[0]``), its detail saying
    since when. True if changed. One opened on the streak's first nightly is left alone."""
    alert = session.scalar(select(HealthAlert).where(HealthAlert.key == key, HealthAlert.state == ACTIVE))
    if alert is None or alert.run_pk not in run_pks[1:]:
        return False
    at = naive(now)
    alert.run_pk, alert.updated_at = run_pks[0], at
    alert.detail = f"{alert.detail}; down since {since}"
    add_history(session, alert.id, at, "note", note=f"down since {since} (found in the stored history)")
    bump(session.get(AlertGroup, alert.group_id), at)
    session.flush()
    return True


# --- fetches and detect passes failing in a row ------------------------------------------------


_DETECT_KEY = "health.detect"
_NO_STREAK = {"failures": 0, "since": None, "error": None}


def _fetch_key(source: str) -> str:
    return f"health.fetch.{source}"


def _streak_state(session: Session, key: str) -> dict:
    value = read_note(session, key)
    if value is None:
        return dict(_NO_STREAK)
    try:
        return json.loads(value)
    except ValueError:
        return dict(_NO_STREAK)


def _note_streak(session: Session, key: str, now: datetime, error: str | None) -> None:
    """Count a failure (``error``) or clear the count after a success."""
    state = _streak_state(session, key)
    if error is None:
        state = dict(_NO_STREAK)
    else:
        state = {"failures": state["failures"] + 1, "since": state["since"] or naive(now).isoformat(),
                 "error": error[:300]}
    write_note(session, key, json.dumps(state))


def fetch_state(session: Session, source: str) -> dict:
    return _streak_state(session, _fetch_key(source))


def note_fetch(session: Session, source: str, now: datetime, error: str | None) -> None:
    """Count a failed fetch (``error``) or clear the count after a good one."""
    _note_streak(session, _fetch_key(source), now, error)


def detect_state(session: Session) -> dict:
    return _streak_state(session, _DETECT_KEY)


def note_detect(session: Session, now: datetime, error: str | None) -> None:
    """Count a failed detect pass (``error``) or clear the count after one that ran."""
    _note_streak(session, _DETECT_KEY, now, error)
