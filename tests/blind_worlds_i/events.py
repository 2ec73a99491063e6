"""Label drafts, and the labels of the changes the files carry (from ``regimes``).

Why drafts: every label needs three things decided together — which series move (members), on
which nightly (first bad), and what the honest number is — and the honest number needs every
effect in place, so labels are drafted here (and by ``real`` / ``environment``) and finished in
``world``. A file change whose numbers would happen to stay within noise is nudged (the new
shapes are harder, the new baseline is faster) so the change the files announce shows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .rand import rng
from .regimes import _hashable, _mag, value_of

HEAD = {"dashboard": "helion_speedup_geomean", "pretuned": "geomean"}
METRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
           "helion_latency_avg_ms", "compile_time_geomean_s")
THRESH = {"helion_speedup_geomean": 0.04, "triton_speedup_geomean": 0.04, "torch_compile_speedup_geomean": 0.04,
          "helion_latency_avg_ms": 0.06, "compile_time_geomean_s": 0.10, "geomean": 0.04}
HEAVY = ("gemm", "int4_gemm", "grouped_gemm", "flash_attention", "mamba2_chunk_scan", "mamba2_chunk_state",
         "gdn_fwd_h", "bmm", "fp8_gemm")


@dataclass
class Draft:
    """A label before its honest values are computed (they need every effect in place)."""
    id: str
    source: str
    cause: str
    kind: str
    keys: list
    night: int
    end: int | None
    culprit: str | None
    change: str | None
    honest: str  # before | after | cg | healthy | normal | none
    note: str
    skip: object = None  # the noise effect to leave out when reading the normal level
    metrics: tuple = ()
    deltas: dict = field(default_factory=dict)
    cg_before: dict = field(default_factory=dict)


def _rel(a, b):
    return (b - a) / a if a and b else 0.0


def deltas(ctx, key, n0: int, n1: int, skip=None) -> dict:
    a, b = ctx.expected(key, n0, skip), ctx.expected(key, n1)
    if not a or not b:
        return {}
    return {m: _rel(a[m], b[m]) for m in a if m in b}


def material(d: dict, kind: str) -> bool:
    if kind in ("runner", "driver/toolchain", "thermal", "harness"):
        return any(abs(d.get(m, 0)) >= THRESH[m] for m in ("helion_speedup_geomean", "geomean",
                                                             "helion_latency_avg_ms"))
    if kind == "timer" and "compile_time_geomean_s" in d and abs(d["compile_time_geomean_s"]) >= 0.1 and \
            abs(d.get("helion_speedup_geomean", 0)) < 0.04:
        return True
    if kind == "autotune":
        return abs(d.get("helion_speedup_geomean", 0)) >= 0.04 or abs(d.get("compile_time_geomean_s", 0)) >= 0.1
    if kind in ("cudagraph", "shapes", "baseline", "harness", "timer"):  # any timer the change re-reads
        return any(abs(d.get(m, 0)) >= THRESH[m] for m in THRESH)
    return abs(d.get("helion_speedup_geomean", d.get("geomean", 0))) >= 0.04


def metric_list(ds: list, source: str) -> tuple:
    if source == "pretuned":
        return ("geomean",)
    out = [m for m in METRICS if any(abs(d.get(m, 0)) >= THRESH[m] for d in ds)]
    return tuple(out) or (HEAD[source],)


# --- changes carried by the files ------------------------------------------------------------

NUDGE = {"ni": "shape_h", "shapes": "shape_h", "prec": "shape_h", "pshapes": "h", "l2": "h", "harness": "b"}


def _nudge(ctx, g, key) -> None:
    """A shape list / harness / timer change that happens to leave the geomean within 5 % is
    given its own step (the new shapes are harder or easier), so the file change shows."""
    spec = ctx.specs[g.night][key]
    val = _hashable(spec[g.field])
    d = deltas(ctx, key, g.night - 1, g.night)
    h = HEAD[key[0]]
    if not d or abs(d.get(h, 0)) >= 0.05:
        return
    r = rng(ctx.seed, "nudge", g.group, *key)
    target = _mag(r, 0.06, 0.16)
    cur = 1 + d[h]
    book = ctx.book.book.setdefault((key, g.field), {})
    entry = dict(book.get(val, {}))
    if g.field == "pbase":
        new = [b for b in spec["pbase"] if b not in ctx.specs[g.night - 1][key]["pbase"]]
        if not new:
            return
        for step in (0.9, 0.8, 0.7, 0.6, 0.5, 0.4):  # the new baseline is faster on more shapes
            entry["b_" + new[0]] = step
            book[val] = entry
            if abs(deltas(ctx, key, g.night - 1, g.night).get(h, 0)) >= 0.05:
                return
        return
    fk = NUDGE[g.field]
    x = target / cur
    entry[fk] = entry.get(fk, 1.0) * (x if fk == "b" else 1 / x)
    book[val] = entry


def _episode_end(ctx, g, keys) -> int | None:
    """First later nightly where every member reads its old value again (a revert)."""
    def val(spec):
        return value_of(spec, g.field)

    old = {k: val(ctx.specs[g.night - 1][k]) for k in keys}
    for e in range(g.night + 1, len(ctx.specs)):
        cur = [ctx.specs[e].get(k) for k in keys]
        if any(c is None for c in cur):
            return None
        if all(val(c) == old[k] for c, k in zip(cur, keys)):
            return e
        if any(val(c) != val(ctx.specs[g.night][k]) for c, k in zip(cur, keys)):
            return None
    return None


PRIORITY = {"method_change": 0, "hardware": 1, "real": 2}


def config_drafts(ctx, changes) -> list[Draft]:
    """One label per effective change group; groups of one commit share series by priority
    (a commit that trims the shapes and regenerates configs reads as the shape change; a commit
    that moves a runner and its image is one runner change)."""
    out = []
    for g in changes:
        if g.effective and (g.field in NUDGE or g.field == "pbase"):
            for k in g.fresh:
                _nudge(ctx, g, k)
    buckets: dict = {}
    for g in changes:
        if g.effective:
            buckets.setdefault((g.night, g.commit.idx), []).append(g)
    for (night, _), gs in sorted(buckets.items()):
        runner = {tuple(g.keys[0][:2]): g for g in gs if g.field == "runner"}
        merged = []
        for g in gs:
            if g.field == "image" and tuple(g.keys[0][:2]) in runner:
                r = runner[tuple(g.keys[0][:2])]
                r.keys = r.keys + [k for k in g.keys if k not in r.keys]
                continue
            merged.append(g)
        claimed: set = set()
        for g in sorted(merged, key=lambda g: (PRIORITY[g.label_kind[0]], g.field)):
            out += _drafts_for(ctx, g, claimed)
    return out


def _drafts_for(ctx, g, claimed: set) -> list[Draft]:
    """The group's material members (not already claimed by a stronger group of its commit)."""
    out = []
    cause, kind = g.label_kind
    by_src: dict = {}
    for k in g.keys:
        if k in claimed or k in g.returning:
            continue
        d = deltas(ctx, k, g.night - 1, g.night)
        if d and material(d, kind):
            by_src.setdefault(k[0], []).append((k, d))
            claimed.add(k)
    for src, kd in by_src.items():
        keys = [k for k, _ in kd]
        end = _episode_end(ctx, g, keys)
        honest = {"real": "after", "hardware": "healthy", "method_change": "after"}[cause]
        if kind == "cudagraph":
            honest = "cg"
        dr = Draft(id=f"I{ctx.seed}-{g.night:03d}-{g.field}-{src[0]}-{g.commit.sha[:7]}", source=src, cause=cause,
                   kind=kind, keys=keys, night=g.night, end=end,
                   culprit=g.commit.sha if cause == "real" else None,
                   change=g.commit.sha if cause != "real" else None, honest=honest,
                   note=f"{g.field} changed in {g.commit.sha[:8]} '{g.commit.subject[:90]}'"
                        + (f"; reverted at night {end}" if end else ""),
                   deltas={k: d for k, d in kd})
        dr.cg_before = {k: ctx.specs[g.night - 1][k].get("cg", True) for k in keys}
        out.append(dr)
        for k in keys:
            ctx.mark(k, g.night)
            ctx.events.setdefault(k, set()).add(g.night)
    return out
