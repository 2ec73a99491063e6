"""Labeled events: read off the facts at each nightly (method / hardware changes made by real
commits), planted on real helion/ commits (real), or without a commit (thermal, outage, noise)."""
from __future__ import annotations

import math
import re

import numpy as np

from tests.blind_worlds.world import Label

from . import facts as F
from .world import GPU, Effect, rng

HEADLINE = {"dashboard": "helion_speedup_geomean", "pretuned": "geomean"}


class Spec:
    def __init__(self, source, cause, kind, members, i, *, end=None, culprit=None, change=None,
                 honest_side="after", metrics=None, note="", direction=None):
        self.__dict__.update(source=source, cause=cause, kind=kind, members=tuple(members), i=i, end=end,
                             culprit=culprit, change=change, honest_side=honest_side, note=note,
                             metrics=metrics, direction=direction)


# ---------------------------------------------------------------------------- slices of a commit
def slice_of(c) -> tuple[list, str] | None:
    """(platforms a helion/ commit can move, kind) from its tag and touched paths."""
    files = [f for f in c.files if f.startswith("helion/")]
    if not files:
        return None
    s = c.subject.lower()
    paths = " ".join(files).lower()
    if "_compiler/cute" in paths or re.search(r"\[(cute|cutedsl)\]", s):
        return ["b200_cute"], "code"
    if "pallas" in paths or re.search(r"\[(pallas|pallas-tpu|tpu)\]", s):
        return ["tpu"], "code"
    if "[rocm]" in s or re.search(r"rocm|gfx9|_amd", paths):
        return ["mi350x"], "code"
    if "helion/autotuner/" in paths or "[autotuner]" in s:
        return ["h100", "b200"], "heuristics"
    if re.search(r"sm90|hopper", paths + " " + s):
        return ["h100"], "heuristics"
    if re.search(r"sm100|blackwell|tcgen", paths + " " + s):
        return ["b200"], "heuristics"
    if any(f.startswith(("helion/_compiler/", "helion/language/", "helion/runtime/")) for f in files) and \
            not re.search(r"\[(docs|dashboard|ci)\]", s):
        return ["h100", "b200", "mi350x"], "code"
    return None


def mentioned(subject: str, kernels) -> list:
    s = subject.lower()
    return [k for k in kernels if re.search(rf"\b{re.escape(k.split('-')[0])}\b", s)]


# ---------------------------------------------------------------------------- helpers
def _busy(w, source, members, i, pad=4) -> bool:
    for m in members:
        for (a, b) in w._busy.get((source,) + tuple(m), []):
            if a - pad <= i <= b + pad:
                return True
    return False


def _mark(w, source, members, a, b):
    for m in members:
        w._busy.setdefault((source,) + tuple(m), []).append((a, b))


def _first_change(w, a_sha, b_sha, getter, pretuned=False):
    """The first-parent commit in (a, b] at which getter(facts) leaves its value at a."""
    fx = F.pretuned_facts if pretuned else F.dashboard_facts
    v0 = getter(fx(w.R, a_sha))
    for c in w.commits_between(a_sha, b_sha):
        if getter(fx(w.R, c.sha)) != v0:
            return c.sha
    return b_sha


def _present(w, source, i, members):
    s0, s1 = set(w.series_at(source, i - 1)), set(w.series_at(source, i))
    return [m for m in members if m in s0 and m in s1]


# ---------------------------------------------------------------------------- facts-driven labels
def facts_events(w, specs):
    N = len(w.nights)
    for i in range(1, N):
        a, b = w.dfacts[i - 1], w.dfacts[i]
        sa, sb = w.nights[i - 1].full_sha, w.nights[i].full_sha
        if sa == sb:
            continue
        both = _present(w, "dashboard", i, w.series_at("dashboard", i))
        cg = [m for m in both if a["opts"][m]["cudagraph"] != b["opts"][m]["cudagraph"]]
        for flag in (True, False):
            ms = [m for m in cg if b["opts"][m]["cudagraph"] is flag]
            if ms:
                ch = _first_change(w, sa, sb, lambda f, m=ms[0]: f["opts"].get(m, {}).get("cudagraph"))
                specs.append(Spec("dashboard", "method_change", "cudagraph", ms, i, change=ch,
                                  honest_side="after" if flag else "before",
                                  note=f"--cudagraph {'restored' if flag else 'removed'} (remove_flags)"))
        sh = [m for m in both if F.shapes_differ(a["opts"][m], b["opts"][m])]
        if sh:
            byc = {}
            for m in sh:
                gpu_key = lambda o: (o["num_inputs"], o.get("lin_shapes"))
                if gpu_key(a["opts"][m]) != gpu_key(b["opts"][m]):
                    ch = _first_change(w, sa, sb, lambda f, m=m: (f["opts"].get(m, {}).get("num_inputs"),
                                                                 f["opts"].get(m, {}).get("lin_shapes")))
                    note = "num_inputs / linattn SHAPES changed"
                else:  # the shapes benchmarks/run_tpu.py's nightly runs
                    ch = next((c.sha for c in w.commits_between(sa, sb) if F.shapes_differ(
                        a["opts"][m], F.dashboard_facts(w.R, c.sha)["opts"].get(m))), sb)
                    note = (f"run_tpu.py shapes (first --num-shapes) {list(a['opts'][m]['tpu_shapes'])} -> "
                            f"{list(b['opts'][m]['tpu_shapes'])}")
                byc.setdefault((ch, note), []).append(m)
            for (ch, note), ms in byc.items():
                specs.append(Spec("dashboard", "method_change", "shapes", ms, i, change=ch, note=note))
        gpu_both = [m for m in both if m[0] in GPU]
        if a["bench"]["pin"] != b["bench"]["pin"] and gpu_both:
            ch = _first_change(w, sa, sb, lambda f: f["bench"]["pin"])
            specs.append(Spec("dashboard", "method_change", "baseline", gpu_both, i, change=ch,
                              note=f"torch pin {a['bench']['pin']} -> {b['bench']['pin']}"))
        if a["bench"]["autotune"] != b["bench"]["autotune"] and gpu_both:
            ch = _first_change(w, sa, sb, lambda f: f["bench"]["autotune"])
            ms = [m for m in gpu_both if abs(w.regime_factors("dashboard", *m, i)["h"] /
                                            max(w.regime_factors("dashboard", *m, i - 1)["h"], 1e-9) - 1) > 0.02]
            if ms:
                specs.append(Spec("dashboard", "method_change", "autotune", ms, i, change=ch,
                                  metrics=("helion_speedup_geomean", "helion_latency_avg_ms", "compile_time_geomean_s"),
                                  note=f"HELION_AUTOTUNE_* {a['bench']['autotune']} -> {b['bench']['autotune']}"))
        if a["bench"]["timer"] != b["bench"]["timer"] and gpu_both:
            ch = _first_change(w, sa, sb, lambda f: f["bench"]["timer"])
            specs.append(Spec("dashboard", "method_change", "timer", gpu_both, i, change=ch,
                              metrics=("helion_latency_avg_ms",), note="latency timer changed"))
        for p in set(a["hw"]) & set(b["hw"]):
            if a["hw"][p] == b["hw"][p]:
                continue
            ms = [m for m in both if m[0] == p]
            if not ms:
                continue
            ch = _first_change(w, sa, sb, lambda f, p=p: f["hw"].get(p))
            runner_changed = {x[0] for x in a["hw"][p]} != {x[0] for x in b["hw"][p]}
            end = next((j for j in range(i + 1, N) if w.dfacts[j]["hw"].get(p) == a["hw"][p]), None)
            specs.append(Spec("dashboard", "hardware", "runner" if runner_changed else "driver", ms, i, change=ch,
                              end=end, honest_side="healthy",
                              note=f"{p}: {a['hw'][p]} -> {b['hw'][p]}"))
    # pretuned
    for i in range(1, N):
        a, b = w.pfacts[i - 1], w.pfacts[i]
        if not a or not b:
            continue
        sa, sb = w.nights[i - 1].p_full_sha, w.nights[i].p_full_sha
        if sa == sb:
            continue
        both = [m for m in b["series"] if m in a["series"]]
        for flag in (True, False):
            ms = [m for m in both if a["series"][m]["cudagraph"] != b["series"][m]["cudagraph"]
                  and b["series"][m]["cudagraph"] is flag]
            if ms:
                ch = _first_change(w, sa, sb, lambda f, m=ms[0]: f and f["series"].get(m, {}).get("cudagraph"), True)
                specs.append(Spec("pretuned", "method_change", "cudagraph", ms, i, change=ch,
                                  honest_side="after" if flag else "before", note="use_cudagraph() flipped"))
        bl = [m for m in both if a["series"][m]["baselines"] != b["series"][m]["baselines"]]
        if bl:
            ch = _first_change(w, sa, sb, lambda f, m=bl[0]: f and f["series"].get(m, {}).get("baselines"), True)
            specs.append(Spec("pretuned", "method_change", "baseline", bl, i, change=ch, note="baseline set changed"))
        aot = [m for m in both if a["series"][m]["aot"] != b["series"][m]["aot"]]
        byc = {}
        for m in aot:
            ch = _first_change(w, sa, sb, lambda f, m=m: f and f["series"].get(m, {}).get("aot"), True)
            byc.setdefault(ch, []).append(m)
        for ch, ms in byc.items():
            specs.append(Spec("pretuned", "real", "heuristics", ms, i, culprit=ch,
                              note="checked-in _helion_aot_* config regenerated"))
        if a["timer"] != b["timer"] and both:
            ch = _first_change(w, sa, sb, lambda f: f and f["timer"], True)
            specs.append(Spec("pretuned", "method_change", "timer", both, i, change=ch, note="_bench.py timing changed"))
        if a["pin"] != b["pin"] and both:
            ch = _first_change(w, sa, sb, lambda f: f and f["pin"], True)
            specs.append(Spec("pretuned", "method_change", "baseline", both, i, change=ch,
                              note=f"pretuned torch pin {'/'.join(a['pin_install'])} -> {'/'.join(b['pin_install'])} "
                                   f"({F.P_WORKFLOW}): every baseline re-measured under the new torch; "
                                   f"no baseline definition changed"))
        for p in ("h100", "b200"):
            if a["hw"].get(p) != b["hw"].get(p) and a["hw"].get(p) and b["hw"].get(p):
                ms = [m for m in both if m[0] == p]
                if ms:
                    ch = _first_change(w, sa, sb, lambda f, p=p: f and f["hw"].get(p), True)
                    end = next((j for j in range(i + 1, N) if w.pfacts[j] and w.pfacts[j]["hw"].get(p) == a["hw"][p]), None)
                    runner_changed = {x[0] for x in a["hw"][p]} != {x[0] for x in b["hw"][p]}
                    specs.append(Spec("pretuned", "hardware", "runner" if runner_changed else "driver", ms, i,
                                      change=ch, end=end, honest_side="healthy", note=f"pretuned {p} machine"))
    for s in specs:
        _mark(w, s.source, s.members, s.i - 1, s.end if s.end is not None else s.i + 1)


# ---------------------------------------------------------------------------- planted real events
def _windows(w):
    """helion/ commits per nightly window: night i -> [(commit, platforms, kind)]."""
    out = {}
    for i in range(1, len(w.nights)):
        a, b = w.nights[i - 1].full_sha, w.nights[i].full_sha
        for c in w.commits_between(a, b):
            sl = slice_of(c)
            if sl:
                out.setdefault(i, []).append((c, sl[0], sl[1]))
    return out


def plant_real(w, specs, g):
    N = len(w.nights)
    wins = _windows(w)
    used_commits = set()

    def pick(cond_night, plats_need=None, kernels_fn=None, n_k=(1, 3)):
        order = [i for i in wins if cond_night(i)]
        g.shuffle(order)
        for i in order:
            for (c, plats, kind) in wins[i]:
                if c.sha in used_commits:
                    continue
                if plats_need and not set(plats) & set(plats_need):
                    continue
                ps = [p for p in plats if (not plats_need or p in plats_need)]
                avail = [m for m in _present(w, "dashboard", i, w.series_at("dashboard", i)) if m[0] in ps]
                if not avail:
                    continue
                if kernels_fn:
                    ms = kernels_fn(avail, c)
                else:
                    named = [m for m in avail if m[1] in mentioned(c.subject, {x[1] for x in avail})]
                    if named:
                        ms = named
                    else:
                        ks = sorted({m[1] for m in avail})
                        take = list(g.choice(ks, size=min(len(ks), int(g.integers(n_k[0], n_k[1] + 1))), replace=False))
                        ms = [m for m in avail if m[1] in take]
                if not ms or _busy(w, "dashboard", ms, i):
                    continue
                used_commits.add(c.sha)
                return i, c, kind, ms
        return None

    def add(res, size, note, scatter=None, end_pad=None):
        i, c, kind, ms = res
        fac = 1.0 / (1.0 - size) if size > 0 else (1.0 + size)
        for m in ms:
            jit = float(np.exp(g.normal(0, 0.08 * abs(math.log(fac)))))
            w.effects.setdefault(("dashboard",) + m, []).append(Effect(i, None, "h", fac * jit, tag=c.sha[:8]))
            if scatter:
                w.scatter[("dashboard",) + m] = scatter
        specs.append(Spec("dashboard", "real", kind, ms, i, culprit=c.sha, note=note,
                          direction="regression" if size > 0 else "improvement"))
        _mark(w, "dashboard", ms, i - 1, i + (end_pad or 1))

    lo, hi = 6, N - 1
    # family-wide regression on a small platform (b200_cute, else tpu / mi350x)
    for small in (["b200_cute"], ["tpu"], ["mi350x"]):
        r = pick(lambda i: lo <= i < hi - 3, small, kernels_fn=lambda avail, c: avail)
        if r:
            add(r, float(g.uniform(0.12, 0.2)), f"family-wide regression on {small[0]}")
            break
    # one in the last 2-3 nightlies
    r = pick(lambda i: N - 3 <= i <= N - 2, ["h100", "b200", "mi350x", "tpu", "b200_cute"])
    if r:
        add(r, float(g.uniform(0.12, 0.25)), "regression in the last nightlies")
    # two steps a week apart in one series
    for _ in range(30):
        r1 = pick(lambda i: lo <= i < hi - 12, ["h100", "b200"], n_k=(1, 1))
        if not r1:
            break
        i1, c1, k1, ms1 = r1
        m = ms1[0]
        cands = [i for i in wins if i1 + 6 <= i <= i1 + 8 and any(m[0] in pl for (_, pl, _) in wins[i])]
        if cands:
            add((i1, c1, k1, [m]), float(g.uniform(0.08, 0.14)), "first of two steps a week apart", end_pad=0)
            w._busy[("dashboard",) + m] = [x for x in w._busy[("dashboard",) + m] if x != (i1 - 1, i1)]
            i2 = cands[0]
            c2, _, k2 = next(x for x in wins[i2] if m[0] in x[1] and x[0].sha not in used_commits)
            used_commits.add(c2.sha)
            add((i2, c2, k2, [m]), float(g.uniform(0.08, 0.14)), "second step, a week after the first")
            break
        used_commits.discard(c1.sha)
    # a modest 6-9% step against 2-4% scatter
    r = pick(lambda i: lo <= i < hi - 4, ["h100", "b200", "mi350x"], n_k=(1, 1))
    if r:
        r = (r[0], r[1], r[2], r[3][:1])
        add(r, float(g.uniform(0.06, 0.09)), "modest step against 2-4% scatter", scatter=float(g.uniform(0.02, 0.04)))
    # assorted regressions and improvements of various sizes
    sizes = [0.08, 0.1, 0.14, 0.2, 0.3, 0.12, -0.1, -0.15, -0.22, 0.25, -0.08]
    for s in sizes:
        r = pick(lambda i: lo <= i < hi - 1)
        if r:
            add(r, float(s * g.uniform(0.9, 1.1)), "real " + ("regression" if s > 0 else "improvement"))
    # pretuned: a helion/ code commit that moves a pretuned kernel
    pn = [i for i in range(1, N) if w.pfacts[i] and w.pfacts[i - 1]]
    if len(pn) > 12:
        for i in pn[4:-2]:
            a, b = w.nights[i - 1].p_full_sha, w.nights[i].p_full_sha
            for c in w.commits_between(a, b):
                sl = slice_of(c)
                if not sl or c.sha in used_commits or not set(sl[0]) & {"h100", "b200"}:
                    continue
                avail = [m for m in w.series_at("pretuned", i) if m in w.series_at("pretuned", i - 1)
                         and m[0] in sl[0]]
                named = [m for m in avail if m[1] in mentioned(c.subject, {x[1] for x in avail})]
                ms = named or avail[:1]
                if not ms or _busy(w, "pretuned", ms, i):
                    continue
                used_commits.add(c.sha)
                for m in ms:
                    w.effects.setdefault(("pretuned",) + m, []).append(Effect(i, None, "h", 1.15, tag=c.sha[:8]))
                specs.append(Spec("pretuned", "real", sl[1], ms, i, culprit=c.sha, note="pretuned real regression",
                                  direction="regression"))
                _mark(w, "pretuned", ms, i - 1, i + 1)
                break
            else:
                continue
            break


# ---------------------------------------------------------------------------- method changes on real commits
def plant_method(w, specs, g):
    """Timer / harness changes on real commits whose diff touches the harness (benchmarks/run.py)."""
    have = {s.kind for s in specs if s.cause == "method_change" and s.source == "dashboard"}
    N = len(w.nights)
    want = [k for k in ("timer", "harness") if k not in have] + ["harness"]
    for i in range(5, N - 2):
        if not want:
            break
        a, b = w.nights[i - 1].full_sha, w.nights[i].full_sha
        for c in w.commits_between(a, b):
            if "benchmarks/run.py" not in c.files or any(f.startswith("helion/") for f in c.files):
                continue
            diff = w.R.git("show", "--format=", "-U0", c.sha, "--", "benchmarks/run.py")
            added = "\n".join(l for l in diff.splitlines() if l[:1] in "+-" and not l.startswith(("+++", "---")))
            if "KERNEL_MAPPINGS" in added or "num_inputs" in added or "remove_flags" in added:
                continue
            is_timer = bool(re.search(r"do_bench|latency|timer|warmup|\brep\b", added))
            kind = "timer" if is_timer else "harness"
            if kind not in want:
                continue
            avail = [m for m in _present(w, "dashboard", i, w.series_at("dashboard", i)) if m[0] in ("h100", "b200")]
            ks = sorted({m[1] for m in avail})
            if not ks:
                continue
            take = set(g.choice(ks, size=min(3, len(ks)), replace=False))
            ms = [m for m in avail if m[1] in take]
            if _busy(w, "dashboard", ms, i):
                continue
            comp = "lat" if is_timer else "cg"
            for m in ms:
                w.effects.setdefault(("dashboard",) + m, []).append(
                    Effect(i, None, comp, float(g.choice([0.88, 0.9, 1.1, 1.14])), tag=c.sha[:8]))
            specs.append(Spec("dashboard", "method_change", kind, ms, i, change=c.sha,
                              metrics=("helion_latency_avg_ms",) if is_timer else ("helion_speedup_geomean",),
                              note=f"{kind}: benchmarks/run.py harness edit"))
            _mark(w, "dashboard", ms, i - 1, i + 1)
            want.remove(kind)
            break


# ---------------------------------------------------------------------------- hardware without a commit, noise
def plant_hardware(w, specs, g):
    N = len(w.nights)
    have = {s.kind for s in specs if s.cause == "hardware" and s.source == "dashboard"}
    plats = [p for p in ("h100", "b200", "mi350x") if any(p in f["platforms"] for f in w.dfacts[N // 3: N // 3 + 1])]
    # thermal throttling: several nights, no commit
    for _ in range(20):
        p = str(g.choice(plats))
        i = int(g.integers(8, N - 12))
        L = int(g.integers(4, 8))
        ms = [m for m in _present(w, "dashboard", i, w.series_at("dashboard", i)) if m[0] == p]
        if ms and not _busy(w, "dashboard", ms, i, pad=2) and not _busy(w, "dashboard", ms, i + L, pad=2):
            w.pf_effects.setdefault(("dashboard", p), []).append(Effect(i, i + L, "all", float(g.uniform(1.08, 1.15))))
            for m in ms:
                w.effects.setdefault(("dashboard",) + m, []).append(
                    Effect(i, i + L, "h", float(g.uniform(1.03, 1.12)), tag="thermal"))
            specs.append(Spec("dashboard", "hardware", "thermal", ms, i, end=i + L, honest_side="healthy",
                              note=f"{p} thermal throttling for {L} nights (no commit)"))
            _mark(w, "dashboard", ms, i - 1, i + L)
            break
    # a driver bump that is rolled back (no commit: the runner pool's image), if the window has none
    if "driver" not in have:
        for _ in range(20):
            p = str(g.choice(plats))
            i = int(g.integers(8, N - 10))
            L = int(g.integers(3, 6))
            ms = [m for m in _present(w, "dashboard", i, w.series_at("dashboard", i)) if m[0] == p]
            if ms and not _busy(w, "dashboard", ms, i, pad=2) and not _busy(w, "dashboard", ms, i + L, pad=2):
                w.pf_effects.setdefault(("dashboard", p), []).append(Effect(i, i + L, "all", float(g.uniform(1.05, 1.1))))
                for m in ms:
                    w.effects.setdefault(("dashboard",) + m, []).append(
                        Effect(i, i + L, "h", float(g.uniform(1.04, 1.14)), tag="driver"))
                specs.append(Spec("dashboard", "hardware", "driver", ms, i, end=i + L, honest_side="healthy",
                                  note=f"{p} driver update on the runner pool, rolled back after {L} nights"))
                _mark(w, "dashboard", ms, i - 1, i + L)
                break
    # outage: a platform's artifacts missing for 2 nights
    p = str(g.choice([x for x in ("mi350x", "tpu", "h100") if any(x in f["platforms"] for f in w.dfacts[-20:])] or ["h100"]))
    for _ in range(20):
        i = int(g.integers(10, N - 5))
        ms = [m for m in _present(w, "dashboard", i, w.series_at("dashboard", i)) if m[0] == p]
        if ms and not _busy(w, "dashboard", ms, i, pad=1):
            w.outages |= {(i, "dashboard", p), (i + 1, "dashboard", p)}
            specs.append(Spec("dashboard", "hardware", "outage", ms, i, end=i + 2, honest_side="healthy",
                              metrics=(), note=f"{p} produced no results for 2 nights"))
            _mark(w, "dashboard", ms, i - 1, i + 2)
            break


def plant_reverted_driver(w, specs):
    """A driver / toolchain update that is reverted a few nights later (helion-dashboard.md: a GPU /
    driver change is a hardware issue; the move ends when the change is rolled back).

    The real history has the mechanism but never inside a window: ROCm 7.14 (35b19fd4, 08-18) was
    reverted by 5033b49a at 2026-08-22T04:05Z, after the last nightly any window holds (08-21), and
    the B200 runner pin d752b642 was reverted by d0548556 14 minutes later (no nightly between). So
    unless a window already has a reverted machine change, one is simulated: the runner pool's host
    driver (not in the repo, no commit) is updated on one GPU platform at night i and rolled back
    at night end; the label names both (first_bad_run_id = night i, end_run_id = night end).
    Its own random stream, planted last: the other events of a seed are as before."""
    if any(s.cause == "hardware" and s.kind == "driver" and s.end is not None and s.source == "dashboard"
           for s in specs):
        return
    g = rng(w.seed, "events", "reverted-driver")
    N = len(w.nights)
    plats = [p for p in ("h100", "b200", "mi350x") if any(p in f["platforms"] for f in w.dfacts[N // 3: N // 3 + 1])]
    if not plats or N < 24:
        return
    for strict in (True, False):
        for _ in range(200):
            p = str(g.choice(plats))
            i = int(g.integers(8, N - 10))
            L = int(g.integers(3, 6))
            ms = [m for m in _present(w, "dashboard", i, w.series_at("dashboard", i)) if m[0] == p]
            if not ms or not all(m in w.series_at("dashboard", j) for m in ms for j in range(i, i + L + 1)):
                continue
            nights = range(i - 1, i + L + 1) if strict else (i, i + L)
            if any(_busy(w, "dashboard", ms, j, pad=1 if strict else 2) for j in nights):
                continue
            w.pf_effects.setdefault(("dashboard", p), []).append(Effect(i, i + L, "all", float(g.uniform(1.05, 1.1))))
            for m in ms:
                w.effects.setdefault(("dashboard",) + m, []).append(
                    Effect(i, i + L, "h", float(g.uniform(1.04, 1.14)), tag="driver-revert"))
            d0, d1 = w.nights[i].date.date(), w.nights[i + L].date.date()
            specs.append(Spec("dashboard", "hardware", "driver", ms, i, end=i + L, honest_side="healthy",
                              note=f"{p} host driver update on the runner pool (no commit) from the {d0} nightly, "
                                   f"reverted: back to normal from the {d1} nightly ({L} nights)"))
            _mark(w, "dashboard", ms, i - 1, i + L)
            return


def plant_noise(w, specs, g):
    N = len(w.nights)
    for L, count in ((1, 3), (2, 2)):
        for _ in range(count):
            for _try in range(30):
                i = int(g.integers(6, N - 4))
                ser = w.series_at("dashboard", i)
                m = ser[int(g.integers(0, len(ser)))] if ser else None
                if not m or not all(m in w.series_at("dashboard", j) for j in range(i - 1, min(i + L + 1, N))):
                    continue
                if _busy(w, "dashboard", [m], i):
                    continue
                f = float(g.uniform(1.09, 1.16)) ** (1 if g.random() < 0.6 else -1)
                w.effects.setdefault(("dashboard",) + m, []).append(Effect(i, i + L, "h", f, noise=True))
                specs.append(Spec("dashboard", "noise", "blip", [m], i, end=i + L, honest_side="normal",
                                  note=f"{L}-night blip"))
                _mark(w, "dashboard", [m], i - 1, i + L)
                break


def plant_scatter(w, specs, g):
    ser = [m for m in w.series_at("dashboard", len(w.nights) // 2) if m[0] in ("h100", "b200")]
    if ser:
        m = ser[int(g.integers(0, len(ser)))]
        w.scatter[("dashboard",) + m] = float(g.uniform(0.06, 0.08))
        specs.append(Spec("dashboard", "noise", "scatter", [m], 1, honest_side="normal", note="a noisy series"))


# ---------------------------------------------------------------------------- labels
def finalize(w, specs):
    labels = []
    N = len(w.nights)
    for n, s in enumerate(sorted(specs, key=lambda s: (s.i, s.source, s.kind))):
        i = s.i
        src = s.source
        rid = (lambda j: w.nights[j].p_run_id) if src == "pretuned" else (lambda j: w.nights[j].run_id)
        if rid(i) is None or rid(i - 1) is None:
            continue
        before = {m: w.honest(src, *m, i - 1) for m in s.members}
        after = {m: w.honest(src, *m, i) for m in s.members}
        ratios = [after[m] / before[m] for m in s.members if before[m] and after[m]]
        r = float(np.median(ratios)) if ratios else 1.0
        direction = s.direction or ("improvement" if r > 1 else "regression")
        if s.kind == "timer" and src == "dashboard":
            direction = "regression"
        hon = {}
        for m in s.members:
            if s.honest_side == "after":
                v = after[m]
            elif s.honest_side == "before":
                v = before[m]
            elif s.honest_side == "healthy":
                v = after[m] if direction == "improvement" and s.end is None else before[m]
            else:  # noise: the normal level (noise-free, noise effects excluded)
                v = w.honest(src, *m, i)
            if v:
                hon[f"{m[0]}/{m[1]}"] = v
        end = rid(s.end) if s.end is not None and s.end < N else None
        metrics = s.metrics if s.metrics is not None else (HEADLINE[src],)
        labels.append(Label(id=f"b2-{w.seed}-{n:03d}", source=src, cause=s.cause, kind=s.kind, direction=direction,
                            members=tuple(tuple(m) for m in s.members), metrics=tuple(metrics),
                            first_bad_run_id=rid(i), last_good_run_id=rid(i - 1), end_run_id=end,
                            culprit_sha=s.culprit, change_sha=s.change, honest_speedup=hon, note=s.note))
    return labels


def plan_events(w):
    g = rng(w.seed, "events")
    specs: list = []
    plant_scatter(w, specs, g)
    facts_events(w, specs)
    plant_real(w, specs, g)
    plant_method(w, specs, g)
    plant_hardware(w, specs, g)
    plant_noise(w, specs, g)
    plant_reverted_driver(w, specs)
    w.labels = finalize(w, specs)
