"""Events of world Q and their labels.

1. Every change the real files show between two consecutive nightlies is found (runner, image,
   torch / CuTe DSL / TPU / tritonbench / FLA pins, autotune env, and per kernel the shapes,
   `--cudagraph` and baseline implementation; on the pretuned side the platforms, torch pin, each
   kernel's baselines, `use_cudagraph()`, shapes, checked-in configs and the `_bench.py` timer) with
   the commit that made it. Measurement changes (shapes, cudagraph, baseline, timer) move the
   numbers through the model itself; for environment changes and regenerated configs the planner
   decides whether and how much they move, as they do in life (a pin bump often moves nothing).
2. Events without a commit of their own are planted: real regressions / improvements on real
   Helion commits whose paths and tag match the slice they move, thermal and bad-node episodes,
   outages, and noise (one-night outliers, a series turning noisy).
3. Labels are read back from the noise-free model: a series is a member when its metrics step by
   at least 3.5 % at the event's first bad nightly.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np

from . import facts as F
from .model import family, rng
from .world import Effect

THRESH = math.log(1.035)
DMETRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
            "helion_latency_avg_ms", "compile_time_geomean_s")
GPU_TRITON = ("h100", "b200", "mi325x", "mi350x")

KERNEL_WORDS = {
    "layer_norm": ("layer_norm", "layernorm"), "rms_norm": ("rms_norm", "rmsnorm"), "softmax": ("softmax",),
    "cross_entropy": ("cross_entropy",), "flash_attention": ("attention", "attn"), "gemm": ("matmul", "gemm", "dot"),
    "grouped_gemm": ("grouped",), "int4_gemm": ("int4",), "welford": ("welford",), "jsd": ("jsd",),
    "kl_div": ("kl_div",), "rope": ("rope", "rotary"), "mamba2_chunk_scan": ("mamba",), "mamba2_chunk_state": ("mamba",),
    "gdn_fwd_h": ("gdn", "gated_delta"), "sum": ("sum", "reduction"), "vector_add": ("add", "pointwise", "elementwise"),
    "vector_exp": ("exp", "pointwise", "elementwise"), "bmm": ("bmm", "matmul"),
}


class Planner:
    def __init__(self, w):
        self.w = w
        self.N = len(w.all_nights)
        self.busy: dict[tuple, set] = defaultdict(set)
        self.events: list[dict] = []
        self.g = rng(w.seed, "plan")
        self._cfacts = {}
        self.few = False

    # ------------------------------------------------------------------ helpers
    def window(self, i: int, pre: bool = False) -> list:
        n = self.w.all_nights
        a = n[i - 1].p_full_sha if pre else n[i - 1].full_sha
        b = n[i].p_full_sha if pre else n[i].full_sha
        if not a or not b:
            return []
        return self.w.commits[self.w.fp[a] + 1: self.w.fp[b] + 1]

    def facts_at(self, sha: str, pre: bool = False):
        key = (sha, pre)
        if key not in self._cfacts:
            self._cfacts[key] = F.pre_facts(self.w.blobs, sha) if pre else F.dash_facts(self.w.blobs, sha)
        return self._cfacts[key]

    def find_commit(self, i: int, val, prefixes: tuple, pre: bool = False, exact: bool = False):
        """The commit in nightly i's window that changed ``val`` of the parsed files."""
        cs = self.window(i, pre)
        n = self.w.all_nights
        prev = val(self.facts_at(n[i - 1].p_full_sha if pre else n[i - 1].full_sha, pre))
        touching = [c for c in cs if any(f.startswith(prefixes) for f in c.files)]
        for c in touching:
            v = val(self.facts_at(c.sha, pre))
            if v != prev:
                return c
        return None if exact else (touching[-1] if touching else None)

    def free(self, keys, a: int, b: int) -> bool:
        span = set(range(a - 3, b + 4))
        return all(not (self.busy[k] & span) for k in keys)

    def claim(self, keys, a: int, b: int):
        for k in keys:
            self.busy[k].update(range(a - 3, b + 4))

    def add_effect(self, key, e: Effect):
        self.w.effects.setdefault(key, []).append(e)

    def dseries(self, i: int, plats=None) -> list[tuple]:
        return [(p, k) for (p, k) in self.w.series_map(i) if plats is None or p in plats]

    def job_series(self, i: int, jobkey: str) -> list[tuple]:
        return [(p, k) for (p, k), j in self.w.series_map(i).items() if j.key == jobkey]

    def event(self, **kw):
        kw.setdefault("end", None)
        kw.setdefault("culprit", None)
        kw.setdefault("change", None)
        kw.setdefault("honest_side", "before")
        self.events.append(kw)
        return kw

    def mag(self, lo: float, hi: float, sign: int | None = None) -> float:
        s = sign if sign is not None else (1 if self.g.random() < 0.5 else -1)
        return float(math.exp(s * self.g.uniform(math.log(1 + lo), math.log(1 + hi))))

    # ------------------------------------------------------------------ 1. changes in the files
    def natural(self, budget_total: int = 30, planted: int = 13):
        """Measurement changes first (the model carries them, they are all labeled), then a budgeted
        choice of the environment changes that get an effect (pin bumps that move nothing stay
        unlabeled and move nothing)."""
        w = self.w
        caps = defaultdict(int)
        self._defer = []
        for i in range(1, self.N):
            F0, F1 = w.dfacts[i - 1], w.dfacts[i]
            if F0 is not F1:
                self._dash_changes(i, F0, F1, caps)
            P0, P1 = w.pfacts[i - 1], w.pfacts[i]
            if P0 is not None and P1 is not None and P0 is not P1:
                self._pre_changes(i, P0, P1, caps)
        natives = len(self.events)
        budget = int(np.clip(budget_total - natives - planted, 5, 12))
        prio = {"runner": 3.0, "timing": 5.0, "config": 2.5, "torch": 2.0, "image": 1.6, "autotune": 1.4,
                "ptorch": 1.2, "prunner": 2.0, "cute": 1.0, "tpu": 0.7, "tritonbench": 0.8, "fla": 0.9}
        cands = list(self._defer)
        keys = np.array([self.g.random() ** (1.0 / prio.get(t, 1.0)) for _, t, _ in cands])
        order = np.argsort(-keys) if len(cands) else []
        chosen = sorted((cands[j] for j in list(order)[:budget]), key=lambda x: x[0])
        for i, t, fn in chosen:
            fn()

    def _dash_changes(self, i, F0, F1, caps):
        w = self.w
        # -- measurement changes the model carries itself (always labeled when they move a row)
        rows0, rows1 = w.series_map(i - 1), w.series_map(i)
        native = defaultdict(list)
        for key in sorted(rows0.keys() & rows1.keys()):
            s0, s1 = w.dstate(i - 1, *key), w.dstate(i, *key)
            k = key[1]
            if s0[0].key != s1[0].key:
                native[("harness", s0[0].key + ">" + s1[0].key)].append(key)
            elif s0[2] != s1[2]:
                native[("cudagraph", k)].append(key)
            elif s0[1] != s1[1]:
                native[("shapes", k if s1[0].suite != "linattn" else "linattn")].append(key)
            elif s0[3] != s1[3] and s1[0].suite != "linattn":
                native[("baseline", k)].append(key)
        by_commit = defaultdict(list)
        for (kind, k), keys in sorted(native.items()):
            if kind == "harness":
                val = lambda f, key=keys[0]: next((j.key for p, kk, j in f.series() if (p, kk) == key), None)
                prefixes = ("benchmarks/", ".github/")
            elif kind == "shapes" and k == "linattn":
                val = lambda f: (f.linattn_shapes, f.linattn_varlen_shapes,
                                 tuple((j.key, j.num_shapes) for j in f.jobs.values() if j.suite == "linattn"))
                prefixes = ("benchmarks/", ".github/")
            elif kind == "cudagraph":
                val = lambda f, k=k: (f.cudagraph, f.kernel_opts.get(k) and f.kernel_opts[k].no_cudagraph)
                prefixes = ("benchmarks/", ".github/")
            elif kind == "shapes":
                val = lambda f, k=k: (f.sample_mode, f.kernel_opts.get(k) and f.kernel_opts[k].num_inputs)
                prefixes = ("benchmarks/", ".github/")
            else:
                val = lambda f, k=k: f.kernel_opts.get(k) and f.kernel_opts[k].baseline
                prefixes = ("benchmarks/",)
            c = self.find_commit(i, val, prefixes, exact=True)
            side = "after"
            if kind == "cudagraph":
                side = "before" if not w.dstate(i, *keys[0])[2] else "after"
            by_commit[(kind, c.sha if c else None, side)].append((k, keys, c))
        for (kind, sha, side), items in sorted(by_commit.items(), key=lambda x: (x[0][0], x[0][1] or "", x[0][2])):
            keys = [("d",) + x for _, ks, _ in items for x in ks]
            c = items[0][2]
            names = sorted({k for k, _, _ in items})
            what = {"harness": "TPU rows now measured through another harness", "cudagraph": "--cudagraph flipped",
                    "shapes": "input shapes changed", "baseline": "baseline implementation changed"}[kind]
            subj = f"{c.sha[:8]}: {c.subject}" if c else "no single commit"
            self.event(source="dashboard", cause="method_change", kind=kind, first=i, cands=keys,
                       change=sha, honest_side=side, native=True,
                       note=f"{what} for {', '.join(names) if kind != 'harness' else 'tpu'} ({subj})")
            self.claim(keys, i, i)
        # -- environment and harness changes: the planner decides what they do
        for jk in sorted(F0.jobs.keys() & F1.jobs.keys()):
            j0, j1 = F0.jobs[jk], F1.jobs[jk]
            if j0.runner != j1.runner:
                self._defer.append((i, "runner", lambda i=i, jk=jk: self._hw_job(
                    i, jk, "runner", lambda f, jk=jk: f.jobs.get(jk) and f.jobs[jk].runner, caps)))
            elif (j0.image, j0.runtime) != (j1.image, j1.runtime):
                self._defer.append((i, "image", lambda i=i, jk=jk: self._hw_job(
                    i, jk, "driver/toolchain", lambda f, jk=jk: f.jobs.get(jk) and (f.jobs[jk].image, f.jobs[jk].runtime),
                    caps)))
        if F0.torch_pin != F1.torch_pin:
            self._defer.append((i, "torch", lambda i=i: self._torch(i, caps, lambda f: f.torch_pin, ("tritonbench",))))
        if F0.la_torch_pin != F1.la_torch_pin and F0.la_torch_pin:
            self._defer.append((i, "torch", lambda i=i: self._torch(i, caps, lambda f: f.la_torch_pin, ("linattn",))))
        if F0.cute_pin != F1.cute_pin and any(j.backend == "cute" for j in F1.jobs.values()):
            self._defer.append((i, "cute", lambda i=i: self._cute_pin(i, caps)))
        if F0.tpu_pins != F1.tpu_pins and any(j.alias == "tpu" for j in F1.jobs.values()):
            c = self.find_commit(i, lambda f: f.tpu_pins, (".github/",))
            timing = bool(c and re.search(r"timing|device sync", c.subject, re.I))
            if timing:
                self._tpu_pin(i, caps)
            else:
                self._defer.append((i, "tpu", lambda i=i: self._tpu_pin(i, caps)))
        if F0.tritonbench_pin != F1.tritonbench_pin and F0.tritonbench_pin:
            self._defer.append((i, "tritonbench", lambda i=i: self._tritonbench(i, caps)))
        if F0.fla_pin != F1.fla_pin and F0.fla_pin and any(j.suite == "linattn" for j in F1.jobs.values()):
            self._defer.append((i, "fla", lambda i=i: self._fla(i, caps)))
        env0 = (F0.autotune_env, re.findall(r"HELION_AUTOTUNE\w*=\S+", F0.nightly_env))
        env1 = (F1.autotune_env, re.findall(r"HELION_AUTOTUNE\w*=\S+", F1.nightly_env))
        added = (set(env1[0]) - set(env0[0])) | (set(env1[1]) - set(env0[1]))
        if added:
            self._defer.append((i, "autotune", lambda i=i, env0=env0, env1=env1: self._autotune(i, env0, env1, caps)))

    def _pick(self, xs, lo, hi):
        xs = list(xs)
        if not xs:
            return []
        n = int(min(len(xs), self.g.integers(lo, hi + 1)))
        idx = self.g.choice(len(xs), size=n, replace=False)
        return [xs[j] for j in sorted(idx)]

    def _hw_job(self, i, jk, kind, val, caps):
        keys = [("d",) + x for x in self.job_series(i, jk)]
        keys = [k for k in keys if k in {("d",) + x for x in self.dseries(i - 1)}]
        c = self.find_commit(i, val, (".github/",))
        if not keys or c is None:
            return
        if caps[kind] >= 3:
            return
        keys = [k for k in keys if self.free([k], i, i)]
        if not keys:
            return
        caps[kind] += 1
        plat = keys[0][1]
        if kind == "runner":
            c0 = self.mag(0.06, 0.13)
            for k in keys:
                d = float(np.exp(self.g.normal(0, 0.05)))
                self.add_effect(k, Effect(i, None, {"h": c0 * d, "b": c0, "t": c0 * float(np.exp(self.g.normal(0, 0.02))),
                                                    "c": c0 * float(np.exp(self.g.normal(0, 0.02)))}))
            note = f"{plat} moved to another runner ({c.sha[:8]}: {c.subject}); every kernel's times shift"
        else:
            cublas = "cublas" in c.subject.lower()
            chosen = [k for k in keys if family(k[2]) == "gemm"] if cublas else []
            chosen = chosen or self._pick(keys, 2, 5)
            for k in chosen:
                if cublas or self.g.random() < 0.4:
                    f = self.mag(0.08, 0.2, -1 if cublas else None)
                    self.add_effect(k, Effect(i, None, {"b": f}))
                else:
                    self.add_effect(k, Effect(i, None, {"h": self.mag(0.07, 0.18)}))
            keys = chosen
            note = f"{plat} image/runtime change ({c.sha[:8]}: {c.subject}) moves a few kernels"
        self.claim(keys, i, i)
        self.event(source="dashboard", cause="hardware", kind=kind, first=i, cands=keys, change=c.sha, note=note,
                   fixed=kind == "runner")

    def _torch(self, i, caps, val, suites):
        c = self.find_commit(i, val, (".github/",))
        if c is None:
            return
        rows = [x for x in self.dseries(i) if x[0] in GPU_TRITON and x in self.dseries(i - 1)
                and self.w.series_map(i)[x].suite in suites and self.w.series_map(i - 1)[x].suite in suites]
        kernels = sorted({k for _, k in rows})
        chosen = self._pick(kernels, 2, 4)
        keys = []
        for k in chosen:
            how = "b" if self.g.random() < 0.6 else ("c" if self.g.random() < 0.5 else "h")
            f = self.mag(0.08, 0.22)
            for p, kk in rows:
                key = ("d", p, kk)
                if kk == k and self.free([key], i, i):
                    self.add_effect(key, Effect(i, None, {how: f * float(np.exp(self.g.normal(0, 0.02)))}))
                    keys.append(key)
        if keys:
            self.claim(keys, i, i)
            self.event(source="dashboard", cause="hardware", kind="driver/toolchain", first=i, cands=keys,
                       change=c.sha, note=f"PyTorch pin bump ({c.sha[:8]}: {c.subject}): eager / compile / Triton "
                                          f"times of a few kernels move on every GPU")

    def _cute_pin(self, i, caps):
        c = self.find_commit(i, lambda f: f.cute_pin, (".github/",))
        if c is None or caps["cute"] >= 2:
            return
        caps["cute"] += 1
        keys = [("d",) + x for x in self.dseries(i, ("b200_cute",)) if x in self.dseries(i - 1)]
        keys = [k for k in self._pick(keys, 1, 3) if self.free([k], i, i)]
        for k in keys:
            self.add_effect(k, Effect(i, None, {"h": self.mag(0.08, 0.2)}))
        if keys:
            self.claim(keys, i, i)
            self.event(source="dashboard", cause="hardware", kind="driver/toolchain", first=i, cands=keys,
                       change=c.sha, note=f"CuTe DSL pin bump ({c.sha[:8]}: {c.subject}) changes CuTe kernels' speed")

    def _tpu_pin(self, i, caps):
        c = self.find_commit(i, lambda f: f.tpu_pins, (".github/",))
        if c is None:
            return
        keys = [("d",) + x for x in self.dseries(i, ("tpu",)) if x in self.dseries(i - 1)]
        timing = bool(re.search(r"timing|device sync", c.subject, re.I))
        if not timing and caps["tpu"] >= 2:
            return
        caps["tpu"] += 1
        keys = [k for k in keys if self.free([k], i, i)]
        if not keys:
            return
        if timing:
            for k in keys:
                fb = float(np.exp(self.g.normal(0.1, 0.05)))
                self.add_effect(k, Effect(i, None, {"h": float(np.exp(self.g.normal(0.12, 0.05))), "b": fb,
                                                    "c": fb * float(np.exp(self.g.normal(0, 0.03)))}))
            self.claim(keys, i, i)
            self.event(source="dashboard", cause="method_change", kind="timer", first=i, cands=keys, change=c.sha,
                       honest_side="after", note=f"torch_tpu pin ({c.sha[:8]}: {c.subject}) fixes how TPU times "
                                                 f"are taken: every TPU row re-levels")
            return
        keys = self._pick(keys, 1, 3)
        for k in keys:
            f = self.mag(0.08, 0.18)
            self.add_effect(k, Effect(i, None, {"h": f, "c": f ** 0.5}))
        self.claim(keys, i, i)
        self.event(source="dashboard", cause="hardware", kind="driver/toolchain", first=i, cands=keys, change=c.sha,
                   note=f"TPU toolchain pin ({c.sha[:8]}: {c.subject}) moves a few TPU kernels")

    def _tritonbench(self, i, caps):
        c = self.find_commit(i, lambda f: f.tritonbench_pin, (".github/",))
        if c is None or caps["tb"] >= 2:
            return
        rows = [x for x in self.dseries(i) if x in self.dseries(i - 1)
                and self.w.series_map(i)[x].suite in ("tritonbench", "tpu_bridge")]
        kernels = sorted({k for _, k in rows})
        chosen = self._pick(kernels, 1, 2)
        keys = []
        for k in chosen:
            f = self.mag(0.08, 0.2)
            for p, kk in rows:
                key = ("d", p, kk)
                if kk == k and self.free([key], i, i):
                    self.add_effect(key, Effect(i, None, {"b": f * float(np.exp(self.g.normal(0, 0.02)))}))
                    keys.append(key)
        if keys:
            caps["tb"] += 1
            self.claim(keys, i, i)
            self.event(source="dashboard", cause="method_change", kind="harness", first=i, cands=keys, change=c.sha,
                       honest_side="after", note=f"tritonbench pin ({c.sha[:8]}: {c.subject}) redefines the "
                                                 f"operator's baseline for {', '.join(chosen)}")

    def _fla(self, i, caps):
        c = self.find_commit(i, lambda f: f.fla_pin, (".github/",))
        if c is None:
            return
        rows = [("d",) + x for x in self.dseries(i) if x in self.dseries(i - 1)
                and self.w.series_map(i)[x].suite == "linattn"]
        keys = [k for k in self._pick(rows, 2, 4) if self.free([k], i, i)]
        for k in keys:
            self.add_effect(k, Effect(i, None, {"b": self.mag(0.08, 0.2)}))
        if keys:
            self.claim(keys, i, i)
            self.event(source="dashboard", cause="method_change", kind="baseline", first=i, cands=keys, change=c.sha,
                       honest_side="after", note=f"FLA pin ({c.sha[:8]}: {c.subject}) changes the baseline")

    def _autotune(self, i, env0, env1, caps):
        c = self.find_commit(i, lambda f: (f.autotune_env, re.findall(r"HELION_AUTOTUNE\w*=\S+", f.nightly_env)),
                             (".github/",))
        if c is None:
            return
        rows = [("d",) + x for x in self.dseries(i) if x in self.dseries(i - 1)
                and self.w.series_map(i)[x].suite == "tritonbench"]
        rows = [k for k in rows if self.free([k], i, i)]
        new = dict(env1[0])
        old = dict(env0[0])
        side = "after"
        if "HELION_AUTOTUNE_BUDGET_SECONDS" in new and "HELION_AUTOTUNE_BUDGET_SECONDS" not in old:
            keys = [k for k in rows if family(k[2]) in ("gemm", "attn", "ssm")]
            keys = self._pick(keys, 2, 4)
            worse = keys[: max(1, len(keys) // 2)]
            for k in keys:
                eff = {"ct": self.mag(0.15, 0.35, -1)}
                if k in worse:
                    eff["h"] = self.mag(0.06, 0.14, 1)
                self.add_effect(k, Effect(i, None, eff))
            side = "before"
            note = "autotune budget capped in CI: long searches stop early (compile time down, worse configs)"
        elif env1[1] != env0[1]:
            keys = self._pick(rows, 2, 4)
            for k in keys:
                self.add_effect(k, Effect(i, None, {"h": self.mag(0.06, 0.14)}))
            note = "nightly autotune now seeded: the configs some kernels settle on change"
        else:
            keys = self._pick(rows, 3, 6)
            for k in keys:
                self.add_effect(k, Effect(i, None, {"ct": self.mag(0.12, 0.3, 1)}, shaped=False))
            note = "autotune runs benchmarks in a subprocess: compile (autotune) time goes up"
        if keys:
            self.claim(keys, i, i)
            self.event(source="dashboard", cause="method_change", kind="autotune", first=i, cands=keys,
                       change=c.sha, honest_side=side, note=f"{note} ({c.sha[:8]}: {c.subject})")

    def _pre_changes(self, i, P0, P1, caps):
        w = self.w
        rows0, rows1 = set(w.pseries_at(i - 1)), set(w.pseries_at(i))
        native = defaultdict(list)
        for key in sorted(rows0 & rows1):
            c0, c1 = w.pclean(i - 1, *key), w.pclean(i, *key)
            if c0 is None or c1 is None:
                continue
            k0, k1 = P0.kernels[key[1]], P1.kernels[key[1]]
            if k0.cudagraph != k1.cudagraph:
                native[("cudagraph", key[1])].append(key)
            elif set(k0.baselines) != set(k1.baselines):
                native[("baseline", key[1])].append(key)
            elif k0.n_shapes != k1.n_shapes:
                native[("shapes", key[1])].append(key)
            elif P0.l2_clear != P1.l2_clear and k1.cudagraph:
                native[("timer", "_bench")].append(key)
        by_commit = defaultdict(list)
        for (kind, k), keys in sorted(native.items()):
            if kind == "timer":
                val, prefixes = (lambda f: f and f.l2_clear), ("pretuned_kernels/",)
                side = "after"
            else:
                val = lambda f, k=k: f and f.kernels.get(k) and (f.kernels[k].cudagraph, f.kernels[k].baselines,
                                                                  f.kernels[k].n_shapes)
                prefixes = ("pretuned_kernels/",)
                side = "after" if kind != "cudagraph" or P1.kernels[k].cudagraph else "before"
            c = self.find_commit(i, val, prefixes, pre=True, exact=True)
            by_commit[(kind, c.sha if c else None, side)].append((k, keys, c))
        for (kind, sha, side), items in sorted(by_commit.items(), key=lambda x: (x[0][0], x[0][1] or "", x[0][2])):
            keys = [("p",) + x for _, ks, _ in items for x in ks]
            c = items[0][2]
            names = sorted({k for k, _, _ in items})
            what = "cold-L2 cudagraph timer" if kind == "timer" else f"{kind} change for {', '.join(names)}"
            self.event(source="pretuned", cause="method_change", kind=kind, first=i, cands=keys, change=sha,
                       honest_side=side, native=True,
                       note=f"pretuned {what} ({c.sha[:8] + ': ' + c.subject if c else 'no single commit'})")
            self.claim(keys, i, i)
        # regenerated configs: real (the config is Helion's)
        for key in sorted(rows0 & rows1):
            plat, k = key
            sm = {"h100": "sm90", "b200": "sm100"}[plat]
            o0, o1 = dict(P0.kernels[k].configs).get(sm), dict(P1.kernels[k].configs).get(sm)
            if o0 and o1 and o0 != o1:
                pk = ("p", plat, k)
                c = self.find_commit(i, lambda f, k=k, sm=sm: f and f.kernels.get(k) and dict(f.kernels[k].configs).get(sm),
                                     ("pretuned_kernels/",), pre=True)
                if c is None:
                    continue
                self._defer.append((i, "config", lambda i=i, pk=pk, c=c, k=k, sm=sm: self._pconfig(i, pk, c, k, sm)))
        if P0.torch_pin != P1.torch_pin:
            self._defer.append((i, "ptorch", lambda i=i: self._ptorch(i, rows0, rows1)))
        for plat in sorted(set(P0.platforms) & set(P1.platforms)):
            if P0.platforms[plat] != P1.platforms[plat]:
                self._defer.append((i, "prunner", lambda i=i, plat=plat: self._prunner(i, P0, P1, plat, rows0, rows1)))

    def _pconfig(self, i, pk, c, k, sm):
        if not self.free([pk], i, i):
            return
        f = self.mag(0.08, 0.25, -1 if self.g.random() < 0.5 else 1)
        self.add_effect(pk, Effect(i, None, {"h": f}))
        self.claim([pk], i, i)
        self.event(source="pretuned", cause="real", kind="heuristics/config", first=i, cands=[pk],
                   culprit=c.sha, honest_side="after",
                   note=f"regenerated {k} {sm} config ({c.sha[:8]}: {c.subject})")

    def _ptorch(self, i, rows0, rows1):
        c = self.find_commit(i, lambda f: f and f.torch_pin, (".github/",), pre=True)
        if c is None:
            return
        keys = [("p",) + x for x in sorted(rows0 & rows1) if self.free([("p",) + x], i, i)]
        keys = self._pick(keys, 2, 4)
        for k in keys:
            self.add_effect(k, Effect(i, None, {"b:torch_compile": self.mag(0.08, 0.25),
                                                "b:torch": float(np.exp(self.g.normal(0, 0.05)))}))
        if keys:
            self.claim(keys, i, i)
            self.event(source="pretuned", cause="hardware", kind="driver/toolchain", first=i, cands=keys,
                       change=c.sha, note=f"pretuned torch pin ({c.sha[:8]}: {c.subject}) moves the torch baselines")

    def _prunner(self, i, P0, P1, plat, rows0, rows1):
        kind = "runner" if P0.platforms[plat][0] != P1.platforms[plat][0] else "driver/toolchain"
        c = self.find_commit(i, lambda f, plat=plat: f and f.platforms.get(plat), (".github/",), pre=True)
        keys = [("p",) + x for x in sorted(rows0 & rows1) if x[0] == plat and self.free([("p",) + x], i, i)]
        if c is None or not keys:
            return
        c0 = self.mag(0.06, 0.12)
        for k in keys:
            self.add_effect(k, Effect(i, None, {"h": c0 * float(np.exp(self.g.normal(0, 0.06))), "b": c0}))
        self.claim(keys, i, i)
        self.event(source="pretuned", cause="hardware", kind=kind, first=i, cands=keys, change=c.sha,
                   fixed=kind == "runner", note=f"pretuned {plat} runner/image change ({c.sha[:8]}: {c.subject})")

    # ------------------------------------------------------------------ 2. planted events
    def slice_of(self, c) -> str | None:
        files = [f for f in c.files if f.startswith("helion/")]
        if not files or all(f.endswith((".md", ".rst")) for f in files):
            return None
        subj = c.subject.lower()
        if re.match(r"\s*revert", subj) or "test" in subj.split(":")[0]:
            return None
        if re.search(r"\b(move|rename|refactor|typing|type hints?|pyrefly|lint|docs?|tests?|cleanup|clean up|"
                     r"logging|log|print|error message|deprecat|telemetry|dataset)\b", subj):
            return None
        if any("/cute/" in f or "cute" in f.split("/")[-1] for f in files) or re.search(r"\bcute|cutedsl|cutlass", subj):
            return "cute"
        if any("pallas" in f for f in files) or re.search(r"pallas|\btpu\b|mosaic|jax", subj):
            return "tpu"
        if re.search(r"rocm|\bamd\b|\bhip\b|gfx9|mi3[0-9]0", subj) or any(
                x in f for f in files for x in ("rocm", "amd", "hip")):
            return "rocm"
        if any(f.startswith("helion/autotuner/") for f in files):
            return "autotuner"
        if any(f.startswith(("helion/_compiler/", "helion/language/", "helion/runtime/")) for f in files):
            return "codegen"
        return None

    def night_of_commit(self, c, pre=False) -> int | None:
        ci = self.w.fp[c.sha]
        for i, n in enumerate(self.w.all_nights):
            s = n.p_full_sha if pre else n.full_sha
            if s and self.w.fp[s] >= ci:
                return i if i >= 1 else None
        return None

    def kernels_for(self, c, kernels: list[str]) -> list[str]:
        text = (c.subject + " " + " ".join(c.files)).lower()
        hit = [k for k in kernels if any(wd in text for wd in KERNEL_WORDS.get(k.removesuffix("-bwd"), (k,)))
               or k.removesuffix("-bwd") in text]
        return hit

    def planted_real(self, target: int):
        w = self.w
        cands = defaultdict(list)
        for i in range(3, self.N - 1):
            for c in self.window(i):
                s = self.slice_of(c)
                if s:
                    cands[s].append((i, c))
        plats_of = {"cute": ("b200_cute",), "tpu": ("tpu",), "rocm": ("mi325x", "mi350x"),
                    "autotuner": GPU_TRITON + ("b200_cute",), "codegen": GPU_TRITON, "compile": GPU_TRITON}
        order = ["codegen", "cute", "autotuner", "tpu", "rocm", "codegen", "codegen", "linattn", "autotuner",
                 "cute", "codegen", "compile", "tpu", "codegen"] + ["codegen", "autotuner", "rocm", "cute", "tpu"] * 3
        made = 0
        used = set()
        # a change of the default search algorithm moves configs broadly (several kernels, every GPU)
        for i, c in cands["autotuner"]:
            if not re.search(r"as default|default (autotuner|search|algorithm)", c.subject, re.I) or made >= 1:
                continue
            rows = [x for x in self.dseries(i, GPU_TRITON) if x in self.dseries(i - 1)
                    and w.series_map(i)[x].suite == "tritonbench"]
            kernels = self._pick(sorted({k for _, k in rows}), 3, 5)
            keys = [("d",) + x for x in rows if x[1] in kernels and self.free([("d",) + x], i, i + 6)]
            if len(keys) < 3:
                continue
            base = self.mag(0.07, 0.16, -1)
            for k in keys:
                f = base * float(np.exp(self.g.normal(0, 0.06)))
                self.add_effect(k, Effect(i, None, {"h": f}))
            self.claim(keys, i, i + 6)
            used.add(c.sha)
            self.event(source="dashboard", cause="real", kind="heuristics/config", first=i, cands=keys, culprit=c.sha,
                       honest_side="after", note=f"new default autotuner search ({c.sha[:8]}: {c.subject}) settles "
                                                 f"on different configs for several kernels")
            made += 1
        for sl in order:
            if made >= target:
                break
            src = cands["codegen" if sl in ("linattn",) else ("autotuner" if sl == "compile" else sl)]
            src = [x for x in src if x[1].sha not in used]
            if not src:
                continue
            perf = [x for x in src if re.search(r"perf|fast|speed|optimi|heuristic|tile|warp|persistent|stages|"
                                                r"vectoriz|reduction|loop|unroll|schedul|fuse|fusion|layout|tma|"
                                                r"epilogue|indexing|codegen|lowering|seed", x[1].subject, re.I)]
            pool = perf or src
            for _ in range(12):
                i, c = pool[int(self.g.integers(0, len(pool)))]
                if sl == "linattn":
                    rows = [x for x in self.dseries(i) if x in self.dseries(i - 1)
                            and w.series_map(i)[x].suite == "linattn"]
                else:
                    rows = [x for x in self.dseries(i, plats_of[sl]) if x in self.dseries(i - 1)
                            and w.series_map(i)[x].suite in ("tritonbench", "tpu", "tpu_bridge")]
                if sl == "compile":
                    rows = [x for x in rows if w.dstate(i, *x)[4][3] and w.dstate(i - 1, *x)[4][3]]
                rows = [x for x in rows if self.free([("d",) + x], i, i + 6)]
                if not rows:
                    continue
                kernels = sorted({k for _, k in rows})
                hit = self.kernels_for(c, kernels)
                if sl == "compile":
                    plats = sorted({p for p, _ in rows})
                    plat = plats[int(self.g.integers(0, len(plats)))]
                    keys = [("d",) + x for x in rows if x[0] == plat]
                    keys = self._pick(keys, max(3, len(keys) // 2), len(keys))
                    f = self.mag(0.25, 0.6, 1)
                    for k in keys:
                        self.add_effect(k, Effect(i, None, {"ct": f * float(np.exp(self.g.normal(0, 0.05)))},
                                                  shaped=False))
                    kind, note = "code", f"autotuner change makes compile (autotune) time longer on {plat}"
                else:
                    ks = hit[:2] if hit else self._pick(kernels, 1, 2)
                    keys = [("d",) + x for x in rows if x[1] in ks]
                    if len(keys) > 4:
                        keys = self._pick(keys, 2, 4)
                    p_reg = 0.62
                    if re.search(r"perf|fast|speed|optimi|improv|restore|tune|vectoriz|fuse|overlap", c.subject, re.I):
                        p_reg = 0.3
                    elif re.search(r"disable|remove|fix|guard|safe|fallback|correct|bound|harden", c.subject, re.I):
                        p_reg = 0.8
                    sign = 1 if self.g.random() < p_reg else -1  # +: slower Helion (a regression)
                    f = self.mag(0.09, 0.32, sign)
                    for k in keys:
                        self.add_effect(k, Effect(i, None, {"h": f * float(np.exp(self.g.normal(0, 0.025)))}))
                    kind = "heuristics/config" if sl == "autotuner" else "code"
                    note = f"{'regression' if sign > 0 else 'improvement'} from {c.sha[:8]} ({c.subject})"
                if not keys:
                    continue
                self.claim(keys, i, i + 6)
                used.add(c.sha)
                self.event(source="dashboard", cause="real", kind=kind, first=i, cands=keys, culprit=c.sha,
                           honest_side="after", note=note)
                made += 1
                break

    def planted_method(self, target: int):
        """Harness commits whose diff changes how a number is taken (a parsing fix, the compile-time
        timer, a device sync): their effect is planted, since the model has no parser of its own."""
        w = self.w
        native = {e["change"] for e in self.events if e.get("native")}
        cands = []
        for i in range(3, self.N - 1):
            for c in self.window(i):
                if c.sha in native or not any(f in ("benchmarks/run.py", ".github/workflows/benchmark.yml")
                                              for f in c.files):
                    continue
                subj = c.subject.lower()
                if re.search(r"pars(e|ing)", subj):
                    cands.append((i, c, "parse"))
                elif re.search(r"compile[ -]time", subj) and re.search(r"fix|measur", subj):
                    cands.append((i, c, "compile"))
                elif re.search(r"timing|\bsync\b|warmup|do_bench|measurement", subj):
                    cands.append((i, c, "timer"))
        made = 0
        order = self.g.permutation(len(cands)) if cands else []
        for j in order:
            if made >= target:
                break
            i, c, how = cands[int(j)]
            rows = [x for x in self.dseries(i) if x in self.dseries(i - 1) and w.series_map(i)[x].suite == "tritonbench"
                    and w.series_map(i - 1)[x].suite == "tritonbench"]
            if how == "compile":
                rows = [x for x in rows if w.dstate(i, *x)[4][3] and w.dstate(i - 1, *x)[4][3]]
                plats = sorted({p for p, _ in rows})
                keys = [("d",) + x for x in rows if self.free([("d",) + x], i, i)]
                if not keys:
                    continue
                f = self.mag(0.2, 0.45)
                for k in keys:
                    self.add_effect(k, Effect(i, None, {"ct": f * float(np.exp(self.g.normal(0, 0.04)))}, shaped=False))
                kind, side = "timer", "after"
                note = f"compile-time measurement changed ({c.sha[:8]}: {c.subject}): compile time re-levels on " \
                       f"every row, speedups untouched"
            else:
                kernels = sorted({k for _, k in rows})
                hit = self.kernels_for(c, kernels)
                keys = []
                for _t in range(1 if hit else 6):
                    ks = hit or self._pick(kernels, 1, 2)
                    keys = [("d",) + x for x in rows if x[1] in ks[:2] and self.free([("d",) + x], i, i)]
                    if keys:
                        break
                if not keys:
                    continue
                f = self.mag(0.08, 0.2)
                comp = "hs" if how == "timer" else ("b" if self.g.random() < 0.5 else "c")
                for k in keys:
                    self.add_effect(k, Effect(i, None, {comp: f * float(np.exp(self.g.normal(0, 0.02)))}))
                kind, side = ("timer" if how == "timer" else "harness"), "after"
                what = {"hs": "Helion's speedup timer", "b": "the baseline column", "c": "the torch.compile column"}[comp]
                note = f"harness change ({c.sha[:8]}: {c.subject}) changes {what} for {', '.join(sorted(set(k for _, _, k in keys)))}"
            self.claim(keys, i, i)
            self.event(source="dashboard", cause="method_change", kind=kind, first=i, cands=keys, change=c.sha,
                       honest_side=side, note=note)
            made += 1

    def planted_pretuned_real(self, target: int):
        w = self.w
        made = 0
        cands = []
        for i in range(3, self.N - 1):
            if not w.pfacts[i] or not w.pfacts[i - 1]:
                continue
            for c in self.window(i, pre=True):
                if any(f.startswith("helion/_compiler/cute/") for f in c.files) and self.slice_of(c) == "cute":
                    cands.append((i, c, ("scale_mm_cute", "nvfp4_gemv_cute")))
                elif self.slice_of(c) == "codegen" and re.search(r"\[triton\]|codegen|reduction|persistent|layout",
                                                                   c.subject, re.I):
                    cands.append((i, c, None))
        perf = [x for x in cands if re.search(r"perf|fast|speed|optimi|heuristic|tile|warp|persistent|schedul|overlap|"
                                               r"epilogue|tma|vectoriz|fuse|layout|config", x[1].subject, re.I)]
        cands = perf or cands
        for _ in range(30):
            if made >= target or not cands:
                break
            i, c, only = cands[int(self.g.integers(0, len(cands)))]
            rows = [x for x in self.w.pseries_at(i) if x in self.w.pseries_at(i - 1)
                    and (only is None or x[1] in only)]
            keys = [("p",) + x for x in rows if self.free([("p",) + x], i, i + 5)]
            keys = self._pick(keys, 1, 2)
            if not keys:
                continue
            f = self.mag(0.08, 0.25, 1 if self.g.random() < 0.6 else -1)
            for k in keys:
                self.add_effect(k, Effect(i, None, {"h": f}))
            self.claim(keys, i, i + 5)
            self.event(source="pretuned", cause="real", kind="code", first=i, cands=keys, culprit=c.sha,
                       honest_side="after", note=f"{'regression' if f > 1 else 'improvement'} on the pretuned suite "
                                                 f"from {c.sha[:8]} ({c.subject})")
            cands = [x for x in cands if x[1].sha != c.sha]
            made += 1

    def planted_hardware(self):
        w = self.w
        g = self.g
        # thermal episodes: one platform's machine runs hot for a few nights
        for _ in range(2 if self.few else int(g.integers(1, 3))):
            for _try in range(20):
                a = int(g.integers(5, self.N - 4))
                plats = sorted({p for p, _ in self.dseries(a) if p != "tpu"})
                plat = plats[int(g.integers(0, len(plats)))]
                jobs = sorted({j.key for (p, _), j in w.series_map(a).items() if p == plat and j.suite == "tritonbench"})
                if not jobs:
                    continue
                keys = [("d",) + x for x in self.job_series(a, jobs[0]) if x in self.dseries(a - 1)]
                L = int(g.integers(2, 6))
                if not keys or not self.free(keys, a, a + L) or any(
                        plat in w.missing and (set(range(a - 2, a + L + 2)) & w.missing[plat]) for _ in [0]):
                    continue
                c0 = float(g.uniform(1.07, 1.16))
                for k in keys:
                    self.add_effect(k, Effect(a, a + L, {"h": c0 * float(np.exp(g.normal(0.05, 0.04))), "b": c0,
                                                         "t": c0, "c": c0 * float(np.exp(g.normal(0, 0.02)))},
                                              shaped=False))
                self.claim(keys, a, a + L)
                self.event(source="dashboard", cause="hardware", kind="thermal", first=a, end=a + L, cands=keys,
                           fixed=True, note=f"{plat} runner throttling for {L} nights: every timer slower")
                break
        # a bad node: the kernels sharded onto it run slow until the node is drained
        for _ in range(2 if self.few else 1):
            self._bad_node()
        # outages: a platform's artifacts are missing for a few nights
        for _ in range(int(g.integers(1, 3))):
            for _try in range(20):
                a = int(g.integers(5, self.N - 3))
                plats = sorted({p for p, _ in self.dseries(a)})
                plat = plats[int(g.integers(0, len(plats)))]
                L = int(g.integers(1, 5))
                keys = [("d",) + x for x in self.dseries(a - 1, (plat,))]
                if not keys or not self.free(keys, a, a + L) or a + L >= self.N:
                    continue
                if any(("d",) + x not in {("d",) + y for y in self.dseries(j)} for x in self.dseries(a - 1, (plat,))
                       for j in range(a, a + L + 1)):
                    continue
                w.missing.setdefault(plat, set()).update(range(a, a + L))
                self.claim(keys, a, a + L)
                self.event(source="dashboard", cause="hardware", kind="outage", first=a, end=a + L, cands=keys,
                           fixed=True, note=f"{plat} runners unavailable: no {plat} results for {L} night(s)")
                break
        # the pretuned suite: one thermal episode on a platform
        pn = [i for i in range(5, self.N - 5) if w.pfacts[i - 1] is not None]
        if pn and g.random() < 0.8:
            for _try in range(10):
                a = pn[int(g.integers(0, len(pn)))]
                plat = ["b200", "h100"][int(g.integers(0, 2))]
                keys = [("p",) + x for x in w.pseries_at(a) if x[0] == plat and x in w.pseries_at(a - 1)]
                L = int(g.integers(2, 4))
                if not keys or not self.free(keys, a, a + L):
                    continue
                c0 = float(g.uniform(1.08, 1.15))
                for k in keys:
                    self.add_effect(k, Effect(a, a + L, {"h": c0 * float(np.exp(g.normal(0.02, 0.05))), "b": c0},
                                              shaped=False))
                self.claim(keys, a, a + L)
                self.event(source="pretuned", cause="hardware", kind="thermal", first=a, end=a + L, cands=keys,
                           fixed=True, note=f"pretuned {plat} GPU throttling for {L} nights")
                break

    def _bad_node(self):
        w, g = self.w, self.g
        for _try in range(20):
            a = int(g.integers(5, self.N - 5))
            plats = sorted({p for p, _ in self.dseries(a) if p in ("h100", "b200", "mi350x", "mi325x")})
            if not plats:
                continue
            plat = plats[int(g.integers(0, len(plats)))]
            keys = [("d",) + x for x in self.dseries(a, (plat,)) if x in self.dseries(a - 1)
                    and w.series_map(a)[x].suite == "tritonbench"]
            keys = self._pick(keys, 2, 4)
            L = int(g.integers(3, 9))
            if not keys or not self.free(keys, a, a + L):
                continue
            c0 = float(g.uniform(1.1, 1.22))
            for k in keys:
                self.add_effect(k, Effect(a, a + L, {"h": c0 * float(np.exp(max(0.04, g.normal(0.07, 0.03)))), "b": c0,
                                                     "t": c0, "c": c0}, shaped=False))
            self.claim(keys, a, a + L)
            self.event(source="dashboard", cause="hardware", kind="runner", first=a, end=a + L, cands=keys,
                       fixed=True, note=f"a degraded {plat} node runs one shard's kernels slow for {L} nights, "
                                        f"then is drained")
            return

    def planted_noise(self):
        w = self.w
        g = self.g
        made = 0
        # one outlier the night a commit touching the kernel's example lands (a hasty reader blames it)
        for _try in range(60):
            i = int(g.integers(4, self.N - 2))
            rows = self.dseries(i)
            for c in self.window(i):
                ks = [k for (p, k) in rows if any(f"examples/{k.removesuffix('-bwd')}" in f for f in c.files)]
                if ks:
                    k = ks[0]
                    opts = [("d", p, kk) for p, kk in rows if kk == k and self.free([("d", p, kk)], i, i + 1)]
                    if opts:
                        key = opts[int(g.integers(0, len(opts)))]
                        self._outlier(key, i, f"one-night blip on the night {c.sha[:8]} ({c.subject}) touched "
                                              f"the example; it reverts next night")
                        made += 1
                        break
            if made:
                break
        for _try in range(60):
            if made >= 4:
                break
            i = int(g.integers(3, self.N - 2))
            rows = [("d",) + x for x in self.dseries(i) if x in self.dseries(i - 1) and x in self.dseries(i + 1)]
            rows = [k for k in rows if self.free([k], i, i + 1)]
            if rows:
                key = rows[int(g.integers(0, len(rows)))]
                self._outlier(key, i, "a single stray night: one timer off for every shape, back the next night")
                made += 1
        # a pretuned outlier
        pn = [i for i in range(3, self.N - 2) if w.pfacts[i - 1] is not None and w.pfacts[i + 1] is not None]
        for _try in range(20):
            if not pn:
                break
            i = pn[int(g.integers(0, len(pn)))]
            rows = [("p",) + x for x in w.pseries_at(i) if x in w.pseries_at(i - 1) and x in w.pseries_at(i + 1)]
            rows = [k for k in rows if self.free([k], i, i + 1)]
            if rows:
                self._outlier(rows[int(g.integers(0, len(rows)))], i, "pretuned one-night outlier")
                break
        # a series turns noisy (its timer scatter grows 3-4x from one night on)
        for _try in range(40):
            X = int(g.integers(self.N // 3, self.N - 20))
            rows = [("d",) + x for x in self.dseries(X) if x in self.dseries(X - 1)]
            rows = [k for k in rows if self.free([k], X, self.N)]
            if rows:
                key = rows[int(g.integers(0, len(rows)))]
                w.scatter[key] = (X, float(g.uniform(3.2, 4.2)))
                self.claim([key], X, self.N)
                self.event(source="dashboard", cause="noise", kind="scatter", first=X, cands=[key], fixed=True,
                           note="this series' scatter grows several-fold from here on; no step")
                break

    def _outlier(self, key, i, note):
        g = self.g
        comp = "h" if g.random() < 0.7 else "b"
        f = float(g.uniform(1.16, 1.24)) ** (1 if g.random() < 0.6 else -1)
        self.w.outliers[(key, i)] = {comp: f} if key[0] == "d" else {comp: f}
        self.claim([key], i, i + 1)
        self.event(source="dashboard" if key[0] == "d" else "pretuned", cause="noise", kind="outlier", first=i,
                   end=i + 1, cands=[key], fixed=True, outlier=(comp, f), note=note)

    # ------------------------------------------------------------------ 3. labels from the model
    def labels(self):
        w = self.w
        for key in [k for k in w._series_maps if isinstance(k, tuple) and k and k[0] in ("clean", "pclean")]:
            del w._series_maps[key]  # effects were added after some rows were first read
        out = []
        n = 0
        for ev in sorted(self.events, key=lambda e: (e["first"], e["source"])):
            a = ev["first"]
            pre = ev["source"] == "pretuned"
            members, metrics, honest, signs = [], [], {}, []
            for key in ev["cands"]:
                _, p, k = key
                c0 = w.pclean(a - 1, p, k) if pre else w.clean(a - 1, p, k)
                c1 = w.pclean(a, p, k) if pre else w.clean(a, p, k)
                if c0 is None:
                    continue
                if ev.get("fixed"):
                    members.append((p, k))
                    if ev["cause"] != "noise":
                        hv = c0.get("geomean" if pre else "helion_speedup_geomean")
                        if hv:
                            honest[f"{p}/{k}"] = round(hv, 4)
                    continue
                if c1 is None:
                    continue
                moved = []
                thr = math.log(1.02) if ev.get("native") else THRESH
                for m in (("geomean",) if pre else DMETRICS):
                    x0, x1 = c0.get(m), c1.get(m)
                    if x0 and x1 and abs(math.log(x1 / x0)) >= thr:
                        moved.append(m)
                        if m in ("geomean", "helion_speedup_geomean"):
                            signs.append(1 if x1 > x0 else -1)
                if not moved:
                    continue
                big = any(abs(math.log(c1[m] / c0[m])) >= THRESH for m in moved)
                members.append((p, k))
                ev["_big"] = ev.get("_big", False) or big
                metrics += [m for m in moved if m not in metrics]
                hv = (c1 if ev["honest_side"] == "after" else c0).get("geomean" if pre else "helion_speedup_geomean")
                if hv:
                    honest[f"{p}/{k}"] = round(hv, 4)
            if not members or (ev.get("native") and not ev.get("_big")):
                continue
            if ev["cause"] == "noise":
                comp, f = ev.get("outlier", ("h", 1.2))
                metrics = ["geomean" if pre else "helion_speedup_geomean"]
                direction = "down" if (comp == "h") == (f > 1) else "up"
                if ev["kind"] == "scatter":
                    direction = "both"
                honest = {}
            else:
                if not metrics:
                    metrics = ["geomean" if pre else "helion_speedup_geomean"]
                head = metrics[0]
                if signs:
                    direction = "up" if sum(signs) > 0 else "down"
                elif ev["kind"] == "outage":
                    direction = "missing"
                else:
                    cl = w.pclean if pre else w.clean
                    x0 = [(cl(a - 1, p, k) or {}).get(head) for p, k in members]
                    x1 = [(cl(a, p, k) or {}).get(head) for p, k in members]
                    up = sum(1 for u0, u1 in zip(x0, x1) if u0 and u1 and u1 > u0)
                    direction = "up" if up * 2 >= len(members) else "down"
                metrics = sorted(metrics, key=lambda m: (m not in ("geomean", "helion_speedup_geomean"),
                                                         DMETRICS.index(m) if m in DMETRICS else 0))
            n += 1
            out.append({"id": f"q{w.seed}-{n:02d}", "source": ev["source"], "cause": ev["cause"], "kind": ev["kind"],
                        "direction": direction, "members": members, "metrics": metrics, "first": a,
                        "end": ev["end"], "culprit": ev["culprit"] if ev["cause"] == "real" else None,
                        "change": ev["change"] if ev["cause"] not in ("real", "noise") else None,
                        "honest": honest, "note": ev["note"]})
        return out


def plan_world(w):
    p = Planner(w)
    p.natural(budget_total=30, planted=13)
    n_events = sum(1 for e in p.events if e["cause"] != "noise")
    n_method = sum(1 for e in p.events if e["cause"] == "method_change")
    p.planted_method(int(np.clip(5 - n_method, 1, 3)))
    n_events = sum(1 for e in p.events if e["cause"] != "noise")
    p.few = n_events < 10
    p.planted_hardware()
    n_hw = sum(1 for e in p.events if e["cause"] != "noise") - n_events
    has_pre = any(f is not None for f in w.pfacts)
    p.planted_real(int(np.clip(28 - n_events - n_hw - (2 if has_pre else 0), 6, 11)))
    if has_pre:
        p.planted_pretuned_real(2)
    p.planted_noise()
    w.labels_all = p.labels()
