"""Structural tests of the blind worlds N to W (tests/blind_worlds_n, _o, _p, _q, _r, _s, _t, _u, _v, _w; small builds: the
last 12 nightlies). The sets were written apart, to one interface, so one set of checks serves
them all.

Only the shape of the data is checked here (nights on the real history, documents in the live
schema, labels well formed and tied to real commits); what the labels say is not."""
from __future__ import annotations

import importlib
import json
import subprocess
from datetime import datetime

import pytest

from tests.shared_data import bundle_path

if not bundle_path().exists():
    pytest.skip("Helion bundle not available", allow_module_level=True)

from tests.blind_worlds.world import Label, Night  # noqa: E402

K = 12
# each set: its builder and two seeds, the first from before the pretuned suite existed, the second
# with pretuned, TPU, CuTe and linear attention
SETS = {"n": ("tests.blind_worlds_n", (131, 133)), "o": ("tests.blind_worlds_o", (141, 143)),
        "p": ("tests.blind_worlds_p", (151, 153)), "q": ("tests.blind_worlds_q", (161, 163)),
        "r": ("tests.blind_worlds_r", (171, 173)), "s": ("tests.blind_worlds_s", (181, 183)),
        "t": ("tests.blind_worlds_t", (191, 193)), "u": ("tests.blind_worlds_u", (201, 203)),
        "v": ("tests.blind_worlds_v", (211, 213)), "w": ("tests.blind_worlds_w", (221, 223))}
DASH_TOP = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels", "stats", "summary"}
PRE_TOP = {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats", "summary"}
RUN_KEYS = {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "kernel_count"}
SUMMARY_KEYS = {"kernel", "platform", "platform_short", "baseline_label", "has_nightly_data", "status",
                "accuracy_failures", "run_failures", "last_seen_date", "infra_missing", "helion_speedup_geomean",
                "triton_speedup_geomean", "torch_compile_speedup_geomean", "compile_time_geomean_s",
                "helion_latency_avg_ms", "speedup_delta_pct", "compile_delta_pct", "latency_delta_pct", "history"}
HIST_KEYS = {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "helion_speedup_geomean",
             "triton_speedup_geomean", "torch_compile_speedup_geomean", "compile_time_geomean_s",
             "helion_latency_avg_ms"}
PER_SHAPE = {"shapes", "helion_speedup", "triton_speedup", "torch_compile_speedup", "helion_accuracy",
             "helion_compile_time_s", "helion_latency_ms"}
PRE_SUMMARY_KEYS = {"kernel", "platform", "platform_short", "compute", "cudagraph", "has_nightly_data", "failed",
                    "error", "status", "geomean_delta_pct", "geomean", "helion_wins", "total", "best_speedup",
                    "baselines", "last_seen_date", "history"}
CAUSES = {"real": {"code", "heuristics/config"},
          "method_change": {"cudagraph", "shapes", "baseline", "autotune", "timer", "harness"},
          "hardware": {"runner", "driver/toolchain", "thermal", "outage"},
          "noise": {"scatter", "outlier"}}


@pytest.fixture(scope="module", params=sorted(SETS))
def world_set(request, tmp_path_factory):
    """(window ends, the seed without the pretuned suite, {seed: world}) of one set."""
    module, seeds = SETS[request.param]
    builder = importlib.import_module(module)
    out = {seed: builder.build_world(seed, tmp_path_factory.mktemp(f"{request.param}{seed}") / "work", nights=K)
           for seed in seeds}
    yield builder.WINDOW_END, seeds[0], out
    for w in out.values():
        w.close()


def _git(w, *args):
    return subprocess.run(["git", "-C", str(w.repo), *args], check=True, capture_output=True, text=True).stdout


def test_nights_on_real_first_parent_shas_in_order(world_set):
    window_end, _, worlds = world_set
    for seed, w in worlds.items():
        assert len(w.nights) == K and all(isinstance(n, Night) for n in w.nights)
        assert _git(w, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
        fp = _git(w, "rev-list", "--first-parent", "main").split()
        pos = {s: i for i, s in enumerate(reversed(fp))}
        dates = [n.date for n in w.nights]
        assert dates == sorted(dates) and len(set(dates)) == K
        assert dates[-1].date() == datetime.fromisoformat(window_end[seed]).date()
        assert [pos[n.full_sha] for n in w.nights] == sorted(pos[n.full_sha] for n in w.nights)
        for n in w.nights[-3:]:  # HEAD of main at the nightly's time
            head = _git(w, "rev-list", "-1", "--first-parent", f"--before={n.date.isoformat()}", "main").strip()
            assert head == n.full_sha and n.sha == n.full_sha[:8]
        assert all(w.night_of(n.run_id) == i for i, n in enumerate(w.nights))
        assert len({n.run_id for n in w.nights}) == K and all(n.run_id.isdigit() for n in w.nights)
        assert w.series_count() > 20


def test_documents_parse_with_live_keys(world_set):
    _, no_pretuned, worlds = world_set
    for seed, w in worlds.items():
        for i in (0, K - 1):
            d = json.loads(w.dashboard_bytes(i))
            assert DASH_TOP <= set(d)
            assert d["latest_run"]["run_id"] == w.nights[i].run_id and d["latest_run"]["is_nightly"]
            assert all(RUN_KEYS <= set(r) for r in d["runs"])
            ids = {r["run_id"] for r in d["runs"]}
            assert all(n.run_id in ids for n in w.nights[: i + 1])
            assert any(not r["is_nightly"] for r in d["runs"]), "manual dispatches appear too"
            assert d["summary"] and all(SUMMARY_KEYS <= set(s) for s in d["summary"])
            latest = 0
            for s in d["summary"]:
                assert all(HIST_KEYS <= set(h) for h in s["history"])
                assert [h["date"] for h in s["history"]] == sorted(h["date"] for h in s["history"])
                with_ps = [h for h in s["history"] if "per_shape" in h]
                assert len(with_ps) <= 1
                if with_ps:
                    assert PER_SHAPE <= set(with_ps[0]["per_shape"])
                    latest += with_ps[0]["run_id"] == w.nights[i].run_id
            assert latest > 10  # the latest nightly's per-shape lists ride on its history entries
        pre = [w.pretuned_bytes(i) for i in range(K)]
        if seed == no_pretuned:
            assert all(p is None for p in pre) and all(n.p_run_id is None for n in w.nights)
        else:
            d = json.loads(pre[-1])
            assert PRE_TOP <= set(d) and all(PRE_SUMMARY_KEYS <= set(s) for s in d["summary"])
            assert d["latest_run"]["run_id"] == w.nights[-1].p_run_id
            assert w.night_of(w.nights[-1].p_run_id) == K - 1
            assert {s["platform_short"] for s in d["summary"]} == {"b200", "h100"}
            d = json.loads(w.dashboard_bytes(K - 1))
            assert {"b200_cute", "tpu"} <= set(d["platform_shorts"])
            assert any(s["baseline_label"] for s in d["summary"]), "linear-attention rows"


def test_labels_well_formed_and_on_real_commits(world_set):
    _, _, worlds = world_set
    for seed, w in worlds.items():
        assert w.labels and all(isinstance(l, Label) for l in w.labels)
        assert len({l.id for l in w.labels}) == len(w.labels)
        for l in w.labels:
            assert l.kind in CAUSES[l.cause], l
            assert l.source in ("dashboard", "pretuned")
            a, b = w.night_of(l.first_bad_run_id), w.night_of(l.last_good_run_id)
            assert a is not None and b == a - 1, l.id
            if l.end_run_id is not None:
                assert w.night_of(l.end_run_id) > a
            assert l.members and all(len(m) == 2 for m in l.members)
            assert len(set(l.members)) == len(l.members)
            assert l.metrics and l.direction
            for key, v in l.honest_speedup.items():
                assert tuple(key.split("/", 1)) in set(l.members) and v > 0
            if l.cause == "real":
                assert l.culprit_sha and l.change_sha is None
            else:
                assert l.culprit_sha is None
            if l.cause == "noise":
                assert l.change_sha is None and not l.honest_speedup
            sha = l.culprit_sha or l.change_sha
            if sha:  # the commit lies in the label's window and its diff touches what the label claims
                pre = l.source == "pretuned"
                lo = w.nights[b].p_full_sha if pre else w.nights[b].full_sha
                hi = w.nights[a].p_full_sha if pre else w.nights[a].full_sha
                assert sha in _git(w, "rev-list", "--first-parent", f"{lo}..{hi}").split(), l
                files = _git(w, "diff-tree", "--no-commit-id", "-r", "--name-only", "-m", "--first-parent",
                             sha).split()
                if l.cause == "real":
                    assert any(f.startswith(("helion/", "pretuned_kernels/")) for f in files), l.id
                elif l.cause == "method_change":
                    assert any(f.startswith(("benchmarks/", ".github/", "pretuned_kernels/")) for f in files), l.id
                elif l.cause == "hardware":
                    assert any(f.startswith(".github/") for f in files), l.id
            if l.source == "dashboard" and l.kind != "outage":
                d = json.loads(w.dashboard_bytes(a))
                series = {(s["platform_short"], s["kernel"]) for s in d["summary"]}
                assert set(l.members) <= series, l.id
