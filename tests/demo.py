"""`make demo`: the whole loop offline, on a generated world, into ./var/demo.

A newcomer sees benchwatch work without the internet: a seeded world's nightlies are served
from a local HTTP server (the real fetch path), replayed night by night through the same
pass the scheduler runs, and the result is printed (and, where the web app is installed,
served on http://127.0.0.1:8080 until Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.dashboard_server import DashboardServer
from tests.worlds import WorldSpec, generate_world

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent / "benchwatch"


def _cli(env: dict, *args: str, check: bool = True) -> str:
    res = subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise SystemExit(f"demo: `benchwatch {' '.join(args)}` failed: {res.stderr.strip()}")
    return res.stdout


def _has(command: str, env: dict) -> bool:
    res = subprocess.run([str(BIN), command, "--help"], env=env, capture_output=True, text=True)
    return res.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nightlies", type=int, default=150)
    ap.add_argument("--replay", type=int, default=20, help="last nightlies replayed one by one")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--no-serve", action="store_true", help="do not start the web page at the end")
    args = ap.parse_args()

    var = ROOT / "var" / "demo"
    shutil.rmtree(var, ignore_errors=True)
    var.mkdir(parents=True)
    print(f"generating a {args.nightlies}-nightly world (seed {args.seed}) with its git history ...")
    world = generate_world(WorldSpec(seed=args.seed, nightlies=args.nightlies, repo_dir=str(var / "helion")))
    env = {
        **os.environ,
        "BENCHWATCH_DATABASE_URL": f"sqlite:///{var / 'benchwatch.db'}",
        "BENCHWATCH_HELION_REPO": str(world.repo),
        "BENCHWATCH_HELION_REMOTE": "",
    }
    loop = "run-once" if _has("run-once", env) else "ingest"
    with DashboardServer() as srv:
        sources = ("--dashboard", srv.url("dashboard"), "--pretuned", srv.url("pretuned"))
        first = args.nightlies - args.replay - 1
        for n in range(first, args.nightlies):
            srv.publish(dashboard=world.dashboard_bytes(n), pretuned=world.pretuned_bytes(n))
            out = _cli(env, loop, *sources)
            if n == first or n == args.nightlies - 1:
                print(f"night {n}: {out.strip()}")
            if loop == "ingest" and _has("detect", env):
                _cli(env, "detect")
    print(json.dumps(json.loads(_cli(env, "status", "--format", "json")), indent=1))
    if _has("alerts", env):
        print(_cli(env, "alerts", "--status", "all"))
    print(f"\nplanted events ({len(world.labels)}):")
    for lab in world.labels:
        ev = lab.event
        print(f"  night {ev.night:3d} {ev.source:9s} {ev.platform_short:9s} {ev.cause:13s} "
              f"{ev.kind:14s} {', '.join(ev.kernels[:4])}")
    if not args.no_serve and _has("serve", env) and importlib.util.find_spec("service.web.app"):
        print("\nserving the queue on http://127.0.0.1:8080 (Ctrl-C to stop)")
        try:
            subprocess.run([str(BIN), "serve", "--no-scheduler"], env=env)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
