"""Rendered pages for anonymous readers, reused until the data changes.

On-call mostly *reads*: 20 people refreshing the queue and opening alerts from Slack. A page is
kept with the "data version" it was rendered at (a one-statement summary of alerts, groups,
audit entries, runs and ingests); the version is re-read at most every `ttl_s` seconds, and an
action taken through this app drops it at once, so its author sees the change on the redirect.
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
    """Changes whenever anything a page shows can have changed (one round trip)."""
    parts = (
        select(func.count(Alert.id)).scalar_subquery(),
        select(func.max(Alert.id)).scalar_subquery(),
        select(func.max(Alert.updated_at)).scalar_subquery(),
        select(func.count(AlertGroup.id)).scalar_subquery(),
        select(func.max(AlertGroup.updated_at)).scalar_subquery(),
        select(func.max(AlertHistory.id)).scalar_subquery(),
        select(func.max(Run.id)).scalar_subquery(),
        select(func.max(IngestLog.id)).scalar_subquery(),
    )
    return tuple(session.execute(select(*parts)).one())


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
        self._version: tuple | None = None
        self._checked = 0.0
        self._refreshing = False
        self._pages: OrderedDict[tuple, tuple[tuple, str]] = OrderedDict()

    def version(self) -> tuple:
        now = time.monotonic()
        with self._lock:
            if self._version is not None and now - self._checked < self.ttl_s:
                return self._version
        with self._store.session() as s:
            v = data_version(s)
        with self._lock:
            self._version, self._checked = v, time.monotonic()
        return v

    def invalidate(self) -> None:
        """Forget the version (the next request re-reads it); pages of the old one die with it."""
        with self._lock:
            self._version = None
            self._checked = 0.0

    def lookup(self, key: tuple) -> str | None:
        """The page if it is current, without touching the database (None: render it).

        Stale-while-revalidate: between ``ttl_s`` and twice that, the page is still served while
        one background thread re-reads the version (so a page is never more than 2 x ttl_s
        behind an outside write). Sending every request to the render threads instead, until
        someone re-read it, queued hundreds of cached hits behind first renders every ``ttl_s``.
        An action through this app still drops the version at once (`invalidate`).
        """
        with self._lock:
            age = time.monotonic() - self._checked
            if self._version is None or age >= 2 * self.ttl_s:
                return None
            hit = self._pages.get(key)
            if hit is None or hit[0] != self._version:
                return None
            if age >= self.ttl_s and not self._refreshing:
                self._refreshing = True
                threading.Thread(target=self._refresh, daemon=True).start()
            self._pages.move_to_end(key)
            return hit[1]

    def _refresh(self) -> None:
        try:
            self.version()
        except Exception:  # noqa: BLE001 - a failed read only means the next request re-reads
            self.invalidate()
        finally:
            with self._lock:
                self._refreshing = False

    def page(self, key: tuple, render: Callable[[], str]) -> str:
        version = self.version()
        with self._lock:
            hit = self._pages.get(key)
            if hit is not None and hit[0] == version:
                self._pages.move_to_end(key)
                return hit[1]
        html = render()
        with self._lock:
            self._pages[key] = (version, html)
            self._pages.move_to_end(key)
            while len(self._pages) > self._max:
                self._pages.popitem(last=False)
        return html
