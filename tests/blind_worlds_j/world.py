"""World J: nightlies on the real Helion shas, simulated per-shape timers, documents built by
Helion's own dashboard builders (imported from a temporary checkout at build time)."""
from __future__ import annotations

import importlib.util
import json
import math
import shutil
import tempfile
import types
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night  # noqa: F401  (re-exported)

from . import facts as F
from . import repo as R
from .model import COMPONENTS, DEVICE, Effect, PretunedModel, SeriesModel, geo, h64, rng_for

END = {91: datetime(2026, 5, 15, tzinfo=timezone.utc), 92: datetime(2026, 8, 4, tzinfo=timezone.utc),
       93: datetime(2026, 8, 22, tzinfo=timezone.utc)}
DASH_RUN0 = 24_000_000_000
PRE_RUN0 = 27_500_000_000


def iso(d: datetime) -> str:
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load_builder(repo: Path, name: str, tmp: Path):
    """Import one of Helion's own builders from a temporary copy of the repo's file."""
    src = repo / ".github" / "dashboard" / f"{name}.py"
    dst = tmp / f"bwj_{name}.py"
    shutil.copyfile(src, dst)
    spec = importlib.util.spec_from_file_location(f"bwj_{name}_{h64(str(tmp)) % 10**9}", dst)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    clock = {"now": datetime.now(timezone.utc)}

    class _DT(datetime):
        @classmethod
        def now(cls, tz=None):
            return clock["now"]

    # the builder's 365-day retention is measured from the night the document is published
    mod.datetime = types.SimpleNamespace(datetime=_DT, timedelta=timedelta, timezone=timezone)
    mod._bwj_clock = clock
    return mod


class Run:
    def __init__(self, run_id, full_sha, date, branch, is_nightly, night, kind, plats=None):
        self.run_id, self.full_sha, self.date = run_id, full_sha, date
        self.branch, self.is_nightly, self.night, self.kind, self.plats = branch, is_nightly, night, kind, plats

    def meta(self) -> dict:
        return {"run_id": self.run_id, "sha": self.full_sha[:8], "full_sha": self.full_sha,
                "date": iso(self.date), "branch": self.branch, "is_nightly": self.is_nightly}


class WorldJ:
    def __init__(self, seed: int, workdir: Path, nights: int | None = None):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f"bwj{seed}-", dir=str(self.workdir)))
        self.repo = R.clone_repo(self.tmp)
        self.blobs = R.Blobs(self.repo)
        self.commits = R.first_parent(self.repo)
        self.fp_index = {c.sha: i for i, c in enumerate(self.commits)}
        self.fr = F.FactReader(self.blobs)
        first = next((c for c in self.commits if F.TB_PIN in c.files), None)
        # before the pin file existed tritonbench was cloned at its head: the first pin is that same code
        self.first_tb_pin = (self.blobs.text(first.sha, F.TB_PIN) or "").strip() if first else None
        self.rng = rng_for("world-j", seed)
        self._make_nights(nights)
        self._models: dict = {}
        self._pmodels: dict = {}
        self.effects: list[Effect] = []
        self.outages: dict[int, set] = {}     # night -> platforms with no artifacts
        self.missing: set = set()             # (night, plat, kernel) kernel crashed: no records
        self.spikes: dict = {}                # (night, key) -> {component: factor}
        self.scatter_over: dict = {}          # key -> (from night, sigma)
        self.labels: list[Label] = []
        from . import plan
        plan.plan(self)
        self._extra_runs()
        self._docs: list[bytes] = []
        self._pdocs: list[bytes | None] = []
        self._prev_doc = None
        self._prev_pdoc = None
        self._builders = None

    # ---------------------------------------------------------------- nights
    def _sha_before(self, when: datetime) -> str:
        best = None
        for c in self.commits:
            if c.date < when:
                best = c
            else:
                break
        return best.sha

    def _make_nights(self, nights):
        end = END[self.seed]
        span = int(self.rng.integers(120, 171))
        days = [end - timedelta(days=span - 1 - i) for i in range(span)]
        if nights is not None:
            days = days[-nights:]
        self.nights: list[Night] = []
        self.runs: list[Run] = []
        self.p_runs: list[Run] = []
        self.facts: list = []
        self.p_facts: list = []
        for i, d in enumerate(days):
            day = d.replace(hour=0, minute=0, second=0, microsecond=0)
            cron = day + timedelta(hours=8)
            sha = self._sha_before(cron)
            rid = str(DASH_RUN0 + (day.toordinal() - 739000) * 9973 + int(self.rng.integers(0, 500)))
            date = cron + timedelta(seconds=int(self.rng.integers(4, 140)))
            p_cron = day + timedelta(hours=10)
            p_sha = self._sha_before(p_cron)
            pf = self.fr.at(p_sha)
            p_rid = p_full = None
            if pf.pretuned is not None:
                p_rid = str(PRE_RUN0 + (day.toordinal() - 739000) * 9973 + int(self.rng.integers(0, 500)))
                p_full = p_sha
                self.p_runs.append(Run(p_rid, p_sha, p_cron + timedelta(seconds=int(self.rng.integers(3, 90))),
                                       "main", True, i, "nightly"))
            self.nights.append(Night(rid, sha, sha[:8], date, p_rid, p_full))
            self.runs.append(Run(rid, sha, date, "main", True, i, "nightly"))
            self.facts.append(self.fr.at(sha))
            self.p_facts.append(pf if pf.pretuned is not None else None)
        self._night_of = {n.run_id: i for i, n in enumerate(self.nights)}
        self._night_of.update({n.p_run_id: i for i, n in enumerate(self.nights) if n.p_run_id})

    def night_of(self, run_id) -> int | None:
        return self._night_of.get(str(run_id)) if run_id is not None else None

    # ---------------------------------------------------------------- series
    def series_at(self, n: int) -> list[tuple[str, str]]:
        return self.fr.series(self.facts[n])

    def p_series_at(self, n: int) -> list[tuple[str, str]]:
        f = self.p_facts[n]
        return self.fr.p_series(f) if f else []

    def series_count(self) -> int:
        keys = set()
        for n in range(len(self.nights)):
            keys |= {("d",) + k for k in self.series_at(n)}
            keys |= {("p",) + k for k in self.p_series_at(n)}
        return len(keys)

    def model(self, plat, kernel) -> SeriesModel:
        k = (plat, kernel)
        if k not in self._models:
            self._models[k] = SeriesModel(plat, kernel, self.seed)
        return self._models[k]

    def pmodel(self, hw, kernel) -> PretunedModel:
        k = (hw, kernel)
        if k not in self._pmodels:
            self._pmodels[k] = PretunedModel(hw, kernel, self.seed)
        return self._pmodels[k]

    def is_lin(self, n, plat, kernel) -> bool:
        return kernel in self.facts[n].linattn.get(plat, ())

    def method_state(self, n: int, plat: str, kernel: str) -> dict:
        """How the series is measured that night: cudagraph, shapes, baseline, timers, env."""
        f = self.facts[n]
        km = f.km.get(kernel, {})
        lin = self.is_lin(n, plat, kernel)
        m = self.model(plat, kernel)
        if lin:
            names = f.lin_varlen_shapes if kernel.startswith("kda_varlen") else f.lin_shapes
            shapes = list(names) or ["default"]
            cg, base = True, None
        elif plat == "tpu":
            nn = km.get("num_inputs") or m.default_n
            shapes = m.labels[:nn]
            cg, base = True, km.get("baseline")
        else:
            nn = km.get("num_inputs") or m.default_n
            shapes = m.labels[:nn]
            cg = km.get("cudagraph", True) and f.timer[0]
            base = km.get("baseline")
        return {"shapes": tuple(shapes), "cudagraph": bool(cg), "baseline": base, "lin": lin,
                "timer": f.timer, "env": f.autotune_env, "pin": f.torch_pin,
                "tb": None if lin or (plat == "tpu" and kernel in f.tpu_native) else f.tb_pin,
                "machine": tuple(sorted((f.aliases.get(plat) or {}).items()))}

    def state_factors(self, n: int, plat: str, kernel: str, st: dict | None = None) -> dict:
        """Factors that follow from what the files say that night (env, pins, machine, timer)."""
        st = st or self.method_state(n, plat, kernel)
        fac = {c: 1.0 for c in COMPONENTS}
        if plat != "tpu" and not st["lin"]:
            r = rng_for("env", plat, kernel, st["env"])
            fac["helion"] *= float(np.exp(r.normal(0, 0.045)))
            fac["compile"] *= float(np.exp(r.normal(0, 0.3)))
        if plat != "tpu":
            r = rng_for("pin", plat, kernel, st["pin"])
            fac["base"] *= float(np.exp(r.normal(0, 0.035)))
            fac["triton"] *= float(np.exp(r.normal(0, 0.05)))
            fac["tc"] *= float(np.exp(r.normal(0, 0.05)))
            fac["helion"] *= float(np.exp(r.normal(0, 0.03)))
            fac["compile"] *= float(np.exp(r.normal(0, 0.1)))
        if st["tb"] and st["tb"] != self.first_tb_pin:
            r = rng_for("tbpin", plat, kernel, st["tb"])
            if r.random() < 0.35:  # this operator's baseline implementation changed in tritonbench
                fac["base"] *= float(np.exp(r.choice([-1, 1]) * r.uniform(0.04, 0.12)))
        mach = st["machine"]
        if mach:
            rp = rng_for("machine", plat, mach)
            common = float(np.exp(rp.normal(0, 0.07)))
            rk = rng_for("machine-k", plat, kernel, mach)
            for c in ("base", "triton", "tc"):
                fac[c] *= common ** float(rk.uniform(0.7, 1.3))
            hx = common ** float(rk.uniform(0.6, 1.4))
            fac["helion"] *= hx
        mode = st["timer"][1]
        if mode and mode != ("triton_do_bench",):
            fac["lat"] *= float(np.exp(rng_for("timer", plat, kernel, mode).normal(0.04, 0.06)))
        return fac

    def factors(self, n: int, key: tuple, st: dict | None = None, skip=()) -> dict:
        src, plat, kernel = key
        if src == "d":
            fac = self.state_factors(n, plat, kernel, st)
        else:
            fac = {c: 1.0 for c in COMPONENTS}
        for e in self.effects:
            if e.tag in skip or not e.on(n, key):
                continue
            for c, v in e.f.items():
                fac[c] = fac.get(c, 1.0) * v
        return fac

    def clean(self, n: int, key: tuple, skip=(), cudagraph=None) -> float:
        """Noise-free headline value (helion speedup geomean / pretuned geomean)."""
        src, plat, kernel = key
        fac = self.factors(n, key, skip=skip)
        if src == "d":
            st = self.method_state(n, plat, kernel)
            m = self.model(plat, kernel)
            idx = np.arange(len(st["shapes"]))
            cg = st["cudagraph"] if cudagraph is None else cudagraph
            base, hel, *_ = m.times(idx, fac, cg, st["baseline"], None)
            return round(geo(base / hel), 4)
        pf = self.p_facts[n]
        info = pf.pretuned[kernel]
        cg = info["cudagraph"] if cudagraph is None else cudagraph
        return round(self.pmodel(plat, kernel).record(fac, info["baselines"], cg, None)["geomean"], 4)

    # ---------------------------------------------------------------- runs
    def _extra_runs(self):
        """Manual dispatches (is_nightly false) and side-branch runs: never labeled."""
        self.extra: list[Run] = []
        r = rng_for("extra", self.seed, len(self.nights))
        for i in range(1, len(self.nights)):
            d0 = self.nights[i - 1].date
            if r.random() < 0.1:
                when = d0 + timedelta(hours=float(r.uniform(5, 14)))
                sha = self._sha_before(when)
                plats = sorted(self.facts[i - 1].kernels)
                plat = plats[int(r.integers(len(plats)))] if plats else None
                rid = str(int(self.nights[i - 1].run_id) + 1000 + int(r.integers(0, 3000)))
                self.extra.append(Run(rid, sha, when, "main", False, i, "manual", (plat,)))
            if r.random() < 0.05:
                when = d0 + timedelta(hours=float(r.uniform(3, 20)))
                fake = __import__("hashlib").sha1(f"bwj-branch-{self.seed}-{i}".encode()).hexdigest()
                rid = str(int(self.nights[i - 1].run_id) + 5000 + int(r.integers(0, 3000)))
                branch = ["yifeixu/tpu-nightly-benchmark", "jansel/bench-sweep", "oulgen/cute-perf"][int(r.integers(3))]
                plats = sorted(self.facts[i - 1].kernels)
                plat = "tpu" if "tpu" in plats else plats[0]
                self.extra.append(Run(rid, fake, when, branch, branch.startswith("yifeixu"), i, "branch", (plat,)))

    # ---------------------------------------------------------------- artifacts
    def _noise(self, r, sigma: float, n: int, plat_f: float, hs: float) -> dict:
        out = {}
        for c in ("base", "helion", "triton", "tc", "lat", "compile"):
            s = sigma if c != "compile" else 0.03
            common = r.normal(0, s * 0.6)
            out[c] = np.exp(common + r.normal(0, s * 0.8, n))
        for c in ("base", "triton", "tc"):
            out[c] = out[c] * plat_f
        out["helion"] = out["helion"] * plat_f ** hs
        out["lat"] = out["lat"] * plat_f ** hs
        return out

    def _records(self, n: int, run: Run, plat: str, kernels, salt: str) -> tuple[list, list]:
        """helionbench.json records (normal and linattn files) of one platform in one run."""
        r = rng_for("night", self.seed, run.run_id, plat, salt)
        plat_f = float(np.exp(r.normal(0, 0.008)))
        device = DEVICE.get(plat, plat)
        normal, lin = [], []
        for k in kernels:
            key = ("d", plat, k)
            if (n, plat, k) in self.missing and run.kind == "nightly":
                continue
            st = self.method_state(n, plat, k)
            m = self.model(plat, k)
            fac = self.factors(n, key, st)
            idx = np.arange(len(st["shapes"]))
            sig = m.scatter
            if key in self.scatter_over and n >= self.scatter_over[key][0]:
                sig = self.scatter_over[key][1]
            noise = self._noise(r, sig, len(idx), plat_f, m.h_sens)
            spike = self.spikes.get((n, key)) if run.kind == "nightly" else None
            if spike is None and r.random() < 0.01:  # a stray single-timer outlier
                spike = {["base", "helion", "lat", "compile"][int(r.integers(4))]: float(r.uniform(1.15, 1.2))}
            for c, v in (spike or {}).items():
                noise[c] = noise[c] * v
            base, hel, tri, tcc, lat, comp = m.times(idx, fac, st["cudagraph"], st["baseline"], noise)
            hs, ts, cs = base / hel, base / tri, base / tcc
            acc = np.ones(len(idx))
            lat = lat.copy()
            comp = comp.copy()
            for j in range(len(idx)):
                u = r.random()
                if u < 0.004:      # this shape failed to run
                    hs[j], acc[j], lat[j], comp[j] = 0.0, 0.0, 0.0, 0.0
                elif u < 0.007:    # ran but wrong
                    acc[j] = 0.0
            shapes = list(st["shapes"])
            metrics = {"helion_speedup": hs, "helion_accuracy": acc, "helion_latency_ms": lat}
            if not st["lin"]:
                metrics.update({"triton_speedup": ts, "torch_compile_speedup": cs, "helion_compile_time_s": comp})
            for name, vals in metrics.items():
                rec = {"benchmark": {"name": "Helion Benchmark", "extra_info": {"device": device}},
                       "model": {"name": k},
                       "metric": {"name": name, "benchmark_values": [round(float(v), 5) for v in vals]},
                       "shape": shapes}
                if st["lin"]:
                    rec["benchmark"]["extra_info"].update({"backend": "triton", "baseline_label": "FLA"})
                    lin.append(rec)
                else:
                    be = {"b200_cute": "cute", "tpu": "pallas"}.get(plat, "triton")
                    rec["benchmark"]["extra_info"]["backend"] = be
                    normal.append(rec)
        return normal, lin

    def _write_run(self, cache: Path, n: int, run: Run):
        f = self.facts[n]
        plats = run.plats if run.plats else tuple(f.kernels)
        rr = rng_for("subset", self.seed, run.run_id)
        for plat in plats:
            if plat is None or plat not in f.kernels:
                continue
            if run.kind == "nightly" and plat in self.outages.get(n, ()):
                continue
            ks = list(f.kernels[plat])
            lk = list(f.linattn.get(plat, ()))
            if run.kind != "nightly":
                ks = [k for k in ks if rr.random() < 0.3] or ks[:1]
                lk = []
            normal, lin = self._records(n, run, plat, ks + lk, run.kind)
            for suffix, recs in (("0", normal), ("linattn", lin)):
                if recs:
                    d = cache / run.run_id / f"benchmark-results-{plat}-{suffix}"
                    d.mkdir(parents=True, exist_ok=True)
                    (d / "helionbench.json").write_text(json.dumps(recs))

    def _write_prun(self, cache: Path, n: int, run: Run):
        pf = self.p_facts[n]
        r = rng_for("pnight", self.seed, run.run_id)
        by_hw: dict = {}
        for hw, k in self.p_series_at(n):
            by_hw.setdefault(hw, []).append(k)
        for hw, ks in by_hw.items():
            recs = []
            for k in ks:
                key = ("p", hw, k)
                info = pf.pretuned[k]
                rec = {"kernel": k, "pretuned_hardware": sorted(info["aot"]),
                       "device": DEVICE[hw], "compute_capability": {"h100": "sm90", "b200": "sm100"}[hw]}
                if r.random() < 0.006:
                    rec["error"] = "RuntimeError: CUDA error: an illegal memory access was encountered"
                else:
                    fac = self.factors(n, key)
                    sp = self.spikes.get((n, key))
                    if sp:
                        fac = dict(fac)
                        fac["hnoise"] = sp.get("helion", 1.0)
                    out = self.pmodel(hw, k).record(fac, info["baselines"], info["cudagraph"], r)
                    rec.update(helion_wins=out["helion_wins"], total=out["total"], geomean=out["geomean"],
                               best_speedup=out["best_speedup"], cudagraph=info["cudagraph"])
                    if out.get("baselines"):
                        rec["baselines"] = out["baselines"]
                recs.append(rec)
            d = cache / run.run_id / f"pretuned-results-{hw}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))

    # ---------------------------------------------------------------- documents
    def _ensure(self, upto: int):
        if self._builders is None:
            self._builders = (_load_builder(self.repo, "build_dashboard_data", self.tmp),
                              _load_builder(self.repo, "build_pretuned_dashboard_data", self.tmp))
        bd, bp = self._builders
        while len(self._docs) <= upto:
            n = len(self._docs)
            cache = self.tmp / f"cache-{n}"
            cache.mkdir()
            new = [x for x in self.extra if x.night == n] + [self.runs[n]]
            for run in new:
                self._write_run(cache, n if run.kind == "nightly" else max(n - 1, 0), run)
            metas = [x.meta() for x in self.runs[: n + 1]] + [x.meta() for x in self.extra if x.night <= n]
            disp = cache / "benchmark_dispatch.yml"
            disp.write_text(self.facts[n].dispatch_text or "")
            bd._bwj_clock["now"] = self.nights[n].date + timedelta(minutes=50)
            doc = bd.build_dashboard_data(str(cache), metas, self._prev_doc, bd.get_active_platforms(str(disp)),
                                          bd.get_expected_kernels_per_platform(str(disp)))
            raw = json.dumps(doc, indent=None).encode()
            self._docs.append(zlib.compress(raw, 1))
            self._prev_doc = doc
            praw = None
            if self.nights[n].p_run_id:
                prun = next(x for x in self.p_runs if x.run_id == self.nights[n].p_run_id)
                self._write_prun(cache, n, prun)
                pmetas = [x.meta() for x in self.p_runs if x.night <= n]
                bp._bwj_clock["now"] = prun.date + timedelta(minutes=40)
                pdisp = self.blobs.text(prun.full_sha, F.P_DISPATCH) or ""
                (cache / "p.yml").write_text(pdisp)
                pdoc = bp.build_dashboard_data(str(cache), pmetas, self._prev_pdoc,
                                               bp.get_active_platforms(str(cache / "p.yml")))
                praw = zlib.compress(json.dumps(pdoc).encode(), 1)
                self._prev_pdoc = pdoc
            self._pdocs.append(praw)
            shutil.rmtree(cache, ignore_errors=True)

    def dashboard_bytes(self, n: int) -> bytes:
        self._ensure(n)
        return zlib.decompress(self._docs[n])

    def pretuned_bytes(self, n: int) -> bytes | None:
        self._ensure(n)
        raw = self._pdocs[n]
        return zlib.decompress(raw) if raw is not None else None

    def close(self):
        """Stop the git reader and delete this world's clone and scratch files."""
        self.blobs.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
