"""Triage quality on generated labeled worlds: cause, first-bad, culprit, false alerts.

Each world is a seeded year of nightlies with planted events of all four causes on both
sources, distractor commits in every window, failures, gaps and manual runs
(`tests/worlds`). The whole store is built the way production builds it (ingest the
published file, run the detect pass against the world's git clone), then every label is
scored against what benchwatch stored:

- detected: a live alert on a labelled series whose first-bad is within 2 nightlies;
- first-bad accuracy: that first-bad is exactly the planted nightly;
- cause accuracy: the alert's cause is the planted cause (noise labels: no live alert,
  or one classified noise);
- culprit top-1: for real events, the alert's culprit is the planted commit;
- false alerts per 1,000 series-nightlies: live, non-noise alerts on series/nights that no
  planted event explains, over every stored series.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from service.config import load_settings
from service.schedule.detect_pass import detect_pass
from service.schedule.ingest_pass import ingest_source
from service.store.alert_reads import list_alerts
from service.store.db import Store
from tests.worlds import WorldSpec, generate_world

RESULTS = Path(__file__).resolve().parent / "results" / "world_quality.json"


def evaluate(seed: int, nightlies: int, workdir: Path) -> dict:
    world = generate_world(WorldSpec(seed=seed, nightlies=nightlies, repo_dir=str(workdir / f"helion-{seed}")))
    last = nightlies - 1
    (workdir / "d.json").write_bytes(world.dashboard_bytes(last))
    (workdir / "p.json").write_bytes(world.pretuned_bytes(last))
    settings = load_settings()
    store = Store(f"sqlite:///{workdir / f'bw-{seed}.db'}")
    ingest_source(store, settings, "dashboard", str(workdir / "d.json"))
    ingest_source(store, settings, "pretuned", str(workdir / "p.json"))
    t0 = time.perf_counter()
    detect_pass(store, settings, world.repo, fetch=False)
    detect_s = time.perf_counter() - t0
    with store.session() as s:
        alerts = [a for a in list_alerts(s, status="all") if a["state"] != "retracted"]
        from service.store.status import store_status

        series = store_status(s)["series"]
    store.dispose()

    by_series: dict[tuple, list[dict]] = {}
    for a in alerts:
        by_series.setdefault((a["source"], a["platform_short"], a["kernel"], a["metric"]), []).append(a)
    cases = []
    for i, lab in enumerate(world.labels):
        ev = lab.event
        for key in lab.series:
            near = []
            for a in by_series.get(key, []):
                n = world.night_of(a["first_bad"]["run_id"])
                if n is not None and abs(n - ev.night) <= 2:
                    near.append((abs(n - ev.night), n, a))
            near.sort(key=lambda t: t[0])
            hit = near[0] if near else None
            if ev.cause == "noise":
                cause_ok = hit is None or hit[2]["cause"] == "noise"
                cases.append(dict(event=i, cause=ev.cause, kind=ev.kind, key=key, detected=hit is not None,
                                  cause_ok=cause_ok, first_bad_ok=None, culprit_ok=None,
                                  got=hit[2]["cause"] if hit else None))
                continue
            a = hit[2] if hit else None
            culprit_ok = None
            if ev.cause == "real" and lab.culprit:
                culprit_ok = bool(a and a["culprit"] and a["culprit"]["full_sha"] == lab.culprit)
            cases.append(dict(
                event=i, cause=ev.cause, kind=ev.kind, key=key, detected=a is not None,
                cause_ok=bool(a and a["cause"] == ev.cause),
                first_bad_ok=bool(hit and hit[1] == ev.night), culprit_ok=culprit_ok,
                got=a["cause"] if a else None,
            ))
    explained = world.explained()
    false_alerts = 0
    for a in alerts:
        n = world.night_of(a["first_bad"]["run_id"])
        if a["cause"] != "noise" and (a["source"], a["platform_short"], a["kernel"], n) not in explained:
            false_alerts += 1
    return dict(seed=seed, nightlies=nightlies, labels=len(world.labels), cases=cases,
                false_alerts=false_alerts, series=series, detect_s=detect_s)


def _events(runs: list[dict]) -> list[dict]:
    """One verdict per planted event: the majority of its labelled series."""
    out = []
    for r in runs:
        by_event: dict[int, list[dict]] = {}
        for c in r["cases"]:
            by_event.setdefault(c["event"], []).append(c)
        for cs in by_event.values():
            half = len(cs) / 2
            culprits = [c["culprit_ok"] for c in cs if c["culprit_ok"] is not None]
            out.append(dict(
                cause=cs[0]["cause"], detected=any(c["detected"] for c in cs),
                cause_ok=sum(c["cause_ok"] for c in cs) > half,
                first_bad_ok=sum(bool(c["first_bad_ok"]) for c in cs) > half,
                culprit_ok=any(culprits) if culprits else None,
            ))
    return out


def summarize(runs: list[dict]) -> dict:
    cases = [c for r in runs for c in r["cases"]]
    events = _events(runs)
    moving_events = [e for e in events if e["cause"] != "noise"]
    real_events = [e for e in events if e["culprit_ok"] is not None]
    moving = [c for c in cases if c["cause"] != "noise"]
    real = [c for c in cases if c["culprit_ok"] is not None]
    series_nights = sum(r["series"] * r["nightlies"] for r in runs)
    per_cause = {}
    for cause in ("real", "method_change", "hardware", "noise"):
        mine = [c for c in cases if c["cause"] == cause]
        per_cause[cause] = dict(
            cases=len(mine), cause_acc=round(sum(c["cause_ok"] for c in mine) / max(1, len(mine)), 3),
            confused_with=dict(Counter(c["got"] for c in mine if not c["cause_ok"])),
        )
    return dict(
        worlds=len(runs), labelled_events=sum(r["labels"] for r in runs), labelled_series=len(cases),
        per_event=dict(
            cause_accuracy=round(sum(e["cause_ok"] for e in events) / max(1, len(events)), 3),
            detection_rate=round(sum(e["detected"] for e in moving_events) / max(1, len(moving_events)), 3),
            first_bad_accuracy=round(sum(e["first_bad_ok"] for e in moving_events) / max(1, len(moving_events)), 3),
            culprit_top1=round(sum(e["culprit_ok"] for e in real_events) / max(1, len(real_events)), 3),
            by_cause={c: f"{sum(e['cause_ok'] for e in events if e['cause'] == c)}/"
                         f"{sum(1 for e in events if e['cause'] == c)}"
                      for c in ("real", "method_change", "hardware", "noise")},
        ),
        per_series=dict(note="every labelled series of every event counted on its own"),
        detection_rate=round(sum(c["detected"] for c in moving) / max(1, len(moving)), 3),
        cause_accuracy=round(sum(c["cause_ok"] for c in cases) / max(1, len(cases)), 3),
        first_bad_accuracy=round(sum(bool(c["first_bad_ok"]) for c in moving) / max(1, len(moving)), 3),
        culprit_top1=round(sum(c["culprit_ok"] for c in real) / max(1, len(real)), 3),
        false_alerts_per_1000_series_nightlies=round(
            1000 * sum(r["false_alerts"] for r in runs) / max(1, series_nights), 3),
        per_cause=per_cause,
        detect_s=[round(r["detect_s"], 2) for r in runs],
    )


def replay(seed: int, nightlies: int, start: int, workdir: Path) -> dict:
    """Night by night, as production runs: what on-call would have seen, and how soon.

    Counts every alert ever raised (a provisional one retracted later was still shown) that no
    planted event explains, and, per planted moving event, how many nightlies after its
    first-bad nightly its first alert appeared (0 = the same night).
    """
    world = generate_world(WorldSpec(seed=seed, nightlies=nightlies, repo_dir=str(workdir / f"helion-r{seed}")))
    settings = load_settings()
    store = Store(f"sqlite:///{workdir / f'bw-r{seed}.db'}")
    seen_at: dict[int, int] = {}  # alert id -> night first seen
    for n in range(start, nightlies):
        (workdir / "d.json").write_bytes(world.dashboard_bytes(n))
        (workdir / "p.json").write_bytes(world.pretuned_bytes(n))
        ingest_source(store, settings, "dashboard", str(workdir / "d.json"))
        ingest_source(store, settings, "pretuned", str(workdir / "p.json"))
        detect_pass(store, settings, world.repo, fetch=False, now=world.nights[n].date)
        with store.session() as s:
            for a in list_alerts(s, status="all"):
                seen_at.setdefault(a["id"], n)
    with store.session() as s:
        alerts = {a["id"]: a for a in list_alerts(s, status="all")}
        from service.store.status import store_status

        series = store_status(s)["series"]
    store.dispose()
    explained = world.explained()
    false_ids = [
        i for i, a in alerts.items()
        if a["machine_cause"] != "noise"
        and (a["source"], a["platform_short"], a["kernel"], world.night_of(a["first_bad"]["run_id"])) not in explained
    ]
    delays = []
    for lab in world.labels:
        ev = lab.event
        if ev.cause == "noise" or ev.night < start:
            continue
        hits = [seen_at[i] - ev.night for i, a in alerts.items()
                if (a["source"], a["platform_short"], a["kernel"], a["metric"]) in lab.series
                and abs((world.night_of(a["first_bad"]["run_id"]) or -99) - ev.night) <= 2]
        delays.append(min(hits) if hits else None)
    noise_shown = 0
    for lab in world.labels:
        ev = lab.event
        if ev.cause != "noise" or ev.night < start:
            continue
        noise_shown += any(
            (a["source"], a["platform_short"], a["kernel"]) == (ev.source, ev.platform_short, ev.kernels[0])
            and abs((world.night_of(a["first_bad"]["run_id"]) or -99) - ev.night) <= 2
            and a["machine_cause"] != "noise" for a in alerts.values())
    return dict(
        seed=seed, nights_replayed=nightlies - start, series=series,
        false_alerts=len(false_ids),
        false_alerts_per_1000_series_nightlies=round(1000 * len(false_ids) / (series * (nightlies - start)), 3),
        events_in_replay=len(delays), nights_to_first_alert=delays,
        noise_events=sum(1 for lab in world.labels if lab.cause == "noise" and lab.event.night >= start),
        noise_events_shown_as_moves=noise_shown,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="101,202")
    ap.add_argument("--nightlies", type=int, default=365)
    ap.add_argument("--replay-nightlies", type=int, default=200)
    ap.add_argument("--replay-from", type=int, default=90)
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (int(s) for s in args.seeds.split(",")):
            runs.append(evaluate(seed, args.nightlies, Path(tmp)))
        summary = summarize(runs)
        print(json.dumps(summary, indent=1), flush=True)
        replayed = replay(int(args.seeds.split(",")[0]), args.replay_nightlies, args.replay_from, Path(tmp))
    print(json.dumps(replayed, indent=1))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(dict(summary=summary, replay=replayed, runs=runs), indent=1, default=str))


if __name__ == "__main__":
    main()
