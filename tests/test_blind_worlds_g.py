"""Structural checks on a short blind world of set G (tests/blind_worlds_g).

Builds the last 20 nightlies of seed 63 (the window with the pretuned suite) once, then checks:
the documents have the shape helion-dashboard.md describes, labels point at run ids that exist,
first-bad/last-good are adjacent nightlies of the label's source, culprit/change shas are real
first-parent commits of the label's window whose diffs touch the right files, and a second build in
a subprocess with another PYTHONHASHSEED gives identical bytes and labels.
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

ROOT = Path(__file__).resolve().parent.parent
SEED, NIGHTS = 63, 20

pytestmark = pytest.mark.skipif(not bundle_path().exists(), reason="Helion bundle not available")


def _digest(world) -> dict:
    h = hashlib.sha256()
    for n in range(len(world.nights)):
        h.update(world.dashboard_bytes(n))
        h.update(world.pretuned_bytes(n) or b"-")
    return {"docs": h.hexdigest(), "labels": [l.to_dict() for l in world.labels],
            "nights": [(n.date.isoformat(), n.full_sha, n.p_full_sha) for n in world.nights]}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from tests.blind_worlds_g import build_world
    return build_world(SEED, tmp_path_factory.mktemp("g63"), nights=NIGHTS)


def _check_run(r):
    assert set(r) >= {"run_id", "sha", "full_sha", "date", "branch", "is_nightly"}
    assert r["run_id"].isdigit() and len(r["sha"]) == 8 and len(r["full_sha"]) == 40
    assert r["full_sha"].startswith(r["sha"]) and r["date"].endswith("Z")
    assert isinstance(r["is_nightly"], bool)


def test_interface(world):
    from tests.blind_worlds_g import SEEDS, WINDOWS
    assert SEEDS == (61, 62, 63) and set(WINDOWS) == set(SEEDS)
    assert len(world.nights) == NIGHTS
    for a, b in zip(world.nights, world.nights[1:]):
        assert a.date < b.date and a.date.tzinfo is not None
    assert world.series_count() > 0
    assert Path(world.repo, ".git").is_dir()


def test_dashboard_schema(world):
    last = None
    for n in range(len(world.nights)):
        d = json.loads(world.dashboard_bytes(n))
        assert set(d) >= {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels",
                          "stats", "summary"}
        for r in d["runs"]:
            _check_run(r)
            assert isinstance(r["kernel_count"], int)
        assert d["latest_run"]["run_id"] == world.nights[n].run_id
        last = d
    for s in last["summary"]:
        assert set(s) >= {"kernel", "platform", "platform_short", "baseline_label", "has_nightly_data", "status",
                          "accuracy_failures", "run_failures", "last_seen_date", "infra_missing", "helion_speedup_geomean",
                          "speedup_delta_pct", "compile_delta_pct", "latency_delta_pct", "history"}
        assert s["status"] in ("improved", "regressed", "unchanged")
        dates = [h["date"] for h in s["history"]]
        assert dates == sorted(dates)
        for h in s["history"]:
            _check_run(h)
            for f in ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
                      "helion_latency_avg_ms"):
                assert isinstance(h[f], (int, float))
            assert h["compile_time_geomean_s"] is None or isinstance(h["compile_time_geomean_s"], float)
    with_ps = []
    for s in last["summary"]:
        kept = [h for h in s["history"] if "per_shape" in h]
        assert len(kept) <= 1  # only the entry's latest main nightly keeps per_shape
        mains = [h for h in s["history"] if h["is_nightly"] and h["branch"] == "main"]
        if kept:
            assert kept[0]["run_id"] == mains[-1]["run_id"]
        with_ps += kept
    assert any(h["run_id"] == world.nights[-1].run_id for h in with_ps)
    ps = with_ps[0]["per_shape"]
    assert len(ps["shapes"]) == len(ps["helion_speedup"]) == len(ps["helion_accuracy"])
    assert any(not h["is_nightly"] or h["branch"] != "main" for s in last["summary"] for h in s["history"])


def test_pretuned_schema(world):
    docs = [world.pretuned_bytes(n) for n in range(len(world.nights))]
    assert docs[-1] is not None
    p = json.loads(docs[-1])
    assert set(p) >= {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats", "summary"}
    for s in p["summary"]:
        assert set(s) >= {"kernel", "platform", "platform_short", "compute", "cudagraph", "has_nightly_data", "failed",
                          "error", "status", "geomean_delta_pct", "geomean", "helion_wins", "total", "best_speedup",
                          "baselines", "last_seen_date", "history"}
        assert s["status"] in ("improved", "regressed", "unchanged", "failed")
        for h in s["history"]:
            _check_run(h)
            assert ("error" in h) or {"geomean", "helion_wins", "total", "best_speedup", "baselines"} <= set(h)


def _window_commits(repo, good, bad):
    out = subprocess.run(["git", "-C", repo, "rev-list", "--first-parent", f"{good}..{bad}"],
                         capture_output=True, text=True, check=True).stdout.split()
    return set(out)


def _touched(repo, sha):
    return subprocess.run(["git", "-C", repo, "diff-tree", "--no-commit-id", "-r", "--name-only", "-m",
                           "--first-parent", sha], capture_output=True, text=True, check=True).stdout.split()


def test_labels(world):
    from tests.blind_worlds.world import Label
    assert world.labels
    dash_ids = {n.run_id: i for i, n in enumerate(world.nights)}
    p_ids = {n.p_run_id: i for i, n in enumerate(world.nights) if n.p_run_id}
    for l in world.labels:
        assert isinstance(l, Label)
        ids = dash_ids if l.source == "dashboard" else p_ids
        assert l.first_bad_run_id in ids and l.last_good_run_id in ids, l.id
        fb, lg = ids[l.first_bad_run_id], ids[l.last_good_run_id]
        if l.source == "dashboard":
            assert fb == lg + 1, l.id
        else:
            assert lg < fb and not any(lg < i < fb for i in p_ids.values()), l.id
        assert world.night_of(l.first_bad_run_id) == fb
        if l.end_run_id is not None:
            assert l.end_run_id in dash_ids and dash_ids[l.end_run_id] > fb
        assert l.members and all(len(m) == 2 for m in l.members)
        for key in l.honest_speedup:
            assert tuple(key.split("/", 1)) in set(map(tuple, l.members))
        if l.source == "dashboard":
            good, bad = world.nights[lg].full_sha, world.nights[fb].full_sha
        else:
            good, bad = world.nights[lg].p_full_sha, world.nights[fb].p_full_sha
        window = _window_commits(world.repo, good, bad)
        if l.cause == "real":
            assert l.culprit_sha in window, l.id
            paths = _touched(world.repo, l.culprit_sha)
            assert any(p.startswith("helion/") or "/_helion_aot_" in p for p in paths), l.id
        if l.cause in ("method_change", "hardware") and l.change_sha:
            assert l.change_sha in window, l.id
            paths = _touched(world.repo, l.change_sha)
            assert any(p.startswith((".github/workflows/", "benchmarks/", "pretuned_kernels/")) for p in paths), l.id
        if l.cause == "method_change":
            assert l.change_sha, l.id


def test_deterministic_across_hash_seeds(world, tmp_path):
    code = ("import json, sys; from pathlib import Path; sys.path.insert(0, %r); "
            "from tests.blind_worlds_g import build_world; from tests.test_blind_worlds_g import _digest; "
            "w = build_world(%d, Path(%r), nights=%d); print(json.dumps(_digest(w)))"
            % (str(ROOT), SEED, str(tmp_path / "again"), NIGHTS))
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == json.loads(json.dumps(_digest(world)))
