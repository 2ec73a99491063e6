"""Rendered pages for anonymous readers, reused until the data changes.

On-call mostly *reads*: 20 people refreshing the queue and opening alerts from Slack. A page is
kept with the "data version" it was rendered at (a one-statement summary of alerts, groups,
audit entries, runs and ingests); the version is re-read at most every `ttl_s` seconds, and an
action taken through this app drops it at once, so its author sees the change on the redirect.
Signed-in pages (they carry a CSRF token and the user's name) are never cached.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable

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


class PageCache:
    def __init__(self, store: Store, *, ttl_s: float = 2.0, max_pages: int = 4000) -> None:
        self._store = store
        self._ttl = ttl_s
        self._max = max_pages
        self._lock = threading.Lock()
        self._version: tuple | None = None
        self._checked = 0.0
        self._pages: OrderedDict[tuple, tuple[tuple, str]] = OrderedDict()

    def version(self) -> tuple:
        now = time.monotonic()
        with self._lock:
            if self._version is not None and now - self._checked < self._ttl:
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
        """The page if it is current, without touching the database (None: render it)."""
        with self._lock:
            if self._version is None or time.monotonic() - self._checked >= self._ttl:
                return None
            hit = self._pages.get(key)
            if hit is None or hit[0] != self._version:
                return None
            self._pages.move_to_end(key)
            return hit[1]

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
