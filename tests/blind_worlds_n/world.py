"""Build one blind world: nights on the real history, simulated artifacts, documents from Helion's
own dashboard builders (imported from the world's checkout at build time), labels."""
from __future__ import annotations

import atexit
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import types
import zlib
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import facts as F
from . import repofacts as RF
from . import timeline as T
from .model import Mult, TruthTable, expected, headline, hkey, nrm, rng, unif
from .plants import Planner

SIM_NIGHTS = 150
WINDOW_END = {131: "2026-03-17", 132: "2026-05-26", 133: "2026-08-06"}
DASH_BUILDER = ".github/dashboard/build_dashboard_data.py"
PRE_BUILDER = ".github/dashboard/build_pretuned_dashboard_data.py"


class NightInfo:
    def __init__(self, i, time, cidx, sha, run_id):
        self.i, self.time, self.cidx, self.sha, self.run_id = i, time, cidx, sha, run_id


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _import_builder(git: RF.Git, path: str, name: str, tmp: Path):
    """Import one of Helion's dashboard builders from a temporary checkout of the bundle's HEAD."""
    src = git.show("main", path)
    f = tmp / (name + ".py")
    f.write_text(src)
    old = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec = importlib.util.spec_from_file_location(f"_helion_{name}_{id(tmp)}", f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = old
    return mod


def _freeze_now(mod, now: datetime):
    """The builders keep 365 days before datetime.now(); build as of the night, not today."""
    class _DT(datetime):
        @classmethod
        def now(cls, tz=None):
            return now if tz is None else now.astimezone(tz)
    mod.datetime = types.SimpleNamespace(datetime=_DT, timezone=timezone, timedelta=timedelta)


_BARE: dict = {}


def _clone(dest: Path):
    """A clone of the bundle with `main` checked out (the bundle is unpacked once per process)."""
    b = bundle_path()
    key = (str(b), b.stat().st_mtime)
    if key not in _BARE or not Path(_BARE[key]).exists():
        tmp = tempfile.mkdtemp(prefix="bwn-bundle-")
        atexit.register(shutil.rmtree, tmp, True)
        subprocess.run(["git", "clone", "-q", "--bare", str(b), tmp + "/h.git"], check=True, capture_output=True)
        _BARE[key] = tmp + "/h.git"
    subprocess.run(["git", "clone", "-q", "--no-checkout", _BARE[key], str(dest)], check=True, capture_output=True)
    g = ["git", "-C", str(dest)]
    subprocess.run(g + ["remote", "set-url", "origin", str(b)], check=True, capture_output=True)
    subprocess.run(g + ["checkout", "-q", "-B", "main", "origin/main"], check=True, capture_output=True)


class World:
    def __init__(self, seed: int, workdir: Path, nights: int = 150):
        if seed not in WINDOW_END:
            raise ValueError(f"blind set n has seeds {sorted(WINDOW_END)}")
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = self.workdir / "helion"
        if self.repo.exists():
            shutil.rmtree(self.repo)
        _clone(self.repo)
        self.docdir = self.workdir / "docs"
        if self.docdir.exists():
            shutil.rmtree(self.docdir)
        self.docdir.mkdir()
        self.git = RF.Git(self.repo)
        self.k = nights
        self.N = max(SIM_NIGHTS, nights)
        try:
            self._build()
        finally:
            self.git.close()

    # ------------------------------------------------------------------ public interface
    def dashboard_bytes(self, i: int) -> bytes:
        return zlib.decompress((self.docdir / f"dash-{i:04d}.z").read_bytes())

    def pretuned_bytes(self, i: int) -> bytes | None:
        p = self.docdir / f"pre-{i:04d}.z"
        return zlib.decompress(p.read_bytes()) if p.exists() else None

    def night_of(self, run_id) -> int | None:
        return self._night_of.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        return self._series_count

    def close(self):
        shutil.rmtree(self.docdir, ignore_errors=True)

    # ------------------------------------------------------------------ build
    def _build(self):
        seed = self.seed
        git = self.git
        self.commits = commits = git.commits()
        times = [c.time for c in commits]
        end_day = date.fromisoformat(WINDOW_END[seed])
        # ---- nights: the cron time plus GitHub's schedule delay; a few nights never ran
        gap_at = int(hkey(seed, "gap") % 100) + 20
        nights_rev = []
        d = end_day
        k = 0
        while len(nights_rev) < self.N:
            day_i = (end_day - d).days
            skip = d != end_day and (unif(seed, "skip", d) < 0.02 or gap_at <= day_i < gap_at + 2)
            if not skip:
                t0 = datetime(d.year, d.month, d.day, tzinfo=timezone.utc)
                hc = T.head_at(commits, times, t0 + timedelta(hours=7))
                nf = RF.nightly_facts(git.show(commits[hc].sha, RF.WF + "benchmark_nightly.yml"))
                if nf is None:
                    raise RuntimeError(f"no nightly workflow on {d}: window too early")
                hh, mm = T.cron_hm(nf["cron"])
                u = unif(seed, "delay", d)
                delay = 240 + u * 2100 if u < 0.94 else 3600 + u * 4000
                t = t0 + timedelta(hours=hh, minutes=mm, seconds=delay + 8 + 10 * unif(seed, "dsp", d))
                t = t.replace(microsecond=0)
                nights_rev.append(t)
            d -= timedelta(days=1)
        ntimes = nights_rev[::-1]
        nights = []
        last = 0
        for i, t in enumerate(ntimes):
            ci = max(T.head_at(commits, times, t), last)
            last = ci
            nights.append(NightInfo(i, t, ci, commits[ci].sha, None))
        self.ninfo = nights
        lo = nights[0].cidx
        self.snaps = snaps = T.Snaps(git, commits, max(lo - 1, 0), commits[-1].idx)
        # ---- contexts
        ctx, shards = [], []
        for n in nights:
            c, s = T.night_contexts(snaps.at(n.cidx), seed)
            ctx.append(c)
            shards.append(s)
        self.ctx = ctx
        ref = {}
        for n in range(self.N):
            for s, c in ctx[n].items():
                ref.setdefault(s, c)
        self.ref = ref
        self.ftab = F.FactorTable(seed, ctx)
        # ---- fact changes between consecutive nights (labeled from their effect below)
        changes = []  # (mech, series, n)
        busy = {}
        for n in range(1, self.N):
            for s, c in ctx[n].items():
                p = ctx[n - 1].get(s)
                if p is None:
                    continue
                for mech in F.MECHS:
                    if getattr(c, mech) != getattr(p, mech):
                        changes.append((mech, s, n))
                        busy.setdefault(s, []).append((n - 3, n + 3))
        example_of = {}
        sn = snaps.at(nights[-1].cidx)
        for k, v in sn.runpy["kernels"].items():
            if isinstance(v["impl"], str) and v["impl"].startswith("examples."):
                example_of[k] = v["impl"].replace(".", "/") + ".py"
        # ---- planted events
        pl = Planner(seed, nights, ctx, commits, busy, example_of)
        self._plant(pl)
        self.effects = pl.effects
        # ---- pretuned suite (if it exists in the window)
        from .pretuned import PretunedSim
        self.pre = PretunedSim(self, pl)
        # ---- extra runs (manual dispatches, side branches)
        runs = self._runs(nights)
        # ---- simulate and publish
        self.truth = TruthTable(seed)
        self._simulate_and_publish(runs, changes)

    def _plant(self, pl: Planner):
        seed = self.seed
        r = np.random.default_rng(hkey("quota", seed))
        # known real commits with their reverts, when the window holds them
        for sha, end, kind, note, pick, sign in (
            ("ec27d559", "1e3d383e", "heuristics/config",
             "capping num_warps in the autotuner search space costs some kernels; reverted",
             lambda n: [s for s in pl.series_on(n, ("h100", "b200")) if s[1] in ("gemm", "flash_attention",
                                                                                 "grouped_gemm", "int4_gemm")][:3], 1.0),
            ("73f5babe", None, "heuristics/config",
             "LFBOPatternSearch becomes the default autotuner: different configs on several kernels",
             lambda n: [s for s in pl.series_on(n, ("h100", "b200", "mi325x")) if s[1] in
                        ("softmax", "layer_norm", "cross_entropy", "jsd", "welford")][:4], -1.0),
            ("bd646022", None, "heuristics/config", "persistent kernels autotuned for multi-occupancy",
             lambda n: [s for s in pl.series_on(n, ("h100", "b200")) if s[1] in ("gemm", "grouped_gemm")], -1.0),
            ("b9925d9d", None, "heuristics/config", "AMD-specific autotune knobs (waves_per_eu, matrix_instr_nonkdim)",
             lambda n: [s for s in pl.series_on(n, ("mi325x", "mi350x")) if s[1] in
                        ("gemm", "flash_attention", "int4_gemm")], -1.0),
            ("1f6222a7", None, "heuristics/config", "new num_warps/num_stages ranges for AMD",
             lambda n: [s for s in pl.series_on(n, ("mi325x",)) if s[1] in ("softmax", "layer_norm", "rms_norm",
                                                                          "kl_div")][:2], 1.0),
            ("b416d4fa", None, "heuristics/config", "removing unrolling + warp specialization from the search",
             lambda n: [s for s in pl.series_on(n, ("b200",)) if s[1] in ("flash_attention", "gemm")], 1.0),
            ("7ca0c7d2", "da289f7b", "code", "bf16 matmuls lowered through pl.dot on TPU; reverted",
             lambda n: [s for s in pl.series_on(n, ("tpu",), ("tpu", "bridge")) if s[1] in
                        ("gemm", "bmm", "flash_attention")], 1.0),
        ):
            pl.curated(sha, end, pick, kind, note, sign=sign)
        pl.outage()
        pl.thermal(n_events=2, one_off=1)
        pl.scatter(2)
        pl.real_kernel(n_events=7, near_end=2)
        pl.real_slice("ROCM", ("mi325x", "mi350x"), lambda: int(r.integers(2, 5)), n_events=1)
        pl.real_slice("CUTE", ("b200_cute",), lambda: int(r.integers(1, 3)), n_events=2)
        pl.real_slice("PALLAS", ("tpu",), lambda: int(r.integers(1, 4)), n_events=2)
        pl.real_slice("SM100", ("b200",), lambda: int(r.integers(1, 3)), n_events=1)
        pl.real_slice("SM90", ("h100",), lambda: int(r.integers(1, 3)), n_events=1)
        pl.real_heuristics(n_events=3)
        pl.real_compile()
        pl.second_on_series()
        pl.second_on_series()
        pl.tb_drift()
        pl.outliers(3)

    # ------------------------------------------------------------------ runs
    def _runs(self, nights):
        """All workflow runs in time order: nightlies, manual dispatches, side-branch runs."""
        seed = self.seed
        runs = []
        for n in nights:
            runs.append({"kind": "nightly", "night": n.i, "time": n.time, "cidx": n.cidx, "branch": "main",
                         "is_nightly": True})
        r = np.random.default_rng(hkey("manual", seed))
        t = nights[0].time + timedelta(days=float(r.uniform(2, 8)))
        while t < nights[-1].time - timedelta(hours=3):
            t = t.replace(hour=int(r.integers(14, 23)), minute=int(r.integers(0, 60)), second=int(r.integers(0, 60)))
            ci = T.head_at(self.commits, [c.time for c in self.commits], t)
            runs.append({"kind": "manual", "time": t, "cidx": ci, "branch": "main", "is_nightly": False,
                         "effort": "quick" if r.random() < 0.45 else None, "sel": int(hkey(seed, "sel", t))})
            if r.random() < 0.25:
                t2 = t + timedelta(hours=float(r.uniform(1, 5)))
                runs.append({"kind": "branch", "time": t2, "cidx": ci, "branch": f"pr-{int(r.integers(2000, 3500))}",
                             "is_nightly": False, "effort": None, "sel": int(hkey(seed, "br", t2)),
                             "speed": float(np.exp(r.normal(-0.04, 0.06)))})
            t = t + timedelta(days=float(r.uniform(5, 13)))
        # a side-branch nightly (Benchmark TPU Nightly on a fork branch) once TPU runs exist
        tpu_nights = [n for n in nights if any(s[0] == "tpu" for s in self.ctx[n.i])]
        for n in tpu_nights[3::7]:
            t = n.time.replace(hour=4, minute=int(hkey(seed, "tpun", n.i) % 50), second=17)
            runs.append({"kind": "side", "time": t, "cidx": n.cidx, "branch": "yifeixu/tpu-nightly-benchmark",
                         "is_nightly": True, "effort": None, "sel": int(hkey(seed, "side", n.i)),
                         "speed": float(np.exp(rng(seed, "side", n.i).normal(-0.06, 0.05)))})
        runs.sort(key=lambda x: x["time"])
        used = set()
        for x in runs:
            rid = T.run_id_at(x["time"], hkey(seed, "rid", x["time"].isoformat()) % 40_000)
            while rid in used:
                rid = str(int(rid) + 1)
            used.add(rid)
            x["run_id"] = rid
            if x["kind"] == "side" or x["kind"] == "branch":
                x["sha"] = format(hkey(seed, "fake", rid), "016x") + format(hkey(seed, "fake2", rid), "016x") + \
                    format(hkey(seed, "fake3", rid), "016x")[:8]
            else:
                x["sha"] = self.commits[x["cidx"]].sha
            if x["kind"] == "nightly":
                self.ninfo[x["night"]].run_id = rid
        return runs

    # ------------------------------------------------------------------ simulation
    def _series_mults(self, s, c, n, exclude=None):
        ms = self.ftab.mults(c)
        for e in self.effects:
            if e is exclude or not e.active(n):
                continue
            m = e.members.get(s)
            if m is not None:
                ms.append(m)
        return ms

    def _expected(self, c, n, exclude=None, ctx_override=None):
        cc = ctx_override or c
        s = (c.alias, c.kernel)
        tr = self.truth.truth(c.alias, c.kernel, cc.shapes)
        return headline(expected(tr, cc.shapes, cc.cg, self._series_mults(s, cc, n, exclude),
                                 cc.suite, cc.compile_mode, cc.budget))

    def _measure(self, c, n, run_key, extra: Mult | None = None, protected=False, nightly=False):
        """One run's per-shape metrics for one series (dict of metric -> list)."""
        seed = self.seed
        s = (c.alias, c.kernel)
        cached = self._raw.get((n, s)) if (extra is None and nightly) else None
        if cached is not None:
            e, mults = cached
        else:
            tr = self.truth.truth(c.alias, c.kernel, c.shapes)
            mults = self._series_mults(s, c, n)
            if extra is not None:
                mults = mults + [extra]
            e = expected(tr, c.shapes, c.cg, mults, c.suite, c.compile_mode, c.budget)
        p = self.truth.series_params(c.alias, c.kernel)
        r = rng(seed, "meas", run_key, c.alias, c.kernel)
        noise = 1.0
        for m in mults:
            noise *= m.noise
        nsh = len(c.shapes)
        ss, sm = p["s_shape"] * noise, p["s_common"] * noise
        at = p["s_at"] * (0.25 if c.seed_fixed else 1.0) * math.sqrt(noise)
        plat = self._plat.get((c.alias, run_key), 1.0) * self._shardf.get((c.shard, run_key), 1.0)
        a_h = r.normal(0, at)
        mh = e["mh"] * np.exp(r.normal(0, sm) + a_h + r.normal(0, ss, nsh)) * plat
        mb = e["mb"] * np.exp(r.normal(0, sm) + r.normal(0, ss, nsh)) * plat
        mt = e["mt"] * np.exp(r.normal(0, sm) + r.normal(0, ss, nsh)) * plat
        mc = e["mc"] * np.exp(r.normal(0, sm) + r.normal(0, ss, nsh)) * plat
        if c.suite == "tb" or c.suite == "bridge":
            lat = e["lat"] * np.exp(r.normal(0, sm * 0.8) + a_h + r.normal(0, ss * 0.7, nsh)) * plat
        else:
            lat = mh.copy()
        # a stray single-timer outlier now and then (not on the nights a labeled change is read)
        if not protected and r.random() < 0.011:
            f = r.uniform(1.15, 1.2)
            which = r.integers(3)
            if which == 0:
                mb = mb * f
            elif which == 1:
                mh = mh * f
            else:
                lat = lat * f
        ct = None
        if e["ct"] is not None:
            sig = 0.05 if c.compile_mode == "hit" else (0.06 if c.seed_fixed else 0.16)
            ct = e["ct"] * np.exp(r.normal(0, sig * math.sqrt(noise), nsh))
        sp_h, sp_t, sp_c = mb / mh, mb / mt, mb / mc
        acc = np.ones(nsh)
        fail = r.random(nsh) < 0.0025
        if not protected and fail.any():
            sp_h = np.where(fail, 0.0, sp_h)
            lat = np.where(fail, 0.0, lat)
            acc = np.where(fail, 0.0, acc)
            if ct is not None:
                ct = np.where(fail, 0.0, ct)
        if c.suite == "tb" and c.alias in self._acc_flaky and not self._tol_ok[n if n is not None else 0] \
                and hkey(seed, "accflaky", c.alias, c.kernel) % 6 == 0:
            j = int(hkey(seed, "accshape", c.kernel) % nsh)
            if r.random() < 0.5 and sp_h[j] > 0:
                acc[j] = 0.0
        out = {"helion_speedup": [round(float(x), 6) for x in sp_h],
               "helion_accuracy": [float(x) for x in acc]}
        if c.suite in ("tb",) and c.impl_t:
            out["triton_speedup"] = [round(float(x), 6) for x in sp_t]
            out["triton_accuracy"] = [1.0] * nsh
        if c.suite in ("tb", "bridge", "tpu") and c.impl_c:
            out["torch_compile_speedup"] = [round(float(x), 6) for x in sp_c]
        if c.latency_on:
            out["helion_latency_ms"] = [round(float(x), 6) for x in lat]
        if ct is not None:
            out["helion_compile_time_s"] = [round(float(x), 3) for x in ct]
        return out

    def _records(self, c, metrics, with_shape: bool, with_backend: bool):
        if c.suite == "lin":
            info = {"device": c.device, "backend": "triton", "baseline_label": "FLA"}
            name = "Helion Linear-Attention Benchmark"
        elif c.suite == "tpu":
            info = {"device": "TPU v7"}
            name = "Helion TPU Benchmark"
        else:
            info = {"device": c.device}
            if with_backend:
                info["backend"] = "pallas" if c.suite == "bridge" else (c.backend or "triton")
            name = "Helion Benchmark"
        out = []
        for m, vals in metrics.items():
            rec = {"benchmark": {"name": name, "extra_info": dict(info)}, "model": {"name": c.kernel},
                   "metric": {"name": m, "benchmark_values": vals}}
            if with_shape or c.suite != "tb":
                rec["shape"] = list(c.shapes)
            out.append(rec)
        return out

    def _simulate_and_publish(self, runs, changes):
        seed = self.seed
        N = self.N
        ctx = self.ctx
        first_kept = N - self.k
        # platform-night and shard-night device-time factors
        self._plat, self._shardf = {}, {}
        for x in runs:
            key = x["run_id"]
            for a in ("h100", "b200", "b200_cute", "mi325x", "mi350x", "tpu"):
                self._plat[(a, key)] = math.exp(0.006 * nrm(seed, "platnight", key, a))
        for n in range(N):
            for s, c in ctx[n].items():
                self._shardf[(c.shard, self.ninfo[n].run_id)] = math.exp(0.005 * nrm(seed, "shard", c.shard, n))
        for e in self.effects:
            for n in range(e.start, e.end if e.end is not None else N):
                for a, f in e.plat.items():
                    key = (a, self.ninfo[n].run_id)
                    self._plat[key] = self._plat.get(key, 1.0) * f
        # accuracy tolerance: before --atol/--rtol 1e-2 some fp16 shapes fail the default check
        self._tol_ok = ["--atol" in self.snaps.at(self.ninfo[n].cidx).bench["flags"] for n in range(N)]
        self._acc_flaky = {"h100", "b200", "mi325x", "mi350x"}
        # protected (series, night): where a labeled change is read, no random crash/outlier
        protected = set()
        for e in self.effects:
            if e.cause is None:
                continue
            for s in e.members:
                for n in (e.start - 1, e.start, e.start + 1, (e.end or -9) - 1, e.end or -9):
                    protected.add((s, n))
        for mech, s, n in changes:
            for m in (n - 1, n, n + 1):
                protected.add((s, m))
        hidden = set()
        for e in self.effects:
            if e.hide:
                for n in range(e.start, e.end if e.end is not None else N):
                    for s in e.members:
                        hidden.add((s, n))
        # crashed shards / whole-platform failures (unlabeled): artifacts missing that night
        failed = set()
        for n in range(N):
            ra = rng(seed, "fail", n)
            aliases = {s[0] for s in ctx[n]}
            dead = {a for a in sorted(aliases) if ra.random() < 0.006}
            for s, c in ctx[n].items():
                if (s, n) in protected:
                    continue
                if s[0] in dead or unif(seed, "shardfail", c.shard, n) < 0.011 or \
                        unif(seed, "kfail", s, n) < 0.003:
                    failed.add((s, n))
        # ---- expected headlines (noise-free) for labels
        exp_hl = [{} for _ in range(N)]
        self._raw = {}
        for n in range(N):
            for s, c in ctx[n].items():
                tr = self.truth.truth(c.alias, c.kernel, c.shapes)
                mults = self._series_mults(s, c, n)
                e = expected(tr, c.shapes, c.cg, mults, c.suite, c.compile_mode, c.budget)
                self._raw[(n, s)] = (e, mults)
                exp_hl[n][s] = headline(e)
        self.exp_hl = exp_hl
        # ---- measurements for every run
        shm = Path("/dev/shm")
        tmp = Path(tempfile.mkdtemp(prefix="bwn-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else
                                    self.workdir))
        dash = _import_builder(self.git, DASH_BUILDER, "bdd", tmp)
        pre_mod = _import_builder(self.git, PRE_BUILDER, "bpd", tmp) if self.pre.active else None
        meta = []
        existing = None
        pre_existing = None
        pre_meta = []
        night_of = {}
        run_ctx_cache = {}
        for x in runs:
            rid = x["run_id"]
            if x["kind"] == "nightly":
                n = x["night"]
                cset = {s: c for s, c in ctx[n].items() if (s, n) not in hidden and (s, n) not in failed}
                key = rid
            else:
                n = None
                if x["cidx"] not in run_ctx_cache:
                    run_ctx_cache[x["cidx"]] = T.night_contexts(self.snaps.at(x["cidx"]), seed)[0]
                full = run_ctx_cache[x["cidx"]]
                rr = np.random.default_rng(x["sel"])
                if x["kind"] == "side":
                    cset = {s: c for s, c in full.items() if s[0] == "tpu"}
                else:
                    aliases = sorted({s[0] for s, c in full.items() if c.suite == "tb"})
                    if not aliases:
                        continue
                    pick = set(rr.choice(aliases, size=min(len(aliases), 1 + int(rr.random() < 0.3)),
                                         replace=False))
                    ks = sorted({s[1] for s in full if s[0] in pick})
                    kk = set(rr.choice(ks, size=min(len(ks), int(rr.integers(2, 7))), replace=False))
                    cset = {s: c for s, c in full.items() if s[0] in pick and s[1] in kk and c.suite == "tb"}
                key = rid
            nn = n if n is not None else self._night_index_before(x["time"])
            rdir = tmp / "cache" / rid
            files = {}
            for s, c in cset.items():
                extra = None
                if x.get("effort") == "quick":
                    extra = Mult(h=float(np.exp(rng(seed, "quick", s).uniform(0.05, 0.22))), ct=0.3)
                elif x.get("speed"):
                    extra = Mult(h=x["speed"])
                prot = n is not None and (s, n) in protected
                mets = self._measure(c, nn, key, extra, prot, nightly=n is not None)
                snap = self.snaps.at(x["cidx"])
                recs = self._records(c, mets, snap.naming["shapes_in_json"], '"backend": _get_backend()' in
                                     (self._runpy_text(x["cidx"]) or ""))
                # one file per platform and suite: the builder reads the same rows as from one artifact
                # per shard (only its directory prefix and first record matter), with far fewer files
                files.setdefault(f"benchmark-results-{c.shard.split('-')[2]}-{c.suite}", []).extend(recs)
            for shard, recs in files.items():
                d = rdir / shard
                d.mkdir(parents=True, exist_ok=True)
                (d / "helionbench.json").write_text(json.dumps(recs))
            meta.append({"run_id": rid, "sha": x["sha"][:8], "full_sha": x["sha"], "date": iso(x["time"]),
                         "branch": x["branch"], "is_nightly": x["is_nightly"]})
            if x["kind"] != "nightly":
                continue
            # ---- publish right after the nightly: Helion's builder over the new runs' artifacts
            snap_c = self.commits[x["cidx"]].sha
            disp = tmp / "benchmark_dispatch.yml"
            disp.write_text(self.git.show(snap_c, RF.WF + "benchmark_dispatch.yml") or "")
            active = dash.get_active_platforms(str(disp))
            expected_k = dash.get_expected_kernels_per_platform(str(disp))
            _freeze_now(dash, x["time"] + timedelta(hours=3))
            doc = dash.build_dashboard_data(str(tmp / "cache"), list(meta), existing, active, expected_k)
            if n >= first_kept:
                self._write(f"dash-{n - first_kept:04d}.z", doc)
            existing = doc
            shutil.rmtree(tmp / "cache", ignore_errors=True)
            if n >= first_kept:
                night_of[rid] = n - first_kept
            # ---- the pretuned nightly of the same day
            if pre_mod is not None:
                pdoc = self.pre.publish(n, pre_mod, tmp, pre_meta, pre_existing, _freeze_now)
                if pdoc is not None:
                    pre_existing = pdoc
                    if n >= first_kept:
                        self._write(f"pre-{n - first_kept:04d}.z", pdoc)
                        pr = self.pre.run_of_night.get(n)
                        if pr:
                            night_of[pr["run_id"]] = n - first_kept
        shutil.rmtree(tmp, ignore_errors=True)
        self._night_of = night_of
        self._series_count = len({(s["platform_short"], s["kernel"]) for s in json.loads(
            self.dashboard_bytes(self.k - 1))["summary"]}) + self.pre.series_count()
        self.nights = [Night(self.ninfo[n].run_id, self.ninfo[n].sha, self.ninfo[n].sha[:8], self.ninfo[n].time,
                             (self.pre.run_of_night.get(n) or {}).get("run_id"),
                             (self.pre.run_of_night.get(n) or {}).get("sha"))
                       for n in range(first_kept, N)]
        self.labels = [l for l in self._labels(changes) + self.pre.labels(self)
                       if self._idx(l.first_bad_run_id) is not None and self._idx(l.first_bad_run_id) > first_kept]

    def _idx(self, run_id):
        for n in self.ninfo:
            if n.run_id == run_id:
                return n.i
        for n, x in self.pre.run_of_night.items():
            if x.get("run_id") == run_id:
                return n
        return None

    def _night_index_before(self, t):
        best = 0
        for n in self.ninfo:
            if n.time <= t:
                best = n.i
        return best

    def _runpy_text(self, cidx):
        sn = self.snaps.at(cidx)
        key = sn.idx
        if not hasattr(self, "_rp_cache"):
            self._rp_cache = {}
        if key not in self._rp_cache:
            self._rp_cache[key] = self.git.show(self.commits[key].sha, "benchmarks/run.py")
        return self._rp_cache[key]

    def _write(self, name, doc):
        # the live files are indented; the content is what matters and the C encoder is 10x faster
        (self.docdir / name).write_bytes(zlib.compress(json.dumps(doc).encode(), 3))

    # ------------------------------------------------------------------ labels
    HONEST_PRE = {"budget", "passes"}

    @staticmethod
    def _moved(a: dict, b: dict, c) -> tuple[set, str]:
        mv = set()
        sp = a["helion_speedup_geomean"] / b["helion_speedup_geomean"] - 1 if b["helion_speedup_geomean"] else 0
        lat = a["helion_latency_avg_ms"] / b["helion_latency_avg_ms"] - 1 if b["helion_latency_avg_ms"] else 0
        ct = (a["compile_time_geomean_s"] / b["compile_time_geomean_s"] - 1) \
            if c.compile_mode and b["compile_time_geomean_s"] else 0
        if abs(sp) >= 0.025:
            mv.add("helion_speedup_geomean")
        if c.latency_on and abs(lat) >= 0.05:
            mv.add("helion_latency_avg_ms")
        if abs(math.log1p(ct)) >= math.log(1.2):
            mv.add("compile_time_geomean_s")
        if mv:
            for m in ("triton_speedup_geomean", "torch_compile_speedup_geomean"):
                if b[m] and abs(a[m] / b[m] - 1) >= 0.035:
                    mv.add(m)
        if "helion_speedup_geomean" in mv:
            d = "regression" if sp < 0 else "improvement"
        elif "helion_latency_avg_ms" in mv:
            d = "regression" if lat > 0 else "improvement"
        else:
            d = "regression" if ct > 0 else "improvement"
        return mv, d

    def _ctx_at_commit(self, cidx):
        if not hasattr(self, "_cc"):
            self._cc = {}
        sn = self.snaps.at(cidx)
        if sn.idx not in self._cc:
            self._cc[sn.idx] = T.night_contexts(sn, self.seed)[0]
        return self._cc[sn.idx]

    def _change_sha(self, s, mech, n, old):
        a, b = self.ninfo[n - 1].cidx, self.ninfo[n].cidx
        prev, found = old, None
        for sn in self.snaps.between(a, b):
            c = self._ctx_at_commit(sn.idx).get(s)
            val = getattr(c, mech) if c is not None else prev
            if val != prev:
                found = self.commits[sn.idx].sha
                prev = val
        return found

    def _labels(self, changes) -> list:
        N, ctx, ex = self.N, self.ctx, self.exp_hl
        rid = lambda n: self.ninfo[n].run_id
        out = []
        for e in self.effects:
            if e.cause is None:
                continue
            n = e.start
            mem, metrics, honest, dirs = [], set(), {}, []
            for s in sorted(e.members):
                c = ctx[n].get(s)
                if e.hide:
                    mem.append(s)
                    continue
                if c is None:
                    continue
                a, b = ex[n][s], self._expected(c, n, exclude=e)
                mv, d = self._moved(a, b, c)
                if e.cause == "noise":
                    m = e.members[s]
                    mem.append(s)
                    metrics |= {"helion_latency_avg_ms"} if m.lat != 1.0 else {"helion_speedup_geomean"}
                    if e.kind == "scatter" and c.latency_on:
                        metrics.add("helion_latency_avg_ms")
                    continue
                if not mv:
                    continue
                mem.append(s)
                metrics |= mv
                dirs.append(d)
                if e.honest == "post":
                    honest[f"{s[0]}/{s[1]}"] = round(a["helion_speedup_geomean"], 4)
                elif e.honest == "pre":
                    honest[f"{s[0]}/{s[1]}"] = round(b["helion_speedup_geomean"], 4)
            if not mem:
                continue
            if e.hide:
                metrics = {"helion_speedup_geomean"}
                dirs = ["regression"]
            direction = max(set(dirs), key=dirs.count) if dirs else ("regression" if e.cause != "noise" else "none")
            out.append(Label(e.id, "dashboard", e.cause, e.kind, direction, tuple(mem), tuple(sorted(metrics)),
                             rid(n), rid(n - 1), rid(e.end) if e.end is not None and e.end < N else None,
                             e.culprit if e.cause == "real" else None,
                             e.change if e.cause in ("method_change", "hardware") else None, honest, e.note))
        # facts the repo changed between two nights: labeled where they move the numbers. One label per
        # series and night: the change that moved it most (a runner swap with a new image is the runner)
        by_sn = {}
        for mech, s, n in changes:
            if mech in F.LABELED:
                by_sn.setdefault((s, n), set()).add(mech)
        groups = {}
        for (s, n), mechs in sorted(by_sn.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            c, p = ctx[n][s], ctx[n - 1][s]
            if c.suite not in ("tb", "lin"):
                mechs.discard("torch")
            opts = []
            for mech in sorted(mechs):
                kw = {mech: getattr(p, mech)}
                if mech == "passes":
                    kw["compile_mode"] = p.compile_mode
                if mech == "runner" and "image" in mechs:
                    kw["image"] = p.image
                if mech == "image" and "runner" in mechs:
                    continue
                a, b = ex[n][s], self._expected(c, n, ctx_override=replace(c, **kw))
                mv, d = self._moved(a, b, c)
                if not mv and mech != "shapes":
                    continue
                if not mv:  # a new shape list shows in per_shape even when the geomean hardly moves
                    mv = {"helion_speedup_geomean"}
                size = sum(abs(math.log(a[m] / b[m])) for m in ("helion_speedup_geomean", "helion_latency_avg_ms")
                           if a[m] and b[m]) + (0.01 if mech == "shapes" else 0)
                opts.append((size, mech, mv, d, a, b))
            if not opts:
                continue
            size, mech, mv, d, a, b = max(opts, key=lambda o: o[0])
            cause, kind = F.LABELED[mech]
            sha = self._change_sha(s, mech, n, getattr(p, mech)) or self.commits[self.ninfo[n].cidx].sha
            pre = mech in self.HONEST_PRE or (mech == "cg" and p.cg and not c.cg)
            g = groups.setdefault((cause, kind, sha, n), {"mem": [], "metrics": set(), "honest": {}, "dirs": [],
                                                          "mechs": set()})
            g["mem"].append(s)
            g["metrics"] |= mv
            g["dirs"].append(d)
            g["mechs"].add(mech)
            g["honest"][f"{s[0]}/{s[1]}"] = round((b if pre else a)["helion_speedup_geomean"], 4)
        for i, ((cause, kind, sha, n), g) in enumerate(sorted(groups.items(), key=lambda kv: (kv[0][3], kv[0][1]))):
            subj = next((c.subject for c in self.commits if c.sha == sha), "")
            out.append(Label(f"n{self.seed}-f{i:03d}-{kind.split('/')[0]}", "dashboard", cause, kind,
                             max(set(g["dirs"]), key=g["dirs"].count), tuple(sorted(g["mem"])),
                             tuple(sorted(g["metrics"])), rid(n), rid(n - 1), None, None, sha, g["honest"],
                             f"{'/'.join(sorted(g['mechs']))} changed in the repo: {subj[:70]}"))
        return out
