"""Deliver the outbox to Slack exactly once.

For each message: count the attempt in the store (committed) *before* calling Slack; after Slack
answers, mark the row sent with the returned ``ts`` (and the group's thread) in a second
transaction. A row whose last attempt got no answer (a crash, a dropped connection) may have
reached Slack, so it is first looked up in ``conversations.history`` by the outbox key carried in
the message ``metadata``; found means "sent", never "post again". A row Slack *refused* is simply
posted again. The lookup never blocks the queue: if it fails (no ``channels:history`` scope, an
outage of that method) the message is posted with its metadata and the summary says so.
Failures leave the row pending for the next run; a Slack outage (5xx/429 after the client's own
retries, bad token, missing channel) stops the pass early instead of hammering. A message Slack
finds too long is shortened to fit and sent; one whose payload Slack refuses outright is
dead-lettered (counted in `status` and on `/status`). Call it only under the run-once lock.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from service.config import Settings
from service.notify import slack
from service.store import outbox
from service.store.db import Store
from service.store.tables import OutboxMessage

log = logging.getLogger(__name__)
DEFAULT_CLIENT: Any = object()  # deliver_pending(client=...) not given: build one from settings


@dataclass
class DeliverySummary:
    posted: int = 0
    updated: int = 0
    recovered: int = 0
    logged: int = 0
    superseded: int = 0
    failed: int = 0
    pending_left: int = 0
    unverified: int = 0  # posted again although the history lookup for an earlier copy failed
    shortened: int = 0  # refused as too long, then sent shortened
    errors: list[str] = field(default_factory=list)

    def line(self) -> str:
        text = (f"slack: {self.posted} posted, {self.updated} edited, {self.recovered} recovered, "
                f"{self.logged} logged (no token), {self.failed} failed, {self.pending_left} pending")
        if self.shortened:
            text += f"; {self.shortened} shortened to fit"
        if self.unverified:
            text += (f"; {self.unverified} posted without checking for an earlier copy "
                     "(history lookup failed: a duplicate is possible)")
        if self.errors:
            text += f"; error: {self.errors[0]}"
        return text


@dataclass(frozen=True)
class _Row:
    id: int
    key: str
    kind: str
    group_id: int | None
    revision: int
    payload: dict
    state: str


def _snap(r: OutboxMessage) -> _Row:
    return _Row(r.id, r.key, r.kind, r.group_id, r.revision, dict(r.payload or {}), r.state)


def _units(store: Store) -> list[tuple[int | None, int]]:
    """(group id or None, first row id), in order of the oldest pending row."""
    seen: set[int] = set()
    units: list[tuple[int | None, int]] = []
    with store.session() as s:
        for r in outbox.pending(s):
            if r.group_id is None:
                units.append((None, r.id))
            elif r.group_id not in seen:
                seen.add(r.group_id)
                units.append((r.group_id, r.id))
    return units


def _claim(store: Store, row_id: int) -> bool:
    """Count the attempt; True when the previous one may have reached Slack unseen."""
    with store.session() as s:
        return outbox.claim(s, row_id)


def _fail(store: Store, row: _Row, exc: slack.SlackFailure, summary: DeliverySummary) -> None:
    summary.failed += 1
    with store.session() as s:
        outbox.mark_failed(s, row.id, str(exc), dead=exc.bad_payload, answered=exc.answered)
    log.warning("slack: %s %s not delivered: %s", row.kind, row.key, exc)


def _find(client, channel: str, key: str, pages: int, summary: DeliverySummary) -> str | None:
    """The earlier copy's ts, or None; a failed lookup is None too (said in the summary), so a
    history method Slack will not answer never holds the queue."""
    try:
        return slack.find_posted(client, channel, key, pages)
    except slack.SlackFailure as exc:
        summary.unverified += 1
        log.warning("slack: could not look for an earlier copy of %s (%s): posting it with its "
                    "metadata; a duplicate is possible", key, exc)
        return None


def _post(client, channel: str, payload: dict, meta: dict, summary: DeliverySummary) -> str:
    try:
        return slack.post(client, channel, payload, meta)
    except slack.SlackFailure as exc:
        if exc.code != "msg_too_long":
            raise
    summary.shortened += 1
    return slack.post(client, channel, slack.shorten(payload), meta)


def _update(client, channel: str, ts: str, payload: dict, meta: dict, summary: DeliverySummary) -> None:
    try:
        slack.update(client, channel, ts, payload, meta)
        return
    except slack.SlackFailure as exc:
        if exc.code != "msg_too_long":
            raise
    summary.shortened += 1
    slack.update(client, channel, ts, slack.shorten(payload), meta)


def _log_only(store: Store, rows: list[_Row], now: datetime, summary: DeliverySummary) -> None:
    """No Slack client: the newest text goes to the log and the rows are closed as logged."""
    log.info("slack (not configured): %s", rows[-1].payload.get("text", ""))
    with store.session() as s:
        outbox.supersede(s, [r.id for r in rows], now, state=outbox.LOGGED)
    summary.logged += 1


@contextmanager
def _failure_recorded_on(store: Store, row: _Row, summary: DeliverySummary):
    """A failed Slack call is recorded on the row it was sending (dead if Slack refused the
    payload itself), then re-raised for the caller to decide whether to go on."""
    try:
        yield
    except slack.SlackFailure as exc:
        _fail(store, row, exc, summary)
        raise


def _send_first(store: Store, client, channel: str, anchor: _Row, payload: dict, meta: dict, pages: int,
                summary: DeliverySummary) -> str:
    """Claim → find an earlier copy → post: the one path by which a message first reaches Slack.

    When the previous attempt of ``anchor`` may have reached Slack unseen, its copy is looked
    up first; a found copy is brought up to ``payload`` (an edit, idempotent: the lost attempt
    may have shown an older revision) instead of posting twice. Returns the message's ts."""
    unsure = _claim(store, anchor.id)
    with _failure_recorded_on(store, anchor, summary):
        ts = _find(client, channel, anchor.key, pages, summary) if unsure else None
        if ts is not None:
            summary.recovered += 1
            if payload is not anchor.payload:
                _update(client, channel, ts, payload, meta, summary)
            return ts
        ts = _post(client, channel, payload, meta, summary)
        summary.posted += 1
        return ts


def _deliver_single(store: Store, client, channel: str, row: _Row, pages: int, now: datetime,
                    summary: DeliverySummary) -> None:
    """A message without a group (digest): post it once."""
    ts = _send_first(store, client, channel, row, row.payload, slack.metadata(row.key, None, row.revision),
                     pages, summary)
    with store.session() as s:
        outbox.mark_sent(s, row.id, now=now, channel=channel, ts=ts)


def _deliver_group(store: Store, client, channel: str, group_id: int, pages: int, now: datetime,
                   summary: DeliverySummary) -> None:
    with store.session() as s:
        all_rows = [_snap(r) for r in outbox.group_rows(s, group_id)]
        thread = outbox.thread_of(s, group_id)
        thread_at = None if thread is None else (thread.channel, thread.ts, thread.revision)
    rows = [r for r in all_rows if r.state == outbox.PENDING]
    if not rows:
        return
    newest = rows[-1]
    others = [r.id for r in rows if r.id != newest.id]
    post_row = next((r for r in all_rows if r.kind == "post"), None)
    ident = outbox.post_key(group_id)

    if client is None or (post_row is not None and post_row.state == outbox.LOGGED):
        _log_only(store, rows, now, summary)
        return

    if thread_at is None:
        anchor = post_row if post_row is not None and post_row.state == outbox.PENDING else newest
        ts = _send_first(store, client, channel, anchor, newest.payload,
                         slack.metadata(anchor.key, group_id, newest.revision), pages, summary)
        with store.session() as s:
            outbox.mark_sent(s, anchor.id, now=now, channel=channel, ts=ts, shown_revision=newest.revision)
            rest = [r.id for r in rows if r.id != anchor.id]
            outbox.supersede(s, rest, now)
            summary.superseded += len(rest)
        return

    ch, ts, shown = thread_at
    if newest.revision <= shown:
        with store.session() as s:
            outbox.supersede(s, [r.id for r in rows], now)
        summary.superseded += len(rows)
        return
    _claim(store, newest.id)
    with _failure_recorded_on(store, newest, summary):
        _update(client, ch, ts, newest.payload, slack.metadata(ident, group_id, newest.revision), summary)
    summary.updated += 1
    with store.session() as s:
        outbox.mark_sent(s, newest.id, now=now, channel=ch, ts=ts, shown_revision=newest.revision)
        outbox.supersede(s, others, now)
        summary.superseded += len(others)


def deliver_pending(store: Store, settings: Settings, *, client: Any = DEFAULT_CLIENT,
                    now: datetime | None = None) -> DeliverySummary:
    """Send every pending outbox row (see the module docstring). ``client=None``: log only."""
    now = now or datetime.now(timezone.utc)
    summary = DeliverySummary()
    if client is DEFAULT_CLIENT:
        client = slack.make_client(settings)
    channel, pages = settings.slack.channel, settings.slack.history_pages
    units = _units(store)
    if units and client is not None:
        try:
            slack.check(client)
        except slack.SlackFailure as exc:
            summary.errors.append(f"auth.test failed: {exc}")
            units = []
    for group_id, first_id in units:
        try:
            if group_id is None:
                with store.session() as s:
                    row = _snap(s.get(OutboxMessage, first_id))
                if client is None:
                    _log_only(store, [row], now, summary)
                else:
                    _deliver_single(store, client, channel, row, pages, now, summary)
            else:
                _deliver_group(store, client, channel, group_id, pages, now, summary)
        except slack.SlackFailure as exc:
            if exc.fatal:
                summary.errors.append(str(exc))
                break
    with store.session() as s:
        summary.pending_left = outbox.backlog(s)[outbox.PENDING]
    return summary
