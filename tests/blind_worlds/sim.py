"""Per-night matrix (parsed from the real files at each nightly's sha) and the timing model."""
from __future__ import annotations

import functools
import math
import random
import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from . import repo as R

DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi350x": "AMD Instinct MI350X", "mi325x": "AMD Instinct MI325X", "tpu": "TPU v7x"}
# nightly run_* input -> (alias, suite)
RUN_FLAG = {"run_h100": ("h100", "tritonbench"), "run_b200": ("b200", "tritonbench"),
            "run_mi350x": ("mi350x", "tritonbench"), "run_mi325x": ("mi325x", "tritonbench"),
            "run_b200_cute": ("b200_cute", "tritonbench"), "run_tpu": ("tpu", "tpu"),
            "run_b200_linattn": ("b200", "linattn"), "run_h100_linattn": ("h100", "linattn")}
KERNEL_INPUT = {"tritonbench": "kernels", "linattn": "kernels_linattn", "tpu": "kernels_tpu"}
RUNAWAY = ("gemm", "flash_attention", "int4_gemm", "grouped_gemm", "mamba2_chunk_scan",
           "mamba2_chunk_state", "gdn_fwd_h", "fp8_gemm")
PRETUNED_HW = {"sm90": "h100", "sm100": "b200"}


def h32(*parts) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode()) & 0x7FFFFFFF


class _Rng:
    """Small deterministic generator (stdlib Mersenne Twister) with the numpy-like calls used here."""

    __slots__ = ("r",)

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def normal(self, mu=0.0, sigma=1.0):
        return self.r.gauss(mu, sigma)

    def uniform(self, a=0.0, b=1.0):
        return self.r.uniform(a, b)

    def random(self):
        return self.r.random()

    def integers(self, lo, hi=None):
        if hi is None:
            lo, hi = 0, lo
        return self.r.randrange(int(lo), int(hi))

    def choice(self, seq, size=None, replace=True):
        seq = list(range(seq)) if isinstance(seq, int) else list(seq)
        if size is None:
            return seq[self.r.randrange(len(seq))]
        if replace:
            return [seq[self.r.randrange(len(seq))] for _ in range(size)]
        return self.r.sample(seq, size)

    def shuffle(self, xs):
        self.r.shuffle(xs)


def rng_for(seed: int, *parts) -> _Rng:
    return _Rng(seed * 1_000_003 + h32(*parts))


@dataclass
class SeriesCfg:
    suite: str  # tritonbench | linattn | tpu | pretuned
    shapes: list[str]
    cudagraph: bool = True
    baseline_label: str | None = None
    baselines: tuple[str, ...] = ()
    compile_time: bool = True
    capped: bool = False


@dataclass
class Matrix:
    series: dict[tuple[str, str], SeriesCfg] = field(default_factory=dict)
    torch_pin: str = ""
    aliases: set[str] = field(default_factory=set)


@functools.lru_cache(maxsize=None)
def _avail_shapes(seed: int, kernel: str) -> tuple:
    g = rng_for(seed, "avail", kernel)
    n = int(g.integers(8, 17))
    if kernel.endswith("gemm") or "attention" in kernel:
        ms = sorted(set(int(2 ** g.integers(7, 14)) for _ in range(n * 2)))
        out = [f"({m}, {int(2 ** g.integers(9, 14))}, {int(2 ** g.integers(9, 14))})" for m in ms]
    else:
        out = []
        for i in range(n * 2):
            out.append(f"torch.Size([{int(2 ** g.integers(8, 16))}, {int(2 ** g.integers(6, 14))}])")
        out = sorted(set(out))
    while len(out) < n:
        out.append(f"torch.Size([{len(out) * 1024 + 512}])")
    return tuple(out[:n])


def _equally_spaced(items, k: int) -> list[str]:
    items = list(items)
    if k >= len(items):
        return list(items)
    if k <= 1:
        return items[:1]
    idx = sorted({round(i * (len(items) - 1) / (k - 1)) for i in range(k)})
    return [items[i] for i in idx]


class MatrixReader:
    def __init__(self, blobs: R.Blobs, seed: int):
        self.b = blobs
        self.seed = seed
        self._cache: dict[str, Matrix] = {}
        self._pcache: dict[str, Matrix] = {}

    def dashboard(self, sha: str) -> Matrix:
        if sha in self._cache:
            return self._cache[sha]
        rd = lambda p: self.b.read(sha, p) or ""
        disp, night, bench = rd(".github/workflows/benchmark_dispatch.yml"), rd(".github/workflows/benchmark_nightly.yml"), rd(".github/workflows/benchmark.yml")
        defaults = R.dispatch_kernel_defaults(disp)
        aliases = set(re.findall(r"alias:\s*(\S+)", disp))
        flags = R.nightly_flags(night)
        runpy = rd("benchmarks/run.py")
        km = R.kernel_mappings(runpy)
        max_inputs = R.module_constant(runpy, "MAX_NUM_INPUTS") or 20
        mi350_limit = "limit_mi350_inputs" in runpy
        compile_time = "--measure-compile-time" in bench
        budget = "HELION_AUTOTUNE_BUDGET_SECONDS" in bench
        pin = re.search(r'torch==([0-9][0-9.*]*)', bench)
        m = Matrix(torch_pin=pin.group(1) if pin else "nightly", aliases=aliases)
        tpu_map = R.kernel_mappings(rd("benchmarks/run_tpu.py"))
        la = rd("benchmarks/run_linattn.py")
        la_shapes = [s[0] for s in (R.module_constant(la, "SHAPES") or [])]
        la_var_shapes = [s[0] for s in (R.module_constant(la, "VARLEN_SHAPES") or [])]
        fwd_only = set((R.module_constant(la, "FUSED_PREAMBLE_VARIANTS") or {}).keys()) | set((R.module_constant(la, "VARLEN_VARIANTS") or {}).keys())
        varlen = set((R.module_constant(la, "VARLEN_VARIANTS") or {}).keys())
        for flag in sorted(flags):
            if flag not in RUN_FLAG:
                continue
            alias, suite = RUN_FLAG[flag]
            if alias not in aliases:
                continue
            if suite == "tritonbench":
                kern = defaults.get("kernels_cute" if alias == "b200_cute" else "kernels", [])
                for k in kern:
                    opts = km.get(k)
                    if opts is None:
                        continue
                    n = min(int(opts.get("num_inputs", max_inputs)), int(max_inputs))
                    shapes = _equally_spaced(_avail_shapes(self.seed, k), n)
                    if alias == "mi350x" and mi350_limit and k.startswith("gdn"):
                        shapes = shapes[:2]
                    cg = "--cudagraph" not in (opts.get("remove_flags") or []) and alias != "tpu"
                    m.series[(alias, k)] = SeriesCfg("tritonbench", shapes, cg, None, compile_time=compile_time,
                                                     capped=budget and k in RUNAWAY)
            elif suite == "linattn":
                if not la_shapes:
                    continue
                for v in defaults.get("kernels_linattn", []):
                    shapes = la_var_shapes if v in varlen else la_shapes
                    if not shapes:
                        continue
                    m.series[(alias, v)] = SeriesCfg("linattn", list(shapes), True, "FLA", compile_time=False)
                    if v not in fwd_only:
                        m.series[(alias, f"{v}-bwd")] = SeriesCfg("linattn", list(shapes), True, "FLA", compile_time=False)
            elif suite == "tpu":
                ks = defaults.get("kernels_tpu", [])
                if ks == ["all"]:
                    ks = list(tpu_map)
                ks = [k for k in ks if k in tpu_map] + [k for k in defaults.get("kernels_tpu_bridge", []) if k in km]
                tpu_ct = "compile" in rd("benchmarks/run_tpu.py").lower()
                for k in ks:
                    g = rng_for(self.seed, "tpushapes", k)
                    shapes = [f"({int(2 ** g.integers(9, 14))}, {int(2 ** g.integers(9, 14))})" for _ in range(int(g.integers(3, 7)))]
                    m.series[("tpu", k)] = SeriesCfg("tpu", sorted(set(shapes)), False, None, compile_time=tpu_ct)
        self._cache[sha] = m
        return m

    def pretuned(self, sha: str) -> Matrix:
        if sha in self._pcache:
            return self._pcache[sha]
        m = Matrix()
        night = self.b.read(sha, ".github/workflows/benchmark_pretuned_nightly.yml")
        disp = self.b.read(sha, ".github/workflows/benchmark_pretuned_dispatch.yml") or ""
        runpy = self.b.read(sha, "pretuned_kernels/run.py")
        if night and runpy:
            m.aliases = set(re.findall(r"alias:\s*(\S+)", disp))
            kernels = R.module_constant(runpy, "KERNELS") or []
            for k in kernels:
                files = self.b.ls(sha, f"pretuned_kernels/{k}")
                hw = {PRETUNED_HW[s] for f in files for s in re.findall(r"_(sm\d+)\.py$", f) if s in PRETUNED_HW}
                bases, cg = R.pretuned_kernel_info(self.b.read(sha, f"pretuned_kernels/{k}/{k}.py"))
                for plat in sorted(hw & m.aliases):
                    g = rng_for(self.seed, "pshapes", k)
                    shapes = [f"s{i}" for i in range(int(g.integers(4, 11)))]
                    m.series[(plat, k)] = SeriesCfg("pretuned", shapes, cg, None, tuple(bases))
        self._pcache[sha] = m
        return m


# ----------------------------------------------------------------------------- timing model
FAMILY_RATIO = {  # (helion vs eager, triton vs eager, compile vs eager) typical
    "gemm": (1.05, 1.0, 0.98), "attention": (1.1, 1.05, 0.9), "norm": (1.6, 1.4, 1.3),
    "elementwise": (1.05, 1.02, 1.0), "loss": (2.2, 1.8, 1.7), "ssm": (1.3, 1.25, 0.8), "linattn": (1.15, 0, 0),
}


def family(kernel: str) -> str:
    k = kernel.replace("-bwd", "")
    if "attention" in k or k in ("flash_attention", "fp8_attention"):
        return "attention"
    if "gemm" in k or k in ("bmm", "addmm", "matmul"):
        return "gemm"
    if "norm" in k or k in ("softmax", "welford"):
        return "norm"
    if k in ("cross_entropy", "jsd", "kl_div", "fused_linear_jsd", "grpo_loss"):
        return "loss"
    if k.startswith("mamba") or k.startswith("gdn"):
        return "ssm"
    if any(t in k for t in ("gla", "linear_attn", "retention", "delta_rule", "kda")):
        return "linattn"
    return "elementwise"


@dataclass
class ShapeParams:
    base: float  # eager/baseline time under cudagraph (ms)
    r_h: float
    r_t: float
    r_c: float
    comp: float


class Model:
    """Static per-series parameters (deterministic per world seed)."""

    def __init__(self, seed: int):
        self.seed = seed
        self._p: dict = {}
        self.sigma: dict = {}

    def scatter(self, src: str, plat: str, kernel: str) -> float:
        key = (src, plat, kernel)
        if key not in self.sigma:
            g = rng_for(self.seed, "sigma", *key)
            self.sigma[key] = math.exp(g.uniform(math.log(0.005), math.log(0.03)))
        return self.sigma[key]

    def shape(self, src: str, plat: str, kernel: str, shape: str) -> ShapeParams:
        key = (src, plat, kernel, shape)
        if key in self._p:
            return self._p[key]
        g = rng_for(self.seed, "shape", *key)
        fam = family(kernel)
        rh, rt, rc = FAMILY_RATIO[fam]
        plat_adj = {"b200_cute": 0.85, "mi350x": 0.9, "tpu": 0.8}.get(plat, 1.0)
        base = float(math.exp(g.uniform(math.log(0.01), math.log(2.5))))
        if kernel.endswith("-bwd"):
            base *= 2.3
        comp = float(math.exp(g.uniform(math.log(20), math.log(400))))
        if kernel in RUNAWAY:
            comp = float(math.exp(g.uniform(math.log(4000), math.log(14000))))
        p = ShapeParams(base, rh * plat_adj * float(math.exp(g.normal(0, 0.15))),
                        (rt or 1.0) * float(math.exp(g.normal(0, 0.1))),
                        (rc or 1.0) * float(math.exp(g.normal(0, 0.12))), comp)
        self._p[key] = p
        return p


def geo(vals):
    v = [x for x in vals if x and x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else 0.0
