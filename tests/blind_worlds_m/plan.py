"""Which events a world holds: read from the real diffs between nightlies, plus planted ones on real commits."""
from __future__ import annotations

import math
import re

from . import repofacts as F

DASH_METRICS_ALL = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
EXCLUDED_PREFIX = ("test/", "docs/", "examples/", ".github/", "benchmarks/", "scripts/")


def _dir(step):
    return "improvement" if step > 0 else "regression"


def plan_world(w):
    g = __import__("numpy").random.default_rng([w.seed, 7])
    N = w.N
    occ: dict = {}
    labels = w.labels_full
    counter = [0]
    presence = [w.present(n) for n in range(N)]
    w.present = lambda n, _p=presence: _p[n]

    def busy(key, n, pad=4):
        return any(abs(m - n) <= pad for m in occ.get(key, ()))

    def mark(keys, n):
        for k in keys:
            occ.setdefault(k, []).append(n)

    def add(source, cause, kind, members, n, metrics, honest, note, culprit=None, change=None, end=None,
            step=0.0):
        counter[0] += 1
        lid = f"m{w.seed}-{counter[0]:03d}"
        labels.append(dict(id=lid, source=source, cause=cause, kind=kind, direction=_dir(step) if step else "none",
                           members=sorted(members), metrics=metrics, first_bad=n, end=end, culprit=culprit,
                           change=change, honest={f"{k[1]}/{k[2]}": v for k, v in honest.items()}, note=note))
        mark(members, n)
        return lid

    def sp(key, n, **kw):
        return w.true_speedup(key, n, **kw)

    # ------------------------------------------------------------ 1. what the real diffs carry
    for n in range(1, N):
        a, b = w.shas[n - 1], w.shas[n]
        if a == b:
            continue
        fa, fb = w.facts[n - 1], w.facts[n]
        both = [k for k in presence[n] if k in presence[n - 1] and k[0] == "dashboard"]
        # machine (runner / image / runtime) per alias
        for plat in sorted(set(fa["platforms"]) & set(fb["platforms"])):
            pa, pb = fa["platforms"][plat], fb["platforms"][plat]
            ma, mb = (pa["runner"], pa["image"], pa["runtime"]), (pb["runner"], pb["image"], pb["runtime"])
            if ma == mb:
                continue
            kind = "runner" if ma[0] != mb[0] else "driver/toolchain"
            path = F.TPU_YML if plat == "tpu" else F.DISPATCH

            def mach(s, plat=plat):
                p = F.gpu_facts(w.R, s)["platforms"].get(plat) or {}
                return (p.get("runner"), p.get("image"), p.get("runtime"))
            ch = F.find_change(w.R, a, b, (path,), mach)
            mem = [k for k in both if k[1] == plat]
            if mem:
                hon = {k: sp(k, n) for k in mem}
                add("dashboard", "hardware", kind, mem, n, ("helion_latency_avg_ms",) + DASH_METRICS_ALL, hon,
                    f"{plat}: {kind} change read from the dispatch workflow; every kernel's times move, "
                    "baselines too; honest = the new machine's level", change=ch,
                    step=sp(mem[0], n) - sp(mem[0], n, use_facts=n - 1))
        # per-series shapes / cudagraph
        groups: dict = {}
        for k in both:
            ia, ib = presence[n - 1][k], presence[n][k]
            if ia["shapes"] != ib["shapes"]:
                fam_ = w.S(k).fam
                groups.setdefault(("shapes", k[2] if fam_ == "gpu" else fam_), []).append(k)
            if ia["cudagraph"] != ib["cudagraph"] and w.S(k).fam == "gpu":
                groups.setdefault(("cudagraph", k[2], ib["cudagraph"]), []).append(k)
        for gk, mem in sorted(groups.items()):
            kind = gk[0]
            k0 = mem[0]
            fam = w.S(k0).fam
            paths = {"gpu": (F.RUN_PY, F.BENCH_YML), "linattn": (F.LINATTN_PY,), "tpu": (F.TPU_PY, F.RUN_PY)}[fam]

            def fact(s, k0=k0, kind=kind):
                ff = F.gpu_facts(w.R, s)["platforms"].get(k0[1]) or {"series": {}}
                i = ff["series"].get(k0[2])
                return None if i is None else (i["shapes"] if kind == "shapes" else i["cudagraph"])
            ch = F.find_change(w.R, a, b, paths, fact)
            if kind == "cudagraph":
                cg_after = gk[2]
                hon = {k: sp(k, n) if cg_after else sp(k, n, use_facts=n - 1) for k in mem}
                metrics = DASH_METRICS_ALL
                note = ("--cudagraph " + ("added to" if cg_after else "removed from") +
                        f" {k0[2]} (remove_flags in KERNEL_MAPPINGS); all three speedups move, do_bench latency "
                        "does not; honest = the CUDA-graph-timed side")
            else:
                hon = {k: sp(k, n) for k in mem}
                metrics = DASH_METRICS_ALL + ("helion_latency_avg_ms", "compile_time_geomean_s") \
                    if fam != "linattn" else ("helion_speedup_geomean", "helion_latency_avg_ms")
                note = (f"{k0[2]}: shape count {presence[n - 1][k0]['shapes']} -> {presence[n][k0]['shapes']} "
                        "read from the repo; honest = the new shape set's level")
            add("dashboard", "method_change", kind, mem, n, metrics, hon, note, change=ch,
                step=sp(k0, n) - sp(k0, n - 1))
        # pins, autotune env, latency timer in benchmark.yml
        ba, bb = fa["bench"], fb["bench"]
        for fld, kind in (("pins", "baseline"), ("autotune_env", "autotune"), ("latency_mode", "timer")):
            if ba[fld] == bb[fld]:
                continue
            ch = F.find_change(w.R, a, b, (F.BENCH_YML,),
                               lambda s, fld=fld: F.gpu_facts(w.R, s)["bench"][fld])
            fams = ("gpu", "linattn") if kind == "baseline" else ("gpu",)
            cand = [k for k in both if w.S(k).fam in fams]
            if kind == "baseline":
                mem = [k for k in cand if abs(math.log(max(sp(k, n), 1e-9) / max(sp(k, n, use_facts=n - 1), 1e-9))) >= 0.04]
                hon = {k: sp(k, n) for k in mem}
                metrics = DASH_METRICS_ALL
                note = "torch/triton install pin changed in benchmark.yml: baselines move, all speedups with them; latency flat; honest = new baselines"
            elif kind == "autotune":
                mem = cand
                hon = {k: sp(k, n, use_facts=n - 1) for k in mem}
                metrics = ("compile_time_geomean_s", "helion_speedup_geomean", "helion_latency_avg_ms")
                note = "HELION_AUTOTUNE_* env changed in benchmark.yml: compile time moves on every kernel, some configs change; honest = previous autotune setting"
            else:
                mem = cand
                hon = {k: sp(k, n) for k in mem}
                metrics = ("helion_latency_avg_ms",)
                note = "latency-measure-mode changed: latency moves, speedups flat"
            if mem:
                add("dashboard", "method_change", kind, mem, n, metrics, hon, note, change=ch,
                    step=sp(mem[0], n) - sp(mem[0], n, use_facts=n - 1))
        # pretuned suite
        pa_, pb_ = w.pfacts[n - 1], w.pfacts[n]
        if pa_ and pb_:
            pboth = [k for k in presence[n] if k in presence[n - 1] and k[0] == "pretuned"]
            grp: dict = {}
            for k in pboth:
                ia, ib = presence[n - 1][k], presence[n][k]
                if ia["config"] != ib["config"]:
                    path = f"{F.P_DIR}{k[2]}/_helion_aot_{k[2]}_cuda_{ib['sm']}.py"
                    ch = F.find_change(w.R, a, b, (path,), lambda s, path=path: w.R.tree(s).get(path))
                    add("pretuned", "real", "heuristics/config", [k], n, ("geomean",), {k: sp(k, n)},
                        f"checked-in config {path.rsplit('/', 1)[1]} regenerated; Helion time moves, baselines do not",
                        culprit=ch, step=sp(k, n) - sp(k, n - 1))
                    continue
                if ia["baselines"] != ib["baselines"]:
                    grp.setdefault("baseline", []).append(k)
                if ia["cudagraph"] != ib["cudagraph"]:
                    grp.setdefault("cudagraph", []).append(k)
            if pa_["bench"] != pb_["bench"]:
                grp.setdefault("timer", []).extend(pboth)
            if pa_["pins"] != pb_["pins"]:
                grp.setdefault("baseline", []).extend(pboth)
            for kind, mem in sorted(grp.items()):
                mem = sorted(set(k for k in mem if abs(math.log(max(sp(k, n), 1e-9) / max(sp(k, n, use_facts=n - 1), 1e-9))) >= 0.03))
                if not mem:
                    continue
                paths = {"baseline": (F.P_DIR, F.P_YML), "cudagraph": (F.P_DIR,), "timer": (F.P_BENCH,)}[kind]
                fn = {"baseline": lambda s: (F.pretuned_facts(w.R, s) or {}).get("pins", None) if False else
                      repr(sorted((kk, v["baselines"]) for kk, v in (F.pretuned_facts(w.R, s) or {"series": {}})["series"].items())) +
                      repr((F.pretuned_facts(w.R, s) or {}).get("pins")),
                      "cudagraph": lambda s: repr(sorted((kk, v["cudagraph"]) for kk, v in (F.pretuned_facts(w.R, s) or {"series": {}})["series"].items())),
                      "timer": lambda s: w.R.tree(s).get(F.P_BENCH)}[kind]
                ch = F.find_change(w.R, a, b, paths, fn)
                hon = {k: (sp(k, n) if kind in ("baseline", "cudagraph") else sp(k, n, use_facts=n - 1)) for k in mem}
                add("pretuned", "method_change", kind, mem, n, ("geomean",), hon,
                    {"baseline": "pretuned baselines set / pins changed: geomean vs the fastest baseline moves; honest = new baselines",
                     "cudagraph": "use_cudagraph() flipped in the kernel file; honest = the new (graph) timing",
                     "timer": "pretuned_kernels/_bench.py timing changed; honest = previous timer"}[kind],
                    change=ch, step=sp(mem[0], n) - sp(mem[0], n, use_facts=n - 1))
            for plat in set(pa_["runners"]) & set(pb_["runners"]):
                if pa_["runners"][plat] != pb_["runners"][plat]:
                    mem = [k for k in pboth if k[1] == plat]
                    if mem:
                        ch = F.find_change(w.R, a, b, (F.P_DISPATCH,),
                                           lambda s, plat=plat: (F.pretuned_facts(w.R, s) or {"runners": {}})["runners"].get(plat))
                        add("pretuned", "hardware", "runner" if pa_["runners"][plat][0] != pb_["runners"][plat][0] else "driver/toolchain",
                            mem, n, ("geomean",), {k: sp(k, n) for k in mem},
                            f"pretuned {plat} runner/image changed", change=ch,
                            step=sp(mem[0], n) - sp(mem[0], n - 1))
    # drop repo-read labels whose measured step is too small to be a fair event (the data moves < 3%)
    keep = []
    for L in labels:
        if L["cause"] == "hardware" or L["kind"] in ("autotune", "timer", "shapes"):
            keep.append(L)
            continue
        moved = []
        for (src, p, k) in L["members"]:
            key = (src, p, k)
            n = L["first_bad"]
            before = w.true_speedup(key, n, use_facts=n - 1)
            after = w.true_speedup(key, n)
            if before > 0 and after > 0 and abs(math.log(after / before)) >= 0.03:
                moved.append(key)
        if moved:
            L["members"] = sorted(moved)
            L["honest"] = {hk: hv for hk, hv in L["honest"].items()
                           if any(f"{m[1]}/{m[2]}" == hk for m in moved)}
            keep.append(L)
    labels[:] = keep

    # ------------------------------------------------------------ 2. planted events on real commits
    from . import Effect
    eff = w.effects

    def window_commits(n):
        return w.R.window(w.shas[n - 1], w.shas[n]) if w.shas[n - 1] != w.shas[n] else []

    def slice_of(c):
        subj = c.subject.lower()
        files = [f for f in c.files if f.startswith("helion/")]
        if not files:
            return None
        if any("/cute/" in f for f in files) or re.search(r"\[(cute|cutedsl)\]", subj):
            return ("code", ["b200_cute"])
        if any("pallas" in f for f in files) or re.search(r"\[(pallas|pallas-tpu|tpu)\]", subj):
            return ("code", ["tpu"])
        if re.search(r"\[rocm\]|amd|gfx9|mi3[0-9]0", subj) or any("rocm" in f or "gfx" in f for f in files):
            return ("code", ["mi350x", "mi325x"])
        if any(f.startswith("helion/autotuner/") for f in files):
            return ("heuristics/config", ["h100", "b200", "mi350x", "mi325x"])
        if any(f.startswith(("helion/_compiler/", "helion/runtime/", "helion/language/")) for f in files):
            return ("code", ["h100", "b200", "mi350x", "mi325x"])
        return None

    cands = []
    for n in range(6, N):
        for c in window_commits(n):
            s = slice_of(c)
            if s:
                cands.append((n, c, s))
    g.shuffle(cands)
    n_auto = len(labels)
    target = int(g.integers(36, 44))
    want_real = max(12, target - n_auto - 4)
    forced_late = 2
    planted_real = 0
    used_commits = set()

    def plant_real(n, c, s, keys_pref=None, factor=None, note_extra=""):
        nonlocal planted_real
        kind, plats = s
        pool = [k for k in presence[n] if k[0] == "dashboard" and k[1] in plats and k in presence[n - 1]
                and (n + 1 >= N or k in presence[min(n + 1, N - 1)])]
        pool = [k for k in pool if not busy(k, n)] if keys_pref is None else keys_pref
        if not pool:
            return None
        pool = sorted(pool)
        nm = int(min(len(pool), g.choice([1, 1, 2, 2, 3, 4])))
        mem = [pool[i] for i in sorted(g.choice(len(pool), nm, replace=False))] if keys_pref is None else pool
        if factor is None:
            if g.random() < 0.6:
                factor = math.exp(g.choice([g.uniform(0.09, 0.13), g.uniform(0.13, 0.35)]))
            else:
                factor = math.exp(-g.uniform(0.1, 0.3))
        e = Effect(f"real{len(eff)}", {k: {"h": factor, "ct": math.exp(g.normal(0, 0.1))} for k in mem}, n)
        eff.append(e)
        hon = {k: w.true_speedup(k, n) for k in mem}
        add("dashboard", "real", kind, mem, n, ("helion_speedup_geomean", "helion_latency_avg_ms"), hon,
            f"Helion-only step x{1 / factor:.3f} in speedup from a commit whose paths match the slice; baselines flat"
            + note_extra, culprit=c.sha, step=1 / factor - 1)
        used_commits.add(c.sha)
        planted_real += 1
        return mem, e

    # steps in the last nightlies
    late = [x for x in cands if x[0] >= N - 3]
    for n, c, s in late[:forced_late]:
        plant_real(n, c, s, note_extra=" (in the last nightlies)")
    pair_done = stray_done = 0
    for n, c, s in cands:
        if planted_real >= want_real:
            break
        if c.sha in used_commits or n >= N - 3:
            continue
        r = plant_real(n, c, s)
        if r is None:
            continue
        mem, e = r
        # two events a week apart on one series: a fix lands 5-8 nights later
        if pair_done < 2 and e.members[mem[0]]["h"] > 1.0:
            for m in range(n + 5, min(n + 9, N)):
                fix = [x for x in window_commits(m) if x.sha not in used_commits and slice_of(x)
                       and slice_of(x)[1] == s[1]]
                if fix and mem[0] in presence[m]:
                    f2 = 1.0 / e.members[mem[0]]["h"] * math.exp(g.uniform(-0.03, 0.03))
                    plant_real(m, fix[0], slice_of(fix[0]), keys_pref=[mem[0]], factor=f2,
                               note_extra=" (a second event a week after another on this series)")
                    pair_done += 1
                    break
        # a stray single-timer outlier on the night before the step (not labeled)
        elif stray_done < 2 and n >= 2:
            k = mem[0]
            eff.append(Effect(f"stray{len(eff)}", {k: {"h": math.exp(g.uniform(0.12, 0.18)), "hl": 1.0}}, n - 1,
                              nights=(n - 1,)))
            labels[-1]["note"] += " (a stray speedup-timer outlier sits on the night before, unlabeled)"
            stray_done += 1

    # hardware: thermal episodes that end, one outage
    plats_by_n = lambda n: sorted({k[1] for k in presence[n] if k[0] == "dashboard"})
    for ep in range(2):
        for _ in range(40):
            n = int(g.integers(10, N - 12))
            plat = plats_by_n(n)[int(g.integers(len(plats_by_n(n))))]
            length = int(g.integers(3, 8))
            keys = [k for k in presence[n] if k[0] == "dashboard" and k[1] == plat and k in presence[n - 1]
                    and all(k in presence[j] for j in range(n, n + length + 1))]
            if len(keys) < 3 or any(busy(k, n, 2) or busy(k, n + length, 2) for k in keys):
                continue
            mem = [k for k in keys if g.random() < 0.75] or keys
            common = math.exp(g.uniform(0.1, 0.22))
            eff.append(Effect(f"thermal{ep}", {k: {"h": common * math.exp(g.uniform(0.04, 0.09)), "b": common,
                                                   "hl": common * math.exp(g.uniform(0.04, 0.09))} for k in mem},
                              n, n + length))
            hon = {k: w.true_speedup(k, n, exclude=(f"thermal{ep}",)) for k in mem}
            add("dashboard", "hardware", "thermal", mem, n, ("helion_latency_avg_ms",) + DASH_METRICS_ALL, hon,
                f"{plat}: {length}-night throttling episode, most kernels and their baselines slow, then recovers; "
                "no commit; honest = the healthy level", end=n + length, step=-0.05)
            for j in range(n, n + length + 1):
                mark(mem, j)
            break
    for _ in range(40):
        n = int(g.integers(10, N - 8))
        plat = plats_by_n(n)[int(g.integers(len(plats_by_n(n))))]
        length = int(g.integers(2, 5))
        keys = [k for k in presence[n] if k[0] == "dashboard" and k[1] == plat and k in presence[n - 1]
                and all(k in presence[j] for j in range(n, n + length + 1))]
        if len(keys) < 3 or any(busy(k, n, 2) or busy(k, n + length, 2) for k in keys):
            continue
        w.outage[plat] = set(range(n, n + length))
        hon = {k: w.true_speedup(k, n) for k in keys}
        add("dashboard", "hardware", "outage", keys, n, ("helion_speedup_geomean",), hon,
            f"{plat}: runners unavailable for {length} nightlies (no results), then back at the same level",
            end=n + length)
        for j in range(n, n + length + 1):
            mark(keys, j)
        break

    # method: harness changes on real commits touching benchmarks/ (the measurement of some kernels)
    harness = 0
    for n in range(8, N - 1):
        if harness >= 2:
            break
        for c in window_commits(n):
            if not any(f.startswith("benchmarks/") for f in c.files) or c.sha in used_commits:
                continue
            if g.random() > 0.35:
                continue
            pool = sorted({k[2] for k in presence[n] if k[0] == "dashboard" and w.S(k).fam == "gpu"})
            if not pool:
                continue
            kern = pool[int(g.integers(len(pool)))]
            mem = [k for k in presence[n] if k[0] == "dashboard" and k[2] == kern and w.S(k).fam == "gpu"
                   and k in presence[n - 1] and not busy(k, n)]
            if not mem:
                continue
            f_ = math.exp(g.choice([-1, 1]) * g.uniform(0.1, 0.2))
            eid = f"harness{n}"
            eff.append(Effect(eid, {k: {"h": f_, "hl": 1.0} for k in mem}, n))
            hon = {k: w.true_speedup(k, n, exclude=(eid,)) for k in mem}
            add("dashboard", "method_change", "harness", mem, n, ("helion_speedup_geomean",), hon,
                f"{kern}: harness change in benchmarks/ changes what the speedup timer includes for Helion; "
                "do_bench latency flat; honest = previous level (agrees with latency)", change=c.sha, step=1 / f_ - 1)
            used_commits.add(c.sha)
            harness += 1
            break

    # pretuned: code commits that move a pretuned kernel
    pn = [n for n in range(N) if w.pfacts[n]]
    if pn:
        pc = [(n, c) for n in pn[3:] for c in window_commits(n)
              if any(f.startswith("helion/_compiler/") for f in c.files) and c.sha not in used_commits]
        g.shuffle(pc)
        done = 0
        for n, c in pc:
            if done >= 2:
                break
            pool = sorted(k for k in presence[n] if k[0] == "pretuned" and k in presence[n - 1] and not busy(k, n))
            if not pool:
                continue
            k = pool[int(g.integers(len(pool)))]
            f_ = math.exp(g.choice([-1, 1]) * g.uniform(0.1, 0.25))
            eff.append(Effect(f"preal{n}", {k: {"h": f_}}, n))
            add("pretuned", "real", "code", [k], n, ("geomean",), {k: w.true_speedup(k, n)},
                "Helion codegen change moves this pretuned kernel; baselines flat", culprit=c.sha, step=1 / f_ - 1)
            done += 1

    # ------------------------------------------------------------ 3. noise cases (must not be alerted)
    dash_keys = sorted({k for n in range(N) for k in presence[n] if k[0] == "dashboard"})
    made = 0
    for _ in range(600):
        if made >= 3:
            break
        k = dash_keys[int(g.integers(len(dash_keys)))]
        n0 = int(g.integers(max(5, N - 60), N - 12))
        if not all(k in presence[j] for j in range(n0, N)) or any(busy(k, j, 0) for j in range(n0 - 3, N)):
            continue
        if k in w.scatter:
            continue
        w.scatter[k] = (n0, float(g.uniform(0.05, 0.08)))
        add("dashboard", "noise", "scatter", [k], n0, ("helion_speedup_geomean",), {},
            "series turns noisy (per-timer scatter 5-8%) with no step: do not alert")
        made += 1
    made = 0
    for _ in range(200):
        if made >= 4:
            break
        k = dash_keys[int(g.integers(len(dash_keys)))]
        n0 = int(g.integers(5, N - 3))
        if k not in presence[n0] or busy(k, n0, 5) or k in w.scatter:
            continue
        f_ = math.exp(g.choice([-1, 1]) * g.uniform(0.18, 0.3))
        eff.append(Effect(f"blip{n0}{made}", {k: {"h": f_, "hl": f_ if g.random() < 0.5 else 1.0}}, n0, nights=(n0,)))
        add("dashboard", "noise", "outlier", [k], n0, ("helion_speedup_geomean",), {},
            "one-night blip that reverts the next nightly: do not alert")
        made += 1
    labels.sort(key=lambda L: (L["first_bad"], L["id"]))
