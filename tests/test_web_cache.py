"""The page cache serves a known-current page while it re-checks the data version in the background."""

from __future__ import annotations

import time

from service.store.db import Store
from service.web.cache import PageCache


def test_stale_while_revalidate_is_bounded(sqlite_url):
    store = Store(sqlite_url)
    cache = PageCache(store, ttl_s=0.2)
    renders = []
    assert cache.page(("k",), lambda: renders.append(1) or "<p>page</p>") == "<p>page</p>"
    assert cache.lookup(("k",)) == "<p>page</p>"  # fresh
    time.sleep(0.25)  # past ttl: still served, and one refresh starts in the background
    assert cache.lookup(("k",)) == "<p>page</p>"
    for _ in range(50):
        if not cache._refreshing:
            break
        time.sleep(0.01)
    assert cache.lookup(("k",)) == "<p>page</p>" and renders == [1]  # the refresh kept it current
    time.sleep(0.45)  # nobody asked for two ttl periods: the next reader re-reads synchronously
    assert cache.lookup(("k",)) is None
    cache.invalidate()
    assert cache.lookup(("k",)) is None  # an action drops the version at once
    store.dispose()
