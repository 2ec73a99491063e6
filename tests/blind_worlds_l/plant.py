"""The event catalogue of set L: which real commits and machine events move which series, and how.

My model of each mechanism (written from the dashboard notes and the real diffs, not from any monitor):
- real / code: Helion's kernel time changes (both timers: CUDA-graph speedup and do_bench latency);
  baselines and comparators untouched. Honest = the new value (it is real).
- real / heuristics/config: same, but the commit is an autotuner / heuristic change (helion/autotuner,
  warp caps) or a regenerated pretuned config (_helion_aot_*). Honest = new value.
- method_change / cudagraph: mechanical, from `remove_flags` parsed at each sha. Without graphs the
  speedup timer adds launch overhead to baseline and Helion alike (so all three speedups move);
  do_bench latency does not change. Honest = the CUDA-graph-timed side.
- method_change / shapes: mechanical, from `num_inputs` / linattn SHAPES at each sha: the geomean
  and the latency mean cover other shapes. Honest = the side with more shapes (broader coverage).
- method_change / baseline: torch pin in benchmark.yml moves eager baseline times (all three
  speedups move together, latency flat); pretuned baseline set changes move the fastest-baseline
  geomean. Honest = the new side (the current comparator).
- method_change / autotune: HELION_AUTOTUNE_* budget caps give heavy kernels worse configs (both
  timers slower, compile time much lower): honest = the full-autotune (old) side. The fixed nightly
  seed moves a couple of kernels a little; honest = new (deterministic) side.
- method_change / harness: harness changes (tritonbench run once instead of twice, subprocess mode)
  move only the speedup timer of some kernels; latency flat. Honest = new side.
- method_change / timer: the pretuned cudagraph timer starts clearing L2 (adds a cold-cache cost
  to Helion and baselines alike, pulling ratios toward 1). Honest = new side.
- hardware / runner, driver/toolchain: one platform only; every time scales (latency moves a lot),
  Helion vs baseline shift a little per kernel. Honest = new side (it is the new machine).
  TPU jax/libtpu/torch_tpu pins are the TPU's own toolchain.
- hardware / thermal: a platform runs slow for some nights, then recovers; honest = the old side.
- hardware / outage: a platform is missing for some nights.
- noise / scatter: a series' scatter grows from some night on; noise / outlier: one night, one timer.
"""
from __future__ import annotations

import re

import numpy as np

from .model import Effect, h01

HEAVY = ("gemm", "flash_attention", "attention", "mamba2", "gdn", "int4", "grouped")
HARNESS = {"ea484a38": "tritonbench runs each kernel once instead of twice",
           "c42fc318": "benchmark runs default to a subprocess",
           "8435f1ee": "benchmark phase moved into a subprocess with a per-config timeout"}
REVERT_PAIRS = [("ec27d559", "1e3d383e")]
L2_SHA = "52326a08"
SPEEDUPS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
HEAD_LAT = ("helion_speedup_geomean", "helion_latency_avg_ms")


def _full(w, short):
    try:
        return w.git.git("rev-parse", short).strip()
    except Exception:
        return None


def _night_of_commit(w, sha):
    """Index of the first nightly whose sha contains ``sha`` (first-parent), or None."""
    i = w.fp_index.get(sha)
    if i is None:
        return None
    for n, night in enumerate(w.nights):
        if w.fp_index[night.full_sha] >= i:
            return n if n > 0 and w.fp_index[w.nights[n - 1].full_sha] < i else None
    return None


def _p_night_of_commit(w, sha):
    i = w.fp_index.get(sha)
    if i is None:
        return None
    for n, night in enumerate(w.nights):
        if night.p_full_sha and w.fp_index[night.p_full_sha] >= i:
            return n if n > 0 and w.nights[n - 1].p_full_sha and w.fp_index[w.nights[n - 1].p_full_sha] < i else None
    return None


def _find_commit(w, commits, pred):
    """The commit in ``commits`` (oldest first) at which pred(facts_before, facts_after) first holds."""
    prev = None
    for c in commits:
        fb = w.facts(prev) if prev else None
        if prev is None:
            prev = w.fp[w.fp_index[c] - 1][0]
            fb = w.facts(prev)
        fa = w.facts(c)
        if pred(fb, fa):
            return c
        prev = c
    return commits[-1] if commits else None


def _moved(w, n, members, src="dashboard", thr=0.03):
    out = []
    for m in members:
        if src == "dashboard":
            a, b = w.expected(n - 1, *m), w.expected(n, *m)
        else:
            a, b = w.p_expected(n - 1, *m), w.p_expected(n, *m)
        if a and b and abs(b / a - 1) > thr:
            out.append(m)
    return out


NOT_PERF = re.compile(r"test|flaky|typo|lint|docs?\b|comment|message|console|logging|\blog\b|print|warning|"
                      r"cosmetic|readme|ci\]|\[ci|skip|version bump|deprecat|\bmove\b|rename|refactor|cleanup|typing|"
                      r"type hint|_dist|analysis|telemetry", re.I)
PERF_PATHS = ("helion/_compiler/", "helion/runtime/", "helion/language/", "helion/autotuner/", "helion/_kernels/")


def _slice(subject, files):
    s = subject.lower()
    paths = " ".join(files)
    if NOT_PERF.search(subject) or not any(f.startswith(PERF_PATHS) for f in files):
        return None
    if re.search(r"\[(cute|cutedsl)\]", s) or "_compiler/cute" in paths or re.search(r"\bcute", s):
        return "cute"
    if re.search(r"\[(pallas|pallas-tpu|tpu)\]", s) or "pallas" in paths or re.search(r"pallas|\btpu", s):
        return "tpu"
    if "[rocm]" in s or "gfx950" in paths or "rocm" in paths.lower() or re.search(r"\bamd\b|rocm|hip\b", s):
        return "rocm"
    if "[autotuner]" in s or "helion/autotuner" in paths:
        return "autotuner"
    if any(p.startswith("helion/") for p in files):
        return "triton"
    return None


def plant(w):
    N = len(w.nights)
    rng = np.random.default_rng([w.seed, 4242])
    w._l2_sha = _full(w, L2_SHA)
    busy_nights: set[int] = set()

    def dplats(n):
        return [p for p in w.plan[n] if p in ("h100", "b200", "mi350x", "mi325x", "b200_cute")]

    # ---------------------------------------------------------------- 1. mechanisms from the real diffs
    for n in range(1, N):
        f0, f1 = w.facts(w.nights[n - 1].full_sha), w.facts(w.nights[n].full_sha)
        if f0.sha == f1.sha:
            continue
        win = w.window(n - 1, n)
        # cudagraph / shapes per GPU kernel
        for kind, key in (("cudagraph", "no_cudagraph"), ("shapes", "num_inputs")):
            changed = [k for k in f1.run["kernels"] if k in f0.run["kernels"]
                       and f0.gpu_opts(k)[key] != f1.gpu_opts(k)[key]]
            for k in changed:
                members = [(p, k) for p in dplats(n) if w.suite(n, p, k) == "gpu" and w.suite(n - 1, p, k) == "gpu"]
                members = [m for m in _moved(w, n, members) if w.free(("dashboard", *m), n, 2)]
                if not members:
                    continue
                c = _find_commit(w, win, lambda a, b, k=k, key=key: a.gpu_opts(k)[key] != b.gpu_opts(k)[key])
                if kind == "cudagraph":
                    honest = "old" if f1.gpu_opts(k)["no_cudagraph"] else "new"
                    d = "regression" if w.expected(n, *members[0]) < w.expected(n - 1, *members[0]) else "improvement"
                    w.label("dashboard", "method_change", "cudagraph", d, members, SPEEDUPS, n, change=c,
                            honest=honest, note=f"remove_flags --cudagraph changed for {k} in benchmarks/run.py")
                else:
                    more = f1.gpu_opts(k)["num_inputs"] > f0.gpu_opts(k)["num_inputs"]
                    d = "regression" if w.expected(n, *members[0]) < w.expected(n - 1, *members[0]) else "improvement"
                    w.label("dashboard", "method_change", "shapes", d, members, HEAD_LAT, n, change=c,
                            honest="new" if more else "old",
                            note=f"num_inputs for {k}: {f0.gpu_opts(k)['num_inputs']} -> {f1.gpu_opts(k)['num_inputs']}")
                busy_nights.add(n)
        # linear-attention shapes
        if f0.linattn and f1.linattn and (f0.linattn["shapes"] != f1.linattn["shapes"]):
            members = [(p, k) for p in ("h100", "b200") for k in w.series_on(n, p)
                       if w.suite(n, p, k) == "linattn" and w.suite(n - 1, p, k) == "linattn"]
            members = _moved(w, n, members)
            if members:
                c = _find_commit(w, win, lambda a, b: bool(a.linattn) and bool(b.linattn) and a.linattn["shapes"] != b.linattn["shapes"])
                more = len(f1.linattn["shapes"]) > len(f0.linattn["shapes"])
                w.label("dashboard", "method_change", "shapes", "regression", members, HEAD_LAT, n, change=c,
                        honest="new" if more else "old", note="run_linattn.py SHAPES changed")
                busy_nights.add(n)
        # torch pin (baselines)
        pin = lambda f: tuple(x for x in f.bench["pins"] if re.match(r"torch==\d+\.\d+\.\*$", x))
        if pin(f0) and pin(f1) and pin(f0) != pin(f1):
            c = _find_commit(w, win, lambda a, b: pin(a) != pin(b))
            members = []
            for p in dplats(n):
                for k in w.series_on(n, p):
                    if w.suite(n, p, k) != "gpu":
                        continue
                    u = h01(w.seed, c, p, k, "pin")
                    if u < 0.3 and w.free(("dashboard", p, k), n):
                        fb = (0.86 + 0.06 * u / 0.3) if u < 0.15 else (1.08 + 0.07 * u / 0.3)
                        w.effects.append(Effect(p, k, "base", fb, n))
                        w.effects.append(Effect(p, k, "tc", fb * 0.98, n))
                        w.effects.append(Effect(p, k, "tri", fb, n))
                        members.append((p, k))
                    else:
                        w.effects.append(Effect(p, k, "base", 1 + 0.02 * (u - 0.65), n))
            members = _moved(w, n, members)
            if members:
                w.label("dashboard", "method_change", "baseline", "regression", members, SPEEDUPS, n, change=c,
                        note=f"torch pin {pin(f0)} -> {pin(f1)} in benchmark.yml: eager baselines moved")
                busy_nights.add(n)
        # autotune settings (benchmark.yml env or the nightly env_vars)
        if f0.bench["autotune"] != f1.bench["autotune"]:
            c = _find_commit(w, win, lambda a, b: a.bench["autotune"] != b.bench["autotune"])
            members = []
            for p in dplats(n):
                for k in w.series_on(n, p):
                    if w.suite(n, p, k) == "gpu" and any(h in k for h in HEAVY) and w.free(("dashboard", p, k), n):
                        u = h01(w.seed, c, p, k, "at")
                        w.effects.append(Effect(p, k, "hel", 1.09 + 0.1 * u, n))
                        w.effects.append(Effect(p, k, "compile", 0.5 + 0.1 * u, n))
                        members.append((p, k))
            if members:
                w.label("dashboard", "method_change", "autotune", "regression", members,
                        HEAD_LAT + ("compile_time_geomean_s",), n, change=c, honest="old",
                        note=f"autotune settings {f0.bench['autotune']} -> {f1.bench['autotune']}: capped search, worse configs")
                busy_nights.add(n)
        if f0.has_nightly_file and f1.has_nightly_file and f0.nightly["env"] != f1.nightly["env"] and "AUTOTUNE" in f1.nightly["env"]:
            c = _find_commit(w, win, lambda a, b: a.nightly["env"] != b.nightly["env"])
            members = []
            cands = [(p, k) for p in dplats(n) for k in w.series_on(n, p) if w.suite(n, p, k) == "gpu"]
            for (p, k) in sorted(cands, key=lambda m: h01(w.seed, "seedfix", *m))[:3]:
                if w.free(("dashboard", p, k), n):
                    u = h01(w.seed, "seedfixf", p, k)
                    w.effects.append(Effect(p, k, "hel", 0.88 + 0.04 * u if u < 0.5 else 1.08 + 0.05 * u, n))
                    members.append((p, k))
            if members:
                for m in members:
                    d = "regression" if w.expected(n, *m) < w.expected(n - 1, *m) else "improvement"
                    w.label("dashboard", "method_change", "autotune", d, [m], HEAD_LAT, n, change=c,
                            note=f"nightly env_vars now {f1.nightly['env']!r}: fixed autotune seed picks another config")
                busy_nights.add(n)
        # per-alias machine changes
        for p in dplats(n) + (["tpu"] if "tpu" in w.plan[n] else []):
            a0, a1 = f0.dispatch["aliases"].get(p), f1.dispatch["aliases"].get(p)
            if not a0 or not a1 or p not in w.plan[n - 1]:
                continue
            diff = [x for x in ("runner", "image", "runtime") if a0[x] != a1[x]]
            if not diff:
                continue
            c = _find_commit(w, win, lambda a, b, p=p: a.dispatch["aliases"].get(p) != b.dispatch["aliases"].get(p))
            kind = "runner" if "runner" in diff else "driver/toolchain"
            members = _machine_change(w, p, n, c, big=kind == "runner")
            if members:
                w.label("dashboard", "hardware", kind, w._last_dir,
                        members, ("helion_latency_avg_ms", "helion_speedup_geomean"), n, change=c,
                        note=f"{p}: {', '.join(f'{x} {a0[x]} -> {a1[x]}' for x in diff)} in benchmark_dispatch.yml")
                busy_nights.add(n)
        # TPU toolchain pins (at most two labeled per world; the rest move nothing measurable)
        if "tpu" in w.plan[n] and "tpu" in w.plan[n - 1] and f0.tpu["pins"] != f1.tpu["pins"] and \
                sum(1 for l in w.labels if l.kind == "driver/toolchain" and l.members and l.members[0][0] == "tpu") < 1:
            c = _find_commit(w, win, lambda a, b: a.tpu["pins"] != b.tpu["pins"])
            members = _machine_change(w, "tpu", n, c, big=False)
            if members:
                w.label("dashboard", "hardware", "driver/toolchain", w._last_dir, members,
                        ("helion_latency_avg_ms", "helion_speedup_geomean"), n, change=c,
                        note=f"TPU toolchain pins {f0.tpu['pins']} -> {f1.tpu['pins']} (benchmark_tpu.yml)")
                busy_nights.add(n)
        # harness changes (hand-checked real commits)
        for short, what in HARNESS.items():
            full = _full(w, short)
            if full in win:
                cands = [(p, k) for p in dplats(n) for k in w.series_on(n, p) if w.suite(n, p, k) == "gpu"
                         and w.free(("dashboard", p, k), n)]
                cands = sorted(cands, key=lambda m: h01(w.seed, short, *m))[:4]
                for m in cands:
                    u = h01(w.seed, short, "f", *m)
                    w.effects.append(Effect(m[0], m[1], "hel_cg", 1.08 + 0.06 * u if u < 0.6 else 0.9 - 0.04 * u, n))
                members = _moved(w, n, cands)
                if members:
                    w.label("dashboard", "method_change", "harness", "regression", members, ("helion_speedup_geomean",),
                            n, change=full, note=f"{what}: speedup timer only, latency flat")
                    busy_nights.add(n)

    # ---------------------------------------------------------------- 2. pretuned mechanisms
    pn = [n for n in range(N) if w.nights[n].p_run_id]
    for n in pn:
        if n - 1 not in pn:
            continue
        f0, f1 = w.facts(w.nights[n - 1].p_full_sha), w.facts(w.nights[n].p_full_sha)
        if f0.sha == f1.sha:
            continue
        win = w.pwindow(n - 1, n)
        # timer (L2 clearing)
        if w._l2_sha in win:
            members = [(p, k) for p, ks in w.pplan[n].items() for k in ks if k in w.pplan[n - 1].get(p, {})]
            members = _moved(w, n, members, "pretuned")
            if members:
                w.label("pretuned", "method_change", "timer", "regression", members, ("geomean",), n, change=w._l2_sha,
                        note="pretuned_kernels/_bench.py: cudagraph timer clears L2 (cold cache for Helion and baselines)")
        grouped: dict[tuple, list] = {}
        for p, ks in w.pplan[n].items():
            for k, info in ks.items():
                old = w.pplan[n - 1].get(p, {}).get(k)
                if not old:
                    continue
                if old["baselines"] != info["baselines"]:
                    c = _find_commit(w, win, lambda a, b, k=k: a.pretuned.get(k, {}).get("baselines") != b.pretuned.get(k, {}).get("baselines"))
                    grouped.setdefault(("baseline", c, "new"), []).append((p, k))
                if old["cudagraph"] != info["cudagraph"]:
                    c = _find_commit(w, win, lambda a, b, k=k: a.pretuned.get(k, {}).get("cudagraph") != b.pretuned.get(k, {}).get("cudagraph"))
                    grouped.setdefault(("cudagraph", c, "new" if info["cudagraph"] else "old"), []).append((p, k))
        for (kind, c, honest), ms in grouped.items():
            ms = _moved(w, n, ms, "pretuned")
            if not ms:
                continue
            down = sum(1 for m in ms if w.p_expected(n, *m) < w.p_expected(n - 1, *m))
            w.label("pretuned", "method_change", kind, "regression" if down * 2 >= len(ms) else "improvement", ms,
                    ("geomean",), n, change=c, honest=honest,
                    note=f"{kind} of pretuned kernels changed by {w.commit_info(c)[0]}" if c else kind)
        # regenerated configs: real heuristics/config
        regen: dict[tuple, list] = {}
        for p, ks in w.pplan[n].items():
            for k, info in ks.items():
                old = w.pplan[n - 1].get(p, {}).get(k)
                if old and old["aot"].get(p) and old["aot"].get(p) != info["aot"].get(p) and w.free(("pretuned", p, k), n, 2):
                    sm = {"h100": "sm90", "b200": "sm100"}[p]
                    log = w.git.git("log", "--first-parent", "--format=%H", f"{w.nights[n-1].p_full_sha}..{w.nights[n].p_full_sha}",
                                    "--", f"pretuned_kernels/{k}/_helion_aot_{k}_cuda_{sm}.py").split()
                    if log and log[0] != w._l2_sha:  # the timer commit is labeled as the timer change
                        regen.setdefault((log[0], p), []).append(k)
        for (c, p), ks in regen.items():
            u = h01(w.seed, c, p, "regen")
            reg = u < 0.45
            for k in ks:
                w.effects.append(Effect(p, k, "hel", (1.1 + 0.12 * u) if reg else (0.9 - 0.12 * u), n, source="pretuned"))
            members = _moved(w, n, [(p, k) for k in ks], "pretuned")
            if members:
                w.label("pretuned", "real", "heuristics/config", "regression" if reg else "improvement", members,
                        ("geomean",), n, culprit=c, note=f"checked-in {p} config regenerated: {w.commit_info(c)[0]}")

    # ---------------------------------------------------------------- 3. a real change that is reverted
    for a, b in REVERT_PAIRS:
        fa, fb = _full(w, a), _full(w, b)
        na, nb = _night_of_commit(w, fa), _night_of_commit(w, fb)
        if na is None or nb is None or nb <= na:
            continue
        cands = [(p, k) for p in ("h100", "b200") if p in w.plan[na] for k in w.series_on(na, p)
                 if w.suite(na, p, k) == "gpu" and w.free(("dashboard", p, k), na) and w.free(("dashboard", p, k), nb)]
        members = sorted(cands, key=lambda m: h01(w.seed, a, *m))[:4]
        for m in members:
            w.effects.append(Effect(m[0], m[1], "hel", 1.12 + 0.08 * h01(w.seed, a, "f", *m), na, nb))
            w.effects.append(Effect(m[0], m[1], "compile", 0.8, na, nb))
        if members:
            w.label("dashboard", "real", "heuristics/config", "regression", members, HEAD_LAT, na, end=nb, culprit=fa,
                    note=f"{w.commit_info(fa)[0]}; reverted by {fb[:8]} (episode ends)")
            busy_nights.update({na, nb})

    # ---------------------------------------------------------------- 3b. series that turn noisy
    all_series = [(p, k) for p in w.plan[N - 1] for k in w.series_on(N - 1, p)]
    if N >= 20:
        order = sorted(all_series, key=lambda m: h01(w.seed, "noise", *m))
        sc = 0
        for m in order:
            if sc >= 3:
                break
            n = int(N * (0.3 + 0.4 * h01(w.seed, "scn", *m)))
            if w.suite(n, *m) and w.free(("dashboard", *m), n, 6) and len(w.taken.get(("dashboard", *m), [])) <= 1:
                w.scatter[("dashboard", *m)] = (n, 0.09 + 0.05 * h01(w.seed, "scs", *m))
                w.label("dashboard", "noise", "scatter", "regression", [m], ("helion_speedup_geomean",), n,
                        honest=None, note="series turns noisy (per-timer scatter ~10%) from this night on")
                w.take(("dashboard", *m), n)
                for x in range(n, N):
                    w.take(("dashboard", *m), x)
                sc += 1
    # ---------------------------------------------------------------- 4. commit-less machine events
    plats = [p for p in ("h100", "b200", "mi350x", "b200_cute", "tpu") if p in w.plan[N - 1]]

    def pick_night(lo, hi, tag, ok=lambda n: True):
        for t in range(60):
            n = int(lo + (hi - lo) * h01(w.seed, tag, t))
            if n not in busy_nights and n - 1 not in busy_nights and n + 1 not in busy_nights and 2 <= n < N and ok(n):
                return n
        return None

    def all_free(p, n, gap=2):
        return p in w.plan[n] and all(w.free(("dashboard", p, k), n, gap) for k in w.series_on(n, p))

    if N >= 20:
        # host driver update on one platform's pool (persists)
        for j, (lo, hi) in enumerate(((0.25, 0.45), (0.6, 0.8))):
            p = [q for q in plats if q != "tpu"][int(h01(w.seed, "drvp", j) * 3) % 3]
            n = pick_night(int(N * lo), int(N * hi), f"drv{j}", lambda n, p=p: all_free(p, n))
            if n and p and all_free(p, n):
                members = _machine_change(w, p, n, f"driver{j}", big=False)
                if members:
                    w.label("dashboard", "hardware", "driver/toolchain", w._last_dir, members,
                            ("helion_latency_avg_ms", "helion_speedup_geomean"), n,
                            note=f"host GPU driver updated on the {p} runner pool (no commit)")
                    busy_nights.add(n)
        # thermal throttling: slow for a few nights, then back
        for j, (lo, hi) in enumerate(((0.1, 0.3), (0.5, 0.7))):
            k_n = 3 + int(4 * h01(w.seed, "thlen", j))
            n = p = None
            for p in (["b200"] if j == 0 else []) + sorted(plats, key=lambda q: h01(w.seed, "thp", q)):
                n = pick_night(int(N * lo), int(N * hi), f"th{j}{p}",
                               lambda n, p=p: all_free(p, n) and all_free(p, min(n + k_n, N - 1)))
                if n:
                    break
            if not n:
                continue
            end = min(n + k_n, N - 1)
            if not all_free(p, n) or not all_free(p, end):
                continue
            members = []
            for k in w.series_on(n, p):
                u = h01(w.seed, "th", j, p, k)
                w.effects.append(Effect(p, k, "all", 1.12 + 0.08 * u, n, end))
                w.effects.append(Effect(p, k, "hel", 1.03 + 0.05 * u, n, end))  # compute-bound Helion kernels suffer more
                members.append((p, k))
            w.label("dashboard", "hardware", "thermal", "regression", members, ("helion_latency_avg_ms",), n, end=end,
                    honest="old", note=f"{p} GPUs thermally throttled for {end - n} nights")
            busy_nights.update({n, end})
            if w.nights[n].p_run_id and w.nights[end - 1].p_run_id and w.nights[n - 1].p_run_id and p in ("b200", "h100"):
                pm = []
                for k in w.pplan[n].get(p, {}):
                    if w.free(("pretuned", p, k), n):
                        w.effects.append(Effect(p, k, "all", 1.15, n, end, source="pretuned"))
                        w.effects.append(Effect(p, k, "hel", 1.07, n, end, source="pretuned"))
                        pm.append((p, k))
                pm = _moved(w, n, pm, "pretuned")
                if pm:
                    w.label("pretuned", "hardware", "thermal", "regression", pm, ("geomean",), n, end=end, honest="old",
                            note=f"same {p} throttling seen by the pretuned suite")
        # a throttled B200 seen by both suites (when the pretuned suite runs in the window)
        pn_ok = [n for n in range(N) if w.nights[n].p_run_id]
        if len(pn_ok) > 12 and "b200" in w.plan[N - 1]:
            k_n = 3 + int(3 * h01(w.seed, "th3len"))
            n = pick_night(pn_ok[0] + 3, N - k_n - 2, "th3b200",
                           lambda n: all_free("b200", n) and all_free("b200", n + k_n) and bool(w.nights[n - 1].p_run_id))
            if n:
                end = n + k_n
                members = []
                for k in w.series_on(n, "b200"):
                    u = h01(w.seed, "th3", k)
                    w.effects.append(Effect("b200", k, "all", 1.13 + 0.07 * u, n, end))
                    w.effects.append(Effect("b200", k, "hel", 1.03 + 0.05 * u, n, end))
                    members.append(("b200", k))
                w.label("dashboard", "hardware", "thermal", "regression", members, ("helion_latency_avg_ms",), n,
                        end=end, honest="old", note=f"b200 GPUs thermally throttled for {k_n} nights (also in pretuned)")
                busy_nights.update({n, end})
                pm = []
                for k in w.pplan[n].get("b200", {}):
                    if w.free(("pretuned", "b200", k), n) and k in w.pplan[n - 1].get("b200", {}):
                        w.effects.append(Effect("b200", k, "all", 1.15, n, end, source="pretuned"))
                        w.effects.append(Effect("b200", k, "hel", 1.08, n, end, source="pretuned"))
                        pm.append(("b200", k))
                pm = _moved(w, n, pm, "pretuned")
                if pm:
                    w.label("pretuned", "hardware", "thermal", "regression", pm, ("geomean",), n, end=end, honest="old",
                            note="the same b200 throttling seen by the pretuned suite")
        # outages: a platform missing for some nights
        for j, (lo, hi) in enumerate(((0.35, 0.55), (0.75, 0.9))):
            n = p = None
            for p in sorted(plats, key=lambda q: h01(w.seed, "outp", j, q)):
                n = pick_night(int(N * lo), int(N * hi), f"out{j}{p}", lambda n, p=p: all_free(p, n))
                if n:
                    break
            if not n:
                continue
            end = min(n + 2 + int(3 * h01(w.seed, "outlen", j)), N - 1)
            w.outage.setdefault(p, set()).update(range(n, end))
            members = [(p, k) for k in w.series_on(n, p)]
            w.label("dashboard", "hardware", "outage", "regression", members, (), n, end=end, honest=None,
                    note=f"{p} runners unavailable for {end - n} nights: no results")
            busy_nights.update({n, end})
        if pn and len(pn) > 12:
            n = pn[int(len(pn) * (0.4 + 0.3 * h01(w.seed, "pout")))]
            if n - 1 in pn and n + 2 in pn:
                w.outage.setdefault("p:h100", set()).update({n, n + 1})
                w.label("pretuned", "hardware", "outage", "regression", [("h100", k) for k in w.pplan[n].get("h100", {})],
                        (), n, end=n + 2, honest=None, note="pretuned h100 job did not run for 2 nights")

    # ---------------------------------------------------------------- 5. real code commits
    _plant_real(w, busy_nights, rng)

    # ---------------------------------------------------------------- 6. noise
    all_series = [(p, k) for p in w.plan[N - 1] for k in w.series_on(N - 1, p)]
    if N >= 20:
        order = sorted(all_series, key=lambda m: h01(w.seed, "noise", *m))
        oc = 0
        for m in order[10:]:
            if oc >= 3:
                break
            n = int(N * (0.1 + 0.85 * h01(w.seed, "outn", *m)))
            if n < N - 1 and w.suite(n, *m) and w.free(("dashboard", *m), n, 3):
                comp, fac = ("hel_cg", 1.3) if oc % 2 == 0 else ("base", 0.72)
                w.outliers[("dashboard", m[0], m[1], n)] = (comp, fac)
                w.label("dashboard", "noise", "outlier", "regression", [m], ("helion_speedup_geomean",), n, end=n + 1,
                        honest=None, note=f"one-night outlier on one timer ({comp} x{fac})")
                oc += 1
        if pn and len(pn) > 8:
            n = pn[int(len(pn) * 0.6)]
            cands = [(p, k) for p, ks in w.pplan[n].items() for k in ks if w.free(("pretuned", p, k), n, 3)]
            if cands and n + 1 in pn:
                m = cands[int(h01(w.seed, "pto") * len(cands))]
                w.outliers[("pretuned", m[0], m[1], n)] = ("hel", 1.35)
                w.label("pretuned", "noise", "outlier", "regression", [m], ("geomean",), n, end=n + 1, honest=None,
                        note="one-night pretuned outlier")


def _machine_change(w, p, n, tag, big):
    members = []
    w._last_dir = "regression"
    if p not in w.plan[n]:
        return members
    base = 1.10 + 0.1 * h01(w.seed, tag, p, "all") if h01(w.seed, tag, p, "dir") < 0.6 else 0.88 - 0.05 * h01(w.seed, tag, p)
    w._last_dir = "regression" if base > 1 else "improvement"
    for k in w.series_on(n, p):
        if not w.free(("dashboard", p, k), n, 2):
            continue
        u = h01(w.seed, tag, p, k)
        w.effects.append(Effect(p, k, "all", base * (1 + 0.04 * (u - 0.5)), n))
        w.effects.append(Effect(p, k, "hel", 1 + (0.08 if big else 0.05) * (h01(w.seed, tag, p, k, "h") - 0.5), n))
        members.append((p, k))
    return members


def _plant_real(w, busy, rng):
    N = len(w.nights)
    target = 38
    min_real = 10
    n_real = 0
    cands = []
    for n in range(3, N):
        win = w.window(n - 1, n)
        for c in win:
            subj, files = w.commit_info(c)
            if subj.lower().startswith("revert") or not any(f.startswith("helion/") for f in files):
                continue
            sl = _slice(subj, files)
            if sl:
                cands.append((n, c, sl, subj, files))
    # last-three-nights moves first, then spread over the window
    late = [x for x in cands if x[0] >= N - 3]
    rest = [x for x in cands if x[0] < N - 3]
    rest.sort(key=lambda x: h01(w.seed, "real", x[1]))
    chosen_nights = set()
    order = late[:2] + rest
    two_done = False
    for n, c, sl, subj, files in order:
        if len(w.labels) >= target and n_real >= min_real:
            break
        if n in chosen_nights or n in busy:
            continue
        plats = {"cute": ["b200_cute"], "tpu": ["tpu"], "rocm": ["mi350x", "mi325x"], "autotuner": ["h100", "b200", "mi350x"],
                 "triton": ["h100", "b200", "mi350x", "mi325x"]}[sl]
        plats = [p for p in plats if p in w.plan[n] and p in w.plan[n - 1]]
        if not plats:
            continue
        if len(plats) > 1 and sl == "triton":
            plats = plats[: 1 + int(2 * h01(w.seed, c, "np"))]
        ks = []
        for p in plats:
            names = [k for k in w.series_on(n, p) if w.suite(n - 1, p, k)]
            # kernels whose example file the commit touches, else a few by hash
            touched = [k for k in names if any(f.endswith(f"examples/{k.split('-')[0]}.py") for f in files)]
            pool = touched or sorted(names, key=lambda k: (len(w.taken.get(("dashboard", p, k), [])), h01(w.seed, c, p, k)))[: 1 + int(3 * h01(w.seed, c, p))]
            ks += [(p, k) for k in pool]
        # two events on one series: allow a later step on a series that already had one (>= 8 nights apart)
        ks = [m for m in ks if w.free(("dashboard", *m), n, 7 if not two_done else 4)]
        if not ks:
            continue
        if any(w.taken.get(("dashboard", *m)) for m in ks):
            two_done = True
        u = h01(w.seed, c, "dir")
        reg = u < 0.62
        kind = "heuristics/config" if sl == "autotuner" else "code"
        for m in ks:
            mag = 0.08 + 0.17 * h01(w.seed, c, "mag", *m)
            w.effects.append(Effect(m[0], m[1], "hel", 1 + mag if reg else 1 / (1 + mag), n))
        w.label("dashboard", "real", kind, "regression" if reg else "improvement", ks, HEAD_LAT, n, culprit=c,
                note=f"{subj} [{sl} slice]")
        chosen_nights.add(n)
        n_real += 1
