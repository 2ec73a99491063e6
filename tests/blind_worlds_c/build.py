"""build_world: nights on the real Helion main, events read from / planted on real commits, documents
made by Helion's own dashboard builders."""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import math
import random
import re
import shutil
import subprocess
import tempfile
import types
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.blind_worlds.world import Label, Night

from . import repo as R
from . import sim as S

DASH_METRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
                "compile_time_geomean_s", "helion_latency_avg_ms")
MOVE = 0.045  # a metric "moved" when its noise-free value changes by this much


@dataclass
class Eff:
    start: int
    end: int | None
    f: dict


@dataclass
class Event:
    source: str
    cause: str
    kind: str
    first: int
    members: dict                  # (plat, kernel) -> factor dict (may be empty for fact-driven changes)
    end: int | None = None
    culprit_sha: str | None = None
    change_sha: str | None = None
    note: str = ""
    planted: bool = True
    outage_plat: str | None = None
    honest_after: bool = False


def _rid(d: datetime, salt: int = 0) -> str:
    return str(20_000_000_000 + int(d.timestamp()) // 7 * 3 + salt)


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


class World:
    def __init__(self, seed, workdir, nights=None, documents=True, skip=0):
        self.skip = skip
        t0 = _dt.datetime.now()
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = R.clone(self.workdir / "helion")
        self.rng = random.Random(seed * 7919 + 13)
        self.commits = R.first_parent(self.repo)
        self.cidx = {c.sha: i for i, c in enumerate(self.commits)}
        self.reader = R.Reader(self.repo)
        self._pick_nights(nights)
        self._read_facts()
        self.events: list[Event] = []
        self._fact_events()
        self._merge()
        self._planted_events()
        self._resolve()
        self._series_params()
        self._labels()
        self._docs_dir = self.workdir / f"docs_seed{seed}"
        self._n_docs = 0
        if documents:
            self._build_documents()
        self.build_seconds = (_dt.datetime.now() - t0).total_seconds()

    # ------------------------------------------------------------------ nights
    def _sha_at(self, when: datetime) -> int:
        lo = None
        for i, c in enumerate(self.commits):
            if c.date <= when:
                lo = i
            else:
                break
        return lo

    def _pick_nights(self, nights):
        rng = self.rng
        last = datetime(2026, 8, 22, tzinfo=timezone.utc)
        end = last - timedelta(days=(0, rng.randint(8, 20), rng.randint(20, 35))[self.seed % 3])
        n = rng.randint(120, 160)
        start = end - timedelta(days=n - 1)
        self.nights = []
        self.night_cidx = []
        self.p_cidx = []
        self.p_dates = []
        dates = [start + timedelta(days=i) for i in range(n)]
        times = [(d.replace(hour=8, minute=rng.randint(2, 30), second=rng.randint(0, 59)),
                  d.replace(hour=10, minute=rng.randint(2, 30), second=rng.randint(0, 59))) for d in dates]
        times = times[self.skip:]
        if nights:
            times = times[:nights]
        commit_dates = [c.date for c in self.commits]
        import bisect
        for t, tp in times:
            i = bisect.bisect_right(commit_dates, t) - 1
            j = bisect.bisect_right(commit_dates, tp) - 1
            c, cp = self.commits[i], self.commits[j]
            has_p = self.reader.text(cp.sha, ".github/workflows/benchmark_pretuned_nightly.yml") is not None
            self.nights.append(Night(run_id=_rid(t), full_sha=c.sha, sha=c.sha[:8], date=t,
                                     p_run_id=_rid(tp, 1) if has_p else None, p_full_sha=cp.sha if has_p else None))
            self.night_cidx.append(i)
            self.p_cidx.append(j)
            self.p_dates.append(tp)
        self._night_by_run = {}
        for k, nt in enumerate(self.nights):
            self._night_by_run[nt.run_id] = k
            if nt.p_run_id:
                self._night_by_run[nt.p_run_id] = k

    def night_of(self, run_id):
        return self._night_by_run.get(run_id)

    def _read_facts(self):
        self.F = [R.facts_at(self.reader, nt.full_sha) for nt in self.nights]
        self.PF = [R.facts_at(self.reader, nt.p_full_sha)["pretuned"] if nt.p_full_sha else None
                   for nt in self.nights]

    # ------------------------------------------------------------------ facts -> events
    def _find_change(self, lo: int, hi: int, fn):
        """The commit in (lo, hi] (first-parent indices) after which fn(facts) took its final value."""
        vals = [fn(R.facts_at(self.reader, self.commits[j].sha)) for j in range(lo, hi + 1)]
        found = None
        for j in range(1, len(vals)):
            if vals[j] != vals[j - 1]:
                found = self.commits[lo + j].sha
        return found

    def _fact_events(self):
        ev = self.events
        for n in range(1, len(self.nights)):
            A, B = self.F[n - 1], self.F[n]
            lo, hi = self.night_cidx[n - 1], self.night_cidx[n]
            crng = S.srng(self.seed, "fact", n)
            common = set(A["platforms"]) & set(B["platforms"])
            for p in sorted(common):
                pa, pb = A["platforms"][p], B["platforms"][p]
                ks = sorted(set(pa["kernels"]) & set(pb["kernels"]))
                for what, kind in (("runner", "runner"), ("image", "driver/toolchain")):
                    keys = ("runner",) if what == "runner" else ("image", "runtime")
                    if any(pa["env"][k] != pb["env"][k] for k in keys):
                        if what == "image" and pa["env"]["runner"] != pb["env"]["runner"]:
                            continue  # one hardware event for a machine move
                        ea, eb = self._env_key(pa["env"]), self._env_key(pb["env"])
                        mem = {}
                        for k in ks:
                            fa, fb_ = self._env_factors(p, k, ea), self._env_factors(p, k, eb)
                            mem[(p, k)] = {x: fb_[x] / fa[x] for x in fa}
                        sha = self._find_change(lo, hi, lambda F, p=p, keys=keys:
                                                tuple((F["platforms"].get(p) or {"env": {}})["env"].get(k) for k in keys))
                        seen = {tuple(self.F[j]["platforms"][p]["env"][x] for x in keys) for j in range(n - 1)
                                if p in self.F[j]["platforms"]}
                        now = tuple(pb["env"][x] for x in keys)
                        e = Event("dashboard", "hardware", kind, n, mem, change_sha=sha, planted=False,
                                  note=f"{p}: {what} {[pa['env'][k] for k in keys]} -> {[pb['env'][k] for k in keys]}"
                                       + (" (back to an earlier state: the new side is the healthy one)" if now in seen else ""))
                        e.honest_after = now in seen
                        ev.append(e)
                for attr, kind in (("cudagraph", "cudagraph"), ("shapes", "shapes")):
                    mem = {(p, k): {} for k in ks if pa["kernels"][k][attr] != pb["kernels"][k][attr]}
                    if mem:
                        def fn(F, p=p, attr=attr, mk=tuple(sorted(k for _, k in mem))):
                            pl = F["platforms"].get(p)
                            return tuple(pl["kernels"].get(k, {}).get(attr) if pl else None for k in mk)
                        sha = self._find_change(lo, hi, fn)
                        ev.append(Event("dashboard", "method_change", kind, n, mem, change_sha=sha, planted=False,
                                        note=f"{p}: {attr} changed for {sorted(k for _, k in mem)}"))
            ba, bb = A["bench"], B["bench"]
            gpu = [p for p in sorted(common) if p != "tpu"]
            if (ba["torch"], ba["triton"]) != (bb["torch"], bb["triton"]):
                mem = {}
                down = crng.random() < 0.75
                for p in gpu:
                    for k in sorted(set(A["platforms"][p]["kernels"]) & set(B["platforms"][p]["kernels"])):
                        if crng.random() < 0.6:
                            g = crng.uniform(0.8, 0.9) if down else crng.uniform(1.1, 1.2)
                            mem[(p, k)] = {"b": g}
                sha = self._find_change(lo, hi, lambda F: (F["bench"]["torch"], F["bench"]["triton"]))
                ev.append(Event("dashboard", "method_change", "baseline", n, mem, change_sha=sha, planted=False,
                                note=f"torch/triton pin {ba['torch']} -> {bb['torch']}: the baselines move, Helion's time does not"))
            ea = set(ba["env"]) | set(A["nightly_env"])
            eb = set(bb["env"]) | set(B["nightly_env"])
            if ea != eb:
                mem = {}
                for p in gpu:
                    for k in sorted(set(A["platforms"][p]["kernels"]) & set(B["platforms"][p]["kernels"])):
                        fa = self._autotune_factor(ea, p, k)
                        fb_ = self._autotune_factor(eb, p, k)
                        if abs(fb_[0] / fa[0] - 1) > 0.02:
                            mem[(p, k)] = {"h": fb_[0] / fa[0], "ct": fb_[1] / fa[1]}
                sha = self._find_change(lo, hi, lambda F: set(F["bench"]["env"]) | set(F["nightly_env"]))
                ev.append(Event("dashboard", "method_change", "autotune", n, mem, change_sha=sha, planted=False,
                                note=f"autotune env {sorted(map(str, ea))} -> {sorted(map(str, eb))}"))
            if ba["latency_mode"] != bb["latency_mode"]:
                mem = {}
                up = crng.random() < 0.5
                for p in sorted(common):
                    for k in sorted(set(A["platforms"][p]["kernels"]) & set(B["platforms"][p]["kernels"])):
                        mem[(p, k)] = {"lat": crng.uniform(1.1, 1.25) if up else 1 / crng.uniform(1.1, 1.25)}
                sha = self._find_change(lo, hi, lambda F: F["bench"]["latency_mode"])
                ev.append(Event("dashboard", "method_change", "timer", n, mem, change_sha=sha, planted=False,
                                note=f"latency timer {ba['latency_mode']} -> {bb['latency_mode']}"))
            # pretuned
            PA, PB = self.PF[n - 1], self.PF[n]
            if PA and PB:
                plo, phi = self.p_cidx[n - 1], self.p_cidx[n]
                pc = set(PA["platforms"]) & set(PB["platforms"])
                for p in sorted(pc):
                    pa, pb = PA["platforms"][p], PB["platforms"][p]
                    ks = sorted(set(pa["kernels"]) & set(pb["kernels"]))
                    if any(pa["env"][k] != pb["env"][k] for k in ("runner", "image", "runtime")):
                        kind = "runner" if pa["env"]["runner"] != pb["env"]["runner"] else "driver/toolchain"
                        ea, eb = self._env_key(pa["env"]), self._env_key(pb["env"])
                        mem = {}
                        for k in ks:
                            fa, fb_ = self._env_factors("p" + p, k, ea), self._env_factors("p" + p, k, eb)
                            mem[(p, k)] = {"h": fb_["h"] / fa["h"], "b": fb_["b"] / fa["b"]}
                        sha = self._find_change(plo, phi, lambda F, p=p: tuple(
                            ((F["pretuned"] or {"platforms": {}})["platforms"].get(p) or {"env": {}})["env"].get(k)
                            for k in ("runner", "image", "runtime")))
                        seen = {self._env_key(self.PF[j]["platforms"][p]["env"]) for j in range(n - 1)
                                if self.PF[j] and p in self.PF[j]["platforms"]}
                        e = Event("pretuned", "hardware", kind, n, mem, change_sha=sha, planted=False,
                                  note=f"pretuned {p}: {kind} change {ea} -> {eb}")
                        e.honest_after = eb in seen
                        ev.append(e)
                    for attr, kind in (("cudagraph", "cudagraph"), ("baselines", "baseline")):
                        mem = {(p, k): {} for k in ks if pa["kernels"][k][attr] != pb["kernels"][k][attr]}
                        if mem:
                            def fn(F, p=p, attr=attr, mk=tuple(sorted(k for _, k in mem))):
                                pl = ((F["pretuned"] or {"platforms": {}})["platforms"].get(p))
                                return tuple(pl["kernels"].get(k, {}).get(attr) if pl else None for k in mk)
                            sha = self._find_change(plo, phi, fn)
                            ev.append(Event("pretuned", "method_change", kind, n, mem, change_sha=sha, planted=False,
                                            note=f"pretuned {p}: {attr} changed for {sorted(k for _, k in mem)}"))
                    for k in ks:
                        if pa["kernels"][k]["config"] != pb["kernels"][k]["config"] and PA["bench_py"] == PB["bench_py"] \
                                and PA["torch"] == PB["torch"]:
                            slower = crng.random() < 0.55
                            h = crng.uniform(1.12, 1.3) if slower else 1 / crng.uniform(1.12, 1.3)
                            sha = self._find_change(plo, phi, lambda F, p=p, k=k: (
                                ((F["pretuned"] or {"platforms": {}})["platforms"].get(p) or {"kernels": {}})
                                ["kernels"].get(k, {}).get("config")))
                            ev.append(Event("pretuned", "real", "heuristics/config", n, {(p, k): {"h": h}},
                                            culprit_sha=sha, planted=False,
                                            note=f"pretuned {p}/{k}: checked-in config regenerated"))
                allk = [(p, k) for p in sorted(pc) for k in sorted(set(PA["platforms"][p]["kernels"]) &
                                                                   set(PB["platforms"][p]["kernels"]))]
                if PA["bench_py"] != PB["bench_py"]:
                    mem = {}
                    for m in allk:
                        a = crng.uniform(1.1, 1.25) * (1 if crng.random() < 0.5 else 0.82)
                        mem[m] = {"cg": a}
                    sha = self._find_change(plo, phi, lambda F: (F["pretuned"] or {}).get("bench_py"))
                    ev.append(Event("pretuned", "method_change", "timer", n, mem, change_sha=sha, planted=False,
                                    note="pretuned_kernels/_bench.py timing changed"))
                if PA["torch"] != PB["torch"]:
                    mem = {m: {"b": crng.uniform(0.82, 0.9)} for m in allk if crng.random() < 0.6}
                    sha = self._find_change(plo, phi, lambda F: (F["pretuned"] or {}).get("torch"))
                    ev.append(Event("pretuned", "method_change", "baseline", n, mem, change_sha=sha, planted=False,
                                    note=f"pretuned torch pin {PA['torch']} -> {PB['torch']}"))

    @staticmethod
    def _env_key(env):
        return (env.get("runner"), env.get("image"), env.get("runtime"))

    def _env_factors(self, p, k, envkey):
        """Time factors of a machine (runner) and toolchain (image, runtime) state for one kernel."""
        out = {"h": 1.0, "b": 1.0, "t": 1.0, "c": 1.0, "ct": 1.0}
        for part in (("runner", envkey[0]), ("image", envkey[1], envkey[2])):
            r = S.srng(self.seed, "env", p, part)
            f = 1 + r.uniform(0.12, 0.22)
            if r.random() < 0.5:
                f = 1 / f
            rk = S.srng(self.seed, "env", p, part, k)
            e = lambda: math.exp(rk.gauss(0, 0.03))
            for x, v in (("h", f * e()), ("b", f ** rk.uniform(0.5, 1.0) * e()), ("t", f ** rk.uniform(0.5, 1.0) * e()),
                         ("c", f ** rk.uniform(0.5, 1.0) * e()), ("ct", 1 + (f - 1) * 0.5)):
                out[x] *= v
        return out

    def _autotune_factor(self, env, p, k):
        """(helion time, compile time) factor of an autotune environment for one kernel."""
        h = ct = 1.0
        for item in sorted(map(str, env)):
            r = S.srng(self.seed, "autotune", item, p, k)
            hit = r.random() < (0.8 if S.family(k) in ("matmul", "attention", "ssm", "linattn") else 0.35)
            a = r.uniform(1.1, 1.2)
            faster = r.random() < 0.5
            if hit:
                h *= 1 / a if faster else a
                ct *= r.uniform(1.3, 1.7) if faster else r.uniform(0.55, 0.75)
        return h, ct

    def _merge(self):
        out, idx = [], {}
        for e in self.events:
            key = (e.source, e.cause, e.kind, e.first, e.change_sha, e.culprit_sha, e.planted)
            if e.planted or key not in idx:
                idx[key] = e
                out.append(e)
            else:
                idx[key].members.update(e.members)
                idx[key].note += "; " + e.note
        self.events = out

    @staticmethod
    def _hw_factors(r, f, pretuned=False):
        e = lambda: math.exp(r.gauss(0, 0.03))
        if pretuned:
            return {"h": f * e(), "b": f ** r.uniform(0.3, 0.7) * e()}
        return {"h": f * e(), "b": f ** r.uniform(0.5, 1.0) * e(), "t": f ** r.uniform(0.5, 1.0) * e(),
                "c": f ** r.uniform(0.5, 1.0) * e(), "ct": 1 + (f - 1) * 0.5}

    # ------------------------------------------------------------------ planted events
    RX = {
        "reduction": r"\breduction|softmax|layer.?norm|rms.?norm|welford|\bsum\b|looped|persistent|cross.?entropy",
        "matmul": r"matmul|gemm|\bdot\b|\bmma\b|tcgen05|wgmma|\btma\b|epilogue|\bmm\b",
        "attention": r"attention|\bflash|sdpa",
        "elementwise": r"pointwise|elementwise|vector_add|broadcast|\bmask|\bload\b|\bstore\b|indexing",
        "ssm": r"mamba|\bgdn|\bscan\b|chunk",
    }

    def _slice(self, c: R.Commit):
        s = c.subject.lower()
        paths = " ".join(c.files).lower()
        hel = [f for f in c.files if f.startswith("helion/")]
        tuner = bool(hel) and all(f.startswith("helion/autotuner/") for f in hel)
        kind = "heuristics/config" if (tuner or re.search(r"\[autotune|heuristic|\bseed\b", s)) else "code"
        plats = self._slice_plats(s, paths)
        return plats, kind

    def _slice_plats(self, s, paths):
        if re.search(r"\bmetal\b|\bmps\b", s) or "/metal" in paths:
            return set()
        if "helion/_compiler/cute" in paths or re.search(r"\bcute|cutedsl", s):
            return {"b200_cute"}
        if "pallas" in paths or re.search(r"pallas|\btpu\b", s):
            return {"tpu"}
        if re.search(r"\[rocm\]|\bamd\b|gfx9|hip\b", s) or "rocm" in paths:
            return {"mi350x", "mi325x"}
        if re.search(r"sm90|hopper|wgmma", s + paths):
            return {"h100"}
        if re.search(r"sm100|blackwell|tcgen05", s + paths):
            return {"b200"}
        return {"h100", "b200", "mi350x", "mi325x"}

    def _family_of(self, c: R.Commit):
        s = c.subject.lower()
        for fam, rx in self.RX.items():
            if re.search(rx, s):
                return fam
        return None

    def _kernels_on(self, n, plats, fam):
        out = []
        for p in sorted(plats):
            pl = self.F[n]["platforms"].get(p)
            if not pl or (n > 0 and p not in self.F[n - 1]["platforms"]):
                continue
            for k in pl["kernels"]:
                if S.family(k) == fam and (n == 0 or k in self.F[n - 1]["platforms"][p]["kernels"]):
                    out.append((p, k))
        return out

    def _first_night_of_commit(self, ci):
        for n in range(1, len(self.nights)):
            if self.night_cidx[n] >= ci > self.night_cidx[n - 1]:
                return n
        return None

    def _real_candidates(self):
        cands = []
        for n in range(2, len(self.nights)):
            for ci in range(self.night_cidx[n - 1] + 1, self.night_cidx[n] + 1):
                c = self.commits[ci]
                if not any(f.startswith("helion/") for f in c.files):
                    continue
                low = c.subject.lower()
                if re.search(r"^revert|\btest|xfail|skip|autodiff|ref_mode|ref mode|\bdocs?\b|distributed|typo|lint|"
                             r"error message|docstring|comment|readme|example|\bdist\b|\[ci\]|\[benchmark|\[dashboard|\[examples|\bci\b|accuracy|\bfix\b.*\berror",
                             low):
                    continue
                if not any(f.startswith(("helion/_compiler", "helion/autotuner", "helion/runtime", "helion/language"))
                           for f in c.files):
                    continue
                fam = self._family_of(c)
                if fam is None:
                    continue
                plats, kind = self._slice(c)
                mem = self._kernels_on(n, plats, fam)
                if mem:
                    cands.append((n, c, fam, kind, mem))
        return cands

    def _real_event(self, n, c, fam, kind, mem, rng, regress=None, note=""):
        regress = rng.random() < 0.7 if regress is None else regress
        base = rng.uniform(1.13, 1.35) if regress else 1 / rng.uniform(1.13, 1.3)
        m = {}
        for x in mem:
            j = rng.uniform(0.85, 1.15)
            m[x] = {"h": 1 + (base - 1) * j}
        return Event("dashboard", "real", kind, n, m, culprit_sha=c.sha,
                     note=(note + f" {fam} {'regression' if regress else 'improvement'} from {c.sha[:8]} '{c.subject[:70]}'").strip())

    def _planted_events(self):
        rng = S.srng(self.seed, "plant")
        N = len(self.nights)

        def ri(lo, hi):
            hi = max(min(hi, N - 2), 2)
            return rng.randint(min(lo, hi), hi)
        ev = self.events
        cands = self._real_candidates()
        rng.shuffle(cands)
        chosen = []
        used_n = set()

        def take(pred, note=""):
            for cd in cands:
                if cd[1].sha in {x[1].sha for x in chosen} or not pred(cd):
                    continue
                plats = {p for p, _ in cd[4]}
                if sum(1 for x in chosen if {p for p, _ in x[4]} == plats) >= 3:
                    continue
                if any(abs(cd[0] - u) < 3 for u in used_n):
                    continue
                chosen.append(cd)
                used_n.add(cd[0])
                e = self._real_event(*cd, rng, note=note)
                ev.append(e)
                return e
            return None
        take(lambda cd: cd[0] >= N - 3, "step in the last nightlies:")
        take(lambda cd: "b200_cute" in {p for p, _ in cd[4]} and len(cd[4]) < 5, "one family on the 5-kernel CuTe platform:")
        take(lambda cd: len({p for p, _ in cd[4]}) == 1 and cd[0] < N - 3, "platform-specific:")
        take(lambda cd: cd[3] == "heuristics/config" and cd[0] < N - 3)
        for _ in range(ri(4, 6)):
            take(lambda cd: cd[0] < N - 3)
        # two events a week apart in one series
        for e in list(ev):
            if not (e.planted and e.cause == "real"):
                continue
            partner = None
            for cd in cands:
                if cd[1].sha == e.culprit_sha or not (6 <= cd[0] - e.first <= 8):
                    continue
                common = set(cd[4]) & set(e.members)
                if common:
                    partner = (cd, sorted(common))
                    break
            if partner:
                cd, common = partner
                e2 = self._real_event(cd[0], cd[1], cd[2], cd[3], common, rng,
                                      regress=e.members[common[0]]["h"] < 1, note="a week after another step:")
                e2.note += " (same series as an earlier event)"
                ev.append(e2)
                break
        # real change in Helion that also moves the pretuned suite (same kernel on the same GPU)
        pt_n = [n for n in range(2, N - 2) if self.PF[n] and self.PF[n - 1]]
        for e in [x for x in ev if x.cause == "real" and x.source == "dashboard"]:
            if e.first not in pt_n:
                continue
            PA, PB = self.PF[e.first - 1], self.PF[e.first]
            pm = {}
            for (p, k), f in e.members.items():
                if p in PB["platforms"] and k in PB["platforms"][p]["kernels"] and k in PA["platforms"].get(p, {"kernels": {}})["kernels"]:
                    pm[(p, k)] = dict(f)
            if pm:
                ev.append(Event("pretuned", "real", e.kind, e.first, pm, culprit_sha=e.culprit_sha,
                                note="same Helion change seen by the pretuned suite: " + e.note))
        # harness edits: a benchmarks/ commit that changes the speedup timer only
        hc = []
        fact_shas = {e.change_sha for e in ev if not e.planted} | {e.culprit_sha for e in ev}
        for n in range(3, N - 3):
            for ci in range(self.night_cidx[n - 1] + 1, self.night_cidx[n] + 1):
                c = self.commits[ci]
                if c.sha not in fact_shas and any(f.startswith("benchmarks/run") for f in c.files) and \
                        re.search(r"subprocess|timing|timer|measure|warmup|isolat|overhead|do_bench|cudagraph|\bl2\b|"
                                  r"sync|once|hang", c.subject.lower()) and \
                        not re.search(r"\badd\b.*\bsweep|accuracy", c.subject.lower()):
                    hc.append((n, c))
        rng.shuffle(hc)
        for n, c in hc[:ri(1, 2)]:
            sl = self._slice_plats(c.subject.lower(), " ".join(c.files).lower())
            if sl == {"h100", "b200", "mi350x", "mi325x"}:
                sl = {"h100", "b200", "mi350x", "mi325x", "b200_cute"}
            plats = [p for p in self.F[n]["platforms"] if p in sl and p in self.F[n - 1]["platforms"]]
            named = [f for f, rx in self.RX.items() if re.search(rx, c.subject.lower())]
            fams = named[:1] or rng.sample(["reduction", "elementwise", "matmul", "ssm", "attention"], 2)
            up = rng.random() < 0.5
            mem = {}
            for p in plats:
                for k, spec in self.F[n]["platforms"][p]["kernels"].items():
                    if (S.family(k) in fams or p == "tpu") and spec["suite"] in ("tritonbench", "tpu") and k in self.F[n - 1]["platforms"][p]["kernels"]:
                        a = rng.uniform(1.1, 1.2)
                        mem[(p, k)] = {"cg": 1 / a if up else a}
            if mem:
                ev.append(Event("dashboard", "method_change", "harness", n, mem, change_sha=c.sha,
                                note=f"harness edit {c.sha[:8]} '{c.subject[:60]}' moves the CUDA-graph timer of {fams} only"))
        gpu_plats = lambda n: [p for p in ("h100", "b200", "mi350x", "mi325x", "b200_cute")
                               if p in self.F[n]["platforms"] and p in self.F[max(n - 1, 0)]["platforms"]]
        allk = lambda n, p: [(p, k) for k in self.F[n]["platforms"][p]["kernels"]
                             if k in self.F[n - 1]["platforms"][p]["kernels"]]
        grp = lambda p: "b200" if p.startswith("b200") else p
        busy = {}
        for e in ev:
            if e.source == "dashboard" and not e.planted:
                for (p, _k) in e.members:
                    busy.setdefault(grp(p), []).append((e.first, e.first))

        def free(p, a, b):
            return all(y < a - 4 or x > b + 4 for x, y in busy.get(grp(p), []))

        def platform_event(kind, count, mk):
            made = 0
            for _ in range(12):
                if made >= count:
                    break
                n = ri(10, N - 10)
                ps = gpu_plats(n)
                if not ps:
                    continue
                p = rng.choice(ps)
                e = mk(n, p)
                if not free(p, e.first, e.end if e.end is not None else N):
                    continue
                busy.setdefault(grp(p), []).append((e.first, e.end if e.end is not None else N))
                ev.append(e)
                made += 1

        # thermal throttling episodes
        def thermal(n, p):
            dur = ri(3, 6)
            f = rng.uniform(1.13, 1.25)
            return Event("dashboard", "hardware", "thermal", n, {m: self._hw_factors(rng, f) for m in allk(n, p)},
                         end=n + dur, note=f"{p} throttles for {dur} nights, then recovers")
        platform_event("thermal", ri(1, 2), thermal)

        def outage(n, p):
            dur = ri(2, 4)
            return Event("dashboard", "hardware", "outage", n, {m: {} for m in allk(n, p)}, end=n + dur,
                         outage_plat=p, note=f"{p} runner pool down for {dur} nights")
        platform_event("outage", ri(1, 2), outage)

        def swap(n, p):
            f = rng.uniform(1.12, 1.2)
            return Event("dashboard", "hardware", "runner", n, {m: self._hw_factors(rng, f) for m in allk(n, p)},
                         note=f"{p}: the runner pool silently swapped to slower machines (no commit)")
        platform_event("runner", 1, swap)
        # noise: one-night blips (candidates; the conflict pass keeps those on quiet series)
        for _ in range(4):
            n = ri(10, N - 4)
            p = rng.choice([p for p in self.F[n]["platforms"] if p in self.F[n - 1]["platforms"]])
            k = rng.choice(allk(n, p))
            ev.append(Event("dashboard", "noise", "noise", n, {k: {"h": rng.choice((0.82, 1.2))}}, end=n + 1,
                            note="one-night blip that reverts"))
        if pt_n:
            n = rng.choice(pt_n)
            PA = self.PF[n]
            opts = [(p, k) for p in PA["platforms"] for k in PA["platforms"][p]["kernels"]
                    if k in (self.PF[n - 1]["platforms"].get(p) or {"kernels": {}})["kernels"]]
            if opts:
                ev.append(Event("pretuned", "noise", "noise", n, {rng.choice(opts): {"h": 1.18}}, end=n + 1,
                                note="pretuned one-night blip that reverts"))
        # a noisy series with a two-night excursion inside its own scatter
        n = ri(12, N - 5)
        p = rng.choice([p for p in self.F[n]["platforms"] if p in self.F[n - 1]["platforms"]])
        k = rng.choice(allk(n, p))
        self.noisy = {("dashboard",) + k}
        ev.append(Event("dashboard", "noise", "noise", n, {k: {"h": 1.09}}, end=n + 2,
                        note="high-scatter series: a two-night excursion inside its normal scatter"))

    # ------------------------------------------------------------------ conflicts
    def _resolve(self):
        occ = {}
        keep = []
        order = sorted(self.events, key=lambda e: (e.planted, e.first))
        for e in order:
            gap = 6 if e.planted else 1
            mem = {}
            for m, f in e.members.items():
                key = (e.source,) + m
                busy = any(abs(e.first - a) < gap or (b is not None and a <= e.first < b + 2)
                           for a, b in occ.get(key, []))
                if not busy:
                    mem[m] = f
            if e.kind == "outage" and len(mem) < len(e.members):
                continue
            if not mem:
                continue
            e.members = mem
            keep.append(e)
            for m in mem:
                occ.setdefault((e.source,) + m, []).append((e.first, e.end))
        self.events = sorted(keep, key=lambda e: (e.first, e.source))
        self.outages = {}
        for e in self.events:
            if e.kind == "outage":
                for n in range(e.first, e.end):
                    self.outages.setdefault(n, set()).add(e.outage_plat)

    # ------------------------------------------------------------------ simulation
    def _series_params(self):
        self.series = {}
        self.effects = {}
        for e in self.events:
            for m, f in e.members.items():
                if f:
                    self.effects.setdefault((e.source,) + m, []).append(Eff(e.first, e.end, f))

    def ser(self, source, p, k):
        key = (source, p, k)
        if key not in self.series:
            s = S.Series(self.seed, source, p, k)
            s.noisy = key in self.noisy
            self.series[key] = s
        return self.series[key]

    def pf(self, p, n):
        return math.exp(S.srng(self.seed, "pf", p, n).gauss(0, 0.006))

    def expect(self, source, p, k, n):
        """Noise-free metrics of a series on night n (None if it does not run)."""
        if source == "dashboard":
            spec = self.F[n]["platforms"].get(p, {"kernels": {}})["kernels"].get(k)
            if spec is None:
                return None
            _, res = S.run_dashboard(self.ser(source, p, k), spec, n, self.effects.get((source, p, k), []), 1.0, None)
            return S.dash_summary(res)
        PF = self.PF[n]
        spec = PF and (PF["platforms"].get(p) or {"kernels": {}})["kernels"].get(k)
        if not spec:
            return None
        rec = S.run_pretuned(self.ser(source, p, k), spec, n, self.effects.get((source, p, k), []), 1.0, None)
        return {"geomean": rec["geomean"]}

    def _labels(self):
        labels = []
        cnt = {}
        for e in self.events:
            head = "helion_speedup_geomean" if e.source == "dashboard" else "geomean"
            runid = (lambda n: self.nights[n].run_id) if e.source == "dashboard" else (lambda n: self.nights[n].p_run_id)
            if e.first >= len(self.nights) or e.first < 1:
                continue
            end = e.end if e.end is not None and e.end < len(self.nights) else None
            if e.end is not None and end is None and e.kind != "noise":
                continue  # an episode cut by a truncated window
            members, metrics, honest, dirs = [], set(), {}, []
            for m in sorted(e.members):
                before = self.expect(e.source, *m, e.first - 1)
                after = self.expect(e.source, *m, e.first)
                if before is None or after is None:
                    continue
                if e.kind == "outage":
                    members.append(m)
                    honest[f"{m[0]}/{m[1]}"] = round(before[head], 4)
                    continue
                moved = [x for x in before if before[x] and after[x] and abs(after[x] / before[x] - 1) >= MOVE]
                if not moved:
                    continue
                members.append(m)
                metrics |= set(moved)
                side = after if e.cause in ("real", "method_change") or e.honest_after else before
                honest[f"{m[0]}/{m[1]}"] = round(side[head], 4)
                if head in moved:
                    dirs.append(1 if after[head] > before[head] else -1)
                elif "helion_latency_avg_ms" in moved:
                    dirs.append(-1 if after["helion_latency_avg_ms"] > before["helion_latency_avg_ms"] else 1)
                else:
                    dirs.append(1 if after.get(head, 0) >= before.get(head, 0) else -1)
            if not members:
                continue
            if e.kind == "outage":
                metrics = {"infra_missing"}
            direction = "improvement" if sum(dirs) > 0 else "regression"
            if e.source == "pretuned" and not self.nights[e.first - 1].p_run_id:
                continue
            cnt[e.cause] = cnt.get(e.cause, 0) + 1
            lid = f"c{self.seed}-{e.source[0]}{len(labels) + 1:02d}-{e.cause}-{e.kind.replace('/', '_')}"
            labels.append(Label(id=lid, source=e.source, cause=e.cause, kind=e.kind, direction=direction,
                                members=tuple(members), metrics=tuple(sorted(metrics)),
                                first_bad_run_id=runid(e.first), last_good_run_id=runid(e.first - 1),
                                end_run_id=runid(end) if end is not None else None,
                                culprit_sha=e.culprit_sha, change_sha=e.change_sha, honest_speedup=honest,
                                note=e.note))
        self.labels = labels
        self._critical = {self.night_of(x) for l in labels for x in (l.first_bad_run_id, l.last_good_run_id)}

    # ------------------------------------------------------------------ documents
    def _load_builders(self):
        tmp = Path(tempfile.mkdtemp(prefix="helion_dash_", dir=self.workdir))
        mods = {}
        for name in ("build_dashboard_data", "build_pretuned_dashboard_data"):
            src = R.git(self.repo, "show", f"HEAD:.github/dashboard/{name}.py")
            (tmp / f"{name}.py").write_bytes(src)
            spec = importlib.util.spec_from_file_location(f"_helion_{name}_{self.seed}", tmp / f"{name}.py")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mods[name] = mod
        self._tmp = tmp
        return mods["build_dashboard_data"], mods["build_pretuned_dashboard_data"]

    @staticmethod
    def _pin_clock(mod, when: datetime):
        class Fixed(_dt.datetime):
            @classmethod
            def now(cls, tz=None):
                return when if tz else when.replace(tzinfo=None)
        mod.datetime = types.SimpleNamespace(datetime=Fixed, timedelta=_dt.timedelta, timezone=_dt.timezone)

    def _write_dash_run(self, run_dir: Path, n, plats, rng, kernel_filter=None, extra=None):
        for p in plats:
            pl = self.F[n]["platforms"][p]
            by_suite = {}
            for k, spec in pl["kernels"].items():
                if kernel_filter and k not in kernel_filter:
                    continue
                if rng.random() < 0.01 and n not in self._critical:
                    continue  # the kernel's job failed: no rows
                by_suite.setdefault(spec["suite"], []).append((k, spec))
            for suite, items in by_suite.items():
                backend = "cute" if p == "b200_cute" else "pallas" if p == "tpu" else "triton"
                extra_info = {"device": R.DEVICE.get(p, p), "backend": backend,
                              "baseline_label": "fla" if suite == "linattn" else None}
                recs = []
                for k, spec in items:
                    effs = self.effects.get(("dashboard", p, k), [])
                    if extra:
                        effs = effs + [Eff(0, None, extra)]
                    labels, res = S.run_dashboard(self.ser("dashboard", p, k), spec, n, effs, self.pf(p, n), rng)
                    for mname, vals in res.items():
                        recs.append({"benchmark": {"name": "Helion Benchmark", "extra_info": extra_info},
                                     "model": {"name": k, "type": "helion"}, "shape": labels,
                                     "metric": {"name": mname, "benchmark_values": vals}})
                d = run_dir / f"benchmark-results-{p}-{suite}"
                d.mkdir(parents=True, exist_ok=True)
                (d / "helionbench.json").write_text(json.dumps(recs))

    def _write_pretuned_run(self, run_dir: Path, n, rng):
        PF = self.PF[n]
        for p, pl in PF["platforms"].items():
            recs = []
            for k, spec in pl["kernels"].items():
                base = {"kernel": k, "device": R.DEVICE.get(p, p), "compute_capability": spec["compute"]}
                if rng.random() < 0.01 and n not in self._critical:
                    recs.append({**base, "error": "RuntimeError: CUDA error: an illegal memory access was encountered"})
                    continue
                rec = S.run_pretuned(self.ser("pretuned", p, k), spec, n, self.effects.get(("pretuned", p, k), []),
                                     self.pf("p" + p, n), rng)
                recs.append({**base, **rec})
            d = run_dir / f"pretuned-results-{p}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))

    def _build_documents(self):
        bd, bp = self._load_builders()
        out = self._docs_dir
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        rng = S.srng(self.seed, "measure")
        xr = S.srng(self.seed, "extra-runs")
        metas, pmetas = [], []
        doc = pdoc = None
        for n, nt in enumerate(self.nights):
            cache = Path(tempfile.mkdtemp(prefix="cache_", dir=self.workdir))
            # manual dispatches and side-branch runs the day before
            if n > 0 and xr.random() < 0.1:
                t = nt.date - timedelta(hours=xr.randint(6, 14), minutes=xr.randint(0, 59))
                import bisect
                ci = bisect.bisect_right([c.date for c in self.commits], t) - 1
                c = self.commits[max(self.night_cidx[n - 1], min(ci, self.night_cidx[n]))]
                side = xr.random() < 0.4
                plats = [p for p in self.F[n - 1]["platforms"] if p != "tpu"][:1] if not side else \
                    [p for p in self.F[n - 1]["platforms"]][-1:]
                meta = dict(run_id=_rid(t, 2), sha=c.sha[:8], full_sha=c.sha, date=_iso(t),
                            branch="main" if not side else "yifeixu/tpu-nightly-benchmark", is_nightly=side)
                ks = set(xr.sample(sorted(self.F[n - 1]["platforms"][plats[0]]["kernels"]), 3)) if plats else set()
                if plats:
                    self._write_dash_run(cache / meta["run_id"], n - 1, plats, xr, ks,
                                         extra={"h": xr.choice((0.75, 1.3, 1.15))})
                    metas.append(meta)
            meta = dict(run_id=nt.run_id, sha=nt.sha, full_sha=nt.full_sha, date=_iso(nt.date), branch="main",
                        is_nightly=True)
            metas.append(meta)
            plats = [p for p in self.F[n]["platforms"] if p not in self.outages.get(n, set())]
            self._write_dash_run(cache / nt.run_id, n, plats, rng)
            wf = cache / "benchmark_dispatch.yml"
            wf.write_text(self.F[n]["dispatch_text"])
            self._pin_clock(bd, nt.date)
            doc = bd.build_dashboard_data(str(cache), [dict(m) for m in metas], doc, bd.get_active_platforms(str(wf)),
                                          bd.get_expected_kernels_per_platform(str(wf)))
            raw = json.dumps(doc).encode()
            (out / f"dashboard-{n:03d}.json.z").write_bytes(zlib.compress(raw, 1))
            doc = json.loads(raw)
            if nt.p_run_id:
                pmeta = dict(run_id=nt.p_run_id, sha=nt.p_full_sha[:8], full_sha=nt.p_full_sha,
                             date=_iso(self.p_dates[n]),
                             branch="main", is_nightly=True)
                pmetas.append(pmeta)
                self._write_pretuned_run(cache / nt.p_run_id, n, rng)
                pwf = cache / "benchmark_pretuned_dispatch.yml"
                pwf.write_text(self.F[n]["pdispatch_text"] or "")
                self._pin_clock(bp, nt.date + timedelta(hours=3))
                pdoc = bp.build_dashboard_data(str(cache), [dict(m) for m in pmetas], pdoc,
                                               bp.get_active_platforms(str(pwf)))
                raw = json.dumps(pdoc).encode()
                (out / f"pretuned-{n:03d}.json.z").write_bytes(zlib.compress(raw, 1))
                pdoc = json.loads(raw)
            shutil.rmtree(cache)
            self._n_docs = n + 1
        shutil.rmtree(self._tmp, ignore_errors=True)

    def dashboard_bytes(self, n):
        return zlib.decompress((self._docs_dir / f"dashboard-{n:03d}.json.z").read_bytes())

    def pretuned_bytes(self, n):
        p = self._docs_dir / f"pretuned-{n:03d}.json.z"
        return zlib.decompress(p.read_bytes()) if p.exists() else None

    def series_count(self):
        n = self._n_docs - 1
        if n < 0:
            return 0
        d = json.loads(self.dashboard_bytes(n))
        total = sum(len(DASH_METRICS) for s in d["summary"] if s.get("has_nightly_data"))
        p = self.pretuned_bytes(n)
        if p:
            total += sum(1 for s in json.loads(p)["summary"] if s.get("has_nightly_data"))
        return total


def build_world(seed, workdir, nights=None, documents=True, skip=0):
    """skip (for tests): drop the window's first `skip` nights before truncating to `nights`."""
    return World(seed, workdir, nights=nights, documents=documents, skip=skip)
