"""Detector quality and speed on TCPD (human-annotated change points), plus a perf sanity check.

Run: `.venv/bin/python -m benchmarks.detect_quality` (writes benchmarks/results/detect_quality.json).

Compares, with no per-series tuning:
- ours: `service.detect.change_points` at `DetectSettings()` defaults (raw values, log=False);
- ruptures `Pelt(model="l2")` (its own defaults) with a BIC penalty on the standardised series;
- Apache Otava 0.8 `otava.analysis.compute_change_points` with its defaults.

Also: a sensitivity grid around the defaults (TCPD), the TigerBeetle perf series as a sanity
check, the speed of `detect_series` over 500 synthetic year-long nightly series, on-call
scenarios (outlier, blips, steps, last-night steps) over many seeds, a night-by-night replay
through `reconcile`, the false-report rate on step-free series, and the detector alone on a
generated labelled world (tests/worlds).

Metrics follow /work/shared/datasets/tcpd/README.md (TCPDBench metrics.py / summarize.py):
F1 with margin 5 (index 0 added to every set; precision against the union of annotators,
recall averaged over annotators) and segmentation covering averaged over annotators.
Data are read in place from the shared folder and never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from service.detect import DetectSettings, change_points
from tests.synthetic_series import make_series, replay

DATA = Path(os.environ.get("BENCHWATCH_DATASETS", "/work/shared/datasets"))
TCPD = DATA / "tcpd"
TIGERBEETLE = DATA / "perf_testdata" / "otava" / "tigerbeetle.json"
RESULTS = Path(__file__).resolve().parent / "results" / "detect_quality.json"
MARGIN = 5
# the paper's univariate table leaves out the synthetic demo series and uk_coal_employ
EXCLUDED = {"uk_coal_employ"}
PUBLISHED_BEST = {"f1": ("binseg", 0.690), "cover": ("amoc", 0.657)}


# --- data -------------------------------------------------------------------------------------


def load_tcpd(root: Path = TCPD) -> dict[str, np.ndarray]:
    """The univariate, non-demo series of the paper's table that ship here (25), by name."""
    out: dict[str, np.ndarray] = {}
    for path in sorted((root / "series").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        name = str(doc["name"])
        if name.startswith("quality_control") or name in EXCLUDED or int(doc["n_dim"]) != 1:
            continue
        raw = doc["series"][0]["raw"]
        if any(v is None for v in raw):
            raise SystemExit(f"{name}: unexpected missing values")
        out[name] = np.asarray(raw, dtype=float)
    return out


def load_annotations(root: Path = TCPD) -> dict[str, dict[str, list[int]]]:
    return json.loads((root / "annotations.json").read_text(encoding="utf-8"))


# --- metrics (TCPD README definitions) ---------------------------------------------------------


def clean_predictions(cps: Iterable[int], n_obs: int) -> list[int]:
    """Deduplicate and keep 1 <= cp <= n_obs - 2, as TCPDBench does before scoring."""
    return sorted({int(c) for c in cps if 1 <= int(c) <= n_obs - 2})


def true_positives(truth: set[int], pred: set[int], margin: int = MARGIN) -> int:
    """Each true location takes the closest unused prediction within the margin."""
    unused = set(pred)
    hits = 0
    for tau in sorted(truth):
        close = sorted((abs(tau - x), x) for x in unused if abs(tau - x) <= margin)
        if close:
            unused.remove(close[0][1])
            hits += 1
    return hits


def f1_score(annotations: dict[str, list[int]], pred: Sequence[int], margin: int = MARGIN) -> float:
    sets = [set(a) | {0} for a in annotations.values()]
    x = set(pred) | {0}
    union = set().union(*sets)
    precision = true_positives(union, x, margin) / len(x)
    recall = sum(true_positives(t, x, margin) / len(t) for t in sets) / len(sets)
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _segments(cps: Iterable[int], n_obs: int) -> list[tuple[int, int]]:
    """Half-open [start, end) segments of 0..n_obs-1 cut before each change point."""
    cuts = sorted({c for c in cps if 0 < c < n_obs})
    bounds = [0, *cuts, n_obs]
    return list(zip(bounds[:-1], bounds[1:]))


def _jaccard(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    return inter / union


def cover_single(pred: list[tuple[int, int]], truth: list[tuple[int, int]], n_obs: int) -> float:
    """C(S', S) = 1/T sum_{A in S} |A| max_{A' in S'} Jaccard(A, A'); S = annotator's partition."""
    return sum((a[1] - a[0]) * max(_jaccard(a, p) for p in pred) for a in truth) / n_obs


def cover_score(annotations: dict[str, list[int]], pred: Sequence[int], n_obs: int) -> float:
    p = _segments(pred, n_obs)
    scores = [cover_single(p, _segments(a, n_obs), n_obs) for a in annotations.values()]
    return sum(scores) / len(scores)


def metric_self_check(series: dict[str, np.ndarray], annotations: dict, root: Path = TCPD) -> float:
    """Largest |ours - published| over the per-series F1 and cover of the "zero" method (no change
    points), which the published file holds: checks annotation handling and both metrics."""
    pub = json.loads((root / "published_results" / "published_default_scores_5methods.json").read_text("utf-8"))
    got = evaluate(lambda x: [], series, annotations)["series"]
    return max(
        max(abs(v["f1"] - pub["f1"][n]["zero"]), abs(v["cover"] - pub["cover"][n]["zero"]))
        for n, v in got.items()
    )


# --- methods ----------------------------------------------------------------------------------


def ours(settings: DetectSettings) -> Callable[[np.ndarray], list[int]]:
    return lambda x: change_points(x, settings, log=False)


def pelt_bic(x: np.ndarray) -> list[int]:
    """ruptures Pelt(model="l2"), default jump/min_size, BIC penalty 2*log(n) on the z-scored series
    (the l2 cost is a Gaussian log-likelihood with unit variance; each change adds a mean and a location)."""
    import ruptures as rpt

    sd = float(np.std(x)) or 1.0
    z = (x - float(np.mean(x))) / sd
    bkps = rpt.Pelt(model="l2").fit(z).predict(pen=2.0 * math.log(len(x)))
    return [int(b) for b in bkps if b < len(x)]


def otava_default(x: np.ndarray) -> list[int]:
    from otava.analysis import compute_change_points

    cps, _weak = compute_change_points([float(v) for v in x])
    return [int(cp.index) for cp in cps]


# --- runs -------------------------------------------------------------------------------------


def evaluate(method: Callable[[np.ndarray], list[int]], series: dict[str, np.ndarray],
             annotations: dict[str, dict[str, list[int]]], repeat: int = 1) -> dict:
    per: dict[str, dict] = {}
    total = 0.0
    for name, x in series.items():
        t0 = time.perf_counter()
        for _ in range(repeat):
            found = method(x)
        total += (time.perf_counter() - t0) / repeat
        pred = clean_predictions(found, len(x))
        per[name] = {
            "n": int(len(x)), "cps": pred,
            "f1": f1_score(annotations[name], pred), "cover": cover_score(annotations[name], pred, len(x)),
        }
    return {
        "f1": statistics.fmean(v["f1"] for v in per.values()),
        "cover": statistics.fmean(v["cover"] for v in per.values()),
        "seconds": total,
        "series": per,
    }


def perf_sanity(settings: DetectSettings) -> dict:
    """TigerBeetle nightly-like series: what our detector flags (log values, as in production)."""
    doc = json.loads(TIGERBEETLE.read_text(encoding="utf-8"))
    x = np.asarray(doc["values"], dtype=float)
    from otava.analysis import compute_change_points

    otava_cps = [int(c.index) for c in compute_change_points([float(v) for v in x])[0]]
    return {
        "n": int(len(x)),
        "ours_log": change_points(x, settings, log=True),
        "otava_default": otava_cps,
        "informal_marks": doc.get("informal_marks_from_docstring"),
    }


# --- nightly-shaped synthetic series: speed and the behaviour on-call relies on -----------------


def nightly_speed(settings: DetectSettings, n_series: int = 500, n: int = 365, repeat: int = 3) -> dict:
    """detect_series over a year of nightlies for n_series series (a third with a step,
    a fifth with an outlier, 2% failed nights): the whole detect stage of one pass."""
    from service.detect import detect_series

    rng = np.random.default_rng(20260101)
    series = []
    for k in range(n_series):
        x = np.exp(rng.normal(0.0, float(rng.uniform(0.003, 0.03)), n)) * float(rng.uniform(0.5, 3.0))
        if k % 3 == 0:
            x[int(rng.integers(20, n - 5)):] *= float(rng.choice([0.85, 0.92, 1.1]))
        if k % 5 == 0:
            x[int(rng.integers(0, n))] *= 0.5
        vals: list[float | None] = [None if rng.random() < 0.02 else float(v) for v in x]
        series.append(make_series(vals, kernel=f"k{k}"))
    best = cpu = math.inf
    moves = 0
    for _ in range(repeat):  # best of `repeat`; CPU time too, since the box is shared
        t0, c0 = time.perf_counter(), time.process_time()
        moves = sum(len(detect_series(sd, settings)) for sd in series)
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    # the same with the full-resolution search (search_stride=1), and that search alone:
    # ruptures' C Pelt on every series, what an exact l2 search here must pay at least
    import ruptures as rpt

    exact = settings.model_copy(update={"search_stride": 1})
    exact_best = exact_cpu = math.inf
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        exact_moves = sum(len(detect_series(sd, exact)) for sd in series)
        exact_best = min(exact_best, time.perf_counter() - t0)
        exact_cpu = min(exact_cpu, time.process_time() - c0)
    arrays = [np.log([p.value for p in sd.points if p.value is not None]) for sd in series]
    floor = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for a in arrays:
            rpt.KernelCPD(kernel="linear", min_size=settings.min_size).fit(a).predict(
                pen=settings.penalty * math.log(len(a)))
        floor = min(floor, time.perf_counter() - t0)
    return {"series": n_series, "points": n, "seconds_total": best, "cpu_seconds_total": cpu,
            "ms_per_series": best / n_series * 1000, "moves": moves,
            "stride1_seconds_total": exact_best, "stride1_cpu_seconds_total": exact_cpu,
            "stride1_moves": exact_moves, "ruptures_full_search_only_seconds": floor}


def nightly_behaviour(settings: DetectSettings, seeds: int = 100) -> dict:
    """How often each on-call scenario comes out right over many seeds (1% noise, 300 nights,
    so the coarse search of long series is what runs)."""
    from service.detect import detect_series

    def run(scenario: Callable[[np.ndarray], None], n: int, check: Callable[[list], bool], base: int) -> int:
        ok = 0
        for seed in range(seeds):
            x = 1.5 * np.exp(np.random.default_rng(base + seed).normal(0.0, 0.01, n))
            scenario(x)
            ok += check(detect_series(make_series(x), settings))
        return ok

    def scale(sl: slice, f: float) -> Callable[[np.ndarray], None]:
        def apply(x: np.ndarray) -> None:
            x[sl] *= f
        return apply

    def one(run_id: str, state: str) -> Callable[[list], bool]:
        return lambda ms: len(ms) == 1 and ms[0].first_bad.run_id == run_id and ms[0].state == state

    def none(ms: list) -> bool:
        # an ended excursion is reported to the event stage, which alerts it only when many
        # kernels of one platform made it together (a hardware episode): alone it is noise
        return all(m.state == "ended" for m in ms)

    cases = {
        "clean_no_move": (scale(slice(0, 0), 1.0), 365, none),
        "outlier_no_move": (scale(slice(100, 101), 0.6), 300, none),
        "blip_2_nights_no_move": (scale(slice(100, 102), 0.8), 300, none),
        "blip_4_nights_no_move": (scale(slice(100, 104), 0.8), 300, none),
        "step_10pct_exact_confirmed": (scale(slice(121, None), 0.9), 300, one("r121", "confirmed")),
        "step_5pct_exact_confirmed": (scale(slice(121, None), 0.95), 300, one("r121", "confirmed")),
        "step_last_night_provisional": (scale(slice(299, None), 0.9), 300, one("r299", "provisional")),
        "step_last_2_nights_provisional": (scale(slice(298, None), 0.9), 300, one("r298", "provisional")),
        "step_4_nights_ago_confirmed": (scale(slice(296, None), 0.9), 300, one("r296", "confirmed")),
    }
    return {name: {"ok": run(sc, n, chk, 1000 * (i + 1)), "of": seeds}
            for i, (name, (sc, n, chk)) in enumerate(cases.items())}


def nightly_replay(settings: DetectSettings, seeds: int = 50, after: int = 10) -> dict:
    """Night-by-night detect + reconcile around a step or blip, as the scheduled pass runs it.

    For steps: the night the move is first reported (0 = the first bad nightly itself), whether
    it was ever retracted (flapping), and the first night it is confirmed. For blips: whether
    any report ever said "confirmed" and whether any is still live (not retracted or ended) at
    the end.
    """

    out: dict[str, dict] = {}
    for label, factor, length in (("step_5pct", 0.95, None), ("step_10pct", 0.9, None),
                                  ("blip_1_night_15pct", 0.85, 1), ("blip_2_nights_15pct", 0.85, 2),
                                  ("blip_3_nights_15pct", 0.85, 3)):
        heard, confirmed, flapped, wrong_confirm, open_at_end = [], [], 0, 0, 0
        for seed in range(seeds):
            x = 1.5 * np.exp(np.random.default_rng(7000 + seed).normal(0.0, 0.01, 280 + after))
            x[280 : None if length is None else 280 + length] *= factor
            nights = replay(x, 281, settings)  # nights[0]: the first bad nightly has just arrived
            if length is None:
                seen = [k for k, ms in enumerate(nights) if any(m.state != "retracted" for m in ms)]
                conf = [k for k, ms in enumerate(nights) if any(m.state == "confirmed" for m in ms)]
                heard.append(seen[0] if seen else None)
                confirmed.append(conf[0] if conf else None)
                flapped += any(m.state == "retracted" for ms in nights for m in ms)
            else:
                wrong_confirm += any(m.state == "confirmed" for ms in nights for m in ms)
                open_at_end += any(m.state not in ("retracted", "ended") for m in nights[-1])
        if length is None:
            known = [h for h in heard if h is not None]
            out[label] = {
                "seeds": seeds,
                "heard_on_night_0": sum(h == 0 for h in heard),
                "heard_by_night_2": sum(h is not None and h <= 2 for h in heard),
                "never_heard": sum(h is None for h in heard),
                "confirmed_by_night_2": sum(c is not None and c <= 2 for c in confirmed),
                "ever_retracted": flapped,
                "max_night_heard": max(known) if known else None,
            }
        else:
            out[label] = {"seeds": seeds, "ever_confirmed": wrong_confirm, "still_open_at_end": open_at_end}
    return out


def false_provisional_rate(settings: DetectSettings, series: int = 60, nights: int = 60) -> dict:
    """Moves reported in the newest 3 nights of step-free series, per series-night, replaying
    the last `nights` nights of 300: Gaussian noise, and heavy-tailed Student-t(3) noise,
    both 1% standard deviation (real GPU timings have outliers)."""
    from service.detect import detect_series

    out = {}
    for kind in ("gaussian", "student_t3"):
        alarms = total = 0
        for seed in range(series):
            rng = np.random.default_rng(9000 + seed)
            e = rng.normal(0.0, 0.01, 300) if kind == "gaussian" else 0.01 * rng.standard_t(3, 300) / math.sqrt(3)
            x = 1.5 * np.exp(e)
            for n in range(300 - nights, 301):
                total += 1
                alarms += any(n - int(m.first_bad.run_id[1:]) <= 3
                              for m in detect_series(make_series(x[:n]), settings))
        out[kind] = {"series_nights": total, "false_reports": alarms, "rate": alarms / total}
    return out


def sensitivity(series: dict[str, np.ndarray], annotations: dict) -> list[dict]:
    """TCPD F1/cover around the defaults: how much of the margin is the choice of knobs."""
    base = DetectSettings()
    rows = []
    for penalty in (3.0, base.penalty, 8.0):
        for sig in (2.8, 3.0, base.min_significance, 3.2, 3.4, 3.6):
            r = evaluate(ours(base.model_copy(update={"penalty": penalty, "min_significance": sig})),
                         series, annotations)
            rows.append({"penalty": penalty, "min_significance": sig, "f1": r["f1"], "cover": r["cover"]})
    return rows


def world_detection(settings: DetectSettings, seed: int = 101, nightlies: int = 365) -> dict:
    """The detector alone on a generated labelled world (tests/worlds): every series of both
    documents, read straight from the published JSON (trend = nightly on main, 0 = failure).

    Scores only what detection owns: labelled steps found within 2 nightlies, first-bad exact,
    noise events (blip/outlier) left alone, and moves that no planted event explains; plus the
    time of one detect over all series. (benchmarks/triage_quality.py scores the whole pipeline.)
    """
    from datetime import datetime

    from service.detect import detect_series
    from service.records import DASHBOARD_METRICS, SeriesData, SeriesKey, SeriesPoint
    from tests.worlds import WorldSpec, generate_world

    world = generate_world(WorldSpec(seed=seed, nightlies=nightlies, with_git=False))
    docs = {"dashboard": world.dashboard(nightlies - 1), "pretuned": world.pretuned(nightlies - 1)}
    metrics = {"dashboard": DASHBOARD_METRICS, "pretuned": ("geomean", "best_speedup")}

    def when(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    series: dict[tuple, SeriesData] = {}
    for src, doc in docs.items():
        for item in doc["summary"]:
            for metric in metrics[src]:
                key = (src, item["platform_short"], item["kernel"], metric)
                pts = tuple(
                    SeriesPoint(h["run_id"], h["sha"], h["full_sha"], when(h["date"]),
                                float(h[metric]) if isinstance(h.get(metric), (int, float)) and h[metric] > 0 else None,
                                bool(h.get("is_nightly")) and h.get("branch") == "main")
                    for h in item["history"]
                )
                series[key] = SeriesData(SeriesKey(*key), pts)
    t0, c0 = time.perf_counter(), time.process_time()
    moves = {key: detect_series(sd, settings) for key, sd in series.items()}
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0

    found = exact = steps = noise_events = noise_flagged = 0
    explained = world.explained()
    for lab in world.labels:
        ev = lab.event
        for key in lab.series:
            near = sorted(abs(world.night_of(m.first_bad.run_id, -99) - ev.night) for m in moves.get(key, []))
            near = [d for d in near if d <= 2]
            if ev.cause == "noise":
                noise_events += 1
                noise_flagged += bool(near)
                continue
            steps += 1
            found += bool(near)
            exact += bool(near) and near[0] == 0
    unexplained = sum(
        (key[0], key[1], key[2], world.night_of(m.first_bad.run_id)) not in explained
        for key, ms in moves.items() for m in ms
    )
    return {
        "seed": seed, "nightlies": nightlies, "series": len(series),
        "points": sum(len(sd.points) for sd in series.values()),
        "labelled_steps": steps, "found_within_2": found, "first_bad_exact": exact,
        "noise_events": noise_events, "noise_flagged": noise_flagged,
        "moves": sum(len(ms) for ms in moves.values()), "unexplained_moves": unexplained,
        "detect_wall_s": wall, "detect_cpu_s": cpu,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--repeat", type=int, default=5, help="timing repeats for the fast methods")
    args = ap.parse_args(argv)

    settings = DetectSettings()
    series, ann = load_tcpd(), load_annotations()
    missing = [n for n in series if n not in ann]
    if missing:
        raise SystemExit(f"no annotations for {missing}")
    check = metric_self_check(series, ann)
    if check > 1e-5:
        raise SystemExit(f"metric self-check failed: zero method differs from published by {check:g}")
    results = {
        "ours": evaluate(ours(settings), series, ann, repeat=args.repeat),
        "ruptures_pelt_l2_bic": evaluate(pelt_bic, series, ann, repeat=1),
        "otava_0.8_default": evaluate(otava_default, series, ann, repeat=1),
    }
    print(f"TCPD: {len(series)} univariate series of the paper's table; margin {MARGIN}; 5 annotators; "
          f"metric self-check (zero method vs published, per series): max diff {check:.1e}")
    print(f"{'method':24s} {'F1':>6s} {'cover':>6s} {'time s':>8s}")
    for name, r in results.items():
        print(f"{name:24s} {r['f1']:6.3f} {r['cover']:6.3f} {r['seconds']:8.4f}")
    for metric, (who, value) in PUBLISHED_BEST.items():
        print(f"published best default {metric}: {value:.3f} ({who})")
    sens = sensitivity(series, ann)
    print("sensitivity (TCPD F1/cover; rows penalty, columns min_significance):")
    sigs = sorted({r["min_significance"] for r in sens})
    print("  penalty " + " ".join(f"{v:>11.1f}" for v in sigs))
    for penalty in sorted({r["penalty"] for r in sens}):
        cells = {r["min_significance"]: r for r in sens if r["penalty"] == penalty}
        print(f"  {penalty:7.1f} " + " ".join(f"{cells[v]['f1']:.3f}/{cells[v]['cover']:.3f}" for v in sigs))
    ratio = results["otava_0.8_default"]["seconds"] / max(results["ours"]["seconds"], 1e-12)
    print(f"time: otava / ours = {ratio:.0f}x")
    sanity = perf_sanity(settings)
    print(f"tigerbeetle (n={sanity['n']}): ours(log) {sanity['ours_log']}; otava {sanity['otava_default']}; "
          f"informal marks {sanity['informal_marks']}")
    speed = nightly_speed(settings)
    print(f"nightly speed: detect_series over {speed['series']} series x {speed['points']} nights: "
          f"{speed['seconds_total']:.3f} s wall, {speed['cpu_seconds_total']:.3f} s CPU "
          f"({speed['ms_per_series']:.2f} ms/series, {speed['moves']} moves); full-resolution search "
          f"(search_stride=1): {speed['stride1_seconds_total']:.3f} s wall, {speed['stride1_cpu_seconds_total']:.3f} s CPU "
          f"({speed['stride1_moves']} moves), its ruptures search alone {speed['ruptures_full_search_only_seconds']:.3f} s")
    behaviour = nightly_behaviour(settings)
    print("nightly scenarios (1% noise):")
    for name, r in behaviour.items():
        print(f"  {name:34s} {r['ok']:4d}/{r['of']}")
    replay = nightly_replay(settings)
    print("night-by-night replay (detect + reconcile, 1% noise; night 0 = first bad nightly):")
    for name, r in replay.items():
        print(f"  {name:22s} " + ", ".join(f"{k} {v}" for k, v in r.items()))
    fpr = false_provisional_rate(settings)
    print("false reports in the newest 3 nights of step-free series (per series-night): "
          + ", ".join(f"{k} {v['false_reports']}/{v['series_nights']} = {v['rate']:.4f}" for k, v in fpr.items()))
    world = world_detection(settings)
    print(f"world seed {world['seed']} ({world['series']} series, {world['points']} points): "
          f"steps found {world['found_within_2']}/{world['labelled_steps']}, first-bad exact "
          f"{world['first_bad_exact']}, noise events flagged {world['noise_flagged']}/{world['noise_events']}, "
          f"unexplained moves {world['unexplained_moves']} of {world['moves']}; detect "
          f"{world['detect_wall_s']:.3f} s wall, {world['detect_cpu_s']:.3f} s CPU")
    doc = {
        "settings": settings.model_dump(),
        "world": world,
        "false_provisional": fpr,
        "nightly_replay": replay,
        "nightly_speed": speed,
        "nightly_behaviour": behaviour,
        "published_best_default": {k: {"method": w, "value": v} for k, (w, v) in PUBLISHED_BEST.items()},
        "methods": results,
        "otava_over_ours_time": ratio,
        "metric_self_check_max_diff": check,
        "sensitivity": sens,
        "tigerbeetle": sanity,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
