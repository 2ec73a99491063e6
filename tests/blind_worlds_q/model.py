"""Per-shape timing model of world Q.

Every quantity is a TIME first: per shape a baseline time, a Helion kernel time, a Triton time and
a torch.compile time (the speedup timer, under CUDA graphs unless the kernel drops `--cudagraph`),
Helion's latency under the second timer (triton do_bench, launch overhead included), and a compile
time. Speedups are ratios of those times, so a slow baseline timer moves all three speedups
together, a slow Helion timer moves only Helion's, and latency follows Helion's kernel time, not
the speedup timer. Random draws come from counter-based generators keyed by (seed, what, when), so
a world is the same whichever nights are built.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field

import numpy as np


def h64(*key) -> int:
    return int.from_bytes(hashlib.blake2b(repr(key).encode(), digest_size=8).digest(), "little")


def rng(*key) -> np.random.Generator:
    return np.random.default_rng(h64(*key))


def u(*key) -> float:
    """A uniform [0, 1) number fixed by its key."""
    return (h64(*key) >> 11) / float(1 << 53)


def geo(values) -> float:
    pos = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in pos) / len(pos)) if pos else 0.0


# ----------------------------------------------------------------------------- platforms
DEVICE = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi325x": "AMD Instinct MI325X gfx942:sramecc+:xnack-",
          "mi350x": "AMD Instinct MI350X gfx950:sramecc+:xnack-", "tpu": "TPU v7"}
PRE_DEVICE = {"h100": ("NVIDIA H100 80GB HBM3", "sm90"), "b200": ("NVIDIA B200", "sm100")}
# timer scatter (one sigma, per timer per shape) by platform
SCATTER = {"h100": 0.007, "b200": 0.011, "b200_cute": 0.016, "mi325x": 0.02, "mi350x": 0.024, "tpu": 0.016}
PRE_SCATTER = {"h100": 0.006, "b200": 0.009}


# ----------------------------------------------------------------------------- shapes
def family(kernel: str) -> str:
    k = kernel.removesuffix("-bwd")
    if any(s in k for s in ("attention", "attn", "gla", "retention", "delta_rule", "kda")):
        return "attn"
    if any(s in k for s in ("gemm", "matmul", "addmm", "bmm", "mm")):
        return "gemm"
    if any(s in k for s in ("mamba", "gdn")):
        return "ssm"
    return "row"


def master_shapes(kernel: str, fam: str) -> list[str]:
    """The operator's full input list (what `--num-inputs` samples from), as tritonbench labels."""
    g = rng("shapes", kernel.removesuffix("-bwd"))
    if fam == "gemm":
        n = int(g.integers(10, 17))
        out = []
        for i in range(n):
            m = 256 * 2 ** (i % 6)
            out.append(f"({m}, {int(g.choice([1024, 2048, 4096, 8192]))}, {int(g.choice([512, 1024, 4096, 8192]))})")
        return list(dict.fromkeys(out)) or ["(1024, 1024, 1024)"]
    if fam == "attn":
        n = int(g.integers(8, 13))
        return [f"(4, 32, {512 * 2 ** (i // 2)}, {64 if i % 2 == 0 else 128})" for i in range(n)]
    if fam == "ssm":
        n = int(g.integers(6, 11))
        return [f"(8, {256 * (i + 1)}, 16, 64)" for i in range(n)]
    n = int(g.integers(10, 20))
    return [f"(4096, {128 * (i + 1) * (2 if i > 6 else 1)})" for i in range(n)]


def sample(master: list[str], n: int | None, mode: str) -> list[str]:
    if not n or n >= len(master):
        return list(master)
    if mode == "equally-spaced-k" and n > 1:
        idx = sorted({round(i * (len(master) - 1) / (n - 1)) for i in range(n)})
        return [master[i] for i in idx]
    return list(master[:n])


def shape_size(label: str) -> float:
    nums = [int(x) for x in re.findall(r"\d+", label)] or [1024]
    v = 1.0
    for x in nums:
        v *= max(x, 1)
    return v


# ----------------------------------------------------------------------------- dashboard series
@dataclass
class ShapeParams:
    base_ms: float
    sp_h: float
    sp_t: float
    sp_c: float
    compile_s: float
    weight: float  # how strongly a planted effect reaches this shape (per-shape spread)


@dataclass
class DashSeries:
    plat: str
    kernel: str
    suite: str
    seed: int
    fam: str = ""
    master: list = field(default_factory=list)
    sigma: float = 0.01
    noisy_helion: float = 0.0  # extra Helion-only scatter (unseeded autotune picks a different config)
    ovh: dict = field(default_factory=dict)
    _shapes: dict = field(default_factory=dict)

    def __post_init__(self):
        self.fam = family(self.kernel)
        self.master = master_shapes(self.kernel, self.fam)
        g = rng(self.seed, "series", self.plat, self.kernel)
        self.sigma = SCATTER.get(self.plat, 0.015) * float(np.exp(g.normal(0, 0.25)))
        self.mu_h = float(g.normal(0.12, 0.3)) + (0.05 if self.plat.startswith("b200") else 0.0)
        self.mu_t = float(g.normal(0.0, 0.22))
        self.mu_c = float(g.normal(0.05, 0.2))
        bwd = 2.0 if self.kernel.endswith("-bwd") else 1.0
        self.ovh = {"h": 0.012 * bwd * float(np.exp(g.normal(0, 0.25))),
                    "b": 0.006 * bwd * float(np.exp(g.normal(0, 0.35))),
                    "t": 0.007 * bwd * float(np.exp(g.normal(0, 0.25))),
                    "c": 0.010 * bwd * float(np.exp(g.normal(0, 0.3)))}
        self.comp_mu = math.log({"gemm": 220.0, "attn": 300.0, "ssm": 160.0, "row": 70.0}[self.fam]) + \
            float(g.normal(0, 0.4))
        self.noisy_helion = 0.02 * float(g.random()) if g.random() < 0.3 and self.plat != "tpu" else 0.0

    def shape(self, label: str) -> ShapeParams:
        p = self._shapes.get(label)
        if p is None:
            g = rng(self.seed, "shape", self.plat, self.kernel, label)
            size = shape_size(label)
            scale = {"gemm": 2.5e-10, "attn": 6e-10, "ssm": 1.5e-8, "row": 2.2e-8}[self.fam]
            base = 0.004 + scale * size * float(np.exp(g.normal(0, 0.2)))
            base *= 2.2 if self.kernel.endswith("-bwd") else 1.0
            p = ShapeParams(base, float(np.exp(self.mu_h + g.normal(0, 0.14))),
                            float(np.exp(self.mu_t + g.normal(0, 0.12))),
                            float(np.exp(self.mu_c + g.normal(0, 0.12))),
                            float(np.exp(self.comp_mu + g.normal(0, 0.35))),
                            float(np.clip(g.normal(1.0, 0.2), 0.55, 1.45)))
            self._shapes[label] = p
        return p


# ----------------------------------------------------------------------------- pretuned series
@dataclass
class PreSeries:
    plat: str
    kernel: str
    seed: int

    def __post_init__(self):
        g = rng(self.seed, "pseries", self.plat, self.kernel)
        self.sigma = PRE_SCATTER.get(self.plat, 0.01) * float(np.exp(g.normal(0, 0.25)))
        self.mu = float(g.normal(0.15, 0.25))
        self._shapes = {}
        self._base = {}

    def helion_ms(self, j: int) -> float:
        if j not in self._shapes:
            g = rng(self.seed, "pshape", self.plat, self.kernel, j)
            self._shapes[j] = (0.003 + 0.002 * 1.45 ** j * float(np.exp(g.normal(0, 0.3))),
                               float(np.clip(g.normal(1.0, 0.2), 0.55, 1.45)))
        return self._shapes[j][0]

    def weight(self, j: int) -> float:
        self.helion_ms(j)
        return self._shapes[j][1]

    def ratio(self, name: str, j: int) -> float:
        """Baseline time / Helion time for baseline ``name`` at shape ``j`` (reference conditions)."""
        key = (name, j)
        if key not in self._base:
            g = rng(self.seed, "pbase", self.plat, self.kernel, name)
            mu = self.mu + {"torch": 0.25, "eager": 0.3, "torch_compile": -0.02, "vllm": -0.08,
                            "cutlass": -0.12}.get(name, 0.0) + float(g.normal(0, 0.1))
            gj = rng(self.seed, "pbase", self.plat, self.kernel, name, j)
            self._base[key] = float(np.exp(mu + gj.normal(0, 0.12)))
        return self._base[key]
