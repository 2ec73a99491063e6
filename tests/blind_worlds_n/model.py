"""The performance model: per-shape true times for Helion and the baselines, the two timers, and
the measurement noise. Independent of any other blind set (written from the shared docs only).

Per shape of a series (platform alias, kernel):
  baseline time tb, Helion time th = tb / sp_h, Triton th_t, torch.compile tc   (device time, ms)
  speedup timer (cudagraph unless the kernel drops the flag): t + launches * L * (0.1 | 1)
  latency timer (do_bench, never cudagraph): th + launches_h * L      (a separate measurement)
  compile time: cache-hit compile (two-pass harness) or end-to-end autotune (single pass)
Baseline noise is drawn once per shape and night and shared by the three speedups.
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass

import numpy as np


def hkey(*parts) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest(), "little")


def rng(*parts) -> np.random.Generator:
    return np.random.default_rng(hkey(*parts))


def unif(*parts) -> float:
    return (hkey(*parts) % 10_000_019) / 10_000_019


# kernel family: (t_min ms, t_max ms, shapes available, launches helion/baseline/triton/compile, log mean helion
# speedup, log mean triton speedup, log mean torch.compile speedup, autotune seconds per shape)
FAMILY = {
    "ew": (0.004, 2.0, 24, (1, 1, 1, 1), 0.02, 0.0, -0.02, 60),
    "red": (0.006, 1.5, 20, (1, 2, 1, 1), 0.15, 0.08, 0.05, 90),
    "norm": (0.008, 3.0, 26, (1, 3, 1, 1), 0.25, 0.18, 0.12, 150),
    "normbwd": (0.02, 6.0, 20, (2, 6, 2, 3), 0.30, 0.22, 0.10, 260),
    "loss": (0.02, 8.0, 16, (1, 5, 1, 2), 0.45, 0.30, 0.25, 180),
    "mm": (0.02, 25.0, 18, (1, 1, 1, 1), -0.05, -0.08, -0.02, 700),
    "attn": (0.05, 40.0, 12, (1, 3, 1, 1), 0.05, 0.0, -0.05, 900),
    "scan": (0.05, 20.0, 8, (1, 8, 1, 3), 0.80, 0.5, 0.35, 500),
    "lin": (0.2, 10.0, 6, (2, 2, 2, 2), -0.10, 0.0, 0.0, 0),
    "misc": (0.01, 5.0, 16, (1, 2, 1, 1), 0.10, 0.05, 0.0, 200),
}
FAM = {}
for _f, _ks in {
    "ew": ["vector_add", "vector_exp", "vector_exp-bwd", "add", "exp", "rope", "rope-bwd", "geglu", "swiglu",
           "low_mem_dropout", "embedding", "swiglu-bwd", "geglu-bwd"],
    "red": ["sum", "jagged_sum", "jagged_mean"],
    "norm": ["softmax", "layer_norm", "rms_norm", "welford", "softmax_two_pass", "jagged_softmax",
             "jagged_layer_norm"],
    "normbwd": ["layer_norm-bwd", "rms_norm-bwd", "softmax-bwd"],
    "loss": ["cross_entropy", "kl_div", "jsd", "fused_linear_jsd", "grpo_loss"],
    "mm": ["gemm", "int4_gemm", "grouped_gemm", "bmm", "addmm", "gemm-bwd", "addmm-bwd", "fp8_gemm",
           "bf16xint16_gemm", "broadcast_matmul", "matmul_layernorm", "epilogue_subtiling", "gather_gemv"],
    "attn": ["flash_attention", "blackwell_attentions", "fp8_attention", "xsa", "ragged_attention",
             "flex_attention"],
    "scan": ["mamba2_chunk_scan", "mamba2_chunk_state", "gdn_fwd_h"],
}.items():
    for _k in _ks:
        FAM[_k] = _f

# kernels whose eager baseline launches many small kernels (so CUDA graphs matter a lot)
LAUNCHES = {"grouped_gemm": (1, 8, 1, 3), "rope": (1, 6, 1, 1), "rope-bwd": (2, 10, 2, 3), "int4_gemm": (1, 3, 1, 2),
            "layer_norm-bwd": (2, 7, 3, 3), "rms_norm-bwd": (2, 8, 2, 3), "welford": (1, 4, 1, 1)}
LAUNCH_MS = {"nvidia": 0.0045, "amd": 0.009, "tpu": 0.02}
ALIAS_VENDOR = {"h100": "nvidia", "b200": "nvidia", "b200_cute": "nvidia", "mi325x": "amd", "mi350x": "amd",
                "tpu": "tpu"}
# how noisy each platform is (multiplies every scatter)
ALIAS_NOISE = {"h100": 0.9, "b200": 1.15, "b200_cute": 1.25, "mi325x": 1.5, "mi350x": 1.45, "tpu": 1.3}
ALIAS_AT = {"h100": 1.0, "b200": 0.9, "b200_cute": 1.4, "mi325x": 2.2, "mi350x": 1.9, "tpu": 1.3}


def family(kernel: str) -> str:
    if kernel in FAM:
        return FAM[kernel]
    base = kernel.removesuffix("-bwd")
    if base in FAM:
        return FAM[base]
    return "misc"


def nrm(*parts) -> float:
    """A standard normal draw from a hash (cheaper than a Generator for single values)."""
    u1 = (hkey("n1", *parts) % 2**52 + 0.5) / 2**52
    u2 = (hkey("n2", *parts) % 2**52) / 2**52
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


@functools.lru_cache(maxsize=None)
def shape_universe(kernel: str, variant: str = "") -> list[str]:
    """The inputs a tritonbench operator offers (labels as the harness prints them)."""
    fam = family(kernel)
    n = FAMILY[fam][2] + (hkey("avail", kernel, variant) % 5)
    out = []
    for i in range(n):
        x = i / max(n - 1, 1)
        if fam in ("ew",):
            out.append(f"({2 ** (12 + round(x * 16))},)" if i % 2 == 0 else f"({3 * 2 ** (11 + round(x * 15))},)")
        elif fam == "red":
            out.append(f"({2 ** (8 + i % 6)}, {2 ** (10 + round(x * 10))})")
        elif fam in ("norm", "normbwd"):
            out.append(f"({4096 if i % 3 else 2048}, {256 * (1 + i) if i < 12 else 1024 * (i - 8)})")
        elif fam == "loss":
            out.append(f"({4 * (1 + i % 4)}, {512 * (1 + i // 4)}, {32000 if i % 2 else 128256})")
        elif fam == "mm":
            if variant == "non_square":
                out.append(f"({256 * (1 + i)}, {512 * (1 + (i * 7) % 9)}, {1024 * (1 + (i * 5) % 7)})")
            else:
                s = 256 * (1 + i)
                out.append(f"({s}, {s}, {s})")
        elif fam == "attn":
            out.append(f"({4 if i < 6 else 8}, {16 if i % 2 else 32}, {512 * 2 ** (i % 6)}, 128)")
        elif fam == "scan":
            out.append(f"({1 + i % 4}, {2048 * (1 + i // 2)}, {16 + 8 * (i % 3)}, 64)")
        else:
            out.append(f"({1024 * (1 + i)}, {64 * (1 + i % 8)})")
    return list(dict.fromkeys(out))


def equally_spaced(universe: list[str], k: int, start: int = 0) -> list[str]:
    u = universe[start:] or universe
    k = max(1, min(k, len(u)))
    if k == 1:
        return [u[0]]
    idx = sorted({round(i * (len(u) - 1) / (k - 1)) for i in range(k)})
    return [u[i] for i in idx]


@dataclass
class Truth:
    """Per-shape base truth of one series (before any fact or event multiplier)."""
    tb: np.ndarray
    sp_h: np.ndarray
    sp_t: np.ndarray
    sp_c: np.ndarray
    ct_at: np.ndarray
    ct_hit: np.ndarray
    nl: tuple
    launch: float


class TruthTable:
    """Deterministic truth for every (alias, kernel, shape) of one world seed."""

    def __init__(self, seed: int):
        self.seed = seed
        self._series: dict = {}
        self._truth: dict = {}

    def series_params(self, alias: str, kernel: str) -> dict:
        key = (alias, kernel)
        if key not in self._series:
            fam = family(kernel)
            tmin, tmax, _, nl, mh, mt, mc, at = FAMILY[fam]
            r = rng(self.seed, "series", alias, kernel)
            rk = rng(self.seed, "kernel", kernel)  # shared across platforms
            k_off = rk.normal(0, 0.22)
            vend = ALIAS_VENDOR.get(alias, "nvidia")
            a_off = {"nvidia": 0.0, "amd": -0.12, "tpu": -0.2}[vend] + (0.06 if alias == "b200" else 0.0)
            self._series[key] = dict(
                fam=fam, tmin=tmin * math.exp(r.normal(0, 0.3)) * (1.3 if vend == "amd" else 1.0),
                tmax=tmax * math.exp(r.normal(0, 0.3)), nl=LAUNCHES.get(kernel, nl),
                mu_h=mh + k_off + a_off + r.normal(0, 0.12), mu_t=mt + r.normal(0, 0.12),
                mu_c=mc + r.normal(0, 0.15), slope=r.normal(0.1, 0.25),
                at=max(at, 30) * math.exp(r.normal(0, 0.35)) * ALIAS_AT.get(alias, 1.0),
                launch=LAUNCH_MS[vend],
                # scatter: per-shape (independent) and per-night common parts, per timer
                s_shape=float(np.clip(math.exp(r.uniform(math.log(0.008), math.log(0.035))), 0.006, 0.04))
                * ALIAS_NOISE.get(alias, 1.0),
                s_common=float(math.exp(r.uniform(math.log(0.002), math.log(0.011)))) * ALIAS_NOISE.get(alias, 1.0),
                s_at=float(math.exp(r.uniform(math.log(0.003), math.log(0.012)))) * (1.4 if fam in ("mm", "attn") else 1.0),
            )
        return self._series[key]

    def truth(self, alias: str, kernel: str, shapes: tuple) -> Truth:
        key = (alias, kernel, shapes)
        if key in self._truth:
            return self._truth[key]
        self._truth[key] = t = self._make(alias, kernel, shapes)
        return t

    def _make(self, alias: str, kernel: str, shapes: tuple) -> Truth:
        p = self.series_params(alias, kernel)
        n = len(shapes)
        tb = np.empty(n)
        sh, st, sc, cat, chit = (np.empty(n) for _ in range(5))
        for i, s in enumerate(shapes):
            r = rng(self.seed, "shape", alias, kernel, s)
            x = (hkey("pos", kernel, s) % 1000) / 999.0
            # size from the label's numbers (bigger inputs take longer)
            nums = [int(t) for t in s.replace("(", " ").replace(")", " ").replace(",", " ").split() if t.isdigit()]
            mag = sum(math.log(max(v, 1)) for v in nums) if nums else 10.0
            xs = 1 / (1 + math.exp(-(mag - 18) / 3.5))
            tb[i] = p["tmin"] * (p["tmax"] / p["tmin"]) ** xs * math.exp(r.normal(0, 0.1))
            sh[i] = math.exp(p["mu_h"] + p["slope"] * (xs - 0.5) + r.normal(0, 0.11))
            st[i] = math.exp(p["mu_t"] + r.normal(0, 0.08))
            sc[i] = math.exp(p["mu_c"] + r.normal(0, 0.1))
            cat[i] = p["at"] * (0.6 + 0.8 * xs) * math.exp(r.normal(0, 0.25))
            chit[i] = 1.2 + 4.0 * unif(self.seed, "chit", kernel, s)
        return Truth(tb, sh, st, sc, cat, chit, p["nl"], p["launch"])


@dataclass
class Mult:
    """Multipliers one cause puts on a series (times: >1 is slower)."""
    h: float = 1.0      # Helion device time (both timers)
    b: float = 1.0      # baseline device time
    t: float = 1.0      # Triton device time
    c: float = 1.0      # torch.compile device time
    sp_h: float = 1.0   # speedup timer only, Helion (e.g. a harness artefact)
    lat: float = 1.0    # latency timer only
    ct: float = 1.0     # compile time
    noise: float = 1.0  # scatter multiplier
    shape_mask: tuple | None = None   # only these shapes (labels); None: all

    def combine(self, o: "Mult") -> "Mult":
        return Mult(self.h * o.h, self.b * o.b, self.t * o.t, self.c * o.c, self.sp_h * o.sp_h, self.lat * o.lat,
                    self.ct * o.ct, self.noise * o.noise)


def gm(x) -> float:
    x = [v for v in x if v and v > 0]
    return math.exp(sum(math.log(v) for v in x) / len(x)) if x else 0.0


def expected(tr: Truth, shapes: tuple, cg: bool, mults: list, suite: str, compile_mode: str, budget: float | None,
             plat: float = 1.0) -> dict:
    """Noise-free per-shape metrics of one series on one night.

    mults: list of Mult (facts and events); plat: the platform-night device-time factor."""
    n = len(shapes)
    H = np.ones(n); B = np.ones(n); T = np.ones(n); C = np.ones(n); SPH = np.ones(n); LAT = np.ones(n)
    CT = np.ones(n)
    for m in mults:
        if m.shape_mask is None:
            sel = slice(None)
        else:
            sel = np.array([s in m.shape_mask for s in shapes], dtype=bool)
        H[sel] *= m.h; B[sel] *= m.b; T[sel] *= m.t; C[sel] *= m.c; SPH[sel] *= m.sp_h; LAT[sel] *= m.lat
        CT[sel] *= m.ct
    th = tr.tb / tr.sp_h * H * plat
    if compile_mode == "hit":
        ct = tr.ct_hit * CT
    elif compile_mode == "autotune":
        ct = tr.ct_at * CT
        if budget:
            over = ct > budget
            ct = np.where(over, budget, ct)
            th = th * np.where(over, 1.085, 1.0)  # the search stopped early: a worse config
    else:
        ct = None
    tb = tr.tb * B * plat
    tt = tr.tb / tr.sp_t * T * plat
    tc = tr.tb / tr.sp_c * C * plat
    nh, nb, nt, nc = tr.nl
    ov = tr.launch * (0.1 if cg else 1.0)
    if suite in ("lin", "tpu"):
        ov = tr.launch  # one timer for everything
    mh = (th + nh * ov) * SPH
    mb = tb + nb * ov
    mt = tt + nt * ov
    mc = tc + nc * ov
    lat = (th + nh * tr.launch) * LAT
    return {"mh": mh, "mb": mb, "mt": mt, "mc": mc, "lat": lat, "ct": ct,
            "sp_h": mb / mh, "sp_t": mb / mt, "sp_c": mb / mc}


def headline(e: dict) -> dict:
    return {"helion_speedup_geomean": gm(e["sp_h"]), "helion_latency_avg_ms": float(np.mean(e["lat"])),
            "compile_time_geomean_s": gm(e["ct"]) if e["ct"] is not None else None,
            "triton_speedup_geomean": gm(e["sp_t"]), "torch_compile_speedup_geomean": gm(e["sp_c"])}
