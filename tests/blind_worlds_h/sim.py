"""The measurement model: per-shape TIMES on each timer, from which the harness's numbers follow.

Why it exists: the dashboard's tells only mean something if the numbers are produced the way
the real harness produces them. So nothing here draws a speedup directly. Each shape has a
baseline device time, a Helion device time, a Triton and a torch.compile time, launch overheads
(paid only when `--cudagraph` is off), a do_bench latency (the *other* timer, with its own
overhead and scatter) and an autotune/compile time. Speedups are then baseline_time/impl_time
on the cudagraph timer, so baseline noise is shared by the three speedups; latency moves only
when the Helion kernel (or the machine) moves; compile time follows the autotune budget and
the single/two-pass harness. Planted events are multiplicative factors on these components
(see `events.Effect`); method changes need no factor at all: they follow from the facts
(flags, shapes, pins) at the run's sha.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from . import rng

FAMILY = {
    "layer_norm": "norm", "layer_norm-bwd": "norm", "rms_norm": "norm", "rms_norm-bwd": "norm",
    "welford": "norm", "softmax": "reduction", "cross_entropy": "reduction", "kl_div": "reduction",
    "jsd": "reduction", "sum": "reduction", "gemm": "gemm", "int4_gemm": "gemm",
    "grouped_gemm": "gemm", "bmm": "gemm", "matmul": "gemm", "flash_attention": "attention",
    "attention": "attention", "gdn_fwd_h": "attention", "mamba2_chunk_scan": "attention",
    "mamba2_chunk_state": "attention", "vector_add": "elementwise", "vector_exp": "elementwise",
    "rope": "elementwise", "rope-bwd": "elementwise", "geglu": "elementwise",
    "swiglu": "elementwise", "jagged_mean": "reduction", "softmax_two_pass": "reduction",
}

DEFAULT_SHAPES = {"norm": 10, "reduction": 9, "gemm": 10, "attention": 6, "elementwise": 10,
                  "linattn": 6}


def family(kernel: str) -> str:
    if kernel in FAMILY:
        return FAMILY[kernel]
    return "linattn"


def is_bwd(kernel: str) -> bool:
    return kernel.endswith("-bwd")


def shape_labels(kernel: str, n: int) -> list[str]:
    """Tritonbench-style x_val labels, growing with the index."""
    fam = family(kernel)
    out = []
    for i in range(n):
        if fam == "gemm":
            m = 256 * (2 ** (i // 2))
            out.append(f"({m}, {m * (1 + i % 2)}, {512 * (1 + i % 3)})")
        elif fam == "attention":
            out.append(f"(4, 16, {512 * 2 ** i}, 128)")
        elif fam == "elementwise":
            out.append(str(2 ** (12 + i)))
        else:
            out.append(f"(4096, {256 * 2 ** i})" if i < 8 else f"({4096 * 2 ** (i - 7)}, 32768)")
    return out


TPU_SHAPES = {"gemm": ["f32[1024x1024x1024]", "f32[4096x4096x4096]"],
              "attention": ["bf16[2,8,1024,128]", "bf16[2,8,4096,128]"]}


def tpu_shape_labels(kernel: str, n: int) -> list[str]:
    fam = family(kernel)
    base = TPU_SHAPES.get(fam) or [f"f32[{2 ** (11 + i)}x{2 ** (10 + i)}]" for i in range(4)]
    while len(base) < n:
        base = base + [f"f32[{2 ** (12 + len(base))}x4096]"]
    return base[:n]


# --------------------------------------------------------------------------------------------
@dataclass
class Profile:
    """Noise-free, per-series constants (keyed by platform/suite/kernel, never by seed)."""
    platform: str
    suite: str
    kernel: str
    sp_h: float           # kernel-level Helion speedup (cudagraph timer)
    sp_t: float
    sp_c: float
    slope: float          # log-speedup trend across shape sizes
    t0: float             # baseline device time of the smallest shape (ms)
    growth: float         # time doubling rate per shape index
    nlaunch_b: int        # eager baseline kernel launches (bwd: several)
    launch_h: float       # Helion launcher host overhead (ms) when not under cudagraph
    db_ovh: float         # do_bench overhead in ms
    db_bias: float        # do_bench vs cudagraph device-time ratio (L2 flush, etc.)
    autotune_s: float     # typical autotune wall time per shape (s)
    compile_hit_s: float  # compile when the config is cached (s)
    sig_h: float
    sig_b: float
    sig_t: float
    sig_c: float
    sig_d: float
    sig_ct: float
    noisy_key: float = 1.0


def _plat_family(platform: str) -> str:
    return {"b200_cute": "b200", "mi325x": "amd", "mi350x": "amd"}.get(platform, platform)


@functools.lru_cache(maxsize=None)
def profile(platform: str, suite: str, kernel: str, noisy: float = 1.0) -> Profile:
    pf, fam = _plat_family(platform), family(kernel)
    k = ("prof", pf, platform, suite, kernel)
    u = lambda lo, hi, *w: rng.uniform(lo, hi, *k, *w)
    sp_h = math.exp(u(-0.45, 0.75, "h"))
    if platform == "b200_cute":
        sp_h = math.exp(u(-0.7, 0.35, "h"))
    if suite == "linattn":
        sp_h = math.exp(u(-0.5, 0.9, "h"))
    if pf == "tpu":
        sp_h = math.exp(u(-0.8, 0.4, "h"))
    slope = u(0.35, 0.8, "slope") * (1 if rng.chance(0.55, *k, "sgn") else -1)
    t0 = {"gemm": 0.02, "attention": 0.08, "linattn": 0.3}.get(fam, 0.006) * math.exp(u(-0.4, 0.4, "t0"))
    if is_bwd(kernel):
        t0 *= 2.5
    at = {"gemm": 1500.0, "attention": 2600.0, "norm": 260.0, "reduction": 200.0,
          "elementwise": 90.0, "linattn": 0.0}[fam] * math.exp(u(-0.5, 0.6, "at"))
    if pf == "amd":
        at *= 1.6
    sig = u(0.006, 0.016, "sig")
    if rng.chance(0.08, *k, "noisy"):
        sig = u(0.022, 0.03, "sig2")
    sig *= noisy
    return Profile(platform, suite, kernel, sp_h, math.exp(u(-0.35, 0.45, "t")),
                   math.exp(u(-0.3, 0.5, "c")), slope, t0, u(0.45, 0.9, "g"),
                   int(u(3, 7, "nl")) if is_bwd(kernel) else 1, u(0.014, 0.026, "lh"),
                   u(0.002, 0.005, "dbo"), u(1.0, 1.06, "dbb"), at, u(1.5, 9.0, "chit"),
                   sig, sig * u(0.7, 1.2, "b"), sig * u(0.7, 1.3, "tt"), sig * u(0.8, 1.5, "cc"),
                   sig * u(1.1, 1.6, "d"), u(0.03, 0.07, "ct"), noisy)


@dataclass
class ShapeTruth:
    label: str
    t_b: float
    sp_h: float
    sp_t: float
    sp_c: float
    autotune_s: float


def shape_truth(p: Profile, labels: list[str], full_n: int) -> list[ShapeTruth]:
    return _shape_truth(p.platform, p.suite, p.kernel, p.noisy_key, tuple(labels), full_n)


@functools.lru_cache(maxsize=None)
def _shape_truth(platform, suite, kernel, noisy, labels, full_n) -> list[ShapeTruth]:
    p = profile(platform, suite, kernel, noisy)
    out = []
    for i, lab in enumerate(labels):
        k = ("shape", p.platform, p.suite, p.kernel, lab)
        x = i / max(full_n - 1, 1) - 0.5
        eps = rng.normal(0.07, *k, "e")
        sp_h = p.sp_h * math.exp(p.slope * x + eps)
        out.append(ShapeTruth(lab, p.t0 * 2 ** (p.growth * i), sp_h,
                              p.sp_t * math.exp(0.5 * p.slope * x + rng.normal(0.06, *k, "t")),
                              p.sp_c * math.exp(0.3 * p.slope * x + rng.normal(0.06, *k, "c")),
                              p.autotune_s * math.exp(0.5 * x + rng.normal(0.25, *k, "a"))))
    return out


@dataclass
class Factors:
    """Multiplicative factors on the components of one series at one run (1.0 = no change)."""
    helion: float = 1.0      # Helion device time (both timers)
    cg_only: float = 1.0     # Helion on the cudagraph/speedup timer only
    db_only: float = 1.0     # Helion on the do_bench latency timer only
    baseline: float = 1.0
    triton: float = 1.0
    tc: float = 1.0
    machine: float = 1.0     # every device timer on the machine (hardware)
    compile: float = 1.0
    fail: bool = False       # every shape fails (device unavailable)
    shape_fail: tuple = ()   # labels of shapes that fail
    acc_fail: tuple = ()     # labels of shapes that run but fail accuracy
    extra: dict = field(default_factory=dict)

    def mul(self, other: "Factors") -> None:
        for n in ("helion", "cg_only", "db_only", "baseline", "triton", "tc", "machine", "compile"):
            setattr(self, n, getattr(self, n) * getattr(other, n))
        self.fail = self.fail or other.fail
        self.shape_fail = tuple(sorted(set(self.shape_fail) | set(other.shape_fail)))
        self.acc_fail = tuple(sorted(set(self.acc_fail) | set(other.acc_fail)))


@dataclass
class Method:
    """How the harness measures this series at this run (from the facts at its sha)."""
    cudagraph: bool
    labels: list
    full_n: int
    latency: bool
    compile_time: bool
    two_pass: bool
    budget_s: int | None
    subprocess: bool
    fixed_seed: bool
    baseline_shift: float = 1.0   # torch-pin / harness dependent baseline time factor
    tc_shift: float = 1.0
    helion_shift: float = 1.0     # e.g. checked-in AOT configs instead of autotuning
    has_triton: bool = True
    has_tc: bool = True


def measure(seed: int, runkey: str, p: Profile, m: Method, f: Factors, noise: bool = True) -> dict:
    """Per-shape metrics as the harness would write them (lists parallel to m.labels)."""
    truths = shape_truth(p, m.labels, m.full_n)
    g = rng.gen(seed, "n", runkey, p.platform, p.suite, p.kernel) if noise else None

    def nz(sd):
        return math.exp(g.normal(0.0, sd)) if noise and sd > 0 else 1.0

    sig_k = 0.0035 if m.fixed_seed else 0.010
    if p.suite == "linattn":
        sig_k = 0.002
    k_state = nz(sig_k)
    n_h, n_b, n_t, n_c, n_d = nz(p.sig_h), nz(p.sig_b), nz(p.sig_t), nz(p.sig_c), nz(p.sig_d)
    n_ct = nz(p.sig_ct)
    ovh = 1.0 if m.cudagraph else 0.0
    res = {"helion_speedup": [], "triton_speedup": [], "torch_compile_speedup": [],
           "helion_accuracy": [], "triton_accuracy": [], "torch_compile_accuracy": [],
           "helion_latency_ms": [], "helion_compile_time_s": []}
    for s in truths:
        sh = 0.35 if noise else 0.0
        t_b = s.t_b * m.baseline_shift * f.baseline * f.machine * n_b * nz(p.sig_b * sh)
        t_h_dev = s.t_b / s.sp_h * m.helion_shift * f.helion * f.machine * k_state
        t_h_dev *= f.extra.get("shapes", {}).get(s.label, 1.0)
        a_s = s.autotune_s * (1.25 if m.subprocess else 1.0)
        if m.budget_s and a_s > m.budget_s:
            t_h_dev *= 1.05 + 0.08 * min(1.0, a_s / m.budget_s - 1.0)
            a_s = float(m.budget_s) + 40.0
        t_h = t_h_dev * f.cg_only * n_h * nz(p.sig_h * sh)
        t_t = s.t_b / s.sp_t * f.triton * f.machine * n_t * nz(p.sig_t * sh)
        t_c = s.t_b / s.sp_c * m.tc_shift * f.tc * f.machine * n_c * nz(p.sig_c * sh)
        if not m.cudagraph:
            lb = 0.0045 * p.nlaunch_b
            t_b, t_h = t_b + lb, t_h + p.launch_h + f.extra.get("launch_add", 0.0)
            t_t, t_c = t_t + 0.009, t_c + 0.028 + lb * 0.3
        lat = t_h_dev * p.db_bias * f.db_only * n_d * nz(p.sig_d * sh) + max(
            p.db_ovh + f.extra.get("db_add", 0.0), 0.0005)
        if p.suite == "linattn":   # one timer: speedup = fla_ms / helion_ms, latency = helion_ms
            lat = t_h
        ct = (p.compile_hit_s if m.two_pass else a_s + p.compile_hit_s) * f.compile * n_ct * nz(0.05 * sh)
        failed = f.fail or s.label in f.shape_fail
        acc = 0.0 if failed or s.label in f.acc_fail else 1.0
        res["helion_speedup"].append(0.0 if failed else round(t_b / t_h, 3))
        res["triton_speedup"].append(round(t_b / t_t, 3) if not f.fail else 0.0)
        res["torch_compile_speedup"].append(round(t_b / t_c, 3) if not f.fail else 0.0)
        res["helion_accuracy"].append(acc)
        res["triton_accuracy"].append(0.0 if f.fail else 1.0)
        res["torch_compile_accuracy"].append(0.0 if f.fail else 1.0)
        res["helion_latency_ms"].append(0.0 if failed else round(lat, 4))
        res["helion_compile_time_s"].append(0.0 if failed else round(ct, 2))
    if not m.latency:
        res.pop("helion_latency_ms")
    if not m.compile_time:
        res.pop("helion_compile_time_s")
    if not m.has_triton:
        res.pop("triton_speedup"), res.pop("triton_accuracy")
    if not m.has_tc:
        res.pop("torch_compile_speedup"), res.pop("torch_compile_accuracy")
    return res


def geomean(values) -> float:
    pos = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in pos) / len(pos)) if pos else 0.0


# ---- pretuned ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PretunedProfile:
    kernel: str
    alias: str
    labels: list
    t_h: list
    base: dict           # name -> per-shape times
    sig: float
    l2: list             # cold-L2 refill cost per shape (ms), paid by every impl when L2 is cleared


@functools.lru_cache(maxsize=None)
def pretuned_profile(alias: str, kernel: str, baselines: tuple) -> PretunedProfile:
    k = ("pprof", alias, kernel)
    n = int(rng.uniform(6, 16, *k, "n"))
    labels = [f"({2 ** (7 + i // 2)}, {1024 * (1 + i % 2)})" for i in range(n)]
    t0 = 0.004 * math.exp(rng.uniform(-0.3, 1.2, *k, "t0"))
    spd = math.exp(rng.uniform(-0.1, 0.55, *k, "sp"))
    slope = rng.uniform(-0.5, 0.5, *k, "sl")
    t_torch = [t0 * 2 ** (0.6 * i) for i in range(n)]
    t_h = [t / (spd * math.exp(slope * (i / max(n - 1, 1) - 0.5) + rng.normal(0.06, *k, i)))
           for i, t in enumerate(t_torch)]
    base = {}
    for b in sorted(set(baselines) | {"torch", "torch_compile", "vllm", "cutlass"}):
        rel = {"torch": 1.0, "torch_compile": math.exp(rng.uniform(-0.5, -0.05, *k, b)),
               "vllm": math.exp(rng.uniform(-0.55, 0.1, *k, b)),
               "cutlass": math.exp(rng.uniform(-0.35, 0.05, *k, b))}[b]
        base[b] = [t * rel * math.exp(rng.normal(0.05, *k, b, i)) for i, t in enumerate(t_torch)]
    l2 = [0.0025 * math.exp(rng.uniform(-0.3, 0.3, *k, "l2")) for _ in range(n)]
    return PretunedProfile(kernel, alias, labels, t_h, base, rng.uniform(0.008, 0.018, *k, "sig"), l2)


def measure_pretuned(seed: int, runkey: str, pp: PretunedProfile, baselines: tuple, cudagraph: bool,
                     l2_clear: bool, f: Factors, base_shift: dict, noise: bool = True,
                     noise_scale: float = 1.0) -> dict:
    g = rng.gen(seed, "pn", runkey, pp.alias, pp.kernel) if noise else None

    def nz(sd):
        return math.exp(g.normal(0.0, sd * noise_scale)) if noise else 1.0

    n_h = nz(pp.sig)
    n_b = {b: nz(pp.sig) for b in baselines}
    per_base = {b: [] for b in baselines}
    best = []
    for i in range(len(pp.labels)):
        extra = pp.l2[i] if (cudagraph and l2_clear) else 0.0
        launch = 0.0 if cudagraph else 0.006
        th = pp.t_h[i] * f.helion * f.machine * n_h * nz(pp.sig * 0.3) + extra + launch
        times = {}
        for b in baselines:
            times[b] = (pp.base[b][i] * base_shift.get(b, 1.0) * f.baseline * f.machine * n_b[b]
                        * nz(pp.sig * 0.3) + extra + launch * (2.0 if b == "torch" else 1.0))
            per_base[b].append(times[b] / th)
        best.append(min(times.values()) / th)
    out = {"helion_wins": sum(1 for s in best if s > 1.0), "total": len(best),
           "geomean": round(geomean(best), 4), "best_speedup": round(max(best), 4)}
    if len(baselines) > 1:
        out["baselines"] = {b: {"wins": sum(1 for s in v if s > 1.0), "total": len(v),
                                "geomean": round(geomean(v), 4), "best_speedup": round(max(v), 4)}
                            for b, v in per_base.items()}
    return out
