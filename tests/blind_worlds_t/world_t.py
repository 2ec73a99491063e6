"""Builds one world of set T: nights on the real history, simulated runs, the two documents made by
Helion's own dashboard builders (imported from a temporary checkout), and the labels."""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import os
import random
import shutil
import sys
import types
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.blind_worlds.world import Label, Night

from . import catalog as CAT
from .facts import DISPATCH, PRE_DISPATCH, read_facts
from .gitio import Blobs, History, clone_bundle, git
from .model import measure, pmeasure
from .plant import Planner

BUILDER_COMMIT = "main"  # the builders as on the tip of the bundle (the live schema)
EPOCH = datetime(2025, 6, 1, tzinfo=timezone.utc)


def run_id_at(when: datetime, salt: int = 0) -> str:
    return str(16_000_000_000 + int((when - EPOCH).total_seconds()) * 13 + salt)


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _fixed_datetime_module(now: datetime):
    class _DT(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return now if tz is None else now.astimezone(tz)

    return types.SimpleNamespace(datetime=_DT, timezone=_dt.timezone, timedelta=_dt.timedelta)


def _load_builder(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class World:
    def __init__(self, seed, repo, nights, labels, dash, pre, night_index, series_count, events, tmpdirs):
        self.seed = seed
        self.repo = repo
        self.nights = nights
        self.labels = labels
        self._dash = dash
        self._pre = pre
        self._night_index = night_index
        self._series_count = series_count
        self.events = events
        self._tmp = tmpdirs

    def night_of(self, run_id) -> int | None:
        if run_id is None:
            return None
        return self._night_index.get(str(run_id))

    def series_count(self) -> int:
        return self._series_count

    def dashboard_bytes(self, i: int) -> bytes:
        return zlib.decompress(self._dash[i])

    def pretuned_bytes(self, i: int) -> bytes | None:
        b = self._pre[i]
        return None if b is None else zlib.decompress(b)

    def close(self):
        for d in self._tmp:
            shutil.rmtree(d, ignore_errors=True)
        self._tmp = []


def build(seed: int, end: str, workdir: Path, nights: int) -> World:
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    repo = clone_bundle(workdir / "helion")
    hist = History(repo)
    blobs = Blobs(repo)
    try:
        return _build(seed, end, workdir, nights, repo, hist, blobs)
    finally:
        blobs.close()


def _build(seed, end, workdir, n, repo, hist, blobs) -> World:
    end_day = datetime.fromisoformat(end).replace(tzinfo=timezone.utc)
    # ---------------------------------------------------------------- the nightlies
    nights = []  # (full_sha, date, p_full_sha, p_date)
    for j in range(n):
        day = end_day - timedelta(days=n - 1 - j)
        r = random.Random(f"T|{seed}|night|{day.date()}")
        date = day.replace(hour=8, minute=r.randint(3, 38), second=r.randint(0, 59))
        sha = hist.commits[hist.head_at(date)].sha
        pdate = day.replace(hour=10, minute=r.randint(2, 30), second=r.randint(0, 59))
        psha = hist.commits[hist.head_at(pdate)].sha
        pf = read_facts(blobs, psha).pretuned
        if not (pf and pf.get("nightly")):
            psha, pdate = None, None
        nights.append((sha, date, psha, pdate))
    facts = [read_facts(blobs, s) for s, _, _, _ in nights]
    cat = [CAT.night_series(f) for f in facts]
    pcat = [CAT.pretuned_series(read_facts(blobs, ps)) if ps else [] for _, _, ps, _ in nights]

    # ---------------------------------------------------------------- the events
    pl = Planner(seed, nights, facts, cat, pcat, hist, blobs)
    pl.natural()
    scale = n / 170
    natural_n = len(pl.plan.events) / max(scale, 0.05)
    pl.plant_noise(max(2, round(4 * min(scale, 1))), max(1, round(3 * min(scale, 1))))
    pl.plant_real(max(2, round((11 if natural_n < 15 else 9 if natural_n < 25 else 7) * scale)))
    if any(pcat):
        pl.plant_pretuned_real(1)
    n_method = sum(1 for e in pl.plan.events if e.cause == "method_change")
    pl.plant_method(max(1, round(4 * scale)) if n_method < 6 * scale else 1)
    pl.plant_hardware(max(2, round(8 * min(scale, 1)) + (1 if n > 100 else 0)))
    plan = pl.plan
    plan.finalize(cat, pcat)
    plan.protect()

    # ---------------------------------------------------------------- runs
    night_runs = []
    for j, (sha, date, psha, pdate) in enumerate(nights):
        night_runs.append({"run_id": run_id_at(date), "sha": sha[:8], "full_sha": sha, "date": iso(date),
                           "branch": "main", "is_nightly": True})
    manual = _manual_runs(seed, nights, hist, cat)
    night_index = {r["run_id"]: j for j, r in enumerate(night_runs)}
    pre_runs = [None] * n
    for j, (_, _, psha, pdate) in enumerate(nights):
        if psha:
            pre_runs[j] = {"run_id": run_id_at(pdate, 7), "sha": psha[:8], "full_sha": psha, "date": iso(pdate),
                           "branch": "main", "is_nightly": True}
            night_index[pre_runs[j]["run_id"]] = j

    # ---------------------------------------------------------------- the builders (bundle tip)
    bdir = workdir / "builder"
    bdir.mkdir(exist_ok=True)
    for name in ("build_dashboard_data.py", "build_pretuned_dashboard_data.py"):
        (bdir / name).write_text(git(repo, "show", f"{BUILDER_COMMIT}:.github/dashboard/{name}"))
    tag = f"{seed}_{os.getpid()}_{id(bdir)}"
    dash_mod = _load_builder(bdir / "build_dashboard_data.py", f"_t_helion_dashboard_{tag}")
    pre_mod = _load_builder(bdir / "build_pretuned_dashboard_data.py", f"_t_helion_pretuned_{tag}")

    cache = workdir / "cache"
    pcache = workdir / "pcache"
    wfdir = workdir / "wf"
    for d in (cache, pcache, wfdir):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()

    dash_docs, pre_docs = [], []
    prev_doc, prev_pdoc = None, None
    metas, pmetas = [], []
    series_seen = set()
    mi = 0
    for j in range(n):
        sha, date, psha, pdate = nights[j]
        # manual dispatches since the previous nightly, then the nightly
        fresh = []
        while mi < len(manual) and manual[mi]["meta"]["date"] < night_runs[j]["date"]:
            m = manual[mi]
            mi += 1
            mrows = [r for r in m["rows"] if not plan.missing("dashboard", (r.platform, r.kernel), max(j - 1, 0))]
            _write_run(seed, cache, m["meta"], mrows, plan, max(j - 1, 0), m.get("extra", 1.0), facts)
            metas.append(m["meta"])
            fresh.append(m["meta"]["run_id"])
        rows = [r for r in cat[j] if not plan.missing("dashboard", (r.platform, r.kernel), j)]
        got = _write_run(seed, cache, night_runs[j], rows, plan, j, 1.0, facts)
        series_seen.update(("dashboard", *k) for k in got)
        metas.append(night_runs[j])
        wf = wfdir / f"dispatch_{sha[:12]}.yml"
        if not wf.exists():
            wf.write_text(blobs.read(sha, DISPATCH) or "")
        dash_mod.datetime = _fixed_datetime_module(date + timedelta(hours=5))
        doc = dash_mod.build_dashboard_data(str(cache), [dict(m) for m in metas], prev_doc,
                                            dash_mod.get_active_platforms(str(wf)),
                                            dash_mod.get_expected_kernels_per_platform(str(wf)))
        dash_docs.append(zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 3))
        prev_doc = doc
        for rid in fresh + [night_runs[j]["run_id"]]:
            shutil.rmtree(cache / rid, ignore_errors=True)
        # pretuned
        if psha:
            prun = pre_runs[j]
            pm = _pretuned_manual(seed, nights, pcat, j, hist)
            if pm is not None:
                _write_pretuned(seed, pcache, pm["meta"], [r for r in pm["rows"] if not plan.missing(
                    "pretuned", (r.platform, r.kernel), j - 1)], plan, j - 1, pm["extra"])
                pmetas.append(pm["meta"])
            prows = [r for r in pcat[j] if not plan.missing("pretuned", (r.platform, r.kernel), j)]
            got = _write_pretuned(seed, pcache, prun, prows, plan, j)
            series_seen.update(("pretuned", *k) for k in got)
            pmetas.append(prun)
            pwf = wfdir / f"pdispatch_{psha[:12]}.yml"
            if not pwf.exists():
                pwf.write_text(blobs.read(psha, PRE_DISPATCH) or "")
            pre_mod.datetime = _fixed_datetime_module(pdate + timedelta(hours=4))
            pdoc = pre_mod.build_dashboard_data(str(pcache), [dict(m) for m in pmetas], prev_pdoc,
                                                pre_mod.get_active_platforms(str(pwf)))
            pre_docs.append(zlib.compress(json.dumps(pdoc, separators=(",", ":")).encode(), 3))
            prev_pdoc = pdoc
            shutil.rmtree(pcache / prun["run_id"], ignore_errors=True)
            if pm is not None:
                shutil.rmtree(pcache / pm["meta"]["run_id"], ignore_errors=True)
        else:
            pre_docs.append(None)
    for mod in (dash_mod, pre_mod):
        sys.modules.pop(mod.__name__, None)

    night_objs = [Night(run_id=night_runs[j]["run_id"], full_sha=nights[j][0], sha=nights[j][0][:8],
                        date=nights[j][1], p_run_id=pre_runs[j]["run_id"] if pre_runs[j] else None,
                        p_full_sha=nights[j][2]) for j in range(n)]
    labels = []
    for e in plan.events:
        if not e.label or e.start < 1:
            continue
        runs = night_runs if e.source == "dashboard" else [r or {} for r in pre_runs]
        fb, lg = runs[e.start].get("run_id"), runs[e.start - 1].get("run_id")
        if not fb or not lg:
            continue
        end_id = runs[e.end].get("run_id") if e.end is not None and e.end < n else None
        labels.append(Label(id=e.id, source=e.source, cause=e.cause, kind=e.kind, direction=e.direction,
                            members=tuple(tuple(m) for m in e.members), metrics=tuple(e.metrics),
                            first_bad_run_id=fb, last_good_run_id=lg, end_run_id=end_id,
                            culprit_sha=e.culprit if e.cause == "real" else None,
                            change_sha=e.change if e.cause in ("method_change", "hardware") else None,
                            honest_speedup=dict(e.honest_values) if e.cause != "noise" else {},
                            note=e.note))
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(pcache, ignore_errors=True)
    return World(seed, repo, night_objs, labels, dash_docs, pre_docs, night_index, len(series_seen),
                 plan.events, [])


def _manual_runs(seed, nights, hist, cat) -> list:
    out = []
    for j in range(len(nights)):
        lo = nights[j - 1][1] if j else nights[0][1] - timedelta(days=1)
        hi = nights[j][1]
        r = random.Random(f"T|{seed}|manual|{hi.date()}")
        k = 1 if j == 0 else (1 if r.random() < 0.2 else 0)
        for _ in range(k):
            when = lo + timedelta(seconds=r.randint(3600 * 3, int((hi - lo).total_seconds()) - 1800))
            sha = hist.commits[hist.head_at(when)].sha
            src = cat[max(j - 1, 0)]
            plats = sorted({x.platform for x in src})
            if not plats:
                continue
            pick = set(r.sample(plats, min(len(plats), r.randint(1, 2))))
            rows = [x for x in src if x.platform in pick and r.random() < 0.6] or [x for x in src if x.platform in pick]
            branch = "main" if r.random() < 0.6 else f"gh/{r.choice(['jansel', 'oulgen', 'yf225', 'v0i0'])}/{r.randint(100, 999)}/head"
            out.append({"meta": {"run_id": run_id_at(when, 3), "sha": sha[:8], "full_sha": sha, "date": iso(when),
                                 "branch": branch, "is_nightly": False},
                        "rows": rows, "extra": r.uniform(0.85, 1.15)})
        rb = random.Random(f"T|{seed}|branch-nightly|{hi.date()}")
        if any(x.platform == "tpu" for x in cat[j]) and rb.random() < 0.05:
            when = lo + timedelta(seconds=int((hi - lo).total_seconds() * 0.5))
            sha = hist.commits[hist.head_at(when)].sha
            rows = [x for x in cat[j] if x.platform == "tpu"]
            out.append({"meta": {"run_id": run_id_at(when, 5), "sha": sha[:8], "full_sha": sha, "date": iso(when),
                                 "branch": "yifeixu/tpu-nightly-benchmark", "is_nightly": True},
                        "rows": rows, "extra": rb.uniform(0.8, 1.2)})
    out.sort(key=lambda m: m["meta"]["date"])
    return out


def _write_run(seed, cache, meta, rows, plan, night, extra, facts) -> list:
    """helionbench.json artifacts of one run, one artifact per job (alias, suite)."""
    by_job: dict = {}
    got = []
    date = meta["date"]
    for r in rows:
        key = (r.platform, r.kernel)
        rng = random.Random(f"T|{seed}|{r.platform}|{r.kernel}|{meta['run_id']}")
        calm = meta["is_nightly"] and meta["branch"] == "main" and plan.is_protected("dashboard", key, night)
        u = rng.random()
        if u < 0.006 and not calm:
            continue  # the kernel crashed: no rows at all
        mods = plan.mods(key, night)
        if extra != 1.0:
            mods.helion *= extra
        pf = random.Random(f"T|{seed}|pf|{r.platform}|{date[:10]}|{meta['run_id']}").gauss(0, 0.006)
        outlier = None
        if rng.random() < 0.01:
            outlier = rng.choice(["B", "H", "T", "C", "L"] if r.latency else ["B", "H", "T", "C"])
        if calm:
            outlier = None
        vals = measure(seed, r, mods, 2.718281828 ** pf, rng, outlier)
        v = 1.0 if calm else rng.random()
        n = len(r.shapes)
        if v < 0.003:
            for m in vals:
                vals[m] = [0.0] * n
        elif v < 0.018 and n > 1:
            s = rng.randrange(n)
            for m in vals:
                if m != "helion_compile_time_s":
                    vals[m][s] = 0.0
        elif v < 0.023:
            vals["helion_accuracy"][rng.randrange(n)] = 0.0
        job = (r.alias, r.suite)
        by_job.setdefault(job, []).append((r, vals))
        got.append(key)
    for (alias, suite), items in by_job.items():
        names = ",".join(r.kernel for r, _ in items)
        d = cache / meta["run_id"] / f"benchmark-results-{alias}-{names[:80]}"
        d.mkdir(parents=True, exist_ok=True)
        recs = []
        for r, vals in items:
            extra_info = {"device": r.device}
            if suite == "tritonbench" or suite == "tpu_bridge":
                extra_info["backend"] = r.backend
            if suite == "linattn":
                extra_info = {"device": r.device, "backend": "triton", "baseline_label": r.baseline_label}
            name = {"linattn": "Helion Linear-Attention Benchmark", "tpu": "Helion TPU Benchmark"}.get(
                suite, "Helion Benchmark")
            labels = [s for s, _ in r.shapes] if r.emit_shapes else []
            for m, v in vals.items():
                rec = {"benchmark": {"name": name, "extra_info": extra_info}, "model": {"name": r.kernel},
                       "metric": {"name": m, "benchmark_values": v}}
                if r.emit_shapes or suite != "tritonbench":
                    rec["shape"] = labels
                recs.append(rec)
        (d / "helionbench.json").write_text(json.dumps(recs))
    return got


ERRORS = ["RuntimeError: CUDA error: an illegal memory access was encountered",
          "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
          "ModuleNotFoundError: No module named 'vllm'",
          "AssertionError: Helion output mismatch vs torch reference"]


def _pretuned_manual(seed, nights, pcat, j, hist):
    """An occasional manual Benchmark Pretuned Dispatch between two pretuned nightlies."""
    if j == 0 or not pcat[j - 1] or not nights[j - 1][3]:
        return None
    lo, hi = nights[j - 1][3], nights[j][3]
    r = random.Random(f"T|{seed}|pmanual|{hi.date()}")
    if r.random() > 0.12:
        return None
    when = lo + timedelta(seconds=r.randint(3600 * 2, int((hi - lo).total_seconds()) - 3600))
    sha = hist.commits[hist.head_at(when)].sha
    plat = r.choice(sorted({x.platform for x in pcat[j - 1]}))
    rows = [x for x in pcat[j - 1] if x.platform == plat and r.random() < 0.5] or \
        [x for x in pcat[j - 1] if x.platform == plat][:2]
    return {"meta": {"run_id": run_id_at(when, 9), "sha": sha[:8], "full_sha": sha, "date": iso(when),
                     "branch": "main", "is_nightly": False}, "rows": rows, "extra": r.uniform(0.85, 1.15)}


def _write_pretuned(seed, pcache, meta, rows, plan, night, extra=1.0) -> list:
    by_alias: dict = {}
    got = []
    for r in rows:
        key = (r.platform, r.kernel)
        rng = random.Random(f"T|{seed}|P|{r.platform}|{r.kernel}|{meta['run_id']}")
        rec = {"kernel": r.kernel, "pretuned_hardware": [r.platform]}
        calm = meta["is_nightly"] and plan.is_protected("pretuned", key, night)
        if rng.random() < 0.012 and not calm:
            rec["error"] = rng.choice(ERRORS)
        else:
            pf = random.Random(f"T|{seed}|ppf|{r.platform}|{meta['run_id']}").gauss(0, 0.006)
            pm = plan.pmods(key, night)
            pm.helion *= extra
            rec.update(pmeasure(seed, r, pm, 2.718281828 ** pf, rng))
        rec["device"] = r.device
        rec["compute_capability"] = r.compute
        by_alias.setdefault(r.platform, []).append(rec)
        got.append(key)
    for alias, recs in by_alias.items():
        d = pcache / meta["run_id"] / f"pretuned-results-{alias}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "pretuned-bench.json").write_text(json.dumps(recs))
    return got
