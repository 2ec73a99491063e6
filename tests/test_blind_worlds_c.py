"""Fast structural checks of the third blind world set (tests/blind_worlds_c) on a short world."""
import json
import re
import subprocess

import pytest

from tests.blind_worlds_c import build_world

HEX40 = re.compile(r"^[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(21, tmp_path_factory.mktemp("bwc"), nights=30)


def test_nights_on_real_first_parent_shas(world):
    assert len(world.nights) == 30
    fp = subprocess.run(["git", "-C", str(world.repo), "rev-list", "--first-parent", "main"],
                        capture_output=True, text=True, check=True).stdout.split()
    fp = set(fp)
    for a, b in zip(world.nights, world.nights[1:]):
        assert (b.date.date() - a.date.date()).days == 1 and int(b.run_id) > int(a.run_id)
    for n in world.nights:
        assert n.full_sha in fp and n.sha == n.full_sha[:8] and n.date.year == 2026
        assert world.night_of(n.run_id) is not None


def test_dashboard_schema(world):
    d = json.loads(world.dashboard_bytes(len(world.nights) - 1))
    for k in ("generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels", "stats", "summary"):
        assert k in d
    assert d["latest_run"]["run_id"] == world.nights[-1].run_id and d["latest_run"]["is_nightly"]
    for r in d["runs"]:
        assert r["run_id"].isdigit() and HEX40.match(r["full_sha"]) and r["date"].endswith("Z")
    assert d["summary"]
    for s in d["summary"]:
        for k in ("kernel", "platform", "platform_short", "baseline_label", "status", "history", "infra_missing",
                  "helion_speedup_geomean", "helion_latency_avg_ms", "accuracy_failures", "run_failures"):
            assert k in s
        with_ps = [h for h in s["history"] if "per_shape" in h]
        assert len(with_ps) <= 1
        for h in s["history"]:
            for k in ("run_id", "sha", "full_sha", "date", "branch", "is_nightly", "helion_speedup_geomean",
                      "triton_speedup_geomean", "torch_compile_speedup_geomean", "helion_latency_avg_ms"):
                assert k in h
    nightly = [h for s in d["summary"] for h in s["history"] if h["is_nightly"] and h["branch"] == "main"]
    assert {h["run_id"] for h in nightly} <= {n.run_id for n in world.nights}


def test_pretuned_schema_when_present(tmp_path_factory):
    w = build_world(21, tmp_path_factory.mktemp("bwc21p"), nights=12, skip=80)
    assert all((n.p_run_id is None) == (n.p_full_sha is None) for n in w.nights)
    have = [i for i, n in enumerate(w.nights) if n.p_run_id]
    assert have, "window slice should reach the pretuned suite"
    assert all(w.pretuned_bytes(i) is None for i, n in enumerate(w.nights) if i < have[0])
    d = json.loads(w.pretuned_bytes(have[-1]))
    for k in ("generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats", "summary"):
        assert k in d
    assert d["latest_run"]["run_id"] == w.nights[have[-1]].p_run_id
    for s in d["summary"]:
        for k in ("kernel", "platform", "platform_short", "compute", "cudagraph", "failed", "status", "geomean",
                  "helion_wins", "total", "best_speedup", "baselines", "history"):
            assert k in s
        for h in s["history"]:
            assert "error" in h or {"geomean", "helion_wins", "total", "best_speedup"} <= set(h)


def test_labels_point_into_the_window(world):
    assert world.labels
    causes = {"real", "method_change", "hardware", "noise"}
    for l in world.labels:
        assert l.cause in causes and l.source in ("dashboard", "pretuned")
        assert world.night_of(l.first_bad_run_id) is not None
        assert world.night_of(l.last_good_run_id) == world.night_of(l.first_bad_run_id) - 1
        assert l.members and all(len(m) == 2 for m in l.members)
        for key in l.honest_speedup:
            assert tuple(key.split("/", 1)) in set(l.members)
        for sha in (l.culprit_sha, l.change_sha):
            if sha:
                assert HEX40.match(sha)
                subprocess.run(["git", "-C", str(world.repo), "cat-file", "-e", sha + "^{commit}"], check=True)
        if l.cause == "real":
            assert l.culprit_sha
            files = subprocess.run(["git", "-C", str(world.repo), "show", "--name-only", "--format=", l.culprit_sha],
                                   capture_output=True, text=True, check=True).stdout.split()
            assert any(f.startswith("helion/") or re.match(r"pretuned_kernels/.*/_helion_aot_", f) for f in files)


def test_deterministic(world, tmp_path_factory):
    w2 = build_world(21, tmp_path_factory.mktemp("bwc2"), nights=30)
    assert [l.to_dict() for l in w2.labels] == [l.to_dict() for l in world.labels]
    assert w2.dashboard_bytes(29) == world.dashboard_bytes(29)
