"""The on-call flow in real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright):
queue, filter, alert page with a drawn chart, sign in, acknowledge, reclassify, the audit trail,
and hostile strings staying text. Also writes the README screenshots when asked
(BENCHWATCH_WRITE_SCREENSHOTS=1 writes docs/screenshots/*.png)."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone

import pytest

from service.config import Settings, WebSettings
from service.store.db import Store
from service.web.app import create_app
from service.web.auth import hash_password
from tests.browser import (browser, page, PASSWORD, PHONE, ROOT, Served, chart_points, need_chromium,
                           wider_than_the_page)
from tests.web_world import XSS_KERNEL, XSS_NOTE, XSS_SUBJECT, build_world

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    need_chromium()
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('web') / 'bw.db'}")
    today = datetime.now(timezone.utc).replace(tzinfo=None, hour=8, minute=0, second=0, microsecond=0)
    world = build_world(store, nights=60, start=today - timedelta(days=57))  # recent, for the screenshots
    settings = Settings(web=WebSettings(secret_key="browser-test-key",
                                        users={"alice": hash_password(PASSWORD, rounds=4)}))
    with Served(create_app(settings, store)) as base:
        yield base, world
    store.dispose()


def test_queue_filter_alert_chart_sign_in_ack_reclassify(site, page):
    base, world = site
    page.goto(base + "/")
    rows = page.locator("table.queue tbody tr")
    assert rows.count() == 3
    assert page.locator("[data-testid=cause-counts]").inner_text().count("1") >= 3

    # filter by cause through the form
    page.select_option("select[name=cause]", "real")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"cause=real"))
    assert rows.count() == 1 and rows.first.get_attribute("data-cause") == "real"

    # open the alert from its kernel link
    page.click("table.queue a:text-is('gemm')")
    page.wait_for_url(re.compile(rf"/alerts/{world.alerts['gemm']}$"))
    assert chart_points(page, "#main-chart") > 4 * 40  # four metrics, 41+ nights each in the window
    assert int(page.get_attribute("#main-chart", "data-rendered")) > 160
    assert page.locator(".smalls .chart[data-rendered]").count() == 8  # the other b200 kernels
    assert page.locator("#main-chart .shapelayer path").count() >= 2  # last good / first bad lines

    # the hostile kernel name is text in the page and the charts
    assert page.locator(".smalls figcaption", has_text=XSS_KERNEL).count() == 1
    assert page.evaluate("document.querySelectorAll('img[src=x]').length") == 0

    # sign in from the page, land back on it
    page.click("text=Sign in")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.login button[type=submit]")
    page.wait_for_url(re.compile(rf"/alerts/{world.alerts['gemm']}"))
    assert page.locator("[data-testid=user]").inner_text() == "alice"
    status = page.locator("p.summary [data-testid=status]")
    assert status.inner_text() == "open"

    # acknowledge with a note, then reclassify
    page.fill("form[data-action=ack] input[name=note]", "on it " + XSS_NOTE)
    page.click("form[data-action=ack] button")
    page.wait_for_selector("p.summary [data-testid=status]:text-is('acknowledged')")
    page.select_option("form[data-action=reclassify] select[name=cause]", "method_change")
    page.click("form[data-action=reclassify] button")
    page.wait_for_selector("[data-testid=cause] .badge:has-text('Benchmark method change')")
    audit = page.locator("[data-testid=audit] tbody tr")
    texts = [audit.nth(i).inner_text() for i in range(audit.count())]
    assert any("alice" in t and "acknowledged" in t and XSS_NOTE in t for t in texts)
    assert any("alice" in t and "reclassified" in t and "method_change" in t for t in texts)
    assert page.locator("text=machine said Real regression").count() == 1
    assert page.problems == []


def test_hostile_commit_subject_and_note_show_as_text(site, page):
    base, world = site
    page.goto(f"{base}/alerts/{world.alerts['xss']}")
    chart_points(page, "#main-chart")
    assert page.locator("[data-testid=kernel]").inner_text() == XSS_KERNEL
    assert page.locator("[data-testid=commits] td.subject").first.inner_text() == XSS_SUBJECT
    assert page.locator("[data-testid=audit] td.note", has_text=XSS_NOTE).count() == 1
    assert page.evaluate("document.querySelectorAll('main script:not([type]), main b, img[src=x]').length") == 0
    page.goto(f"{base}/series?platform=b200&kernel={XSS_KERNEL}")
    assert chart_points(page, "#series-chart") == 60
    assert page.problems == []


def test_screenshots_of_queue_and_alert(site, page, tmp_path):
    """Writes docs/screenshots/{queue,alert}.png with BENCHWATCH_WRITE_SCREENSHOTS=1."""
    base, world = site
    out = ROOT / "docs" / "screenshots" if os.environ.get("BENCHWATCH_WRITE_SCREENSHOTS") == "1" else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    page.goto(base + "/?status=all")
    page.screenshot(path=str(out / "queue.png"), full_page=True)
    page.goto(f"{base}/login?next=/alerts/{world.alerts['hw-gemm']}")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.login button[type=submit]")
    page.wait_for_url(re.compile(rf"/alerts/{world.alerts['hw-gemm']}$"))
    chart_points(page, "#main-chart")
    n = page.locator(".smalls .chart").count()
    assert n == 7  # the other h100 kernels
    page.locator(".smalls .chart[data-rendered]").nth(n - 1).wait_for()
    page.screenshot(path=str(out / "alert.png"), full_page=True)
    for name in ("queue.png", "alert.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


@pytest.mark.parametrize("signed_in", [False, True])
def test_no_page_scrolls_sideways_on_a_phone(site, browser, signed_in):
    """At 390 px every page fits the screen: wide tables scroll inside their own box and the
    charts take the screen's width (signed in, the alert page also shows the action forms)."""
    base, world = site
    ctx = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    pg = ctx.new_page()
    if signed_in:
        pg.goto(base + "/login")
        pg.fill("input[name=name]", "alice")
        pg.fill("input[name=password]", PASSWORD)
        pg.click("form.login button[type=submit]")
        pg.wait_for_url(base + "/")
    pages = {
        "queue": ("/?status=all", None),
        "group": (f"/groups/{world.groups['hardware']}", None),
        "alert": (f"/alerts/{world.alerts['gemm']}", "#main-chart"),
        "alert with hostile names": (f"/alerts/{world.alerts['xss']}", "#main-chart"),
        "series": ("/series?platform=mi350x&kernel=softmax", "#series-chart"),
        "status": ("/status", None),
        "sign-in": ("/login", None),
    }
    too_wide = {}
    for name, (path, chart) in pages.items():
        pg.goto(base + path)
        if chart:
            chart_points(pg, chart)
            assert pg.evaluate(f"document.querySelector('{chart} .main-svg').getBoundingClientRect().width") <= 390
        width = pg.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            too_wide[name] = (width, wider_than_the_page(pg))
    ctx.close()
    assert too_wide == {}


def test_queue_on_a_phone_shows_each_groups_kernels_on_screen(site, browser):
    """At 390 px the queue is one card per group: its link and kernels (the work itself) are on
    the screen, not to the right of a table that scrolls sideways inside its box."""
    base, _ = site
    ctx = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    pg = ctx.new_page()
    pg.goto(base + "/?status=all")
    rows = pg.locator("table.queue tbody tr")
    assert rows.count() >= 3
    for i in range(rows.count()):
        for part in ("a.open", ".kernel", ".badge", "[data-testid=status]"):
            box = rows.nth(i).locator(part).first.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (i, part, box)
    ctx.close()


def test_series_form_changing_platform_drops_the_old_kernel(site, page):
    """The kernel picked for b200 is not carried to the next platform (it may not exist there,
    which is a 404 now): the form asks for the new platform alone and shows its first kernel."""
    base, _ = site
    page.goto(f"{base}/series?platform=b200&kernel=sum")
    chart_points(page, "#series-chart")
    with page.expect_navigation():
        page.select_option("select[name=platform]", "mi350x")
    assert "platform=mi350x" in page.url and "kernel=" not in page.url
    chart_points(page, "#series-chart")
    assert page.locator("select[name=platform]").input_value() == "mi350x"
    assert page.problems == []
