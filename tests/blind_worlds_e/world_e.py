"""Set E world: nightlies on the real Helion main, numbers from per-shape time simulation,
documents from Helion's own dashboard builders, labels for every move that was made."""
from __future__ import annotations

import datetime as dt
import importlib.util
import json
import math
import os
import re
import shutil
import tempfile
import types
import zlib
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night

from .facts import DISPATCH, P_DISPATCH, FactReader
from .repo import HEAD, Repo, clone
from .sim import HEAVY, PretunedParams, SeriesParams, rng_for, strong_or_flat, u

SEEDS = (41, 42, 43)
WINDOWS = {41: (130, dt.date(2026, 4, 12)), 42: (150, dt.date(2026, 7, 18)), 43: (120, dt.date(2026, 8, 20))}
UTC = dt.timezone.utc
EPOCH = dt.datetime(2025, 1, 1, tzinfo=UTC)
DEVICES = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
           "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7"}
ARCH = {"mi325x": "gfx942:sramecc+:xnack-", "mi350x": "gfx950:sramecc+:xnack-"}
COMPUTE = {"h100": "sm90", "b200": "sm100"}
THRESH = 0.045   # noise-free relative move that makes a series a label member

# Curated effects the parsed facts cannot see (the diff is in code paths, not settings).
# sha prefix -> spec
CURATED = {
    "ea484a38": dict(src="dashboard", cause="method_change", kind="harness", honest="pre", lanes=("gpu",),
                     kernels=("flash_attention", "gemm", "grouped_gemm", "int4_gemm"), comp={"hcg": 1.095},
                     note="run tritonbench once: the recorded run now follows autotuning in the same process "
                          "without the 2-minute cool-down; Helion's cudagraph-timed speedup drops, latency flat"),
    "c42fc318": dict(src="dashboard", cause="method_change", kind="harness", honest="post", lanes=("gpu",),
                     kernels=("softmax", "layer_norm", "rms_norm", "kl_div", "jsd", "cross_entropy"),
                     comp={"hlat": 0.91},
                     note="benchmark subprocess by default: do_bench latency of small kernels drops; speedup flat"),
    "cabf93d5": dict(src="dashboard", cause="method_change", kind="shapes", honest="post", lanes=("gpu",),
                     aliases=("mi350x",), kernels=("gdn_fwd_h",), nshapes=2,
                     note="gdn_fwd_h sweep cut to 2 inputs on MI350 (get_shape_iter patch)"),
    "52326a08": dict(src="pretuned", cause="method_change", kind="timer", honest="post", cg_only=True,
                     note="pretuned cudagraph timer clears L2: cold-cache timing of Helion and baselines"),
    "76df68c9": dict(src="pretuned", cause="real", kind="heuristics/config", honest="post",
                     kernels=("nvfp4_gemv",), comp={"h": 1.10},
                     note="warp-specialized NVFP4 GEMV config disabled: the pretuned config is slower"),
}

KEYWORDS = {"matmul": ["gemm", "int4_gemm"], "gemm": ["gemm", "grouped_gemm"], "mm": ["gemm"],
            "attention": ["flash_attention"], "softmax": ["softmax"], "norm": ["layer_norm", "rms_norm"],
            "layer_norm": ["layer_norm", "layer_norm-bwd"], "rms": ["rms_norm", "rms_norm-bwd"],
            "reduction": ["softmax", "rms_norm", "cross_entropy", "sum"], "reduce": ["sum", "softmax"],
            "welford": ["welford"], "cross_entropy": ["cross_entropy"], "jsd": ["jsd"], "kl": ["kl_div"],
            "rope": ["rope"], "persistent": ["gemm", "grouped_gemm"], "tma": ["gemm", "flash_attention"],
            "backward": ["layer_norm-bwd", "rms_norm-bwd"], "bwd": ["layer_norm-bwd", "rms_norm-bwd"],
            "exp": ["vector_exp"], "add": ["vector_add"], "int4": ["int4_gemm"], "grouped": ["grouped_gemm"],
            "gdn": ["gdn_fwd_h"], "mamba": ["mamba2_chunk_scan", "mamba2_chunk_state"], "gla": ["simple_gla", "full_gla"],
            "delta": ["delta_rule", "gated_delta_rule"], "kda": ["kda"]}


def _iso(d: dt.datetime) -> str:
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_id(d: dt.datetime) -> str:
    return str(20_000_000_000 + int((d - EPOCH).total_seconds()))


def _geo(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else 0.0


class Effect:
    def __init__(self, src, cause, kind, start, end, factors, honest, culprit=None, change=None,
                 note="", nshapes=None, missing=False, alias_missing=None, label=True):
        self.src, self.cause, self.kind = src, cause, kind
        self.start, self.end = start, end
        self.factors = factors          # (alias, kernel) -> {comp: factor}
        self.honest = honest
        self.culprit, self.change = culprit, change
        self.note = note
        self.nshapes = nshapes or {}
        self.missing = missing
        self.label = label

    def active(self, i):
        return self.start <= i and (self.end is None or i < self.end)


class World:
    def __init__(self, seed: int, workdir: Path, nights: int | None = None):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = clone(self.workdir)
        self.git = Repo(self.repo)
        self.fr = FactReader(self.git)
        n_default, end = WINDOWS.get(seed, (120, dt.date(2026, 8, 20)))
        self.N = nights or n_default
        self._make_nights(end)
        self.effects: list[Effect] = []
        self.pending_labels = []
        self.params = {}
        self.pparams = {}
        self.occ = {}                      # (src, alias, kernel) -> set of busy nights
        self._outliers = {}
        self._dead = {}
        self._scatter = {}
        self._pick_scatter()
        self._auto_events()
        self._pretuned_auto_events()
        self._curated_events()
        self._pretuned_real()
        self._hardware_episodes()
        self._real_events()
        self._noise_events()
        self._finalize_labels()
        self._pick_dead_night()
        self._build_documents()
        self.git.close()

    # ------------------------------------------------------------------ nights
    def _make_nights(self, end):
        r = rng_for(self.seed, "nights")
        self.nights, self.facts, self.pfacts, self.ptimes = [], [], [], []
        start = end - dt.timedelta(days=self.N - 1)
        for i in range(self.N):
            day = start + dt.timedelta(days=i)
            cron = dt.datetime(day.year, day.month, day.day, 8, 0, tzinfo=UTC)
            when = cron + dt.timedelta(minutes=int(r.integers(0, 30)), seconds=int(r.integers(0, 60)))
            sha = self.git.head_at(cron)
            f = self.fr.facts(sha)
            pcron = cron + dt.timedelta(hours=2)
            pwhen = pcron + dt.timedelta(minutes=int(r.integers(0, 20)), seconds=int(r.integers(0, 60)))
            psha = self.git.head_at(pcron)
            pf = self.fr.facts(psha)
            if pf.pretuned:
                night = Night(_run_id(when), sha, sha[:8], when, _run_id(pwhen), psha)
            else:
                night = Night(_run_id(when), sha, sha[:8], when)
                pf = None
            self.nights.append(night)
            self.facts.append(f)
            self.pfacts.append(pf)
            self.ptimes.append(pwhen)

    def _pick_scatter(self):
        r = rng_for(self.seed, "scatter")
        keys = sorted(set.intersection(*[set(self.lanes_at(i)) for i in range(0, self.N, max(1, self.N // 10))]))
        keys = [k for k in keys if self.lanes_at(0)[k].lane == "gpu"]
        if keys:
            key = keys[int(r.integers(0, len(keys)))]
            self._scatter[key] = 0
            self.mark("dashboard", key[0], key[1], -10, self.N + 10)

    def _pick_dead_night(self):
        if self.N < 60:
            return
        r = rng_for(self.seed, "dead")
        starts = {self._run_index(l.first_bad_run_id) for l in self.labels} | \
                 {self._run_index(l.end_run_id) for l in self.labels if l.end_run_id}
        for _ in range(50):
            i = int(r.integers(10, self.N - 5))
            if all(abs(i - s) > 3 for s in starts if s is not None):
                self._dead[i] = True
                return

    def _run_index(self, rid):
        for i, n in enumerate(self.nights):
            if n.run_id == rid or n.p_run_id == rid:
                return i
        return None

    # ------------------------------------------------------------------ state
    def lanes_at(self, i):
        """(alias, kernel) -> lane for what runs at night i."""
        out = {}
        for ln in self.facts[i].lanes:
            for k in ln.kernels:
                out.setdefault((ln.alias, k), ln)
        return out

    def env_key(self, i, alias):
        for ln in self.facts[i].lanes:
            if ln.alias == alias and ln.lane != "tpu":
                return (ln.runner, ln.image, ln.runtime)
        return ("tpu",)

    def sp(self, alias, kernel, lane):
        key = (alias, kernel)
        if key not in self.params:
            self.params[key] = SeriesParams(self.seed, "dashboard", alias, kernel, lane)
        return self.params[key]

    def pp(self, alias, kernel):
        key = (alias, kernel)
        if key not in self.pparams:
            self.pparams[key] = PretunedParams(self.seed, alias, kernel)
        return self.pparams[key]

    def nshapes(self, i, alias, kernel, lane):
        f = self.facts[i]
        for e in self.effects:
            if e.src == "dashboard" and e.active(i) and (alias, kernel) in e.nshapes:
                return e.nshapes[(alias, kernel)]
        if lane.lane == "linattn":
            base = kernel[:-4] if kernel.endswith("-bwd") else kernel
            return max(1, len(f.linattn_varlen) if base == "kda_varlen" and f.linattn_varlen else len(f.linattn_shapes))
        km = f.kmap.get(kernel, {})
        n = km.get("n") or self.sp(alias, kernel, lane.lane).default_n
        if f.max_inputs:
            n = min(n, f.max_inputs)
        return n

    def shape_names(self, i, alias, kernel, lane, n):
        if lane.lane == "linattn":
            base = kernel[:-4] if kernel.endswith("-bwd") else kernel
            f = self.facts[i]
            names = f.linattn_varlen if base == "kda_varlen" and f.linattn_varlen else f.linattn_shapes
            names = list(names[:n]) or ["B1_T8192_H96_D128"]
            return names
        return self.sp(alias, kernel, lane.lane).shape_labels[:n]

    def state_factors(self, i, alias, kernel, lane):
        """Multiplicative factors on each timer from the file-derived state at night i."""
        f = self.facts[i]
        p = self.sp(alias, kernel, lane.lane)
        fac = {"b": 1.0, "hcg": 1.0, "hlat": 1.0, "t": 1.0, "c": 1.0, "abs": 1.0}
        if lane.lane == "gpu":
            cg = f.global_cudagraph and f.kmap.get(kernel, {}).get("cg", True)
            if not cg:
                fac["hcg"] *= p.nocg["h"]; fac["t"] *= p.nocg["t"]; fac["c"] *= p.nocg["c"]; fac["b"] *= p.nocg["b"]
            # torch pin: baseline (eager/aten) and torch.compile move with it
            if f.torch_pin not in ("", "2.9.*"):
                for pin in self._pins_upto(f.torch_pin):
                    fac["b"] *= strong_or_flat((self.seed, "pin", pin, alias, kernel), 0.4, sign=-1 if u(self.seed, "pinsign", pin, kernel) < 0.7 else 1)
                    fac["c"] *= strong_or_flat((self.seed, "pinc", pin, alias, kernel), 0.3)
        if lane.lane in ("gpu", "tpu"):
            env = f.autotune_env if lane.lane == "gpu" else f.autotune_env_tpu
            for k, v in sorted(env.items()):
                if k.endswith("RANDOM_SEED"):
                    fac["hcg"] *= (x := strong_or_flat((self.seed, "seed", alias, kernel, v), 0.10 if p.heavy else 0.03, 0.07, 0.10))
                    fac["hlat"] *= x
                elif lane.lane == "gpu":
                    if p.heavy:
                        x = strong_or_flat((self.seed, "atenv", k, v, alias, kernel), 0.55, 0.07, 0.12, sign=1)
                    else:
                        x = strong_or_flat((self.seed, "atenv", k, v, alias, kernel), 0.05, 0.07, 0.09, sign=1)
                    fac["hcg"] *= x; fac["hlat"] *= x
        # machine: runner / image / runtime of this alias
        env = self.env_key(i, alias)
        e0 = self.env_key(0, alias)
        if env != e0 and env != ("tpu",):
            fac["abs"] *= 1 + (u(self.seed, "envabs", alias, env) - 0.5) * 0.3
            x = strong_or_flat((self.seed, "envh", alias, kernel, env), 0.35)
            fac["hcg"] *= x; fac["hlat"] *= x
            fac["t"] *= strong_or_flat((self.seed, "envt", alias, kernel, env), 0.25)
            fac["b"] *= strong_or_flat((self.seed, "envb", alias, kernel, env), 0.2)
        return fac

    def _pins_upto(self, pin):
        order = ["2.10.*", "2.11.*", "2.12.*", "2.13.*"]
        return order[: order.index(pin) + 1] if pin in order else [pin]

    def effect_factors(self, i, src, alias, kernel):
        fac = {}
        for e in self.effects:
            if e.src == src and e.active(i) and (alias, kernel) in e.factors:
                for c, v in e.factors[(alias, kernel)].items():
                    fac[c] = fac.get(c, 1.0) * v
        return fac

    def missing(self, i, src, alias, kernel):
        for e in self.effects:
            if e.src == src and e.missing and e.active(i) and (alias, kernel) in e.factors:
                return True
        return False

    def values(self, i, alias, kernel, lane, noise=False):
        """Per-shape dict of metric lists (the artifact content)."""
        p = self.sp(alias, kernel, lane.lane)
        n = self.nshapes(i, alias, kernel, lane)
        fac = self.state_factors(i, alias, kernel, lane)
        for c, v in self.effect_factors(i, "dashboard", alias, kernel).items():
            fac[c] = fac.get(c, 1.0) * v
        base = p.base[:n] * fac["b"] * fac["abs"]
        h = p.base[:n] / np.exp(p.logs[:n]) * fac["abs"]
        hcg = h * fac["hcg"]
        hlat = h * p.lat_ratio * fac["hlat"] / fac.get("cgfix", 1.0)
        tri = p.base[:n] / p.tri[:n] * fac["t"] * fac["abs"]
        tc = p.base[:n] / p.tc[:n] * fac["c"] * fac["abs"]
        comp = np.full(n, p.compile_s)
        acc = np.ones(n)
        if noise:
            r = rng_for(self.seed, "noise", i, alias, kernel)
            s = p.sigma * (2.5 if self._scatter.get((alias, kernel)) else 1.0)
            if not self.facts[i].autotune_env.get("HELION_AUTOTUNE_RANDOM_SEED") and p.heavy:
                s = s * 1.4
            plat = float(np.exp(rng_for(self.seed, "plat", i, alias).normal(0, 0.012)))
            base = base * np.exp(r.normal(0, s, n)) * plat
            hcg = hcg * np.exp(r.normal(0, s, n)) * plat
            hlat = hlat * np.exp(r.normal(0, s, n)) * plat
            tri = tri * np.exp(r.normal(0, s, n)) * plat
            tc = tc * np.exp(r.normal(0, s, n)) * plat
            comp = comp * np.exp(r.normal(0, 0.05, n))
            if r.random() < 0.01:   # stray single-timer outlier
                which = ["hcg", "hlat", "tri", "tc"][int(r.integers(0, 4))]
                f = r.uniform(1.15, 1.2) ** (1 if r.random() < 0.6 else -1)
                if which == "hcg": hcg = hcg * f
                elif which == "hlat": hlat = hlat * f
                elif which == "tri": tri = tri * f
                else: tc = tc * f
            o = self._outliers.get((i, alias, kernel))
            if o:
                if o[0] == "tri": tri = tri * o[1]
                else: hcg = hcg * o[1]
            if r.random() < 0.006 and n > 2:      # one shape fails
                j = int(r.integers(0, n))
                acc[j] = 0.0
                if r.random() < 0.5:
                    hcg[j] = np.inf; hlat[j] = np.inf
        hs = np.where(np.isfinite(hcg), base / hcg, 0.0)
        out = {"helion_speedup": hs}
        if lane.lane == "gpu":
            out["triton_speedup"] = base / tri
            out["torch_compile_speedup"] = base / tc
        out["helion_accuracy"] = acc
        if self.facts[i].has_latency or lane.lane in ("linattn", "tpu"):
            out["helion_latency_ms"] = np.where(np.isfinite(hlat), hcg if lane.lane == "linattn" else hlat, 0.0)
        if self.facts[i].has_compile and lane.lane != "linattn":
            out["helion_compile_time_s"] = comp
        return out

    def headline(self, i, alias, kernel, lane):
        v = self.values(i, alias, kernel, lane, noise=False)
        d = {"helion_speedup_geomean": _geo(v["helion_speedup"])}
        if "triton_speedup" in v:
            d["triton_speedup_geomean"] = _geo(v["triton_speedup"])
            d["torch_compile_speedup_geomean"] = _geo(v["torch_compile_speedup"])
        if "helion_latency_ms" in v:
            d["helion_latency_avg_ms"] = float(np.mean(v["helion_latency_ms"]))
        return d

    # -------------------------------------------------------------- pretuned
    def p_series_at(self, i):
        pf = self.pfacts[i]
        if not pf:
            return {}
        out = {}
        for k, info in pf.p_kernels.items():
            for alias in info["hw"]:
                if alias in pf.p_aliases:
                    out[(alias, k)] = info
        return out

    def p_values(self, i, alias, kernel, noise=False):
        pf = self.pfacts[i]
        info = pf.p_kernels[kernel]
        p = self.pp(alias, kernel)
        h = p.h.copy()
        fac = self.effect_factors(i, "pretuned", alias, kernel)
        h = h * fac.get("h", 1.0)
        bls = {name: p.baseline(self.seed, alias, kernel, name).copy() * fac.get("b", 1.0) for name in info["baselines"]}
        if not info["cg"]:
            h = h * p.nocg
            for name in bls:
                bls[name] = bls[name] * (1 + (p.nocg - 1) * (0.4 if name != "torch_compile" else 0.7))
        # config blob identity: a regenerated config that nobody planted is neutral
        if noise:
            r = rng_for(self.seed, "pnoise", i, alias, kernel)
            h = h * np.exp(r.normal(0, p.sigma, p.n))
            for name in bls:
                bls[name] = bls[name] * np.exp(r.normal(0, p.sigma, p.n))
        fastest = np.min(np.vstack(list(bls.values())), axis=0)
        sp = fastest / h
        rec = {"geomean": _geo(sp), "helion_wins": int((sp > 1).sum()), "total": int(p.n),
               "best_speedup": float(sp.max()), "cudagraph": bool(info["cg"])}
        if len(bls) > 1:
            rec["baselines"] = {}
            for name, b in bls.items():
                s = b / h
                rec["baselines"][name] = {"wins": int((s > 1).sum()), "total": int(p.n),
                                          "geomean": round(_geo(s), 4), "best_speedup": round(float(s.max()), 4)}
        return rec

    # ---------------------------------------------------------------- events
    def busy(self, src, alias, kernel, i, pad=4):
        occ = self.occ.get((src, alias, kernel), set())
        return any(j in occ for j in range(i - pad, i + pad + 1))

    def mark(self, src, alias, kernel, i, end=None):
        s = self.occ.setdefault((src, alias, kernel), set())
        s.add(i)
        if end is not None:
            s.update(range(i, end + 1))

    def find_change(self, i, paths, pred, pf=False):
        """The first-parent commit in (night i-1, night i] at which pred(facts) becomes true."""
        a = (self.nights[i - 1].p_full_sha if pf else self.nights[i - 1].full_sha) or self.nights[i - 1].full_sha
        b = self.nights[i].p_full_sha if pf else self.nights[i].full_sha
        cands = [c for c in self.git.between(a, b) if any(any(fp.startswith(p) for p in paths) for fp in c["files"])]
        for c in cands:
            try:
                if pred(self.fr.facts(c["sha"])):
                    return c["sha"]
            except Exception:
                continue
        return cands[-1]["sha"] if cands else b

    def _auto_events(self):
        """Every file-derived state change that moves numbers becomes labeled moves."""
        for i in range(1, self.N):
            f0, f1 = self.facts[i - 1], self.facts[i]
            if f0.sha == f1.sha:
                continue
            cur, prev = self.lanes_at(i), self.lanes_at(i - 1)
            reasons = {}   # (alias,kernel) -> (cause, kind, change, honest, note)
            for (alias, k), ln in cur.items():
                if (alias, k) not in prev:
                    continue
                e0, e1 = self.env_key(i - 1, alias), self.env_key(i, alias)
                if e0 != e1:
                    kind = "runner" if e0[0] != e1[0] else "driver/toolchain"
                    ch = self.find_change(i, [".github/"], lambda F, a=alias, e=e1: any(
                        l.alias == a and (l.runner, l.image, l.runtime) == e for l in F.lanes))
                    reasons[(alias, k)] = ("hardware", kind, ch, "post", f"{alias} machine {e0} -> {e1}")
                    continue
                if ln.lane == "gpu":
                    if f0.torch_pin != f1.torch_pin:
                        ch = self.find_change(i, [".github/workflows/benchmark.yml"], lambda F, p=f1.torch_pin: F.torch_pin == p)
                        reasons[(alias, k)] = ("method_change", "baseline", ch, "post", f"torch pin {f0.torch_pin} -> {f1.torch_pin}")
                        continue
                    cg0 = f0.global_cudagraph and f0.kmap.get(k, {}).get("cg", True)
                    cg1 = f1.global_cudagraph and f1.kmap.get(k, {}).get("cg", True)
                    if cg0 != cg1:
                        ch = self.find_change(i, ["benchmarks/run.py", ".github/workflows/benchmark.yml"],
                                              lambda F, k=k, c=cg1: (F.global_cudagraph and F.kmap.get(k, {}).get("cg", True)) == c)
                        reasons[(alias, k)] = ("method_change", "cudagraph", ch, "post" if cg1 else "pre",
                                               f"--cudagraph {'restored' if cg1 else 'removed'} for {k}")
                        continue
                    if f0.autotune_env != f1.autotune_env:
                        ch = self.find_change(i, [".github/workflows/"], lambda F, e=f1.autotune_env: F.autotune_env == e)
                        budget = any("SEED" not in x for x in set(f1.autotune_env) - set(f0.autotune_env))
                        reasons[(alias, k)] = ("method_change", "autotune", ch, "pre" if budget else "post",
                                               f"autotune env {f0.autotune_env} -> {f1.autotune_env}")
                        continue
                    if f0.latency_mode != f1.latency_mode:
                        ch = self.find_change(i, [".github/workflows/benchmark.yml"], lambda F, m=f1.latency_mode: F.latency_mode == m)
                        reasons[(alias, k)] = ("method_change", "timer", ch, "post", "latency measure mode changed")
                        continue
                if ln.lane == "tpu" and f0.autotune_env_tpu != f1.autotune_env_tpu:
                    ch = self.find_change(i, [".github/workflows/"], lambda F, e=f1.autotune_env_tpu: F.autotune_env_tpu == e)
                    reasons[(alias, k)] = ("method_change", "autotune", ch, "post", "TPU autotune env changed")
                    continue
                n0 = self.nshapes(i - 1, alias, k, prev[(alias, k)])
                n1 = self.nshapes(i, alias, k, ln)
                names0 = self.shape_names(i - 1, alias, k, prev[(alias, k)], n0)
                names1 = self.shape_names(i, alias, k, ln, n1)
                if n0 != n1 or names0 != names1:
                    path = "benchmarks/run_linattn.py" if ln.lane == "linattn" else "benchmarks/run.py"
                    ch = self.find_change(i, [path], lambda F, k=k, n=n1, ln=ln: (
                        len(F.linattn_shapes) == n if ln.lane == "linattn" else (F.kmap.get(k, {}).get("n") or 0) == (f1.kmap.get(k, {}).get("n") or 0)))
                    reasons[(alias, k)] = ("method_change", "shapes", ch, "post", f"{k}: {n0} -> {n1} input shapes")
            groups = {}
            for key, (cause, kind, ch, honest, note) in reasons.items():
                groups.setdefault((cause, kind, ch, honest), []).append((key, note))
            for (cause, kind, ch, honest), items in groups.items():
                self.pending_labels.append(dict(src="dashboard", cause=cause, kind=kind, start=i, end=None,
                                                members=[k for k, _ in items], culprit=None, change=ch,
                                                honest=honest, note=items[0][1] + f" ({self.git.by_sha[ch]['subject'][:70] if ch in self.git.by_sha else ''})",
                                                auto=True))
                for (a, k), _ in items:
                    self.mark("dashboard", a, k, i)

    def _pretuned_auto_events(self):
        for i in range(1, self.N):
            p0, p1 = self.pfacts[i - 1], self.pfacts[i]
            if not p0 or not p1 or p0.sha == p1.sha:
                continue
            s0, s1 = self.p_series_at(i - 1), self.p_series_at(i)
            groups = {}
            for key, info in s1.items():
                if key not in s0:
                    continue
                old = s0[key]
                alias, k = key
                if p0.p_aliases.get(alias) != p1.p_aliases.get(alias):
                    ch = self.find_change(i, [".github/"], lambda F, a=alias, v=p1.p_aliases.get(alias): F.p_aliases.get(a) == v, pf=True)
                    kind = "runner" if (p0.p_aliases.get(alias) or ("",))[0] != (p1.p_aliases.get(alias) or ("",))[0] else "driver/toolchain"
                    groups.setdefault(("hardware", kind, ch, "post"), []).append(key)
                elif old["baselines"] != info["baselines"]:
                    ch = self.find_change(i, [f"pretuned_kernels/{k}/"], lambda F, k=k, b=info["baselines"]: F.p_kernels.get(k, {}).get("baselines") == b, pf=True)
                    groups.setdefault(("method_change", "baseline", ch, "post"), []).append(key)
                elif old["cg"] != info["cg"]:
                    ch = self.find_change(i, [f"pretuned_kernels/{k}/"], lambda F, k=k, c=info["cg"]: F.p_kernels.get(k, {}).get("cg") == c, pf=True)
                    groups.setdefault(("method_change", "cudagraph", ch, "post" if info["cg"] else "pre"), []).append(key)
            for (cause, kind, ch, honest), members in groups.items():
                self.pending_labels.append(dict(src="pretuned", cause=cause, kind=kind, start=i, end=None, members=members,
                                                culprit=None, change=ch, honest=honest, auto=True,
                                                note=f"pretuned {kind} change ({self.git.by_sha.get(ch, {}).get('subject', '')[:70]})"))
                for a, k in members:
                    self.mark("pretuned", a, k, i)

    def first_night_with(self, sha, pf=False):
        idx = self.git.index[sha]
        for i, n in enumerate(self.nights):
            s = n.p_full_sha if pf else n.full_sha
            if s and self.git.index[s] >= idx:
                return i
        return None

    def _curated_events(self):
        for c in self.git.between(self.nights[0].full_sha, self.nights[-1].p_full_sha or self.nights[-1].full_sha):
            spec = CURATED.get(c["sha"][:8])
            if not spec:
                continue
            pf = spec["src"] == "pretuned"
            i = self.first_night_with(c["sha"], pf=pf)
            if i is None or i < 3:
                continue
            factors, nsh = {}, {}
            if pf:
                if not self.pfacts[i]:
                    continue
                cur = self.p_series_at(i)
                prev = self.p_series_at(i - 1)
                for (a, k), info in cur.items():
                    if (a, k) not in prev or self.busy("pretuned", a, k, i, 1):
                        continue
                    if spec.get("cg_only") and info["cg"]:
                        x = strong_or_flat((self.seed, "l2", a, k), 0.6, 0.07, 0.13)
                        if abs(x - 1) > 0.02:
                            factors[(a, k)] = {"h": x}
                    elif spec.get("kernels") and k in spec["kernels"]:
                        factors[(a, k)] = dict(spec["comp"])
            else:
                cur = self.lanes_at(i)
                prev = self.lanes_at(i - 1)
                for (a, k), ln in cur.items():
                    if (a, k) not in prev or ln.lane not in spec["lanes"] or k not in spec["kernels"]:
                        continue
                    if spec.get("aliases") and a not in spec["aliases"]:
                        continue
                    if self.busy("dashboard", a, k, i, 1):
                        continue
                    if "nshapes" in spec:
                        nsh[(a, k)] = spec["nshapes"]
                    else:
                        factors[(a, k)] = dict(spec["comp"])
            if not factors and not nsh:
                continue
            culprit = c["sha"] if spec["cause"] == "real" else None
            change = None if spec["cause"] == "real" else c["sha"]
            e = Effect(spec["src"], spec["cause"], spec["kind"], i, None,
                       {**factors, **{k: {} for k in nsh}}, spec["honest"], culprit, change,
                       spec["note"], nshapes=nsh)
            self.effects.append(e)
            self.pending_labels.append(dict(src=spec["src"], cause=spec["cause"], kind=spec["kind"], start=i, end=None,
                                            members=list(e.factors), culprit=culprit, change=change,
                                            honest=spec["honest"], note=spec["note"] + f" ({c['subject'][:60]})"))
            for a, k in e.factors:
                self.mark(spec["src"], a, k, i)

    def _pretuned_real(self):
        """A checked-in pretuned config regenerated by a real commit moves that kernel (real)."""
        if any(pl["src"] == "pretuned" and pl["cause"] == "real" for pl in self.pending_labels):
            return
        first = next((i for i in range(self.N) if self.pfacts[i]), None)
        if first is None or first + 4 >= self.N:
            return
        r = rng_for(self.seed, "preal")
        cands = self.git.between(self.nights[first + 2].p_full_sha, self.nights[-1].p_full_sha or self.nights[-1].full_sha)
        for c in cands:
            hits = [re.match(r"pretuned_kernels/(\w+)/_helion_aot_\w+_cuda_(sm\d+)\.py$", f) for f in c["files"]]
            hits = [(m.group(1), {"sm90": "h100", "sm100": "b200"}.get(m.group(2))) for m in hits if m]
            i = self.first_night_with(c["sha"], pf=True)
            if not hits or i is None or i >= self.N - 1:
                continue
            cur, prev = self.p_series_at(i), self.p_series_at(i - 1)
            keys = [(a, k) for k, a in hits if (a, k) in cur and (a, k) in prev and not self.busy("pretuned", a, k, i)]
            if not keys:
                continue
            key = keys[0]
            f = 1 / r.uniform(1.08, 1.14) if r.random() < 0.6 else r.uniform(1.08, 1.14)
            e = Effect("pretuned", "real", "heuristics/config", i, None, {key: {"h": f}}, "post", culprit=c["sha"],
                       note=f"pretuned config regenerated: {c['subject'][:70]}")
            self.effects.append(e)
            self.pending_labels.append(dict(src="pretuned", cause="real", kind="heuristics/config", start=i, end=None,
                                            members=[key], culprit=c["sha"], change=None, honest="post", note=e.note))
            self.mark("pretuned", key[0], key[1], i)
            return
        # no regenerated config in the window: a Triton-codegen change on helion/ moves one pretuned kernel
        for c in cands:
            subj = c["subject"].lower()
            if not any(f.startswith("helion/_compiler") for f in c["files"]) or any(
                    w in subj for w in ("cute", "pallas", "tpu", "metal", "rocm", "revert", "docs")):
                continue
            i = self.first_night_with(c["sha"], pf=True)
            if i is None or i >= self.N - 1 or i < first + 3:
                continue
            cur, prev = self.p_series_at(i), self.p_series_at(i - 1)
            keys = sorted(k for k in cur if k in prev and not self.busy("pretuned", k[0], k[1], i))
            if not keys:
                continue
            key = keys[int(r.integers(0, len(keys)))]
            f = r.uniform(1.08, 1.13)
            e = Effect("pretuned", "real", "code", i, None, {key: {"h": f}}, "post", culprit=c["sha"],
                       note=f"pretuned kernel slower after helion codegen change: {c['subject'][:70]}")
            self.effects.append(e)
            self.pending_labels.append(dict(src="pretuned", cause="real", kind="code", start=i, end=None,
                                            members=[key], culprit=c["sha"], change=None, honest="post", note=e.note))
            self.mark("pretuned", key[0], key[1], i)
            return

    def _gpu_aliases_during(self, i0, i1):
        sets = [set(a for (a, k), ln in self.lanes_at(i).items() if ln.lane == "gpu") for i in range(i0, i1 + 1)]
        return sorted(set.intersection(*sets)) if sets else []

    def _platform_free(self, alias, i0, i1, pad=4):
        keys = [k for k in self.occ if k[0] == "dashboard" and k[1] == alias]
        return not any(j in self.occ[k] for k in keys for j in range(i0 - pad, i1 + pad + 1))

    def _hardware_episodes(self):
        r = rng_for(self.seed, "hw")
        # thermal episode: multi-night, platform-wide, ends
        for attempt in range(60):
            L = int(r.integers(4, 7))
            i0 = int(r.integers(8, max(9, self.N - L - 6)))
            al = self._gpu_aliases_during(i0 - 1, i0 + L)
            if not al:
                continue
            alias = al[int(r.integers(0, len(al)))]
            if not self._platform_free(alias, i0, i0 + L):
                continue
            factors = {}
            for (a, k), ln in self.lanes_at(i0).items():
                if a != alias or ln.lane != "gpu":
                    continue
                heavy = k.split("-")[0] in HEAVY
                factors[(a, k)] = {"abs": 1.13, "hcg": 1.09 if heavy else 1.0, "hlat": 1.09 if heavy else 1.0,
                                   "t": 1.07 if heavy else 1.0}
            e = Effect("dashboard", "hardware", "thermal", i0, i0 + L, factors, "pre", note=f"{alias} thermal throttling for {L} nights")
            self.effects.append(e)
            self.pending_labels.append(dict(src="dashboard", cause="hardware", kind="thermal", start=i0, end=i0 + L,
                                            members=list(factors), culprit=None, change=None, honest="pre", note=e.note))
            for a, k in factors:
                self.mark("dashboard", a, k, i0, i0 + L)
            break
        # outage: a platform with no results for 2-3 nights
        for attempt in range(60):
            L = int(r.integers(2, 4))
            i0 = int(r.integers(8, max(9, self.N - L - 5)))
            al = self._gpu_aliases_during(i0 - 1, i0 + L)
            if not al:
                continue
            alias = al[int(r.integers(0, len(al)))]
            if not self._platform_free(alias, i0, i0 + L):
                continue
            members = [(a, k) for (a, k), ln in self.lanes_at(i0).items() if a == alias]
            e = Effect("dashboard", "hardware", "outage", i0, i0 + L, {m: {} for m in members}, "pre",
                       note=f"{alias} runners unavailable for {L} nights (no results)", missing=True)
            self.effects.append(e)
            self.pending_labels.append(dict(src="dashboard", cause="hardware", kind="outage", start=i0, end=i0 + L,
                                            members=members, culprit=None, change=None, honest="pre", note=e.note,
                                            outage=True))
            for a, k in members:
                self.mark("dashboard", a, k, i0, i0 + L)
            break

    # ------------------------------------------------------------ real events
    def _slice(self, c, i):
        subj = c["subject"].lower()
        files = c["files"]
        cur = self.lanes_at(i)
        aliases = sorted({a for (a, k) in cur})
        code = [f for f in files if f.startswith("helion/") and "/metal" not in f and "/mps" not in f]
        if not code or any(w in subj for w in ("metal", "mps", "xpu", "[docs]", "typo", "lint", "revert")):
            return None
        if "cute" in subj or any("/cute" in f for f in code):
            plats = [a for a in aliases if a.endswith("_cute")]
        elif "pallas" in subj or "tpu" in subj or any("pallas" in f for f in code):
            plats = [a for a in aliases if a == "tpu"]
        elif any(t in subj for t in ("rocm", "amd", "hip", "gfx")):
            plats = [a for a in aliases if a.startswith("mi")]
        else:
            plats = [a for a in aliases if a in ("h100", "b200")]
            if "sm90" in subj or "hopper" in subj or "h100" in subj:
                plats = [a for a in plats if a == "h100"]
            elif "sm100" in subj or "blackwell" in subj or "b200" in subj or "tcgen05" in subj:
                plats = [a for a in plats if a == "b200"]
        if not plats:
            return None
        kind = "heuristics/config" if (any(f.startswith("helion/autotuner") for f in code) or
                                       any(w in subj for w in ("heuristic", "default config", "autotun"))) else "code"
        words = re.findall(r"[a-z0-9_]+", subj)
        want = []
        for w, ks in KEYWORDS.items():
            if w in words or (len(w) > 4 and w in subj):
                want += ks
        return plats, want, kind

    def _real_events(self):
        r = rng_for(self.seed, "real")
        n_real = 11 if self.N >= 100 else max(3, self.N // 10)
        lo, hi = 6, self.N - 1
        segs = np.linspace(lo, hi + 1, n_real + 1).astype(int)
        commits = self.git.between(self.nights[0].full_sha, self.nights[-1].full_sha)
        by_night = {}
        for c in commits:
            i = self.first_night_with(c["sha"])
            if i is not None and i >= lo:
                by_night.setdefault(i, []).append(c)
        chosen = []
        for s in range(n_real):
            a, b = segs[s], segs[s + 1]
            if s == n_real - 1:
                a = max(a, self.N - 3)   # a step in the last nightlies
            cands = []
            for i in range(a, b):
                for c in by_night.get(i, []):
                    sl = self._slice(c, i)
                    if not sl:
                        continue
                    plats, want, kind = sl
                    score = (2 if want else 0) + (1 if re.match(r"\s*\[", c["subject"]) else 0) + r.random()
                    cands.append((score, i, c, sl))
            cands.sort(key=lambda t: -t[0])
            for score, i, c, (plats, want, kind) in cands:
                ev = self._place_real(r, i, c, plats, want, kind)
                if ev:
                    chosen.append(ev)
                    break
        # two events a week apart in one series
        if chosen and self.N >= 40:
            for ev in chosen:
                i, key = ev
                j = i + 7
                if j >= self.N - 1:
                    continue
                cs = [c for c in by_night.get(j, []) if any(f.startswith("helion/") for f in c["files"])]
                if not cs or self.busy("dashboard", key[0], key[1], j, 2):
                    continue
                occ = self.occ[("dashboard",) + key]
                occ.discard(i)
                if self.busy("dashboard", key[0], key[1], j, 4):
                    occ.add(i)
                    continue
                occ.add(i)
                self._place_real(r, j, cs[0], [key[0]], [key[1]], "code", force=True)
                break
            # a stray single-timer outlier right next to a step
            i, key = chosen[len(chosen) // 2]
            self._outliers[(i - 1, key[0], key[1])] = ("tri", 1.18)

    def _place_real(self, r, i, c, plats, want, kind, force=False):
        cur = self.lanes_at(i)
        prev = self.lanes_at(i - 1)
        plats = list(plats)
        if len(plats) > 1 and r.random() < 0.55:
            plats = [plats[int(r.integers(0, len(plats)))]]
        keys = []
        for a in plats:
            ks = [k for (aa, k) in cur if aa == a and (aa, k) in prev]
            sel = [k for k in ks if k in want] or []
            if not sel and ks:
                m = int(r.integers(1, 4))
                sel = list(r.choice(ks, size=min(m, len(ks)), replace=False))
            keys += [(a, k) for k in sel[:4]]
        keys = [k for k in keys if not self.busy("dashboard", k[0], k[1], i, 0 if force else 4)]
        if not keys:
            return None
        regress = r.random() < 0.6
        factors = {}
        for key in keys:
            p = self.sp(key[0], key[1], cur[key].lane)
            mag = r.uniform(0.07, 0.10) if p.sigma >= 0.025 else r.uniform(0.08, 0.16)
            f = (1 + mag) if regress else 1 / (1 + mag)
            factors[key] = {"hcg": f, "hlat": f * (1 + r.normal(0, 0.004))}
        end = None
        subj = c["subject"]
        for d in self.git.between(c["sha"], self.nights[-1].full_sha):
            if d["subject"].startswith("Revert") and subj.split(" (#")[0][:40] in d["subject"]:
                j = self.first_night_with(d["sha"])
                if j is not None and j > i:
                    end = j
                break
        e = Effect("dashboard", "real", kind, i, end, factors, "post", culprit=c["sha"],
                   note=f"{'regression' if regress else 'improvement'} from helion change: {subj[:80]}")
        self.effects.append(e)
        self.pending_labels.append(dict(src="dashboard", cause="real", kind=kind, start=i, end=end, members=list(factors),
                                        culprit=c["sha"], change=None, honest="post", note=e.note))
        for a, k in factors:
            self.mark("dashboard", a, k, i, end)
        return (i, keys[0])

    # ------------------------------------------------------------------ noise
    def _noise_events(self):
        r = rng_for(self.seed, "noise-ev")
        allkeys = sorted({key for i in range(self.N) for key, ln in self.lanes_at(i).items()})
        placed = 0
        for attempt in range(300):
            if placed >= 4:
                break
            L = 2 if placed == 3 else 1
            i = int(r.integers(6, self.N - 4))
            key = allkeys[int(r.integers(0, len(allkeys)))]
            cur = self.lanes_at(i)
            if key not in cur or any(key not in self.lanes_at(j) for j in range(i - 3, i + L + 2)):
                continue
            if self.busy("dashboard", key[0], key[1], i - 1, 4) or self.busy("dashboard", key[0], key[1], i + L, 4):
                continue
            f = r.uniform(1.12, 1.2) ** (1 if r.random() < 0.6 else -1)
            e = Effect("dashboard", "noise", "blip", i, i + L, {key: {"hcg": f, "hlat": f, "b": 1.0}}, "pre",
                       note=f"{L}-night blip that reverts")
            self.effects.append(e)
            self.pending_labels.append(dict(src="dashboard", cause="noise", kind="blip", start=i, end=i + L,
                                            members=[key], culprit=None, change=None, honest="pre", note=e.note))
            self.mark("dashboard", key[0], key[1], i, i + L)
            placed += 1
        # pretuned blip
        for attempt in range(100):
            i = int(r.integers(3, self.N - 3))
            cur = self.p_series_at(i)
            if not cur or not self.p_series_at(i - 2):
                continue
            keys = sorted(k for k in cur if k in self.p_series_at(i - 2) and k in self.p_series_at(min(self.N - 1, i + 1)))
            if not keys:
                continue
            key = keys[int(r.integers(0, len(keys)))]
            if self.busy("pretuned", key[0], key[1], i, 3):
                continue
            e = Effect("pretuned", "noise", "blip", i, i + 1, {key: {"h": 1.15}}, "pre", note="pretuned 1-night blip")
            self.effects.append(e)
            self.pending_labels.append(dict(src="pretuned", cause="noise", kind="blip", start=i, end=i + 1,
                                            members=[key], culprit=None, change=None, honest="pre", note=e.note))
            self.mark("pretuned", key[0], key[1], i, i + 1)
            break
        # a high-scatter series (set before any value is computed: see _scatter)

    # ----------------------------------------------------------------- labels
    def _finalize_labels(self):
        self.labels = []
        hv = {}
        for n, pl in enumerate(self.pending_labels):
            src, i = pl["src"], pl["start"]
            members, metrics, honest = [], set(), {}
            direction_votes = []
            for key in pl["members"]:
                if src == "dashboard":
                    cur, prev = self.lanes_at(i), self.lanes_at(i - 1)
                    if key not in prev:
                        continue
                    if pl.get("outage"):
                        before = self.headline(i - 1, key[0], key[1], prev[key])
                        members.append(key)
                        honest[f"{key[0]}/{key[1]}"] = round(before["helion_speedup_geomean"], 4)
                        continue
                    if key not in cur:
                        continue
                    before = self.headline(i - 1, key[0], key[1], prev[key])
                    after = self.headline(i, key[0], key[1], cur[key])
                    moved = [m for m in after if m in before and before[m] and abs(after[m] / before[m] - 1) >= THRESH]
                    if pl["cause"] == "noise":
                        moved = moved or ["helion_speedup_geomean"]
                    if not moved:
                        continue
                    members.append(key)
                    metrics.update(moved)
                    side = before if pl["honest"] == "pre" else after
                    honest[f"{key[0]}/{key[1]}"] = round(side["helion_speedup_geomean"], 4)
                    if "helion_speedup_geomean" in moved:
                        direction_votes.append(after["helion_speedup_geomean"] < before["helion_speedup_geomean"])
                    elif "helion_latency_avg_ms" in moved:
                        direction_votes.append(after["helion_latency_avg_ms"] > before["helion_latency_avg_ms"])
                    else:
                        m = moved[0]
                        direction_votes.append(after[m] < before[m])
                else:
                    cur, prev = self.p_series_at(i), self.p_series_at(i - 1)
                    if key not in cur or key not in prev:
                        continue
                    before = self.p_values(i - 1, key[0], key[1])["geomean"]
                    after = self.p_values(i, key[0], key[1])["geomean"]
                    if abs(after / before - 1) < THRESH:
                        continue
                    members.append(key)
                    metrics.add("geomean")
                    honest[f"{key[0]}/{key[1]}"] = round(before if pl["honest"] == "pre" else after, 4)
                    direction_votes.append(after < before)
            if not members:
                continue
            reg = sum(direction_votes) >= len(direction_votes) / 2 if direction_votes else True
            if pl.get("outage"):
                metrics = {"helion_speedup_geomean"}
            rid = (lambda j: self.nights[j].p_run_id) if src == "pretuned" else (lambda j: self.nights[j].run_id)
            end = pl["end"]
            self.labels.append(Label(
                id=f"e{self.seed}-{len(self.labels):03d}-{pl['cause']}-{pl['kind'].replace('/', '_')}",
                source=src, cause=pl["cause"], kind=pl["kind"],
                direction="regression" if reg else "improvement",
                members=tuple(sorted(members)), metrics=tuple(sorted(metrics)),
                first_bad_run_id=rid(i), last_good_run_id=rid(i - 1),
                end_run_id=rid(end) if end is not None and end < self.N else None,
                culprit_sha=pl["culprit"], change_sha=pl["change"], honest_speedup=honest, note=pl["note"]))
        # scatter label
        for key, start in self._scatter.items():
            first = next((i for i in range(self.N) if key in self.lanes_at(i)), None)
            if first is None or first + 1 >= self.N:
                continue
            mid = self.headline(first, key[0], key[1], self.lanes_at(first)[key])
            self.labels.append(Label(
                id=f"e{self.seed}-{len(self.labels):03d}-noise-scatter", source="dashboard", cause="noise", kind="scatter",
                direction="regression", members=(key,), metrics=("helion_speedup_geomean",),
                first_bad_run_id=self.nights[first + 1].run_id, last_good_run_id=self.nights[first].run_id,
                end_run_id=None, culprit_sha=None, change_sha=None,
                honest_speedup={f"{key[0]}/{key[1]}": round(mid["helion_speedup_geomean"], 4)},
                note="high-scatter series: no persistent step"))

    # ------------------------------------------------------------- documents
    def _load_builder(self, name):
        tmp = Path(tempfile.mkdtemp(prefix="bwe-builder-", dir=self.workdir))
        src = self.git.show(HEAD, f".github/dashboard/{name}") if False else None
        import subprocess
        text = subprocess.run(["git", "show", f"{HEAD}:.github/dashboard/{name}"], cwd=self.repo,
                              capture_output=True, text=True, check=True).stdout
        path = tmp / name
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"_bwe_{name[:-3]}_{self.seed}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        shutil.rmtree(tmp, ignore_errors=True)
        return mod

    def _build_documents(self):
        main_b = self._load_builder("build_dashboard_data.py")
        pre_b = self._load_builder("build_pretuned_dashboard_data.py")
        clock = {"now": None}

        class _DT(dt.datetime):
            @classmethod
            def now(cls, tz=None):
                return clock["now"]
        shim = types.SimpleNamespace(datetime=_DT, timezone=dt.timezone, timedelta=dt.timedelta)
        main_b.datetime = shim
        pre_b.datetime = shim
        r = rng_for(self.seed, "runs")
        extra = self._extra_runs(r)
        runs_meta, p_meta = [], []
        prev_doc, prev_pdoc = None, None
        self._docs, self._pdocs, self._run_night = [], [], {}
        work = Path(tempfile.mkdtemp(prefix="bwe-build-", dir=self.workdir))
        wf = work / "dispatch.yml"
        pwf = work / "pdispatch.yml"
        ei = 0
        for i, night in enumerate(self.nights):
            cache = work / f"cache{i}"
            cache.mkdir()
            # manual / side-branch runs since the previous nightly
            while ei < len(extra) and extra[ei]["date"] < _iso(night.date):
                x = extra[ei]; ei += 1
                if x["src"] != "dashboard":
                    continue
                meta = {k: x[k] for k in ("run_id", "sha", "full_sha", "date", "branch", "is_nightly")}
                runs_meta.append(meta)
                self._write_run(cache / x["run_id"], x["night"], noise_key=x["run_id"], only=x["only"], scale=x["scale"])
            runs_meta.append({"run_id": night.run_id, "sha": night.sha, "full_sha": night.full_sha,
                              "date": _iso(night.date), "branch": "main", "is_nightly": True})
            self._run_night[night.run_id] = i
            if not self._dead.get(i):
                self._write_run(cache / night.run_id, i)
            wf.write_text(self.facts[i].dispatch_text)
            clock["now"] = night.date
            doc = main_b.build_dashboard_data(str(cache), runs_meta, prev_doc,
                                              main_b.get_active_platforms(str(wf)),
                                              main_b.get_expected_kernels_per_platform(str(wf)))
            blob = json.dumps(doc, indent=2).encode()
            self._docs.append(zlib.compress(blob, 1))
            prev_doc = doc
            shutil.rmtree(cache, ignore_errors=True)
            # pretuned
            if night.p_run_id:
                pcache = work / f"pcache{i}"
                pcache.mkdir()
                p_meta.append({"run_id": night.p_run_id, "sha": night.p_full_sha[:8], "full_sha": night.p_full_sha,
                               "date": _iso(self.ptimes[i]), "branch": "main", "is_nightly": True})
                self._run_night[night.p_run_id] = i
                self._write_pretuned(pcache / night.p_run_id, i)
                pwf.write_text(self.pfacts[i].p_dispatch_text)
                clock["now"] = self.ptimes[i]
                pdoc = pre_b.build_dashboard_data(str(pcache), p_meta, prev_pdoc, pre_b.get_active_platforms(str(pwf)))
                self._pdocs.append(zlib.compress(json.dumps(pdoc, indent=2).encode(), 1))
                prev_pdoc = pdoc
                shutil.rmtree(pcache, ignore_errors=True)
            else:
                self._pdocs.append(None)
        shutil.rmtree(work, ignore_errors=True)
        self._series = set()
        for s in (prev_doc or {}).get("summary", []):
            self._series.add(("dashboard", s["platform_short"], s["kernel"]))
        for s in (prev_pdoc or {}).get("summary", []):
            self._series.add(("pretuned", s["platform_short"], s["kernel"]))

    def _extra_runs(self, r):
        """Manual dispatches (is_nightly false) and side-branch runs: never the trend."""
        out = []
        for i in range(1, self.N):
            if r.random() < 0.12:
                when = self.nights[i - 1].date + dt.timedelta(hours=int(r.integers(4, 12)), minutes=int(r.integers(0, 59)))
                sha = self.git.head_at(when)
                lanes = self.lanes_at(i - 1)
                if not lanes:
                    continue
                alias = sorted({a for a, k in lanes})[int(r.integers(0, len({a for a, k in lanes})))]
                ks = [k for (a, k) in lanes if a == alias]
                only = set(r.choice(ks, size=min(len(ks), int(r.integers(1, 4))), replace=False))
                out.append(dict(src="dashboard", run_id=_run_id(when), sha=sha[:8], full_sha=sha, date=_iso(when),
                                branch="main", is_nightly=False, night=i - 1, only={(alias, k) for k in only},
                                scale=float(r.uniform(0.8, 1.25))))
            if r.random() < 0.05:
                when = self.nights[i - 1].date + dt.timedelta(hours=int(r.integers(2, 14)), minutes=int(r.integers(0, 59)))
                fake = zlib.crc32(f"{self.seed}-{i}".encode())
                sha = (f"{fake:08x}" * 5)[:40]
                lanes = self.lanes_at(i - 1)
                ks = sorted(lanes)
                only = {ks[int(j)] for j in r.choice(len(ks), size=min(4, len(ks)), replace=False)}
                out.append(dict(src="dashboard", run_id=_run_id(when), sha=sha[:8], full_sha=sha, date=_iso(when),
                                branch=["dev/autotune-exp", "yifeixu/tpu-nightly-benchmark", "perf/cute-sweep"][int(r.integers(0, 3))],
                                is_nightly=bool(r.random() < 0.5), night=i - 1, only=only, scale=float(r.uniform(0.7, 1.3))))
        out.sort(key=lambda x: x["date"])
        return out

    def _write_run(self, run_dir, i, noise_key=None, only=None, scale=1.0):
        by_dir = {}
        for (alias, k), ln in self.lanes_at(i).items():
            if only is not None and (alias, k) not in only:
                continue
            if noise_key is None and (self.missing(i, "dashboard", alias, k) or self._failed(i, alias, k)):
                continue
            vals = self.values(i, alias, k, ln, noise=True)
            if scale != 1.0:
                vals = dict(vals)
                vals["helion_speedup"] = vals["helion_speedup"] * scale
            n = len(vals["helion_speedup"])
            names = self.shape_names(i, alias, k, ln, n)
            name = ("tpu_bridge" if ln.lane == "tpu" and ln.job.endswith("bridge") else alias)
            dname = f"benchmark-results-{name}-{'linattn' if ln.lane == 'linattn' else 'kernels'}"
            device = DEVICES.get(alias, alias)
            if alias in ARCH and self.facts[i].amd_arch:
                device = f"{device} {ARCH[alias]}"
            extra = {"device": device, "backend": "cute" if alias.endswith("_cute") else ("pallas" if ln.lane == "tpu" else "triton")}
            if ln.lane == "linattn":
                extra["baseline_label"] = "FLA"
            recs = by_dir.setdefault(dname, [])
            for metric, arr in vals.items():
                recs.append({"benchmark": {"name": "Helion Benchmark", "extra_info": extra},
                             "model": {"name": k},
                             "metric": {"name": metric, "benchmark_values": [round(float(x), 5) for x in arr]},
                             "shape": names})
        for dname, recs in by_dir.items():
            d = run_dir / dname
            d.mkdir(parents=True, exist_ok=True)
            (d / "helionbench.json").write_text(json.dumps(recs))

    def _failed(self, i, alias, k):
        return rng_for(self.seed, "fail", i, alias, k).random() < 0.005

    def _write_pretuned(self, run_dir, i):
        by_alias = {}
        for (alias, k) in sorted(self.p_series_at(i)):
            rec = {"kernel": k, "device": DEVICES.get(alias, alias), "compute_capability": COMPUTE.get(alias, "")}
            if rng_for(self.seed, "pfail", i, alias, k).random() < 0.006:
                rec["error"] = "RuntimeError: CUDA error: an illegal memory access was encountered"
            else:
                rec.update(self.p_values(i, alias, k, noise=True))
            by_alias.setdefault(alias, []).append(rec)
        for alias, recs in by_alias.items():
            d = run_dir / f"pretuned-results-{alias}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))

    # -------------------------------------------------------------- interface
    def dashboard_bytes(self, n: int) -> bytes:
        return zlib.decompress(self._docs[n])

    def pretuned_bytes(self, n: int) -> bytes | None:
        b = self._pdocs[n]
        return zlib.decompress(b) if b is not None else None

    def night_of(self, run_id: str) -> int | None:
        return self._run_night.get(str(run_id))

    def series_count(self) -> int:
        return len(self._series)
