"""classify_move on textbook cases of the four causes, and the true speedup of each."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.classify import MoveContext, classify_move
from service.classify.settings import ClassifySettings
from service.records import CAUSES, FactChange
from service.records import AttributeChange
from tests.test_classify_helpers import commit, ctx, dash_siblings, move, peers, series, window

S = ClassifySettings()
CHECKS = ["persistence", "helion_only", "timer_agreement", "breadth", "method_tells", "commit_window"]


def verdicts(c) -> dict[str, str]:
    return {e.check: e.verdict for e in c.evidence}


def real_ctx(**kw) -> MoveContext:
    """Helion-only step, latency agrees, a [cute]-style slice commit in the window, nobody else moved."""
    base = dict(
        siblings=dash_siblings(triton=(1.2, 1.2), tc=(0.9, 0.9), latency=(0.1, 0.125)),
        peer_moves=peers("h100", 1),
        shapes_before=("1024", "2048"), shapes_after=("1024", "2048"),
        window=window(),
        candidates=(commit("[Triton] change softmax reduction", 0.9, 1), commit("[docs] x", 0.1, 2)),
    )
    base.update(kw)
    return ctx(move(), **base)


def method_ctx(**kw) -> MoveContext:
    base = dict(
        siblings=dash_siblings(triton=(1.2, 0.96), tc=(0.9, 0.72), latency=(0.1, 0.1)),
        window=window(),
        harness_commit=commit("[benchmark] switch baseline to cuBLAS", 0.2, 3),
        candidates=(commit("[docs] x", 0.1, 2),),
    )
    base.update(kw)
    return ctx(move(), **base)


def hardware_ctx(**kw) -> MoveContext:
    base = dict(
        siblings=dash_siblings(triton=(1.2, 0.96), tc=(0.9, 0.72), latency=(0.1, 0.125)),
        peer_moves=peers("b200", 7) + peers("b200", 5, metric="helion_latency_avg_ms", change=1.25),
        window=window(),
        runner_commit=commit("[CI] new b200 runner image", 0.2, 4),
    )
    base.update(kw)
    return ctx(move(), **base)


def test_textbook_real():
    c = classify_move(real_ctx(), S)
    assert c.cause == "real" and c.confidence >= 0.7
    assert [e.check for e in c.evidence] == CHECKS
    v = verdicts(c)
    assert v["helion_only"] == v["timer_agreement"] == v["commit_window"] == "real"
    assert c.culprit is not None and c.culprit.subject.startswith("[Triton]")
    assert len(c.candidates) == 2 and c.change_commit is None
    assert c.true_speedup == pytest.approx(0.8)
    assert "Helion is now 0.80x" in c.true_speedup_reason and "Helion-only" in c.true_speedup_reason
    assert c.related == ({"platform_short": "h100", "kernel": "k0", "metric": "helion_speedup_geomean",
                          "change_pct": -20.0},)


def test_real_without_a_matching_candidate_has_no_culprit():
    c = classify_move(real_ctx(candidates=(commit("[docs] x", 0.1, 2),)), S)
    assert c.cause == "real" and c.culprit is None and len(c.candidates) == 1


def test_real_improvement_is_real():
    m = move(before=1.0, after=1.3)
    c = classify_move(replace(real_ctx(siblings=dash_siblings(latency=(0.1, 0.077))), move=m), S)
    assert c.cause == "real" and c.true_speedup == pytest.approx(1.3)


def test_textbook_method_change():
    c = classify_move(method_ctx(), S)
    assert c.cause == "method_change" and c.confidence >= 0.6
    v = verdicts(c)
    assert v["helion_only"] == v["timer_agreement"] == v["commit_window"] == "method_change"
    assert c.change_commit is not None and "switch baseline" in c.change_commit.subject
    assert c.culprit is None and c.candidates == ()
    # all three speedups fell 20%: the baseline got faster; the lower figure is the honest one
    assert c.true_speedup == pytest.approx(0.8)
    assert "baseline" in c.true_speedup_reason


def test_textbook_hardware():
    c = classify_move(hardware_ctx(), S)
    assert c.cause == "hardware" and c.confidence >= 0.6
    v = verdicts(c)
    assert v["breadth"] == v["helion_only"] == v["timer_agreement"] == v["commit_window"] == "hardware"
    assert c.change_commit is not None and "runner" in c.change_commit.subject
    assert c.true_speedup == pytest.approx(1.0) and "healthy hardware" in c.true_speedup_reason
    assert len(c.related) == 12


@pytest.mark.parametrize("kw", [dict(state="retracted", nights_after=2), dict(significance=1.5)])
def test_textbook_noise(kw):
    m = move(**kw)
    own = series("helion_speedup_geomean", 1.0, 1.0)
    # even with every other check pointing at "real", a reverted/insignificant move is noise
    c = classify_move(replace(real_ctx(), move=m, series=own), S)
    assert c.cause == "noise" and 0.5 <= c.confidence <= 1.0
    assert verdicts(c)["persistence"] == "noise"
    assert c.culprit is None
    assert c.true_speedup == pytest.approx(1.0, rel=0.01) and "median of the last 5" in c.true_speedup_reason


def test_noise_without_the_series_uses_the_levels():
    c = classify_move(ctx(move(state="retracted")), S)
    assert c.cause == "noise" and c.true_speedup == 1.0
    c = classify_move(ctx(move(before=1.0, after=0.98, significance=1.0)), S)
    assert c.cause == "noise" and 0.98 < c.true_speedup < 1.0


def test_thin_evidence_is_unsure():
    c = classify_move(ctx(move(state="provisional", nights_after=1)), S)
    assert c.cause in CAUSES and c.confidence <= 0.5
    assert classify_move(real_ctx(), S).confidence > c.confidence


def test_weights_change_the_verdict():
    # with the commit window and method tells given all the weight, a harness commit decides
    c = method_ctx(siblings=dash_siblings(), harness_commit=commit("[benchmark] x", 0.2, 3))
    assert classify_move(c, S).cause == "real"  # helion-only + latency agrees outweigh one commit
    heavy = ClassifySettings(weight_commit_window=20.0)
    assert classify_move(c, heavy).cause == "method_change"


# --- true speedup, method change --------------------------------------------------------------


def test_true_speedup_cudagraph_removed_keeps_the_graphed_side():
    ch = AttributeChange("cudagraph", "true", "false", "5012", "the run's cudagraph flag flipped")
    c = classify_move(method_ctx(attribute_changes=(ch,)), S)
    assert c.cause == "method_change"
    assert c.true_speedup == pytest.approx(1.0) and "CUDA graphs" in c.true_speedup_reason


def test_true_speedup_cudagraph_fact_added_keeps_the_after_side():
    fact = FactChange("cudagraph_flag", "benchmarks/run.py: softmax speedup is CUDA-graph timed again "
                      "(remove_flags --cudagraph removed)", "method_change", "benchmarks/run.py",
                      "no cudagraph", "cudagraph")
    c = classify_move(method_ctx(repo_facts=(fact,)), S)
    assert c.cause == "method_change" and c.true_speedup == pytest.approx(0.8)
    removed = replace(fact, old="cudagraph", new="no cudagraph")
    assert classify_move(method_ctx(repo_facts=(removed,)), S).true_speedup == pytest.approx(1.0)


def test_true_speedup_shapes_changed_keeps_the_wider_side():
    m = move(before=1.0, after=1.25)
    base = method_ctx(siblings=dash_siblings(triton=(1.2, 1.2), tc=(0.9, 0.9), latency=(0.1, 0.1)),
                      shapes_before=("a", "b", "c", "d"), shapes_after=("a", "b"))
    c = classify_move(replace(base, move=m), S)
    assert c.cause == "method_change"
    assert c.true_speedup == pytest.approx(1.0) and "4 -> 2 shapes" in c.true_speedup_reason


def test_true_speedup_plain_method_change_keeps_the_established_level():
    base = method_ctx(siblings=dash_siblings(latency=(0.1, 0.1)))
    c = classify_move(base, ClassifySettings(weight_commit_window=5.0))
    assert c.cause == "method_change"
    assert c.true_speedup == pytest.approx(1.0) and "latency did not move" in c.true_speedup_reason


def test_true_speedup_is_none_for_latency_and_compile_time():
    m = move("helion_latency_avg_ms", 0.1, 0.125)
    c = classify_move(ctx(m, siblings=dash_siblings(helion=(1.0, 0.8))), S)
    assert c.true_speedup is None and "not a speedup" in c.true_speedup_reason
    c = classify_move(ctx(move("compile_time_geomean_s", 10.0, 14.0)), S)
    assert c.true_speedup is None
