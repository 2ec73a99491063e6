"""Planted events: real code/heuristics changes on real commits whose diff plausibly carries them,
hardware episodes, outages, and plain noise. Changes that the real files themselves make (shapes,
cudagraph flags, baselines, pins, images, runners, harness) are not planted here: the simulation
reads them from the repo at each night (see facts.py) and they are labeled from their effect."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from .model import Mult, family, hkey

GPU_TB = ("h100", "b200", "mi325x", "mi350x")


@dataclass
class Effect:
    id: str
    start: int                 # first bad night (index into the simulated nights)
    end: int | None            # first night back to normal (None: persists)
    members: dict              # (alias, kernel) -> Mult
    cause: str | None = None   # None: unlabeled
    kind: str | None = None
    culprit: str | None = None
    change: str | None = None
    honest: str | None = "post"   # post | pre | None
    note: str = ""
    hide: bool = False            # outage: the series are absent
    plat: dict = field(default_factory=dict)   # alias -> device-time factor for the whole platform
    outlier_night: bool = False

    def active(self, n: int) -> bool:
        return self.start <= n and (self.end is None or n < self.end)


POS = (r"perf|faster|slow|speed|optimi|fus(e|ion|ed)|vectori|codegen|lower|tile|tiling|block|loop|reduc|persistent|"
       r"pipelin|warps|stages|config|heuristic|default|autotun|search|population|schedul|index|mask|tma|\bdot\b|"
       r"mma|matmul|gemm|layout|memory|\bload|\bstore|unroll|eviction|precision|dtype|cast|barrier|sync|register|"
       r"occupancy|grid|launch|kernel|epilogue|prologue|atomic|broadcast|split|shape|stride|accumulat|tensor desc")
NEG = (r"lint|typo|\bdocs?\b|docstring|comment|\btests?\b|testing|\bci\b|\blog|logging|print|debug|error message|"
       r"pyrefly|mypy|ruff|rename|nfc|\bllm\b|\baot\b|header|repro|telemetry|metrics|progress bar|\bbump\b|tutorial|"
       r"notebook|readme|license|remove unused|unused|cache|xpu|\bcpu\b|distributed|interpret|ref mode|reference mode|"
       r"warning|deprecat|skip|flaky|crash|segfault|exception|timeout|oom|hang|install|packag|version|typing|annotation|"
       r"update \w+ to \d|pars(e|ing)|normaliz|dead.?code|import|torch\.compile|\bhop\b|inductor|tileir|tile-ir|"
       r"allow passing|custom|\bdist\b|unpack|return type|\brand|randint|random|refactor|move |cleanup|clean up|"
       r"mtia|metal|triton_kernel|dataset|accuracy|recompil|bookkeeping|add hl\.|jagged|groundwork|scaffold")
QUIET_FILES = ("helion/autotuner/local_cache.py", "helion/autotuner/logger.py", "helion/autotuner/progress_bar.py",
               "helion/exc.py", "helion/_testing.py", "helion/autotuner/metrics.py")


def clean(c) -> bool:
    """Touches no benchmark harness or workflow file (those would read as a method change)."""
    return not any(f.startswith(("benchmarks/", ".github/workflows/")) for f in c.files)


def perf_score(c) -> float:
    """How plausibly a commit moves kernel performance (subject words and touched paths)."""
    s = c.subject.lower()
    hf = [f for f in c.files if f.startswith("helion/") and f not in QUIET_FILES and "/llm" not in f
          and "/aot" not in f and "_dynamo" not in f]
    if not hf or any(f.startswith(("benchmarks/", ".github/workflows/")) for f in c.files):
        return -1.0  # a commit that also changes the benchmark harness is not a clean code culprit
    score = 1.0 if re.search(POS, s) else 0.0
    if re.search(NEG, s):
        score -= 1.5
    if any(re.search(r"config_spec|base_search|pattern_search|surrogate|differential|effort_profile|"
                     r"inductor_lowering|generate_ast|indexing_strategy|reduction_strategy|tile_strategy|"
                     r"program_id|device_function|matmul|memory_ops|heuristic", f) for f in hf):
        score += 0.5
    return score


def tags_of(c) -> set:
    s = c.subject.lower()
    hf = [f for f in c.files if f.startswith("helion/")]
    t = set()
    if any("/cute/" in f for f in hf) or re.search(r"\bcute|cutedsl|cutedls", s):
        t.add("CUTE")
    if any("/pallas/" in f for f in hf) or re.search(r"pallas|\btpu\b|mosaic|\bjax\b", s):
        t.add("PALLAS")
    if re.search(r"tileir|tile-ir|\bxpu\b|\bcpu\b|distributed|all.?reduce|symm", s):
        t.add("OTHERBACKEND")
    if re.search(r"\brocm\b|\bamd\b|gfx9|mi3[025]0|\bhip\b|waves_per_eu", s) or \
            any(re.search(r"rocm|_amd|hip", f) for f in hf):
        t.add("ROCM")
    if re.search(r"sm90|hopper|h100|wgmma", s):
        t.add("SM90")
    if re.search(r"sm100|blackwell|b200|tcgen05", s):
        t.add("SM100")
    if any(f.startswith("helion/autotuner/") for f in hf):
        t.add("AUTOTUNE")
    if any(f.startswith(("helion/_compiler/", "helion/language/", "helion/runtime/")) and "/cute/" not in f
           and "/pallas/" not in f for f in hf):
        t.add("CODEGEN")
    if perf_score(c) <= 0:
        t.add("BORING")
    if s.startswith("revert"):
        t.add("REVERT")
    return t


KEYWORDS = {
    "norm": r"norm|reduc|welford|softmax|persistent reduction|rdim|looped",
    "normbwd": r"norm|reduc|backward|bwd|grad",
    "loss": r"cross.?entropy|reduc|kl_div|jsd|loss|logsumexp",
    "mm": r"matmul|gemm|dot|mma|tma|persistent|k.?loop|split.?k|tile|swizzl",
    "attn": r"attention|flash|softmax|dot|mma|tma",
    "ew": r"elementwise|pointwise|vector|load|store|vectoriz|mask|index",
    "red": r"reduc|sum|mean",
    "scan": r"scan|cumsum|mamba|gdn|chunk|recurren",
    "lin": r"linear|gla|kda|delta|retention|chunk",
}


def kernel_relevance(c, kernel: str, example_of: dict) -> float:
    s = c.subject.lower()
    mod = example_of.get(kernel)
    if mod and any(f == mod for f in c.files):
        return 3.0
    if re.search(rf"\b{re.escape(kernel.removesuffix('-bwd'))}\b", s):
        return 2.5
    fam = family(kernel)
    if kernel.startswith(("vanilla_linear_attn", "simple_gla", "retention", "full_gla", "delta_rule",
                          "gated_delta_rule", "kda")):
        fam = "lin"
    if re.search(KEYWORDS.get(fam, r"$^"), s):
        return 1.0
    if any(f.startswith(("helion/_compiler/", "helion/language/")) for f in c.files):
        return 0.15  # a generic codegen change can move any kernel
    return 0.0


class Planner:
    def __init__(self, seed, nights, ctx, commits, busy, example_of, pre=None):
        self.seed = seed
        self.r = np.random.default_rng(hkey("plan", seed))
        self.nights = nights           # list of (commit_idx, ...) objects with .cidx
        self.ctx = ctx                 # list of dict series -> SCtx
        self.commits = commits
        self.busy = busy               # series -> list of (lo, hi) night intervals
        self.example_of = example_of
        self.effects: list[Effect] = []
        self.used: set = set()
        self.N = len(nights)
        self._n = 0

    # ------------------------------------------------------------------ helpers
    def window(self, n: int) -> list:
        a, b = self.nights[n - 1].cidx, self.nights[n].cidx
        return [c for c in self.commits[a + 1:b + 1] if c.sha not in self.used]

    def free(self, series, lo, hi) -> bool:
        return all(hi < a or lo > b for a, b in self.busy.get(series, []))

    def ok(self, series, n, end=None, hold=3) -> bool:
        """No other change read within `hold` nights of this one's start (and end)."""
        if not self.free(series, n - hold, n + hold):
            return False
        return end is None or self.free(series, end - hold, end + hold)

    def occupy(self, series, lo, hi):
        self.busy.setdefault(series, []).append((lo, hi))

    def present(self, series, n) -> bool:
        return series in self.ctx[n] and series in self.ctx[n - 1]

    def stable(self, series, n, until) -> bool:
        """Present from n-2 to `until` with the same measurement context (no fact change)."""
        c0 = self.ctx[n - 1].get(series)
        if c0 is None:
            return False
        for m in range(max(n - 3, 0), min(until, self.N - 1) + 1):
            c = self.ctx[m].get(series)
            if c is None or c.shapes != c0.shapes or c.cg != c0.cg:
                return False
        return True

    def new_id(self, kind):
        self._n += 1
        return f"n{self.seed}-{self._n:03d}-{kind}"

    def sign(self, p_regress=0.58):
        return 1.0 if self.r.random() < p_regress else -1.0

    def mag(self, lo, hi):
        return float(self.r.uniform(lo, hi))

    def series_on(self, n, aliases=None, suites=("tb",)):
        return [s for s, c in self.ctx[n].items() if c.suite in suites and (aliases is None or s[0] in aliases)]

    def add(self, e: Effect, hold=3, whole=False):
        if e.culprit:
            self.used.add(e.culprit)
        for s in e.members:
            if whole:
                self.occupy(s, e.start - hold, (e.end if e.end is not None else self.N) + hold)
            else:
                self.occupy(s, e.start - hold, e.start + hold)
                if e.end is not None:
                    self.occupy(s, e.end - hold, e.end + hold)
        self.effects.append(e)
        return e

    def pick_night(self, lo=None, hi=None):
        lo = 14 if lo is None else lo
        hi = self.N - 2 if hi is None else hi
        ns = list(range(lo, hi + 1))
        self.r.shuffle(ns)
        return ns

    def maybe_end(self, n, tagset, p=0.3, lo=3, hi=22):
        """A later fix / revert: a commit of the same slice a few nights on."""
        if self.r.random() >= p:
            return None, None
        for m in sorted(range(n + lo, min(n + hi, self.N - 2) + 1), key=lambda _: self.r.random()):
            for c in self.window(m):
                t = tags_of(c)
                if t & tagset and "BORING" not in t:
                    return m, c
        return None, None

    # ------------------------------------------------------------------ real changes
    def real_kernel(self, n_events=7, near_end=2):
        made = 0
        tries = 0
        late = list(range(self.N - 9, self.N - 2))
        order = [n for n in late if self.r.random() < 0.9][:near_end * 2] + self.pick_night()
        for n in order:
            if made >= n_events or tries > 4000:
                break
            tries += 1
            cands = []
            for c in self.window(n):
                t = tags_of(c)
                if "BORING" in t or "REVERT" in t or not (t & {"CODEGEN"} or any(f.startswith("examples/")
                                                                                and f.endswith(".py") for f in c.files)):
                    continue
                if not any(f.startswith("helion/") for f in c.files):
                    continue
                if t & {"CUTE", "PALLAS", "OTHERBACKEND"}:
                    continue
                ps = perf_score(c)
                for s in self.series_on(n, GPU_TB):
                    rel = kernel_relevance(c, s[1], self.example_of)
                    if rel >= 1.0 or (rel > 0 and ps >= 1.5):
                        cands.append((rel + ps + self.r.random(), c, s[1]))
            if not cands:
                continue
            cands.sort(key=lambda x: -x[0])
            _, c, k = cands[0]
            aliases = [s[0] for s in self.series_on(n, GPU_TB) if s[1] == k]
            t = tags_of(c)
            if "ROCM" in t:
                aliases = [a for a in aliases if a.startswith("mi")]
            elif "SM90" in t:
                aliases = [a for a in aliases if a == "h100"]
            elif "SM100" in t:
                aliases = [a for a in aliases if a == "b200"]
            elif self.r.random() < 0.4:
                aliases = [a for a in aliases if a in ("h100", "b200")]
            end, fix = self.maybe_end(n, {"CODEGEN"})
            hi = end if end is not None else self.N
            aliases = [a for a in aliases if self.present((a, k), n) and self.ok((a, k), n, end)
                       and self.stable((a, k), n, min(hi, n + 3))]
            if not aliases:
                continue
            sg = self.sign()
            base = self.mag(0.07, 0.30)
            mem = {}
            for i, a in enumerate(aliases):
                f = base if i == 0 else base * self.r.uniform(0.4, 1.15)
                mem[(a, k)] = Mult(h=math.exp(sg * f))
            self.add(Effect(self.new_id("code"), n, end, mem, "real", "code", culprit=c.sha,
                            note=f"{'regression' if sg > 0 else 'improvement'} in {k} from a codegen/kernel change"
                            + (" (fixed later)" if end else "")))
            made += 1
        return made

    def real_slice(self, tag, aliases_for, kernels_pick, n_events=2, kind="code", lo=0.07, hi=0.28):
        """A backend-specific change (CuTe / Pallas / ROCm / sm90 / sm100) on that platform only."""
        made = 0
        for n in self.pick_night():
            if made >= n_events:
                break
            al = [a for a in aliases_for if any(s[0] == a for s in self.ctx[n])]
            if not al:
                continue
            excl = {"CUTE", "PALLAS", "OTHERBACKEND"} - {tag} if tag in ("SM90", "SM100", "ROCM") else {"OTHERBACKEND"}
            cs = [c for c in self.window(n) if tag in tags_of(c) and "BORING" not in tags_of(c)
                  and "REVERT" not in tags_of(c) and not (tags_of(c) & excl)
                  and any(f.startswith("helion/") for f in c.files)]
            if not cs:
                continue
            c = cs[int(self.r.integers(len(cs)))]
            series = [s for s in self.ctx[n] if s[0] in al and self.ctx[n][s].suite in ("tb", "tpu", "bridge")]
            scored = sorted(series, key=lambda s: -(kernel_relevance(c, s[1], self.example_of) + self.r.random()))
            k_n = kernels_pick()
            end, fix = self.maybe_end(n, {tag}, p=0.25)
            hi_ = end if end is not None else self.N
            chosen = [s for s in scored if self.present(s, n) and self.ok(s, n, end)
                      and self.stable(s, n, min(hi_, n + 3))
                      and (kernel_relevance(c, s[1], self.example_of) >= 1.0 or tag == "ROCM")][:k_n]
            if not chosen:
                continue
            sg = self.sign(0.5 if tag == "CUTE" else 0.55)
            base = self.mag(lo, hi)
            mem = {s: Mult(h=math.exp(sg * base * self.r.uniform(0.6, 1.2))) for s in chosen}
            self.add(Effect(self.new_id(tag.lower()), n, end, mem, "real", kind, culprit=c.sha,
                            note=f"{tag} change moves {len(chosen)} kernel(s) on {'/'.join(sorted({s[0] for s in chosen}))}"
                            + (" (fixed later)" if end else "")))
            made += 1
        return made

    def real_heuristics(self, n_events=3, compile_on_night=None):
        made = 0
        for n in self.pick_night():
            if made >= n_events:
                break
            cs = [c for c in self.window(n) if "AUTOTUNE" in tags_of(c) and "BORING" not in tags_of(c)
                  and "REVERT" not in tags_of(c) and not (tags_of(c) & {"CUTE", "PALLAS", "OTHERBACKEND"})
                  and perf_score(c) >= 1.0 and re.search(r"config|search|heuristic|warps|stages|block|default|"
                                                         r"population|autotun|tunable|knob", c.subject.lower())]
            if not cs:
                continue
            c = cs[int(self.r.integers(len(cs)))]
            t = tags_of(c)
            if "ROCM" in t:
                al = [a for a in ("mi325x", "mi350x")]
            else:
                al = list(self.r.permutation(["h100", "b200"]))[:1 + int(self.r.random() < 0.5)]
            series = [s for s in self.series_on(n, al)]
            self.r.shuffle(series)
            k_n = int(self.r.integers(1, 5))
            end, fix = self.maybe_end(n, {"AUTOTUNE"}, p=0.25)
            hi_ = end if end is not None else self.N
            chosen = [s for s in series if self.present(s, n) and self.ok(s, n, end)
                      and self.stable(s, n, min(hi_, n + 3))][:k_n]
            if not chosen:
                continue
            sg = self.sign(0.55)
            base = self.mag(0.06, 0.20)
            ct = math.exp(-sg * self.r.uniform(0.1, 0.45)) if self.r.random() < 0.6 else 1.0
            mem = {s: Mult(h=math.exp(sg * base * self.r.uniform(0.6, 1.25)), ct=ct) for s in chosen}
            self.add(Effect(self.new_id("heur"), n, end, mem, "real", "heuristics/config", culprit=c.sha,
                            note="autotuner change picks different configs" + (" (fixed later)" if end else "")))
            made += 1
        return made

    def real_compile(self):
        """An autotuner change that moves compile (autotune) time on every kernel of a platform."""
        for n in self.pick_night(20):
            cs = [c for c in self.window(n) if "AUTOTUNE" in tags_of(c) and
                  not (tags_of(c) & {"CUTE", "PALLAS", "REVERT", "OTHERBACKEND"}) and
                  clean(c) and re.search(r"time|budget|effort|early.?stop|population|precompile|parallel|subprocess|seed|"
                            r"finishing|rebenchmark|compile|generations|converge", c.subject.lower())
                  and not re.search(r"lint|typo|\btests?\b|\blog|print|llm", c.subject.lower())]
            if not cs:
                continue
            series = [s for s, c in self.ctx[n].items() if c.suite == "tb" and c.compile_mode == "autotune"
                      and self.ctx[n - 1].get(s) is not None and self.ctx[n - 1][s].compile_mode == "autotune"]
            if len(series) < 6:
                continue
            c = cs[int(self.r.integers(len(cs)))]
            al = sorted({s[0] for s in series})
            al = [al[int(self.r.integers(len(al)))]] if self.r.random() < 0.5 else al
            chosen = [s for s in series if s[0] in al and self.ok(s, n, hold=2)]
            if len(chosen) < 4:
                continue
            f = math.exp(self.r.uniform(0.3, 0.65) * (1 if self.r.random() < 0.6 else -1))
            mem = {s: Mult(ct=f * math.exp(self.r.normal(0, 0.05))) for s in chosen}
            e = Effect(self.new_id("ctime"), n, None, mem, "real", "code", culprit=c.sha, honest=None,
                       note=f"autotune/compile time {'up' if f > 1 else 'down'} on {'/'.join(al)}; speedup unchanged")
            for s in chosen:
                self.occupy(s, n - 2, n + 2)
            self.effects.append(e)
            return 1
        return 0

    def curated(self, sha_prefix, end_prefix, pick, kind, note, lo=0.08, hi=0.25, sign=None, ct=None):
        """A known real commit (and its revert), if both sit in the window."""
        idx = {c.sha[:8]: c for c in self.commits}
        c = idx.get(sha_prefix)
        if c is None:
            return 0
        n = next((i for i in range(1, self.N) if self.nights[i - 1].cidx < c.idx <= self.nights[i].cidx), None)
        if n is None or n < 8 or n > self.N - 2:
            return 0
        end = None
        if end_prefix:
            ce = idx.get(end_prefix)
            end = next((i for i in range(1, self.N) if self.nights[i - 1].cidx < ce.idx <= self.nights[i].cidx), None)
            if end is None or end <= n + 1:
                return 0
        series = pick(n)
        hi_ = end if end is not None else self.N
        chosen = [s for s in series if self.present(s, n) and self.ok(s, n, end)
                  and self.stable(s, n, min(hi_, n + 3))]
        if not chosen:
            return 0
        sg = sign if sign is not None else self.sign()
        base = self.mag(lo, hi)
        mem = {s: Mult(h=math.exp(sg * base * self.r.uniform(0.6, 1.25)), ct=(ct or 1.0)) for s in chosen}
        self.add(Effect(self.new_id("cur"), n, end, mem, "real", kind, culprit=c.sha, note=note))
        return 1

    def second_on_series(self, gap=(10, 35)):
        """Another real change on a series that already had one (several events in one series)."""
        firsts = [e for e in self.effects if e.cause == "real" and len(e.members) <= 3 and e.honest == "post"]
        self.r.shuffle(firsts)
        for e in firsts:
            s = next(iter(e.members))
            after = (e.end if e.end is not None else e.start)
            for n in range(after + gap[0], min(after + gap[1], self.N - 2)):
                # release this series' own hold so the second event may come close after the first
                cs = [c for c in self.window(n) if tags_of(c) & {"CODEGEN", "AUTOTUNE"} and "BORING" not in tags_of(c)
                      and not (tags_of(c) & {"CUTE", "PALLAS", "REVERT", "OTHERBACKEND"})]
                cs = [c for c in cs if kernel_relevance(c, s[1], self.example_of) >= 1.0 or perf_score(c) >= 1.5]
                if not cs or not self.present(s, n) or not self.stable(s, n, n + 3):
                    continue
                if not self.ok(s, n):
                    continue
                c = max(cs, key=lambda c: kernel_relevance(c, s[1], self.example_of) + self.r.random())
                t = tags_of(c)
                kind = "heuristics/config" if "AUTOTUNE" in t and "CODEGEN" not in t else "code"
                sg = self.sign(0.5)
                self.add(Effect(self.new_id("again"), n, None, {s: Mult(h=math.exp(sg * self.mag(0.07, 0.2)))},
                                "real", kind, culprit=c.sha, note=f"a further change on {s[1]} ({s[0]})"))
                return 1
        return 0

    # ------------------------------------------------------------------ hardware
    def thermal(self, n_events=2, one_off=1):
        made = 0
        for n in self.pick_night(16, self.N - 8):
            if made >= n_events + one_off:
                break
            is_one = made >= n_events
            # throttling shows in the latency timer: only where latency is measured
            aliases = sorted({s[0] for s, c in self.ctx[n].items() if c.suite == "tb" and c.latency_on})
            if not aliases:
                continue
            a = aliases[int(self.r.integers(len(aliases)))]
            dur = int(self.r.integers(2, 4)) if is_one else int(self.r.integers(3, 7))
            end = n + dur
            if end >= self.N - 1:
                continue
            series = [s for s, c in self.ctx[n].items() if s[0] == a and c.suite in ("tb", "lin")]
            if is_one:  # one bad node: one shard's kernels
                shard = self.ctx[n][series[int(self.r.integers(len(series)))]].shard
                series = [s for s in series if self.ctx[n][s].shard == shard]
            # the throttled machines serve the shards whose kernels show it (each shard is its own job)
            series = [s for s in series if self.ok(s, n, end, hold=4) and self.present(s, n)
                      and self.stable(s, n, end)]
            if not series or (not is_one and len(series) < 3):
                continue
            slow = self.r.uniform(1.07, 1.16) if not is_one else self.r.uniform(1.18, 1.3)
            mem = {}
            for s in series:
                # throttled clocks hurt compute-bound code more; Helion and baseline differ by kernel
                d = self.r.normal(0, 0.035)
                if abs(d) < 0.045 and self.r.random() < 0.5:
                    d = math.copysign(self.r.uniform(0.045, 0.09), d)
                mem[s] = Mult(h=slow * math.exp(d), b=slow, t=slow, c=slow, noise=1.6)
            e = Effect(self.new_id("thermal"), n, end, mem, "hardware", "thermal", honest="pre",
                       note=("a bad node" if is_one else f"{a} runners throttling") + f" for {dur} nights")
            self.add(e, hold=4, whole=True)
            made += 1
        return made

    def outage(self):
        for n in self.pick_night(20, self.N - 10):
            aliases = sorted({s[0] for s in self.ctx[n]})
            a = aliases[int(self.r.integers(len(aliases)))]
            dur = int(self.r.integers(3, 6))
            series = [s for s in self.ctx[n] if s[0] == a]
            if not series or not all(self.free(s, n - 3, n + dur + 3) and s in self.ctx[n - 1] for s in series):
                continue
            if not all(s in self.ctx[n + dur] for s in series):
                continue
            self.add(Effect(self.new_id("outage"), n, n + dur, {s: Mult() for s in series}, "hardware", "outage",
                            honest=None, hide=True, note=f"{a} runners unavailable for {dur} nights"), hold=3, whole=True)
            return 1
        return 0

    # ------------------------------------------------------------------ method (no commit)
    def tb_drift(self):
        """tritonbench cloned at HEAD (before the pin): upstream changed a baseline overnight."""
        for n in self.pick_night(20, self.N - 6):
            if not self.ctx[n] or any(c.tb_pin != "HEAD" for c in self.ctx[n].values() if c.suite == "tb"):
                continue
            ks = sorted({s[1] for s, c in self.ctx[n].items() if c.suite == "tb"})
            k = ks[int(self.r.integers(len(ks)))]
            series = [s for s, c in self.ctx[n].items() if s[1] == k and c.suite == "tb"]
            if not all(self.ok(s, n) and self.present(s, n) and self.stable(s, n, n + 3) for s in series):
                continue
            f = math.exp(self.r.choice([-1, 1]) * self.r.uniform(0.08, 0.2))
            mem = {s: Mult(b=f * math.exp(self.r.normal(0, 0.01))) for s in series}
            self.add(Effect(self.new_id("tbdrift"), n, None, mem, "method_change", "baseline", honest="post",
                            note=f"unpinned tritonbench changed the {k} baseline overnight (no Helion commit)"))
            return 1
        return 0

    # ------------------------------------------------------------------ noise
    def scatter(self, n_events=2):
        made = 0
        for n in self.pick_night(25, self.N - 25):
            if made >= n_events:
                break
            series = self.series_on(n, None, ("tb", "tpu", "bridge"))
            self.r.shuffle(series)
            for s in series:
                if self.ok(s, n, hold=4) and self.stable(s, n, n + 3):
                    self.add(Effect(self.new_id("scatter"), n, None, {s: Mult(noise=self.r.uniform(3.2, 4.5))},
                                    "noise", "scatter", honest=None,
                                    note="series turns noisy (bimodal autotune picks), no step"), hold=3, whole=True)
                    made += 1
                    break
        return made

    def outliers(self, n_events=3):
        made = 0
        for n in self.pick_night(10, self.N - 3):
            if made >= n_events:
                break
            series = self.series_on(n, None, ("tb", "lin", "tpu", "bridge"))
            self.r.shuffle(series)
            for s in series:
                if not (self.ok(s, n) and self.present(s, n) and s in self.ctx[n + 1]):
                    continue
                which = self.r.integers(3)
                f = self.r.uniform(1.22, 1.35)
                c = self.ctx[n][s]
                m = Mult(sp_h=f) if which == 0 else Mult(b=1 / f, t=1 / f, c=1 / f) if which == 1 else \
                    (Mult(lat=f) if c.latency_on else Mult(sp_h=1 / f))
                if c.suite != "tb":
                    m = Mult(h=f)
                self.add(Effect(self.new_id("outlier"), n, n + 1, {s: m}, "noise", "outlier", honest=None,
                                outlier_night=True, note="one stray measurement, back the next night"), hold=2)
                made += 1
                break
        return made
