"""Blind evaluation set P: labeled nightly worlds on the real Helion history (see README.md)."""
from __future__ import annotations

import importlib.util
import json
import re
import zlib
import math
import random
import shutil
import subprocess
import types
import datetime as _dtmod
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import repo as R

WINDOW_END = {151: "2026-02-01", 152: "2026-04-14", 153: "2026-08-14"}
N_SIM = 150
THR = 0.07  # a metric "moves" when its noiseless value changes by more than this

DISPATCH = ".github/workflows/benchmark_dispatch.yml"
NIGHTLY = ".github/workflows/benchmark_nightly.yml"
BENCH = ".github/workflows/benchmark.yml"
RUNPY = "benchmarks/run.py"
LINATTN = "benchmarks/run_linattn.py"
P_DISPATCH = ".github/workflows/benchmark_pretuned_dispatch.yml"
P_NIGHTLY = ".github/workflows/benchmark_pretuned_nightly.yml"
P_BENCH = ".github/workflows/benchmark_pretuned.yml"
P_RUN = "pretuned_kernels/run.py"
P_TIMER = "pretuned_kernels/_bench.py"

DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi325x": "AMD Instinct MI325X", "mi350x": "AMD Instinct MI350X", "tpu": "TPU v6 lite"}
SM = {"h100": "sm90", "b200": "sm100"}
DASH_METRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
                "helion_latency_avg_ms", "compile_time_geomean_s")
PRE_METRICS = ("geomean", "best_speedup")


def _rng(*parts) -> random.Random:
    return random.Random("|".join(str(p) for p in parts))


def _gm(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def _step(r: random.Random, lo=0.10, hi=0.25, up=0.5):
    f = 1 + r.uniform(lo, hi)
    return f if r.random() < up else 1 / f


# ---------------------------------------------------------------- configuration read at a commit

_CFG: dict = {}


def dash_config(g: R.Git, sha: str) -> dict:
    if ("d", sha) not in _CFG:
        _CFG[("d", sha)] = _dash_config(g, sha)
    return _CFG[("d", sha)]


def pre_config(g: R.Git, sha: str) -> dict | None:
    if ("p", sha) not in _CFG:
        _CFG[("p", sha)] = _pre_config(g, sha)
    return _CFG[("p", sha)]


def _dash_config(g: R.Git, sha: str) -> dict:
    oid, txt = g.blob(sha, DISPATCH)
    disp = R._cached("disp", oid, R.dispatch_info, txt)
    noid, ntxt = g.blob(sha, NIGHTLY)
    runs, nenv = R.nightly_inputs(ntxt)
    boid, btxt = g.blob(sha, BENCH)
    by = R._cached("bench", boid, R.bench_yml, btxt)
    roid, rtxt = g.blob(sha, RUNPY)
    km = R._cached("km", roid, R.kernel_mappings, rtxt)
    loid, ltxt = g.blob(sha, LINATTN)
    lshapes = R._cached("lin", loid, R.linattn_shapes, ltxt)
    aliases = disp["aliases"]
    if ntxt:
        enabled = [a for a in aliases if f"run_{a}" in runs]
    else:
        enabled = [a for a in aliases if disp["run_defaults"].get(f"run_{a}", True)]
    inp = disp["inputs"]
    gpu = inp.get("kernels") or by["kernels"] or ["vector_add", "vector_exp", "sum", "layer_norm", "softmax"]
    plat: dict[str, list] = {}
    for a in enabled:
        if a == "tpu_bridge" or a not in DEVICE:
            continue
        if a == "b200_cute":
            ks = inp.get("kernels_cute", [])
        elif a == "tpu":
            ks = inp.get("kernels_tpu", []) + (inp.get("kernels_tpu_bridge", []) if "tpu_bridge" in aliases else [])
        else:
            ks = list(gpu)
        plat[a] = list(dict.fromkeys(ks))
    lin = {}
    for p in ("h100", "b200"):
        if f"run_{p}_linattn" in runs and p in plat:
            vs = inp.get("kernels_linattn", [])
            lin[p] = [x for v in vs for x in (v, f"{v}-bwd")]
    return {"sha": sha, "disp_oid": oid, "disp_text": txt, "plat": plat, "lin": lin,
            "hw": {a: aliases[a] for a in plat}, "cg": by["cudagraph"], "lat": by["latency_mode"],
            "compile": by["compile"], "autotune": by["autotune"] + " " + nenv, "pins": by["pins"],
            "km": km, "lshapes": lshapes}


def _pre_config(g: R.Git, sha: str) -> dict | None:
    poid, ptxt = g.blob(sha, P_RUN)
    if not ptxt:
        return None
    doid, dtxt = g.blob(sha, P_DISPATCH)
    disp = R._cached("disp", doid, R.dispatch_info, dtxt)
    kernels = R._cached("pk", poid, R.pretuned_kernels, ptxt)
    kinfo = {}
    for k in kernels:
        koid, ktxt = g.blob(sha, f"pretuned_kernels/{k}/{k}.py")
        if not ktxt:
            continue
        names, cg = R._cached("pkf", koid, R.pretuned_kernel_file, ktxt)
        aot = {}
        for p, sm in SM.items():
            aoid, _ = g.blob(sha, f"pretuned_kernels/{k}/_helion_aot_{k}_cuda_{sm}.py")
            if aoid:
                aot[p] = aoid
        kinfo[k] = {"baselines": names or ("torch",), "cg": cg, "aot": aot}
    boid, btxt = g.blob(sha, P_BENCH)
    by = R._cached("bench", boid, R.bench_yml, btxt)
    toid, _ = g.blob(sha, P_TIMER)
    plats = [a for a in disp["aliases"] if a in SM]
    return {"sha": sha, "disp_oid": doid, "disp_text": dtxt, "plats": plats, "k": kinfo,
            "timer": toid, "pins": by["pins"], "hw": {a: disp["aliases"][a] for a in plats}}


# ---------------------------------------------------------------- the series model

class Series:
    def __init__(self, seed, src, plat, kernel, lin=False):
        self.key = (src, plat, kernel)
        self.src, self.plat, self.kernel, self.lin = src, plat, kernel, lin
        r = _rng(seed, "series", src, plat, kernel)
        kr = _rng(seed, "kernel", kernel)  # kernel traits shared across platforms
        self.n_default = kr.randint(5, 10)
        self.master = [f"[{2 ** kr.randint(8, 13)}, {2 ** kr.randint(8, 14)}]" for _ in range(14)]
        lvl_h = math.exp(kr.gauss(0.15, 0.3) + r.gauss(0, 0.15))
        lvl_t = math.exp(kr.gauss(0.0, 0.15) + r.gauss(0, 0.1))
        lvl_c = math.exp(kr.gauss(0.05, 0.15) + r.gauss(0, 0.1))
        self.tb = [math.exp(kr.uniform(math.log(0.004), math.log(3.0))) * r.uniform(0.8, 1.25) for _ in range(14)]
        self.rh = [lvl_h * math.exp(r.gauss(0, 0.12)) for _ in range(14)]
        self.rt = [lvl_t * math.exp(r.gauss(0, 0.08)) for _ in range(14)]
        self.rc = [lvl_c * math.exp(r.gauss(0, 0.08)) for _ in range(14)]
        self.comp = [r.uniform(4, 70) for _ in range(14)]
        self.sigma = r.uniform(0.005, 0.03)
        self.ovh = r.uniform(0.006, 0.02)  # launch overhead (ms) when not timed under CUDA graphs
        self.F = {"h": 1.0, "b": 1.0, "t": 1.0, "c": 1.0, "lat": 1.0, "comp": 1.0, "bl": {}}
        # pretuned: baseline times relative to torch
        self.bl_rel = {}
        self._r = r

    def bl_factor(self, name):
        if name not in self.bl_rel:
            self.bl_rel[name] = math.exp(_rng(self.key, "bl", name).gauss(-0.05, 0.12))
        return self.bl_rel[name]


def dash_struct(s: Series, cfg: dict, seed) -> tuple:
    """(cudagraph timed, shape indexes) of a dashboard series under cfg."""
    if s.lin:
        rr = _rng(seed, "linshapes", cfg["lshapes"], s.kernel)
        n = rr.randint(2, 6)
        return True, tuple(sorted(rr.sample(range(14), n)))
    rm, n = cfg["km"].get(s.kernel.replace("-bwd", "") if s.kernel not in cfg["km"] else s.kernel, (False, None))
    cg = cfg["cg"] and not rm and s.plat != "tpu"
    return cg, tuple(range(min(n or s.n_default, 14)))


def pre_struct(s: Series, pcfg: dict) -> tuple:
    ki = pcfg["k"][s.kernel]
    return ki["cg"], tuple(ki["baselines"])


def truth(s: Series, struct, F, E) -> dict:
    """Noiseless per-shape times and the headline metrics (F: config factors, E: planted factors)."""
    h = F["h"] * E.get("h", 1)
    if s.src == "dashboard":
        cg, idx = struct
        o = 0 if cg else s.ovh
        b = F["b"] * E.get("b", 1)
        rows = []
        for i in idx:
            tb = s.tb[i] * b
            th = s.tb[i] / s.rh[i] * h * E.get("hs", 1)
            tt = s.tb[i] / s.rt[i] * F["t"] * E.get("t", 1)
            tc = s.tb[i] / s.rc[i] * F["c"] * E.get("c", 1)
            lat = (s.tb[i] / s.rh[i] * h + 0.5 * s.ovh) * F["lat"] * E.get("lat", 1)
            rows.append((tb + o, th + 1.6 * o, tt + 1.2 * o, tc + 1.4 * o, lat, s.comp[i] * F["comp"]))
        m = {"helion_speedup_geomean": _gm([r[0] / r[1] for r in rows]),
             "triton_speedup_geomean": 0.0 if s.lin or s.plat == "tpu" else _gm([r[0] / r[2] for r in rows]),
             "torch_compile_speedup_geomean": 0.0 if s.lin else _gm([r[0] / r[3] for r in rows]),
             "helion_latency_avg_ms": sum(r[4] for r in rows) / len(rows),
             "compile_time_geomean_s": _gm([r[5] for r in rows])}
        return {"rows": rows, "idx": idx, "m": m}
    cg, names = struct
    o = 0 if cg else s.ovh
    rows = []
    for i in range(8):
        th = s.tb[i] / s.rh[i] * h + 1.5 * o
        bls = {n: s.tb[i] * s.bl_factor(n) * F["bl"].get(n, 1) * E.get("b", 1) + o for n in names}
        rows.append((th, bls))
    sp = [min(b.values()) / th for th, b in rows]
    return {"rows": rows, "names": names, "m": {"geomean": _gm(sp), "best_speedup": max(sp)}}


def moved(m0: dict, m1: dict) -> list:
    out = []
    for k, a in m0.items():
        b = m1.get(k)
        if a and b and abs(b / a - 1) > THR:
            out.append(k)
    return out


# ---------------------------------------------------------------- the world

class _FakeDT(_dtmod.datetime):
    now_value = None

    @classmethod
    def now(cls, tz=None):
        return cls.now_value


def _load_builder(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.datetime = types.SimpleNamespace(datetime=_FakeDT, timezone=_dtmod.timezone, timedelta=_dtmod.timedelta)
    return mod


def _feed(doc: dict) -> dict:
    """The builder strips `per_shape` from the cached history entries it is fed (CI feeds it a freshly
    fetched copy); give it copies of those entries so a document, once published, never changes."""
    return {"summary": [{**e, "history": [dict(h) if "per_shape" in h else h for h in e["history"]]}
                        for e in doc.get("summary", [])], "runs": doc.get("runs", [])}


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


class World:
    def __init__(self, seed: int, workdir: Path, nights: int = N_SIM):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = self.workdir / "helion"
        if self.repo.exists():
            shutil.rmtree(self.repo)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(self.repo)], check=True)
        subprocess.run(["git", "-C", str(self.repo), "checkout", "-q", "main"], check=True)
        self.g = R.Git(self.repo)
        self.rnd = random.Random(f"world-p-{seed}")
        self._simulate()
        self._publish(nights)

    # ------------------------------------------------------------ nights on the real history
    def _nights(self):
        g = self.g
        end = datetime.fromisoformat(WINDOW_END[self.seed]).replace(tzinfo=timezone.utc)
        out = []
        for d in range(N_SIM):
            day = end - timedelta(days=N_SIM - 1 - d)
            guess = g.head_at((day + timedelta(hours=8)).timestamp())
            hm = R.cron_of(g.text(guess, NIGHTLY)) or R.cron_of(g.text(guess, DISPATCH)) or (8, 0)
            when = day + timedelta(hours=hm[0], minutes=hm[1] + self.rnd.randint(3, 24), seconds=self.rnd.randint(0, 59))
            sha = g.head_at(when.timestamp())
            pwhen, psha = None, None
            if g.text(sha, P_RUN) is not None:
                phm = R.cron_of(g.text(sha, P_NIGHTLY)) or (10, 0)
                pwhen = day + timedelta(hours=phm[0], minutes=phm[1] + self.rnd.randint(3, 20),
                                        seconds=self.rnd.randint(0, 59))
                psha = g.head_at(pwhen.timestamp())
                if g.text(psha, P_RUN) is None:
                    pwhen = psha = None
            base = 14_000_000_000 + (day.date() - datetime(2025, 1, 1).date()).days * 2_000_000
            out.append(dict(when=when, sha=sha, pwhen=pwhen, psha=psha, run_id=str(base + self.rnd.randint(0, 99_999)),
                            p_run_id=str(base + 400_000 + self.rnd.randint(0, 99_999)) if psha else None, base=base))
        return out

    # ------------------------------------------------------------ simulation
    def _series(self, key, lin=False):
        if key not in self.series:
            self.series[key] = Series(self.seed, *key, lin=lin)
        return self.series[key]

    def _present(self, i):
        """Series keys run at night i (before failures and outages)."""
        cfg = self.cfgs[i]
        keys = []
        for p, ks in cfg["plat"].items():
            keys += [("dashboard", p, k) for k in ks]
        for p, ks in cfg["lin"].items():
            keys += [("dashboard", p, k) for k in ks if ("dashboard", p, k) not in keys]
        pc = self.pcfgs[i]
        if pc:
            for k, ki in pc["k"].items():
                keys += [("pretuned", p, k) for p in pc["plats"] if p in ki["aot"]]
        return keys

    def _struct(self, s, i):
        if s.src == "dashboard":
            return dash_struct(s, self.cfgs[i], self.seed)
        return pre_struct(s, self.pcfgs[i])

    def _E(self, key, i):
        e = {}
        for eff in self.effects:
            if key in eff["keys"] and eff["start"] <= i and (eff["end"] is None or i < eff["end"]):
                for c, f in eff["f"].get(key, eff["f"].get("*", {})).items():
                    e[c] = e.get(c, 1.0) * f
        return e

    def _simulate(self):
        g, seed = self.g, self.seed
        self.raw = self._nights()
        self.cfgs = [dash_config(g, n["sha"]) for n in self.raw]
        self.pcfgs = [pre_config(g, n["psha"]) if n["psha"] else None for n in self.raw]
        self.series: dict = {}
        self.effects: list = []
        self.outage: dict = {}  # night -> set of platforms missing
        self.scatter: dict = {}  # key -> (night, sigma)
        self.outliers: dict = {}  # (key, night) -> factor
        self.labels_raw: list = []
        present = [self._present(i) for i in range(N_SIM)]
        for i in range(N_SIM):
            for k in present[i]:
                self._series(k, lin=k[0] == "dashboard" and k[1] in self.cfgs[i]["lin"] and k[2] in self.cfgs[i]["lin"][k[1]])
        # per-night F snapshots, and the config-driven labels
        self.Fs = [dict() for _ in range(N_SIM)]
        cfg_moves = {}  # (night, key) -> True
        for i in range(N_SIM):
            for key in present[i]:
                s = self.series[key]
                if i > 0 and key in present[i - 1]:
                    self._config_steps(s, i, cfg_moves)
                self.Fs[i][key] = {**s.F, "bl": dict(s.F["bl"])}
        self.present = present
        self._plant(cfg_moves)

    def _config_steps(self, s: Series, i: int, cfg_moves):
        """Apply the config changes between nights i-1 and i to s, one mechanism at a time; each that
        moves a metric of s makes s a member of that change's label."""
        seed = self.seed
        if s.src == "dashboard":
            c0, c1 = self.cfgs[i - 1], self.cfgs[i]
            p = s.plat
            steps = []
            st0, st1 = dash_struct(s, c0, seed), dash_struct(s, c1, seed)
            if st0[0] != st1[0]:
                steps.append(("method_change", "cudagraph", ("cg", st1[0], st0[1]), self._find_change(i, "cg", s)))
            if st0[1] != st1[1]:
                steps.append(("method_change", "shapes", ("shape", st1), self._find_change(i, "shape", s)))
            if c0["lat"] != c1["lat"]:
                r = _rng(seed, "lat", c1["lat"], s.key)
                steps.append(("method_change", "timer", ("F", {"lat": _step(r, 0.12, 0.3)}), self._find_change(i, "lat", s)))
            if c0["autotune"] != c1["autotune"]:
                r = _rng(seed, "at", c1["autotune"], s.key)
                f = {"comp": _step(r, 0.3, 0.6, 0.3)}
                if r.random() < 0.35:
                    f["h"] = _step(r, 0.08, 0.18)
                steps.append(("method_change", "autotune", ("F", f), self._find_change(i, "autotune", s)))
            if c0["pins"] != c1["pins"]:
                r = _rng(seed, "pins", c1["pins"], s.key)
                if r.random() < 0.4:
                    fb = _step(r, 0.1, 0.22)
                    steps.append(("method_change", "baseline", ("F", {"b": fb, "c": r.uniform(0.97, 1.03)}),
                                  self._find_change(i, "pins", s)))
            h0, h1 = c0["hw"].get(p), c1["hw"].get(p)
            if h0 and h1 and h0["runner"] != h1["runner"]:
                r = _rng(seed, "runner", h1["runner"], p)
                gf = _step(r, 0.1, 0.2)
                rr = _rng(seed, "runner", h1["runner"], s.key)
                f = {c: gf * rr.uniform(0.98, 1.02) for c in ("h", "b", "t", "c")}
                steps.append(("hardware", "runner", ("F", f), self._find_change(i, "runner", s)))
            if h0 and h1 and (h0["image"], h0["runtime"]) != (h1["image"], h1["runtime"]):
                r = _rng(seed, "img", h1["image"], h1["runtime"], s.key)
                if r.random() < 0.5:
                    f = {"h": _step(r, 0.08, 0.16), "b": r.uniform(0.97, 1.03)}
                    steps.append(("hardware", "driver/toolchain", ("F", f), self._find_change(i, "image", s)))
        else:
            c0, c1 = self.pcfgs[i - 1], self.pcfgs[i]
            k0, k1 = c0["k"][s.kernel], c1["k"][s.kernel]
            steps = []
            if k0["cg"] != k1["cg"]:
                steps.append(("method_change", "cudagraph", ("pstruct",), self._find_change(i, "pcg", s)))
            if k0["baselines"] != k1["baselines"]:
                steps.append(("method_change", "baseline", ("pstruct",), self._find_change(i, "pbl", s)))
            if c0["timer"] != c1["timer"]:
                r = _rng(seed, "ptimer", c1["timer"], s.key)
                if r.random() < 0.5:
                    steps.append(("method_change", "timer", ("F", {"h": _step(r, 0.1, 0.2)}), self._find_change(i, "ptimer", s)))
            if c0["pins"] != c1["pins"]:
                r = _rng(seed, "ppins", c1["pins"], s.key)
                if r.random() < 0.35:
                    steps.append(("method_change", "baseline", ("F", {"b": _step(r, 0.1, 0.2)}), self._find_change(i, "ppins", s)))
            a0, a1 = k0["aot"].get(s.plat), k1["aot"].get(s.plat)
            if a0 and a1 and a0 != a1:
                r = _rng(seed, "aot", a1, s.key)
                steps.append(("real", "heuristics/config", ("F", {"h": _step(r, 0.1, 0.25, 0.3)}),
                              self._find_change(i, "aot", s)))
        struct = self._struct(s, i - 1)
        for cause, kind, op, sha in steps:
            before = truth(s, struct, s.F, {})["m"]
            if op[0] == "F":
                for c, f in op[1].items():
                    s.F[c] *= f
            elif op[0] == "cg":
                struct = (op[1], op[2])
            elif op[0] == "shape":
                struct = op[1]
            elif op[0] == "pstruct":
                struct = self._struct(s, i)
            after = truth(s, struct, s.F, {})["m"]
            mv = moved(before, after)
            if s.src == "dashboard" and not self.cfgs[i]["compile"]:
                mv = [m for m in mv if m != "compile_time_geomean_s"]
            if kind == "baseline" and s.src == "pretuned" and op[0] == "pstruct":
                mv = list(dict.fromkeys(mv + ["baselines"]))
            if not mv or sha is None:
                continue
            cfg_moves[(i, s.key)] = True
            self._add_cfg_label(i, cause, kind, sha, s, mv)

    def _find_change(self, i, what, s):
        """The first-parent commit in night i's window that made the change (parsed at each commit)."""
        g = self.g
        pre = s.src == "pretuned"
        lo = self.raw[i - 1]["psha" if pre else "sha"]
        hi = self.raw[i]["psha" if pre else "sha"]
        target = self._probe(what, s, hi)
        prev = self._probe(what, s, lo)
        if target == prev:
            return None
        for c in g.between(lo, hi):
            if self._probe(what, s, c) == target:
                return c
        return None

    def _probe(self, what, s, sha):
        if s.src == "dashboard":
            c = dash_config(self.g, sha)
            return {"cg": lambda: dash_struct(s, c, self.seed)[0] if s.plat in c["plat"] or s.plat in c["lin"] else None,
                    "shape": lambda: dash_struct(s, c, self.seed)[1],
                    "lat": lambda: c["lat"], "autotune": lambda: c["autotune"], "pins": lambda: c["pins"],
                    "runner": lambda: (c["hw"].get(s.plat) or {}).get("runner"),
                    "image": lambda: ((c["hw"].get(s.plat) or {}).get("image"), (c["hw"].get(s.plat) or {}).get("runtime")),
                    }[what]()
        c = pre_config(self.g, sha)
        if c is None:
            return None
        ki = c["k"].get(s.kernel, {})
        return {"pcg": lambda: ki.get("cg"), "pbl": lambda: ki.get("baselines"), "ptimer": lambda: c["timer"],
                "ppins": lambda: c["pins"], "aot": lambda: ki.get("aot", {}).get(s.plat)}[what]()

    def _add_cfg_label(self, i, cause, kind, sha, s, mv):
        for l in self.labels_raw:
            if l["night"] == i and l["kind"] == kind and l["sha"] == sha and l["source"] == s.src:
                if (s.plat, s.kernel) not in l["members"]:
                    l["members"].append((s.plat, s.kernel))
                l["metrics"] = list(dict.fromkeys(l["metrics"] + mv))
                return
        self.labels_raw.append(dict(night=i, cause=cause, kind=kind, sha=sha, source=s.src,
                                    members=[(s.plat, s.kernel)], metrics=list(mv), end=None,
                                    note=f"{kind} change in the window", episode=False))

    # ------------------------------------------------------------ planted events
    def _plant(self, cfg_moves):
        rnd, g = self.rnd, self.g
        busy = set(cfg_moves)  # (night, key) with a config move

        def free(key, i, span=3):
            return all((j, key) not in busy for j in range(i - span, i + span + 1))

        def mark(keys, i, span=0):
            for k in keys:
                for j in range(i - span, i + span + 1):
                    busy.add((j, k))

        # --- real code events on commits whose paths carry them
        cands = []
        for i in range(8, N_SIM):
            for c in g.between(self.raw[i - 1]["sha"], self.raw[i]["sha"]):
                files = [f for f in g.files(c) if f.startswith("helion/") and f.endswith(".py")]
                if not files:
                    continue
                cands.append((i, c, files))
        reverts = {}
        subj = {c: g.subject(c) for _, c, _ in cands}
        for i, c, f in cands:
            sj = subj[c]
            if sj.startswith('Revert "'):
                orig = sj[len('Revert "'):].rsplit('"', 1)[0]
                for j, c2, _ in cands:
                    if subj[c2].startswith(orig) and j < i and j >= 10:
                        reverts[c2] = (i, c)
        planted = 0
        order = list(range(len(cands)))
        rnd.shuffle(order)
        # the last three nights first, then reverted commits, then the rest
        order.sort(key=lambda j: (0 if cands[j][0] >= N_SIM - 3 else 1 if cands[j][1] in reverts else 2))
        want = rnd.randint(5, 7)
        used_nights = set()
        for j in order:
            if planted >= want:
                break
            i, c, files = cands[j]
            if any(abs(i - u) <= 2 for u in used_nights):
                continue
            sj = subj[c].lower()
            paths = " ".join(files).lower()
            cfg = self.cfgs[i]
            if "cute" in paths or "[cute" in sj or "cutedsl" in sj:
                plats = ["b200_cute"]
            elif "pallas" in paths or "[pallas" in sj or "[tpu" in sj:
                plats = ["tpu"]
            elif "[rocm" in sj or "rocm" in paths or "gfx" in paths:
                plats = [p for p in ("mi350x", "mi325x")]
            elif "sm90" in paths:
                plats = ["h100"]
            elif "sm100" in paths:
                plats = ["b200"]
            else:
                plats = ["h100", "b200"]
            kind = "heuristics/config" if ("autotuner" in paths or "heuristic" in sj or "config" in sj
                                           or "sm90" in paths or "sm100" in paths) else "code"
            plats = [p for p in plats if p in cfg["plat"] and p in self.cfgs[i - 1]["plat"]]
            if not plats:
                continue
            r = _rng(self.seed, "real", c)
            pool = sorted({k for p in plats for k in cfg["plat"][p] if k in self.cfgs[i - 1]["plat"].get(p, [])})
            if not pool:
                continue
            nk = min(len(pool), r.randint(1, 3))
            kernels = r.sample(pool, nk)
            keys = [("dashboard", p, k) for p in plats for k in kernels
                    if ("dashboard", p, k) in self.present[i] and ("dashboard", p, k) in self.present[i - 1]]
            keys = [k for k in keys if free(k, i)]
            if not keys:
                continue
            regress = r.random() < 0.6 or c in reverts
            f = {key: {"h": (r.uniform(1.13, 1.35) if regress else 1 / r.uniform(1.13, 1.3))} for key in keys}
            end = reverts[c][0] if c in reverts else None
            self.effects.append(dict(keys=set(keys), start=i, end=end, f=f))
            mark(keys, i, 3)
            used_nights.add(i)
            self.labels_raw.append(dict(night=i, cause="real", kind=kind, sha=c, source="dashboard",
                                        members=[(k[1], k[2]) for k in keys], metrics=["helion_speedup_geomean", "helion_latency_avg_ms"],
                                        end=end, note=("regression" if regress else "improvement") +
                                        (", reverted later" if end else ""), episode=False))
            planted += 1
        # --- a harness change: the speedup timer of Helion moves, the latency timer does not
        hcands = []
        for i in range(10, N_SIM - 1):
            for c in g.between(self.raw[i - 1]["sha"], self.raw[i]["sha"]):
                fs = g.files(c)
                if any(f in (RUNPY, BENCH) for f in fs) and re.search(
                        r"subprocess|tritonbench|warm|cool|timeout|do_bench|profiler|input|shapes|harness|bench",
                        g.subject(c), re.I) and not any(f.startswith("helion/") for f in fs):
                    hcands.append((i, c))
        rnd.shuffle(hcands)
        for i, c in hcands[:10]:
            r = _rng(self.seed, "harness", c)
            ks = sorted({k[2] for k in self.present[i] if k[0] == "dashboard" and k[1] in ("h100", "b200", "mi350x", "mi325x")})
            if not ks:
                continue
            pick = r.sample(ks, min(len(ks), r.randint(2, 4)))
            keys = [k for k in self.present[i] if k[0] == "dashboard" and k[2] in pick and k in self.present[i - 1]
                    and k[1] in ("h100", "b200", "mi350x", "mi325x")]
            keys = [k for k in keys if free(k, i)]
            if len(keys) < 2:
                continue
            f = {k: {"hs": _step(r, 0.12, 0.22)} for k in keys}
            self.effects.append(dict(keys=set(keys), start=i, end=None, f=f))
            mark(keys, i, 3)
            self.labels_raw.append(dict(night=i, cause="method_change", kind="harness", sha=c, source="dashboard",
                                        members=[(k[1], k[2]) for k in keys], metrics=["helion_speedup_geomean"],
                                        end=None, note="benchmark harness change", episode=False))
            break
        # --- a second event on a series that already moved with a config change
        moved_keys = sorted({k for (i, k) in cfg_moves if k[0] == "dashboard" and 15 <= i <= N_SIM - 10})
        if moved_keys:
            key = rnd.choice(moved_keys)
            i0 = min(i for (i, k) in cfg_moves if k == key)
            for i in list(range(i0 + 6, N_SIM - 2)) + list(range(i0 - 6, 10, -1)):
                cs = [c for c in g.between(self.raw[i - 1]["sha"], self.raw[i]["sha"])
                      if any(f.startswith("helion/_compiler/") for f in g.files(c))]
                if cs and free(key, i, 2) and key in self.present[i - 1] and all(key in self.present[j] for j in range(i, min(N_SIM, i + 5))):
                    c = cs[0]
                    fct = _rng(self.seed, "second", c).uniform(1.15, 1.3)
                    self.effects.append(dict(keys={key}, start=i, end=None, f={key: {"h": fct}}))
                    mark([key], i, 3)
                    self.labels_raw.append(dict(night=i, cause="real", kind="code", sha=c, source="dashboard",
                                                members=[(key[1], key[2])], metrics=["helion_speedup_geomean", "helion_latency_avg_ms"],
                                                end=None, note="regression on a series with an earlier method change", episode=False))
                    break
        # --- thermal episodes (with an end) and outages
        plats_all = sorted({p for c in self.cfgs for p in c["plat"]})
        for n_ep, (lo, hi, length) in enumerate([(20, 120, (3, 7)), (100, N_SIM - 4, (3, 5)), (N_SIM - 2, N_SIM - 1, (5, 5))]):
            if n_ep == 2 and rnd.random() < 0.4:
                continue
            for _ in range(30):
                p = rnd.choice(plats_all)
                s0 = rnd.randint(lo, hi)
                e0 = s0 + rnd.randint(*length)
                keys = [k for k in self.present[s0] if k[0] == "dashboard" and k[1] == p and k in self.present[s0 - 1]]
                if len(keys) < 3 or not all(free(k, s0, 2) for k in keys):
                    continue
                gf = rnd.uniform(1.12, 1.25)
                f = {k: {c: gf * _rng(self.seed, "th", k, c).uniform(0.985, 1.015) for c in ("h", "b", "t", "c")} for k in keys}
                end = e0 if e0 < N_SIM else None
                self.effects.append(dict(keys=set(keys), start=s0, end=end, f=f))
                mark(keys, s0, 2)
                if end:
                    mark(keys, end, 1)
                self.labels_raw.append(dict(night=s0, cause="hardware", kind="thermal", sha=None, source="dashboard",
                                            members=[(k[1], k[2]) for k in keys], metrics=["helion_latency_avg_ms"],
                                            end=end, note="throttled runner", episode=True, fx=f))
                break
        for _ in range(30):
            p = rnd.choice(plats_all)
            s0 = rnd.randint(30, N_SIM - 6)
            keys = [k for k in self.present[s0] if k[0] == "dashboard" and k[1] == p and k in self.present[s0 - 1]]
            if len(keys) < 3 or not all(free(k, s0, 2) for k in keys):
                continue
            e0 = s0 + rnd.randint(1, 3)
            for j in range(s0, e0):
                self.outage.setdefault(j, set()).add(p)
            mark(keys, s0, 4)
            self.labels_raw.append(dict(night=s0, cause="hardware", kind="outage", sha=None, source="dashboard",
                                        members=[(k[1], k[2]) for k in keys], metrics=["helion_speedup_geomean"],
                                        end=e0, note="platform missing from the nightly", episode=True))
            break
        # --- noise: series that turn noisy, single outliers
        dash_keys = sorted(k for k in self.series if k[0] == "dashboard")
        for _ in range(2):
            for _ in range(50):
                key = rnd.choice(dash_keys)
                s0 = rnd.randint(30, N_SIM - 15)
                if key in self.scatter or not all(key in self.present[j] for j in range(s0 - 1, N_SIM)):
                    continue
                if not all(free(key, j, 0) for j in range(s0 - 3, s0 + 4)):
                    continue
                self.scatter[key] = (s0, rnd.uniform(0.07, 0.1))
                mark([key], s0, 3)
                self.labels_raw.append(dict(night=s0, cause="noise", kind="scatter", sha=None, source="dashboard",
                                            members=[(key[1], key[2])], metrics=list(DASH_METRICS[:4]),
                                            end=None, note="scatter grows", episode=False))
                break
        for n_out in range(3):
            for _ in range(50):
                key = rnd.choice(dash_keys)
                s0 = rnd.randint(N_SIM - 3, N_SIM - 1) if n_out == 0 else rnd.randint(20, N_SIM - 3)
                if key in self.scatter or not all(key in self.present[j] for j in range(s0 - 1, min(N_SIM, s0 + 2))):
                    continue
                if not free(key, s0, 4) or any(s0 in self.outage and key[1] in self.outage[s0] for _ in [0]):
                    continue
                self.outliers[(key, s0)] = rnd.uniform(1.3, 1.45)
                mark([key], s0, 3)
                self.labels_raw.append(dict(night=s0, cause="noise", kind="outlier", sha=None, source="dashboard",
                                            members=[(key[1], key[2])], metrics=["helion_speedup_geomean", "helion_latency_avg_ms"],
                                            end=None, note="one bad night", episode=False))
                break
        # a few stray failures (not labeled)
        self.fail = set()
        for i in range(N_SIM):
            for k in self.present[i]:
                if k[0] == "dashboard" and (i, k) not in busy and _rng(self.seed, "fail", i, k).random() < 0.003:
                    self.fail.add((i, k))

    # ------------------------------------------------------------ measured values
    def _measure(self, key, i, tag="n"):
        s = self.series[key]
        F = self.Fs[i][key]
        E = self._E(key, i)
        t = truth(s, self._struct(s, i), F, E)
        r = _rng(self.seed, "noise", tag, i, key)
        pn = _rng(self.seed, "pnight", tag, i, key[0], key[1])
        pf = math.exp(pn.gauss(0, 0.012))
        sig = s.sigma
        if key in self.scatter and i >= self.scatter[key][0]:
            sig = self.scatter[key][1]
        out_f = self.outliers.get((key, i), 1.0)

        gauss, rand, exp = r.gauss, r.random, math.exp

        def noisy(x):
            v = x * pf * exp(gauss(0, sig))
            u = rand()
            if u < 0.01:  # a stray single-timer outlier of 15-20 %
                v *= 1.15 + 5 * u
            return v

        if s.src == "dashboard":
            rows = np.array(t["rows"], dtype=float)
            n = len(rows)
            gen = np.random.default_rng(zlib.crc32(f"{self.seed}|noise|{tag}|{i}|{key}".encode()))
            u = gen.random((n, 5))
            meas = rows[:, :5] * pf * np.exp(gen.standard_normal((n, 5)) * sig) * np.where(u < 0.01, 1.15 + 5 * u, 1.0)
            meas[:, 1] *= out_f
            meas[:, 4] *= out_f
            fail = gen.random(n) < 0.004
            acc = np.where(gen.random(n) > 0.003, 1.0, 0.0)
            comp = rows[:, 5] * np.exp(gen.standard_normal(n) * 0.05)
            hs = np.round(meas[:, 0] / meas[:, 1], 4)
            lat = np.round(meas[:, 4], 5)
            hs[fail] = acc[fail] = lat[fail] = 0.0
            res = {"helion_speedup": hs.tolist(), "triton_speedup": np.round(meas[:, 0] / meas[:, 2], 4).tolist(),
                   "torch_compile_speedup": np.round(meas[:, 0] / meas[:, 3], 4).tolist(),
                   "helion_accuracy": acc.tolist(), "helion_compile_time_s": np.round(comp, 2).tolist(),
                   "helion_latency_ms": lat.tolist()}
            if s.lin or s.plat == "tpu":
                res.pop("triton_speedup")
            if s.lin:
                res.pop("torch_compile_speedup")
            if not self.cfgs[i]["compile"]:
                res.pop("helion_compile_time_s")
            return [s.master[j] for j in t["idx"]], res
        sp, per_bl = [], {n: [] for n in t["names"]}
        for th, bls in t["rows"]:
            h = noisy(th)
            b = {n: noisy(v) for n, v in bls.items()}
            sp.append(min(b.values()) / h)
            for n, v in b.items():
                per_bl[n].append(v / h)
        rec = {"geomean": round(_gm(sp), 4), "helion_wins": sum(1 for x in sp if x > 1), "total": len(sp),
               "best_speedup": round(max(sp), 4),
               "baselines": {n: {"wins": sum(1 for x in v if x > 1), "total": len(v), "geomean": round(_gm(v), 4),
                                 "best_speedup": round(max(v), 4)} for n, v in per_bl.items()}}
        return None, rec

    def _dash_artifacts(self, run_dir: Path, i: int, keys, tag="n"):
        groups: dict = {}
        for key in keys:
            s = self.series[key]
            grp = (s.plat, "linattn" if s.lin else "main")
            shapes, res = self._measure(key, i, tag)
            extra = {"device": DEVICE[s.plat]}
            if s.plat == "b200_cute":
                extra["backend"] = "cute"
            elif s.plat == "tpu":
                extra["backend"] = "pallas"
            else:
                extra["backend"] = "triton"
            if s.lin:
                extra["baseline_label"] = "fla"
            recs = groups.setdefault(grp, [])
            for m, vals in res.items():
                recs.append({"model": {"name": s.kernel}, "shape": shapes,
                             "metric": {"name": m, "benchmark_values": vals},
                             "benchmark": {"name": "Helion Benchmark", "extra_info": extra}})
        for (p, grp), recs in groups.items():
            d = run_dir / f"benchmark-results-{p}-{grp}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "helionbench.json").write_text(json.dumps(recs))

    def _pre_artifacts(self, run_dir: Path, i: int, keys, tag="n"):
        by: dict = {}
        for key in keys:
            s = self.series[key]
            _, rec = self._measure(key, i, tag)
            rec = {"kernel": s.kernel, "device": DEVICE[s.plat], "compute_capability": SM[s.plat],
                   "cudagraph": self.pcfgs[i]["k"][s.kernel]["cg"], **rec}
            if _rng(self.seed, "perr", tag, i, key).random() < 0.006:
                rec = {"kernel": s.kernel, "device": DEVICE[s.plat], "compute_capability": SM[s.plat],
                       "error": "RuntimeError: CUDA error: an illegal memory access was encountered"}
            by.setdefault(s.plat, []).append(rec)
        for p, recs in by.items():
            d = run_dir / f"pretuned-results-{p}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))

    # ------------------------------------------------------------ publishing through Helion's builders
    def _publish(self, k: int):
        k = max(1, min(k, N_SIM))
        start = N_SIM - k
        bdir = self.repo / ".github" / "dashboard"
        dash_b = _load_builder(bdir / "build_dashboard_data.py", f"_bwp_dash_{self.seed}")
        pre_b = _load_builder(bdir / "build_pretuned_dashboard_data.py", f"_bwp_pre_{self.seed}")
        wf = self.workdir / "wf"
        wf.mkdir(exist_ok=True)
        cache = self.workdir / "cache"
        runs_meta, p_meta = [], []
        prev, pprev = {}, {}
        self._dash: list = []
        self._pre: list = []
        fresh_cache = fresh_pcache = True
        pcache = self.workdir / "pcache"
        for i in range(N_SIM):
            n = self.raw[i]
            build = i >= start - 1  # earlier nights go into one back-filling build (CI's first run)
            if fresh_cache:
                if cache.exists():
                    shutil.rmtree(cache)
                cache.mkdir()
                fresh_cache = False
            # a manual dispatch the day before (not a nightly), on main or a side branch
            mr = _rng(self.seed, "manual", i)
            if i > 0 and mr.random() < 0.22:
                pm = self.raw[i - 1]
                mwhen = pm["when"] + timedelta(hours=mr.randint(2, 12), minutes=mr.randint(0, 59))
                branch = "main" if mr.random() < 0.6 else mr.choice(["perf/try-configs", "ci/bench-debug", "tpu-nightly"])
                mid = str(pm["base"] + 900_000 + mr.randint(0, 99_999))
                msha = self.g.head_at(mwhen.timestamp())
                keys = [kk for kk in self.present[i - 1] if kk[0] == "dashboard"]
                keys = mr.sample(keys, min(len(keys), mr.randint(2, 5)))
                self._dash_artifacts(cache / mid, i - 1, keys, tag="m")
                runs_meta.append({"run_id": mid, "sha": msha[:8], "full_sha": msha, "date": _iso(mwhen),
                                  "branch": branch, "is_nightly": False})
            out = self.outage.get(i, set())
            keys = [kk for kk in self.present[i] if kk[0] == "dashboard" and kk[1] not in out and (i, kk) not in self.fail]
            self._dash_artifacts(cache / n["run_id"], i, keys)
            runs_meta.append({"run_id": n["run_id"], "sha": n["sha"][:8], "full_sha": n["sha"], "date": _iso(n["when"]),
                              "branch": "main", "is_nightly": True})
            dpath = wf / f"dispatch-{n['sha'][:12]}.yml"
            dpath.write_text(self.cfgs[i]["disp_text"] or "")
            doc = None
            if build:
                _FakeDT.now_value = n["when"] + timedelta(hours=3)
                doc = dash_b.build_dashboard_data(str(cache), list(runs_meta), prev,
                                                  dash_b.get_active_platforms(str(dpath)),
                                                  dash_b.get_expected_kernels_per_platform(str(dpath)))
                prev = _feed(doc)
                fresh_cache = True
            self._dash.append(doc if i >= start else None)
            # pretuned suite
            pb = None
            if n["psha"]:
                pc = self.pcfgs[i]
                if fresh_pcache:
                    if pcache.exists():
                        shutil.rmtree(pcache)
                    pcache.mkdir()
                    fresh_pcache = False
                if i > 0 and mr.random() < 0.12 and self.pcfgs[i - 1]:
                    pm = self.raw[i - 1]
                    mwhen = pm["pwhen"] + timedelta(hours=mr.randint(2, 12)) if pm["pwhen"] else n["pwhen"] - timedelta(hours=9)
                    mid = str(pm["base"] + 950_000 + mr.randint(0, 9_999))
                    msha = self.g.head_at(mwhen.timestamp())
                    keys = [kk for kk in self.present[i - 1] if kk[0] == "pretuned"]
                    keys = mr.sample(keys, min(len(keys), mr.randint(1, 4)))
                    self._pre_artifacts(pcache / mid, i - 1, keys, tag="m")
                    p_meta.append({"run_id": mid, "sha": msha[:8], "full_sha": msha, "date": _iso(mwhen),
                                   "branch": "main", "is_nightly": False})
                keys = [kk for kk in self.present[i] if kk[0] == "pretuned"]
                self._pre_artifacts(pcache / n["p_run_id"], i, keys)
                p_meta.append({"run_id": n["p_run_id"], "sha": n["psha"][:8], "full_sha": n["psha"],
                               "date": _iso(n["pwhen"]), "branch": "main", "is_nightly": True})
                ppath = wf / f"pdispatch-{n['psha'][:12]}.yml"
                ppath.write_text(pc["disp_text"] or "")
                if build:
                    _FakeDT.now_value = n["pwhen"] + timedelta(hours=1)
                    pdoc = pre_b.build_dashboard_data(str(pcache), list(p_meta), pprev,
                                                      pre_b.get_active_platforms(str(ppath)))
                    pb = pprev = pdoc
                    fresh_pcache = True
            self._pre.append(pb if i >= start else None)
        self._dash = self._dash[start:]
        self._pre = self._pre[start:]
        self.nights = [Night(run_id=n["run_id"], full_sha=n["sha"], sha=n["sha"][:8], date=n["when"],
                             p_run_id=n["p_run_id"], p_full_sha=n["psha"]) for n in self.raw[start:]]
        self._index = {}
        for j, n in enumerate(self.nights):
            self._index[n.run_id] = j
            if n.p_run_id:
                self._index[n.p_run_id] = j
        self._make_labels(start)
        kept = set()
        for i in range(start, N_SIM):
            kept |= set(self.present[i])
        self._series_count = len(kept)

    def _honest(self, key, i):
        s = self.series[key]
        t = truth(s, self._struct(s, i), self.Fs[i][key], self._E(key, i))
        return round(t["m"]["helion_speedup_geomean" if s.src == "dashboard" else "geomean"], 4)

    def _make_labels(self, start):
        self.labels = []
        raws = sorted(self.labels_raw, key=lambda l: (l["night"], l["source"], l["kind"], l["sha"] or ""))
        for l in raws:
            i = l["night"]
            if i <= start:
                continue
            pre = l["source"] == "pretuned"
            run = (lambda j: self.raw[j]["p_run_id"]) if pre else (lambda j: self.raw[j]["run_id"])
            hon = {}
            if l["cause"] != "noise":
                at = i - 1 if l["kind"] in ("thermal", "outage") else i
                for p, k in l["members"]:
                    hon[f"{p}/{k}"] = self._honest((l["source"], p, k), at)
            direction = "mixed"
            if l["cause"] != "noise" and l["kind"] not in ("outage",):
                sk = (l["source"], *l["members"][0])
                s = self.series[sk]
                a = truth(s, self._struct(s, i - 1), self.Fs[i - 1][sk], self._E(sk, i - 1))["m"]
                b = truth(s, self._struct(s, i), self.Fs[i][sk], self._E(sk, i))["m"]
                hk = "helion_speedup_geomean" if l["source"] == "dashboard" else "geomean"
                if a.get(hk) and b.get(hk) and abs(b[hk] / a[hk] - 1) > 0.02:
                    direction = "improvement" if b[hk] > a[hk] else "regression"
                elif a.get("helion_latency_avg_ms") and b.get("helion_latency_avg_ms"):
                    direction = "regression" if b["helion_latency_avg_ms"] > a["helion_latency_avg_ms"] else "improvement"
            elif l["kind"] == "outage":
                direction = "missing"
            else:
                direction = "none"
            self.labels.append(Label(
                id=f"p{self.seed}-{len(self.labels):02d}", source=l["source"], cause=l["cause"], kind=l["kind"],
                direction=direction, members=tuple(sorted(set(map(tuple, l["members"])))),
                metrics=tuple(l["metrics"]), first_bad_run_id=run(i), last_good_run_id=run(i - 1),
                end_run_id=run(l["end"]) if l["end"] is not None and l["end"] < N_SIM else None,
                culprit_sha=l["sha"] if l["cause"] == "real" else None,
                change_sha=l["sha"] if l["cause"] in ("method_change", "hardware") else None,
                honest_speedup=hon, note=l["note"]))

    # ------------------------------------------------------------ interface
    def dashboard_bytes(self, i: int) -> bytes:
        return json.dumps(self._dash[i], indent=1).encode()

    def pretuned_bytes(self, i: int) -> bytes | None:
        return None if self._pre[i] is None else json.dumps(self._pre[i], indent=1).encode()

    def night_of(self, run_id) -> int | None:
        return self._index.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        return self._series_count

    def close(self):
        self.g.close()


def build_world(seed: int, workdir, nights: int = N_SIM) -> World:
    if seed not in WINDOW_END:
        raise ValueError(f"set P has seeds {sorted(WINDOW_END)}")
    return World(seed, Path(workdir), nights)
