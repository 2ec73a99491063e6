"""Two regressions on neighbouring nightlies of one platform: one event group, two culprits.

The matmul kernels step on one nightly (a matmul commit landed before it), the norm kernels on
the next (a reduction commit landed between the two). `group_moves` keeps moves a nightly apart
together, so both land in one platform group; each member's culprit must still come from its
own window: a commit that landed after a kernel's first bad nightly cannot have caused it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from service.config import load_settings
from service.pipeline.detect_pass import detect_pass
from service.store.alert_reads import list_alerts
from tests.gitrepo import CommitSpec
from tests.nightly_world import nightly_repo, write_world

T0 = datetime(2026, 3, 1, 8, 0)
NIGHTS, STEP = 40, 28
GEMMS = ("gemm", "grouped_gemm", "int4_gemm", "bmm")
NORMS = ("softmax", "layer_norm", "rms_norm", "cross_entropy")
KERNELS = (*GEMMS, *NORMS, "vector_add", "rope")
MATMUL = "Faster matmul tiling for 3D operands (#1455)"
REDUCTION = "Rework persistent reduction strategy (#1460)"


def _repo(path) -> list[str]:
    """A docs commit a night; the matmul commit lands just before nightly STEP, the reduction
    commit just before STEP + 1."""
    def planted(i: int, when: datetime) -> list[CommitSpec]:
        if i == STEP:
            return [CommitSpec(MATMUL, when - timedelta(hours=3), {"helion/language/matmul_ops.py": "x = 2\n" * 40})]
        if i == STEP + 1:
            return [CommitSpec(REDUCTION, when - timedelta(hours=3),
                               {"helion/_compiler/reduction_strategy.py": "y = 2\n" * 40})]
        return []

    return nightly_repo(path, T0, NIGHTS, planted)


def _factor(i: int, kernel: str, metric: str) -> float:
    slower = {"helion_speedup_geomean": 0.85, "helion_latency_avg_ms": 1.17}
    start = STEP if kernel in GEMMS else STEP + 1 if kernel in NORMS else None
    return slower.get(metric, 1.0) if start is not None and i >= start else 1.0


def test_each_regression_of_neighbouring_nightlies_names_the_commit_of_its_own_window(lite, tmp_path):
    shas = _repo(tmp_path / "helion")
    write_world(lite, shas, KERNELS, T0, _factor, seed=11, run_base=90_000)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    with lite.session() as s:
        got = {a["kernel"]: a for a in list_alerts(s, status="all")
               if a["metric"] == "helion_speedup_geomean" and a["state"] != "retracted"}
    assert set(got) == set(GEMMS) | set(NORMS)
    assert {got[k]["first_bad"]["full_sha"] for k in GEMMS} == {shas[STEP]}
    assert {got[k]["first_bad"]["full_sha"] for k in NORMS} == {shas[STEP + 1]}
    assert {got[k]["cause"] for k in got} == {"real"}
    assert {got[k]["culprit"]["subject"] for k in GEMMS} == {MATMUL}
    assert {got[k]["culprit"]["subject"] for k in NORMS} == {REDUCTION}
