"""Structural checks of the blind worlds of set L (tests/blind_worlds_l): no scoring, no service."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.shared_data import bundle_path

if not bundle_path().exists():
    pytest.skip("Helion bundle not available", allow_module_level=True)

from tests.blind_worlds_l import build_world  # noqa: E402

DASH_KEYS = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels", "stats", "summary"}
PRE_KEYS = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats", "summary"}
CAUSE_KINDS = {
    "real": {"code", "heuristics/config"},
    "method_change": {"cudagraph", "shapes", "baseline", "autotune", "timer", "harness"},
    "hardware": {"runner", "driver/toolchain", "thermal", "outage"},
    "noise": {"scatter", "outlier"},
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = build_world(113, tmp_path_factory.mktemp("wl"), nights=12)
    yield w
    w.close()


def _git(w, *args):
    return subprocess.run(["git", "-C", str(w.repo), *args], capture_output=True, text=True, check=True).stdout


def test_documents_parse_with_live_keys(world):
    for n in range(len(world.nights)):
        d = json.loads(world.dashboard_bytes(n))
        assert DASH_KEYS <= set(d)
        assert d["latest_run"]["run_id"] == world.nights[n].run_id
        assert all(r["run_id"].isdigit() for r in d["runs"])
        p = world.pretuned_bytes(n)
        if world.nights[n].p_run_id:
            pd = json.loads(p)
            assert PRE_KEYS <= set(pd)
            assert pd["latest_run"]["run_id"] == world.nights[n].p_run_id
        else:
            assert p is None
    assert any(world.nights[n].p_run_id for n in range(len(world.nights))), "window end has the pretuned suite"


def test_nightlies_on_real_first_parent_shas_in_order(world):
    fp = _git(world, "rev-list", "--first-parent", "main").split()
    pos = {s: i for i, s in enumerate(reversed(fp))}
    last = -1
    for a, b in zip(world.nights, world.nights[1:]):
        assert a.date < b.date
    for night in world.nights:
        assert night.full_sha in pos and night.sha == night.full_sha[:8]
        assert pos[night.full_sha] >= last
        last = pos[night.full_sha]
        # the commit that was HEAD at the nightly's time
        head = _git(world, "rev-list", "-1", "--first-parent", f"--before={night.date.isoformat()}", "main").strip()
        assert head == night.full_sha
        if night.p_full_sha:
            assert night.p_full_sha in pos and world.night_of(night.p_run_id) == world.nights.index(night)
    assert world.nights[-1].date.date().isoformat() == "2026-08-12"


def test_labels_consistent(world):
    assert world.labels, "a 12-night build still plants events"
    last_doc = {}
    ids = set()
    for lab in world.labels:
        assert lab.id not in ids
        ids.add(lab.id)
        assert lab.kind in CAUSE_KINDS[lab.cause]
        assert lab.direction in ("regression", "improvement")
        n = world.night_of(lab.first_bad_run_id)
        assert n is not None and n >= 1
        assert world.night_of(lab.last_good_run_id) == n - 1
        if lab.end_run_id is not None:
            assert world.night_of(lab.end_run_id) >= n
        raw = world.dashboard_bytes(n) if lab.source == "dashboard" else world.pretuned_bytes(n)
        doc = last_doc.setdefault((lab.source, n), json.loads(raw))
        present = {(s["platform_short"], s["kernel"]) for s in doc["summary"]}
        for m in lab.members:
            assert tuple(m) in present, (lab.id, m)
        for key in lab.honest_speedup:
            assert tuple(key.split("/", 1)) in {tuple(m) for m in lab.members}
        src = "full_sha" if lab.source == "dashboard" else "p_full_sha"
        lo, hi = getattr(world.nights[n - 1], src), getattr(world.nights[n], src)
        window = set(_git(world, "rev-list", "--first-parent", f"{lo}..{hi}").split())
        if lab.cause == "real":
            assert lab.culprit_sha in window, lab.id
        else:
            assert lab.culprit_sha is None
        if lab.change_sha is not None:
            assert lab.change_sha in window, lab.id


def test_series_count_and_night_of(world):
    assert world.series_count() > 0
    assert world.night_of("0") is None
    assert world.night_of(world.nights[3].run_id) == 3


def test_deterministic(tmp_path):
    a = build_world(111, tmp_path / "a", nights=6)
    b = build_world(111, tmp_path / "b", nights=6)
    try:
        assert [x.to_dict() for x in a.labels] == [x.to_dict() for x in b.labels]
        assert a.nights == b.nights
        for n in range(6):
            assert a.dashboard_bytes(n) == b.dashboard_bytes(n)
            assert a.pretuned_bytes(n) == b.pretuned_bytes(n)
    finally:
        a.close()
        b.close()
    assert not a.tmp.exists()
