"""Speed of detection on a full year of every series, and of `investigate` for one kernel.

Figures (printed and written to benchmarks/results/detect_speed.json):
- detector stage alone: `detect_series` over every stored series (~550: 93 dashboard rows x 5
  metrics + 12 pretuned rows x their metrics) x 365 nightlies, in memory;
- the same series through Apache Otava 0.8 `compute_change_points` (defaults), for the ratio;
- the full `detect` pass (load, detect, context, git windows, classify, store alerts/groups):
  cold on a year of backfill, then incremental after one more nightly;
- `investigate` of one kernel (load, detect the platform + headline peers, classify).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from service.cli.context import tune_gc
from service.config import load_settings
from service.detect import detect_series
from service.pipeline.detect_pass import SourceView, detect_pass
from service.pipeline.ingest_pass import ingest_source
from service.pipeline.investigate import Question, investigate
from service.store.db import Store
from tests.worlds import WorldSpec, generate_world

RESULTS = Path(__file__).resolve().parent / "results" / "detect_speed.json"


def _best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    tune_gc()  # what every `benchwatch` process does at start
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        world = generate_world(WorldSpec(seed=2026, nightlies=366, repo_dir=str(tmpd / "helion")))
        settings = load_settings()
        store = Store(f"sqlite:///{tmpd / 'bw.db'}")
        for src, body in (("dashboard", world.dashboard_bytes(364)), ("pretuned", world.pretuned_bytes(364))):
            (tmpd / f"{src}.json").write_bytes(body)
            ingest_source(store, settings, src, str(tmpd / f"{src}.json"))
        dset = settings.detect
        with store.session() as s:
            series = [d for src in ("dashboard", "pretuned") for d in SourceView.load(s, src).data.values()]
        n_points = sum(1 for d in series for p in d.points if p.is_trend)
        out["series"] = len(series)
        out["trend_points"] = n_points
        out["detector_stage_s"] = _best(lambda: [detect_series(d, dset) for d in series])
        try:
            from otava.analysis import compute_change_points

            def otava():
                for d in series:
                    vals = [p.value for p in d.points if p.is_trend and p.value is not None]
                    if len(vals) > 2:
                        compute_change_points(vals)

            out["otava_s"] = _best(otava, repeat=1)
            out["otava_over_ours"] = out["otava_s"] / out["detector_stage_s"]
        except ImportError:
            out["otava_s"] = None
        t0 = time.perf_counter()
        summary = detect_pass(store, settings, world.repo, fetch=False)
        out["detect_pass_cold_s"] = time.perf_counter() - t0
        out["moves_cold"] = summary.moves
        (tmpd / "dashboard.json").write_bytes(world.dashboard_bytes(365))
        (tmpd / "pretuned.json").write_bytes(world.pretuned_bytes(365))
        ingest_source(store, settings, "dashboard", str(tmpd / "dashboard.json"))
        ingest_source(store, settings, "pretuned", str(tmpd / "pretuned.json"))
        t0 = time.perf_counter()
        detect_pass(store, settings, world.repo, fetch=False)
        out["detect_pass_one_nightly_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        detect_pass(store, settings, world.repo, fetch=False)
        out["detect_pass_nothing_new_s"] = time.perf_counter() - t0
        lab = next(lab for lab in world.labels if lab.cause == "real" and lab.event.source == "dashboard")
        q = Question("dashboard", lab.event.platform_short, lab.event.kernels[0], None,
                     world.nights[lab.event.night].date.date())
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            investigate(store, settings, q, world.repo)
            times.append(time.perf_counter() - t0)
        out["investigate_one_kernel_s"] = statistics.median(times)
        store.dispose()
    for k, v in out.items():
        print(f"{k:28s} {v:.3f}" if isinstance(v, float) else f"{k:28s} {v}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
