"""Structural checks of blind set I (tests/blind_worlds_i): documents in the documented shape and
byte-identical to ``json.dump(indent=2)``, nightlies on the real shas, labels whose run ids,
windows and commits agree with the repository, and determinism (across processes, across
PYTHONHASHSEED, and under ``nights=``). Seed 83, full window and its first 20 nightlies."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared_data import bundle_path

pytestmark = pytest.mark.skipif(not bundle_path().exists(),
                                reason=f"the Helion bundle {bundle_path()} is not on this machine")

SEED, SHORT = 83, 20
ROOT = Path(__file__).resolve().parent.parent
CAUSES = {"real": {"code", "heuristics/config"},
          "method_change": {"cudagraph", "shapes", "baseline", "autotune", "timer", "harness"},
          "hardware": {"runner", "driver/toolchain", "thermal", "outage"},
          "noise": {"outlier", "blip", "scatter"}}
# what the diff of a label's commit must touch, per kind
TOUCH = {
    "code": ("helion/", "examples/", "pretuned_kernels/"), "heuristics/config": ("helion/", "examples/", "pretuned_kernels/"),
    "cudagraph": ("benchmarks/", "pretuned_kernels/"), "shapes": ("benchmarks/", ".github/workflows/", "pretuned_kernels/"),
    "baseline": ("benchmarks/", ".github/workflows/", "pretuned_kernels/"),
    "harness": (".github/ci_commit_pins/", ".github/workflows/", "benchmarks/"),
    "timer": (".github/workflows/", ".github/ci_commit_pins/", "pretuned_kernels/_bench.py"),
    "autotune": (".github/workflows/",),
    "runner": (".github/workflows/",), "driver/toolchain": (".github/workflows/", ".github/ci_commit_pins/", ".github/actions/"),
}
DASH_TOP = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels", "stats", "summary"}
PRE_TOP = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats", "summary"}
SUMMARY = {"kernel", "platform", "platform_short", "baseline_label", "has_nightly_data", "status", "accuracy_failures",
           "run_failures", "last_seen_date", "infra_missing", "helion_speedup_geomean", "triton_speedup_geomean",
           "torch_compile_speedup_geomean", "compile_time_geomean_s", "helion_latency_avg_ms", "speedup_delta_pct",
           "compile_delta_pct", "latency_delta_pct", "history"}
HISTORY = {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "helion_speedup_geomean",
           "triton_speedup_geomean", "torch_compile_speedup_geomean", "compile_time_geomean_s", "helion_latency_avg_ms"}
P_SUMMARY = {"kernel", "platform", "platform_short", "compute", "cudagraph", "has_nightly_data", "failed", "error",
             "status", "geomean_delta_pct", "geomean", "helion_wins", "total", "best_speedup", "baselines",
             "last_seen_date", "history"}


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    from tests.blind_worlds_i import build_world

    return build_world(SEED, tmp_path_factory.mktemp("bwi-full"))


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    from tests.blind_worlds_i import build_world

    return build_world(SEED, tmp_path_factory.mktemp("bwi-short"), nights=SHORT)


def _digest(world) -> str:
    h = hashlib.sha256()
    for n in range(len(world.nights)):
        h.update(world.dashboard_bytes(n))
        h.update(world.pretuned_bytes(n) or b"-")
    h.update(json.dumps([l.to_dict() for l in world.labels], sort_keys=True).encode())
    h.update(json.dumps([[x.run_id, x.full_sha, x.date.isoformat(), x.p_run_id, x.p_full_sha]
                         for x in world.nights]).encode())
    return h.hexdigest()


def test_documents_have_the_documented_shape(full):
    N = len(full.nights)
    for n in sorted({0, 1, N // 2, N - 1}):
        d = json.loads(full.dashboard_bytes(n))
        assert set(d) == DASH_TOP
        assert d["latest_run"]["run_id"] == full.nights[n].run_id
        for r in d["runs"]:
            assert r["run_id"].isdigit() and len(r["full_sha"]) == 40 and r["sha"] == r["full_sha"][:8]
            assert r["date"].endswith("Z") and isinstance(r["is_nightly"], bool) and isinstance(r["kernel_count"], int)
        assert d["summary"]
        for s in d["summary"]:
            assert set(s) == SUMMARY and s["status"] in ("improved", "regressed", "unchanged")
            dates = [h["date"] for h in s["history"]]
            assert dates == sorted(dates)
            for h in s["history"]:
                assert HISTORY <= set(h) <= HISTORY | {"per_shape"}
                if "per_shape" in h:  # only on the latest main nightly entry
                    assert h["run_id"] == full.nights[n].run_id or s["infra_missing"]
                    ps = h["per_shape"]
                    assert len(ps["shapes"]) == len(ps["helion_speedup"]) == len(ps["helion_accuracy"])
    published = [n for n in range(N) if full.pretuned_bytes(n) is not None]
    assert published, "seed 83 covers the pretuned suite"
    assert all(full.nights[n].p_run_id is None for n in range(published[0]))
    for n in (published[0], published[-1]):
        p = json.loads(full.pretuned_bytes(n))
        assert set(p) == PRE_TOP
        for s in p["summary"]:
            assert set(s) == P_SUMMARY and s["status"] in ("improved", "regressed", "unchanged", "failed")
            for h in s["history"]:
                assert "error" in h or {"geomean", "helion_wins", "total", "best_speedup", "baselines"} <= set(h)


def test_documents_are_json_dump_indent2(full):
    """The builders' output is written with json.dump(indent=2): re-encoding must be a no-op."""
    N = len(full.nights)
    for n in sorted({0, 7, N // 3, N - 1}):
        raw = full.dashboard_bytes(n)
        assert json.dumps(json.loads(raw), indent=2).encode() == raw
        praw = full.pretuned_bytes(n)
        if praw is not None:
            assert json.dumps(json.loads(praw), indent=2).encode() == praw


def test_nightlies_sit_on_the_real_first_parent_shas(full):
    fp = _git(full.repo, "log", "--first-parent", "--format=%H %ct", "origin/main").split("\n")
    times = {line.split()[0]: int(line.split()[1]) for line in fp if line.strip()}
    order = [line.split()[0] for line in fp if line.strip()][::-1]
    ids = set()
    for i, x in enumerate(full.nights):
        assert x.sha == x.full_sha[:8] and x.full_sha in times
        assert x.date.tzinfo is not None
        assert times[x.full_sha] <= x.date.timestamp()
        nxt = order[order.index(x.full_sha) + 1] if order.index(x.full_sha) + 1 < len(order) else None
        assert nxt is None or times[nxt] > x.date.timestamp(), "the last commit before the nightly"
        assert full.night_of(x.run_id) == i
        if x.p_run_id:
            assert full.night_of(x.p_run_id) == i and x.p_full_sha in times
        ids |= {x.run_id, x.p_run_id}
        if i:
            assert x.date > full.nights[i - 1].date and int(x.run_id) > int(full.nights[i - 1].run_id)
    assert full.night_of("1") is None


def _window(repo, a: str, b: str) -> list[str]:
    return _git(repo, "rev-list", "--first-parent", f"{a}..{b}").split()


def test_labels_agree_with_runs_and_commits(full):
    assert full.labels
    seen = set()
    for lab in full.labels:
        assert lab.id not in seen
        seen.add(lab.id)
        assert lab.source in ("dashboard", "pretuned") and lab.kind in CAUSES[lab.cause]
        fb, lg = full.night_of(lab.first_bad_run_id), full.night_of(lab.last_good_run_id)
        assert fb is not None and lg == fb - 1, lab.id
        night = full.nights[fb]
        assert lab.first_bad_run_id == (night.p_run_id if lab.source == "pretuned" else night.run_id)
        if lab.end_run_id is not None:
            assert full.night_of(lab.end_run_id) > fb
        assert lab.members and all(len(m) == 2 for m in lab.members)
        assert set(lab.honest_speedup) <= {f"{p}/{k}" for p, k in lab.members}
        if lab.cause == "real":
            assert lab.culprit_sha and len(lab.culprit_sha) == 40 and lab.honest_speedup
        sha = lab.culprit_sha or lab.change_sha
        if sha:
            a = full.nights[lg].p_full_sha if lab.source == "pretuned" else full.nights[lg].full_sha
            b = night.p_full_sha if lab.source == "pretuned" else night.full_sha
            assert sha in _window(full.repo, a, b), f"{lab.id}: {sha[:8]} not in ({a[:8]}, {b[:8]}]"
            files = _git(full.repo, "show", "--name-only", "--format=", sha).split()
            assert any(f.startswith(TOUCH[lab.kind]) for f in files), (lab.id, files)
        # members ran on the last good nightly (an outage member is absent on the first bad one)
        doc = json.loads(full.pretuned_bytes(lg) if lab.source == "pretuned" else full.dashboard_bytes(lg))
        have = {(s["platform_short"], s["kernel"]) for s in doc["summary"]}
        assert set(lab.members) <= have, lab.id


def test_label_mix_covers_every_mechanism(full):
    kinds = {(l.cause, l.kind) for l in full.labels}
    for cause in CAUSES:
        assert any(c == cause for c, _ in kinds), cause
    assert any(l.end_run_id and l.cause != "noise" for l in full.labels), "an episode with an end"
    N = len(full.nights)
    assert any(full.night_of(l.first_bad_run_id) >= N - 2 for l in full.labels), "an event in the last nightlies"
    assert any(l.source == "pretuned" for l in full.labels)


def test_headlines_move_where_labels_say(full):
    """Members of step labels move by ≥3 % between the nights around first bad (noise-free
    reading of the published headline: median of 3 nights on each side)."""
    import statistics

    def series(doc, source, member):
        key = "geomean" if source == "pretuned" else "helion_speedup_geomean"
        for s in doc["summary"]:
            if (s["platform_short"], s["kernel"]) == tuple(member):
                return {h["run_id"]: h.get(key) for h in s["history"] if h.get("is_nightly") and h["branch"] == "main"}
        return {}

    N = len(full.nights)
    checked = moved = 0
    for lab in full.labels:
        head = "geomean" if lab.source == "pretuned" else "helion_speedup_geomean"
        if lab.cause == "noise" or lab.kind == "outage" or head not in lab.metrics:
            continue
        fb = full.night_of(lab.first_bad_run_id)
        end = full.night_of(lab.end_run_id) if lab.end_run_id else N
        last = min(fb + 2, end - 1, N - 1)
        doc = json.loads(full.pretuned_bytes(last) if lab.source == "pretuned" else full.dashboard_bytes(last))
        rid = (lambda n: full.nights[n].p_run_id) if lab.source == "pretuned" else (lambda n: full.nights[n].run_id)
        for m in lab.members:
            v = series(doc, lab.source, m)
            before = [v.get(rid(n)) for n in range(max(fb - 3, 0), fb)]
            after = [v.get(rid(n)) for n in range(fb, last + 1)]
            before, after = [x for x in before if x], [x for x in after if x]
            if before and after:
                checked += 1
                moved += abs(statistics.median(after) / statistics.median(before) - 1) >= 0.03
    assert checked and moved / checked >= 0.8, (moved, checked)


def test_nights_argument_keeps_the_early_nights(full, short):
    assert len(short.nights) == SHORT
    assert short.nights == full.nights[:SHORT]
    for n in range(SHORT):
        assert short.dashboard_bytes(n) == full.dashboard_bytes(n)
        assert short.pretuned_bytes(n) == full.pretuned_bytes(n)
    early = {l.id: l for l in full.labels if full.night_of(l.first_bad_run_id) < SHORT}
    assert {l.id for l in short.labels} == set(early)
    for lab in short.labels:
        e = early[lab.id]
        assert (lab.first_bad_run_id, lab.members, lab.honest_speedup) == (e.first_bad_run_id, e.members, e.honest_speedup)


def test_deterministic_in_process_and_across_hash_seeds(short, tmp_path):
    from tests.blind_worlds_i import build_world

    again = build_world(SEED, tmp_path / "again", nights=SHORT)
    assert _digest(again) == _digest(short)
    code = ("import sys; from tests.test_blind_worlds_i import _digest; from tests.blind_worlds_i import build_world;"
            f"print(_digest(build_world({SEED}, sys.argv[1], nights={SHORT})))")
    env = {**os.environ, "PYTHONHASHSEED": "4242", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "sub")], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == _digest(short)


def test_series_count_and_repo(full):
    assert full.series_count() > 100
    assert (Path(full.repo) / ".git").exists()
    assert _git(full.repo, "cat-file", "-t", full.nights[-1].full_sha).strip() == "commit"
