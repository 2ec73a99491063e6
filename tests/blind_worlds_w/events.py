"""Events of blind set W: what moves, from which real commit (or none), on which series.

The specifications are per seed; the helpers turn a specification into multipliers on the model's
true times (see model.py) and into a label. Real-history mechanisms whose arrival the simulation
reads from the files (input counts, cudagraph flags, the TPU bridge, the pretuned baselines and L2
timer) are labelled by world.py itself; the ones below are those whose effect is not a parsed
setting: code and config regressions, toolchain/runner/thermal/outage episodes, install pins and
harness changes that move numbers, and noise.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import model as M

SPEED = ("helion_speedup_geomean",)
REAL_M = ("helion_speedup_geomean", "helion_latency_avg_ms")
ALL3 = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
HW_M = ("helion_latency_avg_ms", "helion_speedup_geomean", "triton_speedup_geomean",
        "torch_compile_speedup_geomean")
PRE = ("geomean",)


@dataclass
class Ev:
    id: str
    source: str
    cause: str
    kind: str
    direction: str
    sha: str | None
    start: int
    members: list
    metrics: tuple
    note: str = ""
    end: int | None = None
    honest: str | None = None          # "new" / "old" / "auto" / None
    label: bool = True
    mult: dict = field(default_factory=dict)      # dashboard key -> Mult
    hw_mult: dict = field(default_factory=dict)   # dashboard key -> Mult (environment)
    pmult: dict = field(default_factory=dict)     # pretuned key -> {"h":.., "b": {name: ..}, "sigma":..}
    theta: dict = field(default_factory=dict)     # alias -> clock-like slowdown (or f(nights since start))
    outage: set = field(default_factory=set)
    outlier: dict = field(default_factory=dict)   # key -> (timer, factor) while active
    runaway: dict = field(default_factory=dict)   # key -> shape indices whose autotune never converges


class B:
    """Builder for one seed's events."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.seed = ctx.seed
        self.evs: list[Ev] = ctx.w.events   # the world's list: events see the ones planted before them
        self.r = M.rng_for("events", ctx.seed)

    # -- helpers ------------------------------------------------------------------------------
    def n(self, sha=None, date=None, source="dashboard") -> int:
        return self.ctx.night_of_sha(sha, source) if sha else self.ctx.night_by_date(date)

    def keys(self, n, spec, source="dashboard"):
        """spec: list of (alias, kernel) with kernel '*' for every series of that alias."""
        have = self.ctx.series_at(n) if source == "dashboard" else self.ctx.pre_series_at(n)
        out = []
        for a, k in spec:
            for key in have:
                if key[0] == a and (k == "*" or key[1] == k) and key not in out:
                    out.append(key)
        return out

    def nshapes(self, key, n, source="dashboard"):
        if source == "dashboard":
            return len(self.ctx.w.tb_series(key, self.ctx.w.cfg[n][key]).labels)
        return self.ctx.w.pre_series(key).total

    def shape_mult(self, key, n, mag, frac, up=False, source="dashboard", tag=""):
        S = self.nshapes(key, n, source)
        r = M.rng_for("shapemult", self.seed, key, n, tag)
        pick = r.uniform(size=S) < frac
        if source == "dashboard":  # make sure running shapes are hit
            idx = list(self.ctx.w.cfg[n][key].idx)
            if not pick[idx].any():
                pick[idx[int(r.integers(0, len(idx)))]] = True
        elif not pick.any():
            pick[int(r.integers(0, S))] = True
        f = 1 + mag * r.uniform(0.8, 1.2, S)
        f = np.where(pick, f, 1.0)
        return 1 / f if up else f

    def add(self, ev: Ev) -> Ev:
        assert ev.members, ev.id
        self.evs.append(ev)
        return ev

    # -- real ---------------------------------------------------------------------------------
    def real(self, id, sha, spec, mag, kind="code", frac=1.0, up=False, source="dashboard", end_sha=None,
             note="", min_move=None):
        n = self.n(sha, source=source)
        keys = self.keys(n, spec, source)
        ev = Ev(id=id, source=source, cause="real", kind=kind, direction="up" if up else "down",
                sha=self.ctx.sha(sha), start=n, members=keys, metrics=REAL_M if source == "dashboard" else PRE,
                note=note, honest="new", end=self.n(end_sha, source=source) if end_sha else None)
        w = self.ctx.w
        for key in keys:
            f = self.shape_mult(key, n, mag, frac, up, source, id)
            # at least a clear step on every member: rescale the log-multipliers if the shapes it
            # hit weigh too little in the geomean
            want = max(min_move if min_move is not None else 0.6 * mag, 0.035)
            for _ in range(3):
                ev.mult.pop(key, None), ev.pmult.pop(key, None)
                if source == "dashboard":
                    ev.mult[key] = M.Mult(h=f)
                else:
                    ev.pmult[key] = {"h": f}
                self.evs.append(ev)
                try:
                    a = w.headline(source, key, n, exclude={id})
                    bb = w.headline(source, key, n)
                finally:
                    self.evs.pop()
                got = abs(np.log(bb / a)) if a > 0 and bb > 0 else 0.0
                if got >= np.log(1 + want) * 0.98 or got == 0:
                    break
                f = np.exp(np.log(f) * (np.log(1 + want) / got))
        return self.add(ev)

    # -- method -------------------------------------------------------------------------------
    def method(self, id, sha, kind, spec, fn, honest=None, metrics=ALL3, source="dashboard", note="",
               label=True, direction=None, exclude=()):
        """fn(key, rng) -> Mult (dashboard) or pmult dict (pretuned); None leaves the series alone."""
        n = self.n(sha, source=source)
        keys = [k for k in self.keys(n, spec, source) if k not in exclude]
        ev = Ev(id=id, source=source, cause="method_change", kind=kind, direction=direction or "down",
                sha=self.ctx.sha(sha), start=n, members=keys, metrics=metrics, note=note, honest=honest,
                label=label)
        for key in keys:
            m = fn(key, M.rng_for("method", self.seed, id, key))
            if m is None:
                continue
            if source == "dashboard":
                ev.mult[key] = m
            else:
                ev.pmult[key] = m
        ev.members = [k for k in keys if k in ev.mult or k in ev.pmult]
        keys = ev.members
        if direction is None:
            w = self.ctx.w
            self.evs.append(ev)
            try:
                d = [w.headline(source, k, n) / max(w.headline(source, k, n, exclude={id}), 1e-9) for k in keys]
            finally:
                self.evs.pop()
            ev.direction = "down" if np.median(d) < 1 else "up"
        return self.add(ev)

    def budget(self, id, sha, spec):
        """Shapes whose autotune never converged: their compile time is huge until the budget caps it,
        and the best-so-far config they then get is slower."""
        n = self.n(sha)
        keys = self.keys(n, spec)
        ev = Ev(id=id, source="dashboard", cause="method_change", kind="autotune", direction="down",
                sha=self.ctx.sha(sha), start=n, members=keys, metrics=REAL_M + ("compile_time_geomean_s",),
                note="runaway autotune capped at best-so-far")
        for key in keys:
            idx = list(self.ctx.w.cfg[n][key].idx)
            r = M.rng_for("budget", self.seed, id, key)
            hit = [idx[i] for i in r.choice(len(idx), size=min(2, len(idx)), replace=False)]
            f = np.ones(self.nshapes(key, n))
            f[hit] = r.uniform(1.2, 1.35, len(hit))
            ev.mult[key] = M.Mult(h=f)
            ev.runaway[key] = hit
        return self.add(ev)

    # -- hardware -----------------------------------------------------------------------------
    def hardware(self, id, kind, alias, start, end=None, theta=0.0, sha=None, spread=0.0, source="dashboard",
                 honest=None, note="", base_only=None, exclude=()):
        """Clock-like slowdown theta on `alias` plus per-series random shifts of the implementations
        (`spread`); `base_only` restricts the random shifts to the baseline (library changes)."""
        n = start
        keys = [k for k in self.keys(n, [(alias, "*")], source) if k not in exclude]
        ev = Ev(id=id, source=source, cause="hardware", kind=kind, direction="down", sha=self.ctx.sha(sha) if sha else None,
                start=n, end=end, members=keys, metrics=HW_M if source == "dashboard" else PRE, note=note,
                honest=honest)
        if theta:
            ev.theta[alias] = theta
        if spread:
            for key in keys:
                r = M.rng_for("hw", self.seed, id, key)
                def sh(scale=1.0):
                    return float(np.exp(r.normal(0, spread * scale)))
                if source == "dashboard":
                    if base_only:
                        ev.hw_mult[key] = M.Mult(b=sh(), t=sh(0.3), c=sh(0.6))
                    else:
                        ev.hw_mult[key] = M.Mult(h=sh(), b=sh(), t=sh(), c=sh(), lat=sh(0.5))
                else:
                    ev.pmult[key] = {"h": sh(), "b": {b: sh() for b in ("torch", "torch_compile", "vllm", "cutlass")}}
        return self.add(ev)

    def outage(self, id, alias, start, nights, source="dashboard", note=""):
        keys = self.keys(start - 1, [(alias, "*")], source)
        ev = Ev(id=id, source=source, cause="hardware", kind="outage", direction="down", sha=None, start=start,
                end=start + nights, members=keys, metrics=SPEED if source == "dashboard" else PRE, note=note)
        ev.outage = {alias}
        return self.add(ev)

    # -- noise --------------------------------------------------------------------------------
    def scatter(self, id, key, start, sigma, timer="h", source="dashboard", end=None, note=""):
        ev = Ev(id=id, source=source, cause="noise", kind="scatter", direction="both", sha=None, start=start,
                end=end, members=[key], metrics=SPEED if source == "dashboard" else PRE, note=note)
        if source == "dashboard":
            ev.mult[key] = M.Mult(sigma=sigma, sigma_on=timer)
        else:
            ev.pmult[key] = {"sigma": sigma}
        return self.add(ev)

    def outlier(self, id, keys, start, timer, factor, nights=1, source="dashboard", note=""):
        up = (timer == "b") == (factor > 1) if source == "dashboard" else (timer != "h") == (factor > 1)
        ev = Ev(id=id, source=source, cause="noise", kind="outlier", direction="up" if up else "down", sha=None,
                start=start, end=start + nights, members=list(keys),
                metrics=(("helion_latency_avg_ms",) if timer == "lat" else ALL3 if timer == "b" else SPEED)
                if source == "dashboard" else PRE, note=note)
        for k in keys:
            ev.outlier[k] = (timer, factor)
        return self.add(ev)


def _base_shift(lo, hi, p=1.0):
    """A baseline that moves (a new torch / tritonbench baseline implementation); the series it
    leaves alone are not members."""
    def fn(key, r):
        if r.uniform() > p:
            return None
        f = float(r.uniform(lo, hi))
        return M.Mult(b=f, t=float(np.exp(r.normal(0, 0.015))), c=float(np.exp(r.normal(0, 0.03))))
    return fn


def build(ctx) -> list:
    b = B(ctx)
    {221: _seed221, 222: _seed222, 223: _seed223}[ctx.seed](b)
    return b.evs


# =================================================================================================
def _seed221(b: B):
    D = b.n
    # -- real: config the autotuner picks -----------------------------------------------------
    b.real("warps-cap", "ec27d559", [("h100", "softmax"), ("b200", "softmax"), ("h100", "layer_norm"),
                                     ("mi325x", "layer_norm")], 0.13, kind="heuristics/config", frac=0.5,
           end_sha="1e3d383e", note="warp cap narrows the config space; reverted three nights later")
    b.real("maxnreg", "6e0c8651", [("b200", "gemm"), ("b200", "flash_attention"), ("b200", "int4_gemm")], 0.09,
           kind="heuristics/config", frac=0.6)
    b.real("amd-nonkdim", "0d292da0", [("mi325x", "gemm"), ("mi325x", "int4_gemm"), ("mi350x", "gemm"),
                                       ("mi350x", "flash_attention"), ("mi350x", "grouped_gemm")], 0.16,
           kind="heuristics/config", frac=0.7)
    b.real("triton-heur", "ea35dfdd", [("b200", "rope"), ("mi350x", "rope")], 0.07,
           kind="heuristics/config", frac=1.0, up=True, note="new rope split/join heuristics")
    # -- real: code -------------------------------------------------------------------------
    b.real("rng-refactor", "1562829f", [("h100", "cross_entropy"), ("b200", "cross_entropy")], 0.12)
    b.real("tensordesc-atomics", "58d4d2fe", [("h100", "kl_div"), ("b200", "kl_div"), ("mi350x", "kl_div")], 0.08)
    b.real("amd-stale-read", "e2c71314", [("mi350x", "welford"), ("mi350x", "softmax"), ("mi350x", "layer_norm")],
           0.1)
    b.real("pallas-pipeline", "e4cb2f00", [("tpu", "softmax"), ("tpu", "layer_norm")], 0.22)
    b.real("cute-rms-up", "e1183037", [("b200_cute", "rms_norm")], 0.18, up=True)
    b.real("cute-vec", "6783613c", [("b200_cute", "layer_norm"), ("b200_cute", "sum")], 0.12)
    b.real("cute-tag-generic", "1033b08c", [("h100", "layer_norm"), ("b200", "layer_norm"), ("h100", "rms_norm"),
                                            ("b200", "rms_norm")], 0.09, frac=0.8,
           note="slice tag says CuTe, the touched file is the shared reduction code")
    b.real("small-b200", "e25885d5", [("b200", "softmax")], 0.065, note="small but clear")
    b.real("dot-precision", "584db642", [("b200", "gemm"), ("b200", "flash_attention"), ("mi350x", "gemm")], 0.09,
           frac=0.7, note="last nights")
    # -- method changes whose effect is not a parsed setting -----------------------------------
    b.method("torch211", "e35ec3bd", "baseline", [("h100", "*"), ("b200", "*"), ("mi325x", "*"), ("mi350x", "*")],
             _base_shift(0.86, 1.1, p=0.45), honest="new", note="torch 2.11 pin: eager and compile baselines change",
             exclude=[("mi325x", "gemm"), ("mi325x", "int4_gemm"), ("mi350x", "gemm"), ("mi350x", "flash_attention"),
                      ("mi350x", "grouped_gemm")])
    b.method("single-pass", "ea484a38", "harness", [("h100", "gemm"), ("h100", "flash_attention"),
                                                    ("b200", "gemm"), ("b200", "int4_gemm"), ("mi350x", "welford")],
             lambda key, r: (lambda f: M.Mult(h=f, lat=float(r.uniform(0.99, 1.01)) / f))(float(r.uniform(1.05, 1.09))),
             metrics=SPEED, note="timed right after autotuning, no cool-down")
    b.method("tb-pin-0427", "7df72f38", "baseline", [("h100", "jsd"), ("b200", "jsd"), ("mi350x", "jsd"),
                                                     ("h100", "kl_div"), ("b200", "kl_div"), ("mi350x", "kl_div")],
             _base_shift(0.8, 0.9), honest="new")
    b.method("tpu-subproc", "9c53205f", "harness", [("tpu", "*")],
             lambda key, r: M.Mult(h=float(r.uniform(0.9, 0.98)), b=float(r.uniform(0.96, 1.04))), metrics=REAL_M)
    b.budget("budget", "9f461a21", [("mi350x", "welford"), ("b200", "mamba2_chunk_state")])
    # -- hardware ------------------------------------------------------------------------------
    b.hardware("h100-osdc", "runner", "h100", D("b33ae6b9"), sha="b33ae6b9", theta=0.03, spread=0.035,
               note="runner migration")
    b.hardware("tpu-jax", "driver/toolchain", "tpu", D("22db8716"), sha="22db8716", spread=0.06)
    b.hardware("h100-cu130", "driver/toolchain", "h100", D("ed36077d"), sha="ed36077d", spread=0.05,
               base_only=True)
    n0 = D(date="2026-04-07")
    b.hardware("b200-thermal", "thermal", "b200", n0, end=n0 + 5, theta=lambda k: 0.12 + 0.03 * min(k, 2),
               honest="old")
    b.outage("mi350x-down", "mi350x", D(date="2026-05-11"), 3)
    n1 = D(date="2026-05-10")
    b.hardware("b200-node", "runner", "b200", n1, end=n1 + 6, theta=0.07, spread=0.02, honest="old",
               note="silent node swap, swapped back")
    # -- noise ---------------------------------------------------------------------------------
    b.scatter("mamba-noisy", ("b200", "mamba2_chunk_scan"), D(date="2026-05-25"), 0.06, timer="h")
    b.scatter("bmm-noisy", ("tpu", "bmm"), D(date="2026-06-06"), 0.07, timer="b")
    b.outlier("rope-blip", [("b200", "rope")], D(date="2026-05-25"), "b", 1.3)
    b.outlier("int4-spike", [("mi350x", "int4_gemm")], D(date="2026-04-14"), "h", 1.35)
    b.outlier("welford-2n", [("h100", "welford")], D(date="2026-03-22"), "h", 1.25, nights=2)
    b.outlier("shard-hiccup", [("h100", "softmax"), ("h100", "layer_norm"), ("h100", "rms_norm")],
              D(date="2026-04-15"), "b", 0.78)
    b.outlier("lat-spike", [("b200", "layer_norm-bwd")], D(date="2026-06-05"), "lat", 1.4)


def _seed222(b: B):
    D = b.n
    # -- real ------------------------------------------------------------------------------------
    b.real("amd-load-cache", "bc8c6497", [("mi350x", "softmax"), ("mi350x", "kl_div"), ("mi350x", "jsd")], 0.1,
           kind="heuristics/config", frac=0.6)
    b.real("amd-store-cache", "bc1b3c80", [("mi350x", "layer_norm"), ("mi350x", "rms_norm")], 0.08,
           kind="heuristics/config", up=True)
    b.real("amd-xcd", "0731d885", [("mi350x", "gemm"), ("mi350x", "int4_gemm"), ("mi350x", "grouped_gemm")], 0.12,
           kind="heuristics/config", up=True, frac=0.8)
    b.real("waves-per-eu", "48971c7b", [("mi350x", "gemm")], 0.08, kind="heuristics/config",
           note="last night")
    b.real("b200-red-seed", "7935fe6e", [("b200", "softmax"), ("b200", "layer_norm"), ("b200", "rms_norm")],
           0.09, kind="heuristics/config", frac=0.5)
    b.real("debug-barrier", "3f0134cc", [("h100", "layer_norm-bwd"), ("b200", "layer_norm-bwd"),
                                         ("mi350x", "layer_norm-bwd"), ("h100", "welford"), ("b200", "welford"),
                                         ("h100", "rms_norm-bwd")], 0.07)
    b.real("debug-barrier-pre", "3f0134cc", [("h100", "silu_mul_fp8"), ("h100", "layer_norm"), ("b200", "layer_norm")],
           0.1, source="pretuned")
    b.real("rmsq-cfg", "8379fd86", [("b200", "rms_norm_per_block_quant")], 0.09, kind="heuristics/config",
           source="pretuned", note="checked-in sm100 config regenerated")
    b.real("dispatch-cache", "5f1547d1", [("h100", "softmax"), ("h100", "rms_norm"), ("h100", "layer_norm")], 0.12,
           frac=0.4, source="pretuned")
    b.real("cute-vec-up", "1f2274a6", [("b200_cute", "rms_norm"), ("b200_cute", "layer_norm"), ("b200_cute", "sum")],
           0.15, up=True)
    b.real("pallas-slab", "08bd1d04", [("tpu", "cross_entropy"), ("tpu", "softmax")], 0.14)
    b.real("pallas-double-buffer", "77d002e9", [("tpu", "flash_attention")], 0.16)
    b.real("triton-floordiv", "4524ea2b", [("b200", "layer_norm"), ("b200", "softmax"), ("mi350x", "layer_norm"),
                                           ("mi350x", "softmax")], 0.06, min_move=0.05,
           note="same night as an H100 image change")
    b.real("constexpr-branch", "18e4613a", [("b200", "gdn_fwd_h"), ("b200", "mamba2_chunk_scan")], 0.15,
           note="window also holds a B200 runner pin and its revert")
    # -- method ------------------------------------------------------------------------------------
    b.method("tpu-subproc", "9c53205f", "harness", [("tpu", "*")],
             lambda key, r: M.Mult(h=float(r.uniform(0.88, 0.97)), b=float(r.uniform(0.97, 1.03))), metrics=REAL_M)
    b.budget("budget", "9f461a21", [("mi350x", "welford"), ("b200", "flash_attention")])
    b.method("tpu-torch-pin", "6facd856", "baseline", [("tpu", "bmm"), ("tpu", "flash_attention"), ("tpu", "gemm")],
             _base_shift(0.85, 0.93), honest="new",
             note="TPU torch pinned instead of tracking nightly")
    b.method("tb-bump", "f1f0a60f", "baseline", [("h100", "cross_entropy"), ("b200", "cross_entropy"),
                                                 ("mi350x", "cross_entropy"), ("h100", "rope"), ("b200", "rope"),
                                                 ("mi350x", "rope")], _base_shift(1.07, 1.16), honest="new")
    # -- hardware ----------------------------------------------------------------------------------
    b.hardware("h100-osdc", "runner", "h100", D("b33ae6b9"), sha="b33ae6b9", theta=0.02, spread=0.04)
    b.hardware("h100-cu130", "driver/toolchain", "h100", D("ed36077d"), sha="ed36077d", spread=0.045, base_only=True)
    b.hardware("h100-image", "driver/toolchain", "h100", D("82bee2fa"), sha="82bee2fa", spread=0.035)
    b.hardware("tpu-libtpu", "driver/toolchain", "tpu", D("e5cc383d"), sha="e5cc383d", spread=0.07)
    n0 = D(date="2026-05-16")
    b.hardware("h100-thermal", "thermal", "h100", n0, end=n0 + 4, theta=0.16, honest="old")
    n1 = D(date="2026-07-07")
    b.hardware("b200-thermal", "thermal", "b200", n1, end=n1 + 4, theta=lambda k: 0.1 + 0.04 * k, honest="old")
    b.hardware("b200-thermal-pre", "thermal", "b200", n1, end=n1 + 4, theta=lambda k: 0.1 + 0.04 * k,
               source="pretuned", honest="old")
    b.outage("tpu-down", "tpu", D(date="2026-06-09"), 3)
    b.outage("pre-h100-down", "h100", D(date="2026-07-13"), 2, source="pretuned")
    # -- noise -----------------------------------------------------------------------------------
    b.scatter("fa-noisy", ("mi350x", "flash_attention"), D(date="2026-06-01"), 0.07, timer="h")
    b.scatter("ptg-noisy", ("b200", "per_token_group_fp8_quant"), D(date="2026-07-12"), 0.06, source="pretuned")
    b.outlier("vadd-spike", [("b200_cute", "vector_add")], D(date="2026-05-20"), "h", 1.3)
    b.outlier("gemm-2n", [("h100", "gemm")], D(date="2026-06-16"), "b", 1.25, nights=2)
    b.outlier("rope-pre", [("h100", "rope")], D(date="2026-07-21"), "h", 1.3, source="pretuned")
    b.outlier("tpu-gemm", [("tpu", "gemm")], D(date="2026-06-26"), "b", 0.75)


def _seed223(b: B):
    D = b.n
    # -- real ------------------------------------------------------------------------------------
    b.real("amd-store-cache", "bc1b3c80", [("mi350x", "softmax"), ("mi350x", "welford")], 0.09,
           kind="heuristics/config", frac=0.7)
    b.real("amd-xcd", "0731d885", [("mi350x", "flash_attention"), ("mi350x", "grouped_gemm")], 0.1,
           kind="heuristics/config", up=True)
    b.real("red-seed-default", "90bad434", [("h100", "softmax"), ("b200", "softmax"), ("h100", "rms_norm"),
                                            ("b200", "layer_norm")], 0.07, kind="heuristics/config", frac=0.5,
           min_move=0.05)
    b.real("h100-matmul-seed", "530ea26b", [("h100", "gemm")], 0.09,
           kind="heuristics/config", up=True)
    b.real("debug-barrier", "3f0134cc", [("h100", "cross_entropy"), ("b200", "cross_entropy"), ("h100", "jsd"),
                                         ("b200", "jsd")], 0.08)
    b.real("debug-barrier-pre", "3f0134cc", [("h100", "silu_mul_fp8"), ("h100", "cross_entropy"),
                                             ("b200", "cross_entropy")], 0.09, source="pretuned")
    b.real("launch-guard", "d8e7a051", [("h100", "rms_norm-bwd"), ("b200", "rms_norm-bwd"), ("h100", "layer_norm-bwd"),
                                        ("b200", "layer_norm-bwd"), ("h100", "grouped_gemm"), ("b200", "grouped_gemm")],
           0.15, frac=0.5, end_sha="0082c703", note="eager launch path slower until restored")
    b.real("linattn-helpers", "be63e8c6", [("h100", "gated_delta_rule"), ("h100", "gated_delta_rule-bwd"),
                                           ("b200", "gated_delta_rule"), ("b200", "kda")], 0.1)
    b.real("cute-one-warp", "a1f53a20", [("b200_cute", "sum"), ("b200_cute", "rms_norm")], 0.14)
    b.real("pallas-launcher", "16e57cbd", [("tpu", "flash_attention")], 0.22)
    b.real("nd-threads", "092309e7", [("h100", "kl_div"), ("b200", "kl_div"), ("h100", "jsd")], 0.08,
           note="last night")
    b.real("triton-launcher-move", "0762fda1", [("b200", "softmax"), ("b200", "layer_norm")], 0.11, frac=0.5,
           source="pretuned")
    b.real("nvfp4-ws", "76df68c9", [("b200", "nvfp4_gemv")], 0.07, kind="heuristics/config", source="pretuned",
           min_move=0.06)
    b.real("scale-mm-edge", "93e29e1f", [("b200", "scale_mm_cute")], 0.08, kind="heuristics/config",
           source="pretuned", note="second to last night")
    # -- method ------------------------------------------------------------------------------------
    b.budget("budget", "9f461a21", [("b200", "gdn_fwd_h"), ("mi350x", "flash_attention")])
    b.method("tb-bump", "f1f0a60f", "baseline", [("h100", "softmax"), ("b200", "softmax"), ("mi350x", "softmax"),
                                                 ("h100", "rms_norm"), ("b200", "rms_norm"), ("mi350x", "rms_norm")],
             _base_shift(0.84, 0.93), honest="new")
    b.method("tpu-fp32", "25bef64b", "baseline", [("tpu", "welford"), ("tpu", "rms_norm-bwd")],
             _base_shift(1.15, 1.3), honest="new", note="bridge baselines now fp32 / shared backward grad")
    b.method("pre-torch213", "76df68c9", "baseline", [("h100", "*"), ("b200", "*")], source="pretuned",
             metrics=PRE, honest="new", note="pretuned torch pin 2.11 -> 2.13",
             exclude=[("b200", "nvfp4_gemv"), ("b200", "softmax"), ("b200", "layer_norm"),
                      ("b200", "fused_qk_norm_rope")],
             fn=lambda key, r: None if r.uniform() > 0.5 else
             {"b": {"torch": float(r.uniform(0.85, 0.95)), "torch_compile": float(r.uniform(0.8, 0.93))}})
    b.method("linattn-aot-h100", "70ec581a", "autotune", [("h100", "*")], label=False,
             fn=lambda key, r: M.Mult(h=float(r.uniform(0.85, 0.95))) if key[1] in LINATTN else None)
    b.method("linattn-aot-b200", "42581fc7", "autotune", [("b200", "*")], label=False,
             fn=lambda key, r: M.Mult(h=float(r.uniform(0.85, 0.95))) if key[1] in LINATTN else None)
    # -- hardware ----------------------------------------------------------------------------------
    b.hardware("h100-osdc", "runner", "h100", D("b33ae6b9"), sha="b33ae6b9", theta=0.04, spread=0.03)
    b.hardware("h100-image", "driver/toolchain", "h100", D("82bee2fa"), sha="82bee2fa", spread=0.05, base_only=True)
    n0 = D(date="2026-06-29")
    b.hardware("mi350x-thermal", "thermal", "mi350x", n0, end=n0 + 5, theta=0.14, honest="old")
    b.hardware("b200-swap", "runner", "b200", D(date="2026-07-05"), theta=0.05, spread=0.03,
               note="silent node change, no commit")
    b.outage("cute-down", "b200_cute", D(date="2026-07-13"), 3)
    n1 = D(date="2026-07-08")
    b.hardware("h100-thermal", "thermal", "h100", n1, end=n1 + 4, theta=0.13, honest="old")
    b.hardware("h100-thermal-pre", "thermal", "h100", n1, end=n1 + 4, theta=0.13, source="pretuned", honest="old")
    b.outage("pre-b200-down", "b200", D(date="2026-07-21"), 2, source="pretuned")
    # -- noise -----------------------------------------------------------------------------------
    b.scatter("int4-noisy", ("h100", "int4_gemm"), D(date="2026-07-20"), 0.06, timer="b")
    b.scatter("qk-noisy", ("b200", "fused_qk_norm_rope"), D(date="2026-07-26"), 0.07, source="pretuned")
    b.outlier("retention-spike", [("h100", "retention")], D(date="2026-08-04"), "h", 1.3)
    b.outlier("welford-base", [("b200", "welford")], D(date="2026-06-18"), "b", 1.28)
    b.outlier("pre-softmax", [("h100", "softmax")], D(date="2026-07-26"), "torch_compile", 0.75, source="pretuned")
    b.outlier("mi350x-shard", [("mi350x", "softmax"), ("mi350x", "jsd"), ("mi350x", "kl_div")],
              D(date="2026-07-10"), "h", 1.22)


LINATTN = {"vanilla_linear_attn", "simple_gla", "retention", "full_gla", "delta_rule", "gated_delta_rule", "kda",
           "kda_fused", "kda_varlen", "vanilla_linear_attn-bwd", "simple_gla-bwd", "retention-bwd", "full_gla-bwd",
           "delta_rule-bwd", "gated_delta_rule-bwd", "kda-bwd"}
