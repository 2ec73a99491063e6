"""What a group's Slack message needs now: a pure decision over the view and its outbox rows.

Alertmanager's shape: the decision is a plain function returning a typed intent with the reason
(`decide`), and the planner (plan.py) only carries it out. So every rule below is table-tested
without a database or Slack (tests/test_notify_decide.py).

Rules (the message unit is a top-level group):
- posted once, when first seen with something to say (not noise, not retracted, not all closed);
- a group whose first-bad nightly is older than ``max_age_days`` is never posted one by one: it
  goes into one digest of the pass (``digest``);
- a cross-platform parent formed over an already-posted platform group adopts that message;
- a posted group whose revision grew gets an edit (``update``), anything else is ``skip``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Protocol, Sequence

from service.records import naive
from service.store.outbox import HISTORIC  # a group counted in a digest

if TYPE_CHECKING:
    from service.notify.view import GroupView


class Action(str, Enum):
    POST = "post"
    ADOPT = "adopt"
    DIGEST = "digest"
    UPDATE = "update"
    SKIP = "skip"


class Reason(str, Enum):
    NEW = "new group with something to say"
    OLD = "first bad nightly older than notify.max_age_days"
    CHILD_POSTED = "a platform group under this parent was already posted"
    REVISED = "the group changed since its message was last written"
    UP_TO_DATE = "the message already shows this revision"
    HISTORIC = "counted in a backfill digest, never posted alone"
    EMPTY = "no alerts in the group"
    NOT_POSTABLE = "noise, retracted or already closed: never posted"


@dataclass(frozen=True)
class Intent:
    action: Action
    reason: Reason


class OutboxRow(Protocol):
    """What a decision reads of an outbox row (the ORM row or a test's stand-in)."""

    kind: str
    state: str
    revision: int


def posted_and_current(revision: int, rows: Sequence[OutboxRow]) -> bool:
    """True when nothing can be needed: already posted (or digested) and not revised since.
    The planner asks this before building a view, which costs queries."""
    post = next((r for r in rows if r.kind == "post"), None)
    if post is None:
        return False
    return post.state == HISTORIC or revision <= max(r.revision for r in rows)


def too_old(first_bad_date: datetime, now: datetime, max_age_days: int) -> bool:
    """A group whose first-bad nightly is older than this goes to the backfill digest."""
    return naive(first_bad_date) < naive(now) - timedelta(days=max_age_days)


def decide(view: GroupView, rows: Sequence[OutboxRow], now: datetime, *, max_age_days: int,
           child_posted: bool = False) -> Intent:
    """The intent for one top-level group. ``rows``: its outbox rows; ``child_posted``: a child
    platform group already has a Slack message (a parent can adopt it)."""
    post = next((r for r in rows if r.kind == "post"), None)
    if post is not None:
        if post.state == HISTORIC:
            return Intent(Action.SKIP, Reason.HISTORIC)
        if view.revision > max(r.revision for r in rows):
            return Intent(Action.UPDATE, Reason.REVISED)
        return Intent(Action.SKIP, Reason.UP_TO_DATE)
    if not view.alerts:
        return Intent(Action.SKIP, Reason.EMPTY)
    if child_posted:
        return Intent(Action.ADOPT, Reason.CHILD_POSTED)
    if not view.postable:
        return Intent(Action.SKIP, Reason.NOT_POSTABLE)
    if too_old(view.first_bad_date, now, max_age_days):
        return Intent(Action.DIGEST, Reason.OLD)
    return Intent(Action.POST, Reason.NEW)
