"""Structural checks of blind world set H (tests/blind_worlds_h) on a short world.

These check that the worlds are well formed (document shape per helion-dashboard.md, label run
ids, adjacency, commits inside their windows, determinism, independence from `nights=`), not
how any monitor scores on them.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared_data import bundle_path

pytestmark = pytest.mark.skipif(not bundle_path().exists(), reason="Helion bundle not available")

SEED = 73
NIGHTS = 20
ROOT = Path(__file__).resolve().parent.parent

CAUSES = {"real": {"code", "heuristics/config"},
          "method_change": {"cudagraph", "shapes", "baseline", "autotune", "timer", "harness"},
          "hardware": {"runner", "driver/toolchain", "thermal", "outage"},
          "noise": {"outlier", "blip", "scatter"}}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("bw_h")


@pytest.fixture(scope="module")
def world(workdir):
    from tests.blind_worlds_h import build_world
    return build_world(SEED, workdir, nights=NIGHTS)


@pytest.fixture(scope="module")
def last_doc(world):
    return json.loads(world.dashboard_bytes(len(world.nights) - 1))


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def world_digest(w) -> str:
    h = hashlib.sha256()
    for n in range(len(w.nights)):
        h.update(w.dashboard_bytes(n))
        h.update(w.pretuned_bytes(n) or b"-")
        night = w.nights[n]
        h.update(f"{night.date.isoformat()}|{night.run_id}|{night.full_sha}|{night.p_run_id}".encode())
    h.update(json.dumps([l.to_dict() for l in w.labels], sort_keys=True).encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
def test_api_and_nights(world):
    from tests.blind_worlds_h import SEEDS, WINDOWS
    assert SEEDS == (71, 72, 73) and set(WINDOWS) == set(SEEDS)
    assert world.seed == SEED and len(world.nights) == NIGHTS
    assert (Path(world.repo) / ".git").exists()
    dates = [n.date for n in world.nights]
    assert all(d.tzinfo is not None for d in dates) and dates == sorted(dates)
    assert dates[-1].date().isoformat() == WINDOWS[SEED]["end"]
    for i, n in enumerate(world.nights):
        assert world.night_of(n.run_id) == i
        if n.p_run_id:
            assert world.night_of(n.p_run_id) == i
        assert len(n.full_sha) == 40
    assert world.series_count() > 50
    assert world.night_of("1") is None


def test_dashboard_document_shape(world, last_doc):
    d = last_doc
    assert set(d) >= {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels",
                      "stats", "summary"}
    assert d["latest_run"]["run_id"] == world.nights[-1].run_id and d["latest_run"]["is_nightly"]
    for r in d["runs"]:
        assert set(r) >= {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "kernel_count"}
        assert r["run_id"].isdigit() and len(r["sha"]) == 8 and r["full_sha"].startswith(r["sha"])
        assert r["date"].endswith("Z") and isinstance(r["kernel_count"], int)
    assert any(not r["is_nightly"] for r in d["runs"]) or any(r["branch"] != "main" for r in d["runs"])
    assert {"h100", "b200", "b200_cute", "mi350x", "tpu"} <= set(d["platform_shorts"])
    keys = {"kernel", "platform", "platform_short", "baseline_label", "has_nightly_data", "status",
            "accuracy_failures", "run_failures", "last_seen_date", "infra_missing", "helion_speedup_geomean",
            "triton_speedup_geomean", "torch_compile_speedup_geomean", "compile_time_geomean_s",
            "helion_latency_avg_ms", "speedup_delta_pct", "compile_delta_pct", "latency_delta_pct", "history"}
    hkeys = {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "helion_speedup_geomean",
             "triton_speedup_geomean", "torch_compile_speedup_geomean", "compile_time_geomean_s",
             "helion_latency_avg_ms"}
    latest = world.nights[-1].run_id
    fla = False
    for s in d["summary"]:
        assert set(s) >= keys and s["status"] in ("improved", "regressed", "unchanged")
        fla |= s["baseline_label"] == "FLA"
        dates = [h["date"] for h in s["history"]]
        assert dates == sorted(dates)
        for h in s["history"]:
            assert set(h) >= hkeys
            if "per_shape" in h:
                assert h["is_nightly"] and h["branch"] == "main"
                ps = h["per_shape"]
                n = len(ps["shapes"])
                assert all(len(ps[k]) in (0, n) for k in ("helion_speedup", "helion_accuracy"))
        with_ps = [h for h in s["history"] if "per_shape" in h]
        assert len(with_ps) <= 1
        if s["history"] and s["history"][-1]["run_id"] == latest:
            assert with_ps and with_ps[0]["run_id"] == latest
    assert fla, "linear-attention rows (baseline_label FLA) expected in this window"


def test_pretuned_document_shape(world):
    p = json.loads(world.pretuned_bytes(len(world.nights) - 1))
    assert set(p) >= {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats",
                      "summary"}
    for s in p["summary"]:
        assert set(s) >= {"kernel", "platform", "platform_short", "compute", "cudagraph", "has_nightly_data",
                          "failed", "error", "status", "geomean_delta_pct", "geomean", "helion_wins", "total",
                          "best_speedup", "baselines", "last_seen_date", "history"}
        assert s["platform_short"] in ("h100", "b200") and s["status"] in ("improved", "regressed",
                                                                          "unchanged", "failed")
        for h in s["history"]:
            assert set(h) >= {"run_id", "sha", "full_sha", "date", "branch", "is_nightly"}
            assert ("error" in h) or {"geomean", "helion_wins", "total", "best_speedup", "baselines"} <= set(h)


def test_every_night_is_valid_json_and_grows(world):
    prev = 0
    for n in range(len(world.nights)):
        d = json.loads(world.dashboard_bytes(n))
        assert d["latest_run"]["run_id"] == world.nights[n].run_id
        assert len(d["runs"]) >= prev
        prev = len(d["runs"])


def test_labels_point_at_real_adjacent_runs(world):
    assert world.labels
    nightly = [n.run_id for n in world.nights]
    pre = [n.p_run_id for n in world.nights if n.p_run_id]
    for l in world.labels:
        assert l.kind in CAUSES[l.cause], (l.id, l.cause, l.kind)
        runs = nightly if l.source == "dashboard" else pre
        assert l.source in ("dashboard", "pretuned")
        assert l.first_bad_run_id in runs and l.last_good_run_id in runs, l.id
        i = runs.index(l.first_bad_run_id)
        assert i >= 1 and runs[i - 1] == l.last_good_run_id, l.id
        assert world.night_of(l.first_bad_run_id) - 4 >= 0
        if l.end_run_id is not None:
            assert l.end_run_id in runs and runs.index(l.end_run_id) > i, l.id
        assert l.members and all(len(m) == 2 for m in l.members)
        for key in l.honest_speedup:
            assert tuple(key.split("/", 1)) in set(l.members), (l.id, key)
        if l.cause != "noise":
            assert all(v > 0 for v in l.honest_speedup.values()), l.id
        if l.cause == "real":
            assert l.culprit_sha and not l.change_sha, l.id
        if l.cause in ("method_change",) and l.kind != "baseline":
            assert l.change_sha, l.id


def test_members_have_data_at_first_bad(world):
    for l in world.labels:
        if l.kind == "scatter" or l.source != "dashboard":
            continue
        d = json.loads(world.dashboard_bytes(world.night_of(l.first_bad_run_id)))
        have = {(s["platform_short"], s["kernel"]) for s in d["summary"]
                if any(h["run_id"] == l.first_bad_run_id for h in s["history"])}
        assert set(l.members) & have, l.id


CULPRIT_PATHS = ("helion/", "examples/", "pretuned_kernels/")
CHANGE_PATHS = (".github/workflows/", ".github/actions/", ".github/ci_commit_pins/", "benchmarks/",
                "pretuned_kernels/", "helion/runtime/settings.py")


def test_commits_are_first_parent_in_window_and_fit(world):
    repo = world.repo
    first_parent = set(_git(repo, "rev-list", "--first-parent", "main").split())
    sha_of = {}
    for n in world.nights:
        sha_of[n.run_id] = n.full_sha
        if n.p_run_id:
            sha_of[n.p_run_id] = n.p_full_sha
    for l in world.labels:
        for sha, paths in ((l.culprit_sha, CULPRIT_PATHS), (l.change_sha, CHANGE_PATHS)):
            if not sha:
                continue
            assert sha in first_parent, (l.id, sha)
            window = _git(repo, "rev-list", "--first-parent",
                          f"{sha_of[l.last_good_run_id]}..{sha_of[l.first_bad_run_id]}").split()
            assert sha in window, (l.id, sha)
            files = _git(repo, "show", "--name-only", "--format=", sha).split()
            assert any(f.startswith(p) for f in files for p in paths), (l.id, sha, files[:5])
        if l.end_run_id and l.cause == "real":
            # an ended real episode ends on a commit in its own window touching the same code
            window = _git(repo, "rev-list", "--first-parent",
                          f"{sha_of[l.end_run_id]}~1..{sha_of[l.end_run_id]}").split()
            assert window


def test_perfect_alerts_score_one(world):
    from tests.blind_worlds.score import perfect_alerts, score
    r = score(world, perfect_alerts(world))
    assert r["cause_accuracy"] == 1.0 and r["first_bad_exact"] == 1.0
    assert r["culprit_top1"] in (None, 1.0) and r["change_commit_accuracy"] in (None, 1.0)
    assert r["false_alerts"] == 0


def test_values_do_not_depend_on_nights(world, workdir):
    from tests.blind_worlds_h import build_world
    short = build_world(SEED, workdir, nights=8)
    assert [n.run_id for n in short.nights] == [n.run_id for n in world.nights[-8:]]
    a = json.loads(world.dashboard_bytes(len(world.nights) - 1))
    b = json.loads(short.dashboard_bytes(len(short.nights) - 1))
    last = world.nights[-1].run_id

    def latest(doc):
        return {(s["platform_short"], s["kernel"]): next((h for h in s["history"] if h["run_id"] == last), None)
                for s in doc["summary"]}
    la, lb = latest(a), latest(b)
    common = [k for k in la if la[k] is not None and lb.get(k) is not None]
    assert len(common) > 50
    for k in common:
        assert la[k] == lb[k], k
    ids_short = {l.id for l in short.labels}
    assert ids_short <= {l.id for l in world.labels}


def test_deterministic_across_hash_seeds(world, workdir):
    code = ("import sys; sys.path.insert(0, %r); from tests.blind_worlds_h import build_world; "
            "from tests.test_blind_worlds_h import world_digest; "
            "print(world_digest(build_world(%d, %r, nights=%d)))" % (str(ROOT), SEED, str(workdir), NIGHTS))
    want = world_digest(world)
    for hs in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hs, BLIND_WORLDS_H_NO_CACHE="1")
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(ROOT), capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().splitlines()[-1] == want
