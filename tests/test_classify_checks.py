"""Each evidence check, both ways (and neutral when it cannot tell)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.classify import checks
from service.classify.settings import ClassifySettings
from service.records import FactChange
from service.records import AttributeChange
from tests.test_classify_helpers import (
    FB,
    commit,
    ctx,
    dash_siblings,
    full_sha,
    move,
    peers,
    series,
    window,
)

S = ClassifySettings()


def run(check: str, c):
    b = checks.breadth_facts(c, S)
    fn = getattr(checks, check)
    if check == "persistence":
        return fn(c, S)
    return fn(c, S, b)


# --- persistence ----------------------------------------------------------------------------


def test_persistence_confirmed_step_persists():
    f = run("persistence", ctx(move(significance=12.0)))
    assert f.verdict == "real" and f.strength > 0.5
    assert "persists for 8 nightlies" in f.evidence.detail


def test_persistence_retracted_is_noise():
    f = run("persistence", ctx(move(state="retracted", nights_after=3)))
    assert f.verdict == "noise" and "reverted" in f.evidence.detail


def test_persistence_insignificant_is_noise():
    f = run("persistence", ctx(move(significance=1.2)))
    assert f.verdict == "noise" and "below the 3σ bar" in f.evidence.detail
    assert f.strength > run("persistence", ctx(move(significance=2.9))).strength


def test_persistence_provisional_too_early_is_neutral():
    f = run("persistence", ctx(move(state="provisional", nights_after=1)))
    assert f.verdict == "neutral" and "1 nightly since" in f.evidence.detail and "too early" in f.evidence.detail
    assert run("persistence", ctx(move(state="confirmed", nights_after=2))).verdict == "neutral"


# --- helion_only ----------------------------------------------------------------------------


def test_helion_only_when_comparators_flat():
    f = run("helion_only", ctx(move(), siblings=dash_siblings()))
    assert f.verdict == "real" and "Helion-only" in f.evidence.detail


def test_helion_only_all_three_moving_is_a_baseline_move():
    sib = dash_siblings(triton=(1.2, 0.96), tc=(0.9, 0.72))
    f = run("helion_only", ctx(move(), siblings=sib))
    assert f.verdict == "method_change" and "baseline moved" in f.evidence.detail


def test_helion_only_all_three_moving_on_a_broadly_moving_platform_is_hardware():
    sib = dash_siblings(triton=(1.2, 0.96), tc=(0.9, 0.72))
    f = run("helion_only", ctx(move(), siblings=sib, peer_moves=peers("b200", 6)))
    assert f.verdict == "hardware"


def test_helion_only_comparators_moving_the_other_way_or_split_is_neutral():
    sib = dash_siblings(triton=(1.2, 0.96), tc=(0.9, 0.9))
    assert run("helion_only", ctx(move(), siblings=sib)).verdict == "neutral"


def test_helion_only_small_sibling_wobble_is_flat():
    # 1% moves in the comparators against a 20% step are not "moving together"
    sib = dash_siblings(triton=(1.2, 1.188), tc=(0.9, 0.909))
    assert run("helion_only", ctx(move(), siblings=sib)).verdict == "real"


def test_helion_only_comparators_moving_less_on_a_broad_platform_is_hardware():
    # thermal throttling: Helion -20%, baselines -8% (clearly beyond their noise), most of b200 moved
    sib = dash_siblings(triton=(1.2, 1.104), tc=(0.9, 0.828))
    assert run("helion_only", ctx(move(), siblings=sib)).verdict == "neutral"
    f = run("helion_only", ctx(move(), siblings=sib, peer_moves=peers("b200", 6)))
    assert f.verdict == "hardware" and "less than Helion" in f.evidence.detail


def test_helion_only_is_surer_the_flatter_the_comparators():
    flat = run("helion_only", ctx(move(), siblings=dash_siblings()))
    wobbly = run("helion_only", ctx(move(), siblings=dash_siblings(triton=(1.2, 1.17), tc=(0.9, 0.88))))
    assert flat.verdict == wobbly.verdict == "real" and flat.strength > wobbly.strength


def test_helion_only_without_data_is_neutral():
    f = run("helion_only", ctx(move()))
    assert f.verdict == "neutral" and "no triton" in f.evidence.detail


def _pretuned(base_after: tuple[float, float]):
    m = move("geomean", 1.5, 1.2, source="pretuned")
    sib = {
        "baseline:triton:geomean": series("baseline:triton:geomean", 1.5, base_after[0], source="pretuned"),
        "baseline:eager:geomean": series("baseline:eager:geomean", 3.0, base_after[1], source="pretuned"),
        "total": series("total", 12, 12, source="pretuned"),
    }
    return ctx(m, siblings=sib)


def test_helion_only_pretuned_against_every_baseline_is_real():
    assert run("helion_only", _pretuned((1.2, 2.4))).verdict == "real"


def test_helion_only_pretuned_baselines_flat_is_method():
    assert run("helion_only", _pretuned((1.5, 3.0))).verdict == "method_change"


# --- timer_agreement ------------------------------------------------------------------------


def test_timer_agreement_latency_agrees_is_real():
    f = run("timer_agreement", ctx(move(), siblings=dash_siblings(latency=(0.1, 0.125))))
    assert f.verdict == "real" and "agrees" in f.evidence.detail


def test_timer_agreement_latency_flat_is_method():
    f = run("timer_agreement", ctx(move(), siblings=dash_siblings(latency=(0.1, 0.1))))
    assert f.verdict == "method_change" and "only the cudagraph timer" in f.evidence.detail


def test_timer_agreement_latency_the_other_way_is_method():
    f = run("timer_agreement", ctx(move(), siblings=dash_siblings(latency=(0.1, 0.08))))
    assert f.verdict == "method_change" and "disagree" in f.evidence.detail


def test_timer_agreement_improvement_agrees_too():
    m = move(before=1.0, after=1.3)
    f = run("timer_agreement", ctx(m, siblings=dash_siblings(latency=(0.1, 0.077))))
    assert f.verdict == "real"


def test_timer_agreement_latency_move_with_speedup_flat_on_broad_platform_is_hardware():
    m = move("helion_latency_avg_ms", 0.1, 0.125)
    sib = dash_siblings(helion=(1.0, 1.0))
    del sib["helion_latency_avg_ms"]
    assert run("timer_agreement", ctx(m, siblings=sib)).verdict == "method_change"
    f = run("timer_agreement", ctx(m, siblings=sib, peer_moves=peers("b200", 6, metric="helion_latency_avg_ms",
                                                                     change=1.25)))
    assert f.verdict == "hardware"


def test_timer_agreement_too_noisy_latency_is_neutral():
    m = move(before=1.0, after=0.95)
    sib = dash_siblings(latency=(0.1, 0.1))
    sib["helion_latency_avg_ms"] = series("helion_latency_avg_ms", 0.1, 0.1, jitter=10.0)
    assert run("timer_agreement", ctx(m, siblings=sib)).verdict == "neutral"


def test_timer_agreement_pretuned_and_other_metrics_are_neutral():
    assert run("timer_agreement", ctx(move("geomean", source="pretuned"))).verdict == "neutral"
    assert run("timer_agreement", ctx(move("compile_time_geomean_s", 10, 14))).verdict == "neutral"


# --- breadth --------------------------------------------------------------------------------


def test_breadth_platform_only_is_hardware():
    c = ctx(move(), peer_moves=peers("b200", 6) + peers("h100", 1))
    f = run("breadth", c)
    assert f.verdict == "hardware" and "6 of 9 other kernels on b200" in f.evidence.detail
    assert "other platforms quiet" in f.evidence.detail


def test_breadth_isolated_is_real():
    f = run("breadth", ctx(move(), peer_moves=peers("h100", 1)))
    assert f.verdict == "real" and "isolated" in f.evidence.detail


def test_breadth_everywhere_is_neutral_and_marked():
    f = run("breadth", ctx(move(), peer_moves=peers("b200", 6) + peers("h100", 4)))
    assert f.verdict == "neutral" and checks.OTHERS_STEPPED in f.evidence.detail


def test_breadth_same_family_is_not_another_platform():
    # b200_cute runs on the same machines as b200: its kernels stepping too is still "this machine"
    f = run("breadth", ctx(move(), peer_moves=peers("b200", 6) + peers("b200_cute", 4)))
    assert f.verdict == "hardware"


def test_breadth_ignores_opposite_direction_and_own_other_metrics():
    same_kernel = (move("triton_speedup_geomean", 1.2, 0.9),)  # this kernel's own other metric
    opposite = peers("b200", 6, change=1.3)  # improvements do not make a regression broad
    f = run("breadth", ctx(move(), peer_moves=same_kernel + opposite))
    assert f.verdict == "real"


# --- method_tells ---------------------------------------------------------------------------


def test_method_tells_shape_count_changed():
    f = run("method_tells", ctx(move(), shapes_before=("a", "b", "c"), shapes_after=("a", "b")))
    assert f.verdict == "method_change" and "3 to 2 shapes" in f.evidence.detail


def test_method_tells_same_shapes_is_neutral():
    f = run("method_tells", ctx(move(), shapes_before=("a", "b"), shapes_after=("a", "b")))
    assert f.verdict == "neutral" and "same shapes" in f.evidence.detail


@pytest.mark.parametrize("attr, verdict", [("cudagraph", "method_change"), ("baseline_label", "method_change"),
                                           ("baselines", "method_change"), ("platform", "hardware")])
def test_method_tells_attribute_changes(attr, verdict):
    ch = AttributeChange(attr, "old", "new", "5012", f"{attr} changed from old to new")
    f = run("method_tells", ctx(move(), attribute_changes=(ch,)))
    assert f.verdict == verdict and attr in f.evidence.detail


def test_method_tells_scatter_collapse():
    own = series("helion_speedup_geomean", 1.0, 0.8, jitter=8.0, jitter_after=0.3)
    f = run("method_tells", ctx(move(), series=own))
    assert f.verdict == "method_change" and "collapsed" in f.evidence.detail
    steady = series("helion_speedup_geomean", 1.0, 0.8, jitter=3.0)
    assert run("method_tells", ctx(move(), series=steady)).verdict == "neutral"


def test_method_tells_pretuned_total_changed():
    m = move("geomean", 1.5, 1.2, source="pretuned")
    sib = {"total": series("total", 12, 10, source="pretuned")}
    f = run("method_tells", ctx(m, siblings=sib))
    assert f.verdict == "method_change" and "shape count" in f.evidence.detail


# --- commit_window --------------------------------------------------------------------------


def test_commit_window_harness_commit_is_method():
    f = run("commit_window", ctx(move(), window=window(), harness_commit=commit("[benchmark] new timer", 0.1)))
    assert f.verdict == "method_change" and "harness change" in f.evidence.detail


def test_commit_window_runner_commit_is_hardware():
    f = run("commit_window", ctx(move(), window=window(), runner_commit=commit("[CI] move b200 runner", 0.1)))
    assert f.verdict == "hardware"


def test_commit_window_slice_candidate_is_real_only_when_it_scores():
    good = ctx(move(), window=window(), candidates=(commit("[cute] faster softmax", 0.9),))
    assert run("commit_window", good).verdict == "real"
    weak = ctx(move(), window=window(), candidates=(commit("[docs] typo", 0.1),))
    f = run("commit_window", weak)
    assert f.verdict == "hardware" and "none of the 3 commits" in f.evidence.detail


def test_commit_window_loose_candidate_cannot_explain_a_platform_wide_step():
    loose = (commit("Error when invalid loop reduction config is generated", 0.5),)
    alone = run("commit_window", ctx(move(), window=window(), candidates=loose))
    broad = run("commit_window", ctx(move(), window=window(), candidates=loose, peer_moves=peers("b200", 7)))
    assert alone.verdict == broad.verdict == "real"
    assert broad.strength < alone.strength and "matches loosely" in broad.evidence.detail
    aimed = (commit("[sm100] new b200 matmul schedule", 0.85),)
    strong = run("commit_window", ctx(move(), window=window(), candidates=aimed, peer_moves=peers("b200", 7)))
    assert strong.strength == 1.0


def test_commit_window_kernel_fact_only_for_this_kernel():
    fact = FactChange("cudagraph_flag", "benchmarks/run.py: rms_norm-bwd speedup is no longer CUDA-graph timed "
                      "(remove_flags --cudagraph added)", "method_change", "benchmarks/run.py", "cudagraph",
                      "no cudagraph")
    mine = ctx(move(kernel="rms_norm-bwd"), window=window(), repo_facts=(fact,))
    assert run("commit_window", mine).verdict == "method_change"
    other = ctx(move(kernel="rms_norm"), window=window(), repo_facts=(fact,))
    assert run("commit_window", other).verdict != "method_change"


def test_commit_window_runner_fact_for_this_platform():
    fact = FactChange("runner_label", "runs-on changed", "hardware", ".github/workflows/benchmark_b200.yml",
                      "linux.dgx.b200", "linux.dgx.b200.v2")
    assert run("commit_window", ctx(move(), window=window(), repo_facts=(fact,))).verdict == "hardware"
    on_h100 = ctx(move(platform="h100"), window=window(), repo_facts=(fact,))
    assert all("repo fact" not in d for d in run("commit_window", on_h100).evidence.detail.split("; "))


def test_commit_window_incomplete_says_fetch_and_is_neutral():
    w = window(commits=0, complete=False, problem="window not in the local clone; fetch it")
    f = run("commit_window", ctx(move(), window=w))
    assert f.verdict == "neutral" and "fetch it" in f.evidence.detail


def test_commit_window_same_commit_is_environment():
    m = move()
    same = replace(m.first_bad, sha=m.last_good.sha, full_sha=m.last_good.full_sha)
    m = replace(m, first_bad=same)
    assert m.first_bad.full_sha == full_sha(FB - 1)
    f = run("commit_window", ctx(m, window=window(commits=0)))
    assert f.verdict == "hardware" and "same commit" in f.evidence.detail


def test_commit_window_without_clone_is_neutral():
    f = run("commit_window", ctx(move()))
    assert f.verdict == "neutral" and "no local Helion clone" in f.evidence.detail


def test_levels_accept_naive_series_dates():
    # records are tz-aware UTC; a naive-dated series (straight from the store) still lines up
    sib = dash_siblings(triton=(1.2, 0.96), tc=(0.9, 0.72))
    naive = {k: replace(v, points=tuple(p._replace(date=p.date.replace(tzinfo=None)) for p in v.points))
             for k, v in sib.items()}
    assert run("helion_only", ctx(move(), siblings=naive)).verdict == "method_change"
