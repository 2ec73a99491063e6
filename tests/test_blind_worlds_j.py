"""Structural checks of blind set J (tests/blind_worlds_j): documents, nightlies, labels, determinism."""
from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import timedelta

import pytest

from tests.shared_data import bundle_path

if not bundle_path().exists():
    pytest.skip("Helion bundle not available", allow_module_level=True)

from tests.blind_worlds_j import build_world  # noqa: E402

DASH_KEYS = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels", "stats", "summary"}
PRE_KEYS = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats", "summary"}
SEEDS = (91, 92, 93)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    out = {}
    for s in SEEDS:
        out[s] = build_world(s, tmp_path_factory.mktemp(f"j{s}"), nights=20)
    yield out
    for w in out.values():
        w.close()


def _fp(repo) -> list[str]:
    return subprocess.run(["git", "-C", str(repo), "rev-list", "--first-parent", "--reverse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.split()


def _date(repo, sha):
    from datetime import datetime
    out = subprocess.run(["git", "-C", str(repo), "show", "-s", "--format=%cI", sha], capture_output=True,
                         text=True, check=True).stdout.strip()
    return datetime.fromisoformat(out)


def _files(repo, sha) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "show", "--first-parent", "--no-renames", "--name-only",
                          "--format=", sha], capture_output=True, text=True, check=True).stdout
    return [l for l in out.splitlines() if l.strip()]


@pytest.mark.parametrize("seed", SEEDS)
def test_documents_parse(worlds, seed):
    w = worlds[seed]
    assert len(w.nights) == 20 and w.series_count() > 20
    for n in (0, len(w.nights) - 1):
        doc = json.loads(w.dashboard_bytes(n))
        assert DASH_KEYS <= set(doc)
        assert doc["latest_run"]["run_id"] == w.nights[n].run_id
        assert doc["summary"] and all("history" in s for s in doc["summary"])
        raw = w.pretuned_bytes(n)
        if w.nights[n].p_run_id is None:
            assert raw is None
        else:
            pdoc = json.loads(raw)
            assert PRE_KEYS <= set(pdoc)
            assert pdoc["latest_run"]["run_id"] == w.nights[n].p_run_id
    runs = json.loads(w.dashboard_bytes(len(w.nights) - 1))["runs"]
    nightly = [r for r in runs if r["is_nightly"] and r["branch"] == "main"]
    assert [r["run_id"] for r in nightly] == [x.run_id for x in w.nights]


@pytest.mark.parametrize("seed", SEEDS)
def test_nightlies_on_real_first_parent_shas(worlds, seed):
    w = worlds[seed]
    fp = _fp(w.repo)
    idx = {s: i for i, s in enumerate(fp)}
    last_day = {91: "2026-05-15", 92: "2026-08-04", 93: "2026-08-22"}[seed]
    assert w.nights[-1].date.date().isoformat() == last_day
    for a, b in zip(w.nights, w.nights[1:]):
        assert b.date.date() - a.date.date() == timedelta(days=1)
    for night in w.nights:
        assert night.full_sha in idx and night.sha == night.full_sha[:8]
        cron = night.date.replace(hour=8, minute=0, second=0, microsecond=0)
        assert _date(w.repo, night.full_sha) < cron
        nxt = idx[night.full_sha] + 1
        if nxt < len(fp):
            assert _date(w.repo, fp[nxt]) >= cron
        assert w.night_of(night.run_id) == w.nights.index(night)
        if night.p_run_id:
            assert w.night_of(night.p_run_id) == w.nights.index(night)


def _implied(label, k=None) -> tuple:
    if label.cause == "real" and label.source == "pretuned":
        return (f"pretuned_kernels/{k}/",)
    if label.cause == "real":
        return ("helion/",)
    if label.kind in ("cudagraph", "baseline") and label.source == "pretuned":
        return (f"pretuned_kernels/{k}/{k}.py",)
    if label.kind == "timer" and label.source == "pretuned":
        return ("pretuned_kernels/_bench.py",)
    if label.kind in ("cudagraph", "shapes", "baseline"):
        return ("benchmarks/run.py", "benchmarks/run_linattn.py", ".github/ci_commit_pins/tritonbench.txt")
    if label.kind in ("autotune", "timer"):
        return (".github/workflows/benchmark", "benchmarks/")
    if label.kind == "harness":
        return ("benchmarks/",)
    if label.kind in ("runner", "driver/toolchain"):
        return (".github/workflows/benchmark",)
    return ()


@pytest.mark.parametrize("seed", SEEDS)
def test_labels_consistent(worlds, seed):
    w = worlds[seed]
    fp = _fp(w.repo)
    idx = {s: i for i, s in enumerate(fp)}
    last = len(w.nights) - 1
    dash_runs = {r["run_id"] for r in json.loads(w.dashboard_bytes(last))["runs"]}
    praw = w.pretuned_bytes(last)
    pre_runs = {r["run_id"] for r in json.loads(praw)["runs"]} if praw else set()
    assert w.labels
    for l in w.labels:
        assert l.cause in ("real", "method_change", "hardware", "noise")
        runs = dash_runs if l.source == "dashboard" else pre_runs
        assert l.first_bad_run_id in runs and l.last_good_run_id in runs, l
        assert w.night_of(l.last_good_run_id) < w.night_of(l.first_bad_run_id)
        if l.end_run_id is not None:
            assert l.end_run_id in runs and w.night_of(l.end_run_id) > w.night_of(l.first_bad_run_id)
        sha = l.culprit_sha or l.change_sha
        if l.cause == "real":
            assert l.culprit_sha and l.change_sha is None
        if l.cause == "noise" or l.kind in ("thermal", "outage"):
            assert sha is None
            continue
        assert set(l.honest_speedup) == {f"{p}/{k}" for p, k in l.members}
        assert sha is not None, l
        nb, ng = w.night_of(l.first_bad_run_id), w.night_of(l.last_good_run_id)
        pick = (lambda n: w.nights[n].p_full_sha) if l.source == "pretuned" else (lambda n: w.nights[n].full_sha)
        assert idx[pick(ng)] < idx[sha] <= idx[pick(nb)], l
        files = _files(w.repo, sha)
        k = l.members[0][1]
        assert any(f.startswith(_implied(l, k)) for f in files), (l.kind, sha, files[:8])


def test_deterministic(tmp_path):
    a = build_world(92, tmp_path / "a", nights=8)
    b = build_world(92, tmp_path / "b", nights=8)
    try:
        assert [l.to_dict() for l in a.labels] == [l.to_dict() for l in b.labels]
        assert a.nights == b.nights
        da = hashlib.sha256(a.dashboard_bytes(7)).hexdigest()
        db = hashlib.sha256(b.dashboard_bytes(7)).hexdigest()
        assert da == db
        assert a.pretuned_bytes(7) == b.pretuned_bytes(7)
    finally:
        a.close()
        b.close()
