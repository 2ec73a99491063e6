"""An R world: nightlies on the real Helion history, simulated artifacts, and the two published
documents built by Helion's own dashboard builders (imported from the world's checkout)."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import shutil
import sys
import zlib
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import gitio
from .facts import DISPATCH, P_DISPATCH, Facts
from .model import DEVICE, PRE_DEVICE, h64, psummarize, ptrue, rng, true_arrays
from .plan import Planner
from .regimes import dash_series, pre_series

TOTAL = 150
T0 = datetime(2025, 6, 1, tzinfo=timezone.utc)


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_id(d: datetime, salt) -> str:
    return str(20_100_000_000 + int((d - T0).total_seconds() / 86400 * 2_400_000) + h64("rid", salt) % 4000)


class _Clock:
    """Stands in for a builder module's `datetime` so its retention cutoff is taken from the
    publication time of the document instead of the wall clock."""

    def __init__(self):
        clock = self

        class _DT(datetime):
            @classmethod
            def now(cls, tz=None):
                return clock.now

        self.datetime = _DT
        self.timedelta = timedelta
        self.timezone = timezone
        self.now = datetime.now(timezone.utc)


def _import_builder(repo: Path, name: str):
    path = repo / ".github" / "dashboard" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_bwr_{name}_{h64(str(repo)) % 10**8}", path)
    mod = importlib.util.module_from_spec(spec)
    old = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = old
    clock = _Clock()
    mod.datetime = clock
    mod._bwr_clock = clock
    return mod


class RWorld:
    def __init__(self, seed: int, workdir: Path, window_end: str, nights: int | None = None):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = gitio.clone_bundle(bundle_path(), self.workdir / "helion")
        self.chain = gitio.first_parent_chain(self.repo)
        self.pos = {c.sha: i for i, c in enumerate(self.chain)}
        self.blobs = gitio.Blobs(self.repo)
        self.F = Facts(self.blobs, self.repo)
        k = TOTAL if nights is None else max(2, min(int(nights), TOTAL))
        self.off = TOTAL - k
        self._plan_nights(date.fromisoformat(window_end))
        lo = self.pos[self.G[0]["sha"]]
        hi = self.pos[self.G[-1]["sha"]]
        self.files = gitio.touched_files(self.repo, [c.sha for c in self.chain[max(lo - 1, 0): hi + 1]])
        self.dash = [dash_series(self.F.at(g["sha"])) for g in self.G]
        self.pre = [pre_series(self.F.at(g["p_sha"])) for g in self.G]
        self.plan = Planner(self).run()
        self._make_runs()
        self._make_labels()
        self._docs = {"dashboard": [], "pretuned": []}
        self._build_docs()
        self.blobs.close()

    # ------------------------------------------------------------------ nights
    def _head_at(self, ts: int) -> str:
        for c in reversed(self.chain):
            if c.ct <= ts:
                return c.sha
        return self.chain[0].sha

    def _plan_nights(self, end: date):
        self.G = []
        for i in range(TOTAL):
            d = end - timedelta(days=TOTAL - 1 - i)
            t = datetime(d.year, d.month, d.day, 8, 0, tzinfo=timezone.utc) + timedelta(
                seconds=4 + h64("nt", d.isoformat()) % 50)
            pt = datetime(d.year, d.month, d.day, 10, 0, tzinfo=timezone.utc) + timedelta(
                seconds=3 + h64("pt", d.isoformat()) % 40)
            sha = self._head_at(int(t.timestamp()))
            psha = self._head_at(int(pt.timestamp()))
            self.G.append(dict(date=t, sha=sha, p_date=pt, p_sha=psha, run_id=_run_id(t, ("n", d.isoformat())),
                               p_run_id=_run_id(pt, ("p", d.isoformat()))))
        self.nights = []
        self._night_of = {}
        for L, g in enumerate(self.G[self.off:]):
            has_pre = bool(self.F.at(g["p_sha"]).pretuned)
            self.nights.append(Night(run_id=g["run_id"], full_sha=g["sha"], sha=g["sha"][:8], date=g["date"],
                                     p_run_id=g["p_run_id"] if has_pre else None,
                                     p_full_sha=g["p_sha"] if has_pre else None))
            self._night_of[g["run_id"]] = L
            if has_pre:
                self._night_of[g["p_run_id"]] = L

    def night_of_commit(self, sha: str, pre: bool = False) -> int | None:
        p = self.pos.get(sha)
        if p is None:
            return None
        for i, g in enumerate(self.G):
            if self.pos[g["p_sha" if pre else "sha"]] >= p:
                return i if i >= 1 else None
        return None

    def _window(self, i: int, pre: bool = False) -> list:
        a = self.pos[self.G[i - 1]["p_sha" if pre else "sha"]]
        b = self.pos[self.G[i]["p_sha" if pre else "sha"]]
        return [c.sha for c in self.chain[a + 1: b + 1]]

    def blame_dash(self, i: int, key, comp: str) -> str | None:
        def val(sha):
            s = dash_series(self.F.at(sha)).get(key)
            if s is None:
                return None
            return s["suite"] if comp == "suite" else s["reg"].get(comp)
        v0 = val(self.G[i - 1]["sha"])
        for sha in self._window(i):
            if val(sha) != v0:
                return sha
        return None

    def blame_pre(self, i: int, key, comp: str) -> str | None:
        def val(sha):
            s = pre_series(self.F.at(sha)).get(key)
            return None if s is None else s["reg"].get(comp)
        v0 = val(self.G[i - 1]["p_sha"])
        for sha in self._window(i, pre=True):
            if val(sha) != v0:
                return sha
        return None

    # ------------------------------------------------------------------ runs
    def _make_runs(self):
        g = rng("runs", self.seed)
        self.druns, self.pruns = [], []
        for i in range(self.off, TOTAL):
            G = self.G[i]
            self.druns.append(dict(run_id=G["run_id"], full_sha=G["sha"], date=G["date"], branch="main",
                                   is_nightly=True, kind="nightly", night=i))
            if self.pre[i]:
                self.pruns.append(dict(run_id=G["p_run_id"], full_sha=G["p_sha"], date=G["p_date"], branch="main",
                                       is_nightly=True, kind="nightly", night=i))
        first = self.G[self.off]["date"]
        extra = [first - timedelta(hours=int(11 + g.integers(0, 6)), minutes=int(g.integers(0, 59)))]
        for i in range(self.off, TOTAL):
            if g.random() < 0.2:
                extra.append(self.G[i]["date"] + timedelta(hours=int(4 + g.integers(0, 14)), minutes=int(g.integers(0, 59))))
        for t in extra:
            if t >= self.G[-1]["date"]:
                continue
            sha = self._head_at(int(t.timestamp()))
            pool = sorted({k[0] for k in dash_series(self.F.at(sha))})
            plats = tuple(sorted(set(g.choice(pool, size=min(len(pool), 1 + int(g.random() < 0.3)), replace=False)))) \
                if pool else ()
            self.druns.append(dict(run_id=_run_id(t, ("m", t.isoformat())), full_sha=sha, date=t, branch="main",
                                   is_nightly=False, kind="manual", night=None, platforms=plats,
                                   frac=float(g.uniform(0.3, 0.8)), custom=float(math.exp(g.normal(0.06, 0.08)))))
        for i in range(self.off + 3, TOTAL - 1, 9):
            t = self.G[i]["date"] + timedelta(hours=int(2 + g.integers(0, 6)))
            base = self._head_at(int(t.timestamp()))
            fake = hashlib.sha1(repr(("branch", self.seed, i)).encode()).hexdigest()
            pool = sorted({k[0] for k in dash_series(self.F.at(base))})
            plat = "tpu" if "tpu" in pool and g.random() < 0.6 else ("b200" if "b200" in pool else pool[0])
            branch = "yifeixu/tpu-nightly-benchmark" if plat == "tpu" else f"dev/{['autotune-exp', 'cute-epilogue', 'bench-shapes'][(i // 9) % 3]}"
            self.druns.append(dict(run_id=_run_id(t, ("b", i)), full_sha=fake, date=t, branch=branch,
                                   is_nightly=plat == "tpu", kind="branch", night=None, platforms=(plat,), base=base,
                                   frac=1.0 if plat == "tpu" else 0.5, custom=float(math.exp(g.normal(-0.03, 0.1)))))
        for i in range(self.off, TOTAL):
            if self.pre[i] and g.random() < 0.12:
                t = self.G[i]["p_date"] + timedelta(hours=int(3 + g.integers(0, 10)))
                if t < self.G[-1]["p_date"]:
                    sha = self._head_at(int(t.timestamp()))
                    self.pruns.append(dict(run_id=_run_id(t, ("pm", i)), full_sha=sha, date=t, branch="main",
                                           is_nightly=False, kind="manual", night=None, platforms=("b200",) if
                                           g.random() < 0.5 else ("h100",), frac=0.4,
                                           custom=float(math.exp(g.normal(0.0, 0.05)))))
        self.druns.sort(key=lambda r: r["date"])
        self.pruns.sort(key=lambda r: r["date"])

    def _prev_night(self, t: datetime) -> int | None:
        best = None
        for i, G in enumerate(self.G):
            if G["date"] <= t:
                best = i
        return best

    # ------------------------------------------------------------------ labels
    def _make_labels(self):
        self.labels = []
        cnt = 0
        for ev in sorted(self.plan.events, key=lambda e: (e.a, e.source, e.cause)):
            a = ev.a
            if a - 1 < self.off:
                continue
            pre = ev.source == "pretuned"
            G, Gp = self.G[a], self.G[a - 1]
            rid = G["p_run_id"] if pre else G["run_id"]
            lid = Gp["p_run_id"] if pre else Gp["run_id"]
            if rid not in self._night_of or lid not in self._night_of:
                continue
            end = None
            if ev.end is not None and ev.end < TOTAL:
                end = self.G[ev.end]["p_run_id" if pre else "run_id"]
                if end not in self._night_of:
                    end = None
            cnt += 1
            members = tuple(sorted(set(tuple(m) for m in ev.members)))
            honest = {k: v for k, v in ev.honest.items() if tuple(k.split("/", 1)) in set(members)}
            self.labels.append(Label(id=f"r{self.seed}-{cnt:02d}", source=ev.source, cause=ev.cause, kind=ev.kind,
                                     direction=ev.direction or "flat", members=members,
                                     metrics=tuple(ev.metrics) or (("geomean",) if pre else ("helion_speedup_geomean",)),
                                     first_bad_run_id=rid, last_good_run_id=lid, end_run_id=end,
                                     culprit_sha=ev.culprit if ev.cause == "real" else None,
                                     change_sha=None if ev.cause in ("real", "noise") else ev.change,
                                     honest_speedup={} if ev.cause == "noise" else honest, note=ev.note))

    # ------------------------------------------------------------------ measurements
    def _dash_measure(self, i, key, s: dict, g: np.random.Generator, pf: float, extra: float = 1.0, prev=None):
        P = self.plan
        st = P.st(key, s["suite"])
        reg = s["reg"]
        if i is not None:
            eff = P.eff_at("d", key, i)
        elif prev is not None:
            eff = {c: f for e in P.eff.get(("d", *key), []) if e.start <= prev and (e.end is None or prev < e.end)
                   and (e.end is None or e.end - e.start > 2) for c, f in e.ch.items()}
        else:
            eff = {}
        arr = true_arrays(self.seed, st, reg, eff)
        n = len(reg["shapes"])
        sig = st.sigma
        sc = P.scatter.get(("dashboard", *key))
        flaky = np.zeros(n)
        if sc and i is not None and sc[0] <= i < sc[1]:  # one flaky shape, both timers
            flaky[h64("flaky", key) % n] = 1.0
            sig *= 1.5
        busy = i is not None and i in P.busy.get(("dashboard", *key), set())
        out = {}
        for name in ("Bs", "Ts", "Cs"):
            out[name] = arr[name] * pf * np.exp(g.normal(0, sig, n) + g.normal(0, 0.4 * sig))
        hs_noise = g.normal(0, sig, n) + g.normal(0, 0.4 * sig)
        at = np.zeros(n)
        if not reg.get("seed_fixed"):
            at = g.normal(0, 0.006, n)
            bad = g.random(n) < 0.015
            at[bad] += g.uniform(0.05, 0.15, int(bad.sum()))
        fl = flaky * np.abs(g.normal(0, sc[2] if sc else 0.0, n)) if flaky.any() else 0.0
        out["Hs"] = arr["Hs"] * pf * extra * np.exp(hs_noise + at + fl)
        sl = sig * float(rng("latsig", self.seed, key).uniform(0.7, 1.3))
        out["L"] = arr["L"] * pf * extra * np.exp(g.normal(0, sl, n) + g.normal(0, 0.4 * sl) + at + fl)
        out["K"] = arr["K"] * np.exp(g.normal(0, 0.05, n) + g.normal(0, 0.03))
        if not busy and g.random() < 0.01:  # a stray single-timer outlier
            which = ["Hs", "L", "Bs", "Ts", "Cs"][int(g.integers(0, 5))]
            out[which] = out[which] * float(g.uniform(1.15, 1.20))
        acc = np.ones(n)
        failed = np.zeros(n, dtype=bool)
        if not busy and g.random() < 0.004 and n > 1:
            failed[int(g.integers(0, n))] = True
        if not busy and g.random() < 0.002:
            acc[int(g.integers(0, n))] = 0.0
        if reg.get("fail_last") and n >= 6:
            failed[5:] = True
        acc[failed] = 0.0
        hsp = np.where(failed, 0.0, out["Bs"] / out["Hs"])
        lat = np.where(failed, 0.0, out["L"])
        rec = {"helion_speedup": [round(float(x), 4) for x in hsp],
               "helion_accuracy": [float(x) for x in acc],
               "helion_latency_ms": [round(float(x), 5) for x in lat]}
        if st.has_triton:
            rec["triton_speedup"] = [round(float(x), 4) for x in out["Bs"] / out["Ts"]]
        if st.has_tc:
            rec["torch_compile_speedup"] = [round(float(x), 4) for x in out["Bs"] / out["Cs"]]
        if st.has_compile and reg.get("compile") and not failed.any():
            rec["helion_compile_time_s"] = [round(float(x), 2) for x in out["K"]]
        return rec

    def _dash_artifacts(self, run: dict) -> dict:
        """{artifact dir: helionbench.json records} of one Benchmark Dispatch run."""
        i = run["night"]
        if run["kind"] == "nightly":
            series = self.dash[i]
        else:
            series = dash_series(self.F.at(run.get("base", run["full_sha"])))
        g = rng("meas", self.seed, run["run_id"])
        out_runners = self.plan.out_d.get(i, set()) if i is not None else set()
        groups: dict = {}
        for key in sorted(series):
            s = series[key]
            if run["kind"] != "nightly":
                if key[0] not in run["platforms"] or g.random() > run["frac"]:
                    continue
            if s["reg"].get("runner") in out_runners:
                continue
            job = s["job"]
            busy = i is not None and i in self.plan.busy.get(("dashboard", *key), set())
            if run["kind"] == "nightly" and not busy and g.random() < 0.003:
                continue  # the kernel crashed before writing anything
            groups.setdefault((job.alias, job.suite, job.backend, key[0]), []).append(key)
        arts = {}
        for (alias, suite, backend, ps), keys in sorted(groups.items()):
            pf = math.exp(rng("pf", self.seed, run["run_id"], ps).normal(0, 0.004))
            if suite in ("tpu", "tpu_bridge"):
                shards = [keys]
            else:
                nsh = min(len(keys), {"linattn": 9}.get(suite, 6 if backend == "cute" else 13))
                shards = [keys[j::nsh] for j in range(nsh)]
            for sh in shards:
                recs = []
                for key in sh:
                    s = series[key]
                    kg = rng("mk", self.seed, run["run_id"], key)
                    vals = self._dash_measure(i if run["kind"] == "nightly" else None, key, s, kg, pf,
                                              1.0 if run["kind"] == "nightly" else run["custom"],
                                              prev=self._prev_night(run["date"]))
                    shapes = list(s["reg"]["shapes"])
                    if suite == "linattn":
                        info = {"device": DEVICE[ps], "backend": "triton", "baseline_label": "FLA"}
                    elif suite == "tpu":
                        info = {"device": DEVICE["tpu"]}
                    elif suite == "tpu_bridge":
                        info = {"device": DEVICE["tpu"], "backend": "pallas"}
                    else:
                        info = {"device": DEVICE[ps], "backend": backend}
                    for mname, v in vals.items():
                        recs.append({"benchmark": {"name": "Helion Benchmark", "extra_info": info},
                                     "model": {"name": key[1]}, "metric": {"name": mname, "benchmark_values": v},
                                     "shape": shapes})
                name = f"benchmark-results-{alias}" if suite in ("tpu", "tpu_bridge") else \
                    f"benchmark-results-{alias}-{','.join(k[1].removesuffix('-bwd') if suite == 'linattn' else k[1] for k in sh)}"
                if name in arts:
                    name += f"-{len(arts)}"
                arts[name] = (recs, "helionbench.json")
        return arts

    def _pre_artifacts(self, run: dict) -> dict:
        i = run["night"]
        if run["kind"] == "nightly":
            series = self.pre[i]
            facts = self.F.at(self.G[i]["p_sha"])
        else:
            facts = self.F.at(run["full_sha"])
            series = pre_series(facts)
        pt = facts.pretuned
        if not pt:
            return {}
        g = rng("pmeas", self.seed, run["run_id"])
        out_alias = self.plan.out_p.get(i, set()) if i is not None else set()
        arts = {}
        for alias in ("h100", "b200"):
            if run["kind"] == "nightly" and pt.get("flags") and f"run_{alias}" not in pt["flags"]:
                continue
            if run["kind"] != "nightly" and alias not in run["platforms"]:
                continue
            if alias in out_alias:
                continue
            dev, cc = PRE_DEVICE[alias]
            pf = math.exp(g.normal(0, 0.004))
            recs = []
            for k in pt["order"]:
                info = pt["kernels"].get(k, {})
                hw = sorted({"sm90": "h100", "sm100": "b200"}.get(sm, sm) for sm in info.get("cfg", {}))
                rec = {"kernel": k, "pretuned_hardware": hw}
                key = (alias, k)
                if key not in series:
                    rec["skipped"] = f"pretuned for {hw}; current hardware is {alias}"
                elif run["kind"] != "nightly" and g.random() > run["frac"]:
                    continue
                else:
                    s = series[key]
                    busy = i is not None and i in self.plan.busy.get(("pretuned", *key), set())
                    ext = "grouped" in k and g.random() < 0.06
                    if (ext or (not busy and g.random() < 0.004)) and not busy:
                        rec["error"] = ("RuntimeError: HELION_CUTLASS_GROUPED_GEMM_SOURCE is not set" if ext else
                                        "RuntimeError: CUDA error: an illegal memory access was encountered")
                    else:
                        rec.update(self._pre_measure(i, key, s, g, pf, run))
                rec["device"] = dev
                rec["compute_capability"] = cc
                recs.append(rec)
            arts[f"pretuned-results-{alias}"] = (recs, "pretuned-bench.json")
        return arts

    def _pre_measure(self, i, key, s, g, pf, run) -> dict:
        P = self.plan
        reg = dict(s["reg"])
        if i is not None and i in P.vllm_missing:
            reg["baselines"] = tuple(b for b in reg["baselines"] if b != "vllm")
        eff = P.eff_at("p", key, i) if i is not None else {}
        H, Bs = ptrue(self.seed, P.pst(key), reg, eff)
        st = P.pst(key)
        sig = st.sigma
        sc = P.scatter.get(("pretuned", *key))
        if sc and i is not None and sc[0] <= i < sc[1]:
            sig *= sc[2]
        n = len(H)
        H = H * pf * np.exp(g.normal(0, sig, n) + g.normal(0, 0.4 * sig)) * (run.get("custom", 1.0))
        Bs = {b: t * pf * np.exp(g.normal(0, sig, n) + g.normal(0, 0.4 * sig)) for b, t in Bs.items()}
        busy = i is not None and i in P.busy.get(("pretuned", *key), set())
        if not busy and g.random() < 0.01:
            H = H * float(g.uniform(1.15, 1.2))
        m = psummarize(H, Bs)
        out = dict(helion_wins=m["helion_wins"], total=m["total"], geomean=round(m["geomean"], 4),
                   best_speedup=round(m["best_speedup"], 4), cudagraph=bool(reg["cg"]))
        if not s["single"]:
            out["baselines"] = m["baselines"]
        return out

    # ------------------------------------------------------------------ documents
    def _write(self, root: Path, run: dict, arts: dict):
        for name, (recs, fname) in arts.items():
            d = root / run["run_id"] / name
            d.mkdir(parents=True, exist_ok=True)
            (d / fname).write_text(json.dumps(recs))

    @staticmethod
    def _meta(r: dict) -> dict:
        return {"run_id": r["run_id"], "sha": r["full_sha"][:8], "full_sha": r["full_sha"], "date": _iso(r["date"]),
                "branch": r["branch"], "is_nightly": r["is_nightly"]}

    def _build_docs(self):
        dmod = _import_builder(self.repo, "build_dashboard_data")
        pmod = _import_builder(self.repo, "build_pretuned_dashboard_data")
        tmp = self.workdir / "_ci"
        docs = self.workdir / "docs"
        docs.mkdir(exist_ok=True)
        prev_d, prev_p = None, None
        done_d, done_p = set(), set()
        for L in range(TOTAL - self.off):
            i = self.off + L
            G = self.G[i]
            # --- dashboard
            wf = tmp / "wf.yml"
            tmp.mkdir(exist_ok=True)
            wf.write_text(self.blobs.text(G["sha"], DISPATCH) or "")
            active = dmod.get_active_platforms(str(wf))
            expected = dmod.get_expected_kernels_per_platform(str(wf))
            runs = [r for r in self.druns if r["date"] <= G["date"]]
            cache = tmp / f"cache-d{L}"
            for r in runs:
                if r["run_id"] not in done_d:
                    self._write(cache, r, self._dash_artifacts(r))
                    done_d.add(r["run_id"])
            cache.mkdir(parents=True, exist_ok=True)
            dmod._bwr_clock.now = G["date"] + timedelta(hours=3)
            doc = dmod.build_dashboard_data(str(cache), [self._meta(r) for r in runs],
                                            json.loads(prev_d) if prev_d else {}, active, expected)
            prev_d = json.dumps(doc, indent=2)
            self._docs["dashboard"].append(self._store(docs / f"d{L}.json.z", prev_d))
            shutil.rmtree(cache, ignore_errors=True)
            # --- pretuned
            pf = self.F.at(G["p_sha"]).pretuned
            if not pf:
                self._docs["pretuned"].append(None)
                continue
            wf.write_text(self.blobs.text(G["p_sha"], P_DISPATCH) or "")
            pactive = pmod.get_active_platforms(str(wf))
            pruns = [r for r in self.pruns if r["date"] <= G["p_date"]]
            cache = tmp / f"cache-p{L}"
            for r in pruns:
                if r["run_id"] not in done_p:
                    self._write(cache, r, self._pre_artifacts(r))
                    done_p.add(r["run_id"])
            cache.mkdir(parents=True, exist_ok=True)
            pmod._bwr_clock.now = G["p_date"] + timedelta(hours=3)
            pdoc = pmod.build_dashboard_data(str(cache), [self._meta(r) for r in pruns],
                                             json.loads(prev_p) if prev_p else {}, pactive)
            prev_p = json.dumps(pdoc, indent=2)
            self._docs["pretuned"].append(self._store(docs / f"p{L}.json.z", prev_p))
            shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)

    @staticmethod
    def _store(path: Path, text: str) -> Path:
        path.write_bytes(zlib.compress(text.encode(), 3))
        return path

    # ------------------------------------------------------------------ interface
    def night_of(self, run_id) -> int | None:
        return self._night_of.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        seen = set()
        for i in range(self.off, TOTAL):
            seen.update(("d", *k) for k in self.dash[i])
            seen.update(("p", *k) for k in self.pre[i])
        return len(seen)

    def dashboard_bytes(self, n: int) -> bytes:
        return zlib.decompress(self._docs["dashboard"][n].read_bytes())

    def pretuned_bytes(self, n: int) -> bytes | None:
        p = self._docs["pretuned"][n]
        return None if p is None else zlib.decompress(p.read_bytes())

    def close(self):
        try:
            self.blobs.close()
        except Exception:
            pass
