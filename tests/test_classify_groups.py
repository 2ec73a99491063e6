"""Grouping moves by nightly and platform: the events the event stage explains."""

from __future__ import annotations


from service.classify import group_moves
from tests.records_fixtures import move


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


def test_a_part_splits_a_platform_nightly_without_making_a_parent():
    """Kernels whose own measurement changed are an event apart from those that moved beside them."""
    shaped = [move(kernel="welford"), move("helion_latency_avg_ms", 0.1, 0.2, kernel="welford"), move(kernel="gdn")]
    others = [move(kernel="layer_norm-bwd"), move(kernel="rms_norm-bwd")]
    part = lambda m: "own_method" if m.key.kernel in {"welford", "gdn"} else ""  # noqa: E731
    groups = group_moves(shaped + others, part)
    assert [(g.platform_short, g.part) for g in groups] == [("b200", ""), ("b200", "own_method")]
    assert set(groups[0].moves) == set(others) and set(groups[1].moves) == set(shaped)
    # with another platform, the parent holds every part of every platform
    h = move(kernel="x", platform="h100")
    groups = group_moves(shaped + others + [h], part)
    assert [(g.platform_short, g.part) for g in groups] == [("b200", ""), ("b200", "own_method"), ("h100", ""),
                                                          (None, "")]
    assert groups[-1].children == tuple(groups[:3])


class _Shapes:
    """Stored shape lists per (track, run pk): the one thing `part_of` reads from the documents."""

    def __init__(self, lists: dict[tuple[int, int], tuple[str, ...]]) -> None:
        self.lists = lists

    def shapes_near(self, track_id: int, run_pk: int, *, side: str):
        return self.lists.get((track_id, run_pk))


def test_kernels_whose_stored_shapes_changed_across_the_step_are_split_off():
    """Two kernels whose shape list changed on the night five kernels stepped are their own
    event (a shapes edit), whatever the repo facts say; a kernel with unknown shapes stays."""
    from types import SimpleNamespace

    from service.pipeline.events import part_of

    moves = [move(kernel=k) for k in ("a", "b", "c", "d", "e")]
    lg, fb = moves[0].last_good.run_id, moves[0].first_bad.run_id
    refs = [SimpleNamespace(key=m.key, track_id=i) for i, m in enumerate(moves)]
    same, more = ("s1", "s2"), ("s1", "s2", "s3")
    lists = {(i, 1): same for i in range(4)}
    lists.update({(0, 2): more, (1, 2): more, (2, 2): same, (3, 2): same})  # e (4): never stored
    view = SimpleNamespace(refs=refs, pk_of={lg: 1, fb: 2}, facts=_Shapes(lists), suite={})
    stages = SimpleNamespace(facts=lambda m, suite=None: (), rules=SimpleNamespace(suites={}))
    groups = group_moves(moves, part_of(stages, view))
    assert [(g.part, g.kernels) for g in groups] == [("", ("c", "d", "e")), ("own_method", ("a", "b"))]
    # `investigate` splits only the platform asked about
    assert [g.part for g in group_moves(moves, part_of(stages, view, "h100"))] == [""]


def test_shapes_that_changed_beside_a_new_machine_stay_with_its_event():
    """The same two kernels' shape lists changed, but the window gives h100 a new CUDA image and
    nothing in the repo changed their inputs: a new machine fails or skips shapes it cannot run,
    so they are part of its event; a repo fact changing a kernel's inputs still splits it off."""
    from types import SimpleNamespace

    from service.pipeline.events import part_of
    from service.records import FactChange

    moves = [move(kernel=k) for k in ("a", "b", "c", "d", "e")]
    lg, fb = moves[0].last_good.run_id, moves[0].first_bad.run_id
    refs = [SimpleNamespace(key=m.key, track_id=i) for i, m in enumerate(moves)]
    same, more = ("s1", "s2"), ("s1", "s2", "s3")
    lists = {(i, 1): same for i in range(5)}
    lists.update({(0, 2): more, (1, 2): more, (2, 2): same, (3, 2): same, (4, 2): same})
    view = SimpleNamespace(refs=refs, pk_of={lg: 1, fb: 2}, facts=_Shapes(lists), suite={})
    image = FactChange("toolchain", "benchmark_dispatch.yml: h100 image cuda 12.9 -> 13.0", "hardware",
                       ".github/workflows/benchmark_dispatch.yml", "12.9", "13.0")
    stages = SimpleNamespace(facts=lambda m, suite=None: (image,), rules=SimpleNamespace(suites={}))
    assert [(g.part, g.kernels) for g in group_moves(moves, part_of(stages, view))] == [
        ("", ("a", "b", "c", "d", "e"))]
    inputs = FactChange("num_inputs", "run.py: a num_inputs 2 -> 3", "method_change", "benchmarks/run.py", "2", "3",
                        kernels=("a",))
    stages = SimpleNamespace(facts=lambda m, suite=None: (image, inputs), rules=SimpleNamespace(suites={}))
    assert [(g.part, g.kernels) for g in group_moves(moves, part_of(stages, view))] == [
        ("", ("b", "c", "d", "e")), ("own_method", ("a",))]


def test_a_kernel_whose_configs_were_regenerated_is_not_part_of_the_platforms_event():
    """A pin change re-times every pretuned kernel of b200 on the nightly that also regenerated
    one kernel's checked-in configs: that kernel is an event of its own (its new configs), and the
    others are the platform's, neither lending the other its footprint or cause."""
    from types import SimpleNamespace

    from service.pipeline.events import part_of
    from service.records import FactChange

    moves = [move("geomean", kernel=k, source="pretuned") for k in ("a", "b", "c", "nvfp4_gemv")]
    lg, fb = moves[0].last_good.run_id, moves[0].first_bad.run_id
    refs = [SimpleNamespace(key=m.key, track_id=i) for i, m in enumerate(moves)]
    view = SimpleNamespace(refs=refs, pk_of={lg: 1, fb: 2}, facts=_Shapes({}), suite={})
    pin = FactChange("baseline_pin", "benchmark_pretuned.yml: torch 2.11 -> 2.13", "method_change",
                     ".github/workflows/benchmark_pretuned.yml", "2.11", "2.13")
    configs = FactChange("pretuned_config", "nvfp4_gemv's checked-in Helion configs were regenerated", "real",
                         "pretuned_kernels/nvfp4_gemv/_helion_aot_nvfp4_gemv_cuda_sm100.py", kernels=("nvfp4_gemv",))
    stages = SimpleNamespace(facts=lambda m, suite=None: (pin, configs), rules=SimpleNamespace(suites={}))
    assert sorted((g.part, g.kernels) for g in group_moves(moves, part_of(stages, view))) == [
        ("", ("a", "b", "c")), ("own_configs", ("nvfp4_gemv",))]
    stages = SimpleNamespace(facts=lambda m, suite=None: (pin,), rules=SimpleNamespace(suites={}))
    assert [(g.part, g.kernels) for g in group_moves(moves, part_of(stages, view))] == [
        ("", ("a", "b", "c", "nvfp4_gemv"))]


def test_kernels_of_a_suite_with_its_own_job_are_their_own_event():
    """Three tritonbench kernels and two linear-attention kernels (their tracks' baseline label
    FLA, a suite of `config/slices.toml`) stepped on one nightly: two events, one per job; a
    baseline label that names no configured suite stays with the platform's main suite."""
    from types import SimpleNamespace

    from service.culprit.rules import load_rules
    from service.pipeline.events import part_of

    moves = [move(kernel=k) for k in ("jsd", "sum", "softmax", "simple_gla", "full_gla")]
    lg, fb = moves[0].last_good.run_id, moves[0].first_bad.run_id
    refs = [SimpleNamespace(key=m.key, track_id=i) for i, m in enumerate(moves)]
    view = SimpleNamespace(refs=refs, pk_of={lg: 1, fb: 2}, facts=_Shapes({}),
                           suite={0: None, 1: "liger", 2: None, 3: "FLA", 4: "FLA"})
    stages = SimpleNamespace(facts=lambda m, suite=None: (), rules=load_rules())
    groups = group_moves(moves, part_of(stages, view))
    assert sorted((g.part, g.kernels) for g in groups) == [
        ("", ("jsd", "softmax", "sum")), ("suite FLA", ("full_gla", "simple_gla"))]


def test_an_event_ended_when_every_move_for_the_worse_ended():
    from service.classify.groups import event_ended

    lat = move("helion_latency_avg_ms", 0.10, 0.12, kernel="softmax", state="ended")
    slower = move("helion_speedup_geomean", 1.5, 1.3, kernel="gemm", state="ended")
    # a throttled week: gemm's speedup rose while its latency rose more slowly than the baseline's;
    # on its own series that rise is a gain that went away, never "ended"
    risen = move("helion_speedup_geomean", 1.5, 1.65, kernel="softmax", state="confirmed")
    assert event_ended([lat, slower, risen])
    assert not event_ended([lat, move("helion_speedup_geomean", 1.5, 1.3, kernel="gemm")])  # gemm still slow
    assert not event_ended([risen])  # nothing came back


def test_a_short_excursion_stands_as_an_event_where_something_explains_its_end():
    """Many kernels with a revert or a machine that came back; two or more only beside a revert
    and out on both timers (a change merged and reverted three nights later on the two kernels it
    touched); one night on a few kernels, or anything without an explanation, stays noise."""
    from service.classify.groups import short_event_stands

    timers = ("helion_speedup_geomean", "helion_latency_avg_ms")

    def out(kernel, metric, nights=3):
        return move(metric, 1.0, 0.85 if "speedup" in metric else 1.18, kernel=kernel, state="ended",
                    nights_after=nights)

    both = [out(k, m) for k in ("layer_norm", "rms_norm") for m in timers]
    assert short_event_stands(both, 2, 3, reverted=True, hardware=False, timers=timers)
    assert not short_event_stands(both, 2, 3, reverted=False, hardware=True, timers=timers)
    one_timer = [out("layer_norm", timers[0]), out("rms_norm", timers[0]), out("rms_norm", timers[1])]
    assert not short_event_stands(one_timer, 2, 3, reverted=True, hardware=False, timers=timers)
    one_night = [out(k, m, nights=1) for k in ("layer_norm", "rms_norm") for m in timers]
    assert not short_event_stands(one_night, 2, 3, reverted=True, hardware=False, timers=timers)
    assert not short_event_stands(both, 2, 3, reverted=True, hardware=False, timers=None)  # one timer published
    alone = [out("layer_norm", m) for m in timers]
    assert not short_event_stands(alone, 1, 3, reverted=True, hardware=False, timers=timers)
    many = [out(k, timers[0], nights=1) for k in ("a", "b", "c")]
    assert short_event_stands(many, 3, 3, reverted=True, hardware=False)
    assert not short_event_stands(many, 3, 3, reverted=False, hardware=True)  # one bad night of a machine
    assert short_event_stands([out(k, timers[0]) for k in "abc"], 3, 3, reverted=False, hardware=True)
