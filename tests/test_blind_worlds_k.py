"""Structural checks of blind world set K (tests/blind_worlds_k): small builds only."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.shared_data import bundle_path

if not bundle_path().exists():
    pytest.skip("Helion bundle not available", allow_module_level=True)

from tests.blind_worlds_k import build_world  # noqa: E402

SEEDS = (101, 102, 103)
SMALL = 12
DASH_KEYS = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels", "stats",
             "summary"}
PRE_KEYS = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats", "summary"}


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    out = {}
    for seed in SEEDS:
        out[seed] = build_world(seed, tmp_path_factory.mktemp(f"k{seed}"), nights=SMALL)
    yield out
    for w in out.values():
        w.close()


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("seed", SEEDS)
def test_documents_parse_with_live_keys(worlds, seed):
    w = worlds[seed]
    for n in (0, len(w.nights) // 2, len(w.nights) - 1):
        doc = json.loads(w.dashboard_bytes(n))
        assert DASH_KEYS <= set(doc)
        assert doc["latest_run"]["run_id"] == w.nights[n].run_id
        assert doc["summary"] and all("history" in s for s in doc["summary"])
        p = w.pretuned_bytes(n)
        if w.nights[n].p_run_id is None:
            assert p is None
        else:
            pdoc = json.loads(p)
            assert PRE_KEYS <= set(pdoc)
            assert pdoc["latest_run"]["run_id"] == w.nights[n].p_run_id


@pytest.mark.parametrize("seed", SEEDS)
def test_nights_on_real_first_parent_shas_in_order(worlds, seed):
    w = worlds[seed]
    fp = _git(w.repo, "rev-list", "--first-parent", "main").split()
    pos = {s: i for i, s in enumerate(reversed(fp))}
    last = -1
    for i, nt in enumerate(w.nights):
        assert nt.full_sha in pos and nt.sha == nt.full_sha[:8]
        assert nt.date.tzinfo is not None
        assert pos[nt.full_sha] >= last
        last = pos[nt.full_sha]
        if i:
            assert nt.date > w.nights[i - 1].date
        ct = int(_git(w.repo, "show", "-s", "--format=%ct", nt.full_sha))
        assert ct <= nt.date.timestamp()
        assert w.night_of(nt.run_id) == i
        if nt.p_run_id:
            assert nt.p_full_sha in pos and w.night_of(nt.p_run_id) == i
    assert w.series_count() > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_labels_consistent(worlds, seed):
    w = worlds[seed]
    assert w.labels
    fp = _git(w.repo, "rev-list", "--first-parent", "main").split()
    pos = {s: i for i, s in enumerate(reversed(fp))}
    ids = set()

    def members_at(n, source):
        raw = w.dashboard_bytes(n) if source == "dashboard" else w.pretuned_bytes(n)
        return {(s["platform_short"], s["kernel"]) for s in json.loads(raw)["summary"]} if raw else set()
    for l in w.labels:
        assert l.id not in ids
        ids.add(l.id)
        assert l.source in ("dashboard", "pretuned")
        assert l.cause in ("real", "method_change", "hardware", "noise")
        assert l.direction in ("regression", "improvement")
        fb, lg = w.night_of(l.first_bad_run_id), w.night_of(l.last_good_run_id)
        assert fb is not None and lg is not None and lg == fb - 1
        if l.end_run_id is not None:
            assert w.night_of(l.end_run_id) >= fb
        members = members_at(fb, l.source) | members_at(lg, l.source)
        for m in l.members:
            assert tuple(m) in members, (l.id, m)
        for key in l.honest_speedup:
            assert tuple(key.split("/", 1)) in set(l.members)
        if l.cause == "real":
            assert l.culprit_sha
        for sha in (l.culprit_sha, l.change_sha):
            if sha is None:
                continue
            good = w.nights[lg].full_sha if l.source == "dashboard" else w.nights[lg].p_full_sha
            bad = w.nights[fb].full_sha if l.source == "dashboard" else w.nights[fb].p_full_sha
            assert pos[good] < pos[sha] <= pos[bad], (l.id, sha)


def test_deterministic(tmp_path):
    a = build_world(102, tmp_path / "a", nights=6)
    b = build_world(102, tmp_path / "b", nights=6)
    try:
        assert [n.run_id for n in a.nights] == [n.run_id for n in b.nights]
        assert [l.to_dict() for l in a.labels] == [l.to_dict() for l in b.labels]
        assert a.dashboard_bytes(5) == b.dashboard_bytes(5)
        assert a.pretuned_bytes(5) == b.pretuned_bytes(5)
    finally:
        a.close()
        b.close()
