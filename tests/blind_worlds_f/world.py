"""Build one world: nightlies on real commits, events, numbers, documents and labels.

See README.md in this package for the method. ``build_world`` is the entry point; ``World`` is
what the evaluator reads (nightlies, the repo clone, documents per night, labels).
"""
from __future__ import annotations

import json
import math
import shutil
import zlib
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label

from . import catalog as C
from . import facts as F
from . import plan as P
from .docs import load_builders, publish, write_artifacts
from .emit import Emitter
from .events import KIND_ORDER, MECHANISM, Change, Planted
from .plant import plant_all
from .repo import Repo, clone
from .sim import EnvModel, Measure, Model, env_channels, headline, rng

SEEDS = (51, 52, 53)
# seed -> (nightlies, last nightly's date)
WINDOWS = {51: (150, date(2026, 8, 21)), 52: (115, date(2026, 7, 9)), 53: (160, date(2026, 7, 27))}

HEAD = ("helion_speedup_geomean", "geomean", "helion_latency_avg_ms", "compile_time_geomean_s")
METRICS = ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
           "helion_latency_avg_ms", "compile_time_geomean_s", "geomean")
THRESH = {"compile_time_geomean_s": 0.15}
MOVE = 0.04  # a metric moved when the noise-free value changes by 4% or more


def moved(a: dict, b: dict) -> list:
    out = []
    for m in METRICS:
        x, y = a.get(m), b.get(m)
        if x and y and x > 0 and y > 0 and abs(math.log(x / y)) >= THRESH.get(m, MOVE):
            out.append(m)
    return out


class World:
    """What the evaluator reads. Documents are built once and kept compressed on disk."""

    def __init__(self, nights, repo, labels, series, doc_dir: Path):
        self.nights = nights
        self.repo = repo
        self.labels = labels
        self._series = series
        self._dir = doc_dir
        self._ids = {}
        for i, n in enumerate(nights):
            self._ids[n.run_id] = i
            if n.p_run_id:
                self._ids[n.p_run_id] = i

    def night_of(self, run_id) -> int | None:
        return self._ids.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        return len(self._series)

    def dashboard_bytes(self, n: int) -> bytes:
        return zlib.decompress((self._dir / f"dashboard-{n:03d}.json.z").read_bytes())

    def pretuned_bytes(self, n: int) -> bytes | None:
        path = self._dir / f"pretuned-{n:03d}.json.z"
        return zlib.decompress(path.read_bytes()) if path.exists() else None


class Builder:
    """Makes one world: the whole window is planned (facts, environment, natural changes,
    planted events, labels); documents are then published for the kept nightlies only."""

    def __init__(self, seed: int, workdir: Path, nights: int | None):
        if seed not in WINDOWS:
            raise ValueError(f"unknown seed {seed}; seeds are {SEEDS}")
        self.seed = seed
        self.workdir = Path(workdir)
        self.repo = Repo(clone(self.workdir))
        total, end = WINDOWS[seed]
        self.nights = P.nights(self.repo, seed, P.days_of(seed, end, total))
        self.N = len(self.nights)
        self.offset = self.N - (nights or self.N)
        if not 0 <= self.offset < self.N:
            raise ValueError("nights must be between 1 and the window's length")
        self.extras = P.extras(self.repo, seed, self.nights)
        self.sha_index = [self.repo.index(n.full_sha) for n in self.nights]

    # ------------------------------------------------------------------------------------
    def build(self) -> World:
        self.planted: list[Planted] = []
        self.read_facts()
        self.build_env()
        self.find_changes()
        self.model = Model(self.seed, self.env, [], {}, self.pick_runaways())
        self.meas = Measure(self.model)
        self.busy = {}
        self.natural_labels(mark=True)  # which series real history already moves, and when
        self.plant()
        labels = self.natural_labels() + self.planted_labels()
        labels = self.finish_labels(labels)
        doc_dir, series = self.publish_all()
        self.repo.close()
        return World(self.nights[self.offset:], self.repo.path, labels, series, doc_dir)

    # ------------------------------------------------------------------------------------
    def read_facts(self):
        """Per night: what the main and the pretuned nightlies run, and each series' facts."""
        self.fd, self.fp, self.sd, self.sp = [], [], [], []
        for n in self.nights:
            f = F.dash_facts(self.repo, n.full_sha)
            self.fd.append(f)
            self.sd.append({(p, k): (job, F.series_facts(f, job, k)) for p, k, job in F.nightly_series(f)})
            pf = F.pre_facts(self.repo, n.p_full_sha) if n.p_full_sha else None
            self.fp.append(pf)
            self.sp.append({} if pf is None else
                           {(p, k): (job, pk, F.pre_series_facts(pf, job, pk))
                            for p, k, job, pk in F.pretuned_series(pf)})

    def sched(self, src: str, n: int) -> dict:
        return self.sd[n] if src == "dashboard" else self.sp[n]

    @staticmethod
    def sf_of(src: str, entry) -> dict:
        return entry[1] if src == "dashboard" else entry[2]

    def available(self, src: str, n: int, key) -> bool:
        """Scheduled and producing data by the harness physics (not by chance failures), and
        not inside a planted outage."""
        e = self.sched(src, n).get(key)
        if e is None:
            return False
        sf = self.sf_of(src, e)
        if src == "dashboard":
            if sf["suite"] == "linattn" and (not sf.get("shapes") or
                                             (not sf.get("aot") and len(sf["shapes"]) > 2)):
                return False
            if any(p.outage == key[0] and self.model.effects[p.effect].active(n)
                   for p in self.planted if p.outage):
                return False
            return True
        return bool(sf.get("cute_setup", True)) or not e[1].cute

    # ------------------------------------------------------------------------------------
    def build_env(self):
        """Record every environment value in the order it appears, and the commit that set it."""
        self.env = EnvModel(self.seed)
        seen: dict = {}
        for n in range(self.N):
            for src in ("dashboard", "pretuned"):
                for (plat, kernel), e in sorted(self.sched(src, n).items()):
                    for ch, val in env_channels(src, plat, kernel, self.sf_of(src, e)):
                        self.env.observe(ch, val)
                        prev = seen.get(ch)
                        if prev is not None and prev[1] != val and (ch, prev[1], val) not in self.env.changes:
                            self.env.changes[(ch, prev[1], val)] = self._channel_commit(src, ch, prev, n, val)
                        seen[ch] = (n, val)

    def _channel_value(self, src: str, sha: str, ch: tuple):
        if src == "dashboard":
            f = F.dash_facts(self.repo, sha)
            kind = ch[0]
            if kind in ("runner", "image"):
                job = next((j for j in f.jobs if j.platform == ch[1] and j.suite != "linattn"), None) \
                    or next((j for j in f.jobs if j.platform == ch[1]), None)
                if job is None:
                    return None
                return job.runner if kind == "runner" else (job.image, job.runtime)
            return {"torch": f.torch_pin, "tritonbench": f.tritonbench_pin, "cute_pin": f.cute_pin,
                    "tpu_toolchain": f.tpu_toolchain, "linattn_pins": f.linattn_pins}.get(kind)
        pf = F.pre_facts(self.repo, sha)
        if pf is None:
            return None
        kind = ch[0]
        if kind in ("p_runner", "p_image"):
            job = next((j for j in pf.jobs if j.alias == ch[1]), None)
            if job is None:
                return None
            return job.runner if kind == "p_runner" else (job.image, job.runtime)
        if kind == "p_torch":
            return pf.torch_pin
        if kind == "p_config":
            pk = next((k for k in pf.kernels if k.name == ch[1]), None)
            return dict(pk.configs).get(F.SM_OF.get(ch[2], ""), "") if pk else None
        return None

    def _window(self, src: str, m: int, n: int):
        a = self.nights[m].full_sha if src == "dashboard" else self.nights[m].p_full_sha
        b = self.nights[n].full_sha if src == "dashboard" else self.nights[n].p_full_sha
        return a, b

    def _channel_commit(self, src, ch, prev, n, val) -> dict:
        a, b = self._window(src, prev[0], n)
        paths = F.DASH_PATHS + (F.SETTINGS_PY,) if src == "dashboard" else F.PRE_PATHS
        last, hits = prev[1], []
        for c in self.repo.touching(a, b, paths):
            v = self._channel_value(src, c.sha, ch)
            if v is not None and v != last:
                hits.append(c)
                last = v
        c = hits[-1] if hits else self.repo.commits[self.repo.index(b)]
        return {"sha": c.sha, "subject": c.subject, "quiet": len(hits) != 1}

    # ------------------------------------------------------------------------------------
    def find_changes(self):
        """Diff each series' facts against the last night it ran; group by changing commit."""
        self.birth: dict = {}  # (source, plat, kernel) -> first night with data
        groups: dict = {}
        for src in ("dashboard", "pretuned"):
            last: dict = {}
            for n in range(self.N):
                for key, e in sorted(self.sched(src, n).items()):
                    if not self.available(src, n, key):
                        continue
                    self.birth.setdefault((src,) + key, n)
                    if key in last:
                        m = last[key]
                        old = self.sf_of(src, self.sched(src, m)[key])
                        new = self.sf_of(src, e)
                        for k in sorted(set(old) | set(new)):
                            if old.get(k) == new.get(k) or MECHANISM.get((src, k)) is None:
                                continue
                            sha, subject = self._fact_commit(src, m, n, key, k, new.get(k))
                            g = groups.setdefault((src, n, sha), Change(src, n, {}, (), sha, subject))
                            g.keys = tuple(sorted(set(g.keys) | {k}))
                            g.prev[key] = m
                            g.series.setdefault(key, (old, new, set()))[2].add(k)
                    last[key] = n
        self.changes = [groups[k] for k in sorted(groups, key=lambda x: (x[1], x[0], x[2]))]
        self._one_step_per_series()

    # environment facts whose step the model draws (the others are harness physics)
    ENV_KEYS = {("dashboard", k): ch for k, ch in (
        ("runner", "runner"), ("image", "image"), ("runtime", "image"), ("cute_pin", "cute_pin"),
        ("tpu_toolchain", "tpu_toolchain"), ("torch", "torch"), ("tritonbench", "tritonbench"),
        ("linattn_pins", "linattn_pins"))}
    ENV_KEYS.update({("pretuned", "runner"): "p_runner", ("pretuned", "image"): "p_image",
                     ("pretuned", "runtime"): "p_image", ("pretuned", "torch"): "p_torch",
                     ("pretuned", "config"): "p_config"})

    def _one_step_per_series(self):
        """When two commits of one window change facts of the same series, the harness change
        (physics) wins and the environment steps of the others stay flat for that series: one
        readable move per series and night (two would leave no honest value to report)."""
        def rank(src, k):
            ch = self.ENV_KEYS.get((src, k))
            if ch is None:
                return 0
            if ch == "p_config":
                return 1
            return 2 if MECHANISM[(src, k)][0] == "hardware" else 3

        by_series: dict = {}
        for g in self.changes:
            for key, (old, new, keys) in g.series.items():
                causes: dict = {}
                for k in keys:  # one commit can carry several causes (a pin and a config)
                    causes.setdefault(MECHANISM[(g.source, k)][0], set()).add(k)
                for cause in sorted(causes):
                    by_series.setdefault((g.source, g.night, key), []).append(
                        (g, old, new, causes[cause]))
        for (src, _night, key), items in sorted(by_series.items(), key=lambda kv: repr(kv[0])):
            if len(items) < 2:
                continue
            best = min(items, key=lambda it: (min(rank(src, k) for k in it[3]), it[0].sha,
                                              sorted(it[3])))
            for item in items:
                if item is best:
                    continue
                g, old, new, keys = item
                for k in sorted(keys):
                    ch = self.ENV_KEYS.get((src, k))
                    if ch is None:
                        continue
                    for c, o_val in self._channels_of(src, key, old):
                        if c[0] == ch:
                            n_val = dict(self._channels_of(src, key, new)).get(c)
                            self.env.suppress.add((c, o_val, n_val, key[0], key[1]))

    @staticmethod
    def _channels_of(src, key, sf) -> list:
        return env_channels(src, key[0], key[1], sf)

    def _fact_commit(self, src, m, n, key, k, new) -> tuple:
        cache = self.__dict__.setdefault("_fc", {})
        ck = (src, m, n, key, k)
        if ck in cache:
            return cache[ck]
        a, b = self._window(src, m, n)
        paths = F.DASH_PATHS + (F.SETTINGS_PY,) if src == "dashboard" else F.PRE_PATHS
        found = None
        for c in self.repo.touching(a, b, paths):
            if src == "dashboard":
                f = F.dash_facts(self.repo, c.sha)
                hit = next((F.series_facts(f, j, r) for p, r, j in F.nightly_series(f)
                            if (p, r) == key), None)
            else:
                pf = F.pre_facts(self.repo, c.sha)
                hit = None if pf is None else next(
                    (F.pre_series_facts(pf, j, pk) for p, r, j, pk in F.pretuned_series(pf)
                     if (p, r) == key), None)
            if hit is not None and hit.get(k) == new:
                found = c
                break
        if found is None:
            found = self.repo.commits[self.repo.index(b)]
        cache[ck] = (found.sha, found.subject)
        return cache[ck]

    # ------------------------------------------------------------------------------------
    def pick_runaways(self) -> dict:
        """Series whose autotune search does not converge on an input or two (until a budget
        stops it): big searches on the GPU platforms, drawn per world."""
        r = rng(self.seed, "runaway")
        pool = sorted({key for s in self.sd for key, (job, sf) in s.items()
                       if job.suite == "tritonbench" and key[0] in ("h100", "b200", "mi350x")
                       and key[1] in ("flash_attention", "grouped_gemm", "int4_gemm", "gemm",
                                      "mamba2_chunk_scan", "gdn_fwd_h")})
        out = {}
        for i in r.choice(len(pool), size=min(2, len(pool)), replace=False) if pool else []:
            key = pool[int(i)]
            sf = next(s[key][1] for s in reversed(self.sd) if key in s)
            inputs = C.pick_inputs(C.KERNELS[key[1]].n_avail, sf.get("num_inputs"))
            picks = r.choice(len(inputs), size=min(3, len(inputs)), replace=False)
            out[key] = tuple(sorted(inputs[int(j)] for j in picks))
        return out

    # ------------------------------------------------------------------------------------
    def truth(self, src, n, key, sf=None, drop=()) -> dict:
        """Noise-free aggregates of a series at a night (optionally with other facts, or
        without some planted effects): what the labels are computed from."""
        e = self.sched(src, n)[key]
        sf = sf if sf is not None else self.sf_of(src, e)
        at = self.sha_index[n] if src == "dashboard" else self.repo.index(self.nights[n].p_full_sha)
        if src == "dashboard":
            meas = self.meas.dashboard(n, "truth", key[0], key[1], sf, noise=False, drop=drop, at=at)
        else:
            meas = self.meas.pretuned(n, "truth", key[0], key[1], sf, e[1].cute, noise=False,
                                      drop=drop, at=at)
        out = headline(meas)
        if meas and "shapes" in meas:
            out["n"] = len(meas["shapes"])
        elif meas and "geomean" in meas:
            out["n"] = meas["total"]
        return out

    def run_id(self, src, n) -> str:
        """The nightly run id of night n for a source (pretuned runs have their own)."""
        return self.nights[n].run_id if src == "dashboard" else self.nights[n].p_run_id

    def label(self, src, cause, kind, n, m, info, honest, culprit=None, change=None, end=None,
              note="", members_fixed=False, metrics_fixed=None) -> Label | None:
        """info: (plat, kernel) -> (truth with the event, truth without it)."""
        members, metrics, hon, logs = [], set(), {}, {"sp": [], "lat": [], "ct": []}
        for key in sorted(info):
            with_, without = info[key]
            mv = moved(with_, without)
            if not members_fixed and not set(mv) & set(HEAD):
                continue
            members.append(key)
            metrics |= set(mv)
            side = with_ if honest == "post" else without
            h = side.get("helion_speedup_geomean") or side.get("geomean")
            if h and h > 0:
                hon[f"{key[0]}/{key[1]}"] = round(h, 4)
            for tag, name in (("sp", "helion_speedup_geomean"), ("sp", "geomean"),
                              ("lat", "helion_latency_avg_ms"), ("ct", "compile_time_geomean_s")):
                if with_.get(name) and without.get(name):
                    logs[tag].append(math.log(with_[name] / without[name]))
        if not members:
            return None
        med = {t: float(np.median(v)) if v else 0.0 for t, v in logs.items()}
        if abs(med["sp"]) >= 0.02:
            direction = "improvement" if med["sp"] > 0 else "regression"
        elif abs(med["lat"]) >= 0.02:
            direction = "regression" if med["lat"] > 0 else "improvement"
        elif abs(med["ct"]) >= 0.02:
            direction = "regression" if med["ct"] > 0 else "improvement"
        else:  # nothing to read in the truth (an outage, a noisy series): the bad news side
            direction = "regression"
        if metrics_fixed is not None:
            metrics = set(metrics_fixed)
        return Label(id="", source=src, cause=cause, kind=kind, direction=direction,
                     members=tuple(members), metrics=tuple(m for m in METRICS if m in metrics),
                     first_bad_run_id=self.run_id(src, n), last_good_run_id=self.run_id(src, m),
                     end_run_id=self.run_id(src, end) if end is not None else None,
                     culprit_sha=culprit, change_sha=change, honest_speedup=hon, note=note)

    # ------------------------------------------------------------------------------------
    def natural_labels(self, mark: bool = False) -> list:
        """Labels of the real history's changes (``mark``: also reserve their series' nights,
        so planted cases stay clear of them)."""
        out = []
        for ch in self.changes:
            by_cause: dict = {}
            for k in ch.keys:
                cause, kind, side = MECHANISM[(ch.source, k)]
                if ch.source == "dashboard" and k == "tpu_toolchain" and (
                        "timing" in ch.subject.lower() or "device sync" in ch.subject.lower()):
                    cause, kind, side = "method_change", "timer", "post"
                by_cause.setdefault(cause, []).append((k, kind, side))
            for cause, items in sorted(by_cause.items()):
                keys = {k for k, _, _ in items}
                kind = min((kd for _, kd, _ in items), key=KIND_ORDER.index)
                if "suite" in keys:  # the harness itself was switched; the rest follows from it
                    kind = "harness"
                side = next(s for k, kd, s in items if kd == kind)
                info, sides = {}, set()
                prevs = set()
                for key in sorted(ch.series):
                    old, new, changed = ch.series[key]
                    mine = changed & keys
                    if not mine:
                        continue
                    cf = dict(new)
                    for k in mine:
                        if k in old:
                            cf[k] = old[k]
                        else:
                            cf.pop(k, None)
                    t_new = self.truth(ch.source, ch.night, key, new)
                    t_cf = self.truth(ch.source, ch.night, key, cf)
                    info[key] = (t_new, t_cf)
                    prevs.add(ch.prev[key])
                    sides.add(self._side(side, old, new, t_new, t_cf))
                if not info:
                    continue
                honest = "post" if sides == {"post"} else "pre" if sides == {"pre"} else "post"
                culprit = ch.sha if cause == "real" else None
                change = ch.sha if cause != "real" else None
                lab = self.label(ch.source, cause, kind, ch.night, max(prevs), info, honest,
                                 culprit=culprit, change=change,
                                 note=f"natural: {', '.join(sorted(keys))} changed by "
                                      f"{ch.sha[:8]} {ch.subject[:70]}")
                if lab:
                    out.append(lab)
                    if mark:
                        for key in lab.members:
                            self.mark(ch.source, key, ch.night - 3, ch.night + 3)
        return out

    @staticmethod
    def _side(side, old, new, t_new, t_cf) -> str:
        """Resolve a mechanism's honest side for one series (see events.py)."""
        if side in ("pre", "post"):
            return side
        if side == "graphed":
            return "post" if new.get("cudagraph") else "pre"
        if side == "more":
            return "post" if t_new.get("n", 0) >= t_cf.get("n", 0) else "pre"
        if side == "autotune":
            added = dict(new.get("autotune_env", ())).keys() - dict(old.get("autotune_env", ())).keys()
            return "pre" if "HELION_AUTOTUNE_BUDGET_SECONDS" in added else "post"
        return "post"

    # ------------------------------------------------------------------------------------
    def is_free(self, src, key, lo, hi) -> bool:
        b = self.busy.get((src,) + key, set())
        return not any(d in b for d in range(lo, hi + 1))

    def mark(self, src, key, lo, hi):
        s = self.busy.setdefault((src,) + key, set())
        s.update(range(lo, hi + 1))

    def add_effect(self, e, p: Planted, keys) -> None:
        self.model.effects.append(e)
        p.effect = len(self.model.effects) - 1
        self.planted.append(p)
        for key in keys:
            self.mark(e.source, key, e.start - 3, e.start + 3)
            if e.end is not None:
                self.mark(e.source, key, e.end - 3, e.end + 3)

    def plant(self):
        """Plant the world's events (see README: which cases every world carries)."""
        plant_all(self)

    def planted_labels(self) -> list:
        """Labels of planted effects: members by counterfactual (without the effect), or the
        fixed members of noise and outages."""
        out = []
        for p in self.planted:
            e = self.model.effects[p.effect]
            if p.cause == "none":
                continue
            n, src = e.start, p.source
            info = {}
            keys = p.members or tuple(sorted(e.targets))
            prevs = []
            for key in keys:
                if key not in self.sched(src, n):
                    continue
                if p.outage:
                    t = self.truth(src, n, key)
                    info[key] = (t, t)
                    prevs.append(n - 1)
                    continue
                info[key] = (self.truth(src, n, key, drop=()) if not e.transient else
                             self._transient_truth(src, n, key, p.effect),
                             self.truth(src, n, key, drop=(p.effect,)))
                prevs.append(n - 1)
            fixed = bool(p.members)
            lab = self.label(src, p.cause, p.kind, n, max(prevs) if prevs else n - 1, info,
                             p.honest, culprit=p.culprit, change=p.change, end=e.end, note=p.note,
                             members_fixed=fixed, metrics_fixed=p.metrics)
            if lab:
                out.append(lab)
        return out

    def _transient_truth(self, src, n, key, idx) -> dict:
        """Truth of a noise effect's night with the effect on (truths leave noise out)."""
        e = self.model.effects[idx]
        t = e.targets.get(key, {})
        base = self.truth(src, n, key, drop=(idx,))
        out = dict(base)
        h = t.get("h", 1.0) * t.get("sp", 1.0)
        for name in ("helion_speedup_geomean", "geomean"):
            if name in out:
                out[name] = out[name] / h
        if "helion_latency_avg_ms" in out:
            out["helion_latency_avg_ms"] *= t.get("h", 1.0) * t.get("lat", 1.0)
        return out

    def finish_labels(self, labels) -> list:
        """Keep what the (possibly shortened) world holds, order, and name them."""
        ids = {}
        for i in range(self.offset, self.N):
            n = self.nights[i]
            ids[n.run_id] = i
            if n.p_run_id:
                ids[n.p_run_id] = i
        kept = []
        for lab in labels:
            if lab.last_good_run_id not in ids or lab.first_bad_run_id not in ids:
                continue
            if lab.end_run_id is not None and lab.end_run_id not in ids:
                continue
            kept.append(lab)
        kept.sort(key=lambda x: (int(x.first_bad_run_id), x.source, x.cause, x.kind, x.members))
        out = []
        for i, lab in enumerate(kept):
            d = lab.__dict__.copy()
            d["id"] = f"F{self.seed}-{i + 1:02d}"
            out.append(Label(**d))
        return out

    # ------------------------------------------------------------------------------------
    def publish_all(self):
        """Artifacts per run, documents per night (dashboard and pretuned)."""
        doc_dir = self.workdir / f"bwf-docs-{self.seed}-{self.N - self.offset}"
        if doc_dir.exists():
            shutil.rmtree(doc_dir)
        doc_dir.mkdir(parents=True)
        tmp = doc_dir / "tmp"
        mods = load_builders(self.repo, tmp / "builders")
        em = Emitter(self)
        series = set()
        metas = {"dashboard": [], "pretuned": []}
        prev = {"dashboard": None, "pretuned": None}
        for n in range(self.offset, self.N):
            night = self.nights[n]
            for src in ("dashboard", "pretuned"):
                cache = tmp / f"cache-{src}"
                runs = [r for r in self.extras if r.source == src and r.night == n]
                if src == "dashboard":
                    nightly = P.Run("dashboard", night.run_id, night.full_sha, night.date, "main",
                                    True, night.full_sha, night=n)
                else:
                    if night.p_run_id is None:
                        if prev["pretuned"] is None:
                            continue
                        nightly = None
                    else:
                        nightly = P.Run("pretuned", night.p_run_id, night.p_full_sha, night.p_date,
                                        "main", True, night.p_full_sha, night=n)
                if nightly is not None:
                    runs.append(nightly)
                for run in runs:
                    arts = em.artifacts(run, n)
                    write_artifacts(cache, run.run_id, arts)
                    metas[src].append(run.meta())
                    if run is nightly:
                        series |= em.last_series
                wf_path = F.DISPATCH if src == "dashboard" else F.P_DISPATCH
                sha = night.full_sha if src == "dashboard" else (night.p_full_sha or night.full_sha)
                existing = json.loads(prev[src]) if prev[src] else None
                data = publish(mods[src], src, cache, list(metas[src]), existing,
                               self.repo.text(sha, wf_path), night.date + timedelta(hours=5), tmp)
                prev[src] = data
                (doc_dir / f"{src}-{n - self.offset:03d}.json.z").write_bytes(zlib.compress(data, 1))
        shutil.rmtree(tmp, ignore_errors=True)
        return doc_dir, sorted(series)


def build_world(seed: int, workdir: Path, nights: int | None = None) -> World:
    """Build world ``seed`` (one of SEEDS) under ``workdir``; ``nights`` keeps only the last
    nights of the window (same numbers, same events; labels that fall outside are dropped)."""
    return Builder(seed, Path(workdir), nights).build()


__all__ = ["SEEDS", "WINDOWS", "World", "build_world"]
