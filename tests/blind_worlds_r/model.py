"""The timing model of the R worlds: per-shape times of Helion and of each comparator, under two
timers, for every (platform, kernel) series, and for the pretuned suite.

Everything a series measures on a night is a product of
  - static parameters drawn once per (seed, platform, kernel, shape),
  - the series' *regime* that night, read from the repo (shapes, cudagraph, baseline, torch pin,
    image, runner, autotune env, ...): each regime value carries its own deterministic factors, so a
    change of value in the repo moves the numbers without anyone scheduling it,
  - planted effects (Helion code changes, thermal episodes, silent runner swaps, noise cases),
  - per-night noise: a per-platform-night factor, per-timer scatter (0.5-3 %), stray single-timer
    outliers, autotune jitter before the nightly seed was fixed, failed shapes.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

CH = ("H", "Hs", "L", "B", "T", "C", "K")  # helion kernel, helion speedup-timer only, latency-timer only,
#                                            baseline, triton, torch.compile, compile time

PLAT_SIGMA = {"h100": 0.008, "b200": 0.010, "b200_cute": 0.015, "mi325x": 0.022, "mi350x": 0.020,
              "tpu": 0.017}
PRE_SIGMA = {"h100": 0.006, "b200": 0.008}
PLAT_LEVEL = {"h100": 1.0, "b200": 1.06, "b200_cute": 0.86, "mi325x": 0.88, "mi350x": 0.92, "tpu": 0.82}
DEVICE = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7"}
PRE_DEVICE = {"h100": ("NVIDIA H100 80GB HBM3", "sm90"), "b200": ("NVIDIA B200", "sm100")}

LEVEL = {"softmax": 1.15, "jsd": 2.3, "welford": 1.7, "kl_div": 1.9, "int4_gemm": 1.25, "layer_norm": 1.35,
         "layer_norm-bwd": 1.2, "rms_norm": 1.5, "rms_norm-bwd": 1.3, "cross_entropy": 1.9,
         "flash_attention": 0.92, "gemm": 0.96, "grouped_gemm": 1.45, "rope": 1.7, "rope-bwd": 1.4,
         "mamba2_chunk_scan": 1.6, "mamba2_chunk_state": 1.5, "gdn_fwd_h": 0.95, "vector_add": 1.0,
         "vector_exp": 1.02, "sum": 0.97, "bmm": 0.9, "attention": 0.9, "matmul": 0.95, "geglu": 1.1,
         "swiglu": 1.1, "embedding": 1.2, "addmm": 0.95}


def h64(*parts) -> int:
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little")


def rng(*parts) -> np.random.Generator:
    return np.random.default_rng(h64(*parts))


def family(kernel: str) -> str:
    k = kernel.removesuffix("-bwd")
    if any(x in k for x in ("gemm", "matmul", "bmm", "addmm", "mm")):
        return "gemm"
    if "attention" in k or k in ("attention",):
        return "attn"
    if any(x in k for x in ("gla", "linear_attn", "retention", "delta_rule", "kda")):
        return "linattn"
    if any(x in k for x in ("mamba", "gdn")):
        return "ssm"
    if any(x in k for x in ("norm", "welford", "softmax", "cross_entropy", "jsd", "kl_div", "sum")):
        return "reduce"
    return "pointwise"


def bimodal(q: float, lo: float, hi: float, *key) -> float:
    """log-factor: material (|x| in [lo, hi], random sign) with probability q, else ~0."""
    g = rng("bimodal", *key)
    if g.random() < q:
        return float(g.uniform(lo, hi) * (1 if g.random() < 0.5 else -1))
    return float(g.normal(0, 0.003))


# ----------------------------------------------------------------------------------- shapes
def _shape_label(kernel: str, j: int, suite: str) -> str:
    fam = family(kernel)
    if suite == "tpu":
        n = 1024 * (2 ** (j + 1))
        return f"[{n}, {n}]" if fam != "attn" else f"[2, 8, {n // 2}, 128]"
    if fam == "gemm":
        n = 256 * (j + 1)
        return f"({n}, {n}, {n})" if "int4" not in kernel else f"({n}, {4 * n}, {n})"
    if fam == "attn":
        return f"(4, 16, {512 * (j + 1)}, 128)"
    if fam == "ssm":
        return f"(8, {1024 * (j + 1)}, 32, 64)"
    if fam == "reduce":
        return f"(4096, {128 * (j + 1) * (2 if j > 6 else 1)})"
    return f"({2 ** (12 + j)},)"


def gpu_shapes(kernel: str, num_inputs, maxn, suite: str, bridge: bool = False) -> tuple:
    """The shapes tritonbench runs: the first n of the operator's list."""
    if suite == "tpu":
        return tuple(_shape_label(kernel, j, "tpu") for j in range(2))
    default = 6 + h64("defaultn", kernel) % 7
    n = num_inputs if num_inputs else default
    if bridge:
        n = 2
    if maxn:
        n = min(n, maxn)
    return tuple(_shape_label(kernel, j, suite) for j in range(n))


# ----------------------------------------------------------------------------------- statics
@dataclass
class Static:
    key: tuple
    sigma: float
    level: float
    tri: float
    tc: float
    base: float
    comp: float
    lat_scale: float
    ovh: dict
    has_triton: bool
    has_tc: bool
    has_compile: bool
    runaway: frozenset = field(default_factory=frozenset)


def static_for(seed: int, p: str, k: str, suite: str) -> Static:
    g = rng("static", seed, p, k, suite)
    fam = family(k)
    lvl = LEVEL.get(k.removesuffix("-bwd"), 1.2) * PLAT_LEVEL.get(p, 1.0) * math.exp(g.normal(0, 0.12))
    if suite == "linattn":
        lvl = math.exp(g.normal(0.05 if not k.endswith("-bwd") else -0.08, 0.15))
    sig = PLAT_SIGMA.get(p, 0.015) * math.exp(g.normal(0, 0.3))
    sig = min(max(sig, 0.005), 0.03)
    base = {"gemm": 0.35, "attn": 1.1, "ssm": 0.6, "reduce": 0.03, "pointwise": 0.015,
            "linattn": 2.0}[fam] * math.exp(g.normal(0, 0.3)) * (2.5 if p == "tpu" else 1.0)
    comp = {"gemm": 150, "attn": 320, "ssm": 200, "reduce": 45, "pointwise": 25, "linattn": 0}[fam]
    comp *= math.exp(g.normal(0, 0.35)) * (1.8 if p == "tpu" else 1.0)
    runaway = frozenset()
    if fam in ("gemm", "attn", "ssm") and g.random() < 0.35:
        runaway = frozenset(int(x) for x in g.choice(6, size=1 + int(g.random() < 0.4), replace=False))
    ovh = dict(H=float(g.uniform(0.10, 0.32)), B=float(g.uniform(0.02, 0.08)), T=float(g.uniform(0.05, 0.15)),
               C=float(g.uniform(0.04, 0.12)))
    return Static(key=(p, k, suite), sigma=sig, level=lvl, tri=lvl * math.exp(g.normal(-0.05, 0.18)),
                  tc=math.exp(g.normal(0.08, 0.15)), base=base, comp=comp,
                  lat_scale=float(g.uniform(1.01, 1.08)), ovh=ovh,
                  has_triton=suite == "tritonbench" and p != "tpu" and not k.startswith(("mamba", "gdn")),
                  has_tc=suite in ("tritonbench", "tpu", "tpu_bridge") and k != "gdn_fwd_h",
                  has_compile=suite != "linattn", runaway=runaway)


def shape_params(seed: int, st: Static, label: str, j: int):
    g = rng("shape", seed, st.key, label)
    b = st.base * (1.32 ** j) * math.exp(g.normal(0, 0.12))
    rh = st.level * math.exp(g.normal(0, 0.12))
    rt = st.tri * math.exp(g.normal(0, 0.10))
    rc = st.tc * math.exp(g.normal(0, 0.10))
    k = st.comp * math.exp(g.normal(0, 0.25)) * (1 + 0.05 * j)
    if j in st.runaway:
        k = float(g.uniform(5800, 8400))
    return b, rh, rt, rc, k


# ----------------------------------------------------------------------------------- regimes
def regime_factors(seed: int, p: str, k: str, reg: dict) -> dict:
    """Multiplicative channel factors the series' regime implies (relative to a neutral world)."""
    f = {c: 0.0 for c in CH}
    fam = family(k)
    gpu = p in ("h100", "b200", "b200_cute", "mi325x", "mi350x")
    if reg.get("torch") and gpu:
        t = reg["torch"]
        f["B"] += bimodal(0.08, 0.05, 0.14, seed, "torchB", p, k, t)
        f["C"] += bimodal(0.09, 0.05, 0.16, seed, "torchC", p, k, t)
        f["T"] += bimodal(0.04, 0.04, 0.10, seed, "torchT", p, k, t)
        f["H"] += bimodal(0.04, 0.04, 0.09, seed, "torchH", p, k, t)
    if reg.get("image"):
        im = reg["image"]
        if p.startswith("mi"):
            for c, q in (("H", 0.3), ("B", 0.3), ("T", 0.25), ("C", 0.25)):
                f[c] += bimodal(q, 0.05, 0.13, seed, "img", c, p, k, im)
        else:
            q = 0.65 if fam in ("gemm", "attn") else 0.04
            f["B"] += bimodal(q, 0.05, 0.12, seed, "imgB", p, k, im)
            f["C"] += bimodal(q * 0.5, 0.04, 0.10, seed, "imgC", p, k, im)
        common = bimodal(1.0, 0.01, 0.03, seed, "imgall", p, im)
        for c in ("H", "B", "T", "C"):
            f[c] += common
    if reg.get("runner"):
        r = reg["runner"]
        common = bimodal(1.0, 0.03, 0.07, seed, "runall", p, r)
        for c in ("H", "B", "T", "C"):
            f[c] += common
        f["H"] += bimodal(0.30, 0.05, 0.12, seed, "runH", p, k, r)
        f["B"] += bimodal(0.15, 0.04, 0.09, seed, "runB", p, k, r)
    if reg.get("baseline"):
        f["B"] += bimodal(0.95, 0.10, 0.30, seed, "base", p, k, reg["baseline"])
    if reg.get("tb"):
        f["T"] += bimodal(0.004, 0.05, 0.10, seed, "tbpin", p, k, reg["tb"])
    if reg.get("seed_fixed"):
        f["H"] += bimodal(0.12, 0.05, 0.09, seed, "fixedseed", p, k)
    if reg.get("fla"):
        f["B"] += bimodal(0.25, 0.05, 0.12, seed, "fla", p, k, reg["fla"])
    if reg.get("aot"):
        f["H"] += -abs(bimodal(0.75, 0.08, 0.25, seed, "aot", p, k))
    if reg.get("tpu_tool"):
        for comp in reg["tpu_tool"]:
            name = comp.split("==")[0].split("@")[0]
            q = {"jax": 0.0, "jaxlib": 0.08, "libtpu": 0.10, "torch": 0.0, "torch_tpu": 0.0}.get(name, 0.0)
            f["H"] += bimodal(q, 0.05, 0.12, seed, "tpuH", p, k, comp)
            f["B"] += bimodal(q * 0.6, 0.05, 0.10, seed, "tpuB", p, k, comp)
    if reg.get("fp32"):
        for c in ("H", "B", "C"):
            f[c] += math.log(1.9) + bimodal(0.7 if c == "H" else 0.4, 0.06, 0.15, seed, "fp32", c, p, k)
    if reg.get("passes") == 1:
        f["K"] += abs(bimodal(1.0, 0.18, 0.40, seed, "passes", p, k))
    if reg.get("subproc"):
        f["K"] += abs(bimodal(0.5, 0.06, 0.15, seed, "subproc", p, k))
    return f


# ----------------------------------------------------------------------------------- measurement
def true_arrays(seed: int, st: Static, reg: dict, eff: dict | None = None) -> dict:
    """Noise-free per-shape times (ms) of every impl under each timer, and compile seconds."""
    shapes = reg["shapes"]
    fac = regime_factors(seed, st.key[0], st.key[1], reg)
    eff = eff or {}
    n = len(shapes)
    out = {c: np.zeros(n) for c in ("Bs", "Hs", "Ts", "Cs", "L", "K")}
    for j, lab in enumerate(shapes):
        b, rh, rt, rc, k = shape_params(seed, st, lab, j)
        jit = rng("regjit", seed, st.key, lab).normal(0, 1, 4)

        def m(c, idx):
            x = fac[c] * (1 + 0.25 * jit[idx]) if abs(fac[c]) > 0.02 else fac[c]
            return math.exp(x) * eff.get(c, 1.0)

        B = b * m("B", 0)
        H = b / rh * m("H", 1)
        T = b / rt * m("T", 2)
        C = b / rc * m("C", 3)
        Hs = H * eff.get("Hs", 1.0)
        if not reg.get("cg", True):
            Hs += st.ovh["H"] * b / rh
            B += st.ovh["B"] * b
            T += st.ovh["T"] * b / rt
            C += st.ovh["C"] * b / rc
        out["Bs"][j], out["Hs"][j], out["Ts"][j], out["Cs"][j] = B, Hs, T, C
        out["L"][j] = H * st.lat_scale * eff.get("L", 1.0) + 0.002
        kk = k * math.exp(fac["K"]) * eff.get("K", 1.0)
        if reg.get("budget") and k > reg["budget"]:
            kk = reg["budget"] * 1.02
        out["K"][j] = kk
    if reg.get("budget"):
        for j in st.runaway:
            if j < n:
                pen = 1.0 + (0.15 + 0.20 * rng("budgetpen", seed, st.key, j).random())
                out["Hs"][j] *= pen
                out["L"][j] *= pen
    return out


def geo(xs) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def summarize(st: Static, arr: dict) -> dict:
    """Noise-free dashboard metrics of one series from its arrays."""
    hs = arr["Bs"] / arr["Hs"]
    return dict(helion_speedup_geomean=geo(hs),
                triton_speedup_geomean=geo(arr["Bs"] / arr["Ts"]) if st.has_triton else 0.0,
                torch_compile_speedup_geomean=geo(arr["Bs"] / arr["Cs"]) if st.has_tc else 0.0,
                helion_latency_avg_ms=float(np.mean(arr["L"])),
                compile_time_geomean_s=geo(arr["K"]) if st.has_compile else None)


# ----------------------------------------------------------------------------------- pretuned
@dataclass
class PStatic:
    key: tuple
    sigma: float
    level: float
    base: float
    bl: dict


def pstatic_for(seed: int, p: str, k: str) -> PStatic:
    g = rng("pstatic", seed, p, k)
    sig = min(max(PRE_SIGMA.get(p, 0.008) * math.exp(g.normal(0, 0.3)), 0.004), 0.02)
    return PStatic(key=(p, k), sigma=sig, level=math.exp(g.normal(0.35, 0.25)),
                   base=0.02 * math.exp(g.normal(0, 0.8)), bl={})


def pbaseline_ratio(seed: int, p: str, k: str, name: str) -> float:
    """How fast a named baseline is relative to the torch eager reference (>1 = faster)."""
    g = rng("pbl", seed, p, k, name)
    mu = {"torch": 0.0, "torch_compile": 0.18, "vllm": 0.25, "cutlass": 0.22, "eager": 0.0,
          "deepgemm": 0.3}.get(name, 0.1)
    return math.exp(mu + g.normal(0, 0.12))


def ptrue(seed: int, st: PStatic, reg: dict, eff: dict | None = None) -> tuple:
    """Noise-free per-shape helion ms and {baseline: per-shape ms} of a pretuned kernel."""
    eff = eff or {}
    n = reg["nshapes"]
    p, k = st.key
    hfac = bimodal(0.45, 0.06, 0.18, seed, "pcfg", p, k, reg["cfg"])
    hfac += bimodal(0.08, 0.04, 0.08, seed, "ptorchH", p, k, reg.get("torch"))
    hfac += bimodal(0.3, 0.05, 0.10, seed, "prunH", p, k, reg.get("runner"))
    hfac += bimodal(0.25, 0.05, 0.10, seed, "pimgH", p, k, reg.get("image"))
    l2 = reg.get("l2") and reg.get("cg")
    H = np.zeros(n)
    Bs = {name: np.zeros(n) for name in reg["baselines"]}
    for j in range(n):
        g = rng("pshape", seed, p, k, j)
        t0 = st.base * (1.4 ** (j % 12)) * math.exp(g.normal(0, 0.2))
        h = t0 / (st.level * math.exp(g.normal(0, 0.15)))
        h *= math.exp(hfac) * eff.get("H", 1.0)
        if l2:
            h *= math.exp(abs(g.normal(0.10, 0.05)))
        H[j] = h
        for name in reg["baselines"]:
            bt = t0 / pbaseline_ratio(seed, p, k, name) * math.exp(rng("pbs", seed, p, k, name, j).normal(0, 0.08))
            if name in ("torch", "torch_compile"):
                bt *= math.exp(bimodal(0.3, 0.05, 0.12, seed, "ptorch", name, p, k, reg.get("torch")))
            if l2:
                bt *= math.exp(abs(rng("pl2", seed, p, k, name, j).normal(0.04, 0.06)) +
                               bimodal(0.45, 0.06, 0.14, seed, "pl2k", p, k, name) * 0.8)
            bt *= eff.get("B", 1.0) * eff.get(f"B:{name}", 1.0)
            Bs[name][j] = bt
    return H, Bs


def psummarize(H, Bs: dict) -> dict:
    if not Bs:
        return dict(geomean=0.0, helion_wins=0, total=0, best_speedup=0.0, baselines=None)
    best = np.min(np.vstack(list(Bs.values())), axis=0)
    sp = best / H
    per = {}
    for name, t in Bs.items():
        s = t / H
        per[name] = {"wins": int(np.sum(s > 1.0)), "total": int(len(s)), "geomean": round(geo(s), 4),
                     "best_speedup": round(float(np.max(s)) if len(s) else 0.0, 4)}
    return dict(geomean=geo(sp), helion_wins=int(np.sum(sp > 1.0)), total=int(len(sp)),
                best_speedup=float(np.max(sp)), baselines=per)
