"""Simulated per-shape times for every (platform, kernel) series and pretuned kernel.

Why: the dashboard only publishes ratios and means of times, so a realistic world must simulate
the TIMES (baseline, Helion, Triton, torch.compile) separately: then baseline noise is shared by
all speedups computed against it, the CUDA-graph speedup timer and the do_bench latency timer
disagree in the right ways, and a method change (cudagraph flag, shape list, baseline, L2 clearing)
moves the numbers through the same arithmetic the real harness uses. All randomness comes from
numpy generators seeded by (seed, crc32(key), night) so nothing depends on hash order or on how
many nights are kept.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

IMPLS = ("base", "helion", "triton", "tc")


def crc(s: str) -> int:
    return zlib.crc32(s.encode())


def rng_for(seed: int, *key) -> np.random.Generator:
    return np.random.default_rng([seed] + [crc(str(k)) if not isinstance(k, int) else k for k in key])


def geo(xs) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


@dataclass
class Effect:
    """Multiplicative change on true times (and compile time) from night `start` (inclusive) to
    `end` (exclusive, None = persists). `mul[impl]` is a scalar or a per-universe-shape array;
    impls: base, helion, triton, tc, compile, lat (the do_bench timer only), l2 (added time,
    fraction of the Helion time, pretuned cache clearing)."""
    eid: str
    keys: frozenset
    start: int
    end: int | None
    mul: dict
    honest: str = "after"   # which side is the honest number for the label


@dataclass
class SeriesModel:
    source: str
    ps: str
    kernel: str
    suite: str
    universe: list
    base: np.ndarray
    sp: dict            # impl -> true speedup per universe shape
    comp: np.ndarray
    sigma: float
    sigma_lat: float
    overhead: float
    launches: float
    default_n: int
    baselines_ratio: dict = field(default_factory=dict)   # pretuned: name -> ratio per shape

    @property
    def key(self):
        return (self.source, self.ps, self.kernel)


def _shape_labels(kernel: str, n: int, r: np.random.Generator) -> list:
    dims = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
    out, seen = [], set()
    while len(out) < n:
        a, b = int(r.choice(dims)), int(r.choice(dims))
        lab = f"[({a}, {b})]" if "attention" not in kernel else f"[(4, 16, {a}, 128)]"
        if lab in seen:
            lab = f"[({a}, {b}), {len(out)}]"
        seen.add(lab)
        out.append(lab)
    return out


def make_series(seed: int, source: str, ps: str, kernel: str, suite: str, shape_names=None,
                scatter: float | None = None) -> SeriesModel:
    r = rng_for(seed, "series", source, ps, kernel)
    if shape_names:
        universe = list(shape_names)
    elif source == "pretuned":
        universe = _shape_labels(kernel, int(r.integers(8, 25)), r)
    else:
        universe = _shape_labels(kernel, 24, r)
    m = len(universe)
    heavy = any(t in kernel for t in ("gemm", "attention", "mamba", "gdn", "gla", "delta", "kda", "retention", "bmm"))
    base = np.exp(r.normal(math.log(0.6 if heavy else 0.08), 0.8, m))
    level = math.exp(r.normal(0.15 if ps != "mi350x" else 0.0, 0.3))
    sp = {"base": np.ones(m),
          "helion": level * np.exp(r.normal(0, 0.12, m)),
          "triton": math.exp(r.normal(0.05, 0.2)) * np.exp(r.normal(0, 0.08, m)),
          "tc": math.exp(r.normal(0.1, 0.2)) * np.exp(r.normal(0, 0.08, m))}
    comp = np.exp(r.normal(math.log(40 if heavy else 8), 0.5, m))
    sigma = float(scatter if scatter is not None else r.uniform(0.005, 0.03))
    ratios = {}
    if source == "pretuned":
        ratios = {"torch": level * np.exp(r.normal(0, 0.15, m)),
                  "torch_compile": level * math.exp(r.normal(-0.12, 0.12)) * np.exp(r.normal(0, 0.1, m)),
                  "vllm": level * math.exp(r.normal(-0.05, 0.1)) * np.exp(r.normal(0, 0.1, m))}
    return SeriesModel(source=source, ps=ps, kernel=kernel, suite=suite, universe=universe, base=base, sp=sp,
                       comp=comp, sigma=sigma, sigma_lat=float(min(0.035, sigma * r.uniform(0.8, 1.3))),
                       overhead=float(r.uniform(0.004, 0.012)), launches=float(r.uniform(1.5, 4.0)),
                       default_n=int(r.integers(6, 13)) if suite != "tpu" else int(r.integers(3, 6)),
                       baselines_ratio=ratios)


def _factor(effects, key, n, impl, m, skip=()):
    f = np.ones(m)
    for e in effects:
        if e.eid in skip or key not in e.keys or n < e.start or (e.end is not None and n >= e.end):
            continue
        v = e.mul.get(impl)
        if v is not None:
            f = f * (v if np.isscalar(v) else np.asarray(v)[:m])
    return f


def _l2(effects, key, n, m, skip=()):
    add = np.zeros(m)
    for e in effects:
        if e.eid in skip or key not in e.keys or n < e.start or (e.end is not None and n >= e.end):
            continue
        if "l2" in e.mul:
            add = add + e.mul["l2"]
    return add


def dashboard_values(seed, s: SeriesModel, n: int, sel, no_cg: bool, measure_compile: bool,
                     effects, pf: float, noisy: bool = True, skip=(), salt: int = 0):
    """Per-shape metrics of one series on one run (noisy) or the noiseless truth. `sel`: the
    universe indices of the shapes this run measured (tritonbench's first num_inputs inputs, or
    run_linattn.py's SHAPES at that commit)."""
    idx = np.asarray(sel, dtype=int)
    m = len(idx)
    f = {i: _factor(effects, s.key, n, i, len(s.universe), skip)[idx] for i in IMPLS + ("compile", "lat")}
    true = {i: s.base[idx] / s.sp[i][idx] * f[i] for i in IMPLS}
    r = rng_for(seed, "night", *s.key, n, salt)
    z = (lambda k: np.exp(r.normal(0, s.sigma, m))) if noisy else (lambda k: np.ones(m))
    labels = [s.universe[i] for i in idx]
    ov = s.overhead if no_cg else 0.0
    pfac = pf if noisy else 1.0
    meas = {}
    for i in IMPLS:
        launches = s.launches if i == "base" else (1.5 if i == "tc" else 1.0)
        meas[i] = (true[i] * pfac + ov * launches) * z(i)
    lat = (true["helion"] * f["lat"] * pfac + s.overhead) * (np.exp(r.normal(0, s.sigma_lat, m)) if noisy else 1.0)
    comp = s.comp[idx] * f["compile"] * (np.exp(r.normal(0, 0.05, m)) if noisy else 1.0)
    if noisy:
        u = r.random()
        if u < 0.006:
            meas["helion"] = meas["helion"] * r.uniform(1.15, 1.20)
        elif u < 0.012:
            lat = lat * r.uniform(1.15, 1.20)
    if s.suite == "linattn":
        # run_linattn.py: speedup = FLA ms / Helion ms, both from the same latency timer.
        fla = (true["base"] * pfac + s.overhead) * (np.exp(r.normal(0, s.sigma_lat, m)) if noisy else 1.0)
        return dict(shapes=labels, helion_speedup=list(fla / lat), helion_latency_ms=list(lat),
                    helion_accuracy=[1.0] * m)
    out = dict(shapes=labels,
               helion_speedup=list(meas["base"] / meas["helion"]),
               torch_compile_speedup=list(meas["base"] / meas["tc"]),
               helion_accuracy=[1.0] * m,
               helion_latency_ms=list(lat))
    if s.suite != "tpu":
        out["triton_speedup"] = list(meas["base"] / meas["triton"])
    if measure_compile:
        out["helion_compile_time_s"] = list(comp)
    return out


def pretuned_values(seed, s: SeriesModel, n: int, baselines: tuple, effects, pf: float, noisy=True, skip=()):
    m = len(s.universe)
    fh = _factor(effects, s.key, n, "helion", m, skip)
    fb = _factor(effects, s.key, n, "base", m, skip)
    add = _l2(effects, s.key, n, m, skip) * s.base
    r = rng_for(seed, "pnight", *s.key, n)
    z = (lambda: np.exp(r.normal(0, s.sigma, m))) if noisy else (lambda: np.ones(m))
    pfac = pf if noisy else 1.0
    hel = (s.base * fh * pfac + add) * z()
    per = {}
    for name in baselines:
        ratio = s.baselines_ratio.get(name)
        if ratio is None:
            ratio = s.baselines_ratio["vllm"] * math.exp((crc(name) % 100 - 50) / 400)
        b = (s.base * ratio * fb * pfac + add) * z()
        per[name] = b / hel
    fastest = np.min(np.vstack([per[nm] for nm in per]), axis=0)
    rec = dict(geomean=geo(fastest), helion_wins=int(np.sum(fastest > 1.0)), total=m,
               best_speedup=float(np.max(fastest)))
    if len(per) > 1:
        rec["baselines"] = {nm: dict(wins=int(np.sum(v > 1.0)), total=m, geomean=round(geo(v), 4),
                                     best_speedup=round(float(np.max(v)), 4)) for nm, v in per.items()}
    return rec
