"""build_world(seed, workdir, nights=None): the whole pipeline of one world."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.blind_worlds.world import Label, Night

from . import facts as F
from .events import DASH, PRE, Planner
from .hrepo import Repo, clone
from .model import model_speedup, pre_model, rng_for
from .plan import file_changes, make_nights, night_rows, pre_rows
from .world import Simulator, World, iso, run_id_at, write_dash_artifacts, write_pre_artifacts

WINDOW_END = {211: "2026-06-16", 212: "2026-07-31", 213: "2026-08-21"}
NIGHTS = {211: 110, 212: 120, 213: 105}

# What each real measurement/machine change of a window does in that world (short sha -> how);
# changes not listed move nothing. Structural changes (shapes, CUDA-graph flags, harness switches,
# precision, baseline sets of the pretuned suite) always act.
ENV_PLAN = {
    211: {"9a61a903": "baseline", "3f63f311": "driver", "9eefa499": "runner", "8690b5f1": "driver_gemm",
          "22d88942": "compile_fix", "ea484a38": "harness:3", "27b93292": "autotune:2", "b33ae6b9": "runner", "ed36077d": "driver",
          "fd1a3246": "driver"},
    212: {"e35ec3bd": "baseline", "ea484a38": "compile_timer", "8435f1ee": "autotune:1", "27b93292": "scatter_only",
          "9f461a21": "autotune:2", "82bee2fa": "driver", "6facd856": "driver", "22a8377e": "baseline",
          "8379fd86": "config", "3f0134cc": "code:3", "c8493a5b": "none"},
    213: {"27b93292": "autotune:1", "b33ae6b9": "runner", "35b19fd4": "driver", "3cc1b418": "runner",
          "83f4c235": "driver", "22a8377e": "baseline", "pre_torch:76df68c9": "baseline", "pre_aot:76df68c9": "config",
          "pre_aot:93e29e1f": "config", "cb89230a": "config_up", "3f0134cc": "code:2", "c8493a5b": "none"},
}
COUNTS = {
    211: dict(code=5, cfg=2, pre_real=0, thermal=2, outage=2, swap=1, pre_thermal=0, pre_outage=0,
              scatter=2, outlier=3, pre_scatter=0, pre_outlier=0),
    212: dict(code=4, cfg=2, pre_real=1, thermal=2, outage=1, swap=1, pre_thermal=0, pre_outage=1,
              scatter=2, outlier=2, pre_scatter=1, pre_outlier=1),
    213: dict(code=5, cfg=2, pre_real=1, thermal=2, outage=1, swap=1, pre_thermal=0, pre_outage=1,
              scatter=2, outlier=3, pre_scatter=1, pre_outlier=1),
}


def build_world(seed: int, workdir, nights: int | None = None) -> World:
    if seed not in WINDOW_END:
        raise KeyError(f"set V has seeds {sorted(WINDOW_END)}")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    repo = Repo(clone(workdir / "helion"))
    n = nights or NIGHTS[seed]
    end = datetime.fromisoformat(WINDOW_END[seed]).replace(tzinfo=timezone.utc)
    plans = make_nights(repo, end, n, seed, skip=37 if n > 60 else None)
    changes = file_changes(repo, plans)
    p = Planner(seed, repo, plans, changes)
    p.file_events(ENV_PLAN[seed])
    c = dict(COUNTS[seed])
    if n < NIGHTS[seed]:
        scale = n / NIGHTS[seed]
        c = {k: int(round(v * scale)) for k, v in c.items()}
        c["code"] = max(c["code"], 1)
        c["outlier"] = max(c["outlier"], 1)
    p.plant_real(c["code"], c["cfg"], late=True, first_nights=n >= 40)
    p.plant_pre_real(c["pre_real"])
    p.plant_hardware(c["thermal"], c["outage"], c["swap"], c["pre_thermal"], c["pre_outage"])
    p.plant_noise(c["scatter"], c["outlier"], c["pre_scatter"], c["pre_outlier"])

    world = World(seed, workdir, repo, p, WINDOW_END[seed])
    sim = Simulator(seed, p, repo, workdir)
    _simulate(world, sim, p, repo, seed)
    world.labels = _labels(world, sim, p, seed)
    return world


# ---------------------------------------------------------------------------------------- runs

def _simulate(world: World, sim: Simulator, p: Planner, repo: Repo, seed: int):
    r = rng_for(seed, "runs")
    root_d = world.workdir / "runs" / DASH
    root_p = world.workdir / "runs" / PRE
    N = len(p.nights)
    # nightlies
    for i, npl in enumerate(p.nights):
        rid = run_id_at(npl.date, int(r.integers(0, 40)))
        prid = run_id_at(npl.p_date, int(r.integers(0, 40))) if npl.p_date is not None else None
        rows = sim.dash_rows(npl.rows, rid, i=i)
        write_dash_artifacts(root_d / rid, rows)
        meta = dict(run_id=rid, sha=npl.sha[:8], full_sha=npl.sha, date=iso(npl.date), branch="main", is_nightly=True)
        world.runs.append(dict(meta=meta, date=npl.date, rows=rows, is_nightly=True, branch="main"))
        world._night_of[rid] = i
        if prid is not None:
            prow = sim.pre_rows_measure(npl.pre_rows, prid, i=i)
            write_pre_artifacts(root_p / prid, prow)
            pmeta = dict(run_id=prid, sha=npl.p_sha[:8], full_sha=npl.p_sha, date=iso(npl.p_date), branch="main",
                         is_nightly=True)
            world.pre_runs.append(dict(meta=pmeta, date=npl.p_date, rows=prow, is_nightly=True, branch="main"))
            world._night_of[prid] = i
        world.nights.append(Night(run_id=rid, full_sha=npl.sha, sha=npl.sha[:8], date=npl.date, p_run_id=prid,
                                  p_full_sha=npl.p_sha if prid else None))
    # manual dispatches on main and on branches (never the trend)
    days = [p.nights[0].date - timedelta(days=1)] + [n.date for n in p.nights]
    for k, day in enumerate(days):
        if k > 0 and r.random() > 0.22:
            continue
        t = day.replace(hour=int(r.integers(13, 23)), minute=int(r.integers(0, 60)), second=int(r.integers(0, 60)))
        if k == 0:
            t = day.replace(hour=9, minute=int(r.integers(0, 60)))
        nxt = p.nights[k].date if k < N else None
        if nxt is not None and t >= nxt:
            continue
        base_sha = repo.head_at(t)
        rows_all = night_rows(F.dash_facts(repo, base_sha))
        if not rows_all:
            continue
        plats = sorted({kk[0] for kk in rows_all})
        plat = plats[int(r.integers(len(plats)))]
        keys = sorted(kk for kk in rows_all if kk[0] == plat)
        if r.random() < 0.75:
            keys = [keys[j] for j in sorted(r.choice(len(keys), size=min(len(keys), int(r.integers(1, 5))), replace=False))]
        rows = {kk: rows_all[kk] for kk in keys}
        branch, sha, tweak = "main", base_sha, None
        x = r.random()
        if x < 0.18:
            branch = str(r.choice(["perf/autotune-cache", "jansel/loop-order", "cute-epilogue-wip", "fix/rms-norm-bwd",
                                   "oulgen/sweep", "tpu-pallas-tiling"]))
            sha = "".join(f"{v:02x}" for v in r.integers(0, 256, 20))
            tweak = float(r.uniform(0.8, 1.3))
        elif x < 0.4:
            tweak = float(r.uniform(1.08, 1.35))   # HELION_AUTOTUNE_EFFORT=quick and friends
        rid = run_id_at(t, int(r.integers(0, 40)))
        mrows = sim.dash_rows(rows, rid, sha=base_sha, when=t, nightly=False, tweak=tweak)
        if not mrows:
            continue
        write_dash_artifacts(root_d / rid, mrows)
        meta = dict(run_id=rid, sha=sha[:8], full_sha=sha, date=iso(t), branch=branch, is_nightly=False)
        world.runs.append(dict(meta=meta, date=t, rows=mrows, is_nightly=False, branch=branch))
    # a side-branch nightly (a TPU nightly workflow on a branch): is_nightly, but not main
    tpu_nights = [i for i in range(N) if any(kk[0] == "tpu" for kk in p.nights[i].rows)]
    if len(tpu_nights) > 8:
        s0 = tpu_nights[int(r.integers(0, len(tpu_nights) - 5))]
        for i in range(s0, min(s0 + int(r.integers(3, 6)), N)):
            t = p.nights[i].date.replace(hour=12, minute=int(r.integers(0, 50)))
            rows = {kk: v for kk, v in p.nights[i].rows.items() if kk[0] == "tpu"}
            rid = run_id_at(t, int(r.integers(0, 40)))
            sha = "".join(f"{v:02x}" for v in r.integers(0, 256, 20))
            mrows = sim.dash_rows(rows, rid, sha=p.nights[i].sha, when=t, nightly=False, tweak=float(r.uniform(0.85, 1.2)))
            if mrows:
                write_dash_artifacts(root_d / rid, mrows)
                meta = dict(run_id=rid, sha=sha[:8], full_sha=sha, date=iso(t), branch="yifeixu/tpu-nightly-benchmark",
                            is_nightly=True)
                world.runs.append(dict(meta=meta, date=t, rows=mrows, is_nightly=True,
                                       branch="yifeixu/tpu-nightly-benchmark"))
    # manual pretuned dispatches
    for i, npl in enumerate(p.nights):
        if npl.p_date is None or r.random() > 0.12:
            continue
        t = npl.p_date.replace(hour=int(r.integers(15, 23)), minute=int(r.integers(0, 60)))
        if i + 1 < N and p.nights[i + 1].p_date is not None and t >= p.nights[i + 1].p_date:
            continue
        sha = repo.head_at(t)
        rows_all = pre_rows(F.pre_facts(repo, sha))
        keys = sorted(rows_all)
        if not keys:
            continue
        keys = [keys[j] for j in sorted(r.choice(len(keys), size=min(len(keys), int(r.integers(1, 6))), replace=False))]
        rid = run_id_at(t, int(r.integers(0, 40)))
        prow = sim.pre_rows_measure({kk: rows_all[kk] for kk in keys}, rid, sha=sha, when=t, nightly=False)
        if prow:
            write_pre_artifacts(root_p / rid, prow)
            meta = dict(run_id=rid, sha=sha[:8], full_sha=sha, date=iso(t), branch="main", is_nightly=False)
            world.pre_runs.append(dict(meta=meta, date=t, rows=prow, is_nightly=False, branch="main"))
    world.runs.sort(key=lambda x: x["date"])
    world.pre_runs.sort(key=lambda x: x["date"])


# ---------------------------------------------------------------------------------------- labels

def _honest(sim: Simulator, p: Planner, source: str, key, j: int) -> float | None:
    while j >= 0 and not p.present(source, key, j):
        j -= 1
    if j < 0:
        return None
    m, _, _ = sim.mods(source, key, i=j)
    if source == DASH:
        row = p.nights[j].rows[key]
        return model_speedup(p.series[key], list(row.shapes), row.cudagraph, m)
    row = p.nights[j].pre_rows[key]
    return pre_model(p.pseries[key], row["baselines"], m)


def _latency(sim: Simulator, p: Planner, key, j: int) -> float | None:
    while j >= 0 and not p.present(DASH, key, j):
        j -= 1
    if j < 0:
        return None
    m, _, _ = sim.mods(DASH, key, i=j)
    row = p.nights[j].rows[key]
    s = p.series[key]
    vals = [s.base[l] * m.allk * m.allk_imp[1] / s.hsp[l] * m.h * m.h_shape.get(l, 1.0) * m.hB for l in row.shapes]
    return sum(vals) / len(vals)


def _merge(drafts: list) -> list:
    """One label per event: the per-kernel drafts of one commit, night and mechanism go together."""
    out, seen = [], {}
    for d in drafts:
        key = (d.source, d.cause, d.kind, d.first_bad, d.end, d.culprit, d.change)
        if d.cause != "noise" and (d.culprit or d.change) and key in seen:
            seen[key].members = list(dict.fromkeys(list(seen[key].members) + list(d.members)))
            continue
        seen[key] = d
        out.append(d)
    return out


def _labels(world: World, sim: Simulator, p: Planner, seed: int) -> list:
    out = []
    n = 0
    for d in sorted(_merge(p.drafts), key=lambda d: (d.first_bad, d.source, d.cause, d.kind)):
        a = d.first_bad
        if a < 1 or a >= len(p.nights):
            continue
        nights = world.nights
        if d.source == PRE and (nights[a].p_run_id is None or nights[a - 1].p_run_id is None):
            continue
        members, honest, moves = [], {}, []
        for key in d.members:
            key = tuple(key)
            if d.kind == "outage" or d.cause == "noise":
                members.append(key)
                if d.kind == "outage":
                    h = _honest(sim, p, d.source, key, a - 1)
                    if h:
                        honest[f"{key[0]}/{key[1]}"] = round(h, 4)
                continue
            before = _honest(sim, p, d.source, key, a - 1)
            after = _honest(sim, p, d.source, key, a)
            if before is None or after is None:
                continue
            move = abs(math.log(after / before))
            if d.source == DASH and "helion_latency_avg_ms" in d.metrics[:1]:
                lb, la = _latency(sim, p, key, a - 1), _latency(sim, p, key, a)
                move = max(move, abs(math.log(la / lb)) if lb and la else 0.0)
            if d.metrics == ("compile_time_geomean_s",):
                move = 1.0
            if move < (0.02 if d.cause == "real" else 0.035):
                continue
            members.append(key)
            moves.append(math.log(after / before))
            honest[f"{key[0]}/{key[1]}"] = round(after if d.honest == "after" else before, 4)
        if not members:
            continue
        direction = d.direction
        if direction == "mixed" and moves:
            direction = "regression" if sum(moves) < 0 else "improvement"
        n += 1
        get = (lambda i: nights[i].p_run_id) if d.source == PRE else (lambda i: nights[i].run_id)
        out.append(Label(
            id=f"v{seed}-{n:02d}-{d.cause}-{d.kind.replace('/', '_')}", source=d.source, cause=d.cause, kind=d.kind,
            direction=direction, members=tuple(sorted(members)), metrics=tuple(d.metrics),
            first_bad_run_id=get(a), last_good_run_id=get(a - 1),
            end_run_id=get(d.end) if d.end is not None and d.end < len(nights) else None,
            culprit_sha=d.culprit if d.cause == "real" else None,
            change_sha=d.change if d.cause in ("method_change", "hardware") else None,
            honest_speedup={} if d.cause == "noise" else honest, note=d.note))
    return out
