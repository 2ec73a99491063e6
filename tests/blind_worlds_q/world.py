"""World Q: nightlies on the real Helion history, simulated per-shape times, Helion's own builders."""
from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night  # the shared interface

from . import facts as F
from . import gitio
from .model import PRE_DEVICE, DashSeries, PreSeries, geo, h64, rng, sample

N_DEFAULT = 150
RUN_ID_EPOCH = datetime(2025, 9, 1, tzinfo=timezone.utc)


@dataclass
class Effect:
    start: int
    end: int | None  # first night it no longer applies (None: lasts)
    f: dict  # component -> multiplicative factor on that TIME (h, b, t, c, hs, lat, ct; pretuned: h, b, b:<name>)
    shaped: bool = True  # reach each shape with its own weight
    shapes: tuple | None = None  # only these shape labels / indices

    def active(self, i: int) -> bool:
        return self.start <= i and (self.end is None or i < self.end)


@dataclass
class XRun:
    """A run of either workflow: nightly, manual dispatch on main, or a side-branch run."""
    run_id: str
    sha: str
    date: datetime
    branch: str
    is_nightly: bool
    night: int  # the nightly whose state it measures (the last one at or before it)
    kind: str
    platforms: tuple | None = None  # None: every platform of the night
    kernels: tuple | None = None
    skew: float = 1.0
    source: str = "dashboard"


def iso(d: datetime) -> str:
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_id_at(t: datetime, salt: int) -> str:
    return str(18_000_000_000 + int((t - RUN_ID_EPOCH).total_seconds() * 260) + salt % 97)


class QWorld:
    def __init__(self, seed: int, workdir: Path, nights: int | None, window_end: str):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = gitio.clone(self.workdir / "helion")
        self.commits = gitio.first_parent(self.repo)
        self.fp = {c.sha: i for i, c in enumerate(self.commits)}
        self.blobs = gitio.Blobs(self.repo)
        self._plan_nights(window_end)
        self.dfacts = [F.dash_facts(self.blobs, n.full_sha) for n in self.all_nights]
        self.pfacts = [F.pre_facts(self.blobs, n.p_full_sha) if n.p_full_sha else None for n in self.all_nights]
        self._series_maps = {}
        self.dseries: dict[tuple, DashSeries] = {}
        self.pseries: dict[tuple, PreSeries] = {}
        self.effects: dict[tuple, list[Effect]] = {}
        self.missing: dict[str, set] = {}  # platform -> nights its artifacts are absent (dashboard)
        self.pmissing: dict[str, set] = {}
        self.scatter: dict[tuple, tuple] = {}  # series key -> (from night, sigma multiplier)
        self.outliers: dict[tuple, dict] = {}  # (series key, night) -> {component: factor}
        self.labels_all: list = []
        from .plan import plan_world
        plan_world(self)
        self._plan_runs()
        # the built window: the last `nights` nightlies
        n_all = len(self.all_nights)
        k = n_all if nights is None else max(2, min(int(nights), n_all))
        self.start = n_all - k
        self.nights: list[Night] = self.all_nights[self.start:]
        self._night_by_run = {}
        for i, n in enumerate(self.nights):
            self._night_by_run[n.run_id] = i
            if n.p_run_id:
                self._night_by_run[n.p_run_id] = i
        self.labels = self._cut_labels()
        from .docs import DocBuilder
        self._docs = DocBuilder(self)
        self._docs.build_all()
        self.blobs.close()

    # ------------------------------------------------------------------ nights
    def head_at(self, t: datetime) -> str:
        """HEAD of main at ``t`` (what `git rev-list -1 --first-parent --before=t main` gives)."""
        lo, hi = 0, len(self.commits)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.commits[mid].when <= t:
                lo = mid + 1
            else:
                hi = mid
        return self.commits[max(lo - 1, 0)].sha

    def _plan_nights(self, window_end: str):
        end = datetime.fromisoformat(window_end).replace(tzinfo=timezone.utc)
        g = rng(self.seed, "nights")
        # a few days the cron did not fire (GitHub drops scheduled runs now and then)
        skips = set(int(x) for x in g.choice(np.arange(3, N_DEFAULT), size=3, replace=False))
        days, d = [], 0
        while len(days) < N_DEFAULT:
            if d not in skips:
                days.append(end - timedelta(days=d))
            d += 1
        days.reverse()
        self.all_nights: list[Night] = []
        self.pdates: list[datetime] = []
        for day in days:
            gd = rng(self.seed, "night", day.date().isoformat())
            t = day.replace(hour=8, minute=0, second=0) + timedelta(minutes=int(gd.integers(4, 48)),
                                                                    seconds=int(gd.integers(0, 60)))
            sha = self.head_at(t)
            pt = day.replace(hour=10, minute=0, second=0) + timedelta(minutes=int(gd.integers(3, 40)),
                                                                      seconds=int(gd.integers(0, 60)))
            psha = self.head_at(pt)
            prid = pfs = None
            if F.pre_facts(self.blobs, psha) is not None:
                prid, pfs = run_id_at(pt, h64(self.seed, "p", day.isoformat())), psha
            self.all_nights.append(Night(run_id_at(t, h64(self.seed, "d", day.isoformat())), sha, sha[:8], t,
                                         prid, pfs))
            self.pdates.append(pt)

    def p_date(self, i: int) -> datetime:
        return self.pdates[i]

    # ------------------------------------------------------------------ extra runs
    def _plan_runs(self):
        N = len(self.all_nights)
        g = rng(self.seed, "runs")
        self.extra: list[XRun] = []
        self.pextra: list[XRun] = []
        for i in range(1, N):
            a, b = self.all_nights[i - 1].date, self.all_nights[i].date
            span = (b - a).total_seconds()
            r = g.random()
            if r < 0.16:  # a manual dispatch on main: someone checks one kernel on one or two GPUs
                t = a + timedelta(seconds=float(g.uniform(0.2, 0.9)) * span)
                f = self.dfacts[i - 1]
                plats = sorted({p for p, _, _ in f.series() if p in ("b200", "h100", "mi350x", "b200_cute")})
                if not plats:
                    continue
                pl = tuple(sorted(set(g.choice(plats, size=min(len(plats), int(g.integers(1, 3))), replace=False))))
                ks = sorted({k for p, k, _ in f.series() if p in pl})
                kk = tuple(sorted(set(g.choice(ks, size=min(len(ks), int(g.integers(1, 4))), replace=False))))
                self.extra.append(XRun(run_id_at(t, h64(self.seed, "m", i)), self.head_at(t), t, "main", False, i - 1,
                                       "manual", pl, kk, float(np.exp(g.normal(0, 0.06)))))
            elif r < 0.26:  # a side-branch run (a PR author benchmarking their branch)
                t = a + timedelta(seconds=float(g.uniform(0.1, 0.95)) * span)
                f = self.dfacts[i - 1]
                tpu = any(p == "tpu" for p, _, _ in f.series()) and g.random() < 0.35
                plats = ("tpu",) if tpu else tuple(p for p in ("b200", "h100") if any(q == p for q, _, _ in f.series()))
                if not plats:
                    continue
                ks = sorted({k for p, k, _ in f.series() if p in plats})
                kk = tuple(sorted(set(g.choice(ks, size=min(len(ks), int(g.integers(2, 6))), replace=False))))
                who = ["jansel", "oulgen", "yf225", "v0i0", "mengluy0125", "shunting314"][int(g.integers(0, 6))]
                topic = "tpu-nightly-benchmark" if tpu else ["tile-sweep", "reduce-loops", "bench-fix",
                                                              "persistent-rs"][int(g.integers(0, 4))]
                # a side-branch copy of the TPU nightly is cron-dispatched too (is_nightly, not main)
                self.extra.append(XRun(run_id_at(t, h64(self.seed, "b", i)), self.head_at(t), t, f"{who}/{topic}",
                                       bool(tpu), i - 1, "branch", plats, kk, float(np.exp(g.normal(0, 0.1)))))
            if self.all_nights[i].p_run_id and self.all_nights[i - 1].p_run_id and g.random() < 0.12:
                pa = self.p_date(i - 1)
                t = pa + timedelta(hours=float(g.uniform(2, 18)))
                if t < self.p_date(i):
                    self.pextra.append(XRun(run_id_at(t, h64(self.seed, "pm", i)), self.head_at(t), t, "main", False,
                                            i - 1, "manual", (str(g.choice(["b200", "h100"])),), None,
                                            float(np.exp(g.normal(0, 0.05))), "pretuned"))

    def ensure_manual_before(self, i: int):
        """A manual dispatch between nightly i-1 and i (the first built nightly's document always
        carries one, as the live file does: it holds a year of runs)."""
        b = self.all_nights[i].date
        a = self.all_nights[i - 1].date if i > 0 else b - timedelta(days=1)
        if any(a < r.date < b and not r.is_nightly for r in self.extra):
            return
        t = a + (b - a) * 0.55
        src = max(i - 1, 0)
        f = self.dfacts[src]
        ks = sorted({k for p, k, _ in f.series() if p == "b200"}) or sorted({k for _, k, _ in f.series()})
        plat = "b200" if any(p == "b200" for p, _, _ in f.series()) else f.series()[0][0]
        g = rng(self.seed, "first-manual", i)
        kk = tuple(sorted(set(g.choice(ks, size=min(2, len(ks)), replace=False))))
        self.extra.append(XRun(run_id_at(t, h64(self.seed, "m0", i)), self.head_at(t), t, "main", False, src, "manual",
                               (plat,), kk, float(np.exp(g.normal(0, 0.05)))))

    # ------------------------------------------------------------------ series state
    def series_map(self, i: int) -> dict:
        """{(platform_short, kernel): job} of the rows nightly i produces."""
        f = self.dfacts[i]
        key = ("rows", id(f))
        hit = self._series_maps.get(key)
        if hit is None or hit[0] is not f:
            hit = self._series_maps[key] = (f, {(p, k): job for p, k, job in f.series()})
        return hit[1]

    def dser(self, plat: str, kernel: str, suite: str) -> DashSeries:
        key = (plat, kernel)
        s = self.dseries.get(key)
        if s is None:
            s = self.dseries[key] = DashSeries(plat, kernel, suite, self.seed)
        return s

    def pser(self, plat: str, kernel: str) -> PreSeries:
        key = (plat, kernel)
        s = self.pseries.get(key)
        if s is None:
            s = self.pseries[key] = PreSeries(plat, kernel, self.seed)
        return s

    def dstate(self, i: int, plat: str, kernel: str):
        """How the nightly measured this row at night i: (job, shapes, cudagraph, baseline impl,
        columns) or None when the row is not produced."""
        job = self.series_map(i).get((plat, kernel))
        if job is None:
            return None
        f = self.dfacts[i]
        s = self.dser(plat, kernel, job.suite)
        if job.suite == "linattn":
            base = kernel.removesuffix("-bwd")
            names = f.linattn_varlen_shapes if base in f.linattn_forward_only and "varlen" in base else f.linattn_shapes
            names = list(names)[: job.num_shapes] if job.num_shapes else list(names)
            return job, names, True, f.fla_pin or "fla", (False, False, True, False)
        if job.suite == "tpu":
            shapes = s.master[: (job.num_shapes or 2)]
            return job, shapes, True, "torch", (False, True, True, True)
        o = f.kernel_opts[kernel]
        shapes = sample(s.master, o.num_inputs, f.sample_mode)
        if job.suite == "tpu_bridge":
            return job, shapes, True, o.baseline, (False, o.has_tc, True, True)
        cg = f.cudagraph and not o.no_cudagraph
        cols = (o.has_triton, o.has_tc, "latency" in f.metrics.split(","), f.compile_time)
        return job, shapes, cg, o.baseline, cols

    def efactor(self, key: tuple, i: int, comp: str, w: float, shape) -> float:
        v = 1.0
        for e in self.effects.get(key, ()):
            if comp in e.f and e.active(i) and (e.shapes is None or shape in e.shapes):
                v *= e.f[comp] ** (w if e.shaped else 1.0)
        return v

    def efactors(self, key: tuple, i: int, weights: np.ndarray, labels) -> dict:
        """{component: per-shape factor array} of the effects active on a row at night i."""
        out = {}
        for e in self.effects.get(key, ()):
            if not e.active(i):
                continue
            mask = None if e.shapes is None else np.array([lab in e.shapes for lab in labels])
            for c, f in e.f.items():
                x = np.power(f, weights) if e.shaped else np.full(len(weights), f)
                if mask is not None:
                    x = np.where(mask, x, 1.0)
                out[c] = out.get(c, 1.0) * x
        return out

    def base_factor(self, plat: str, kernel: str, impl: str, first_impl: str) -> float:
        """The baseline implementation's time relative to the first one the series had."""
        if impl == first_impl:
            return 1.0
        g = rng(self.seed, "impl", kernel, impl)  # the new baseline is faster or slower on every GPU alike
        jit = rng(self.seed, "impl", plat, kernel, impl).normal(0, 0.03)
        return float(np.exp(g.choice([-1, 1]) * g.uniform(0.09, 0.3) + jit))

    def first_impl(self, plat: str, kernel: str) -> str:
        key = ("first_impl", plat, kernel)
        v = self._series_maps.get(key)
        if v is None:
            v = ""
            for i in range(len(self.all_nights)):
                st = self.dstate(i, plat, kernel)
                if st:
                    v = st[3]
                    break
            self._series_maps[key] = v
        return v

    # ------------------------------------------------------------------ measurement
    def _params(self, s: DashSeries, shapes) -> tuple:
        key = ("params", s.plat, s.kernel, tuple(shapes))
        v = self._series_maps.get(key)
        if v is None:
            ps = [s.shape(lab) for lab in shapes]
            v = tuple(np.array([getattr(p, a) for p in ps]) for a in ("base_ms", "sp_h", "sp_t", "sp_c", "compile_s",
                                                                       "weight"))
            self._series_maps[key] = v
        return v

    def measure(self, i: int, plat: str, kernel: str, noise: bool = True, run: XRun | None = None):
        """Per-shape metric lists of one row at night i (noise=False: the noise-free truth)."""
        st = self.dstate(i, plat, kernel)
        if st is None:
            return None
        job, shapes, cg, impl, (has_t, has_c, has_lat, has_ct) = st
        s = self.dser(plat, kernel, job.suite)
        key = ("d", plat, kernel)
        bf = self.base_factor(plat, kernel, impl, self.first_impl(plat, kernel))
        base, sp_h, sp_t, sp_c, comp_s, wts = self._params(s, shapes)
        n = len(shapes)
        ef = self.efactors(key, i, wts, shapes)
        one = 1.0
        pn = 1.0
        if noise:
            tag = run.run_id if run is not None else self.all_nights[i].run_id
            pn = float(np.exp(rng(self.seed, "pn", plat, tag).normal(0, 0.006)))
        kb = base * bf * ef.get("b", one) * pn
        kh = base / sp_h * ef.get("h", one) * pn
        kt = base / sp_t * ef.get("t", one) * pn
        kc = base / sp_c * ef.get("c", one) * pn
        tb = kb + (0 if cg else s.ovh["b"])
        th = kh * ef.get("hs", one) + (0 if cg else s.ovh["h"])
        tt = kt + (0 if cg else s.ovh["t"])
        tc = kc + (0 if cg else s.ovh["c"])
        lat = kh * ef.get("lat", one) * 1.02 + 0.0035
        comp = comp_s * ef.get("ct", one)
        g = None
        if noise:
            g = rng(self.seed, "measure", plat, kernel, tag)
            sig = s.sigma
            sc = self.scatter.get(key)
            if sc and i >= sc[0]:
                sig *= sc[1]
            seeded = "HELION_AUTOTUNE_RANDOM_SEED" in self.dfacts[i].nightly_env
            hsig = math.hypot(sig, 0.0 if seeded else s.noisy_helion)
            out_f = self.outliers.get((key, i), {}) if run is None else {}
            z = g.normal(0, 1, (6, n))
            stray = g.random((5, n)) < 0.01
            mags = g.uniform(1.15, 1.2, (5, n)) ** g.choice([-1, 1], (5, n))
            mags = np.where(stray, mags, 1.0)
            tb = tb * np.exp(sig * z[0]) * out_f.get("b", 1.0) * mags[0]
            th = th * np.exp(hsig * z[1]) * out_f.get("h", 1.0) * mags[1]
            tt = tt * np.exp(sig * z[2]) * mags[2]
            tc = tc * np.exp(sig * z[3]) * mags[3]
            lat = lat * np.exp(sig * 0.9 * z[4]) * out_f.get("lat", 1.0) * mags[4]
            comp = comp * np.exp(0.07 * z[5])
            if run is not None:
                th = th * run.skew
                lat = lat * run.skew
        res = {"helion_speedup": list(map(float, tb / th)), "helion_accuracy": [1.0] * n}
        if has_t:
            res["triton_speedup"] = list(map(float, tb / tt))
        if has_c:
            res["torch_compile_speedup"] = list(map(float, tb / tc))
        if has_lat:
            res["helion_latency_ms"] = list(map(float, lat))
        if has_ct:
            res["helion_compile_time_s"] = list(map(float, comp))
        if noise:
            self._failures(res, g, shapes)
        return job, shapes, res

    def _failures(self, res: dict, g, shapes):
        r = g.random(3)
        n = len(shapes)
        if r[0] < 0.002:  # the whole kernel crashed in the nightly: every shape empty
            for k in ("helion_speedup", "helion_accuracy", "helion_latency_ms"):
                if k in res:
                    res[k] = [0.0] * n
            res.pop("helion_compile_time_s", None)
        elif r[1] < 0.006 and n > 2:  # one shape failed (tritonbench writes "" -> 0.0)
            j = int(g.integers(0, n))
            for k in ("helion_speedup", "helion_accuracy", "helion_latency_ms"):
                if k in res:
                    res[k][j] = 0.0
            res.pop("helion_compile_time_s", None)  # count mismatch: run.py skips the compile metric
        elif r[2] < 0.004:  # ran but wrong on one shape
            res["helion_accuracy"][int(g.integers(0, n))] = 0.0

    def clean(self, i: int, plat: str, kernel: str) -> dict | None:
        """Noise-free aggregates of one row at night i (what the nightly would show without scatter)."""
        key = ("clean", i, plat, kernel)
        v = self._series_maps.get(key)
        if v is None:
            m = self.measure(i, plat, kernel, noise=False)
            if m is None:
                v = {}
            else:
                res = m[2]
                v = {"helion_speedup_geomean": geo(res["helion_speedup"])}
                if "triton_speedup" in res:
                    v["triton_speedup_geomean"] = geo(res["triton_speedup"])
                if "torch_compile_speedup" in res:
                    v["torch_compile_speedup_geomean"] = geo(res["torch_compile_speedup"])
                if "helion_latency_ms" in res:
                    v["helion_latency_avg_ms"] = sum(res["helion_latency_ms"]) / len(res["helion_latency_ms"])
                if "helion_compile_time_s" in res:
                    v["compile_time_geomean_s"] = geo(res["helion_compile_time_s"])
                v["_shapes"] = tuple(m[1])
            self._series_maps[key] = v
        return v or None

    # ------------------------------------------------------------------ pretuned measurement
    def pmeasure(self, i: int, plat: str, kernel: str, noise: bool = True, run: XRun | None = None):
        f = self.pfacts[i]
        if f is None or kernel not in f.kernels:
            return None
        pk = f.kernels[kernel]
        sm = PRE_DEVICE[plat][1] if plat in PRE_DEVICE else None
        if sm not in dict(pk.configs) or plat not in f.platforms:
            return None
        s = self.pser(plat, kernel)
        key = ("p", plat, kernel)
        tag = run.run_id if run is not None else self.all_nights[i].p_run_id
        g = rng(self.seed, "pmeasure", plat, kernel, tag) if noise else None
        sig = s.sigma
        sc = self.scatter.get(key)
        if sc and i >= sc[0]:
            sig *= sc[1]
        out_f = self.outliers.get((key, i), {}) if (noise and run is None) else {}
        if noise and g.random() < 0.004:
            return {"error": str(g.choice([
                "RuntimeError: CUDA error: an illegal memory access was encountered",
                "OutOfResources: out of resource: shared memory, Required: 264192, Hardware limit: 232448",
                "TimeoutError: benchmark exceeded 1800s"]))}
        pn = float(np.exp(rng(self.seed, "ppn", plat, tag).normal(0, 0.005))) if noise else 1.0
        per_base = {n: [] for n in pk.baselines}
        best = []
        for j in range(pk.n_shapes):
            w = s.weight(j)
            hm = s.helion_ms(j)
            H = hm * self.efactor(key, i, "h", w, j) * pn
            B = {}
            for n in pk.baselines:
                B[n] = hm * s.ratio(n, j) * self.efactor(key, i, "b", w, j) * \
                    self.efactor(key, i, "b:" + n, w, j) * pn
            if not pk.cudagraph:
                H += 0.007
                B = {n: v + 0.004 * (1 + (n == "torch")) for n, v in B.items()}
            elif not f.l2_clear:
                gl = rng(self.seed, "l2", plat, kernel, j)
                small = max(0.0, 1.0 - j / max(pk.n_shapes - 1, 1))
                H *= 1 - 0.18 * small * float(gl.uniform(0.3, 1.0))
                B = {n: v * (1 - 0.18 * small * float(gl.uniform(0.0, 0.7))) for n, v in B.items()}
            if noise:
                H *= math.exp(sig * g.normal()) * out_f.get("h", 1.0)
                if g.random() < 0.01:
                    H *= g.uniform(1.15, 1.2) ** g.choice([-1, 1])
                for n in B:
                    B[n] *= math.exp(sig * g.normal()) * out_f.get("b", 1.0)
                    if g.random() < 0.01:
                        B[n] *= g.uniform(1.15, 1.2) ** g.choice([-1, 1])
                if run is not None:
                    H *= run.skew
            for n in pk.baselines:
                per_base[n].append(B[n] / H)
            best.append(min(B.values()) / H)
        bl = {n: {"wins": sum(1 for x in v if x > 1.0), "total": len(v), "geomean": round(geo(v), 4),
                  "best_speedup": round(max(v, default=0.0), 4)} for n, v in per_base.items()}
        return {"helion_wins": sum(1 for x in best if x > 1.0), "total": len(best), "geomean": round(geo(best), 4),
                "best_speedup": round(max(best), 4), "cudagraph": pk.cudagraph, "baselines": bl}

    def pclean(self, i: int, plat: str, kernel: str) -> dict | None:
        key = ("pclean", i, plat, kernel)
        v = self._series_maps.get(key)
        if v is None:
            m = self.pmeasure(i, plat, kernel, noise=False)
            v = {} if m is None else {"geomean": m["geomean"], "best_speedup": m["best_speedup"],
                                      "_base": tuple(sorted(m["baselines"])), "_cg": m["cudagraph"],
                                      "_n": m["total"]}
            self._series_maps[key] = v
        return v or None

    def pseries_at(self, i: int) -> list[tuple[str, str]]:
        f = self.pfacts[i]
        return [(p, k) for p, k, _ in f.series()] if f else []

    # ------------------------------------------------------------------ interface
    def _cut_labels(self) -> list:
        out = []
        s = self.start
        for l in self.labels_all:
            a = l["first"]
            if a - 1 < s:
                continue
            n = self.all_nights
            pre = l["source"] == "pretuned"
            rid = (lambda j: n[j].p_run_id) if pre else (lambda j: n[j].run_id)
            end = l.get("end")
            out.append(Label(l["id"], l["source"], l["cause"], l["kind"], l["direction"],
                             tuple(tuple(m) for m in l["members"]), tuple(l["metrics"]), rid(a), rid(a - 1),
                             rid(end) if end is not None and end < len(n) else None,
                             l.get("culprit"), l.get("change"), dict(l.get("honest") or {}), l["note"]))
        return out

    def night_of(self, run_id) -> int | None:
        return self._night_by_run.get(str(run_id))

    def series_count(self) -> int:
        keys = set()
        for i in range(self.start, len(self.all_nights)):
            keys.update(("d",) + k for k in self.series_map(i))
            keys.update(("p", p, k) for p, k in self.pseries_at(i))
        return len(keys)

    def dashboard_bytes(self, n: int) -> bytes:
        return self._docs.get("dashboard", n)

    def pretuned_bytes(self, n: int) -> bytes | None:
        return self._docs.get("pretuned", n)

    def close(self):
        self.blobs.close()
        shutil.rmtree(self.workdir / "docs", ignore_errors=True)
        shutil.rmtree(self.workdir / "cache", ignore_errors=True)
