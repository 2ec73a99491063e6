"""Blind evaluation worlds (set "m"): simulated Helion nightlies on the real history of ``main``.

See README.md in this folder. Public entry point: :func:`build_world`.
"""
from __future__ import annotations

import importlib.util
import json
import math
import shutil
import subprocess
import sys
import tempfile
import types
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import repofacts as F

WINDOW_END = {121: "2026-03-31", 122: "2026-06-20", 123: "2026-08-18"}
N_NIGHTS = 150
DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7x"}
TRITON_GPU = ("h100", "b200", "mi325x", "mi350x")
MAXS = 24
SPEEDUP_METRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")


def h32(*parts) -> int:
    return zlib.crc32("|".join(str(p) for p in parts).encode())


def rng_for(seed: int, *parts) -> np.random.Generator:
    return np.random.default_rng([seed, h32(*parts)])


def geo(xs) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


# ------------------------------------------------------------------ series model

@dataclass
class Series:
    source: str
    plat: str
    kernel: str
    fam: str
    tb: np.ndarray = None   # baseline time per shape (ms), speedup timer
    rh: np.ndarray = None   # helion speedup per shape (true)
    rt: np.ndarray = None
    rc: np.ndarray = None
    lat: float = 1.0        # do_bench / cudagraph-timer ratio for Helion
    sig: float = 0.01       # per-timer scatter
    ct: np.ndarray = None   # compile time per shape (s)
    nocg: dict = None       # factors when timed without CUDA graphs
    pb: dict = None         # pretuned: baseline name -> time ratio per shape (baseline/helion)

    @property
    def key(self):
        return (self.source, self.plat, self.kernel)


def make_series(seed, source, plat, kernel, fam) -> Series:
    g = rng_for(seed, "series", source, plat, kernel)
    s = Series(source, plat, kernel, fam)
    n = MAXS
    size = np.sort(g.uniform(0, 1, n))
    s.tb = np.exp(np.log(0.004) + size * g.uniform(4.0, 7.5))
    level = math.exp(g.normal(0.12, 0.3))
    trend = g.uniform(-0.7, 0.7)
    s.rh = level * np.exp(trend * (size - 0.5) + g.normal(0, 0.08, n))
    s.rt = math.exp(g.normal(0.0, 0.2)) * np.exp(g.normal(0, 0.08, n))
    s.rc = math.exp(g.normal(0.1, 0.2)) * np.exp(g.normal(0, 0.08, n))
    s.lat = math.exp(g.uniform(0.0, 0.25))
    s.sig = float(g.choice([0.005, 0.008, 0.01, 0.012, 0.015, 0.02, 0.03], p=[.1, .2, .25, .2, .12, .08, .05]))
    s.ct = np.exp(g.uniform(math.log(4), math.log(240))) * np.exp(g.normal(0, 0.3, n))
    w = np.clip((s.tb.min() / s.tb) ** 0.4, 0.15, 1.0)
    s.nocg = {"h": 1 + g.uniform(0.25, 0.5) * w, "b": 1 + g.uniform(0.05, 0.15) * w,
              "t": 1 + g.uniform(0.15, 0.35) * w, "c": 1 + g.uniform(0.1, 0.3) * w}
    if source == "pretuned":
        s.pb = {}
    return s


def era_factor(seed, s: Series, what: str, value, lo=0.0, hi=0.15) -> float:
    """A deterministic factor for one value of a repo fact (a pin, an image, an env, a config blob)."""
    if value is None:
        return 1.0
    g = rng_for(seed, "era", what, s.source, s.plat, s.kernel, repr(value))
    return float(math.exp(g.choice([-1, 1]) * g.uniform(lo, hi)))


# ------------------------------------------------------------------ planted effects

@dataclass
class Effect:
    eid: str
    members: dict            # series key -> {comp: factor}
    start: int
    end: int | None = None   # first night no longer affected
    nights: tuple = ()       # explicit nights (blips), overrides start/end

    def active(self, n: int) -> bool:
        if self.nights:
            return n in self.nights
        return self.start <= n and (self.end is None or n < self.end)


class World:
    def __init__(self, seed: int, workdir: Path, nights: int | None):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)  # the harness passes a fresh folder
        self.tmp = Path(tempfile.mkdtemp(prefix=f"bwm{seed}-", dir=self.workdir))
        self.repo = self.tmp / "helion"
        subprocess.run(["git", "clone", "-q", str(bundle_path()), str(self.repo)], check=True,
                       capture_output=True)
        subprocess.run(["git", "-C", str(self.repo), "checkout", "-q", "-B", "main", "origin/main"],
                       check=True, capture_output=True)
        self.R = F.Repo(self.repo)
        end = datetime.fromisoformat(WINDOW_END[seed]).replace(hour=8, tzinfo=timezone.utc)
        self.N = N_NIGHTS
        self.start = 0 if nights is None else max(0, N_NIGHTS - nights)
        g = rng_for(seed, "runs")
        self.dates, self.shas, self.run_ids, self.p_run_ids = [], [], [], []
        rid = 24_000_000_000 + (seed - 120) * 900_000_000
        for i in range(N_NIGHTS):
            d = end - timedelta(days=N_NIGHTS - 1 - i) + timedelta(seconds=int(g.integers(5, 600)))
            self.dates.append(d)
            self.shas.append(self.R.commits[self.R.head_at(d)].sha)
            rid += int(g.integers(40_000, 90_000))
            self.run_ids.append(str(rid))
            self.p_run_ids.append(str(rid + int(g.integers(3, 900))))
        self.facts = [F.gpu_facts(self.R, s) for s in self.shas]
        self.pfacts = [F.pretuned_facts(self.R, s) for s in self.shas]
        self.series: dict = {}
        self.effects: list[Effect] = []
        self.scatter: dict = {}   # key -> (from night, sigma)
        self.outage: dict = {}    # plat -> set of nights
        self.labels_full: list[dict] = []
        self._plan()
        self._build_docs()

    # ---------------------------------------------------------- which series run on night n
    def present(self, n: int) -> dict:
        out = {}
        for plat, p in self.facts[n]["platforms"].items():
            for k, info in p["series"].items():
                if info["shapes"] <= 0:
                    continue
                out[("dashboard", plat, k)] = info
        pf = self.pfacts[n]
        if pf:
            for (hw, k), info in pf["series"].items():
                out[("pretuned", hw, k)] = info
        return out

    def S(self, key) -> Series:
        s = self.series.get(key)
        if s is None:
            fam = "pretuned" if key[0] == "pretuned" else (
                "tpu" if key[1] == "tpu" else "linattn" if self._is_linattn(key) else "gpu")
            s = self.series[key] = make_series(self.seed, key[0], key[1], key[2], fam)
        return s

    def _is_linattn(self, key) -> bool:
        for f in self.facts:
            p = f["platforms"].get(key[1])
            if p and key[2] in p["series"]:
                return p["series"][key[2]]["fam"] == "linattn"
        return False

    # ---------------------------------------------------------- noiseless component times
    def components(self, key, n: int, use_facts: int | None = None, exclude=()):
        """(tb, tt, tc, th, thl, ct) per shape, or pretuned (th, {baseline: t}) without noise."""
        s = self.S(key)
        fn = n if use_facts is None else use_facts
        info = self.present(fn).get(key) or self.present(n).get(key)
        if info is None:
            return None
        plat = key[1]
        if s.source == "pretuned":
            pf = self.pfacts[fn]
            m = self.S(key)
            k = key[2]
            ns = 4 + h32(self.seed, "pshapes", k) % 9
            th = m.tb[:ns] / m.rh[:ns]
            th = th * era_factor(self.seed, m, "config", info["config"], 0.05, 0.18)
            tbs = {}
            for b in info["baselines"]:
                gb = rng_for(self.seed, "pbase", plat, k, b)
                tbs[b] = m.tb[:ns] * math.exp(gb.normal(0, 0.15)) * np.exp(gb.normal(0, 0.05, ns))
            if not info["cudagraph"]:
                th = th * m.nocg["h"][:ns]
                tbs = {b: t * m.nocg["b"][:ns] for b, t in tbs.items()}
            env = era_factor(self.seed, m, "ptimer", pf["bench"], 0.04, 0.1)
            pin = era_factor(self.seed, m, "ppins", pf["pins"], 0.0, 0.1)
            tbs = {b: t * env * (pin if b.startswith("torch") else 1.0) for b, t in tbs.items()}
            run = pf["runners"].get(plat)
            hw = era_factor(self.seed, m, "prunner", run, 0.0, 0.05)
            th = th * hw
            for e in self.effects:
                if e.eid in exclude or key not in e.members or not e.active(n):
                    continue
                th = th * e.members[key].get("h", 1.0)
                tbs = {b: t * e.members[key].get("b", 1.0) for b, t in tbs.items()}
            return th, tbs
        ns = min(int(info["shapes"]), MAXS)
        tb = s.tb[:ns].copy()
        th = tb / s.rh[:ns]
        tt = tb / s.rt[:ns]
        tc = tb / s.rc[:ns]
        ct = s.ct[:ns].copy()
        f = self.facts[fn]
        if s.fam == "gpu" and not info["cudagraph"]:
            th, tb, tt, tc = th * s.nocg["h"][:ns], tb * s.nocg["b"][:ns], tt * s.nocg["t"][:ns], tc * s.nocg["c"][:ns]
        if s.fam in ("gpu", "linattn"):
            pin = f["bench"]["pins"]
            fb = era_factor(self.seed, s, "pin_b", pin, 0.0, 0.14)
            tb, tt, tc = tb * fb, tt * fb * era_factor(self.seed, s, "pin_t", pin, 0.0, 0.06), \
                tc * fb * era_factor(self.seed, s, "pin_c", pin, 0.0, 0.08)
        if s.fam == "gpu":
            env = f["bench"]["autotune_env"]
            th = th * era_factor(self.seed, s, "at_h", env, 0.0, 0.09)
            ct = ct * era_factor(self.seed, s, "at_ct", env, 0.3, 0.9)
        p = f["platforms"].get(plat, {})
        machine = (p.get("runner"), p.get("image"), p.get("runtime"))
        common = era_factor(self.seed, Series("", plat, "", ""), "machine", machine, 0.05, 0.2)
        hx = era_factor(self.seed, s, "machine_h", machine, 0.0, 0.07)
        tb, tt, tc, th = tb * common, tt * common, tc * common, th * common * hx
        thl = th * s.lat
        if s.fam == "gpu":
            thl = thl * era_factor(self.seed, s, "latmode", f["bench"]["latency_mode"], 0.1, 0.25)
            if not info["cudagraph"]:
                thl = thl / s.nocg["h"][:ns]  # do_bench does not change with the speedup timer's flag
        if s.fam == "linattn":
            thl = th.copy()  # run_linattn times one way: latency is the speedup's own timer
        for e in self.effects:
            if e.eid in exclude or key not in e.members or not e.active(n):
                continue
            c = e.members[key]
            th = th * c.get("h", 1.0)
            thl = thl * c.get("hl", c.get("h", 1.0))
            tb, tt, tc = tb * c.get("b", 1.0), tt * c.get("t", c.get("b", 1.0)), tc * c.get("c", c.get("b", 1.0))
            ct = ct * c.get("ct", 1.0)
        return tb, tt, tc, th, thl, ct

    def true_speedup(self, key, n, use_facts=None, exclude=()) -> float:
        c = self.components(key, n, use_facts, exclude)
        if c is None:
            return 0.0
        if key[0] == "pretuned":
            th, tbs = c
            best = np.min(np.stack(list(tbs.values())), axis=0)
            return round(geo(best / th), 4)
        tb, tt, tc, th, thl, ct = c
        return round(geo(tb / th), 4)

    def true_metrics(self, key, n, use_facts=None, exclude=()) -> dict:
        c = self.components(key, n, use_facts, exclude)
        if c is None:
            return {}
        if key[0] == "pretuned":
            th, tbs = c
            best = np.min(np.stack(list(tbs.values())), axis=0)
            return {"geomean": geo(best / th)}
        tb, tt, tc, th, thl, ct = c
        return {"helion_speedup_geomean": geo(tb / th), "triton_speedup_geomean": geo(tb / tt),
                "torch_compile_speedup_geomean": geo(tb / tc), "helion_latency_avg_ms": float(np.mean(thl)),
                "compile_time_geomean_s": geo(ct)}

    # ---------------------------------------------------------- planning
    def _plan(self):
        from .plan import plan_world
        plan_world(self)

    # ---------------------------------------------------------- measured values
    def measure(self, key, n, run_tag="nightly"):
        s = self.S(key)
        c = self.components(key, n)
        if c is None:
            return None
        g = rng_for(self.seed, "noise", run_tag, *key, n)
        sig = s.sig
        sc = self.scatter.get(key)
        if sc and n >= sc[0]:
            sig = sc[1]
        pn = rng_for(self.seed, "platnight", key[1], run_tag, n).normal(0, 0.005)

        def noisy(t):
            t = t * np.exp(g.normal(0, sig, t.shape) + pn)
            out = g.random(t.shape) < 0.01
            return np.where(out, t * g.uniform(1.15, 1.20, t.shape), t)

        if key[0] == "pretuned":
            th, tbs = c
            th = noisy(th)
            tbs = {b: noisy(t) for b, t in tbs.items()}
            best = np.min(np.stack(list(tbs.values())), axis=0)
            sp = best / th
            rec = {"helion_wins": int(np.sum(sp > 1.0)), "total": int(len(sp)), "geomean": geo(sp),
                   "best_speedup": float(np.max(sp)),
                   "baselines": {b: {"wins": int(np.sum(t / th > 1.0)), "total": int(len(th)),
                                     "geomean": round(geo(t / th), 4), "best_speedup": round(float(np.max(t / th)), 4)}
                                 for b, t in tbs.items()}}
            return rec
        tb, tt, tc, th, thl, ct = c
        tb_m = noisy(tb)
        th_m, tt_m, tc_m = noisy(th), noisy(tt), noisy(tc)
        thl_m = noisy(thl) if s.fam != "linattn" else th_m
        ct_m = ct * np.exp(g.normal(0, 0.05, ct.shape))
        acc = np.ones(len(tb))
        hs = tb_m / th_m
        if g.random() < 0.004:  # one shape fails to run
            j = int(g.integers(len(tb)))
            hs[j] = 0.0
            acc[j] = 0.0
        elif g.random() < 0.004:  # one shape fails accuracy
            acc[int(g.integers(len(tb)))] = 0.0
        return dict(helion_speedup=hs, triton_speedup=tb_m / tt_m, torch_compile_speedup=tb_m / tc_m,
                    helion_latency_ms=thl_m, helion_compile_time_s=ct_m, helion_accuracy=acc)

    # ---------------------------------------------------------- documents
    def _builder(self, name):
        path = self.repo / ".github" / "dashboard" / name
        spec = importlib.util.spec_from_file_location(f"_bwm_{name[:-3]}_{self.seed}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def _build_docs(self):
        dash = self._builder("build_dashboard_data.py")
        pre = self._builder("build_pretuned_dashboard_data.py")
        clock = {"now": None}

        class _DT(datetime):
            @classmethod
            def now(cls, tz=None):
                return clock["now"]

        shim = types.SimpleNamespace(datetime=_DT, timezone=timezone, timedelta=timedelta)
        dash.datetime = shim
        pre.datetime = shim
        self._dash: list[bytes] = []
        self._pre: list[bytes | None] = []
        runs_meta, p_runs_meta = [], []
        prev, pprev = None, None
        cache = self.tmp / "cache"
        g = rng_for(self.seed, "manual")
        for n in range(self.start, self.N):
            clock["now"] = self.dates[n] + timedelta(hours=3)
            d, sha = self.dates[n], self.shas[n]
            meta = dict(run_id=self.run_ids[n], sha=sha[:8], full_sha=sha,
                        date=d.strftime("%Y-%m-%dT%H:%M:%SZ"), branch="main", is_nightly=True)
            fresh = [(meta, "nightly")]
            if n > self.start and g.random() < 0.06:  # a manual dispatch earlier that day (not a nightly)
                md = d - timedelta(hours=int(g.integers(2, 7)))
                msha = self.R.commits[self.R.head_at(md)].sha
                mm = dict(run_id=str(int(self.run_ids[n]) - int(g.integers(100, 30000))), sha=msha[:8],
                          full_sha=msha, date=md.strftime("%Y-%m-%dT%H:%M:%SZ"),
                          branch="main" if g.random() < 0.7 else "dev/bench-try", is_nightly=False)
                fresh.insert(0, (mm, "manual"))
            for m, tag in fresh:
                runs_meta.append(m)
                self._write_dash_artifacts(cache / m["run_id"], n, tag)
            disp = self.repo / "_bwm_dispatch.yml"
            disp.write_text(self.R.text(sha, F.DISPATCH))
            active = dash.get_active_platforms(str(disp))
            expected = dash.get_expected_kernels_per_platform(str(disp))
            existing = json.loads(prev) if prev else None
            doc = dash.build_dashboard_data(str(cache), list(runs_meta), existing, active, expected)
            prev = json.dumps(doc).encode()
            self._dash.append(prev)
            shutil.rmtree(cache, ignore_errors=True)
            # pretuned suite
            pf = self.pfacts[n]
            if pf is None:
                self._pre.append(None)
                continue
            pd = d + timedelta(minutes=30)
            pm = dict(run_id=self.p_run_ids[n], sha=sha[:8], full_sha=sha,
                      date=pd.strftime("%Y-%m-%dT%H:%M:%SZ"), branch="main", is_nightly=True)
            p_runs_meta.append(pm)
            self._write_pre_artifacts(cache / pm["run_id"], n)
            pdisp = self.repo / "_bwm_pdispatch.yml"
            pdisp.write_text(self.R.text(sha, F.P_DISPATCH))
            clock["now"] = pd + timedelta(hours=3)
            pexisting = json.loads(pprev) if pprev else None
            pdoc = pre.build_dashboard_data(str(cache), list(p_runs_meta), pexisting,
                                            pre.get_active_platforms(str(pdisp)))
            pprev = json.dumps(pdoc).encode()
            self._pre.append(pprev)
            shutil.rmtree(cache, ignore_errors=True)
        for f in ("_bwm_dispatch.yml", "_bwm_pdispatch.yml"):
            (self.repo / f).unlink(missing_ok=True)

    def _write_dash_artifacts(self, run_dir: Path, n: int, tag: str):
        by_file: dict = {}
        g = rng_for(self.seed, "missing", tag, n)
        for key, info in sorted(self.present(n).items()):
            if key[0] != "dashboard":
                continue
            plat, k = key[1], key[2]
            if n in self.outage.get(plat, ()):
                continue
            if tag == "manual" and plat not in ("b200", "h100"):
                continue
            if g.random() < 0.004:  # the kernel's job died: no record this night
                continue
            vals = self.measure(key, n, tag)
            if vals is None:
                continue
            s = self.S(key)
            suffix = "linattn" if s.fam == "linattn" else "all"
            extra = {"device": DEVICE.get(plat, plat)}
            if plat == "b200_cute":
                extra["backend"] = "cute"
            elif s.fam == "linattn":
                extra.update(backend="triton", baseline_label="FLA")
            elif s.fam == "gpu":
                extra["backend"] = "triton"
            names = self._shape_names(key, info, len(vals["helion_speedup"]))
            recs = by_file.setdefault((plat, suffix), [])
            for metric, arr in vals.items():
                if metric == "triton_speedup" and s.fam in ("tpu", "linattn"):
                    continue
                if metric == "torch_compile_speedup" and s.fam == "linattn":
                    continue
                if metric == "helion_compile_time_s" and s.fam == "linattn":
                    continue
                recs.append({"benchmark": {"name": "helion", "extra_info": extra},
                             "model": {"name": k}, "shape": names,
                             "metric": {"name": metric,
                                        "benchmark_values": [round(float(v), 6) for v in arr]}})
        for (plat, suffix), recs in by_file.items():
            alias = "b200_cute" if plat == "b200_cute" else plat
            d = run_dir / f"benchmark-results-{alias}-{suffix}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "helionbench.json").write_text(json.dumps(recs))

    def _shape_names(self, key, info, ns):
        if "shape_names" in info:
            return list(info["shape_names"])[:ns] + [f"shape_{i}" for i in range(len(info["shape_names"]), ns)]
        g = rng_for(self.seed, "shapes", key[2])
        dims = sorted(int(2 ** x) for x in g.uniform(7, 14, MAXS))
        return [f"({dims[i]}, {int(2 ** (8 + i % 5))})" for i in range(ns)]

    def _write_pre_artifacts(self, run_dir: Path, n: int):
        by_plat: dict = {}
        for key, info in sorted(self.present(n).items()):
            if key[0] != "pretuned":
                continue
            plat, k = key[1], key[2]
            rec = {"kernel": k, "pretuned_hardware": [plat]}
            g = rng_for(self.seed, "pfail", plat, k, n)
            if g.random() < 0.006:
                rec["error"] = "RuntimeError: CUDA error: an illegal memory access was encountered"
            else:
                m = self.measure(key, n)
                rec.update(helion_wins=m["helion_wins"], total=m["total"], geomean=m["geomean"],
                           best_speedup=m["best_speedup"], cudagraph=bool(info["cudagraph"]),
                           baselines=m["baselines"])
            rec["device"] = DEVICE.get(plat, plat)
            rec["compute_capability"] = info["sm"]
            by_plat.setdefault(plat, []).append(rec)
        for plat, recs in by_plat.items():
            d = run_dir / f"pretuned-results-{plat}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))


class BuiltWorld:
    def __init__(self, w: World):
        self._w = w
        self.repo = w.repo
        self.seed = w.seed
        idx = list(range(w.start, w.N))
        self.nights = [Night(run_id=w.run_ids[i], full_sha=w.shas[i], sha=w.shas[i][:8], date=w.dates[i],
                             p_run_id=w.p_run_ids[i] if w.pfacts[i] else None,
                             p_full_sha=w.shas[i] if w.pfacts[i] else None) for i in idx]
        self._night = {}
        for j, i in enumerate(idx):
            self._night[w.run_ids[i]] = j
            if w.pfacts[i]:
                self._night[w.p_run_ids[i]] = j
        self.labels = []
        for L in w.labels_full:
            if L["first_bad"] < w.start + 1:
                continue
            rid = (lambda i: (w.p_run_ids[i] if L["source"] == "pretuned" else w.run_ids[i]))
            members = tuple(sorted((m[1], m[2]) for m in L["members"]))
            if not members:
                continue
            self.labels.append(Label(
                id=L["id"], source=L["source"], cause=L["cause"], kind=L["kind"], direction=L["direction"],
                members=members, metrics=tuple(L["metrics"]), first_bad_run_id=rid(L["first_bad"]),
                last_good_run_id=rid(L["first_bad"] - 1),
                end_run_id=rid(L["end"]) if L.get("end") is not None else None,
                culprit_sha=L.get("culprit"), change_sha=L.get("change"),
                honest_speedup=dict(sorted(L["honest"].items())), note=L["note"]))
        keys = set()
        for i in idx:
            keys.update(w.present(i).keys())
        self._series = len(keys)
        self._dash = w._dash
        self._pre = w._pre

    def dashboard_bytes(self, n: int) -> bytes:
        return self._dash[n]

    def pretuned_bytes(self, n: int) -> bytes | None:
        return self._pre[n]

    def night_of(self, run_id) -> int | None:
        return self._night.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        return self._series

    def close(self):
        shutil.rmtree(self._w.tmp, ignore_errors=True)


def build_world(seed: int, workdir: Path, nights: int | None = None) -> BuiltWorld:
    if seed not in WINDOW_END:
        raise ValueError(f"unknown seed {seed}; known: {sorted(WINDOW_END)}")
    return BuiltWorld(World(seed, Path(workdir), nights))
