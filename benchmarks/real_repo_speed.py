"""Speed on a year of a real-repo world: cold `detect`, one more nightly, `investigate` as a CLI call.

The world is a blind real-repo world (`tests.blind_worlds.build_world`: nightlies on the real
Helion shas of the bundle, documents built by Helion's own builders, the world's `.repo` a clone
of the real repository), ``--nights`` long (365 by default). Building it is not timed. Then:

- the documents of every nightly but the last are ingested into a fresh SQLite store (timed, for
  reference) and `detect_pass` (the entry `benchwatch detect` and `run-once` use) runs cold over
  the whole year, the world's clone as the Helion repo (target < 3 s);
- one more nightly: the last night's documents are ingested and detected (target < 1 s);
- `investigate` of one kernel as a real CLI subprocess (`benchwatch investigate --platform P
  --kernel K --date D --repo R`), wall time with interpreter start, the store and the git reads of
  the real repo, median of ``--repeat`` (target < 0.7 s) (and, for reference, from source as an
  editable checkout under PYTHONDONTWRITEBYTECODE runs it);

Every step runs with the service's bytecode compiled first, as `pip install .` leaves it in the
deployed image (`_compile_service`).
- identical alerts: the alerts after the incremental nightly against the alerts of one cold
  `detect` over the same nights in another fresh store (printed, and in the JSON).

``--profile`` also writes cProfile tables of the three timed steps (top functions by cumulative
time) next to the JSON. Results: benchmarks/results/real_repo_speed.json.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "real_repo_speed.json"
TARGETS = {"detect_cold_s": 3.0, "one_nightly_s": 1.0, "investigate_cli_s": 0.7}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ingest(store, settings, world, n: int, workdir: Path) -> None:
    from service.pipeline.ingest_pass import ingest_source

    for source, raw in (("dashboard", world.dashboard_bytes(n)), ("pretuned", world.pretuned_bytes(n))):
        if raw is None:
            continue
        path = workdir / f"{source}-{n}.json"
        path.write_bytes(raw)
        ingest_source(store, settings, source, str(path))


def _alert_set(store) -> dict[tuple, dict]:
    """Every alert as what on-call sees of it (no ids, no timestamps): (source, platform,
    kernel, metric, first bad run, last good run, state) -> cause, kind, culprit, change commit,
    status and the honest speedup."""
    from service.store.alert_reads import list_alerts

    def sha(d):
        return (d or {}).get("full_sha") or ""

    with store.session() as s:
        rows = list_alerts(s, status="all")
    return {
        (a["source"], a["platform_short"], a["kernel"], a["metric"], a["first_bad"]["run_id"],
         a["last_good"]["run_id"], a["state"]): {
            "cause": a["machine_cause"], "kind": a.get("kind") or "", "culprit": sha(a.get("culprit")),
            "change_commit": sha(a.get("change_commit")), "status": a["status"],
            "honest_speedup": a.get("true_speedup")}
        for a in rows
    }


def _compare(incremental: dict[tuple, dict], cold: dict[tuple, dict]) -> dict:
    """The identical-alerts check: the same alerts saying the same thing (cause, kind, culprit,
    change commit, status), and separately how far the honest speedups stand apart."""
    said = ("cause", "kind", "culprit", "change_commit", "status")
    only_inc = sorted(set(incremental) - set(cold))
    only_cold = sorted(set(cold) - set(incremental))
    both = sorted(set(incremental) & set(cold))
    differ = [k for k in both if any(incremental[k][f] != cold[k][f] for f in said)]
    rel = []
    for k in both:
        a, b = incremental[k]["honest_speedup"], cold[k]["honest_speedup"]
        if a is not None and b:
            rel.append((abs(a - b) / abs(b), k))
        elif (a is None) != (b is None):
            rel.append((float("inf"), k))
    honest_diff = sorted((r for r in rel if r[0] > 0), reverse=True)

    def row(k, d):
        return [*k, *(d[k][f] for f in said), d[k]["honest_speedup"]]

    return {
        "incremental": len(incremental), "cold": len(cold),
        "identical": not only_inc and not only_cold and not differ,
        "identical_with_honest_speedup": not only_inc and not only_cold and not differ and not honest_diff,
        "only_incremental": [row(k, incremental) for k in only_inc],
        "only_cold": [row(k, cold) for k in only_cold],
        "same_alert_saying_otherwise": [{"alert": list(k), "incremental": incremental[k], "cold": cold[k]} for k in differ],
        "honest_speedup_differs": len(honest_diff),
        "honest_speedup_max_rel_diff": max((round(r, 6) for r, _ in honest_diff if r != float("inf")), default=0.0),
        "honest_speedup_missing_on_one_side": sum(1 for r, _ in honest_diff if r == float("inf")),
    }


def _compile_service() -> None:
    """The service's bytecode, written as `pip install .` writes it in the deployed image. An
    editable checkout under PYTHONDONTWRITEBYTECODE (this workplace, the image's env) would
    otherwise compile every module it imports lazily from source inside the timed steps. Into
    each package's __pycache__, which git ignores."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "service")], check=True,
                   capture_output=True, timeout=300)


@contextlib.contextmanager
def _without_service_bytecode():
    """The service's __pycache__ folders set aside for a while (restored after)."""
    moved = []
    try:
        for d in sorted((ROOT / "service").rglob("__pycache__")):
            aside = d.with_name("__pycache__.aside")
            d.rename(aside)
            moved.append((aside, d))
        yield
    finally:
        for aside, d in moved:
            aside.rename(d)


def _profiled(fn, prof: cProfile.Profile | None):
    if prof is None:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    t0 = time.perf_counter()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    return time.perf_counter() - t0


def _top(prof: cProfile.Profile, n: int = 40) -> str:
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(n)
    return buf.getvalue()


def _ruptures_import_s() -> float:
    """What the cold pass pays to import ruptures on its first search (`detect.core._rpt`: it
    loads SciPy's stats and spatial modules for costs detection never uses), in a new process
    that has numpy, SQLAlchemy and pydantic already, as the service has by then."""
    code = ("import time, numpy, sqlalchemy, pydantic\n"
            "t = time.perf_counter(); import ruptures; print(time.perf_counter() - t)")
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
            for _ in range(3)]
    return round(statistics.median(runs), 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--repeat", type=int, default=5, help="investigate CLI runs (median)")
    ap.add_argument("--profile", action="store_true", help="cProfile the timed steps")
    ap.add_argument("--workdir", type=Path, help="keep the world here (built once, reused)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    args.results.parent.mkdir(parents=True, exist_ok=True)

    _compile_service()
    t0 = time.perf_counter()
    import service.classify  # noqa: F401  the service's modules, imported before any timing
    import service.detect.series  # noqa: F401  (ruptures, numpy: a process's start-up, not the pass)
    import service.pipeline.events  # noqa: F401
    from service.cli.context import tune_gc
    from service.config import load_settings
    from service.pipeline.detect_pass import detect_pass
    from service.store.db import Store
    from tests.blind_worlds import build_world

    tune_gc()  # what every `benchwatch` process does at start

    imports_s = time.perf_counter() - t0
    out: dict = {"seed": args.seed, "nights_asked": args.nights, "nproc": os.cpu_count(), "cpu": _cpu_model(),
                 "python": platform.python_version(), "load_avg_1m_before": round(os.getloadavg()[0], 2),
                 "targets": TARGETS, "service_imports_s": round(imports_s, 3)}
    profiles: dict[str, cProfile.Profile] = {}
    tmp_ctx = tempfile.TemporaryDirectory()
    with tmp_ctx as tmp_s:
        tmp = Path(tmp_s)
        workdir = args.workdir or (tmp / "world")
        t0 = time.perf_counter()
        world = build_world(args.seed, workdir / f"blind-{args.seed}", nights=args.nights,
                            repo=workdir / "helion")
        last = len(world.nights) - 1
        for n in (last - 1, last):  # the documents are built night by night: build them here, untimed
            world.dashboard_bytes(n), world.pretuned_bytes(n)
        out["world_build_s"] = round(time.perf_counter() - t0, 1)
        gc.collect()
        gc.freeze()  # the world's objects are the benchmark's, not the service's: keep them out of its collections
        out["nights"] = len(world.nights)
        out["first_night"] = f"{world.nights[0].date:%Y-%m-%d}"
        out["last_night"] = f"{world.nights[last].date:%Y-%m-%d}"
        out["series_in_world"] = world.series_count()
        print(f"world: seed {args.seed}, {out['nights']} nightlies {out['first_night']}..{out['last_night']}, "
              f"{out['series_in_world']} series, built in {out['world_build_s']} s", flush=True)
        settings = load_settings()
        repo = Path(world.repo)
        docs = tmp / "docs"
        docs.mkdir()

        # (a) the year but the last night, ingested, then one cold detect
        store = Store(f"sqlite:///{tmp / 'bw.db'}")
        t0 = time.perf_counter()
        _ingest(store, settings, world, last - 1, docs)
        out["ingest_year_s"] = round(time.perf_counter() - t0, 3)
        with store.session() as s:
            from service.store.series_io import series_refs

            out["series_stored"] = len(series_refs(s))
        prof = cProfile.Profile() if args.profile else None
        res: dict = {}
        out["detect_cold_s"] = round(_profiled(
            lambda: res.__setitem__("cold", detect_pass(store, settings, repo, fetch=False,
                                                        now=world.nights[last - 1].date)), prof), 3)
        if prof:
            profiles["detect_cold"] = prof
        out["moves_cold"] = res["cold"].moves
        out["series_checked_cold"] = res["cold"].series_checked

        # (b) one more nightly: ingest + detect of the last night only
        prof = cProfile.Profile() if args.profile else None

        def nightly():
            t = time.perf_counter()
            _ingest(store, settings, world, last, docs)
            res["ingest_s"] = time.perf_counter() - t
            res["inc"] = detect_pass(store, settings, repo, fetch=False, now=world.nights[last].date)

        out["one_nightly_s"] = round(_profiled(nightly, prof), 3)
        out["one_nightly_ingest_s"] = round(res["ingest_s"], 3)
        out["one_nightly_detect_s"] = round(out["one_nightly_s"] - res["ingest_s"], 3)
        out["series_checked_nightly"] = res["inc"].series_checked
        if prof:
            profiles["one_nightly"] = prof
        incremental = _alert_set(store)
        store.dispose()

        # identical alerts: one cold detect over the same nights in a fresh store
        store2 = Store(f"sqlite:///{tmp / 'bw-cold.db'}")
        _ingest(store2, settings, world, last, docs)
        t0 = time.perf_counter()
        detect_pass(store2, settings, repo, fetch=False, now=world.nights[last].date)
        out["detect_cold_full_s"] = round(time.perf_counter() - t0, 3)
        cold = _alert_set(store2)
        store2.dispose()
        out["identical_alerts"] = _compare(incremental, cold)

        # (c) investigate one kernel as a CLI call (the store after the nightly)
        from service.store.alert_reads import list_alerts

        store = Store(f"sqlite:///{tmp / 'bw.db'}")
        with store.session() as s:
            alerts = [a for a in list_alerts(s, status="all", source="dashboard")
                      if a["state"] != "retracted" and a["machine_cause"] != "noise"]
        store.dispose()
        if alerts:
            a = max(alerts, key=lambda a: a.get("significance") or 0.0)
            platform_short, kernel, day = a["platform_short"], a["kernel"], a["first_bad"]["date"][:10]
        else:
            platform_short, kernel, day = "b200", "rms_norm", out["last_night"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWATCH_")}
        env.update(BENCHWATCH_DATABASE_URL=f"sqlite:///{tmp / 'bw.db'}", BENCHWATCH_HELION_REPO=str(repo),
                   BENCHWATCH_HELION_REMOTE="")
        cmd = [str(Path(sys.executable).parent / "benchwatch"), "investigate", "--platform", platform_short,
               "--kernel", kernel, "--date", day, "--repo", str(repo)]
        out["investigate_cmd"] = " ".join(["benchwatch", *cmd[1:-1], "<world clone>"])
        first = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        if first.returncode != 0:
            raise SystemExit(f"real_repo_speed: investigate failed: {first.stderr.strip()[-400:]}")
        out["investigate_first_line"] = first.stdout.strip().splitlines()[0] if first.stdout.strip() else ""

        def timed_runs() -> tuple[list[float], list[float]]:
            walls, cpus = [], []
            for _ in range(args.repeat):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
                walls.append(time.perf_counter() - t0)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            return walls, cpus

        # as deployed (the service's bytecode compiled at start, see `_compile_service`) ...
        walls, cpus = timed_runs()
        # ... and, for reference, as an editable checkout with PYTHONDONTWRITEBYTECODE runs it:
        # the service's own modules compiled from source on every call
        with _without_service_bytecode():
            src_walls, _ = timed_runs()
        out["investigate_cli_from_source_s"] = round(statistics.median(src_walls), 3)
        out["investigate_cli_s"] = round(statistics.median(walls), 3)
        out["investigate_cli_cpu_s"] = round(statistics.median(cpus), 3)
        out["investigate_cli_runs_s"] = [round(w, 3) for w in walls]
        if args.profile:
            prof_path = tmp / "inv.prof"
            subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof_path), cmd[0], *cmd[1:]],
                           env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
            if prof_path.exists():
                buf = io.StringIO()
                pstats.Stats(str(prof_path), stream=buf).sort_stats("cumulative").print_stats(40)
                (args.results.parent / "real_repo_speed_profile_investigate.txt").write_text(buf.getvalue())
        out["load_avg_1m_after"] = round(os.getloadavg()[0], 2)

    out["ruptures_import_s"] = _ruptures_import_s()
    rows = [("cold detect over the year (target < 3 s)", "detect_cold_s"),
            ("  of which importing ruptures (SciPy), once a process, median of 3 new processes",
             "ruptures_import_s"),
            ("one more nightly: ingest + detect (target < 1 s)", "one_nightly_s"),
            ("  of which ingest", "one_nightly_ingest_s"),
            ("  of which detect", "one_nightly_detect_s"),
            ("investigate one kernel, CLI wall, median, bytecode compiled as deployed (target < 0.7 s)",
             "investigate_cli_s"),
            ("  the same from source (this checkout: PYTHONDONTWRITEBYTECODE)", "investigate_cli_from_source_s"),
            ("  its CPU time (user + sys), median", "investigate_cli_cpu_s"),
            ("(ingest of the year, for reference)", "ingest_year_s")]
    print(f"\n{out['nights']} nightlies, {out['series_stored']} stored series, "
          f"{out['nproc']} x {out['cpu']}")
    print("| step | seconds | target met |\n|---|---|---|")
    for label, key in rows:
        tgt = TARGETS.get(key)
        met = "" if tgt is None else ("yes" if out[key] < tgt else "NO")
        print(f"| {label} | {out[key]:.3f} | {met} |")
    ia = out["identical_alerts"]
    print(f"identical alerts (after the incremental nightly vs one cold detect over the same nights): "
          f"{'yes' if ia['identical'] else 'NO'} ({ia['incremental']} vs {ia['cold']} alerts; "
          f"{len(ia['only_incremental'])} only incremental, {len(ia['only_cold'])} only cold, "
          f"{len(ia['same_alert_saying_otherwise'])} saying otherwise); honest speedup differs on "
          f"{ia['honest_speedup_differs']} (at most {ia['honest_speedup_max_rel_diff']:.2%})")
    for a in ia["only_incremental"]:
        print("  only incremental:", " ".join(map(str, a)))
    for a in ia["only_cold"]:
        print("  only cold:       ", " ".join(map(str, a)))
    print(f"investigate: {out['investigate_cmd']}  runs {out['investigate_cli_runs_s']}")
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(out, indent=1) + "\n")
    for name, prof in profiles.items():
        (args.results.parent / f"real_repo_speed_profile_{name}.txt").write_text(_top(prof))
    print(f"written {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
