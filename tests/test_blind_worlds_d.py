"""Structural checks of blind world set D (tests/blind_worlds_d): real shas, document schema, labels, determinism."""
from __future__ import annotations

import json
import re
import subprocess
from datetime import timezone

import pytest

from tests.blind_worlds.world import Label, Night
from tests.blind_worlds_d import build_world

HEX40 = re.compile(r"^[0-9a-f]{40}$")
CAUSE_KINDS = {"real": {"code", "heuristics/config"},
               "method_change": {"cudagraph", "shapes", "baseline", "autotune", "timer", "harness"},
               "hardware": {"runner", "driver/toolchain", "thermal", "outage"},
               "noise": {"blip", "scatter"}}
DASH_METRICS = {"helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
                "helion_latency_avg_ms", "compile_time_geomean_s"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(33, tmp_path_factory.mktemp("bwd33"), nights=35)


@pytest.fixture(scope="module")
def fp_shas(world):
    out = subprocess.run(["git", "-C", str(world.repo), "rev-list", "--first-parent", "main"],
                         capture_output=True, text=True, check=True).stdout.split()
    return set(out)


def test_nights_on_real_first_parent_shas(world, fp_shas):
    assert len(world.nights) == 35
    ids = [int(n.run_id) for n in world.nights]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for i, n in enumerate(world.nights):
        assert isinstance(n, Night)
        assert n.full_sha in fp_shas and n.sha == n.full_sha[:8]
        assert n.date.tzinfo is not None and n.date.utcoffset() == timezone.utc.utcoffset(None)
        assert world.night_of(n.run_id) == i
        if n.p_run_id is not None:
            assert n.p_full_sha in fp_shas and world.night_of(n.p_run_id) == i
    assert world.nights[-1].p_run_id is not None  # the pretuned suite exists at the end of seed 33
    dates = [n.date.date() for n in world.nights]
    assert len(set(dates)) == len(dates)


def _check_dashboard(doc, night):
    assert set(doc) >= {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels",
                        "stats", "summary"}
    assert doc["latest_run"]["run_id"] == night.run_id
    for r in doc["runs"]:
        assert set(r) >= {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "kernel_count"}
        assert r["run_id"].isdigit() and r["date"].endswith("Z") and r["sha"] == r["full_sha"][:8]
    for s in doc["summary"]:
        assert set(s) >= {"kernel", "platform", "platform_short", "baseline_label", "has_nightly_data", "status",
                          "accuracy_failures", "run_failures", "last_seen_date", "infra_missing",
                          "speedup_delta_pct", "compile_delta_pct", "latency_delta_pct", "history"} | DASH_METRICS
        assert s["status"] in ("improved", "regressed", "unchanged")
        dates = [h["date"] for h in s["history"]]
        assert dates == sorted(dates)
        for h in s["history"]:
            assert set(h) >= {"run_id", "sha", "full_sha", "date", "branch", "is_nightly"} | DASH_METRICS
            if "per_shape" in h:
                ps = h["per_shape"]
                assert h["is_nightly"] and h["branch"] == "main"
                assert len(ps["shapes"]) == len(ps["helion_speedup"]) == len(ps["helion_accuracy"])


def _check_pretuned(doc):
    assert set(doc) >= {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats",
                        "summary"}
    for s in doc["summary"]:
        assert set(s) >= {"kernel", "platform", "platform_short", "compute", "cudagraph", "has_nightly_data", "failed",
                          "error", "status", "geomean_delta_pct", "geomean", "helion_wins", "total", "best_speedup",
                          "baselines", "last_seen_date", "history"}
        assert s["status"] in ("improved", "regressed", "unchanged", "failed")
        for h in s["history"]:
            assert set(h) >= {"run_id", "sha", "full_sha", "date", "branch", "is_nightly"}
            assert ("error" in h) or {"geomean", "helion_wins", "total", "best_speedup", "baselines"} <= set(h)


def test_document_schema(world):
    n_last = len(world.nights) - 1
    for n in (0, n_last // 2, n_last):
        _check_dashboard(json.loads(world.dashboard_bytes(n)), world.nights[n])
    assert world.pretuned_bytes(n_last) is not None
    _check_pretuned(json.loads(world.pretuned_bytes(n_last)))
    doc = json.loads(world.dashboard_bytes(n_last))
    assert any(not r["is_nightly"] or r["branch"] != "main" for r in doc["runs"])  # manual / side-branch runs
    series = {("dashboard", s["platform_short"], s["kernel"]) for s in doc["summary"]}
    assert len(series) <= world.series_count()


def test_labels_fit_documents(world, fp_shas):
    assert world.labels
    for l in world.labels:
        assert isinstance(l, Label)
        assert l.kind in CAUSE_KINDS[l.cause] and l.direction in ("regression", "improvement")
        for sha in (l.culprit_sha, l.change_sha):
            assert sha is None or (HEX40.match(sha) and sha in fp_shas)
        assert (l.culprit_sha is not None) == (l.cause == "real" and l.source == "dashboard") or l.source == "pretuned"
        nb, ng = world.night_of(l.first_bad_run_id), world.night_of(l.last_good_run_id)
        assert nb is not None and ng is not None and ng <= nb
        if l.end_run_id is not None:
            assert world.night_of(l.end_run_id) > nb
        if l.source == "dashboard":
            assert set(l.metrics) <= DASH_METRICS
            doc = json.loads(world.dashboard_bytes(nb))
        else:
            assert all(m == "geomean" or re.fullmatch(r"baseline:\w+:geomean", m) for m in l.metrics)
            doc = json.loads(world.pretuned_bytes(nb))
        rows = {(s["platform_short"], s["kernel"]): s for s in doc["summary"]}
        for m in l.members:
            assert m in rows, (l.id, m)
            runs = {h["run_id"] for h in rows[m]["history"]}
            if l.kind != "outage":
                assert l.first_bad_run_id in runs, (l.id, m)
            assert f"{m[0]}/{m[1]}" in l.honest_speedup


def test_every_cause_present_in_seed_33(world):
    causes = {l.cause for l in world.labels}
    assert causes >= {"method_change", "hardware", "noise"}
    assert {l.source for l in world.labels} == {"dashboard", "pretuned"}


def test_deterministic_per_seed(tmp_path):
    a = build_world(31, tmp_path / "w", nights=20)
    a_labels, a_doc = [l.to_dict() for l in a.labels], a.dashboard_bytes(19)
    b = build_world(31, tmp_path / "w", nights=20)  # same workdir: the clone is reused, documents rebuilt
    assert a.nights == b.nights
    assert a_labels == [l.to_dict() for l in b.labels]
    assert a_doc == b.dashboard_bytes(19)
    c = build_world(31, tmp_path / "w", nights=60, documents=False)
    d = build_world(31, tmp_path / "w", nights=60, documents=False)
    assert [l.to_dict() for l in c.labels] == [l.to_dict() for l in d.labels]
