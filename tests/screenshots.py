"""Write the README screenshots from a `make demo` store: the queue and the group page of the
demo's real regression, at desktop width and at a 390-px phone, in Debian's headless Chromium.

    .venv/bin/python -m tests.screenshots [--dir var/shots]   # writes docs/screenshots/*.png

Not a test (nothing to assert beyond the pictures): run it after a change to the pages and look
at the PNGs.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from sqlalchemy import select

from service.config import Settings, WebSettings
from service.store.db import Store
from service.store.tables import AlertGroup
from service.web.app import create_app
from tests import demo
from tests.browser import PHONE, ROOT, Served, chart_points, launch

TOKEN = "shots"


def _lead_group(store: Store) -> int:
    """The newest open real-regression group with a culprit (what Slack sends people to)."""
    from service.notify.view import group_view

    with store.session() as s:
        for g in s.scalars(select(AlertGroup).where(AlertGroup.parent_id.is_(None), AlertGroup.kind == "move")
                           .order_by(AlertGroup.id.desc())):
            v = group_view(s, g)
            if v.cause == "real" and v.direction == "regression" and v.commit and v.postable:
                return g.id
    raise SystemExit("screenshots: the demo store holds no open real regression with a culprit")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=str(ROOT / "var" / "shots"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = ap.parse_args(argv)
    work, out = Path(args.dir), Path(args.out)
    demo.main(["--no-serve", "--dir", str(work), "--nightlies", "120", "--replay", "20"])
    store = Store(f"sqlite:///{work / 'benchwatch.db'}")
    gid = _lead_group(store)
    settings = Settings(web=WebSettings(secret_key="shots", team_token=TOKEN),
                        helion={"repo": str(work / "helion"), "remote": ""})
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with Served(create_app(settings, store)) as base, sync_playwright() as p:
        browser = launch(p)
        for suffix, view in (("", {"width": 1360, "height": 900}), ("-phone", PHONE)):
            ctx = browser.new_context(viewport=view, device_scale_factor=1, is_mobile=bool(suffix))
            pg = ctx.new_page()
            pg.goto(f"{base}/login?next=/groups/{gid}")
            pg.fill("input[name=name]", "alice")
            pg.fill("input[name=password]", TOKEN)
            pg.click("form.login button[type=submit]")
            pg.wait_for_url(re.compile(rf"/groups/{gid}$"))
            chart_points(pg, "#main-chart")
            smalls = pg.locator(".smalls .chart")
            for i in range(smalls.count()):
                smalls.nth(i).locator(".main-svg").first.wait_for()
            pg.screenshot(path=str(out / f"group{suffix}.png"), full_page=True)
            pg.goto(base + "/")
            pg.screenshot(path=str(out / f"queue{suffix}.png"), full_page=True)
            ctx.close()
        browser.close()
    store.dispose()
    print(f"wrote {', '.join(sorted(p.name for p in out.glob('*.png')))} in {out} (group {gid})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
