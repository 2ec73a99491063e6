"""Measurement changes carried by the files: each changed spec field becomes a regime of the
model, and (when it moves what a triager watches) a label on the commit that changed it.

Why: "when the files say the measurement changed, the values must change accordingly". So every
spec-field change between two nightlies is attributed to the exact commit (re-reading the files
commit by commit), gets a factor on the times it touches (a cudagraph flip, a new shape list,
a new baseline change the numbers through the timing model itself), and a value that comes back
(a revert, a reverted image) brings its old factor back and ends the episode. Pins whose bump
says nothing about the measurement (torch_tpu, tritonbench, CuTe DSL) move it only sometimes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .rand import rng
from .specs import FIELD_KIND, all_specs, changed_fields

HW_FIELDS = ("runner", "image", "runtime")
GROUP_OF = {"image": "image", "runtime": "image"}  # an image and its runtime version move together
PLATFORM_SCOPED = ("runner", "image", "cute", "tpu_tc")


def value_of(spec: dict, gf: str):
    """The regime value of a (grouped) field in a spec."""
    if gf == "image":
        return (spec.get("image"), spec.get("runtime"))
    return _hashable(spec.get(gf))


@dataclass
class Change:
    night: int
    commit: object  # gitdata.Commit
    field: str
    keys: list
    old: object
    new: object
    label_kind: tuple = ("", "")
    effective: bool = True
    group: str = ""
    returning: list = field(default_factory=list)
    fresh: list = field(default_factory=list)  # keys whose new value was never seen before


def spec_at_commit(ctx, idx: int) -> dict:
    st_idx = ctx.hist.state_idx
    import bisect

    j = st_idx[max(bisect.bisect_right(st_idx, idx) - 1, 0)]
    if j not in ctx.spec_cache:
        ctx.spec_cache[j] = all_specs(ctx.hist.states[j])
    return ctx.spec_cache[j]


def find_commit(ctx, key, fld, a: int, b: int, new):
    """The commit in (a, b] after which ``key``'s ``fld`` first reads ``new``."""
    prev = spec_at_commit(ctx, a).get(key, {}).get(fld)
    for st in [i for i in ctx.hist.state_idx if a < i <= b]:
        cur = spec_at_commit(ctx, st).get(key, {}).get(fld)
        if cur != prev and cur == new:
            return ctx.hist.commits[st]
        prev = cur
    return ctx.hist.commits[b]


def collect_changes(ctx) -> list[Change]:
    """Every field change between consecutive nightlies, grouped by (night, commit, field) —
    hardware fields of one platform grouped together."""
    groups: dict = {}
    for n in range(1, len(ctx.specs)):
        a, b = ctx.specs[n - 1], ctx.specs[n]
        for key, spec in b.items():
            if key not in a:
                continue
            for fld in changed_fields(a[key], spec):
                lo, hi = ctx.commit_range(key[0], n)
                c = find_commit(ctx, key, fld, lo, hi, spec[fld])
                gf = GROUP_OF.get(fld, fld)
                scope = (key[0], key[1]) if gf in PLATFORM_SCOPED else (key[0],)
                g = groups.setdefault((n, c.idx, gf, scope), Change(n, c, gf, [], None, None))
                if key not in g.keys:
                    g.keys.append(key)
                g.old, g.new = value_of(a[key], gf), value_of(spec, gf)
    out = sorted(groups.values(), key=lambda g: (g.night, g.commit.idx, g.field, str(g.keys[0])))
    for g in out:
        g.label_kind = FIELD_KIND[g.field]
        g.group = f"{g.field}@{g.night}:{g.commit.sha[:8]}:{g.keys[0][0]}" + (
            f":{g.keys[0][1]}" if g.field in PLATFORM_SCOPED else "")
    return out


def _sgn(r) -> int:
    return 1 if r.random() < 0.5 else -1


def _mag(r, lo: float, hi: float) -> float:
    return math.exp(r.uniform(math.log(1 + lo), math.log(1 + hi)) * _sgn(r))


def decide(ctx, g: Change) -> dict:
    """key -> factor dict for one change group ({} for keys it does not move)."""
    seed = ctx.seed
    r = rng(seed, "decide", g.group)
    subj = g.commit.subject.lower()
    out = {}
    f = g.field
    if f == "image" and (g.night, g.commit.idx, tuple(g.keys[0][:2])) in ctx.runner_changes:
        return {}  # the same commit moved the runner: one machine change, drawn once there
    if f in ("runner", "image"):
        common = _mag(r, 0.06, 0.16)  # new machine / driver: every device time moves
        shift = _mag(r, 0.04, 0.12)  # and Helion's share of it differently from the baselines
        for k in g.keys:
            rk = rng(seed, "decide", g.group, *k)
            s = shift * math.exp(rk.normal(0, 0.03))
            if k[0] == "pretuned":
                out[k] = {"h": common / s, "b": common}
            else:
                out[k] = {"g": common, "h": 1 / s, "t": math.exp(rk.normal(0, 0.02)), "c": math.exp(rk.normal(0, 0.02))}
    elif f == "cute":
        if r.random() < 0.7:
            for k in g.keys:
                rk = rng(seed, "decide", g.group, *k)
                if rk.random() < 0.75:
                    out[k] = {"h": _mag(rk, 0.06, 0.15), "g": math.exp(rk.normal(0, 0.01))}
    elif f == "tpu_tc":
        timing = any(w in subj for w in ("timing", "sync", "bench"))
        if timing:
            g.label_kind = ("method_change", "timer")
        if timing or (r.random() < 0.25 and ctx.tpu_pin_moves < 2):
            ctx.tpu_pin_moves += 0 if timing else 1
            common = _mag(r, 0.06, 0.14)
            for k in g.keys:
                rk = rng(seed, "decide", g.group, *k)
                out[k] = {"g": common, "h": _mag(rk, 0.05, 0.1) if (timing or rk.random() < 0.6) else 1.0}
    elif f == "torch":
        for k in g.keys:
            rk = rng(seed, "decide", g.group, *k)
            if k[0] == "dashboard" and ctx.profs_get(k).triton is False:
                continue  # linear attention / tpu rows: their baselines do not come from this torch
            if rk.random() < 0.45:
                fb = _mag(rk, 0.06, 0.18)
                out[k] = {"b": fb, "c": fb * math.exp(rk.normal(0, 0.04))} if k[0] == "dashboard" else \
                    {"b_torch": fb, "b_torch_compile": fb * math.exp(rk.normal(0, 0.05))}
    elif f == "tb":
        if g.old and r.random() < 0.55:
            kernels = sorted({k[2] for k in g.keys})
            pick = set(r.choice(kernels, size=min(len(kernels), int(r.integers(1, 4))), replace=False))
            fb = {kk: _mag(rng(seed, "tbk", g.group, kk), 0.08, 0.2) for kk in pick}
            for k in g.keys:
                if k[2] in pick:
                    out[k] = {"b": fb[k[2]], "t": math.exp(rng(seed, "tbt", g.group, *k).normal(0, 0.02))}
    elif f in ("base", "fla"):
        fb = _mag(r, 0.12, 0.4)
        for k in g.keys:
            out[k] = {"b": fb * math.exp(rng(seed, "decide", g.group, *k).normal(0, 0.03))}
    elif f in ("ni", "shapes", "prec", "pshapes", "harness", "cg", "pbase", "l2"):
        for k in g.keys:
            out[k] = {}  # the timing model moves these by itself; materiality is checked later
    elif f == "aot":
        for k in g.keys:
            rk = rng(seed, "decide", g.group, *k)
            if k[0] == "pretuned" or rk.random() < 0.6:
                m = _mag(rk, 0.06, 0.25)
                if rk.random() < 0.65:
                    m = min(m, 1 / m)  # regenerated configs mostly help
                out[k] = {"h": m}
    elif f == "budget":
        cand = sorted(g.keys, key=lambda k: -ctx.profs_get(k).comp)[:int(r.integers(2, 5))]
        for k in cand:
            rk = rng(seed, "decide", g.group, *k)
            out[k] = {"h": math.exp(rk.uniform(math.log(1.05), math.log(1.14))), "ct": rk.uniform(0.35, 0.65)}
    elif f == "seed":
        cand = sorted(g.keys, key=lambda k: -ctx.profs_get(k).jitter)[:int(r.integers(1, 4))]
        for k in cand:
            if ctx.profs_get(k).jitter > 0:
                out[k] = {"h": _mag(rng(seed, "decide", g.group, *k), 0.05, 0.1)}
    elif f == "effort":
        for k in g.keys:
            out[k] = {"h": _mag(rng(seed, "decide", g.group, *k), 0.05, 0.12), "ct": 0.6}
    elif f == "lat_mode":
        fl = _mag(r, 0.1, 0.3)
        for k in g.keys:
            out[k] = {"lat": fl}
    elif f == "two_pass":
        for k in g.keys:
            out[k] = {}
    g.effective = bool(out)
    return out


def compose(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 1.0) * v
    return out


@dataclass
class RegimeBook:
    """(key, field) -> {value: factor dict}; lookups of unseen values give no factor."""
    book: dict = field(default_factory=dict)

    def factors(self, key, spec: dict) -> dict:
        out = {}
        for gf in sorted({GROUP_OF.get(f, f) for f in spec}):
            m = self.book.get((key, gf))
            if m is not None:
                out = compose(out, m.get(value_of(spec, gf), {}))
        return out


def _hashable(v):
    if isinstance(v, dict):
        return tuple(sorted(v.items()))
    if isinstance(v, list):
        return tuple(v)
    return v


def build_regimes(ctx, changes: list[Change]) -> RegimeBook:
    """Walk the changes in night order; a new value's factor composes on the previous value's."""
    rb = RegimeBook()
    ctx.runner_changes = {(g.night, g.commit.idx, tuple(g.keys[0][:2])) for g in changes if g.field == "runner"}
    seq: dict = {}
    for g in changes:
        steps = decide(ctx, g)
        returning, fresh = [], []
        for k in g.keys:
            spec_old = ctx.specs[g.night - 1][k]
            spec_new = ctx.specs[g.night][k]
            vo, vn = value_of(spec_old, g.field), value_of(spec_new, g.field)
            m = rb.book.setdefault((k, g.field), {vo: {}})
            s = seq.setdefault((k, g.field), [vo])
            if len(s) >= 2 and vn == s[-2]:
                returning.append(k)  # the last change undone (a revert): its episode ends here
            s.append(vn)
            if vn in m:
                continue  # a value seen before keeps its factor
            fresh.append(k)
            m[vn] = compose(m.get(vo, {}), steps.get(k, {}))
        g.returning, g.fresh = returning, fresh
    return rb
