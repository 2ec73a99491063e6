"""The numbers of a world: one run timeline and, per series, what each timer would measure.

Speedups (cudagraph timer) and latency (do_bench timer) are simulated from separate
quantities, the way Helion's harness produces them, so each cause leaves its real tells:
a real regression moves Helion's speedup and latency together; a baseline or timer change
moves all three speedups and not latency; a hardware change moves latency and many kernels
of one platform at once; noise reverts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta, timezone

import numpy as np

from tests.worlds.catalog import NO_CUDAGRAPH, PLATFORM_NAMES, PRETUNED_BASELINES, PRETUNED_ROWS
from tests.worlds.spec import EventSpec, WorldSpec


@dataclass
class TimelineRun:
    run_id: str
    date: datetime
    branch: str
    is_nightly: bool
    night: int  # the nightly index this run belongs to (manual runs: the last nightly before)
    kind: str  # nightly | manual | side
    sha: str = ""
    full_sha: str = ""
    platforms: tuple[str, ...] = ()  # manual runs cover one platform's subset
    kernels: frozenset[str] = frozenset()
    wild: float = 1.0  # manual/side runs measure differently (other settings, shared boxes)

    @property
    def is_trend(self) -> bool:
        return self.is_nightly and self.branch == "main"


@dataclass
class DashSeries:
    platform_short: str
    kernel: str
    baseline_label: str | None
    hs: np.ndarray  # helion speedup per night (linear)
    ts: np.ndarray
    cs: np.ndarray
    lat: np.ndarray  # helion latency ms (do_bench)
    ct: np.ndarray  # compile time s
    alive: np.ndarray  # bool per night: the kernel ran that night
    failed: np.ndarray  # bool per night: it ran and produced nothing (zeros)
    shapes: list[tuple[str, ...]]  # shape labels per night


@dataclass
class PreSeries:
    platform_short: str
    compute: str
    kernel: str
    h: np.ndarray  # helion time per night
    base: dict[str, np.ndarray]  # baseline name -> time per night (NaN = baseline absent)
    best: np.ndarray  # best-shape factor
    cudagraph: np.ndarray  # bool per night
    failed: np.ndarray
    alive: np.ndarray
    total: int = 8


@dataclass
class Simulation:
    nights: list[TimelineRun]
    runs: list[TimelineRun]  # every run in date order
    dash: dict[tuple[str, str], DashSeries] = field(default_factory=dict)
    pre: dict[tuple[str, str], PreSeries] = field(default_factory=dict)


def fake_sha(seed: int, i: int, salt: str = "") -> str:
    return hashlib.blake2b(f"{seed}:{salt}:{i}".encode(), digest_size=20).hexdigest()


def build_timeline(spec: WorldSpec, rng: np.random.Generator, kernels_of: dict) -> list[TimelineRun]:
    runs: list[TimelineRun] = []
    for n in range(spec.nightlies):
        day = spec.start + timedelta(days=n)
        when = datetime.combine(day, time(8, 0), tzinfo=timezone.utc) + timedelta(
            minutes=int(rng.integers(5, 50))
        )
        runs.append(TimelineRun("", when, "main", True, n, "nightly"))
        if spec.manual_runs and n % 7 == 3:
            p = [q for q in spec.platforms if kernels_of.get(q)]
            plat = p[n % len(p)]
            ks = kernels_of[plat]
            pick = frozenset(rng.choice(ks, size=max(1, len(ks) // 3), replace=False).tolist())
            runs.append(
                TimelineRun("", when + timedelta(hours=7), "main", False, n, "manual", platforms=(plat,),
                            kernels=pick, wild=float(rng.choice([0.55, 1.6])))
            )
        if spec.manual_runs and n % 23 == 11:
            p = [q for q in spec.platforms if kernels_of.get(q)]
            plat = p[(n // 23) % len(p)]
            runs.append(
                TimelineRun("", when + timedelta(hours=10), f"feature/exp-{n}", n % 2 == 1, n, "side",
                            platforms=(plat,), kernels=frozenset(kernels_of[plat]), wild=0.5)
            )
    base = 17_000_000_000
    for i, r in enumerate(runs):
        r.run_id = str(base + i * 1117)
        if not r.is_trend and r.kind == "side":
            r.full_sha = fake_sha(spec.seed, i, "side")
            r.sha = r.full_sha[:8]
    return runs


def _series_rng(seed: int, *names: str) -> np.random.Generator:
    h = hashlib.blake2b(("|".join(names) + f"|{seed}").encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(h, "little"))


def _shapes(kernel: str, variant: int) -> tuple[str, ...]:
    sizes = [1024, 2048, 4096, 8192, 16384] if variant == 0 else [4096, 8192, 16384, 32768, 65536, 131072]
    return tuple(f"({kernel.count('_') + 1}, {s})" for s in sizes)


def simulate_dashboard(spec: WorldSpec, kernels_of: dict, events: tuple[EventSpec, ...]) -> dict:
    n = spec.nightlies
    out: dict[tuple[str, str], DashSeries] = {}
    protected: dict[tuple[str, str], list[int]] = {}
    for ev in events:
        if ev.source == "dashboard":
            for k in ev.kernels:
                protected.setdefault((ev.platform_short, k), []).append(ev.night)
    for p in spec.platforms:
        for k in kernels_of.get(p, ()):
            r = _series_rng(spec.seed, "dash", p, k)
            sig = r.uniform(0.008, 0.025)
            hs = np.log(np.exp(r.normal(0.15, 0.3))) + r.normal(0, sig, n)
            ts = r.normal(0.0, 0.15) + r.normal(0, sig, n)
            cs = r.normal(-0.05, 0.2) + r.normal(0, sig * 1.2, n)
            lat = r.uniform(np.log(0.01), np.log(3.0)) + r.normal(0, sig * 1.1, n)
            ct = r.uniform(np.log(3), np.log(60)) + r.normal(0, 0.04, n)
            alive = np.ones(n, bool)
            failed = r.random(n) < spec.failure_rate
            for night in protected.get((p, k), []):
                failed[max(0, night - 2) : night + 4] = False
            if spec.gaps and not protected.get((p, k)) and r.random() < 0.08 and n > 20:
                g = int(r.integers(10, n - 5))
                alive[g : g + int(r.integers(2, 4))] = False
            out[(p, k)] = DashSeries(
                p, k, "fla" if "gla" in k else None, hs, ts, cs, lat, ct, alive, failed,
                [_shapes(k, 0)] * n,
            )
    if spec.churn and n >= 30:
        quiet = sorted(key for key in out if key not in protected and key[0] in ("h100", "b200"))
        if len(quiet) >= 2:
            added, removed = quiet[0], quiet[-1]
            out[added].alive[: int(n * 0.3)] = False
            out[removed].alive[int(n * 0.7) :] = False
    for ev in events:
        if ev.source == "dashboard":
            _apply_dash_event(spec, out, ev)
    for s in out.values():
        s.hs, s.ts, s.cs, s.lat, s.ct = (np.exp(a) for a in (s.hs, s.ts, s.cs, s.lat, s.ct))
    return out


def _event_targets(spec: WorldSpec, out: dict, ev: EventSpec, salt: str):
    """(series, its own rng, slice from the first-bad night, log step) for each hit kernel."""
    d = float(np.log1p(ev.magnitude))
    for k in ev.kernels:
        s = out.get((ev.platform_short, k))
        if s is not None:
            yield s, _series_rng(spec.seed, salt, ev.platform_short, k, str(ev.night)), slice(ev.night, None), d


def _apply_dash_event(spec: WorldSpec, out: dict, ev: EventSpec) -> None:
    for s, r, sl, d in _event_targets(spec, out, ev, "event"):
        if ev.cause == "real":
            s.hs[sl] += d
            s.lat[sl] -= d * r.uniform(0.85, 1.1)
        elif ev.cause == "method_change":
            if ev.kind == "baseline":
                s.hs[sl] += d
                s.ts[sl] += d
                s.cs[sl] += d
            elif ev.kind == "cudagraph":
                s.hs[sl] += d
                s.ts[sl] += d * r.uniform(0.75, 1.0)
                s.cs[sl] += d * r.uniform(0.75, 1.0)
            else:  # shapes
                s.hs[sl] += d
                s.ts[sl] += d * r.uniform(0.3, 0.8)
                s.cs[sl] += d * r.uniform(0.3, 0.8)
                s.lat[sl] += np.log(r.uniform(1.6, 3.0))
                s.shapes[ev.night :] = [_shapes(s.kernel, 1)] * (len(s.shapes) - ev.night)
        elif ev.cause == "hardware":
            fh = abs(ev.magnitude) * r.uniform(1.0, 1.5)
            fb = abs(ev.magnitude) * r.uniform(0.15, 0.45)
            s.hs[sl] += np.log1p(fb) - np.log1p(fh)
            s.ts[sl] += np.log1p(fb) - np.log1p(fb * r.uniform(1.6, 2.4))
            s.cs[sl] += np.log1p(fb) - np.log1p(fb * r.uniform(1.6, 2.4))
            s.lat[sl] += np.log1p(fh)
        elif ev.cause == "noise":
            width = 1 if ev.kind == "outlier" else 2
            s.hs[ev.night : ev.night + width] += d
            s.lat[ev.night : ev.night + width] -= d * 0.5


def simulate_pretuned(spec: WorldSpec, events: tuple[EventSpec, ...]) -> dict:
    n = spec.nightlies
    out: dict[tuple[str, str], PreSeries] = {}
    protected: dict[tuple[str, str], list[int]] = {}
    for ev in events:
        if ev.source == "pretuned":
            for k in ev.kernels:
                protected.setdefault((ev.platform_short, k), []).append(ev.night)
    for p, compute, k in PRETUNED_ROWS:
        if p not in spec.platforms:
            continue
        r = _series_rng(spec.seed, "pre", p, k)
        sig = r.uniform(0.008, 0.02)
        h = r.normal(0, 0.1) + r.normal(0, sig, n)
        base = {b: r.normal(0.25, 0.2) + r.normal(0, sig, n) for b in PRETUNED_BASELINES[:2]}
        base[PRETUNED_BASELINES[2]] = np.full(n, np.nan)
        failed = r.random(n) < spec.failure_rate
        for night in protected.get((p, k), []):
            failed[max(0, night - 2) : night + 4] = False
        out[(p, k)] = PreSeries(
            p, compute, k, h, base, np.full(n, np.log(r.uniform(1.2, 1.6))) + r.normal(0, 0.01, n),
            np.ones(n, bool), failed, np.ones(n, bool),
        )
    for ev in events:
        if ev.source != "pretuned":
            continue
        for s, r, sl, d in _event_targets(spec, out, ev, "pevent"):
            if ev.cause == "real":
                s.h[sl] -= d  # helion slower: every ratio drops by the same factor
            elif ev.cause == "method_change" and ev.kind == "cudagraph_flip":
                s.cudagraph[sl] = False
                s.h[sl] -= d
            elif ev.cause == "method_change":  # a faster baseline joins: the headline drops
                fastest = np.minimum(*(s.base[b] for b in PRETUNED_BASELINES[:2]))
                s.base[PRETUNED_BASELINES[2]][sl] = fastest[sl] + d
            elif ev.cause == "hardware":
                s.h[sl] += np.log1p(abs(ev.magnitude) * r.uniform(1.0, 1.5))
                for b in PRETUNED_BASELINES[:2]:
                    s.base[b][sl] += np.log1p(abs(ev.magnitude) * r.uniform(0.1, 0.4))
            elif ev.cause == "noise":
                width = 1 if ev.kind == "outlier" else 2
                s.h[ev.night : ev.night + width] -= d
    for s in out.values():
        s.h = np.exp(s.h)
        s.best = np.exp(s.best)
        s.base = {b: np.exp(v) for b, v in s.base.items()}
    return out


def dash_values(s: DashSeries, night: int, wild: float = 1.0) -> dict:
    if s.failed[night]:
        return dict(helion_speedup_geomean=0, triton_speedup_geomean=0.0,
                    torch_compile_speedup_geomean=0.0, compile_time_geomean_s=None,
                    helion_latency_avg_ms=0)
    return dict(
        helion_speedup_geomean=round(float(s.hs[night]) * wild, 4),
        triton_speedup_geomean=round(float(s.ts[night]), 4),
        torch_compile_speedup_geomean=round(float(s.cs[night]), 4),
        compile_time_geomean_s=round(float(s.ct[night]), 3),
        helion_latency_avg_ms=round(float(s.lat[night]) / wild, 5),
    )


def pre_values(s: PreSeries, night: int, wild: float = 1.0) -> dict:
    if s.failed[night]:
        return dict(error="RuntimeError: CUDA error: an illegal memory access was encountered",
                    cudagraph=bool(s.cudagraph[night]))
    h = float(s.h[night]) / wild
    baselines = {}
    for name, arr in s.base.items():
        b = float(arr[night])
        if np.isnan(b):
            continue
        g = b / h
        wins = int(round(s.total / (1 + np.exp(-6 * np.log(g)))))
        baselines[name] = dict(wins=wins, total=s.total, geomean=round(g, 4),
                               best_speedup=round(g * float(s.best[night]), 4))
    geomean = min(v["geomean"] for v in baselines.values())
    wins = min(v["wins"] for v in baselines.values())
    return dict(
        cudagraph=bool(s.cudagraph[night]), geomean=geomean, helion_wins=wins, total=s.total,
        best_speedup=round(geomean * float(s.best[night]), 4), baselines=baselines,
    )


def platform_name(p: str) -> str:
    return PLATFORM_NAMES[p]


__all__ = ["NO_CUDAGRAPH"]
