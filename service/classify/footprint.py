"""An event's footprint: what moved, where, on which timers, and what changed in the repo.

An event is the moves of one source on one platform on one nightly (±1). A person triaging it
looks at the whole footprint at once (which kernels, which timers, did the baselines move, did
the other machines move, what changed in the window for *this* platform and *these* kernels);
`observe` turns that into the observations `explain` weighs. Pure: the detect pass and
`investigate` gather `EventInput`, tests build it by hand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from service.classify.explain import Observation
from service.classify.levels import Step
from service.records import FactChange, RankedCommit, Revert

# facts about one kernel's measurement (they settle a method change for that kernel)
KERNEL_METHOD_FACTS = frozenset({
    "cudagraph_flag", "num_inputs", "linattn_shapes", "kernel_dropped", "kernel_added", "bench_args",
    "baseline_impl", "pretuned_baseline", "pretuned_cudagraph",
})
# the mechanism (the `kind` under method_change) each kernel fact names; a kernel fact not
# listed here changes the kernel's inputs: "shapes"
FACT_MECHANISM = {"cudagraph_flag": "cudagraph", "pretuned_cudagraph": "cudagraph",
                  "pretuned_baseline": "baseline", "baseline_impl": "baseline"}
# facts about how every kernel of the platform is measured
GLOBAL_METHOD_FACTS = frozenset({"baseline_pin", "autotune", "latency_mode", "bench_command", "pretuned_timer"})
# observation values that name a way the measurement changed (as opposed to timers disagreeing)
METHOD_MECHANISMS = frozenset({
    ("kernel_method", "all"), ("kernel_method", "some"), ("global_method", "present"),
    ("harness_commit", "present"), ("harness_commit", "timer"), ("attributes", "method"), ("shapes", "changed"),
    ("compile", "dropped"), ("compile", "rose"), ("comparators", "with_helion"), ("per_baseline", "headline_only"),
})
METHOD_ATTRIBUTES = frozenset({"baseline_label", "cudagraph", "baselines"})
HARDWARE_ATTRIBUTES = frozenset({"platform", "compute"})
# Compile time moved alone on at least this many kernels for each kernel whose speed moved: the
# event is a compile-time step (how compile time is measured, or autotuning), not a speed event.
COMPILE_ALONE_RATIO = 4
# Helion moved both ways when the smaller side holds at least this share of the kernels (and two)
MIXED_SHARE = 0.25


@dataclass(frozen=True)
class Thresholds:
    """When a sibling series counts as having moved (from `[classify]`)."""

    sigma: float = 3.0  # its own noise sigmas
    min_pct: float = 2.0  # and at least this many percent
    ratio: float = 0.5  # "with Helion": at least this share of Helion's own step
    compile_drop_pct: float = 25.0  # compile time fell by this much: a capped autotune
    autotune_moved_pct: float = 15.0  # compile time moved this much either way: autotuning changed
    most_fraction: float = 0.6  # breadth "most": this share of the kernels that ran ...
    most_min_kernels: int = 3  # ... and at least this many kernels
    machine_fraction: float = 0.3  # a new machine explains a move of this share (and most_min_kernels)
    strong_culprit: float = 0.6
    weak_culprit: float = 0.4
    report_culprit: float = 0.05  # a real event names its best commit from this score on


@dataclass(frozen=True)
class KernelSteps:
    """One kernel of the event: its metrics' levels either side of the nightly."""

    kernel: str
    headline: Step | None  # helion_speedup_geomean / pretuned geomean
    latency: Step | None = None  # dashboard do_bench latency
    comparators: tuple[Step | None, ...] = ()  # triton/torch.compile speedups, or pretuned per-baseline
    compile: Step | None = None
    facts: tuple[FactChange, ...] = ()  # repo facts for this kernel (already scoped to the platform)
    shapes_changed: bool | None = None
    attributes: tuple[str, ...] = ()  # track attributes that changed across the step


@dataclass(frozen=True)
class EventInput:
    source: str
    platform: str
    kernels: tuple[KernelSteps, ...]
    ran: int  # kernels of this platform with a value on the first-bad nightly
    elsewhere: tuple[str, ...] = ()  # other hardware families where 2+ kernels moved that night
    elsewhere_same_change: tuple[str, ...] = ()  # ... of those, the ones with a runner/image change as well
    platform_facts: tuple[FactChange, ...] = ()  # facts about the platform (runner, pins, autotune)
    top_candidate: RankedCommit | None = None
    window_known: bool = False
    same_sha: bool = False
    code_commits: int = 0
    autotuning: bool = False  # most kernels' compile time moved with them (`autotuning_moved`)
    ended: bool = False  # the level came back (an episode with an end)
    came_back: bool = False  # at least half the kernels came back on some metric (the kind: thermal)
    config_regenerated: bool = False  # at least half the kernels' checked-in configs were regenerated
    window_problem: str | None = None  # why the window is unknown ("... fetch it"), when it is
    harness_commit: RankedCommit | None = None  # a commit of the window that changes the benchmark harness
    harness_timer: bool = False  # ... and its subject says it changed a timer
    # the level came back after a commit undid one of the window's (`culprit.reverts.Revert`)
    revert: Revert | None = None


# the machine's compiler and runtime (CUDA/ROCm image or runtime, the CuTe DSL, torch_tpu)
TOOLCHAIN_FACTS = frozenset({"toolchain", "toolchain_pin"})
MACHINE_FACTS = frozenset({"runner_label"}) | TOOLCHAIN_FACTS
# what moves Helion's compile time alone, and the kind each is: how long autotuning may search,
# how often each kernel is run, the timer flags (`--measure-compile-time`). A baseline pin moves
# only the speedups. Most telling first: it names both the kind and the change commit.
COMPILE_MECHANISMS = (("autotune", "autotune"), ("bench_command", "harness"), ("latency_mode", "timer"))
COMPILE_FACTS = tuple(fact for fact, _ in COMPILE_MECHANISMS)  # most telling first


def own_method_fact(facts: Iterable[FactChange], kernel: str) -> FactChange | None:
    """A change to how this one kernel is measured (strong evidence of its own)."""
    return next((f for f in facts if f.kind in KERNEL_METHOD_FACTS and (f.kernels is None or kernel in f.kernels)),
                None)


def own_configs_fact(facts: Iterable[FactChange], kernel: str) -> FactChange | None:
    """This kernel's checked-in Helion configs were regenerated (strong evidence of its own)."""
    return next((f for f in facts if f.kind == "pretuned_config" and (f.kernels is None or kernel in f.kernels)),
                None)


def announces_step(facts: Iterable[FactChange], kernel: str) -> FactChange | None:
    """A fact that says this kernel's own numbers changed on the nightly: how it is measured
    (`own_method_fact`, but not its joining or leaving a platform's list, which starts or ends a
    series rather than stepping it) or its checked-in configs regenerated."""
    facts = [f for f in facts if f.kind not in ("kernel_added", "kernel_dropped")]
    return own_method_fact(facts, kernel) or own_configs_fact(facts, kernel)


def new_machine(facts: Iterable[FactChange]) -> FactChange | None:
    """The platform's new machine in the window, when it has one: a runner label, a CUDA/ROCm
    image or runtime, or its compiler DSL or runtime pin (platform-wide facts only)."""
    return next((f for f in facts if f.kernels is None and f.kind in MACHINE_FACTS), None)


def configs_regenerated(kernels: Sequence[KernelSteps]) -> bool:
    """Were the checked-in configs regenerated for at least half the event's kernels? New configs
    explain the kernels they were made for: one kernel's say nothing of six others that moved
    with it on a timer change of the same commit (52326a08 cleared L2 in the pretuned timer and
    regenerated silu_mul_fp8's configs)."""
    regenerated = sum(1 for k in kernels if any(f.kind == "pretuned_config" for f in k.facts))
    return len(kernels) > 0 and 2 * regenerated >= len(kernels)


def shares_machine_change(mine: Iterable[FactChange], theirs: Iterable[FactChange]) -> bool:
    """Does another platform's window hold the same machine change as this one's: a runner,
    image or pin change read from the same file (a CUDA bump for every NVIDIA lane of the
    dispatch)? Then its moving that night is that change's footprint. A torch_tpu bump beside a
    CuTe DSL bump is two changes, each its platform's own."""
    paths = {f.path for f in mine if f.kind in MACHINE_FACTS}
    return any(f.kernels is None and f.kind in MACHINE_FACTS and f.path in paths for f in theirs)


# what defines the baselines themselves (their torch/triton pins, a kernel's baseline
# implementation): with one of these in the window a baseline move is the method's
BASELINE_FACTS = frozenset({"baseline_pin"} | {f for f, m in FACT_MECHANISM.items() if m == "baseline"})


def toolchain_under_baselines(ev: EventInput) -> FactChange | None:
    """The platform's new toolchain (CUDA/ROCm image or runtime, the CuTe DSL, torch_tpu) when
    nothing in the window changed the baselines themselves. The baselines run on that toolchain
    as Helion does (cuBLAS and cuDNN ship in the CUDA image, the TPU baselines run on torch_tpu),
    so their moving with it is what the new toolchain predicts, not a new baseline: a baseline
    change comes from the repo (a torch/triton pin, a kernel's baseline) and names itself."""
    facts = [*ev.platform_facts, *(f for k in ev.kernels for f in k.facts)]
    if any(f.kind in BASELINE_FACTS for f in facts):
        return None
    return next((f for f in ev.platform_facts if f.kind in TOOLCHAIN_FACTS), None)


def autotuning_moved(kernels: Iterable[KernelSteps], th: Thresholds) -> bool:
    """Did most of the kernels' compile time (most of it autotuning) step with them, either way?
    Then how long the autotuner searched, or what it found, changed: a commit to the autotuner
    explains the move better than one that only changes code generation (`rank_commits`)."""
    comp = [k.compile for k in kernels if k.compile is not None]
    moved = [s for s in comp if abs(s.pct) >= th.autotune_moved_pct and s.significance >= th.sigma]
    return bool(comp) and 2 * len(moved) > len(comp)


def stepped(step: Step | None, th: Thresholds) -> int:
    """+1 / -1 when the level stepped clearly (up/down), 0 when flat, None-safe."""
    if step is None or step.significance < th.sigma or abs(step.pct) < th.min_pct:
        return 0
    return 1 if step.log_step > 0 else -1


def _directions(ev: EventInput, th: Thresholds) -> Observation:
    """Did Helion get faster on some kernels and slower on others? A code change moves the kernels
    it touches one way; a new machine, compiler or measurement re-times each kernel its own way.
    Read on Helion's own time (the latency, negated) where it stepped, else on the headline: when
    a machine throttles, the baselines can slow down more than Helion, and a speedup that rose
    says nothing of which way Helion went. A side needs two kernels and a quarter of those that
    moved to count."""
    signs = Counter(d for k in ev.kernels
                    if (d := (-stepped(k.latency, th) if k.latency is not None else 0) or stepped(k.headline, th)))
    n = sum(signs.values())
    if n < 3:
        return Observation("directions", "unknown", f"{n} kernel(s) with a clear direction: too few to say")
    minority = min(signs[1], signs[-1])
    detail = f"Helion faster on {signs[1]}, slower on {signs[-1]} of {n} kernels"
    facts = {"faster": signs[1], "slower": signs[-1]}
    if minority >= 2 and minority >= MIXED_SHARE * n:
        return Observation("directions", "mixed", detail, facts)
    return Observation("directions", "same", detail, facts)


def kernel_pattern(k: KernelSteps, th: Thresholds) -> tuple[str, str]:
    """(timers, comparators) for one dashboard kernel, in the terms of the table.

    Speedup down and latency up both mean "Helion slower": latency is compared negated.
    """
    h = stepped(k.headline, th)
    lat = -stepped(k.latency, th) if k.latency is not None else None
    if lat is None or k.headline is None:
        timers = "unknown"
    elif h and lat:
        timers = "agree" if h == lat else "opposite"
    elif h:
        timers = "speedup_only"
    elif lat:
        timers = "latency_only"
    else:
        timers = "unknown"
    steps = [c for c in k.comparators if c is not None]
    if not steps or k.headline is None or (not h and not any(stepped(c, th) for c in steps)):
        comps = "unknown"  # "Helion-only" means nothing when Helion's speedup did not move either
    else:
        ref = k.headline.log_step
        together = [c for c in steps if stepped(c, th) and (c.log_step > 0) == (ref > 0)
                    and abs(c.log_step) >= th.ratio * abs(ref)]
        flat = [c for c in steps if not stepped(c, th) or abs(c.log_step) < 0.25 * abs(ref)]
        if h and len(together) == len(steps):
            comps = "with_helion"
        elif len(flat) == len(steps):
            comps = "flat"
        elif not h and all(stepped(c, th) for c in steps):
            comps = "with_helion"  # every comparator moved while Helion's speedup did not
        else:
            comps = "mixed"
    return timers, comps


def _majority(values: list[str], skip: str = "unknown") -> tuple[str, Counter]:
    """The pattern most kernels show; a tie between the top two is ``skip``: two kernels that
    disagree say nothing about the event, and the first one listed must not decide it."""
    counts = Counter(v for v in values if v != skip)
    if not counts:
        return skip, counts
    top = counts.most_common(2)
    if len(top) == 2 and top[0][1] == top[1][1]:
        return skip, counts
    return top[0][0], counts


def _count(counts: Counter) -> str:
    return ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in counts.most_common())


def observe(ev: EventInput, th: Thresholds | None = None) -> list[Observation]:
    """Every observation of the event, each with a sentence and structured facts."""
    th = th or Thresholds()
    obs: list[Observation] = []
    n = len(ev.kernels)
    names = [k.kernel for k in ev.kernels]

    if ev.source == "dashboard":
        pats = [kernel_pattern(k, th) for k in ev.kernels]
        timers, tc = _majority([p[0] for p in pats])
        comps, cc = _majority([p[1] for p in pats])
        obs.append(Observation("timers", timers, f"timers across {n} kernel(s): {_count(tc) or 'no second timer'}",
                               {"counts": dict(tc)}))
        tool = toolchain_under_baselines(ev) if comps == "with_helion" else None
        if tool is not None:
            obs.append(Observation(
                "comparators", "with_toolchain",
                f"triton/torch.compile speedups: {_count(cc)}; the baselines run on {ev.platform}'s new "
                f"toolchain ({tool.detail}), and nothing changed the baselines themselves",
                {"counts": dict(cc), **_fact_json(tool)}))
        else:
            obs.append(Observation("comparators", comps,
                                   f"triton/torch.compile speedups: {_count(cc) or 'none around the step'}",
                                   {"counts": dict(cc)}))
    else:
        vals = []
        for k in ev.kernels:
            steps = [c for c in k.comparators if c is not None]
            if not steps or k.headline is None:
                vals.append("unknown")
                continue
            h = stepped(k.headline, th)
            moved = [c for c in steps if stepped(c, th) == h and h != 0]
            if h and len(moved) == len(steps):
                vals.append("all_moved")
            elif h and not any(stepped(c, th) for c in steps):
                vals.append("headline_only")
            else:
                vals.append("mixed")
        v, c = _majority(vals)
        obs.append(Observation("per_baseline", v, f"Helion against each named baseline: {_count(c) or 'no breakdown'}",
                               {"counts": dict(c)}))

    perf = [k for k in ev.kernels if stepped(k.headline, th) or (k.latency is not None and stepped(k.latency, th))
            or any(stepped(c, th) for c in k.comparators if c is not None)]
    # compile time alone on (nearly) every kernel: a stray kernel whose speed moved that night
    # (another event a night away) does not make a platform-wide compile step a speed event
    compile_alone = [k for k in ev.kernels if k not in perf and k.compile is not None and stepped(k.compile, th)]
    if compile_alone and len(compile_alone) >= COMPILE_ALONE_RATIO * len(perf):
        obs.append(Observation(
            "metrics", "compile_only",
            "only compile time moved: no timer of any kernel did" if not perf else
            f"only compile time moved on {len(compile_alone)} of {len(ev.kernels)} kernels", {"kernels": len(compile_alone)}))
    else:
        obs.append(Observation("metrics", "performance", f"{len(perf)} kernel(s) moved on a timer",
                               {"kernels": len(perf)}))

    ran = max(ev.ran, n)
    share = n / ran if ran else 1.0
    if n == 1:
        breadth = "single"
    elif n >= th.most_min_kernels and share >= th.most_fraction:
        breadth = "most"
    else:
        breadth = "few"
    obs.append(Observation("breadth", breadth, f"{n} of the {ran} kernels that ran on {ev.platform} that night moved",
                           {"moved": n, "ran": ran, "kernels": names[:20]}))
    obs.append(_directions(ev, th))
    if ev.elsewhere and set(ev.elsewhere) <= set(ev.elsewhere_same_change):
        obs.append(Observation(
            "elsewhere", "same_change",
            f"other platforms moved the same night ({', '.join(ev.elsewhere)}), and their runner or image "
            "changed in the window too", {"platforms": list(ev.elsewhere)}))
    else:
        obs.append(Observation(
            "elsewhere", "also_moved" if ev.elsewhere else "quiet",
            f"other platforms moved the same night ({', '.join(ev.elsewhere)})" if ev.elsewhere
            else "the other platforms stayed quiet", {"platforms": list(ev.elsewhere)}))

    runner = [f for f in ev.platform_facts if f.kind == "runner_label"]
    tool = [f for f in ev.platform_facts if f.kind == "toolchain"]
    pins = [f for f in ev.platform_facts if f.kind == "toolchain_pin"]
    # a new machine or image re-times every kernel it runs: beside a narrow move (a kernel or two,
    # a small share of the platform) it explains little; beside a third of the kernels, some of
    # them below detection and some moving the other way, it is what a person blames
    narrow = "" if n >= th.most_min_kernels and share >= th.machine_fraction else "_narrow"
    if runner:
        obs.append(Observation("platform_change", "runner" + narrow, runner[0].detail, _fact_json(runner[0])))
    elif tool:
        obs.append(Observation("platform_change", "toolchain" + narrow, tool[0].detail, _fact_json(tool[0])))
    elif pins:
        obs.append(Observation("platform_change", "toolchain_pin", pins[0].detail, _fact_json(pins[0])))
    else:
        obs.append(Observation("platform_change", "none", f"no runner or image change for {ev.platform} in the window"))

    with_fact = [k for k in ev.kernels if any(f.kind in KERNEL_METHOD_FACTS for f in k.facts)]
    if with_fact:
        f = next(f for f in with_fact[0].facts if f.kind in KERNEL_METHOD_FACTS)
        value = "all" if len(with_fact) == n or len(with_fact) >= max(2, 0.5 * n) else "some"
        obs.append(Observation("kernel_method", value,
                               f"{len(with_fact)} of {n} kernels' measurement changed: {f.detail}",
                               {**_fact_json(f), "kernels": [k.kernel for k in with_fact][:20],
                                "kinds": sorted({x.kind for k in with_fact for x in k.facts
                                                 if x.kind in KERNEL_METHOD_FACTS})}))
    else:
        obs.append(Observation("kernel_method", "none", "no change to how these kernels are measured"))

    glob = [f for f in ev.platform_facts if f.kind in GLOBAL_METHOD_FACTS]
    glob += [f for k in ev.kernels for f in k.facts if f.kind in GLOBAL_METHOD_FACTS]
    if glob:
        obs.append(Observation("global_method", "present", glob[0].detail,
                               {**_fact_json(glob[0]), "kinds": sorted({f.kind for f in glob})}))
    else:
        obs.append(Observation("global_method", "none", "no change to the baselines' pins, autotune settings or timers"))

    comp = [k.compile for k in ev.kernels if k.compile is not None]
    if comp:
        drops = [s for s in comp if s.pct <= -th.compile_drop_pct and s.significance >= th.sigma]
        rises = [s for s in comp if s.pct >= th.compile_drop_pct and s.significance >= th.sigma]
        # a capped autotune is a setting of the benchmark: with none in the window (no autotune
        # settings, command or timer flags, no harness commit) Helion's own autotuner changed how
        # long it searches, in code (44bcf6fa widened the block sizes it may try)
        told = ev.harness_commit is not None or any(f.kind in COMPILE_FACTS for f in glob)
        if len(drops) * 2 > len(comp):
            v = "dropped" if told else "dropped_in_helion"
        elif len(rises) * 2 > len(comp):
            v = "rose"
        else:
            v = "flat"
        med = sorted(s.pct for s in comp)[len(comp) // 2]
        obs.append(Observation("compile", v, f"compile time {med:+.0f}% (median of {len(comp)} kernels)",
                               {"median_pct": round(med, 1)}))
    else:
        obs.append(Observation("compile", "unknown", "no compile times around the step"))

    known = [k for k in ev.kernels if k.shapes_changed is not None]
    moved_inputs = [k for k in known if k.shapes_changed]
    machine = new_machine(ev.platform_facts)
    if moved_inputs and machine is not None and not any(own_method_fact(k.facts, k.kernel) for k in moved_inputs):
        # nothing in the repo changed these kernels' inputs, and a new machine can fail or skip
        # shapes it cannot run: the shape list changed with the machine, not the harness
        obs.append(Observation("shapes", "with_machine",
                               f"the benchmarked shapes changed for {len(moved_inputs)} kernel(s) with no change to "
                               f"their inputs in the repo, beside {ev.platform}'s new machine ({machine.path})",
                               {"path": machine.path, "kind": machine.kind}))
    elif moved_inputs:
        obs.append(Observation("shapes", "changed",
                               f"the benchmarked shapes changed for {len(moved_inputs)} kernel(s)"))
    elif known:
        obs.append(Observation("shapes", "same", "the same shapes were benchmarked"))
    else:
        obs.append(Observation("shapes", "unknown", "shape lists not kept around the step"))

    attrs = {a for k in ev.kernels for a in k.attributes}
    if attrs & HARDWARE_ATTRIBUTES:
        obs.append(Observation("attributes", "hardware", f"the device changed ({', '.join(sorted(attrs))})"))
    elif attrs & METHOD_ATTRIBUTES:
        obs.append(Observation("attributes", "method", f"the benchmark's own settings changed ({', '.join(sorted(attrs))})"))
    else:
        obs.append(Observation("attributes", "none", "same device, baseline and flags"))

    top = ev.top_candidate
    if not ev.window_known:
        obs.append(Observation("culprit", "unknown", ev.window_problem or "no commit window (no local Helion clone)"))
        obs.append(Observation("window", "unknown", "commit window unknown"))
    else:
        if top is not None and top.score >= th.strong_culprit:
            v = "strong"
        elif top is not None and top.score >= th.weak_culprit:
            v = "weak"
        else:
            v = "none"
        text = (f"best commit {top.sha[:8]} {top.subject!r} scores {top.score:.2f}" if top is not None
                else "no Helion commit to blame")
        obs.append(Observation("culprit", v, text, {"sha": top.full_sha if top else None,
                                                    "score": top.score if top else None}))
        if ev.same_sha:
            obs.append(Observation("window", "same_sha", "Helion did not change between the two nightlies"))
        elif ev.code_commits == 0:
            obs.append(Observation("window", "no_code", "no commit in the window changes Helion's code"))
        else:
            obs.append(Observation("window", "code", f"{ev.code_commits} commit(s) in the window change Helion's code"))

    if ev.window_known:
        # the harness commit's own subject says it changed how something is timed or measured ("Fix
        # compile time measurements", "device-agnostic compile-time sync"): the author's word that
        # the measurement moved, which a harness commit in general is not
        h = ev.harness_commit
        if h is None:
            obs.append(Observation("harness_commit", "none", "no commit in the window changes the benchmark harness",
                                   {"sha": None}))
        elif ev.harness_timer:
            obs.append(Observation("harness_commit", "timer", f"harness change in the window that says it changed a "
                                   f"timer: {h.sha[:8]} {h.subject!r}", {"sha": h.full_sha}))
        else:
            obs.append(Observation("harness_commit", "present", f"harness change in the window: {h.sha[:8]} "
                                   f"{h.subject!r}", {"sha": h.full_sha}))
    r = ev.revert
    if ev.ended and r is not None:
        obs.append(Observation(
            "episode", f"reverted_{r.kind}",
            f"the level came back after {r.revert.sha} {r.revert.subject!r} undid {r.reverted.sha} {r.reverted.subject!r}",
            {"revert": r.revert.full_sha, "reverted": r.reverted.full_sha, "reverted_kind": r.kind}))
    else:
        obs.append(Observation("episode", "ended" if ev.ended else "ongoing",
                               "the level came back: an episode with an end" if ev.ended else "the step persists"))
    if ev.config_regenerated:
        obs.append(Observation("config", "regenerated", "the kernel's checked-in Helion configs were regenerated"))
    return obs


def _fact_json(f: FactChange) -> dict:
    return {"kind": f.kind, "path": f.path, "old": f.old, "new": f.new, "commit": f.commit}


# --- the kind under each cause ------------------------------------------------------------------


def kind_of(cause: str, obs: list[Observation] | tuple[Observation, ...], ev: EventInput) -> str:
    """Which mechanism: read off the observations that carry it, most specific first."""
    by = {o.name: o for o in obs}
    kinds = {f.kind for k in ev.kernels for f in k.facts} | {f.kind for f in ev.platform_facts}
    attrs = {a for k in ev.kernels for a in k.attributes}
    if cause == "method_change":
        named = {FACT_MECHANISM.get(k, "shapes") for k in kinds if k in KERNEL_METHOD_FACTS}
        if "cudagraph" in named or "cudagraph" in attrs:
            return "cudagraph"
        if "shapes" in named or _is(by, "shapes", "changed"):
            return "shapes"
        if _is(by, "metrics", "compile_only"):
            # only compile time moved: what can move it (a baseline pin beside it moves speedups)
            for fact, kind in COMPILE_MECHANISMS:
                if fact in kinds:
                    return kind
        if kinds & BASELINE_FACTS or attrs & {"baseline_label", "baselines"}:
            return "baseline"
        if "autotune" in kinds or _is(by, "compile", "dropped") or _is(by, "compile", "dropped_in_helion"):
            return "autotune"
        if kinds & {"latency_mode", "pretuned_timer"} or _is(by, "compile", "rose"):
            return "timer"
        if "bench_command" in kinds:
            return "harness"  # the benchmark command itself changed (how often, which options)
        if (_is(by, "comparators", "with_helion") or _is(by, "comparators", "with_toolchain")
                or _is(by, "per_baseline", "headline_only")):
            return "baseline"
        # a harness commit and nothing parsed that says how: the commit's own words say whether
        # it was a timer; one timer moving alone is how any method change shows, not a timer's
        if ev.harness_commit is not None:
            return "timer" if ev.harness_timer else "harness"
        if _is(by, "timers", "opposite") or _is(by, "timers", "speedup_only") or _is(by, "timers", "latency_only"):
            return "timer"
        return "harness"
    if cause == "hardware":
        if "runner_label" in kinds or attrs & HARDWARE_ATTRIBUTES:
            return "runner"
        if kinds & TOOLCHAIN_FACTS:
            return "driver"
        # no runner or toolchain change and the machine came back (on most of the kernels, or
        # some of their timers: a throttled week ends unevenly): thermal, not a new machine
        if ev.ended or ev.came_back or ev.same_sha:
            return "thermal"
        return "runner"
    if cause == "real":
        top = ev.top_candidate
        heur = ev.config_regenerated or ev.autotuning or _is(by, "compile", "dropped_in_helion") or (
            top is not None and any(r for r in top.reasons if "autotuner" in r or "heuristic" in r))
        return "heuristics" if heur else "code"
    return "outlier"


def _is(by: dict[str, Observation], name: str, value: str) -> bool:
    o = by.get(name)
    return o is not None and o.value == value
