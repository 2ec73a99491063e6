"""A built world: nightly (and manual) runs with their artifacts, the two live documents produced
by Helion's own builders after every nightly, and the labels."""
from __future__ import annotations

import gzip
import importlib.util
import json
import math
import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from tests.blind_worlds.world import Label, Night

from .events import DASH, PRE, Planner
from .hrepo import Repo
from .model import PRE_DEVICE, Mods, PreMods, measure, pre_measure, rng_for

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_id_at(dt: datetime, salt: int) -> str:
    return str(24_000_000_000 + int((dt - T0).total_seconds()) * 47 + salt % 40)


def _import_builders(repo: Repo, dest: Path):
    """Helion's own dashboard builders, from a temporary checkout of `.github/dashboard` at HEAD."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    arch = subprocess.run(["git", "-C", str(repo.path), "archive", "HEAD", ".github/dashboard"], check=True,
                          capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=arch, check=True)
    mods = []
    for name in ("build_dashboard_data", "build_pretuned_dashboard_data"):
        path = dest / ".github" / "dashboard" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"_helion_{name}_{os.getpid()}_{id(dest)}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.RETENTION_DAYS = 36500  # the documents are replayed long after the fact; keep the whole window
        mods.append(mod)
    return mods


class World:
    def __init__(self, seed: int, workdir: Path, repo: Repo, planner: Planner, window_end: str):
        self.seed = seed
        self.workdir = Path(workdir)
        self._repo = repo
        self.repo = repo.path
        self.window_end = window_end
        self.p = planner
        self.nights: list[Night] = []
        self.labels: list[Label] = []
        self.runs: list[dict] = []        # dashboard runs (meta + rows)
        self.pre_runs: list[dict] = []
        self._night_of: dict = {}
        self._doc_cache: dict = {}
        self._pdoc_cache: dict = {}
        self._builders = None
        self._tmp_files: dict = {}

    # ------------------------------------------------------------------ interface
    def night_of(self, run_id) -> int | None:
        return self._night_of.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        keys = set()
        for r in self.runs:
            if r["is_nightly"] and r["branch"] == "main":
                keys |= {(DASH,) + k for k in r["rows"]}
        for r in self.pre_runs:
            if r["is_nightly"]:
                keys |= {(PRE,) + k for k in r["rows"]}
        return len(keys)

    def dashboard_bytes(self, i: int) -> bytes:
        return self._doc(i, DASH)

    def pretuned_bytes(self, i: int) -> bytes | None:
        if self.nights[i].p_run_id is None:
            return None
        return self._doc(i, PRE)

    def labels_json(self) -> list:
        return [l.to_dict() for l in self.labels]

    def close(self):
        self._repo.close()

    # ------------------------------------------------------------------ documents
    def _path(self, sha: str, rel: str) -> str:
        text = self._repo.read(sha, rel) or ""
        oid = self._repo.tree(sha).get(rel, "none")
        if oid not in self._tmp_files:
            d = self.workdir / "wf"
            d.mkdir(exist_ok=True)
            path = d / f"{oid}.yml"
            path.write_text(text)
            self._tmp_files[oid] = str(path)
        return self._tmp_files[oid]

    def _doc(self, i: int, source: str) -> bytes:
        cache = self._doc_cache if source == DASH else self._pdoc_cache
        if i in cache:
            return gzip.decompress(Path(cache[i]).read_bytes())
        if self._builders is None:
            self._builders = _import_builders(self._repo, self.workdir / "_helion_dashboard")
        # sequential: each document starts from the previous one, as the live pipeline does
        start = max([j for j in cache if j < i], default=-1)
        prev = json.loads(gzip.decompress(Path(cache[start]).read_bytes())) if start >= 0 else None
        for j in range(start + 1, i + 1):
            if source == PRE and self.nights[j].p_run_id is None:
                continue
            prev = self._build_one(j, source, prev)
            out = self.workdir / "docs" / f"{source}_{j:03d}.json.gz"
            out.parent.mkdir(exist_ok=True)
            out.write_bytes(gzip.compress(json.dumps(prev).encode(), 3))
            cache[j] = str(out)
        return gzip.decompress(Path(cache[i]).read_bytes())

    def _build_one(self, j: int, source: str, existing: dict | None) -> dict:
        dash_mod, pre_mod = self._builders
        if source == DASH:
            cut = self.nights[j].date
            prev_cut = self.nights[j - 1].date if j > 0 else None
            runs = self.runs
        else:
            cut = self.p.nights[j].p_date
            prev_js = [k for k in range(j) if self.nights[k].p_run_id is not None]
            prev_cut = self.p.nights[prev_js[-1]].p_date if prev_js else None
            runs = self.pre_runs
        meta = [r["meta"] for r in runs if r["date"] <= cut]
        new = [r for r in runs if r["date"] <= cut and (prev_cut is None or r["date"] > prev_cut)]
        cache = self.workdir / "cache" / f"{source}_{j:03d}"
        if cache.exists():
            shutil.rmtree(cache)
        cache.mkdir(parents=True)
        for r in new:
            src = self.workdir / "runs" / source / r["meta"]["run_id"]
            if src.exists():
                os.symlink(src, cache / r["meta"]["run_id"])
        if source == DASH:
            sha = self.nights[j].full_sha
            wf = self._path(sha, ".github/workflows/benchmark_dispatch.yml")
            data = dash_mod.build_dashboard_data(str(cache), meta, existing, dash_mod.get_active_platforms(wf),
                                                 dash_mod.get_expected_kernels_per_platform(wf))
        else:
            sha = self.nights[j].p_full_sha
            wf = self._path(sha, ".github/workflows/benchmark_pretuned_dispatch.yml")
            data = pre_mod.build_dashboard_data(str(cache), meta, existing, pre_mod.get_active_platforms(wf))
        shutil.rmtree(cache)
        return data


# ====================================================================== simulation

class Simulator:
    def __init__(self, seed: int, planner: Planner, repo: Repo, workdir: Path):
        self.seed = seed
        self.p = planner
        self.repo = repo
        self.workdir = Path(workdir)
        self.rng = rng_for(seed, "sim")
        self.plat_factor: dict = {}

    # ---------------------------------------------------------------- mods
    def mods(self, source, key, i=None, sha=None, when=None):
        m = Mods() if source == DASH else PreMods()
        missing = False
        outlier = None
        for e in self.p.effects:
            if e.source != source or key not in e.members:
                continue
            if i is not None:
                on = e.start <= i and (e.end is None or i < e.end)
            elif e.commit is not None:
                on = self.p.active(e, sha=sha)
            else:
                on = self.p.active(e, when=when)
            if not on:
                continue
            if e.missing:
                missing = True
            if e.outlier is not None:
                outlier = e.outlier if i is not None else None
            for f, v in e.members[key].items():
                if f in ("h_shape",):
                    d = dict(m.h_shape)
                    for lab, x in v.items():
                        d[lab] = d.get(lab, 1.0) * x
                    m.h_shape = d
                elif f == "allk_imp":
                    m.allk_imp = tuple(a * b for a, b in zip(m.allk_imp, v))
                elif f == "base":
                    d = dict(m.base)
                    for b, x in v.items():
                        d[b] = d.get(b, 1.0) * x
                    m.base = d
                elif f == "extra_launch":
                    m.extra_launch += v
                else:
                    setattr(m, f, getattr(m, f) * v)
        return m, missing, outlier

    def pf(self, plat: str, stamp: str) -> float:
        k = (plat, stamp)
        if k not in self.plat_factor:
            r = rng_for(self.seed, "platnight", plat, stamp)
            self.plat_factor[k] = float(math.exp(r.normal(0, 0.006)))
        return self.plat_factor[k]

    # ---------------------------------------------------------------- one dashboard run
    def dash_rows(self, rows: dict, run_key: str, i=None, sha=None, when=None, nightly=True, tweak=None):
        out = {}
        p = self.p
        shard_fail = set()
        rr = rng_for(self.seed, "run", run_key)
        if nightly:
            arts = sorted({r.artifact for r in rows.values()})
            for a in arts:
                keys = [k for k, r in rows.items() if r.artifact == a]
                if any(i in p.no_fail.get((DASH, k), ()) for k in keys):
                    continue
                if rr.random() < 0.012:
                    shard_fail.add(a)
        for key, row in rows.items():
            if row.artifact in shard_fail:
                continue
            m, missing, outlier = self.mods(DASH, key, i=i, sha=sha, when=when)
            if missing:
                continue
            if (DASH, key) in p.no_data_before and i is not None and i < p.no_data_before[(DASH, key)]:
                fail_all = True
            else:
                fail_all = False
            s = p.series[key]
            r = rng_for(self.seed, "m", run_key, *key)
            protected = i is not None and i in p.no_fail.get((DASH, key), ())
            if nightly and not protected and row.suite == "linattn" and not row.aot and r.random() < 0.05:
                continue  # autotuning from cold timed out
            if i is not None and key in p.scatter_before and i < p.scatter_before[key]:
                m.sig *= 1.35
            if tweak:
                m.h *= tweak
            fail = {}
            busy = i is not None and any(a <= i <= b for a, b in p.busy.get((DASH, key), []))
            if fail_all:
                fail = {lab: "run" for lab in row.shapes}
            elif nightly and not protected and not busy:
                x = r.random()
                if x < 0.005:
                    fail = {row.shapes[int(r.integers(len(row.shapes)))]: "run"}
                elif x < 0.008:
                    fail = {row.shapes[int(r.integers(len(row.shapes)))]: "acc"}
            if outlier is None and nightly and not busy and r.random() < 0.01:
                f = r.uniform(1.15, 1.2)
                outlier = ("A" if r.random() < 0.6 else "B", f if r.random() < 0.7 else 1 / f)
            if outlier is not None and row.single_timer and outlier[0] == "B":
                outlier = ("A", outlier[1])
            stamp = run_key
            vals = measure(s, list(row.shapes), row.cudagraph, m, self.pf(row.plat, stamp), r,
                           single_timer=row.single_timer, outlier=outlier, compile_measured=row.compile_measured,
                           fail=fail)
            out[key] = (row, vals)
        return out

    def pre_rows_measure(self, rows: dict, run_key: str, i=None, sha=None, when=None, nightly=True):
        out = {}
        for key, row in rows.items():
            m, missing, outlier = self.mods(PRE, key, i=i, sha=sha, when=when)
            if missing:
                continue
            r = rng_for(self.seed, "pm", run_key, *key)
            protected = i is not None and i in self.p.no_fail.get((PRE, key), ())
            busy = i is not None and any(a <= i <= b for a, b in self.p.busy.get((PRE, key), []))
            if nightly and not protected and not busy and r.random() < 0.008:
                out[key] = (row, {"error": r.choice([
                    "RuntimeError: CUDA error: an illegal memory access was encountered",
                    "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                    "AssertionError: Helion output mismatch vs reference (max abs diff 0.0625)"])})
                continue
            fac = 1.0
            if outlier is not None:
                fac = outlier[1]
            elif nightly and not busy and r.random() < 0.01:
                fac = r.uniform(1.15, 1.2) if r.random() < 0.7 else 1 / r.uniform(1.15, 1.2)
            vals = pre_measure(self.p.pseries[key], row["baselines"] if row["baselines"] != ("ref",) else ("ref",),
                               m, r, outlier=fac)
            vals["cudagraph"] = row["cudagraph"]
            out[key] = (row, vals)
        return out


def write_dash_artifacts(root: Path, rows: dict):
    by_art: dict = {}
    for key, (row, vals) in rows.items():
        recs = by_art.setdefault(row.artifact, [])
        extra = {"device": row.device}
        if row.suite == "linattn":
            extra.update(backend="triton", baseline_label=row.baseline_label)
        elif row.suite != "tpu":
            extra["backend"] = row.backend
        name = {"linattn": "Helion Linear-Attention Benchmark", "tpu": "Helion TPU Benchmark"}.get(row.suite,
                                                                                                   "Helion Benchmark")
        for metric, values in vals.items():
            recs.append({"benchmark": {"name": name, "extra_info": dict(extra)}, "model": {"name": row.kernel},
                         "metric": {"name": metric, "benchmark_values": values}, "shape": list(row.shapes)})
    for art, recs in by_art.items():
        d = root / art
        d.mkdir(parents=True, exist_ok=True)
        (d / "helionbench.json").write_text(json.dumps(recs))


def write_pre_artifacts(root: Path, rows: dict):
    by_alias: dict = {}
    for (alias, kernel), (row, vals) in rows.items():
        dev, cc = PRE_DEVICE[alias]
        rec = {"kernel": kernel, "pretuned_hardware": [alias]}
        if "error" in vals:
            rec["error"] = vals["error"]
        else:
            rec.update(helion_wins=vals["helion_wins"], total=vals["total"], geomean=vals["geomean"],
                       best_speedup=vals["best_speedup"], cudagraph=vals["cudagraph"])
            if vals.get("baselines"):
                rec["baselines"] = vals["baselines"]
        rec["device"] = dev
        rec["compute_capability"] = cc
        by_alias.setdefault(alias, []).append(rec)
    for alias, recs in by_alias.items():
        d = root / f"pretuned-results-{alias}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "pretuned-bench.json").write_text(json.dumps(recs))
