"""Per-shape timing model: baseline, triton, torch.compile and Helion timed separately."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

COMPONENTS = ("base", "helion", "triton", "tc", "lat", "spd", "compile")
DEVICE = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7"}
LAUNCH_MS = 0.0065   # CPU launch overhead a non-cudagraph timer sees
DOBENCH_MS = 0.0025  # do_bench latency floor


def h64(*parts) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


def rng_for(*parts) -> np.random.Generator:
    return np.random.default_rng(h64(*parts))


def geo(xs) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


@dataclass
class Effect:
    """Multiplicative factors on timing components for some series over nights [start, end)."""
    start: int
    end: int | None
    members: frozenset
    f: dict
    tag: str = ""

    def on(self, n: int, key) -> bool:
        return key in self.members and n >= self.start and (self.end is None or n < self.end)


@dataclass
class SeriesModel:
    plat: str
    kernel: str
    seed: int
    scatter: float = 0.01
    shapes: list = field(default_factory=list)

    def __post_init__(self):
        r = rng_for("series", self.seed, self.plat, self.kernel)
        self.level = float(np.exp(r.normal(0.12 if self.plat != "tpu" else -0.2, 0.35)))
        self.scatter = float(r.uniform(0.005, 0.02))
        self.h_sens = float(r.uniform(0.8, 1.25))   # how Helion time follows a platform factor
        self.default_n = int(r.integers(4, 13))
        u = 24
        self.base_ms = np.exp(r.uniform(math.log(0.008), math.log(3.0), u))
        self.hr = np.exp(r.normal(0, 0.15, u))
        self.tr = np.exp(r.normal(0.0, 0.2, u)) * float(np.exp(r.normal(0, 0.15)))
        self.tc = np.exp(r.normal(0.05, 0.2, u)) * float(np.exp(r.normal(0, 0.15)))
        self.comp = np.exp(r.uniform(math.log(4), math.log(120), u))
        dims = r.integers(7, 15, (u, 2))
        self.labels = [f"[{2 ** int(a)}, {2 ** int(b)}]" for a, b in dims]

    def baseline_factor(self, name: str | None) -> np.ndarray:
        if not name:
            return np.ones(24)
        r = rng_for("baseline", self.plat, self.kernel, name)
        return float(np.exp(r.normal(0, 0.18))) * np.exp(r.normal(0, 0.05, 24))

    def times(self, idx, factors: dict, cudagraph: bool, baseline: str | None, noise: dict | None):
        """Per-shape (base, helion, triton, tc) speedup-timer times, do_bench latency, compile time."""
        bf = self.baseline_factor(baseline)[idx]
        base = self.base_ms[idx] * bf * factors["base"]
        hel = self.base_ms[idx] / (self.level * self.hr[idx]) * factors["helion"]
        tri = self.base_ms[idx] * bf / self.tr[idx] * factors["triton"]
        tcc = self.base_ms[idx] * bf / self.tc[idx] * factors["tc"]
        lat = hel * factors["lat"] + DOBENCH_MS
        hel_s = hel * factors["spd"]
        comp = self.comp[idx] * factors["compile"]
        if not cudagraph:
            base, hel_s, tri, tcc = (x + LAUNCH_MS for x in (base, hel_s, tri, tcc))
        if noise is not None:
            base = base * noise["base"]
            hel_s = hel_s * noise["helion"]
            tri = tri * noise["triton"]
            tcc = tcc * noise["tc"]
            lat = lat * noise["lat"]
            comp = comp * noise["compile"]
        return base, hel_s, tri, tcc, lat, comp


@dataclass
class PretunedModel:
    hw: str
    kernel: str
    seed: int

    def __post_init__(self):
        r = rng_for("pseries", self.seed, self.hw, self.kernel)
        self.n = int(r.integers(6, 15))
        self.scatter = float(r.uniform(0.006, 0.018))
        self.level = float(np.exp(r.normal(0.15, 0.3)))
        self.hel_ms = np.exp(r.uniform(math.log(0.005), math.log(1.5), self.n))
        self.hr = np.exp(r.normal(0, 0.12, self.n))

    def base_ratio(self, name: str) -> np.ndarray:
        r = rng_for("pbase", self.hw, self.kernel, name)
        mean = {"torch": 0.25, "torch_compile": 0.05, "vllm": -0.05, "cutlass": -0.1}.get(name, float(r.normal(0, 0.2)))
        return np.exp(mean + r.normal(0, 0.15, self.n))

    def record(self, factors: dict, baselines: tuple, cudagraph: bool, noise_rng) -> dict:
        names = baselines or ("reference",)
        hel = self.hel_ms / self.hr * factors["helion"]
        over = 0.0 if cudagraph else LAUNCH_MS
        sc = self.scatter
        if noise_rng is not None:
            hel = hel * np.exp(noise_rng.normal(0, sc, self.n)) * factors.get("hnoise", 1.0)
        hel = hel + over
        per = {}
        for b in names:
            t = self.hel_ms * self.level * self.base_ratio(b) * factors["base"]
            if noise_rng is not None:
                t = t * np.exp(noise_rng.normal(0, sc, self.n))
            per[b] = t + over
        fastest = np.min(np.stack([per[b] for b in names]), axis=0)
        sp = fastest / hel
        rec = {"helion_wins": int((sp > 1.0).sum()), "total": int(self.n), "geomean": float(geo(sp)),
               "best_speedup": float(sp.max())}
        if len(names) > 1:
            rec["baselines"] = {}
            for b in names:
                s = per[b] / hel
                rec["baselines"][b] = {"wins": int((s > 1.0).sum()), "total": int(self.n),
                                       "geomean": round(float(geo(s)), 4), "best_speedup": round(float(s.max()), 4)}
        return rec
