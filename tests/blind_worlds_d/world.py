"""Blind world D: nightlies on the real Helion first-parent history, documents built by Helion's own builders.

See README.md in this folder for the design, the labeling rules and the limits.
"""
from __future__ import annotations

import importlib.util
import json
import math
import shutil
import tempfile
import time
import types
import datetime as _dtmod
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night

from . import repo as R

# seed -> (date of the last nightly, number of nightlies)
SEEDS = {31: (date(2026, 2, 26), 120), 32: (date(2026, 5, 30), 135), 33: (date(2026, 8, 22), 150)}
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc).timestamp()
COMPS = ("base", "hel", "lat", "tri", "tc", "comp")
TAGS_CUTE = ("[cute]", "[cutedsl]")
TAGS_TPU = ("[pallas]", "[pallas-tpu]", "[tpu]")
FAMILIES = [
    (("reduction", "reduce", "welford", "softmax", "norm", "looped"),
     {"softmax", "layer_norm", "rms_norm", "welford", "cross_entropy", "kl_div", "jsd", "sum", "layer_norm-bwd",
      "rms_norm-bwd"}),
    (("matmul", "dot", "mma", "gemm", "tcgen05", "wgmma", "tma"),
     {"gemm", "int4_gemm", "grouped_gemm", "bmm", "flash_attention", "addmm"}),
    (("attention", "flash"), {"flash_attention"}),
    (("scan", "chunk", "mamba", "recurrence"), {"mamba2_chunk_state", "mamba2_chunk_scan", "gdn_fwd_h"}),
    (("pointwise", "elementwise", "broadcast"), {"vector_add", "vector_exp", "rope", "geglu", "swiglu"}),
    (("rope", "rotary"), {"rope", "rope-bwd"}),
]


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _rid(ts: float) -> str:
    return str(17_000_000_000 + int((ts - T0) * 33.6))


def _u(*parts) -> np.random.Generator:
    return np.random.default_rng(R.h64(*parts))


def _geo(v):
    pos = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in pos) / len(pos)) if pos else 0.0


@dataclass
class Run:
    run_id: str
    sha: str
    date: datetime
    branch: str
    is_nightly: bool
    night: int
    plats: tuple | None = None
    offset: float = 0.0

    def meta(self):
        return dict(run_id=self.run_id, sha=self.sha[:8], full_sha=self.sha, date=_iso(self.date),
                    branch=self.branch, is_nightly=self.is_nightly)


@dataclass
class Effect:
    key: tuple          # (source, plat, kernel)
    start: int
    end: int | None     # first night without the effect
    logf: dict
    tag: str


@dataclass
class World:
    seed: int
    nights: list
    labels: list
    repo: Path
    workdir: Path
    build_seconds: float = 0.0
    _dash: list = field(default_factory=list)
    _pre: list = field(default_factory=list)
    _night_index: dict = field(default_factory=dict)
    _series: set = field(default_factory=set)

    def dashboard_bytes(self, n: int) -> bytes:
        return self._dash[n].read_bytes()

    def pretuned_bytes(self, n: int) -> bytes | None:
        p = self._pre[n]
        return p.read_bytes() if p is not None else None

    def night_of(self, run_id) -> int | None:
        return self._night_index.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        return len(self._series)


# ------------------------------------------------------------------------------------------ models

class DashModel:
    """Per-series truth: per-shape speedup levels, baseline scale, compile times, timer scatter."""

    def __init__(self, seed, plat, kernel, suite):
        g = _u(seed, "dm", plat, kernel)
        self.pool = R.shape_pool(kernel)
        self.mh = g.normal(0.12, 0.3)
        self.sh = g.normal(0, 0.5)
        self.dh = g.normal(0, 0.12, 64)
        self.mt, self.st, self.dt = g.normal(-0.05, 0.2), g.normal(0, 0.3), g.normal(0, 0.1, 64)
        self.mc, self.sc, self.dc = g.normal(0.0, 0.2), g.normal(0, 0.3), g.normal(0, 0.1, 64)
        self.scale = math.exp(g.uniform(math.log(0.006), math.log(1.2)))
        self.db = g.normal(0, 0.2, 64)
        self.ct = g.uniform(math.log(6), math.log(90), 64)
        self.sig = {c: g.uniform(0.005, 0.03) for c in ("base", "hel", "lat", "tri", "tc")}
        self.suite = suite

    def idx(self, shape):
        try:
            return self.pool.index(shape)
        except ValueError:
            return R.h64("shape", shape) % 40


OVH = {"base": 0.006, "hel": 0.02, "tri": 0.011, "tc": 0.013}  # launch overhead (ms) without CUDA graphs


def sim_dash(m: DashModel, cfg: R.SeriesCfg, F: dict, g: np.random.Generator | None, P: float,
             with_lat=True, with_comp=True, failed=False):
    ii = np.array([m.idx(s) for s in cfg.shapes])
    x = ii / 40.0 - 0.5
    n = len(ii)
    lb = np.log(m.scale) + 2.0 * (ii / 40.0) + m.db[ii]
    lh = m.mh + m.sh * x + m.dh[ii]
    lt = m.mt + m.st * x + m.dt[ii]
    lc = m.mc + m.sc * x + m.dc[ii]

    def eps(c):
        if g is None:
            return 0.0
        e = g.normal(0, m.sig[c], n)
        out = g.random(n) < 0.01
        return e + out * np.log(g.uniform(1.15, 1.20, n))
    B = np.exp(lb + P + F["base"] + eps("base"))
    H = np.exp(lb - lh + P + F["hel"] + eps("hel"))
    T = np.exp(lb - lt + P + F["tri"] + eps("tri"))
    C = np.exp(lb - lc + P + F["tc"] + eps("tc"))
    if not cfg.cudagraph:
        B, H, T, C = B + OVH["base"], H + OVH["hel"], T + OVH["tri"], C + OVH["tc"]
    L = np.exp(lb - lh + P + F["lat"] + 0.04 + eps("lat")) + 0.004
    comp = np.exp(m.ct[ii] + F["comp"] + (g.normal(0, 0.05, n) if g is not None else 0.0))
    met = {"helion_speedup": B / H, "helion_accuracy": np.ones(n)}
    if cfg.has_triton:
        met["triton_speedup"] = B / T
    if cfg.has_tc:
        met["torch_compile_speedup"] = B / C
    if with_lat:
        met["helion_latency_ms"] = L
    if with_comp and cfg.suite != "linattn":
        met["helion_compile_time_s"] = comp
    if failed:
        for k in met:
            met[k] = np.zeros(n)
    elif g is not None and g.random() < 0.03:
        j = int(g.integers(n))
        met["helion_accuracy"][j] = 0.0
        if g.random() < 0.5:  # a shape that did not run at all
            for k in met:
                if k != "helion_accuracy":
                    met[k][j] = 0.0
    return {k: [round(float(v), 6) for v in vals] for k, vals in met.items()}


def clean_dash(m, cfg, F, with_lat, with_comp):
    met = sim_dash(m, cfg, F, None, 0.0, with_lat, with_comp)
    lat = [v for v in met.get("helion_latency_ms", []) if v]
    return {"helion_speedup_geomean": _geo(met["helion_speedup"]),
            "triton_speedup_geomean": _geo(met.get("triton_speedup", [])),
            "torch_compile_speedup_geomean": _geo(met.get("torch_compile_speedup", [])),
            "helion_latency_avg_ms": sum(lat) / len(lat) if lat else 0.0,
            "compile_time_geomean_s": _geo(met.get("helion_compile_time_s", []))}


BASE_MU = {"torch": 0.12, "eager": 0.12, "torch_compile": 0.02, "vllm": -0.04, "cutlass": -0.08, "deepgemm": -0.1,
           "flashinfer": -0.05, "triton": 0.0}


class PreModel:
    def __init__(self, seed, plat, kernel):
        g = _u(seed, "pm", plat, kernel)
        self.n = int(g.integers(6, 17))
        self.lt = np.log(g.uniform(0.004, 0.4)) + np.linspace(0, 2.5, self.n)
        self.h = g.normal(0.05, 0.1) + g.normal(0, 0.12, self.n)
        self.seed, self.plat, self.kernel = seed, plat, kernel
        self.sig = g.uniform(0.005, 0.025)

    def base_off(self, name):
        g = _u(self.seed, "pb", self.plat, self.kernel, name)
        mu = next((v for k, v in BASE_MU.items() if k in name), 0.0)
        return mu + g.normal(0, 0.08) + g.normal(0, 0.1, self.n)


def sim_pre(m: PreModel, cfg: dict, F: dict, g, P: float, sig_boost=1.0):
    sig = m.sig * sig_boost
    e = (lambda: g.normal(0, sig, m.n) + (g.random(m.n) < 0.01) * np.log(g.uniform(1.15, 1.2, m.n))) \
        if g is not None else (lambda: 0.0)
    H = np.exp(m.lt - m.h + P + F.get("hel", 0.0) + e())
    if not cfg["cudagraph"]:
        H = H + 0.02
    per = {}
    for b in cfg["baselines"]:
        Bt = np.exp(m.lt + m.base_off(b) + P + F.get("base", 0.0) + F.get("b:" + b, 0.0) + e())
        if not cfg["cudagraph"]:
            Bt = Bt + 0.008
        per[b] = Bt / H
    best = np.min(np.vstack([per[b] for b in cfg["baselines"]]), axis=0)  # vs the fastest baseline
    rec = dict(helion_wins=int((best > 1).sum()), total=m.n, geomean=_geo(best), best_speedup=float(best.max()),
               cudagraph=cfg["cudagraph"])
    if len(cfg["baselines"]) > 1:
        rec["baselines"] = {b: dict(wins=int((v > 1).sum()), total=m.n, geomean=round(_geo(v), 4),
                                    best_speedup=round(float(v.max()), 4)) for b, v in per.items()}
    return rec


# ------------------------------------------------------------------------------------------ profiles

def dim_applies(dim, plat, cfg: R.SeriesCfg) -> bool:
    kind = dim[0]
    if kind == "hw":
        return dim[1] == plat and (dim[2] == cfg.suite or cfg.suite == "tpu")
    if kind == "pin":
        return dim[1] == cfg.suite
    return cfg.suite == "tritonbench" and plat != "tpu"


def profile(seed, dim, value, plat, kernel) -> dict:
    """log factors per component that an environment value implies for a series (deterministic)."""
    kind = dim[0]
    v = repr(value)
    gk = _u(seed, "prof", dim, v, plat, kernel)
    gp = _u(seed, "prof", dim, v, plat)
    out = dict.fromkeys(COMPS, 0.0)
    if kind in ("hw", "phw"):
        r = gp.uniform(-0.12, 0.12)
        x = (gp.choice([-1, 1]) * gp.uniform(0.05, 0.13)) if gp.random() < 0.7 else gp.normal(0, 0.01)
        xk = x + gk.normal(0, 0.015)
        out.update(base=r, hel=r + xk, lat=r + xk, tri=r + x * gp.uniform(0.2, 0.8), tc=r + x * gp.uniform(0, 0.6),
                   comp=0.5 * r)
    elif kind == "pin":
        b = gk.normal(0, 0.08) if gk.random() < 0.5 else 0.0
        out.update(base=b, tc=b + gk.normal(0, 0.03))
    elif kind == "autotune":
        h = gk.normal(0, 0.07) if gk.random() < 0.6 else gk.normal(0, 0.01)
        out.update(hel=h, lat=h, comp=_u(seed, "prof", dim, v).uniform(-0.6, 0.2))
    elif kind == "timer":
        out.update(lat=gp.uniform(-0.25, 0.25) + gk.normal(0, 0.02))
    elif kind == "harness":
        h = gk.normal(0, 0.06) if gk.random() < 0.5 else 0.0
        out.update(hel=h, tri=h * 0.8, tc=h * 0.8)
    elif kind == "ptimer":
        out.update(hel=gk.normal(0, 0.06), base=gp.normal(0, 0.03))
    elif kind == "ppin":
        out.update(base=gk.normal(0, 0.06) if gk.random() < 0.6 else 0.0)
    elif kind == "aot":
        out.update(hel=gk.normal(0, 0.09))
    return out


# ------------------------------------------------------------------------------------------ builder loading

class _FixedNow(datetime):
    NOW = None

    @classmethod
    def now(cls, tz=None):
        return cls.NOW


def _load_builder(repo: Path, name: str, tmp: Path):
    src = repo / ".github" / "dashboard" / name
    dst = tmp / name
    shutil.copyfile(src, dst)
    spec = importlib.util.spec_from_file_location(f"_bwd_{name[:-3]}", dst)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.datetime = types.SimpleNamespace(datetime=_FixedNow, timezone=timezone, timedelta=timedelta)
    return mod


# ------------------------------------------------------------------------------------------ world

def _slice_plats(meta: dict) -> tuple[set, str] | None:
    """Which platforms a helion/ commit can move, and the real-kind (code | heuristics/config)."""
    files = [f for f in meta.get("files", []) if f.startswith("helion/") and f.endswith(".py")]
    if not files:
        return None
    subj = meta["subject"].lower()
    paths = " ".join(files).lower()
    kind = "heuristics/config" if ("helion/autotuner/" in paths or "heuristic" in paths or "[autotuner]" in subj) \
        else "code"
    if "/cute/" in paths or any(t in subj for t in TAGS_CUTE):
        return {"b200_cute"}, kind
    if "pallas" in paths or any(t in subj for t in TAGS_TPU):
        return {"tpu"}, kind
    if "[rocm]" in subj or any(w in paths for w in ("rocm", "amd", "gfx")):
        return {"mi350x", "mi325x"}, kind
    if "sm90" in paths or "hopper" in subj:
        return {"h100"}, kind
    if "sm100" in paths or "blackwell" in subj:
        return {"b200"}, kind
    if any(w in paths for w in ("_compiler/", "language/", "runtime/", "autotuner/")):
        return {"h100", "b200", "mi350x", "mi325x"}, kind
    return None


def _slice_kernels(meta, avail: list, g) -> list:
    text = (meta["subject"] + " " + " ".join(meta.get("files", []))).lower()
    fam = set()
    for words, ks in FAMILIES:
        if any(w in text for w in words):
            fam |= ks
    hit = sorted(k for k in avail if k in fam)
    if hit:
        return hit[:4] if len(hit) <= 4 else sorted(g.choice(hit, 4, replace=False).tolist())
    if not avail:
        return []
    return sorted(g.choice(sorted(avail), min(len(avail), int(g.integers(1, 4))), replace=False).tolist())


def build_world(seed: int, workdir: Path, nights: int | None = None, documents: bool = True) -> World:
    t_start = time.time()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    path = R.clone(workdir)
    repo = R.Repo(path)
    try:
        return _build(seed, workdir, path, repo, nights, documents, t_start)
    finally:
        repo.close()


def _build(seed, workdir, path, repo, n_nights, documents, t_start):
    end, nd = SEEDS.get(seed, (date(2026, 8, 22) - timedelta(days=(seed * 37) % 200), 120))
    N = n_nights or nd
    rng = np.random.default_rng(seed)
    days = [end - timedelta(days=N - 1 - i) for i in range(N)]

    # ---- nightlies (main 08:00 UTC, pretuned 10:00 UTC) on the head of main at dispatch time
    nights, idx, pidx = [], [], []
    for d in days:
        t = datetime(d.year, d.month, d.day, 8, 0, tzinfo=timezone.utc) + timedelta(seconds=int(rng.integers(3, 200)))
        i = repo.sha_at(t.timestamp())
        tp = datetime(d.year, d.month, d.day, 10, 0, tzinfo=timezone.utc) + timedelta(seconds=int(rng.integers(3, 200)))
        j = repo.sha_at(tp.timestamp())
        idx.append(i)
        pidx.append((j, tp))
        nights.append([t, repo.fp[i]])
    cfgs = [R.night_config(repo, repo.fp[i]) for i in idx]
    pcfgs = [R.pretuned_config(repo, repo.fp[j]) for j, _ in pidx]
    night_objs = []
    for n, ((t, sha), (j, tp)) in enumerate(zip(nights, pidx)):
        p = pcfgs[n]
        night_objs.append(Night(_rid(t.timestamp()), sha, sha[:8], t,
                                _rid(tp.timestamp()) if p else None, repo.fp[j] if p else None))
    bench = [repo.parsed(repo.fp[i], R.BENCH, R.parse_bench_wf) for i in idx]

    # ---- series universe
    dkeys = sorted({k for c in cfgs for k in c["series"]})
    pkeys = sorted({k for c in pcfgs if c for k in c["series"]})
    dm = {k: DashModel(seed, k[0], k[1], next(c["series"][k].suite for c in cfgs if k in c["series"])) for k in dkeys}
    pm = {k: PreModel(seed, *k) for k in pkeys}

    # ---- outages, missing data, failed runs (chosen first; events then avoid them)
    plat_nights = {}
    for n, c in enumerate(cfgs):
        for (p, k) in c["series"]:
            plat_nights.setdefault(p, set()).add(n)
    outage = {}   # plat -> (start, end)
    plats_all = sorted(plat_nights)
    p_out = plats_all[int(rng.integers(len(plats_all)))]
    cand = sorted(n for n in plat_nights[p_out] if 15 <= n <= N - 12 and all(m in plat_nights[p_out] for m in range(n - 3, n + 6)))
    if cand:
        s = int(rng.choice(cand))
        outage[p_out] = (s, s + int(rng.integers(2, 4)))
    busy = {}  # (source, plat, kernel) -> set of nights near events

    def near(key, n, w=3):
        return any(abs(n - m) <= w for m in busy.get(key, ()))

    def mark(key, n):
        busy.setdefault(key, set()).add(n)

    for p, (s, e) in outage.items():
        for k in dkeys:
            if k[0] == p:
                for m in range(s, e + 1):
                    mark(("dashboard",) + k, m)

    def ran(key, n):
        p, k = key
        if key not in cfgs[n]["series"]:
            return False
        if p in outage and outage[p][0] <= n < outage[p][1]:
            return False
        return True

    # ---- environment factors from the real files (profiles of dim values)
    prof_cache = {}

    def F_dash(key, n):
        cfg = cfgs[n]["series"][key]
        first = next(m for m in range(N) if key in cfgs[m]["series"])
        out = dict.fromkeys(COMPS, 0.0)
        for dim, val in cfgs[n]["dims"].items():
            if not dim_applies(dim, key[0], cfg):
                continue
            v0 = cfgs[first]["dims"].get(dim, val)
            if val == v0:
                continue
            for vv, sgn in ((val, 1), (v0, -1)):
                ck = (dim, repr(vv), key)
                if ck not in prof_cache:
                    prof_cache[ck] = profile(seed, dim[:1] if dim[0] != "hw" else dim, vv, *key)
                for c in COMPS:
                    out[c] += sgn * prof_cache[ck][c]
        return out

    def F_pre(key, n):
        cfg = pcfgs[n]["series"][key]
        first = next(m for m in range(N) if pcfgs[m] and key in pcfgs[m]["series"])
        out = {}
        dims = dict(pcfgs[n]["dims"])
        dims[("aot",)] = cfg["aot"]
        dims0 = dict(pcfgs[first]["dims"])
        dims0[("aot",)] = pcfgs[first]["series"][key]["aot"]
        for dim, val in dims.items():
            if dim[0] == "phw" and dim[1] != key[0]:
                continue
            v0 = dims0.get(dim, val)
            if val == v0:
                continue
            for vv, sgn in ((val, 1), (v0, -1)):
                pr = profile(seed, dim, vv, *key)
                for c, x in pr.items():
                    cc = c if c != "base" else "base"
                    out[cc] = out.get(cc, 0.0) + sgn * x
        return out

    effects: list[Effect] = []
    labels: list[Label] = []

    def F_eff(src, key, n):
        out = {}
        for e in effects:
            if e.key == (src,) + key and e.start <= n and (e.end is None or n < e.end):
                for c, x in e.logf.items():
                    out[c] = out.get(c, 0.0) + x
        return out

    # ---- config-driven change nights (so random events keep clear of them)
    def data_nights(key):
        return [n for n in range(N) if ran(key, n)]

    for key in dkeys:
        dn = data_nights(key)
        for a, b in zip(dn, dn[1:]):
            ca, cb = cfgs[a], cfgs[b]
            sa, sb = ca["series"][key], cb["series"][key]
            if sa != sb or any(ca["dims"].get(d) != cb["dims"].get(d) for d in cb["dims"] if dim_applies(d, key[0], sb)):
                mark(("dashboard",) + key, b)
    for key in pkeys:
        dn = [n for n in range(N) if pcfgs[n] and key in pcfgs[n]["series"]]
        for a, b in zip(dn, dn[1:]):
            if pcfgs[a]["series"][key] != pcfgs[b]["series"][key] or pcfgs[a]["dims"] != pcfgs[b]["dims"]:
                mark(("pretuned",) + key, b)

    # ---- real regressions on helion/ commits in the window
    cands = []
    for n in range(3, N - 2):
        for ci in range(idx[n - 1] + 1, idx[n] + 1):
            sha = repo.fp[ci]
            meta = repo.meta.get(sha)
            if not meta:
                continue
            sl = _slice_plats(meta)
            if sl:
                cands.append((n, sha, meta, sl))
    order = rng.permutation(len(cands))
    n_real = int(rng.integers(4, 7))
    real_events = []
    for oi in order:
        if len(real_events) >= n_real:
            break
        n, sha, meta, (plats, kind) = cands[oi]
        g = _u(seed, "real", sha)
        members = []
        for p in sorted(plats):
            avail = [k for (pp, k) in cfgs[n]["series"] if pp == p and ran((p, k), n) and ran((p, k), n - 1)
                     and not near(("dashboard", p, k), n)]
            members += [(p, k) for k in _slice_kernels(meta, avail, g)]
        if not members:
            continue
        f = g.uniform(0.10, 0.28) if g.random() < 0.75 else -g.uniform(0.10, 0.2)
        for key in members:
            effects.append(Effect(("dashboard",) + key, n, None, {"hel": f, "lat": f, "comp": g.normal(0, 0.05)},
                                  f"real:{kind}:{sha}"))
            mark(("dashboard",) + key, n)
        real_events.append(sha)

    # ---- thermal episode(s): no commit
    for t_i in range(int(rng.integers(1, 3))):
        p = plats_all[int(rng.integers(len(plats_all)))]
        keys = [k for k in dkeys if k[0] == p]
        ok = [n for n in sorted(plat_nights[p]) if 10 <= n <= N - 12
              and all(ran(k, m) for k in keys if k in cfgs[n]["series"] for m in range(n - 1, n + 9))
              and not any(near(("dashboard",) + k, n, 4) for k in keys)]
        if not ok:
            continue
        s = int(rng.choice(ok))
        L = int(rng.integers(3, 8))
        r, x = rng.uniform(0.1, 0.22), rng.uniform(0.07, 0.14)
        for k in keys:
            effects.append(Effect(("dashboard",) + k, s, s + L,
                                  {"base": r, "hel": r + x, "lat": r + x, "tri": r + 0.5 * x, "tc": r + 0.4 * x},
                                  f"thermal:{t_i}"))
            for m in range(s, s + L + 1):
                mark(("dashboard",) + k, m)

    # ---- noise: blips and one high-scatter series per source
    blips = []
    for b_i in range(int(rng.integers(4, 7))):
        for _ in range(50):
            k = dkeys[int(rng.integers(len(dkeys)))]
            n = int(rng.integers(8, N - 3))
            if ran(k, n) and ran(k, n - 1) and ran(k, n + 1) and not near(("dashboard",) + k, n, 3):
                f = rng.uniform(0.16, 0.26) * (1 if rng.random() < 0.7 else -1)
                effects.append(Effect(("dashboard",) + k, n, n + 1, {"hel": f, "lat": f}, f"blip:{b_i}"))
                mark(("dashboard",) + k, n)
                blips.append(("dashboard", k, n))
                break
    for key in pkeys:
        pass
    if pkeys:
        for b_i in range(int(rng.integers(1, 3))):
            for _ in range(50):
                k = pkeys[int(rng.integers(len(pkeys)))]
                dn = [n for n in range(N) if pcfgs[n] and k in pcfgs[n]["series"]]
                if len(dn) < 8:
                    continue
                n = int(rng.choice(dn[3:-2]))
                if n - 1 in dn and n + 1 in dn and not near(("pretuned",) + k, n, 3):
                    f = rng.uniform(0.16, 0.26)
                    effects.append(Effect(("pretuned",) + k, n, n + 1, {"hel": f}, f"pblip:{b_i}"))
                    mark(("pretuned",) + k, n)
                    blips.append(("pretuned", k, n))
                    break
    quiet = [k for k in dkeys if not busy.get(("dashboard",) + k) and len(data_nights(k)) > N // 2]
    scatter = {("dashboard",) + quiet[int(rng.integers(len(quiet)))]} if quiet else set()
    pquiet = [k for k in pkeys if not busy.get(("pretuned",) + k)]
    if pquiet:
        scatter.add(("pretuned",) + pquiet[int(rng.integers(len(pquiet)))])
    for s in scatter:
        if s[0] == "dashboard":
            dm[s[1:]].sig = {c: (0.08 if c in ("hel", "lat") else v) for c, v in dm[s[1:]].sig.items()}

    # missing data / failed kernel runs on quiet nights
    missing, failed = set(), set()
    for key in dkeys:
        for n in data_nights(key):
            if near(("dashboard",) + key, n, 2) or ("dashboard",) + key in scatter:
                continue
            u = rng.random()
            if u < 0.004:
                missing.add((key, n))
            elif u < 0.007:
                failed.add((key, n))

    def has_data(key, n):
        return ran(key, n) and (key, n) not in missing and (key, n) not in failed

    # ---- noise-free levels
    clean = {}
    for key in dkeys:
        for n in range(N):
            if key in cfgs[n]["series"]:
                F = F_dash(key, n)
                for c, x in F_eff("dashboard", key, n).items():
                    F[c] += x
                clean[(key, n)] = clean_dash(dm[key], cfgs[n]["series"][key], F, bench[n]["latency"], bench[n]["compile"])
    pclean = {}
    for key in pkeys:
        for n in range(N):
            if pcfgs[n] and key in pcfgs[n]["series"]:
                F = F_pre(key, n)
                for c, x in F_eff("pretuned", key, n).items():
                    F[c] = F.get(c, 0.0) + x
                pclean[(key, n)] = sim_pre(pm[key], pcfgs[n]["series"][key], F, None, 0.0)

    # ---- labels ------------------------------------------------------------------------------
    def window(a, b, pre=False):
        lo = (pidx[a][0] if pre else idx[a]) + 1
        hi = pidx[b][0] if pre else idx[b]
        return [repo.fp[c] for c in range(lo, hi + 1)]

    def find_change(a, b, paths, fn, pre=False):
        win = window(a, b, pre)
        for sha in reversed(win):
            files = repo.meta.get(sha, {}).get("files", [])
            if not any(f in paths or any(f.startswith(p) for p in paths if p.endswith("/")) for f in files):
                continue
            par = repo.fp[repo.index[sha] - 1]
            if fn(sha) != fn(par):
                return sha
        return None

    DASH_PATHS = {"hw": [R.DISPATCH, R.NIGHTLY, ".github/workflows/benchmark_tpu.yml",
                         ".github/workflows/benchmark_tpu_bridge.yml"],
                  "pin": [R.BENCH], "autotune": [R.BENCH, R.NIGHTLY, R.DISPATCH], "timer": [R.BENCH],
                  "harness": [R.BENCH], "cfg": [R.RUN_PY, R.RUN_LINATTN, R.BENCH, R.RUN_TPU]}
    KIND = {"pin": ("method_change", "baseline"), "autotune": ("method_change", "autotune"),
            "timer": ("method_change", "timer"), "harness": ("method_change", "harness")}
    DMET = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
            "helion_latency_avg_ms", "compile_time_geomean_s")

    def moved(c0, c1, keys):
        out = []
        for mname in keys:
            x0, x1 = c0.get(mname) or 0, c1.get(mname) or 0
            if x0 and x1 and abs(x1 / x0 - 1) >= 0.03:
                out.append(mname)
        return out

    groups = {}

    def add(gkey, member, info):
        g = groups.setdefault(gkey, dict(members=[], metrics=set(), honest={}, **info))
        g["members"].append(member)
        g["metrics"] |= set(info.pop("_metrics", ()))
        g["honest"].update(info.pop("_honest", {}))

    for key in dkeys:
        dn = [n for n in range(N) if has_data(key, n)]
        for a, b in zip(dn, dn[1:]):
            ca, cb = cfgs[a], cfgs[b]
            sa, sb = ca["series"][key], cb["series"][key]
            c0, c1 = clean[(key, a)], clean[(key, b)]
            h0, h1 = c0["helion_speedup_geomean"], c1["helion_speedup_geomean"]
            l0, l1 = c0["helion_latency_avg_ms"], c1["helion_latency_avg_ms"]
            rh = h1 / h0 if h0 else 1.0
            rl = l1 / l0 if l0 and l1 else 1.0
            cause = None
            if sa.shapes != sb.shapes:
                cause = ("method_change", "shapes", "cfg")
            elif sa.cudagraph != sb.cudagraph:
                cause = ("method_change", "cudagraph", "cfg")
            else:
                for d in cb["dims"]:
                    if dim_applies(d, key[0], sb) and ca["dims"].get(d) != cb["dims"].get(d):
                        if d[0] == "hw":
                            va, vb = ca["dims"].get(d) or (None,), cb["dims"][d]
                            cause = ("hardware", "runner" if va[0] != vb[0] else "driver/toolchain", d)
                        else:
                            cause = KIND[d[0]] + (d,)
                        break
            real = [e for e in effects if e.key == ("dashboard",) + key and a < e.start <= b and e.tag.startswith("real")]
            if cause is None and real:
                _, rk, sha = real[0].tag.split(":")
                cause = ("real", rk, sha)
            if cause is None:
                continue
            vis_lat = cause[1] in ("timer", "runner", "driver/toolchain", "autotune")
            if abs(rh - 1) < 0.05 and not (vis_lat and abs(rl - 1) >= 0.05):
                continue
            direction = ("regression" if (rh < 1 if abs(rh - 1) >= 0.05 else rl > 1) else "improvement")
            if cause[1] == "cudagraph":
                honest = h1 if sb.cudagraph else h0
            elif cause[0] in ("hardware",):
                honest = h0
            else:
                honest = h1
            end = None
            if cause[0] == "hardware":
                d = cause[2]
                for m in range(b + 1, N):
                    if cfgs[m]["dims"].get(d) == ca["dims"].get(d) and ran(key, m):
                        end = m
                        break
            gk = ("dashboard", cause[0], cause[1], b, direction, repr(cause[2]))
            add(gk, key, dict(source="dashboard", cause=cause[0], kind=cause[1], a=a, b=b, dim=cause[2], end=end,
                              direction=direction,
                              _metrics=moved(c0, c1, DMET) or ["helion_speedup_geomean"],
                              _honest={f"{key[0]}/{key[1]}": round(honest, 4)}))

    # thermal labels
    for tag in sorted({e.tag for e in effects if e.tag.startswith("thermal")}):
        es = [e for e in effects if e.tag == tag]
        s, e_end = es[0].start, es[0].end
        for e in es:
            key = e.key[1:]
            if not (has_data(key, s) and has_data(key, s - 1)):
                continue
            c0, c1 = clean[(key, s - 1)], clean[(key, s)]
            gk = ("dashboard", "hardware", "thermal", s, "regression", tag)
            add(gk, key, dict(source="dashboard", cause="hardware", kind="thermal", a=s - 1, b=s, dim=None, end=e_end,
                              direction="regression", _metrics=moved(c0, c1, DMET),
                              _honest={f"{key[0]}/{key[1]}": round(c0["helion_speedup_geomean"], 4)}))
    # outage labels
    for p, (s, e) in outage.items():
        keys = [k for k in dkeys if k[0] == p and k in cfgs[s - 1]["series"] and has_data(k, s - 1)]
        for k in keys:
            add(("dashboard", "hardware", "outage", s, "regression", p), k,
                dict(source="dashboard", cause="hardware", kind="outage", a=s - 1, b=s, dim=None, end=e,
                     direction="regression", _metrics=[],
                     _honest={f"{k[0]}/{k[1]}": round(clean[(k, s - 1)]["helion_speedup_geomean"], 4)}))
    # noise labels
    for src, k, n in blips:
        if src == "dashboard":
            c0 = clean[(k, n - 1)]
            c1 = clean[(k, n)]
            hon, mets = c0["helion_speedup_geomean"], moved(c0, c1, DMET)
            dirn = "regression" if c1["helion_speedup_geomean"] < c0["helion_speedup_geomean"] else "improvement"
        else:
            c0, c1 = pclean[(k, n - 1)], pclean[(k, n)]
            hon, mets, dirn = c0["geomean"], ["geomean"], "regression"
        add((src, "noise", "blip", n, dirn, repr(k)), k,
            dict(source=src, cause="noise", kind="blip", a=n - 1, b=n, dim=None, end=None, direction=dirn,
                 _metrics=mets, _honest={f"{k[0]}/{k[1]}": round(hon, 4)}))
    for s in sorted(scatter):
        src, k = s[0], s[1:]
        if src == "dashboard":
            dn = [n for n in range(N) if has_data(k, n)]
            hon = float(np.median([clean[(k, n)]["helion_speedup_geomean"] for n in dn]))
            mets = ["helion_speedup_geomean", "helion_latency_avg_ms"]
        else:
            dn = [n for n in range(N) if pcfgs[n] and k in pcfgs[n]["series"]]
            hon = float(np.median([pclean[(k, n)]["geomean"] for n in dn]))
            mets = ["geomean"]
        add((src, "noise", "scatter", dn[0], "regression", repr(k)), k,
            dict(source=src, cause="noise", kind="scatter", a=dn[0], b=dn[0], dim=None, end=None,
                 direction="regression", _metrics=mets, _honest={f"{k[0]}/{k[1]}": round(hon, 4)}))

    # pretuned config/dims diffs
    for key in pkeys:
        dn = [n for n in range(N) if pcfgs[n] and key in pcfgs[n]["series"]]
        for a, b in zip(dn, dn[1:]):
            sa, sb = pcfgs[a]["series"][key], pcfgs[b]["series"][key]
            da, db = pcfgs[a]["dims"], pcfgs[b]["dims"]
            c0, c1 = pclean[(key, a)], pclean[(key, b)]
            cause = None
            if sa["baselines"] != sb["baselines"]:
                cause = ("method_change", "baseline", ("pbase", key[1]))
            elif sa["cudagraph"] != sb["cudagraph"]:
                cause = ("method_change", "cudagraph", ("pcg", key[1]))
            elif da.get(("ptimer",)) != db.get(("ptimer",)):
                cause = ("method_change", "timer", ("ptimer",))
            elif da.get(("ppin",)) != db.get(("ppin",)):
                cause = ("method_change", "baseline", ("ppin",))
            elif da.get(("phw", key[0])) != db.get(("phw", key[0])):
                va, vb = da.get(("phw", key[0])) or (None,), db.get(("phw", key[0]))
                cause = ("hardware", "runner" if va[0] != vb[0] else "driver/toolchain", ("phw", key[0]))
            elif sa["aot"] != sb["aot"]:
                cause = ("real", "heuristics/config", ("aot", key))
            if cause is None:
                continue
            r = c1["geomean"] / c0["geomean"] if c0["geomean"] else 1.0
            if abs(r - 1) < 0.05:
                continue
            direction = "regression" if r < 1 else "improvement"
            if cause[1] == "cudagraph":
                honest = c1["geomean"] if sb["cudagraph"] else c0["geomean"]
            else:
                honest = c0["geomean"] if cause[0] == "hardware" else c1["geomean"]
            mets = ["geomean"]
            for bn in set((c0.get("baselines") or {})) & set((c1.get("baselines") or {})):
                x0, x1 = c0["baselines"][bn]["geomean"], c1["baselines"][bn]["geomean"]
                if x0 and abs(x1 / x0 - 1) >= 0.03:
                    mets.append(f"baseline:{bn}:geomean")
            for bn in set((c1.get("baselines") or {})) ^ set((c0.get("baselines") or {})):
                mets.append(f"baseline:{bn}:geomean")
            gk = ("pretuned", cause[0], cause[1], b, direction, repr(cause[2]))
            add(gk, key, dict(source="pretuned", cause=cause[0], kind=cause[1], a=a, b=b, dim=cause[2], end=None,
                              direction=direction, _metrics=mets,
                              _honest={f"{key[0]}/{key[1]}": round(honest, 4)}))

    # turn groups into labels (find the commits)
    for gi, (gk, g) in enumerate(sorted(groups.items(), key=lambda kv: (kv[1]["b"], repr(kv[0])))):
        a, b, src = g["a"], g["b"], g["source"]
        pre = src == "pretuned"
        culprit = change = None
        dim = g["dim"]
        if g["cause"] == "real" and src == "dashboard":
            culprit = dim
        elif g["cause"] in ("real", "method_change", "hardware") and g["kind"] not in ("thermal", "outage"):
            if src == "dashboard":
                if dim == "cfg":
                    k0 = g["members"][0]
                    fn = lambda sha, k0=k0: R.night_config(repo, sha)["series"].get(k0)
                    paths = DASH_PATHS["cfg"]
                else:
                    fn = lambda sha, d=dim: R.night_config(repo, sha)["dims"].get(d)
                    paths = DASH_PATHS[dim[0]]
            else:
                k0 = g["members"][0]
                if dim[0] in ("pbase", "pcg"):
                    paths = [f"pretuned_kernels/{dim[1]}/"]
                    fn = lambda sha, k0=k0: (R.pretuned_config(repo, sha) or {"series": {}})["series"].get(k0, {}).get(
                        "baselines" if dim[0] == "pbase" else "cudagraph")
                elif dim[0] == "aot":
                    paths = [f"pretuned_kernels/{dim[1][1]}/"]
                    fn = lambda sha, k0=k0: (R.pretuned_config(repo, sha) or {"series": {}})["series"].get(k0, {}).get("aot")
                else:
                    paths = [R.P_BENCH, R.P_BENCH_WF, R.P_DISPATCH, R.P_NIGHTLY]
                    fn = lambda sha, d=dim: (R.pretuned_config(repo, sha) or {"dims": {}})["dims"].get(d)
            found = find_change(a, b, paths, fn, pre)
            if g["cause"] == "real":
                culprit = found
            else:
                change = found
        ends = [e for e in ([g["end"]] if g["end"] is not None else [])]
        nobj = night_objs
        rid = (lambda n: nobj[n].p_run_id) if pre else (lambda n: nobj[n].run_id)
        members = tuple(sorted(set(g["members"])))
        labels.append(Label(
            id=f"d{seed}-{gi:03d}-{src}-{g['cause']}-{g['kind'].replace('/', '_')}",
            source=src, cause=g["cause"], kind=g["kind"], direction=g["direction"], members=members,
            metrics=tuple(sorted(g["metrics"])), first_bad_run_id=rid(b), last_good_run_id=rid(a),
            end_run_id=rid(ends[0]) if ends else None, culprit_sha=culprit, change_sha=change,
            honest_speedup=dict(sorted(g["honest"].items())),
            note=_note(g, repo, culprit or change)))

    world = World(seed=seed, nights=night_objs, labels=labels, repo=path, workdir=workdir)
    for n, o in enumerate(night_objs):
        world._night_index[o.run_id] = n
        if o.p_run_id:
            world._night_index[o.p_run_id] = n
    world._series = {("dashboard",) + k for k in dkeys} | {("pretuned",) + k for k in pkeys}
    if documents:
        _documents(world, seed, repo, path, cfgs, pcfgs, pidx, bench, dkeys, pkeys, dm, pm, F_dash, F_pre, F_eff,
                   ran, missing, failed, scatter, rng, N)
    world.build_seconds = round(time.time() - t_start, 2)
    return world


def _note(g, repo, sha):
    s = f"{g['cause']}/{g['kind']} on {len(set(g['members']))} series"
    if sha:
        s += f"; commit {sha[:8]} {repo.meta.get(sha, {}).get('subject', '')[:90]}"
    if isinstance(g["dim"], tuple) and g["dim"] and g["dim"][0] not in ("aot",):
        s += f"; mechanism {g['dim']}"
    return s


def _documents(world, seed, repo, path, cfgs, pcfgs, pidx, bench, dkeys, pkeys, dm, pm, F_dash, F_pre, F_eff,
               ran, missing, failed, scatter, rng, N):
    docs = world.workdir / "documents"
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    tmp = Path(tempfile.mkdtemp(prefix="bwd_", dir=world.workdir))
    try:
        dash_mod = _load_builder(path, "build_dashboard_data.py", tmp)
        pre_mod = _load_builder(path, "build_pretuned_dashboard_data.py", tmp)
        g = np.random.default_rng([seed, 7])
        # side runs: manual dispatches on main and side-branch runs (never nightlies)
        side = []
        for n in range(N):
            night = world.nights[n]
            if g.random() < 0.14:
                t = night.date + timedelta(hours=float(g.uniform(4, 20)))
                i = repo.sha_at(t.timestamp())
                plats = tuple(sorted({k[0] for k in cfgs[n]["series"]}))
                pick = tuple(g.choice(plats, min(len(plats), int(g.integers(1, 3))), replace=False).tolist())
                off = float(g.uniform(-0.3, 0.25)) if g.random() < 0.4 else 0.0
                side.append(Run(_rid(t.timestamp()), repo.fp[i], t, "main", False, n, pick, off))
            if g.random() < 0.05:
                t = night.date + timedelta(hours=float(g.uniform(1, 22)))
                fake = format(R.h64(seed, "branch", n), "016x") * 3
                plats = tuple(sorted({k[0] for k in cfgs[n]["series"]}))
                pick = (plats[int(g.integers(len(plats)))],)
                side.append(Run(_rid(t.timestamp()), fake[:40], t, f"dev/exp-{n}", bool(g.random() < 0.5), n, pick,
                                float(g.uniform(-0.35, -0.15))))
        pside = []
        for n in range(N):
            if pcfgs[n] and g.random() < 0.1:
                t = pidx[n][1] + timedelta(hours=float(g.uniform(1, 12)))
                i = repo.sha_at(t.timestamp())
                pside.append(Run(_rid(t.timestamp()), repo.fp[i], t, "main", False, n, ("b200",),
                                 float(g.uniform(-0.2, 0.1))))

        def dash_metrics(key, n, gg, offset=0.0, fail=False):
            F = F_dash(key, n)
            for c, x in F_eff("dashboard", key, n).items():
                F[c] += x
            F["hel"] += offset
            F["lat"] += offset
            P = plat_P[(key[0], n)]
            return sim_dash(dm[key], cfgs[n]["series"][key], F, gg, P, bench[n]["latency"], bench[n]["compile"], fail)

        plat_P = {(p, n): float(g.normal(0, 0.008)) for p in {k[0] for k in dkeys} for n in range(N)}

        def write_dash_run(cache, run, n, keys):
            rd = cache / run.run_id
            for key in keys:
                p, k = key
                gg = np.random.default_rng([seed, R.h64(run.run_id, p, k) % (2 ** 32)])
                met = dash_metrics(key, n, gg, run.offset, (key, n) in failed and run.is_nightly and run.branch == "main")
                cfg = cfgs[n]["series"][key]
                extra = {"device": R.DEVICE.get(p, p),
                         "backend": "cute" if p.endswith("_cute") else ("pallas" if p == "tpu" else "triton")}
                if cfg.baseline_label:
                    extra["baseline_label"] = cfg.baseline_label
                recs = [{"benchmark": {"name": "Helion Benchmark", "extra_info": extra}, "model": {"name": k},
                         "metric": {"name": mn, "benchmark_values": vals}, "shape": list(cfg.shapes)}
                        for mn, vals in met.items()]
                d = rd / f"benchmark-results-{p}-{k}"
                d.mkdir(parents=True, exist_ok=True)
                (d / "helionbench.json").write_text(json.dumps(recs))

        runs_meta, prev = [], {}
        pruns_meta, pprev = [], {}
        si = 0
        psi = 0
        side.sort(key=lambda r: r.date)
        pside.sort(key=lambda r: r.date)
        world._dash, world._pre = [], []
        disp_file = tmp / "benchmark_dispatch.yml"
        pdisp_file = tmp / "benchmark_pretuned_dispatch.yml"
        for n in range(N):
            night = world.nights[n]
            build_t = night.date + timedelta(hours=1, minutes=30)
            cache = tmp / f"cache{n}"
            cache.mkdir()
            new = []
            while si < len(side) and side[si].date <= build_t:
                new.append(side[si])
                si += 1
            for r in new:
                keys = [k for k in cfgs[min(r.night, N - 1)]["series"] if k[0] in r.plats]
                write_dash_run(cache, r, min(r.night, N - 1), keys)
            nightly = Run(night.run_id, night.full_sha, night.date, "main", True, n)
            keys = [k for k in cfgs[n]["series"] if ran(k, n) and (k, n) not in missing]
            write_dash_run(cache, nightly, n, keys)
            runs_meta += [r.meta() for r in new] + [nightly.meta()]
            disp_file.write_text(cfgs[n]["dispatch_text"] or "")
            active = dash_mod.get_active_platforms(str(disp_file))
            expected = dash_mod.get_expected_kernels_per_platform(str(disp_file))
            _FixedNow.NOW = build_t
            doc = dash_mod.build_dashboard_data(str(cache), runs_meta, prev, active, expected)
            out = docs / f"dashboard-{n:04d}.json"
            out.write_text(json.dumps(doc))
            world._dash.append(out)
            prev = doc
            shutil.rmtree(cache)
            # pretuned
            if pcfgs[n] is None:
                world._pre.append(None)
                continue
            pt = pidx[n][1]
            pbuild = pt + timedelta(hours=1)
            pcache = tmp / f"pcache{n}"
            pcache.mkdir()
            pnew = []
            while psi < len(pside) and pside[psi].date <= pbuild:
                pnew.append(pside[psi])
                psi += 1
            prun = Run(night.p_run_id, night.p_full_sha, pt, "main", True, n)
            for r in pnew + [prun]:
                recs_by = {}
                for key in pkeys:
                    if key not in pcfgs[n]["series"] or (r.plats and key[0] not in r.plats):
                        continue
                    F = F_pre(key, n)
                    for c, x in F_eff("pretuned", key, n).items():
                        F[c] = F.get(c, 0.0) + x
                    F["hel"] = F.get("hel", 0.0) + r.offset
                    gg = np.random.default_rng([seed, R.h64(r.run_id, *key) % (2 ** 32)])
                    rec = {"kernel": key[1], "device": R.DEVICE[key[0]], "compute_capability": R.COMPUTE[key[0]],
                           "pretuned_hardware": [key[0]]}
                    if gg.random() < 0.01 and ("pretuned",) + key not in scatter:
                        rec["error"] = "RuntimeError: CUDA error: an illegal memory access was encountered"
                    else:
                        boost = 5.0 if ("pretuned",) + key in scatter else 1.0
                        rec.update(sim_pre(pm[key], pcfgs[n]["series"][key], F, gg, float(gg.normal(0, 0.006)), boost))
                    recs_by.setdefault(key[0], []).append(rec)
                for p, recs in recs_by.items():
                    d = pcache / r.run_id / f"pretuned-results-{p}"
                    d.mkdir(parents=True, exist_ok=True)
                    (d / "pretuned-bench.json").write_text(json.dumps(recs))
            pruns_meta += [r.meta() for r in pnew] + [prun.meta()]
            pdisp_file.write_text(pcfgs[n]["dispatch_text"] or "")
            _FixedNow.NOW = pbuild
            pdoc = pre_mod.build_dashboard_data(str(pcache), pruns_meta, pprev,
                                                pre_mod.get_active_platforms(str(pdisp_file)))
            pout = docs / f"pretuned-{n:04d}.json"
            pout.write_text(json.dumps(pdoc))
            world._pre.append(pout)
            pprev = pdoc
            shutil.rmtree(pcache)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
