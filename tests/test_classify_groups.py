"""Grouping moves by nightly and platform, and the cause of a group."""

from __future__ import annotations

from dataclasses import replace

from service.classify import classify_group, group_moves
from service.classify.checks import OTHERS_STEPPED
from service.classify.settings import ClassifySettings
from service.records import Classification, Evidence
from tests.test_classify_helpers import move

S = ClassifySettings()
RUN = move().first_bad.run_id  # every move here steps on the same nightly


def cls(cause: str, conf: float = 0.8, **verdicts: str) -> Classification:
    ev = tuple(Evidence(check, v, f"{check} says {v}") for check, v in verdicts.items())
    return Classification(cause, conf, ev, None, "")


def test_same_run_same_platform_is_one_group():
    moves = [move(kernel="a"), move(kernel="b"), move("helion_latency_avg_ms", 0.1, 0.12, kernel="a")]
    groups = group_moves(moves)
    assert len(groups) == 1
    g = groups[0]
    assert g.platform_short == "b200" and g.first_bad_run_id == moves[0].first_bad.run_id
    assert set(g.moves) == set(moves) and g.children == () and g.kernels == ("a", "b")


def test_two_platforms_make_a_parent_and_two_children():
    moves = [move(kernel="a"), move(kernel="b", platform="h100"), move(kernel="c", platform="h100")]
    groups = group_moves(moves)
    assert [g.platform_short for g in groups] == ["b200", "h100", None]
    parent = groups[-1]
    assert parent.children == tuple(groups[:2])
    assert set(parent.moves) == set(moves) and parent.platforms == ("b200", "h100")
    assert len(groups[1].moves) == 2


def test_one_nightly_apart_joins_the_busier_nightly_and_no_chaining():
    busy = [move(kernel=k, fb=12) for k in "abc"]
    late = move(kernel="d", fb=13)  # one nightly later: same event
    far = move(kernel="e", fb=14)  # two nightlies after the anchor: a separate event
    groups = group_moves(busy + [late, far])
    assert len(groups) == 2
    assert set(groups[0].moves) == set(busy + [late]) and groups[0].first_bad_run_id == busy[0].first_bad.run_id
    assert groups[1].moves == (far,) and groups[1].first_bad_run_id == far.first_bad.run_id


def test_retracted_moves_and_sources_are_kept_apart():
    gone = move(kernel="a", state="retracted")
    pre = move("geomean", 1.5, 1.2, kernel="a", source="pretuned")
    groups = group_moves([gone, move(kernel="b"), pre])
    assert len(groups) == 2 and all(gone not in g.moves for g in groups)
    assert {g.source for g in groups} == {"dashboard", "pretuned"}


def test_group_many_kernels_with_baselines_and_latency_is_hardware_even_if_members_say_real():
    members = []
    for k in "abcde":  # each member: breadth said "the machine", but a slice commit outweighed it
        members.append((move(kernel=k), cls("real", 0.6, breadth="hardware", commit_window="real")))
        members.append((move("triton_speedup_geomean", 1.2, 0.96, kernel=k), cls("real", 0.5)))
        members.append((move("helion_latency_avg_ms", 0.1, 0.125, kernel=k), cls("real", 0.5)))
    g = classify_group(members, S, run_id=RUN)
    assert g.cause == "hardware" and g.confidence >= 0.8
    text = " ".join(e.detail for e in g.evidence)
    assert "5 kernels on b200 stepped on run" in text and "5 real" in text
    assert "baselines moved for 5 of 5 kernels, latency for 5 of 5; 5 of 5 saw most of their platform" in text


def test_group_few_kernels_of_a_big_platform_with_baselines_is_not_hardware():
    # a shape change on 3 of 25 kernels moves their baselines and latency too: still a method change
    members = []
    for k in "abc":
        members.append((move(kernel=k), cls("method_change", 0.7, breadth="neutral", method_tells="method_change")))
        members.append((move("triton_speedup_geomean", 1.2, 0.96, kernel=k), cls("method_change", 0.6)))
        members.append((move("helion_latency_avg_ms", 0.1, 0.125, kernel=k), cls("method_change", 0.6)))
    assert classify_group(members, S, run_id=RUN).cause == "method_change"


def test_group_tell_needs_other_platforms_quiet_and_enough_kernels():
    loud = cls("real", 0.6)
    loud = replace(loud, evidence=(Evidence("breadth", "hardware", f"x; {OTHERS_STEPPED} (h100)"),))
    members = []
    for k in "abcde":
        members += [(move(kernel=k), loud), (move("triton_speedup_geomean", 1.2, 0.96, kernel=k), loud),
                    (move("helion_latency_avg_ms", 0.1, 0.125, kernel=k), loud)]
    assert classify_group(members, S, run_id=RUN).cause == "real"
    few = [(move(kernel=k), cls("real", 0.6, breadth="hardware")) for k in "ab"] + [
        (move("triton_speedup_geomean", 1.2, 0.96, kernel=k), cls("real", 0.5)) for k in "ab"] + [
        (move("helion_latency_avg_ms", 0.1, 0.125, kernel=k), cls("real", 0.5)) for k in "ab"]
    assert classify_group(few, S, run_id=RUN).cause == "real"


def test_group_tells_can_come_from_member_evidence():
    members = [(move(kernel=k), cls("real", 0.6, helion_only="hardware", timer_agreement="hardware",
                                    breadth="hardware")) for k in "abcd"]
    assert classify_group(members, S, run_id=RUN).cause == "hardware"


def test_group_all_method_is_method():
    members = [(move(kernel=k), cls("method_change", 0.7)) for k in "abc"]
    g = classify_group(members, S, run_id=RUN)
    assert g.cause == "method_change" and g.confidence == 0.7
    assert g.evidence[0].verdict == "method_change" and "3 method_change" in g.evidence[0].detail


def test_group_votes_once_per_kernel_with_the_headline_metric():
    # kernel a: speedup says real, three side metrics say method; kernel b: real
    members = [(move(kernel="a"), cls("real", 0.7))] + [
        (move(m, 1.0, 0.8, kernel="a"), cls("method_change", 0.9))
        for m in ("triton_speedup_geomean", "torch_compile_speedup_geomean", "compile_time_geomean_s")
    ] + [(move(kernel="b"), cls("real", 0.7))]
    g = classify_group(members, S, run_id=RUN)
    assert g.cause == "real" and "2 kernels" in g.evidence[0].detail


def test_group_all_noise_is_noise_and_noise_does_not_outvote():
    assert classify_group([(move(kernel=k), cls("noise", 0.9)) for k in "ab"], S, run_id=RUN).cause == "noise"
    mixed = [(move(kernel="a"), cls("noise", 0.9)), (move(kernel="b"), cls("noise", 0.9)),
             (move(kernel="c"), cls("method_change", 0.6))]
    assert classify_group(mixed, S, run_id=RUN).cause == "method_change"


def test_parent_across_platforms_is_not_one_machine():
    members = [(move(kernel=k, platform=p), cls("hardware", 0.8)) for p in ("b200", "h100") for k in "ab"]
    members.append((move(kernel="c", platform="h100"), cls("method_change", 0.6)))
    g = classify_group(members, S, run_id=RUN)
    assert g.cause == "method_change"
    assert any("2 platforms stepped on the same nightly" in e.detail for e in g.evidence)
    only_hw = classify_group(members[:-1], S, run_id=RUN)
    assert only_hw.cause == "hardware" and only_hw.confidence <= 0.4


def test_empty_group_is_noise():
    assert classify_group([], S, run_id=RUN).cause == "noise"


def test_unknown_member_causes_do_not_vote():
    members = [(move(kernel="a"), cls("unknown", 0.9)), (move(kernel="b"), cls("real", 0.6))]
    assert classify_group(members, S, run_id=RUN).cause == "real"
    assert classify_group(members[:1], S, run_id=RUN).cause == "noise"
