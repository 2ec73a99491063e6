"""The measurement model: per-shape true times, and what each timer reports on a given night.

Dashboard (tritonbench-style) series: per shape a baseline GPU time and the true Helion, Triton and
torch.compile speedups over it. The speedup timer (CUDA graphs, or plain do_bench when a kernel drops
`--cudagraph`) times the baseline once per night, and that one baseline measurement divides all
three implementations, so baseline noise moves the three speedups together. Helion's latency is a
second, separate measurement (triton do_bench, launch gaps included) of the same compiled kernel.

Every night: a per-platform environment factor (shared by every kernel and implementation on that
machine that night), per-timer scatter of 0.5-3% (mostly common to the shapes of one run), a small
per-shape jitter, autotune jitter on Helion before the nightly fixed its autotune seed, and rare
stray single-timer outliers. Events (see events.py) multiply the true times of some implementations.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np


def rng_for(*parts) -> np.random.Generator:
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def unit(*parts) -> float:
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "little") / 2**64


def geo(xs) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


# kernel -> (family, default number of tritonbench inputs)
KERNELS = {
    "softmax": ("reduction", 20), "jsd": ("reduction", 12), "welford": ("reduction", 8),
    "kl_div": ("reduction", 12), "int4_gemm": ("gemm", 16), "layer_norm": ("reduction", 20),
    "layer_norm-bwd": ("bwd", 20), "rms_norm": ("reduction", 6), "rms_norm-bwd": ("bwd", 6),
    "cross_entropy": ("reduction", 10), "flash_attention": ("attention", 8), "gemm": ("gemm", 20),
    "grouped_gemm": ("gemm", 8), "rope": ("elementwise", 14), "rope-bwd": ("bwd", 14),
    "mamba2_chunk_scan": ("ssm", 6), "mamba2_chunk_state": ("ssm", 6), "gdn_fwd_h": ("ssm", 5),
    "vector_add": ("elementwise", 20), "vector_exp": ("elementwise", 20), "sum": ("reduction", 20),
    "geglu": ("elementwise", 10), "swiglu": ("elementwise", 10), "jagged_mean": ("reduction", 10),
    "bmm": ("gemm", 6), "matmul": ("gemm", 6), "attention": ("attention", 4),
}
DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi350x": "AMD Instinct MI350X", "mi325x": "AMD Instinct MI325X", "tpu": "TPU v7"}
PRE_DEVICE = {"h100": ("NVIDIA H100 80GB HBM3", "sm90"), "b200": ("NVIDIA B200", "sm100")}

# Typical CUDA-graph-timed Helion speedup level per (family) and platform skew.
_FAMILY_LEVEL = {"reduction": 1.25, "bwd": 1.35, "gemm": 0.95, "attention": 0.9, "elementwise": 1.05,
                 "ssm": 1.6, "linattn": 1.1}
_PLAT_SKEW = {"h100": 1.0, "b200": 1.03, "b200_cute": 0.85, "mi350x": 0.92, "mi325x": 0.9, "tpu": 1.1}


def shape_labels(kernel: str, family: str, n: int, seed_tag: str) -> list[str]:
    r = rng_for("shapes", kernel)
    out = []
    for i in range(n):
        if family == "gemm":
            m = 256 * (1 + i)
            out.append(f"({m}, {int(r.choice([1024, 2048, 4096, 8192]))}, {int(r.choice([512, 1024, 4096]))})")
        elif family == "attention":
            out.append(f"(4, 32, {512 * 2 ** (i % 6)}, 128)")
        elif family == "ssm":
            out.append(f"({2 ** (i % 4 + 1)}, {1024 * (1 + i)}, 64, 128)")
        elif family == "bwd":
            out.append(f"({2048 * (1 + i // 6)}, {512 * (1 + i % 6) + 256 * (i // 6)})")
        else:
            out.append(f"({4096}, {256 * (i + 1)})" if family == "reduction" else f"({2 ** (12 + i % 14)},)")
    # make labels unique
    seen, res = {}, []
    for s in out:
        seen[s] = seen.get(s, 0) + 1
        res.append(s if seen[s] == 1 else f"{s}#{seen[s]}")
    return res


@dataclass
class TBSeries:
    """True per-shape behaviour of one (platform, kernel) dashboard series."""
    plat: str
    kernel: str
    family: str
    labels: list
    b: np.ndarray        # baseline device time, ms
    rh: np.ndarray       # true Helion speedup (device time)
    rt: np.ndarray       # true Triton/Liger speedup
    rc: np.ndarray       # true torch.compile speedup
    cb: np.ndarray       # compute-boundness per impl (how clocks move it)
    ch: np.ndarray
    ct_: np.ndarray
    cc: np.ndarray
    ob: float            # launch gaps (ms) that a non-graph timer adds, per impl
    oh: float
    ot: float
    oc: float
    lat_k: np.ndarray    # do_bench latency / graph time of Helion
    ctime: np.ndarray    # autotune+compile seconds per shape
    sig: dict            # per-timer night scatter
    sig_shape: float
    sig_at: float        # autotune jitter before the fixed seed
    has_triton: bool
    has_tc: bool
    kind: str            # tritonbench / linattn / tpu / bridge


def make_tb_series(seed: int, plat: str, kernel: str, kind: str = "tritonbench", n_all: int | None = None,
                   labels: list | None = None) -> TBSeries:
    fam, n_def = KERNELS.get(kernel.removesuffix("-bwd") if kind == "linattn" else kernel, ("reduction", 8))
    if kind == "linattn":
        fam = "linattn"
    n = n_all or n_def
    r = rng_for("series", seed, plat, kernel, kind)
    z = np.linspace(0, 1, n)
    b0 = math.exp(r.uniform(math.log(0.006), math.log(0.05)))
    growth = r.uniform(2.5, 6.0) if fam not in ("linattn",) else r.uniform(1.0, 2.5)
    b = b0 * np.exp(growth * z) * np.exp(r.normal(0, 0.15, n))
    lvl = _FAMILY_LEVEL[fam] * _PLAT_SKEW.get(plat, 1.0) * math.exp(r.normal(0, 0.22))
    trend = r.normal(0, 0.25)
    rh = lvl * np.exp(trend * (z - 0.5) + r.normal(0, 0.12, n))
    rt = math.exp(r.normal(0.05, 0.15)) * np.exp(r.normal(0, 0.1, n))
    rc = math.exp(r.normal(0.1, 0.15)) * np.exp(r.normal(0, 0.1, n))
    sig_lo = 0.005
    quiet = r.uniform() < 0.7
    def s():
        return float(r.uniform(sig_lo, 0.011) if quiet else r.uniform(0.008, 0.025))
    sig = {"h": s(), "b": s(), "t": s(), "c": s(), "lat": s()}
    if fam == "linattn":
        sig = {k: v * 0.8 for k, v in sig.items()}
    ctime = np.exp(r.normal(math.log(60 if fam in ("reduction", "elementwise") else 240), 0.6, n))
    if fam == "linattn":
        ctime = np.exp(r.normal(math.log(400), 0.4, n))
    return TBSeries(
        plat=plat, kernel=kernel, family=fam,
        labels=labels or shape_labels(kernel, fam, n, str(seed)), b=b, rh=rh, rt=rt, rc=rc,
        cb=r.uniform(0.2, 0.9, n), ch=r.uniform(0.3, 1.0, n), ct_=r.uniform(0.3, 1.0, n), cc=r.uniform(0.3, 1.0, n),
        ob=float(r.uniform(0.004, 0.012) * (3 if fam == "bwd" else 1)), oh=float(r.uniform(0.008, 0.02) * (2 if fam == "bwd" else 1)),
        ot=float(r.uniform(0.004, 0.01)), oc=float(r.uniform(0.006, 0.015)),
        lat_k=np.exp(r.normal(0.03, 0.02, n)), ctime=ctime, sig=sig, sig_shape=float(r.uniform(0.003, 0.01)),
        sig_at=float(r.uniform(0.008, 0.025)), has_triton=kind == "tritonbench" and plat != "tpu",
        has_tc=kind in ("tritonbench", "tpu", "bridge"), kind=kind)


@dataclass
class Mult:
    """Multipliers on the true device times of the implementations, per shape (or scalar)."""
    h: object = 1.0
    b: object = 1.0
    t: object = 1.0
    c: object = 1.0
    lat: object = 1.0      # extra on the do_bench latency only
    sigma: float = 0.0     # extra night scatter (noise events)
    sigma_on: str = "h"

    def compose(self, o: "Mult") -> "Mult":
        return Mult(np.multiply(self.h, o.h), np.multiply(self.b, o.b), np.multiply(self.t, o.t),
                    np.multiply(self.c, o.c), np.multiply(self.lat, o.lat), self.sigma + o.sigma,
                    o.sigma_on if o.sigma else self.sigma_on)


@dataclass
class NightCtx:
    """How a series is measured on one night."""
    n: int
    idx: tuple                 # which of the series' shapes run, in order
    cudagraph: bool
    latency: bool
    compile_mode: str | None   # None (not measured), "zero", "cached", "full"
    budget: float | None
    fixed_seed: bool
    env: float                 # platform-night factor
    hw_theta: float = 0.0      # clock-like slowdown (thermal, runner)
    hw_mult: Mult = field(default_factory=Mult)
    mult: Mult = field(default_factory=Mult)
    outlier: tuple | None = None   # (timer, factor)
    failed_shapes: tuple = ()
    acc_fail_shapes: tuple = ()
    noise: bool = True


def measure_tb(seed: int, s: TBSeries, ctx: NightCtx) -> dict:
    """One night's per-shape metrics for a tritonbench/linattn/TPU series (lists in shape order)."""
    ix = np.asarray(ctx.idx, dtype=int)
    S = len(ix)
    r = rng_for("night", seed, s.plat, s.kernel, s.kind, ctx.n)
    m = ctx.mult.compose(ctx.hw_mult)
    def arr(x):
        a = np.asarray(x, dtype=float)
        return np.full(S, float(a)) if a.ndim == 0 else a[ix]
    b, rh, rt, rc = s.b[ix], s.rh[ix], s.rt[ix], s.rc[ix]
    th = ctx.hw_theta
    B = b * arr(m.b) * (1 + th * s.cb[ix])
    H = b / rh * arr(m.h) * (1 + th * s.ch[ix])
    T = b / rt * arr(m.t) * (1 + th * s.ct_[ix])
    C = b / rc * arr(m.c) * (1 + th * s.cc[ix])
    if ctx.noise:
        extra = m.sigma
        zn = {k: r.normal(0, v) for k, v in s.sig.items()}
        if extra:
            zn[m.sigma_on] += r.normal(0, extra)
        at = r.normal(0, s.sig_at if not ctx.fixed_seed else 0.003)
        def jit():
            return r.normal(0, s.sig_shape, S)
        nb, nh, nt, nc, nl = (np.exp(zn["b"] + jit()), np.exp(zn["h"] + at + jit()), np.exp(zn["t"] + jit()),
                              np.exp(zn["c"] + jit()), np.exp(zn["lat"] + at + jit()))
        if extra and m.sigma_on == "shape":
            nh = nh * np.exp(r.normal(0, extra, S))
    else:
        nb = nh = nt = nc = nl = np.ones(S)
    if ctx.outlier and ctx.noise:
        timer, f = ctx.outlier
        if timer == "b":
            nb = nb * f
        elif timer == "h":
            nh = nh * f
        elif timer == "t":
            nt = nt * f
        elif timer == "c":
            nc = nc * f
        elif timer == "lat":
            nl = nl * f
    env = ctx.env
    if ctx.cudagraph:
        Bm, Hm, Tm, Cm = B * nb, H * nh, T * nt, C * nc
    else:
        Bm, Hm, Tm, Cm = (B + s.ob) * nb, (H + s.oh) * nh, (T + s.ot) * nt, (C + s.oc) * nc
    sh = Bm / Hm
    st = Bm / Tm
    sc = Bm / Cm
    lat = (H + 0.6 * s.oh) * arr(m.lat) * s.lat_k[ix] * nl * env
    acc = np.ones(S)
    for i in ctx.failed_shapes:
        if i < S:
            sh[i] = 0.0
            lat[i] = 0.0
            acc[i] = 0.0
    for i in ctx.acc_fail_shapes:
        if i < S:
            acc[i] = 0.0
    out = {"labels": [s.labels[i] for i in ix], "helion_speedup": [round(float(x), 4) for x in sh],
           "helion_accuracy": [float(x) for x in acc]}
    if s.has_triton:
        out["triton_speedup"] = [round(float(x), 4) for x in st]
    if s.has_tc:
        out["torch_compile_speedup"] = [round(float(x), 4) for x in sc]
    if ctx.latency:
        out["helion_latency_ms"] = [round(float(x), 5) for x in lat]
    if ctx.compile_mode:
        if ctx.compile_mode == "zero":
            ct = np.zeros(S)
        elif ctx.compile_mode == "cached":
            ct = np.exp(r.normal(math.log(1.5), 0.2, S))
        else:
            ct = s.ctime[ix] * np.exp(r.normal(0, 0.1, S) if ctx.noise else 0)
            if ctx.budget:
                ct = np.minimum(ct, ctx.budget + 40.0)
        for i in ctx.failed_shapes:
            if i < S and ctx.compile_mode == "full":
                ct[i] = 0.0
        out["helion_compile_time_s"] = [round(float(x), 2) for x in ct]
    return out


def headline_tb(seed: int, s: TBSeries, ctx: NightCtx) -> float:
    """The noiseless helion_speedup_geomean of that night's configuration."""
    c = NightCtx(**{**ctx.__dict__, "noise": False, "outlier": None, "env": 1.0})
    return geo(measure_tb(seed, s, c)["helion_speedup"])


# ---------------------------------------------------------------- pretuned -----------------------
PRE_TOTAL = {"vector_add": 12, "rope": 16, "rms_norm": 30, "layer_norm": 30, "softmax": 28, "scaled_mm": 24,
             "scale_mm_cute": 24, "cross_entropy": 14, "silu_mul_fp8": 18, "dynamic_per_token_scaled_fp8_quant": 20,
             "per_token_group_fp8_quant": 20, "rms_norm_dynamic_per_token_quant": 20,
             "rms_norm_per_block_quant": 20, "silu_and_mul_per_block_quant": 18, "fused_qk_norm_rope": 16,
             "nvfp4_gemv": 12, "nvfp4_gemv_cute": 12, "projection_rotary": 10, "interleaved_swiglu": 10,
             "grouped_gemm": 7, "grouped_gemm_deepgemm": 7}
_BASE_SPEED = {"torch": (0.35, 0.35), "torch_compile": (0.05, 0.2), "vllm": (0.0, 0.15), "cutlass": (-0.1, 0.15),
               "eager": (0.3, 0.3), "deepgemm": (-0.1, 0.12), "flashinfer": (0.0, 0.15)}


@dataclass
class PreSeries:
    plat: str
    kernel: str
    total: int
    h: np.ndarray                  # Helion time per shape, ms
    speed: dict                    # baseline -> helion speedup over it per shape (true)
    l2h: np.ndarray                # extra time when L2 is cleared before each replay (fraction)
    l2b: dict
    ch: np.ndarray
    cb: dict
    sig: dict
    sig_shape: float


def make_pre_series(seed: int, plat: str, kernel: str, baselines: list) -> PreSeries:
    r = rng_for("pre", seed, plat, kernel)
    T = PRE_TOTAL.get(kernel, 12)
    h = np.exp(r.normal(math.log(0.03), 1.0, T))
    speed, l2b, cb = {}, {}, {}
    for name in sorted(set(baselines) | {"torch", "torch_compile", "vllm", "cutlass", "deepgemm"}):
        mu, sd = _BASE_SPEED.get(name, (0.0, 0.15))
        lvl = r.normal(mu, 0.15)
        speed[name] = np.exp(lvl + r.normal(0, sd, T))
        l2b[name] = r.uniform(0.0, 0.25, T) * (np.log(1 / h) > 3)
        cb[name] = r.uniform(0.2, 0.9, T)
    q = r.uniform() < 0.5
    sig = {name: float(r.uniform(0.004, 0.012) if q else r.uniform(0.008, 0.025)) for name in speed}
    sig["h"] = float(r.uniform(0.004, 0.012) if q else r.uniform(0.008, 0.025))
    return PreSeries(plat=plat, kernel=kernel, total=T, h=h, speed=speed,
                     l2h=r.uniform(0.0, 0.2, T) * (np.log(1 / h) > 3), l2b=l2b, ch=r.uniform(0.3, 1.0, T), cb=cb,
                     sig=sig, sig_shape=float(r.uniform(0.004, 0.012)))


@dataclass
class PreCtx:
    n: int
    baselines: list
    cudagraph: bool
    l2_clear: bool
    env: float = 1.0
    hw_theta: float = 0.0
    mult_h: object = 1.0
    mult_b: dict = field(default_factory=dict)   # baseline -> multiplier
    sigma: float = 0.0
    outlier: tuple | None = None
    noise: bool = True


def measure_pre(seed: int, s: PreSeries, ctx: PreCtx) -> dict:
    r = rng_for("pnight", seed, s.plat, s.kernel, ctx.n)
    T = s.total
    th = ctx.hw_theta
    l2 = ctx.cudagraph and ctx.l2_clear
    H = s.h * np.asarray(ctx.mult_h, dtype=float) * (1 + th * s.ch) * (1 + (s.l2h if l2 else 0))
    if ctx.noise:
        H = H * np.exp(r.normal(0, s.sig["h"] + ctx.sigma) + r.normal(0, s.sig_shape, T))
    if ctx.outlier and ctx.noise and ctx.outlier[0] == "h":
        H = H * ctx.outlier[1]
    per = {}
    for name in ctx.baselines:
        Bt = s.h * s.speed[name] * np.asarray(ctx.mult_b.get(name, 1.0), dtype=float) * (1 + th * s.cb[name]) * \
            (1 + (s.l2b[name] if l2 else 0))
        if ctx.noise:
            Bt = Bt * np.exp(r.normal(0, s.sig[name]) + r.normal(0, s.sig_shape, T))
        if ctx.outlier and ctx.noise and ctx.outlier[0] == name:
            Bt = Bt * ctx.outlier[1]
        per[name] = Bt / H
    best = np.min(np.stack([s.h * 0 + per[n] for n in ctx.baselines]), axis=0)
    out = {
        "helion_wins": int(np.sum(best > 1.0)), "total": T, "geomean": round(geo(best), 4),
        "best_speedup": round(float(np.max(best)), 4),
        "baselines": {n: {"wins": int(np.sum(per[n] > 1.0)), "total": T, "geomean": round(geo(per[n]), 4),
                          "best_speedup": round(float(np.max(per[n])), 4)} for n in ctx.baselines},
    }
    return out


def headline_pre(seed: int, s: PreSeries, ctx: PreCtx) -> float:
    c = PreCtx(**{**ctx.__dict__, "noise": False, "outlier": None, "env": 1.0})
    return measure_pre(seed, s, c)["geomean"]
