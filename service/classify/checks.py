"""The six cross-checks a person makes about one move, each giving one `Evidence` and a strength.

A check's verdict names the cause it supports ("real", "method_change", "hardware", "noise") or
"neutral"; its strength (0..1) says how squarely. `verdict.combine` weighs them (config weights).
Checks never raise on missing data: no data is a neutral verdict that says what was missing.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

from service.classify.context import MoveContext
from service.classify.levels import Step, scatter_of, step_of
from service.classify.metrics import (
    DASH_SPEEDUPS,
    HELION_SPEEDUP,
    KNOWN_FAMILIES,
    LATENCY,
    PRETUNED_HEADLINE,
    family,
    is_baseline_metric,
)
from service.classify.settings import ClassifySettings
from service.records import Evidence, FactChange, Move

NEUTRAL = "neutral"
# Stable phrase in the breadth detail: group classification reads it back from stored evidence.
OTHERS_STEPPED = "other platforms also stepped"
KERNEL_FACTS = ("cudagraph_flag", "num_inputs", "kernel_dropped", "kernel_added")
METHOD_ATTRIBUTES = ("baseline_label", "cudagraph", "baselines")
HARDWARE_ATTRIBUTES = ("platform", "compute")
_TOKEN = re.compile(r"[A-Za-z0-9_\-]+")


@dataclass(frozen=True)
class Finding:
    evidence: Evidence
    strength: float  # 0..1

    @property
    def verdict(self) -> str:
        return self.evidence.verdict


@dataclass(frozen=True)
class Breadth:
    """Who else stepped on the same run (computed once, read by several checks)."""

    same: int  # other kernels on this platform that stepped the same way
    same_total: int  # other kernels this platform runs
    elsewhere: tuple[str, ...]  # other hardware families where several kernels stepped the same way
    same_kernel_elsewhere: tuple[str, ...]  # other platforms where this very kernel stepped
    other_total: int  # other platforms of the source
    broad: bool  # this platform moved broadly

    @property
    def fraction(self) -> float:
        return self.same / self.same_total if self.same_total else 0.0

    @property
    def platform_only(self) -> bool:
        """Broad here, quiet on the other machines: the hardware pattern."""
        return self.broad and not self.elsewhere


def _f(check: str, verdict: str, detail: str, strength: float = 1.0) -> Finding:
    s = 0.0 if verdict == NEUTRAL else max(0.0, min(1.0, strength))
    return Finding(Evidence(check, verdict, detail), s)


def merge(check: str, parts: list[tuple[str, float, str]], none_detail: str) -> Finding:
    """One finding from several (verdict, strength, detail) parts: the best-supported cause wins
    (first listed on a tie), its strength shrunk by the share that points elsewhere."""
    if not parts:
        return _f(check, NEUTRAL, none_detail)
    mass: dict[str, float] = defaultdict(float)
    for verdict, strength, _ in parts:
        if verdict != NEUTRAL:
            mass[verdict] += strength
    detail = "; ".join(d for _, _, d in parts)
    if not mass:
        return _f(check, NEUTRAL, detail)
    order = [v for v, _, _ in parts if v in mass]
    top = max(order, key=lambda v: mass[v])  # max() keeps the first of equals
    total = sum(mass.values())
    return _f(check, top, detail, min(1.0, mass[top]) * mass[top] / total)


def own_log_step(m: Move) -> float:
    if m.before > 0 and m.after > 0:
        return math.log(m.after / m.before)
    return 0.0


def motion(step: Step | None, ref_log: float, s: ClassifySettings) -> str:
    """How a sibling moved across the step: "up" / "down" when it stepped clearly (beyond its own
    noise, by min_step_pct, and by sibling_step_ratio of our own step); "partial" when it stepped
    beyond its noise but by much less than we did; "flat" otherwise; "none" without data."""
    if step is None:
        return "none"
    if step.significance < s.sibling_sigma or abs(step.pct) < s.min_step_pct:
        return "flat"
    if abs(step.log_step) < s.sibling_step_ratio * abs(ref_log):
        return "partial"
    return "up" if step.log_step > 0 else "down"


def sibling_step(ctx: MoveContext, metric: str, s: ClassifySettings) -> Step | None:
    m = ctx.move
    return step_of(ctx.siblings.get(metric), m.last_good.date, m.first_bad.date, s.level_nights, s.noise_floor)


def _pct(step: Step) -> str:
    return f"{step.pct:+.1f}% ({step.significance:.1f}σ)"


# --- 1. persistence -------------------------------------------------------------------------


def persistence(ctx: MoveContext, s: ClassifySettings) -> Finding:
    m = ctx.move
    size = f"{m.change_pct:+.1f}% is {m.significance:.1f}σ of the series' own scatter (σ {m.noise_sigma * 100:.1f}%)"
    if m.state == "retracted":
        return _f("persistence", "noise", f"the step reverted (retracted after {m.nights_after} nightlies); {size}",
                  0.9)
    if m.significance < s.min_significance:
        strength = 1.0 - 0.5 * max(0.0, m.significance) / s.min_significance
        return _f("persistence", "noise", f"{size}, below the {s.min_significance:g}σ bar", strength)
    if m.state == "provisional" or m.nights_after < s.min_nights_after:
        nights = f"{m.nights_after} nightl{'y' if m.nights_after == 1 else 'ies'}"
        return _f("persistence", NEUTRAL, f"{m.state}: {nights} since the step, too early to say it persists; {size}")
    strength = min(1.0, 0.5 + 0.5 * m.significance / (2 * s.min_significance))
    return _f("persistence", "real", f"persists for {m.nights_after} nightlies ({m.state}); {size}", strength)


# --- 4. breadth (first: others read it) -------------------------------------------------------


def breadth_facts(ctx: MoveContext, s: ClassifySettings) -> Breadth:
    me = ctx.move
    fam = family(me.key.platform_short)
    same, same_any = set(), set()
    elsewhere: dict[str, set[str]] = defaultdict(set)
    kernel_elsewhere: set[str] = set()
    for p in ctx.peer_moves:
        if p.state == "retracted" or p.key.source != me.key.source:
            continue
        if p.key.platform_short == me.key.platform_short:
            if p.key.kernel != me.key.kernel:
                same_any.add(p.key.kernel)
                if p.direction == me.direction:
                    same.add(p.key.kernel)
            continue
        if p.key.kernel == me.key.kernel:
            kernel_elsewhere.add(p.key.platform_short)
        pf = family(p.key.platform_short)
        if pf != fam and p.direction == me.direction:
            elsewhere[pf].add(p.key.kernel)
    same_total = max(ctx.platform_kernel_count - 1, len(same_any), 0)
    need = max(2, min(s.broad_min_kernels, same_total))
    broad = len(same) >= need and same_total > 0 and len(same) / same_total >= s.broad_fraction
    stepped = tuple(sorted(f for f, ks in elsewhere.items() if len(ks) >= s.other_platform_min_kernels))
    return Breadth(len(same), same_total, stepped, tuple(sorted(kernel_elsewhere)),
                   ctx.other_platforms_count, broad)


def breadth(ctx: MoveContext, s: ClassifySettings, b: Breadth) -> Finding:
    plat = ctx.move.key.platform_short
    here = f"{b.same} of {b.same_total} other kernels on {plat} stepped the same way on this run"
    if b.elsewhere:
        there = f"{OTHERS_STEPPED} ({', '.join(b.elsewhere)} of {b.other_total} other platforms)"
    else:
        there = "other platforms quiet"
    if b.platform_only:
        return _f("breadth", "hardware", f"{here}; {there}: the machine, not one kernel", 0.5 + 0.5 * b.fraction)
    if b.broad:
        return _f("breadth", NEUTRAL, f"{here}; {there}: a change shared by platforms (code or harness)")
    if b.same <= s.isolated_max_kernels and not b.elsewhere:
        if b.same_kernel_elsewhere:
            return _f(
                "breadth", NEUTRAL,
                f"{here}; this kernel also stepped on {', '.join(b.same_kernel_elsewhere)}: "
                "a change to this kernel or its benchmark",
            )
        return _f("breadth", "real", f"{here}; {there}: isolated to this kernel, not the machine", 0.5)
    return _f("breadth", NEUTRAL, f"{here}; {there}")


# --- 2. helion_only -------------------------------------------------------------------------


def helion_only(ctx: MoveContext, s: ClassifySettings, b: Breadth) -> Finding:
    m = ctx.move
    metric = m.key.metric
    ref = own_log_step(m)
    if metric in DASH_SPEEDUPS or metric == LATENCY:
        # latency: Helion's own speedup is the timer check's business; compare the two baselines
        others = [x for x in DASH_SPEEDUPS if x != metric and not (metric == LATENCY and x == HELION_SPEEDUP)]
        if metric == LATENCY:
            ref = -ref  # Helion slower = latency up = its speedup down
        return _comparators(ctx, s, b, others, ref, latency=metric == LATENCY)
    if metric in PRETUNED_HEADLINE or is_baseline_metric(metric):
        return _pretuned_baselines(ctx, s, ref)
    return _f("helion_only", NEUTRAL, f"{metric} has no comparator series to tell Helion-only from a baseline move")


def _comparators(ctx: MoveContext, s: ClassifySettings, b: Breadth, others: list[str], ref: float,
                 latency: bool) -> Finding:
    """Dashboard: triton_* and torch_compile_* share the baseline time with helion_*; all of them
    stepping the same way at once means the baseline moved, not Helion."""
    steps = {x: sibling_step(ctx, x, s) for x in others}
    motions = {x: motion(st, ref, s) for x, st in steps.items()}
    have = [x for x in others if motions[x] != "none"]
    if not have:
        return _f("helion_only", NEUTRAL, "no triton/torch.compile speedups around the step to compare")
    want = "up" if ref > 0 else "down"
    parts = ", ".join(f"{x} {_pct(steps[x])}" for x in have)
    together = [x for x in have if motions[x] == want]
    flat = [x for x in have if motions[x] == "flat"]
    if len(together) == len(have):
        cause = "hardware" if b.platform_only else "method_change"
        what = "the baselines moved with the whole platform" if cause == "hardware" else "the baseline moved"
        strength = (1.0 if len(have) >= 2 else 0.6) * (0.5 if latency else 1.0)
        return _f("helion_only", cause, f"{parts} stepped with it on the same run: {what}, not Helion", strength)
    if latency:
        return _f("helion_only", NEUTRAL, f"{parts}: the baselines did not all move; says nothing about latency")
    if len(flat) == len(have):
        # the flatter the comparators against our own step, the surer: 1 at 0%, 0.2 at half our step
        worst = max(abs(steps[x].log_step) for x in have) / abs(ref) if ref else 1.0
        strength = max(0.2, 1.0 - 1.6 * worst) * (1.0 if len(have) >= 2 else 0.6)
        return _f("helion_only", "real", f"{parts} stayed flat: Helion-only", strength)
    partial = [x for x in have if motions[x] == "partial" and (steps[x].log_step > 0) == (ref > 0)]
    if partial and b.platform_only:
        return _f("helion_only", "hardware",
                  f"{parts}: the comparators moved too (less than Helion) with the whole platform: not Helion-only",
                  0.6)
    if partial:
        return _f("helion_only", NEUTRAL, f"{parts}: the comparators moved too, but less: not clearly Helion-only")
    return _f("helion_only", NEUTRAL, f"{parts}: the comparators disagree")


def _pretuned_baselines(ctx: MoveContext, s: ClassifySettings, ref: float) -> Finding:
    """Pretuned: each `baseline:<name>:geomean` is Helion against one baseline, so Helion itself
    moving shows against every baseline; the headline moving alone means a baseline changed."""
    me = ctx.move.key.metric
    names = sorted(k for k in ctx.siblings if is_baseline_metric(k) and k != me)
    steps = {k: sibling_step(ctx, k, s) for k in names}
    motions = {k: motion(st, ref, s) for k, st in steps.items()}
    have = [k for k in names if motions[k] != "none"]
    if len(have) < (1 if is_baseline_metric(me) else 2):
        return _f("helion_only", NEUTRAL, "too few per-baseline geomeans around the step to compare")
    want = "up" if ref > 0 else "down"
    parts = ", ".join(f"{k.split(':')[1]} {_pct(steps[k])}" for k in have)
    together = [k for k in have if motions[k] == want]
    if len(together) == len(have):
        return _f("helion_only", "real", f"Helion moved against every baseline ({parts}): Helion-only")
    if all(motions[k] == "flat" for k in have):
        return _f("helion_only", "method_change", f"against the individual baselines Helion stayed flat ({parts}): "
                  "a baseline changed, not Helion")
    return _f("helion_only", NEUTRAL, f"only {len(together)} of {len(have)} baselines moved with it ({parts})")


# --- 3. timer_agreement ---------------------------------------------------------------------


def timer_agreement(ctx: MoveContext, s: ClassifySettings, b: Breadth) -> Finding:
    """Speedup is cudagraph-timed, latency do_bench-timed: a true change in Helion shows on both
    (speedup down <=> latency up). Never combine the two numbers, only their directions."""
    m = ctx.move
    metric = m.key.metric
    if m.key.source != "dashboard":
        return _f("timer_agreement", NEUTRAL, "pretuned results have one timer; nothing to cross-check")
    if metric == HELION_SPEEDUP:
        other, ref = LATENCY, -own_log_step(m)  # latency should move against the speedup
    elif metric == LATENCY:
        other, ref = HELION_SPEEDUP, -own_log_step(m)
    else:
        return _f("timer_agreement", NEUTRAL, f"{metric} has no second timer to cross-check")
    st = sibling_step(ctx, other, s)
    mo = motion(st, ref, s)
    if mo == "none":
        return _f("timer_agreement", NEUTRAL, f"no {other} around the step")
    want = "up" if ref > 0 else "down"
    moved_cause = "hardware" if b.platform_only else "real"
    if mo == want:
        return _f("timer_agreement", moved_cause,
                  f"{other} {_pct(st)} agrees: both timers saw the change")
    if mo == "partial" and (st.log_step > 0) == (ref > 0):
        return _f("timer_agreement", moved_cause,
                  f"{other} {_pct(st)} moved the same way, by less: both timers saw a change", 0.6)
    if mo != "flat":
        return _f("timer_agreement", "method_change", f"{other} {_pct(st)} moved the other way: the timers disagree")
    if abs(ref) < s.sibling_sigma * st.sigma:
        return _f("timer_agreement", NEUTRAL, f"{other} {_pct(st)}: too noisy to resolve a step this size")
    if metric == HELION_SPEEDUP:
        return _f("timer_agreement", "method_change",
                  f"{other} stayed flat ({_pct(st)}): only the cudagraph timer moved, a measurement change")
    cause = "hardware" if b.platform_only else "method_change"
    return _f("timer_agreement", cause,
              f"{other} stayed flat ({_pct(st)}): only do_bench latency moved "
              + ("with the whole platform (the machine is slower)" if cause == "hardware" else "(timer change)"),
              1.0 if cause == "hardware" else 0.6)


# --- 5. method_tells ------------------------------------------------------------------------


def method_tells(ctx: MoveContext, s: ClassifySettings, b: Breadth) -> Finding:
    parts: list[tuple[str, float, str]] = []
    sb, sa = ctx.shapes_before, ctx.shapes_after
    if sb is not None and sa is not None and tuple(sb) != tuple(sa):
        if len(sb) != len(sa):
            parts.append(("method_change", 1.0, f"the shape list changed from {len(sb)} to {len(sa)} shapes"))
        else:
            parts.append(("method_change", 1.0, f"the {len(sa)} benchmarked shapes are different ones"))
    for ch in ctx.attribute_changes:
        attr = getattr(ch, "attribute", "")
        detail = getattr(ch, "detail", "") or f"{attr} changed"
        if attr in HARDWARE_ATTRIBUTES:
            parts.append(("hardware", 1.0, detail))
        elif attr in METHOD_ATTRIBUTES:
            parts.append(("method_change", 1.0, detail))
        else:
            parts.append(("method_change", 0.5, detail))
    if ctx.move.key.source == "pretuned" and ctx.move.key.metric != "total":
        st = sibling_step(ctx, "total", s)
        if st is not None and round(st.before) != round(st.after):
            parts.append(("method_change", 1.0, f"the shape count (total) changed from {st.before:g} to {st.after:g}"))
    sc = scatter_of(ctx.series, ctx.move.last_good.date, ctx.move.first_bad.date, s.scatter_nights)
    if sc is not None:
        before, after = (max(x, s.scatter_floor) for x in sc)
        if after >= s.scatter_ratio * before:
            cause = "hardware" if b.platform_only else "method_change"
            parts.append((cause, 0.6, f"the scatter exploded (σ {sc[0] * 100:.1f}% → {sc[1] * 100:.1f}%)"))
        elif before >= s.scatter_ratio * after:
            parts.append(("method_change", 0.6, f"the scatter collapsed (σ {sc[0] * 100:.1f}% → {sc[1] * 100:.1f}%)"))
    known = "same shapes" if sb is not None and sa is not None else "shape lists not kept around the step"
    return merge("method_tells", parts, f"no method tells ({known}; same baseline and flags)")


# --- 6. commit_window -----------------------------------------------------------------------


def _tokens(f: FactChange) -> set[str]:
    text = " ".join(x for x in (f.detail, f.old or "", f.new or "", f.path) if x)
    return {t.lower() for t in _TOKEN.findall(text)}


def _text(f: FactChange) -> str:
    return " ".join(x for x in (f.detail, f.old or "", f.new or "", f.path) if x).lower()


def fact_for_kernel(f: FactChange, kernel: str) -> bool:
    """A kernel fact about THIS kernel: its name appears as a whole token (rms_norm != rms_norm-bwd)."""
    return f.kind in KERNEL_FACTS and kernel.lower() in _tokens(f)


def fact_for_platform(f: FactChange, platform_short: str) -> float:
    """1.0 when a hardware fact names this platform's family, 0.6 when it names none, 0 otherwise."""
    text = _text(f)
    named = {fam for fam in KNOWN_FAMILIES if fam in text}
    if family(platform_short) in named:
        return 1.0
    return 0.0 if named else 0.6


def _commit(c) -> str:
    return f"{c.full_sha[:8] or c.sha[:8]} {c.subject!r}"


def commit_window(ctx: MoveContext, s: ClassifySettings, b: Breadth) -> Finding:
    m = ctx.move
    parts: list[tuple[str, float, str]] = []
    for f in ctx.repo_facts:
        if fact_for_kernel(f, m.key.kernel):
            parts.append(("method_change", 1.0, f"repo fact for {m.key.kernel}: {f.detail}"))
        elif f.suggests == "hardware" and f.kind not in KERNEL_FACTS:
            w = fact_for_platform(f, m.key.platform_short)
            if w > 0:
                parts.append(("hardware", w, f"repo fact: {f.detail}"))
    if ctx.harness_commit is not None:
        parts.append(("method_change", 1.0, f"harness change in the window: {_commit(ctx.harness_commit)}"))
    if ctx.runner_commit is not None:
        parts.append(("hardware", 1.0, f"runner change in the window: {_commit(ctx.runner_commit)}"))
    top = ctx.candidates[0] if ctx.candidates else None
    if top is not None and top.score >= s.culprit_min_score:
        if b.platform_only and top.score < s.culprit_broad_score:
            # most of one platform stepped, the others did not: only a commit aimed squarely at
            # this platform explains that; a loose match is likely a bystander
            parts.append(("real", 0.4, f"top candidate {_commit(top)} matches loosely (score {top.score:.2f}, "
                                       f"below {s.culprit_broad_score:g} for a platform-wide step)"))
        else:
            parts.append(("real", 1.0, f"top candidate {_commit(top)} matches the slice (score {top.score:.2f})"))
    w = ctx.window
    if w is not None and not w.complete:
        parts.append((NEUTRAL, 0.0, w.problem or "window not in the local clone; fetch it"))
    elif m.last_good.full_sha and m.last_good.full_sha == m.first_bad.full_sha:
        parts.append(("hardware", 0.8, "Helion did not change between the two runs (same commit): the environment did"))
    elif w is not None and not parts:
        if not w.commits:
            parts.append(("hardware", 0.8, "no Helion commit in the window: the environment changed"))
        else:
            why = f"best score {top.score:.2f}" if top is not None else "no candidates"
            parts.append(("hardware", 0.3,
                          f"none of the {len(w.commits)} commits in the window matches the slice ({why})"))
    none = "no commit window (no local Helion clone configured)" if w is None else "nothing in the window decides"
    return merge("commit_window", parts, none)
