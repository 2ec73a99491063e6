"""Event-level triage as pure decisions: the likelihood table, the footprint, the event verdict
and what each member inherits. No database, no git: every input is built by hand."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from service.classify.event import classify_event, honest_speedup, member_classification
from service.classify.explain import LikelihoodTable, Observation, explain, load_table
from service.classify.footprint import EventInput, KernelSteps, Thresholds, kernel_pattern, observe
from service.classify.levels import Step
from service.domain import MoveState
from service.errors import BenchwatchError
from service.records import FactChange, Move, RankedCommit, RunRef, SeriesKey

T = datetime(2026, 5, 1, 9, tzinfo=timezone.utc)
TABLE = load_table()


def step(pct: float, sigma: float = 0.01) -> Step:
    """A level change of ``pct`` percent with a pooled noise sigma (log units)."""
    return Step(1.0, 1.0 + pct / 100.0, sigma, 5, 5)


FLAT = step(0.0)


def k(name: str, head: float, lat: float | None = None, comps: tuple[float, ...] = (0.0, 0.0),
      compile_pct: float | None = None, facts: tuple[FactChange, ...] = (), shapes: bool | None = None) -> KernelSteps:
    """A dashboard kernel: headline speedup step, latency step (time: + is slower), comparators."""
    return KernelSteps(name, step(head), step(lat) if lat is not None else None, tuple(step(c) for c in comps),
                       step(compile_pct) if compile_pct is not None else None, facts, shapes)


def commit(score: float, subject: str = "[cute] faster tiles", reasons: tuple[str, ...] = ()) -> RankedCommit:
    return RankedCommit("a" * 8, "a" * 40, subject, T, score, reasons)


def event(kernels, ran=None, **kw) -> EventInput:
    base = dict(source="dashboard", platform="b200", kernels=tuple(kernels),
                ran=ran if ran is not None else 20, window_known=True, code_commits=3)
    base.update(kw)
    return EventInput(**base)


RUNNER = FactChange("runner_label", "benchmark_dispatch.yml: b200 runner label a -> b", "hardware",
                    ".github/workflows/benchmark_dispatch.yml", "a", "b")
CUDAGRAPH = FactChange("cudagraph_flag", "run.py: rms_norm-bwd speedup is no longer CUDA-graph timed",
                       "method_change", "benchmarks/run.py", "cudagraph", "no cudagraph", kernels=("rms_norm-bwd",))
AUTOTUNE = FactChange("autotune", "benchmark.yml: b200 autotune settings (none) -> HELION_AUTOTUNE_BUDGET=60",
                      "method_change", ".github/workflows/benchmark.yml", "(none)", "HELION_AUTOTUNE_BUDGET=60")
BASELINE_IMPL = FactChange("baseline_impl", "run.py: jsd the baseline every speedup divides changed: torch_jsd -> "
                           "liger_jsd", "method_change", "benchmarks/run.py", "torch_jsd", "liger_jsd", kernels=("jsd",))
BENCH_ARGS = FactChange("bench_args", "run.py: gemm benchmark arguments changed: non_square (unset) -> ''",
                        "method_change", "benchmarks/run.py", "before", "after", kernels=("gemm",))
COMMAND = FactChange("bench_command", "benchmark.yml: benchmarks/run.py runs twice -> once", "method_change",
                     ".github/workflows/benchmark.yml", "run.py ... (again)", "run.py ...")
PIN = FactChange("baseline_pin", "benchmark.yml: torch==2.10 -> torch==2.11", "method_change",
                 ".github/workflows/benchmark.yml", "torch==2.10", "torch==2.11")
TPU_PIN = FactChange("toolchain_pin", ".github/ci_commit_pins/torch_tpu.txt: tpu toolchain pin 1577138 -> f863c2b",
                     "hardware", ".github/ci_commit_pins/torch_tpu.txt", "1577138", "f863c2b")


# --- the table -------------------------------------------------------------------------------------


def test_shipped_table_covers_every_observation_footprint_makes():
    names = {o.name for o in observe(event([k("a", -10, 11)]), Thresholds())}
    names |= {o.name for o in observe(event([k("a", -10)], source="pretuned"))}
    assert names <= set(TABLE.observations)


@pytest.mark.parametrize("bad, needle", [
    ("[observations.timers]\nagree = { real = 1, hardware = 1 }\n", "timers.agree"),
    ("[observations.timers]\nagree = { real = 0, method_change = 1, hardware = 1 }\n", "positive"),
    ('causes = ["real", "noise", "hardware"]\n[observations]\n', "causes"),
    ("[observations.timers\n", "causes.toml"),
])
def test_a_broken_table_is_refused_in_one_line_naming_the_row(tmp_path, bad, needle):
    path = tmp_path / "causes.toml"
    path.write_text(bad)
    with pytest.raises(BenchwatchError) as exc:
        load_table(path)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_a_decisive_observation_outweighs_several_votes():
    table = LikelihoodTable(observations={
        "a": {"x": {"real": 0.8, "method_change": 0.5, "hardware": 0.5}},
        "b": {"x": {"real": 0.8, "method_change": 0.5, "hardware": 0.5}},
        "runner": {"yes": {"real": 0.01, "method_change": 0.01, "hardware": 0.6}},
    })
    votes = [Observation("a", "x", ""), Observation("b", "x", "")]
    assert explain(votes, table).cause == "real"
    ex = explain([*votes, Observation("runner", "yes", "runner changed")], table)
    assert ex.cause == "hardware" and ex.decisive is not None and ex.decisive.name == "runner"
    assert math.isclose(sum(math.exp(v - max(ex.scores.values())) for v in ex.scores.values()) * ex.confidence, 1.0,
                        rel_tol=1e-2)


# --- the footprint ---------------------------------------------------------------------------------


@pytest.mark.parametrize("head, lat, comps, want", [
    (-10, 11, (0, 0), ("agree", "flat")),  # Helion slower on both timers, baselines flat
    (-10, 0, (0, 0), ("speedup_only", "flat")),  # only the cudagraph timer moved
    (0, 12, (0, 0), ("latency_only", "unknown")),  # only do_bench moved: "Helion-only" says nothing
    (-10, -10, (0, 0), ("opposite", "flat")),  # speedup down, latency down: the timers disagree
    (-10, 0, (-10, -9), ("speedup_only", "with_helion")),  # every speedup moved: the baseline changed
    (-10, 11, (-2, -9), ("agree", "mixed")),
])
def test_kernel_pattern(head, lat, comps, want):
    assert kernel_pattern(k("x", head, lat, comps), Thresholds()) == want


def test_breadth_counts_the_kernels_that_ran_that_night_not_every_kernel_ever_seen():
    five = [k(n, -12, 13) for n in ("sum", "rms_norm", "layer_norm", "softmax")]
    by = {o.name: o for o in observe(event(five, ran=5))}
    assert by["breadth"].value == "most" and by["breadth"].facts == {"moved": 4, "ran": 5, "kernels":
                                                                     ["sum", "rms_norm", "layer_norm", "softmax"]}
    assert {o.name: o for o in observe(event(five, ran=20))}["breadth"].value == "few"


def test_directions_say_whether_helion_moved_both_ways():
    def directions(kernels):
        return {o.name: o for o in observe(event(kernels))}["directions"]

    both = [k("a", -8, 9), k("b", -7, 8), k("c", 9, -9), k("d", 0, -10), k("e", -9, 9)]  # d: latency alone
    got = directions(both)
    assert (got.value, got.facts) == ("mixed", {"faster": 2, "slower": 3})
    assert directions([k("a", -8, 9), k("b", -7, 8), k("c", 9, -9), k("d", -9, 9), k("e", -9, 9)]).value == "same"
    # a throttled machine: Helion slower on every kernel, though two speedups rose (their
    # baselines slowed down more): one way
    hot = [k("a", -8, 9), k("b", 6, 12), k("c", 5, 14), k("d", -9, 9)]
    assert (directions(hot).value, directions(hot).facts) == ("same", {"faster": 0, "slower": 4})
    assert directions([k("a", -8, 9), k("b", 7, -8)]).value == "unknown"  # too few kernels to say
    assert directions([k("a", -8, 9), k("b", 0, 0), k("c", 9, -9), k("d", 0.5, 0)]).value == "unknown"


def test_a_runner_change_where_helion_moved_both_ways_is_the_machine_not_a_weak_commit():
    # half of seventeen kernels moved, some faster, some slower, on both timers, with baselines
    # flat: beside a runner change for the platform and no commit that fits, the new machine
    moved = [k(n, -8, 9) for n in ("a", "b", "c", "d", "e")] + [k(n, 11, -10) for n in ("f", "g", "h")]
    ev = event(moved, ran=17, platform_facts=(RUNNER,), top_candidate=commit(0.1), code_commits=2)
    assert (classify_event(ev, TABLE).cause, classify_event(ev, TABLE).kind) == ("hardware", "runner")
    same = event([k(n, -8, 9) for n in "abcdefgh"], ran=17, platform_facts=(RUNNER,), top_candidate=commit(0.7))
    assert classify_event(same, TABLE).cause == "real"  # one way, beside a commit of the slice: the commit


# --- the verdict, table-driven ---------------------------------------------------------------------

CASES = {
    # a runner change for this platform settles it, whatever else votes
    "runner": (event([k(n, -8, 9) for n in ("a", "b", "c", "d")], ran=6, platform_facts=(RUNNER,),
                     top_candidate=commit(0.65)), "hardware", "runner"),
    # a runner change in the window, but only two of seventeen kernels moved and only Helion's
    # speedup: a new machine moves every kernel it runs, so the code commit is the better story
    "runner beside a narrow move": (event([k(n, -9, 10) for n in ("jsd", "rms_norm-bwd")], ran=17,
                                          platform_facts=(RUNNER,), top_candidate=commit(0.35)), "real", "code"),
    # the runner changed and six of seventeen kernels moved (the others below detection): a new
    # machine re-times what it runs unevenly, and no commit of the window fits as well
    "runner beside a third of the kernels": (event([k(n, -8, 9) for n in "abcdef"], ran=17, platform_facts=(RUNNER,),
                                                   top_candidate=commit(0.35)), "hardware", "runner"),
    # two commits of one window, each moving two kernels of seventeen, one faster and one slower,
    # baselines flat, both timers: Helion moved both ways because two changes did, not a machine
    "two commits, two ways": (event([k(n, -20, 22) for n in ("jsd", "softmax")] +
                                    [k(n, 20, -18) for n in ("cross_entropy", "layer_norm-bwd")], ran=17,
                                    top_candidate=commit(0.25), code_commits=4,
                                    harness_commit=commit(0.3, "[examples] add a kernel")), "real", "code"),
    # most kernels of one platform, latency and baselines moving, other machines quiet, no commit to blame
    "thermal": (event([k(n, -3, 12, (3, 3)) for n in "abcdefg"], ran=10, top_candidate=commit(0.2),
                      ended=True, code_commits=0), "hardware", "thermal"),
    # the same throttled week, ended unevenly: half the kernels are back (on some timer), the
    # event is still open, and no runner or toolchain changed: thermal, not a new machine
    "thermal, half back": (event([k(n, -3, 12, (3, 3)) for n in "abcdefg"], ran=10, top_candidate=commit(0.2),
                                 came_back=True, code_commits=0), "hardware", "thermal"),
    "hardware, none back": (event([k(n, -3, 12, (3, 3)) for n in "abcdefg"], ran=10, top_candidate=commit(0.2),
                                  code_commits=0), "hardware", "runner"),
    # a small platform where one Helion change hit most kernels: baselines flat, a matching commit
    "real on a small platform": (event([k(n, -12, 13) for n in ("sum", "rms_norm", "layer_norm", "vector_add")],
                                       platform="b200_cute", ran=5, top_candidate=commit(0.85)), "real", "code"),
    "real single kernel": (event([k("softmax", -9, 10)], top_candidate=commit(0.7)), "real", "code"),
    "real, autotuner heuristics": (event([k("gemm", -9, 10)], top_candidate=commit(
        0.7, "[autotuner] new heuristic", ("touches backend-neutral code helion/autotuner/ (all platforms)",))),
        "real", "heuristics"),
    # one kernel's published shape list changed and its two timers moved, with nothing in the
    # repo changing its inputs: with the platform's runner unchanged, the harness's doing ...
    "shapes, machine kept": (event([k("gemm", -9, 10, shapes=True)], ran=17, top_candidate=commit(0.1)),
                             "method_change", "shapes"),
    # ... and beside a new runner for the platform that re-timed five others, the machine's (it
    # fails or skips shapes it cannot run): not read as a harness edit to that kernel
    "shapes beside a new machine": (event([k("gemm", -9, 10, shapes=True)] + [k(n, -8, 9) for n in "abcde"],
                                          ran=17, platform_facts=(RUNNER,), top_candidate=commit(0.35)),
                                    "hardware", "runner"),
    # the kernel's own cudagraph flag changed in the window: only the cudagraph timer moved
    "cudagraph": (event([k("rms_norm-bwd", -30, 0, (-30, -30), facts=(CUDAGRAPH,))], top_candidate=commit(0.5)),
                  "method_change", "cudagraph"),
    # torch pin: every speedup moves together, Helion's latency does not
    "baseline pin": (event([k(n, 9, 0, (9, 8)) for n in ("a", "b")], platform_facts=(PIN,),
                           top_candidate=commit(0.3)), "method_change", "baseline"),
    # every speedup of one kernel moved and Helion's latency did not, in a window that bumps
    # torch_tpu (the runtime the TPU baselines run on too), touches the harness, and changes
    # nothing that defines the baselines: the new toolchain moved the baselines (hardware)
    "baselines on a new toolchain": (event([k("softmax", 9, 0, (9, 8), compile_pct=0)], platform="tpu", ran=10,
                                           platform_facts=(TPU_PIN,), top_candidate=commit(0.1),
                                           harness_commit=commit(0.4, "[Pallas] benchmark tweak")),
                                     "hardware", "driver"),
    # the same footprint with the torch pin bumped in the same window: the baselines changed
    "baselines on a new toolchain and a new pin": (event([k("softmax", 9, 0, (9, 8), compile_pct=0)], platform="tpu",
                                                         ran=10, platform_facts=(TPU_PIN, PIN), top_candidate=commit(0.1),
                                                         harness_commit=commit(0.4, "[Pallas] benchmark tweak")),
                                                   "method_change", "baseline"),
    # capped autotune: compile time collapses the same night, Helion a bit slower
    "autotune": (event([k(n, -6, 6, compile_pct=-70) for n in ("a", "b", "c")], platform_facts=(AUTOTUNE,),
                       top_candidate=commit(0.45)), "method_change", "autotune"),
    "shapes": (event([k("rope", 15, -20, (14, 15), shapes=True)], top_candidate=commit(0.5)),
               "method_change", "shapes"),
    # the kernel's baseline implementation was swapped in run.py: every speedup of it moved, and
    # a strong-looking code commit in the window does not outvote that
    "baseline implementation": (event([k("jsd", 12, 0, (11, 12), facts=(BASELINE_IMPL,))],
                                      top_candidate=commit(0.7)), "method_change", "baseline"),
    # the kernel's benchmark arguments changed (other inputs): every timer and comparator moved,
    # and the commit that changed them is in the window
    "benchmark arguments": (event([k("gemm", -15, 25, (-9, 4), facts=(BENCH_ARGS,))], top_candidate=commit(0.7),
                                  harness_commit=commit(0.45, "[Benchmark CI] Use `--non-square` flag for gemm")),
                            "method_change", "shapes"),
    # one kernel, only its cudagraph timer moved, and nothing in the window says how its
    # measurement changed: a flaky measurement, not a method change to re-baseline
    "one timer of one kernel, unexplained": (event([k("softmax", -9, 0)], top_candidate=commit(0.1)),
                                             "noise", "outlier"),
    # the same with a harness commit in the window: that is where a person looks, a method change
    # the same with a harness commit in the window that says it changed a timer: that is where a
    # person looks, a method change of kind timer
    "one timer of one kernel, harness commit": (event([k("softmax", -9, 0)], top_candidate=commit(0.1),
                                                      harness_commit=commit(0.5, "[benchmark] timer"),
                                                      harness_timer=True),
                                                "method_change", "timer"),
    # a harness commit that names no timer: one timer moving alone is how any method change
    # shows, so the kind is the harness, not the timer
    "one timer of one kernel, other harness commit": (
        event([k("softmax", -9, 0)], top_candidate=commit(0.1),
              harness_commit=commit(0.5, "[Benchmarking] Default to benchmark subprocess")),
        "method_change", "harness"),
    # the benchmark command changed (each kernel run once instead of twice): a harness change,
    # though every speedup moved with Helion's
    "benchmark command": (event([k(n, -9, 0, (-9, -8)) for n in ("a", "b", "c")], platform_facts=(COMMAND,),
                                top_candidate=commit(0.3)), "method_change", "harness"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_event_verdict(name):
    ev, cause, kind = CASES[name]
    v = classify_event(ev, TABLE)
    assert (v.cause, v.kind) == (cause, kind), [(e.check, e.verdict, e.detail) for e in v.evidence]
    assert v.evidence[0].check == "event" and v.evidence[0].facts["kind"] == kind
    if cause == "real":
        assert v.culprit is not None
    else:
        assert v.culprit is None


def test_other_platforms_moving_with_the_same_machine_change_do_not_count_against_it():
    """A CUDA image bump for every NVIDIA lane moved 4 of b200's 17 kernels and h100 the same
    night: h100 moving is what the image change predicts, not a sign the cause is elsewhere."""
    image = FactChange("toolchain", "benchmark_dispatch.yml: b200 toolchain cu128 -> cu130", "hardware",
                       ".github/workflows/benchmark_dispatch.yml", "cu128", "cu130")
    moved = [k(n, -3, 12, (3, 3)) for n in ("gemm", "softmax", "rms_norm", "jsd")]
    alone = event(moved, ran=17, platform_facts=(image,), elsewhere=("h100",), top_candidate=commit(0.45))
    shared = event(moved, ran=17, platform_facts=(image,), elsewhere=("h100",), elsewhere_same_change=("h100",),
                   top_candidate=commit(0.45))
    by = {o.name: o for o in observe(shared)}
    assert by["elsewhere"].value == "same_change" and {o.name: o for o in observe(alone)}["elsewhere"].value == "also_moved"
    a, b = classify_event(alone, TABLE), classify_event(shared, TABLE)
    gain = lambda v: v.explanation.scores["hardware"] - v.explanation.scores["real"]  # noqa: E731
    row = TABLE.observations["elsewhere"]
    want = (math.log(row["same_change"]["hardware"] / row["same_change"]["real"])
            - math.log(row["also_moved"]["hardware"] / row["also_moved"]["real"]))
    assert want > 1.0 and gain(b) - gain(a) == pytest.approx(want, abs=0.01)


def test_an_autotune_change_is_read_with_the_footprint_it_predicts():
    """The autotune settings changed in the window (27b93292's fixed seed): Helion itself moved on
    both timers, the baselines stayed flat and compile time did not collapse, a commit of the
    slice is in the window. That is the footprint an autotune change leaves (another config
    runs), so it does not count against the method change; without the settings fact the same
    footprint is a real change, and with a pin changed as well it is weighed as before."""
    helion_only = [k(n, -9, 10) for n in ("gemm", "softmax", "rms_norm")]
    seed = FactChange("autotune", "benchmark_nightly.yml: autotune settings (none) -> HELION_AUTOTUNE_RANDOM_SEED=123456",
                      "method_change", ".github/workflows/benchmark_nightly.yml", "(none)",
                      "HELION_AUTOTUNE_RANDOM_SEED=123456")
    settings_commit = commit(0.55, "Use fixed seed for nightly benchmarks (#2561)")
    with_fact = classify_event(event(helion_only, platform_facts=(seed,), top_candidate=commit(0.65),
                                     harness_commit=settings_commit), TABLE)
    assert (with_fact.cause, with_fact.kind) == ("method_change", "autotune")
    without = classify_event(event(helion_only, top_candidate=commit(0.65), harness_commit=settings_commit), TABLE)
    assert without.cause == "real"
    # the same event weighed as a method change usually looks (no mechanism rows): real
    plain = LikelihoodTable(observations=TABLE.observations, explain=TABLE.explain)
    assert classify_event(event(helion_only, platform_facts=(seed,), top_candidate=commit(0.65),
                                harness_commit=settings_commit), plain).cause == "real"
    both = event(helion_only, platform_facts=(seed, PIN), top_candidate=commit(0.65))
    from service.classify.explain import mechanism_of

    assert mechanism_of(observe(both), TABLE) is None
    assert mechanism_of(observe(event(helion_only, platform_facts=(seed,))), TABLE) == "autotune"


def test_a_pretuned_pin_change_predicts_helion_against_every_baseline_moving():
    """The pretuned job's torch pin moved (76df68c9: 2.11 -> 2.13) and Helion against every
    baseline of most kernels moved -9%, as it would if Helion itself had: the pin re-measures
    every baseline built on torch, so that footprint does not count against the method change.
    Without the pin the same footprint is a real change."""
    pin = FactChange("baseline_pin", "benchmark_pretuned.yml: h100 torch==2.11.* -> torch==2.13.*", "method_change",
                     ".github/workflows/benchmark_pretuned.yml", "torch==2.11.*", "torch==2.13.*")
    moved = [KernelSteps(n, step(-9), None, (step(-9), step(-9))) for n in ("rms_norm", "rope", "softmax", "layer_norm")]
    moved += [KernelSteps("scaled_mm", step(-9), None, (step(-9), step(0)))]
    kw = dict(source="pretuned", platform="h100", ran=6, top_candidate=commit(0.55, "faster launches"),
              harness_commit=commit(0.3, "[triton] Disable warp-specialized NVFP4 GEMV config"))
    with_pin = classify_event(event(moved, platform_facts=(pin,), **kw), TABLE)
    assert (with_pin.cause, with_pin.kind) == ("method_change", "baseline")
    by = {e.check: e for e in with_pin.evidence}
    assert by["per_baseline"].facts["value"] == "all_moved"
    assert classify_event(event(moved, **kw), TABLE).cause == "real"
    # weighed as a method change usually looks (a baseline changed: only the headline moves): real
    plain = LikelihoodTable(observations=TABLE.observations, explain=TABLE.explain,
                            mechanisms={m: r for m, r in TABLE.mechanisms.items() if m != "baseline_pin"})
    assert classify_event(event(moved, platform_facts=(pin,), **kw), plain).cause == "real"


def test_a_mechanism_row_of_its_own_names_values_of_its_observation():
    with pytest.raises(Exception, match="all_movd is not a value of observation per_baseline"):
        LikelihoodTable(observations=TABLE.observations,
                        mechanisms={"baseline_pin": {"per_baseline": {"all_movd": 0.5}}})
    with pytest.raises(Exception, match="positive"):
        LikelihoodTable(observations=TABLE.observations,
                        mechanisms={"baseline_pin": {"per_baseline": {"all_moved": 0}}})


def test_a_mechanism_row_must_name_a_cause():
    with pytest.raises(Exception, match="must name one of"):
        LikelihoodTable(observations={}, mechanisms={"autotune": {"timers": "hardwre"}})


def test_the_decisive_fact_is_named_and_is_the_change_fact():
    v = classify_event(CASES["runner"][0], TABLE)
    assert v.explanation.decisive is not None and v.explanation.decisive.name == "platform_change"
    assert v.change_fact is RUNNER
    assert "decisive" in v.evidence[0].detail


# --- members ---------------------------------------------------------------------------------------


def move(kernel: str = "rms_norm-bwd", before: float = 1.2, after: float = 0.9) -> Move:
    ref = RunRef("1", "a" * 8, "a" * 40, T, before)
    return Move(SeriesKey("dashboard", "b200", kernel, "helion_speedup_geomean"), ref, ref, before, after,
                (after - before) / before * 100, "regression", 12.0, "confirmed", 6, 0.01)


def test_members_inherit_the_event_but_a_kernel_whose_own_measurement_changed_keeps_its_cause():
    v = classify_event(CASES["real single kernel"][0], TABLE)
    same = member_classification(v, move("softmax"))
    assert (same.cause, same.kind) == ("real", "code") and same.culprit is not None
    own = member_classification(v, move(), own_facts=(CUDAGRAPH,))
    assert (own.cause, own.kind) == ("method_change", "cudagraph") and own.culprit is None
    assert own.evidence[0].check == "own_evidence"
    swapped = member_classification(v, move("jsd"), own_facts=(BASELINE_IMPL,))
    assert (swapped.cause, swapped.kind) == ("method_change", "baseline")
    # the cudagraph-timed side (before) is the honest one
    assert own.true_speedup == pytest.approx(1.2)


@pytest.mark.parametrize("cause, kind, before, after, want", [
    ("real", "code", 1.2, 0.9, 0.9), ("real", "code", 0.9, 1.2, 1.2),
    # hardware: the healthy side: before a regression, after a lasting gain from the machine
    ("hardware", "runner", 1.2, 0.9, 1.2), ("hardware", "driver/toolchain", 0.9, 1.2, 1.2),
    # a method change: the level the benchmark measures from now on
    ("method_change", "baseline", 1.2, 0.9, 0.9), ("method_change", "baseline", 0.9, 1.2, 1.2),
    ("method_change", "shapes", 1.2, 0.9, 0.9), ("method_change", "autotune", 1.2, 0.9, 0.9),
    ("method_change", "timer", 0.9, 1.2, 1.2), ("noise", "blip", 1.2, 0.9, 1.2),
])
def test_honest_speedup_side(cause, kind, before, after, want):
    value, reason = honest_speedup(move(before=before, after=after), cause, kind)
    assert value == pytest.approx(want) and reason


def test_honest_speedup_of_a_hardware_episode_that_ended_is_the_level_before():
    """A machine that ran fast for a week and came back (an episode) was never the healthy state."""
    gain = replace(move(before=0.9, after=1.2), state=MoveState.ENDED)
    assert honest_speedup(gain, "hardware", "thermal")[0] == pytest.approx(0.9)


def test_platforms_that_share_a_global_change_are_decided_together():
    """The autotune budget capped on every platform one night: a platform whose own footprint
    looks like Helion got slower takes the cause the shared change explains on all of them."""
    # the same window on every platform: the same (weak) best commit
    looks_real = event([k("gemm", -9, 10, compile_pct=-10)], platform="h100", platform_facts=(AUTOTUNE,),
                       top_candidate=commit(0.45))
    alone = classify_event(looks_real, TABLE)
    assert alone.cause == "real"
    others = classify_event(CASES["autotune"][0], TABLE)
    # three platforms where the cap shows plainly (compile time collapsed), one where it does not
    pooled = {c: alone.explanation.scores[c] + 3 * others.explanation.scores[c] for c in alone.explanation.scores}
    assert max(pooled, key=pooled.get) == "method_change"
    together = classify_event(looks_real, TABLE, pooled=pooled)
    assert (together.cause, together.kind) == ("method_change", "autotune")
    assert together.culprit is None and "every platform" in together.evidence[0].detail


def test_a_platform_whose_own_footprint_contradicts_the_shared_change_keeps_its_own_verdict():
    """The night a baseline pin moved every kernel's baselines on three platforms, one CuTe
    kernel's Helion time moved on both timers while its baselines stayed flat, with a strong
    commit in the window: that platform is not part of the pin's change and keeps its own cause.
    A platform that merely leans another way (a near tie) is still decided with the others."""
    from service.classify.event import pool_scores

    pin_moved = [classify_event(event([k(f"k{i}", -8, 0, comps=(-8, -8)) for i in range(5)], platform=p,
                                      platform_facts=(PIN,)), TABLE) for p in ("h100", "b200", "mi350x")]
    assert all(v.cause == "method_change" for v in pin_moved)
    helion_moved = classify_event(event([k("sum", -10, 11)], platform="b200_cute", platform_facts=(PIN,),
                                        top_candidate=commit(0.9)), TABLE)
    leans_real = classify_event(event([k("gemm", -9, 10, comps=(-9, 0))], platform="tpu", platform_facts=(PIN,),
                                      top_candidate=commit(0.45)), TABLE)  # one of its baselines moved too
    own = {i: v.explanation.scores for i, v in enumerate([*pin_moved, helion_moved, leans_real])}
    mine, lean = own[3], own[4]
    assert mine["real"] - mine["method_change"] >= math.log(4) > lean["real"] - lean["method_change"] > 0
    pooled = pool_scores(own, 4.0)
    assert set(pooled) == {0, 1, 2, 4}
    assert all(max(t, key=t.get) == "method_change" for t in pooled.values())
    assert pooled[0] == {c: sum(own[i][c] for i in (0, 1, 2, 4)) for c in own[0]}
    assert set(pool_scores(own, 1e9)) == set(own)  # the old rule: every platform in the sum
    assert pool_scores({0: own[0], 3: own[3]}, 4.0) == {}  # one left: no pool, each its own


def test_the_table_is_read_from_the_config_folder_of_benchwatch_home(tmp_path, monkeypatch):
    """In the image the package is installed elsewhere; config/ sits in BENCHWATCH_HOME."""
    from service.classify.explain import default_table_path

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "causes.toml").write_text((default_table_path()).read_text())
    monkeypatch.setenv("BENCHWATCH_HOME", str(tmp_path))
    assert default_table_path() == tmp_path / "config" / "causes.toml"
    assert load_table().observations == TABLE.observations


def test_one_kernel_that_alone_moved_on_an_unchanged_machine_is_noise_not_hardware():
    """One of 17 kernels stepped 5.5% over two nightlies that ran the same Helion, or came back a
    week later, with no runner, image or pin changed for the platform: nothing says the machine
    changed, and a machine re-times every kernel it runs. With a new runner for the platform, or on
    five kernels, the same evidence is a hardware issue."""
    lone = dict(ran=17, code_commits=0, window_known=True)
    for extra in ({"same_sha": True}, {"ended": True, "came_back": True}):
        v = classify_event(event([k("gemm", -5.5)], **lone, **extra), TABLE)
        assert v.cause == "noise" and "alone moved" in v.evidence[0].detail, extra
        assert classify_event(event([k("gemm", -5.5)], **lone, **extra, platform_facts=(RUNNER,)),
                              TABLE).cause == "hardware"
        many = classify_event(event([k(f"k{i}", -5.5, 6, comps=(-5, -5)) for i in range(5)], **lone, **extra), TABLE)
        assert (many.cause, many.kind) == ("hardware", "thermal"), extra


def test_two_kernels_that_disagree_on_their_timers_say_nothing_about_the_event():
    """One kernel whose timers agree and one whose latency stayed flat: a tie, so the timers
    observation is unknown (neutral), whichever kernel is listed first."""
    agree, lone = k("a", -9, 10), k("b", -9, 0)
    for pair in ((agree, lone), (lone, agree)):
        by = {o.name: o for o in observe(event(pair))}
        assert by["timers"].value == "unknown" and sum(by["timers"].facts["counts"].values()) == 2
    assert {o.name: o for o in observe(event([agree, lone, k("c", -9, 11)]))}["timers"].value != "unknown"


def test_compile_time_alone_on_nearly_every_kernel_is_a_compile_step_despite_a_stray_speed_move():
    """Eleven of thirteen kernels moved compile time alone; two moved speed that night (another
    event a night away). A person reads a compile-time step, not a speed event."""
    alone = [k(f"k{i}", 0.0, 0.0, compile_pct=80) for i in range(11)]
    stray = [k(n, -12, 0.0, compile_pct=80) for n in ("layer_norm-bwd", "rms_norm-bwd")]
    by = {o.name: o for o in observe(event(alone + stray, ran=13))}
    assert by["metrics"].value == "compile_only" and by["metrics"].facts == {"kernels": 11}
    # half the kernels moved speed: a speed event with compile time beside it
    half = [k(f"k{i}", 0.0, 0.0, compile_pct=80) for i in range(3)] + [k(f"s{i}", -12, 13, compile_pct=80)
                                                                          for i in range(3)]
    assert {o.name: o for o in observe(event(half, ran=13))}["metrics"].value == "performance"
    assert {o.name: o for o in observe(event(alone, ran=13))}["metrics"].value == "compile_only"


def test_a_verdict_is_stored_and_read_back_in_one_shape():
    """`investigate` shows a stored verdict and a fresh one alike: the alert columns read back are
    exactly the fields a classification is stored as."""
    from service.store.alerts_writer import VERDICT_COLUMNS, classification_fields
    from service.store.tables import Alert

    c = member_classification(classify_event(CASES["real single kernel"][0], TABLE), move("softmax"))
    assert tuple(classification_fields(c)) == VERDICT_COLUMNS
    assert set(VERDICT_COLUMNS) <= set(Alert.__table__.columns.keys())


def test_a_toolchain_pin_is_a_lead_that_a_strong_code_commit_can_outweigh():
    """A pin file of the platform's runtime moved in the window (torch_tpu is bumped every week
    or two): with no Helion commit of the slice it explains the move, a machine change; beside a
    strong commit of the slice it does not settle it, as a new image or runner label would."""
    pin = FactChange("toolchain_pin", ".github/ci_commit_pins/torch_tpu.txt: tpu toolchain pin a -> b", "hardware",
                     ".github/ci_commit_pins/torch_tpu.txt", "a", "b")
    image = FactChange("toolchain", "benchmark_dispatch.yml: tpu toolchain image a -> b", "hardware",
                       ".github/workflows/benchmark_dispatch.yml", "a", "b")
    moved = [k(n, -8, 9) for n in ("gemm", "softmax", "rms_norm", "jsd", "welford", "sum")]
    by = {o.name: o for o in observe(event(moved, ran=10, platform="tpu", platform_facts=(pin,)))}
    assert by["platform_change"].value == "toolchain_pin"
    lone = classify_event(event(moved, ran=10, platform="tpu", platform_facts=(pin,), top_candidate=commit(0.1)), TABLE)
    assert (lone.cause, lone.kind) == ("hardware", "driver")
    beside = event(moved, ran=10, platform="tpu", platform_facts=(pin,), top_candidate=commit(0.9, "[pallas] gather"))
    assert classify_event(beside, TABLE).cause == "real"
    imaged = event(moved, ran=10, platform="tpu", platform_facts=(image,), top_candidate=commit(0.9, "[pallas] gather"))
    assert classify_event(imaged, TABLE).cause == "hardware"


def test_compile_time_alone_is_put_on_what_can_move_it_not_a_baseline_pin_beside_it():
    """A window holds a tritonbench (baseline) pin and new autotune settings, and only compile
    time stepped on every kernel: the autotune settings are the change and its kind."""
    moved = [k(n, 0, 0, compile_pct=35) for n in ("gemm", "softmax", "rms_norm", "jsd", "welford")]
    both = event(moved, ran=5, platform_facts=(PIN, AUTOTUNE))
    v = classify_event(both, TABLE)
    assert {o.name: o.value for o in observe(both)}["metrics"] == "compile_only"
    assert (v.cause, v.kind, v.change_fact) == ("method_change", "autotune", AUTOTUNE)
    command = event(moved, ran=5, platform_facts=(PIN, COMMAND))
    assert (classify_event(command, TABLE).kind, classify_event(command, TABLE).change_fact) == ("harness", COMMAND)
    # the speedups moved too: the pin is what moves them
    speed = event([k(n, -8, 0, (-8, -8), compile_pct=35) for n in ("gemm", "softmax", "rms_norm")], ran=5,
                  platform_facts=(PIN, AUTOTUNE))
    assert classify_event(speed, TABLE).kind == "baseline"


def test_another_platform_shares_a_machine_change_only_when_it_is_read_from_the_same_file():
    from service.classify.footprint import shares_machine_change

    cuda = lambda alias: FactChange("toolchain", f"benchmark_dispatch.yml: {alias} image cu128 -> cu130",  # noqa: E731
                                    "hardware", ".github/workflows/benchmark_dispatch.yml", "cu128", "cu130")
    cute = FactChange("toolchain_pin", "nvidia_cutlass_dsl.txt: 4.5.1 -> 4.5.2", "hardware",
                      ".github/ci_commit_pins/nvidia_cutlass_dsl.txt", "4.5.1", "4.5.2")
    tpu = FactChange("toolchain_pin", "torch_tpu.txt: a -> b", "hardware", ".github/ci_commit_pins/torch_tpu.txt", "a", "b")
    assert shares_machine_change([cuda("b200")], [cuda("h100")])
    assert not shares_machine_change([cute], [tpu])  # two pins, two changes
    assert not shares_machine_change([cuda("b200")], [AUTOTUNE])  # not a machine change
    assert not shares_machine_change([AUTOTUNE], [cuda("h100")])


def test_one_kernels_regenerated_configs_do_not_explain_the_kernels_that_moved_with_it():
    """52326a08 cleared L2 in the pretuned timer and regenerated silu_mul_fp8's configs: seven
    kernels moved. The configs explain an event of their own kernels (half or more), not six
    others; the timer change of the same window is left to explain those."""
    from service.classify.footprint import configs_regenerated

    config = FactChange("pretuned_config", "silu_mul_fp8 sm90 configs regenerated", "real",
                        "pretuned_kernels/silu_mul_fp8/_helion_aot_silu_mul_fp8_cuda_sm90.py", kernels=("silu_mul_fp8",))
    regen = k("silu_mul_fp8", -8.0, facts=(config,))
    others = [k(f"k{i}", -8.0) for i in range(6)]
    assert configs_regenerated([regen])
    assert configs_regenerated([regen, others[0]])
    assert not configs_regenerated([regen, *others])
    assert not configs_regenerated([])


def test_a_member_whose_own_configs_were_regenerated_is_a_real_change_of_its_own():
    """In a pretuned timer event, the kernel whose checked-in configs the same window regenerated
    is real (heuristics), its culprit the commit that regenerated them, its honest speedup the
    level after; the decisive fact is its own."""
    from service.classify.event import own_configs_member

    config = FactChange("pretuned_config", "silu_mul_fp8's configs were regenerated", "real",
                        "pretuned_kernels/silu_mul_fp8/_helion_aot_silu_mul_fp8_cuda_sm90.py", kernels=("silu_mul_fp8",))
    m = Move(SeriesKey("pretuned", "h100", "silu_mul_fp8", "geomean"), RunRef("1", "a" * 8, "a" * 40, T, 1.2),
             RunRef("2", "b" * 8, "b" * 40, T, 1.0), 1.2, 1.0, -16.7, "regression", 9.0, MoveState.CONFIRMED, 6, 0.01)
    v = classify_event(CASES["benchmark command"][0], TABLE)
    assert v.cause == "method_change"
    timer = replace(member_classification(v, m), change_commit=commit(0.6))
    got = own_configs_member(timer, m, config, commit(0.9, "[pretuned_kernels] clear L2 cache in cudagraph timing"))
    assert (got.cause, got.kind) == ("real", "heuristics")
    assert got.culprit is not None and got.culprit.subject.startswith("[pretuned_kernels] clear L2")
    assert got.change_commit is None and got.true_speedup == 1.0
    assert got.evidence[0].check == "own_evidence" and got.evidence[0].facts["decisive"]


def test_compile_time_falling_with_nothing_in_the_benchmark_to_cap_it_is_helions_own_autotuner():
    """Three gemm kernels 20% slower on both timers, baselines flat, compile time down 35%: with the
    autotune budget changed in the window that is a capped autotune (a method change); with no
    setting, command, timer flag or harness commit there, nothing in the benchmark capped it, and
    the autotuner commit of the window (44bcf6fa widened the block sizes it may try) is the
    likelier story: real, its kind the autotuner's heuristics."""
    kernels = [k(n, -20, 22, compile_pct=-35) for n in ("gemm", "grouped_gemm", "int4_gemm")]
    tuner = commit(0.35, "[autotuner] allow block sizes to overshoot small tiled dimensions",
                   ("changes Helion code (3 files)", "touches backend-neutral code helion/autotuner/ (all platforms)"))
    capped = classify_event(event(kernels, platform_facts=(AUTOTUNE,), top_candidate=tuner), TABLE)
    assert (capped.cause, capped.kind) == ("method_change", "autotune")
    helion = event(kernels, top_candidate=tuner)
    assert ("compile", "dropped_in_helion") in {(o.name, o.value) for o in observe(helion, Thresholds())}
    v = classify_event(helion, TABLE)
    assert (v.cause, v.kind) == ("real", "heuristics")


def test_compile_time_moving_with_the_speed_either_way_is_the_autotuner_at_work():
    """Most kernels' compile time (most of it autotuning) stepping 15% or more with them, up or
    down, says the autotuner searched differently: the ranking should open autotuner commits
    first, and a real event of that footprint is of the heuristics kind even where its best
    candidate is an ordinary code commit. A few percent, or one kernel of three, is not it."""
    from service.classify.footprint import autotuning_moved

    th = Thresholds()
    rose = [k(n, -12, 13, compile_pct=22) for n in ("jsd", "layer_norm", "gemm")]
    fell = [k(n, -12, 13, compile_pct=-19) for n in ("jsd", "layer_norm", "gemm")]
    small = [k(n, -12, 13, compile_pct=-6) for n in ("jsd", "layer_norm", "gemm")]
    one = [k("jsd", -12, 13, compile_pct=30), k("layer_norm", -12, 13, compile_pct=1), k("gemm", -12, 13, compile_pct=0)]
    unknown = [k(n, -12, 13) for n in ("jsd", "layer_norm", "gemm")]
    assert autotuning_moved(rose, th) and autotuning_moved(fell, th)
    assert not any(autotuning_moved(ks, th) for ks in (small, one, unknown))
    assert not autotuning_moved(rose, Thresholds(autotune_moved_pct=25.0))
    codegen = commit(0.35, "Improve DeviceIR.get_root()", ("changes Helion code (1 file)",
                                                            "touches backend-neutral code helion/_compiler/ (all platforms)"))
    with_tuning = classify_event(event(rose, top_candidate=codegen, autotuning=True), TABLE)
    without = classify_event(event(small, top_candidate=codegen), TABLE)
    assert (with_tuning.cause, with_tuning.kind) == ("real", "heuristics")
    assert (without.cause, without.kind) == ("real", "code")


def test_a_harness_commit_that_says_it_changed_a_timer_is_the_authors_word_for_a_method_change():
    """Compile time alone stepped +56% on five of thirteen mi350x kernels, other platforms moved
    too, and a Helion commit of some weight is in the window. Beside 22d88942 "Fix compile time
    measurements" (its subject names a measurement) that is how compile time is measured now;
    beside a harness commit that says nothing of timers it stays a change in Helion."""
    moved = [k(n, 0.0, 0.0, compile_pct=56) for n in ("gemm", "softmax", "rms_norm", "jsd", "welford")]
    kw = dict(platform="mi350x", ran=13, elsewhere=("b200", "h100"), code_commits=13,
              top_candidate=commit(0.55, "Add `helion.from_cache()` for FiniteSearch warm-start (#2079)"))
    timer = event(moved, harness_commit=commit(0.8, "Fix compile time measurements (#2188)"), harness_timer=True, **kw)
    by = {o.name: o for o in observe(timer)}
    assert by["harness_commit"].value == "timer" and "says it changed a timer" in by["harness_commit"].detail
    v = classify_event(timer, TABLE)
    assert (v.cause, v.kind) == ("method_change", "timer")
    other = event(moved, harness_commit=commit(0.8, "[benchmarks] Fix flash_attention accuracy (#2691)"), **kw)
    assert {o.name: o.value for o in observe(other)}["harness_commit"] == "present"
    assert classify_event(other, TABLE).cause == "real"
