"""The pretuned suite (pretuned_kernels/run.py nightly, 10:00 UTC), once it exists in the window.

What runs is read from the repo at the run's commit: KERNELS, each kernel's baselines (names),
use_cudagraph(), its checked-in AOT configs per compute capability (a regenerated config is a real
change), _bench.py (the timer), the workflow's torch pin and the CuTe setup. Per shape: Helion time
and one time per baseline; the headline is the geomean over shapes of fastest-baseline / Helion."""
from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from tests.blind_worlds.world import Label

from . import repofacts as RF
from . import timeline as T
from .model import hkey, rng, unif

DEVICE = {"h100": ("NVIDIA H100 80GB HBM3", "sm90"), "b200": ("NVIDIA B200", "sm100")}
BASE_MU = {"torch": (0.15, 0.9), "torch_compile": (-0.02, 0.55), "vllm": (-0.25, 0.12), "cutlass": (-0.3, 0.1),
           "float": (0.2, 0.9), "fp4in": (-0.2, 0.2)}


def _coa(r, p_absent, lo, hi, neg=0.5):
    if r.random() < p_absent:
        return r.normal(0, 0.004)
    return (-1 if r.random() < neg else 1) * r.uniform(lo, hi)


@dataclass
class PEffect:
    id: str
    start: int
    end: int | None
    members: dict            # (alias, kernel) -> dict(h=, base={name: factor}, drop=set(), noise=)
    cause: str
    kind: str
    culprit: str | None = None
    change: str | None = None
    honest: str | None = "post"
    note: str = ""

    def active(self, n):
        return self.start <= n and (self.end is None or n < self.end)


class PretunedSim:
    def __init__(self, world, planner):
        self.w = world
        self.seed = world.seed
        self.run_of_night: dict = {}
        self.active = False
        self._facts: dict = {}
        self.runs = []
        self.effects: list[PEffect] = []
        self._series = set()
        self._cache: dict = {}
        commits, times = world.commits, [c.time for c in world.commits]
        git = world.git
        pre_change = [c.idx for c in commits if any(f.startswith(RF.PRE_PREFIXES) for f in c.files)]
        self.nf = []  # per night: facts or None
        for n in world.ninfo:
            t0 = n.time.replace(hour=10, minute=0, second=0)
            u = unif(self.seed, "pdelay", n.i)
            t = t0 + timedelta(seconds=300 + u * 1800 + 9)
            ci = T.head_at(commits, times, t)
            key = max([i for i in pre_change if i <= ci], default=None)
            if key is None:
                self.nf.append(None)
                continue
            if key not in self._facts:
                self._facts[key] = RF.pretuned_facts(git, commits[key].sha)
            f = self._facts[key]
            if f is None or not git.show(commits[ci].sha, RF.WF + "benchmark_pretuned_nightly.yml"):
                self.nf.append(None)
                continue
            self.nf.append(f)
            self.active = True
            self.run_of_night[n.i] = {"time": t.replace(microsecond=0), "cidx": ci, "sha": commits[ci].sha,
                                      "fkey": key}
        if not self.active:
            return
        used = set()
        for n, x in sorted(self.run_of_night.items()):
            rid = T.run_id_at(x["time"], hkey(self.seed, "prid", n) % 40_000)
            while rid in used:
                rid = str(int(rid) + 1)
            used.add(rid)
            x["run_id"] = rid
        self._ref: dict = {}
        for n in sorted(self.run_of_night):
            for s, v in self.series(n).items():
                self._ref.setdefault(s, (n, v))
        self._plant(planner)
        # nights where a pretuned change is read: no random job failure there
        self._protect = set()
        for e in self.effects:
            self._protect |= {e.start - 1, e.start} | ({e.end - 1, e.end} if e.end is not None else set())
        ns = sorted(self.run_of_night)
        for a, b in zip(ns, ns[1:]):
            cur, prev = self.series(b), self.series(a)
            if any(k in prev and {f: v for f, v in cur[k].items() if f != "module"} !=
                   {f: v for f, v in prev[k].items() if f != "module"} for k in cur):
                self._protect |= {a, b}

    # ------------------------------------------------------------------ what runs
    def series(self, n) -> dict:
        f = self.nf[n]
        if f is None:
            return {}
        out = {}
        for k in f["order"]:
            kf = f["kernels"][k]
            for a in ("h100", "b200"):
                if a not in f["aliases"] or a not in kf["hw"]:
                    continue
                out[(a, k)] = {"baselines": tuple(kf["baselines"]), "cg": kf["cudagraph"], "aot": kf["hw"][a][1],
                               "bench": f["bench"], "torch": f["torch"], "runner": f["aliases"][a]["runner"],
                               "image": f["aliases"][a]["image"], "module": kf["module"],
                               "nshapes": 6 + hkey(self.seed, "pns", k) % 10,
                               "error": ("cute" in k and not f["cute_ok"])}
        return out

    def series_count(self) -> int:
        return len(self._series)

    # ------------------------------------------------------------------ model
    def _base(self, s, nshapes):
        key = ("base", s)
        if key not in self._cache:
            a, k = s
            r = rng(self.seed, "pre", a, k)
            mu_h = r.normal(0, 0.25)
            tb = np.exp(r.normal(math.log(0.02), 0.8) + np.linspace(0, r.uniform(1, 4), 24) + r.normal(0, 0.2, 24))
            self._cache[key] = (tb, mu_h)
        tb, mu_h = self._cache[key]
        return tb[:nshapes], mu_h

    def _base_mu(self, s, name, ns):
        key = ("mu", s, name)
        if key not in self._cache:
            r = rng(self.seed, "premu", s, name)
            lo, hi = BASE_MU.get(name, (-0.1, 0.5))
            self._cache[key] = r.uniform(lo, hi) + r.normal(0, 0.08, 24)
        return self._cache[key][:ns]

    def _fact_h(self, s, v, ref):
        """Helion-time multiplier from the facts that differ from the reference."""
        h = 1.0
        bmult = {}
        if v["aot"] != ref["aot"]:
            h *= math.exp(_coa(rng(self.seed, "aot", s, v["aot"]), 0.2, 0.06, 0.2, 0.45))
        if v["bench"] != ref["bench"] and v["cg"]:
            h *= math.exp(_coa(rng(self.seed, "pbench", s, v["bench"]), 0.4, 0.03, 0.12))
        if v["torch"] != ref["torch"]:
            r = rng(self.seed, "ptorch", s, v["torch"])
            bmult["torch"] = math.exp(_coa(r, 0.5, 0.05, 0.14, 0.7))
            bmult["torch_compile"] = math.exp(_coa(r, 0.4, 0.05, 0.18, 0.7))
        if v["runner"] != ref["runner"] or v["image"] != ref["image"]:
            h *= math.exp(_coa(rng(self.seed, "prun", s, v["runner"], v["image"]), 0.6, 0.04, 0.1))
        return h, bmult

    def metrics(self, n, s, v, noise_key=None, exclude=None, override=None):
        """Per-shape times -> the record's aggregate metrics (noise-free when noise_key is None)."""
        v = override or v
        ref = self._ref[s][1]
        ns = v["nshapes"]
        tb, mu_h = self._base(s, 24)
        tb = tb[:ns]
        h, bmult = self._fact_h(s, v, ref)
        drop = set()
        hn = 1.0
        for e in self.effects:
            if e is exclude or not e.active(n) or s not in e.members:
                continue
            m = e.members[s]
            h *= m.get("h", 1.0)
            for b, f in m.get("base", {}).items():
                bmult[b] = bmult.get(b, 1.0) * f
            drop |= m.get("drop", set())
            hn *= m.get("noise", 1.0)
        th = tb * math.exp(-mu_h) * h
        names = [b for b in v["baselines"] if b not in drop] or list(v["baselines"][:1])
        sp = {}
        r = rng(self.seed, "pnoise", noise_key, s) if noise_key is not None else None
        sig = (0.008 if v["cg"] else 0.02) * hn
        if r is not None:
            th = th * np.exp(r.normal(0, sig * 0.7) + r.normal(0, sig, ns))
        times = {}
        for b in names:
            t = tb * np.exp(self._base_mu(s, b, ns)) * bmult.get(b, 1.0)
            if r is not None:
                t = t * np.exp(r.normal(0, sig * 0.7) + r.normal(0, sig, ns))
            times[b] = t
            sp[b] = t / th
        best = np.min(np.stack([times[b] for b in names]), axis=0) / th

        def g(x):
            x = [float(v) for v in x if v > 0]
            return math.exp(sum(map(math.log, x)) / len(x))

        per = {b: {"wins": int((sp[b] > 1).sum()), "total": ns, "geomean": round(g(sp[b]), 4),
                   "best_speedup": round(float(sp[b].max()), 4)} for b in names}
        return {"helion_wins": int((best > 1).sum()), "total": ns, "geomean": round(g(best), 4),
                "best_speedup": round(float(best.max()), 4), "baselines": per}

    # ------------------------------------------------------------------ planted / fact events
    def _plant(self, planner):
        w = self.w
        r = np.random.default_rng(hkey("preplant", self.seed))
        nights = sorted(self.run_of_night)
        self._n = 0

        def nid(kind):
            self._n += 1
            return f"n{self.seed}-p{self._n:02d}-{kind}"

        by_sha = {c.sha[:8]: c for c in w.commits}

        def night_after(prefix):
            c = by_sha.get(prefix)
            if c is None:
                return None
            for n in nights:
                if self.run_of_night[n]["cidx"] >= c.idx:
                    return n
            return None

        # debug barrier (helion codegen) slows the kernels whose pretuned modules it rewrote
        n = night_after("3f0134cc")
        if n is not None and n - nights[0] > 3:
            mem = {}
            for s, v in self.series(n).items():
                pv = self.series(n - 1).get(s) if (n - 1) in self.run_of_night else None
                if pv and pv["module"] != v["module"] and r.random() < 0.75:
                    mem[s] = {"h": math.exp(r.uniform(0.06, 0.16))}
            if mem:
                self.effects.append(PEffect(nid("barrier"), n, None, mem, "real", "code", culprit=by_sha["3f0134cc"].sha,
                                            note="tl.debug_barrier() inserted for intra-loop store->load hazards"))
        # the vLLM baseline of fused_qk_norm_rope redefined as vLLM's fused op (much faster)
        n = night_after("22a8377e")
        if n is not None and n - nights[0] > 3:
            mem = {s: {"base": {"vllm": math.exp(-r.uniform(0.25, 0.5))}} for s in self.series(n)
                   if s[1] == "fused_qk_norm_rope"}
            if mem:
                self.effects.append(PEffect(nid("vllmfused"), n, None, mem, "method_change", "baseline",
                                            change=by_sha["22a8377e"].sha, note="vLLM baseline is now the fused op"))
        # vLLM install failing for a few nights: the vLLM baseline drops out (torch-native fallback)
        cand = [n for n in nights[6:-6]]
        if cand:
            n = cand[int(r.integers(len(cand)))]
            dur = int(r.integers(2, 5))
            mem = {s: {"drop": {"vllm", "cutlass"}} for s, v in self.series(n).items()
                   if set(v["baselines"]) & {"vllm", "cutlass"}}
            if mem and n + dur < nights[-1]:
                self.effects.append(PEffect(nid("novllm"), n, n + dur, mem, "method_change", "baseline",
                                            honest="pre",
                                            note="vLLM wheel failed to install; its baselines fell back to torch-native"))
        # noise: one outlier night on one kernel
        if len(nights) > 10:
            n = nights[int(r.integers(5, len(nights) - 2))]
            ss = sorted(self.series(n))
            if ss:
                s = ss[int(r.integers(len(ss)))]
                self.effects.append(PEffect(nid("outlier"), n, n + 1, {s: {"h": math.exp(r.uniform(0.2, 0.3))}},
                                            "noise", "outlier", honest=None, note="one stray pretuned measurement"))

    # ------------------------------------------------------------------ publish
    def publish(self, n, mod, tmp, meta, existing, freeze):
        x = self.run_of_night.get(n)
        if x is None:
            return None
        f = self.nf[n]
        sers = self.series(n)
        cache = tmp / "pcache"
        for a in ("h100", "b200"):
            if a not in f["aliases"]:
                continue
            if unif(self.seed, "pfail", a, n) < 0.012 and n not in self._protect:
                continue
            recs = []
            for k in f["order"]:
                kf = f["kernels"][k]
                hw = sorted(kf["hw"])
                rec = {"kernel": k, "pretuned_hardware": hw}
                s = (a, k)
                if s not in sers:
                    rec["skipped"] = f"pretuned for {hw}; current hardware is {a}"
                elif sers[s]["error"]:
                    rec["error"] = "RuntimeError: CuTe DSL API mismatch: nvidia-cutlass-dsl upgraded by vLLM"
                else:
                    m = self.metrics(n, s, sers[s], noise_key=x["run_id"])
                    rec.update(helion_wins=m["helion_wins"], total=m["total"], geomean=m["geomean"],
                               best_speedup=m["best_speedup"], cudagraph=bool(sers[s]["cg"]), baselines=m["baselines"])
                    self._series.add(s)
                rec["device"], rec["compute_capability"] = DEVICE[a]
                recs.append(rec)
            d = cache / x["run_id"] / f"pretuned-results-{a}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))
        meta.append({"run_id": x["run_id"], "sha": x["sha"][:8], "full_sha": x["sha"],
                     "date": x["time"].strftime("%Y-%m-%dT%H:%M:%SZ"), "branch": "main", "is_nightly": True})
        disp = tmp / "pdisp.yml"
        disp.write_text(self.w.git.show(x["sha"], RF.WF + "benchmark_pretuned_dispatch.yml") or "")
        freeze(mod, x["time"] + timedelta(hours=1))
        doc = mod.build_dashboard_data(str(cache), list(meta), existing, mod.get_active_platforms(str(disp)))
        shutil.rmtree(cache, ignore_errors=True)
        return doc

    # ------------------------------------------------------------------ labels
    def labels(self, w) -> list:
        if not self.active:
            return []
        out = []
        nights = sorted(self.run_of_night)
        rid = lambda n: self.run_of_night[n]["run_id"]
        for e in self.effects:
            mem, honest = [], {}
            d = None
            for s in sorted(e.members):
                v = self.series(e.start).get(s)
                pv = self.series(e.start - 1).get(s) if e.start - 1 in self.run_of_night else None
                if v is None or pv is None or v.get("error") or pv.get("error"):
                    continue
                a = self.metrics(e.start, s, v)["geomean"]
                b = self.metrics(e.start, s, v, exclude=e)["geomean"]
                if e.cause != "noise" and abs(a / b - 1) < 0.025:
                    continue
                mem.append(s)
                d = "regression" if a < b else "improvement"
                if e.honest == "post":
                    honest[f"{s[0]}/{s[1]}"] = round(a, 4)
                elif e.honest == "pre":
                    honest[f"{s[0]}/{s[1]}"] = round(b, 4)
            if not mem:
                continue
            out.append(Label(e.id, "pretuned", e.cause, e.kind, d or "regression", tuple(mem), ("geomean",),
                             rid(e.start), rid(e.start - 1),
                             rid(e.end) if e.end is not None and e.end in self.run_of_night else None,
                             e.culprit if e.cause == "real" else None,
                             e.change if e.cause in ("method_change", "hardware") else None, honest, e.note))
        # fact changes between consecutive pretuned nights: per series, the change that moved it most
        groups = {}
        for n in nights[1:]:
            if n - 1 not in self.run_of_night:
                continue
            cur, prev = self.series(n), self.series(n - 1)
            for s, v in cur.items():
                pv = prev.get(s)
                if pv is None or v["error"] or pv["error"]:
                    continue
                opts = []
                for field, cause, kind, side in (("aot", "real", "heuristics/config", "post"),
                                                 ("bench", "method_change", "timer", "post"),
                                                 ("torch", "method_change", "baseline", "post"),
                                                 ("baselines", "method_change", "baseline", "post"),
                                                 ("cg", "method_change", "cudagraph", "post"),
                                                 ("runner", "hardware", "runner", "post"),
                                                 ("image", "hardware", "driver/toolchain", "post")):
                    if v[field] == pv[field]:
                        continue
                    alt = dict(v)
                    alt[field] = pv[field]
                    a = self.metrics(n, s, v)["geomean"]
                    b = self.metrics(n, s, v, override=alt)["geomean"]
                    if abs(a / b - 1) < 0.025:
                        continue
                    opts.append((abs(math.log(a / b)), field, cause, kind, side, a, b))
                if not opts:
                    continue
                _, field, cause, kind, side, a, b = max(opts)
                sha = self._change_sha(n, s, field, pv[field])
                key = (cause, kind, sha, n)
                g = groups.setdefault(key, {"mem": [], "honest": {}, "dir": [], "field": field})
                g["mem"].append(s)
                g["dir"].append(a < b)
                g["honest"][f"{s[0]}/{s[1]}"] = round(a if side == "post" else b, 4)
        for i, ((cause, kind, sha, n), g) in enumerate(sorted(groups.items(), key=lambda kv: (kv[0][3], kv[0][1]))):
            out.append(Label(f"n{self.seed}-pf{i:02d}-{g['field']}", "pretuned", cause, kind,
                             "regression" if sum(g["dir"]) * 2 >= len(g["dir"]) else "improvement",
                             tuple(sorted(g["mem"])), ("geomean",), rid(n), rid(n - 1), None,
                             sha if cause == "real" else None, sha if cause != "real" else None, g["honest"],
                             f"pretuned {g['field']} changed in the repo"))
        return out

    def _change_sha(self, n, s, field, old):
        w = self.w
        a, b = self.run_of_night[n - 1]["cidx"], self.run_of_night[n]["cidx"]
        found = None
        prev = old
        for c in w.commits[a + 1:b + 1]:
            if not any(f.startswith(RF.PRE_PREFIXES) for f in c.files):
                continue
            if c.idx not in self._facts:
                self._facts[c.idx] = RF.pretuned_facts(w.git, c.sha)
            f = self._facts[c.idx]
            if f is None or s[1] not in f["kernels"]:
                continue
            kf = f["kernels"][s[1]]
            val = {"aot": kf["hw"].get(s[0], (None, None))[1], "bench": f["bench"], "torch": f["torch"],
                   "baselines": tuple(kf["baselines"]), "cg": kf["cudagraph"],
                   "runner": f["aliases"].get(s[0], {}).get("runner"), "image": f["aliases"].get(s[0], {}).get("image"),
                   }.get(field)
            if val != prev:
                found = c.sha
                prev = val
        return found or w.commits[b].sha
