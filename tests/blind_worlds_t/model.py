"""Per-shape times of each implementation, per night, and the metrics a run reports from them.

Each series (platform, kernel) has per-shape true times for the baseline, Helion, Triton and
torch.compile (the speedups are baseline/impl under the CUDA-graph timer, so baseline noise is
shared by the three speedups) and a separate do_bench latency for Helion (the other timer).
Events act as multiplicative factors on components; hardware acts through each implementation's
compute-boundness (a hotter or slower machine hurts compute-bound code more).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

PLATFORM_SCALE = {"h100": 1.0, "b200": 0.72, "b200_cute": 0.72, "mi325x": 1.1, "mi350x": 0.85, "tpu": 1.3}
COMPUTE_BOUND = ("gemm", "attention", "int4", "grouped", "mamba", "gdn", "bmm", "fp8", "scaled_mm", "nvfp4",
                 "blackwell", "flex", "gla", "delta", "kda", "retention", "linear_attn", "matmul")


def _cb(kernel: str) -> float:
    return 0.75 if any(t in kernel for t in COMPUTE_BOUND) else 0.2


@dataclass
class Params:
    b_min: float
    b_max: float
    h: float
    h_slope: float
    t: float
    t_slope: float
    c: float
    c_slope: float
    cb: dict  # impl -> compute-boundness
    ov: dict  # impl -> launch overhead (ms) when not under CUDA graphs
    o_db: float  # do_bench overhead (ms)
    ct: float  # compile time scale (s)
    sigma: float  # per-timer relative scatter
    jit: dict = field(default_factory=dict)


_PARAMS: dict = {}


def params(seed: int, plat: str, kernel: str) -> Params:
    key = (seed, plat, kernel)
    if key in _PARAMS:
        return _PARAMS[key]
    r = random.Random(f"T|{seed}|{plat}|{kernel}|params")
    base_cb = _cb(kernel)
    scale = PLATFORM_SCALE.get(plat, 1.0)
    b_min = r.uniform(0.006, 0.05) * scale
    p = Params(
        b_min=b_min, b_max=b_min * 10 ** r.uniform(1.3, 2.8),
        h=math.exp(r.gauss(0.25, 0.35)), h_slope=r.uniform(-0.5, 0.6),
        t=math.exp(r.gauss(0.15, 0.25)), t_slope=r.uniform(-0.4, 0.4),
        c=math.exp(r.gauss(0.12, 0.2)), c_slope=r.uniform(-0.4, 0.4),
        cb={i: min(max(base_cb + r.uniform(-0.2, 0.2), 0.0), 1.0) for i in ("base", "helion", "triton", "tc")},
        ov={"base": r.uniform(0.01, 0.05), "helion": r.uniform(0.005, 0.012), "triton": r.uniform(0.005, 0.012),
            "tc": r.uniform(0.008, 0.03)},
        o_db=r.uniform(0.003, 0.008), ct=r.uniform(12, 180),
        sigma=r.choice([0.005, 0.008, 0.01, 0.012, 0.015, 0.02, 0.025, 0.03]),
    )
    _PARAMS[key] = p
    return p


def shape_jitter(seed: int, plat: str, kernel: str, label: str) -> tuple:
    r = random.Random(f"T|{seed}|{plat}|{kernel}|{label}|jit")
    return r.gauss(0, 0.08), r.gauss(0, 0.06), r.gauss(0, 0.06), r.gauss(0, 0.12)


@dataclass
class Mods:
    """Factors on one series on one night (products over active events)."""
    base: float = 1.0
    helion: float = 1.0
    triton: float = 1.0
    tc: float = 1.0
    lat: float = 1.0
    compile: float = 1.0
    sigma: float = 1.0
    hw: list = field(default_factory=list)  # (a, m, e): 1 + a*cb + m*(1-cb) per impl, eager baseline also (1+e)
    helion_small: float = 0.0  # extra Helion factor on small shapes only (1 + v*(1-x))

    def hwf(self, cb: float, eager: bool = False) -> float:
        f = 1.0
        for a, m, e in self.hw:
            f *= (1 + a * cb + m * (1 - cb)) * ((1 + e) if eager else 1.0)
        return f


def true_times(p: Params, x: float, jit: tuple, mods: Mods, cudagraph: bool) -> dict:
    """Noise-free times (ms) of each timer for one shape."""
    base = p.b_min * (p.b_max / p.b_min) ** x * (1 + 0.0 * x)
    h = p.h * math.exp(p.h_slope * (x - 0.5) + jit[0])
    t = p.t * math.exp(p.t_slope * (x - 0.5) + jit[1])
    c = p.c * math.exp(p.c_slope * (x - 0.5) + jit[2])
    B = base * mods.base * mods.hwf(p.cb["base"], eager=True)
    H = base / h * mods.helion * (1 + mods.helion_small * (1 - x)) * mods.hwf(p.cb["helion"])
    T = base / t * mods.triton * mods.hwf(p.cb["triton"])
    C = base / c * mods.tc * mods.hwf(p.cb["tc"])
    L = (H * (1 + 0.12 * (1 - x)) + p.o_db) * mods.lat
    if not cudagraph:
        B, H, T, C = B + p.ov["base"], H + p.ov["helion"], T + p.ov["triton"], C + p.ov["tc"]
    ct = p.ct * math.exp(0.6 * x + jit[3]) * mods.compile
    return {"B": B, "H": H, "T": T, "C": C, "L": L, "CT": ct}


def geo(vals) -> float:
    v = [x for x in vals if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else 0.0


def expected(seed: int, run, mods: Mods) -> dict:
    """Noise-free metric values of a series (the geomeans/means the dashboard shows)."""
    p = params(seed, run.platform, run.kernel)
    hs, ts, cs, ls, cts = [], [], [], [], []
    for label, x in run.shapes:
        tt = true_times(p, x, shape_jitter(seed, run.platform, run.kernel, label), mods, run.cudagraph)
        hs.append(tt["B"] / tt["H"])
        ts.append(tt["B"] / tt["T"])
        cs.append(tt["B"] / tt["C"])
        ls.append(tt["L"])
        cts.append(tt["CT"])
    return {"helion_speedup_geomean": geo(hs),
            "triton_speedup_geomean": geo(ts) if run.triton else 0.0,
            "torch_compile_speedup_geomean": geo(cs) if run.torch_compile else 0.0,
            "helion_latency_avg_ms": sum(ls) / len(ls) if run.latency and ls else 0.0,
            "compile_time_geomean_s": geo(cts) if run.compile_time else 0.0}


def measure(seed: int, run, mods: Mods, pf: float, rng: random.Random, outlier: str | None) -> dict:
    """One run's per-shape metric lists (helionbench.json metric name -> values)."""
    p = params(seed, run.platform, run.kernel)
    sig = p.sigma * mods.sigma
    common = {k: rng.gauss(0, sig * 0.8) for k in ("B", "H", "T", "C", "L")}
    common["CT"] = rng.gauss(0, 0.06)
    out = {"helion_speedup": [], "triton_speedup": [], "torch_compile_speedup": [], "helion_accuracy": [],
           "helion_latency_ms": [], "helion_compile_time_s": []}
    for label, x in run.shapes:
        tt = true_times(p, x, shape_jitter(seed, run.platform, run.kernel, label), mods, run.cudagraph)
        m = {}
        for k, v in tt.items():
            s = 0.05 if k == "CT" else sig * 0.6
            f = math.exp(common[k] + rng.gauss(0, s)) * (pf if k != "CT" else 1.0)
            if outlier == k:
                f *= 1 + rng.uniform(0.15, 0.20)
            m[k] = v * f
        out["helion_speedup"].append(round(m["B"] / m["H"], 4))
        out["triton_speedup"].append(round(m["B"] / m["T"], 4))
        out["torch_compile_speedup"].append(round(m["B"] / m["C"], 4))
        out["helion_accuracy"].append(1.0)
        out["helion_latency_ms"].append(round(m["L"], 5))
        out["helion_compile_time_s"].append(round(m["CT"], 2))
    if not run.triton:
        del out["triton_speedup"]
    if not run.torch_compile:
        del out["torch_compile_speedup"]
    if not run.latency:
        del out["helion_latency_ms"]
    if not run.compile_time:
        del out["helion_compile_time_s"]
    return out


# ------------------------------------------------------------------------------- pretuned suite
@dataclass
class PParams:
    n: int
    h: float
    slope: float
    base: dict  # baseline name -> (ratio of its time to torch's, slope)
    cb: float
    sigma: float


_PP: dict = {}


def pparams(seed: int, plat: str, kernel: str) -> PParams:
    key = (seed, plat, kernel)
    if key not in _PP:
        r = random.Random(f"T|{seed}|{plat}|{kernel}|pretuned")
        _PP[key] = PParams(n=r.randint(6, 24), h=math.exp(r.gauss(0.35, 0.3)), slope=r.uniform(-0.4, 0.4),
                           base={"torch": (1.0, 0.0), "torch_compile": (math.exp(r.gauss(-0.35, 0.2)), r.uniform(-0.3, 0.3)),
                                 "vllm": (math.exp(r.gauss(-0.45, 0.2)), r.uniform(-0.3, 0.3)),
                                 "cutlass": (math.exp(r.gauss(-0.4, 0.2)), r.uniform(-0.3, 0.3))},
                           cb=_cb(kernel), sigma=r.choice([0.005, 0.008, 0.01, 0.015, 0.02]))
    return _PP[key]


@dataclass
class PMods:
    helion: float = 1.0
    base: dict = field(default_factory=dict)  # baseline name (or "*") -> factor
    hw: list = field(default_factory=list)
    l2: float = 0.0  # cold-L2 timer: small shapes get slower, Helion less than baselines
    sigma: float = 1.0


def _pbase_ratio(pp: PParams, name: str) -> tuple:
    if name in pp.base:
        return pp.base[name]
    r = random.Random(f"pbase|{name}")
    return (math.exp(r.gauss(-0.3, 0.2)), r.uniform(-0.3, 0.3))


def ptimes(pp: PParams, baselines, x: float, j: float, mods: PMods, cudagraph: bool = True) -> dict:
    hw, eager = 1.0, 1.0
    for a, m, e in mods.hw:
        hw *= 1 + a * pp.cb + m * (1 - pp.cb)
        eager *= 1 + e
    torch_t = 0.02 * 200 ** x
    ov = 0.0 if cudagraph else 1.0
    out = {"helion": torch_t / (pp.h * math.exp(pp.slope * (x - 0.5) + j)) * mods.helion * hw
           * (1 + 0.5 * mods.l2 * (1 - x)) + 0.006 * ov}
    for b in baselines:
        ratio, sl = _pbase_ratio(pp, b)
        f = mods.base.get(b, 1.0) * mods.base.get("*", 1.0)
        out[b] = torch_t * ratio * math.exp(sl * (x - 0.5)) * f * hw * (eager if b == "torch" else 1.0) \
            * (1 + mods.l2 * (1 - x)) + (0.025 if b in ("torch", "torch_compile") else 0.012) * ov
    return out


def _agg(sp: list) -> dict:
    return {"wins": sum(1 for s in sp if s > 1.0), "total": len(sp), "geomean": geo(sp),
            "best_speedup": max(sp) if sp else 0.0}


def pexpected(seed: int, run, mods: PMods) -> float:
    pp = pparams(seed, run.platform, run.kernel)
    sp = []
    for i in range(pp.n):
        x = i / max(pp.n - 1, 1)
        j = random.Random(f"T|{seed}|{run.platform}|{run.kernel}|{i}|pj").gauss(0, 0.08)
        t = ptimes(pp, run.baselines, x, j, mods, run.cudagraph)
        sp.append(min(t[b] for b in run.baselines) / t["helion"])
    return geo(sp)


def pmeasure(seed: int, run, mods: PMods, pf: float, rng: random.Random) -> dict:
    pp = pparams(seed, run.platform, run.kernel)
    sig = pp.sigma * mods.sigma * (0.7 if run.cudagraph else 1.0)
    common = {k: rng.gauss(0, sig * 0.8) for k in ("helion", *run.baselines)}
    per = {b: [] for b in run.baselines}
    best = []
    for i in range(pp.n):
        x = i / max(pp.n - 1, 1)
        j = random.Random(f"T|{seed}|{run.platform}|{run.kernel}|{i}|pj").gauss(0, 0.08)
        t = ptimes(pp, run.baselines, x, j, mods, run.cudagraph)
        m = {k: v * pf * math.exp(common[k] + rng.gauss(0, sig * 0.6)) for k, v in t.items()}
        for b in run.baselines:
            per[b].append(m[b] / m["helion"])
        best.append(min(m[b] for b in run.baselines) / m["helion"])
    head = _agg(best)
    rec = {"helion_wins": head["wins"], "total": head["total"], "geomean": head["geomean"],
           "best_speedup": head["best_speedup"], "cudagraph": run.cudagraph}
    if len(run.baselines) > 1:
        rec["baselines"] = {b: {k: (round(v, 4) if isinstance(v, float) else v) for k, v in _agg(per[b]).items()}
                            for b in run.baselines}
    return rec
