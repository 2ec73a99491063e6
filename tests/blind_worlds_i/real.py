"""Real code commits planted as regressions and improvements.

Why a module: choosing which real commits carry a move is the judgement call of this set — a
commit must name a performance mechanism (or at least not be a test, docs or API change), its
paths and tag decide the series (``slices``), and the selection deliberately covers the hard
cases a triager meets (a regression reverted later, the last nightlies, a few-kernel platform,
a pretuned kernel, a small step on a quiet series, a window that also holds a harness or pin
commit, a move the night next to a file-carried change).
"""
from __future__ import annotations

import math

from . import slices as S
from .core import Eff
from .events import Draft
from .rand import rng


def _night_of_commit(idxs, cidx: int) -> int | None:
    for n, i in enumerate(idxs):
        if i is not None and i >= cidx:
            return n
    return None


def real_candidates(ctx) -> list:
    """(night, commit, candidate keys, kind, slice) for every code commit in the window."""
    out = []
    n_last = len(ctx.nidx) - 1
    hist = ctx.hist
    for c in hist.commits[ctx.nidx[0] + 1: ctx.nidx[-1] + 1]:
        n = _night_of_commit(ctx.nidx, c.idx)
        if n is None or n < 4:
            continue
        st = hist.state_at(c.idx)
        modules = {k: v["module"] for k, v in st.runpy["kernels"].items()}
        keys = [k for k in ctx.specs[n] if k[0] == "dashboard" and k in ctx.specs[n - 1]]
        pn = _night_of_commit(ctx.pidx, c.idx)
        if pn is not None and pn >= 4 and pn <= n_last:
            keys += [k for k in ctx.specs[pn] if k[0] == "pretuned" and k in ctx.specs[pn - 1]]
        if S.hard_negative(c.subject):
            continue
        cand, kind, sl = S.classify(c.subject, c.files, keys, modules, st.runtpu.get("modules", {}))
        if cand:
            out.append(dict(night=n, pnight=pn, commit=c, keys=cand, kind=kind, slice=sl,
                            strong=S.plausible(c.subject)))
    return out


def _reverts(ctx, cands) -> list:
    """(original candidate, night the revert lands) for reverts inside the window."""
    by_subject = {}
    for cd in cands:
        by_subject.setdefault(cd["commit"].subject.split(" (#")[0].strip(), cd)
    out = []
    for c in ctx.hist.commits[ctx.nidx[0] + 1: ctx.nidx[-1] + 1]:
        if not c.subject.startswith("Revert \""):
            continue
        orig = c.subject[len("Revert \""):].rsplit("\"", 1)[0].split(" (#")[0].strip()
        cd = by_subject.get(orig)
        if cd is None:
            continue
        end = _night_of_commit(ctx.nidx, c.idx)
        if end is not None and end > cd["night"]:
            out.append((cd, end, c))
    return out


def _harness_noise_in_window(ctx, n: int, drafts_nights: set) -> bool:
    lo, hi = ctx.commit_range("dashboard", n)
    return n not in drafts_nights and any(
        any(f.startswith((".github/workflows/benchmark", ".github/ci_commit_pins/", "benchmarks/")) for f in c.files)
        for c in ctx.hist.commits[lo + 1: hi + 1])


def plant_real(ctx, drafts: list[Draft]) -> list[Draft]:
    r = rng(ctx.seed, "real")
    loose = real_candidates(ctx)  # any code commit a triager could not rule out from its subject
    cands = [cd for cd in loose if cd["strong"]]  # those that name a performance mechanism
    N = len(ctx.nidx)
    cfg_nights = {d.night for d in drafts}
    chosen = []
    # a commit that already carries a file-level change is labeled by that change
    used_commits = {d.culprit or d.change for d in drafts}

    def ok(cd, allow_busy=False):
        if cd["commit"].sha in used_commits:
            return False
        ks = []
        for k in cd["keys"]:
            n = cd["night"] if k[0] == "dashboard" else cd["pnight"]
            # allow_busy: next to another event, but never on the same nightly of the same series
            if ctx.free(k, n) or (allow_busy and n not in ctx.events.get(k, ())):
                ks.append(k)
        return ks

    def take(cd, why, end=None, end_commit=None, small=False, allow_busy=False):
        ks = ok(cd, allow_busy)
        if not ks:
            return False
        chosen.append((cd, ks, why, end, end_commit, small))
        used_commits.add(cd["commit"].sha)
        for k in ks:
            n = cd["night"] if k[0] == "dashboard" else cd["pnight"]
            ctx.mark(k, n, pad=4)
            ctx.events.setdefault(k, set()).add(n)
        return True

    # a regression that was later reverted (episode with an end)
    for cd, end, rc in _reverts(ctx, cands)[:2]:
        take(cd, "reverted", end=end, end_commit=rc.idx)
    # an event in the last two nightlies
    late = [cd for cd in cands if cd["night"] >= N - 2 and any(k[0] == "dashboard" for k in cd["keys"])] or \
        [cd for cd in loose if cd["night"] >= N - 2 and any(k[0] == "dashboard" for k in cd["keys"])]
    if late:
        take(late[int(r.integers(len(late)))], "last nightlies", allow_busy=True)
    # a platform with few kernels (CuTe, TPU) and the pretuned CuTe kernels
    for sl in ("cute", "pallas"):
        pool = [cd for cd in cands if cd["slice"] == sl and 8 < cd["night"] < N - 3]
        if pool:
            take(pool[int(r.integers(len(pool)))], f"few-kernel platform ({sl})")
    pre = [cd for cd in cands if any(k[0] == "pretuned" for k in cd["keys"])]
    if pre:
        take(pre[int(r.integers(len(pre)))], "pretuned")
    # the autotuner picks a different config (heuristics)
    heur = [cd for cd in cands if cd["kind"] == "heuristics/config" and cd["slice"] == "triton"]
    if heur:
        take(heur[int(r.integers(len(heur)))], "autotuner heuristics")
    # a real move in a window that also holds an unrelated harness / pin commit
    mixed = [cd for cd in cands if _harness_noise_in_window(ctx, cd["night"], cfg_nights) and cd["slice"] != "pallas"]
    if mixed:
        take(mixed[int(r.integers(len(mixed)))], "window also holds a harness/pin commit")
    # next to a file-carried event on the same platform (neighbouring nights)
    adj = [cd for cd in cands if any(abs(cd["night"] - d.night) == 1 and d.source == "dashboard" and
                                     {k[1] for k in d.keys} & {k[1] for k in cd["keys"]} for d in drafts)] or \
        [cd for cd in loose if any(abs(cd["night"] - d.night) == 1 and d.source == "dashboard" and
                                   {k[1] for k in d.keys} & {k[1] for k in cd["keys"]} for d in drafts)]
    if adj:
        take(adj[int(r.integers(len(adj)))], "neighbouring nights", allow_busy=True)
    # a small step on a quiet series
    quiet = [cd for cd in cands if cd["slice"] in ("examples", "triton", "cute") and
             any(ctx.profs_get(k).sig < 0.012 and ctx.free(k, cd["night"]) for k in cd["keys"] if k[0] == "dashboard")]
    if quiet:
        take(quiet[int(r.integers(len(quiet)))], "small step on a quiet series", small=True)
    target = int(r.integers(9, 13))
    tries = 0
    while len(chosen) < target and tries < 200 and cands:
        tries += 1
        take(cands[int(r.integers(len(cands)))], "spread")

    out = []
    for cd, ks, why, end, end_commit, small in chosen:
        out += _real_drafts(ctx, cd, ks, why, end, end_commit, small)
    return out


def _real_drafts(ctx, cd, ks, why, end, end_commit, small) -> list[Draft]:
    c = cd["commit"]
    r = rng(ctx.seed, "realfx", c.sha)
    if small:
        ks = sorted([k for k in ks if k[0] == "dashboard"], key=lambda k: (ctx.profs_get(k).sig, k))[:1]
    else:
        n_max = {"examples": 6, "cute": 4, "pallas": 4, "linattn": 4, "rocm": 5, "triton": 4}.get(cd["slice"], 4)
        order = [ks[i] for i in r.permutation(len(ks))]
        ks = order[:max(1, int(r.integers(1, n_max + 1)))]
    improve = S.looks_like_improvement(c.subject) and r.random() < 0.75 and end is None
    if not improve and end is None and r.random() < 0.3 and not S.looks_like_improvement(c.subject):
        improve = True
    lo, hi = (0.05, 0.08) if small else (0.08, 0.3)
    base = math.exp(r.uniform(math.log(1 + lo), math.log(1 + hi)))
    drafts = {}
    for k in ks:
        rk = rng(ctx.seed, "realk", c.sha, *k)
        m = base if small else base ** rk.uniform(0.7, 1.3)
        fh = 1 / m if improve else m
        f = {"h": fh}
        if cd["kind"] == "heuristics/config" and k[0] == "dashboard" and rk.random() < 0.5:
            f["ct"] = float(math.exp(rk.normal(0, 0.25)))
        n = cd["night"] if k[0] == "dashboard" else cd["pnight"]
        ctx.add_eff(Eff(k, n, end, f, commit_idx=c.idx, end_commit=end_commit))
        drafts.setdefault(k[0], []).append(k)
    out = []
    for src, keys in drafts.items():
        n = cd["night"] if src == "dashboard" else cd["pnight"]
        e = end if src == "dashboard" else (_night_of_commit(ctx.pidx, end_commit) if end_commit else None)
        out.append(Draft(id=f"I{ctx.seed}-{n:03d}-real-{src[0]}-{c.sha[:7]}", source=src, cause="real",
                         kind=cd["kind"], keys=keys, night=n, end=e, culprit=c.sha, change=None, honest="after",
                         note=f"{cd['slice']} commit '{c.subject[:90]}' ({why})"))
    return out
