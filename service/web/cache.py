"""Rendered pages for anonymous readers, reused until the data changes.

On-call mostly *reads*: 20 people refreshing the queue and opening alerts from Slack. Pages are
kept until the data under them changes. A one-statement data version (`store.page_versions`) is
re-read at most every `ttl_s` seconds, and at once after an action taken through this app, so
its author sees the change on the redirect. When it moves, new runs, ingests, alerts or groups
drop every page (a nightly: everything may look different); otherwise per-alert fingerprints say
which alert pages (and which of their group-mates') are stale; queue pages always go. Signed-in
pages (they carry a CSRF token and the user's name) are never cached.

Why each part is here (each was measured by benchmarks/web_load.py or is held by
tests/test_web_cache.py; the README's *Speed* table has the figures):
- selective invalidation (fingerprints, `stale_alerts`): with one acknowledgement re-rendering
  every page, pages were rendered more often than they were reused while people worked the queue.
- `FastPages`, an ASGI bypass with its own URL parsing (`key_for`): a hit served before routing
  costs a fraction of a millisecond instead of a trip through FastAPI, which leaves the two CPUs
  to the pages that must be rendered. It runs before the router, so it must tell the cache key from
  the raw path and query itself; anything it is unsure of (odd parameters) goes to the route.
- stale-while-revalidate with one background thread (`lookup`/`_refresh`): sending every request
  to the render threads until someone re-read the version queued hundreds of cached hits behind
  first renders every `ttl_s` (p99 in the hundreds of ms). A page is at most 2 x ttl_s behind.
- two locks: `_lock` guards the dicts and is held for microseconds only; `_check_lock` lets one
  thread at a time read the version from the database (and sweep) without holding `_lock` during
  that query, so cached hits never wait on the database.
- the generation counter: a render that started before a sweep may hold old data; it is returned
  to its requester but not kept.
- `_rendering` events: a Slack post sends the whole rota to one new alert within seconds; the
  page is rendered once and the others wait for it.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from typing import Callable
from urllib.parse import parse_qsl

from service.store.db import Store
from service.store.page_versions import AlertFingerprint, DataVersion, alert_fingerprints, data_version


def stale_alerts(old: dict[int, AlertFingerprint], new: dict[int, AlertFingerprint]) -> set[int]:
    """Alerts whose page changed: edited ones, and every member of a group one joined or left
    (an alert page draws its group-mates first among the platform's kernels)."""
    def group_of(fps: dict[int, AlertFingerprint], a: int) -> int | None:
        fp = fps.get(a)
        return fp.group_id if fp is not None else None

    changed = {a for a in old.keys() | new.keys() if old.get(a) != new.get(a)}
    moved = [a for a in changed if group_of(old, a) != group_of(new, a)]
    groups = {g for fps in (old, new) for a in moved if (g := group_of(fps, a)) is not None}
    if groups:
        changed |= {a for a, fp in new.items() if fp.group_id in groups}
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
        self._version: DataVersion | None = None
        self._fingerprints: dict[int, AlertFingerprint] = {}
        self._generation = 0  # bumped by every sweep; a render that saw an older one is not kept
        self._checked = 0.0
        self._refreshing = False
        self._pages: OrderedDict[tuple, str] = OrderedDict()
        self._rendering: dict[tuple, threading.Event] = {}

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def version(self, *, force: bool = False) -> DataVersion:
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
                    same_shape = old is not None and v.structural == old.structural
                    self._sweep(fingerprints, same_shape)
                self._version, self._checked = v, time.monotonic()
            return v

    def _fresh(self) -> bool:
        """A version read less than ``ttl_s`` ago (caller holds the lock)."""
        return self._version is not None and time.monotonic() - self._checked < self.ttl_s

    def _sweep(self, fingerprints: dict[int, AlertFingerprint] | None, same_shape: bool) -> None:
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
