"""Structural checks of the set-E blind worlds (short world: seed 43, 35 nights)."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.blind_worlds_e import SEEDS, build_world

KINDS = {
    "real": {"code", "heuristics/config"},
    "method_change": {"cudagraph", "shapes", "baseline", "autotune", "timer", "harness"},
    "hardware": {"runner", "driver/toolchain", "thermal", "outage"},
    "noise": {"blip", "scatter"},
}
TOP = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "stats", "summary"}
HIST = {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "helion_speedup_geomean",
        "triton_speedup_geomean", "torch_compile_speedup_geomean", "compile_time_geomean_s", "helion_latency_avg_ms"}
SUMMARY = {"kernel", "platform", "platform_short", "baseline_label", "has_nightly_data", "status",
           "accuracy_failures", "run_failures", "last_seen_date", "infra_missing", "history",
           "speedup_delta_pct", "compile_delta_pct", "latency_delta_pct"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(43, tmp_path_factory.mktemp("bwe"), nights=35)


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def test_seeds():
    assert SEEDS == (41, 42, 43)


def test_nights_on_real_first_parent_shas(world):
    fp = set(_git(world.repo, "rev-list", "--first-parent", "main").split())
    assert _git(world.repo, "rev-parse", "HEAD").startswith("ef091f41")
    assert len(world.nights) == 35
    ids = [int(n.run_id) for n in world.nights]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for n in world.nights:
        assert n.full_sha in fp and n.sha == n.full_sha[:8]
        assert n.date.tzinfo is not None and n.date.hour == 8
        if n.p_run_id:
            assert n.p_full_sha in fp and int(n.p_run_id) > int(n.run_id)
        assert world.night_of(n.run_id) == world.nights.index(n)
    assert world.nights[-1].date.date().isoformat() == "2026-08-20"


def test_documents_schema(world):
    last = json.loads(world.dashboard_bytes(len(world.nights) - 1))
    assert TOP | {"unique_kernels"} <= set(last)
    assert last["latest_run"]["run_id"] == world.nights[-1].run_id
    for r in last["runs"]:
        assert re.fullmatch(r"\d+", r["run_id"]) and len(r["full_sha"]) == 40
    assert any(not r["is_nightly"] or r["branch"] != "main" for r in last["runs"])
    for s in last["summary"]:
        assert SUMMARY <= set(s)
        for h in s["history"]:
            assert HIST <= set(h)
    p = world.pretuned_bytes(len(world.nights) - 1)
    assert p is not None
    pd = json.loads(p)
    assert TOP | {"kernels"} <= set(pd)
    for s in pd["summary"]:
        assert {"kernel", "platform_short", "compute", "cudagraph", "geomean", "history"} <= set(s)
    assert world.series_count() > 50


def test_labels_valid(world):
    fp = set(_git(world.repo, "rev-list", "--first-parent", "main").split())
    last = json.loads(world.dashboard_bytes(len(world.nights) - 1))
    pre = json.loads(world.pretuned_bytes(len(world.nights) - 1))
    series = {("dashboard", s["platform_short"], s["kernel"]) for s in last["summary"]}
    series |= {("pretuned", s["platform_short"], s["kernel"]) for s in pre["summary"]}
    run_ids = {n.run_id for n in world.nights} | {n.p_run_id for n in world.nights if n.p_run_id}
    assert len(world.labels) >= 8
    causes = {l.cause for l in world.labels}
    assert {"real", "method_change", "hardware", "noise"} <= causes
    for l in world.labels:
        assert l.kind in KINDS[l.cause], l
        assert l.direction in ("regression", "improvement")
        assert l.members
        for plat, kernel in l.members:
            assert (l.source, plat, kernel) in series, (l.id, plat, kernel)
        assert l.first_bad_run_id in run_ids and l.last_good_run_id in run_ids
        assert int(l.last_good_run_id) < int(l.first_bad_run_id)
        if l.cause == "real":
            assert l.culprit_sha in fp and len(l.culprit_sha) == 40
        if l.change_sha:
            assert l.change_sha in fp and len(l.change_sha) == 40
        if l.cause in ("method_change",):
            assert l.change_sha
        for k, v in l.honest_speedup.items():
            assert v > 0 and "/" in k


def test_deterministic(world, tmp_path):
    again = build_world(43, tmp_path, nights=35)
    assert [l.to_dict() for l in again.labels] == [l.to_dict() for l in world.labels]
    assert again.dashboard_bytes(20) == world.dashboard_bytes(20)
