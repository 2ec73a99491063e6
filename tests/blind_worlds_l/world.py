"""Build one blind world (set L): nightlies on real Helion shas, simulated timings, real builders."""
from __future__ import annotations

import importlib.util
import json
import math
import re
import shutil
import subprocess
import tempfile
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night

from .facts import Facts, Repo
from .model import Effect, factors, geo, gpu_values, h01, pretuned_values, series_params, shape_labels

WINDOWS = {111: datetime(2026, 5, 31, tzinfo=timezone.utc), 112: datetime(2026, 7, 25, tzinfo=timezone.utc),
           113: datetime(2026, 8, 12, tzinfo=timezone.utc)}
DEFAULT_NIGHTS = 150
DEVICES = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200",
           "mi350x": "AMD Instinct MI350X", "mi325x": "AMD Instinct MI325X", "tpu": "TPU v6 lite"}
GPU_TRITON = ("h100", "b200", "mi350x", "mi325x")
SPEEDUPS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean")
HEAD_LAT = ("helion_speedup_geomean", "helion_latency_avg_ms")


class _Clock:
    """Stands in for the ``datetime`` module inside a builder so its 365-day retention cutoff is
    measured from the nightly being published, not from the day the world is built."""

    def __init__(self, now: datetime):
        import datetime as _dt
        outer = now

        class _DT(_dt.datetime):
            @classmethod
            def now(cls, tz=None):
                return outer if tz is not None else outer.replace(tzinfo=None)

        self.datetime = _DT
        self.timezone = _dt.timezone
        self.timedelta = _dt.timedelta
        self.date = _dt.date


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class LWorld:
    def __init__(self, seed: int, workdir: Path, nights: int | None = None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        Path(workdir).mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f"blindL{seed}_", dir=str(workdir)))
        self.repo = self.tmp / "helion"
        from tests.shared_data import bundle_path
        subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(self.repo)], check=True)
        self.git = Repo(self.repo)
        # builders from the temporary checkout (bundle HEAD = the live builders)
        self.bd = _load(self.repo / ".github/dashboard/build_dashboard_data.py", f"_bl_bd_{seed}")
        self.bp = _load(self.repo / ".github/dashboard/build_pretuned_dashboard_data.py", f"_bl_bp_{seed}")
        self.n_total = nights or DEFAULT_NIGHTS
        self._facts: dict[str, Facts] = {}
        self.effects: list[Effect] = []
        self.labels: list[Label] = []
        self.scatter: dict[tuple, tuple[int, float]] = {}  # (source, plat, kernel) -> (from night, sigma)
        self.outliers: dict[tuple, tuple[str, float]] = {}  # (source, plat, kernel, night) -> (comp, factor)
        self.outage: dict[str, set] = {}  # plat -> nights missing
        self.taken: dict[tuple, list[int]] = {}  # (source, plat, kernel) -> nights with a planted step
        self._make_nights()
        self._plant()
        self._simulate_and_build()

    # ---------------------------------------------------------------- history
    def facts(self, sha: str) -> Facts:
        if sha not in self._facts:
            self._facts[sha] = Facts(self.git, sha)
        return self._facts[sha]

    def _first_parent(self) -> list[tuple[str, datetime]]:
        out = self.git.git("log", "--first-parent", "--format=%H %cI", "main")
        res = [(l.split()[0], datetime.fromisoformat(l.split()[1]).astimezone(timezone.utc)) for l in out.splitlines()]
        return res[::-1]

    def _head_at(self, fp, when: datetime) -> str:
        best = None
        for sha, d in fp:
            if d <= when:
                best = sha
            else:
                break
        return best

    def _make_nights(self):
        fp = self._first_parent()
        self.fp = fp
        self.fp_index = {s: i for i, (s, _) in enumerate(fp)}
        end = WINDOWS[self.seed]
        # a small build keeps the LAST ``nights`` nightlies of the window (it still ends on the window's end)
        days = [end - timedelta(days=DEFAULT_NIGHTS - 1 - i) for i in range(DEFAULT_NIGHTS)][-self.n_total:]
        nights = []
        rid = 27_000_000_000 + (self.seed - 100) * 100_000_000
        self.extra_runs: dict[int, list[dict]] = {}
        for i, day in enumerate(days):
            t = day.replace(hour=8, minute=0, second=int(3 + 50 * h01(self.seed, i, "s")))
            sha = self._head_at(fp, t)
            rid += 1000 + int(400 * h01(self.seed, i, "rid"))
            prid = psha = None
            pt = day.replace(hour=10, minute=0, second=int(3 + 50 * h01(self.seed, i, "ps")))
            psha_c = self._head_at(fp, pt)
            if self.facts(psha_c).pretuned_active:
                prid, psha = str(rid + 7), psha_c
            nights.append(Night(run_id=str(rid), full_sha=sha, sha=sha[:8], date=t, p_run_id=prid, p_full_sha=psha))
            # a few manual dispatches / side-branch runs that are not the trend
            if h01(self.seed, i, "manual") < 0.05 and i > 2:
                mt = day.replace(hour=3, minute=17)
                msha = self._head_at(fp, mt)
                branch = "main" if h01(self.seed, i, "br") < 0.6 else "yifeixu/tpu-nightly-benchmark"
                self.extra_runs[i] = [dict(run_id=str(rid - 300), sha=msha[:8], full_sha=msha,
                                           date=mt.strftime("%Y-%m-%dT%H:%M:%SZ"), branch=branch,
                                           is_nightly=branch != "main")]
        self.nights = nights
        self._night_by_run = {n.run_id: i for i, n in enumerate(nights)}
        self._night_by_run.update({n.p_run_id: i for i, n in enumerate(nights) if n.p_run_id})
        self.plan = []  # per night: {plat: [(kernel, suite)]}
        for n in nights:
            f = self.facts(n.full_sha)
            self.plan.append({p: f.kernels_for(p) for p in f.platforms()})
        self.pplan = []  # per night: {plat: {kernel: info}} for the pretuned suite
        for n in nights:
            if not n.p_full_sha:
                self.pplan.append({})
                continue
            f = self.facts(n.p_full_sha)
            d = {}
            for plat in f.pretuned_aliases:
                d[plat] = {k: v for k, v in f.pretuned.items() if plat in v["aot"]}
            self.pplan.append(d)

    def window(self, a: int, b: int) -> list[str]:
        """First-parent commits in (night a, night b] (dashboard shas)."""
        i, j = self.fp_index[self.nights[a].full_sha], self.fp_index[self.nights[b].full_sha]
        return [s for s, _ in self.fp[i + 1 : j + 1]]

    def pwindow(self, a: int, b: int) -> list[str]:
        i, j = self.fp_index[self.nights[a].p_full_sha], self.fp_index[self.nights[b].p_full_sha]
        return [s for s, _ in self.fp[i + 1 : j + 1]]

    def commit_info(self, sha: str) -> tuple[str, list[str]]:
        out = self.git.git("show", "--format=%s", "--name-only", sha).splitlines()
        return out[0], [l for l in out[1:] if l.strip()]

    # ---------------------------------------------------------------- helpers
    def series_on(self, n: int, plat: str) -> list[str]:
        return [k for k, _ in self.plan[n].get(plat, [])]

    def suite(self, n, plat, kernel):
        return dict(self.plan[n].get(plat, [])).get(kernel)

    def free(self, key, n, gap=4) -> bool:
        return all(abs(n - m) > gap for m in self.taken.get(key, []))

    def take(self, key, n):
        self.taken.setdefault(key, []).append(n)

    def nshapes(self, n, plat, kernel):
        """(shapes run, CUDA-graphed speedup timer?, natural shape count) at night n."""
        s = self.suite(n, plat, kernel)
        f = self.facts(self.nights[n].full_sha)
        if s == "linattn":
            return len(f.linattn_shapes(kernel)), True, 6
        if s == "tpu":
            k = 4 + int(5 * h01(self.seed, "tpushapes", kernel))
            return k, True, k
        o = f.gpu_opts(kernel)
        return o["num_inputs"], not o["no_cudagraph"], 20

    def expected(self, n, plat, kernel) -> float:
        """Noiseless Helion speedup geomean of a dashboard series at night n (every effect then)."""
        s = self.suite(n, plat, kernel)
        if s is None:
            return 0.0
        p = series_params(self.seed, plat, kernel, s)
        ns, graphed, nat = self.nshapes(n, plat, kernel)
        v = gpu_values(p, ns, graphed, factors(self.effects, plat, kernel, n), None, natural=nat)
        return round(geo(v["helion_speedup"]), 4)

    def p_expected(self, n, plat, kernel) -> float:
        info = self.pplan[n].get(plat, {}).get(kernel)
        if not info:
            return 0.0
        v = pretuned_values(self.seed, plat, kernel, info["baselines"], info["nshapes"], info["cudagraph"],
                            self.timer_epoch(n), factors(self.effects, plat, kernel, n, "pretuned"), None)
        return round(v["geomean"], 4)

    def timer_epoch(self, n) -> int:
        f = self.facts(self.nights[n].p_full_sha) if self.nights[n].p_full_sha else None
        return 1 if f and f.pretuned_bench_blob and self._l2_blob_ok(n) else 0

    def _l2_blob_ok(self, n) -> bool:
        # the L2-clearing timer (52326a08) is in the tree once that commit is an ancestor
        sha = self.nights[n].p_full_sha
        return self.fp_index.get(sha, 0) >= self.fp_index.get(self._l2_sha, 10**9)

    def label(self, source, cause, kind, direction, members, metrics, n, end=None, culprit=None, change=None,
              honest="new", note=""):
        nt = self.nights
        if source == "dashboard":
            fb, lg = nt[n].run_id, nt[n - 1].run_id
            er = nt[end - 1].run_id if end is not None else None
        else:
            fb, lg = nt[n].p_run_id, nt[n - 1].p_run_id
            er = nt[end - 1].p_run_id if end is not None else None
        hs = {}
        if cause != "noise" and honest:
            for (p, k) in members:
                at = n if honest == "new" else n - 1
                v = self.expected(at, p, k) if source == "dashboard" else self.p_expected(at, p, k)
                if v:
                    hs[f"{p}/{k}"] = v
        lid = f"L{self.seed}-{len(self.labels) + 1:02d}-{cause}-{kind.split('/')[0]}"
        self.labels.append(Label(id=lid, source=source, cause=cause, kind=kind, direction=direction,
                                 members=tuple(members), metrics=tuple(metrics), first_bad_run_id=fb,
                                 last_good_run_id=lg, end_run_id=er, culprit_sha=culprit, change_sha=change,
                                 honest_speedup=hs, note=note))
        for m in members:
            self.take((source, *m), n)
            if end is not None:
                self.take((source, *m), end)

    from .plant import plant as _plant  # noqa: E402  (the event catalogue lives in plant.py)

    # ---------------------------------------------------------------- simulate + build
    def _simulate_and_build(self):
        self.cache = self.tmp / "cache"
        self.docs: list[bytes] = []
        self.pdocs: list[bytes | None] = []
        runs_meta, p_runs_meta = [], []
        prev = prev_p = None
        wf = self.tmp / "dispatch.yml"
        pwf = self.tmp / "pdispatch.yml"
        for n, night in enumerate(self.nights):
            rng = np.random.default_rng([self.seed, n])
            f = self.facts(night.full_sha)
            wf.write_text(self.git.blob(f.blobs[".github/workflows/benchmark_dispatch.yml"]))
            active = self.bd.get_active_platforms(str(wf))
            expected = self.bd.get_expected_kernels_per_platform(str(wf))
            if self.cache.exists():
                shutil.rmtree(self.cache)
            metas = []
            for extra in self.extra_runs.get(n, []):
                self._write_run(self.cache / extra["run_id"], n, rng, manual=True)
                metas.append(extra)
            run_meta = dict(run_id=night.run_id, sha=night.sha, full_sha=night.full_sha,
                            date=night.date.strftime("%Y-%m-%dT%H:%M:%SZ"), branch="main", is_nightly=True)
            self._write_run(self.cache / night.run_id, n, rng)
            metas.append(run_meta)
            runs_meta += metas
            existing = json.loads(zlib.decompress(prev)) if prev else {}
            self.bd.datetime = _Clock(night.date + timedelta(hours=3))
            doc = self.bd.build_dashboard_data(str(self.cache), runs_meta, existing, active, expected)
            prev = zlib.compress(json.dumps(doc, indent=2).encode(), 1)
            self.docs.append(prev)
            # pretuned
            if night.p_run_id:
                pf = self.facts(night.p_full_sha)
                pwf.write_text(self.git.blob(pf.blobs[".github/workflows/benchmark_pretuned_dispatch.yml"]))
                pactive = self.bp.get_active_platforms(str(pwf))
                if self.cache.exists():
                    shutil.rmtree(self.cache)
                self._write_prun(self.cache / night.p_run_id, n, rng)
                p_runs_meta.append(dict(run_id=night.p_run_id, sha=night.p_full_sha[:8], full_sha=night.p_full_sha,
                                        date=night.date.replace(hour=10).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                        branch="main", is_nightly=True))
                existing = json.loads(zlib.decompress(prev_p)) if prev_p else {}
                self.bp.datetime = _Clock(night.date + timedelta(hours=5))
                pdoc = self.bp.build_dashboard_data(str(self.cache), p_runs_meta, existing, pactive)
                prev_p = zlib.compress(json.dumps(pdoc, indent=2).encode(), 1)
                self.pdocs.append(prev_p)
            else:
                self.pdocs.append(None)
        if self.cache.exists():
            shutil.rmtree(self.cache)

    def _night_noise(self, rng, sig):
        return {t: rng.normal(0, sig * 0.6) for t in ("base", "hel_cg", "hel_db", "tri", "tc")}

    def _write_run(self, run_dir: Path, n: int, rng, manual=False):
        for plat, ks in self.plan[n].items():
            if n in self.outage.get(plat, set()) and not manual:
                continue
            if manual and h01(self.seed, n, plat, "mplat") < 0.5:
                continue
            pn = math.exp(rng.normal(0, 0.003))  # the platform's night
            groups: dict[str, list] = {}
            for kernel, suite in ks:
                if manual and h01(self.seed, n, kernel, "mk") < 0.6:
                    continue
                if rng.random() < 0.004:  # the kernel's job failed: no result this night
                    continue
                p = series_params(self.seed, plat, kernel, suite)
                ns, graphed, nat = self.nshapes(n, plat, kernel)
                fac = factors(self.effects, plat, kernel, n)
                fac["all"] *= pn
                if manual:
                    fac["hel"] *= math.exp(rng.normal(0, 0.06))
                sig = p.sigma
                sc = self.scatter.get(("dashboard", plat, kernel))
                if sc and n >= sc[0]:
                    sig = sc[1]
                nn = self._night_noise(rng, sig)
                for t in list(nn):  # stray single-timer outliers (~1%)
                    if rng.random() < 0.01 / 3:
                        nn[t] += math.log(1 + rng.uniform(0.15, 0.20)) * (1 if rng.random() < 0.5 else -1)
                o = self.outliers.get(("dashboard", plat, kernel, n))
                if o:
                    nn[o[0]] += math.log(o[1])
                v = gpu_values(p, ns, graphed, fac, rng, nn, sig, natural=nat)
                acc = np.ones(ns)
                for i in range(ns):
                    r = rng.random()
                    if r < 0.002:
                        acc[i] = 0.0  # accuracy failure
                    elif r < 0.004:
                        acc[i] = 0.0
                        for key in ("helion_speedup", "triton_speedup", "torch_compile_speedup"):
                            if key in v:
                                v[key][i] = 0.0
                metrics = {k: [round(float(a), 4) for a in val] for k, val in v.items()}
                if suite == "tpu":
                    metrics["helion_compile_time_s"] = metrics["helion_compile_time_s"]
                metrics["helion_accuracy"] = [float(a) for a in acc]
                shapes = (self.facts(self.nights[n].full_sha).linattn_shapes(kernel) if suite == "linattn"
                          else shape_labels(kernel, ns))
                group = "linattn" if suite == "linattn" else kernel
                recs = groups.setdefault(group, [])
                backend = "cute" if plat == "b200_cute" else ("pallas" if plat == "tpu" else "triton")
                extra = {"device": DEVICES.get(plat, plat), "backend": backend}
                if suite == "linattn":
                    extra["baseline_label"] = "fla"
                for mname, vals in metrics.items():
                    recs.append({"benchmark": {"name": "Helion Benchmark", "extra_info": extra},
                                 "model": {"name": kernel}, "metric": {"name": mname, "benchmark_values": vals},
                                 "shape": shapes})
            for group, recs in groups.items():
                alias = plat
                if plat == "tpu" and group in ():
                    alias = "tpu_bridge"
                d = run_dir / f"benchmark-results-{alias}-{group}"
                d.mkdir(parents=True, exist_ok=True)
                (d / "helionbench.json").write_text(json.dumps(recs))

    def _write_prun(self, run_dir: Path, n: int, rng):
        for plat, ks in self.pplan[n].items():
            if n in self.outage.get("p:" + plat, set()):
                continue
            recs = []
            pn = math.exp(rng.normal(0, 0.003))
            for kernel, info in ks.items():
                rec = {"kernel": kernel, "pretuned_hardware": sorted(info["aot"]),
                       "device": DEVICES.get(plat, plat), "compute_capability": {"h100": "sm90", "b200": "sm100"}.get(plat, "")}
                if rng.random() < 0.006:
                    rec["error"] = "RuntimeError: CUDA error: an illegal memory access was encountered"
                    recs.append(rec)
                    continue
                fac = factors(self.effects, plat, kernel, n, "pretuned")
                fac["all"] *= pn
                o = self.outliers.get(("pretuned", plat, kernel, n))
                if o:
                    fac["hel"] *= o[1]
                if rng.random() < 0.01:
                    fac["hel"] *= 1 + rng.uniform(0.15, 0.2) * (1 if rng.random() < 0.5 else -1)
                v = pretuned_values(self.seed, plat, kernel, info["baselines"], info["nshapes"], info["cudagraph"],
                                    self.timer_epoch(n), fac, rng)
                rec.update(helion_wins=v["helion_wins"], total=v["total"], geomean=v["geomean"],
                           best_speedup=v["best_speedup"], cudagraph=info["cudagraph"])
                if v.get("baselines"):
                    rec["baselines"] = v["baselines"]
                recs.append(rec)
            d = run_dir / f"pretuned-results-{plat}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))

    # ---------------------------------------------------------------- API
    def night_of(self, run_id) -> int | None:
        return self._night_by_run.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        keys = set()
        for n in range(len(self.nights)):
            for plat, ks in self.plan[n].items():
                keys.update((plat, k) for k, _ in ks)
        pkeys = {(p, k) for d in self.pplan for p, ks in d.items() for k in ks}
        return len(keys) * 3 + len(pkeys)  # speedup, latency, compile time; pretuned geomean

    def dashboard_bytes(self, n: int) -> bytes:
        return zlib.decompress(self.docs[n])

    def pretuned_bytes(self, n: int) -> bytes | None:
        return zlib.decompress(self.pdocs[n]) if self.pdocs[n] is not None else None

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
