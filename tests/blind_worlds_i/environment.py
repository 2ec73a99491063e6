"""Hardware episodes nobody committed (thermal throttling, a runner pool swap, outages) and noise
(one-night outliers, short blips, a series that turns noisy).

Why separate from the commit-carried events: these have no sha to find, only a platform and a
few nights, and they must stay clear of the labeled events on the same series (except the
throttling placed deliberately the night after a file-carried change).
"""
from __future__ import annotations

import math

from .core import Eff
from .events import HEAVY, Draft
from .rand import rng
from .regimes import _mag


def _platform_keys(ctx, n: int, src: str, plat: str) -> list:
    return [k for k in ctx.specs[n] if k[0] == src and k[1] == plat]


def plant_environment(ctx, drafts: list) -> list[Draft]:
    r = rng(ctx.seed, "env")
    N = len(ctx.nidx)
    out = []
    # when no real commit landed next to a file-carried change, throttling starts the night after one
    adjacent = None
    if not any("neighbouring" in d.note for d in drafts):
        near = [d for d in drafts if d.source == "dashboard" and d.cause != "noise" and 6 <= d.night < N - 10 and
                any(k[1] in ("h100", "b200", "mi350x", "mi325x") for k in d.keys)]
        if near:
            adjacent = near[int(r.integers(len(near)))]
    # thermal throttling on the heavy kernels of one GPU platform, a few nights, then recovered
    for i in range(int(r.integers(1, 3))):
        for attempt in range(30):
            n = int(r.integers(6, N - 10))
            plat = str(r.choice(["h100", "b200", "mi350x", "mi325x"]))
            if adjacent is not None and i == 0 and attempt < 10:
                n = adjacent.night + 1
                plat = sorted({k[1] for k in adjacent.keys if k[1] in ("h100", "b200", "mi350x", "mi325x")})[0]
            ks = [k for k in _platform_keys(ctx, n, "dashboard", plat) if k[2] in HEAVY and k in ctx.specs[n - 1]]
            L = int(r.integers(3, 8))
            near_ok = adjacent is not None and i == 0 and attempt < 10
            ks = [k for k in ks if all(ctx.free(k, x) or (near_ok and not (ctx.events.get(k, set()) & set(range(n, n + L))))
                                       for x in range(n, n + L)) and all(k in ctx.specs[x] for x in range(n, n + L + 1))]
            if len(ks) >= 2:
                g, h = float(r.uniform(1.07, 1.14)), float(r.uniform(1.06, 1.13))
                for k in ks:
                    ctx.add_eff(Eff(k, n, n + L, {"g": g, "h": h * math.exp(r.normal(0, 0.02))}))
                    ctx.mark(k, n, pad=L + 2)
                note = f"thermal throttling on {plat} heavy kernels for {L} nights"
                if near_ok:
                    note += f" (neighbouring nights: starts the night after {adjacent.id})"
                out.append(Draft(f"I{ctx.seed}-{n:03d}-thermal-{plat}", "dashboard", "hardware", "thermal", ks, n, n + L,
                                 None, None, "healthy", note))
                for k in ks:
                    ctx.events.setdefault(k, set()).add(n)
                break
    # a runner pool swap nobody committed: every kernel of one platform, persistent
    if r.random() < 0.7:
        for _ in range(30):
            n = int(r.integers(10, N - 5))
            plat = str(r.choice(["h100", "b200", "mi350x", "b200_cute"]))
            runner = next((s.get("runner") for k, s in ctx.specs[n].items() if k[:2] == ("dashboard", plat)), None)
            # every job on that runner label lands on the new pool (b200 and b200_cute share one)
            ks = [k for k, s in ctx.specs[n].items() if k[0] == "dashboard" and runner and s.get("runner") == runner
                  and k in ctx.specs[n - 1] and ctx.specs[n - 1][k].get("runner") == runner]
            if len(ks) >= 3 and all(ctx.free(k, n) for k in ks):
                common = _mag(r, 0.07, 0.14)
                shift = _mag(r, 0.05, 0.1)
                for k in ks:
                    ctx.add_eff(Eff(k, n, None, {"g": common, "h": 1 / (shift * math.exp(r.normal(0, 0.025)))}))
                    ctx.mark(k, n)
                out.append(Draft(f"I{ctx.seed}-{n:03d}-pool-{plat}", "dashboard", "hardware", "runner", ks, n, None,
                                 None, None, "healthy", f"runner pool {runner} swapped without a commit"))
                break
    # nothing happened in the last two nightlies: one platform publishes nothing on the last one
    if not any(d.night >= N - 2 and d.cause != "noise" for d in list(drafts) + out):
        plats_last = sorted({(k[0], k[1]) for k in ctx.specs[N - 1] if k[0] == "dashboard"})
        for i in r.permutation(len(plats_last)):
            src, plat = plats_last[int(i)]
            ks = _platform_keys(ctx, N - 1, src, plat)
            if ks and (src, plat) in {(k[0], k[1]) for k in ctx.specs[N - 2]} and \
                    not any(N - 1 in ctx.events.get(k, ()) for k in ks):
                ctx.outages.setdefault((src, plat), set()).add(N - 1)
                for k in ks:
                    ctx.events.setdefault(k, set()).add(N - 1)
                out.append(Draft(f"I{ctx.seed}-{N - 1:03d}-outage-{src[0]}-{plat}", src, "hardware", "outage", ks,
                                 N - 1, None, None, None, "none", f"{plat} ({src}) missing from the last nightly",
                                 metrics=("health",)))
                break
    # outages: a platform (or the pretuned suite on one GPU) publishes nothing for 1-3 nights
    plats = sorted({(k[0], k[1]) for k in ctx.specs[N // 2]})
    for i in range(int(r.integers(2, 4))):
        for _ in range(30):
            src, plat = plats[int(r.integers(len(plats)))]
            n = int(r.integers(5, N - 4))
            L = int(r.integers(1, 4))
            ks = _platform_keys(ctx, n, src, plat)
            if ks and all(ctx.free(k, x) for k in ks for x in range(n, n + L)) and \
                    all((src, plat) in {(k[0], k[1]) for k in ctx.specs[x]} for x in range(n - 1, n + L + 1)):
                ctx.outages.setdefault((src, plat), set()).update(range(n, n + L))
                for k in ks:
                    ctx.mark(k, n, pad=L + 1)
                out.append(Draft(f"I{ctx.seed}-{n:03d}-outage-{src[0]}-{plat}", src, "hardware", "outage", ks, n, n + L,
                                 None, None, "none", f"{plat} ({src}) published nothing for {L} night(s)",
                                 metrics=("health",)))
                break
    return out


def plant_noise(ctx) -> list[Draft]:
    r = rng(ctx.seed, "noise")
    N = len(ctx.nidx)
    out = []

    def pick(src, n):
        ks = [k for k in ctx.specs[n] if k[0] == src and k in ctx.specs[n - 1] and all(
            k in ctx.specs[x] for x in range(n, min(n + 4, N)))]
        ks = [k for k in ks if all(ctx.free(k, x) for x in range(n - 1, n + 4))]
        return ks[int(r.integers(len(ks)))] if ks else None

    specs = [("outlier", "dashboard")] * 3 + [("outlier", "pretuned"), ("blip", "dashboard"), ("blip", "dashboard"),
                                               ("scatter", "dashboard")] + ([("scatter", "dashboard")] if r.random() < 0.5 else [])
    for kind, src in specs:
        for _ in range(40):
            n = int(r.integers(5, N - 3))
            k = pick(src, n)
            if k is None:
                continue
            if kind == "outlier":
                m = float(r.uniform(1.25, 1.45)) ** (1 if r.random() < 0.75 else -1)
                fk = "hs" if (src == "dashboard" and r.random() < 0.5) else "h"
                e = Eff(k, n, n + 1, {fk: m}, nightly_only=True)
                ks, end, note = [k], n + 1, f"one-night outlier ({'speedup timer only' if fk == 'hs' else 'both timers'})"
            elif kind == "blip":
                L = int(r.integers(2, 4))
                m = float(r.uniform(1.12, 1.22))
                e = Eff(k, n, n + L, {"h": m}, nightly_only=True)
                ks, end, note = [k], n + L, f"{L}-night blip that reverts"
            else:
                if ctx.profs_get(k).sig > 0.015:
                    continue
                e = Eff(k, n, None, {"sig": float(r.uniform(4.5, 7.0))})
                ks, end, note = [k], None, "series turns noisy and stays noisy"
            ctx.add_eff(e)
            ctx.mark(k, n, pad=3 if kind != "scatter" else 10 ** 4)
            out.append(Draft(f"I{ctx.seed}-{n:03d}-{kind}-{src[0]}-{k[1]}-{k[2]}", src, "noise", kind, ks, n, end, None,
                             None, "normal", note, skip=e))
            break
    return out
