"""Build one labeled world of blind set W: nightlies on the real history, artifacts from the model,
documents from Helion's own dashboard builders (see README.md)."""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import math
import shutil
import subprocess
import tempfile
import types
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import model as M
from .facts import Facts, Git, History, platform_plan

WINDOW_END = {221: "2026-06-08", 222: "2026-07-23", 223: "2026-08-14"}
N_NIGHTS = {221: 84, 222: 82, 223: 76}

# real commits whose arrival changes how a series runs without a setting in the files we parse
LINATTN_UPLOAD_FIX = "5205859c"   # linattn rows reach the artifacts only from here on
ROPE_BWD_FIX = "2e418571"          # rope-bwd crashed under CUDA graphs before this
PRETUNED_CUTE_FIX = "6bf6fe86"     # pretuned CuTe kernels had no CuTe DSL installed before this
MI350_FD_LIMIT = "4e6fbe2f"        # welford's largest MI350X input ran out of file descriptors before this

LINATTN_DENSE = ["B1_T8192_H96_D128", "B2_T16384_H16_D128", "B4_T2048_H16_D128", "B4_T4096_H64_D128",
                 "B8_T2048_H32_D256", "B8_T1024_H8_D64"]
LINATTN_VARLEN = ["fixed_T8192_H96_D128", "fixed_T8192_H64_D128", "ragged_T8192_H96_D128",
                  "ragged_T8192_H64_D128", "uniform_T8192_H96_D128", "uniform_T8192_H64_D128"]


@dataclass
class NightPlan:
    i: int
    date: datetime
    sha: str
    run_id: str
    p_date: datetime | None = None
    p_sha: str | None = None
    p_run_id: str | None = None


@dataclass
class SCfg:
    """How one dashboard series runs on one night."""
    kind: str            # tritonbench / linattn / tpu / bridge
    idx: tuple
    cudagraph: bool
    latency: bool
    compile_mode: str | None
    budget: float | None
    fixed_seed: bool
    backend: str
    shard: str
    broken: bool = False
    fail_idx: tuple = ()   # positions (in idx) that fail every night under this set-up

    def method_key(self):
        return (self.kind, self.idx, self.cudagraph, self.fail_idx)


@dataclass
class PCfg:
    baselines: tuple
    cudagraph: bool
    l2_clear: bool
    error: str | None = None


def _run_id(t: datetime, salt: int) -> str:
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return str(21_000_000_000 + int((t - base).total_seconds()) * 40 + salt % 37)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class _FixedNow(_dt.datetime):
    _now = None

    @classmethod
    def now(cls, tz=None):
        return cls._now


def _load_builder(path: Path, name: str, now: datetime):
    """Import one of Helion's own dashboard builders from the world's checkout (never copied into
    the project), with its retention clock pinned to the window instead of the wall clock."""
    spec = importlib.util.spec_from_file_location(f"_blindw_{name}_{id(path)}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fixed = type("FixedNow", (_FixedNow,), {"_now": now})
    mod.datetime = types.SimpleNamespace(datetime=fixed, timezone=_dt.timezone, timedelta=_dt.timedelta)
    return mod


class Ctx:
    """What events.py sees of the world while planting events."""

    def __init__(self, w: "WorldW"):
        self.w = w
        self.seed = w.seed
        self.nights = w.plans
        self.hist = w.hist

    def sha(self, prefix: str) -> str:
        return self.w.full_sha(prefix)

    def night_of_sha(self, prefix: str, source: str = "dashboard") -> int:
        return self.w.first_night_with(self.sha(prefix), source)

    def series_at(self, n: int, alias: str | None = None, kinds=("tritonbench", "linattn", "tpu", "bridge")):
        return sorted(k for k, c in self.w.cfg[n].items() if (alias is None or k[0] == alias)
                      and c.kind in kinds and not c.broken)

    def pre_series_at(self, n: int, alias: str | None = None):
        return sorted(k for k, c in self.w.pcfg[n].items() if (alias is None or k[0] == alias) and not c.error)

    def night_by_date(self, d: str) -> int:
        for p in self.w.plans:
            if p.date.date().isoformat() >= d:
                return p.i
        raise KeyError(d)


class WorldW:
    def __init__(self, seed: int, workdir: Path, nights: int | None):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = self.workdir / "helion"
        if self.repo.exists():
            shutil.rmtree(self.repo)
        subprocess.run(["git", "clone", "-q", "-b", "main", str(bundle_path()), str(self.repo)], check=True)
        self.git = Git(self.repo)
        self.hist = History(self.git)
        self.facts = Facts(self.git)
        self._schedule()
        self._configs()
        from . import events as E
        self.events = []
        E.build(Ctx(self))
        for ev in self.events:
            for key, hit in ev.runaway.items():
                for c in {c.kind for cfg in self.cfg for k, c in cfg.items() if k == key}:
                    s = self.tb_series(key, next(cfg[key] for cfg in self.cfg if key in cfg and cfg[key].kind == c))
                    s.ctime[hit] = M.rng_for("runaway", self.seed, key).uniform(9000, 16000, len(hit))
        self._auto_labels()
        self.k0 = 0 if nights is None else max(0, len(self.plans) - nights)
        self._simulate()
        self._documents()
        self._make_labels()

    # ------------------------------------------------------------------ schedule ------------
    def full_sha(self, prefix: str) -> str:
        m = [s for s in self.hist.shas if s.startswith(prefix)]
        assert len(m) == 1, prefix
        return m[0]

    def first_night_with(self, sha: str, source: str = "dashboard") -> int:
        for p in self.plans:
            s = p.sha if source == "dashboard" else p.p_sha
            if s and self.hist.included(sha, s):
                return p.i
        raise ValueError(f"{sha[:8]} not in window")

    def _schedule(self):
        seed = self.seed
        end = datetime.fromisoformat(WINDOW_END[seed]).replace(tzinfo=timezone.utc)
        r = M.rng_for("schedule", seed)
        n = N_NIGHTS[seed]
        dates, d = [], end
        skipped = set(int(x) for x in r.choice(np.arange(5, n - 5), size=2, replace=False))
        k = 0
        while len(dates) < n:
            if k not in skipped:
                dates.append(d)
            d -= timedelta(days=1)
            k += 1
        dates.reverse()
        self.plans: list[NightPlan] = []
        for i, d in enumerate(dates):
            delay = int(r.integers(4 * 60, 38 * 60)) if r.uniform() > 0.08 else int(r.integers(50 * 60, 100 * 60))
            t = d.replace(hour=8, minute=0, second=0) + timedelta(seconds=delay)
            sha = self.hist.head_at(t)
            p = NightPlan(i=i, date=t, sha=sha, run_id=_run_id(t, i))
            pt = d.replace(hour=10, minute=0, second=0) + timedelta(seconds=int(r.integers(3 * 60, 30 * 60)))
            psha = self.hist.head_at(pt)
            if self.facts.pretuned(psha) is not None:
                p.p_date, p.p_sha, p.p_run_id = pt, psha, _run_id(pt, i + 7)
            self.plans.append(p)

    # ------------------------------------------------------------------ configs -------------
    def dash_cfg(self, sha: str) -> dict:
        """{(alias, kernel): SCfg} of the nightly at `sha`."""
        f = self.facts
        plan = platform_plan(f, sha)
        bench = f.bench_cmd(sha)
        km = f.kernel_mappings(sha)
        nightly = f.nightly(sha)
        fixed_seed = "HELION_AUTOTUNE_RANDOM_SEED" in nightly["env"]
        compile_mode = None
        if bench["measure_ct"]:
            compile_mode = "zero" if not bench["ct_enabled"] else "cached" if bench["two_pass"] else "full"
        out = {}
        for alias, p in plan.items():
            if alias == "tpu":
                tpu = f.tpu(sha)
                for k in p.get("tpu", []):
                    if k in tpu["kernels"]:
                        out[(alias, k)] = SCfg("tpu", tuple(range(min(2, tpu["num_shapes"]))), False, True,
                                               "full" if "HELION_MEASURE_COMPILE_TIME" in (self.git.show(sha, ".github/workflows/benchmark_tpu.yml") or "") else None,
                                               None, fixed_seed, "pallas", "tpu")
                for k in p.get("bridge", []):
                    if k in km["kernels"]:
                        out[(alias, k)] = SCfg("bridge", (0, 1), False, True, "full", None, fixed_seed, "pallas",
                                               "tpu_bridge")
                continue
            tb = [k for k in p.get("tritonbench", []) if k in km["kernels"]]
            runners = 6 if alias == "b200_cute" else 13
            jobs = min(len(tb), runners) or 1
            buckets = {k: ",".join(tb[j] for j in range(len(tb)) if j % jobs == i % jobs) for i, k in enumerate(tb)}
            for k in tb:
                opts = km["kernels"][k]
                fam, n_def = M.KERNELS.get(k, ("reduction", 8))
                nin = min(opts.get("num_inputs") or km["max_inputs"], km["max_inputs"], n_def)
                if k == "gdn_fwd_h" and alias == "mi350x":
                    if not bench["gdn_mi350_limit"]:
                        continue  # ROCm segfaults at input 2 and takes the whole run with it
                    nin = min(nin, 2)
                cg = bench["cudagraph"] and "--cudagraph" not in (opts.get("remove_flags") or [])
                broken = k == "rope-bwd" and not self.hist.included(self.full_sha(ROPE_BWD_FIX), sha)
                if broken:
                    cg = True
                fail = ()
                if alias == "mi350x" and k == "welford" and not self.hist.included(self.full_sha(MI350_FD_LIMIT), sha):
                    fail = (nin - 1,)
                out[(alias, k)] = SCfg("tritonbench", tuple(range(nin)), cg, bench["latency"], compile_mode,
                                       bench["budget"], fixed_seed, p.get("backend") or "triton", buckets[k],
                                       broken=broken, fail_idx=fail)
            lin = p.get("linattn")
            la = f.linattn(sha)
            if lin and la and self.hist.included(self.full_sha(LINATTN_UPLOAD_FIX), sha):
                names = [v for v in lin if v in la["variants"]]
                jobs = min(len(names), 9) or 1
                for i, v in enumerate(names):
                    shapes = la["varlen_shapes"] if v in la["varlen"] else la["shapes"]
                    full = LINATTN_VARLEN if v in la["varlen"] else LINATTN_DENSE
                    idx = tuple(full.index(s) for s in shapes if s in full)
                    shard = ",".join(names[j] for j in range(len(names)) if j % jobs == i % jobs)
                    rows = [v] if v in la["fwd_only"] else [v, f"{v}-bwd"]
                    for row in rows:
                        out[(alias, row)] = SCfg("linattn", idx, True, True, None, None, fixed_seed, "triton",
                                                 "linattn:" + shard)
        return out

    def pre_cfg(self, sha: str | None) -> dict:
        if sha is None:
            return {}
        pt = self.facts.pretuned(sha)
        if pt is None:
            return {}
        out = {}
        cute_ok = self.hist.included(self.full_sha(PRETUNED_CUTE_FIX), sha)
        for alias in pt["aliases"]:
            for k in pt["kernels"]:
                info = pt["info"].get(k)
                if not info or alias not in info["hardware"]:
                    continue
                err = None
                if k.endswith("_cute") and not cute_ok:
                    err = "ModuleNotFoundError: No module named 'cutlass'"
                cg = info["cudagraph"] or info["pre_captured"]
                out[(alias, k)] = PCfg(tuple(info["baselines"]), bool(info["cudagraph"]),
                                       pt["l2_clear"] or info["pre_captured"], err)
        return out

    def _configs(self):
        self.cfg = [self.dash_cfg(p.sha) for p in self.plans]
        self.pcfg = [self.pre_cfg(p.p_sha) for p in self.plans]
        self.series: dict = {}
        self.pseries: dict = {}
        aliases = sorted({a for c in self.cfg for (a, _) in c} | {"h100", "b200"})
        self.env = {}
        for a in aliases:
            r = M.rng_for("env", self.seed, a)
            x, e = 0.0, []
            for _ in range(len(self.plans)):
                x = 0.85 * x + r.normal(0, 0.004)
                e.append(math.exp(x + r.normal(0, 0.004)))
            self.env[a] = e

    def tb_series(self, key, c: SCfg) -> M.TBSeries:
        sk = (key, c.kind)
        if sk not in self.series:
            alias, k = key
            if c.kind == "linattn":
                base = k.removesuffix("-bwd")
                labels = LINATTN_VARLEN if base == "kda_varlen" else LINATTN_DENSE
                self.series[sk] = M.make_tb_series(self.seed, alias, k, "linattn", len(labels), labels)
            elif c.kind in ("tpu", "bridge"):
                self.series[sk] = M.make_tb_series(self.seed, alias, k, c.kind, 2)
            else:
                self.series[sk] = M.make_tb_series(self.seed, alias, k, "tritonbench")
        return self.series[sk]

    def pre_series(self, key) -> M.PreSeries:
        if key not in self.pseries:
            self.pseries[key] = M.make_pre_series(self.seed, key[0], key[1], ["torch", "torch_compile"])
        return self.pseries[key]

    # ------------------------------------------------------------------ effects -------------
    def _active(self, n: int, source: str, exclude=()):
        for ev in self.events:
            if ev.source != source or ev.id in exclude:
                continue
            if ev.start <= n and (ev.end is None or n < ev.end):
                yield ev

    def night_ctx(self, key, n: int, c: SCfg, exclude=(), noise=True) -> M.NightCtx:
        alias = key[0]
        mult, hw, theta, outl = M.Mult(), M.Mult(), 0.0, None
        for ev in self._active(n, "dashboard", exclude):
            if key in ev.mult:
                mult = mult.compose(ev.mult[key])
            th = ev.theta.get(alias)
            if th:
                theta += th(n - ev.start) if callable(th) else th
                if key in ev.hw_mult:
                    hw = hw.compose(ev.hw_mult[key])
            elif key in ev.hw_mult:
                hw = hw.compose(ev.hw_mult[key])
            if key in ev.outlier:
                outl = ev.outlier[key]
        env = self.env[alias][n] if alias in self.env else 1.0
        return M.NightCtx(n=n, idx=c.idx, cudagraph=c.cudagraph, latency=c.latency, compile_mode=c.compile_mode,
                          budget=c.budget, fixed_seed=c.fixed_seed, env=env, hw_theta=theta, hw_mult=hw, mult=mult,
                          outlier=outl, noise=noise, failed_shapes=tuple(c.fail_idx))

    def pre_ctx(self, key, n: int, c: PCfg, exclude=(), noise=True) -> M.PreCtx:
        alias = key[0]
        mh, mb, theta, sigma, outl = 1.0, {}, 0.0, 0.0, None
        for ev in self._active(n, "pretuned", exclude):
            if key in ev.pmult:
                d = ev.pmult[key]
                mh = np.multiply(mh, d.get("h", 1.0))
                for b, f in d.get("b", {}).items():
                    mb[b] = np.multiply(mb.get(b, 1.0), f)
                sigma += d.get("sigma", 0.0)
            th = ev.theta.get(alias)
            if th:
                theta += th(n - ev.start) if callable(th) else th
            if key in ev.outlier:
                outl = ev.outlier[key]
        return M.PreCtx(n=n, baselines=list(c.baselines), cudagraph=c.cudagraph, l2_clear=c.l2_clear,
                        hw_theta=theta, mult_h=mh, mult_b=mb, sigma=sigma, outlier=outl, noise=noise)

    def headline(self, source: str, key, n: int, exclude=(), cfg=None) -> float:
        if source == "dashboard":
            c = cfg or self.cfg[n][key]
            return M.headline_tb(self.seed, self.tb_series(key, c), self.night_ctx(key, n, c, exclude, noise=False))
        c = cfg or self.pcfg[n][key]
        return M.headline_pre(self.seed, self.pre_series(key), self.pre_ctx(key, n, c, exclude, noise=False))

    # ------------------------------------------------------------------ auto labels ---------
    def _auto_labels(self):
        """Method changes that the real files carry (input counts, cudagraph flags, the TPU bridge,
        the pretuned baselines and timer) become labels where a member visibly moves."""
        from .events import Ev
        found: dict = {}
        for n in range(1, len(self.plans)):
            for source, cfgs, shas in (("dashboard", self.cfg, [p.sha for p in self.plans]),
                                       ("pretuned", self.pcfg, [p.p_sha for p in self.plans])):
                cur, prev = cfgs[n], cfgs[n - 1]
                if not shas[n] or not shas[n - 1]:
                    continue
                for key, c in cur.items():
                    last = None
                    for m in range(n - 1, max(-1, n - 8), -1):
                        if key in cfgs[m]:
                            last = cfgs[m][key]
                            break
                    if last is None or key not in prev and last is None:
                        continue
                    if source == "dashboard":
                        if c.broken or last.broken:
                            continue
                        if last.kind != c.kind:
                            kind = "harness"
                        elif last.idx != c.idx:
                            kind = "shapes"
                        elif last.cudagraph != c.cudagraph:
                            kind = "cudagraph"
                        elif last.fail_idx != c.fail_idx:
                            kind = "harness"
                        else:
                            continue
                    else:
                        if c.error or last.error:
                            continue
                        if set(last.baselines) != set(c.baselines):
                            kind = "baseline"
                        elif last.cudagraph != c.cudagraph:
                            kind = "cudagraph"
                        elif last.l2_clear != c.l2_clear and c.cudagraph:
                            kind = "timer"
                        else:
                            continue
                    sha = self._change_commit(source, key, shas[n - 1], shas[n], c)
                    found.setdefault((source, kind, sha, n), []).append((key, last, c))
        self.auto_events = []
        for (source, kind, sha, n), items in sorted(found.items(), key=lambda x: (x[0][3], x[0][1])):
            moved, honest = [], {}
            for key, old, new in items:
                a = self.headline(source, key, n, cfg=old, exclude=self._same_sha(sha))
                b = self.headline(source, key, n, cfg=new)
                if a > 0 and b > 0 and abs(b / a - 1) >= 0.03:
                    moved.append(key)
                if kind == "cudagraph" and source == "dashboard":
                    honest[key] = a if old.cudagraph else b
                elif kind in ("baseline", "timer") and source == "pretuned":
                    honest[key] = b
            if not moved:
                continue
            members = [k for k, _, _ in items]
            ev = Ev(id=f"auto-{source[:4]}-{kind}-{n}", source=source, cause="method_change", kind=kind,
                    direction="down" if sum(self.headline(source, k, n) < self.headline(source, k, n, cfg=o)
                                            for k, o, _ in items) * 2 >= len(items) else "up",
                    sha=sha, start=n, members=members,
                    metrics=("helion_speedup_geomean",) if source == "dashboard" else ("geomean",),
                    note=f"real {kind} change in the files", honest="auto")
            ev.honest_values = {k: round(v, 4) for k, v in honest.items() if v > 0}
            self.auto_events.append(ev)

    def _same_sha(self, sha):
        return {e.id for e in self.events if e.sha == sha}

    def _change_commit(self, source, key, lo, hi, new) -> str | None:
        for c in self.hist.between(lo, hi):
            cfg = self.dash_cfg(c) if source == "dashboard" else self.pre_cfg(c)
            got = cfg.get(key)
            if got is None:
                continue
            if source == "dashboard" and got.method_key() == new.method_key():
                return c
            if source == "pretuned" and (set(got.baselines), got.cudagraph, got.l2_clear) == \
                    (set(new.baselines), new.cudagraph, new.l2_clear):
                return c
        return None

    # ------------------------------------------------------------------ simulate ------------
    def _simulate(self):
        seed = self.seed
        n_all = len(self.plans)
        self.outages = {}
        for ev in self.events:
            for a in ev.outage:
                for n in range(ev.start, ev.end if ev.end is not None else n_all):
                    self.outages.setdefault((ev.source, a), set()).add(n)
        protect = set()
        for ev in list(self.events) + self.auto_events:
            for key in ev.members:
                for n in (ev.start - 1, ev.start, ev.start + 1):
                    protect.add((ev.source, key, n))
            if ev.end is not None:
                for key in ev.members:
                    for n in (ev.end - 1, ev.end):
                        protect.add((ev.source, key, n))
        self.protect = protect
        # a few series carry an accuracy failure on one shape for a stretch of nights
        self.acc_fail = {}
        r = M.rng_for("accfail", seed)
        for j in range(3):
            n0 = int(r.integers(0, n_all - 6))
            keys = sorted(k for k, c in self.cfg[n0].items() if c.kind == "tritonbench" and len(c.idx) > 2)
            if not keys:
                continue
            key = keys[int(r.integers(0, len(keys)))]
            shape = (int(r.integers(0, len(self.cfg[n0][key].idx))),)
            for n in range(n0, min(n_all, n0 + int(r.integers(3, 14)))):
                self.acc_fail[(key, n)] = shape
        self.dash_runs, self.pre_runs = {}, {}
        for n in range(self.k0, n_all):
            self.dash_runs[n] = self._dash_night(n)
            if self.plans[n].p_sha:
                self.pre_runs[n] = self._pre_night(n)

    def _dash_night(self, n: int, only=None, tag="", custom=None) -> dict:
        """{artifact dir: records} for the nightly n (or a manual run on its configuration)."""
        seed = self.seed
        r = M.rng_for("fail", seed, n, tag)
        arts: dict[str, list] = {}
        cfg = self.cfg[n]
        dead_shards = set()
        for key, c in cfg.items():
            if only is not None and key not in only:
                continue
            alias = key[0]
            if n in self.outages.get(("dashboard", alias), ()) and not tag:
                continue
            shard = (alias, c.shard)
            if shard not in dead_shards and M.unit("shard", seed, n, tag, shard) < 0.011:
                if not any(("dashboard", k2, n) in self.protect for k2, c2 in cfg.items()
                           if (k2[0], c2.shard) == shard):
                    dead_shards.add(shard)
            if shard in dead_shards:
                continue
            s = self.tb_series(key, c)
            ctx = self.night_ctx(key, n, c)
            if tag:
                ctx.n = n * 1000 + int(M.unit("tag", tag) * 997)
                ctx.outlier = None
            prot = ("dashboard", key, n) in self.protect
            if not prot and not tag and ctx.outlier is None and M.unit("stray", seed, key, n) < 0.01 and \
                    M.unit("stray", seed, key, n - 1) >= 0.01 and M.unit("stray", seed, key, n + 1) >= 0.01:
                u = M.unit("stray2", seed, key, n)
                timer = ["h", "b", "t", "c", "lat"][int(u * 5)]
                if timer == "t" and not s.has_triton:
                    timer = "h"
                if timer == "c" and not s.has_tc:
                    timer = "b"
                ctx.outlier = (timer, 1.15 + 0.05 * M.unit("stray3", seed, key, n))
            if custom:
                ctx.mult = ctx.mult.compose(custom(key))
            fails = list(c.fail_idx)
            if c.broken:
                fails = list(range(len(c.idx)))
            elif not prot and M.unit("shapefail", seed, key, n, tag) < 0.008 and len(c.idx) > 1:
                fails.append(int(M.unit("which", seed, key, n) * len(c.idx)))
            ctx.failed_shapes = tuple(fails)
            ctx.acc_fail_shapes = self.acc_fail.get((key, n), ())
            out = M.measure_tb(seed, s, ctx)
            if c.kind == "linattn":
                art = f"benchmark-results-{alias}-{c.shard.split(':', 1)[1]}"
                extra = {"device": M.DEVICE[alias], "backend": "triton", "baseline_label": "FLA"}
                bench_name = "Helion Linear-Attention Benchmark"
            elif c.kind == "tpu":
                art = f"benchmark-results-tpu-{','.join(sorted(k for (a, k), cc in cfg.items() if a == 'tpu' and cc.kind == 'tpu'))}"
                extra = {"device": M.DEVICE["tpu"]}
                bench_name = "Helion TPU Benchmark"
            elif c.kind == "bridge":
                art = f"benchmark-results-tpu_bridge-{','.join(sorted(k for (a, k), cc in cfg.items() if a == 'tpu' and cc.kind == 'bridge'))}"
                extra = {"device": M.DEVICE["tpu"], "backend": "pallas"}
                bench_name = "Helion Benchmark"
            else:
                art = f"benchmark-results-{alias}-{c.shard}"
                extra = {"device": M.DEVICE[alias], "backend": c.backend}
                bench_name = "Helion Benchmark"
            recs = arts.setdefault(art, [])
            for metric in ("helion_accuracy", "helion_latency_ms", "helion_speedup", "triton_speedup",
                           "torch_compile_speedup", "helion_compile_time_s"):
                if metric in out:
                    recs.append({"benchmark": {"name": bench_name, "extra_info": dict(extra)},
                                 "model": {"name": key[1]}, "metric": {"name": metric, "benchmark_values": out[metric]},
                                 "shape": out["labels"]})
        return arts

    def _pre_night(self, n: int, only=None, tag="") -> dict:
        seed = self.seed
        arts: dict[str, list] = {}
        for key, c in sorted(self.pcfg[n].items()):
            if only is not None and key not in only:
                continue
            alias = key[0]
            if n in self.outages.get(("pretuned", alias), ()) and not tag:
                continue
            dev, cc = M.PRE_DEVICE[alias]
            rec = {"kernel": key[1], "pretuned_hardware": [alias], "device": dev, "compute_capability": cc}
            prot = ("pretuned", key, n) in self.protect
            err = c.error
            if err is None and not prot and M.unit("perr", seed, key, n, tag) < 0.008:
                err = ["RuntimeError: CUDA error: an illegal memory access was encountered",
                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                       "OutOfResources: out of resource: shared memory, Required: 262144, Hardware limit: 232448"][
                    int(M.unit("perr2", seed, key, n) * 3)]
            if err:
                rec["error"] = err
            else:
                s = self.pre_series(key)
                ctx = self.pre_ctx(key, n, c)
                if tag:
                    ctx.n = n * 1000 + 7
                    ctx.outlier = None
                if not prot and not tag and ctx.outlier is None and M.unit("pstray", seed, key, n) < 0.01 and \
                        M.unit("pstray", seed, key, n - 1) >= 0.01 and M.unit("pstray", seed, key, n + 1) >= 0.01:
                    names = ["h"] + list(c.baselines)
                    ctx.outlier = (names[int(M.unit("pstray2", seed, key, n) * len(names))],
                                   1.15 + 0.05 * M.unit("pstray3", seed, key, n))
                rec.update(M.measure_pre(seed, s, ctx))
                rec["cudagraph"] = c.cudagraph
            arts.setdefault(f"pretuned-results-{alias}", []).append(rec)
        return arts

    # ------------------------------------------------------------------ documents -----------
    def _manual_runs(self):
        """Manual dispatches (and side-branch runs) between nightlies: in history, never the trend."""
        seed = self.seed
        r = M.rng_for("manual", seed)
        dash, pre = [], []
        for n in range(self.k0, len(self.plans)):
            p = self.plans[n]
            forced = n == self.k0
            if forced or r.uniform() < 0.3:
                t = p.date - timedelta(hours=float(r.uniform(4, 14)))
                if n > 0 and t <= self.plans[n - 1].date:
                    t = self.plans[n - 1].date + timedelta(hours=6)
                branch = "main" if r.uniform() < 0.6 else str(r.choice(["jansel/perf-sweep", "oulgen/ci-fix",
                                                                        "yf225/autotune-budget", "bench/rerun"]))
                sha = self.hist.head_at(t) if branch == "main" else M.rng_for("bsha", seed, n).bytes(20).hex()
                alias = str(r.choice(["b200", "h100", "b200", "mi350x"]))
                base = n - 1 if n > 0 else n
                keys = [k for k in self.cfg[base] if k[0] == alias and self.cfg[base][k].kind == "tritonbench"
                        and not self.cfg[base][k].broken]
                if not keys:
                    continue
                pick = [keys[int(x)] for x in r.choice(len(keys), size=min(len(keys), int(r.integers(2, 6))), replace=False)]
                effort = r.uniform() < 0.35
                custom = (lambda key, f=float(r.uniform(1.1, 1.35)): M.Mult(h=f)) if effort else None
                arts = self._dash_night(base, only=set(pick), tag=f"manual{n}", custom=custom)
                dash.append(({"run_id": _run_id(t, 1000 + n), "sha": sha[:8], "full_sha": sha, "date": _iso(t),
                              "branch": branch, "is_nightly": False}, arts))
            # a side-branch TPU nightly (is_nightly, but not main) for a few weeks in May-June
            if "2026-05-09" <= p.date.date().isoformat() <= "2026-06-12" and n % 2 == 0 and n > 0:
                keys = [k for k in self.cfg[n - 1] if k[0] == "tpu"]
                t = p.date - timedelta(minutes=int(r.integers(50, 80)))
                if keys and t > self.plans[n - 1].date:
                    sha = M.rng_for("side", seed, n).bytes(20).hex()
                    dash.append(({"run_id": _run_id(t, 3000 + n), "sha": sha[:8], "full_sha": sha, "date": _iso(t),
                                  "branch": "yifeixu/tpu-nightly-benchmark", "is_nightly": True},
                                 self._dash_night(n - 1, only=set(keys), tag=f"side{n}")))
            if self.plans[n].p_sha and (r.uniform() < 0.08 or (forced and n > 0 and self.plans[n - 1].p_sha)):
                base = n - 1 if n > 0 and self.plans[n - 1].p_sha else n
                t = p.p_date - timedelta(hours=float(r.uniform(3, 10)))
                keys = list(self.pcfg[base])
                if keys and t > (self.plans[n - 1].p_date if n > 0 and self.plans[n - 1].p_date else datetime.min.replace(tzinfo=timezone.utc)):
                    pick = [keys[int(x)] for x in r.choice(len(keys), size=min(len(keys), 4), replace=False)]
                    sha = self.hist.head_at(t)
                    pre.append(({"run_id": _run_id(t, 2000 + n), "sha": sha[:8], "full_sha": sha, "date": _iso(t),
                                 "branch": "main", "is_nightly": False}, self._pre_night(base, only=set(pick), tag=f"pm{n}")))
        return dash, pre

    def _documents(self):
        now = self.plans[-1].date + timedelta(days=1)
        self._dash_builder = _load_builder(self.repo / ".github/dashboard/build_dashboard_data.py", "dash", now)
        self._pre_builder = _load_builder(self.repo / ".github/dashboard/build_pretuned_dashboard_data.py", "pre", now)
        dash_manual, pre_manual = self._manual_runs()
        docs = self.workdir / "docs"
        if docs.exists():
            shutil.rmtree(docs)
        docs.mkdir()
        self.docdir = docs
        all_dash, all_pre = [], []
        prev, pprev = None, None
        mi = pi = 0
        dash_manual.sort(key=lambda x: x[0]["date"])
        pre_manual.sort(key=lambda x: x[0]["date"])
        for n in range(self.k0, len(self.plans)):
            p = self.plans[n]
            tmp = Path(tempfile.mkdtemp(prefix="wcache_", dir=self.workdir))
            new = []
            while mi < len(dash_manual) and dash_manual[mi][0]["date"] < _iso(p.date):
                new.append(dash_manual[mi])
                mi += 1
            meta = {"run_id": p.run_id, "sha": p.sha[:8], "full_sha": p.sha, "date": _iso(p.date), "branch": "main",
                    "is_nightly": True}
            new.append((meta, self.dash_runs[n]))
            for m, arts in new:
                all_dash.append(m)
                for art, recs in arts.items():
                    d = tmp / m["run_id"] / art
                    d.mkdir(parents=True, exist_ok=True)
                    (d / "helionbench.json").write_text(json.dumps(recs))
            wf = tmp / "benchmark_dispatch.yml"
            wf.write_text(self.git.show(p.sha, ".github/workflows/benchmark_dispatch.yml") or "")
            active = self._dash_builder.get_active_platforms(str(wf))
            expected = self._dash_builder.get_expected_kernels_per_platform(str(wf))
            doc = self._dash_builder.build_dashboard_data(str(tmp), list(all_dash), prev, active, expected)
            (docs / f"dash_{n}.json").write_text(json.dumps(doc))
            prev = doc
            if p.p_sha:
                newp = []
                while pi < len(pre_manual) and pre_manual[pi][0]["date"] < _iso(p.p_date):
                    newp.append(pre_manual[pi])
                    pi += 1
                pm = {"run_id": p.p_run_id, "sha": p.p_sha[:8], "full_sha": p.p_sha, "date": _iso(p.p_date),
                      "branch": "main", "is_nightly": True}
                newp.append((pm, self.pre_runs[n]))
                for m, arts in newp:
                    all_pre.append(m)
                    for art, recs in arts.items():
                        d = tmp / "p" / m["run_id"] / art
                        d.mkdir(parents=True, exist_ok=True)
                        (d / "pretuned-bench.json").write_text(json.dumps(recs))
                pwf = tmp / "benchmark_pretuned_dispatch.yml"
                pwf.write_text(self.git.show(p.p_sha, ".github/workflows/benchmark_pretuned_dispatch.yml") or "")
                pactive = self._pre_builder.get_active_platforms(str(pwf))
                pdoc = self._pre_builder.build_dashboard_data(str(tmp / "p"), list(all_pre), pprev, pactive)
                (docs / f"pre_{n}.json").write_text(json.dumps(pdoc))
                pprev = pdoc
            shutil.rmtree(tmp, ignore_errors=True)

    # ------------------------------------------------------------------ labels --------------
    def _make_labels(self):
        self.nights = [Night(run_id=p.run_id, full_sha=p.sha, sha=p.sha[:8], date=p.date, p_run_id=p.p_run_id,
                             p_full_sha=p.p_sha) for p in self.plans[self.k0:]]
        self._night_of = {}
        for i, p in enumerate(self.plans[self.k0:]):
            self._night_of[p.run_id] = i
            if p.p_run_id:
                self._night_of[p.p_run_id] = i
        labels = []
        for ev in list(self.events) + self.auto_events:
            if not ev.label or ev.start - 1 < self.k0:
                continue
            pre = ev.source == "pretuned"
            a, b = self.plans[ev.start], self.plans[ev.start - 1]
            fb = a.p_run_id if pre else a.run_id
            lg = b.p_run_id if pre else b.run_id
            if fb is None or lg is None:
                continue
            end = None
            if ev.end is not None and ev.end < len(self.plans):
                end = self.plans[ev.end].p_run_id if pre else self.plans[ev.end].run_id
            honest = {}
            if ev.honest == "auto":
                honest = {f"{k[0]}/{k[1]}": v for k, v in getattr(ev, "honest_values", {}).items()}
            elif ev.honest in ("new", "old"):
                for key in ev.members:
                    cfgs = self.pcfg if pre else self.cfg
                    if key not in cfgs[ev.start]:
                        continue
                    v = self.headline(ev.source, key, ev.start, exclude={ev.id} if ev.honest == "old" else ())
                    if v > 0:
                        honest[f"{key[0]}/{key[1]}"] = round(v, 4)
            cause = ev.cause
            labels.append(Label(
                id=f"w{self.seed}-{ev.id}", source=ev.source, cause=cause, kind=ev.kind, direction=ev.direction,
                members=tuple(ev.members), metrics=tuple(ev.metrics), first_bad_run_id=fb, last_good_run_id=lg,
                end_run_id=end, culprit_sha=ev.sha if cause == "real" else None,
                change_sha=ev.sha if cause in ("method_change", "hardware") else None,
                honest_speedup=honest if cause != "noise" else {}, note=ev.note))
        self.labels = labels

    # ------------------------------------------------------------------ interface -----------
    def dashboard_bytes(self, n: int) -> bytes:
        return (self.docdir / f"dash_{n + self.k0}.json").read_bytes()

    def pretuned_bytes(self, n: int) -> bytes | None:
        f = self.docdir / f"pre_{n + self.k0}.json"
        return f.read_bytes() if f.exists() else None

    def night_of(self, run_id) -> int | None:
        return self._night_of.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        keys = set()
        for n in range(self.k0, len(self.plans)):
            keys |= {("d",) + k for k, c in self.cfg[n].items() if not c.broken}
            keys |= {("p",) + k for k in self.pcfg[n]}
        return len(keys)

    def close(self):
        self.git.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def build_world(seed: int, workdir, nights: int | None = None) -> WorldW:
    if seed not in WINDOW_END:
        raise ValueError(f"blind set W has seeds {sorted(WINDOW_END)}")
    return WorldW(seed, Path(workdir), nights)
