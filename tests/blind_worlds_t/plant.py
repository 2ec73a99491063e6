"""Builds the event plan of one world: events the real history carries, then planted ones."""
from __future__ import annotations

import random
import re

from .catalog import SeriesRun
from .events import GPU_PLATS, Event, Plan, slice_of
from .facts import BENCH, BENCH_TPU, DISPATCH, PRE_BENCH, PRE_DISPATCH, TB_PIN, Facts, read_facts

NOT_PERF = (r"\b(lint|type[- ]?check\w*|typing|pyrefly|pyright|mypy|tests?|testing|docs?|documentation|logg?ing|logs?|"
            r"refactor\w*|rename\w*|move[sd]?|typo|ci|skip\w*|ref mode|interpret\w*|clean ?up|readme|comments?|"
            r"format\w*|ruff|bump\w*|version|deprecat\w*|revert\w*|examples?|tutorials?|notebooks?|dist|"
            r"error messages?|exceptions?|debug\w*|metal|xpu|telemetry|lean|charter|ellipsis|unused|print\w*|sync|"
            r"metrics|llm)\b")
PERF = (r"perf|fast|speed|optimi|tile|block|warp|config|heuristic|schedul|fuse|fusion|codegen|lower|pipelin|"
        r"persistent|vectori|tma|tcgen05|num_warps|num_stages|default|seed|reduction|loop|index|mask|layout|"
        r"swizzl|autotun|search|epilogue|prologue|memory|load|store|overlap|split|unroll|matmul|dot|atomic")
NORM_KERNELS = ("layer_norm", "rms_norm", "cross_entropy", "softmax", "jsd", "kl_div", "swiglu", "geglu")


def _sgn(r: random.Random) -> int:
    return 1 if r.random() < 0.5 else -1


class Planner:
    def __init__(self, seed, nights, facts, cat, pcat, hist, blobs):
        self.seed = seed
        self.nights = nights  # list of (full_sha, date, p_full_sha)
        self.F: list[Facts] = facts
        self.cat: list[list[SeriesRun]] = cat
        self.pcat = pcat
        self.hist = hist
        self.blobs = blobs
        self.n = len(nights)
        self.rng = random.Random(seed)
        self.plan = Plan(seed, self.n)
        self.used_commits: set = set()
        self.k = 0
        self.noise_keys: set = set()
        self.tb_events = 0

    # -------------------------------------------------------------- helpers
    def eid(self, tag: str) -> str:
        self.k += 1
        return f"t{self.seed}-{self.k:03d}-{tag}"

    def window(self, i: int, pretuned: bool = False):
        lo = self.nights[i - 1][2] if pretuned else self.nights[i - 1][0]
        hi = self.nights[i][2] if pretuned else self.nights[i][0]
        if lo is None or hi is None:
            return []
        return self.hist.between(lo, hi)

    def find_commit(self, i: int, paths, aspect, pretuned: bool = False) -> str | None:
        commits = self.window(i, pretuned)
        touching = [c for c in commits if any(f.startswith(tuple(paths)) for f in c.files)]
        if not touching:
            return None
        lo = self.nights[i - 1][2] if pretuned else self.nights[i - 1][0]
        base = aspect(read_facts(self.blobs, lo))
        for c in touching:
            if aspect(read_facts(self.blobs, c.sha)) != base:
                return c.sha
        return touching[-1].sha

    def keys_at(self, i: int, pred=lambda r: True) -> list:
        return sorted((r.platform, r.kernel) for r in self.cat[i] if pred(r))

    def present(self, key, a: int, b: int) -> bool:
        ks = [{(r.platform, r.kernel) for r in self.cat[j]} for j in range(max(a, 0), min(b, self.n))]
        return all(key in s for s in ks)

    def free(self, keys, night, source="dashboard", pad=3) -> list:
        return [k for k in keys if k not in self.noise_keys and not self.plan.is_busy(source, k, night, pad)]

    # -------------------------------------------------------------- natural, from the files
    def natural(self):
        n, F, cat = self.n, self.F, self.cat
        last: dict = {}
        for r in cat[0]:
            last[(r.platform, r.kernel)] = r
        for i in range(1, n):
            prev = {(r.platform, r.kernel): r for r in cat[i - 1]}
            now = {(r.platform, r.kernel): r for r in cat[i]}
            groups: dict = {}
            returning = []
            for key, r in now.items():
                q = prev.get(key)
                if q is None:
                    q = last.get(key)
                    if q is not None and (q.shapes != r.shapes or q.cudagraph != r.cudagraph):
                        returning.append(key)
                    continue
                if q.suite != r.suite:
                    groups.setdefault(("harness", "tpu"), []).append(key)
                elif q.shapes != r.shapes:
                    g = r.kernel if r.suite == "tritonbench" else r.suite
                    groups.setdefault(("shapes", g), []).append(key)
                if q.cudagraph != r.cudagraph:
                    groups.setdefault(("cudagraph", r.kernel), []).append(key)
            for (kind, g), keys in sorted(groups.items()):
                self._catalog_event(i, kind, g, sorted(keys), prev, now)
            if returning:
                self._returning(i, sorted(returning), last, now)
            for key, r in now.items():
                last[key] = r
            self._fact_events(i)
        self._toggle_outages()
        if any(self.pcat):
            self._pretuned_natural()

    def _catalog_event(self, i, kind, g, keys, prev, now):
        F = self.F
        if kind == "shapes" and g == "linattn":
            paths = ("benchmarks/run_linattn.py", BENCH)
            aspect = lambda f: (tuple((f.linattn or {}).get("shapes", ())), f.bench.get("linattn_num_shapes"))
            what = "the linear-attention shape list"
        elif kind == "shapes" and g in ("tpu", "tpu_bridge"):
            paths = ("benchmarks/run_tpu.py", BENCH_TPU, ".github/workflows/benchmark_tpu_bridge.yml", "benchmarks/run.py")
            aspect = lambda f: (tuple(sorted(f.tpu_map.items())), f.tpu_num_shapes)
            what = "the TPU input shapes"
        elif kind == "shapes":
            paths = ("benchmarks/run.py",)
            aspect = lambda f, k=g: ((f.gpu_map.get(k) or {}).get("opts", {}).get("num_inputs"), f.max_inputs)
            what = f"num_inputs of {g} in KERNEL_MAPPINGS"
        elif kind == "cudagraph":
            paths = ("benchmarks/run.py", BENCH)
            aspect = lambda f, k=g: (tuple((f.gpu_map.get(k) or {}).get("opts", {}).get("remove_flags") or ()),
                                     f.bench.get("cudagraph"))
            what = f"--cudagraph for {g}"
        else:
            paths = (DISPATCH, ".github/workflows/")
            aspect = lambda f: (tuple(f.kernel_defaults.get("kernels_tpu", ())),
                                tuple(f.kernel_defaults.get("kernels_tpu_bridge", ())), f.toggles.get("run_tpu_bridge"))
            what = "the TPU harness (run_tpu.py to the tritonbench bridge)"
        sha = self.find_commit(i, paths, aspect)
        if sha is None:
            return
        honest = "new"
        if kind == "cudagraph":
            on = now[keys[0]].cudagraph
            honest = "new" if on else "old"
            note = (f"{what} {'restored' if on else 'removed'} by a benchmark commit: the speedup timer changed "
                    f"(latency, the do_bench timer, did not); the kernel is the same. Honest side: the CUDA-graph timing.")
        elif kind == "shapes":
            note = (f"{what} changed, so the benchmarked inputs changed (shape count/labels in per_shape); "
                    f"the kernel is the same. Honest side: the new input set.")
        else:
            note = f"{what} changed; same kernels measured by a different harness. Honest side: the new harness."
        e = Event(self.eid(kind), "dashboard", "method_change", kind, i, None, catalog=True, series=keys,
                  change=sha, honest=honest, note=note)
        self.used_commits.add(sha)
        self.plan.add(e)

    def _returning(self, i, keys, last, now):
        """Rows that come back after nights without data, measured differently than before the gap."""
        c = next((c for c in self.window(i) if any(f.startswith((".github/", "benchmarks/")) for f in c.files)), None)
        if c is None:
            return
        shp = [k for k in keys if last[k].shapes != now[k].shapes]
        cg = [k for k in keys if last[k].cudagraph != now[k].cudagraph]
        for kind, ks in (("shapes", shp), ("cudagraph", cg)):
            if not ks:
                continue
            e = Event(self.eid(kind), "dashboard", "method_change", kind, i, None, catalog=True, series=ks,
                      change=c.sha, honest="new",
                      note="these rows came back after nights without results, switched on again by a workflow "
                           "commit, with a different input set than before the gap (it changed while they were "
                           "off); the kernels are the same. Honest side: the new inputs.")
            e.prev_override = {k: last[k] for k in ks}
            self.used_commits.add(c.sha)
            self.plan.add(e)

    def _alias_rows(self, i, alias, suite):
        return self.keys_at(i, lambda r: r.alias == alias and (r.suite == suite or
                                                               (suite == "tpu" and r.suite == "tpu_bridge")))

    def _fact_events(self, i):
        F, rng = self.F, self.rng
        fp, fn = F[i - 1], F[i]
        pa = {(a.alias, a.suite): a for a in fp.aliases if fp.enabled(a)}
        na = {(a.alias, a.suite): a for a in fn.aliases if fn.enabled(a)}
        for key in sorted(set(pa) & set(na)):
            a0, a1 = pa[key], na[key]
            rows = self._alias_rows(i, *key)
            if not rows:
                continue
            if a0.runner != a1.runner:
                end = None
                for j in range(i + 1, self.n):
                    aj = next((a for a in F[j].aliases if (a.alias, a.suite) == key), None)
                    if aj and aj.runner == a0.runner:
                        end = j
                        break
                    if aj is None or aj.runner != a1.runner:
                        break
                sha = self.find_commit(i, (".github/",), lambda f, k=key: next(
                    (a.runner for a in f.aliases if (a.alias, a.suite) == k), None))
                self._hardware(i, end, rows, "runner", sha,
                               f"runner label for {key[0]} ({key[1]}) changed from {a0.runner} to {a1.runner}: "
                               f"a different machine, every timer on that platform moves, other platforms do not.")
            elif (a0.image, a0.runtime) != (a1.image, a1.runtime):
                sha = self.find_commit(i, (".github/",), lambda f, k=key: next(
                    ((a.image, a.runtime) for a in f.aliases if (a.alias, a.suite) == k), None))
                self._hardware(i, None, rows, "driver/toolchain", sha,
                               f"container image/runtime for {key[0]} changed ({a0.image} -> {a1.image}): "
                               f"toolchain change on that platform only.", subset=0.7)
        if fp.tpu_runner and fn.tpu_runner and fp.tpu_runner != fn.tpu_runner:
            rows = self.keys_at(i, lambda r: r.platform == "tpu")
            sha = self.find_commit(i, (".github/",), lambda f: f.tpu_runner)
            if rows:
                self._hardware(i, None, rows, "runner", sha, "TPU runner label changed: a different TPU host.")
        b0, b1 = fp.bench, fn.bench
        if b0.get("torch_pin") and b1.get("torch_pin") and b0["torch_pin"] != b1["torch_pin"]:
            rows = self.keys_at(i, lambda r: r.suite == "tritonbench")
            sha = self.find_commit(i, (BENCH,), lambda f: f.bench.get("torch_pin"))
            self._baseline(i, rows, sha, f"PyTorch pin for the benchmark jobs moved {b0['torch_pin']} -> "
                                         f"{b1['torch_pin']}: the eager baselines changed, so all three speedups "
                                         f"move together while Helion's latency does not.")
        if b0.get("linattn_torch_pin") != b1.get("linattn_torch_pin") and b0.get("linattn_torch_pin"):
            rows = self.keys_at(i, lambda r: r.suite == "linattn")
            if rows:
                sha = self.find_commit(i, (BENCH,), lambda f: f.bench.get("linattn_torch_pin"))
                self._baseline(i, rows, sha, "PyTorch pin of the linear-attention job moved: the FLA baseline "
                                             "(Triton kernels) runs on a new stack.")
        e0, e1 = dict(b0.get("autotune_env", ())), dict(b1.get("autotune_env", ()))
        if e0.get("HELION_AUTOTUNE_BUDGET_SECONDS") != e1.get("HELION_AUTOTUNE_BUDGET_SECONDS"):
            self._autotune(i)
        if b0.get("tritonbench_passes") != b1.get("tritonbench_passes"):
            self._harness_subset(i, (BENCH,), lambda f: f.bench.get("tritonbench_passes"),
                                 "the benchmark workflow now runs TritonBench once per kernel instead of twice; "
                                 "the speedup of some kernels moved with the harness, the kernels did not change.")
        if fp.tb_pin and fn.tb_pin and fp.tb_pin != fn.tb_pin and rng.random() < 0.45 and self.tb_events < 1:
            rows = self.keys_at(i, lambda r: r.suite == "tritonbench" and r.kernel.split("-")[0] in NORM_KERNELS)
            rows = self.free(rows, i)
            if rows:
                sha = self.find_commit(i, (TB_PIN,), lambda f: f.tb_pin)
                f = 1 + _sgn(rng) * rng.uniform(0.08, 0.18)
                mods = {k: {"triton": f * rng.uniform(0.98, 1.02)} for k in rows}
                self.tb_events += 1
                self.plan.add(Event(self.eid("baseline"), "dashboard", "method_change", "baseline", i, None,
                                    mods=mods, change=sha, honest="new",
                                    note="TritonBench pin moved: the Triton comparison implementations (Liger) "
                                         "changed, so only triton_speedup moved; Helion and the baseline did not."))
        for c in self.window(i):
            if re.search(r"compile[ _-]?time", c.subject, re.I) and any(f in ("benchmarks/run.py", BENCH) for f in c.files) \
                    and not re.search(r"tpu|pallas", c.subject, re.I) \
                    and b0.get("compile_time") and b1.get("compile_time") and c.sha not in self.used_commits:
                rows = self.free(self.keys_at(i, lambda r: r.suite == "tritonbench" and r.compile_time), i, pad=1)
                f = rng.choice([rng.uniform(0.55, 0.75), rng.uniform(1.3, 1.6)])
                mods = {k: {"compile": f * rng.uniform(0.95, 1.05)} for k in rows}
                if mods:
                    self.used_commits.add(c.sha)
                    self.plan.add(Event(self.eid("timer"), "dashboard", "method_change", "timer", i, None, mods=mods,
                                        change=c.sha, honest="new",
                                        note="a benchmark commit changed how compile time is measured: "
                                             "compile_time moved on every kernel, speedups and latency did not."))
                break

    def _hardware(self, i, end, rows, kind, sha, note, subset=1.0, source="dashboard", eager=True):
        rng = self.rng
        same_night = {k for e in self.plan.events if e.source == source and abs(e.start - i) <= 2
                      for k in (e.series or e.mods)}
        rows = [k for k in rows if k not in self.noise_keys and k not in same_night]
        if subset < 1.0:
            rows = [k for k in rows if rng.random() < subset] or rows[:1]
        if not rows:
            return None
        a, m = _sgn(rng) * rng.uniform(0.05, 0.15), rng.uniform(-0.06, 0.08)
        e = _sgn(rng) * rng.uniform(0.04, 0.1) if eager else 0.0
        mods = {}
        for k in rows:
            jitter = rng.uniform(0.6, 1.3)
            d = {"hw": (a * jitter, m * rng.uniform(0.5, 1.5), e * rng.uniform(0.5, 1.5))}
            if kind == "driver/toolchain" and rng.random() < 0.4:
                d["helion"] = rng.uniform(0.9, 1.1)
            if source == "pretuned":
                d = {"hw": d["hw"]}
            mods[k] = d
        ev = Event(self.eid(kind.split("/")[0]), source, "hardware", kind, i, end, mods=mods, change=sha,
                   honest="old", note=note)
        if sha:
            self.used_commits.add(sha)
        return self.plan.add(ev)

    def _baseline(self, i, rows, sha, note):
        rng = self.rng
        rows = self.free(rows, i, pad=2)
        mods = {}
        for k in rows:
            if rng.random() < 0.45:
                f = 1 + _sgn(rng) * rng.uniform(0.07, 0.2)
                d = {"base": f}
                if rng.random() < 0.3:
                    d["tc"] = rng.uniform(0.9, 1.1)
                mods[k] = d
        if not mods:
            return
        if sha:
            self.used_commits.add(sha)
        self.plan.add(Event(self.eid("baseline"), "dashboard", "method_change", "baseline", i, None, mods=mods,
                            change=sha, honest="new", note=note))

    def _autotune(self, i):
        rng = self.rng
        rows = self.free(self.keys_at(i, lambda r: r.suite == "tritonbench"), i, pad=2)
        from .model import params
        long = [k for k in rows if params(self.seed, *k).ct > 90]
        mods = {k: {"helion": rng.uniform(1.08, 1.22), "compile": rng.uniform(0.5, 0.75)} for k in long}
        sha = self.find_commit(i, (BENCH,), lambda f: dict(f.bench.get("autotune_env", ())).get(
            "HELION_AUTOTUNE_BUDGET_SECONDS"))
        if mods and sha:
            self.used_commits.add(sha)
            self.plan.add(Event(self.eid("autotune"), "dashboard", "method_change", "autotune", i, None, mods=mods,
                                change=sha, honest="old",
                                note="the nightly now caps the autotune budget per shape: kernels whose search "
                                     "ran long get a worse config (slower Helion on both timers) and a shorter "
                                     "compile time. The kernel code is unchanged; honest side: the full search."))

    def _harness_subset(self, i, paths, aspect, note, sha=None, frac=0.35):
        rng = self.rng
        rows = self.free(self.keys_at(i, lambda r: r.suite == "tritonbench"), i)
        subject = next((c.subject for c in self.window(i) if c.sha == sha), "") if sha else ""
        named = {k[1] for k in rows if re.search(rf"(?<![\w-]){re.escape(k[1])}(?![\w-])", subject)}
        if named:
            rows = [k for k in rows if k[1] in named]
        else:
            rows = [k for k in rows if rng.random() < frac]
        sha = sha or self.find_commit(i, paths, aspect)
        if not rows or not sha:
            return None
        mods = {}
        comparator = bool(named) and re.search(r"torch\.compile|baseline|triton", subject, re.I)
        for k in rows:
            f = 1 + _sgn(rng) * rng.uniform(0.07, 0.16)
            if comparator:
                mods[k] = {"tc": f} if re.search(r"torch\.compile", subject) else {"base": f}
            else:
                mods[k] = {"helion": f, "lat": 1 / f}  # the speedup timer moved; latency (do_bench) did not
        self.used_commits.add(sha)
        if comparator:
            return self.plan.add(Event(self.eid("baseline"), "dashboard", "method_change", "baseline", i, None,
                                       mods=mods, change=sha, honest="new",
                                       note=f"a benchmark commit changed the comparison implementation of "
                                            f"{', '.join(sorted(named))}: its comparison speedups moved, Helion did not."))
        return self.plan.add(Event(self.eid("harness"), "dashboard", "method_change", "harness", i, None, mods=mods,
                                   change=sha, honest="new" if rng.random() < 0.5 else "old", note=note))

    def _toggle_outages(self):
        F = self.F
        for t in sorted({a.toggle for f in F for a in f.aliases if a.toggle}):
            i = 1
            while i < self.n:
                if F[i - 1].toggles.get(t) and not F[i].toggles.get(t) and any(a.toggle == t for a in F[i].aliases):
                    j = i
                    while j < self.n and not F[j].toggles.get(t):
                        j += 1
                    if j < self.n and j - i <= 10:
                        rows = self.keys_at(i - 1, lambda r, t=t: any(a.toggle == t and a.alias == r.alias and
                                                                      (a.suite == r.suite) for a in F[i - 1].aliases))
                        sha = self.find_commit(i, (".github/",), lambda f, t=t: f.toggles.get(t))
                        if rows:
                            self.plan.add(Event(self.eid("outage"), "dashboard", "hardware", "outage", i, j,
                                                mods={k: {} for k in rows}, missing=True, change=sha, honest="old",
                                                note="a workflow commit switched this job off in the nightly for a few "
                                                     "nights: its rows report nothing until it is switched back on."))
                    i = j
                i += 1

    def _pretuned_natural(self):
        rng, P = self.rng, self.pcat
        for i in range(1, self.n):
            if not P[i] or not P[i - 1]:
                continue
            prev = {(r.platform, r.kernel): r for r in P[i - 1]}
            now = {(r.platform, r.kernel): r for r in P[i]}
            both = sorted(set(prev) & set(now))
            fp, fn = self.F[i - 1].pretuned, self.F[i].pretuned
            pshas = (self.nights[i - 1][2], self.nights[i][2])
            fpp = read_facts(self.blobs, pshas[0]).pretuned
            fnp = read_facts(self.blobs, pshas[1]).pretuned
            for k in both:
                if prev[k].config != now[k].config:
                    fname = f"pretuned_kernels/{k[1]}/_helion_aot_{k[1]}_cuda_{'sm90' if k[0] == 'h100' else 'sm100'}.py"
                    c = next((c for c in self.window(i, True) if fname in c.files), None)
                    if c is None or "pretuned_kernels/_bench.py" in c.files or rng.random() < 0.35 \
                            or self.plan.is_busy("pretuned", k, i, 2):
                        continue
                    up = rng.random() < 0.6
                    f = rng.uniform(0.75, 0.9) if up else rng.uniform(1.08, 1.25)
                    self.plan.add(Event(self.eid("config"), "pretuned", "real", "heuristics/config", i, None,
                                        mods={k: {"helion": f}}, culprit=c.sha,
                                        note=f"the checked-in {k[0]} config of {k[1]} was regenerated in this "
                                             f"commit: Helion itself got {'faster' if up else 'slower'}."))
            base = [k for k in both if prev[k].baselines != now[k].baselines]
            if base:
                sha = self.find_commit(i, ("pretuned_kernels/",), lambda f: tuple(
                    sorted((k, v["baselines"]) for k, v in (f.pretuned or {}).get("kernels", {}).items())), True)
                if sha:
                    self.plan.add(Event(self.eid("baseline"), "pretuned", "method_change", "baseline", i, None,
                                        catalog=True, series=base, change=sha, honest="new",
                                        note="the set of reference baselines of these pretuned kernels changed; the "
                                             "headline geomean is against the fastest baseline, so it moved while "
                                             "Helion's kernel did not."))
            cg = [k for k in both if prev[k].cudagraph != now[k].cudagraph]
            if cg:
                sha = self.find_commit(i, ("pretuned_kernels/",), lambda f: tuple(
                    sorted((k, v["cudagraph"]) for k, v in (f.pretuned or {}).get("kernels", {}).items())), True)
                if sha:
                    self.plan.add(Event(self.eid("cudagraph"), "pretuned", "method_change", "cudagraph", i, None,
                                        catalog=True, series=cg, change=sha,
                                        honest="new" if now[cg[0]].cudagraph else "old",
                                        note="use_cudagraph() flipped for this pretuned kernel: a different timer."))
            tm = [k for k in both if prev[k].timer != now[k].timer]
            if tm:
                commits = [c for c in self.window(i, True) if "pretuned_kernels/_bench.py" in c.files]
                c = next((c for c in commits if re.search(r"L2|cache|timing|timer|warmup|cudagraph", c.subject, re.I)),
                         None)
                if c:
                    rows = [k for k in tm if now[k].cudagraph and not self.plan.is_busy("pretuned", k, i, 2)]
                    self.plan.add(Event(self.eid("timer"), "pretuned", "method_change", "timer", i, None,
                                        mods={k: {"l2": rng.uniform(0.25, 0.5)} for k in rows}, change=c.sha,
                                        honest="new", note="the pretuned CUDA-graph timer now clears L2 before each "
                                                           "replay: cold-cache numbers, baselines slow down more "
                                                           "than Helion on small shapes. Honest side: the new timer."))
            if fpp and fnp and fpp.get("torch_pin") and fnp.get("torch_pin") and fpp["torch_pin"] != fnp["torch_pin"]:
                rows = [k for k in both if "torch" in now[k].baselines and rng.random() < 0.5
                        and not self.plan.is_busy("pretuned", k, i, 2)]
                sha = next((c.sha for c in self.window(i, True) if PRE_BENCH in c.files), None)
                if rows and sha:
                    self.plan.add(Event(self.eid("baseline"), "pretuned", "method_change", "baseline", i, None,
                                        mods={k: {"base": {"torch": rng.uniform(0.8, 0.9),
                                                           "torch_compile": rng.uniform(0.8, 0.95)}} for k in rows},
                                        change=sha, honest="new",
                                        note="the pretuned workflow's PyTorch pin moved: the torch and torch.compile "
                                             "baselines got faster; Helion did not change."))
            if fpp and fnp:
                for alias in sorted(set(fpp["runners"]) & set(fnp["runners"])):
                    r0, r1 = fpp["runners"][alias], fnp["runners"][alias]
                    if r0 != r1:
                        rows = [k for k in both if k[0] == alias]
                        sha = next((c.sha for c in self.window(i, True) if PRE_DISPATCH in c.files), None)
                        kind = "runner" if r0[0] != r1[0] else "driver/toolchain"
                        self._hardware(i, None, rows, kind, sha, f"pretuned {alias} runner/image changed "
                                                                 f"({r0} -> {r1}).", source="pretuned")

    # -------------------------------------------------------------- planted on real commits
    def candidate_commits(self, i_lo: int, i_hi: int):
        """(night, commit) pairs for nights in [i_lo, i_hi): commits of each night's window."""
        out = []
        for i in range(max(i_lo, 1), i_hi):
            for c in self.window(i):
                out.append((i, c))
        return out

    def plant_real(self, count: int):
        rng = self.rng
        last = self.n - 3
        cands = [(i, c) for i, c in self.candidate_commits(1, last)
                 if c.sha not in self.used_commits and any(f.startswith("helion/") for f in c.files)
                 and slice_of(c.subject, c.files) and not re.search(NOT_PERF, c.subject, re.I)]
        rng.shuffle(cands)
        cands.sort(key=lambda ic: 0 if re.search(PERF, ic[1].subject, re.I) else 1)
        placed = 0
        by_slice: dict = {}
        for i, c in cands:
            if placed >= count:
                break
            sl = slice_of(c.subject, c.files)
            if by_slice.get(sl, 0) >= max(2, count // 3):
                continue
            ev = self._real_on(i, c, sl)
            if ev:
                placed += 1
                by_slice[sl] = by_slice.get(sl, 0) + 1
        return placed

    def _real_on(self, i, c, sl):
        rng = self.rng
        now = [r for r in self.cat[i] if r.suite in ("tritonbench", "tpu", "tpu_bridge", "linattn")]
        plats = sorted({r.platform for r in now})
        if sl == "cute":
            targets = [p for p in plats if p.endswith("_cute")]
        elif sl == "tpu":
            targets = [p for p in plats if p == "tpu"]
        elif sl == "rocm":
            targets = [p for p in plats if p.startswith("mi")]
        elif sl == "autotuner":
            targets = [p for p in plats if p in GPU_PLATS]
        else:
            fs = " ".join(c.files).lower() + c.subject.lower()
            nv = [p for p in plats if p in ("h100", "b200")]
            if "sm90" in fs or "hopper" in fs:
                nv = [p for p in nv if p == "h100"] or nv
            elif "sm100" in fs or "blackwell" in fs:
                nv = [p for p in nv if p == "b200"] or nv
            targets = nv
        if not targets:
            return None
        if sl in ("autotuner",):
            targets = rng.sample(targets, min(len(targets), rng.randint(1, 3)))
        elif sl == "triton":
            targets = rng.sample(targets, min(len(targets), rng.randint(1, 2)))
        touched = {re.sub(r"\.py$", "", f.split("/")[-1]) for f in c.files if f.startswith("examples/")}
        keys = []
        for p in targets:
            ks = [(r.platform, r.kernel) for r in now if r.platform == p and r.suite != "linattn"]
            ks = [k for k in ks if self.present(k, i - 2, min(i + 6, self.n))]
            ks = self.free(ks, i)
            if not ks:
                continue
            hit = [k for k in ks if k[1].split("-")[0] in touched or k[1] in touched]
            want = 1 if sl in ("triton", "rocm") else rng.randint(1, 3)
            pick = hit[:want] if hit else rng.sample(ks, min(want, len(ks)))
            keys.extend(pick)
        if not keys:
            return None
        kind = "heuristics/config" if sl == "autotuner" or re.search(r"heuristic|config|autotun", " ".join(c.files)
                                                                     + " " + c.subject, re.I) else "code"
        regress = rng.random() < 0.6
        mods = {}
        for k in keys:
            f = rng.uniform(1.1, 1.4) if regress else rng.uniform(0.72, 0.9)
            mods[k] = {"helion": f}
            if rng.random() < 0.25:
                mods[k] = {"helion": f ** 0.5, "helion_small": (f - 1) * 0.8}
        self.used_commits.add(c.sha)
        short = c.subject if len(c.subject) < 90 else c.subject[:87] + "..."
        return self.plan.add(Event(
            self.eid("real"), "dashboard", "real", kind, i, None, mods=mods, culprit=c.sha,
            note=f"Helion itself got {'slower' if regress else 'faster'} after \"{short}\" "
                 f"({sl} slice): only helion_speedup and latency move, triton/torch.compile stay flat, and the "
                 f"step persists."))

    def plant_pretuned_real(self, count):
        rng = self.rng
        nights = [i for i in range(2, self.n - 3) if self.pcat[i] and self.pcat[i - 1]]
        if not nights:
            return 0
        cands = []
        for i in nights:
            for c in self.window(i, True):
                sl = slice_of(c.subject, c.files)
                if c.sha not in self.used_commits and sl in ("cute", "triton", "autotuner") \
                        and any(f.startswith("helion/") for f in c.files) and not re.search(NOT_PERF, c.subject, re.I):
                    cands.append((i, c, sl))
        rng.shuffle(cands)
        cands.sort(key=lambda x: 0 if re.search(PERF, x[1].subject, re.I) else 1)
        placed = 0
        for i, c, sl in cands:
            if placed >= count:
                break
            rows = [(r.platform, r.kernel) for r in self.pcat[i]]
            if sl == "cute":
                rows = [k for k in rows if "cute" in k[1]]
            rows = self.free(rows, i, "pretuned")
            rows = [k for k in rows if all(k in {(r.platform, r.kernel) for r in self.pcat[j]}
                                           for j in range(i - 1, min(i + 4, self.n)) if self.pcat[j])]
            if not rows:
                continue
            keys = rng.sample(rows, min(len(rows), rng.randint(1, 2)))
            regress = rng.random() < 0.6
            mods = {k: {"helion": rng.uniform(1.1, 1.35) if regress else rng.uniform(0.75, 0.9)} for k in keys}
            self.used_commits.add(c.sha)
            self.plan.add(Event(self.eid("real"), "pretuned", "real", "code", i, None, mods=mods, culprit=c.sha,
                                note=f"a Helion compiler change ({sl} slice) made these pretuned kernels "
                                     f"{'slower' if regress else 'faster'} with the same checked-in config."))
            placed += 1
        return placed

    def plant_method(self, count):
        rng = self.rng
        placed = 0
        cands = [(i, c) for i, c in self.candidate_commits(2, self.n - 3)
                 if c.sha not in self.used_commits
                 and any(f in ("benchmarks/run.py", BENCH) for f in c.files)
                 and not any(f.startswith(("helion/", "examples/")) for f in c.files)
                 and not re.search(r"tpu|pallas|linear-attention|linattn", c.subject, re.I)]
        rng.shuffle(cands)
        cands = [ic for ic in cands if not re.search(r"device name|get_device_name|external|list-|pyrefly|lint|log|"
                                                     r"print|type|add .*benchmark|add .* to (nightly|benchmark)",
                                                     ic[1].subject, re.I)]
        key = lambda ic: 0 if re.search(r"pars|harness|timing|\brep|warm|subprocess|timeout|tritonbench|measure|"
                                         r"cudagraph|benchmark ci|fix .*bench", ic[1].subject, re.I) else 1
        cands.sort(key=key)
        for i, c in cands:
            if placed >= count:
                break
            has_lat = any(r.latency for r in self.cat[i]) and any(r.latency for r in self.cat[i - 1])
            if placed % 2 == 1 and has_lat:
                rows = self.free(self.keys_at(i, lambda r: r.latency and r.suite == "tritonbench"), i)
                plat = rng.choice(sorted({k[0] for k in rows})) if rows else None
                rows = [k for k in rows if k[0] == plat]
                if not rows:
                    continue
                f = rng.choice([rng.uniform(1.12, 1.3), rng.uniform(0.75, 0.88)])
                mods = {k: {"lat": f * rng.uniform(0.97, 1.03)} for k in rows}
                self.used_commits.add(c.sha)
                self.plan.add(Event(self.eid("timer"), "dashboard", "method_change", "timer", i, None, mods=mods,
                                    change=c.sha, honest="new",
                                    note="a benchmark-harness commit changed the latency measurement: latency moved "
                                         "on every kernel of the platform, the speedups (the other timer) did not."))
            else:
                ev = self._harness_subset(i, None, None, "a change to the benchmark harness moved the measured "
                                                         "speedup of some kernels; the kernels are unchanged and "
                                                         "the latency timer disagrees with the speedup.", sha=c.sha,
                                          frac=0.25)
                if ev is None:
                    continue
            placed += 1
        return placed

    def _episode(self, length_lo, length_hi, plat_pred, source="dashboard"):
        rng = self.rng
        for _ in range(40):
            i = rng.randint(2, max(2, self.n - 4))
            L = rng.randint(length_lo, length_hi)
            end = i + L if i + L < self.n else None
            cat = self.cat if source == "dashboard" else self.pcat
            if not cat[i] or not cat[i - 1]:
                continue
            plats = sorted({r.platform for r in cat[i] if plat_pred(r.platform)})
            if not plats:
                continue
            p = rng.choice(plats)
            rows = [(r.platform, r.kernel) for r in cat[i] if r.platform == p]
            if source == "dashboard":
                rows = [k for k in rows if self.present(k, i - 1, min(i + 2, self.n))]
            free = self.free(rows, i, source, pad=2)
            if len(free) < max(2, len(rows) * 0.7):
                continue
            span_end = min(end if end is not None else self.n, self.n)
            rs = set(rows)
            if any(e.catalog and e.source == source and i - 1 <= e.start <= span_end + 1 and rs & set(e.series)
                   for e in self.plan.events):
                continue
            if any(e.missing and e.source == source and any(k[0] == p for k in e.mods) and
                   abs(e.start - i) < 6 for e in self.plan.events):
                continue
            return i, end, p, free
        return None

    def plant_hardware(self, want_total):
        rng = self.rng
        have = sum(1 for e in self.plan.events if e.cause == "hardware" and e.source == "dashboard")
        plans = ["thermal", "outage", "runner", "outage", "thermal", "driver/toolchain", "thermal", "runner"]
        k = 0
        while (have < want_total or k < 3) and k < len(plans) * 2:
            kind = plans[k % len(plans)]
            k += 1
            if kind == "thermal":
                got = self._episode(2, 6, lambda p: p in GPU_PLATS or p.endswith("_cute"))
                if not got:
                    continue
                i, end, p, rows = got
                a = rng.uniform(0.15, 0.3)
                e = _sgn(rng) * rng.uniform(0.05, 0.12)
                mods = {r: {"hw": (a * rng.uniform(0.8, 1.2), rng.uniform(0.0, 0.04), e * rng.uniform(0.6, 1.4))}
                        for r in rows}
                self.plan.add(Event(self.eid("thermal"), "dashboard", "hardware", "thermal", i, end, mods=mods,
                                    honest="old", note=f"{p} ran hot/throttled: compute-bound work slowed on every "
                                                       f"kernel of that platform (baselines too, latency up), no commit "
                                                       f"or runner change; it {'recovered' if end else 'persists'}."))
                self._mirror_pretuned(i, end, p, "thermal", a)
            elif kind == "outage":
                got = self._episode(1, 3, lambda p: True)
                if not got:
                    continue
                i, end, p, rows = got
                if end is None:
                    continue
                allrows = [(r.platform, r.kernel) for r in self.cat[i] if r.platform == p]
                self.plan.add(Event(self.eid("outage"), "dashboard", "hardware", "outage", i, end,
                                    mods={r: {} for r in allrows}, missing=True, honest="old",
                                    note=f"{p} runners were unavailable: no results from that platform for "
                                         f"{end - i} night(s), then it reported again."))
            elif kind == "runner":
                got = self._episode(4, 12, lambda p: p in GPU_PLATS)
                if not got:
                    continue
                i, end, p, rows = got
                ev = self._hardware(i, end, rows, "runner", None,
                                    f"a different {p} machine picked up the nightly (same runner label, no commit): "
                                    f"most kernels and the baselines moved the same night"
                                    f"{', and moved back when the usual host returned' if end else ''}.")
                if ev:
                    self._mirror_pretuned(i, end, p, "runner", None)
            else:
                got = self._episode(200, 200, lambda p: p in GPU_PLATS)
                if not got:
                    continue
                i, end, p, rows = got
                self._hardware(i, None, rows, "driver/toolchain", None,
                               f"the {p} host's driver was updated outside the repository: a platform-wide move "
                               f"on every timer, other platforms flat, no commit in the window.", subset=0.85)
            have = sum(1 for e in self.plan.events if e.cause == "hardware" and e.source == "dashboard")

    def _mirror_pretuned(self, i, end, p, kind, a):
        rng = self.rng
        if not (self.pcat[i] and self.pcat[i - 1]):
            return
        rows = [(r.platform, r.kernel) for r in self.pcat[i] if r.platform == p]
        rows = self.free(rows, i, "pretuned", pad=2)
        if not rows:
            return
        if kind == "thermal":
            mods = {r: {"hw": (a * rng.uniform(0.8, 1.2), rng.uniform(0.0, 0.04), rng.uniform(-0.1, 0.1))} for r in rows}
        else:
            s = _sgn(rng)
            mods = {r: {"hw": (s * rng.uniform(0.05, 0.15), rng.uniform(-0.06, 0.08), _sgn(rng) * rng.uniform(0.04, 0.12))}
                    for r in rows}
        self.plan.add(Event(self.eid(kind), "pretuned", "hardware", kind, i, end, mods=mods, honest="old",
                            note=f"the same {p} hardware episode seen by the pretuned suite two hours later."))

    def plant_noise(self, n_outlier, n_scatter):
        rng = self.rng
        made = 0
        tries = 0
        while made < n_outlier and tries < 200:
            tries += 1
            i = rng.randint(2, max(2, self.n - 3))
            rows = [k for k in self.keys_at(i) if self.present(k, i - 2, min(i + 3, self.n))]
            rows = self.free(rows, i, pad=4)
            if not rows:
                continue
            k = rng.choice(rows)
            L = rng.choice([1, 1, 2])
            f = rng.uniform(1.22, 1.4)
            comp = rng.choice(["helion", "helion", "base"])
            d = {comp: f if comp == "helion" else 1 / f}
            if comp == "helion":
                d["lat"] = rng.choice([1.0, 1 / f])
            self.plan.add(Event(self.eid("blip"), "dashboard", "noise", "outlier", i, i + L, mods={k: d},
                                note=f"one series jumped for {L} night(s) and came straight back: no step, "
                                     f"nothing else moved."))
            self.noise_keys.add(k)
            made += 1
        made = tries = 0
        while made < n_scatter and tries < 200:
            tries += 1
            i = rng.randint(2, max(2, self.n - 20))
            rows = [k for k in self.keys_at(i) if self.present(k, i - 2, self.n)]
            rows = [k for k in rows if not any(k in e.mods or k in e.series for e in self.plan.events)]
            if not rows:
                continue
            from .model import params
            if made % 3 == 2:
                rows = [k for k in rows if params(self.seed, *k).sigma >= 0.02]
                if not rows:
                    continue
                k = rng.choice(rows)
                sig = params(self.seed, *k).sigma
                d = {"helion": rng.choice([1.02, 0.98]), "sigma": 0.04 / sig}
                note = "a move of about 2% on a series whose nightly scatter is larger than that: within noise."
            else:
                k = rng.choice(rows)
                d = {"sigma": rng.uniform(0.05, 0.08) / params(self.seed, *k).sigma}
                note = "the series turned noisy (nightly scatter of 5-8%) with no level change."
            self.plan.add(Event(self.eid("scatter"), "dashboard", "noise", "scatter", i, None, mods={k: d}, note=note))
            self.noise_keys.add(k)
            made += 1
