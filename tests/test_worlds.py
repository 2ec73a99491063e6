"""The world generator itself: seeded, schema-true, and covering what the brief lists.

Every other end-to-end test trusts these worlds, so their properties are checked here:
every cause on both sources, clean series, failures (zeros), gaps, manual and side-branch
runs, kernels added and removed, `per_shape` only on the newest nightly, and a git history
in which every nightly sha and every planted commit really exists.
"""

from __future__ import annotations

import subprocess

import pytest

from service.ingest.documents import parse_document
from tests.worlds import CAUSES, WorldSpec, generate_world


@pytest.fixture(scope="module")
def world():
    return generate_world(WorldSpec(seed=5, nightlies=150, with_git=True))


def _git(repo, *args) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def test_same_seed_same_documents():
    a = generate_world(WorldSpec(seed=3, nightlies=45, with_git=False))
    b = generate_world(WorldSpec(seed=3, nightlies=45, with_git=False))
    c = generate_world(WorldSpec(seed=4, nightlies=45, with_git=False))
    assert a.dashboard_bytes(44) == b.dashboard_bytes(44)
    assert a.pretuned_bytes(44) == b.pretuned_bytes(44)
    assert a.dashboard_bytes(44) != c.dashboard_bytes(44)


def test_documents_validate_against_the_ingest_schema(world):
    for source, body, doc in (("dashboard", world.dashboard_bytes(149), world.dashboard(149)),
                              ("pretuned", world.pretuned_bytes(149), world.pretuned(149))):
        parsed = parse_document(source, body)  # raises on the first problem
        assert parsed.source == source
        assert len(parsed.data["summary"]) == len(doc["summary"]) > 0
        assert [r["run_id"] for r in parsed.data["runs"]] == [r["run_id"] for r in doc["runs"]]


def test_every_cause_on_both_sources(world):
    seen = {(lab.event.source, lab.cause) for lab in world.labels}
    assert {("dashboard", c) for c in CAUSES} <= seen
    assert {"real", "method_change"} <= {c for s, c in seen if s == "pretuned"}
    assert len(world.labels) >= 12


def test_history_has_failures_gaps_manual_runs_and_churn(world):
    doc = world.dashboard(149)
    nightly_ids = [n.run_id for n in world.nights[-150:]]
    zeros = sum(
        1 for item in doc["summary"] for h in item["history"] if h["helion_speedup_geomean"] == 0
    )
    assert zeros > 0, "failures must appear as zeros"
    manual = [r for r in doc["runs"] if not r["is_nightly"] and r["branch"] == "main"]
    side = [r for r in doc["runs"] if r["branch"] != "main"]
    assert manual and side
    lengths = {}
    gapped = 0
    for item in doc["summary"]:
        ids = [h["run_id"] for h in item["history"] if h["is_nightly"] and h["branch"] == "main"]
        lengths[(item["platform_short"], item["kernel"])] = len(ids)
        if ids and ids[0] == nightly_ids[0] and ids[-1] == nightly_ids[-1] and len(ids) < len(nightly_ids):
            gapped += 1
    assert min(lengths.values()) < 150 * 0.75, "a kernel added late should have a short history"
    assert any(item["infra_missing"] for item in doc["summary"]), "a removed kernel is missing now"
    assert gapped >= 1


def test_per_shape_only_on_the_newest_nightly(world):
    doc = world.dashboard(100)
    latest = doc["latest_run"]["run_id"]
    for item in doc["summary"]:
        for h in item["history"]:
            assert ("per_shape" in h) == (h["run_id"] == latest)


def test_retention_keeps_a_year():
    w = generate_world(WorldSpec(seed=1, nightlies=380, with_git=False, n_events=0, pretuned=False,
                                 platforms=("b200_cute",)))
    doc = w.dashboard(379)
    assert len([r for r in doc["runs"] if r["is_nightly"] and r["branch"] == "main"]) == 365


def test_git_history_holds_every_nightly_and_planted_commit(world):
    first_parent = _git(world.repo, "rev-list", "--first-parent", "main").split()
    assert {n.full_sha for n in world.nights} <= set(first_parent)
    for lab in world.labels:
        planted = lab.culprit or lab.change_commit
        if planted is None:
            continue
        window = _git(world.repo, "rev-list", "--first-parent",
                      f"{world.nights[lab.event.night - 1].full_sha}..{world.nights[lab.event.night].full_sha}").split()
        assert planted in window, lab
        assert len(window) >= 2, "a window holds distractors too"


def test_real_regression_moves_helion_only_and_latency_agrees():
    from tests.worlds import EventSpec

    ev = EventSpec("real", "dashboard", "h100", ("softmax",), 30, -0.3, "code")
    w = generate_world(WorldSpec(seed=9, nightlies=45, with_git=False, events=(ev,), failure_rate=0,
                                 platforms=("h100",), max_kernels_per_platform=6, pretuned=False))
    item = next(i for i in w.dashboard(44)["summary"] if i["kernel"] == "softmax")
    hist = [h for h in item["history"] if h["is_nightly"] and h["branch"] == "main"]

    def level(metric, lo, hi):
        vals = sorted(h[metric] for h in hist[lo:hi])
        return vals[len(vals) // 2]

    assert level("helion_speedup_geomean", 31, 44) / level("helion_speedup_geomean", 15, 30) == pytest.approx(0.7, abs=0.06)
    assert level("triton_speedup_geomean", 31, 44) / level("triton_speedup_geomean", 15, 30) == pytest.approx(1.0, abs=0.05)
    assert level("helion_latency_avg_ms", 31, 44) > 1.2 * level("helion_latency_avg_ms", 15, 30)
