"""Building a world: schedule, facts, events, labels, then the documents night by night (cached)."""
from __future__ import annotations

import hashlib
import json
import shutil
import time
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import docs as D
from . import events as E
from . import facts as F
from . import labels as L
from . import plans as P
from . import repo as R
from . import schedule as S

PKG = Path(__file__).resolve().parent
CACHE_VERSION = "u3"


def _code_hash() -> str:
    h = hashlib.sha1(CACHE_VERSION.encode())
    for f in sorted(PKG.glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


class Ctx:
    """Everything about a world while it is being built (full window)."""

    def __init__(self, seed: int, repo: R.Repo, repo_path: Path):
        self.seed = seed
        self.repo = repo
        self.repo_path = repo_path
        self.hist = S.History(repo)
        fix = next((c for c in self.hist.commits if F.LINATTN_UPLOAD_FIX in c.subject), None)
        self._lin_fix = self.hist.index[fix.sha] if fix else None
        self.plants_so_far: list = []
        self.quiet: set = set()

    def linattn_live(self, sha: str) -> bool:
        i = self.hist.index.get(sha)
        return self._lin_fix is not None and i is not None and i >= self._lin_fix


class UWorld:
    """One labeled world: nights on the real history, the documents per night, the labels."""

    def __init__(self, seed, repo_path, nights, labels, cache_dir, series_count, runs):
        self.seed = seed
        self.repo = Path(repo_path)
        self.nights: list = nights
        self.labels: list = labels
        self.cache_dir = Path(cache_dir)
        self._series_count = series_count
        self.runs = runs
        self._index = {}
        for i, n in enumerate(nights):
            self._index[n.run_id] = i
            if n.p_run_id:
                self._index[n.p_run_id] = i

    def night_of(self, run_id) -> int | None:
        return self._index.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        return self._series_count

    def dashboard_bytes(self, i: int) -> bytes:
        return zlib.decompress((self.cache_dir / f"dash_{i}.z").read_bytes())

    def pretuned_bytes(self, i: int) -> bytes | None:
        p = self.cache_dir / f"pre_{i}.z"
        return zlib.decompress(p.read_bytes()) if p.exists() else None

    def close(self) -> None:
        pass


def build(seed: int, workdir: Path, nights: int | None = None) -> UWorld:
    plan = P.PLANS[seed]
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    bundle = bundle_path()
    full_repo = R.clone_bundle(bundle, workdir / "helion-full")
    head = R.git(full_repo, "rev-parse", "refs/remotes/origin/main").strip()
    key = f"s{seed}-k{nights or 'all'}-{_code_hash()}-{head[:8]}"
    cache = workdir / "cache" / key
    repo = R.Repo(full_repo)
    end = datetime.fromisoformat(plan["end"]).replace(tzinfo=timezone.utc)
    if (cache / "meta.json").exists():
        meta = json.loads((cache / "meta.json").read_text())
        world_repo = R.clone_bundle(bundle, workdir / f"helion-{seed}", head_sha=meta["head"])
        repo.close()
        return _world_from_meta(seed, world_repo, meta, cache)
    t0 = time.time()
    ctx = Ctx(seed, repo, full_repo)
    sch = S.build_schedule(repo, ctx.hist, seed, end, plan["nights"], plan.get("times"))
    ctx.nights, ctx.pnights = sch.nights, sch.pnights
    ctx.setups = [F.setup_at(repo, n.full_sha, linattn_live=ctx.linattn_live(n.full_sha)) for n in sch.nights]
    ctx.psetups = [F.pretuned_at(repo, pn.full_sha) if pn else None for pn in sch.pnights]
    file_plants = E.derive_file_events(ctx)
    planted = P.planted(ctx, plan)
    plants = file_plants + planted
    ctx.effects = E.Effects(plants)
    labels_full, covered = [], {}
    for p in plants:
        if not p.label:
            continue
        members, metrics, honest, direction = L.plant_members(ctx, p)
        if not members:
            continue
        labels_full.append((p, members, metrics, honest, direction))
        for m in members:
            c = covered.setdefault((p.source, m), set())
            c.add(p.start)
            if p.end is not None:
                c.add(p.end)
            if p.cause == "noise":
                c.update(range(p.start, p.end or p.start))
            for q in (p.start - 1, p.start):
                ctx.quiet.add(((m if p.source == "dashboard" else ("pre",) + m), q))
    ctx.audit = L.audit(ctx, covered)
    N = len(sch.nights)
    off = N - nights if nights else 0
    off = max(off, 0)
    # the world's nights and labels
    wn = []
    for i in range(off, N):
        n, pn = sch.nights[i], sch.pnights[i]
        wn.append(Night(run_id=n.run_id, full_sha=n.full_sha, sha=n.full_sha[:8], date=n.date,
                        p_run_id=pn.run_id if pn else None, p_full_sha=pn.full_sha if pn else None))
    labels = []
    for p, members, metrics, honest, direction in labels_full:
        a = p.start
        if a - 1 < off:
            continue
        runs = sch.nights if p.source == "dashboard" else sch.pnights
        if runs[a] is None or runs[a - 1] is None:
            continue
        end_id = runs[p.end].run_id if p.end is not None and p.end < N and runs[p.end] is not None else None
        labels.append(Label(
            id=f"u{seed}-{p.id}", source=p.source, cause=p.cause, kind=p.kind, direction=direction,
            members=tuple(tuple(m) for m in members), metrics=tuple(metrics),
            first_bad_run_id=runs[a].run_id, last_good_run_id=runs[a - 1].run_id, end_run_id=end_id,
            culprit_sha=p.culprit if p.cause == "real" else None,
            change_sha=p.change if p.cause != "real" and p.cause != "noise" else None,
            honest_speedup={f"{m[0]}/{m[1]}": round(v, 4) for m, v in honest.items() if v} if p.cause != "noise" else {},
            note=p.note))
    # documents
    tmp = workdir / "tmp" / key
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    cache_tmp = workdir / "cache" / (key + ".part")
    if cache_tmp.exists():
        shutil.rmtree(cache_tmp)
    cache_tmp.mkdir(parents=True)
    dmod, pmod = D.load_builders(full_repo, head, workdir / "builders" / head[:12])
    lo_cut = sch.nights[off - 1].date if off > 0 else sch.nights[0].date - timedelta(days=1, hours=12)
    extras = [r for r in sch.extra if r.date > lo_cut]
    dash_meta, pre_meta = [], []
    dash_doc, pre_doc = None, None
    ei = 0
    series_seen = set()
    for i in range(off, N):
        night, pnight = sch.nights[i], sch.pnights[i]
        # dashboard: runs since the previous build, then this nightly
        new = []
        while ei < len(extras) and extras[ei].date < night.date:
            new.append(extras[ei])
            ei += 1
        dash_new = [r for r in new if r.source == "dashboard"] + [night]
        pre_new = [r for r in new if r.source == "pretuned"]
        rdir = tmp / "dash"
        if rdir.exists():
            shutil.rmtree(rdir)
        for r in dash_new:
            D.write_dashboard_run(ctx, r, rdir / r.run_id, i if r.night is not None else max(i - 1, 0))
            dash_meta.append(r.meta())
        wf = D.active_platforms(dmod, repo, night.full_sha, "benchmark_dispatch.yml", tmp)
        act = dmod.get_active_platforms(str(wf))
        exp = dmod.get_expected_kernels_per_platform(str(wf))
        now = night.date + timedelta(hours=3)
        dash_doc = D.run_builder(dmod, now, str(rdir), list(dash_meta), dash_doc, act, exp)
        for s in dash_doc["summary"]:
            series_seen.add(("dashboard", s["platform_short"], s["kernel"]))
        (cache_tmp / f"dash_{i - off}.z").write_bytes(zlib.compress(json.dumps(dash_doc).encode(), 3))
        if pnight is not None:
            rdir = tmp / "pre"
            if rdir.exists():
                shutil.rmtree(rdir)
            for r in pre_new + [pnight]:
                D.write_pretuned_run(ctx, r, rdir / r.run_id, i if r.night is not None else max(i - 1, 0))
                pre_meta.append(r.meta())
            wf = D.active_platforms(pmod, repo, pnight.full_sha, "benchmark_pretuned_dispatch.yml", tmp)
            act = pmod.get_active_platforms(str(wf))
            pre_doc = D.run_builder(pmod, pnight.date + timedelta(hours=2), str(rdir), list(pre_meta), pre_doc, act)
            for s in pre_doc["summary"]:
                series_seen.add(("pretuned", s["platform_short"], s["kernel"]))
            (cache_tmp / f"pre_{i - off}.z").write_bytes(zlib.compress(json.dumps(pre_doc).encode(), 3))
        elif pre_new:
            pass
    shutil.rmtree(tmp, ignore_errors=True)
    head_sha = sch.nights[-1].full_sha
    meta = {"head": head_sha, "nights": [_night_json(n) for n in wn], "labels": [l.to_dict() for l in labels],
            "series_count": len(series_seen), "runs": dash_meta, "audit": [list(map(str, a)) for a in ctx.audit],
            "build_seconds": round(time.time() - t0, 1)}
    (cache_tmp / "meta.json").write_text(json.dumps(meta))
    if cache.exists():
        shutil.rmtree(cache)
    cache_tmp.rename(cache)
    for old in (workdir / "cache").glob(f"s{seed}-k{nights or 'all'}-*"):
        if old.is_dir() and old != cache and not old.name.endswith(".part"):
            shutil.rmtree(old, ignore_errors=True)  # documents of an older version of this code
    repo.close()
    world_repo = R.clone_bundle(bundle, workdir / f"helion-{seed}", head_sha=head_sha)
    return _world_from_meta(seed, world_repo, meta, cache)


def _night_json(n: Night) -> dict:
    return {"run_id": n.run_id, "full_sha": n.full_sha, "sha": n.sha, "date": n.date.isoformat(),
            "p_run_id": n.p_run_id, "p_full_sha": n.p_full_sha}


def _world_from_meta(seed, world_repo, meta, cache) -> UWorld:
    nights = [Night(run_id=d["run_id"], full_sha=d["full_sha"], sha=d["sha"], date=datetime.fromisoformat(d["date"]),
                    p_run_id=d["p_run_id"], p_full_sha=d["p_full_sha"]) for d in meta["nights"]]
    labels = []
    for d in meta["labels"]:
        d = dict(d)
        d["members"] = tuple(tuple(m) for m in d["members"])
        d["metrics"] = tuple(d["metrics"])
        labels.append(Label(**d))
    w = UWorld(seed, world_repo, nights, labels, cache, meta["series_count"], meta["runs"])
    w.audit = meta.get("audit", [])
    w.build_seconds = meta.get("build_seconds")
    return w
