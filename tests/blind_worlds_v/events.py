"""The events of a world: the measurement and machine changes the real files carry (turned into
effects and labels), plus planted real regressions, hardware episodes and noise cases, each on
commits whose diffs carry them."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .hrepo import Repo
from .model import (Mods, PreMods, Series, add_shape, make_pre_series, make_series, model_speedup,
                    pre_model, rng_for)
from .plan import Change, NightPlan

DASH, PRE = "dashboard", "pretuned"
SPEEDUPS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
REAL_METRICS = ("helion_speedup_geomean", "helion_latency_avg_ms")


@dataclass
class Eff:
    source: str
    members: dict                 # key -> {field: value}
    start: int                    # first nightly it is in force
    end: int | None = None        # first nightly it is not
    commit: str | None = None     # in force on any run whose sha contains this commit (else: by time)
    end_commit: str | None = None
    missing: bool = False         # the rows do not run at all (outage)
    outlier: tuple | None = None  # (timer, factor) on this one nightly


@dataclass
class Draft:
    source: str
    cause: str
    kind: str
    direction: str
    members: list
    metrics: tuple
    first_bad: int
    end: int | None
    culprit: str | None
    change: str | None
    note: str
    honest: str = "before"        # before: the level the event hid; after: the new real level


def tags(subject: str) -> list:
    return [t.strip().lower() for t in re.findall(r"\[([^\]]+)\]", subject)]


def classify(subject: str, files: list) -> tuple | None:
    """(backend slice, paths are backend-generic, touches autotuner/heuristics) of a commit's helion/ change."""
    code = [f for f in files if f.startswith("helion/") and f.endswith(".py") and not f.startswith("helion/_testing")]
    if not code:
        return None
    tg = tags(subject)
    if any(t in ("metal", "xpu", "docs", "lint", "testing") for t in tg):
        return None
    if all("/metal/" in f or "xpu" in f for f in code):
        return None
    tag_backend = None
    if any(t in ("cute", "cutedsl", "cutedls", "cute dsl") or t.startswith("cute") for t in tg):
        tag_backend = "cute"
    elif any(t.startswith(("pallas", "tpu")) or t == "runtime:pallas" for t in tg):
        tag_backend = "pallas"
    elif any("rocm" in t or "amd" in t for t in tg):
        tag_backend = "rocm"
    cute = any("/cute/" in f or f.endswith("/cute.py") for f in code)
    pallas = any("/pallas/" in f or f.endswith("/pallas.py") for f in code)
    cfg = any(f.startswith(("helion/autotuner/", "helion/_compiler/autotuner_heuristics/")) or "heuristic" in f
              or f.endswith(("config_spec.py", "config_generation.py")) for f in code)
    if cute and not pallas:
        return ("cute", False, cfg)
    if pallas and not cute:
        return ("pallas", False, cfg)
    if cute and pallas:
        return (tag_backend or "triton", False, cfg)
    return (tag_backend or "triton", True, cfg)


def slice_of(subject: str, files: list) -> str | None:
    c = classify(subject, files)
    return None if c is None else c[0]


class Planner:
    def __init__(self, seed: int, repo: Repo, nights: list, changes: list):
        self.seed = seed
        self.repo = repo
        self.nights: list[NightPlan] = nights
        self.changes: list[Change] = changes
        self.rng = rng_for(seed, "planner")
        self.series: dict = {}
        self.pseries: dict = {}
        self.effects: list[Eff] = []
        self.drafts: list[Draft] = []
        self.busy: dict = {}
        self.no_fail: dict = {}
        self.scatter_before: dict = {}
        self.no_data_before: dict = {}
        self._build_series()

    # ---------------------------------------------------------------- registry
    def _build_series(self):
        for n in self.nights:
            for key, row in n.rows.items():
                if key not in self.series:
                    self.series[key] = make_series(self.seed, row.plat, row.kernel, row.suite, list(row.shapes))
                s = self.series[key]
                for lab in row.shapes:
                    add_shape(s, self.seed, lab)
                if row.suite == "tpu_bridge" and not getattr(s, "_bridge", False):
                    s._bridge = True
            for key in n.pre_rows:
                if key not in self.pseries:
                    self.pseries[key] = make_pre_series(self.seed, *key)

    def rows_at(self, i: int, source: str = DASH) -> dict:
        return self.nights[i].rows if source == DASH else self.nights[i].pre_rows

    def present(self, source, key, i) -> bool:
        return 0 <= i < len(self.nights) and key in self.rows_at(i, source)

    # ---------------------------------------------------------------- reservations
    def free(self, source, keys, lo, hi) -> bool:
        for k in keys:
            for a, b in self.busy.get((source, k), []):
                if lo <= b and a <= hi:
                    return False
        return True

    def reserve(self, source, keys, lo, hi, nofail=None):
        for k in keys:
            self.busy.setdefault((source, k), []).append((lo, hi))
            for i in (nofail if nofail is not None else range(lo, hi + 1)):
                self.no_fail.setdefault((source, k), set()).add(i)

    # ---------------------------------------------------------------- helpers
    def sha_at(self, i, source=DASH):
        return self.nights[i].sha if source == DASH else self.nights[i].p_sha

    def night_of_commit(self, sha: str, source=DASH) -> int | None:
        p = self.repo.pos[sha]
        for i, n in enumerate(self.nights):
            s = self.sha_at(i, source)
            if s is not None and self.repo.pos[s] >= p:
                if i == 0 or self.sha_at(i - 1, source) is None:
                    return None
                return i
        return None

    def add(self, eff: Eff, draft: Draft | None, reserve=True, span=2):
        self.effects.append(eff)
        if draft is not None:
            self.drafts.append(draft)
            if reserve:
                hi = (draft.end if draft.end is not None else draft.first_bad) + span
                self.reserve(draft.source, draft.members, draft.first_bad - span - 1, hi,
                             nofail=[draft.first_bad - 1, draft.first_bad] + ([draft.end - 1, draft.end] if draft.end else []))

    def u(self, a, b):
        return float(self.rng.uniform(a, b))

    def pick(self, xs, k=1):
        xs = list(xs)
        if not xs:
            return []
        idx = self.rng.choice(len(xs), size=min(k, len(xs)), replace=False)
        return [xs[i] for i in sorted(idx)]

    def stable(self, source, keys, lo, hi) -> list:
        """Keys that run on every nightly lo..hi."""
        return [k for k in keys if all(self.present(source, k, i) for i in range(max(lo, 0), min(hi, len(self.nights) - 1) + 1))]

    # ---------------------------------------------------------------- structural changes the files carry
    def file_events(self, env_plan: dict):
        for ch in self.changes:
            short = (ch.sha or "")[:8]
            how = env_plan.get(f"{ch.kind}:{short}", env_plan.get(short))
            if ch.source == DASH:
                self._dash_change(ch, how)
            else:
                self._pre_change(ch, how)
        for short, how in env_plan.items():
            if how == "compile_fix":
                full = next(s for s in self.repo.fp if s.startswith(short))
                i = self.night_of_commit(full)
                if i is None:
                    continue
                members = [k for k, r in self.nights[i].rows.items() if r.compile_measured and r.suite == "tritonbench"
                           and k in self.nights[i - 1].rows and self.nights[i - 1].rows[k].compile_measured]
                f = {k: dict(ct=self.u(0.35, 0.7)) for k in members}
                self.add(Eff(DASH, f, i, commit=full),
                         Draft(DASH, "method_change", "timer", "improvement", members, ("compile_time_geomean_s",), i,
                               None, None, full, "compile-time measurement fixed: compile seconds drop on every kernel"),
                         reserve=False)

    def _members_with_data(self, ch: Change, source=DASH) -> list:
        i = ch.night
        return [k for k in ch.members if self.present(source, k, i) and
                any(self.present(source, k, j) for j in range(max(0, i - 4), i))]

    def _force_shape_move(self, key, old: tuple, new: tuple):
        """Make a shape-set change visible: bias the helion speedup of the shapes that left or came."""
        s: Series = self.series[key]
        target = math.exp(self.rng.choice([-1, 1]) * self.u(0.06, 0.16))
        from .model import geo
        g_old = geo([s.hsp[l] for l in old])
        g_new = geo([s.hsp[l] for l in new])
        changed = [l for l in new if l not in old] or [l for l in old if l not in new]
        if not changed:
            return
        in_new = all(l in new for l in changed)
        cur = g_new / g_old
        # scale the changed shapes by x: in_new -> g_new * x^(c/|new|); else g_old * x^(c/|old|)
        frac = len(changed) / (len(new) if in_new else len(old))
        need = target / cur if in_new else cur / target
        x = need ** (1 / frac)
        for l in changed:
            s.hsp[l] *= x
            s.tsp[l] = s.tsp[l] * x ** 0.3 if s.tsp.get(l) else s.tsp.get(l, 0.0)

    def _dash_change(self, ch: Change, how):
        i = ch.night
        if ch.kind in ("shapes", "cudagraph", "harness", "precision"):
            members = self._members_with_data(ch)
            if ch.kind == "cudagraph" and any(k[1] == "rope-bwd" for k in members):
                # rope-bwd crashed under CUDA graphs until this fix: no data before it, no step to see
                for k in members:
                    self.no_data_before[(DASH, k)] = i
                return
            if not members or ch.sha is None:
                return
            if ch.kind == "shapes":
                done = []
                for k in members:
                    prev = max(j for j in range(i) if self.present(DASH, k, j))
                    self._force_shape_move(k, self.nights[prev].rows[k].shapes, self.nights[i].rows[k].shapes)
                    done.append(k)
                self.add(Eff(DASH, {}, i, commit=ch.sha),
                         Draft(DASH, "method_change", "shapes", "mixed", done, SPEEDUPS + ("helion_latency_avg_ms",), i,
                               None, None, ch.sha, f"input shapes changed ({ch.detail})"), span=1)
            elif ch.kind == "cudagraph":
                off = ch.detail == "off"
                f = {}
                for k in members:
                    # the launch overheads the graph hid come back; on top of them the Helion launcher's own
                    # cost: aim the visible move at 6-15% either way
                    s_ = self.series[k]
                    shapes = list(self.nights[i].rows[k].shapes)
                    before = model_speedup(s_, shapes, not off, Mods())
                    target = math.exp(self.rng.choice([-1, 1]) * self.u(0.06, 0.15))
                    hA = 1.0
                    for _ in range(3):
                        after = model_speedup(s_, shapes, off is False, Mods(hA=hA))
                        hA *= (after / before) / target
                    f[k] = dict(hA=hA)
                self.add(Eff(DASH, f, i, commit=ch.sha),
                         Draft(DASH, "method_change", "cudagraph", "regression" if off else "improvement", members,
                               SPEEDUPS, i, None, None, ch.sha,
                               "speedup no longer timed under CUDA graphs" if off else "speedup timed under CUDA graphs again"))
            elif ch.kind == "harness":
                f = {k: dict(hA=self.u(0.85, 1.2), b=self.u(0.8, 1.15)) for k in members}
                for k in members:  # make sure the switch shows
                    d = f[k]
                    if abs(math.log(d["b"] / d["hA"])) < 0.06:
                        d["b"] *= 0.88
                self.add(Eff(DASH, f, i, commit=ch.sha),
                         Draft(DASH, "method_change", "harness", "mixed", members,
                               ("helion_speedup_geomean", "torch_compile_speedup_geomean", "helion_latency_avg_ms"), i,
                               None, None, ch.sha, f"rows now produced by another harness ({ch.detail})"), span=1)
            else:  # precision of the comparison: the baseline (and torch.compile) run at TF32 now
                f = {k: dict(b=self.u(0.55, 0.75), c=self.u(0.8, 0.95), t=self.u(0.9, 1.0)) for k in members}
                self.add(Eff(DASH, f, i, commit=ch.sha),
                         Draft(DASH, "method_change", "baseline", "regression", members, SPEEDUPS, i, None, None,
                               ch.sha, "baselines compared at TF32 precision (baseline got faster)"))
            return
        if how is None or ch.sha is None:
            return
        members = self._members_with_data(ch)
        if not members:
            return
        if how in ("runner", "driver"):
            big = how == "runner"
            g = self.u(0.88, 0.95) if self.rng.random() < 0.5 else self.u(1.06, 1.15)
            if not big:
                g = g ** 0.6
            f = {k: dict(allk=g * self.u(0.99, 1.01), allk_imp=(self.u(0.96, 1.04), self.u(0.96, 1.04), 1.0, 1.0))
                 for k in members}
            kind = "runner" if big else "driver/toolchain"
            self.add(Eff(DASH, f, i, commit=ch.sha),
                     Draft(DASH, "hardware", kind, "regression" if g > 1 else "improvement", members,
                           ("helion_latency_avg_ms", "helion_speedup_geomean"), i, None, None, ch.sha,
                           f"{ch.lane or 'tpu'}: {ch.detail or 'toolchain pins of the job moved'}"))
        elif how == "driver_gemm":
            ms = [k for k in members if k[1] in ("gemm", "int4_gemm")]
            f = {k: dict(b=self.u(0.8, 0.9), t=self.u(0.97, 1.0)) for k in ms}
            self.add(Eff(DASH, f, i, commit=ch.sha),
                     Draft(DASH, "hardware", "driver/toolchain", "regression", ms, SPEEDUPS, i, None, None, ch.sha,
                           f"{ch.lane}: new CUDA image (cuBLAS) makes the matmul baselines faster"))
        elif how == "baseline":
            ms = self.pick([k for k in members if self.series[k].fam in ("row", "row_bwd", "attn")], 3)
            f = {k: dict(b=self.u(0.82, 0.92), c=self.u(0.9, 1.0)) for k in ms}
            self.add(Eff(DASH, f, i, commit=ch.sha),
                     Draft(DASH, "method_change", "baseline", "regression", ms, SPEEDUPS, i, None, None, ch.sha,
                           "torch pin moved: eager baselines faster"))
        elif how.startswith("autotune"):
            n = int(how.split(":")[1]) if ":" in how else 2
            pool = [k for k in members if self.series[k].fam in ("gemm", "attn", "ssm", "row_bwd", "ggemm", "row")
                    and self.free(DASH, [k], i - 3, i + 3)]
            ms = self.pick(pool, n)
            f = {k: dict(h=self.u(1.06, 1.22)) for k in ms}
            if ch.kind == "nightly_env":
                for k in members:
                    self.scatter_before[k] = i
            self.add(Eff(DASH, f, i, commit=ch.sha),
                     Draft(DASH, "method_change", "autotune", "regression", ms, REAL_METRICS, i, None, None, ch.sha,
                           "autotune settings of the nightly changed: the search settles on slower configs"))
        elif how.startswith("harness"):
            n = int(how.split(":")[1]) if ":" in how else 3
            pool = [k for k in members if self.nights[i].rows[k].suite == "tritonbench" and
                    self.free(DASH, [k], i - 3, i + 3)]
            ms = self.pick(pool, n)
            f = {k: dict(hA=self.u(1.06, 1.14) if self.rng.random() < 0.7 else 1 / self.u(1.06, 1.12)) for k in ms}
            self.add(Eff(DASH, f, i, commit=ch.sha),
                     Draft(DASH, "method_change", "harness", "mixed", ms, ("helion_speedup_geomean",), i, None, None,
                           ch.sha, "benchmark harness changed how the speedup pass runs (latency unaffected)"))
        elif how == "compile_timer":
            ms = [k for k in members if self.nights[i].rows[k].compile_measured and
                  self.nights[i - 1].rows.get(k) and self.nights[i - 1].rows[k].compile_measured]
            f = {k: dict(ct=self.u(6.0, 20.0)) for k in ms}
            self.add(Eff(DASH, f, i, commit=ch.sha),
                     Draft(DASH, "method_change", "timer", "regression", ms, ("compile_time_geomean_s",), i, None, None,
                           ch.sha, "compile time now measured end to end (autotuning included)"), reserve=False)
        elif how == "scatter_only" and ch.kind == "nightly_env":
            for k in members:
                self.scatter_before[k] = i

    def _pre_change(self, ch: Change, how):
        i = ch.night
        members = [k for k in ch.members if self.present(PRE, k, i) and self.present(PRE, k, i - 1)]
        if not members or ch.sha is None:
            return
        if ch.kind == "pre_baselines":
            moved = []
            for k in members:
                a = self.nights[i - 1].pre_rows[k]["baselines"]
                b = self.nights[i].pre_rows[k]["baselines"]
                ps = self.pseries[k]
                if abs(math.log(pre_model(ps, b, PreMods()) / pre_model(ps, a, PreMods()))) > 0.03:
                    moved.append(k)
            if moved:
                self.add(Eff(PRE, {}, i, commit=ch.sha),
                         Draft(PRE, "method_change", "baseline", "regression", moved, ("geomean",), i, None, None,
                               ch.sha, "a faster baseline joined the comparison"))
        elif ch.kind == "pre_bench" and how != "none":
            ms = [k for k in members if self.nights[i].pre_rows[k]["cudagraph"]]
            f = {k: dict(l2=self.u(1.05, 1.18) if self.rng.random() < 0.6 else self.u(0.86, 0.95)) for k in ms}
            self.add(Eff(PRE, f, i, commit=ch.sha),
                     Draft(PRE, "method_change", "timer", "mixed", ms, ("geomean",), i, None, None, ch.sha,
                           "CUDA-graph timer now clears L2 between replays"))
        elif ch.kind == "pre_src" and how == "baseline":
            f = {k: dict(base={"vllm": self.u(0.6, 0.8)}) for k in members}
            self.add(Eff(PRE, f, i, commit=ch.sha),
                     Draft(PRE, "method_change", "baseline", "regression", members, ("geomean",), i, None, None,
                           ch.sha, "a baseline was redefined (a fused reference op)"))
        elif ch.kind in ("pre_aot", "pre_src") and how and how.split(":")[0] in ("config", "code", "config_up"):
            if ":" in how:
                members = self.pick(members, int(how.split(":")[1]))
                how = how.split(":")[0]
            up = how == "config_up"
            f = {k: dict(h=1 / self.u(1.06, 1.2) if up else self.u(1.05, 1.25)) for k in members}
            if up:
                # an improvement is not a regression: kept as an effect only (no label)
                self.add(Eff(PRE, f, i, commit=ch.sha), None)
                return
            kind = "heuristics/config" if how == "config" else "code"
            self.add(Eff(PRE, f, i, commit=ch.sha),
                     Draft(PRE, "real", kind, "regression", members, ("geomean",), i, None, ch.sha, None,
                           "checked-in config regenerated slower" if how == "config" else "kernel code got slower",
                           honest="after"))
        elif ch.kind == "pre_torch" and how == "baseline":
            ms = self.pick([k for k in members if "torch" in self.nights[i].pre_rows[k]["baselines"]
                            and self.free(PRE, [k], i - 3, i + 3)], 3)
            f = {k: dict(base={"torch": self.u(0.7, 0.85), "torch_compile": self.u(0.75, 0.9)}) for k in ms}
            moved = [k for k in ms if abs(math.log(
                pre_model(self.pseries[k], self.nights[i].pre_rows[k]["baselines"], PreMods(base=f[k]["base"])) /
                pre_model(self.pseries[k], self.nights[i].pre_rows[k]["baselines"], PreMods()))) > 0.03]
            self.add(Eff(PRE, {k: f[k] for k in ms}, i, commit=ch.sha),
                     Draft(PRE, "method_change", "baseline", "regression", moved, ("geomean",), i, None, None, ch.sha,
                           "torch pin of the pretuned job moved: torch baselines faster") if moved else None)

    # ---------------------------------------------------------------- planted real regressions
    def candidates(self, lo, hi, want: set, source=DASH, cfg: bool | None = None):
        out = []
        for i in range(max(lo, 2), hi):
            a, b = self.sha_at(i - 1, source), self.sha_at(i, source)
            if a is None or b is None or a == b:
                continue
            for c in self.repo.between(a, b):
                if any(f.startswith(("benchmarks/", ".github/")) for f in self.repo.files(c)):
                    continue  # it also changes the measurement: not a clean culprit of a real regression
                cl = classify(self.repo.subject[c], self.repo.files(c))
                if cl is None or cl[0] not in want or (cfg is not None and cl[2] != cfg):
                    continue
                sl = cl[0]
                if cl[1] and sl != "triton" and self.rng.random() < 0.25:
                    sl = "triton"  # the tag names a backend, the generic code it touched moves Triton kernels
                out.append((i, c, sl))
        return out

    def targets(self, sl: str, i: int) -> list:
        rows = self.nights[i].rows
        if sl == "cute":
            plats = {"b200_cute"}
        elif sl == "pallas":
            plats = {"tpu"}
        elif sl == "rocm":
            plats = {"mi350x", "mi325x"}
        else:
            plats = {"h100", "b200", "mi350x", "mi325x"}
        return [k for k, r in rows.items() if k[0] in plats and r.suite in ("tritonbench", "tpu", "tpu_bridge")]

    def plant_real(self, n_code: int, n_cfg: int, late: bool = True, first_nights: bool = True):
        N = len(self.nights)
        plans = ["code"] * n_code + ["cfg"] * n_cfg
        order = list(self.rng.permutation(len(plans)))
        placed = 0
        specials = []
        if late:
            specials.append(("late", N - 3, N))
        for j in order:
            kind = plans[j]
            want = {"triton", "cute", "pallas", "rocm"}
            lo, hi = 4, N - 1
            if specials:
                _, lo, hi = specials.pop()
            elif first_nights and placed == 1:
                lo, hi = 3, N
            cands = self.candidates(lo, hi, want, cfg=(kind == "cfg") or None)
            self.rng.shuffle(cands)
            ok = False
            for i, c, sl in cands:
                pool = self.targets(sl, i)
                if placed == 1 and first_nights:
                    # a series in its first nightlies
                    pool = [k for k in pool if sum(1 for jj in range(i) if self.present(DASH, k, jj)) in (2, 3, 4)]
                pool = self.stable(DASH, pool, i - 3, min(i + 3, N - 1))
                pool = [k for k in pool if self.free(DASH, [k], i - 4, i + 4) and
                        self.series[k].fam not in ("linattn",) and self.no_data_before.get((DASH, k), -1) < i - 3]
                if not pool:
                    continue
                plats = sorted({k[0] for k in pool})
                plats = self.pick(plats, 1 if self.rng.random() < 0.7 else 2)
                pool = [k for k in pool if k[0] in plats]
                ks = sorted({k[1] for k in pool})
                ks = self.pick(ks, int(self.rng.choice([1, 1, 2, 2, 3, 4])))
                members = [k for k in pool if k[1] in ks]
                small = self.rng.random() < 0.4
                f = {}
                for k in members:
                    s = self.series[k]
                    mag = self.u(1.045, 1.11) if small else self.u(1.12, 1.4)
                    hs = {lab: float(np.exp(np.log(mag) * (s.weights[lab] - 1.0) * 0.5)) for lab in s.base}
                    f[k] = dict(h=mag, h_shape=hs)
                end = end_commit = None
                if self.rng.random() < 0.25 and i + 8 < N - 2:
                    fixes = [(ii, cc, ss) for ii, cc, ss in self.candidates(i + 6, N - 2, {sl})]
                    fixes = [(ii, cc) for ii, cc, _ in fixes if self.stable(DASH, members, ii - 1, ii) == members
                             and self.free(DASH, members, ii - 2, ii + 2)]
                    if fixes:
                        end, end_commit = fixes[0]
                lab_kind = "heuristics/config" if kind == "cfg" else "code"
                note = ("autotuner/heuristics change picks slower configs" if kind == "cfg"
                        else "helion code change slows the kernel")
                cl = classify(self.repo.subject[c], self.repo.files(c))
                if cl[0] != sl:
                    note += " (tag names another backend than the paths)"
                self.add(Eff(DASH, f, i, end, commit=c, end_commit=end_commit),
                         Draft(DASH, "real", lab_kind, "regression", members, REAL_METRICS, i, end, c, None, note,
                               honest="after"))
                placed += 1
                ok = True
                break
            if not ok:
                continue

    def plant_pre_real(self, n: int):
        N = len(self.nights)
        first = next((i for i in range(N) if self.nights[i].pre_rows), None)
        if first is None:
            return
        cands = [x for x in self.candidates(first + 2, N - 1, {"triton", "cute"}, source=PRE)
                 if classify(self.repo.subject[x[1]], self.repo.files(x[1]))[0] == x[2]]
        self.rng.shuffle(cands)
        placed = 0
        for i, c, sl in cands:
            if placed >= n:
                break
            keys = [k for k in self.nights[i].pre_rows if (sl != "cute" or k[0] == "b200")]
            if sl == "cute":
                keys = [k for k in keys if "cute" in k[1] or k[1] in ("interleaved_swiglu", "projection_rotary")]
            keys = self.stable(PRE, keys, i - 2, min(i + 3, N - 1))
            keys = [k for k in keys if self.free(PRE, [k], i - 4, i + 4)]
            if not keys:
                continue
            ms = self.pick(keys, int(self.rng.choice([1, 1, 2])))
            f = {k: dict(h=self.u(1.05, 1.3)) for k in ms}
            self.add(Eff(PRE, f, i, commit=c),
                     Draft(PRE, "real", "code", "regression", ms, ("geomean",), i, None, c, None,
                           "helion change slows the pretuned kernel", honest="after"))
            placed += 1

    # ---------------------------------------------------------------- hardware without a commit
    def plant_hardware(self, thermal: int, outage: int, swap: int, pre_thermal: int = 0, pre_outage: int = 0):
        N = len(self.nights)
        for kind, count, source in (("thermal", thermal, DASH), ("outage", outage, DASH), ("swap", swap, DASH),
                                    ("thermal", pre_thermal, PRE), ("outage", pre_outage, PRE)):
            for _ in range(count):
                for _try in range(60):
                    length = int(self.rng.integers(2, 6)) if kind == "thermal" else int(self.rng.integers(1, 4))
                    if kind == "swap":
                        length = int(self.rng.integers(6, 20))
                    ok_nights = [i for i in range(3, N - 3) if self.rows_at(i, source) and self.rows_at(i - 3, source)]
                    if not ok_nights:
                        break
                    s = int(self.rng.choice(ok_nights))
                    e = s + length
                    if kind != "swap" and e > N - 1:
                        continue
                    rows = self.rows_at(s, source)
                    plats = sorted({k[0] for k in rows})
                    if not plats:
                        continue
                    p = self.pick(plats, 1)[0]
                    members = [k for k in rows if k[0] == p]
                    if source == DASH and kind != "outage":
                        members = [k for k in members if rows[k].suite != "linattn" or self.rng.random() < 0.5]
                    members = self.stable(source, members, s - 1, min(e, N - 1) if kind != "outage" else s - 1)
                    if len(members) < 3 or not self.free(source, members, s - 3, min(e, N - 1) + 2):
                        continue
                    end = e if e <= N - 1 else None
                    if kind == "swap" and end is not None and self.rng.random() < 0.5:
                        end = None
                    if kind == "thermal":
                        g = self.u(1.07, 1.2)
                        f = {k: dict(allk=g * self.u(0.985, 1.015), sig=1.6,
                                     allk_imp=(self.u(0.985, 1.015), self.u(0.985, 1.015), 1.0, 1.0)) for k in members}
                        if source == PRE:
                            f = {k: dict(allk=g, sig=1.6, h=self.u(1.0, 1.04)) for k in members}
                        d = Draft(source, "hardware", "thermal", "regression", members,
                                  ("helion_latency_avg_ms",) if source == DASH else ("geomean",), s, end, None, None,
                                  f"{p}: GPUs throttling")
                        self.add(Eff(source, f, s, end), d)
                    elif kind == "swap":
                        g = self.u(0.88, 0.94) if self.rng.random() < 0.5 else self.u(1.07, 1.15)
                        f = {k: dict(allk=g * self.u(0.99, 1.01),
                                     allk_imp=(self.u(0.95, 1.05), self.u(0.95, 1.05), 1.0, 1.0)) for k in members}
                        d = Draft(source, "hardware", "runner", "regression" if g > 1 else "improvement", members,
                                  ("helion_latency_avg_ms", "helion_speedup_geomean"), s, end, None, None,
                                  f"{p}: the pool hands out another machine")
                        self.add(Eff(source, f, s, end), d)
                    else:
                        f = {k: {} for k in members}
                        d = Draft(source, "hardware", "outage", "missing", members,
                                  ("helion_speedup_geomean",) if source == DASH else ("geomean",), s, end, None, None,
                                  f"{p}: runners unavailable, no results")
                        self.add(Eff(source, f, s, end, missing=True), d)
                    break

    # ---------------------------------------------------------------- noise cases
    def plant_noise(self, scatter: int, outlier: int, pre_scatter: int = 0, pre_outlier: int = 0):
        N = len(self.nights)
        for kind, count, source in (("scatter", scatter, DASH), ("outlier", outlier, DASH),
                                    ("scatter", pre_scatter, PRE), ("outlier", pre_outlier, PRE)):
            for _ in range(count):
                for _try in range(80):
                    ok_nights = [i for i in range(4, N - 4) if self.rows_at(i, source) and self.rows_at(i - 4, source)]
                    if not ok_nights:
                        break
                    s = int(self.rng.choice(ok_nights))
                    keys = list(self.rows_at(s, source))
                    if not keys:
                        continue
                    k = self.pick(keys, 1)[0]
                    if kind == "scatter":
                        e = min(N - 1, s + int(self.rng.integers(10, 40)))
                        if not self.stable(source, [k], s - 1, e) or not self.free(source, [k], s - 6, e + 1):
                            continue
                        end = e if e < N - 4 else None
                        f = {k: dict(sig=self.u(3.5, 6.0))}
                        self.add(Eff(source, f, s, end),
                                 Draft(source, "noise", "scatter", "noisy", [k],
                                       ("helion_speedup_geomean",) if source == DASH else ("geomean",), s, end, None,
                                       None, "series turns noisy"), span=0)
                    else:
                        if not self.stable(source, [k], s - 2, s + 2) or not self.free(source, [k], s - 5, s + 5):
                            continue
                        timer = "A" if source == PRE or self.rng.random() < 0.65 else "B"
                        fac = self.u(1.25, 1.45) if self.rng.random() < 0.7 else 1 / self.u(1.2, 1.35)
                        self.add(Eff(source, {k: {}}, s, s + 1, outlier=(timer, fac)),
                                 Draft(source, "noise", "outlier", "regression" if fac > 1 else "improvement", [k],
                                       (("helion_speedup_geomean",) if timer == "A" else ("helion_latency_avg_ms",))
                                       if source == DASH else ("geomean",), s, s + 1, None, None,
                                       "one-night outlier of one timer"), span=2)
                    break

    # ---------------------------------------------------------------- mods in force
    def active(self, eff: Eff, i: int | None = None, sha: str | None = None, when=None) -> bool:
        if eff.commit is not None and sha is not None:
            p = self.repo.pos.get(sha)
            if p is None:
                return False
            ok = p >= self.repo.pos[eff.commit]
            if eff.end_commit is not None:
                ok = ok and p < self.repo.pos[eff.end_commit]
            return ok
        if i is not None:
            return eff.start <= i and (eff.end is None or i < eff.end)
        if when is not None:
            a = self.nights[eff.start].date
            b = self.nights[eff.end].date if eff.end is not None else None
            return a <= when and (b is None or when < b)
        return False
