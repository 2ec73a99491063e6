"""The group page as on-call's landing page, in real headless Chromium: improvements and retracted
moves read as Slack reads them, the page's chart, culprit (with its author from the clone) and
links, actions on the whole group reaching every member's audit trail, and a phone's width."""

from __future__ import annotations

import re
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from service.config import Settings, WebSettings
from service.health.records import Finding
from service.store import health_writer
from service.store.db import Store
from service.store.tables import Alert, AlertGroup
from service.web.app import create_app
from service.web.auth import hash_password
from service.web.queue import QUEUE_CAUSES
from tests.browser import (browser, page, PASSWORD, PHONE, Served, chart_points, need_chromium,
                           wider_than_the_page)
from tests.web_world import XSS_KERNEL, XSS_SUBJECT, build_world

pytestmark = pytest.mark.browser
AUTHOR = "Grace Hopper & Co"  # untrusted text too (git itself drops < and > from names)


def _clone_with_culprit(path) -> str:
    """A one-commit git repo; its sha becomes the real group's culprit (so the page can name the
    author the way production reads it from the Helion clone)."""
    env = {"GIT_AUTHOR_NAME": AUTHOR, "GIT_AUTHOR_EMAIL": "g@example.com", "GIT_COMMITTER_NAME": "x",
           "GIT_COMMITTER_EMAIL": "x@example.com", "HOME": str(path), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "f.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(path), "add", "f.py"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", XSS_SUBJECT], check=True, env=env)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True, env=env,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    need_chromium()
    tmp = tmp_path_factory.mktemp("groups")
    repo = tmp / "helion"
    sha = _clone_with_culprit(repo)
    store = Store(f"sqlite:///{tmp / 'bw.db'}")
    today = datetime.now(timezone.utc).replace(tzinfo=None, hour=8, minute=0, second=0, microsecond=0)
    world = build_world(store, nights=60, start=today - timedelta(days=57))
    with store.session() as s:
        for a in s.query(Alert).filter(Alert.group_id == world.groups["real"]):
            a.culprit = {**a.culprit, "sha": sha[:8], "full_sha": sha}
        s.get(AlertGroup, world.groups["method"]).state = "retracted"  # as detection leaves it
        s.get(Alert, world.alerts["method"]).state = "retracted"
        s.get(AlertGroup, world.groups["noise"]).cause = "real"  # a real move for the better
        for a in s.query(Alert).filter(Alert.group_id == world.groups["noise"]):
            a.cause, a.direction, a.change_pct, a.status = "real", "improvement", 6.0, "open"
        # one health finding: the nightly's health group sits in the queue beside the moves
        health_writer.reconcile(s, "dashboard", [Finding("platform_outage", "dashboard", "no h100 results",
                                                         platform_short="h100")],
                                day_of={"platform_outage": f"{today:%Y-%m-%d}"}, run_pk=world.runs[-1], now=today)
    settings = Settings(web=WebSettings(secret_key="browser-test-key",
                                        users={"alice": hash_password(PASSWORD, rounds=4)}),
                        helion={"repo": str(repo)})
    with Served(create_app(settings, store)) as base:
        yield base, world, store, sha
    store.dispose()


def sign_in(pg, base: str, next_: str) -> None:
    pg.goto(f"{base}/login?next={next_}")
    pg.fill("input[name=name]", "alice")
    pg.fill("input[name=password]", PASSWORD)
    pg.click("form.login button[type=submit]")
    pg.wait_for_url(re.compile(re.escape(next_) + "$"))


def test_improvement_and_retracted_read_as_slack_reads_them(site, page):
    base, world, _, _ = site
    page.goto(base + "/")
    moves = [page.locator("table.queue tbody tr:not([data-cause=health])").nth(i).get_attribute("data-group")
             for i in range(page.locator("table.queue tbody tr:not([data-cause=health])").count())]
    assert moves == [str(world.groups["real"]), str(world.groups["hardware"])]  # the work only
    assert "2 not shown" in page.locator("[data-testid=hidden]").inner_text()
    page.click("[data-testid=cause-counts] a[data-cause=improvement]")
    page.wait_for_url(re.compile(r"cause=improvement"))
    badge = page.locator("table.queue tbody tr .badge").first
    assert badge.inner_text() == "Real improvement"
    assert badge.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(26, 127, 55)"  # green, not red
    page.click("table.queue a.open")
    assert page.locator("[data-testid=cause] .badge").first.inner_text().startswith("Real improvement")
    assert " gained 6% speedup " in page.locator("[data-testid=headline]").inner_text()
    assert "Nothing to fix" in page.locator("[data-testid=next-steps]").inner_text()

    page.goto(base + "/?cause=noise")
    assert page.locator("table.queue tbody tr .badge").first.inner_text() == "Retracted"
    page.goto(f"{base}/groups/{world.groups['method']}")
    assert page.locator("[data-testid=headline]").inner_text().startswith("Retracted: the move of softmax")
    assert page.locator("[data-testid=commit]").count() == 0  # no culprit for a withdrawn move
    page.goto(f"{base}/alerts/{world.alerts['method']}")
    assert page.locator("[data-testid=cause] .badge").first.inner_text() == "Retracted"
    assert "retracted" in page.locator("[data-testid=true-speedup]").inner_text()
    assert page.locator("[data-testid=commit]").count() == 0  # its change commit, like the group page's
    page.goto(f"{base}/alerts/{world.alerts['gemm']}")  # a live move still names its culprit
    assert page.locator("[data-testid=commit] .subject").inner_text() == XSS_SUBJECT
    assert page.problems == []


def _rgba(css: str) -> tuple[float, ...]:
    """(r, g, b, alpha) of a computed CSS colour such as ``rgb(1, 2, 3)`` or ``rgba(0, 0, 0, 0)``."""
    parts = [float(x) for x in re.findall(r"[\d.]+", css)]
    return tuple(parts) if len(parts) == 4 else (*parts, 1.0)


def _contrast(fg: str, bg: str) -> float:
    """WCAG contrast ratio of two opaque colours (1 to 21)."""
    def lum(c):
        lin = [(v / 255) / 12.92 if v / 255 <= 0.04045 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in c[:3]]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(_rgba(fg)), lum(_rgba(bg))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _legible(badge) -> tuple[str, float]:
    """(text, contrast) of a badge against its own background; a transparent one scores 0."""
    bg, fg = badge.evaluate("e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]")
    return badge.inner_text(), (_contrast(fg, bg) if _rgba(bg)[3] > 0 else 0.0)


def test_health_group_badge_reads_health_in_its_own_colour(site, page, browser):
    """The health group's badge (queue row and its page) was white text on no background: blank."""
    base, _, _, _ = site
    page.goto(base + "/")
    row = page.locator("table.queue tbody tr[data-cause=health]")
    assert row.count() == 1
    text, contrast = _legible(row.locator(".badge"))
    assert text == "Health" and contrast >= 4.5
    row.locator("a.open").click()
    page.wait_for_url(re.compile(r"/groups/\d+$"))
    text, contrast = _legible(page.locator("h1 .badge"))
    assert text == "Health" and contrast >= 4.5
    assert "no h100 results" in page.locator("[data-testid=health-members]").inner_text()
    health_page = page.url
    page.goto(base + "/")
    assert page.locator("[data-testid=cause-counts] a[data-cause=health]").inner_text().startswith("Health")
    finding = row.locator(".kernel").inner_text()
    assert finding.startswith("H") and finding.endswith(" platform_outage h100")  # no "-@h100"
    assert page.problems == []
    ctx = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    phone = ctx.new_page()
    phone.goto(health_page)  # its findings table scrolls in its own box, not the page
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], wider_than_the_page(phone)
    ctx.close()


def test_every_cause_label_has_a_legible_badge(site, page):
    """Each label a badge can carry (the queue's causes and "retracted") has its own background
    with readable text: a new label without a colour fails here, not in a screenshot."""
    base, _, _, _ = site
    page.goto(base + "/")
    labels = (*QUEUE_CAUSES, "retracted")
    page.evaluate("""labels => { const box = document.createElement('div'); box.id = 'all-badges';
        for (const l of labels) { const b = document.createElement('span'); b.className = 'badge cause-' + l;
          b.dataset.label = l; b.textContent = l; box.appendChild(b); } document.querySelector('main').appendChild(box); }""",
                  list(labels))
    colours = {}
    for label in labels:
        _, contrast = _legible(page.locator(f"#all-badges [data-label={label}]"))
        assert contrast >= 4.5, label
        colours[label] = page.locator(f"#all-badges [data-label={label}]").evaluate(
            "e => getComputedStyle(e).backgroundColor")
    assert len(set(colours.values())) == len(labels), colours  # no two labels share a colour


def test_group_page_shows_the_chart_culprit_with_author_and_links(site, page):
    base, world, _, sha = site
    page.goto(f"{base}/groups/{world.groups['real']}")
    headline = page.locator("[data-testid=headline]").inner_text()
    assert headline.startswith("gemm and 1 more on b200 lost 20% speedup on ")
    assert f"— real regression, culprit {sha[:8]} {XSS_SUBJECT} by {AUTHOR}" in headline
    assert chart_points(page, "#main-chart") > 4 * 40  # the lead kernel's metrics around the step
    assert page.locator(".smalls figure").count() == 1  # the other member, not the whole platform
    assert page.locator(".smalls figcaption").inner_text() == XSS_KERNEL
    page.locator(".smalls .chart[data-rendered]").first.wait_for()
    commit = page.locator("[data-testid=commit]")
    assert commit.locator(".subject").inner_text() == XSS_SUBJECT
    assert commit.locator("[data-testid=author]").inner_text() == AUTHOR
    assert commit.locator("a.sha").get_attribute("href") == f"https://github.com/pytorch/helion/commit/{sha}"
    compare = page.locator("[data-testid=compare]").get_attribute("href")
    assert re.fullmatch(r"https://github\.com/pytorch/helion/compare/[0-9a-f]{40}\.\.\.[0-9a-f]{40}", compare)
    assert re.fullmatch(r"https://github\.com/pytorch/helion/actions/runs/\d+",
                        page.locator("[data-testid=actions-run]").get_attribute("href"))
    assert f"Ping {AUTHOR} about {sha[:8]}" in page.locator("[data-testid=next-steps]").inner_text()
    rows = page.locator("[data-testid=members] tbody tr")
    assert rows.count() == 2 and rows.first.get_attribute("data-kernel") == "gemm"
    assert "−20.0%" in rows.first.inner_text() and "1.28×" in rows.first.inner_text()
    evidence = page.locator("[data-testid=evidence]").inner_text()
    assert "triton and torch.compile stayed flat" in evidence and "helion_only" not in evidence
    assert page.evaluate("document.querySelectorAll('main script:not([type]), img[src=x]').length") == 0
    assert page.problems == []


def test_group_actions_reach_every_member(site, page):
    base, world, store, _ = site
    gid = world.groups["hardware"]
    members = [world.alerts[k] for k in world.alerts if k.startswith("hw-")]
    sign_in(page, base, f"/groups/{gid}")
    page.fill("form[data-action=ack] input[name=note]", "looking at the runner")
    page.click("form[data-action=ack] button")
    page.wait_for_selector(".flash >> text=recorded on %d alerts" % len(members))
    page.fill("form[data-action=assign] input[name=assignee]", "bob")
    page.click("form[data-action=assign] button")
    page.wait_for_selector("[data-testid=assignee]:text-is('bob')")
    audit = page.locator("[data-testid=audit] tbody tr")
    texts = [audit.nth(i).inner_text() for i in range(audit.count())]
    assert any("alice" in t and "acknowledged" in t and "looking at the runner" in t
               and t.rstrip().endswith(str(len(members))) for t in texts), texts
    for alert_id in members:  # each member's own page carries the actions
        page.goto(f"{base}/alerts/{alert_id}")
        trail = page.locator("[data-testid=audit]").inner_text()
        assert "acknowledged" in trail and "looking at the runner" in trail and "assigned" in trail, alert_id
        assert page.locator("p.summary [data-testid=status]").inner_text() == "acknowledged"
    page.goto(f"{base}/groups/{gid}")
    page.select_option("form[data-action=reclassify] select[name=cause]", "method_change")
    page.click("form[data-action=reclassify] button")
    page.wait_for_selector("[data-testid=cause] .badge:has-text('Benchmark method change')")
    page.click("form[data-action=resolve] button")
    page.wait_for_selector(".pill.status-resolved")
    page.click("form[data-action=reopen] button")
    page.wait_for_selector(f".summary:has-text('×{len(members)}') .pill.status-open")
    with store.session() as s:
        rows = s.query(Alert).filter(Alert.id.in_(members)).all()
        assert {(a.status, a.human_cause) for a in rows} == {("open", "method_change")}
    assert page.problems == []


def test_group_page_with_chart_and_forms_fits_a_phone(site, browser):
    base, world, _, _ = site
    ctx = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    pg = ctx.new_page()
    sign_in(pg, base, f"/groups/{world.groups['real']}")
    chart_points(pg, "#main-chart")
    assert pg.evaluate("document.querySelector('#main-chart .main-svg').getBoundingClientRect().width") <= 390
    width = pg.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], wider_than_the_page(pg)
    ctx.close()
