"""Helpers of the browser tests: uvicorn on a free loopback port, Debian's Chromium or a skip
(a failure under CI=true), and what to read off a page (drawn chart points, elements wider than
a phone)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.net import free_port

CHROMIUM = "/usr/bin/chromium"
PASSWORD = "browser-pass-123"
ROOT = Path(__file__).resolve().parent.parent


def need_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {CHROMIUM} is missing (.ci/run installs Debian's chromium)")
    pytest.skip(f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)")


class Served:
    """uvicorn serving create_app on a free loopback port in a thread."""

    def __init__(self, app) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def chart_points(pg, selector: str) -> int:
    """Markers Plotly drew for a chart: proof the SVG exists and carries the data."""
    pg.wait_for_selector(f"{selector} .main-svg", timeout=20_000)
    return pg.locator(f"{selector} .scatterlayer .trace .points path").count()


PHONE = {"width": 390, "height": 844}


def wider_than_the_page(pg) -> list[str]:
    """Elements reaching past the viewport (what to fix when the width check fails)."""
    return pg.evaluate("""() => {
      const w = document.documentElement.clientWidth, out = [];
      for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect();
        if (r.right > w + 1 && !el.closest('.scroll-x')) out.push(el.tagName.toLowerCase() + '.' + el.className + ' ' + Math.round(r.right));
      }
      return out.slice(0, 8);
    }""")


def launch(playwright):
    """Debian's Chromium, headless, as the tests drive it."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])


def watched_page(browser, viewport: dict | None = None):
    """A desktop-sized page that collects console errors, page errors and any dialog (an
    executed alert()) in ``page.problems``; returns (context, page)."""
    ctx = browser.new_context(viewport=viewport or {"width": 1360, "height": 900})
    pg = ctx.new_page()
    pg.problems = []
    pg.on("console", lambda m: pg.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.problems.append(f"pageerror: {e}"))

    def _dialog(d) -> None:
        pg.problems.append(f"dialog: {d.message}")
        d.dismiss()

    pg.on("dialog", _dialog)
    return ctx, pg


# The fixtures every browser test module shares (a module imports them by name). ``site`` is the
# importing module's own served store: the browser starts after it, once per module.
@pytest.fixture(scope="module")
def browser(site):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx, pg = watched_page(browser)
    yield pg
    ctx.close()
