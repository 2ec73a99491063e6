"""Two footprints on one nightly of one platform are two events: kernels whose speedup stepped
while Helion's own time (latency) stayed put, and kernels whose two timers stepped together.
Kept as one event, each lends its footprint to the other (a harness edit to three kernels and
a code change to two others were one "real" event)."""

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
from tests.gitrepo import CommitSpec, build_repo

T0 = datetime(2026, 3, 1, 8, 0)
NIGHTS, STEP = 40, 28
KERNELS = ("gemm", "softmax", "layer_norm", "rms_norm", "sum", "cross_entropy", "jsd", "welford")
BASE = {"helion_speedup_geomean": 1.6, "triton_speedup_geomean": 1.2, "torch_compile_speedup_geomean": 1.1,
        "helion_latency_avg_ms": 0.8, "compile_time_geomean_s": 12.0}


def _repo(path) -> list[str]:
    """One commit a night; the step's window also holds a harness edit and a compiler change."""
    commits = []
    for i in range(NIGHTS):
        when = T0 + timedelta(days=i) - timedelta(hours=2)
        if i == STEP:
            commits.append(CommitSpec("Fix the benchmark harness for new examples (#901)", when - timedelta(hours=3),
                                      {"benchmarks/run.py": "KERNEL_MAPPINGS = {}\n# harness\n"}))
            commits.append(CommitSpec("[compiler] Rework norm reductions (#902)", when - timedelta(hours=2),
                                      {"helion/_compiler/reduction_strategy.py": "x = 2\n" * 40}))
        commits.append(CommitSpec(f"docs: night {i}", when, {"docs/night.md": f"{i}\n"}))
    shas = build_repo(path, commits)
    return [sha for sha, c in zip(shas, commits) if c.subject.startswith("docs: night")]


def _world(store, shas: list[str], speedup_only: tuple[str, ...], both: tuple[str, ...]) -> None:
    """h100, 1% scatter; at STEP the ``speedup_only`` kernels' speedup drops 12% with latency
    flat, the ``both`` kernels' speedup drops 12% and their latency rises 13%."""
    rng = random.Random(5)
    with store.session() as s:
        s.execute(insert(Run), [dict(source="dashboard", run_id=str(60_000 + i), sha=shas[i][:8], full_sha=shas[i],
                                     date=T0 + timedelta(days=i), branch="main", is_nightly=True, is_trend=True,
                                     kernel_count=len(KERNELS)) for i in range(NIGHTS)])
        pks = [pk for (pk,) in s.execute(select(Run.id).order_by(Run.date))]
        tracks = [Track(source="dashboard", platform_short="h100", platform="H100", kernel=k) for k in KERNELS]
        s.add_all(tracks)
        s.flush()
        series = [Series(track_id=t.id, metric=m) for t in tracks for m in DASHBOARD_METRICS]
        s.add_all(series)
        s.flush()
        kernel_of = {t.id: t.kernel for t in tracks}
        rows = []
        for sr in series:
            k = kernel_of[sr.track_id]
            for i, pk in enumerate(pks):
                f = 1.0
                if i >= STEP and sr.metric == "helion_speedup_geomean" and k in speedup_only + both:
                    f = 0.88
                if i >= STEP and sr.metric == "helion_latency_avg_ms" and k in both:
                    f = 1.13
                rows.append(dict(series_id=sr.id, run_pk=pk, failed=False,
                                 value=BASE[sr.metric] * f * (1 + rng.gauss(0, 0.01))))
        s.execute(insert(Point), rows)


def _alerts(store, shas: list[str]) -> list[dict]:
    """The speedup alerts of the step's nightly."""
    with store.session() as s:
        return [a for a in list_alerts(s, status="all") if a["state"] != "retracted"
                and a["metric"] == "helion_speedup_geomean" and a["first_bad"]["full_sha"] == shas[STEP]]


def test_speedup_only_kernels_and_both_timer_kernels_of_one_nightly_are_two_events(lite, tmp_path):
    shas = _repo(tmp_path / "helion")
    _world(lite, shas, speedup_only=("gemm", "softmax", "jsd"), both=("layer_norm", "rms_norm"))
    settings = load_settings()
    detect_pass(lite, settings, tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = {a["kernel"]: a for a in _alerts(lite, shas)}
    assert set(got) == {"gemm", "softmax", "jsd", "layer_norm", "rms_norm"}
    groups = {}
    for k, a in got.items():
        groups.setdefault(a["group_id"], set()).add(k)
    assert sorted(map(sorted, groups.values())) == [["gemm", "jsd", "softmax"], ["layer_norm", "rms_norm"]]
    assert {got[k]["cause"] for k in ("gemm", "softmax", "jsd")} == {"method_change"}
    assert {got[k]["change_commit"]["subject"] for k in ("gemm", "softmax", "jsd")} == {
        "Fix the benchmark harness for new examples (#901)"}
    assert {got[k]["cause"] for k in ("layer_norm", "rms_norm")} == {"real"}
    assert {got[k]["culprit"]["subject"] for k in ("layer_norm", "rms_norm")} == {
        "[compiler] Rework norm reductions (#902)"}
    # `investigate` forms the same two events
    for kernel in ("gemm", "layer_norm"):
        (ans,) = investigate(lite, settings, Question("dashboard", "h100", kernel, None,
                                                      (T0 + timedelta(days=STEP)).date()), tmp_path / "helion")
        assert ans["cause"] == got[kernel]["cause"]


def test_one_footprint_on_a_nightly_stays_one_event(lite, tmp_path):
    """Speedup-only kernels with no kernel whose two timers stepped that night: nothing to split."""
    shas = _repo(tmp_path / "helion")
    _world(lite, shas, speedup_only=("gemm", "softmax", "jsd"), both=())
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = _alerts(lite, shas)
    assert len(got) == 3 and len({a["group_id"] for a in got}) == 1
    assert {a["cause"] for a in got} == {"method_change"}
