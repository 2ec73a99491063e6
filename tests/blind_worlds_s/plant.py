"""Planting events in a world: an Effect (what the timers do) and the Label (what a careful human
should conclude), from one description. Label semantics follow /work/shared/helion-dashboard.md:
- real: Helion got slower/faster (both Helion timers move; baselines, Triton, torch.compile flat);
  culprit = the real commit. Honest speedup: the new level.
- method_change: the measurement changed (one timer, the baseline, the shapes, the autotune
  setting); change = the commit that changed it. Honest: the side that measures the kernel right,
  chosen per event (`honest="old"` or `"new"`), with the reason in the note.
- hardware: the environment changed (every timer of a platform, the latency too); change = the
  runner/image commit when there is one. Honest: the healthy side (for a permanent swap, the new
  machine; for an episode, outside it).
- noise: a one-night blip or a series turning noisy: no persistent step, nothing to report."""
from __future__ import annotations

import math

from . import simulate as S

HEADLINE = "helion_speedup_geomean"


def _resolve(w, night: int, spec) -> list:
    """Members: (platform, kernel) with '*' wildcards, present at the night and the one before."""
    now = w.series_at(night)
    before = w.series_at(night - 1) if night > 0 else {}
    out = []
    for p, k in spec:
        for key in sorted(now):
            if k.startswith("suite:"):
                ok_k = now[key].suite == k[len("suite:"):]
            else:
                ok_k = k == "*" or key[1] == k
            if (p == "*" or key[0] == p) and ok_k and key in before and key not in out:
                out.append(key)
    return out


def _jit(w, lid, key, lo=0.8, hi=1.2) -> float:
    return lo + (hi - lo) * S._u(w.seed, "jit", lid, key)


def _boundary(w, keys, *nights, pretuned=False):
    d = w._pboundaries if pretuned else w._boundaries
    for k in keys:
        for n in nights:
            if n is not None:
                d.setdefault(k, set()).add(n)


def _metrics(w, night, keys, shifts_of) -> tuple:
    ms = w.series_at(night)
    out = []
    for key in keys:
        m = ms[key]
        sh = shifts_of(key)
        sp = sh.get("base", 0) - sh.get("helion", 0)
        if abs(sp) >= 0.03:
            out.append(HEADLINE)
        if m.has_triton and abs(sh.get("base", 0) - sh.get("triton", 0)) >= 0.03:
            out.append("triton_speedup_geomean")
        if m.has_tc and abs(sh.get("base", 0) - sh.get("tc", 0)) >= 0.03:
            out.append("torch_compile_speedup_geomean")
        if m.has_latency and abs(sh.get("lat", 0)) >= 0.03:
            out.append("helion_latency_avg_ms")
        if m.has_compile and abs(sh.get("compile", 0)) >= 0.05:
            out.append("compile_time_geomean_s")
    order = [HEADLINE, "helion_latency_avg_ms", "triton_speedup_geomean", "torch_compile_speedup_geomean",
             "compile_time_geomean_s"]
    got = [m for m in order if m in out]
    return tuple(got) or (HEADLINE,)


def _effect(w, lid, a, end, shifts, commit=None, end_commit=None, hide=False, shape_salt=None):
    t_start = w.plan_times[a] - (w.plan_times[a] - w.plan_times[a - 1]) / 2
    t_end = None
    if end is not None and end < len(w.plan_times):
        t_end = w.plan_times[end] - (w.plan_times[end] - w.plan_times[end - 1]) / 2
    e = S.Effect(label_id=lid, start=a, end=end, shifts=shifts, hide=hide,
                 pos=w._pos[w.full(commit)] if commit else None,
                 end_pos=w._pos[w.full(end_commit)] if end_commit else None,
                 t_start=t_start, t_end=t_end, shape_salt=shape_salt)
    w.effects.append(e)
    return e


def _honest(w, keys, a, lid, side):
    """Deferred: resolved once every effect of the world is planted (see SWorld._resolve_honest)."""
    return ("dash", tuple(keys), a, lid, side)


def real(w, lid, commit, members, change, kind="code", note="", compile_change=0.0, end_commit=None,
         jitter=(0.8, 1.2)):
    """A real move of Helion itself: `change` is the fractional change of the speedup (-0.12 = 12%
    slower); both Helion timers move; the culprit is the commit."""
    a = w.night_of_commit(commit)
    end = w.night_of_commit(end_commit) if end_commit else None
    keys = _resolve(w, a, members)
    assert keys, (lid, members)
    shifts = {}
    for key in keys:
        c = change * _jit(w, lid, key, *jitter)
        t = -math.log(1 + c)
        shifts[key] = {"helion": t, "lat": t}
        if compile_change:
            shifts[key]["compile"] = math.log(1 + compile_change * _jit(w, lid, key, 0.7, 1.3))
    _effect(w, lid, a, end, shifts, commit=commit, end_commit=end_commit)
    _boundary(w, keys, a, end)
    w.add_label(id=lid, source="dashboard", cause="real", kind=kind,
                direction="regression" if change < 0 else "improvement", members=keys,
                metrics=_metrics(w, a, keys, lambda k: shifts[k]), first_bad=a, end=end,
                culprit=w.full(commit), change=None, honest=_honest(w, keys, a, lid, "new"), note=note)


def method(w, lid, commit, kind, members, streams: dict, honest: str, note="", end_commit=None,
           shape_salt=None, jitter=(0.8, 1.2), per_member: dict | None = None):
    """A measurement change: `streams` are fractional changes of the stream's measured time (+0.1 =
    that timer reads 10% slower)."""
    a = w.night_of_commit(commit)
    end = w.night_of_commit(end_commit) if end_commit else None
    keys = _resolve(w, a, members)
    assert keys, (lid, members)
    shifts = {}
    for key in keys:
        j = _jit(w, lid, key, *jitter)
        st = (per_member or {}).get(key, streams)
        shifts[key] = {s: math.log(1 + v * j) for s, v in st.items()}
    _effect(w, lid, a, end, shifts, commit=commit, end_commit=end_commit, shape_salt=shape_salt)
    _boundary(w, keys, a, end)
    sp = {k: shifts[k].get("base", 0) - shifts[k].get("helion", 0) for k in keys}
    mean_sp = sum(sp.values()) / len(sp)
    w.add_label(id=lid, source="dashboard", cause="method_change", kind=kind,
                direction="regression" if mean_sp < 0 else "improvement", members=keys,
                metrics=_metrics(w, a, keys, lambda k: shifts[k]), first_bad=a, end=end, culprit=None,
                change=w.full(commit), honest=_honest(w, keys, a, lid, honest), note=note)


def hardware(w, lid, kind, members, start, end=None, common=0.15, speed=(-0.10, 0.04), honest="old",
             change=None, end_change=None, note="", streams: dict | None = None):
    """An environment change on one platform: every timer slows by ~`common` (so latency moves),
    with per-timer differences so the speedups of many kernels move by `speed` (a range)."""
    a = w.night_of_commit(start) if change else w.night_of_date(start)
    if end_change:
        e_n = w.night_of_commit(end_change)
    else:
        e_n = w.night_of_date(end) if end else None
    keys = _resolve(w, a, members)
    assert keys, (lid, members)
    shifts = {}
    for key in keys:
        if streams:  # a toolchain change that moves only some timers (e.g. a cuBLAS baseline)
            shifts[key] = {s: math.log(1 + v * _jit(w, lid, key)) for s, v in streams.items()}
            continue
        c = math.log(1 + common * _jit(w, lid, key, 0.85, 1.15))
        u = S._u(w.seed, "hwsp", lid, key)
        sp = speed[0] + (speed[1] - speed[0]) * u
        if abs(sp) < 0.055:  # every member's speedup visibly moves (the era without latency has no other tell)
            sp = 0.055 + 0.02 * u if (sp > 0 or speed[0] >= -0.02) else -0.055 - 0.02 * u
        tsp = -math.log(1 + sp)
        shifts[key] = {"base": c, "helion": c + tsp, "lat": c + tsp,
                       "triton": c + 0.6 * tsp + 0.02 * S._n(w.seed, "hwt", lid, key),
                       "tc": c + 0.5 * tsp + 0.02 * S._n(w.seed, "hwc", lid, key)}
    _effect(w, lid, a, e_n, shifts, commit=change, end_commit=end_change)
    _boundary(w, keys, a, e_n)
    w.add_label(id=lid, source="dashboard", cause="hardware", kind=kind,
                direction="regression" if common > 0 else "improvement", members=keys,
                metrics=_metrics(w, a, keys, lambda k: shifts[k]), first_bad=a, end=e_n, culprit=None,
                change=w.full(change) if change else None, honest=_honest(w, keys, a, lid, honest), note=note)


def outage(w, lid, platform, start, end, note=""):
    a = w.night_of_date(start)
    e_n = w.night_of_date(end) if end else None
    keys = _resolve(w, a, [(platform, "*")])
    shifts = {k: {} for k in keys}
    _effect(w, lid, a, e_n, shifts, hide=True)
    _boundary(w, keys, a, e_n, a - 1)
    w.add_label(id=lid, source="dashboard", cause="hardware", kind="outage", direction="regression",
                members=keys, metrics=(HEADLINE,), first_bad=a, end=e_n, culprit=None, change=None,
                honest=_honest(w, keys, a - 1, lid, "old"), note=note)


def outlier(w, lid, member, day, change, streams=("helion",), note=""):
    """A one-night blip on one series (reverts the next night): noise."""
    a = w.night_of_date(day)
    keys = _resolve(w, a, [member])
    assert keys, (lid, member)
    shifts = {k: {s: -math.log(1 + change) if s == "helion" else math.log(1 + abs(change)) for s in streams}
              for k in keys}
    _effect(w, lid, a, a + 1, shifts).nightly_only = True
    _boundary(w, keys, a)
    w.add_label(id=lid, source="dashboard", cause="noise", kind="outlier", direction="none", members=keys,
                metrics=(HEADLINE,), first_bad=a, end=None, culprit=None, change=None, honest={}, note=note)


def scatter(w, lid, member, day, sig=0.07, note=""):
    """A series that turns noisy from a night on (no step): noise."""
    a = w.night_of_date(day)
    keys = _resolve(w, a, [member])
    assert keys, (lid, member)
    for key in keys:
        m = w.model(key, w.series_at(a)[key].suite)
        m.noisy_from = a
        m.noisy_sig = sig
    _boundary(w, keys, a)
    w.add_label(id=lid, source="dashboard", cause="noise", kind="scatter", direction="none", members=keys,
                metrics=(HEADLINE,), first_bad=a, end=None, culprit=None, change=None, honest={}, note=note)


# ---------------------------------------------------------------- pretuned


def _presolve(w, night, spec) -> list:
    now, before = w.pfacts(night), w.pfacts(night - 1)
    if now is None or before is None:
        return []
    have = {(j.alias, k.name) for j in now.jobs for k in now.kernels if j.alias in k.hardware}
    had = {(j.alias, k.name) for j in before.jobs for k in before.kernels if j.alias in k.hardware}
    out = []
    for p, k in spec:
        for key in sorted(have & had):
            if (p == "*" or key[0] == p) and (k == "*" or key[1] == k) and key not in out:
                out.append(key)
    return out


def _peffect(w, lid, a, end, shifts, commit=None):
    t_end = None
    if end is not None and end < len(w.p_times) and w.p_times[end] is not None:
        t_end = w.p_times[end] - (w.p_times[end] - w.p_times[end - 1]) / 2
    e = S.Effect(label_id=lid, start=a, end=end, shifts=shifts, pos=w._pos[w.full(commit)] if commit else None,
                 t_start=w.p_times[a] - (w.p_times[a] - w.p_times[a - 1]) / 2, t_end=t_end)
    w.peffects.append(e)
    return e


def _phonest(w, keys, a, lid, side):
    return ("pre", tuple(keys), a, lid, side)


def p_real(w, lid, commit, members, change, kind="code", note=""):
    a = w.night_of_commit(commit, pretuned=True)
    keys = _presolve(w, a, members)
    assert keys, (lid, members)
    shifts = {k: {"helion": -math.log(1 + change * _jit(w, lid, k))} for k in keys}
    _peffect(w, lid, a, None, shifts, commit=commit)
    _boundary(w, keys, a, pretuned=True)
    w.add_label(id=lid, source="pretuned", cause="real", kind=kind,
                direction="regression" if change < 0 else "improvement", members=keys, metrics=("geomean",),
                first_bad=a, end=None, culprit=w.full(commit), change=None,
                honest=_phonest(w, keys, a, lid, "new"), note=note)


def p_method(w, lid, commit, kind, members, streams: dict | None, honest: str, note="", auto=False,
             direction=None):
    """A pretuned measurement change. `auto`: the parsed facts carry the change (a baseline added to
    the kernel's `_baselines()`), no extra shift."""
    a = w.night_of_commit(commit, pretuned=True)
    keys = _presolve(w, a, members)
    assert keys, (lid, members)
    shifts = {k: ({s: math.log(1 + v * _jit(w, lid, k)) for s, v in streams.items()} if streams else {})
              for k in keys}
    _peffect(w, lid, a, None, shifts, commit=commit)
    _boundary(w, keys, a, pretuned=True)
    if direction is None:
        sp = sum(shifts[k].get("base", 0) - shifts[k].get("helion", 0) for k in keys)
        direction = "regression" if sp < 0 else "improvement"
    hon = ("pre", tuple(keys), a - 1 if (honest == "old" and auto) else a, lid, "new" if auto else honest)
    w.add_label(id=lid, source="pretuned", cause="method_change", kind=kind, direction=direction, members=keys,
                metrics=("geomean",), first_bad=a, end=None, culprit=None, change=w.full(commit), honest=hon,
                note=note)


def p_hardware(w, lid, kind, members, start, end=None, common=0.14, speed=(-0.10, -0.03), honest="old", note=""):
    """The same environment episode seen by the pretuned suite (its b200 job runs on the same pool)."""
    a = w.night_of_date(start)
    e_n = w.night_of_date(end) if end else None
    keys = _presolve(w, a, members)
    assert keys, (lid, members)
    shifts = {}
    for key in keys:
        c = math.log(1 + common * _jit(w, lid, key, 0.85, 1.15))
        u = S._u(w.seed, "phwsp", lid, key)
        sp = speed[0] + (speed[1] - speed[0]) * u
        if abs(sp) < 0.055:
            sp = -0.055 - 0.02 * u if sp <= 0 else 0.055 + 0.02 * u
        shifts[key] = {"base": c, "helion": c - math.log(1 + sp)}
    _peffect(w, lid, a, e_n, shifts)
    _boundary(w, keys, a, e_n, pretuned=True)
    w.add_label(id=lid, source="pretuned", cause="hardware", kind=kind,
                direction="regression" if common > 0 else "improvement", members=keys, metrics=("geomean",),
                first_bad=a, end=e_n, culprit=None, change=None, honest=_phonest(w, keys, a, lid, honest), note=note)


def p_outlier(w, lid, member, day, change, note=""):
    a = w.night_of_date(day)
    keys = _presolve(w, a, [member])
    assert keys, (lid, member)
    shifts = {k: {"helion": -math.log(1 + change)} for k in keys}
    _peffect(w, lid, a, a + 1, shifts).nightly_only = True
    _boundary(w, keys, a, pretuned=True)
    w.add_label(id=lid, source="pretuned", cause="noise", kind="outlier", direction="none", members=keys,
                metrics=("geomean",), first_bad=a, end=None, culprit=None, change=None, honest={}, note=note)
