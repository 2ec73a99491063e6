"""Events of an R world and their labels.

Two sources of events:
  * the repo itself: between two nightlies a series' regime (shapes, cudagraph, baseline, torch pin,
    image, runner, autotune env, tritonbench pin, linear-attention setup, TPU toolchain, pretuned
    baselines/timer/configs, ...) changed. The model turns every regime value into factors, so the
    numbers move on their own; a change is labeled when it moves a series past its scatter, with
    the commit that made it (found by re-reading the files commit by commit inside the window);
  * planted: Helion code commits chosen in the window (slice from tag and paths, kernels from the
    subject when it names them), thermal episodes, outages, silent runner swaps, and noise cases
    (single-timer outliers, short blips next to commits that touch the kernel, noisy stretches).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .model import psummarize, pstatic_for, ptrue, rng, static_for, summarize, true_arrays

KIND = {"suite": ("method_change", "harness"), "shapes": ("method_change", "shapes"),
        "cg": ("method_change", "cudagraph"), "baseline": ("method_change", "baseline"),
        "fla": ("method_change", "baseline"), "tb": ("method_change", "harness"),
        "passes": ("method_change", "harness"), "subproc": ("method_change", "autotune"),
        "budget": ("method_change", "autotune"), "seed_fixed": ("method_change", "autotune"),
        "aot": ("method_change", "autotune"), "fp32": ("method_change", "harness"),
        "torch": ("hardware", "driver/toolchain"), "image": ("hardware", "driver/toolchain"),
        "tpu_tool": ("hardware", "driver/toolchain"), "runner": ("hardware", "runner")}
PKIND = {"baselines": ("method_change", "baseline"), "cg": ("method_change", "cudagraph"),
         "l2": ("method_change", "timer"), "nshapes": ("method_change", "shapes"),
         "cfg": ("real", "heuristics/config"), "torch": ("hardware", "driver/toolchain"),
         "image": ("hardware", "driver/toolchain"), "runner": ("hardware", "runner")}
# which side of a method change is the honest number: "post" unless listed
HONEST_PRE = {"budget"}
DCOMPS = ("suite", "shapes", "cg", "baseline", "fla", "aot", "budget", "seed_fixed", "subproc", "passes",
          "tb", "fp32", "torch", "image", "runner", "tpu_tool")
PCOMPS = ("nshapes", "baselines", "cg", "l2", "cfg", "torch", "image", "runner")
DMETRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
            "helion_latency_avg_ms", "compile_time_geomean_s")

KERNEL_WORDS = [(r"softmax", ("softmax",)), (r"layer[_ ]?norm", ("layer_norm", "layer_norm-bwd")),
                (r"rms[_ ]?norm", ("rms_norm", "rms_norm-bwd")), (r"attention|attn|flash|sdpa", ("flash_attention",)),
                (r"int4", ("int4_gemm",)), (r"grouped", ("grouped_gemm",)),
                (r"matmul|gemm|\bdot\b|mma|tcgen05|wgmma|tma", ("gemm", "grouped_gemm", "int4_gemm", "bmm")),
                (r"welford", ("welford",)), (r"jsd", ("jsd",)), (r"kl_?div", ("kl_div",)),
                (r"cross[_ ]?entropy", ("cross_entropy",)), (r"rope|rotary", ("rope",)),
                (r"mamba|ssd|chunk", ("mamba2_chunk_scan", "mamba2_chunk_state")), (r"gdn|delta", ("gdn_fwd_h",)),
                (r"reduc|sum\b", ("sum", "softmax", "rms_norm", "layer_norm")),
                (r"exp\b|pointwise|elementwise", ("vector_exp", "vector_add"))]


GENERIC_WORDS = {r"matmul|gemm|\bdot\b|mma|tcgen05|wgmma|tma", r"reduc|sum\b", r"exp\b|pointwise|elementwise"}
FOREIGN = re.compile(r"gemv|nvfp4|hstu|jagged|\bmoe\b|decode|quant|swiglu|geglu|embedding|conv1d|fp8 gemm|scaled_mm")


@dataclass
class Eff:
    start: int
    end: int | None
    ch: dict  # channel -> factor


@dataclass
class Ev:
    source: str
    cause: str
    kind: str
    a: int                    # global index of the first bad nightly
    members: list
    metrics: list
    end: int | None = None
    culprit: str | None = None
    change: str | None = None
    honest: dict = field(default_factory=dict)
    direction: str = ""
    note: str = ""
    hspec: list = field(default_factory=list)  # (key, night, reg, suite|None, drop_vllm) to value at the end


CODE_PATHS = ("helion/_compiler", "helion/autotuner", "helion/runtime", "helion/language", "helion/_compat")
_PERF = re.compile(r"perf|speed|fast|slow|optimi|heuristic|default|autotun|tune|tuning|persistent|tma|eviction|"
                   r"num_warps|num_stages|block ?size|warps|pipelin|schedul|epilogue|vectori|swizzle|xcd|\bl2\b|"
                   r"occupancy|launch|overhead|unroll|split|layout|reduction|fuse|fusion|search|population|lfbo|"
                   r"config|lowering|codegen|dot|matmul|mma|tcgen05|wgmma|loop|dma|vmem|indexing|stride|range")
_NOT_PERF = re.compile(r"\btests?\b|\bdocs?\b|lint|typo|print|repro|\blog\b|logging|error|refactor|rename|"
                       r"typing|pyre|mtia|tileir|memory|cache|crash|hang|telemetry|metric|\bci\b|debug|diagnos|"
                       r"warning|assert|type hint|support|api\b|skip|accuracy|output|standalone|custom|normaliz|"
                       r"example|valid|dict\b|arg\b|\bfx\b|serializ|pickle|import|circular|deprecat|interpret")


_STRONG = re.compile(r"perf|speed|fast|slow|optimi|heuristic|default|persistent|num_warps|num_stages|block ?size|"
                     r"occupancy|overhead|eviction|\btma\b|pipelin|schedul|epilogue|swizzle|xcd|\bl2\b|capping|"
                     r"cap |warps|unroll|vectori|fusion|lowering")
_EXCL2 = re.compile(r"metal|distributed|\bdist\b|torch\.compile|hook|protocol|abstraction|register|unused|clean|"
                    r"factory|migrate|process group|wire|llm|orchestrat|worker|introduce|infrastructure|plumb|"
                    r"add settings|setting\b|option|allow|optional|\bclass\b|\babc\b")


def _perf_relevant(subject: str) -> bool:
    return _perf_score(subject) > 0


def _perf_score(subject: str) -> int:
    s = subject.lower()
    if not _PERF.search(s) or _NOT_PERF.search(s) or _EXCL2.search(s):
        return 0
    return 2 if _STRONG.search(s) else 1


def _tag(sl: set) -> str | None:
    return next((t for t in ("cute", "pallas", "rocm", "autotuner", "sm90", "sm100", "triton") if t in sl), None)


def _kind(subject: str, tag: str) -> str:
    s = subject.lower()
    if tag == "autotuner" or re.search(r"heuristic|default|config|autotun|tune|tuning|search|population|lfbo|"
                                      r"num_warps|num_stages|block ?size|occupancy|range", s):
        return "heuristics/config"
    return "code"


def _slice(subject: str, files: list) -> set:
    s = subject.lower()
    tags = set(re.findall(r"\[([^\]]+)\]", s))
    out = set()
    if tags & {"cute", "cutedsl"} or any(f.startswith("helion/_compiler/cute") for f in files):
        out.add("cute")
    if tags & {"pallas", "pallas-tpu", "tpu"} or any("pallas" in f for f in files if f.startswith("helion/")):
        out.add("pallas")
    if tags & {"rocm", "amd"} or re.search(r"\brocm\b|\bamd\b|gfx9|\bhip\b|mi3[05]0", s):
        out.add("rocm")
    if "autotuner" in tags or any(f.startswith("helion/autotuner") for f in files):
        out.add("autotuner")
    if "pallas" in s or "tpu" in tags:
        out.add("pallas")
    if "cute" in s:
        out.add("cute")
    if re.search(r"sm90|hopper|wgmma|h100", s):
        out.add("sm90")
    if re.search(r"sm100|blackwell|tcgen05|b200", s) and "cute" not in out:
        out.add("sm100")
    if not out and not re.search(r"tileir|mtia|xpu|metal|cpu", s) and any(
            f.startswith(("helion/_compiler", "helion/language", "helion/runtime", "helion/_compat")) for f in files):
        out.add("triton")
    return out


class Planner:
    def __init__(self, w):
        self.w = w
        self.seed = w.seed
        self.G = w.G
        self.n = len(w.G)
        self.eff: dict = {}          # (src, p, k) -> [Eff]
        self.scatter: dict = {}      # (src, p, k) -> (start, end, mult)
        self.out_d: dict = {}        # night -> set(platform_short) missing from the dashboard nightly
        self.out_p: dict = {}        # night -> set(alias) missing from the pretuned nightly
        self.vllm_missing: set = set()
        self.busy: dict = {}
        self.events: list[Ev] = []
        self._st: dict = {}
        self._pst: dict = {}
        self.g = rng("plan", w.seed)

    # ------------------------------------------------------------------ noise-free values
    def st(self, key, suite):
        kk = (key, suite)
        if kk not in self._st:
            self._st[kk] = static_for(self.seed, key[0], key[1], suite)
        return self._st[kk]

    def pst(self, key):
        if key not in self._pst:
            self._pst[key] = pstatic_for(self.seed, *key)
        return self._pst[key]

    def eff_at(self, src, key, i) -> dict:
        out = {}
        for e in self.eff.get((src, *key), []):
            if e.start <= i and (e.end is None or i < e.end):
                for c, f in e.ch.items():
                    out[c] = out.get(c, 1.0) * f
        return out

    def dval(self, key, reg, suite, eff=None) -> dict:
        st = self.st(key, suite)
        return summarize(st, true_arrays(self.seed, st, reg, eff))

    def pval(self, key, reg, eff=None) -> dict:
        H, Bs = ptrue(self.seed, self.pst(key), reg, eff)
        return psummarize(H, Bs)

    def dthr(self, key, reg, suite) -> dict:
        st = self.st(key, suite)
        n = max(len(reg["shapes"]), 1)
        sg = st.sigma * math.sqrt(2.0 / n + 0.32)
        sl = st.sigma * math.sqrt(1.0 / n + 0.16)
        return {"helion_speedup_geomean": max(0.045, 4 * sg), "triton_speedup_geomean": max(0.045, 4 * sg),
                "torch_compile_speedup_geomean": max(0.045, 4 * sg), "helion_latency_avg_ms": max(0.055, 4 * sl),
                "compile_time_geomean_s": 0.15}

    def pthr(self, key, reg) -> float:
        return max(0.04, 4 * self.pst(key).sigma * math.sqrt(1.5 / max(reg["nshapes"], 1) + 0.2))

    @staticmethod
    def moved(a: dict, b: dict, thr: dict) -> dict:
        out = {}
        for m, t in thr.items():
            x, y = a.get(m), b.get(m)
            if x and y and x > 0 and y > 0 and abs(math.log(y / x)) >= t:
                out[m] = math.log(y / x)
        return out

    # ------------------------------------------------------------------ busy bookkeeping
    def mark(self, src, key, lo, hi):
        self.busy.setdefault((src, *key), set()).update(range(lo, hi + 1))

    def free(self, src, key, lo, hi) -> bool:
        b = self.busy.get((src, *key), set())
        return not any(x in b for x in range(lo, hi + 1))

    def add_eff(self, src, key, start, end, ch):
        self.eff.setdefault((src, *key), []).append(Eff(start, end, ch))

    # ------------------------------------------------------------------ the plan
    def run(self):
        self.auto_dashboard()
        self.auto_pretuned()
        self.plant_reverts()
        self.plant_outages()
        for _ in range(2):
            self._plant_scatter("dashboard")
        if any(self.w.pre):
            self._plant_scatter("pretuned")
        self.plant_real()
        self.plant_hardware()
        self.plant_pretuned_extras()
        self.plant_noise()
        for ev in self.events:
            for key, i, reg, suite, _ in ev.hspec:
                if ev.source == "dashboard":
                    v = self.dval(key, reg, suite, self.eff_at("d", key, i))["helion_speedup_geomean"]
                else:
                    v = self.pval(key, reg, self.eff_at("p", key, i))["geomean"]
                if v > 0:
                    ev.honest[f"{key[0]}/{key[1]}"] = round(v, 4)
        return self

    # ------------------------------------------------------------------ automatic events
    def _present(self, src, key, i) -> bool:
        tab = self.w.dash if src == "dashboard" else self.w.pre
        return 0 <= i < self.n and key in tab[i]

    def auto_dashboard(self):
        groups: dict = {}
        for i in range(1, self.n):
            cur, prev = self.w.dash[i], self.w.dash[i - 1]
            for key, s in cur.items():
                if key not in prev:
                    continue
                r0, r1 = prev[key]["reg"], s["reg"]
                if r0 == r1:
                    continue
                suite0, suite1 = prev[key]["suite"], s["suite"]
                base = self.dval(key, r0, suite0)
                thr = self.dthr(key, r1, suite1)
                best = None
                for comp in DCOMPS:
                    if comp == "suite":
                        if suite0 == suite1:
                            continue
                        after = self.dval(key, r1, suite1)
                    else:
                        if r0.get(comp) == r1.get(comp) or suite0 != suite1:
                            continue
                        reg = dict(r0)
                        reg[comp] = r1.get(comp)
                        after = self.dval(key, reg, suite0)
                    mv = self.moved(base, after, thr)
                    if comp not in ("passes", "subproc", "budget"):
                        mv.pop("compile_time_geomean_s", None)
                    if not mv:
                        continue
                    score = max(abs(v) for v in mv.values())
                    if comp in ("suite", "shapes"):
                        score += 10  # a new harness or shape set explains everything that night
                    if best is None or score > best[0]:
                        best = (score, comp, mv)
                if best is None:
                    continue
                _, comp, mv = best
                sha = self.w.blame_dash(i, key, comp)
                gk = ("dashboard", comp, i, sha)
                groups.setdefault(gk, []).append((key, mv, r0, r1, suite0, suite1))
        for (src, comp, i, sha), items in sorted(groups.items(), key=lambda x: (x[0][2], x[0][1])):
            cause, kind = KIND[comp]
            members, metrics, honest, dirs, hs = [], set(), {}, [], []
            for key, mv, r0, r1, s0, s1 in items:
                members.append(key)
                metrics.update(mv)
                if comp == "cg":
                    side = (r0, s0, i - 1) if r0.get("cg") else (r1, s1, i)
                elif comp in HONEST_PRE:
                    side = (r0, s0, i - 1)
                else:
                    side = (r1, s1, i)
                hs.append((key, side[2], side[0], side[1], False))
                d = mv.get("helion_speedup_geomean")
                dirs.append(0 if d is None else (1 if d > 0 else -1))
            metrics = [m for m in DMETRICS if m in metrics]
            ev = Ev("dashboard", cause, kind, i, members, metrics, change=sha, hspec=hs,
                    direction=_direction(dirs), note=f"{comp} change read from the repo at this nightly")
            self.events.append(ev)
            for key in members:
                self.mark("dashboard", key, i - 3, i + 3)

    def auto_pretuned(self):
        groups: dict = {}
        for i in range(1, self.n):
            cur, prev = self.w.pre[i], self.w.pre[i - 1]
            for key, s in cur.items():
                if key not in prev:
                    continue
                r0, r1 = prev[key]["reg"], s["reg"]
                if r0 == r1 and prev[key]["single"] == s["single"]:
                    continue
                base = self.pval(key, r0)
                thr = self.pthr(key, r1)
                best = None
                for comp in PCOMPS:
                    if r0.get(comp) == r1.get(comp):
                        continue
                    reg = dict(r0)
                    reg[comp] = r1.get(comp)
                    after = self.pval(key, reg)
                    x, y = base["geomean"], after["geomean"]
                    if not (x and y) or abs(math.log(y / x)) < thr:
                        continue
                    sc = abs(math.log(y / x)) + (10 if comp == "nshapes" else 0)
                    if best is None or sc > best[0]:
                        best = (sc, comp, math.log(y / x))
                if best is None:
                    continue
                _, comp, d = best
                sha = self.w.blame_pre(i, key, comp)
                groups.setdefault(("pretuned", comp, i, sha), []).append((key, d, r0, r1))
        for (src, comp, i, sha), items in sorted(groups.items(), key=lambda x: (x[0][2], x[0][1])):
            cause, kind = PKIND[comp]
            members = [it[0] for it in items]
            hs = []
            for key, d, r0, r1 in items:
                side = (r0, i - 1) if (comp == "cg" and r0.get("cg")) else (r1, i)
                hs.append((key, side[1], side[0], None, False))
            dirs = [1 if it[1] > 0 else -1 for it in items]
            ev = Ev("pretuned", cause, kind, i, members, ["geomean"], hspec=hs, direction=_direction(dirs),
                    note=f"pretuned {comp} change read from the repo at this nightly")
            if cause == "real":
                ev.culprit = sha
            else:
                ev.change = sha
            self.events.append(ev)
            for key in members:
                self.mark("pretuned", key, i - 3, i + 3)

    # ------------------------------------------------------------------ pools and series
    def pool_series(self, i, runner):
        """Dashboard series run on a runner label at nightly i."""
        return [k for k, s in self.w.dash[i].items() if s["reg"].get("runner") == runner]

    def pools(self, i) -> dict:
        out = {}
        for k, s in self.w.dash[i].items():
            out.setdefault(s["reg"].get("runner"), []).append(k)
        return out

    def _pick_night(self, lo, hi, ok, tries=60):
        lo, hi = max(lo, 1), min(hi, self.n - 1)
        if lo > hi:
            return None
        for _ in range(tries):
            i = int(self.g.integers(lo, hi + 1))
            if ok(i):
                return i
        return None

    # ------------------------------------------------------------------ outages
    def plant_outages(self):
        made = 0
        used = set()
        for attempt in range(60):
            if made >= 2:
                break
            i = self._pick_night(8, self.n - 4, lambda i: True)
            if i is None:
                continue
            pools = {r: ks for r, ks in self.pools(i).items() if r and len(ks) >= 3}
            if not pools:
                continue
            runner = sorted(pools)[int(self.g.integers(len(pools)))]
            if runner in used and attempt < 40:
                continue
            length = int(self.g.integers(2, 5))
            e = i + length
            if e >= self.n:
                continue
            keys = [k for k in self.pool_series(i - 1, runner)]
            if not keys or not all(self.free("dashboard", k, i - 3, e + 3) for k in keys):
                continue
            if any(self.pool_series(j, runner) != self.pool_series(i, runner) for j in range(i, e)):
                continue
            plats = sorted({k[0] for k in keys})
            for j in range(i, e):
                self.out_d.setdefault(j, set()).add(runner)
            hs = []
            for k in keys:
                s = self.w.dash[i - 1][k]
                hs.append((k, i - 1, s["reg"], s["suite"], False))
                self.mark("dashboard", k, i - 3, e + 3)
            # the same machines serve the pretuned nightly two hours later
            pre_keys = []
            for a in plats:
                if a in ("h100", "b200") and self.w.pre[i] and any(
                        s["reg"]["runner"] == runner for kk, s in self.w.pre[i].items() if kk[0] == a):
                    pre_keys += [kk for kk in self.w.pre[i - 1] if kk[0] == a]
            self.events.append(Ev("dashboard", "hardware", "outage", i, keys, ["helion_speedup_geomean"], end=e,
                                  hspec=hs, direction="missing",
                                  note=f"runner pool {runner} unavailable: {', '.join(plats)} missing for {length} nightlies"))
            if pre_keys:
                for j in range(i, e):
                    self.out_p.setdefault(j, set()).update({k[0] for k in pre_keys})
                hp = [(k, i - 1, self.w.pre[i - 1][k]["reg"], None, False) for k in pre_keys]
                self.events.append(Ev("pretuned", "hardware", "outage", i, pre_keys, ["geomean"], end=e, hspec=hp,
                                      direction="missing", note=f"runner pool {runner} unavailable (pretuned)"))
                for k in pre_keys:
                    self.mark("pretuned", k, i - 3, e + 3)
            made += 1
            used.add(runner)

    # ------------------------------------------------------------------ real code events
    def plant_reverts(self):
        self._collect_cands()
        self._made_real = 0
        self._used_nights = []
        # a regression that a later revert takes back: an episode with an end
        for c2, orig, a2 in self._reverts:
            hit = next(((c, sl, a, f) for (c, sl, a, f) in self._cands if c.subject.startswith(orig[:60])
                        and 3 <= a2 - a <= 30), None)
            if hit is None:
                continue
            c, sl, a, files = hit
            tag = _tag(sl)
            plats = self._slice_platforms(tag, a)
            keys = self._choose_kernels(c.subject, plats, a) if plats else []
            keys = [k for k in keys if self.free("dashboard", k, a - 4, a2 + 4) and all(
                self._present("dashboard", k, j) for j in range(a - 2, min(a2 + 3, self.n)))]
            if not keys:
                continue
            if self._real_event("dashboard", _kind(c.subject, tag), c.sha, a, keys, -1, float(self.g.uniform(0.09, 0.2)),
                                a2, f"Helion change in the {tag} slice; taken back by a revert {a2 - a} nightlies later"):
                self._made_real += 1
                self._used_nights.append(a)

    def _collect_cands(self):
        w = self.w
        lo_pos = w.pos[self.G[0]["sha"]]
        cands, reverts = [], []
        for c in w.chain[lo_pos + 1: w.pos[self.G[-1]["sha"]] + 1]:
            files = w.files.get(c.sha, [])
            if not any(f.startswith(CODE_PATHS) for f in files):
                continue
            a = w.night_of_commit(c.sha)
            if a is None or a < 3 or a > self.n - 4:
                continue
            m = re.match(r'Revert "(.+)"', c.subject)
            if m:
                reverts.append((c, m.group(1), a))
                continue
            if not _perf_relevant(c.subject):
                continue
            sl = _slice(c.subject, files)
            if sl:
                cands.append((c, sl, a, files))
        self._cands = cands
        self._reverts = reverts

    def plant_real(self):
        cands = self._cands
        made = self._made_real
        used_nights = self._used_nights
        rnd = self.g.random(len(cands))
        order = sorted(range(len(cands)), key=lambda j: (-_perf_score(cands[j][0].subject), rnd[j]))
        want = {"cute": 2, "pallas": 2, "rocm": 2, "autotuner": 3, "sm90": 1, "sm100": 1, "triton": 4}
        got = {x: 0 for x in want}
        auto = sum(1 for ev in self.events if ev.cause != "noise")
        target = min(9, max(4, 28 - auto))
        for idx in order:
            if made >= target:
                break
            c, sl, a, files = cands[idx]
            tag = _tag(sl)
            if tag is None or got[tag] >= want[tag] or any(abs(a - u) < 3 for u in used_nights):
                continue
            plats = self._slice_platforms(tag, a)
            if not plats:
                continue
            keys = self._choose_kernels(c.subject, plats, a)
            keys = [k for k in keys if self.free("dashboard", k, a - 4, a + 6) and all(
                self._present("dashboard", k, j) for j in range(a - 2, min(a + 5, self.n)))]
            if not keys:
                continue
            improve = bool(re.search(r"improve|faster|speed ?up|optimi|perf|fast path|better", c.subject.lower()))
            sign = 1 if improve or self.g.random() < 0.3 else -1
            mag = float(self.g.uniform(0.08, 0.22))
            ev = self._real_event("dashboard", _kind(c.subject, tag), c.sha, a, keys, sign, mag, None,
                                  f"Helion change in the {tag} slice moves these kernels")
            if ev is None:
                continue
            got[tag] += 1
            made += 1
            used_nights.append(a)

    def _find_fix(self, c, tag, a, cands):
        for c2, sl2, a2, _ in cands:
            if tag in sl2 and a + 5 <= a2 <= a + 18 and c2.sha != c.sha:
                return a2
        return None

    def _slice_platforms(self, tag, a) -> list:
        have = {k[0] for k in self.w.dash[a]} & {k[0] for k in self.w.dash[a - 1]}
        if tag == "cute":
            return [p for p in ("b200_cute",) if p in have]
        if tag == "pallas":
            return [p for p in ("tpu",) if p in have]
        if tag == "rocm":
            return [p for p in ("mi325x", "mi350x") if p in have]
        if tag == "sm90":
            return [p for p in ("h100",) if p in have]
        if tag == "sm100":
            return [p for p in ("b200",) if p in have]
        gpus = [p for p in ("h100", "b200", "mi325x", "mi350x") if p in have]
        if tag == "autotuner":
            gpus += [p for p in ("b200_cute", "tpu") if p in have]
        if not gpus:
            return []
        nplat = 1 + int(self.g.random() < 0.5) + int(self.g.random() < 0.25)
        return [str(x) for x in self.g.choice(gpus, size=min(nplat, len(gpus)), replace=False)]

    def _choose_kernels(self, subject, plats, a) -> list:
        s = subject.lower()
        if FOREIGN.search(s):
            return []  # the subject names kernels the dashboard does not run
        named, specific = [], False
        for pat, ks in KERNEL_WORDS:
            if re.search(pat, s):
                named += list(ks)
                specific = specific or pat not in GENERIC_WORDS
        out = []
        for p in plats:
            avail = sorted(k for (pp, k) in self.w.dash[a] if pp == p and (pp, k) in self.w.dash[a - 1])
            if not avail:
                continue
            hit = [k for k in avail if k in named]
            if hit:
                pick = hit[:2]
            elif specific:
                continue
            else:
                n = 1 + int(self.g.random() < 0.5) + int(self.g.random() < 0.2)
                pick = list(self.g.choice(avail, size=min(n, len(avail)), replace=False))
            out += [(str(p), str(k)) for k in pick]
        return out

    def _real_event(self, src, kind, sha, a, keys, sign, mag, end, note):
        members, hs, metrics = [], [], set()
        for key in keys:
            m = mag * float(self.g.uniform(0.75, 1.3))
            f = math.exp(-sign * m)  # helion time factor: regression -> slower
            if src == "dashboard":
                s = self.w.dash[a][key]
                k_f = math.exp(float(self.g.normal(0, 0.08)))
                before = self.dval(key, s["reg"], s["suite"], self.eff_at("d", key, a))
                ch = {"H": f, "K": k_f}
                self.add_eff("d", key, a, end, ch)
                after = self.dval(key, s["reg"], s["suite"], self.eff_at("d", key, a))
                mv = self.moved(before, after, self.dthr(key, s["reg"], s["suite"]))
                if "helion_speedup_geomean" not in mv:
                    self.eff[("d", *key)].pop()
                    continue
                members.append(key)
                metrics.update(mv)
                hs.append((key, a, s["reg"], s["suite"], False))
                self.mark("dashboard", key, a - 4, (end if end is not None else a) + 4)
            else:
                s = self.w.pre[a][key]
                before = self.pval(key, s["reg"], self.eff_at("p", key, a))
                self.add_eff("p", key, a, end, {"H": f})
                after = self.pval(key, s["reg"], self.eff_at("p", key, a))
                if abs(math.log(after["geomean"] / before["geomean"])) < self.pthr(key, s["reg"]):
                    self.eff[("p", *key)].pop()
                    continue
                members.append(key)
                metrics.add("geomean")
                hs.append((key, a, s["reg"], None, False))
                self.mark("pretuned", key, a - 4, (end if end is not None else a) + 4)
        if not members:
            return None
        order = DMETRICS if src == "dashboard" else ("geomean",)
        ev = Ev(src, "real", kind, a, members, [m for m in order if m in metrics], end=end, culprit=sha,
                hspec=hs, direction="regression" if sign < 0 else "improvement", note=note)
        self.events.append(ev)
        return ev

    # ------------------------------------------------------------------ hardware episodes
    def _hw_effect(self, keys, a, e, common, diff_q, label):
        """Apply a machine-level effect on dashboard series; returns (members, metrics, honest)."""
        members, metrics, honest = [], set(), []
        for key in keys:
            s = self.w.dash[a][key]
            ch = {c: math.exp(common) for c in ("H", "B", "T", "C")}
            g = rng("hwdiff", self.seed, label, key)
            if g.random() < diff_q:
                ch["H"] *= math.exp(float(g.uniform(0.05, 0.13)) * (1 if g.random() < 0.7 else -1))
            if g.random() < diff_q * 0.5:
                ch["B"] *= math.exp(float(g.uniform(0.04, 0.10)) * (1 if g.random() < 0.5 else -1))
            ch["K"] = math.exp(common * 0.5)
            before = self.dval(key, s["reg"], s["suite"], self.eff_at("d", key, a))
            self.add_eff("d", key, a, e, ch)
            after = self.dval(key, s["reg"], s["suite"], self.eff_at("d", key, a))
            mv = self.moved(before, after, self.dthr(key, s["reg"], s["suite"]))
            mv.pop("compile_time_geomean_s", None)
            if mv:
                members.append(key)
                metrics.update(mv)
                if e is not None:
                    s0 = self.w.dash[a - 1][key]
                    honest.append((key, a - 1, s0["reg"], s0["suite"], False))
                else:
                    honest.append((key, a, s["reg"], s["suite"], False))
        return members, metrics, honest

    def plant_hardware(self):
        # two thermal episodes on a runner pool (every job on those machines), one silent runner swap that
        # lasts and one that is fixed after a while
        auto_hw = sum(1 for ev in self.events if ev.cause == "hardware" and ev.kind not in ("outage",))
        plans = [("thermal", True), ("thermal", True), ("runner", False), ("runner", True)]
        if auto_hw >= 7:  # the repo already brings many machine changes into this window
            plans = [("thermal", True), ("runner", True)]
        self._auto_hw = auto_hw
        for kind, ends in plans:
            for attempt in range(50):
                a = self._pick_night(6, self.n - 8, lambda i: True)
                if a is None:
                    break
                pools = {r: ks for r, ks in self.pools(a).items() if r and len(ks) >= 4}
                if not pools:
                    continue
                runner = sorted(pools)[int(self.g.integers(len(pools)))]
                length = int(self.g.integers(2, 6)) if kind == "thermal" else int(self.g.integers(6, 15))
                e = a + length if ends else None
                if e is not None and e >= self.n - 1:
                    continue
                keys = [k for k in self.pool_series(a, runner) if k in self.w.dash[a - 1]]
                if kind == "thermal":
                    g = rng("thermalpick", self.seed, a, runner)
                    keys = [k for k in keys if k[1].startswith(("gemm", "flash", "int4", "grouped", "mamba", "gdn", "bmm"))
                            or k[1].endswith("-bwd") or g.random() < 0.3]
                hi = (e if e is not None else a) + 3
                keys = [k for k in keys if self.free("dashboard", k, a - 3, hi) and all(
                    self._present("dashboard", k, j) for j in range(a - 1, min(hi, self.n)))]
                if len(keys) < 2:
                    continue
                if any(j in self.out_d for j in range(a - 3, hi + 1)):
                    continue
                common = float(self.g.uniform(0.07, 0.16)) if kind == "thermal" else float(
                    self.g.uniform(0.03, 0.07)) * (1 if self.g.random() < 0.6 else -1)
                members, metrics, honest = self._hw_effect(keys, a, e, common, 0.55 if kind == "thermal" else 0.35,
                                                           (kind, a, runner))
                if len(members) < 2:
                    for key in keys:
                        self.eff[("d", *key)] = [x for x in self.eff.get(("d", *key), []) if x.start != a]
                    continue
                for key in keys:  # members below the scatter keep their (small) effect, unlabeled
                    self.mark("dashboard", key, a - 3, hi)
                note = (f"thermal throttling on the {runner} pool for {length} nightlies" if kind == "thermal"
                        else f"silent node swap in the {runner} pool" + (f", reverted after {length} nightlies" if ends
                                                                          else ", lasting"))
                self.events.append(Ev("dashboard", "hardware", kind, a, members,
                                      [m for m in DMETRICS if m in metrics], end=e, hspec=honest,
                                      direction="slower" if common > 0 else "faster", note=note))
                break

    def plant_pretuned_extras(self):
        """Pretuned: a one-night vLLM-baseline gap (optional install failed), a real CuTe code change."""
        pre_nights = [i for i in range(self.n) if self.w.pre[i]]
        if len(pre_nights) < 12:
            return
        # vLLM baseline missing for a night: the headline compares against a slower best baseline
        for attempt in range(30):
            a = int(self.g.choice(pre_nights[3:-3]))
            if a + 1 >= self.n:
                continue
            keys = [k for k, s in self.w.pre[a].items() if "vllm" in s["reg"]["baselines"] and k in self.w.pre[a - 1]
                    and k in self.w.pre[a + 1] and self.free("pretuned", k, a - 3, a + 3)]
            if len(keys) < 2:
                continue
            members, honest = [], []
            for k in keys:
                reg = self.w.pre[a][k]["reg"]
                full = self.pval(k, reg)
                part = dict(reg)
                part["baselines"] = tuple(b for b in reg["baselines"] if b != "vllm")
                v = self.pval(k, part)
                if abs(math.log(v["geomean"] / full["geomean"])) >= self.pthr(k, reg):
                    members.append(k)
                    honest.append((k, a, reg, None, False))
            if len(members) < 1:
                continue
            self.vllm_missing.add(a)
            for k in keys:
                self.mark("pretuned", k, a - 3, a + 3)
            self.events.append(Ev("pretuned", "method_change", "baseline", a, members, ["geomean"], end=a + 1,
                                  hspec=honest, direction="improvement",
                                  note="the optional vLLM install failed that night: the vllm baseline is absent"))
            break
        # a CuTe code change that moves the pretuned CuTe kernels on b200
        cands = []
        for (c, sl, _a, f) in getattr(self, "_cands", []):
            a = self.w.night_of_commit(c.sha, pre=True)
            subj = c.subject.lower()
            gemmish = re.search(r"gemm|\bmm\b|matmul|tcgen05|epilogue|gemv|fp8|fp4|\btma\b|mma|scale", subj) and \
                not re.search(r"attention|attn|softmax|norm|rope", subj)
            if "cute" in sl and gemmish and a is not None and 3 <= a < self.n - 4 and self.w.pre[a] and self.w.pre[a - 1]:
                cands.append((c, sl, a, f))
        for idx in self.g.permutation(len(cands)):
            c, sl, a, files = cands[idx]
            keys = [k for k in self.w.pre[a] if k[0] == "b200" and "cute" in k[1] and k in self.w.pre[a - 1]
                    and self.free("pretuned", k, a - 4, a + 5) and all(k in self.w.pre[j] for j in range(a, min(a + 4, self.n)))]
            if not keys:
                continue
            if self._real_event("pretuned", "code", c.sha, a, keys, -1 if self.g.random() < 0.6 else 1,
                                float(self.g.uniform(0.08, 0.18)), None,
                                "CuTe codegen change moves the pretuned CuTe kernels") is not None:
                break
        # thermal on the b200 pretuned runs
        for attempt in range(30 if getattr(self, "_auto_hw", 0) < 7 else 0):
            a = int(self.g.choice(pre_nights[3:-6]))
            keys = [k for k in self.w.pre[a] if k[0] == "b200" and k in self.w.pre[a - 1]
                    and self.free("pretuned", k, a - 3, a + 6)]
            if len(keys) < 4:
                continue
            e = a + int(self.g.integers(2, 4))
            if e >= self.n or any(j in self.out_p for j in range(a - 2, e + 2)):
                continue
            members, honest = [], []
            common = float(self.g.uniform(0.06, 0.12))
            for k in keys:
                g = rng("pthermal", self.seed, a, k)
                ch = {"H": math.exp(common + (float(g.uniform(0.05, 0.12)) if g.random() < 0.5 else 0.0)),
                      "B": math.exp(common)}
                reg = self.w.pre[a][k]["reg"]
                before = self.pval(k, reg, self.eff_at("p", k, a))
                self.add_eff("p", k, a, e, ch)
                after = self.pval(k, reg, self.eff_at("p", k, a))
                if abs(math.log(after["geomean"] / before["geomean"])) >= self.pthr(k, reg):
                    members.append(k)
                    honest.append((k, a - 1, self.w.pre[a - 1][k]["reg"], None, False))
                self.mark("pretuned", k, a - 3, e + 3)
            if members:
                self.events.append(Ev("pretuned", "hardware", "thermal", a, members, ["geomean"], end=e, hspec=honest,
                                      direction="regression", note="b200 pretuned machine throttling"))
                break

    # ------------------------------------------------------------------ noise cases
    def plant_noise(self):
        w = self.w
        made = []
        # single-night, single-timer outliers next to commits that touch the kernel
        touch = []
        for i in range(2, self.n - 2):
            lo, hi = w.pos[self.G[i - 1]["sha"]], w.pos[self.G[i]["sha"]]
            mods = w.F.at(self.G[i]["sha"]).runpy.get("mods", {})
            for c in w.chain[lo + 1: hi + 1]:
                files = w.files.get(c.sha, [])
                for k, mod in mods.items():
                    path = mod.replace(".", "/") + ".py"
                    if path in files:
                        touch.append((i, k, c.sha, path))
        self.g.shuffle(touch)
        spec = [("Hs", 1), ("B", 1), ("H", 2)]
        used = []
        for ch, nights in spec:
            for i, ex, sha, path in touch:
                if i < 5 or any(abs(i - u) < 12 for u in used):
                    continue
                keys = [k for k in w.dash[i] if k[1] == ex and k in w.dash[i - 1]]
                keys = [k for k in keys if self.free("dashboard", k, i - 4, i + nights + 3) and all(
                    self._present("dashboard", k, j) for j in range(i - 1, min(i + nights + 2, self.n)))]
                if not keys or any(j in self.out_d for j in range(i - 2, i + nights + 2)):
                    continue
                key = keys[int(self.g.integers(len(keys)))]
                used.append(i)
                if self._noise_outlier(key, i, nights, ch, f"{'one-night' if nights == 1 else 'two-night'} "
                                       f"{'speedup-timer' if ch == 'Hs' else 'baseline' if ch == 'B' else 'Helion'} "
                                       f"blip the same night a commit touched {path}; it reverts"):
                    made.append(key)
                    break
        # an outlier on the latency timer alone
        self._random_outliers("L", 1)
        # an excursion inside a noisy series' usual scatter
        self._random_outliers("Hs", 1, noisy=True)
        # make sure the last nightlies carry a case too (small builds keep a label)
        tail = self.n - 9
        if not any(ev.a >= tail + 2 for ev in self.events):
            self._random_outliers("Hs", 1, lo=tail + 2)

    def _noise_outlier(self, key, i, nights, ch, note, src="dashboard") -> bool:
        g = rng("noiseout", self.seed, key, i, ch)
        mag = float(g.uniform(0.12, 0.20)) if nights == 1 else float(g.uniform(0.08, 0.12))
        f = math.exp(mag) if (ch != "H" or g.random() < 0.7) else math.exp(-mag)
        s = self.w.dash[i][key]
        before = self.dval(key, s["reg"], s["suite"], self.eff_at("d", key, i))
        self.add_eff("d", key, i, i + nights, {ch: f})
        after = self.dval(key, s["reg"], s["suite"], self.eff_at("d", key, i))
        mv = self.moved(before, after, self.dthr(key, s["reg"], s["suite"]))
        if not mv and ch != "L":
            mv = {"helion_speedup_geomean": 0.0}
        metrics = [m for m in DMETRICS if m in mv] or (["helion_latency_avg_ms"] if ch == "L" else
                                                        ["helion_speedup_geomean"])
        self.events.append(Ev("dashboard", "noise", "outlier", i, [key], metrics, end=i + nights,
                              direction="transient", note=note))
        self.mark("dashboard", key, i - 4, i + nights + 3)
        return True

    def _random_outliers(self, ch, count, noisy=False, lo=6):
        made = 0
        for attempt in range(200):
            if made >= count:
                return
            i = self._pick_night(lo, self.n - 3, lambda i: i not in self.out_d and i + 1 not in self.out_d)
            if i is None:
                return
            keys = [k for k in self.w.dash[i] if k in self.w.dash[i - 1] and i + 2 < self.n and k in self.w.dash[i + 1]
                    and self.free("dashboard", k, i - 4, i + 4)]
            if noisy:
                keys = [k for k in keys if self.st(k, self.w.dash[i][k]["suite"]).sigma >= 0.016]
            if not keys:
                continue
            key = keys[int(self.g.integers(len(keys)))]
            if noisy:
                s = self.w.dash[i][key]
                sig = self.st(key, s["suite"]).sigma
                f = math.exp(-2.2 * sig * math.sqrt(2.0 / len(s["reg"]["shapes"]) + 0.32))
                self.add_eff("d", key, i, i + 1, {"Hs": f})
                self.events.append(Ev("dashboard", "noise", "outlier", i, [key], ["helion_speedup_geomean"], end=i + 1,
                                      direction="transient",
                                      note="a dip inside this series' usual scatter on a noisy platform"))
                self.mark("dashboard", key, i - 4, i + 4)
            else:
                self._noise_outlier(key, i, 1, ch, "single-timer outlier that reverts the next nightly")
            made += 1

    def _plant_scatter(self, src):
        tab = self.w.dash if src == "dashboard" else self.w.pre
        allkeys = sorted({k for t in tab for k in t})
        if not allkeys:
            return
        fresh = [k for k in allkeys if (src, *k) not in self.busy and (src, *k) not in self.scatter]
        for attempt in range(150):
            pool = fresh if (fresh and attempt < 100) else allkeys
            key = pool[int(self.g.integers(len(pool)))]
            nights = [i for i in range(self.n) if key in tab[i]]
            if len(nights) < 30 or (src, *key) in self.scatter:
                continue
            a = int(self.g.choice(nights[5:-12]))
            e = min(a + int(self.g.integers(12, 26)), self.n - 1)
            if not all(key in tab[j] for j in range(a - 1, e)) or not self.free(src, key, a - 20, e + 20):
                continue
            if any(j in (self.out_d if src == "dashboard" else self.out_p) for j in range(a - 2, e + 2)):
                continue
            mult = float(self.g.uniform(2.5, 4.0)) if src == "pretuned" else float(self.g.uniform(0.15, 0.28))
            self.scatter[(src, *key)] = (a, e, mult)
            metric = ["helion_speedup_geomean", "helion_latency_avg_ms"] if src == "dashboard" else ["geomean"]
            self.events.append(Ev(src, "noise", "scatter", a, [key], metric, end=e, direction="none",
                                  note="the series turns noisy for a while (one flaky shape), no step"))
            self.mark(src, key, 0, self.n)
            return


def _direction(dirs) -> str:
    s = set(d for d in dirs if d)
    if s == {1}:
        return "improvement"
    if s == {-1}:
        return "regression"
    if not s:
        return "flat"
    return "mixed"
