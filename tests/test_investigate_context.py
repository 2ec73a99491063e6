"""`investigate` sees what the nightly pass saw: asked about compile time on one platform, the
other platforms' compile time is its context too, so the two tell one story about one move."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from sqlalchemy import insert, select

from service.config import load_settings
from service.pipeline.detect_pass import detect_pass
from service.pipeline.investigate import Question, investigate
from service.records import DASHBOARD_METRICS
from service.store.alert_reads import list_alerts
from service.store.tables import Point, Run, Series, Track

T0 = datetime(2026, 3, 1, 8, 0)
NIGHTS, STEP = 40, 30
KERNELS = ("gemm", "softmax", "layer_norm", "rms_norm", "sum", "cross_entropy")
BASE = {"helion_speedup_geomean": 1.6, "triton_speedup_geomean": 1.2, "torch_compile_speedup_geomean": 1.1,
        "helion_latency_avg_ms": 0.8, "compile_time_geomean_s": 12.0}


def _sha(i: int) -> str:
    return f"{i:08x}" + "ab" * 16


def _world(store, only: str | None = None) -> None:
    """h100 and mi350x (two hardware families): compile time +80% on every kernel on one nightly
    (``only``: on that h100 kernel alone), speed flat (how compile time is measured changed);
    1% scatter everywhere."""
    rng = random.Random(3)
    with store.session() as s:
        s.execute(insert(Run), [dict(source="dashboard", run_id=str(50_000 + i), sha=_sha(i)[:8], full_sha=_sha(i),
                                     date=T0 + timedelta(days=i), branch="main", is_nightly=True, is_trend=True,
                                     kernel_count=len(KERNELS)) for i in range(NIGHTS)])
        pks = [pk for (pk,) in s.execute(select(Run.id).order_by(Run.date))]
        tracks = [Track(source="dashboard", platform_short=p, platform=p.upper(), kernel=k)
                  for p in ("h100", "mi350x") for k in KERNELS]
        s.add_all(tracks)
        s.flush()
        series = [Series(track_id=t.id, metric=m) for t in tracks for m in DASHBOARD_METRICS]
        s.add_all(series)
        s.flush()
        rows = []
        for sr in series:
            for i, pk in enumerate(pks):
                track = next(t for t in tracks if t.id == sr.track_id)
                stepped = only is None or (track.platform_short, track.kernel) == ("h100", only)
                jump = 1.8 if sr.metric == "compile_time_geomean_s" and i >= STEP and stepped else 1.0
                rows.append(dict(series_id=sr.id, run_pk=pk, failed=False,
                                 value=BASE[sr.metric] * jump * (1 + rng.gauss(0, 0.01))))
        s.execute(insert(Point), rows)


def test_investigate_of_compile_time_reads_the_other_platforms_as_the_nightly_pass_does(lite):
    _world(lite)
    settings = load_settings()
    detect_pass(lite, settings, None, fetch=False, now=T0 + timedelta(days=NIGHTS))
    with lite.session() as s:
        stored = [a for a in list_alerts(s, status="all") if a["platform_short"] == "h100" and a["kernel"] == "gemm"
                  and a["metric"] == "compile_time_geomean_s" and a["state"] != "retracted"]
    assert len(stored) == 1
    elsewhere = {e["check"]: e for e in stored[0]["evidence"]}["elsewhere"]
    assert "mi350x" in elsewhere["detail"]  # the pass saw the other family move too

    (got,) = investigate(lite, settings, Question("dashboard", "h100", "gemm", "compile_time_geomean_s",
                                                  (T0 + timedelta(days=STEP)).date()), None)
    assert (got["cause"], got["first_bad"]["sha"]) == (stored[0]["cause"], stored[0]["first_bad"]["sha"])
    assert [(e["check"], e["detail"]) for e in got["evidence"] if e["check"] != "persistence"] == \
        [(e["check"], e["detail"]) for e in stored[0]["evidence"] if e["check"] != "persistence"]


def test_investigate_of_a_crowd_metric_by_name_shows_a_lone_move_the_pass_did_not_alert(lite):
    """One kernel's compile time stepped alone: the pass keeps no alert for it (compile time alerts
    only in a crowd), and asked about compile time by name `investigate` still shows the step,
    searched afresh, while asked about the kernel's speed it answers from what the pass stored."""
    _world(lite, only="gemm")
    settings = load_settings()
    detect_pass(lite, settings, None, fetch=False, now=T0 + timedelta(days=NIGHTS))
    with lite.session() as s:
        assert not [a for a in list_alerts(s, status="all") if a["metric"] == "compile_time_geomean_s"
                    and a["state"] != "retracted"]
    day = (T0 + timedelta(days=STEP)).date()
    (got,) = investigate(lite, settings, Question("dashboard", "h100", "gemm", "compile_time_geomean_s", day), None)
    assert got["first_bad"] is not None and got["first_bad"]["sha"] == _sha(STEP)[:8]
    (speed,) = investigate(lite, settings, Question("dashboard", "h100", "gemm", None, day), None)
    assert speed["first_bad"] is None and speed["cause"] == "noise"
