"""Which members of an event are alerted: in an event whose typical member stepped, a kernel that
moved with the crowd by less than a step must (`detect.min_change_pct`) counts in the event's
breadth but is not put to on-call; an event of small moves only is alerted whole.

A machine change moves eight of twelve kernels of a platform 12% and four more by 1.5%: the
platform-wide rule finds the four small ones too, and without a floor each became an alert of
its own, a move no person would act on."""

from __future__ import annotations

from datetime import datetime, timedelta

from service.config import load_settings
from service.pipeline.detect_pass import detect_pass
from service.store.alert_reads import list_alerts
from tests.gitrepo import CommitSpec, build_repo
from tests.nightly_world import write_world

T0 = datetime(2026, 3, 1, 8, 0)
NIGHTS, STEP = 40, 28
BIG = ("gemm", "softmax", "layer_norm", "rms_norm", "sum", "cross_entropy", "jsd", "welford")
SMALL = ("kl_div", "rope", "vector_add", "int4_gemm")
KERNELS = (*BIG, *SMALL)


def _factor(i: int, kernel: str, metric: str) -> float:
    if i < STEP or metric == "compile_time_geomean_s":
        return 1.0
    size = 0.12 if kernel in BIG else 0.015 if kernel in SMALL else 0.0
    return 1.0 + size if metric.endswith("_ms") else 1.0 - size


def test_co_movers_under_the_smallest_step_count_in_the_event_but_are_not_alerted(lite, tmp_path):
    shas = build_repo(tmp_path / "helion", [CommitSpec(f"docs: night {i}", T0 + timedelta(days=i, hours=-2),
                                                       {"docs/night.md": f"{i}\n"}) for i in range(NIGHTS)])
    write_world(lite, shas, KERNELS, T0, _factor, seed=5, run_base=50_000)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    with lite.session() as s:
        alerts = list_alerts(s, status="all")
    heads = [a for a in alerts if a["state"] != "retracted" and a["metric"] == "helion_speedup_geomean"]
    assert set(BIG) <= {a["kernel"] for a in heads}
    assert all(abs(a["change_pct"]) >= load_settings().detect.min_change_pct for a in heads)
    assert len(set(SMALL) - {a["kernel"] for a in heads}) >= 3
    breadth = next(e for e in next(a for a in heads if a["kernel"] == "gemm")["evidence"] if e["check"] == "breadth")
    assert breadth["detail"].startswith(f"{len(KERNELS)} of the {len(KERNELS)} kernels")


def test_an_event_of_small_moves_only_is_alerted(lite, tmp_path):
    """Every kernel of the platform 2% slower on both timers the same night: too small for one
    series, plain across all (the platform-wide rule). The event's typical member moved less than
    a step must, so the small moves are the event, and on-call hears of it."""
    shas = build_repo(tmp_path / "helion", [CommitSpec(f"docs: night {i}", T0 + timedelta(days=i, hours=-2),
                                                       {"docs/night.md": f"{i}\\n"}) for i in range(NIGHTS)])

    def factor(i: int, kernel: str, metric: str) -> float:
        if i < STEP or metric == "compile_time_geomean_s":
            return 1.0
        return 1.02 if metric.endswith("_ms") else 0.98

    write_world(lite, shas, KERNELS, T0, factor, seed=3, run_base=40_000)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    with lite.session() as s:
        heads = [a for a in list_alerts(s, status="all") if a["state"] != "retracted"
                 and a["metric"] == "helion_speedup_geomean" and a["machine_cause"] != "noise"]
    assert len(heads) >= len(KERNELS) // 2
    assert sorted(abs(a["change_pct"]) for a in heads)[len(heads) // 2] < 3.0  # small moves, all alerted
