"""One world of set S: nightlies on the real first-parent history of Helion `main`, what runs each
night parsed from the real files at that sha, simulated per-shape times, planted events, and the
two published documents built by Helion's own dashboard builders (imported from the clone)."""
from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import json
import math
import shutil
import tempfile
import types
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import facts as F
from . import simulate as S
from .gitio import Git, clone_bundle

RUN_ID_BASE = 17_800_000_000
EPOCH = datetime(2025, 9, 1, tzinfo=timezone.utc)
CUTE_DSL_BROKEN = datetime(2026, 7, 26, 12, 0, tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Run:
    run_id: str
    kind: str                 # nightly | manual | side | pnightly | pmanual
    time: datetime
    sha: str
    branch: str = "main"
    is_nightly: bool = True
    night: int = 0            # index (full plan) of the nightly at or before it
    platforms: tuple = ()     # manual/side: which platforms ran
    kernels: tuple = ()       # manual/side: which kernels ran (empty = all)
    extra: dict = field(default_factory=dict)   # manual/side: stream shifts (custom env / the branch's change)

    def meta(self) -> dict:
        return {"run_id": self.run_id, "sha": self.sha[:8], "full_sha": self.sha, "date": _iso(self.time),
                "branch": self.branch, "is_nightly": self.is_nightly}


class _Frozen(datetime):
    _now: datetime = EPOCH

    @classmethod
    def now(cls, tz=None):
        return cls._now if tz is None else cls._now.astimezone(tz)


def _import_builder(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    clock = type("FrozenClock", (_Frozen,), {})
    mod.datetime = types.SimpleNamespace(datetime=clock, timedelta=timedelta, timezone=timezone)
    return mod, clock


class SWorld:
    def __init__(self, seed: int, workdir, window_end: str, plan_fn, nights: int | None = None,
                 full_nights: int = 150):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = clone_bundle(bundle_path(), self.workdir / "helion")
        self.git = Git(self.repo)
        self._tmp = Path(tempfile.mkdtemp(prefix="bw_s_", dir=self.workdir))
        self._fcache: dict = {}
        self.fp = self.git.first_parent()
        self._fp_dates = [c.date for c in self.fp]
        self._pos = {c.sha: i for i, c in enumerate(self.fp)}
        self._schedule(window_end, full_nights)
        keep = nights if nights else len(self.plan_nights)
        self.k0 = len(self.plan_nights) - keep
        # the builders: Helion's own, from the clone (never copied into the project)
        dash_dir = self.repo / ".github" / "dashboard"
        self._bd, self._bd_clock = _import_builder(dash_dir / "build_dashboard_data.py", f"_bw_s_bd_{seed}")
        self._bp, self._bp_clock = _import_builder(dash_dir / "build_pretuned_dashboard_data.py", f"_bw_s_bp_{seed}")
        self.models: dict = {}
        self.pmodels: dict = {}
        self.effects: list = []
        self.peffects: list = []
        self.labels_full: list = []
        self._series_seen: set = set()
        self._boundaries: dict = {}
        self._pboundaries: dict = {}
        self._pseries_seen: set = set()
        plan_fn(self)   # plants the events (effects + labels) of this seed
        self._resolve_honest()
        self._runs()
        self._publish()
        self.labels = self._kept_labels()

    # ------------------------------------------------------------------ schedule

    def head_at(self, t: datetime):
        """HEAD of main at t, as `git rev-list -1 --first-parent --before=t main` gives it."""
        for c in reversed(self.fp):
            if c.date <= t:
                return c
        return self.fp[0]

    def facts(self, sha: str) -> F.NightFacts:
        return F.night_facts(self.git, sha, self._fcache)

    def _schedule(self, window_end: str, n: int):
        end = datetime.fromisoformat(window_end).replace(tzinfo=timezone.utc)
        r = S.rng_for(self.seed, "schedule")
        days = [end - timedelta(days=i) for i in range(n + 1, -1, -1)]  # n + 2 calendar days
        # two days without a nightly (the cron did not fire / every job failed before uploading)
        skip = set(r.choice(range(5, len(days) - 8), size=2, replace=False).tolist())
        days = [d for i, d in enumerate(days) if i not in skip]
        self.plan_nights: list[Night] = []
        self.plan_times: list[datetime] = []
        self.p_times: list[datetime | None] = []
        self.plan_days = days
        taken = set()

        def rid(t, salt):
            x = RUN_ID_BASE + int((t - EPOCH).total_seconds() * 2.3) + int(S._u(self.seed, "rid", salt) * 97)
            while x in taken:
                x += 1
            taken.add(x)
            return str(x)

        self._rid = rid
        for d in days:
            t = d.replace(hour=8, minute=0, second=0, microsecond=0) + timedelta(
                seconds=int(180 + 42 * 60 * S._u(self.seed, "cron", d.date())))
            c = self.head_at(t)
            tp = d.replace(hour=10, minute=0, second=0, microsecond=0) + timedelta(
                seconds=int(120 + 30 * 60 * S._u(self.seed, "pcron", d.date())))
            cp = self.head_at(tp)
            has_p = self.git.oid(cp.sha, F.P_NIGHTLY) is not None
            p_id = rid(tp, ("p", d.date())) if has_p else None
            self.plan_nights.append(Night(run_id=rid(t, d.date()), full_sha=c.sha, sha=c.sha[:8], date=t,
                                          p_run_id=p_id, p_full_sha=cp.sha if has_p else None))
            self.plan_times.append(t)
            self.p_times.append(tp if has_p else None)
        assert len(self.plan_nights) == n, (len(self.plan_nights), n)

    # ------------------------------------------------------------------ planting API (used by plans.py)

    def night_of_commit(self, sha_prefix: str, pretuned: bool = False) -> int:
        """The first plan night whose sha contains the commit."""
        sha = self.full(sha_prefix)
        pos = self._pos[sha]
        for i, nt in enumerate(self.plan_nights):
            s = nt.p_full_sha if pretuned else nt.full_sha
            if s is not None and self._pos[s] >= pos:
                return i
        raise ValueError(f"commit {sha_prefix} after the window")

    def night_of_date(self, day: str) -> int:
        d = datetime.fromisoformat(day).date()
        for i, t in enumerate(self.plan_times):
            if t.date() >= d:
                return i
        raise ValueError(day)

    def full(self, prefix: str) -> str:
        for c in self.fp:
            if c.sha.startswith(prefix):
                return c.sha
        raise KeyError(prefix)

    def series_at(self, night: int) -> dict:
        return self.facts(self.plan_nights[night].full_sha).series

    def model(self, key, suite="tritonbench") -> S.SeriesModel:
        if key not in self.models:
            self.models[key] = S.series_model(self.seed, key, suite)
        return self.models[key]

    def pmodel(self, key) -> S.PretunedModel:
        if key not in self.pmodels:
            self.pmodels[key] = S.pretuned_model(self.seed, key, (), getattr(self, "planted_tc", set()))
        return self.pmodels[key]

    def clean(self, key, night: int, exclude: str | None = None) -> float:
        """The noise-free helion speedup geomean of a series at a plan night (optionally without one
        planted effect: the healthy side of a hardware episode, the pre-change side of a method change)."""
        m = self.series_at(night)[key]
        effs = [e for e in self.active(night) if e.label_id != exclude]
        salt = next((e.shape_salt for e in effs if e.shape_salt and key in e.shifts), None)
        if salt:
            m = dataclasses.replace(m, shapes=F.shape_labels(key[1], len(m.shapes), salt))
        return S.clean_geomean(self.seed, self.model(key, m.suite), m, night, effs)

    def pclean(self, key, night: int, exclude: str | None = None) -> float:
        pf = self.pfacts(night)
        kf = next(k for k in pf.kernels if k.name == key[1])
        effs = [e for e in self.pactive(night) if e.label_id != exclude]
        rec = S.pretuned_values(self.seed, self.pmodel(key), kf, night, None, ("clean",), effs, 0.0, noise=False)
        return rec["geomean"]

    def pfacts(self, night: int):
        nt = self.plan_nights[night]
        return F.parse_pretuned_cached(self.git, nt.p_full_sha, self._fcache) if nt.p_full_sha else None

    def active(self, night: int) -> list:
        return [e for e in self.effects if e.start <= night and (e.end is None or night < e.end)]

    def pactive(self, night: int) -> list:
        return [e for e in self.peffects if e.start <= night and (e.end is None or night < e.end)]

    def add_label(self, **kw):
        self.labels_full.append(kw)

    def _resolve_honest(self):
        for kw in self.labels_full:
            h = kw.get("honest")
            if not isinstance(h, tuple):
                continue
            src, keys, a, lid, side = h
            ex = lid if side == "old" else None
            if src == "dash":
                kw["honest"] = {f"{p}/{k}": round(self.clean((p, k), a, exclude=ex), 4) for p, k in keys}
            else:
                kw["honest"] = {f"{p}/{k}": round(self.pclean((p, k), a, exclude=ex), 4) for p, k in keys}

    # ------------------------------------------------------------------ runs

    def _runs(self):
        self.runs: list[Run] = []
        kept = range(self.k0, len(self.plan_nights))
        for i in kept:
            nt = self.plan_nights[i]
            self.runs.append(Run(nt.run_id, "nightly", nt.date, nt.full_sha, night=i))
            if nt.p_run_id:
                self.runs.append(Run(nt.p_run_id, "pnightly", self.p_times[i], nt.p_full_sha, night=i))
        # manual dispatches and side-branch runs between nightlies (one just before the first kept)
        for i in kept:
            t0 = self.plan_times[i - 1] if i > 0 else self.plan_times[i] - timedelta(days=1)
            t1 = self.plan_times[i]
            span = (t1 - t0).total_seconds()
            tags = []
            if i == self.k0 or S._u(self.seed, "manual", i) < 0.22:
                tags.append("manual")
            if S._u(self.seed, "side", i) < 0.08:
                tags.append("side")
            if self.plan_nights[i].p_run_id and S._u(self.seed, "pmanual", i) < 0.12:
                tags.append("pmanual")
            for j, tag in enumerate(tags):
                u = 0.25 + 0.7 * S._u(self.seed, "when", i, tag)
                t = (t0 + timedelta(seconds=int(span * u))).replace(microsecond=0)
                if i == self.k0 and tag == "manual":
                    t = t1 - timedelta(hours=3, minutes=17)
                head = self.head_at(t)
                r = S.rng_for(self.seed, "extra", i, tag)
                if tag == "pmanual":
                    self.runs.append(Run(self._rid(t, ("pm", i)), "pmanual", t, head.sha, is_nightly=False,
                                         night=max(i - 1, 0), platforms=("b200", "h100")[: 1 + int(r.random() < 0.5)],
                                         extra={"helion": float(r.normal(0, 0.06))}))
                    continue
                series = self.facts(head.sha).series
                plats = sorted({p for p, _ in series})
                if not plats:
                    continue
                pick = [plats[int(r.integers(len(plats)))]]
                if r.random() < 0.3 and len(plats) > 1:
                    pick.append(plats[int(r.integers(len(plats)))])
                kern = sorted({k for p, k in series if p in pick})
                nk = int(r.integers(1, min(6, len(kern)) + 1))
                ks = tuple(sorted(r.choice(kern, size=nk, replace=False).tolist()))
                if tag == "manual":
                    self.runs.append(Run(self._rid(t, ("m", i)), "manual", t, head.sha, is_nightly=False,
                                         night=max(i - 1, 0), platforms=tuple(sorted(set(pick))), kernels=ks,
                                         extra={"helion": float(r.normal(0, 0.07)), "lat": 0.0}))
                else:
                    branch = ["gh/jansel/%d/head" % int(r.integers(300, 900)),
                              "oulgen/bench-%d" % int(r.integers(10, 99)),
                              "yifeixu/tpu-nightly-benchmark" if "tpu" in plats else "ci/benchmark-experiment"][
                        int(r.integers(3))]
                    side_sha = "%040x" % int.from_bytes(S.rng_for(self.seed, "sidesha", i).bytes(20), "big")
                    self.runs.append(Run(self._rid(t, ("s", i)), "side", t, side_sha, branch=branch,
                                         is_nightly=branch.startswith("yifeixu/"), night=max(i - 1, 0),
                                         platforms=tuple(sorted(set(pick))), kernels=ks,
                                         extra={"helion": float(r.normal(0, 0.12))}))
                    self.runs[-1]._base_sha = head.sha
        self.runs.sort(key=lambda r: r.time)

    def _run_effects(self, run: Run, pretuned=False) -> list:
        """Effects active for a run: nightlies by night index; others by their sha (commit-based
        effects) or time (environment episodes)."""
        effs = self.peffects if pretuned else self.effects
        if run.kind in ("nightly", "pnightly"):
            return [e for e in effs if e.start <= run.night and (e.end is None or run.night < e.end)]
        out = []
        base_sha = getattr(run, "_base_sha", run.sha)
        pos = self._pos.get(base_sha, 0)
        for e in effs:
            if e.nightly_only:
                continue
            if e.pos is not None:
                if pos >= e.pos and (e.end_pos is None or pos < e.end_pos):
                    out.append(e)
            else:
                if e.t_start <= run.time and (e.t_end is None or run.time < e.t_end):
                    out.append(e)
        return out

    def _pf(self, platform: str, t: datetime) -> float:
        sd = 0.010 if platform.startswith("mi") else 0.006
        return sd * S._n(self.seed, "pf", platform, t.date(), t.hour // 12)

    # ------------------------------------------------------------------ artifacts

    def _dash_artifacts(self, run: Run, root: Path) -> int:
        base_sha = getattr(run, "_base_sha", run.sha)
        series = self.facts(base_sha).series
        effs = self._run_effects(run)
        hidden = set()
        for e in effs:
            if e.hide:
                hidden |= set(e.shifts)
        groups: dict = {}
        r = S.rng_for(self.seed, "fail", run.run_id)
        for key, m in sorted(series.items()):
            if run.kind != "nightly":
                if key[0] not in run.platforms or key[1] not in run.kernels:
                    continue
            gk = (m.job_alias, m.suite, m.shard)
            groups.setdefault(gk, []).append((key, m))
        n = 0
        for (alias, suite, shard), members in sorted(groups.items()):
            if run.kind == "nightly" and r.random() < 0.012 and not self._protected(members, run.night):
                continue  # this runner failed: its bucket's artifact is missing
            if suite in ("tpu", "tpu_bridge"):
                name = f"benchmark-results-{alias}"
            else:
                name = f"benchmark-results-{alias}-" + ",".join(
                    dict.fromkeys(k.removesuffix("-bwd") if suite == "linattn" else k for (_, k), _ in members))
            records = []
            for key, m in members:
                if key in hidden:
                    continue
                self._series_seen.add(key)
                model = self.model(key, m.suite)
                salt = next((e.shape_salt for e in effs if e.shape_salt and key in e.shifts), None)
                if salt:
                    m = dataclasses.replace(m, shapes=F.shape_labels(key[1], len(m.shapes), salt))
                prot = self._protected([(key, m)], run.night)
                vals = S.series_values(self.seed, model, m, run.night, run.time, (run.run_id,), effs,
                                       self._pf(key[0], run.time), extra=run.extra or None,
                                       outlier_ok=not prot, failures_ok=not prot)
                extra_info = {"device": m.device}
                if m.backend is not None:
                    extra_info["backend"] = m.backend
                if m.baseline_label:
                    extra_info["baseline_label"] = m.baseline_label
                bench_name = {"linattn": "Helion Linear-Attention Benchmark",
                              "tpu": "Helion TPU Benchmark"}.get(suite, "Helion Benchmark")
                for metric, values in vals.metrics.items():
                    rec = {"benchmark": {"name": bench_name, "extra_info": extra_info},
                           "model": {"name": key[1]},
                           "metric": {"name": metric, "benchmark_values": values}}
                    if m.shape_in_json:
                        rec["shape"] = vals.shapes
                    records.append(rec)
            if not records:
                continue
            d = root / run.run_id / name
            d.mkdir(parents=True, exist_ok=True)
            (d / "helionbench.json").write_text(json.dumps(records))
            n += 1
        return n

    def _protected(self, members, night) -> bool:
        """No stray failure/outlier on a member within two nights of a planted boundary."""
        for key, _ in members:
            for b in self._boundaries.get(key, ()):
                if abs(night - b) <= 2:
                    return True
        return False

    def _pret_artifacts(self, run: Run, root: Path) -> int:
        pf = F.parse_pretuned_cached(self.git, run.sha, self._fcache)
        if pf is None:
            return 0
        effs = self._run_effects(run, pretuned=True)
        plats = [j.alias for j in pf.jobs] if run.kind == "pnightly" else list(run.platforms)
        if run.kind == "pnightly":
            plats = [j.alias for j in pf.jobs if pf.toggles.get(j.toggle, True)]
        n = 0
        for alias in plats:
            dev, cc = F.P_DEVICE.get(alias, (alias, ""))
            recs = []
            for kf in pf.kernels:
                rec = {"kernel": kf.name, "pretuned_hardware": sorted(kf.hardware)}
                if alias not in kf.hardware:
                    rec["skipped"] = f"pretuned for {sorted(kf.hardware)}; current hardware is {alias}"
                else:
                    key = (alias, kf.name)
                    err = None
                    if run.kind == "pnightly" and S._u(self.seed, "perr", key, run.night) < 0.012 and \
                            not any(abs(run.night - b) <= 2 for b in self._pboundaries.get(key, ())):
                        err = "RuntimeError: CUDA error: an illegal memory access was encountered"
                    if kf.name.endswith("_cute") and not pf.cute_setup and run.time >= CUTE_DSL_BROKEN:
                        # vLLM's nightly wheel pulled a newer nvidia-cutlass-dsl; until 6bf6fe86
                        # reinstalled Helion's pin, the CuTe pretuned kernels failed to compile
                        err = ("RuntimeError: Helion CuTe backend requires nvidia-cutlass-dsl 4.5.x "
                               "(found 4.6.0.dev)")
                    if err:
                        rec["error"] = err
                    else:
                        self._pseries_seen.add(key)
                        prot = any(abs(run.night - b) <= 2 for b in self._pboundaries.get(key, ()))
                        vals = S.pretuned_values(self.seed, self.pmodel(key), kf, run.night, run.time,
                                                 (run.run_id,), effs, self._pf(alias, run.time), outlier_ok=not prot)
                        if run.extra:
                            f = math.exp(-run.extra.get("helion", 0.0))
                            vals["geomean"] = round(vals["geomean"] * f, 4)
                            vals["best_speedup"] = round(vals["best_speedup"] * f, 4)
                        rec.update(helion_wins=vals["helion_wins"], total=vals["total"], geomean=vals["geomean"],
                                   best_speedup=vals["best_speedup"], cudagraph=kf.cudagraph)
                        if vals.get("baselines"):
                            rec["baselines"] = vals["baselines"]
                rec["device"] = dev
                rec["compute_capability"] = cc
                recs.append(rec)
            d = root / run.run_id / f"pretuned-results-{alias}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "pretuned-bench.json").write_text(json.dumps(recs))
            n += 1
        return n

    # ------------------------------------------------------------------ publishing

    def _publish(self):
        self._docs = self._tmp / "docs"
        self._docs.mkdir(exist_ok=True)
        dash_meta: list = []
        pre_meta: list = []
        dash_doc = None
        pre_doc = None
        self._dash_paths: dict = {}
        self._pre_paths: dict = {}
        pending_d: list = []
        pending_p: list = []
        for run in self.runs:
            if run.kind in ("nightly", "manual", "side"):
                pending_d.append(run)
            else:
                pending_p.append(run)
            if run.kind == "nightly":
                dash_doc = self._build(self._bd, self._bd_clock, pending_d, dash_meta, dash_doc, run, pretuned=False)
                pending_d = []
                self._dash_paths[run.night] = self._save(dash_doc, f"d{run.night}")
            if run.kind == "pnightly":
                pre_doc = self._build(self._bp, self._bp_clock, pending_p, pre_meta, pre_doc, run, pretuned=True)
                pending_p = []
                self._pre_paths[run.night] = self._save(pre_doc, f"p{run.night}")

    def _build(self, mod, clock, pending, meta, existing, nightly: Run, pretuned: bool):
        cache = self._tmp / "cache"
        if cache.exists():
            shutil.rmtree(cache)
        cache.mkdir()
        for run in pending:
            n = self._pret_artifacts(run, cache) if pretuned else self._dash_artifacts(run, cache)
            if n or run.kind in ("nightly", "pnightly"):
                meta.append(run.meta())
        clock._now = nightly.time + timedelta(hours=2, minutes=41)
        facts = self.facts(nightly.sha)
        wf = self._tmp / "dispatch.yml"
        wf.write_text(facts.pretuned_dispatch_text if pretuned else facts.dispatch_text)
        active = mod.get_active_platforms(str(wf))
        if pretuned:
            doc = mod.build_dashboard_data(str(cache), list(meta), existing, active)
        else:
            expected = mod.get_expected_kernels_per_platform(str(wf))
            doc = mod.build_dashboard_data(str(cache), list(meta), existing, active, expected)
        shutil.rmtree(cache)
        return doc

    def _save(self, doc, name) -> Path:
        p = self._docs / f"{name}.json.gz"
        with gzip.open(p, "wb", compresslevel=1) as f:
            f.write(json.dumps(doc, indent=2).encode())
        return p

    # ------------------------------------------------------------------ labels

    def _kept_labels(self) -> list:
        out = []
        for kw in self.labels_full:
            a = kw["first_bad"]
            if a - 1 < self.k0:
                continue
            nts = self.plan_nights
            pre = kw["source"] == "pretuned"
            fb = nts[a].p_run_id if pre else nts[a].run_id
            lg = nts[a - 1].p_run_id if pre else nts[a - 1].run_id
            if fb is None or lg is None:
                continue
            end = kw.get("end")
            end_id = None
            if end is not None and end < len(nts):
                end_id = nts[end].p_run_id if pre else nts[end].run_id
            out.append(Label(id=kw["id"], source=kw["source"], cause=kw["cause"], kind=kw["kind"],
                             direction=kw["direction"], members=tuple(tuple(m) for m in kw["members"]),
                             metrics=tuple(kw["metrics"]), first_bad_run_id=fb, last_good_run_id=lg,
                             end_run_id=end_id, culprit_sha=kw.get("culprit"), change_sha=kw.get("change"),
                             honest_speedup=dict(kw.get("honest") or {}), note=kw.get("note", "")))
        return out

    # ------------------------------------------------------------------ the interface

    @property
    def nights(self) -> list:
        return self.plan_nights[self.k0:]

    def night_of(self, run_id) -> int | None:
        if run_id is None:
            return None
        if not hasattr(self, "_night_index"):
            idx = {}
            for i, nt in enumerate(self.nights):
                idx[nt.run_id] = i
                if nt.p_run_id:
                    idx[nt.p_run_id] = i
            self._night_index = idx
        return self._night_index.get(str(run_id))

    def series_count(self) -> int:
        return len(self._series_seen) + len(self._pseries_seen)

    def dashboard_bytes(self, n: int) -> bytes | None:
        p = self._dash_paths.get(self.k0 + n)
        return gzip.decompress(p.read_bytes()) if p else None

    def pretuned_bytes(self, n: int) -> bytes | None:
        p = self._pre_paths.get(self.k0 + n)
        return gzip.decompress(p.read_bytes()) if p else None

    def close(self):
        self.git.close()
        shutil.rmtree(self._tmp, ignore_errors=True)
        shutil.rmtree(self.repo, ignore_errors=True)
