"""`make demo`: the whole loop offline, on a generated world, into ./var/demo.

A newcomer sees benchwatch work without the internet: a seeded world's nightlies are served
from a local HTTP server (the real fetch path), replayed night by night through the same
`run_once` pass the scheduler runs (ingest -> detect -> classify -> notify), with Slack
played by a local stand-in that speaks its Web API; then the web queue is served on
http://127.0.0.1:8080 until Ctrl-C, where anyone signs in with a name and the team token
``demo`` (DEMO_TOKEN) to try the on-call actions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from pydantic import SecretStr

from service.config import load_settings
from service.schedule.run_once import run_once
from service.store.db import Store
from service.store.status import store_status
from tests.dashboard_server import DashboardServer
from tests.slack_standin import TOKEN, SlackStandIn
from tests.worlds import WorldSpec, generate_world

ROOT = Path(__file__).resolve().parent.parent
DEMO_TOKEN = "demo"  # web sign-in for the served demo: any name + this team token


def message_text(blocks: list[dict], fallback: str) -> str:
    """A Slack message as a reader sees it: every block's text, in order (header, sections and
    their fields, context lines), never cut; the plain-text fallback when there are no blocks."""
    lines: list[str] = []
    for block in blocks or []:
        parts = [block.get("text")] + list(block.get("fields") or []) + list(block.get("elements") or [])
        lines += [p["text"] for p in parts if isinstance(p, dict) and p.get("text")]
    return "\n".join(lines) if lines else fallback


def _replay(world, nightlies: int, at_least: int = 25) -> int:
    """Nightlies to replay so that the newest planted event of every cause is among them: each
    is then posted one by one (a real regression with its culprit, a method change with its
    change commit, a hardware episode, noise retracted), not only counted in the backfill digest."""
    newest = {}
    for lab in world.labels:
        newest[lab.event.cause] = max(newest.get(lab.event.cause, 0), lab.event.night)
    return max(at_least, nightlies - min(newest.values(), default=nightlies))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nightlies", type=int, default=150)
    ap.add_argument("--replay", type=int, default=None,
                    help="last nightlies replayed one by one (default: 25, or more so that the newest "
                         "planted event of every cause is replayed and posted)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--no-serve", action="store_true", help="do not start the web page at the end")
    ap.add_argument("--dir", default=str(ROOT / "var" / "demo"), help="where the world and store go")
    args = ap.parse_args(argv)
    if args.nightlies < 2:
        ap.error("--nightlies must be at least 2")
    if args.replay is not None and not 0 < args.replay < args.nightlies:
        ap.error(f"--replay must be between 1 and {args.nightlies - 1} (--nightlies - 1)")

    var = Path(args.dir)
    shutil.rmtree(var, ignore_errors=True)
    var.mkdir(parents=True)
    print(f"generating a {args.nightlies}-nightly world (seed {args.seed}) with its git history ...", flush=True)
    world = generate_world(WorldSpec(seed=args.seed, nightlies=args.nightlies, repo_dir=str(var / "helion")))
    db_url = f"sqlite:///{var / 'benchwatch.db'}"
    store = Store(db_url)
    with DashboardServer() as srv, SlackStandIn() as slack:
        base = load_settings()
        settings = base.model_copy(update={
            "database": base.database.model_copy(update={"url": db_url}),
            "helion": base.helion.model_copy(update={"repo": str(world.repo), "remote": ""}),
            "slack": base.slack.model_copy(update={
                "token": SecretStr(TOKEN), "channel": "C0TRIAGE", "api_url": slack.base_url}),
        })
        first = args.nightlies - (args.replay if args.replay is not None else _replay(world, args.nightlies)) - 1
        for n in range(first, args.nightlies):
            srv.publish(dashboard=world.dashboard_bytes(n), pretuned=world.pretuned_bytes(n))
            now = world.nights[n].date + timedelta(hours=2)
            out = run_once(store, settings, dashboard=srv.url("dashboard"), pretuned=srv.url("pretuned"),
                           now=now, fetch_repo=False)
            print(f"night {n} ({now:%Y-%m-%d}): " + "; ".join(out.lines()[:3]), flush=True)
        with store.session() as s:
            print(json.dumps(store_status(s), indent=1))
        print(f"\nSlack stand-in received {len(slack.messages)} messages:")
        for i, m in enumerate(slack.messages, 1):
            edits = f", edited {len(m.edits)}x" if m.edits else ""
            print(f"\n  --- message {i} (ts {m.ts}{edits}) ---")
            for line in message_text(m.blocks, m.text).splitlines():
                print(f"  {line}")
    store.dispose()
    print(f"\nplanted events ({len(world.labels)}); only those in the replayed nights are posted one by one:")
    for lab in world.labels:
        ev = lab.event
        print(f"  night {ev.night:3d} {ev.source:9s} {ev.platform_short:9s} {ev.cause:13s} "
              f"{ev.kind:14s} {', '.join(ev.kernels[:4])}")
    if not args.no_serve:
        print("\nserving the queue on http://127.0.0.1:8080 (Ctrl-C to stop); to act on alerts, "
              f"sign in with any name and the team token {DEMO_TOKEN!r}", flush=True)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("BENCHWATCH_SLACK_")},
               "BENCHWATCH_DATABASE_URL": db_url, "BENCHWATCH_HELION_REPO": str(world.repo),
               "BENCHWATCH_HELION_REMOTE": "", "BENCHWATCH_WEB_TEAM_TOKEN": DEMO_TOKEN}
        try:
            subprocess.run([str(Path(sys.executable).parent / "benchwatch"), "serve", "--no-scheduler"], env=env)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
