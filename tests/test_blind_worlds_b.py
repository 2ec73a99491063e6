"""Structural checks of the second blind world set (one short world)."""
import json
import re
import subprocess

import pytest

from tests.blind_worlds import score
from tests.blind_worlds_b import build_world

HEX8, HEX40 = re.compile(r"^[0-9a-f]{8}$"), re.compile(r"^[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(11, tmp_path_factory.mktemp("bw2"), nights=30)


def _fp(world):
    return [c.sha for c in world.commits]


def test_dashboard_documents_follow_the_schema(world):
    for n in (0, len(world.nights) - 1):
        d = json.loads(world.dashboard_bytes(n))
        assert {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels",
                "stats", "summary"} <= set(d)
        assert d["latest_run"]["run_id"] == world.nights[n].run_id
        for r in d["runs"]:
            assert r["run_id"].isdigit() and HEX8.match(r["sha"]) and HEX40.match(r["full_sha"])
            assert r["date"].endswith("Z") and isinstance(r["is_nightly"], bool) and isinstance(r["kernel_count"], int)
        for s in d["summary"]:
            assert s["status"] in ("improved", "regressed", "unchanged")
            dates = [h["date"] for h in s["history"]]
            assert dates == sorted(dates)
            for h in s["history"]:
                assert {"helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
                        "helion_latency_avg_ms", "is_nightly", "branch"} <= set(h)
    last = json.loads(world.dashboard_bytes(len(world.nights) - 1))
    assert any(not r["is_nightly"] or r["branch"] != "main" for r in last["runs"]), "manual / side-branch runs"
    assert "b200_cute" in last["platform_shorts"]


def test_labels_point_at_real_shas_in_their_windows(world):
    fp = _fp(world)
    idx = {s: i for i, s in enumerate(fp)}
    causes = {l.cause for l in world.labels}
    assert {"real", "method_change", "hardware", "noise"} <= causes
    for l in world.labels:
        i = world.night_of(l.first_bad_run_id)
        assert i is not None and world.night_of(l.last_good_run_id) == i - 1
        pre = l.source == "pretuned"
        a = world.nights[i - 1].p_full_sha if pre else world.nights[i - 1].full_sha
        b = world.nights[i].p_full_sha if pre else world.nights[i].full_sha
        for sha in (l.culprit_sha, l.change_sha):
            if sha:
                assert idx[a] < idx[sha] <= idx[b], (l.id, l.note)
        if l.cause == "real":
            assert l.culprit_sha and l.change_sha is None
        assert l.honest_speedup or l.kind == "outage"


def test_planted_culprits_touch_what_the_label_says(world):
    for l in world.labels:
        if l.cause == "real" and l.source == "dashboard":
            files = subprocess.run(["git", "-C", str(world.repo), "show", "--format=", "--name-only", l.culprit_sha],
                                   capture_output=True, text=True, check=True).stdout.split()
            assert any(f.startswith("helion/") for f in files)
            plats = {m[0] for m in l.members}
            subj = subprocess.run(["git", "-C", str(world.repo), "log", "-1", "--format=%s", l.culprit_sha],
                                  capture_output=True, text=True).stdout.lower()
            if plats == {"b200_cute"}:
                assert "cute" in subj or any("cute" in f for f in files)
        if l.kind == "cudagraph" and l.source == "dashboard":
            diff = subprocess.run(["git", "-C", str(world.repo), "show", l.change_sha, "--", "benchmarks/run.py"],
                                  capture_output=True, text=True).stdout
            assert "remove_flags" in diff
        if l.kind in ("runner", "driver") and l.change_sha:
            diff = subprocess.run(["git", "-C", str(world.repo), "show", l.change_sha, "--", ".github/workflows"],
                                  capture_output=True, text=True).stdout
            assert re.search(r"^[+-]\s+(runner|image|runtime-version):", diff, re.M)


def test_noise_leaves_the_level_unchanged(world):
    blips = [l for l in world.labels if l.kind == "blip"]
    assert blips
    for l in blips:
        i = world.night_of(l.first_bad_run_id)
        for m in l.members:
            assert abs(world.honest("dashboard", *m, i) / world.honest("dashboard", *m, i - 1) - 1) < 1e-6 or \
                any(x for x in world.labels if x is not l and m in x.members)


def test_the_existing_scorer_scores_it(world):
    s = score(world, [])
    assert s["events"] >= 10 and s["detection_recall"] == 0.0
