"""Per-shape timing model. Every number is a time from a timer, and speedups are ratios of times:

- ``base``: the baseline's time under the speedup timer (CUDA graphs when the kernel keeps
  ``--cudagraph``), shared by the three speedups of a shape (one baseline measurement per shape);
- ``helion``, ``triton``, ``tc``: the implementations' times under the same timer;
- ``lat``: Helion's latency from triton do_bench, a separate timer with its own noise and launch
  overhead (on TPU the same measurement as ``helion``);
- ``compile``: Helion's compile time per shape.

Each timer has its own 0.5-3% scatter per series (2.5-4% on the noisy ones), every platform-night
has a shared factor, and about 1% of series-nights carry a stray 15-20% outlier on one timer.
Effects multiply timers from a night on (and to a night, for episodes)."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

TIMERS = ("base", "helion", "triton", "tc", "lat", "compile")


def h32(*parts) -> int:
    return int(hashlib.md5("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def rng_for(*parts) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.md5("|".join(map(str, parts)).encode()).hexdigest()[:16], 16))


def u(lo, hi, *parts) -> float:
    return lo + (hi - lo) * (h32(*parts) / 0xFFFFFFFF)


def geo(xs) -> float:
    pos = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in pos) / len(pos)) if pos else 0.0


COMPUTE = ("gemm", "attention", "mamba", "gdn", "bmm", "int4", "grouped", "matmul")


def kernel_class(kernel: str, suite: str) -> str:
    if suite == "linattn":
        return "linattn"
    if any(c in kernel for c in COMPUTE):
        return "compute"
    return "memory"


@dataclass
class SeriesParams:
    key: tuple
    cls: str
    mu_h: float
    mu_t: float
    mu_c: float
    scale: float
    sigma: float
    lat_oh: float
    oh: dict
    compile_s: float

    def shape(self, label: str) -> dict:
        """Noise-free per-shape times (ms) of this series at one shape label."""
        k = (*self.key, label)
        base = self.scale * math.exp(u(-1.2, 1.2, "sz", *k))
        sh = self.mu_h * math.exp(u(-0.28, 0.28, "sh", *k))
        st = self.mu_t * math.exp(u(-0.2, 0.2, "st", *k))
        sc = self.mu_c * math.exp(u(-0.2, 0.2, "sc", *k))
        return {"base": base, "helion": base / sh, "triton": base / st, "tc": base / sc,
                "compile": self.compile_s * math.exp(u(-0.6, 0.6, "cp", *k))}


_params: dict = {}


def series_params(seed: int, platform: str, kernel: str, suite: str) -> SeriesParams:
    key = (seed, platform, kernel, suite)
    if key in _params:
        return _params[key]
    cls = kernel_class(kernel, suite)
    k = key
    if cls == "compute":
        mu_h, scale = u(0.78, 1.3, "muh", *k), u(0.08, 1.5, "scale", *k)
    elif cls == "linattn":
        mu_h, scale = u(0.7, 1.7, "muh", *k), u(0.4, 4.0, "scale", *k)
    else:
        mu_h, scale = u(0.95, 2.3, "muh", *k), u(0.012, 0.25, "scale", *k)
    if platform == "tpu":
        mu_h *= u(0.6, 1.0, "tpuh", *k)
    noisy = u(0, 1, "noisy", *k) < 0.15
    sigma = u(0.025, 0.038, "sig", *k) if noisy else u(0.005, 0.02, "sig", *k)
    p = SeriesParams(
        key=k, cls=cls, mu_h=mu_h, mu_t=u(0.85, 1.6, "mut", *k), mu_c=u(0.85, 1.5, "muc", *k), scale=scale,
        sigma=sigma, lat_oh=u(0.002, 0.008, "lat", *k),
        oh={"helion": u(0.006, 0.016, "ohh", *k), "triton": u(0.002, 0.007, "oht", *k),
            "tc": u(0.006, 0.018, "ohc", *k), "base": u(0.001, 0.004, "ohb", *k)},
        compile_s=u(25, 420, "cmp", *k) if cls != "memory" else u(12, 160, "cmp", *k))
    _params[key] = p
    return p


@dataclass
class Env:
    """What the files say about a series at a night, beyond its shapes."""
    cudagraph: bool
    compile_factor: float = 1.0   # two-pass cache-hit compile etc.


def true_times(p: SeriesParams, labels, cudagraph: bool, mult: dict) -> list:
    """Noise-free per-shape times with the effects' multipliers applied."""
    out = []
    for lab in labels:
        t = p.shape(lab)
        row = {}
        for name in ("base", "helion", "triton", "tc"):
            x = t[name] * mult.get(name, 1.0)
            if not cudagraph:
                x += p.oh[name]
            row[name] = x
        row["lat"] = (t["helion"] * mult.get("lat", 1.0) + p.lat_oh) * mult.get("lat_env", 1.0)
        row["compile"] = t["compile"] * mult.get("compile", 1.0)
        out.append(row)
    return out


def true_metrics(p: SeriesParams, labels, cudagraph: bool, mult: dict) -> dict:
    rows = true_times(p, labels, cudagraph, mult)
    return {"helion_speedup_geomean": geo([r["base"] / r["helion"] for r in rows]),
            "triton_speedup_geomean": geo([r["base"] / r["triton"] for r in rows]),
            "torch_compile_speedup_geomean": geo([r["base"] / r["tc"] for r in rows]),
            "helion_latency_avg_ms": sum(r["lat"] for r in rows) / max(len(rows), 1),
            "compile_time_geomean_s": geo([r["compile"] for r in rows])}


def measure(p: SeriesParams, labels, cudagraph: bool, mult: dict, rng: np.random.Generator, plat_eps: float,
            sigma_mult: float = 1.0, outlier: tuple | None = None, fail_shape: int | None = None,
            acc_fail_shape: int | None = None, same_timer_lat: bool = False) -> dict:
    """Measured per-shape metric lists as run.py writes them."""
    rows = true_times(p, labels, cudagraph, mult)
    sig = p.sigma * sigma_mult * (1.0 if cudagraph else 1.4)
    n = len(rows)
    # each timer's scatter: a part shared by the shapes of this job (clocks, placement) and a part
    # per shape; the shared part is what makes a series' geomean scatter about as wide as the timer's
    noise = {}
    for name in TIMERS:
        s_t = sig * (0.8 if name == "base" else 1.0)
        noise[name] = np.exp(rng.normal(0.0, s_t * 0.65, n) + rng.normal(0.0, s_t * 0.75))
    noise["compile"] = np.exp(rng.normal(0.0, 0.05, n))
    # stray single-measurement outliers (rarely, one timer at one shape)
    for name in ("base", "helion", "triton", "tc", "lat"):
        hit = rng.random(n) < 0.004
        noise[name] = noise[name] * np.where(hit, rng.uniform(1.15, 1.2, n), 1.0)
    if outlier is not None:  # (timer, factor): one timer of this series-night off on every shape
        name, f = outlier
        noise[name] = noise[name] * f
    out = {k: [] for k in ("helion_speedup", "triton_speedup", "torch_compile_speedup", "helion_accuracy",
                           "helion_latency_ms", "helion_compile_time_s")}
    for i, r in enumerate(rows):
        b = r["base"] * noise["base"][i] * plat_eps
        hh = r["helion"] * noise["helion"][i] * plat_eps
        tt = r["triton"] * noise["triton"][i] * plat_eps
        cc = r["tc"] * noise["tc"][i] * plat_eps
        lat = (hh if same_timer_lat else r["lat"] * noise["lat"][i] * plat_eps)
        comp = r["compile"] * noise["compile"][i]
        if fail_shape is not None and i == fail_shape:
            out["helion_speedup"].append(0.0)
            out["helion_latency_ms"].append(0.0)
            out["helion_accuracy"].append(0.0)
            out["helion_compile_time_s"].append(0.0)
        else:
            out["helion_speedup"].append(round(b / hh, 6))
            out["helion_latency_ms"].append(round(lat, 6))
            out["helion_accuracy"].append(0.0 if acc_fail_shape == i else 1.0)
            out["helion_compile_time_s"].append(round(comp, 3))
        out["triton_speedup"].append(round(b / tt, 6))
        out["torch_compile_speedup"].append(round(b / cc, 6))
    return out


# ------------------------------------------------------------------------------------------------
# Pretuned kernels
# ------------------------------------------------------------------------------------------------

BASELINE_MU = {"torch": 1.35, "torch_compile": 1.06, "vllm": 0.97, "cutlass": 0.93, "flashkda": 0.95,
               "deepgemm": 0.92}


@dataclass
class PretunedParams:
    key: tuple
    scale: float
    sigma: float
    oh: float
    rel: dict = field(default_factory=dict)

    def helion_t(self, i: int) -> float:
        return self.scale * math.exp(u(-1.0, 1.0, "pz", *self.key, i))

    def base_ratio(self, name: str, i: int) -> float:
        mu = BASELINE_MU.get(name, u(0.9, 1.3, "pmu", *self.key, name))
        return mu * self.rel.get(name, 1.0) * math.exp(u(-0.22, 0.22, "pr", *self.key, name, i))


_pparams: dict = {}


def pretuned_params(seed: int, hardware: str, kernel: str) -> PretunedParams:
    key = (seed, hardware, kernel)
    if key not in _pparams:
        noisy = u(0, 1, "pnoisy", *key) < 0.2
        _pparams[key] = PretunedParams(key=key, scale=u(0.004, 0.08, "psc", *key),
                                       sigma=u(0.022, 0.035, "psig", *key) if noisy else u(0.006, 0.018, "psig", *key),
                                       oh=u(0.002, 0.006, "poh", *key),
                                       rel={n: u(0.85, 1.18, "prel", *key, n) for n in BASELINE_MU})
    return _pparams[key]


def pretuned_times(p: PretunedParams, n_shapes: int, baselines, cudagraph: bool, mult: dict) -> list:
    rows = []
    for i in range(n_shapes):
        h = p.helion_t(i) * mult.get("helion", 1.0) * mult.get("all", 1.0)
        row = {"helion": h + (0 if cudagraph else p.oh)}
        for b in baselines:
            x = p.helion_t(i) * p.base_ratio(b, i) * mult.get("base", 1.0) * mult.get(f"base:{b}", 1.0) * mult.get("all", 1.0)
            row[b] = x + (0 if cudagraph else p.oh * 0.8)
        rows.append(row)
    return rows


def pretuned_summary(rows, baselines) -> dict:
    best = []
    per = {b: [] for b in baselines}
    for r in rows:
        for b in baselines:
            per[b].append(r[b] / r["helion"])
        if baselines:
            best.append(min(r[b] for b in baselines) / r["helion"])
    if not baselines:
        return {"helion_wins": 0, "total": len(rows), "geomean": 0.0, "best_speedup": 0.0, "baselines": {}}
    return {"helion_wins": sum(1 for s in best if s > 1.0), "total": len(best), "geomean": round(geo(best), 4),
            "best_speedup": round(max(best, default=0.0), 4),
            "baselines": {b: {"wins": sum(1 for s in per[b] if s > 1.0), "total": len(per[b]),
                              "geomean": round(geo(per[b]), 4), "best_speedup": round(max(per[b], default=0.0), 4)}
                          for b in baselines}}


def pretuned_measure(p: PretunedParams, n_shapes: int, baselines, cudagraph: bool, mult: dict,
                     rng: np.random.Generator, plat_eps: float, sigma_mult: float = 1.0,
                     outlier: float | None = None) -> dict:
    rows = pretuned_times(p, n_shapes, baselines, cudagraph, mult)
    sig = p.sigma * sigma_mult
    for r in rows:
        for k in list(r):
            r[k] = r[k] * plat_eps * math.exp(rng.normal(0.0, sig)) * (1.17 if rng.random() < 0.003 else 1.0)
        if outlier is not None:
            r["helion"] *= outlier
    return pretuned_summary(rows, baselines)
