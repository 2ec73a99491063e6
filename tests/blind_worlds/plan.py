"""Planting the labeled events on real commits of the window."""
from __future__ import annotations

import math
import re

import numpy as np

from .sim import family, rng_for

# Real harness/runner/pin commits of main that carry a mechanism (sha prefix -> plan).
CATALOG = [
    # (sha prefix, cause, kind, spec)
    ("b33ae6b9", "hardware", "runner", dict(plat="h100", m=0.10, file=".github/workflows/benchmark_dispatch.yml",
                                             note="H100 moved to OSDC runners: every h100 kernel slower, baselines and latency too")),
    ("35b19fd4", "hardware", "driver", dict(plat="mi350x", m=0.12, end="5033b49a", file=".github/workflows/benchmark_dispatch.yml",
                                             note="ROCm 7.14 image on mi350x, reverted 3 nights later")),
    ("e5cc383d", "hardware", "driver", dict(plat="tpu", m=-0.08, file=".github/workflows/benchmark_tpu.yml",
                                             note="libtpu pinned to 0.0.43: all tpu kernels faster, baselines too")),
    ("22d88942", "method_change", "timer", dict(comp=1.8, file="benchmarks/run.py",
                                                 note="compile-time measurement fixed: compile_time jumps on every GPU kernel, speedups flat")),
    ("c42fc318", "method_change", "harness", dict(plat="h100", cg=1.09, fams=("norm", "elementwise", "loss"), file=".github/workflows/benchmark.yml",
                                                   note="benchmark subprocess by default: launch-bound h100 kernels' cudagraph speedup drops, latency flat")),
    ("52326a08", "method_change", "timer", dict(pretuned=True, file="pretuned_kernels/_bench.py",
                                                 note="pretuned cudagraph timer now clears L2: cudagraph kernels' geomean shifts")),
]

REAL_MAG = (0.07, 0.30)


def plan_events(self):
    N = len(self.nights)
    busy: dict = {}
    labels_spec = []  # (label kwargs, members, first_bad night, end night)

    def free(members, a, b, src="dashboard"):
        for m in members:
            for (x, y) in busy.get((src,) + tuple(m), []):
                if not (b + 3 < x or a > y + 3):
                    return False
        return True

    def occupy(members, a, b, src="dashboard"):
        for m in members:
            busy.setdefault((src,) + tuple(m), []).append((a, b))

    def add(src, plat, k, start, end, **f):
        self.effects.setdefault((src, plat, k), []).append(self._Effect(start, end, f))

    def change_commit(i, paths, pretuned=False, pattern=None):
        cands = [c for c in self.commits_between(i, pretuned) if any(p == f or f.startswith(p) for f in c.files for p in paths)]
        if pattern:
            good = [c for c in cands if re.search(pattern, self._diff(c.sha, paths))]
            cands = good or cands
        return cands[-1].sha if cands else None

    # ---------------------------------------------------------------- parse-driven method changes
    for i in range(1, N):
        a, b = self.dmatrix(i - 1), self.dmatrix(i)
        groups = {"cudagraph": [], "shapes": [], "autotune": [], "baseline": []}
        for key, cfg in b.series.items():
            old = a.series.get(key)
            if old is None or old.suite != cfg.suite:
                continue
            if old.cudagraph != cfg.cudagraph:
                groups["cudagraph"].append(key)
            if old.shapes != cfg.shapes:
                groups["shapes"].append(key)
            if old.capped != cfg.capped:
                groups["autotune"].append(key)
            if a.torch_pin != b.torch_pin and cfg.suite == "tritonbench" and key[0] != "tpu":
                groups["baseline"].append(key)
        for kind, members in groups.items():
            if not members:
                continue
            if kind == "shapes" and all(k[1] in self.dmatrix(i).series and self.dmatrix(i).series[k].suite == "linattn" for k in members):
                paths = ["benchmarks/run_linattn.py", ".github/workflows/benchmark.yml"]
            else:
                paths = {"cudagraph": ["benchmarks/run.py"], "shapes": ["benchmarks/run.py", "benchmarks/run_linattn.py"],
                         "autotune": [".github/workflows/benchmark.yml"], "baseline": [".github/workflows/benchmark.yml"]}[kind]
            pat = {"cudagraph": r"remove_flags|--cudagraph", "shapes": r"num_inputs|SHAPES|input|shape",
                   "autotune": r"HELION_AUTOTUNE", "baseline": r"torch=="}[kind]
            ch = change_commit(i, paths, pattern=pat)
            occupy(members, i, i)
            labels_spec.append(dict(source="dashboard", cause="method_change", kind=kind, members=sorted(members),
                                    first=i, end=None, change_sha=ch, culprit_sha=None,
                                    note=f"{kind} change parsed from the real files ({len(members)} series)"))
    for i in range(1, N):
        if not (self.nights[i].p_run_id and self.nights[i - 1].p_run_id):
            continue
        a, b = self.pmatrix(i - 1), self.pmatrix(i)
        groups = {"baseline": [], "cudagraph": []}
        for key, cfg in b.series.items():
            old = a.series.get(key)
            if old is None:
                continue
            if old.baselines != cfg.baselines:
                groups["baseline"].append(key)
            if old.cudagraph != cfg.cudagraph:
                groups["cudagraph"].append(key)
        for kind, members in groups.items():
            if members:
                ch = change_commit(i, ["pretuned_kernels/"], pretuned=True,
                                   pattern=r"use_cudagraph|return (True|False)" if kind == "cudagraph" else r'\("[a-z_0-9]+",')
                occupy(members, i, i, "pretuned")
                labels_spec.append(dict(source="pretuned", cause="method_change", kind=kind, members=sorted(members),
                                        first=i, end=None, change_sha=ch, culprit_sha=None,
                                        note=f"pretuned {kind} change parsed from pretuned_kernels/ ({len(members)} series)"))

    # ---------------------------------------------------------------- catalog (runner/driver/timer/harness)
    g = rng_for(self.seed, "plan")
    for prefix, cause, kind, spec in CATALOG:
        c = next((c for c in self.commits if c.sha.startswith(prefix)), None)
        if c is None:
            continue
        pre = bool(spec.get("pretuned"))
        i = self.first_night_with(c.sha, pretuned=pre)
        if i is None or i < 2 or self.fp_index[(self.nights[0].p_full_sha if pre else self.nights[0].full_sha) or c.sha] >= self.fp_index[c.sha]:
            continue
        end = None
        if spec.get("end"):
            ce = next((x for x in self.commits if x.sha.startswith(spec["end"])), None)
            end = self.first_night_with(ce.sha) if ce else None
        if pre:
            m = self.pmatrix(i)
            members = [k for k, cfg in m.series.items() if cfg.cudagraph]
            for (p, k) in members:
                u = float(g.uniform(0.5, 1.5))
                add("pretuned", p, k, i, end, phel=1 + 0.10 * u, pbase=1 + 0.03 * u)
            src = "pretuned"
        else:
            m = self.dmatrix(i)
            src = "dashboard"
            if kind == "timer":
                members = [k for k, cfg in m.series.items() if cfg.compile_time and cfg.suite == "tritonbench"]
                for (p, k) in members:
                    add(src, p, k, i, end, comp=spec["comp"])
            elif kind == "harness":
                members = [k for k, cfg in m.series.items() if k[0] == spec["plat"] and cfg.cudagraph
                           and cfg.suite == "tritonbench" and family(k[1]) in spec["fams"]][:6]
                for (p, k) in members:
                    add(src, p, k, i, end, cg=spec["cg"] * float(g.uniform(0.98, 1.02)))
            else:
                members = [k for k in m.series if k[0] == spec["plat"]]
                for (p, k) in members:
                    u = float(g.uniform(0.7, 1.3))
                    fb = 1 + spec["m"] * u
                    add(src, p, k, i, end, base=fb, impl=fb * float(g.uniform(0.99, 1.01)),
                        hel=fb * (1 + spec["m"] * float(g.uniform(-0.35, 0.35))))
        if not members or not free(members, i, end or i, src):
            if members and kind in ("timer",):
                pass
            elif not members:
                continue
        occupy(members, i, end or i, src)
        labels_spec.append(dict(source=src, cause=cause, kind=kind, members=sorted(members), first=i, end=end,
                                change_sha=c.sha, culprit_sha=None, note=spec["note"]))

    # ---------------------------------------------------------------- thermal episodes and an outage
    def pick_window(plat_filter, length, src="dashboard", lo=5, hi=None):
        hi = hi or N - 2
        for _ in range(60):
            i = int(g.integers(lo, max(lo + 1, hi - length)))
            m = self.dmatrix(i)
            members = [k for k in m.series if plat_filter(k[0])]
            if len(members) >= 3 and all(k in self.dmatrix(min(i + length, N - 1)).series for k in members) \
                    and free(members, i, i + length, src):
                return i, members
        return None, None

    for plat, length, mag in (("b200", 7, 0.09), ("b200_cute", 4, 0.12)):
        i, members = pick_window(lambda p, plat=plat: p == plat, length)
        if i is None:
            continue
        end = i + length
        for (p, k) in members:
            u = float(g.uniform(0.6, 1.4))
            fb = 1 + mag * u
            add("dashboard", p, k, i, end, base=fb, impl=fb, hel=fb * (1 + mag * float(g.uniform(-0.5, 0.5))))
        occupy(members, i, end)
        labels_spec.append(dict(source="dashboard", cause="hardware", kind="thermal", members=sorted(members), first=i,
                                end=end, change_sha=None, culprit_sha=None,
                                note=f"{plat} runs hot for {length} nights: every kernel slower incl. baselines and latency"))
    plat = str(g.choice(["mi350x", "h100"]))
    i, members = pick_window(lambda p: p == plat, 2)
    if i is not None:
        for (p, k) in members:
            add("dashboard", p, k, i, i + 2, fail=2.0)
        occupy(members, i, i + 2)
        labels_spec.append(dict(source="dashboard", cause="hardware", kind="outage", members=sorted(members), first=i,
                                end=i + 2, change_sha=None, culprit_sha=None,
                                note=f"{plat} node broken for 2 nights: every kernel reports run failures (zeros)"))

    # ---------------------------------------------------------------- real regressions on helion/ commits
    real_slots = ["b200_cute", "tpu", "mi350x", "autotuner", "h100", "b200", "last", "improve", "improve", "modest"]
    nights_order = list(range(3, N))
    g.shuffle(nights_order)
    chosen_series = []
    used_culprits = set()
    for slot in real_slots:
        done = False
        order = [x for x in range(max(3, N - 3), N)] if slot == "last" else nights_order
        for i in order:
            m = self.dmatrix(i)
            for c in self.commits_between(i):
                tgt = _real_target(c, m, slot, g) if c.sha not in used_culprits else None
                if tgt is None:
                    continue
                kind, members = tgt
                if not members or not free(members, i - 1, i + 4) or not all(k in self.dmatrix(i - 1).series for k in members):
                    continue
                mag = float(g.uniform(0.07, 0.10)) if slot == "modest" else float(g.uniform(*REAL_MAG))
                direction = "improvement" if slot == "improve" else "regression"
                fac = 1 + mag if direction == "regression" else 1 / (1 + mag)
                for (p, k) in members:
                    add("dashboard", p, k, i, None, hel=fac * float(g.uniform(0.98, 1.02)) if len(members) > 1 else fac)
                    if slot == "modest":
                        self.model.sigma[("dashboard", p, k)] = float(g.uniform(0.025, 0.04))
                occupy(members, i - 1, i + 4)
                labels_spec.append(dict(source="dashboard", cause="real", kind=kind, members=sorted(members), first=i,
                                        end=None, change_sha=None, culprit_sha=c.sha,
                                        note=f"{slot}: helion {'slower' if fac > 1 else 'faster'} by {abs(fac - 1) * 100:.0f}% on {len(members)} kernel(s) after {c.sha[:8]} {c.subject[:60]}"))
                chosen_series.append((i, members))
                used_culprits.add(c.sha)
                done = True
                break
            if done:
                break
    # a second real event a week later in one already-hit single series
    for (i0, members) in chosen_series:
        j = i0 + 7
        if j >= N - 1:
            continue
        key = members[0]
        if key not in self.dmatrix(j).series or not _free_except(busy, key, j, i0):
            continue
        cs = [c for c in self.commits_between(j) if _real_target(c, self.dmatrix(j), key[0], g) is not None]
        if not cs:
            continue
        c = cs[-1]
        add("dashboard", key[0], key[1], j, None, hel=1.12)
        labels_spec.append(dict(source="dashboard", cause="real", kind="code", members=[key], first=j, end=None,
                                change_sha=None, culprit_sha=c.sha,
                                note=f"second step a week after the first on {key[0]}/{key[1]} ({c.sha[:8]} {c.subject[:50]})"))
        occupy([key], j, j + 3)
        break
    # pretuned real: checked-in configs regenerated / heuristics commits touching one kernel's folder
    n_pre = 0
    for i in range(1, N):
        if n_pre >= 3 or not (self.nights[i].p_run_id and self.nights[i - 1].p_run_id):
            continue
        pm = self.pmatrix(i)
        for c in self.commits_between(i, pretuned=True):
            ks = {f.split("/")[1] for f in c.files if f.startswith("pretuned_kernels/") and f.count("/") >= 2 and "_helion_aot_" in f}
            mem = [k for k in pm.series if k[1] in ks and k in self.pmatrix(i - 1).series]
            if not mem or len(mem) > 3 or not free(mem, i - 1, i + 3, "pretuned"):
                continue
            direction = "improvement" if (h32(c.sha) % 3 == 0) else "regression"
            mag = float(g.uniform(0.08, 0.25))
            for (p, k) in mem:
                add("pretuned", p, k, i, None, phel=(1 + mag) if direction == "regression" else 1 / (1 + mag))
            occupy(mem, i - 1, i + 3, "pretuned")
            labels_spec.append(dict(source="pretuned", cause="real", kind="heuristics", members=sorted(mem), first=i,
                                    end=None, change_sha=None, culprit_sha=c.sha,
                                    note=f"pretuned config regenerated in {c.sha[:8]} {c.subject[:50]}"))
            n_pre += 1
            break

    # ---------------------------------------------------------------- noise
    def one_series(src="dashboard", need=4):
        for _ in range(80):
            i = int(g.integers(3, N - 2))
            keys = sorted((self.dmatrix(i) if src == "dashboard" else self.pmatrix(i)).series)
            if not keys:
                continue
            k = keys[int(g.integers(0, len(keys)))]
            if free([k], i - 2, i + need, src):
                return i, k
        return None, None

    for n_out in range(2):
        i, k = one_series()
        if i is not None:
            add("dashboard", k[0], k[1], i, i + 1, cg=float(g.uniform(1.18, 1.25)))
            occupy([k], i, i + 1)
            labels_spec.append(dict(source="dashboard", cause="noise", kind="outlier", members=[k], first=i, end=i + 1,
                                    change_sha=None, culprit_sha=None, note="one-night spike on the cudagraph timer only"))
    for n_bl in range(2):
        i, k = one_series()
        if i is not None:
            length = 1 + n_bl
            add("dashboard", k[0], k[1], i, i + length, hel=float(g.uniform(1.12, 1.2)))
            occupy([k], i, i + length)
            labels_spec.append(dict(source="dashboard", cause="noise", kind="blip", members=[k], first=i, end=i + length,
                                    change_sha=None, culprit_sha=None, note=f"{length}-night blip on helion (both timers) that reverts"))
    i, k = None, None
    for _ in range(80):
        keys = sorted(self.dmatrix(N - 1).series)
        cand = keys[int(g.integers(0, len(keys)))]
        if all(cand in self.dmatrix(x).series for x in (0, N // 2)) and free([cand], 0, N):
            i, k = 1, cand
            break
    if i is not None:
        self.model.sigma[("dashboard", k[0], k[1])] = 0.07
        occupy([k], 0, N)
        labels_spec.append(dict(source="dashboard", cause="noise", kind="scatter", members=[k], first=0, end=None,
                                change_sha=None, culprit_sha=None, note="series with ~7% night-to-night scatter, no step"))
    i, k = one_series("pretuned", need=2)
    if i is not None:
        add("pretuned", k[0], k[1], i, i + 1, phel=1.2)
        occupy([k], i, i + 1, "pretuned")
        labels_spec.append(dict(source="pretuned", cause="noise", kind="outlier", members=[k], first=i, end=i + 1,
                                change_sha=None, culprit_sha=None, note="pretuned one-night spike"))
    self._labels_spec = labels_spec


_TAG_PLAT = [
    (r"\[(cute|cutedsl)\]|cute", "b200_cute", "/cute"),
    (r"\[(pallas|pallas-tpu|tpu)\]|pallas", "tpu", "pallas"),
    (r"\[rocm\]|rocm|gfx9|amd", "mi350x", "rocm"),
]


def _real_target(c, m, slot, g):
    files = [f for f in c.files if f.startswith("helion/")]
    if not files:
        return None
    s = c.subject.lower()
    if re.search(r"\[(metal|mps|docs?|test|testing|lint|ci|dashboard)\]|\blint\b|typo|\bdocs?\b|\btests?\b", s):
        return None  # cannot move GPU/TPU kernel performance
    plat = None
    for pat, p, path_frag in _TAG_PLAT:
        if re.search(pat, s) or any(path_frag in f for f in files):
            plat = p
            break
    kind = "code"
    if plat is None:
        if "autotun" in s or any("autotuner" in f for f in files) or any(x in s for x in ("heuristic", "sm90", "sm100", "config")):
            kind = "heuristics"
            plat = "h100" if re.search(r"h100|sm90|hopper", s) else "b200" if re.search(r"b200|sm100|blackwell", s) else ("b200" if h32(c.sha) % 2 else "h100")
        else:
            plat = "h100" if re.search(r"h100|sm90|hopper", s) else "b200" if re.search(r"b200|sm100|blackwell", s) else ("h100" if h32(c.sha, "p") % 2 else "b200")
    want = {"b200_cute": "b200_cute", "tpu": "tpu", "mi350x": "mi350x", "h100": "h100", "b200": "b200"}.get(slot)
    if slot == "autotuner" and kind != "heuristics":
        return None
    if want and plat != want:
        return None
    keys = sorted(k for k, cfg in m.series.items() if k[0] == plat and cfg.suite != "linattn")
    if not keys:
        return None
    named = [k for k in keys if re.search(r"\b" + re.escape(k[1].replace("-bwd", "")) + r"\b", s)]
    if named:
        return kind, named[:2]
    if plat == "b200_cute" and slot == "b200_cute":
        return kind, keys[: max(3, len(keys) - 1)]  # most of the small platform, baselines flat
    fams = None
    if re.search(r"reduc|norm|softmax|welford", s):
        fams = ("norm", "loss")
    elif re.search(r"matmul|gemm|dot|mma|tma|tcgen", s):
        fams = ("gemm", "attention")
    pool = [k for k in keys if fams is None or family(k[1]) in fams] or keys
    n = 1 if slot in ("modest",) else int(min(len(pool), 1 + h32(c.sha, "n") % 3))
    idx = sorted(set(int(x) for x in g.choice(len(pool), size=n, replace=False)))
    return kind, [pool[x] for x in idx]


def h32(*parts):
    import zlib
    return zlib.crc32("|".join(map(str, parts)).encode()) & 0x7FFFFFFF


def _free_except(busy, key, j, i0):
    """Series free around night j apart from the first event at i0 (planted a week earlier)."""
    for (x, y) in busy.get(("dashboard",) + tuple(key), []):
        if x <= i0 <= y + 1:
            continue
        if not (j + 3 + 3 < x or j - 3 > y + 3):
            return False
    return True
