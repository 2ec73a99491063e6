"""Per-shape time simulation. Values follow from (series parameters, the state read from the
files at each night's sha, explicit effects); noise is added on top."""
from __future__ import annotations

import math
import zlib

import numpy as np

HEAVY = {"gemm", "grouped_gemm", "int4_gemm", "flash_attention", "fp8_gemm", "fp8_attention",
         "bmm", "gdn_fwd_h", "mamba2_chunk_scan", "mamba2_chunk_state", "addmm", "blackwell_attentions"}


def rng_for(*key) -> np.random.Generator:
    h = zlib.crc32(repr(key).encode())
    h2 = zlib.crc32(repr(key[::-1]).encode())
    return np.random.default_rng([h, h2])


def u(*key) -> float:
    return float(rng_for(*key).random())


def strong_or_flat(key, p_strong, lo=0.07, hi=0.14, sign=None):
    """Multiplicative factor: flat (|x|<=1%) or strong (lo..hi) -- never in the ambiguous middle."""
    r = rng_for(*key)
    if r.random() < p_strong:
        m = r.uniform(lo, hi)
        s = sign if sign is not None else (1 if r.random() < 0.5 else -1)
        return 1.0 + s * m
    return 1.0 + r.uniform(-0.008, 0.008)


class SeriesParams:
    def __init__(self, seed, src, alias, kernel, lane):
        r = rng_for(seed, "params", src, alias, kernel)
        self.lane = lane
        self.kernel = kernel
        self.nuni = 24
        heavy = kernel.split("-")[0] in HEAVY
        self.heavy = heavy
        self.default_n = int(r.integers(4, 9))
        base0 = r.uniform(0.004, 0.05) if not heavy else r.uniform(0.05, 0.6)
        growth = r.uniform(1.25, 1.7)
        self.base = base0 * growth ** np.arange(self.nuni)          # baseline ms per shape
        mu = math.log(r.uniform(0.7, 2.2))
        slope = r.uniform(0.05, 0.09) * (1 if r.random() < 0.6 else -1)
        self.logs = mu + slope * (np.arange(self.nuni) - 2.0) + r.normal(0, 0.04, self.nuni)
        self.tri = np.exp(math.log(r.uniform(0.8, 1.6)) + r.normal(0, 0.05, self.nuni))
        self.tc = np.exp(math.log(r.uniform(0.8, 1.5)) + r.normal(0, 0.05, self.nuni))
        self.lat_ratio = r.uniform(1.02, 1.12)        # do_bench latency vs cudagraph time
        self.sigma = r.uniform(0.005, 0.022)
        if r.random() < 0.12:
            self.sigma = r.uniform(0.025, 0.04)
        self.compile_s = r.uniform(3, 40) if not heavy else r.uniform(30, 400)
        # speedup-timer penalty when the kernel is not CUDA-graph timed (launch overhead)
        small = not heavy
        self.nocg = {"h": 1 + (r.uniform(0.10, 0.25) if small else r.uniform(0.07, 0.12)),
                     "t": 1 + r.uniform(0.03, 0.08), "c": 1 + r.uniform(0.05, 0.12), "b": 1 + r.uniform(0.02, 0.05)}
        self.shape_labels = [self._label(r, i) for i in range(self.nuni)]

    def _label(self, r, i):
        k = self.kernel
        if "attention" in k or k.startswith("gdn") or k.startswith("mamba"):
            return f"(4, 16, {512 * (i + 1)}, 128)"
        if "gemm" in k or k in ("bmm", "addmm"):
            return f"({256 * (i + 2)}, {256 * (i + 2)}, {512 * (i + 1)})"
        return f"({4096}, {256 * (i + 1)})"


class PretunedParams:
    def __init__(self, seed, alias, kernel):
        r = rng_for(seed, "pparams", alias, kernel)
        self.n = int(r.integers(6, 14))
        self.h = r.uniform(0.005, 0.2) * 1.5 ** np.arange(self.n) * np.exp(r.normal(0, 0.05, self.n))
        self.sigma = r.uniform(0.005, 0.02)
        self.bl = {}
        mu = r.uniform(0.8, 2.0)
        self.torch = self.h * mu * np.exp(r.normal(0, 0.08, self.n))
        self.nocg = 1 + r.uniform(0.08, 0.2)

    def baseline(self, seed, alias, kernel, name):
        if name == "torch":
            return self.torch
        if name not in self.bl:
            r = rng_for(seed, "pbl", alias, kernel, name)
            # fastest-baseline headline: a new baseline is either clearly faster or clearly slower
            if r.random() < 0.55:
                f = r.uniform(0.62, 0.90)
            else:
                f = r.uniform(1.08, 1.4)
            self.bl[name] = self.torch * f * np.exp(r.normal(0, 0.03, self.n))
        return self.bl[name]
