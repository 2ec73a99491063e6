"""The timing model: per-shape times of baseline, Helion and the comparators under two timers.

Components (multiplicative factors an effect can carry, each a time multiplier):
  base   -- the baseline implementation (eager torch / FLA / pretuned baselines); speedup timer
  hel    -- Helion's real kernel time: both timers (speedup timer and latency timer)
  hel_cg -- only the speedup (CUDA-graph) timer of Helion
  hel_db -- only the latency (triton do_bench) timer of Helion
  tri, tc -- the triton / torch.compile comparators (speedup timer)
  all    -- every time on the platform, both timers (a machine change)
  compile -- Helion compile (autotune) seconds
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

COMPS = ("base", "hel", "hel_cg", "hel_db", "tri", "tc", "all", "compile")
LAUNCH_US = 0.0045  # ms of launch overhead per kernel launch when a timer is not CUDA-graphed


def h01(*parts) -> float:
    """A stable pseudo-random number in [0, 1) from the parts (independent of the world rng)."""
    d = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(d[:8], "big") / 2**64


@dataclass
class Effect:
    plat: str
    kernel: str | None  # None = every kernel of the platform
    comp: str
    factor: float
    start: int  # first night index (inclusive)
    end: int | None = None  # first night index no longer affected (exclusive), None = persists
    source: str = "dashboard"

    def active(self, n: int) -> bool:
        return n >= self.start and (self.end is None or n < self.end)


@dataclass
class SeriesParams:
    t0: float  # ms, smallest shape's baseline time
    R: float  # Helion's speedup over the baseline (middle shape)
    slope: float  # how the speedup varies with shape size
    rt: float  # triton comparator speedup
    rc: float  # torch.compile comparator speedup
    sigma: float  # per-timer scatter (lognormal sigma)
    c0: float  # compile seconds per shape
    n_base_launch: int  # launches of the baseline (matters when the timer is not graphed)
    has_comparators: bool = True


def series_params(world_seed: int, plat: str, kernel: str, suite: str) -> SeriesParams:
    u = lambda tag: h01(world_seed, plat, kernel, tag)
    heavy = any(s in kernel for s in ("gemm", "attention", "mamba", "gdn", "gla", "delta", "kda", "retention", "bmm"))
    t0 = math.exp(math.log(0.004) + u("t0") * (math.log(0.08) - math.log(0.004))) * (4 if heavy else 1)
    R = math.exp(-0.35 + 0.9 * u("R"))  # 0.70 .. 1.73
    return SeriesParams(
        t0=t0, R=R, slope=-0.35 + 0.7 * u("slope"), rt=math.exp(-0.25 + 0.45 * u("rt")),
        rc=math.exp(-0.3 + 0.55 * u("rc")), sigma=0.005 + 0.02 * u("sig") ** 1.5,
        c0=(20 if heavy else 4) * (0.5 + 1.5 * u("c0")), n_base_launch=1 + int(3 * u("nl")),
        has_comparators=suite == "gpu",
    )


def shape_labels(kernel: str, n: int) -> list[str]:
    out = []
    for i in range(n):
        a = 2 ** (9 + (i % 5))
        b = 2 ** (7 + (i // 5) % 6)
        out.append(f"[({a}, {b})]" if "attention" not in kernel else f"[(4, 16, {a}, {b // 2})]")
    return out


def factors(effects: list[Effect], plat: str, kernel: str, n: int, source: str = "dashboard") -> dict:
    f = {c: 1.0 for c in COMPS}
    for e in effects:
        if e.source == source and e.plat == plat and (e.kernel is None or e.kernel == kernel) and e.active(n):
            f[e.comp] *= e.factor
    return f


def gpu_values(p: SeriesParams, nshapes: int, graphed: bool, f: dict, rng: np.random.Generator | None,
               night_noise: dict | None = None, sigma: float | None = None, natural: int | None = None) -> dict:
    """Per-shape values of one kernel on one night. rng None = the noiseless expectation."""
    sig = p.sigma if sigma is None else sigma
    N = max(nshapes, 1)
    nat = max(natural or N, N)  # the operator's natural input list; num_inputs keeps its first N
    x = np.arange(N) / max(nat - 1, 1) if nat > 1 else np.zeros(1)
    true_base = p.t0 * 2 ** (6 * x)
    r = p.R * (1 + p.slope * (x - 0.5))
    true_hel = true_base / r
    fa = f["all"]

    def timer(name):
        if rng is None:
            return np.ones(N)
        common = (night_noise or {}).get(name, 0.0)
        return np.exp(rng.normal(0, sig, N) + common)

    ov_h = 0 if graphed else LAUNCH_US
    ov_b = 0 if graphed else LAUNCH_US * p.n_base_launch
    base_cg = (true_base * f["base"] * fa + ov_b) * timer("base")
    hel_cg = (true_hel * f["hel"] * f["hel_cg"] * fa + ov_h) * timer("hel_cg")
    hel_db = (true_hel * f["hel"] * f["hel_db"] * fa + LAUNCH_US) * timer("hel_db")
    out = {"helion_speedup": base_cg / hel_cg, "helion_latency_ms": hel_db}
    if p.has_comparators:
        tri = (true_base / p.rt * f["tri"] * fa + ov_h) * timer("tri")
        tc = (true_base / p.rc * f["tc"] * fa + ov_h * 2) * timer("tc")
        out["triton_speedup"] = base_cg / tri
        out["torch_compile_speedup"] = base_cg / tc
    comp = p.c0 * (1 + x) * f["compile"]
    if rng is not None:
        comp = comp * np.exp(rng.normal(0, 0.05, N))
    out["helion_compile_time_s"] = comp
    return out


def geo(v) -> float:
    v = [a for a in v if a and a > 0]
    return float(math.exp(sum(math.log(a) for a in v) / len(v))) if v else 0.0


# ---- pretuned ----------------------------------------------------------------------------------

def pretuned_values(world_seed: int, plat: str, kernel: str, baselines: tuple, nshapes: int, graphed: bool,
                    timer_epoch: int, f: dict, rng: np.random.Generator | None) -> dict:
    u = lambda tag: h01(world_seed, "pt", plat, kernel, tag)
    N = nshapes
    x = np.arange(N) / max(N - 1, 1)
    t = 0.003 * 2 ** (5 * x) * (1 + 3 * u("t"))
    hel = t / math.exp(-0.1 + 0.7 * u("R")) * f["hel"] * f["all"]
    sig = 0.004 + 0.012 * u("sig")
    noise = (lambda: np.exp(rng.normal(0, sig, N))) if rng is not None else (lambda: np.ones(N))
    l2 = 0.0015 if timer_epoch >= 1 else 0.0  # cold-L2 cost once the timer flushes the cache
    ov = 0 if graphed else LAUNCH_US
    h = (hel + l2 + ov) * noise()
    per = {}
    for b in baselines:
        rb = math.exp(-0.45 + 0.8 * h01(world_seed, "pt", plat, kernel, b))
        bt = (t / rb * f["base"] * f["all"] + l2 + ov * (2 if b == "torch" else 1)) * noise()
        per[b] = bt / h
    # the headline: speedup against the fastest baseline of each shape
    head = np.min(np.stack([per[b] for b in baselines]), axis=0)
    rec = {"geomean": geo(head), "helion_wins": int((head > 1).sum()), "total": int(N),
           "best_speedup": float(head.max())}
    if len(baselines) > 1:
        rec["baselines"] = {b: {"wins": int((per[b] > 1).sum()), "total": int(N), "geomean": round(geo(per[b]), 4),
                                "best_speedup": round(float(per[b].max()), 4)} for b in baselines}
    return rec
