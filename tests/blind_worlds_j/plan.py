"""Which events a world holds: every measurement/machine change the files show between two
nightlies, plus real code changes, config regenerations, thermal episodes, outages and noise
planted on real commits (a Helion engineer's mapping of subject/paths to the series they touch)."""
from __future__ import annotations

import re

import numpy as np

from . import facts as F
from .model import Effect, rng_for
from .world import Label

SPD = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
LAT = "helion_latency_avg_ms"
CMP = "compile_time_geomean_s"
HELION_CODE = re.compile(r"^helion/")
KERNEL_WORDS = {"softmax": ["softmax"], "layer_norm": ["layer_norm", "layernorm"], "rms_norm": ["rms_norm", "rmsnorm"],
                "gemm": ["gemm", "matmul", "mma", "tcgen05", "wgmma"], "flash_attention": ["attention", "attn"],
                "cross_entropy": ["cross_entropy"], "welford": ["welford"], "jsd": ["jsd"], "kl_div": ["kl_div"],
                "grouped_gemm": ["grouped"], "int4_gemm": ["int4"], "rope": ["rope"], "sum": ["reduction", "sum"],
                "vector_add": ["pointwise", "elementwise"], "vector_exp": ["pointwise", "elementwise"],
                "bmm": ["bmm", "matmul", "dot"], "mamba2_chunk_scan": ["mamba"], "mamba2_chunk_state": ["mamba"],
                "gdn_fwd_h": ["gdn", "delta"]}


class Planner:
    def __init__(self, w):
        self.w = w
        self.N = len(w.nights)
        self.r = rng_for("plan", w.seed, self.N)
        self.busy: dict = {}   # key -> nights with an event
        self.specs: list = []
        self.used: set = set()  # commits already carrying a planted label

    # ------------------------------------------------------------ helpers
    def window(self, n: int, pre: bool = False, lg: int | None = None) -> list:
        """First-parent commits in (nightly lg (default n-1), nightly n]."""
        w = self.w
        lg = n - 1 if lg is None else lg
        a = w.nights[lg].p_full_sha if pre else w.nights[lg].full_sha
        b = w.nights[n].p_full_sha if pre else w.nights[n].full_sha
        if a is None or b is None:
            return []
        return w.commits[w.fp_index[a] + 1: w.fp_index[b] + 1]

    def night_of_commit(self, sha: str, pre: bool = False) -> int | None:
        i = self.w.fp_index[sha]
        for n in range(1, self.N):
            s = self.w.nights[n].p_full_sha if pre else self.w.nights[n].full_sha
            p = self.w.nights[n - 1].p_full_sha if pre else self.w.nights[n - 1].full_sha
            if s and p and self.w.fp_index[p] < i <= self.w.fp_index[s]:
                return n
        return None

    def first_change(self, n: int, fn, pre: bool = False, paths=(), lg: int | None = None):
        """The first commit of the window whose parsed value differs from last-good's."""
        lg = n - 1 if lg is None else lg
        base = fn(self.w.nights[lg].p_full_sha if pre else self.w.nights[lg].full_sha)
        for c in self.window(n, pre, lg):
            if paths and not any(p in c.files for p in paths):
                continue
            if fn(c.sha) != base:
                return c.sha
        win = self.window(n, pre, lg)
        return win[-1].sha if win else None

    def free(self, key, n, gap=4) -> bool:
        return all(abs(n - m) > gap for m in self.busy.get(key, ()))

    def mark(self, keys, n, end=None):
        for k in keys:
            self.busy.setdefault(k, []).append(n)
            if end is not None:
                self.busy[k].append(end)

    def present(self, n, plat=None):
        """Dashboard series present at nights n-1 and n (and on plat)."""
        a = set(self.w.series_at(n - 1)) & set(self.w.series_at(n))
        return sorted(s for s in a if plat is None or s[0] == plat)

    def prev_present(self, n, s, back=12):
        for m in range(n - 1, max(-1, n - 1 - back), -1):
            if tuple(s) in set(self.w.series_at(m)) and s[0] not in self.w.outages.get(m, ()):
                return m
        return None

    def returning(self, n):
        """Series present at n that were present within the last nights (with their last night)."""
        return sorted(s for s in self.w.series_at(n) if self.prev_present(n, s) is not None)

    def add(self, **spec):
        self.specs.append(spec)
        keys = [(spec["source"][0],) + m for m in spec["members"]]
        self.mark(keys, spec["n"], spec.get("end"))

    # ------------------------------------------------------------ parsed changes
    def parsed(self):
        w = self.w
        for n in range(1, self.N):
            f0, f1 = w.facts[n - 1], w.facts[n]
            if f0.sha == f1.sha:
                continue
            # machines per alias
            for alias in sorted(set(f0.aliases) & set(f1.aliases)):
                m0, m1 = f0.aliases[alias], f1.aliases[alias]
                if m0 == m1:
                    continue
                kind = "runner" if m0["runner"] != m1["runner"] else "driver/toolchain"
                mem = self.present(n, alias)
                if not mem:
                    continue
                sha = self.first_change(n, lambda s, a=alias: F.parse_aliases(w.blobs.text(s, F.DISPATCH) or "").get(a),
                                        paths=(F.DISPATCH,))
                self.add(source="dashboard", cause="hardware", kind=kind, members=mem, metrics=SPD + (LAT,),
                         n=n, end=None, culprit=None, change=sha, honest="before",
                         note=f"{alias}: {m0} -> {m1}")
            # torch pin (all GPU lanes)
            if f0.torch_pin != f1.torch_pin and f0.torch_pin and f1.torch_pin:
                mem = [s for s in self.present(n) if s[0] != "tpu" and self.moved(n, s, "any", 0.025)]
                if mem:
                    sha = self.first_change(n, lambda s: F.parse_bench_yml(w.blobs.text(s, F.BENCH) or "")[2],
                                            paths=(F.BENCH,))
                    self.add(source="dashboard", cause="hardware", kind="driver/toolchain", members=mem,
                             metrics=SPD + (LAT,), n=n, end=None, culprit=None, change=sha, honest="before",
                             note=f"torch pin {f0.torch_pin} -> {f1.torch_pin} in benchmark.yml")
            if f0.autotune_env != f1.autotune_env:
                mem = [s for s in self.present(n) if s[0] != "tpu" and not w.is_lin(n, *s)
                       and self.moved(n, s, "helion", 0.025)]
                if mem:
                    sha = self.first_change(n, lambda s: F.parse_bench_yml(w.blobs.text(s, F.BENCH) or "")[0],
                                            paths=(F.BENCH,))
                    self.add(source="dashboard", cause="method_change", kind="autotune", members=mem,
                             metrics=("helion_speedup_geomean", LAT, CMP), n=n, end=None, culprit=None, change=sha,
                             honest="after", note=f"HELION_AUTOTUNE_* {f0.autotune_env} -> {f1.autotune_env}")
            if f0.tb_pin != f1.tb_pin and f0.tb_pin and f1.tb_pin:
                mem = [s for s in self.present(n) if self.moved(n, s, "base", 0.03)]
                if mem:
                    sha = self.first_change(n, lambda s: (w.blobs.text(s, F.TB_PIN) or "").strip(), paths=(F.TB_PIN,))
                    self.add(source="dashboard", cause="method_change", kind="baseline", members=mem, metrics=SPD,
                             n=n, end=None, culprit=None, change=sha, honest="after",
                             note=f"tritonbench pin {f0.tb_pin[:8]} -> {f1.tb_pin[:8]}: baseline implementations changed")
            if f0.timer != f1.timer:
                mem = [s for s in self.present(n) if s[0] != "tpu" and not w.is_lin(n, *s)]
                sha = self.first_change(n, lambda s: F.parse_bench_yml(w.blobs.text(s, F.BENCH) or "")[1],
                                        paths=(F.BENCH,))
                if mem:
                    self.add(source="dashboard", cause="method_change", kind="timer", members=mem,
                             metrics=SPD + (LAT,), n=n, end=None, culprit=None, change=sha, honest="after",
                             note=f"benchmark.yml timer flags {f0.timer} -> {f1.timer}")
            # per kernel options in benchmarks/run.py
            groups: dict = {}
            for (plat, k) in self.returning(n):
                lg = self.prev_present(n, (plat, k))
                if w.is_lin(n, plat, k):
                    s0, s1 = w.method_state(lg, plat, k), w.method_state(n, plat, k)
                    if s0["shapes"] != s1["shapes"]:
                        groups.setdefault(("linshapes", k, lg), []).append((plat, k))
                    continue
                s0, s1 = w.method_state(lg, plat, k), w.method_state(n, plat, k)
                if s0["cudagraph"] != s1["cudagraph"] and plat != "tpu":
                    groups.setdefault(("cudagraph", k, lg), []).append((plat, k))
                if len(s0["shapes"]) != len(s1["shapes"]):
                    groups.setdefault(("shapes", k, lg), []).append((plat, k))
                if s0["baseline"] != s1["baseline"] and s0["baseline"] and s1["baseline"]:
                    groups.setdefault(("baseline", k, lg), []).append((plat, k))
            lin = [(m, lg) for (kind, k, lg), mem in groups.items() if kind == "linshapes" for m in mem]
            for lg in sorted({lg for _, lg in lin}):
                mem = sorted(m for m, g in lin if g == lg)
                sha = self.first_change(n, lambda s: F.parse_linattn(w.blobs.text(s, F.LINATTN) or "")[:2],
                                        paths=(F.LINATTN,), lg=lg)
                self.add(source="dashboard", cause="method_change", kind="shapes", members=mem,
                         metrics=("helion_speedup_geomean", LAT), n=n, lg=lg, end=None, culprit=None, change=sha,
                         honest="after", note="benchmarks/run_linattn.py SHAPES changed")
            for (kind, k, lg), mem in sorted(groups.items(), key=lambda x: str(x[0])):
                if kind == "linshapes":
                    continue
                val = w.method_state(n, *mem[0])
                field = {"cudagraph": "cudagraph", "shapes": "num_inputs", "baseline": "baseline"}[kind]
                sha = self.first_change(n, lambda s, k=k, fl=field: F.parse_km(w.blobs.text(s, F.RUN_PY) or "").get(k, {}).get(fl),
                                        paths=(F.RUN_PY,), lg=lg)
                metrics = {"cudagraph": SPD, "shapes": SPD + (LAT, CMP), "baseline": SPD}[kind]
                self.add(source="dashboard", cause="method_change", kind=kind, members=mem, metrics=metrics, n=n,
                         lg=lg, end=None, culprit=None, change=sha,
                         honest=("cg" if kind == "cudagraph" else "after"),
                         note=f"benchmarks/run.py KERNEL_MAPPINGS[{k}] {field} changed "
                              f"(cudagraph={val['cudagraph']}, {len(val['shapes'])} shapes, baseline={val['baseline']})")
        self.parsed_pretuned()

    def parsed_pretuned(self):
        w = self.w
        for n in range(1, self.N):
            f0, f1 = w.p_facts[n - 1], w.p_facts[n]
            if not f0 or not f1 or f0.sha == f1.sha:
                continue
            both = sorted(set(w.p_series_at(n - 1)) & set(w.p_series_at(n)))
            groups: dict = {}
            for hw, k in both:
                i0, i1 = f0.pretuned[k], f1.pretuned[k]
                if i0["baselines"] != i1["baselines"] and i0["baselines"] and i1["baselines"]:
                    groups.setdefault(("baseline", k), []).append((hw, k))
                if i0["cudagraph"] != i1["cudagraph"]:
                    groups.setdefault(("cudagraph", k), []).append((hw, k))
                if i0["aot"].get(hw) != i1["aot"].get(hw):
                    groups.setdefault(("config", k, hw), []).append((hw, k))
            for gk, mem in sorted(groups.items()):
                kind, k = gk[0], gk[1]
                path = f"pretuned_kernels/{k}/{k}.py"
                if kind in ("baseline", "cudagraph"):
                    fld = "baselines" if kind == "baseline" else "cudagraph"
                    sha = self.first_change(n, lambda s, p=path, fl=fld: F.parse_pretuned_kernel(w.blobs.text(s, p))[fl],
                                            pre=True, paths=(path,))
                    self.add(source="pretuned", cause="method_change", kind=kind, members=mem, metrics=("geomean",),
                             n=n, end=None, culprit=None, change=sha, honest=("cg" if kind == "cudagraph" else "after"),
                             note=f"{path}: {fld} {f0.pretuned[k][fld]} -> {f1.pretuned[k][fld]}")
                else:
                    hw = gk[2]
                    aot0 = dict(f0.pretuned[k]["aot"].get(hw, ()))
                    sha = None
                    for c in self.window(n, pre=True):
                        if any(p in aot0 or p.startswith(f"pretuned_kernels/{k}/_helion_aot_") for p in c.files
                               if p.startswith(f"pretuned_kernels/{k}/")):
                            sha = c.sha
                            break
                    if sha is None:
                        continue
                    rr = rng_for("regen", w.seed, k, hw, n)
                    better = rr.random() < 0.6
                    step = float(rr.uniform(0.06, 0.15))
                    f = {"helion": (1 - step) if better else (1 + step)}
                    w.effects.append(Effect(n, None, frozenset({("p", hw, k)}), f, tag=f"regen-{k}-{hw}-{n}"))
                    self.add(source="pretuned", cause="real", kind="heuristics/config", members=mem,
                             metrics=("geomean",), n=n, end=None, culprit=sha, change=None, honest="after",
                             direction="improvement" if better else "regression",
                             note=f"checked-in {hw} config of {k} regenerated ({'faster' if better else 'slower'} by ~{step:.0%})")
            if f0.p_bench_blob != f1.p_bench_blob and f0.p_bench_blob and f1.p_bench_blob:
                sha = next((c.sha for c in self.window(n, pre=True) if F.P_BENCH_PY in c.files), None)
                if sha:
                    rr = rng_for("pbench", w.seed, n)
                    mem, fx = [], {}
                    for s_ in both:
                        fh, fb = float(rr.uniform(1.0, 1.12)), float(rr.uniform(1.0, 1.12))
                        if abs(fb / fh - 1) >= 0.03:
                            mem.append(s_)
                            w.effects.append(Effect(n, None, frozenset({("p",) + s_}), {"helion": fh, "base": fb},
                                                    tag=f"pbench-{n}"))
                    if mem:
                        self.add(source="pretuned", cause="method_change", kind="timer", members=mem,
                                 metrics=("geomean",), n=n, end=None, culprit=None, change=sha, honest="after",
                                 note=f"pretuned_kernels/_bench.py timing changed ({w.commits[w.fp_index[sha]].subject[:70]})")
            if f0.p_torch_pin != f1.p_torch_pin and f0.p_torch_pin and f1.p_torch_pin:
                mem = [s for s in both]
                eff = Effect(n, None, frozenset(("p",) + s for s in mem), {"base": 0.93, "helion": 0.99}, tag="ppin")
                w.effects.append(eff)
                sha = self.first_change(n, lambda s: F.parse_bench_yml(w.blobs.text(s, F.P_BENCH) or "")[2],
                                        pre=True, paths=(F.P_BENCH,))
                self.add(source="pretuned", cause="hardware", kind="driver/toolchain", members=mem,
                         metrics=("geomean",), n=n, end=None, culprit=None, change=sha, honest="before",
                         note=f"pretuned torch pin {f0.p_torch_pin} -> {f1.p_torch_pin}")

    def moved(self, n, s, what, thr) -> bool:
        w = self.w
        key = ("d",) + tuple(s)
        f0, f1 = w.factors(n - 1, key), w.factors(n, key)
        comps = {"helion": ("helion", "compile"), "base": ("base",)}.get(what, ("helion", "base", "triton", "tc"))
        return any(abs(f1[c] / f0[c] - 1) >= thr for c in comps)

    # ------------------------------------------------------------ planted events
    def slice_of(self, c) -> list:
        s = c.subject.lower()
        files = c.files
        if not any(HELION_CODE.match(f) for f in files):
            return []
        if re.search(r"\bcute\b|cutedsl|tcgen05", s) or any("/cute/" in f for f in files):
            return ["b200_cute"]
        if re.search(r"pallas|\btpu\b|mosaic|\bjax\b", s) or any("/pallas/" in f for f in files):
            return ["tpu"]
        if re.search(r"\[rocm\]|amd|gfx|hip\b", s) or any("gfx" in f or "rocm" in f for f in files):
            return ["mi350x", "mi325x"]
        if any(f.startswith(("docs/", "test/")) for f in files) and not any(
                f.startswith(("helion/_compiler", "helion/autotuner", "helion/runtime", "helion/language")) for f in files):
            return []
        if any(f.startswith(("helion/_compiler", "helion/autotuner", "helion/runtime", "helion/language")) for f in files):
            return ["h100", "b200", "mi350x", "mi325x"]
        return []

    def pick_kernels(self, c, plat, n, r, many=False):
        ks = [k for (p, k) in self.present(n, plat) if not self.w.is_lin(n, p, k)]
        if not ks:
            return []
        text = (c.subject + " " + " ".join(c.files)).lower()
        hit = [k for k in ks if any(wd in text for wd in KERNEL_WORDS.get(k, [k]))]
        if hit:
            return sorted(hit)[:3]
        m = int(r.integers(3, 6)) if many else int(r.integers(1, 4))
        return sorted(r.choice(ks, size=min(m, len(ks)), replace=False).tolist())

    def real_event(self, c, n, r, plats=None, mag=None, direction=None, end=None, note="", members=None,
                   kind="code"):
        if c.sha in self.used:
            return False
        plats = plats or self.slice_of(c)
        plats = [p for p in plats if p in self.w.facts[n].kernels]
        if not plats:
            return False
        if members is None:
            many = "autotun" in c.subject.lower() or any(f.startswith("helion/autotuner") for f in c.files)
            members = []
            chosen = self.pick_kernels(c, plats[0], n, r, many)
            for p in plats[:2]:
                members += [(p, k) for k in chosen if (p, k) in set(self.present(n, p))]
        members = [m for m in members if self.free(("d",) + m, n) and (end is None or self.free(("d",) + m, end))]
        if not members:
            return False
        if direction is None:
            direction = "regression" if r.random() < 0.6 else "improvement"
        mag = mag if mag is not None else float(r.uniform(0.08, 0.22))
        f = 1 + mag if direction == "regression" else 1 / (1 + mag)
        self.used.add(c.sha)
        comp = float(r.uniform(0.9, 1.15))
        self.w.effects.append(Effect(n, end, frozenset(("d",) + m for m in members), {"helion": f, "compile": comp},
                                     tag=f"real-{c.sha[:8]}-{n}"))
        self.add(source="dashboard", cause="real", kind=kind, members=members, metrics=("helion_speedup_geomean", LAT),
                 n=n, end=end, culprit=c.sha, change=None, honest="after", direction=direction,
                 note=note or f"{c.subject} ({'slower' if direction == 'regression' else 'faster'} Helion by ~{mag:.0%})")
        return True

    def planted(self):
        w, r, N = self.w, self.r, self.N
        lo = 3
        cands = []
        for n in range(lo, N):
            for c in self.window(n):
                if self.slice_of(c):
                    cands.append((n, c))
        r.shuffle(cands)
        # a reverted regression, when the history has a revert of a code commit inside the window
        done_revert = False
        for n_rev in range(lo, N):
            for c in self.window(n_rev):
                m = re.match(r'Revert "(.*)"', c.subject)
                if not m or done_revert:
                    continue
                orig = next((x for x in w.commits if x.subject.startswith(m.group(1)[:60]) and x.date < c.date
                             and x.sha != c.sha), None)
                if orig is None:
                    continue
                n0 = self.night_of_commit(orig.sha)
                if n0 is None or n0 < lo or n_rev - n0 < 2 or not self.slice_of(orig):
                    continue
                plats = self.slice_of(orig)
                if self.real_event(orig, n0, r, plats=plats, direction="regression", mag=float(r.uniform(0.12, 0.2)),
                                   end=n_rev, note=f"{orig.subject}; reverted by {c.sha[:8]} {c.subject[:60]}"):
                    done_revert = True
        # one step in the last three nightlies
        for n in range(N - 1, max(N - 4, lo), -1):
            if any(self.real_event(c, n, r) for c in self.window(n) if self.slice_of(c)):
                break
        # a modest 7-10% step on a 2.5-4% scatter series
        for n, c in cands:
            if n < 10 or n > N - 5:
                continue
            plats = [p for p in self.slice_of(c) if p in w.facts[n].kernels and p != "tpu"]
            if not plats:
                continue
            ks = [s for s in self.present(n, plats[0]) if self.free(("d",) + s, n, 12) and not w.is_lin(n, *s)]
            if not ks:
                continue
            s = ks[int(r.integers(len(ks)))]
            w.scatter_over[("d",) + s] = (0, float(r.uniform(0.025, 0.04)))
            if self.real_event(c, n, r, members=[s], mag=float(r.uniform(0.075, 0.1)),
                               note=f"{c.subject} (modest step on a noisy series)"):
                break
        # two steps a week apart in one series
        two = False
        for n, c in cands:
            if two or n > N - 9:
                continue
            for c2 in [x for m in range(n + 6, min(n + 9, N)) for x in self.window(m)]:
                if set(self.slice_of(c2)) & set(self.slice_of(c)) and c2.sha != c.sha:
                    n2 = self.night_of_commit(c2.sha)
                    plats = [p for p in self.slice_of(c) if p in w.facts[n].kernels and p in w.facts[n2].kernels]
                    if not plats:
                        continue
                    ks = [s for s in self.present(n, plats[0]) if self.free(("d",) + s, n, 8)
                          and s in set(self.present(n2, plats[0])) and not w.is_lin(n, *s)]
                    if not ks:
                        continue
                    s = ks[int(r.integers(len(ks)))]
                    if c.sha in self.used or c2.sha in self.used or not self.free(("d",) + s, n2, 8):
                        continue
                    d = "regression" if r.random() < 0.5 else "improvement"
                    self.real_event(c, n, r, members=[s], direction=d, note=f"{c.subject} (first of two steps)")
                    self.busy[("d",) + s] = [m for m in self.busy[("d",) + s] if m != n]  # allow the second
                    self.real_event(c2, n2, r, members=[s], direction=d, note=f"{c2.subject} (second step a week later)")
                    self.mark([("d",) + s], n)
                    two = True
                    break
        # ordinary real code changes
        count = 0
        for n, c in cands:
            if count >= 7:
                break
            if self.real_event(c, n, r):
                count += 1
        # dashboard heuristics/config: device heuristics or default-config commits
        for n, c in cands:
            if any(re.search(r"heuristic|default_config|sm90|sm100|gfx950", f) for f in c.files if f.startswith("helion/")):
                if self.real_event(c, n, r, kind="heuristics/config"):
                    break
        self.harness()
        self.thermal_outage()
        self.noise()

    def compile_timer(self):
        """Commits that change how the harness measures compile time: a timer change on that metric."""
        w, r = self.w, self.r
        pat = re.compile(r"(fix|sync).*compile[- ]time|compile[- ]time.*(fix|sync)", re.I)
        for n in range(3, self.N):
            for c in self.window(n):
                if c.sha in self.used or not pat.search(c.subject) or not any(
                        f in c.files for f in (F.RUN_PY, "benchmarks/run_tpu.py", F.BENCH)):
                    continue
                tpu = bool(re.search(r"\[(pallas|tpu)", c.subject.lower())) or (
                    "benchmarks/run_tpu.py" in c.files and F.RUN_PY not in c.files)
                mem = [s for s in self.present(n) if (s[0] == "tpu") == tpu and not w.is_lin(n, *s)
                       and self.free(("d",) + s, n, 2)]
                if len(mem) < 3:
                    continue
                f = float(r.uniform(0.55, 0.8)) if r.random() < 0.6 else float(r.uniform(1.25, 1.6))
                w.effects.append(Effect(n, None, frozenset(("d",) + s for s in mem), {"compile": f}, tag=f"ctimer-{n}"))
                self.used.add(c.sha)
                self.add(source="dashboard", cause="method_change", kind="timer", members=mem, metrics=(CMP,), n=n,
                         end=None, culprit=None, change=c.sha, honest="after",
                         note=f"{c.subject}: compile time measured differently (x{f:.2f}); kernels unchanged")

    def harness(self):
        self.compile_timer()
        w, r = self.w, self.r
        pat = re.compile(r"subprocess|harness|twice|timeout|measure|sync|warmup|rep\b|timing", re.I)
        done = set()
        for n in range(3, self.N):
            for c in self.window(n):
                tpu = F.RUN_PY not in c.files and "benchmarks/run_tpu.py" in c.files
                gpu = F.RUN_PY in c.files
                if not (tpu or gpu) or not pat.search(c.subject) or c.sha in self.used:
                    continue
                lane = "tpu" if tpu or re.search(r"\[(pallas|tpu)", c.subject.lower()) else "gpu"
                if lane in done:
                    continue
                mem = [s for s in self.present(n) if (s[0] == "tpu") == (lane == "tpu") and not w.is_lin(n, *s)
                       and self.free(("d",) + s, n, 3)]
                if len(mem) < 3:
                    continue
                pick = set(r.choice(len(mem), size=min(len(mem), int(r.integers(4, 9))), replace=False).tolist())
                mem = [s for i, s in enumerate(mem) if i in pick]
                f = float(r.uniform(1.07, 1.14)) if r.random() < 0.5 else 1 / float(r.uniform(1.07, 1.14))
                w.effects.append(Effect(n, None, frozenset(("d",) + s for s in mem), {"spd": f}, tag=f"harness-{n}"))
                self.used.add(c.sha)
                self.add(source="dashboard", cause="method_change", kind="harness", members=mem,
                         metrics=("helion_speedup_geomean",), n=n, end=None, culprit=None, change=c.sha,
                         honest="after", note=f"{c.subject}: Helion's speedup timer reads differently; latency unchanged")
                done.add(lane)

    def thermal_outage(self):
        w, r, N = self.w, self.r, self.N
        plats_all = sorted({s[0] for n in range(N) for s in w.series_at(n)})
        for i in range(2):
            for _ in range(40):
                p = plats_all[int(r.integers(len(plats_all)))]
                n = int(r.integers(5, max(6, N - 8)))
                dur = int(r.integers(3, 7))
                if n + dur >= N:
                    continue
                mem = [s for s in self.present(n, p) if all(self.free(("d",) + s, m, 2) for m in range(n, n + dur + 1))]
                if len(mem) < 3 or len(mem) < 0.7 * len(self.present(n, p)):
                    continue
                f = float(r.uniform(1.07, 1.15))
                fx = {"base": f ** 0.9, "triton": f ** 0.9, "tc": f ** 0.9, "helion": f ** 1.15, "lat": 1.0}
                w.effects.append(Effect(n, n + dur, frozenset(("d",) + s for s in mem), fx, tag=f"thermal-{n}"))
                self.add(source="dashboard", cause="hardware", kind="thermal", members=mem, metrics=SPD + (LAT,),
                         n=n, end=n + dur, culprit=None, change=None, honest="before",
                         note=f"{p} runners throttling for {dur} nights")
                break
        for i in range(int(r.integers(1, 3))):
            for _ in range(40):
                p = plats_all[int(r.integers(len(plats_all)))]
                n = int(r.integers(5, max(6, N - 6)))
                dur = int(r.integers(2, 5))
                if n + dur >= N:
                    continue
                mem = self.present(n, p)
                if not mem or any(not self.free(("d",) + s, m, 2) for s in mem for m in (n, n + dur)):
                    continue
                if set(self.present(n + dur, p)) != set(mem):
                    continue
                for m in range(n, n + dur):
                    w.outages.setdefault(m, set()).add(p)
                self.add(source="dashboard", cause="hardware", kind="outage", members=mem,
                         metrics=("helion_speedup_geomean",), n=n, end=n + dur, culprit=None, change=None,
                         honest="before", note=f"{p} produced no results for {dur} nights")
                break

    def noise(self):
        w, r, N = self.w, self.r, self.N
        allk = sorted({s for n in range(N) for s in w.series_at(n)})

        def pick(n, gap=4):
            for _ in range(50):
                s = allk[int(r.integers(len(allk)))]
                if s in set(w.series_at(n)) and n > 0 and s in set(w.series_at(n - 1)) and \
                        self.free(("d",) + s, n, gap) and p_ok(s, n):
                    return s
            return None

        def p_ok(s, n):
            return all(s[0] not in w.outages.get(m, ()) for m in range(n - 1, n + 3))

        for i in range(3):  # one-night outliers on one timer
            n = int(r.integers(4, N - 2))
            s = pick(n)
            if not s or n + 1 >= N or s not in set(w.series_at(n + 1)):
                continue
            timer = ["helion", "base", "lat"][i % 3]
            v = float(r.uniform(1.18, 1.3))
            w.spikes[(n, ("d",) + s)] = {timer: v}
            met = {"helion": ("helion_speedup_geomean",), "base": SPD, "lat": (LAT,)}[timer]
            self.add(source="dashboard", cause="noise", kind="outlier", members=[s], metrics=met, n=n, end=n + 1,
                     culprit=None, change=None, honest=None, note=f"one-night {timer} timer outlier x{v:.2f}")
        for i in range(3):  # 1-2 night blips on Helion
            n = int(r.integers(4, N - 3))
            s = pick(n)
            dur = 1 + i % 2
            if not s or any(s not in set(w.series_at(m)) for m in range(n, n + dur + 1)):
                continue
            v = float(r.uniform(1.1, 1.18))
            v = v if r.random() < 0.6 else 1 / v
            w.effects.append(Effect(n, n + dur, frozenset({("d",) + s}), {"helion": v}, tag=f"blip-{n}"))
            self.add(source="dashboard", cause="noise", kind="blip", members=[s],
                     metrics=("helion_speedup_geomean", LAT), n=n, end=n + dur, culprit=None, change=None,
                     honest=None, note=f"{dur}-night blip x{v:.2f} that reverts with no commit")
        for _ in range(20):  # a series that turns noisy
            n = int(r.integers(N // 3, 2 * N // 3))
            s = pick(n, gap=6)
            if not s or ("d",) + s in w.scatter_over or not all(s in set(w.series_at(m)) for m in range(n, min(N, n + 5))):
                continue
            w.scatter_over[("d",) + s] = (n, float(r.uniform(0.06, 0.09)))
            self.add(source="dashboard", cause="noise", kind="scatter", members=[s], metrics=SPD + (LAT,), n=n,
                     end=None, culprit=None, change=None, honest=None, note="series turns high-scatter (shared runner)")
            break
        # kernels that crashed outright one night (no records; the dashboard shows them missing): unlabeled
        rr = rng_for("crash", w.seed, N)
        for n in range(1, N):
            for s_ in w.series_at(n):
                if rr.random() < 0.003 and self.free(("d",) + s_, n, 1):
                    w.missing.add((n,) + s_)
        # a pretuned outlier
        pn = [n for n in range(2, N - 1) if w.nights[n].p_run_id and w.nights[n - 1].p_run_id]
        if pn:
            n = pn[int(r.integers(len(pn)))]
            ps = [s for s in w.p_series_at(n) if self.free(("p",) + s, n) and s in set(w.p_series_at(n - 1))
                  and s in set(w.p_series_at(min(n + 1, N - 1)))]
            if ps:
                s = ps[int(r.integers(len(ps)))]
                w.spikes[(n, ("p",) + s)] = {"helion": float(r.uniform(1.2, 1.3))}
                self.add(source="pretuned", cause="noise", kind="outlier", members=[s], metrics=("geomean",), n=n,
                         end=n + 1, culprit=None, change=None, honest=None, note="one-night pretuned timer outlier")

    # ------------------------------------------------------------ labels
    def finalize(self):
        w = self.w
        out = []
        for i, sp in enumerate(sorted(self.specs, key=lambda s: (s["n"], s["source"], s["kind"], str(s["members"])))):
            n, pre = sp["n"], sp["source"] == "pretuned"
            lg = sp.get("lg")
            lg = n - 1 if lg is None else lg
            rid = (lambda m: w.nights[m].p_run_id) if pre else (lambda m: w.nights[m].run_id)
            end = sp.get("end")
            hon = {}
            if sp["cause"] != "noise" and sp["kind"] != "outage":
                for (p, k) in sp["members"]:
                    key = ("p" if pre else "d", p, k)
                    if sp["honest"] == "before":
                        v = w.clean(lg, key)
                    elif sp["honest"] == "cg":
                        before_cg = (w.p_facts[n - 1].pretuned[k]["cudagraph"] if pre
                                     else w.method_state(lg, p, k)["cudagraph"])
                        v = w.clean(lg, key) if before_cg else w.clean(n, key)
                    else:
                        v = w.clean(n, key)
                    hon[f"{p}/{k}"] = v
            direction = sp.get("direction")
            if direction is None:
                if hon:
                    ups = sum(1 for (p, k) in sp["members"]
                              if w.clean(n, ("p" if pre else "d", p, k)) > w.clean(lg, ("p" if pre else "d", p, k)))
                    direction = "improvement" if ups * 2 > len(sp["members"]) else "regression"
                else:
                    direction = "none"
            out.append(Label(id=f"j{w.seed}-{i:03d}", source=sp["source"], cause=sp["cause"], kind=sp["kind"],
                             direction=direction, members=tuple(tuple(m) for m in sp["members"]),
                             metrics=tuple(sp["metrics"]), first_bad_run_id=rid(n), last_good_run_id=rid(lg),
                             end_run_id=rid(end) if end is not None and end < self.N else None,
                             culprit_sha=sp["culprit"], change_sha=sp["change"], honest_speedup=hon,
                             note=sp["note"]))
        w.labels = out


def plan(w):
    p = Planner(w)
    p.parsed()
    p.planted()
    p.finalize()
