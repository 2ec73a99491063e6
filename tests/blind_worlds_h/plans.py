"""The events of each seed's world, and how each world responds to pins and machine changes.

Why it exists: this is where the judgement lives. Every planted real event sits on a real
first-parent commit of its window whose diff touches code that would move the listed kernels
(a reduction heuristic for reductions, an AMD config-space change for the AMD column, a
`[Pallas]` matmul lowering for TPU matmuls, ...), with the other commits of the window left as
decoys. Hardware episodes, outages and noise have no commit (or the runner/image commit that
made them). File-derived method changes are labeled in `changes.method_label`; here we only
decide what a torch pin, a runner/image/runtime label or a pretuned config/pin change does to
the numbers, because the files cannot say that.

Honest speedups follow one rule per cause (see README): real -> after the step; hardware ->
the healthy side (before for a regression or an episode, after for a persistent improvement);
cudagraph -> the cudagraph-timed side; other method changes -> after; noise -> normal level.
"""
from __future__ import annotations

import datetime as dt
import math

from . import rng, sim
from .changes import FactChange, method_label
from .events import SPEED, Effect, LabelSpec

UTC = dt.timezone.utc


# ---- helpers ---------------------------------------------------------------------------------
def on(ctx, n, plats=None, kernels=None, suite=None, exclude=()) -> list[tuple]:
    out = []
    for s in ctx.series[n]:
        if plats is not None and s.platform not in plats:
            continue
        if kernels is not None and s.kernel not in kernels:
            continue
        if suite is not None and s.suite != suite:
            continue
        if (s.platform, s.kernel) in exclude:
            continue
        out.append((s.platform, s.kernel))
    return sorted(set(out))


def _metrics(ctx, n, compile_too=False) -> tuple:
    f = ctx.facts[n]
    m = ("helion_speedup_geomean",)
    if f.has_latency:
        m += ("helion_latency_avg_ms",)
    if compile_too and f.has_compile_time:
        m += ("compile_time_geomean_s",)
    return m


def real(ctx, lid, culprit, factors: dict, kind, note, revert=None, metrics=None, honest="after"):
    n = ctx.night_of_commit(culprit)
    assert n is not None and n >= 4, (lid, culprit, n)
    e = Effect(lid, "dashboard", factors, start_sha=ctx.idx(culprit),
               end_sha=ctx.idx(revert) if revert else None)
    ctx.effects.append(e)
    metrics = metrics or _metrics(ctx, n)
    ctx.labels.append(LabelSpec(lid, "dashboard", "real", kind, tuple(sorted(factors)),
                                metrics, note, effect=e, culprit_sha=ctx.sha(culprit),
                                honest=honest, primary_metric=metrics[0]))
    return e


def varied(ctx, lid, members, lo, hi, comp="helion", **extra) -> dict:
    """{member: {comp: factor in [lo, hi]}} with a keyed draw per member."""
    out = {}
    for m in members:
        d = {comp: rng.uniform(lo, hi, ctx.seed, lid, *m)}
        d.update(extra)
        out[m] = d
    return out


def _t(day: str, hour=0) -> dt.datetime:
    d = dt.date.fromisoformat(day)
    return dt.datetime(d.year, d.month, d.day, hour, 0, tzinfo=UTC)


def hardware_span(ctx, lid, kind, first_day, last_day, factors, note, jitter=0.0, metrics=SPEED + ("helion_latency_avg_ms",)):
    e = Effect(lid, "dashboard", factors, start_t=_t(first_day), end_t=_t(last_day) + dt.timedelta(days=1),
               jitter=jitter, transient=True)
    ctx.effects.append(e)
    ctx.labels.append(LabelSpec(lid, "dashboard", "hardware", kind, tuple(sorted(factors)), metrics, note,
                                effect=e, honest="before"))


def outage(ctx, lid, platform, days, note):
    n = ctx.night_on(days[0])
    mem = on(ctx, n, [platform])
    e = Effect(lid, "dashboard", {m: {"fail": True} for m in mem}, dates=tuple(days), transient=True)
    ctx.effects.append(e)
    ctx.labels.append(LabelSpec(lid, "dashboard", "hardware", "outage", tuple(mem),
                                ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean"),
                                note, effect=e, honest="before", direction="regression"))


def noise(ctx, lid, kind, member, days, factors, note, metrics=("helion_speedup_geomean",)):
    e = Effect(lid, "dashboard", {member: factors}, dates=tuple(days), transient=True)
    ctx.effects.append(e)
    ctx.labels.append(LabelSpec(lid, "dashboard", "noise", kind, (member,), metrics, note, effect=e,
                                honest="normal", direction="none"))


def scatter(ctx, lid, member, target, note, source="dashboard"):
    """A high-scatter series: per-timer noise raised to `target` (relative sd), no step."""
    if source == "pretuned":
        pp = sim.pretuned_profile(member[0], member[1], ("torch",))
        ctx.noise_scale[("pretuned", *member)] = target / pp.sig
        n = 5
        metrics = ("geomean",)
    else:
        n = next(i for i in range(len(ctx.nightly)) if member in set(on(ctx, i)))
        s = next(x for x in ctx.series[n] if (x.platform, x.kernel) == member)
        ctx.noise_scale[member] = target / sim.profile(s.platform, s.suite, s.kernel).sig_h
        n = max(n + 5, 5)
        metrics = ("helion_speedup_geomean",)
    ctx.reserved.add(member)
    ctx.labels.append(LabelSpec(lid, source, "noise", "scatter", (member,), metrics,
                                note, first_night=n, honest="after", direction="none"))


def crash_until(ctx, lid, members, fixed_by):
    """Kernels that fail on every shape until a commit (no label: nothing to compare before it)."""
    ctx.effects.append(Effect(lid, "dashboard", {m: {"fail": True} for m in members}, start_sha=0,
                              end_sha=ctx.idx(fixed_by)))


# ---- responses to file-derived changes --------------------------------------------------------
def pin_response(ctx, ch: FactChange, lid: str, exclude=(), p_b=0.4, p_tc=0.25, faster=0.7):
    """A torch pin bump: some eager baselines move (all three speedups with them), some
    torch.compile baselines move alone (only torch_compile_speedup moves)."""
    old, new = ch.info["group"][1], ch.info["group"][2]
    moved_b, moved_tc = {}, {}
    for m in ch.members:
        if m in exclude:
            continue
        k = (ctx.seed, "pin", new, *m)
        u = rng.key_int(*k) / 2.0 ** 64
        if u < p_b:
            sgn = -1 if rng.chance(faster, *k, "s") else 1
            moved_b[m] = math.exp(sgn * rng.uniform(0.065, 0.14, *k, "b"))
        elif u < p_b + p_tc:
            sgn = -1 if rng.chance(faster, *k, "s") else 1
            moved_tc[m] = math.exp(sgn * rng.uniform(0.08, 0.16, *k, "c"))
    # carry every level over to the new pin, then apply the moves
    for (pin, p, k), (b, tc) in list(ctx.baseline_level.items()):
        if pin == old:
            ctx.baseline_level[(new, p, k)] = (b, tc)
    for (p, k), v in moved_b.items():
        b, tc = ctx.baseline_level.get((old, p, k), (1.0, 1.0))
        ctx.baseline_level[(new, p, k)] = (b * v, tc)
    for (p, k), v in moved_tc.items():
        b, tc = ctx.baseline_level.get((old, p, k), (1.0, 1.0))
        ctx.baseline_level[(new, p, k)] = (b, tc * v)
    subj = ctx.repo.commit(ch.change_sha).subject
    if moved_b:
        ctx.labels.append(LabelSpec(lid + "-eager", "dashboard", "method_change", "baseline", tuple(sorted(moved_b)),
                                    SPEED, f"torch {old} -> {new} ({subj}): the eager baseline of these kernels "
                                    f"moved, so all three speedups move together; Helion latency is flat.",
                                    first_night=ch.night, change_sha=ch.change_sha))
    if moved_tc:
        ctx.labels.append(LabelSpec(lid + "-compile", "dashboard", "method_change", "baseline", tuple(sorted(moved_tc)),
                                    ("torch_compile_speedup_geomean",),
                                    f"torch {old} -> {new} ({subj}): only the torch.compile baseline of these "
                                    f"kernels moved; Helion and Triton speedups are flat.",
                                    first_night=ch.night, change_sha=ch.change_sha))


def machine_response(ctx, ch: FactChange, lid: str, kind: str, factors: dict, note: str, end=None,
                     honest="before", metrics=SPEED + ("helion_latency_avg_ms",)):
    e = Effect(lid, "dashboard", factors, start_sha=ctx.repo.by_sha[ch.change_sha],
               end_sha=ctx.idx(end) if end else None, transient=bool(end))
    ctx.effects.append(e)
    ctx.labels.append(LabelSpec(lid, "dashboard", "hardware", kind, tuple(sorted(factors)), metrics, note,
                                effect=e, change_sha=ch.change_sha, honest=honest))


def default_methods(ctx, changes, skip_members=()):
    """Label every purely methodological change the model measures."""
    skip = set(skip_members)
    for i, ch in enumerate(changes):
        if ch.source != "dashboard" or ch.kind not in ("cudagraph", "shapes", "aot", "timer", "subprocess",
                                                        "harness", "budget"):
            continue
        members = tuple(m for m in ch.members if m not in skip)
        if not members:
            continue
        ch2 = FactChange(ch.kind, ch.night, ch.change_sha, members, ch.source, ch.info)
        lid = f"m{ctx.seed}-{ch.kind}-{ctx.nightly[ch.night].day}-{i}"
        if ch.kind == "budget":
            subj = ctx.repo.commit(ch.change_sha).subject
            spec = LabelSpec(lid, "dashboard", "method_change", "autotune", members,
                             ("helion_speedup_geomean", "helion_latency_avg_ms", "compile_time_geomean_s"),
                             f"per-shape autotune wall-clock capped ({subj}): shapes whose search ran past the "
                             f"cap now keep the best-so-far config (slower kernels, much shorter compile).",
                             first_night=ch.night, change_sha=ch.change_sha, extra={"min_move": 0.004})
        else:
            spec = method_label(ctx, ch2, lid)
        if spec is not None:
            ctx.labels.append(spec)


def pretuned_responses(ctx, changes, config_moves: dict, pin_moves=None):
    for i, ch in enumerate(changes):
        if ch.source != "pretuned":
            continue
        day = ctx.pnightly[ch.night].day
        subj = ctx.repo.commit(ch.change_sha).subject
        lid = f"p{ctx.seed}-{ch.kind}-{day}-{i}"
        if ch.kind == "p_baselines":
            ctx.labels.append(LabelSpec(lid, "pretuned", "method_change", "baseline", ch.members, ("geomean",),
                                        f"baseline set {list(ch.info['old'])} -> {list(ch.info['new'])} ({subj}); "
                                        f"the headline is against the fastest baseline.",
                                        first_night=ch.night, change_sha=ch.change_sha, extra={"min_move": 0.01}))
        elif ch.kind == "p_cudagraph":
            ctx.labels.append(LabelSpec(lid, "pretuned", "method_change", "cudagraph", ch.members, ("geomean",),
                                        f"use_cudagraph() flipped ({subj}).", first_night=ch.night,
                                        change_sha=ch.change_sha, honest="after" if ch.info["new"] else "before"))
        elif ch.kind == "p_bench":
            if "L2" in subj or "cache" in subj.lower():
                ctx.l2_from = min(getattr(ctx, "l2_from", 10 ** 9), ctx.repo.by_sha[ch.change_sha])
                ctx.labels.append(LabelSpec(lid, "pretuned", "method_change", "timer", ch.members, ("geomean",),
                                            f"cudagraph timer now clears L2 before every replay ({subj}); "
                                            f"cold-cache times for Helion and baselines alike.",
                                            first_night=ch.night, change_sha=ch.change_sha,
                                            extra={"min_move": 0.008}))
        elif ch.kind == "p_config":
            alias, k = ch.members[0]
            move = config_moves.get((alias, k, ch.change_sha[:8]))
            old = ctx.pconfig_level.get((alias, k, ch.info["old"]), 1.0)
            if move is None:   # regenerated, same speed (a decoy regen): carry the level over
                ctx.pconfig_level[(alias, k, ch.info["new"])] = old
                continue
            ctx.pconfig_level[(alias, k, ch.info["new"])] = old * move
            ctx.labels.append(LabelSpec(lid, "pretuned", "real", "heuristics/config", ch.members, ("geomean",),
                                        f"checked-in config for {alias} regenerated ({subj}).", first_night=ch.night,
                                        culprit_sha=ch.change_sha))
        elif ch.kind == "p_pin" and pin_moves:
            moved = {}
            for m in ch.members:
                mv = pin_moves(m)
                if mv:
                    moved[m] = mv
                    for b, v in mv.items():
                        ctx.pbase_level[(ch.info["new"], m[0], m[1], b)] = v
            if moved:
                ctx.labels.append(LabelSpec(lid, "pretuned", "method_change", "baseline", tuple(sorted(moved)),
                                            ("geomean",), f"pretuned torch {ch.info['old']} -> {ch.info['new']} "
                                            f"({subj}): torch / torch.compile baselines moved.",
                                            first_night=ch.night, change_sha=ch.change_sha,
                                            extra={"min_move": 0.01}))


def find(changes, kind, day=None, ctx=None, **info) -> FactChange | None:
    for ch in changes:
        if ch.kind != kind:
            continue
        if day is not None:
            runs = ctx.nightly if ch.source == "dashboard" else ctx.pnightly
            if runs[ch.night].day != day:
                continue
        if all(ch.info.get(k) == v for k, v in info.items()):
            return ch
    return None


# ---- the three worlds ---------------------------------------------------------------------------
def plan(seed: int, ctx, changes) -> None:
    {71: plan71, 72: plan72, 73: plan73}[seed](ctx, changes)


from .plan_seeds import plan71, plan72, plan73  # noqa: E402
