"""Changes in the real files between two consecutive nightlies, and the commit that made each.

Why it exists: a method or environment change is only realistic if it sits on the commit that
really made it. For every pair of consecutive nightlies this module diffs the parsed facts
(`facts.NightFacts`) and, for each difference that moves a number in the model (a cudagraph
flag, a shape count, a torch pin, the autotune budget, the single-pass harness, the TPU harness
switch, a runner/image/runtime label, a pretuned baseline set / cudagraph / timer / checked-in
config), walks the first-parent commits in between to find the one where the fact flipped.
`plans.py` decides how the simulated world responds to pins and hardware changes; the purely
methodological ones need no decision (the model measures what the files say) and get their
labels here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import facts as F
from .events import SPEED, LabelSpec
from .facts import facts_at


@dataclass
class FactChange:
    kind: str            # cudagraph | shapes | aot | budget | timer | subprocess | pin | harness | machine | tpu_pins | p_*
    night: int           # first nightly (of `source`) with the new facts
    change_sha: str
    members: tuple
    source: str = "dashboard"
    info: dict = field(default_factory=dict)


def find_change(ctx, old_sha: str, new_sha: str, getter, paths: tuple) -> str:
    """The first commit in old..new (first-parent) where getter(facts) leaves its old value."""
    repo = ctx.repo
    old = getter(facts_at(repo, old_sha))
    commits = repo.between(old_sha, new_sha)
    for c in commits:
        if paths and not any(any(f == p or f.startswith(p.rstrip("/") + "/") for p in paths) for f in c.files):
            continue
        if getter(facts_at(repo, c.sha)) != old:
            return c.sha
    return commits[-1].sha if commits else new_sha


def _series_map(ctx, n):
    return {(s.platform, s.kernel): s for s in ctx.series[n]}


def detect(ctx, model) -> list[FactChange]:
    out: list[FactChange] = []
    runs = ctx.nightly
    last_seen: dict = {}
    for n in range(1, len(runs)):
        for key in _series_map(ctx, n - 1):
            last_seen[key] = n - 1
        a, b = ctx.facts[n - 1], ctx.facts[n]
        if a.sha == b.sha:
            continue
        sa, sb = _series_map(ctx, n - 1), _series_map(ctx, n)
        both = sorted(set(sa) & set(sb))
        ra, rb = runs[n - 1], runs[n]
        groups: dict = {}
        # series coming back after a gap: compare with their last nightly, attribute to what
        # changed since the previous nightly (e.g. a job re-enabled with checked-in configs)
        for key in sorted(set(sb) - set(sa)):
            m0 = last_seen.get(key)
            if m0 is None:
                continue
            s0, s1 = _series_map(ctx, m0)[key], sb[key]
            if s0.suite != s1.suite:
                continue
            ma, mb = model.method(runs[m0], ctx.facts[m0], s0), model.method(rb, b, s1)
            if ma.helion_shift != mb.helion_shift and a.linattn_aot != b.linattn_aot:
                groups.setdefault(("aot",), []).append(key)
            elif list(ma.labels) != list(mb.labels) and (
                    a.linattn_shapes, a.linattn_varlen_shapes, a.opts(key[1])) != (
                    b.linattn_shapes, b.linattn_varlen_shapes, b.opts(key[1])):
                groups.setdefault(("shapes", s1.suite), []).append(key)
        for key in both:
            s_a, s_b = sa[key], sb[key]
            if s_a.suite != s_b.suite:
                groups.setdefault(("harness", s_a.suite, s_b.suite), []).append(key)
                continue
            ma, mb = model.method(ra, a, s_a), model.method(rb, b, s_b)
            if ma.cudagraph != mb.cudagraph:
                groups.setdefault(("cudagraph", mb.cudagraph), []).append(key)
            if list(ma.labels) != list(mb.labels):
                groups.setdefault(("shapes", s_b.suite), []).append(key)
            elif s_b.suite == "linattn" and ma.helion_shift != mb.helion_shift:
                groups.setdefault(("aot",), []).append(key)
            if ma.compile_time and mb.compile_time:
                if ma.two_pass != mb.two_pass:
                    groups.setdefault(("timer",), []).append(key)
                if ma.subprocess != mb.subprocess:
                    groups.setdefault(("subprocess",), []).append(key)
            if ma.budget_s != mb.budget_s and s_b.suite == "tritonbench":
                groups.setdefault(("budget",), []).append(key)
            if s_b.suite == "tritonbench" and a.torch_pin != b.torch_pin:
                groups.setdefault(("pin", a.torch_pin, b.torch_pin), []).append(key)
        for g, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
            kind = g[0]
            if kind == "cudagraph":
                names = sorted({k for _, k in members})
                getter = lambda f, names=names: tuple(f.opts(k)[0] for k in names)
                sha = find_change(ctx, a.sha, b.sha, getter, (F.RUN_PY,))
            elif kind == "shapes":
                if g[1] == "linattn":
                    getter = lambda f: (f.linattn_shapes, f.linattn_varlen_shapes)
                    sha = find_change(ctx, a.sha, b.sha, getter, (F.LINATTN,))
                elif g[1] == "tpu":
                    sha = find_change(ctx, a.sha, b.sha, lambda f: f.tpu_num_shapes, (F.TPU_WF,))
                else:
                    names = sorted({k for _, k in members})
                    getter = lambda f, names=names: tuple(f.opts(k)[1] for k in names)
                    sha = find_change(ctx, a.sha, b.sha, getter, (F.RUN_PY,))
            elif kind == "aot":
                sha = find_change(ctx, a.sha, b.sha, lambda f: f.linattn_aot, (F.BENCH,))
            elif kind == "timer":
                sha = find_change(ctx, a.sha, b.sha, lambda f: f.two_pass, (F.BENCH,))
            elif kind == "subprocess":
                sha = find_change(ctx, a.sha, b.sha, lambda f: f.subprocess_env or f.subprocess_default,
                                  (F.BENCH, "helion/runtime/settings.py"))
            elif kind == "budget":
                sha = find_change(ctx, a.sha, b.sha, lambda f: f.budget_s, (F.BENCH,))
            elif kind == "pin":
                sha = find_change(ctx, a.sha, b.sha, lambda f: f.torch_pin, (F.BENCH,))
            elif kind == "harness":
                getter = lambda f: tuple((j.platform, j.suite, j.kernels) for j in f.jobs if j.platform == "tpu")
                sha = find_change(ctx, a.sha, b.sha, getter, (F.DISPATCH, F.NIGHTLY))
            out.append(FactChange(kind, n, sha, tuple(sorted(members)), info={"group": g}))
        # machines: runner / image / runtime per job alias, one change per (alias, commit)
        ja = {(j.platform, j.suite): j for j in a.jobs}
        for (plat, suite), jb in sorted({(j.platform, j.suite): j for j in b.jobs}.items()):
            j0 = ja.get((plat, suite))
            if j0 is None:
                continue
            found: dict = {}
            for fld in ("runner", "image", "runtime"):
                if getattr(j0, fld) != getattr(jb, fld):
                    getter = lambda f, plat=plat, suite=suite, fld=fld: next(
                        (getattr(j, fld) for j in f.jobs if (j.platform, j.suite) == (plat, suite)), None)
                    sha = find_change(ctx, a.sha, b.sha, getter, (F.DISPATCH, F.BENCH))
                    found.setdefault(sha, {})[fld] = (getattr(j0, fld), getattr(jb, fld))
            for sha, fields in sorted(found.items()):
                members = tuple(sorted(k for k in both if k[0] == plat and sa[k].suite == suite))
                out.append(FactChange("machine", n, sha, members,
                                      info={"platform": plat, "suite": suite, "fields": fields}))
        if a.tpu_pins != b.tpu_pins and any(j.platform == "tpu" for j in b.jobs):
            sha = find_change(ctx, a.sha, b.sha, lambda f: f.tpu_pins, (F.TPU_WF, F.TPU_BRIDGE_WF, *F.TPU_ACTIONS))
            out.append(FactChange("tpu_pins", n, sha, tuple(k for k in both if k[0] == "tpu"),
                                  info={"old": a.tpu_pins, "new": b.tpu_pins}))
    # pretuned nightlies
    pr = ctx.pnightly
    for n in range(1, len(pr)):
        a, b = ctx.pfacts[n - 1], ctx.pfacts[n]
        if a.sha == b.sha:
            continue
        jobs = [al for al, _, _ in b.pretuned_jobs]
        for pk in b.pretuned:
            p0 = a.pretuned_kernel(pk.name)
            if p0 is None:
                continue
            for alias in jobs:
                if alias not in pk.hardware or alias not in p0.hardware:
                    continue
                mem = ((alias, pk.name),)
                if p0.baselines != pk.baselines:
                    sha = find_change(ctx, a.sha, b.sha, lambda f, k=pk.name: (f.pretuned_kernel(k) or p0).baselines,
                                      ("pretuned_kernels",))
                    out.append(FactChange("p_baselines", n, sha, mem, "pretuned",
                                          {"old": p0.baselines, "new": pk.baselines}))
                if p0.cudagraph != pk.cudagraph:
                    sha = find_change(ctx, a.sha, b.sha, lambda f, k=pk.name: (f.pretuned_kernel(k) or p0).cudagraph,
                                      ("pretuned_kernels",))
                    out.append(FactChange("p_cudagraph", n, sha, mem, "pretuned", {"new": pk.cudagraph}))
                ca, cb = dict(p0.configs).get(alias), dict(pk.configs).get(alias)
                if ca != cb:
                    sha = find_change(ctx, a.sha, b.sha,
                                      lambda f, k=pk.name, al=alias: dict((f.pretuned_kernel(k) or p0).configs).get(al),
                                      ("pretuned_kernels",))
                    out.append(FactChange("p_config", n, sha, mem, "pretuned", {"old": ca, "new": cb}))
        if a.pretuned_bench_oid != b.pretuned_bench_oid:
            sha = find_change(ctx, a.sha, b.sha, lambda f: f.pretuned_bench_oid, (F.P_BENCH_PY,))
            mem = tuple(sorted((al, pk.name) for pk in b.pretuned for al in jobs
                               if al in pk.hardware and a.pretuned_kernel(pk.name)))
            out.append(FactChange("p_bench", n, sha, mem, "pretuned",
                                  {"old": a.pretuned_bench_oid, "new": b.pretuned_bench_oid}))
        if a.pretuned_torch_pin != b.pretuned_torch_pin:
            sha = find_change(ctx, a.sha, b.sha, lambda f: f.pretuned_torch_pin, (F.P_BENCH,))
            mem = tuple(sorted((al, pk.name) for pk in b.pretuned for al in jobs
                               if al in pk.hardware and a.pretuned_kernel(pk.name)))
            out.append(FactChange("p_pin", n, sha, mem, "pretuned",
                                  {"old": a.pretuned_torch_pin, "new": b.pretuned_torch_pin}))
    return _merge(out)


def _merge(changes: list[FactChange]) -> list[FactChange]:
    """One change per (source, kind, nightly, commit[, old/new]) with the union of members."""
    merged: dict = {}
    order = []
    for ch in changes:
        if ch.source != "pretuned" or ch.kind == "p_config":
            order.append(ch)
            continue
        key = (ch.source, ch.kind, ch.night, ch.change_sha)
        if key not in merged:
            merged[key] = FactChange(ch.kind, ch.night, ch.change_sha, tuple(ch.members), ch.source, dict(ch.info))
            order.append(merged[key])
        else:
            m = merged[key]
            m.members = tuple(sorted(set(m.members) | set(ch.members)))
    return order


def subject(ctx, sha: str) -> str:
    return ctx.repo.commit(sha).subject


def method_label(ctx, ch: FactChange, lid: str) -> LabelSpec | None:
    """The label of a purely methodological change (the model already measures it)."""
    g = ch.info.get("group", (ch.kind,))
    subj = subject(ctx, ch.change_sha)
    if ch.kind == "cudagraph":
        on = g[1]
        return LabelSpec(lid, "dashboard", "method_change", "cudagraph", ch.members, SPEED,
                         f"`--cudagraph` {'restored' if on else 'dropped (remove_flags)'} for these kernels "
                         f"in KERNEL_MAPPINGS ({subj}); the speedup timer changed, do_bench latency did not.",
                         first_night=ch.night, change_sha=ch.change_sha,
                         honest="after" if on else "before")
    if ch.kind == "shapes":
        return LabelSpec(lid, "dashboard", "method_change", "shapes", ch.members,
                         SPEED + ("helion_latency_avg_ms", "compile_time_geomean_s"),
                         f"input shape list changed ({subj}); geomeans are over a different shape set.",
                         first_night=ch.night, change_sha=ch.change_sha)
    if ch.kind == "aot":
        return LabelSpec(lid, "dashboard", "method_change", "autotune", ch.members,
                         ("helion_speedup_geomean", "helion_latency_avg_ms"),
                         f"linear-attention job switched to checked-in AOT configs instead of autotuning ({subj}).",
                         first_night=ch.night, change_sha=ch.change_sha)
    if ch.kind == "timer":
        return LabelSpec(lid, "dashboard", "method_change", "timer", ch.members, ("compile_time_geomean_s",),
                         f"single benchmark pass ({subj}): --measure-compile-time now includes autotuning "
                         f"instead of a cache-hit recompile; speedups and latency unchanged.",
                         first_night=ch.night, change_sha=ch.change_sha, primary_metric="compile_time_geomean_s")
    if ch.kind == "subprocess":
        return LabelSpec(lid, "dashboard", "method_change", "autotune", ch.members, ("compile_time_geomean_s",),
                         f"autotune benchmarking moved into a subprocess ({subj}); autotune wall time grows, "
                         f"chosen configs and speedups do not change.",
                         first_night=ch.night, change_sha=ch.change_sha, primary_metric="compile_time_geomean_s")
    if ch.kind == "harness":
        return LabelSpec(lid, "dashboard", "method_change", "harness", ch.members,
                         SPEED[:1] + ("torch_compile_speedup_geomean", "helion_latency_avg_ms", "compile_time_geomean_s"),
                         f"these TPU kernels moved from run_tpu.py to the tritonbench bridge ({subj}): other "
                         f"harness, shapes and baseline under the same dashboard row.",
                         first_night=ch.night, change_sha=ch.change_sha)
    return None
