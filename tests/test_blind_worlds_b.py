"""Structural checks of the second blind world set (one short world)."""
import json
import re
import subprocess

import pytest

from tests.blind_worlds import score
from tests.blind_worlds_b import build_world
from tests.blind_worlds_b import facts as F

HEX8, HEX40 = re.compile(r"^[0-9a-f]{8}$"), re.compile(r"^[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(11, tmp_path_factory.mktemp("bw2"), nights=30)


def _fp(world):
    return [c.sha for c in world.commits]


def test_dashboard_documents_follow_the_schema(world):
    for n in (0, len(world.nights) - 1):
        d = json.loads(world.dashboard_bytes(n))
        assert {"generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels",
                "stats", "summary"} <= set(d)
        assert d["latest_run"]["run_id"] == world.nights[n].run_id
        for r in d["runs"]:
            assert r["run_id"].isdigit() and HEX8.match(r["sha"]) and HEX40.match(r["full_sha"])
            assert r["date"].endswith("Z") and isinstance(r["is_nightly"], bool) and isinstance(r["kernel_count"], int)
        for s in d["summary"]:
            assert s["status"] in ("improved", "regressed", "unchanged")
            dates = [h["date"] for h in s["history"]]
            assert dates == sorted(dates)
            for h in s["history"]:
                assert {"helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
                        "helion_latency_avg_ms", "is_nightly", "branch"} <= set(h)
    last = json.loads(world.dashboard_bytes(len(world.nights) - 1))
    assert any(not r["is_nightly"] or r["branch"] != "main" for r in last["runs"]), "manual / side-branch runs"
    assert "b200_cute" in last["platform_shorts"]


def test_labels_point_at_real_shas_in_their_windows(world):
    fp = _fp(world)
    idx = {s: i for i, s in enumerate(fp)}
    causes = {l.cause for l in world.labels}
    assert {"real", "method_change", "hardware", "noise"} <= causes
    for l in world.labels:
        i = world.night_of(l.first_bad_run_id)
        assert i is not None and world.night_of(l.last_good_run_id) == i - 1
        pre = l.source == "pretuned"
        a = world.nights[i - 1].p_full_sha if pre else world.nights[i - 1].full_sha
        b = world.nights[i].p_full_sha if pre else world.nights[i].full_sha
        for sha in (l.culprit_sha, l.change_sha):
            if sha:
                assert idx[a] < idx[sha] <= idx[b], (l.id, l.note)
        if l.cause == "real":
            assert l.culprit_sha and l.change_sha is None
        assert l.honest_speedup or l.kind == "outage"


def test_planted_culprits_touch_what_the_label_says(world):
    for l in world.labels:
        if l.cause == "real" and l.source == "dashboard":
            files = subprocess.run(["git", "-C", str(world.repo), "show", "--format=", "--name-only", l.culprit_sha],
                                   capture_output=True, text=True, check=True).stdout.split()
            assert any(f.startswith("helion/") for f in files)
            plats = {m[0] for m in l.members}
            subj = subprocess.run(["git", "-C", str(world.repo), "log", "-1", "--format=%s", l.culprit_sha],
                                  capture_output=True, text=True).stdout.lower()
            if plats == {"b200_cute"}:
                assert "cute" in subj or any("cute" in f for f in files)
        if l.kind == "cudagraph" and l.source == "dashboard":
            diff = subprocess.run(["git", "-C", str(world.repo), "show", l.change_sha, "--", "benchmarks/run.py"],
                                  capture_output=True, text=True).stdout
            assert "remove_flags" in diff
        if l.kind in ("runner", "driver") and l.change_sha:
            diff = subprocess.run(["git", "-C", str(world.repo), "show", l.change_sha, "--", ".github/workflows"],
                                  capture_output=True, text=True).stdout
            assert re.search(r"^[+-]\s+(runner|image|runtime-version):", diff, re.M)


def test_noise_leaves_the_level_unchanged(world):
    blips = [l for l in world.labels if l.kind == "blip"]
    assert blips
    for l in blips:
        i = world.night_of(l.first_bad_run_id)
        for m in l.members:
            assert abs(world.honest("dashboard", *m, i) / world.honest("dashboard", *m, i - 1) - 1) < 1e-6 or \
                any(x for x in world.labels if x is not l and m in x.members)


def test_the_existing_scorer_scores_it(world):
    s = score(world, [])
    assert s["events"] >= 10 and s["detection_recall"] == 0.0


# ---------------------------------------------------------------------------- the full seeds (labels only)
SEEDS = (11, 12, 13)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    """The three published seeds at full size, labels and facts only (no documents: ~40 s)."""
    root = tmp_path_factory.mktemp("bw2-seeds")
    return {s: build_world(s, root, documents=False) for s in SEEDS}


@pytest.fixture(scope="module")
def repo(world):
    r = F.Repo(world.repo)
    yield r
    r.close()


def _parent(repo, sha):
    return repo.git("rev-parse", f"{sha}^1").strip()


def _runners(machine):
    return {m[0] for m in machine}


def test_added_jobs_are_not_a_machine_change(repo):
    # e848ca15 adds the linear-attention jobs (alias h100 / b200), 5a5adc66 the TPU bridge job
    # (alias tpu_bridge): jobs are added on the same machines; no platform's machine changes
    for sha, added in (("e848ca15", {"h100", "b200"}), ("5a5adc66", {"tpu_bridge"})):
        full = repo.git("rev-parse", sha).strip()
        a, b = F.machines(repo, _parent(repo, full), F.DISPATCH), F.machines(repo, full, F.DISPATCH)
        assert {al for al in b if len(b[al]) > len(a.get(al, {}))} == added
        for p in F.PLATFORM_INPUTS:
            assert F.platform_machine(a, p) == F.platform_machine(b, p), (sha, p)
    # the real machine changes are seen, and told apart (runner label vs image / runtime)
    for sha, p, runner in (("b33ae6b9", "h100", True), ("ed36077d", "h100", False), ("82bee2fa", "h100", False),
                           ("8690b5f1", "b200", False), ("35b19fd4", "mi350x", False), ("3cc1b418", "mi350x", True)):
        full = repo.git("rev-parse", sha).strip()
        ma = F.platform_machine(F.machines(repo, _parent(repo, full), F.DISPATCH), p)
        mb = F.platform_machine(F.machines(repo, full, F.DISPATCH), p)
        assert ma and mb and ma != mb, sha
        assert (_runners(ma) != _runners(mb)) is runner, sha
    # TPU's runner is fixed in the called workflow (benchmark_tpu.yml `runs-on:`)
    head = F.machines(repo, "HEAD", F.DISPATCH)
    assert F.platform_machine(head, "tpu") == (("linux.google.tpuv7x.1", None, None),)


def test_every_platform_runs_on_one_machine_per_night(seeds):
    # a platform's jobs (main, linear-attention, TPU bridge) share one machine at every night, so a
    # per-platform machine is a per-series machine
    for w in seeds.values():
        for f in w.dfacts:
            for p, m in f["hw"].items():
                assert len(m) == 1, (w.seed, p, m)


def _hardware_checks(w, repo):
    for l in w.labels:
        if l.cause != "hardware" or not l.change_sha:
            continue
        plats = {m[0] for m in l.members}
        assert len(plats) == 1, l.id
        p = plats.pop()
        get = F.pretuned_facts if l.source == "pretuned" else F.dashboard_facts
        ma = get(repo, _parent(repo, l.change_sha))["hw"].get(p)
        mb = get(repo, l.change_sha)["hw"].get(p)
        assert ma and mb and ma != mb, (w.seed, l.id, l.change_sha[:8], l.note)
        assert l.kind == ("runner" if _runners(ma) != _runners(mb) else "driver"), (w.seed, l.id)
        diff = repo.git("show", "--format=", l.change_sha, "--", ".github/workflows")
        assert re.search(r"^[+-]\s+(runner|image|runtime-version|runs-on):", diff, re.M), l.id


def test_hardware_labels_sit_on_real_machine_changes(world, seeds, repo):
    _hardware_checks(world, repo)
    for w in seeds.values():
        _hardware_checks(w, repo)
    bad = {"e848ca15", "5a5adc66"}
    assert not [l.id for l in seeds[12].labels if l.change_sha and l.change_sha[:8] in bad]
    # and every real machine change between two nightlies carries a label
    for w in seeds.values():
        for i in range(1, len(w.nights)):
            a, b = w.dfacts[i - 1]["hw"], w.dfacts[i]["hw"]
            for p in set(a) & set(b):
                if a[p] != b[p] and w.nights[i].full_sha != w.nights[i - 1].full_sha:
                    assert any(l.cause == "hardware" and l.first_bad_run_id == w.nights[i].run_id and
                               {m[0] for m in l.members} == {p} for l in w.labels), (w.seed, i, p)


def test_every_seed_carries_each_mechanism(seeds):
    need = {("real", "code"), ("method_change", "shapes"), ("method_change", "cudagraph"),
            ("method_change", "baseline"), ("method_change", "harness"), ("method_change", "autotune"),
            ("method_change", "timer"),
            ("hardware", "driver"), ("hardware", "thermal"), ("hardware", "outage"),
            ("noise", "blip"), ("noise", "scatter")}
    for s, w in seeds.items():
        have = {(l.cause, l.kind) for l in w.labels}
        assert need <= have, (s, need - have)
        runner_changes = [(i, p) for i in range(1, len(w.nights)) for p in set(w.dfacts[i - 1]["hw"]) & set(w.dfacts[i]["hw"])
                          if _runners(w.dfacts[i - 1]["hw"][p]) != _runners(w.dfacts[i]["hw"][p])]
        if runner_changes:
            assert ("hardware", "runner") in have, s
        else:  # seed 13 (2025-12-22 .. 2026-05-26): no modelled platform changes runner label (docstring)
            assert s == 13
    assert ("hardware", "runner") in {(l.cause, l.kind) for l in seeds[11].labels}


def test_run_tpu_shape_edit_is_a_shapes_change(seeds, repo):
    # 7c5664e8 swaps the second of the two shapes the TPU nightly runs (--num-shapes 2) for flash_attention
    full = repo.git("rev-parse", "7c5664e8").strip()
    a = F.dashboard_facts(repo, _parent(repo, full))["opts"][("tpu", "flash_attention")]
    b = F.dashboard_facts(repo, full)["opts"][("tpu", "flash_attention")]
    assert a["tpu_shapes"] == ("(2, 32, 1024, 64)", "(2, 32, 2048, 64)")
    assert b["tpu_shapes"] == ("(2, 32, 1024, 64)", "(8, 32, 8192, 256)")
    for w in seeds.values():
        ls = [l for l in w.labels if l.kind == "shapes" and l.change_sha == full]
        assert len(ls) == 1 and ls[0].members == (("tpu", "flash_attention"),), w.seed
        i = w.night_of(ls[0].first_bad_run_id)
        before, after = (w.dash_values("tpu", "flash_attention", j, noise=False) for j in (i - 1, i))
        assert before["shapes"] != after["shapes"] and "(8, 32, 8192, 256)" in after["shapes"]
        lat = lambda v: sum(v["helion_latency_ms"]) / len(v["helion_latency_ms"])
        assert lat(after) > 2 * lat(before)     # a much larger shape: the latency moves too
        nxt = w.dash_values("tpu", "flash_attention", i + 1, noise=False)
        assert nxt["shapes"] == after["shapes"]  # and it stays


def test_pretuned_baseline_labels_change_baselines_or_the_torch_pin(seeds, repo):
    w = seeds[12]
    pins = [l for l in w.labels if l.source == "pretuned" and l.kind == "baseline"]
    assert pins
    for l in pins:
        fa, fb = F.pretuned_facts(repo, _parent(repo, l.change_sha)), F.pretuned_facts(repo, l.change_sha)
        redefined = [m for m in l.members if fa["series"].get(m, {}).get("baselines") != fb["series"][m]["baselines"]]
        if fa["pin_install"] != fb["pin_install"]:   # every baseline re-measured under the new torch
            assert "torch pin" in l.note and set(l.members) == set(fa["series"]) & set(fb["series"]), l.id
        else:                                          # a baseline added / removed / redefined
            assert redefined == list(l.members) and "baseline set changed" in l.note, (l.id, l.note)
            assert redefined == list(l.members), (l.id, l.note)
    # 76df68c9 changes no baseline definition: it bumps the pretuned suite's torch 2.11.* -> 2.13.*
    (l76,) = [l for l in pins if l.change_sha.startswith("76df68c9")]
    fa, fb = F.pretuned_facts(repo, _parent(repo, l76.change_sha)), F.pretuned_facts(repo, l76.change_sha)
    assert fa["pin_install"] == ("2.11.*",) and fb["pin_install"] == ("2.13.*",)
    assert all(fa["series"][m]["baselines"] == fb["series"][m]["baselines"] for m in fb["series"] if m in fa["series"])
    assert "torch pin 2.11.* -> 2.13.*" in l76.note and "no baseline definition changed" in l76.note


def test_a_reverted_driver_change_starts_and_ends(seeds):
    for s, w in seeds.items():
        eps = [l for l in w.labels if l.cause == "hardware" and l.kind == "driver" and l.end_run_id]
        assert eps, s
        for l in eps:
            i, e = w.night_of(l.first_bad_run_id), w.night_of(l.end_run_id)
            assert 3 <= e - i <= 6
            p = {m[0] for m in l.members}
            assert len(p) == 1
            p = p.pop()
            # platform-wide: every series of the platform on that night
            assert set(l.members) == {m for m in w.series_at("dashboard", i)
                                      if m[0] == p and m in w.series_at("dashboard", i - 1)}
            alone = [m for m in l.members if not any(x is not l and m in x.members and
                                                     i - 2 <= w.night_of(x.first_bad_run_id) <= e + 1 for x in w.labels)]
            assert alone
            for m in alone:
                h = [w.honest("dashboard", *m, j) for j in (i - 1, i, e - 1, e)]
                assert h[1] < h[0] and h[2] < h[0]          # slower while the driver is in
                assert abs(h[3] / h[0] - 1) < 1e-6           # back when it is reverted
            assert str(w.nights[i].date.date()) in l.note and str(w.nights[e].date.date()) in l.note


def test_no_pretuned_document_before_the_real_builder_existed(world, seeds, repo):
    # Helion's builder, given no pretuned run, returns generated_at "" with zeroed stats
    import importlib.util
    import tempfile
    from pathlib import Path

    src = Path(world.repo) / F.PRETUNED_BUILDER_PATH
    with tempfile.TemporaryDirectory() as d:
        dst = Path(d) / "_bw2_pre_builder.py"
        dst.write_bytes(src.read_bytes())
        spec = importlib.util.spec_from_file_location("_bw2_pre_builder", dst)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        empty = mod.build_dashboard_data(d, [], None, None)
    assert empty["generated_at"] == "" and empty["runs"] == [] and empty["summary"] == []
    assert empty["stats"]["total_combos"] == 0 and empty["stats"]["geomean"] == 0.0
    # the world's 30 nights (to 2026-06-20) are before the pretuned builder (c51cbd12, 2026-06-30):
    # the live site had no pretuned-dashboard-data.json, and the world publishes none
    for n, night in enumerate(world.nights):
        assert repo.read(night.full_sha, F.PRETUNED_BUILDER_PATH) is None
        assert world.pretuned_bytes(n) is None and not world.pretuned_published(n)
    # in seed 12, the first night whose sha has the builder already has its first pretuned run
    w = seeds[12]
    first = next(n for n, night in enumerate(w.nights) if repo.read(night.full_sha, F.PRETUNED_BUILDER_PATH))
    assert w.nights[first].p_run_id and all(not night.p_run_id for night in w.nights[:first])
