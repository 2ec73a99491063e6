"""Rendered pages for anonymous readers, reused until the data changes.

On-call mostly *reads*: 20 people refreshing the queue and opening alerts from Slack. Pages are
kept until the data under them changes. A one-statement "data version" (a summary of alerts,
groups, audit entries, runs and ingests) is re-read at most every `ttl_s` seconds, and at once
after an action taken through this app, so its author sees the change on the redirect.

When the version moves, what is dropped depends on what moved: new runs, ingests, alerts or
groups drop every page (a nightly: everything may look different); otherwise only on-call
work or a re-classification touched existing alerts, and a per-alert fingerprint says which
alert pages (and which of their group-mates') are stale; queue pages always go. Before this,
one acknowledgement re-rendered every page, and with people working the queue the pages were
rendered more often than they were reused.
Signed-in pages (they carry a CSRF token and the user's name) are never cached.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from typing import Callable
from urllib.parse import parse_qsl

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.store.db import Store
from service.store.tables import Alert, AlertGroup, AlertHistory, IngestLog, Run


def data_version(session: Session) -> tuple:
    """Changes whenever anything a page shows can have changed (one round trip).

    The first STRUCTURAL parts move only with new rows (a nightly); the rest with edits.
    """
    parts = (
        select(func.count(Alert.id)).scalar_subquery(),
        select(func.max(Alert.id)).scalar_subquery(),
        select(func.count(AlertGroup.id)).scalar_subquery(),
        select(func.max(Run.id)).scalar_subquery(),
        select(func.max(IngestLog.id)).scalar_subquery(),
        select(func.max(Alert.updated_at)).scalar_subquery(),
        select(func.max(AlertGroup.updated_at)).scalar_subquery(),
        select(func.sum(AlertGroup.revision)).scalar_subquery(),  # membership moves, whatever the clock
        select(func.max(AlertHistory.id)).scalar_subquery(),
    )
    return tuple(session.execute(select(*parts)).one())


STRUCTURAL = 5  # data_version()[:5]: counts and newest ids


def alert_fingerprints(session: Session) -> dict[int, tuple]:
    """Per alert, what its page shows that on-call or a detect pass can edit in place.

    The audit trail's newest entry stands for the trail; the timestamp alone is not enough
    (replays and tests write with a given clock, and a group move does not touch it).
    """
    newest = dict(session.execute(
        select(AlertHistory.alert_id, func.max(AlertHistory.id)).group_by(AlertHistory.alert_id)
    ).all())
    return {
        aid: (group_id, updated_at, state, status, cause, human_cause, change_pct, newest.get(aid))
        for aid, group_id, updated_at, state, status, cause, human_cause, change_pct in session.execute(
            select(Alert.id, Alert.group_id, Alert.updated_at, Alert.state, Alert.status, Alert.cause,
                   Alert.human_cause, Alert.change_pct)
        )
    }


def stale_alerts(old: dict[int, tuple], new: dict[int, tuple]) -> set[int]:
    """Alerts whose page changed: edited ones, and every member of a group one joined or left
    (an alert page draws its group-mates first among the platform's kernels)."""
    changed = {a for a in old.keys() | new.keys() if old.get(a) != new.get(a)}
    moved = [a for a in changed if (old.get(a) or (None,))[0] != (new.get(a) or (None,))[0]]
    groups = {fp[0] for fps in (old, new) for a in moved if (fp := fps.get(a)) and fp[0] is not None}
    if groups:
        changed |= {a for a, fp in new.items() if fp[0] in groups}
    return changed


SESSION_COOKIE = b"benchwatch_session="
_ALERT_PATH = re.compile(r"/alerts/([1-9][0-9]{0,17})")
_QUEUE_PARAMS = ("status", "cause", "platform", "source", "page")


def queue_key(status: str | None, cause: str | None, platform: str | None, source: str | None,
              page: int) -> tuple:
    """The queue page's cache key; the minute is in it because the age column moves on."""
    return ("queue", (status or "active", cause or None, platform or None, source or None), page,
            int(time.time() // 60))


def alert_key(alert_id: int) -> tuple:
    return ("alert", alert_id)


def key_for(path: str, query: bytes) -> tuple | None:
    """The cache key of a plain GET, or None when only the full route can tell (odd params)."""
    m = _ALERT_PATH.fullmatch(path)
    if m:
        return alert_key(int(m.group(1))) if not query else None
    if path != "/":
        return None
    try:
        pairs = parse_qsl(query.decode("ascii"), keep_blank_values=True, strict_parsing=bool(query))
    except (UnicodeDecodeError, ValueError):
        return None
    params = {k: v.strip() for k, v in pairs}
    if len(params) != len(pairs) or not set(params) <= set(_QUEUE_PARAMS):
        return None
    page = params.pop("page", "") or "1"
    if not page.isdigit() or page.startswith("0"):
        return None
    return queue_key(params.get("status"), params.get("cause"), params.get("platform"),
                     params.get("source"), int(page))


class FastPages:
    """Serve current cached pages to anonymous GETs before routing (pure ASGI).

    The route would return the very same bytes; skipping the framework makes a hit cost a
    fraction of a millisecond, which leaves the CPU to the pages that must be rendered.
    """

    def __init__(self, app, cache: "PageCache") -> None:
        self.app = app
        self.cache = cache

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            cookies = b"".join(v for k, v in scope.get("headers", ()) if k == b"cookie")
            if SESSION_COOKIE not in cookies:
                key = key_for(scope["path"], scope.get("query_string", b""))
                html = self.cache.lookup(key) if key is not None else None
                if html is not None:
                    body = html.encode("utf-8")
                    await send({"type": "http.response.start", "status": 200, "headers": [
                        (b"content-type", b"text/html; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                    ]})
                    await send({"type": "http.response.body", "body": body})
                    return
        await self.app(scope, receive, send)


class PageCache:
    def __init__(self, store: Store, *, ttl_s: float = 2.0, max_pages: int = 4000) -> None:
        self._store = store
        self.ttl_s = ttl_s
        self._max = max_pages
        self._lock = threading.Lock()
        self._check_lock = threading.Lock()  # one version check (and page sweep) at a time
        self._version: tuple | None = None
        self._fingerprints: dict[int, tuple] = {}
        self._generation = 0  # bumped by every sweep; a render that saw an older one is not kept
        self._checked = 0.0
        self._refreshing = False
        self._pages: OrderedDict[tuple, str] = OrderedDict()
        self._rendering: dict[tuple, threading.Event] = {}

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def version(self, *, force: bool = False) -> tuple:
        """The data version, re-read when older than ``ttl_s`` (or ``force``); a new one sweeps
        the pages it makes stale before anyone can be served them."""
        with self._lock:
            if not force and self._fresh():
                return self._version
        with self._check_lock:
            with self._lock:  # another thread may have checked while this one waited
                if not force and self._fresh():
                    return self._version
                old = self._version
            with self._store.session() as s:
                v = data_version(s)  # first: a write after it only makes the next check move
                fingerprints = alert_fingerprints(s) if self.enabled and v != old else None
            with self._lock:
                if v != old:
                    same_shape = old is not None and v[:STRUCTURAL] == old[:STRUCTURAL]
                    self._sweep(fingerprints, same_shape)
                self._version, self._checked = v, time.monotonic()
            return v

    def _fresh(self) -> bool:
        """A version read less than ``ttl_s`` ago (caller holds the lock)."""
        return self._version is not None and time.monotonic() - self._checked < self.ttl_s

    def _sweep(self, fingerprints: dict[int, tuple] | None, same_shape: bool) -> None:
        """Drop the pages a new version makes stale (caller holds the lock)."""
        self._generation += 1
        if fingerprints is None or not same_shape:
            self._pages.clear()
        else:
            stale = stale_alerts(self._fingerprints, fingerprints)
            for key in [k for k in self._pages if k[0] != "alert" or k[1] in stale]:
                del self._pages[key]
        self._fingerprints = fingerprints or {}

    def invalidate(self) -> None:
        """After a write through this app: check now, so the author's redirect shows it."""
        try:
            self.version(force=True)
        except Exception:  # noqa: BLE001 - cannot tell what changed: forget every page
            with self._lock:
                self._version, self._checked = None, 0.0
                self._sweep(None, same_shape=False)

    def lookup(self, key: tuple) -> str | None:
        """The page if it is current, without touching the database (None: render it).

        Stale-while-revalidate: between ``ttl_s`` and twice that, the page is still served while
        one background thread re-reads the version (so a page is never more than 2 x ttl_s
        behind an outside write). Sending every request to the render threads instead, until
        someone re-read it, queued hundreds of cached hits behind first renders every ``ttl_s``.
        """
        if not self.enabled:
            return None
        with self._lock:
            age = time.monotonic() - self._checked
            if self._version is None or age >= 2 * self.ttl_s:
                return None
            html = self._pages.get(key)
            if html is None:
                return None
            if age >= self.ttl_s and not self._refreshing:
                self._refreshing = True
                threading.Thread(target=self._refresh, daemon=True).start()
            self._pages.move_to_end(key)
            return html

    def _refresh(self) -> None:
        try:
            self.version()
        except Exception:  # noqa: BLE001 - a failed read only means the next request re-reads
            with self._lock:
                self._checked = 0.0
        finally:
            with self._lock:
                self._refreshing = False

    def page(self, key: tuple, render: Callable[[], str]) -> str:
        """The current page for ``key``, rendering it once however many ask at the same moment.

        A Slack post sends the whole on-call rota to the same new alert within seconds; the
        first request renders, the others wait for its result instead of rendering it again.
        If that render fails, the waiters try in turn (each then sees the error itself).
        """
        if not self.enabled:
            return render()
        while True:
            self.version()
            with self._lock:
                html = self._pages.get(key)
                if html is not None:
                    self._pages.move_to_end(key)
                    return html
                busy = self._rendering.get(key)
                if busy is None:
                    done = self._rendering[key] = threading.Event()
                    generation = self._generation
            if busy is None:
                break
            busy.wait(timeout=30)
        try:
            html = render()
            with self._lock:
                if generation == self._generation:  # else the data moved while it rendered
                    self._pages[key] = html
                    self._pages.move_to_end(key)
                    while len(self._pages) > self._max:
                        self._pages.popitem(last=False)
        finally:
            with self._lock:
                del self._rendering[key]
            done.set()
        return html
