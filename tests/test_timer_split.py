"""Two footprints on one nightly of one platform are two events: kernels whose speedup stepped
while Helion's own time (latency) stayed put, and kernels whose two timers stepped together.
Kept as one event, each lends its footprint to the other (a harness edit to three kernels and
a code change to two others were one "real" event)."""

from __future__ import annotations

from datetime import datetime, timedelta

from service.config import load_settings
from service.pipeline.detect_pass import detect_pass
from service.pipeline.investigate import Question, investigate
from service.store.alert_reads import list_alerts
from tests.gitrepo import CommitSpec
from tests.helion_files import DISPATCH_PATH, render_dispatch_yml
from tests.nightly_world import nightly_repo, write_world

T0 = datetime(2026, 3, 1, 8, 0)
NIGHTS, STEP = 40, 28
KERNELS = ("gemm", "softmax", "layer_norm", "rms_norm", "sum", "cross_entropy", "jsd", "welford")


def _dispatch(image: str) -> str:
    return render_dispatch_yml({"kernels": KERNELS}, {"h100": "linux.aws.h100"}, images={"h100": image})


def _repo(path, new_image: str | None = None) -> list[str]:
    """One commit a night; the step's window also holds a harness edit and a compiler change,
    or (``new_image``) a compiler change and h100's new CUDA image."""
    def planted(i: int, when: datetime) -> list[CommitSpec]:
        if i == STEP and new_image:
            return [CommitSpec("[CI] Bump the H100 image (#900)", when - timedelta(hours=3),
                               {DISPATCH_PATH: _dispatch(new_image)})]
        if i == STEP:
            return [CommitSpec("Fix the benchmark harness for new examples (#901)", when - timedelta(hours=3),
                               {"benchmarks/run.py": "KERNEL_MAPPINGS = {}\n# harness\n"}),
                    CommitSpec("[compiler] Rework norm reductions (#902)", when - timedelta(hours=2),
                               {"helion/_compiler/reduction_strategy.py": "x = 2\n" * 40})]
        return []

    return nightly_repo(path, T0, NIGHTS, planted, first=[CommitSpec(
        "CI: benchmark dispatch", T0 - timedelta(days=1), {DISPATCH_PATH: _dispatch("nvidia/cuda:12.9.1-devel-ubuntu24.04")})])


def _world(store, shas: list[str], speedup_only: tuple[str, ...], both: tuple[str, ...]) -> None:
    """h100, 1% scatter; at STEP the ``speedup_only`` kernels' speedup drops 12% with latency
    flat, the ``both`` kernels' speedup drops 12% and their latency rises 13%."""
    def factor(i: int, k: str, metric: str) -> float:
        if i >= STEP and metric == "helion_speedup_geomean" and k in speedup_only + both:
            return 0.88
        return 1.13 if i >= STEP and metric == "helion_latency_avg_ms" and k in both else 1.0

    write_world(store, shas, KERNELS, T0, factor, seed=5, run_base=60_000)


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


def test_a_new_image_for_the_platform_keeps_both_footprints_one_event(lite, tmp_path):
    """A new CUDA image re-times Helion and the baselines each its own way (cuBLAS and cuDNN ship
    in it): kernels whose baseline moved and kernels whose own time moved are both what that one
    change predicts, so that nightly is one event, the machine's, not a split whose parts each look
    narrow enough for the compiler commit beside it."""
    shas = _repo(tmp_path / "helion", new_image="nvidia/cuda:13.0.0-devel-ubuntu24.04")
    _world(lite, shas, speedup_only=("gemm", "softmax", "jsd"), both=("layer_norm", "rms_norm"))
    settings = load_settings()
    detect_pass(lite, settings, tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = {a["kernel"]: a for a in _alerts(lite, shas)}
    assert set(got) == {"gemm", "softmax", "jsd", "layer_norm", "rms_norm"}
    assert len({a["group_id"] for a in got.values()}) == 1
    assert {a["cause"] for a in got.values()} == {"hardware"}
    (ans,) = investigate(lite, settings, Question("dashboard", "h100", "layer_norm", None,
                                                  (T0 + timedelta(days=STEP)).date()), tmp_path / "helion")
    assert ans["cause"] == "hardware"
