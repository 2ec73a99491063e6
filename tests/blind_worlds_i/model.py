"""The timing model: per shape, each implementation's device time, and the timers that read it.

Why times and not speedups: the dashboard's three speedups share one baseline timer, Helion's
latency is a different timer (triton do_bench, no CUDA graph), and compile time is a third; a
move of any one of them shows differently in each metric. So the model keeps, per series and
shape, a baseline device time and the true ratios of Helion / Triton / torch.compile to it, and
every effect is a factor on one of those times (or a change of which shapes run, or of how they
are timed). Per-shape parameters are hashed from the shape label so a shape keeps its character
when the shape list changes around it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .rand import rng

# Kernel character: (log helion speedup, log triton speedup, log torch.compile speedup, baseline ms)
# rough, from what such kernels do against eager PyTorch; unknown kernels draw from the seed.
_CHAR = {
    "vector_add": (0.02, 0.0, 0.0, 0.03), "vector_exp": (0.05, 0.02, 0.03, 0.03), "sum": (0.25, 0.1, 0.2, 0.05),
    "softmax": (0.45, 0.35, 0.3, 0.15), "layer_norm": (0.5, 0.45, 0.35, 0.12), "rms_norm": (0.6, 0.5, 0.4, 0.1),
    "layer_norm-bwd": (0.7, 0.55, 0.4, 0.3), "rms_norm-bwd": (0.75, 0.6, 0.45, 0.25),
    "cross_entropy": (0.55, 0.5, 0.3, 0.4), "jsd": (0.9, 0.8, 0.6, 0.3), "kl_div": (0.8, 0.7, 0.55, 0.2),
    "welford": (0.35, 0.3, 0.25, 0.2), "gemm": (0.02, 0.0, -0.02, 0.8), "int4_gemm": (0.6, 0.5, 0.1, 0.6),
    "grouped_gemm": (0.15, 0.1, -0.2, 1.2), "flash_attention": (0.05, 0.1, -0.1, 2.0),
    "rope": (0.9, 0.7, 0.6, 0.1), "rope-bwd": (0.8, 0.6, 0.5, 0.2), "mamba2_chunk_scan": (0.3, 0.25, 0.0, 1.5),
    "mamba2_chunk_state": (0.25, 0.2, 0.0, 1.2), "gdn_fwd_h": (0.2, 0.15, -0.1, 1.8), "bmm": (0.0, 0.0, 0.0, 0.7),
}
POOL = {"welford": 6, "rope": 10, "flash_attention": 12, "gdn_fwd_h": 4, "grouped_gemm": 10, "gemm": 16,
        "int4_gemm": 14, "rms_norm-bwd": 6, "layer_norm-bwd": 14, "mamba2_chunk_scan": 6, "mamba2_chunk_state": 6}


def kernel_char(seed: int, k: str) -> tuple:
    base = k.removesuffix("-bwd")
    if k in _CHAR:
        return _CHAR[k]
    if base in _CHAR:
        c = _CHAR[base]
        return (c[0] + 0.1, c[1] + 0.05, c[2], c[3] * 2)
    r = rng(seed, "char", k)
    return (float(r.uniform(-0.1, 0.8)), float(r.uniform(-0.1, 0.6)), float(r.uniform(-0.2, 0.5)),
            float(r.uniform(0.05, 1.5)))


def pool_labels(k: str) -> list[str]:
    """Tritonbench's input list for a kernel (synthetic labels, stable per kernel)."""
    n = POOL.get(k, 20)
    base = k.removesuffix("-bwd")
    if "gemm" in base or base in ("bmm",):
        return [f"({256 * (i + 2)}, {256 * (i + 2)}, {512 * (1 + i % 4)})" for i in range(n)]
    if "attention" in base:
        return [f"(4, 16, {512 * (i + 1)}, 128)" for i in range(n)]
    if base.startswith("mamba2") or base == "gdn_fwd_h":
        return [f"(8, {1024 * (i + 1)}, 16, 64)" for i in range(n)]
    if base in ("vector_add", "vector_exp"):
        return [str(2 ** (12 + i)) for i in range(n)]
    return [f"({4096 if i % 2 else 2048}, {128 * 2 ** (i // 2)})" for i in range(n)]


def select(pool: list[str], k: int | None, cap: int = 20) -> tuple:
    """tritonbench --input-sample-mode equally-spaced-k with --num-inputs min(k, 20)."""
    n = min(k or cap, cap, len(pool))
    if n >= len(pool):
        return tuple(pool)
    idx = sorted(set(int(round(x)) for x in np.linspace(0, len(pool) - 1, n)))
    return tuple(pool[i] for i in idx)


@dataclass
class Prof:
    """Noise-free character of one (source, platform, kernel) series."""
    key: tuple
    mh: float
    mt: float
    mc: float
    ms: float  # baseline ms scale
    sig: float  # per-night, per-timer scatter (log)
    sig_shape: float
    plat: str
    kb: float = 0.0  # launch overhead fraction of the baseline without CUDA graphs
    kh: float = 0.0
    kt: float = 0.0
    kc: float = 0.0
    lat_ovh: float = 0.03  # do_bench launch overhead fraction on Helion's latency
    comp: float = 60.0  # autotune+compile seconds per shape (one pass)
    triton: bool = True
    compile_speedup: bool = True
    jitter: float = 0.0  # extra autotune-config scatter before the fixed seed


def make_prof(seed: int, key: tuple, suite: str) -> Prof:
    src, p, k = key
    r = rng(seed, "prof", *key)
    mh, mt, mc, ms = kernel_char(seed, k.removesuffix("-bwd") if suite == "linattn" else k)
    dev = {"h100": 0.0, "b200": -0.05, "b200_cute": -0.15, "mi325x": -0.1, "mi350x": -0.12, "tpu": -0.2}.get(p, 0.0)
    mh = mh + dev + float(r.normal(0, 0.12))
    sig = float(np.exp(r.uniform(np.log(0.005), np.log(0.03))))
    pr = Prof(key, mh, mt + float(r.normal(0, 0.08)), mc + float(r.normal(0, 0.1)), ms * float(np.exp(r.normal(0, 0.3))),
              sig, float(r.uniform(0.006, 0.02)), p)
    # without CUDA graphs each side pays its launch overheads; which side pays more decides which
    # way a --cudagraph flip moves the speedup (8-30 %)
    shift = float(r.uniform(0.08, 0.3)) * (1 if r.random() < 0.5 else -1)
    pr.kh = float(r.uniform(0.05, 0.2))
    pr.kb = (1 + pr.kh) * math.exp(shift) - 1
    if pr.kb < 0.01:
        pr.kb, pr.kh = 0.01, (1.01 / math.exp(shift)) - 1
    pr.kt = float(r.uniform(0.02, 0.15))
    pr.kc = float(r.uniform(0.05, 0.25))
    pr.lat_ovh = float(r.uniform(0.01, 0.08))
    pr.comp = float(np.exp(r.uniform(np.log(25), np.log(900)))) * (0.6 if p == "tpu" else 1.0)
    pr.triton = suite == "tritonbench"
    pr.compile_speedup = suite in ("tritonbench", "tpu")
    if suite == "linattn":
        pr.mh = float(r.uniform(-0.25, 0.45))
        pr.ms = float(np.exp(r.uniform(np.log(0.4), np.log(6))))
    pr.jitter = float(r.uniform(0.0, 0.03)) if r.random() < 0.35 else 0.0
    return pr


_SHAPES: dict = {}
_PSHAPES: dict = {}


def shape_params(seed: int, pr: Prof, label: str, variant: str = "") -> tuple:
    """(baseline ms, log helion, log triton, log compile, compile s) for one shape of a series."""
    ck = (seed, pr.key, label, variant)
    if ck not in _SHAPES:
        if len(_SHAPES) > 200_000:
            _SHAPES.clear()
        _SHAPES[ck] = _shape_params(seed, pr, label, variant)
    return _SHAPES[ck]


def _shape_params(seed: int, pr: Prof, label: str, variant: str) -> tuple:
    r = rng(seed, "shape", *pr.key, label, variant)
    size = float(np.exp(r.normal(0, 0.9)))
    slope = (math.log(size) * 0.08)
    return (pr.ms * size, pr.mh + slope + float(r.normal(0, 0.15)), pr.mt + float(r.normal(0, 0.12)),
            pr.mc + float(r.normal(0, 0.15)), pr.comp * float(np.exp(r.normal(0, 0.4))))


@dataclass
class Setting:
    """How a nightly measured a series (from the spec) plus the active effect factors."""
    shapes: tuple
    variant: str = ""
    cg: bool = True
    lat: bool = True
    ct: bool = True
    two_pass: bool = False
    f: dict = field(default_factory=dict)  # factors on h, b, t, c, g, lat, ct; sig (scatter multiplier)


def expected(seed: int, pr: Prof, s: Setting) -> dict:
    """Noise-free geomean metrics (what the series would read with perfect timers)."""
    out = measure(seed, pr, s, None)
    return summarize(out)


def _gm(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def summarize(m: dict) -> dict:
    lat = [v for v in m.get("helion_latency_ms", []) if v]
    return {"helion_speedup_geomean": _gm(m.get("helion_speedup", [])),
            "triton_speedup_geomean": _gm(m.get("triton_speedup", [])),
            "torch_compile_speedup_geomean": _gm(m.get("torch_compile_speedup", [])),
            "helion_latency_avg_ms": sum(lat) / len(lat) if lat else 0.0,
            "compile_time_geomean_s": _gm(m.get("helion_compile_time_s", []))}


@dataclass
class Noise:
    """Random draws of one run for one series: per-timer factors, per-shape scatter, strays."""
    r: np.random.Generator
    plat: float = 1.0

    def timer(self, sig: float) -> float:
        x = float(np.exp(self.r.normal(0, sig)))
        if self.r.random() < 0.01:  # stray single-timer outlier, 15-20 %
            x *= float(self.r.uniform(1.15, 1.2)) ** (1 if self.r.random() < 0.7 else -1)
        return x


def measure(seed: int, pr: Prof, s: Setting, nz: Noise | None) -> dict:
    """Per-shape metric lists as the harness writes them (speedups, latency ms, compile s)."""
    f = s.f
    g = f.get("g", 1.0) * (nz.plat if nz else 1.0)
    sig = pr.sig * f.get("sig", 1.0)
    if nz:
        uB, uH, uT, uC, uL = (nz.timer(sig) for _ in range(5))
        uJ = float(np.exp(nz.r.normal(0, pr.jitter * f.get("jit", 1.0)))) if pr.jitter else 1.0
    else:
        uB = uH = uT = uC = uL = uJ = 1.0
    cg = s.cg
    out = {"helion_speedup": [], "triton_speedup": [], "torch_compile_speedup": [], "helion_accuracy": [],
           "helion_latency_ms": [], "helion_compile_time_s": []}
    for lab in s.shapes:
        b, lh, lt, lc, comp = shape_params(seed, pr, lab, s.variant)
        fh = f.get("h", 1.0) * f.get("shape_h", 1.0) * uJ
        bt = b * f.get("b", 1.0) * g
        ht = b * math.exp(-lh) * fh * g
        tt = b * math.exp(-lt) * f.get("t", 1.0) * g
        ct = b * math.exp(-lc) * f.get("c", 1.0) * g
        if nz:
            e = np.exp(nz.r.normal(0, pr.sig_shape, 5))
        else:
            e = np.ones(5)
        B = bt * (1 + (0 if cg else pr.kb)) * uB * e[0]
        H = ht * f.get("hs", 1.0) * (1 + (0 if cg else pr.kh)) * uH * e[1]
        T = tt * (1 + (0 if cg else pr.kt)) * uT * e[2]
        C = ct * (1 + (0 if cg else pr.kc)) * uC * e[3]
        L = ht * (1 + pr.lat_ovh) * f.get("lat", 1.0) * uL * e[4]
        out["helion_speedup"].append(round(B / H, 4))
        out["triton_speedup"].append(round(B / T, 4))
        out["torch_compile_speedup"].append(round(B / C, 4))
        out["helion_accuracy"].append(1.0)
        out["helion_latency_ms"].append(round(L, 5))
        k = comp * f.get("ct", 1.0) * (0.05 if s.two_pass else 1.0)
        if nz:
            k *= float(np.exp(nz.r.normal(0, 0.08)))
        out["helion_compile_time_s"].append(round(k, 2))
    if not pr.triton:
        out.pop("triton_speedup")
    if not pr.compile_speedup:
        out.pop("torch_compile_speedup")
    if not s.lat:
        out.pop("helion_latency_ms")
    if not s.ct:
        out.pop("helion_compile_time_s")
    return out


# --- pretuned -------------------------------------------------------------------------------------

@dataclass
class PProf:
    key: tuple
    nshapes: int
    mh: float
    sig: float


def make_pprof(seed: int, key: tuple, nshapes: int) -> PProf:
    r = rng(seed, "pprof", *key)
    n = nshapes if nshapes >= 4 else int(r.integers(6, 17))
    return PProf(key, n, float(r.normal(0.12, 0.15)), float(np.exp(r.uniform(np.log(0.004), np.log(0.025)))))


def pretuned_measure(seed: int, pp: PProf, baselines: tuple, cg: bool, l2: bool, f: dict, nz: Noise | None,
                     nshapes: int = 0) -> dict:
    """One pretuned kernel's record fields, as pretuned_kernels/_bench.py run_sweep returns them."""
    n = nshapes if nshapes >= 4 else pp.nshapes
    sig = pp.sig * f.get("sig", 1.0)
    uh = nz.timer(sig) if nz else 1.0
    ub = {nm: (nz.timer(sig) if nz else 1.0) for nm in baselines}
    by = {nm: [] for nm in baselines}
    best = []
    kh, kb = _pcg(seed, pp.key, tuple(baselines))  # launch overheads paid when not under CUDA graphs
    for j in range(n):
        h, h_l2 = _pshape(seed, pp.key, j)
        ht = h * f.get("h", 1.0) * (h_l2 if l2 else 1.0) * (1.0 if cg else 1 + kh) * uh
        if nz:
            ht *= float(np.exp(nz.r.normal(0, 0.01)))
        ms = {}
        for nm in baselines:
            lb, bl2 = _pbase(seed, pp.key, nm, j)
            lr = pp.mh + {"torch": 0.25, "torch_compile": -0.05, "vllm": -0.12, "cutlass": -0.08}.get(nm, 0.0)
            b = h * math.exp(lr + lb) * f.get("b_" + nm, f.get("b", 1.0))
            b *= (bl2 if l2 else 1.0) * (1.0 if cg else 1 + kb[nm]) * ub[nm]
            if nz:
                b *= float(np.exp(nz.r.normal(0, 0.01)))
            ms[nm] = b
            by[nm].append(b / ht)
        bn = min(ms, key=ms.get)
        best.append(ms[bn] / ht)

    def gm(v):
        pos = [x for x in v if x and x > 0]
        return math.exp(sum(math.log(x) for x in pos) / max(len(pos), 1))

    per = {nm: {"wins": sum(1 for s in v if s > 1.0), "total": len(v), "geomean": round(gm(v), 4),
                "best_speedup": round(max(v, default=0.0), 4)} for nm, v in by.items()}
    return {"helion_wins": sum(1 for s in best if s > 1.0), "total": len(best), "geomean": round(gm(best), 4),
            "best_speedup": round(max(best, default=0.0), 4), "baselines": per}


def _pshape(seed, key, j):
    ck = ("h", seed, key, j)
    if ck not in _PSHAPES:
        r = rng(seed, "pshape", *key, j)
        _PSHAPES[ck] = (float(np.exp(r.normal(-3, 1.0))), float(np.exp(r.normal(0.1, 0.08))))
    return _PSHAPES[ck]


def _pbase(seed, key, nm, j):
    ck = ("b", seed, key, nm, j)
    if ck not in _PSHAPES:
        rb = rng(seed, "pbase", *key, nm, j)
        _PSHAPES[ck] = (float(rb.normal(0, 0.18)), float(np.exp(rb.normal(0.1, 0.08))))
    return _PSHAPES[ck]


def _pcg(seed, key, baselines):
    ck = ("cg", seed, key, baselines)
    if ck not in _PSHAPES:
        kh = float(rng(seed, "pcg", *key).uniform(0.05, 0.3))
        kb = {nm: float(rng(seed, "pcgb", *key, nm).uniform(0.02, 0.4)) for nm in baselines}
        _PSHAPES[ck] = (kh, kb)
    return _PSHAPES[ck]
