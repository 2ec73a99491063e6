"""Persist moves + classifications as `Alert` rows and `AlertGroup`s.

Rules on-call relies on:
- one alert per move: matched by (series, direction, first-bad run) with a tolerance of a
  nightly or two, because the first-bad run can shift as more data arrives;
- `human_cause` is never touched here; the machine only updates `cause`;
- a visible change (cause or state) bumps the group's `revision`, which tells the Slack
  notifier to edit its message; nothing else does, so re-running detection is silent;
- a move that comes back after its alert was resolved *and* retracted opens a new alert with
  `reopened_from`; a retracted move only sets `state="retracted"`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.domain import AlertStatus, MoveState
from service.records import Classification, Move, RunRef, SeriesKey, aware, naive
from service.store.alert_reads import commit_json, related_json
from service.store.series_io import RunRow
from service.store.tables import Alert, AlertGroup, AlertHistory

MACHINE = "benchwatch"


@dataclass(frozen=True)
class MoveRecord:
    """A move of one stored series, its runs resolved to store keys, and its verdict."""

    series_id: int
    move: Move
    classification: Classification | None  # None: keep the stored verdict (e.g. retracted)
    last_good_pk: int
    first_bad_pk: int
    end_pk: int | None = None  # an ended move (episode): its first nightly back to normal


@dataclass(frozen=True)
class AlertOutcome:
    alert_id: int
    action: str  # created | reopened | updated | unchanged | skipped
    visible: bool  # cause or state changed: the group must bump its revision


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(float(x), nd)


def evidence_json(classification: Classification) -> list[dict]:
    return [evidence_item(e) for e in classification.evidence]


def evidence_item(e) -> dict:
    """One evidence item as stored: the sentence, and its structured facts when it has any."""
    out = {"check": e.check, "verdict": e.verdict, "detail": e.detail}
    if getattr(e, "facts", None):
        out["facts"] = e.facts
    return out


# the columns of an alert row that hold the machine's verdict (`classification_fields` fills them)
VERDICT_COLUMNS = ("cause", "cause_kind", "confidence", "evidence", "true_speedup", "true_speedup_reason",
                   "culprit", "change_commit", "candidates", "related")


def stored_verdict(alert: Alert) -> dict:
    """The machine's verdict as the alert row holds it (a human reclassification is the queue's,
    not the detector's): `classification_fields`' shape, read back."""
    return {f: getattr(alert, f) for f in VERDICT_COLUMNS}


def classification_fields(c: Classification) -> dict:
    """A verdict as an alert row stores it (and `investigate` shows it, stored or fresh)."""
    return dict(
        cause=c.cause,
        cause_kind=c.kind or "",
        confidence=_r(c.confidence, 4),
        evidence=evidence_json(c),
        true_speedup=_r(c.true_speedup),
        true_speedup_reason=c.true_speedup_reason or "",
        culprit=commit_json(c.culprit),
        change_commit=commit_json(c.change_commit),
        candidates=[commit_json(x) for x in c.candidates],
        related=related_json(c.related),
    )


def _move_fields(rec: MoveRecord) -> dict:
    m = rec.move
    return dict(
        last_good_run_pk=rec.last_good_pk,
        first_bad_run_pk=rec.first_bad_pk,
        last_good_value=_r(m.last_good.value),
        first_bad_value=_r(m.first_bad.value),
        before=_r(m.before),
        after=_r(m.after),
        change_pct=_r(m.change_pct, 4),
        direction=m.direction,
        significance=_r(m.significance, 4),
        noise_sigma=_r(m.noise_sigma),
        nights_after=int(m.nights_after),
        state=m.state,
        end_run_pk=rec.end_pk if m.state == MoveState.ENDED else None,
    )


def add_history(session: Session, alert_id: int, now: datetime, action: str, old=None, new=None,
                note: str | None = None, *, by: str = MACHINE) -> None:
    """One audit-trail row: detection writes them as MACHINE, on-call under its own name."""
    session.add(
        AlertHistory(
            alert_id=alert_id, at=naive(now), by=by, action=action,
            old_value=None if old is None else str(old), new_value=None if new is None else str(new),
            note=note,
        )
    )


def stored_alerts(session: Session, series_id: int) -> list[Alert]:
    return list(session.scalars(select(Alert).where(Alert.series_id == series_id).order_by(Alert.id)))


def live_alerts(alerts: Sequence[Alert]) -> list[Alert]:
    """The newest alert of each reopen chain (older ones are history)."""
    superseded = {a.reopened_from for a in alerts if a.reopened_from is not None}
    return [a for a in alerts if a.id not in superseded]


def alert_move(alert: Alert, key: SeriesKey, runs: dict[int, RunRow]) -> Move:
    """The stored move behind an alert, as the detector's record (for reconcile and peers)."""
    lg, fb = runs[alert.last_good_run_pk], runs[alert.first_bad_run_pk]
    end = runs.get(alert.end_run_pk) if alert.end_run_pk is not None else None
    return Move(
        key=key,
        last_good=RunRef(lg.run_id, lg.sha, lg.full_sha, lg.date, alert.last_good_value),
        first_bad=RunRef(fb.run_id, fb.sha, fb.full_sha, fb.date, alert.first_bad_value),
        before=alert.before,
        after=alert.after,
        change_pct=alert.change_pct,
        direction=alert.direction,
        significance=alert.significance,
        state=alert.state,
        nights_after=alert.nights_after,
        noise_sigma=alert.noise_sigma,
        end=RunRef(end.run_id, end.sha, end.full_sha, end.date, None) if end is not None else None,
    )


def alerts_by_series(session: Session, series_ids: Sequence[int]) -> dict[int, list[Alert]]:
    """Every stored alert of these series (history too), oldest first, by series."""
    out: dict[int, list[Alert]] = defaultdict(list)
    for a in session.scalars(select(Alert).where(Alert.series_id.in_(list(series_ids))).order_by(Alert.id)):
        out[a.series_id].append(a)
    return out


def stored_moves(alerts: Sequence[Alert], key: SeriesKey, runs: dict[int, RunRow]) -> list[Move]:
    """The moves one series' stored alerts hold now: the newest of each reopen chain, resolved
    ones included (the step is still in the data), retracted ones left out (history only)."""
    return [alert_move(a, key, runs) for a in live_alerts(alerts) if a.state != MoveState.RETRACTED]


def _distance(a: Alert, rec: MoveRecord, ordinal: dict[int, int]) -> int | None:
    """Trend nightlies between a stored alert's first bad and a move's (None: not comparable)."""
    if a.direction != rec.move.direction:
        return None
    if a.first_bad_run_pk == rec.first_bad_pk:
        return 0
    want, have = ordinal.get(rec.first_bad_pk), ordinal.get(a.first_bad_run_pk)
    return None if want is None or have is None else abs(have - want)


def match_alert(
    alerts: Sequence[Alert], rec: MoveRecord, ordinal: dict[int, int], tolerance: int = 2
) -> Alert | None:
    """The stored alert this move is, if any: same direction, first-bad within ``tolerance``
    trend nightlies (closest wins, then the newest of a reopen chain)."""
    return pair_alerts(alerts, [rec], ordinal, tolerance)[0]


def pair_alerts(
    alerts: Sequence[Alert], recs: Sequence[MoveRecord], ordinal: dict[int, int], tolerance: int = 2
) -> list[Alert | None]:
    """The stored alert each of one series' moves is: pairs taken closest first, each alert and
    each move at most once, as `detect.reconcile` pairs moves. Two steps of a series two nights
    apart are two alerts, never one alert claimed by both (the later rewriting the earlier)."""
    pairs = sorted(
        (d, i, -a.id, a) for i, rec in enumerate(recs) for a in live_alerts(alerts)
        if (d := _distance(a, rec, ordinal)) is not None and d <= tolerance
    )
    out: list[Alert | None] = [None] * len(recs)
    used: set[int] = set()
    for _, i, _, a in pairs:
        if out[i] is None and a.id not in used:
            out[i] = a
            used.add(a.id)
    return out


def upsert_alert(
    session: Session,
    rec: MoveRecord,
    ordinal: dict[int, int],
    now: datetime,
    *,
    alerts: Sequence[Alert] | None = None,
    tolerance: int = 2,
    paired: tuple[Alert | None] | None = None,
) -> AlertOutcome:
    """Create or update the alert of one move; see the module docstring for the rules.
    ``paired``: the move's stored alert as `pair_alerts` paired it with its series' other moves
    (a 1-tuple; None inside: a new move); without it the move is matched alone."""
    if alerts is None:
        alerts = stored_alerts(session, rec.series_id)
    found = paired[0] if paired is not None else match_alert(alerts, rec, ordinal, tolerance)
    retracted = rec.move.state == MoveState.RETRACTED
    if found is None or (found.status == AlertStatus.RESOLVED and found.state == MoveState.RETRACTED and not retracted):
        if retracted or rec.classification is None:
            return AlertOutcome(found.id if found else 0, "skipped", False)
        alert = Alert(
            series_id=rec.series_id, status=AlertStatus.OPEN, created_at=naive(now), updated_at=naive(now),
            reopened_from=found.id if found else None, human_cause=None,
            **_move_fields(rec), **classification_fields(rec.classification),
        )
        session.add(alert)
        session.flush()
        if found is not None:
            add_history(session, alert.id, now, "reopened", note=f"the move came back after alert "
                     f"#{found.id} was resolved")
        add_history(session, alert.id, now, "created", new=alert.cause,
                 note=f"{alert.state} move of {alert.change_pct:+.1f}%")
        return AlertOutcome(alert.id, "reopened" if found else "created", True)

    fields = _move_fields(rec)
    if retracted:
        # a vanished move keeps its last numbers; only its state changes
        fields = {"state": MoveState.RETRACTED}
    if rec.classification is not None and not retracted:
        fields.update(classification_fields(rec.classification))
    changed = {k: v for k, v in fields.items() if getattr(found, k) != v}
    if not changed:
        return AlertOutcome(found.id, "unchanged", False)
    visible = False
    if "cause" in changed:
        add_history(session, found.id, now, "reclassified", found.cause, changed["cause"],
                 note=None if found.human_cause is None else "human cause kept: "
                 f"{found.human_cause}")
        visible = True
    if "state" in changed:
        add_history(session, found.id, now, "state", found.state, changed["state"])
        visible = True
    if "first_bad_run_pk" in changed:
        add_history(session, found.id, now, "first_bad_shifted", found.first_bad_run_pk,
                 changed["first_bad_run_pk"], note="the step was re-placed as more nights arrived")
    for k, v in changed.items():
        setattr(found, k, v)
    found.updated_at = naive(now)
    return AlertOutcome(found.id, "updated", visible)


# --- groups -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupRecord:
    """What the pass decided for one group (per platform, or the cross-platform parent)."""

    source: str
    first_bad_pk: int
    platform_short: str | None  # None: the cross-platform parent
    cause: str
    confidence: float
    evidence: tuple[dict, ...]
    state: str
    alert_ids: tuple[int, ...] = ()  # members (platform groups)
    child_ids: tuple[int, ...] = ()  # member groups (parent)
    kind: str = ""
    end_run_pk: int | None = None  # an episode's first nightly back to normal
    part: str = ""  # which part of the platform nightly (see AlertGroup.part)


def group_state(states: Iterable[str]) -> str:
    states = list(states)
    if states and all(s == MoveState.RETRACTED for s in states):
        return MoveState.RETRACTED
    live = [s for s in states if s != MoveState.RETRACTED]
    if live and all(s == MoveState.ENDED for s in live):
        return MoveState.ENDED  # an episode that is over: the message says when it recovered
    return MoveState.CONFIRMED if MoveState.CONFIRMED in states else MoveState.PROVISIONAL


class GroupBook:
    """A source's stored groups and who is in them, read in two queries and kept current as
    groups are upserted: a nightly regroup upserts every live group of the source (~80), and
    the five lookups each made were a fifth of one nightly's detect pass."""

    def __init__(self, session: Session, source: str) -> None:
        self.session = session
        self.groups: dict[int, AlertGroup] = {
            g.id: g for g in session.scalars(select(AlertGroup).where(AlertGroup.source == source).order_by(AlertGroup.id))}
        self.by_key: dict[tuple, AlertGroup] = {}
        self.children: dict[int, set[int]] = {}
        for g in self.groups.values():
            self.by_key.setdefault(self._key(g), g)  # the oldest group of a key, as a lookup by key finds it
            if g.parent_id is not None:
                self.children.setdefault(g.parent_id, set()).add(g.id)
        self.members: dict[int, set[int]] = {}
        if self.groups:
            for a in session.scalars(select(Alert).where(Alert.group_id.in_(list(self.groups)))):
                if a.state != MoveState.RETRACTED:
                    self.members.setdefault(a.group_id, set()).add(a.id)

    @staticmethod
    def _key(g: AlertGroup) -> tuple:
        return (g.platform_short, g.part, g.first_bad_run_pk)

    def find(self, rec: GroupRecord) -> AlertGroup | None:
        """The group this record is: the one on its key, else the group its members (or member
        groups) already sit in, if that is a group of the same platform and part."""
        group = self.by_key.get((rec.platform_short, rec.part, rec.first_bad_pk))
        if group is not None:
            return group
        if rec.alert_ids:
            prior = [a.group_id for a in (self.session.get(Alert, i) for i in rec.alert_ids)
                     if a is not None and a.group_id is not None]
        else:
            prior = [g.parent_id for g in (self.groups.get(i) for i in rec.child_ids)
                     if g is not None and g.parent_id is not None]
        cand = self.groups.get(min(prior)) if prior else None
        if cand is not None and (cand.platform_short, cand.part) == (rec.platform_short, rec.part):
            return cand
        return None

    def add(self, group: AlertGroup) -> None:
        self.groups[group.id] = group
        self.by_key.setdefault(self._key(group), group)

    def moved(self, group: AlertGroup, old_key: tuple) -> None:
        """The group now stands on another first-bad run: found there from now on, and written at
        once. The database holds one group per nightly and checks it row by row, in an order of its
        own; the book moves a group only onto a key it has free (an earlier move may just have freed
        it), so writing each move as it is made keeps the database in step."""
        if self._key(group) == old_key:
            return
        if self.by_key.get(old_key) is group:
            del self.by_key[old_key]
        self.by_key.setdefault(self._key(group), group)
        self.session.flush()

    def seat(self, group: AlertGroup, alert_ids: Sequence[int], child_ids: Sequence[int]) -> bool:
        """Put these alerts (or member groups) in ``group``; True when its membership changed."""
        changed = self.members.get(group.id, set()) != set(alert_ids) or \
            self.children.get(group.id, set()) != set(child_ids)
        for i in alert_ids:
            a = self.session.get(Alert, i)
            if a is not None and a.group_id != group.id:
                if a.group_id is not None and a.state != MoveState.RETRACTED:
                    self.members.get(a.group_id, set()).discard(a.id)
                a.group_id = group.id
                if a.state != MoveState.RETRACTED:
                    self.members.setdefault(group.id, set()).add(a.id)
        for i in child_ids:
            g = self.groups.get(i) or self.session.get(AlertGroup, i)
            if g is not None and g.parent_id != group.id:
                if g.parent_id is not None:
                    self.children.get(g.parent_id, set()).discard(g.id)
                g.parent_id = group.id
                self.children.setdefault(group.id, set()).add(g.id)
        return changed


def upsert_group(
    session: Session, rec: GroupRecord, now: datetime, book: GroupBook | None = None
) -> tuple[AlertGroup, bool]:
    """Create or update a group; True when its revision was bumped.

    A group whose members all shifted their first-bad run by a night is the same group: it is
    found through its members and moved to the new run, so its Slack message is edited, not
    duplicated. ``book``: the source's groups read once for a whole regroup (else read here).
    """
    book = book or GroupBook(session, rec.source)
    group = book.find(rec)
    evidence = list(rec.evidence)
    if group is None:
        group = AlertGroup(
            source=rec.source, first_bad_run_pk=rec.first_bad_pk, platform_short=rec.platform_short,
            part=rec.part, cause=rec.cause, confidence=_r(rec.confidence, 4), evidence=evidence, state=rec.state,
            cause_kind=rec.kind, end_run_pk=rec.end_run_pk,
            revision=1, created_at=naive(now), updated_at=naive(now),
        )
        session.add(group)
        session.flush()
        book.add(group)
        bumped = True
    else:
        visible = (group.cause, group.cause_kind, group.state, group.first_bad_run_pk, group.end_run_pk) != (
            rec.cause, rec.kind, rec.state, rec.first_bad_pk, rec.end_run_pk
        )
        quiet = (group.confidence, group.evidence) != (_r(rec.confidence, 4), evidence)
        if visible or quiet:
            old_key = book._key(group)
            group.cause, group.state, group.cause_kind = rec.cause, rec.state, rec.kind
            group.first_bad_run_pk, group.end_run_pk = rec.first_bad_pk, rec.end_run_pk
            group.confidence, group.evidence = _r(rec.confidence, 4), evidence
            group.updated_at = naive(now)
            book.moved(group, old_key)
        if visible:
            group.revision += 1
        bumped = visible
    # retracted members keep their group_id (history) but are no longer members
    membership = book.seat(group, rec.alert_ids, rec.child_ids)
    if membership and not bumped:
        group.revision += 1
        group.updated_at = naive(now)
        bumped = True
    return group, bumped


def retire_empty_groups(session: Session, group_ids: Iterable[int], now: datetime) -> list[int]:
    """Groups left with no live alerts and no children become retracted: their members moved on,
    or every member reverted (a blip), and the Slack message must say so."""
    out = []
    for gid in set(group_ids):
        g = session.get(AlertGroup, gid)
        if g is None or g.state == MoveState.RETRACTED:
            continue
        has_alert = session.scalar(
            select(Alert.id).where(Alert.group_id == gid, Alert.state != MoveState.RETRACTED).limit(1)
        )
        has_child = session.scalar(select(AlertGroup.id).where(AlertGroup.parent_id == gid).limit(1))
        if has_alert is None and has_child is None:
            g.state = MoveState.RETRACTED
            g.revision += 1
            g.updated_at = naive(now)
            out.append(gid)
    return out


__all__ = [
    "MoveRecord", "AlertOutcome", "GroupRecord", "GroupBook", "alerts_by_series", "stored_moves", "upsert_alert", "upsert_group", "match_alert", "pair_alerts",
    "stored_alerts", "live_alerts", "alert_move", "retire_empty_groups", "group_state", "aware",
]
