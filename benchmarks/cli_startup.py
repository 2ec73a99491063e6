"""Wall time of the commands a person types: `benchwatch --help`, `status`, `alerts`, `investigate`.

Each command runs as its own process (what a person waits for: interpreter start-up, imports,
settings, the store) against a SQLite store holding a generated world of 120 nightlies, already
ingested and detected. Figures are the median and the best of ``--repeat`` runs, wall and CPU
(user + sys of the child: on a shared box the CPU time is the steadier figure).

``--checkout DIR`` times another checkout of benchwatch (e.g. `git archive` of an older commit)
with this venv instead of this one; ``--against DIR`` times both, run for run in turn (this tree,
then DIR, ``--repeat`` times), so a load that comes and goes on a shared box weighs on both alike.
Written to benchmarks/results/cli_startup.json (or cli_startup_<label>.json with ``--label``).
No test asserts these times (a shared box makes wall time a measurement, not a property).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
TARGETS = {"--help": 0.3, "status": 0.5, "alerts": 0.5}  # seconds of wall time (issue 11)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, cpu) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"cli_startup: {' '.join(argv[-4:])} failed: {res.stderr.strip().splitlines()[-1:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _prepare(tmp: Path, env: dict[str, str]) -> str:
    """A store with a detected world; returns the date to investigate (a planted event's night)."""
    from tests.worlds import WorldSpec, generate_world

    world = generate_world(WorldSpec(seed=2026, nightlies=120, repo_dir=str(tmp / "helion")))
    (tmp / "d.json").write_bytes(world.dashboard_bytes(119))
    (tmp / "p.json").write_bytes(world.pretuned_bytes(119))
    bw = [str(Path(sys.executable).parent / "benchwatch")]
    for args in (["db", "upgrade"], ["ingest", "--dashboard", str(tmp / "d.json"), "--pretuned", str(tmp / "p.json")],
                 ["detect"]):
        _run(bw + args, env, ROOT)
    event = next(lab.event for lab in world.labels if lab.event.source == "dashboard" and lab.event.night < 119)
    return f"{event.platform_short} {event.kernels[0]} {world.nights[event.night].date:%Y-%m-%d}"


def _command_line(checkout: str | None) -> tuple[list[str], Path, dict[str, str]]:
    """How to start benchwatch from a checkout (None: this tree's console script)."""
    if checkout is None:
        return [str(Path(sys.executable).parent / "benchwatch")], ROOT, {}
    path = Path(checkout).resolve()  # the other checkout's code first on the path, run as the script does
    return ([sys.executable, "-c", "import sys; from service.cli.main import app; sys.argv[0] = 'benchwatch'; app()"],
            path, {"PYTHONPATH": str(path)})


def _row(runs: list[tuple[float, float]], target: float | None) -> dict:
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    row = {"wall_median_s": round(statistics.median(walls), 3), "wall_best_s": round(min(walls), 3),
           "cpu_median_s": round(statistics.median(cpus), 3)}
    if target is not None:
        row["target_wall_s"] = target
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--checkout", help="time this checkout of benchwatch instead of this one")
    ap.add_argument("--against", help="also time this checkout, interleaved with this one (before/after)")
    ap.add_argument("--label", default="", help="results file suffix")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    for option, checkout in (("--checkout", args.checkout), ("--against", args.against)):
        if checkout and not (Path(checkout) / "service" / "cli" / "main.py").is_file():
            ap.error(f"{option} {checkout}: not a benchwatch checkout (no service/cli/main.py)")

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWATCH_")}
        env.update(BENCHWATCH_DATABASE_URL=f"sqlite:///{tmp / 'bw.db'}", BENCHWATCH_HELION_REPO=str(tmp / "helion"),
                   BENCHWATCH_HELION_REMOTE="")
        platform, kernel, day = _prepare(tmp, env).split()
        # compared with another checkout, this one starts the same way (python -c, its code first)
        trees = {"this": _command_line(args.checkout or (str(ROOT) if args.against else None))}
        if args.against:
            trees["against"] = _command_line(args.against)
        commands = {
            "--help": ["--help"],
            "status": ["status"],
            "alerts": ["alerts"],
            "alerts --status all": ["alerts", "--status", "all"],
            "investigate": ["investigate", "--platform", platform, "--kernel", kernel, "--date", day],
        }
        out: dict = {"checkout": str(args.checkout or ROOT), "against": args.against, "repeat": args.repeat,
                     "cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0], "commands": {}}
        for name, cmd in commands.items():
            runs: dict[str, list] = {t: [] for t in trees}
            for base, cwd, extra in trees.values():
                _run(base + cmd, {**env, **extra}, cwd)  # warm the page cache and the .pyc files
            for _ in range(args.repeat):
                for tree, (base, cwd, extra) in trees.items():
                    runs[tree].append(_run(base + cmd, {**env, **extra}, cwd))
            target = TARGETS.get(name.split()[0])
            rows = {tree: _row(r, target) for tree, r in runs.items()}
            out["commands"][name] = rows["this"] if len(rows) == 1 else rows
            for tree, row in rows.items():
                who = "" if len(rows) == 1 else f"{tree:8s}"
                print(f"{name:20s} {who}wall median {row['wall_median_s']:.3f} s (best {row['wall_best_s']:.3f}), "
                      f"cpu {row['cpu_median_s']:.3f} s" + (f"  target < {target} s" if target else ""), flush=True)
        out["load_avg_1m_after"] = os.getloadavg()[0]
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / (f"cli_startup_{args.label}.json" if args.label else "cli_startup.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"written {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
