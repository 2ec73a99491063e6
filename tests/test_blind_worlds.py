"""Blind worlds: real-sha nightlies, live-schema documents from Helion's own builders, sound labels."""
from __future__ import annotations

import json
import re

import pytest

from tests.blind_worlds import Label, build_world, perfect_alerts, score
from tests.blind_worlds import repo as R

pytestmark = pytest.mark.skipif(not R.bundle_path().exists(), reason="helion bundle not available")

NIGHTS = 30
SEED = 3

MECH_FILES = {
    "cudagraph": ("benchmarks/run.py", "pretuned_kernels/"),
    "shapes": ("benchmarks/run.py", "benchmarks/run_linattn.py", ".github/workflows/benchmark.yml"),
    "baseline": (".github/workflows/benchmark.yml", "pretuned_kernels/"),
    "autotune": (".github/workflows/benchmark.yml",),
    "timer": ("benchmarks/run.py", "pretuned_kernels/_bench.py"),
    "harness": (".github/workflows/benchmark.yml", "benchmarks/run.py"),
    "runner": (".github/workflows/",),
    "driver": (".github/workflows/",),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(SEED, tmp_path_factory.mktemp("blind"), nights=NIGHTS)


def test_documents_have_live_schema(world):
    last = len(world.nights) - 1
    d = json.loads(world.dashboard_bytes(last))
    for k in ("generated_at", "latest_run", "runs", "platforms", "platform_shorts", "unique_kernels", "stats", "summary"):
        assert k in d
    assert d["latest_run"]["run_id"] == world.nights[last].run_id
    for r in d["runs"]:
        assert set(r) >= {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "kernel_count"}
        assert r["run_id"].isdigit() and r["date"].endswith("Z")
    assert {"h100", "b200", "b200_cute", "mi350x", "tpu"} <= set(d["platform_shorts"])
    s0 = d["summary"][0]
    for k in ("kernel", "platform", "platform_short", "baseline_label", "has_nightly_data", "status", "accuracy_failures",
              "run_failures", "last_seen_date", "infra_missing", "helion_speedup_geomean", "triton_speedup_geomean",
              "torch_compile_speedup_geomean", "compile_time_geomean_s", "helion_latency_avg_ms", "speedup_delta_pct",
              "compile_delta_pct", "latency_delta_pct", "history"):
        assert k in s0
    per_shape = 0
    for s in d["summary"]:
        for h in s["history"]:
            assert set(h) >= {"run_id", "sha", "full_sha", "date", "branch", "is_nightly", "helion_speedup_geomean",
                              "triton_speedup_geomean", "torch_compile_speedup_geomean", "compile_time_geomean_s",
                              "helion_latency_avg_ms"}
            if "per_shape" in h:
                per_shape += 1
                assert h["run_id"] == world.nights[last].run_id or s["infra_missing"]
                assert set(h["per_shape"]) == {"shapes", "helion_speedup", "triton_speedup", "torch_compile_speedup",
                                               "helion_accuracy", "helion_compile_time_s", "helion_latency_ms"}
    assert per_shape > 20
    assert any(s["baseline_label"] for s in d["summary"])  # linear-attention rows
    assert any(not h["is_nightly"] for s in d["summary"] for h in s["history"])  # manual dispatches present
    p = json.loads(world.pretuned_bytes(last))
    for k in ("generated_at", "latest_run", "runs", "platforms", "platform_shorts", "kernels", "stats", "summary"):
        assert k in p
    assert p["summary"] and {"compute", "cudagraph", "failed", "geomean", "baselines", "history"} <= set(p["summary"][0])
    # cumulative: an earlier document is a prefix in run history
    d5 = json.loads(world.dashboard_bytes(5))
    assert d5["latest_run"]["run_id"] == world.nights[5].run_id
    assert {r["run_id"] for r in d5["runs"]} <= {r["run_id"] for r in d["runs"]}
    assert world.series_count() > 100


def test_nightlies_on_real_first_parent_shas(world):
    order = {c.sha: i for i, c in enumerate(R.first_parent(world.repo))}
    fp = R.first_parent(world.repo)
    prev_idx, prev_date = -1, None
    for n in world.nights:
        assert re.fullmatch(r"[0-9a-f]{40}", n.full_sha) and n.sha == n.full_sha[:8] and n.run_id.isdigit()
        assert n.full_sha in order and order[n.full_sha] >= prev_idx
        assert 8 <= n.date.hour <= 9
        assert prev_date is None or n.date > prev_date
        # the sha is the last first-parent commit before the nightly time
        assert fp[order[n.full_sha]].date < n.date
        assert order[n.full_sha] + 1 == len(fp) or fp[order[n.full_sha] + 1].date >= n.date
        prev_idx, prev_date = order[n.full_sha], n.date
        assert world.night_of(n.run_id) is not None
    assert len(world.nights) < NIGHTS  # skipped days


def _range(world, label):
    key = (lambda n: n.p_full_sha) if label.source == "pretuned" else (lambda n: n.full_sha)
    a = key(world.nights[world.night_of(label.last_good_run_id)])
    b = key(world.nights[world.night_of(label.first_bad_run_id)])
    return R.git(world.repo, "rev-list", "--first-parent", f"{a}..{b}").split()


def test_label_commits_in_window_and_touch_mechanism(world):
    assert 15 <= len(world.labels)
    for l in world.labels:
        assert isinstance(l, Label) and l.to_dict()["id"] == l.id
        assert world.night_of(l.first_bad_run_id) == world.night_of(l.last_good_run_id) + 1
        if l.cause == "real":
            assert l.culprit_sha and l.culprit_sha in _range(world, l)
            files = R.git(world.repo, "show", "--format=", "--name-only", l.culprit_sha).split()
            assert any(f.startswith(("helion/", "pretuned_kernels/")) for f in files), l
        else:
            assert l.culprit_sha is None
        if l.change_sha:
            assert l.cause in ("method_change", "hardware")
            assert l.change_sha in _range(world, l), l
            files = R.git(world.repo, "show", "--format=", "--name-only", l.change_sha).split()
            assert any(f.startswith(p) for f in files for p in MECH_FILES[l.kind]), (l.id, files)
        if l.kind == "thermal":
            assert l.change_sha is None and l.end_run_id
        assert l.members and l.honest_speedup


def test_every_cause_present(world):
    causes = {l.cause for l in world.labels}
    assert causes == {"real", "method_change", "hardware", "noise"}


def test_score_perfect_and_empty(world):
    s = score(world, perfect_alerts(world))
    assert s["detection_recall"] == 1.0 and s["cause_accuracy"] == 1.0 and s["kind_accuracy"] == 1.0
    assert s["first_bad_exact"] == 1.0 and s["culprit_top1"] == 1.0 and s["change_commit_accuracy"] == 1.0
    assert s["honest_within_3pct"] == 1.0 and s["noise_cases_alerted"] == 0 and s["false_alerts"] == 0
    assert all(v == 1.0 for v in s["per_cause_accuracy"].values() if v is not None)
    e = score(world, [])
    assert e["detection_recall"] == 0.0 and e["false_alerts"] == 0
    assert len(e["cases"]) == len(world.labels)


def test_score_reads_a_kind_in_either_spelling(world):
    """"driver/toolchain" and "driver" are one kind; "driver" and "runner" are not."""
    from dataclasses import replace
    from types import SimpleNamespace

    alerts = perfect_alerts(world)
    hw = [a for a in alerts if a["cause"] == "hardware"]
    assert hw
    for spelling, right in (("driver/toolchain", "driver"), ("driver", "driver/toolchain"), ("runner", "thermal")):
        relabeled = SimpleNamespace(labels=[replace(l, kind=spelling) if l.cause == "hardware" else l
                                            for l in world.labels], night_of=world.night_of,
                                    series_count=world.series_count, nights=world.nights)
        got = [dict(a, kind=right) if a["cause"] == "hardware" else a for a in alerts]
        s = score(relabeled, got)
        hw_ok = [c["kind_ok"] for c in s["cases"] if c["cause"] == "hardware"]
        assert all(hw_ok) == (spelling != "runner") and hw_ok


def test_deterministic_per_seed(world, tmp_path):
    w2 = build_world(SEED, tmp_path / "again", nights=NIGHTS)
    assert [n.run_id for n in w2.nights] == [n.run_id for n in world.nights]
    assert [l.to_dict() for l in w2.labels] == [l.to_dict() for l in world.labels]
    assert w2.dashboard_bytes(3) == world.dashboard_bytes(3)
    assert w2.pretuned_bytes(3) == world.pretuned_bytes(3)


def _label(i, first, cause="method_change", kind="timer", members=(("h100", "rms_norm-bwd"),),
           metrics=("helion_speedup_geomean",)) -> Label:
    """A label for a hand-built world: first bad on nightly ``first`` (run ids are 100 + night)."""
    return Label(id=f"l{i}", source="dashboard", cause=cause, kind=kind, direction="regression", members=members,
                 metrics=metrics, first_bad_run_id=str(100 + first), last_good_run_id=str(99 + first),
                 end_run_id=None, culprit_sha=None, change_sha=None, honest_speedup={}, note="")


def _hand_world(labels: list, nights: int, series: int):
    """A world as the scorer reads one: labels, ``nights`` nightlies with run ids 100.., a series count."""
    from types import SimpleNamespace

    return SimpleNamespace(labels=labels, nights=[SimpleNamespace(run_id=str(100 + i)) for i in range(nights)],
                           series_count=lambda: series,
                           night_of=lambda r: int(r) - 100 if r is not None and 100 <= int(r) < 100 + nights else None)


def test_an_alert_near_two_labels_counts_for_its_own_under_the_own_label_rule():
    """A cudagraph flip on night 10 and a compile-time fix on night 12 on the same series: under
    the own-label rule the compile-time alert is the second label's, not a vote on the first
    one's nightly or kind; under the first rule it counts for both."""
    world = _hand_world([_label(0, 10, kind="cudagraph"), _label(1, 12, metrics=("compile_time_geomean_s",))],
                        nights=20, series=1)

    def alert(metric, first, kind):
        return dict(source="dashboard", platform_short="h100", kernel="rms_norm-bwd", metric=metric,
                    first_bad_run_id=str(100 + first), cause="method_change", kind=kind)

    alerts = [alert("helion_speedup_geomean", 10, "cudagraph"), alert("compile_time_geomean_s", 12, "timer"),
              alert("helion_latency_avg_ms", 12, "timer")]
    cases = {c["id"]: c for c in score(world, alerts, own_label=True)["cases"]}
    assert cases["l0"]["alerts"] == 1 and cases["l0"]["first_bad_ok"] and cases["l0"]["kind_ok"]
    # the latency alert lists neither label's metric: it goes to the nearest, the timer label
    assert cases["l1"]["alerts"] == 2 and cases["l1"]["first_bad_ok"]
    shared = {c["id"]: c for c in score(world, alerts)["cases"]}
    assert shared["l0"]["alerts"] == 3 and not shared["l0"]["first_bad_ok"]


def test_an_alert_on_a_noisy_series_that_an_event_explains_is_not_about_the_scatter():
    """b200 welford turns noisy on night 30. Alerts on it: one that moved with a labeled
    hardware event (night 12, welford among its members), one on night 20 that no label claims
    (before the noise began), one on night 40 that no label claims. The first rule counts the
    case as alerted (any alert on the series); the stricter reading counts only the night-40
    alert, and without it the case reads as not alerted."""
    world = _hand_world([_label(0, 30, cause="noise", kind="scatter", members=(("b200", "welford"),)),
                         _label(1, 12, cause="hardware", kind="thermal",
                                members=(("b200", "welford"), ("b200", "gemm")))], nights=60, series=2)

    def alert(first, cause):
        return dict(source="dashboard", platform_short="b200", kernel="welford", metric="helion_speedup_geomean",
                    first_bad_run_id=str(100 + first), cause=cause, kind=None)

    with_late = score(world, [alert(12, "hardware"), alert(20, "real"), alert(40, "real")])
    without = score(world, [alert(12, "hardware"), alert(20, "real")])
    assert with_late["noise_cases_alerted"] == without["noise_cases_alerted"] == 1
    assert with_late["noise_cases_alerted_unexplained"] == 1
    assert without["noise_cases_alerted_unexplained"] == 0
    noisy = next(c for c in without["cases"] if c["id"] == "l0")
    assert noisy["alerts"] == 2 and noisy["alerts_unexplained"] == 0


def test_false_alerts_are_also_read_by_the_message_they_went_out_in():
    """A labeled runner change on h100 gemm and rms_norm (night 10). benchwatch's group 1 holds
    both and also softmax, which no label lists: a false alert in a right message. Group 2 is
    layer_norm on night 30, which nothing explains: a message about nothing. Both are false
    alerts; only the second is one with no event."""
    world = _hand_world([_label(0, 10, cause="hardware", kind="runner",
                                members=(("h100", "gemm"), ("h100", "rms_norm")))], nights=40, series=25)

    def alert(kernel, first, group):
        return dict(source="dashboard", platform_short="h100", kernel=kernel, metric="helion_speedup_geomean",
                    first_bad_run_id=str(100 + first), cause="hardware", kind="runner", group_id=group)

    s = score(world, [alert("gemm", 10, "1"), alert("rms_norm", 10, "1"), alert("softmax", 10, "1"),
                      alert("layer_norm", 30, "2")])
    assert s["false_alerts"] == 2 and s["false_alerts_no_event"] == 1
    assert s["false_alerts_no_event_per_10k_series_nights"] == 1 * 10_000 / (25 * 40)
    alone = score(world, [alert("softmax", 10, "3")])
    assert alone["false_alerts"] == alone["false_alerts_no_event"] == 1
