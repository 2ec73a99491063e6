"""Per-shape TIMES for every series of a run, then the metrics benchmarks/run.py (and the
linear-attention / TPU runners, and pretuned_kernels/run.py) would write from them.

Each timer is simulated on its own: the baseline, Helion, Triton and torch.compile under the
speedup timer (CUDA graphs when the kernel keeps `--cudagraph`), and Helion again under the
latency timer (triton do_bench). Speedups are baseline_time / impl_time, so the baseline's noise
is shared by the three speedups of a night. On top: a per-platform-night factor (every timer of a
platform), a per-timer series-night scatter (0.5-3%), per-shape scatter, ~1% stray single-timer
outliers of 15-20%, and the planted effects (log shifts per timer stream)."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

STREAMS = ("base", "helion", "triton", "tc", "lat", "compile")


def rng_for(*parts) -> np.random.Generator:
    h = hashlib.sha256(repr(parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _u(*parts) -> float:
    """A deterministic uniform(0,1) from a tag."""
    h = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(h[:8], "little") / 2 ** 64


def _n(*parts) -> float:
    """A deterministic standard normal from a tag."""
    u1 = max(_u(*parts, "a"), 1e-12)
    u2 = _u(*parts, "b")
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


@dataclass
class SeriesModel:
    key: tuple
    h0: float       # log helion speedup (geomean over any shape set, before effects)
    t0: float
    c0: float
    lat0: float     # mean helion latency (ms) over any shape set
    comp0: float    # geomean compile time (s)
    sig: dict       # per-stream series-night scatter (log sd)
    shape_sd: float
    noisy_from: int | None = None   # a night from which the series turns noisy (a noise/scatter case)
    noisy_sig: float = 0.0


def series_model(seed: int, key: tuple, suite: str) -> SeriesModel:
    p, k = key
    r = rng_for(seed, "series", p, k)
    if suite == "linattn":
        h0 = float(np.clip(r.normal(0.0, 0.3), -0.7, 0.9))
        lat0 = float(math.exp(r.normal(math.log(3.0), 0.6)))
    elif suite in ("tpu", "tpu_bridge"):
        h0 = float(np.clip(r.normal(-0.05, 0.35), -0.9, 0.9))
        lat0 = float(math.exp(r.normal(math.log(0.8), 0.9)))
    else:
        h0 = float(np.clip(r.normal(0.12, 0.32), -0.6, 1.1))
        lat0 = float(math.exp(r.normal(math.log(0.15), 1.1)))
    noisy = r.random() < 0.12
    sig = {s: float(r.uniform(0.004, 0.017 if not noisy else 0.028)) for s in STREAMS}
    sig["compile"] = float(r.uniform(0.02, 0.06))
    if p.startswith("mi"):
        for s in ("base", "helion", "triton", "tc", "lat"):
            sig[s] *= 1.25
    return SeriesModel(key=key, h0=h0, t0=float(r.normal(0.05, 0.22)), c0=float(r.normal(0.12, 0.28)),
                       lat0=lat0, comp0=float(math.exp(r.normal(math.log(18.0), 0.8))), sig=sig,
                       shape_sd=float(r.uniform(0.12, 0.3)))


def shape_offsets(seed: int, key: tuple, shapes: tuple, stream: str, sd: float) -> np.ndarray:
    """Per-shape log offsets, centered over the shape set: a shape set that changes without a
    planted effect moves no geomean (and no mean latency) by itself."""
    if not shapes:
        return np.zeros(0)
    z = np.array([_n(seed, "shape", key, s, stream) for s in shapes]) * sd
    return z - z.mean()


@dataclass
class Effect:
    """A planted move: log shifts of timer streams per member. Nightlies use [start, end) night
    indices; manual and side-branch runs use the commit position (pos/end_pos) of a commit-based
    change, or the time span (t_start/t_end) of an environment episode."""
    label_id: str
    start: int
    end: int | None
    shifts: dict                     # (platform, kernel) -> {stream: log shift}
    hide: bool = False               # an outage: the members' rows are absent
    pos: int | None = None
    end_pos: int | None = None
    t_start: object = None
    t_end: object = None
    shape_salt: str | None = None    # the members' input shapes change (same count)
    nightly_only: bool = False       # a one-run blip: manual and side-branch runs never see it


@dataclass
class RunValues:
    shapes: list
    metrics: dict = field(default_factory=dict)   # our metric name -> per-shape list


def _apply(effects, key, night=None, t=None) -> dict:
    """Sum of the (already selected, active) effects' shifts on one series."""
    tot = {s: 0.0 for s in STREAMS}
    for e in effects:
        for s, v in e.shifts.get(key, {}).items():
            tot[s] = tot.get(s, 0.0) + v
    return tot


def series_values(seed: int, model: SeriesModel, method, night: int, t, run_tag, effects, platform_factor: float,
                  extra: dict | None = None, noise: bool = True, outlier_ok: bool = True,
                  failures_ok: bool = True) -> RunValues:
    """The per-shape metrics of one series in one run."""
    key = model.key
    shapes = list(method.shapes)
    n = len(shapes)
    eff = _apply(effects, key, night, t)
    if extra:
        for s, v in extra.items():
            eff[s] += v
    r = rng_for(seed, "run", key, run_tag)
    sd = model.shape_sd
    zh = shape_offsets(seed, key, method.shapes, "helion", sd)
    zt = shape_offsets(seed, key, method.shapes, "triton", sd * 0.8)
    zc = shape_offsets(seed, key, method.shapes, "tc", sd * 0.9)
    zl = shape_offsets(seed, key, method.shapes, "lat", 0.9)
    if len(zl):
        zl = zl - np.log(np.mean(np.exp(zl)))   # the published mean latency does not depend on the shape set
    zk = shape_offsets(seed, key, method.shapes, "compile", 0.5)
    common = {}
    for s in STREAMS:
        sig = model.sig[s]
        if model.noisy_from is not None and night >= model.noisy_from and s in ("base", "helion", "lat"):
            sig = math.hypot(sig, model.noisy_sig)
        common[s] = float(r.normal(0, sig)) if noise else 0.0
        if noise and outlier_ok and s != "compile" and r.random() < 0.01:
            common[s] += math.log(r.uniform(1.15, 1.20))
    per = {s: (r.normal(0, model.sig[s] * 0.6, n) if noise else np.zeros(n)) for s in STREAMS}
    pf = platform_factor if noise else 0.0
    # log times under the speedup timer (helion's own time normalised to 1 at lat0 scale)
    lh = np.log(model.lat0) + zl + pf + common["helion"] + per["helion"] + eff["helion"]
    lb = np.log(model.lat0) + zl + model.h0 + zh + pf + common["base"] + per["base"] + eff["base"]
    lt = np.log(model.lat0) + zl + model.h0 + zh - (model.t0 + zt) + pf + common["triton"] + per["triton"] + eff["triton"]
    lc = np.log(model.lat0) + zl + model.h0 + zh - (model.c0 + zc) + pf + common["tc"] + per["tc"] + eff["tc"]
    hel = np.exp(lb - lh)
    tri = np.exp(lb - lt)
    tcs = np.exp(lb - lc)
    lat = np.exp(np.log(model.lat0) + zl + np.log(1.04) + pf + common["lat"] + per["lat"] + eff["lat"])
    comp = np.exp(np.log(model.comp0) + zk + common["compile"] + per["compile"] + eff["compile"])
    acc = np.ones(n)
    if noise and failures_ok:
        if r.random() < 0.004:  # the whole Helion column failed (tritonbench writes empty -> 0.0)
            hel[:] = 0.0
            lat[:] = 0.0
            acc[:] = 0.0
        else:
            for i in range(n):
                u = r.random()
                if u < 0.003:
                    hel[i] = 0.0
                    lat[i] = 0.0
                    acc[i] = 0.0
                elif u < 0.005:
                    acc[i] = 0.0
    out = RunValues(shapes=shapes)
    m = out.metrics
    m["helion_speedup"] = [round(float(v), 4) for v in hel]
    m["helion_accuracy"] = [float(v) for v in acc]
    if method.has_triton:
        m["triton_speedup"] = [round(float(v), 4) for v in tri]
    if method.has_tc:
        m["torch_compile_speedup"] = [round(float(v), 4) for v in tcs]
    if method.has_latency:
        m["helion_latency_ms"] = [round(float(v), 5) for v in lat]
    if method.has_compile:
        m["helion_compile_time_s"] = [round(float(v), 3) if hel[i] > 0 else 0.0 for i, v in enumerate(comp)]
    return out


def clean_geomean(seed, model, method, night, effects) -> float:
    v = series_values(seed, model, method, night, None, ("clean",), effects, 0.0, noise=False)
    xs = [x for x in v.metrics["helion_speedup"] if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


# ---------------------------------------------------------------- pretuned


@dataclass
class PretunedModel:
    key: tuple
    h_vs: dict          # baseline name -> log speedup of helion vs that baseline (before effects)
    sig: dict
    shape_sd: float


def pretuned_model(seed, key, baselines, planted_tc: set) -> PretunedModel:
    p, k = key
    r = rng_for(seed, "pretuned", p, k)
    h_vs = {}
    base = float(np.clip(r.normal(0.18, 0.3), -0.4, 1.0))
    for b in ("torch", "torch_compile", "vllm", "cutlass", "deepgemm", "flashinfer", "cublas", "triton"):
        if b == "torch":
            h_vs[b] = base
        elif b == "torch_compile":
            # torch.compile is usually slower than the best eager baseline here, except where planted
            h_vs[b] = base - 0.12 if key in planted_tc else base + float(r.uniform(0.35, 0.6))
        else:
            h_vs[b] = base + float(r.uniform(0.1, 0.5))
    sig = {"helion": float(r.uniform(0.004, 0.015))}
    return PretunedModel(key=key, h_vs=h_vs, sig=sig, shape_sd=float(r.uniform(0.12, 0.25)))


def pretuned_values(seed, model: PretunedModel, kernel_facts, night, t, run_tag, effects, platform_factor,
                    noise=True, outlier_ok=True) -> dict:
    """One pretuned kernel record (pretuned_kernels/run.py's output) from per-shape times."""
    key = model.key
    n = kernel_facts.n_shapes
    shapes = tuple(f"s{i}" for i in range(n))
    r = rng_for(seed, "prun", key, run_tag)
    eff = _apply(effects, key, night, t)
    zh = shape_offsets(seed, ("p",) + key, shapes, "helion", model.shape_sd)
    pf = platform_factor if noise else 0.0
    ch = float(r.normal(0, model.sig["helion"])) if noise else 0.0
    if noise and r.random() < 0.01 and outlier_ok:
        ch += math.log(r.uniform(1.15, 1.2))
    lh = zh + pf + ch + eff["helion"] + (r.normal(0, model.sig["helion"] * 0.6, n) if noise else 0)
    per_base = {}
    for b in kernel_facts.baselines:
        hv = model.h_vs.get(b, model.h_vs["torch"] + 0.3)
        zb = shape_offsets(seed, ("p",) + key, shapes, "base:" + b, model.shape_sd * 0.7)
        cb = float(r.normal(0, model.sig["helion"])) if noise else 0.0
        lb = zh + hv + zb + pf + cb + eff["base"] + eff.get("base:" + b, 0.0) + \
            (r.normal(0, model.sig["helion"] * 0.6, n) if noise else 0)
        per_base[b] = np.exp(lb - lh)
    # vs the fastest baseline of each shape: the smallest baseline time, i.e. the smallest speedup
    best_sp = np.min(np.stack(list(per_base.values())), axis=0)

    def gm(xs):
        xs = [x for x in xs if x > 0]
        return math.exp(sum(math.log(x) for x in xs) / max(len(xs), 1))

    rec = {"helion_wins": int(sum(1 for x in best_sp if x > 1.0)), "total": n,
           "geomean": round(gm(best_sp), 4), "best_speedup": round(float(max(best_sp)), 4)}
    rec["baselines"] = {b: {"wins": int(sum(1 for x in v if x > 1.0)), "total": n, "geomean": round(gm(v), 4),
                            "best_speedup": round(float(max(v)), 4)} for b, v in per_base.items()}
    return rec
