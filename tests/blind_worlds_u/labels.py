"""Labels from plants, computed on the noise-free model, and an audit of unlabeled moves."""
from __future__ import annotations

from . import events as E

DASH_METRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
                "helion_latency_avg_ms", "compile_time_geomean_s")


def _rel(a, b):
    if a is None or b is None or not a or not b:
        return 0.0
    return b / a - 1.0


def _prev_present(ctx, source, key, a):
    fn = E.dash_true if source == "dashboard" else E.pre_true
    for m in range(a - 1, -1, -1):
        t = fn(ctx, m, key)
        if t is not None:
            return m, t
    return None, None


def plant_members(ctx, p: E.Plant) -> tuple:
    """(members, metrics moved, honest {key: value}, direction) of a plant."""
    fn = E.dash_true if p.source == "dashboard" else E.pre_true
    headline = "helion_speedup_geomean" if p.source == "dashboard" else "geomean"
    metric_names = DASH_METRICS if p.source == "dashboard" else ("geomean",)
    a = p.start
    members, moved, honest, dirs = [], set(), {}, []
    for key in sorted(p.factors):
        before = fn(ctx, a - 1, key) if a > 0 else None
        if before is None:
            _, before = _prev_present(ctx, p.source, key, a)
        after = fn(ctx, a, key)
        if p.fixed_members:
            if p.kind == "outage":
                if before is None:
                    continue
                members.append(key)
                honest[key] = before[headline]
                dirs.append("missing")
                continue
            members.append(key)
            if p.cause != "noise" and before is not None:
                honest[key] = before[headline] if _honest_side(p, ctx, key) == "pre" or after is None else after[headline]
            if after is not None and before is not None:
                d = _rel(before[headline], after[headline])
                dirs.append("improvement" if d > 0 else "regression")
            continue
        if before is None or after is None:
            continue
        hit = []
        for m in metric_names:
            if p.metrics and m not in p.metrics:
                continue
            d = _rel(before.get(m), after.get(m))
            if abs(d) >= E.THR[m]:
                hit.append(m)
        if not hit:
            continue
        members.append(key)
        moved.update(hit)
        side = _honest_side(p, ctx, key)
        honest[key] = before[headline] if side == "pre" else after[headline]
        d = _rel(before[headline], after[headline])
        if headline not in hit and "helion_latency_avg_ms" in hit:
            d = -_rel(before["helion_latency_avg_ms"], after["helion_latency_avg_ms"])
        if headline not in hit and "compile_time_geomean_s" in hit:
            d = -_rel(before["compile_time_geomean_s"], after["compile_time_geomean_s"])
        dirs.append("improvement" if d > 0 else "regression")
    if p.metrics:
        metrics = tuple(m for m in p.metrics if m in moved) or tuple(p.metrics)
    else:
        metrics = tuple(m for m in metric_names if m in moved) or (headline,)
    if p.kind == "outage":
        metrics = (headline, "helion_latency_avg_ms")
    direction = p.direction or (dirs[0] if dirs and len(set(dirs)) == 1 else "mixed")
    return members, metrics, honest, direction


def _honest_side(p: E.Plant, ctx, key) -> str:
    if p.honest:
        return p.honest
    if p.cause == "method_change" and p.kind == "cudagraph":
        if p.source == "dashboard":
            s = ctx.setups[p.start].series.get(key)
            return "post" if s is not None and s.cudagraph else "pre"
        ps = ctx.psetups[p.start]
        pk = ps.kernels.get(key[1]) if ps else None
        return "post" if pk is not None and pk.cudagraph else "pre"
    return E.HONEST.get((p.cause, p.kind), E.HONEST.get((p.cause, None), "post"))


def audit(ctx, labels_by_key: dict) -> list:
    """Series-nights whose true values moved past a threshold with no label covering them."""
    out = []
    N = len(ctx.nights)
    keys = set()
    for s in ctx.setups:
        keys.update(s.series)
    for key in sorted(keys):
        prev = None
        for n in range(N):
            t = E.dash_true(ctx, n, key)
            if t is None:
                continue
            if prev is not None:
                for m in DASH_METRICS:
                    d = _rel(prev.get(m), t.get(m))
                    if abs(d) >= E.THR[m] and n not in labels_by_key.get(("dashboard", key), ()):
                        out.append(("dashboard", key, n, m, round(d, 3)))
            prev = t
    pkeys = set()
    for ps in ctx.psetups:
        if ps:
            for k, pk in ps.kernels.items():
                pkeys.update((hw, k) for hw in pk.hardware)
    for key in sorted(pkeys):
        prev = None
        for n in range(N):
            t = E.pre_true(ctx, n, key)
            if t is None:
                continue
            if prev is not None:
                d = _rel(prev["geomean"], t["geomean"])
                if abs(d) >= E.THR["geomean"] and n not in labels_by_key.get(("pretuned", key), ()):
                    out.append(("pretuned", key, n, "geomean", round(d, 3)))
            prev = t
    return out
