"""The page cache: current pages without a database read, stale ones dropped selectively, one render per page."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.store.db import Store
from service.store.oncall import acknowledge, add_note
from service.store.tables import Alert, AlertGroup, IngestLog
from service.web.cache import PageCache, alert_key
from tests.web_world import build_world


def test_stale_while_revalidate_is_bounded(lite):
    store = lite
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


def _cached_world(store: Store):
    """A web world with every alert page and one queue page in a fresh cache."""
    world = build_world(store, nights=40)
    cache = PageCache(store, ttl_s=60)
    for aid in world.alerts.values():
        cache.page(alert_key(aid), lambda aid=aid: f"alert {aid}")
    cache.page(("queue", "active"), lambda: "queue")
    return world, cache


def _kept(cache: PageCache, world) -> set[str]:
    return {name for name, aid in world.alerts.items() if cache.lookup(alert_key(aid)) is not None}


def test_an_edit_drops_only_the_pages_it_changes(store):
    """A note or an acknowledgement re-renders that alert's page and the queue, not all pages."""
    world, cache = _cached_world(store)
    with store.session() as s:
        add_note(s, world.alerts["gemm"], by="alice", note="looking")
    cache.invalidate()  # what the app does after its own write
    assert _kept(cache, world) == set(world.alerts) - {"gemm"}
    assert cache.lookup(("queue", "active")) is None
    with store.session() as s:  # another process (the CLI) acknowledges: seen at the next check
        acknowledge(s, world.alerts["hw-gemm"], by="bob")
    assert cache.lookup(alert_key(world.alerts["hw-gemm"])) is not None  # until the version is re-read
    cache.version(force=True)
    assert _kept(cache, world) == set(world.alerts) - {"gemm", "hw-gemm"}


def test_a_group_move_drops_the_pages_of_both_groups(store):
    world, cache = _cached_world(store)
    with store.session() as s:  # detection regroups the method alert, bumping the group (alerts_writer)
        s.get(Alert, world.alerts["method"]).group_id = world.groups["real"]
        s.get(AlertGroup, world.groups["real"]).updated_at = datetime(2027, 1, 1)
    cache.version(force=True)
    assert _kept(cache, world) == set(world.alerts) - {"method", "gemm", "xss"}


def test_new_rows_drop_every_page(store):
    """A nightly (new runs, alerts or groups) may change any chart or list: nothing is kept."""
    world, cache = _cached_world(store)
    with store.session() as s:
        s.add(IngestLog(source="dashboard", location="http://127.0.0.1/x.json",
                        started_at=datetime(2026, 1, 1), outcome="unchanged"))
    cache.version(force=True)
    assert _kept(cache, world) == set()


def test_a_page_rendered_across_a_change_is_not_kept(lite):
    """A render that began before the data moved may show the old data: serve it, don't keep it."""
    store = lite
    world = build_world(store, nights=40)
    cache = PageCache(store, ttl_s=60)
    key = alert_key(world.alerts["gemm"])

    def render_while_someone_writes() -> str:
        with store.session() as s:
            add_note(s, world.alerts["gemm"], by="alice", note="mid-render")
        cache.invalidate()
        return "old"

    assert cache.page(key, render_while_someone_writes) == "old"
    assert cache.lookup(key) is None
    assert cache.page(key, lambda: "new") == "new" and cache.lookup(key) == "new"


def test_concurrent_first_views_render_a_page_once(lite):
    """Twenty people opening the same new alert from Slack cause one render, not twenty."""
    store = lite
    cache = PageCache(store, ttl_s=5)
    renders = []
    started = threading.Event()

    def slow_render() -> str:
        renders.append(threading.get_ident())
        started.set()
        time.sleep(0.2)
        return "<p>alert</p>"

    with ThreadPoolExecutor(max_workers=20) as pool:
        first = pool.submit(cache.page, ("alert", 1), slow_render)
        started.wait(5)
        rest = [pool.submit(cache.page, ("alert", 1), slow_render) for _ in range(19)]
        pages = [first.result(10)] + [f.result(10) for f in rest]
    assert pages == ["<p>alert</p>"] * 20
    assert len(renders) == 1


def test_a_failed_render_lets_a_waiter_render(lite):
    store = lite
    cache = PageCache(store, ttl_s=5)
    calls = []
    started = threading.Event()

    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            started.set()
            time.sleep(0.1)
            raise RuntimeError("database went away")
        return "<p>ok</p>"

    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(cache.page, ("alert", 2), flaky)
        started.wait(5)
        second = pool.submit(cache.page, ("alert", 2), flaky)
        with pytest.raises(RuntimeError):
            first.result(10)
        assert second.result(10) == "<p>ok</p>"
    assert len(calls) == 2
    assert cache.page(("alert", 2), flaky) == "<p>ok</p>" and len(calls) == 2  # now cached


def test_zero_ttl_turns_the_cache_off(lite):
    store = lite
    cache = PageCache(store, ttl_s=0)
    n = []
    for _ in range(3):
        assert cache.page(("k",), lambda: n.append(1) or "x") == "x"
        assert cache.lookup(("k",)) is None
    assert len(n) == 3
