"""Structural checks of the set-F blind worlds (short world: seed 51, its last 35 nightlies).

The world is built once per module; a second build in another process (another
PYTHONHASHSEED) must give the same bytes and labels.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from tests.blind_worlds_f import SEEDS, WINDOWS, build_world

SEED, SHORT = 51, 35
KINDS = {
    "real": {"code", "heuristics/config"},
    "method_change": {"cudagraph", "shapes", "baseline", "autotune", "timer", "harness"},
    "hardware": {"runner", "driver/toolchain", "thermal", "outage"},
    "noise": {"blip", "scatter"},
}
TOP = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "stats", "summary"}
RUN = {"run_id", "sha", "full_sha", "date", "branch", "is_nightly"}
HIST = RUN | {"helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
              "compile_time_geomean_s", "helion_latency_avg_ms"}
SUMMARY = {"kernel", "platform", "platform_short", "baseline_label", "has_nightly_data", "status",
           "accuracy_failures", "run_failures", "last_seen_date", "infra_missing", "history",
           "speedup_delta_pct", "compile_delta_pct", "latency_delta_pct"}
P_SUMMARY = {"kernel", "platform", "platform_short", "compute", "cudagraph", "has_nightly_data",
             "failed", "error", "status", "geomean_delta_pct", "geomean", "helion_wins", "total",
             "best_speedup", "baselines", "last_seen_date", "history"}
TAKEN = {date(2026, 2, 26), date(2026, 4, 12), date(2026, 5, 30), date(2026, 7, 18),
         date(2026, 8, 20), date(2026, 8, 22)}

DIGEST = """
import hashlib, json, sys
from pathlib import Path
from tests.blind_worlds_f import build_world
w = build_world({seed}, Path(sys.argv[1]), nights={nights})
h = hashlib.sha256()
for n in range(len(w.nights)):
    h.update(w.dashboard_bytes(n))
    h.update(w.pretuned_bytes(n) or b"-")
h.update(json.dumps([l.to_dict() for l in w.labels], sort_keys=True).encode())
print(h.hexdigest())
"""


def _digest(world) -> str:
    h = hashlib.sha256()
    for n in range(len(world.nights)):
        h.update(world.dashboard_bytes(n))
        h.update(world.pretuned_bytes(n) or b"-")
    h.update(json.dumps([lab.to_dict() for lab in world.labels], sort_keys=True).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(SEED, tmp_path_factory.mktemp("bwf"), nights=SHORT)


@pytest.fixture(scope="module")
def docs(world):
    cache = {}

    def get(src, n):
        if (src, n) not in cache:
            data = world.dashboard_bytes(n) if src == "dashboard" else world.pretuned_bytes(n)
            cache[(src, n)] = json.loads(data) if data else None
        return cache[(src, n)]
    return get


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def first_parent(world):
    return _git(world.repo, "rev-list", "--first-parent", "main").split()


def test_seeds_and_windows():
    assert SEEDS == (51, 52, 53)
    assert set(WINDOWS) == set(SEEDS)
    for n, end in WINDOWS.values():
        assert 110 <= n <= 160
        assert date(2026, 3, 1) <= end <= date(2026, 8, 22) and end not in TAKEN
    assert len({end for _, end in WINDOWS.values()}) == 3


def test_nights_on_real_first_parent_shas(world, first_parent):
    fp = set(first_parent)
    assert _git(world.repo, "rev-parse", "main").startswith("ef091f41")
    assert len(world.nights) == SHORT
    assert world.nights[-1].date.date() == WINDOWS[SEED][1]
    ids = [int(n.run_id) for n in world.nights]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    days = [n.date.date() for n in world.nights]
    assert len(set(days)) == len(days)
    for i, n in enumerate(world.nights):
        assert n.full_sha in fp and n.sha == n.full_sha[:8] and re.fullmatch(r"[0-9a-f]{40}", n.full_sha)
        assert n.date.tzinfo is not None and n.date.hour == 8
        # the last main commit that landed before the cron fired
        last = _git(world.repo, "rev-list", "-1", "--first-parent", f"--before={n.date.isoformat()}",
                    "main").strip()
        assert last == n.full_sha
        if n.p_run_id:
            assert n.p_full_sha in fp and int(n.p_run_id) > int(n.run_id)
            assert first_parent.index(n.p_full_sha) <= first_parent.index(n.full_sha)
        assert world.night_of(n.run_id) == i
        if n.p_run_id:
            assert world.night_of(n.p_run_id) == i
    assert all(b > a for a, b in zip(days, days[1:], strict=False))


def test_documents_schema(world, docs):
    last = len(world.nights) - 1
    d = docs("dashboard", last)
    assert TOP | {"unique_kernels"} <= set(d)
    assert d["latest_run"]["run_id"] == world.nights[-1].run_id
    for r in d["runs"]:
        assert RUN <= set(r)
        assert re.fullmatch(r"\d+", r["run_id"]) and len(r["full_sha"]) == 40
        assert r["date"].endswith("Z")
    extra = [r for r in d["runs"] if not r["is_nightly"] or r["branch"] != "main"]
    assert any(not r["is_nightly"] and r["branch"] == "main" for r in extra)  # manual dispatch
    assert any(r["branch"] != "main" for r in extra)  # side branches
    plats = {s["platform_short"] for s in d["summary"]}
    assert {"h100", "b200", "b200_cute", "mi350x", "tpu"} <= plats
    assert any(s["baseline_label"] for s in d["summary"])  # linear attention vs FLA
    for s in d["summary"]:
        assert SUMMARY <= set(s)
        hist = s["history"]
        assert [h["date"] for h in hist] == sorted(h["date"] for h in hist)
        for h in hist:
            assert HIST <= set(h)
        with_shapes = [h for h in hist if "per_shape" in h]
        assert len(with_shapes) <= 1
    assert world.pretuned_bytes(0) is not None
    p = docs("pretuned", last)
    assert TOP | {"kernels"} <= set(p)
    assert p["latest_run"]["run_id"] == world.nights[-1].p_run_id
    for s in p["summary"]:
        assert P_SUMMARY <= set(s)
        for h in s["history"]:
            assert RUN <= set(h) and ("error" in h or "geomean" in h)
    assert world.series_count() > 50
    # cumulative: each night's document holds the previous night's runs
    prev = {r["run_id"] for r in docs("dashboard", last - 1)["runs"]}
    assert prev <= {r["run_id"] for r in d["runs"]}


def test_labels_valid(world, docs, first_parent):
    fp = set(first_parent)
    pos = {sha: i for i, sha in enumerate(reversed(first_parent))}
    sha_of = {}
    for n in world.nights:
        sha_of[n.run_id] = n.full_sha
        if n.p_run_id:
            sha_of[n.p_run_id] = n.p_full_sha
    labels = world.labels
    assert 8 <= len(labels)
    assert len({lab.id for lab in labels}) == len(labels)
    assert {"real", "method_change", "hardware", "noise"} <= {lab.cause for lab in labels}
    assert {"dashboard", "pretuned"} <= {lab.source for lab in labels}
    for lab in labels:
        assert lab.kind in KINDS[lab.cause], lab
        assert lab.direction in ("regression", "improvement")
        assert lab.members and lab.metrics
        fb, lg = world.night_of(lab.first_bad_run_id), world.night_of(lab.last_good_run_id)
        assert fb is not None and lg is not None and lg < fb
        assert int(lab.last_good_run_id) < int(lab.first_bad_run_id)
        if lab.end_run_id is not None:
            assert world.night_of(lab.end_run_id) > fb
        doc = docs(lab.source, fb)
        series = {(s["platform_short"], s["kernel"]) for s in doc["summary"]}
        for member in lab.members:
            assert tuple(member) in series, (lab.id, member)
        for sha in (lab.culprit_sha, lab.change_sha):
            if sha is None:
                continue
            assert sha in fp and len(sha) == 40
            # in the window: after the last good nightly's commit, at or before the first bad's
            assert pos[sha_of[lab.last_good_run_id]] < pos[sha] <= pos[sha_of[lab.first_bad_run_id]], lab.id
        if lab.cause == "real":
            assert lab.culprit_sha and lab.change_sha is None
        if lab.cause == "method_change":
            assert lab.change_sha
        if lab.kind in ("thermal", "outage") or lab.cause == "noise":
            assert lab.culprit_sha is None and lab.change_sha is None
        keys = {f"{p}/{k}" for p, k in lab.members}
        for k, v in lab.honest_speedup.items():
            assert k in keys and v > 0


def test_deterministic_in_another_process(world, tmp_path):
    env = dict(os.environ, PYTHONHASHSEED="12345")
    code = DIGEST.format(seed=SEED, nights=SHORT)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env=env, cwd=Path(__file__).resolve().parents[1], check=True)
    assert out.stdout.strip().splitlines()[-1] == _digest(world)
