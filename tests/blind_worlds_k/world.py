"""Set K blind worlds: nightlies on real Helion shas, per-shape timings simulated, documents built
by Helion's own dashboard builders. See README.md in this package."""
from __future__ import annotations

import bisect
import hashlib
import importlib.util
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
import types
import zlib
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import repo_state as RS

WINDOW_END = {101: date(2026, 4, 30), 102: date(2026, 7, 10), 103: date(2026, 8, 20)}
DEFAULT_NIGHTS = 150
BUILDER_REF = "main"  # the builders as they stand at the bundle's HEAD (the live schema)
DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
          "mi350x": "AMD Instinct MI350X", "mi325x": "AMD Instinct MI325X", "tpu": "TPU v7"}
GPU_TB = ("h100", "b200", "b200_cute", "mi350x", "mi325x")
SP = "helion_speedup_geomean"
LAT = "helion_latency_avg_ms"
TRI = "triton_speedup_geomean"
TC = "torch_compile_speedup_geomean"
COMP = "compile_time_geomean_s"
CH = ("base", "hel", "hcg", "lat", "tri", "tc", "comp")


def h32(*parts) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:4], "little")


def rng_for(*parts) -> np.random.Generator:
    return np.random.default_rng(h32(*parts))


def gm(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


@dataclass
class Effect:
    """Planted multiplicative factors on nights [n0, n1) for some series."""
    eid: str
    n0: int
    n1: int | None
    factors: dict  # series key -> {channel: factor}


@dataclass
class Params:
    avail: int
    base: np.ndarray
    sh: np.ndarray
    st: np.ndarray
    sc: np.ndarray
    comp: np.ndarray
    sig_cg: float
    sig_db: float
    shapes: list


class KWorld:
    def __init__(self, seed: int, workdir: Path, nights: int | None = None):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = self.workdir / f"helion-k{seed}"
        if not (self.repo / ".git").exists():
            subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(self.repo)], check=True)
        self.R = RS.Repo(self.repo)
        self.rng = rng_for("k", seed)
        self.N = nights or DEFAULT_NIGHTS
        self.labels: list[Label] = []
        self.effects: list[Effect] = []
        self._docs: list[bytes] = []
        self._pdocs: list[bytes | None] = []
        self._params: dict = {}
        self._busy: dict = {}
        self._lid = 0
        self._make_nights()
        self._make_series()
        self._natural_events()
        self._planted_events()
        self._build_documents()

    # ------------------------------------------------------------------ nights
    def _make_nights(self):
        fp = RS.first_parent(self.R)
        self.fp = fp
        self.fp_index = {c["sha"]: i for i, c in enumerate(fp)}
        ts = [c["ts"] for c in fp]
        end = WINDOW_END[self.seed]
        self.nights, self.states, self.pstates, self.fpi, self.pfpi = [], [], [], [], []
        cache: dict[str, RS.State] = {}
        base_id = 25_000_000_000 + (self.seed % 100) * 400_000_000
        for i in range(self.N):
            day = end - timedelta(days=self.N - 1 - i)
            t = datetime(day.year, day.month, day.day, 8, 0, tzinfo=timezone.utc) + \
                timedelta(seconds=int(self.rng.integers(3, 40)))
            k = bisect.bisect_right(ts, t.timestamp()) - 1
            sha = fp[k]["sha"]
            st = cache.get(sha) or cache.setdefault(sha, RS.read_state(self.R, sha))
            tp = t + timedelta(hours=2)
            kp = bisect.bisect_right(ts, tp.timestamp()) - 1
            psha = fp[kp]["sha"]
            pst = cache.get(psha) or cache.setdefault(psha, RS.read_state(self.R, psha))
            rid = str(base_id + i * 1_900_000 + int(self.rng.integers(0, 90_000)))
            has_p = bool(pst.pretuned)
            prid = str(int(rid) + 700_000 + int(self.rng.integers(0, 90_000))) if has_p else None
            self.nights.append(Night(run_id=rid, full_sha=sha, sha=sha[:8], date=t,
                                     p_run_id=prid, p_full_sha=psha if has_p else None))
            self.states.append(st)
            self.pstates.append(pst if has_p else None)
            self.fpi.append(k)
            self.pfpi.append(kp)
        self._night_by_id = {}
        for i, nt in enumerate(self.nights):
            self._night_by_id[nt.run_id] = i
            if nt.p_run_id:
                self._night_by_id[nt.p_run_id] = i

    def night_of(self, run_id) -> int | None:
        return self._night_by_id.get(str(run_id)) if run_id is not None else None

    # ------------------------------------------------------------------ series
    def _make_series(self):
        self.series: dict[tuple, dict] = {}  # (alias, kernel) -> {suite}
        self.pseries: dict[tuple, dict] = {}
        self.present = []  # per night: {(alias,kernel): suite}
        self.ppresent = []
        for n, st in enumerate(self.states):
            cur = {}
            for alias in st.platforms:
                for k, suite in st.kernels(alias).items():
                    cur[(alias, k)] = suite
                    self.series.setdefault((alias, k), {"suite": suite})
            self.present.append(cur)
            pst = self.pstates[n]
            pcur = dict(pst.pretuned) if pst else {}
            for key in pcur:
                self.pseries.setdefault(key, {})
            self.ppresent.append(pcur)
        self.plat_factor = {}
        for n in range(self.N):
            for alias in DEVICE:
                self.plat_factor[(alias, n)] = math.exp(rng_for(self.seed, "pf", alias, n).normal(0, 0.005))
        # noise overrides (scatter episodes): key -> (n0, sigma)
        self.scatter: dict = {}
        self.outliers: dict = {}  # (key, n) -> (channel, factor)
        self.missing: set = set()  # (alias, n) outage

    def params(self, key) -> Params:
        if key in self._params:
            return self._params[key]
        alias, k = key[0], key[1]
        r = rng_for(self.seed, "par", alias, k)
        kr = rng_for(self.seed, "kern", k)  # shared across platforms of one kernel
        avail = int(kr.integers(6, 31))
        lo = 10 ** kr.uniform(-2.2, -0.7)
        base = lo * 10 ** np.sort(kr.uniform(0, kr.uniform(0.8, 2.3), avail))
        plat_shift = {"h100": 1.25, "b200": 0.85, "b200_cute": 0.85, "mi350x": 1.0, "mi325x": 1.2, "tpu": 1.4}
        base = base * plat_shift.get(alias, 1.0)
        s0 = math.exp(r.normal(0.05, 0.35))
        sh = s0 * np.exp(r.normal(0, 0.12, avail))
        st = math.exp(r.normal(0.0, 0.2)) * np.exp(r.normal(0, 0.1, avail))
        sc = math.exp(r.normal(0.1, 0.25)) * np.exp(r.normal(0, 0.1, avail))
        comp = 10 ** r.uniform(1.3, 3.2) * np.exp(r.normal(0, 0.35, avail))
        shapes = [f"({int(2 ** (10 + j % 6))}, {int(2 ** (7 + (j * 3) % 7))})" if j % 2 else
                  f"[{int(2 ** (9 + j % 8))}, {int(2 ** (8 + (j * 5) % 6))}]" for j in range(avail)]
        p = Params(avail, base, sh, st, sc, comp, float(r.uniform(0.005, 0.03)), float(r.uniform(0.005, 0.03)),
                   shapes)
        self._params[key] = p
        return p

    # the method state of one dashboard series at one night
    def shape_idx(self, key, n, st=None) -> np.ndarray:
        st = st or self.states[n]
        p = self.params(key)
        suite = self.series[key]["suite"]
        if suite == "tritonbench":
            m = st.mappings.get(key[1], {})
            want = min(m.get("num_inputs") or st.max_inputs, st.max_inputs, p.avail)
            if "--input-sample-mode" in st.bench.get("flags", ()):
                return np.unique(np.linspace(0, p.avail - 1, want).round().astype(int))
            return np.arange(want)
        if suite == "linattn":
            dense, fwd_only, ns, nv = st.linattn
            cnt = nv if key[1] in ("kda_varlen",) else ns
            return np.arange(max(1, min(cnt or 1, p.avail)))
        return np.arange(min(p.avail, 8))

    def is_cg(self, key, n, st=None) -> bool:
        st = st or self.states[n]
        if self.series[key]["suite"] != "tritonbench" or key[0] == "tpu":
            return True
        return "--cudagraph" in st.bench.get("flags", ()) and not st.mappings.get(key[1], {}).get("nocg", False)

    # value-keyed mechanisms: the factor a series gets from the value a mechanism has at a night
    def mech_values(self, key, n):
        st = self.states[n]
        alias = key[0]
        pl = st.platforms.get(alias) or {}
        vals = {"runner": (alias, pl.get("runner")), "image": (alias, pl.get("image"), pl.get("runtime"))}
        if self.series.get(key, {}).get("suite") == "tritonbench" and alias in GPU_TB:
            vals["torch"] = st.bench.get("torch_pin")
            vals["autotune"] = st.bench.get("autotune_env")
            vals["tbpin"] = st.tb_pin
            vals["latmode"] = st.bench.get("latency_mode")
        return vals

    def mech_factor(self, key, mech, value, ref_value) -> dict:
        if value == ref_value:
            return {}
        f = {}
        def draw(v):
            r = rng_for(self.seed, "mech", mech, key, str(v))
            out = {}
            if mech == "runner":
                c = math.exp(rng_for(self.seed, "mechc", mech, key[0], str(v)).choice([-1, 1]) *
                             rng_for(self.seed, "mechc2", key[0], str(v)).uniform(0.07, 0.14))
                out = {"hel": c * math.exp(r.normal(0, 0.03)), "base": c * math.exp(r.normal(0, 0.02)),
                       "tri": c, "tc": c}
            elif mech == "image":
                if r.random() < 0.55:
                    b = math.exp(r.choice([-1, 1]) * r.uniform(0.05, 0.14))
                    out = {"base": b, "tri": b ** 0.5, "tc": b}
                if r.random() < 0.3:
                    out["hel"] = math.exp(r.choice([-1, 1]) * r.uniform(0.04, 0.09))
            elif mech == "torch":
                if r.random() < 0.45:
                    b = math.exp(r.choice([-1, 1]) * r.uniform(0.05, 0.15))
                    out = {"base": b, "tc": b * math.exp(r.normal(0, 0.03)), "tri": b}
            elif mech == "autotune":
                if h32(self.seed, "at", key[1], str(v)) % 5 == 0:
                    out = {"hel": math.exp(r.uniform(0.06, 0.14)), "comp": r.uniform(0.45, 0.7)}
            elif mech == "tbpin":
                if h32(self.seed, "tb", key[1], str(v)) % 6 == 0:
                    b = math.exp(r.choice([-1, 1]) * r.uniform(0.06, 0.15))
                    out = {"base": b, "tri": b, "tc": b}
            elif mech == "latmode":
                out = {"lat": math.exp(r.uniform(0.1, 0.3))}
            return out
        a, b0 = draw(value), draw(ref_value)
        for ch in set(a) | set(b0):
            f[ch] = a.get(ch, 1.0) / b0.get(ch, 1.0)
        return f

    def factors(self, key, n, override: dict | None = None, exclude: set = frozenset()) -> dict:
        """Channel factors for a dashboard series at night n (relative to window start)."""
        out = {c: 1.0 for c in CH}
        first = self._first_night(key)
        ref = self.mech_values(key, first)
        cur = self.mech_values(key, n)
        for mech, v in cur.items():
            if override and mech in override:
                v = override[mech]
            for ch, f in self.mech_factor(key, mech, v, ref.get(mech)).items():
                out[ch] *= f
        for e in self.effects:
            if e.eid in exclude or key not in e.factors:
                continue
            if n >= e.n0 and (e.n1 is None or n < e.n1):
                for ch, f in e.factors[key].items():
                    out[ch] *= f
        return out

    def _first_night(self, key):
        for n in range(self.N):
            if key in self.present[n]:
                return n
        return 0

    def clean(self, key, n, force_cg=None, override=None, exclude=frozenset(), st=None) -> dict:
        p = self.params(key)
        idx = self.shape_idx(key, n, st)
        f = self.factors(key, n, override, exclude)
        cg = self.is_cg(key, n, st) if force_cg is None else force_cg
        B = p.base[idx]
        b = B * f["base"]
        h = B / p.sh[idx] * f["hel"] * f["hcg"]
        t = B / p.st[idx] * f["tri"]
        c = B / p.sc[idx] * f["tc"]
        if not cg:
            b, h, t, c = b + 0.006, h + 0.02, t + 0.009, c + 0.013
        lat = B / p.sh[idx] * f["hel"] * f["lat"] + 0.002
        return {SP: gm(b / h), TRI: gm(b / t), TC: gm(b / c), LAT: float(np.mean(lat)),
                COMP: gm(p.comp[idx] * f["comp"])}

    # pretuned model -------------------------------------------------------
    def pparams(self, key):
        k2 = ("p",) + key
        if k2 in self._params:
            return self._params[k2]
        r = rng_for(self.seed, "pp", *key)
        T = int(r.integers(8, 41))
        base = 10 ** r.uniform(-2.3, 0.3, T)
        sh = math.exp(r.normal(0.15, 0.3)) * np.exp(r.normal(0, 0.15, T))
        d = {"T": T, "base": base, "sh": sh, "sig": float(r.uniform(0.005, 0.025))}
        self._params[k2] = d
        return d

    def pfactor(self, key, n, override=None, exclude=frozenset()):
        pst = self.pstates[n]
        first = next(i for i in range(self.N) if key in self.ppresent[i])
        p0 = self.pstates[first]
        out = {"hel": 1.0, "base": 1.0}
        vals = {"aot": pst.pretuned[key]["aot"], "bench": pst.pretuned_bench, "penv": pst.pretuned_env}
        refs = {"aot": p0.pretuned[key]["aot"], "bench": p0.pretuned_bench, "penv": p0.pretuned_env}
        if override:
            vals.update(override)
        for mech in vals:
            if vals[mech] == refs[mech]:
                continue
            def draw(v):
                r = rng_for(self.seed, "pm", mech, key, str(v))
                if mech == "aot":
                    if r.random() < 0.5:
                        return {}
                    return {"hel": math.exp((-1 if r.random() < 0.7 else 1) * r.uniform(0.06, 0.2))}
                if r.random() < 0.5:
                    return {}
                return {"base": math.exp(r.choice([-1, 1]) * r.uniform(0.05, 0.12))}
            a, b = draw(vals[mech]), draw(refs[mech])
            for ch in set(a) | set(b):
                out[ch] *= a.get(ch, 1.0) / b.get(ch, 1.0)
        for e in self.effects:
            if e.eid in exclude or ("P",) + key not in e.factors:
                continue
            if n >= e.n0 and (e.n1 is None or n < e.n1):
                for ch, f in e.factors[("P",) + key].items():
                    out[ch] = out.get(ch, 1.0) * f
        return out

    def pclean(self, key, n, cg=None, baselines=None, **kw) -> dict:
        pp = self.pparams(key)
        info = self.pstates[n].pretuned[key]
        cg = info["cg"] if cg is None else cg
        names = baselines or info["baselines"]
        f = self.pfactor(key, n, **kw)
        h = pp["base"] / pp["sh"] * f["hel"] + (0 if cg else 0.012)
        per = {}
        for nm in names:
            bm = pp["base"] * math.exp(rng_for(self.seed, "bl", key[1], nm).normal(0, 0.2)) * f["base"] + \
                (0 if cg else 0.007)
            per[nm] = bm / h
        best = np.max(np.stack([1 / v for v in per.values()]), axis=0)  # fastest baseline
        return {"geomean": gm(1 / best), "per": per}

    # ------------------------------------------------------------------ labels
    def _rid(self, n, source):
        return self.nights[n].run_id if source == "dashboard" else self.nights[n].p_run_id

    def add_label(self, source, cause, kind, direction, members, metrics, n0, end=None, culprit=None,
                  change=None, honest=None, note=""):
        members = tuple(sorted(set(members)))
        if not members or n0 < 1:
            return None
        self._lid += 1
        lab = Label(id=f"k{self.seed}-{self._lid:03d}", source=source, cause=cause, kind=kind,
                    direction=direction, members=members, metrics=tuple(metrics),
                    first_bad_run_id=self._rid(n0, source), last_good_run_id=self._rid(n0 - 1, source),
                    end_run_id=self._rid(end, source) if end is not None else None, culprit_sha=culprit,
                    change_sha=change, honest_speedup=honest or {}, note=note)
        self.labels.append(lab)
        for m in members:
            self._busy.setdefault((source, m), []).append(n0)
        return lab

    def free(self, source, key, n, gap=4):
        return all(abs(n - x) > gap for x in self._busy.get((source, key), []))

    def _commit_between(self, n, test, pretuned=False):
        """The first-parent commit in (night n-1, night n] after which test(state) changes."""
        idx = self.pfpi if pretuned else self.fpi
        lo, hi = idx[n - 1], idx[n]
        prev = RS.read_state(self.R, self.fp[lo]["sha"])
        v0 = test(prev)
        for j in range(lo + 1, hi + 1):
            s = RS.read_state(self.R, self.fp[j]["sha"])
            if test(s) != v0:
                return self.fp[j]["sha"]
        return self.fp[hi]["sha"]

    def _moves(self, before, after, sp_thr=0.03, lat_thr=0.05):
        mets = []
        for m, thr in ((SP, sp_thr), (TRI, sp_thr), (TC, sp_thr), (LAT, lat_thr), (COMP, 0.2)):
            a, b = before.get(m), after.get(m)
            if a and b and abs(math.log(b / a)) >= thr:
                mets.append(m)
        return mets

    # ------------------------------------------------------------------ natural events
    def _natural_events(self):
        for n in range(1, self.N):
            s0, s1 = self.states[n - 1], self.states[n]
            if s0.sha != s1.sha:
                self._natural_dash(n, s0, s1)
            p0, p1 = self.pstates[n - 1], self.pstates[n]
            if p0 is not None and p1 is not None and p0.sha != p1.sha:
                self._natural_pretuned(n, p0, p1)

    def _natural_dash(self, n, s0, s1):
        both = [k for k in self.present[n] if k in self.present[n - 1]]
        groups: dict = {}
        for key in both:
            b = self.clean(key, n - 1)
            if self.shape_idx(key, n - 1).tolist() != self.shape_idx(key, n).tolist():
                groups.setdefault(("shapes", None), []).append(key)
            if self.is_cg(key, n - 1) != self.is_cg(key, n):
                groups.setdefault(("cudagraph", None), []).append(key)
            v0, v1 = self.mech_values(key, n - 1), self.mech_values(key, n)
            for mech in v1:
                if v0.get(mech) != v1[mech]:
                    groups.setdefault((mech, key[0] if mech in ("runner", "image") else None), []).append(key)
        for (mech, alias), keys in groups.items():
            kind, cause = {"shapes": ("shapes", "method_change"), "cudagraph": ("cudagraph", "method_change"),
                           "runner": ("runner", "hardware"), "image": ("driver/toolchain", "hardware"),
                           "torch": ("baseline", "method_change"), "autotune": ("autotune", "method_change"),
                           "tbpin": ("baseline", "method_change"), "latmode": ("timer", "method_change")}[mech]
            members, mets, honest, dirs = [], set(), {}, []
            for key in keys:
                b, a = self.clean(key, n - 1), self.clean(key, n)
                mv = self._moves(b, a)
                if not mv:
                    continue
                members.append(key)
                mets.update(mv)
                dirs.append(math.log(a[SP] / b[SP]) if SP in mv else -math.log(a[LAT] / b[LAT]))
                if mech == "cudagraph":
                    hv = self.clean(key, n, force_cg=True)[SP]
                elif mech in ("autotune", "latmode"):
                    hv = self.clean(key, n, override={mech: self.mech_values(key, n - 1)[mech]})[SP]
                elif cause == "hardware":
                    hv = self.clean(key, n, override={mech: self.mech_values(key, n - 1)[mech]})[SP]
                else:
                    hv = a[SP]
                honest[f"{key[0]}/{key[1]}"] = round(hv, 4)
            if not members:
                continue
            if mech in ("shapes", "cudagraph"):
                test = lambda s, keys=tuple(members), mech=mech: tuple(
                    (s.mappings.get(k[1], {}).get("nocg"), s.mappings.get(k[1], {}).get("num_inputs"),
                     s.max_inputs, s.linattn[2:], s.bench.get("flags")) for k in keys)
            elif mech in ("runner", "image"):
                test = lambda s, alias=alias: (s.platforms.get(alias) or {}).get(
                    "runner") if mech == "runner" else ((s.platforms.get(alias) or {}).get("image"),
                                                        (s.platforms.get(alias) or {}).get("runtime"))
            elif mech == "tbpin":
                test = lambda s: s.tb_pin
            else:
                key_of = {"torch": "torch_pin", "autotune": "autotune_env", "latmode": "latency_mode"}[mech]
                test = lambda s, key_of=key_of: s.bench.get(key_of)
            change = self._commit_between(n, test)
            end = self._revert_end(n, members, lambda k, nn: self.mech_values(k, nn).get(mech)
                                   if mech not in ("shapes", "cudagraph") else
                                   (self.is_cg(k, nn), self.shape_idx(k, nn).tolist()))
            self.add_label("dashboard", cause, kind, "improvement" if sum(dirs) > 0 else "regression",
                           members, sorted(mets), n, end=end, change=change, honest=honest,
                           note=f"real diff at {change[:8]}: {mech} ({self._subject(change)})")

    def _revert_end(self, n, members, value):
        key = members[0]
        v_new = value(key, n)
        for m in range(n + 1, self.N):
            if key not in self.present[m]:
                continue
            if value(key, m) != v_new:
                return m - 1
        return None

    def _subject(self, sha):
        return self.fp[self.fp_index[sha]]["subject"][:90]

    def _natural_pretuned(self, n, p0, p1):
        both = [k for k in self.ppresent[n] if k in self.ppresent[n - 1]]
        groups: dict = {}
        for key in both:
            i0, i1 = p0.pretuned[key], p1.pretuned[key]
            if i0["cg"] != i1["cg"]:
                groups.setdefault("cudagraph", []).append(key)
            if set(i0["baselines"]) != set(i1["baselines"]):
                groups.setdefault("baseline", []).append(key)
            if i0["aot"] != i1["aot"]:
                groups.setdefault(("aot", key), []).append(key)
        if p0.pretuned_bench != p1.pretuned_bench:
            groups["timer"] = both
        if p0.pretuned_env != p1.pretuned_env:
            groups["penv"] = both
        for g, keys in groups.items():
            mech = g[0] if isinstance(g, tuple) else g
            members, honest, dirs = [], {}, []
            for key in keys:
                b, a = self.pclean(key, n - 1)["geomean"], self.pclean(key, n)["geomean"]
                if abs(math.log(a / b)) < 0.03:
                    continue
                members.append(key)
                dirs.append(math.log(a / b))
                if mech == "cudagraph" and not p1.pretuned[key]["cg"]:
                    hv = self.pclean(key, n, cg=True)["geomean"]
                elif mech == "timer":
                    hv = self.pclean(key, n, override={"bench": p0.pretuned_bench})["geomean"]
                else:
                    hv = a
                honest[f"{key[0]}/{key[1]}"] = round(hv, 4)
            if not members:
                continue
            cause, kind = {"cudagraph": ("method_change", "cudagraph"), "baseline": ("method_change", "baseline"),
                           "aot": ("real", "heuristics/config"), "timer": ("method_change", "timer"),
                           "penv": ("method_change", "baseline")}[mech]
            if mech == "aot":
                test = lambda s, key=keys[0]: (s.pretuned.get(key) or {}).get("aot")
            elif mech == "timer":
                test = lambda s: s.pretuned_bench
            elif mech == "penv":
                test = lambda s: s.pretuned_env
            else:
                test = lambda s, ks=tuple(members): tuple(
                    ((s.pretuned.get(k) or {}).get("cg"), (s.pretuned.get(k) or {}).get("baselines")) for k in ks)
            sha = self._commit_between(n, test, pretuned=True)
            self.add_label("pretuned", cause, kind, "improvement" if sum(dirs) > 0 else "regression",
                           members, ["geomean"], n, culprit=sha if cause == "real" else None,
                           change=None if cause == "real" else sha, honest=honest,
                           note=f"real diff at {sha[:8]}: pretuned {mech} ({self._subject(sha)})")

    # ------------------------------------------------------------------ planted events
    def _slice(self, c):
        subj = c["subject"].lower()
        files = RS.files_of(self.R, c["sha"])
        code = [f for f in files if f.startswith("helion/")]
        if not code:
            return None, files
        if re.search(r"\[(cute|cutedsl)\]", subj) or any("/cute/" in f for f in code):
            return "cute", files
        if re.search(r"\[(pallas|pallas-tpu|tpu)\]", subj) or any("pallas" in f for f in code):
            return "tpu", files
        if re.search(r"\[rocm\]|\bamd\b|rocm|gfx9", subj) or any(re.search(r"rocm|amd|gfx9", f) for f in code):
            return "amd", files
        if re.search(r"autotun|heuristic|config|retune|num_warps|block.?size", subj) and \
                any("autotuner" in f or "heuristic" in f or re.search(r"sm90|sm100|gfx950", f) for f in code):
            return "heur", files
        if re.search(r"\[(docs|ci|dashboard|benchmark|benchmark ci)\]|revert", subj):
            return None, files
        return "triton", files

    def _night_after(self, fp_i, pretuned=False):
        idx = self.pfpi if pretuned else self.fpi
        for n in range(1, self.N):
            if idx[n - 1] < fp_i <= idx[n]:
                return n
        return None

    def _planted_events(self):
        r = self.rng
        N = self.N
        lo_i, hi_i = self.fpi[0], self.fpi[-1]
        cands = []
        for j in range(lo_i + 1, hi_i + 1):
            c = self.fp[j]
            n = self._night_after(j)
            if n is None or n < 3:
                continue
            sl, files = self._slice(c)
            if sl:
                cands.append((n, c, sl, files))
        order = r.permutation(len(cands))
        want = {"triton": 3, "cute": 1, "tpu": 1, "amd": 1, "heur": 2}
        if N < 60:
            want = {k: 1 for k in want}
        got = {k: 0 for k in want}
        late_done = False
        # one late move first
        for n, c, sl, files in sorted(cands, key=lambda x: -x[0])[:12]:
            if n >= N - 4 and self._plant_real(n, c, sl, files, late=True):
                late_done = True
                break
        for i in order:
            n, c, sl, files = cands[i]
            if got.get(sl, 0) >= want.get(sl, 0):
                continue
            if self._plant_real(n, c, sl, files):
                got[sl] += 1
        # reverts: a code commit reverted by a real revert commit inside the window
        for j in range(lo_i + 1, hi_i + 1):
            c = self.fp[j]
            m = re.match(r'Revert "(.*)"', c["subject"])
            if not m:
                continue
            orig = next((self.fp[i] for i in range(j - 1, lo_i, -1) if self.fp[i]["subject"].startswith(m.group(1)[:40])), None)
            if orig is None:
                continue
            n0, n1 = self._night_after(self.fp_index[orig["sha"]]), self._night_after(j)
            if n0 is None or n1 is None or n1 - n0 < 2 or n0 < 2:
                continue
            sl, files = self._slice(orig)
            if sl:
                self._plant_real(n0, orig, sl, files, end=n1, revert=c["sha"])
        self._plant_pretuned_real(cands)
        self._plant_harness()
        self._plant_hardware()
        self._plant_noise()
        self._plant_second_events(cands)
        self._plant_manual_runs()

    def _aliases_for(self, sl, n):
        st = self.states[n]
        have = [a for a in st.platforms if a in self.states[n - 1].platforms]
        if sl == "cute":
            return [a for a in have if a == "b200_cute"]
        if sl == "tpu":
            return [a for a in have if a == "tpu"]
        if sl == "amd":
            return [a for a in have if a.startswith("mi")][:1]
        tri = [a for a in have if a in ("h100", "b200")]
        if not tri:
            return []
        k = int(self.rng.integers(1, len(tri) + 1))
        return sorted(self.rng.choice(tri, size=k, replace=False).tolist())

    def _plant_real(self, n, c, sl, files, end=None, revert=None, late=False, keys=None, gap=4):
        aliases = self._aliases_for(sl, n)
        if not aliases:
            return False
        r = rng_for(self.seed, "real", c["sha"])
        if keys is None:
            keys = []
            named = {Path(f).stem for f in files}
            for a in aliases:
                avail = [k for k in self.present[n] if k[0] == a and k in self.present[n - 1]
                         and self.series[k]["suite"] != "linattn" and self.free("dashboard", k, n, gap)]
                if not avail:
                    continue
                hit = [k for k in avail if k[1] in named or k[1].split("-")[0] in named]
                pool = hit or avail
                cnt = min(len(pool), int(r.integers(1, 4)))
                keys += [pool[i] for i in r.choice(len(pool), size=cnt, replace=False)]
        if not keys:
            return False
        sign = -1 if r.random() < 0.6 else 1
        mag = r.uniform(0.09, 0.25)
        eff = {}
        for k in keys:
            f = {"hel": math.exp(-sign * mag * r.uniform(0.8, 1.2))}
            if r.random() < 0.3:
                f["comp"] = r.uniform(1.4, 2.0) if sign < 0 else r.uniform(0.5, 0.7)
            eff[k] = f
        e = Effect(f"real-{c['sha'][:8]}-{n}", n, (end + 1) if end is not None else None, eff)
        self.effects.append(e)
        honest = {}
        mets = {SP, LAT}
        for k in keys:
            honest[f"{k[0]}/{k[1]}"] = round(self.clean(k, n)[SP], 4)
            if "comp" in eff[k]:
                mets.add(COMP)
        kind = "heuristics/config" if sl == "heur" else "code"
        note = f"planted on {c['sha'][:8]} [{sl}] {c['subject'][:70]}"
        if revert:
            note += f"; reverted by {revert[:8]}"
        if late:
            note += "; late in window"
        self.add_label("dashboard", "real", kind, "regression" if sign < 0 else "improvement", keys,
                       sorted(mets), n, end=end, culprit=c["sha"], honest=honest, note=note)
        return True

    def _plant_pretuned_real(self, cands):
        if not any(self.ppresent):
            return
        done = 0
        for n, c, sl, files in sorted(cands, key=lambda x: h32(self.seed, x[1]["sha"])):
            if done >= 2:
                break
            pn = self._night_after(self.fp_index[c["sha"]], pretuned=True)
            if pn is None or pn < 2 or self.pstates[pn - 1] is None:
                continue
            keys = [k for k in self.ppresent[pn] if k in self.ppresent[pn - 1] and self.free("pretuned", k, pn)]
            if sl == "cute":
                keys = [k for k in keys if "cute" in k[1]]
            elif sl == "triton":
                named = {Path(f).stem for f in files}
                keys = [k for k in keys if k[1] in named] or [k for k in keys if k[0] == "h100"][:0]
            elif sl == "heur":
                keys = [k for k in keys if "cute" not in k[1]][:0]
            else:
                keys = []
            if not keys:
                continue
            r = rng_for(self.seed, "preal", c["sha"])
            keys = keys[: int(r.integers(1, 3))]
            sign = -1 if r.random() < 0.5 else 1
            eff = {("P",) + k: {"hel": math.exp(-sign * r.uniform(0.08, 0.2))} for k in keys}
            self.effects.append(Effect(f"preal-{c['sha'][:8]}", pn, None, eff))
            honest = {f"{k[0]}/{k[1]}": round(self.pclean(k, pn)["geomean"], 4) for k in keys}
            self.add_label("pretuned", "real", "code", "regression" if sign < 0 else "improvement", keys,
                           ["geomean"], pn, culprit=c["sha"], honest=honest,
                           note=f"planted on {c['sha'][:8]} [{sl}] {c['subject'][:70]}")
            # the same commit on the dashboard's CuTe rows: one commit, events in both sources
            if sl == "cute":
                n = self._night_after(self.fp_index[c["sha"]])
                if n and not any(l.culprit_sha == c["sha"] and l.source == "dashboard" for l in self.labels):
                    self._plant_real(n, c, sl, files)
            done += 1

    def _plant_harness(self):
        """Real commits that touch the benchmark harness (benchmarks/run.py) without changing the
        parsed mappings: the speedup timer path moves for a few kernels, latency does not."""
        lo_i, hi_i = self.fpi[0], self.fpi[-1]
        picked = 0
        for j in range(lo_i + 1, hi_i + 1):
            c = self.fp[j]
            if picked >= 2 or not re.search(r"subprocess|timeout|tritonbench|measure|harness|once|bench",
                                             c["subject"], re.I):
                continue
            n = self._night_after(j)
            if n is None or n < 3 or n > self.N - 2:
                continue
            files = RS.files_of(self.R, c["sha"])
            if "benchmarks/run.py" not in files or any(l.change_sha == c["sha"] for l in self.labels):
                continue
            r = rng_for(self.seed, "harn", c["sha"])
            keys = [k for k in self.present[n] if k in self.present[n - 1] and self.series[k]["suite"] ==
                    "tritonbench" and self.free("dashboard", k, n)]
            kern = sorted({k[1] for k in keys})
            if not kern:
                continue
            chosen = set(r.choice(kern, size=min(len(kern), int(r.integers(2, 4))), replace=False).tolist())
            keys = [k for k in keys if k[1] in chosen]
            sign = r.choice([-1, 1])
            eff = {k: {"hcg": math.exp(-sign * r.uniform(0.08, 0.15))} for k in keys}
            e = Effect(f"harness-{c['sha'][:8]}", n, None, eff)
            self.effects.append(e)
            honest = {f"{k[0]}/{k[1]}": round(self.clean(k, n, exclude={e.eid})[SP], 4) for k in keys}
            self.add_label("dashboard", "method_change", "harness", "regression" if sign < 0 else "improvement",
                           keys, [SP], n, change=c["sha"], honest=honest,
                           note=f"planted on harness commit {c['sha'][:8]} {c['subject'][:70]}")
            picked += 1

    def _ri(self, r, lo, hi):
        """A random night in [lo, hi), squeezed into [1, N-1) for short builds."""
        lo = max(1, min(lo, self.N // 3))
        hi = max(lo + 1, min(hi, self.N - 1))
        return int(r.integers(lo, hi))

    def _plant_hardware(self):
        r = rng_for(self.seed, "hw")
        N = self.N
        # thermal throttling episodes
        for t in range(3 if N >= 60 else 1):
            for _try in range(30):
                n0 = self._ri(r, 5, N - 6)
                aliases = [a for a in self.states[n0].platforms if a in self.states[n0 - 1].platforms]
                alias = aliases[int(r.integers(0, len(aliases)))]
                L = int(r.integers(2, 7))
                if all(self.free("dashboard", k, n0, 4) and self.free("dashboard", k, min(N - 1, n0 + L), 3)
                       for k in self.present[n0] if k[0] == alias):
                    break
            n1 = min(N - 1, n0 + L)
            keys = [k for k in self.present[n0] if k[0] == alias and k in self.present[n0 - 1]]
            h = r.uniform(1.12, 1.25)
            sb = r.uniform(0.92, 0.96)
            eff = {k: {"hel": h, "base": h * sb, "tri": h * sb, "tc": h * sb} for k in keys}
            e = Effect(f"thermal-{alias}-{n0}", n0, n1, eff)
            self.effects.append(e)
            honest = {f"{k[0]}/{k[1]}": round(self.clean(k, n0, exclude={e.eid})[SP], 4) for k in keys}
            self.add_label("dashboard", "hardware", "thermal", "regression", keys, [SP, LAT], n0, end=n1 - 1,
                           honest=honest, note=f"{alias} throttling nights {n0}..{n1 - 1}")
            pk = [k for k in self.ppresent[n0] if k[0] == alias and k in self.ppresent[n0 - 1]] \
                if self.pstates[n0] is not None and self.pstates[n0 - 1] is not None else []
            if pk:
                self.effects.append(Effect(f"pthermal-{alias}-{n0}", n0, n1,
                                           {("P",) + k: {"hel": h, "base": h * sb} for k in pk}))
                self.add_label("pretuned", "hardware", "thermal", "regression", pk, ["geomean"], n0, end=n1 - 1,
                               honest={f"{k[0]}/{k[1]}": round(self.pclean(k, n0, exclude={f"pthermal-{alias}-{n0}"})["geomean"], 4) for k in pk},
                               note=f"{alias} throttling also hit the pretuned run")
        # outages
        for t in range(3 if N >= 60 else 1):
            for _try in range(30):
                n0 = self._ri(r, 4, N - 3)
                aliases = [a for a in self.states[n0].platforms if a in self.states[n0 - 1].platforms]
                alias = aliases[int(r.integers(0, len(aliases)))]
                L = int(r.integers(1, 5))
                if all(self.free("dashboard", k, n0, 4) and self.free("dashboard", k, min(N - 1, n0 + L), 3)
                       for k in self.present[n0] if k[0] == alias):
                    break
            n1 = min(N - 1, n0 + L)
            if any((alias, m) in self.missing for m in range(n0 - 3, n1 + 3)):
                continue
            for m in range(n0, n1):
                self.missing.add((alias, m))
            keys = [k for k in self.present[n0] if k[0] == alias and k in self.present[n0 - 1]]
            self.add_label("dashboard", "hardware", "outage", "regression", keys, [SP], n0,
                           end=n1 - 1 if n1 < N else None, honest={},
                           note=f"{alias} produced no results nights {n0}..{n1 - 1}")

    def _plant_noise(self):
        r = rng_for(self.seed, "noise")
        N = self.N
        for t in range(3 if N >= 60 else 1):
            n0 = self._ri(r, 10, N - 20)
            keys = [k for k in self.present[n0] if k in self.present[n0 - 1] and self.free("dashboard", k, n0, 8)]
            k = keys[int(r.integers(0, len(keys)))]
            self.scatter[k] = (n0, float(r.uniform(0.06, 0.1)))
            self.add_label("dashboard", "noise", "scatter", "regression", [k], [SP, LAT], n0,
                           honest={f"{k[0]}/{k[1]}": round(self.clean(k, n0)[SP], 4)},
                           note="series turns noisy (per-timer scatter 6-10%) and stays so")
        for t in range(3 if N >= 60 else 1):
            n0 = self._ri(r, 3, N - 1)
            keys = [k for k in self.present[n0] if k in self.present[n0 - 1] and self.free("dashboard", k, n0, 6)
                    and k not in self.scatter]
            k = keys[int(r.integers(0, len(keys)))]
            ch = ["hcg", "base", "lat"][t % 3]
            f = float(r.uniform(1.3, 1.5))
            self.outliers[(k, n0)] = (ch, f)
            direction = "improvement" if ch == "base" else "regression"
            self.add_label("dashboard", "noise", "outlier", direction, [k], [LAT] if ch == "lat" else [SP], n0,
                           honest={f"{k[0]}/{k[1]}": round(self.clean(k, n0)[SP], 4)},
                           note=f"single-night outlier on one timer ({ch} x{f:.2f})")
        if any(self.ppresent):
            ns = [n for n in range(2, N - 1) if self.pstates[n] is not None and self.pstates[n - 1] is not None]
            if ns:
                n0 = ns[int(r.integers(0, len(ns)))]
                keys = [k for k in self.ppresent[n0] if k in self.ppresent[n0 - 1] and self.free("pretuned", k, n0)]
                if keys:
                    k = keys[int(r.integers(0, len(keys)))]
                    self.outliers[(("P",) + k, n0)] = ("hel", 1.35)
                    self.add_label("pretuned", "noise", "outlier", "regression", [k], ["geomean"], n0,
                                   honest={f"{k[0]}/{k[1]}": round(self.pclean(k, n0)["geomean"], 4)},
                                   note="single-night pretuned outlier")

    def _plant_second_events(self, cands):
        """Two events in one series: a later real commit on a series that already has an event."""
        done = 0
        for lab in list(self.labels):
            if done >= 2 or lab.source != "dashboard" or lab.cause not in ("real", "method_change"):
                continue
            key = lab.members[0]
            n_first = self.night_of(lab.first_bad_run_id)
            for n, c, sl, files in cands:
                if n - n_first < 10 or n > self.N - 2 or key not in self.present[n] or key not in self.present[n - 1]:
                    continue
                if sl not in ("triton", "heur") or key[0] not in ("h100", "b200"):
                    continue
                if not self.free("dashboard", key, n, 6) or any(l.culprit_sha == c["sha"] for l in self.labels):
                    continue
                if self._plant_real(n, c, sl, files, keys=[key], gap=6):
                    self.labels[-1] = self.labels[-1].__class__(**{**self.labels[-1].__dict__,
                                                                    "note": self.labels[-1].note + "; second event on this series"})
                    done += 1
                    break

    def _plant_manual_runs(self):
        r = rng_for(self.seed, "manual")
        self.manual = []
        for t in range(4 if self.N >= 40 else 1):
            n = self._ri(r, 1, self.N - 1)
            branch = "main" if t % 2 == 0 else "yifeixu/tpu-nightly-benchmark"
            alias = "b200" if "b200" in self.states[n].platforms else next(iter(self.states[n].platforms))
            self.manual.append({"n": n, "branch": branch, "nightly": branch != "main", "alias": alias,
                                "run_id": str(int(self.nights[n].run_id) + 350_000 + int(r.integers(0, 9000))),
                                "slow": float(r.uniform(0.6, 0.8))})

    # ------------------------------------------------------------------ simulation
    def _dash_records(self, key, n, rng, manual_slow=1.0):
        p = self.params(key)
        alias, k = key
        idx = self.shape_idx(key, n)
        f = self.factors(key, n)
        cg = self.is_cg(key, n)
        P = self.plat_factor[(alias, n)]
        sig_cg, sig_db = p.sig_cg, p.sig_db
        if key in self.scatter and n >= self.scatter[key][0]:
            sig_cg = sig_db = self.scatter[key][1]
        st = self.states[n]
        at_noise = 0.0 if "HELION_AUTOTUNE_RANDOM_SEED" in st.nightly_env else 0.015
        hn = math.exp(rng.normal(0, at_noise)) if self.series[key]["suite"] == "tritonbench" else 1.0
        m = len(idx)
        eps = lambda s: np.exp(rng.normal(0, s, m))
        B = p.base[idx] * P
        out = {"hcg": 1.0, "base": 1.0, "lat": 1.0}
        if (key, n) in self.outliers:
            ch, fo = self.outliers[(key, n)]
            out[ch] = fo
        # stray single-timer outliers (~1%), unlabeled
        if rng.random() < 0.01:
            out[["hcg", "base", "lat"][int(rng.integers(0, 3))]] *= rng.uniform(1.15, 1.2)
        b = B * f["base"] * out["base"] * eps(sig_cg)
        h = B / p.sh[idx] * f["hel"] * f["hcg"] * hn * out["hcg"] * manual_slow * eps(sig_cg)
        t = B / p.st[idx] * f["tri"] * eps(sig_cg)
        c = B / p.sc[idx] * f["tc"] * eps(sig_cg)
        if not cg:
            b, h, t, c = b + 0.006, h + 0.02, t + 0.009, c + 0.013
        lat = (B / p.sh[idx] * f["hel"] * f["lat"] * hn * out["lat"] * manual_slow + 0.002) * eps(sig_db)
        comp = p.comp[idx] * f["comp"] * np.exp(rng.normal(0, 0.05, m))
        sp_h, sp_t, sp_c = b / h, b / t, b / c
        acc = np.ones(m)
        fail = rng.random(m) < 0.004
        sp_h = np.where(fail, 0.0, sp_h)
        acc = np.where(fail, 0.0, acc)
        lat = np.where(fail, 0.0, lat)
        rnd = lambda a: [round(float(x), 4) for x in a]
        shapes = [p.shapes[i] for i in idx]
        suite = self.series[key]["suite"]
        mets = {"helion_speedup": rnd(sp_h), "helion_accuracy": rnd(acc), "helion_latency_ms": rnd(lat)}
        if suite == "tritonbench":
            mets["triton_speedup"] = rnd(sp_t)
            mets["torch_compile_speedup"] = rnd(sp_c)
            if st.bench.get("compile_time"):
                mets["helion_compile_time_s"] = [round(float(x), 2) for x in comp]
        elif suite in ("tpu", "tpu_bridge"):
            mets["torch_compile_speedup"] = rnd(sp_c)
            mets["helion_compile_time_s"] = [round(float(x), 2) for x in comp]
        return shapes, mets

    def _write_dash_run(self, run_dir: Path, n, rng, only_alias=None, manual_slow=1.0):
        by_art: dict = {}
        for key, suite in sorted(self.present[n].items()):
            alias, k = key
            if only_alias and alias != only_alias:
                continue
            if (alias, n) in self.missing or rng.random() < 0.003:
                continue
            shapes, mets = self._dash_records(key, n, rng, manual_slow if k == self._slow_kernel(alias, n) else 1.0)
            art_alias = "tpu_bridge" if suite == "tpu_bridge" and self.states[n].platforms.get("tpu") else alias
            extra = {"device": DEVICE.get(alias, alias)}
            if suite == "tritonbench":
                extra["backend"] = self.states[n].platforms[alias].get("backend") or "triton"
            elif suite == "linattn":
                extra.update(backend="triton", baseline_label="FLA")
            recs = [{"benchmark": {"name": "Helion Benchmark", "extra_info": extra}, "model": {"name": k},
                     "metric": {"name": mn, "benchmark_values": v}, "shape": shapes} for mn, v in mets.items()]
            name = f"benchmark-results-{art_alias}-{k}" if suite != "linattn" else f"benchmark-results-{alias}-{k}.linattn"
            by_art.setdefault(name, []).extend(recs)
        for name, recs in by_art.items():
            d = run_dir / name
            d.mkdir(parents=True, exist_ok=True)
            (d / "helionbench.json").write_text(json.dumps(recs))

    def _slow_kernel(self, alias, n):
        ks = sorted(k for (a, k) in self.present[n] if a == alias)
        return ks[h32(self.seed, "slowk", n) % len(ks)] if ks else None

    def _write_pretuned_run(self, run_dir: Path, n, rng):
        pst = self.pstates[n]
        by_alias: dict = {}
        for key in sorted(self.ppresent[n]):
            alias, k = key
            if (alias, n) in self.missing:
                continue
            info = pst.pretuned[key]
            rec = {"kernel": k, "pretuned_hardware": [alias], "device": DEVICE[alias],
                   "compute_capability": "sm90" if alias == "h100" else "sm100"}
            if rng.random() < 0.005:
                rec["error"] = "RuntimeError: CUDA error: an illegal memory access was encountered"
                by_alias.setdefault(alias, []).append(rec)
                continue
            pp = self.pparams(key)
            f = self.pfactor(key, n)
            o = self.outliers.get((("P",) + key, n))
            T = pp["T"]
            h = pp["base"] / pp["sh"] * f["hel"] * (o[1] if o else 1.0) * np.exp(rng.normal(0, pp["sig"], T)) + \
                (0 if info["cg"] else 0.012)
            per = {}
            for nm in info["baselines"]:
                bm = pp["base"] * math.exp(rng_for(self.seed, "bl", k, nm).normal(0, 0.2)) * f["base"] * \
                    np.exp(rng.normal(0, pp["sig"], T)) + (0 if info["cg"] else 0.007)
                per[nm] = bm / h
            best = 1 / np.max(np.stack([1 / v for v in per.values()]), axis=0)
            rec.update(helion_wins=int((best > 1).sum()), total=T, geomean=round(gm(best), 6),
                       best_speedup=round(float(best.max()), 6), cudagraph=info["cg"])
            if len(per) > 1:
                rec["baselines"] = {nm: {"wins": int((v > 1).sum()), "total": T, "geomean": round(gm(v), 6),
                                         "best_speedup": round(float(v.max()), 6)} for nm, v in per.items()}
            by_alias.setdefault(alias, []).append(rec)
        for alias, recs in by_alias.items():
            d = run_dir / f"pretuned-results-{alias}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))

    def _load_builders(self, tmp: Path):
        mods = {}
        for name in ("build_dashboard_data", "build_pretuned_dashboard_data"):
            src = self.R.git("show", f"{BUILDER_REF}:.github/dashboard/{name}.py")
            path = tmp / "checkout" / ".github" / "dashboard" / f"{name}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(src)
            spec = importlib.util.spec_from_file_location(f"_k{self.seed}_{name}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mods[name] = mod
        return mods

    @staticmethod
    def _freeze(mod, now: datetime):
        import datetime as real

        class Frozen(real.datetime):
            @classmethod
            def now(cls, tz=None):
                return now
        shim = types.SimpleNamespace(datetime=Frozen, timedelta=real.timedelta, timezone=real.timezone)
        mod.datetime = shim

    def _build_documents(self):
        tmp = Path(tempfile.mkdtemp(prefix=f"k{self.seed}-", dir=self.workdir))
        try:
            mods = self._load_builders(tmp)
            D, PD = mods["build_dashboard_data"], mods["build_pretuned_dashboard_data"]
            runs, pruns = [], []
            prev = prev_p = None
            iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
            manual_by_n = {}
            for m in self.manual:
                manual_by_n.setdefault(m["n"], []).append(m)
            for n, nt in enumerate(self.nights):
                rng = rng_for(self.seed, "night", n)
                cache = tmp / "cache"
                shutil.rmtree(cache, ignore_errors=True)
                cache.mkdir()
                self._write_dash_run(cache / nt.run_id, n, rng)
                runs.append({"run_id": nt.run_id, "sha": nt.sha, "full_sha": nt.full_sha, "date": iso(nt.date),
                             "branch": "main", "is_nightly": True})
                for m in manual_by_n.get(n, []):
                    self._write_dash_run(cache / m["run_id"], n, rng, only_alias=m["alias"], manual_slow=m["slow"])
                    runs.append({"run_id": m["run_id"], "sha": nt.sha, "full_sha": nt.full_sha,
                                 "date": iso(nt.date + timedelta(hours=7)), "branch": m["branch"],
                                 "is_nightly": m["nightly"]})
                wf = tmp / "dispatch.yml"
                wf.write_text(self.states[n].dispatch_text)
                self._freeze(D, nt.date + timedelta(hours=9))
                doc = D.build_dashboard_data(str(cache), list(runs), json.loads(prev) if prev else None,
                                             D.get_active_platforms(str(wf)) or None,
                                             D.get_expected_kernels_per_platform(str(wf)))
                prev = json.dumps(doc).encode()
                self._docs.append(zlib.compress(prev, 3))
                if nt.p_run_id:
                    pst = self.pstates[n]
                    self._write_pretuned_run(cache / nt.p_run_id, n, rng)
                    pt = nt.date + timedelta(hours=2)
                    pruns.append({"run_id": nt.p_run_id, "sha": nt.p_full_sha[:8], "full_sha": nt.p_full_sha,
                                  "date": iso(pt), "branch": "main", "is_nightly": True})
                    pwf = tmp / "pdispatch.yml"
                    pwf.write_text(pst.pretuned_dispatch_text)
                    self._freeze(PD, pt + timedelta(hours=2))
                    pdoc = PD.build_dashboard_data(str(cache), list(pruns), json.loads(prev_p) if prev_p else None,
                                                   PD.get_active_platforms(str(pwf)) or None)
                    prev_p = json.dumps(pdoc).encode()
                    self._pdocs.append(zlib.compress(prev_p, 3))
                else:
                    self._pdocs.append(None)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # ------------------------------------------------------------------ API
    def dashboard_bytes(self, n: int) -> bytes:
        return zlib.decompress(self._docs[n])

    def pretuned_bytes(self, n: int) -> bytes | None:
        b = self._pdocs[n]
        return zlib.decompress(b) if b is not None else None

    def series_count(self) -> int:
        dash = len(self.series) * 5  # helion/triton/torch.compile speedup, latency, compile time
        return dash + len(self.pseries)

    def close(self):
        self.R.close()


def build_world(seed: int, workdir: Path, nights: int | None = None) -> KWorld:
    return KWorld(seed, Path(workdir), nights)
