"""Planting: the cases every world carries, on real commits where a commit is the cause.

Real changes go on real ``helion/`` commits of the window (``footprint.classify`` says which
series each can move; a commit is only used when no other commit of its window could move the
same series). Where the history has a revert of such a commit inside the window, the regression
ends at the revert. Hardware episodes and noise have no commit. Every case keeps three nights
of quiet on its series either side, except where a case is about closeness (two events a week
apart on one series; a stray single-timer outlier right before a step).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .events import Planted
from .footprint import Footprint, classify, overlaps
from .sim import Effect, rng

GPU = ("h100", "b200", "mi350x", "mi325x")


@dataclass
class Cand:
    source: str
    night: int
    sha: str
    subject: str
    fp: Footprint
    members: tuple


def _windows(b, src):
    for n in range(1, b.N):
        if src == "dashboard":
            a, z = b.nights[n - 1].full_sha, b.nights[n].full_sha
        else:
            if not (b.nights[n - 1].p_full_sha and b.nights[n].p_full_sha):
                continue
            a, z = b.nights[n - 1].p_full_sha, b.nights[n].p_full_sha
        yield n, b.repo.between(a, z)


def candidates(b, src: str, relaxed: bool = False) -> list:
    """Commits that could carry a real change, with the series they can move at that night
    (scheduled, running the night before, and quiet around it). ``relaxed`` also takes
    commits without family words as touching everything their slice runs."""
    out = []
    for n, window in _windows(b, src):
        fps = [(c, classify(c) or (_relaxed(c) if relaxed else None)) for c in window]
        fps = [(c, fp) for c, fp in fps if fp is not None]
        for c, fp in fps:
            if any(overlaps(fp, other) for c2, other in fps if c2.sha != c.sha):
                continue
            mem = members_of(b, src, n, fp)
            if mem:
                out.append(Cand(src, n, c.sha, c.subject, fp, mem))
    return out


def members_of(b, src, n, fp, free=True) -> tuple:
    out = []
    for key in sorted(b.sched(src, n)):
        plat, kernel = key
        if src == "dashboard":
            ok = plat in fp.platforms and kernel in fp.kernels
        else:
            ok = plat in fp.pre_platforms and kernel in fp.pretuned
        if not ok or not (b.available(src, n, key) and b.available(src, n - 1, key)):
            continue
        if free and not b.is_free(src, key, n - 3, n + 3):
            continue
        out.append(key)
    return tuple(out)


def real_effect(b, r, cand: Cand, direction: str, end=None, end_sha=None, members=None,
                why: str = "", keep: tuple = ()) -> None:
    """Helion-only: its GPU time moves (both timers), baselines stay; an autotuner change also
    moves the search time."""
    members = members or cand.members
    if cand.fp.family in ("all", "memory") and len(members) > 3:
        # a search or backend-wide change helps or hurts some kernels, not every one
        members = tuple(k for k in members if k in keep or r.uniform() < 0.5) or members[:2]
    if len(members) > 16:
        rest = [k for k in members if k not in keep]
        members = tuple(sorted(set(keep) | {rest[i] for i in
                                            r.choice(len(rest), 16 - len(keep), replace=False)}))
    size = r.uniform(0.10, 0.26)
    sign = 1 if direction == "regression" else -1
    ct = math.exp(r.uniform(0.2, 0.45) * (1 if r.uniform() < 0.5 else -1))
    targets = {}
    for key in members:
        m = max(0.08, size * r.uniform(0.65, 1.3))
        comps = {"h": math.exp(sign * m)}
        if cand.fp.kind == "heuristics/config" and cand.source == "dashboard":
            comps["compile"] = ct
        targets[key] = comps
    e = Effect(start=cand.night, end=end, source=cand.source, targets=targets, tag="real",
               sha_lo=b.repo.index(cand.sha),
               sha_hi=b.repo.index(end_sha) if end_sha else None)
    note = f"planted {direction} on {cand.sha[:8]} {cand.subject[:70]}"
    if end is not None:
        note += f"; reverted by {end_sha[:8]}"
    if why:
        note += f" ({why})"
    b.add_effect(e, Planted(-1, cand.source, "real", cand.fp.kind, "post", culprit=cand.sha,
                            note=note), members)


def revert_pairs(b, src: str) -> list:
    """(original candidate, revert night, revert sha) for reverts inside the window."""
    out = []
    commits = {c.sha: c for n, w in _windows(b, src) for c in w}
    night_of = {c.sha: n for n, w in _windows(b, src) for c in w}
    by_subject = {c.subject: c for c in commits.values()}
    for sha, c in sorted(commits.items(), key=lambda kv: b.repo.index(kv[0])):
        m = re.match(r'Revert "(.*)"', c.subject)
        orig = None
        if m:
            orig = by_subject.get(m.group(1)) or next(
                (o for o in commits.values() if o.subject.startswith(m.group(1)[:60])), None)
        elif "revert" in c.subject.lower():  # "[pallas] revert ...", "Finish reverting ..."
            same = [o for o in commits.values() if b.repo.index(o.sha) < b.repo.index(sha)
                    and 0 < night_of[sha] - night_of[o.sha] <= 8
                    and set(o.files) & {f for f in c.files if f.startswith("helion/")}]
            orig = same[-1] if same else None
        if orig is None or night_of[sha] <= night_of[orig.sha]:
            continue
        fp = classify(orig) or _relaxed(orig)
        if fp is None:
            continue
        n = night_of[orig.sha]
        mem = members_of(b, src, n, fp)
        if mem:
            out.append((Cand(src, n, orig.sha, orig.subject, fp, mem), night_of[sha], sha))
    return out


def _relaxed(c) -> Footprint | None:
    """A reverted commit without family words: everything its slice runs."""
    if not any(f.startswith("helion/") for f in c.files):
        return None
    s = c.subject.lower()
    kind = "heuristics/config" if any(f.startswith("helion/autotuner/") for f in c.files) \
        or "config" in s else "code"
    if "pallas" in s or "tpu" in s:
        return Footprint("tpu", kind, "all", ("tpu",), ("softmax", "layer_norm", "rms_norm",
                         "rms_norm-bwd", "welford", "cross_entropy", "kl_div", "gemm", "bmm",
                         "flash_attention"), (), ())
    return Footprint("triton", kind, "all", GPU, ("softmax", "layer_norm", "layer_norm-bwd",
                     "rms_norm", "rms_norm-bwd", "cross_entropy", "welford", "gemm", "int4_gemm",
                     "grouped_gemm", "flash_attention", "jsd", "kl_div"), (), ())


def _pick(r, items):
    return items[int(r.integers(len(items)))] if items else None


def plant_all(b) -> None:
    r = rng(b.seed, "plant")
    N = b.N
    lo = 10
    used_nights: set = set()

    def fresh(c: Cand, first: int = lo) -> bool:
        return c.night >= first and c.night not in used_nights and all(
            b.is_free(c.source, k, c.night - 3, c.night + 3) for k in c.members)

    slices: set = set()

    def plant(c: Cand, direction: str, **kw) -> None:
        real_effect(b, r, c, direction, **kw)
        used_nights.add(c.night)
        if c.source == "dashboard":
            slices.add(c.fp.slice)

    def lean(c: Cand) -> str:
        """A subject that promises speed usually delivers (not always)."""
        s = c.subject.lower()
        good = re.search(r"improv|optimi|faster|speed|restore|fix regress|fast path|overlap|"
                         r"vectori|fus(e|ion)|hoist|prefetch|cache", s)
        return "improvement" if (r.uniform() < 0.8) == bool(good) else "regression"

    # Reverts in the window: a regression that the revert ends.
    for c, end, end_sha in revert_pairs(b, "dashboard"):
        if fresh(c, 2) and end > c.night:
            plant(c, "regression", end=end, end_sha=end_sha)

    cands = candidates(b, "dashboard")

    # Two events a week apart on one series.
    pairs = []
    for c1 in cands:
        for c2 in cands:
            if 6 <= c2.night - c1.night <= 8 and set(c1.members) & set(c2.members):
                pairs.append((c1, c2))
    pairs = [p for p in pairs if fresh(p[0]) and fresh(p[1])]
    pair = _pick(r, pairs)
    if pair:
        shared = sorted(set(pair[0].members) & set(pair[1].members))[:1]
        why = f"two events a week apart on {shared[0][0]}/{shared[0][1]}"
        plant(pair[0], "regression", why=why, keep=tuple(shared))
        for k in shared:  # the first event's quiet zone may not veto the second on its series
            b.busy[("dashboard",) + k] -= set(range(pair[1].night - 3, pair[1].night + 4))
        plant(pair[1], "improvement", why=why, keep=tuple(shared))

    def choose(pred, direction=None, why="", relaxed=False) -> Cand | None:
        c = _pick(r, [c for c in candidates(b, "dashboard", relaxed) if pred(c) and fresh(c)])
        if c is not None:
            plant(c, direction or lean(c), why=why)
        return c

    def count(pred) -> int:
        return sum(1 for p in b.planted if p.source == "dashboard" and p.culprit and pred(p))

    step = choose(lambda c: c.fp.slice in ("triton", "rocm") and c.fp.family in
                  ("norm", "matmul", "attention", "ssm", "elementwise", "all")
                  and len(c.members) >= 3, "regression", "family-wide; a stray outlier the night before")
    if pair is None:
        choose(lambda c: c.fp.family != "single" and len(c.members) >= 2
               and (step is None or abs(c.night - step.night) > 10), "improvement")
    for sl in ("cute", "tpu"):
        if sl not in slices:
            choose(lambda c, sl=sl: c.fp.slice == sl)
    choose(lambda c: c.fp.family == "single", why="one kernel")
    if count(lambda p: p.kind == "heuristics/config") < 2:
        choose(lambda c: c.fp.kind == "heuristics/config" and len(c.members) >= 2)
    if not any(p.culprit and b.model.effects[p.effect].start >= N - 3 for p in b.planted):
        late = lambda c: c.night >= N - 3  # noqa: E731
        if choose(late, why="in the last nightlies") is None:
            choose(late, why="in the last nightlies", relaxed=True)

    # A stray speedup-timer outlier on the night before a step (same direction).
    if step is not None:
        key = step.members[int(r.integers(len(step.members)))]
        e = Effect(start=step.night - 1, end=step.night, source="dashboard",
                   targets={key: {"sp": 1.0 + r.uniform(0.15, 0.2)}}, tag="outlier",
                   transient=True)
        b.add_effect(e, Planted(-1, "dashboard", "none", "", "pre"), ())

    # Pretuned: a real change, and one on a series with only two nightlies before its step.
    # Pretuned kernels run checked-in configs (no search at run time): only code generation
    # moves them, so autotuner commits are not their culprits.
    pc = [c for c in candidates(b, "pretuned") if fresh(c) and c.fp.kind == "code"]
    young = [c for c in pc if any(b.birth.get(("pretuned",) + k) == c.night - 2 for k in c.members)]
    c = _pick(r, young) or None
    if c is not None:
        plant(c, "regression" if r.uniform() < 0.5 else "improvement",
              members=tuple(k for k in c.members if b.birth.get(("pretuned",) + k) == c.night - 2),
              why="series with two nightlies before the step")
    c = _pick(r, [x for x in candidates(b, "pretuned") if fresh(x) and x.fp.kind == "code"])
    if c is not None:
        plant(c, "regression" if r.uniform() < 0.5 else "improvement")

    plant_hardware(b, r)
    plant_noise(b, r)


def _platform_keys(b, n, plat, src="dashboard"):
    return tuple(k for k in sorted(b.sched(src, n)) if k[0] == plat and b.available(src, n, k)
                 and b.available(src, n - 1, k))


def plant_hardware(b, r) -> None:
    """A thermal week on one GPU platform (ends), and a multi-night outage of one platform."""
    N = b.N
    opts = []
    for s in range(15, N - 12):
        for plat in ("h100", "b200", "mi350x", "mi325x"):
            keys = _platform_keys(b, s, plat)
            if len(keys) < 4 or not all(b.sched("dashboard", s)[k][1].get("latency") for k in keys):
                continue
            length = 5 + int(unit_of(b.seed, "thermal-len", s, plat) * 4)
            e = s + length
            if e >= N - 1 or any(not b.is_free("dashboard", k, s - 2, s + 2) or
                                 not b.is_free("dashboard", k, e - 2, e + 2) for k in keys):
                continue
            opts.append((s, plat, e, keys))
    pick = _pick(r, opts)
    if pick:
        s, plat, e, keys = pick
        base = r.uniform(0.07, 0.13)
        targets = {}
        for key in keys:
            w = 1.3 if key[1] in ("gemm", "int4_gemm", "grouped_gemm", "flash_attention",
                                  "mamba2_chunk_scan", "mamba2_chunk_state", "gdn_fwd_h") else 0.7
            f = 1.0 + base * w * r.uniform(0.8, 1.2)
            targets[key] = {"b": f, "t": f, "c": f, "h": f ** (1.0 + r.normal(0, 0.1))}
        eff = Effect(start=s, end=e, source="dashboard", targets=targets, tag="thermal")
        b.add_effect(eff, Planted(-1, "dashboard", "hardware", "thermal", "pre",
                                  note=f"planted thermal throttling on {plat}, {e - s} nights"), keys)
    opts = []
    for s in range(12, N - 6):
        for plat in ("mi350x", "tpu", "mi325x"):
            keys = _platform_keys(b, s, plat)
            length = 2 + int(unit_of(b.seed, "outage-len", s, plat) * 3)
            e = s + length
            if len(keys) < 3 or e >= N - 1:
                continue
            if any(not b.is_free("dashboard", k, s - 2, e + 2) for k in keys):
                continue
            opts.append((s, plat, e, keys))
    pick = _pick(r, opts)
    if pick:
        s, plat, e, keys = pick
        eff = Effect(start=s, end=e, source="dashboard", targets={}, tag="outage")
        b.add_effect(eff, Planted(-1, "dashboard", "hardware", "outage", "pre", outage=plat,
                                  members=keys,
                                  metrics=("helion_speedup_geomean", "helion_latency_avg_ms"),
                                  note=f"planted outage: no {plat} rows for {e - s} nights"), keys)


def unit_of(*keys) -> float:
    return float(rng(*keys).uniform())


def plant_noise(b, r) -> None:
    """Two 1-2 night blips (both timers), a pretuned blip, and a series that turns noisy."""
    N = b.N
    for src, count in (("dashboard", 2), ("pretuned", 1)):
        opts = []
        for s in range(12, N - 4):
            for key in sorted(b.sched(src, s)):
                length = 1 + int(unit_of(b.seed, "blip", s, key) < 0.4)
                if s + length >= N - 1:
                    continue
                if not all(b.available(src, d, key) for d in range(s - 1, s + length + 1)):
                    continue
                if not b.is_free(src, key, s - 2, s + length + 2):
                    continue
                if b.birth.get((src,) + key, 0) > s - 4:  # a blip needs a history to stand out
                    continue
                opts.append((s, key, length))
        for _ in range(count):
            opts = [o for o in opts if b.is_free(src, o[1], o[0] - 2, o[0] + o[2] + 2)]
            pick = _pick(r, opts)
            if not pick:
                break
            s, key, length = pick
            f = 1.0 + r.uniform(0.12, 0.25)
            f = f if r.uniform() < 0.6 else 1.0 / f
            eff = Effect(start=s, end=s + length, source=src, targets={key: {"h": f}},
                         tag="blip", transient=True)
            b.add_effect(eff, Planted(-1, src, "noise", "blip", "pre", members=(key,),
                                      note=f"planted {length}-night blip"), (key,))
    opts = []
    for s in range(15, max(16, N - 25)):
        for key in sorted(b.sched("dashboard", s)):
            if b.available("dashboard", s, key) and b.available("dashboard", s - 1, key) \
                    and b.is_free("dashboard", key, s - 3, N) and key[0] in GPU:
                opts.append((s, key))
    pick = _pick(r, opts)
    if pick:
        s, key = pick
        b.model.scatter[("dashboard",) + key] = (s, float(r.uniform(0.06, 0.09)))
        eff = Effect(start=s, end=None, source="dashboard", targets={key: {}}, tag="scatter",
                     transient=True)
        b.add_effect(eff, Planted(-1, "dashboard", "noise", "scatter", "pre", members=(key,),
                                  metrics=("helion_speedup_geomean",),
                                  note="planted: the series turns noisy (6-9% per run)"), (key,))
