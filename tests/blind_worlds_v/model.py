"""The performance model: what each implementation's kernel takes per shape, and how a night's
measurement of it comes out (two timers, per-platform-night factors, scatter, stray outliers).

Times are simulated separately for the baseline and each implementation, so the baseline's noise
is shared by the three speedups of a shape; the speedup timer (CUDA graphs where the command says
so) and the latency timer (triton do_bench) get their own noise."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np


def h32(*parts) -> int:
    return int.from_bytes(hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=4).digest(), "big")


def rng_for(*parts) -> np.random.Generator:
    return np.random.default_rng(h32(*parts))


def geo(vals) -> float:
    v = [x for x in vals if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else 0.0


DEVICE = {
    "h100": "NVIDIA H100",
    "b200": "NVIDIA B200",
    "b200_cute": "NVIDIA B200",
    "mi350x": "AMD Instinct MI350X gfx950",
    "mi325x": "AMD Instinct MI325X gfx942",
    "tpu": "TPU v7",
}
# linear-attention rows name the device through torch.cuda.get_device_name(), unshortened
LINATTN_DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200"}
PRE_DEVICE = {"h100": ("NVIDIA H100 80GB HBM3", "sm90"), "b200": ("NVIDIA B200", "sm100")}

# relative speed of a platform (multiplies every kernel time) and launch overhead (ms) of a python
# launch outside CUDA graphs
PLATFORM_SPEED = {"h100": 1.0, "b200": 0.62, "b200_cute": 0.62, "mi350x": 0.8, "mi325x": 1.05, "tpu": 1.3}
LAUNCH_MS = {"h100": 0.006, "b200": 0.0055, "b200_cute": 0.0075, "mi350x": 0.009, "mi325x": 0.01, "tpu": 0.02}


@dataclass(frozen=True)
class Family:
    shapes: int          # shapes tritonbench has for the op
    base_ms: tuple       # range of the baseline's per-shape time on H100
    helion: float        # typical helion speedup over the baseline
    triton: float | None
    compile: float | None
    launches: tuple      # kernel launches per call (baseline, helion, triton, compile)
    ct: tuple            # per-shape compile (autotune) seconds
    fmt: str


FAMILIES = {
    "row": Family(20, (0.008, 0.9), 1.35, 1.25, 1.3, (2, 1, 1, 1), (40, 260), "rows"),
    "row_bwd": Family(10, (0.03, 2.0), 1.2, 1.15, 1.1, (5, 2, 2, 2), (90, 600), "rows"),
    "vec": Family(20, (0.004, 0.6), 1.02, 1.0, 1.0, (1, 1, 1, 1), (15, 80), "vec"),
    "gemm": Family(20, (0.03, 3.0), 0.97, 0.92, 0.99, (1, 1, 1, 1), (120, 900), "mnk"),
    "ggemm": Family(10, (0.1, 4.0), 1.08, 0.9, 0.95, (4, 1, 1, 1), (200, 1200), "gmnk"),
    "attn": Family(12, (0.15, 6.0), 1.05, 1.1, 0.85, (1, 1, 1, 1), (300, 1800), "attn"),
    "ssm": Family(6, (0.5, 9.0), 6.0, 5.0, 2.2, (12, 1, 1, 3), (200, 1500), "bthd"),
    "rope": Family(20, (0.01, 0.5), 1.6, 1.5, 1.45, (4, 1, 1, 1), (60, 400), "rope"),
    "linattn": Family(6, (0.2, 8.0), 1.05, None, None, (3, 3, 3, 3), (0, 0), "named"),
    "tpu": Family(2, (0.05, 4.0), 1.1, None, 0.95, (1, 1, 1, 1), (60, 700), "tpu"),
}


def family(kernel: str, suite: str) -> str:
    if suite == "linattn":
        return "linattn"
    if suite == "tpu":
        return "tpu"
    k = kernel.replace("-bwd", "")
    if kernel.endswith("-bwd"):
        return "row_bwd" if k not in ("rope",) else "rope"
    if k in ("gemm", "int4_gemm", "bmm", "matmul", "fp8_gemm"):
        return "gemm"
    if k == "grouped_gemm":
        return "ggemm"
    if k in ("flash_attention", "attention", "fp8_attention", "blackwell_attentions"):
        return "attn"
    if k.startswith(("mamba2", "gdn")):
        return "ssm"
    if k == "rope":
        return "rope"
    if k in ("vector_add", "vector_exp", "sum", "add", "exp"):
        return "vec"
    return "row"


# how many inputs tritonbench has for an op (when run.py gives no num_inputs the CI takes
# min(MAX_NUM_INPUTS, this)); a few ops have fewer than the family default
AVAILABLE = {"rms_norm": 6, "rms_norm-bwd": 6, "welford": 8, "mamba2_chunk_scan": 6, "mamba2_chunk_state": 6,
             "gdn_fwd_h": 6, "kl_div": 12, "jsd": 12, "rope": 16, "rope-bwd": 16, "grouped_gemm": 10,
             "flash_attention": 12, "layer_norm-bwd": 14, "cross_entropy": 16, "int4_gemm": 16}


def shape_labels(kernel: str, fam: str, n: int, salt: str = "") -> list[str]:
    r = rng_for("shapes", kernel, salt)
    out = []
    for i in range(n):
        if fam in ("row", "row_bwd"):
            m = [1024, 2048, 4096, 8192][i % 4] if kernel.startswith(("cross", "kl", "jsd")) else 4096
            out.append(f"({m}, {int(256 * 2 ** (i * 7 / max(n - 1, 1)))})")
        elif fam == "vec":
            out.append(f"({2 ** (12 + i)},)")
        elif fam == "gemm":
            m = 256 * (1 + i)
            out.append(f"({m}, {int(r.choice([1024, 2048, 4096, 8192]))}, {int(r.choice([512, 1024, 4096, 8192]))})")
        elif fam == "ggemm":
            out.append(f"({4 + 2 * i}, {512 * (1 + i % 4)}, 4096, 4096)")
        elif fam == "attn":
            out.append(f"(4, 32, {512 * 2 ** (i % 5)}, 128)" if i < 5 else f"({2 ** (i % 4)}, 16, {1024 * (1 + i % 6)}, 128)")
        elif fam == "ssm":
            out.append(f"(2, {1024 * 2 ** (i % 3)}, {8 * (1 + i // 3)}, 64)")
        elif fam == "rope":
            out.append(f"(8, 32, {256 * (1 + i)}, 128)")
        else:
            out.append(f"shape_{i}")
    return out


@dataclass
class Series:
    """Static truth of one (platform_short, kernel) series, per shape label."""
    plat: str
    kernel: str
    fam: str
    base: dict = field(default_factory=dict)    # label -> baseline kernel time (ms, speedup timer, on this platform)
    hsp: dict = field(default_factory=dict)     # label -> helion true speedup
    tsp: dict = field(default_factory=dict)
    csp: dict = field(default_factory=dict)
    ct: dict = field(default_factory=dict)      # label -> compile seconds
    sigma: float = 0.012                        # scatter of the speedup timer (per shape and common)
    sigma_lat: float = 0.012                    # scatter of the latency timer
    lat_ratio: float = 1.04                     # do_bench (L2 flushed, no graph) vs graph-timed kernel time
    has_triton: bool = True
    has_compile: bool = True
    weights: dict = field(default_factory=dict)  # label -> how strongly a kernel change hits the shape


def make_series(seed: int, plat: str, kernel: str, suite: str, labels: list[str]) -> Series:
    fam = family(kernel, suite)
    F = FAMILIES[fam]
    r = rng_for(seed, "series", plat, kernel)
    s = Series(plat=plat, kernel=kernel, fam=fam)
    speed = PLATFORM_SPEED.get(plat, 1.0)
    # a series' own typical helion speedup
    mu_h = F.helion * math.exp(r.normal(0, 0.25))
    if plat == "b200_cute":
        mu_h *= math.exp(r.normal(-0.15, 0.2))
    if plat == "tpu":
        mu_h = math.exp(r.normal(0.0, 0.35))
    mu_t = (F.triton * math.exp(r.normal(0, 0.15))) if F.triton else None
    mu_c = (F.compile * math.exp(r.normal(0, 0.15))) if F.compile else None
    s.has_triton = mu_t is not None and plat != "tpu"
    s.has_compile = mu_c is not None
    s.sigma = float(r.uniform(0.005, 0.03))
    s.sigma_lat = float(np.clip(s.sigma * r.uniform(0.6, 1.5), 0.005, 0.03))
    s.lat_ratio = float(r.uniform(1.0, 1.12))
    for lab in labels:
        add_shape(s, seed, lab)
    s._mu = (mu_h, mu_t, mu_c, speed)
    return s


def add_shape(s: Series, seed: int, lab: str):
    if lab in s.base:
        return
    F = FAMILIES[s.fam]
    mu = getattr(s, "_mu", None)
    r = rng_for(seed, "shape", s.plat, s.kernel, lab)
    if mu is None:
        return
    mu_h, mu_t, mu_c, speed = mu
    lo, hi = F.base_ms
    s.base[lab] = float(math.exp(r.uniform(math.log(lo), math.log(hi)))) * speed
    s.hsp[lab] = float(mu_h * math.exp(r.normal(0, 0.18)))
    s.tsp[lab] = float(mu_t * math.exp(r.normal(0, 0.12))) if mu_t else 0.0
    s.csp[lab] = float(mu_c * math.exp(r.normal(0, 0.12))) if mu_c else 0.0
    s.ct[lab] = float(math.exp(r.uniform(math.log(max(F.ct[0], 1)), math.log(max(F.ct[1], 2))))) if F.ct[1] else 0.0
    s.weights[lab] = float(r.uniform(0.3, 1.7))


@dataclass
class Mods:
    """Multipliers in force for one series on one night (1.0 = none)."""
    h: float = 1.0          # helion kernel time, both timers (real changes, autotune results)
    h_shape: dict = field(default_factory=dict)  # extra per-shape multipliers on helion (uneven real changes)
    hA: float = 1.0         # helion, speedup timer only
    hB: float = 1.0         # helion, latency timer only
    b: float = 1.0          # baseline time
    t: float = 1.0
    c: float = 1.0
    allk: float = 1.0       # every implementation, both timers (hardware)
    allk_imp: tuple = (1.0, 1.0, 1.0, 1.0)  # uneven hardware response per implementation (b, h, t, c)
    ct: float = 1.0         # compile time
    sig: float = 1.0        # scatter multiplier
    extra_launch: float = 0.0


def measure(s: Series, labels: list[str], cudagraph: bool, m: Mods, plat_factor: float, rng: np.random.Generator,
            single_timer: bool = False, outlier: tuple | None = None, compile_measured: bool = True,
            fail: dict | None = None) -> dict:
    """One night's per-shape metrics of a series: the lists run.py writes."""
    F = FAMILIES[s.fam]
    sig = s.sigma * m.sig
    sigl = s.sigma_lat * m.sig
    launch = LAUNCH_MS.get(s.plat, 0.006) + m.extra_launch
    nb, nh, nt, nc = F.launches
    ib, ih, it, ic = m.allk_imp
    # a common (per series-night) component for each impl and timer plus a per-shape one
    cb, ch, ct_, cc, chl = (rng.normal(0, sig * 0.6, 4).tolist() + [float(rng.normal(0, sigl * 0.75))])
    out = {k: [] for k in ("helion_speedup", "triton_speedup", "torch_compile_speedup", "helion_accuracy",
                           "helion_latency_ms", "helion_compile_time_s")}
    oA = oB = 1.0
    if outlier is not None:
        which, f = outlier
        if which == "A":
            oA = f
        else:
            oB = f
    for lab in labels:
        base = s.base[lab] * plat_factor * m.allk
        kb = base * m.b * ib
        kh = base / s.hsp[lab] * m.h * m.h_shape.get(lab, 1.0) * ih
        kt = base / s.tsp[lab] * m.t * it if s.tsp.get(lab) else 0.0
        kc = base / s.csp[lab] * m.c * ic if s.csp.get(lab) else 0.0
        e = lambda c: math.exp(c + rng.normal(0, sig * 0.5))
        tb = kb * e(cb)
        th = kh * m.hA * e(ch) * oA
        tt = kt * e(ct_) if kt else 0.0
        tc = kc * e(cc) if kc else 0.0
        if not cudagraph:
            tb += nb * launch * (1 + 0.3 * rng.random())
            th += nh * launch * 1.6 * (1 + 0.3 * rng.random())  # helion's python launcher costs more
            tt = tt + nt * launch * 1.1 if tt else 0.0
            tc = tc + nc * launch * 1.2 if tc else 0.0
        if single_timer:
            lat = th
        else:
            lat = (kh * s.lat_ratio + nh * launch * 1.6) * m.hB * math.exp(chl + rng.normal(0, sigl * 0.6)) * oB
        ok = 1.0
        sp_h, sp_t, sp_c = tb / th, (tb / tt if tt and s.has_triton else 0.0), (tb / tc if tc and s.has_compile else 0.0)
        if fail and lab in fail:
            if fail[lab] == "run":
                sp_h, lat, ok = 0.0, 0.0, 0.0
            else:
                ok = 0.0
        out["helion_speedup"].append(round(sp_h, 4))
        out["triton_speedup"].append(round(sp_t, 4))
        out["torch_compile_speedup"].append(round(sp_c, 4))
        out["helion_accuracy"].append(ok)
        out["helion_latency_ms"].append(round(lat, 5))
        out["helion_compile_time_s"].append(round(s.ct[lab] * m.ct * math.exp(rng.normal(0, 0.04)), 2))
    if not s.has_triton:
        out.pop("triton_speedup")
    if not s.has_compile:
        out.pop("torch_compile_speedup")
    if not compile_measured or not F.ct[1]:
        out.pop("helion_compile_time_s")
    return out


def model_speedup(s: Series, labels: list[str], cudagraph: bool, m: Mods) -> float:
    """The noise-free helion speedup geomean of a configuration (the honest value of a label)."""
    F = FAMILIES[s.fam]
    launch = LAUNCH_MS.get(s.plat, 0.006) + m.extra_launch
    nb, nh, _, _ = F.launches
    ib, ih, _, _ = m.allk_imp
    vals = []
    for lab in labels:
        base = s.base[lab] * m.allk
        tb = base * m.b * ib
        th = base / s.hsp[lab] * m.h * m.h_shape.get(lab, 1.0) * ih * m.hA
        if not cudagraph:
            tb += nb * launch * 1.15
            th += nh * launch * 1.6 * 1.15
        vals.append(tb / th)
    return geo(vals)


# ---------------------------------------------------------------- pretuned suite

# typical speed of a baseline relative to the torch eager reference (time ratio < 1 = faster)
PRE_BASELINE_SPEED = {"torch": 1.0, "torch_compile": 0.72, "vllm": 0.55, "cutlass": 0.6, "ref": 0.8}


@dataclass
class PreSeries:
    alias: str
    kernel: str
    total: int
    helion: list = field(default_factory=list)     # per-shape helion time (ms)
    base: dict = field(default_factory=dict)       # baseline name -> per-shape time (ms)
    sigma: float = 0.01
    cudagraph_gain: list = field(default_factory=list)  # per shape: helion/baseline ratio shift when L2 is cleared


def make_pre_series(seed: int, alias: str, kernel: str) -> PreSeries:
    r = rng_for(seed, "pre", alias, kernel)
    n = int(r.integers(8, 31))
    ps = PreSeries(alias=alias, kernel=kernel, total=n, sigma=float(r.uniform(0.005, 0.025)))
    speed = 0.62 if alias == "b200" else 1.0
    torch_t = [float(math.exp(r.uniform(math.log(0.004), math.log(0.8)))) * speed for _ in range(n)]
    mu = math.exp(r.normal(math.log(1.6), 0.35))
    ps.helion = [t / (mu * math.exp(r.normal(0, 0.2))) for t in torch_t]
    ps.base["torch"] = torch_t
    ps._torch = torch_t
    ps._r = r
    return ps


def pre_baseline(ps: PreSeries, name: str) -> list:
    if name not in ps.base:
        r = rng_for("pre-baseline", ps.alias, ps.kernel, name)
        rel = PRE_BASELINE_SPEED.get(name, 0.8) * math.exp(r.normal(0, 0.25))
        ps.base[name] = [t * rel * math.exp(r.normal(0, 0.1)) for t in ps._torch]
    return ps.base[name]


@dataclass
class PreMods:
    h: float = 1.0
    base: dict = field(default_factory=dict)   # baseline name -> time multiplier
    allk: float = 1.0
    sig: float = 1.0
    l2: float = 1.0                             # L2-clearing timer: helion/baseline ratio shift


def pre_measure(ps: PreSeries, baselines: tuple, m: PreMods, rng: np.random.Generator, outlier: float = 1.0) -> dict:
    sig = ps.sigma * m.sig
    common = float(rng.normal(0, sig * 0.7))
    bcommon = {b: float(rng.normal(0, sig * 0.7)) for b in baselines}
    per_b = {b: [] for b in baselines}
    head = []
    for i in range(ps.total):
        th = ps.helion[i] * m.h * m.allk * math.exp(common + rng.normal(0, sig)) * outlier
        if m.l2 != 1.0:
            th *= m.l2 ** (0.5 + (i % 3) * 0.25)
        tb = {}
        for b in baselines:
            tb[b] = pre_baseline(ps, b)[i] * m.base.get(b, 1.0) * m.allk * math.exp(bcommon[b] + rng.normal(0, sig))
            per_b[b].append(tb[b] / th)
        head.append(min(tb.values()) / th)
    out = dict(helion_wins=sum(1 for s in head if s > 1.0), total=ps.total, geomean=geo(head),
               best_speedup=max(head))
    if len(baselines) > 1:
        out["baselines"] = {b: dict(wins=sum(1 for s in v if s > 1.0), total=ps.total, geomean=round(geo(v), 4),
                                    best_speedup=round(max(v), 4)) for b, v in per_b.items()}
    return out


def pre_model(ps: PreSeries, baselines: tuple, m: PreMods) -> float:
    head = []
    for i in range(ps.total):
        th = ps.helion[i] * m.h * m.allk
        if m.l2 != 1.0:
            th *= m.l2 ** (0.5 + (i % 3) * 0.25)
        head.append(min(pre_baseline(ps, b)[i] * m.base.get(b, 1.0) * m.allk for b in baselines) / th)
    return geo(head)
