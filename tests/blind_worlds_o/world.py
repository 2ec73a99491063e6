"""Set O: labeled benchmark-dashboard worlds on the real Helion history (see README.md)."""
from __future__ import annotations

import bisect
import importlib.util
import json
import math
import os
import random
import shutil
import subprocess
import tempfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tests.blind_worlds.world import Label, Night
from tests.shared_data import bundle_path

from . import repo as R

WINDOW_END = {141: "2026-02-09", 142: "2026-06-15", 143: "2026-07-27"}
N_SIM = 150
WARMUP = 12  # no planted move before this many nightlies of history

SPEEDUP = "helion_speedup_geomean"
LAT = "helion_latency_avg_ms"
TRI = "triton_speedup_geomean"
TC = "torch_compile_speedup_geomean"
COMP = "compile_time_geomean_s"


def _crc(*parts) -> int:
    return zlib.crc32("|".join(str(p) for p in parts).encode())


# ------------------------------------------------------------------ series model

@dataclass
class Series:
    key: tuple
    suite: str
    rng_seed: int
    h0: float = 1.0
    t0: float = 1.0
    c0: float = 1.0
    sigma: float = 0.01
    long_shapes: list = field(default_factory=list)
    base_t: list = field(default_factory=list)
    ph: list = field(default_factory=list)
    pt: list = field(default_factory=list)
    pc: list = field(default_factory=list)
    ct: list = field(default_factory=list)
    lat_over: float = 1.0


def _shape_label(kernel: str, i: int, r: random.Random) -> str:
    m = 2 ** (8 + (i % 7))
    n = 2 ** (9 + (i * 3 + len(kernel)) % 6)
    if any(s in kernel for s in ("gemm", "attention", "bmm")):
        return f"({m}, {n}, {2 ** (9 + i % 5)})"
    return f"({m}, {n})"


def make_series(seed: int, key: tuple, suite: str, shape_names: tuple | None) -> Series:
    r = random.Random(_crc(seed, "series", *key))
    p, k = key
    s = Series(key=key, suite=suite, rng_seed=_crc(seed, "noise", *key))
    s.h0 = math.exp(r.gauss(0.05, 0.3))
    s.t0 = math.exp(r.gauss(0.0, 0.2))
    s.c0 = math.exp(r.gauss(0.12, 0.2))
    s.sigma = r.uniform(0.005, 0.028)
    if shape_names:
        s.long_shapes = list(shape_names)
    else:
        s.long_shapes = [_shape_label(k, i, r) for i in range(24)]
    n = len(s.long_shapes)
    slope = r.gauss(0.0, 0.25)
    t_min = 10 ** r.uniform(-2.3, -0.5)
    growth = r.uniform(1.04, 1.12)
    for i in range(max(n, 24)):
        s.base_t.append(t_min * growth ** i * math.exp(r.gauss(0, 0.1)))
        s.ph.append(math.exp(slope * i / 12 + r.gauss(0, 0.12)))
        s.pt.append(math.exp(r.gauss(0, 0.1)))
        s.pc.append(math.exp(r.gauss(0, 0.1)))
        s.ct.append(r.uniform(4, 60))
    s.lat_over = r.uniform(1.0, 1.08)
    return s


@dataclass
class Effect:
    start: int
    end: int | None
    members: frozenset
    f: dict  # H (helion, both timers), Hs (helion, speedup timer), B, T, C, L (latency only), ALL, SIG, CT
    tag: str = ""

    def on(self, n: int) -> bool:
        return n >= self.start and (self.end is None or n < self.end)


def default_n_inputs(seed_key: str, mx: int) -> int:
    return min(mx, 4 + _crc(seed_key) % 9)


# ------------------------------------------------------------------ builders (imported from the checkout)

def _import_builder(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.RETENTION_DAYS = 36500  # the window is judged as of each nightly, not as of today
    return mod


# ------------------------------------------------------------------ the world

_CLONE_CACHE: dict[str, Path] = {}


def _clone(dest: Path) -> None:
    """git clone the bundle (branch main). One pristine clone per process is kept and cloned locally,
    which is the same history at a fraction of the cost; origin still names the bundle."""
    bundle = str(bundle_path())
    src = _CLONE_CACHE.get(bundle)
    if src is None or not (src / ".git").exists():
        src = Path(tempfile.mkdtemp(prefix="bwo_bundle_")) / "helion"
        subprocess.run(["git", "clone", "-q", "-b", "main", bundle, str(src)], check=True)
        _CLONE_CACHE[bundle] = src
    subprocess.run(["git", "clone", "-q", "--local", "-b", "main", str(src), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "remote", "set-url", "origin", bundle], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", "main"], check=True)

class World:
    def __init__(self, seed: int, workdir: Path, nights: int = N_SIM):
        self.seed = seed
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.repo = self.workdir / "helion"
        if self.repo.exists():
            shutil.rmtree(self.repo)
        _clone(self.repo)
        self.git = R.Git(self.repo)
        self.rng = random.Random(seed * 7919 + 3)
        self._tmp = Path(tempfile.mkdtemp(prefix="bwo_", dir=self.workdir))
        try:
            self._build(nights)
        finally:
            self.git.close()

    # ---------------------------------------------------------------- history
    def _timeline(self):
        end = datetime.fromisoformat(WINDOW_END[self.seed]).replace(tzinfo=timezone.utc)
        since = (end - timedelta(days=N_SIM + 40)).strftime("%Y-%m-%d")
        self.commits = R.first_parent(self.git, since)
        self.by_sha = {c.sha: c for c in self.commits}
        cts = [c.ct for c in self.commits]
        self._cts = cts
        self.pos = {c.sha: i for i, c in enumerate(self.commits)}
        r = random.Random(_crc(self.seed, "times"))
        self.sim = []  # dicts: date, sha, cfg, p_date, p_sha, p_cfg
        for i in range(N_SIM):
            day = end - timedelta(days=N_SIM - 1 - i)
            guess = day.replace(hour=8, minute=0)
            head = self.commits[bisect.bisect_right(cts, guess.timestamp()) - 1]
            cfg = R.nightly_config(self.git, head.sha)
            cron = (cfg or {}).get("cron") or "0 8 * * *"
            mm, hh = (int(x) for x in cron.split()[:2])
            date = day.replace(hour=hh, minute=mm) + timedelta(minutes=r.randint(4, 38), seconds=r.randint(0, 59))
            head = self.commits[bisect.bisect_right(cts, date.timestamp()) - 1]
            cfg = R.nightly_config(self.git, head.sha)
            item = {"date": date, "sha": head.sha, "cfg": cfg, "p_date": None, "p_sha": None, "p_cfg": None}
            pguess = day.replace(hour=10, minute=0)
            phead = self.commits[bisect.bisect_right(cts, pguess.timestamp()) - 1]
            pcfg = R.pretuned_config(self.git, phead.sha) if self.git.text(phead.sha, R.P_NIGHTLY) else None
            if pcfg:
                pmm, phh = (int(x) for x in pcfg["cron"].split()[:2])
                pdate = day.replace(hour=phh, minute=pmm) + timedelta(minutes=r.randint(3, 30), seconds=r.randint(0, 59))
                phead = self.commits[bisect.bisect_right(cts, pdate.timestamp()) - 1]
                pcfg = R.pretuned_config(self.git, phead.sha)
                if pcfg:
                    item.update(p_date=pdate, p_sha=phead.sha, p_cfg=pcfg)
            self.sim.append(item)
        base = 16_000_000_000
        t0 = datetime(2025, 6, 1, tzinfo=timezone.utc).timestamp()
        for i, it in enumerate(self.sim):
            it["run_id"] = str(base + int((it["date"].timestamp() - t0) * 450) + r.randint(0, 999))
            if it["p_date"]:
                it["p_run_id"] = str(base + int((it["p_date"].timestamp() - t0) * 450) + r.randint(0, 999))
            else:
                it["p_run_id"] = None

    def _window(self, a: int, b: int, key: str = "sha") -> list:
        """First-parent commits after sim night a's sha up to night b's sha."""
        lo, hi = self.pos[self.sim[a][key]], self.pos[self.sim[b][key]]
        return self.commits[lo + 1: hi + 1]

    def _night_of_commit(self, sha: str, key: str = "sha") -> int | None:
        p = self.pos[sha]
        for i, it in enumerate(self.sim):
            if it[key] and self.pos[it[key]] >= p:
                return i
        return None

    # ---------------------------------------------------------------- events
    def _series_at(self, n: int) -> dict:
        return self.sim[n]["cfg"]["series"] if self.sim[n]["cfg"] else {}

    def _label(self, n: int, cause: str, kind: str, members, metrics, culprit=None, change=None, end=None,
               direction="regression", honest_kind="post", note="", source="dashboard", eff=None):
        members = tuple(sorted(set(members)))
        if not members:
            return
        self.raw_labels.append(dict(n=n, cause=cause, kind=kind, members=members, metrics=tuple(metrics),
                                    culprit=culprit, change=change, end=end, direction=direction,
                                    honest_kind=honest_kind, note=note, source=source, eff=eff))

    def _find_change_commit(self, n: int, files: tuple, test, key: str = "sha") -> str | None:
        cands = [c for c in self._window(n - 1, n, key) if any(f in files for f in c.files)]
        for c in cands:
            try:
                if test(c.sha):
                    return c.sha
            except Exception:  # noqa: BLE001
                continue
        return cands[-1].sha if cands else None

    def _plan_method_and_hardware(self):
        r = random.Random(_crc(self.seed, "method"))
        files_all = (R.BENCH, R.DISPATCH, R.NIGHTLY, R.RUNPY, R.RUN_LINATTN, R.RUN_TPU, R.TPU_WF, R.TPU_BRIDGE_WF)
        for n in range(1, N_SIM):
            prev, cur = self._series_at(n - 1), self._series_at(n)
            if not prev or not cur:
                continue
            groups: dict[tuple, list] = {}
            for key in sorted(set(prev) & set(cur)):
                a, b = prev[key], cur[key]
                comps = []
                if a.get("cudagraph") != b.get("cudagraph"):
                    comps.append(("cudagraph", b.get("cudagraph")))
                ma, mb = a.get("method") or (), b.get("method") or ()
                if a["suite"] == "tritonbench" and b["suite"] == "tritonbench":
                    if ma[0] != mb[0]:
                        comps.append(("timer", mb[0]))
                    sa = "--input-sample-mode" in (ma[1] or ())
                    sb = "--input-sample-mode" in (mb[1] or ())
                    if (a.get("n_inputs"), a.get("max_inputs"), sa) != (b.get("n_inputs"), b.get("max_inputs"), sb):
                        comps.append(("shapes", (b.get("n_inputs"), b.get("max_inputs"), sb)))
                    if a.get("baseline") and b.get("baseline") and a["baseline"] != b["baseline"]:
                        comps.append(("baseline", b["baseline"]))
                    if a.get("torch") != b.get("torch"):
                        comps.append(("pin", b.get("torch")))
                    if ma[2] != mb[2]:
                        comps.append(("harness", mb[2]))
                    if ma[3:] != mb[3:]:
                        comps.append(("autotune", mb[3:]))
                else:
                    if a.get("shapes") != b.get("shapes"):
                        comps.append(("shapes", b.get("shapes")))
                    if ma != mb:
                        comps.append(("autotune", mb))
                if a.get("env") != b.get("env"):
                    ea, eb = a["env"], b["env"]
                    comps.append(("runner" if ea[0] != eb[0] else "driver/toolchain", eb))
                if comps:
                    prio = ["runner", "driver/toolchain", "cudagraph", "shapes", "baseline", "pin", "timer",
                            "autotune", "harness"]
                    c = min(comps, key=lambda x: prio.index(x[0]))
                    groups.setdefault((c[0], key[0] if c[0] in ("runner", "driver/toolchain") else ""),
                                      []).append(key)
            for (comp, val), keys in sorted(groups.items()):
                self._method_event(n, comp, val, keys, r, files_all)

    def _method_event(self, n, comp, val, keys, r, files_all):
        # which real commit made it: the first one in the window after which the parsed fact holds
        k0 = keys[0]
        want = self._series_at(n)[k0]

        def test(sha):
            cfg = R.nightly_config(self.git, sha)
            s = (cfg or {}).get("series", {}).get(k0)
            if s is None:
                return False
            if comp == "cudagraph":
                return s["cudagraph"] == want["cudagraph"]
            if comp in ("runner", "driver/toolchain"):
                return s["env"] == want["env"]
            if comp == "pin":
                return s.get("torch") == want.get("torch")
            if comp == "baseline":
                return s.get("baseline") == want.get("baseline")
            if comp == "shapes":
                return (s.get("n_inputs"), s.get("max_inputs"), s.get("shapes")) == \
                    (want.get("n_inputs"), want.get("max_inputs"), want.get("shapes")) and s["method"][1:2] == want["method"][1:2]
            return s.get("method") == want.get("method")

        sha = self._find_change_commit(n, files_all, test)
        if sha is None:
            return
        subj = self.by_sha[sha].subject
        if n < WARMUP:
            return
        fix = any(w in subj.lower() for w in ("fix", "correct", "clear l2"))
        if comp == "cudagraph":
            on = want["cudagraph"]
            fh = r.uniform(1.18, 1.5)
            fb = r.uniform(1.0, 1.08)
            f = {"Hs": fh if not on else 1 / fh, "B": fb if not on else 1 / fb,
                 "T": r.uniform(1.05, 1.3) ** (1 if not on else -1), "C": r.uniform(1.05, 1.3) ** (1 if not on else -1)}
            self._add_method(n, "method_change", "cudagraph", keys, f, sha,
                             (SPEEDUP, TRI, TC), "pre" if not on else "post",
                             "speedup timer loses/gains CUDA graphs", "regression" if not on else "improvement")
        elif comp == "timer":
            f = {"L": r.choice([r.uniform(0.7, 0.88), r.uniform(1.12, 1.35)])}
            self._add_method(n, "method_change", "timer", keys, f, sha, (LAT,), "pre", "latency timer changed",
                             "improvement" if f["L"] < 1 else "regression")
        elif comp == "shapes":
            g = r.choice([r.uniform(0.8, 0.91), r.uniform(1.09, 1.22)])
            f = {"Hs": 1 / g, "L": r.uniform(0.5, 1.9), "CT": r.uniform(0.6, 1.5)}
            self._add_method(n, "method_change", "shapes", keys, f, sha, (SPEEDUP, LAT), "post",
                             "input shapes changed", "improvement" if g > 1 else "regression")
        elif comp in ("baseline", "pin"):
            moved = [k for k in keys if r.random() < (1.0 if comp == "baseline" else 0.45)]
            if not moved:
                return
            g = r.choice([r.uniform(0.8, 0.9), r.uniform(1.1, 1.25)])
            f = {"B": g, "C": r.uniform(0.9, 1.1) * (g if comp == "pin" else 1.0)}
            self._add_method(n, "method_change", "baseline", moved, f, sha, (SPEEDUP, TRI, TC), "post",
                             "baseline timing changed", "improvement" if g > 1 else "regression")
        elif comp in ("autotune", "harness"):
            if r.random() < 0.2:
                return  # the change moved nothing
            moved = [k for k in keys if r.random() < 0.35] or [keys[r.randrange(len(keys))]]
            g = r.choice([r.uniform(1.1, 1.3), r.uniform(0.8, 0.9)]) if comp == "harness" else r.uniform(1.1, 1.35)
            f = {"H": g}
            self._add_method(n, "method_change", comp, moved, f, sha, (SPEEDUP, LAT), "post" if fix else "pre",
                             f"{comp} change moved Helion's timings", "regression" if g > 1 else "improvement")
        elif comp in ("runner", "driver/toolchain"):
            if r.random() < 0.15:
                return
            base = r.choice([r.uniform(0.82, 0.9), r.uniform(1.1, 1.22)])
            per = {}
            for k in keys:
                d = r.uniform(0.93, 1.07) if comp == "runner" else r.choice([1.0, r.uniform(0.88, 1.12)])
                per[k] = {"ALL": base, "H": d}
            self._add_method(n, "hardware", comp, keys, per, sha, (LAT, SPEEDUP), "pre",
                             f"{comp} change on the platform", "regression" if base > 1 else "improvement",
                             per_member=True)

    def _add_method(self, n, cause, kind, keys, f, sha, metrics, honest, note, direction, per_member=False,
                    end=None, source="dashboard"):
        keys = sorted(keys)
        effs = []
        if per_member:
            for k in keys:
                effs.append(Effect(n, end, frozenset([k]), f[k], tag=f"{kind}@{n}"))
        else:
            effs.append(Effect(n, end, frozenset(keys), f, tag=f"{kind}@{n}"))
        self.effects += effs
        self._label(n, cause, kind, keys, metrics, change=sha, end=end, direction=direction, honest_kind=honest,
                    note=note, source=source, eff=effs)

    # real code / config moves on real commits
    def _slice(self, c: R.Commit) -> str | None:
        s = c.subject.lower()
        fs = [f for f in c.files if f.startswith("helion/")]
        if not fs:
            return None
        other = ("metal", "mps", "xpu", "intel", "docs", "doc]", "test]", "tests]", "lint", "typing", "pyrefly")
        if any(t in s for t in ("pyrefly", "typo", "lint", "docstring", "type annotation", "type hint", "mypy",
                                "rename", "error message", "message", "logging", "log level", "warning",
                                "refactor", "cleanup", "clean up", "comment", "readme", "docs")):
            return None
        if any(f"[{t}" in s for t in other) or all(any(t in f for t in ("metal", "xpu", "mps")) for f in fs):
            return None
        if "[cute" in s or "[cutedsl" in s or any("/cute/" in f for f in fs):
            return "cute"
        if "pallas" in s or "[tpu" in s or "pallas-tpu" in s or any("pallas" in f for f in fs):
            return "tpu"
        if "[rocm" in s or "amd" in s or "gfx9" in s or any("rocm" in f or "amd" in f for f in fs):
            return "amd"
        if any(f.startswith("helion/autotuner/") for f in fs) or "autotun" in s or "heuristic" in s:
            return "autotune"
        if any(f.startswith(("helion/_compiler/", "helion/language/", "helion/runtime/")) for f in fs):
            return "code"
        return None

    def _plan_real(self):
        r = random.Random(_crc(self.seed, "real"))
        busy: dict[tuple, list] = {}
        for l in self.raw_labels:
            for m in l["members"]:
                busy.setdefault(m, []).append(l["n"])
        cands = []
        for n in range(WARMUP, N_SIM):
            for c in self._window(n - 1, n):
                sl = self._slice(c)
                if sl and not c.subject.startswith("Revert"):
                    cands.append((n, c, sl))
        # reverts whose original is in the window: an episode that ends
        reverts = []
        for n in range(WARMUP + 1, N_SIM):
            for c in self._window(n - 1, n):
                if c.subject.startswith('Revert "'):
                    orig_subj = c.subject[len('Revert "'):].rsplit('"', 1)[0]
                    for (m, oc, sl) in cands:
                        if m < n and m >= WARMUP and oc.subject == orig_subj:
                            reverts.append((m, oc, sl, n, c))
        other_n = {l["n"] for l in self.raw_labels}
        done = []

        def attempt(n, c, sl, end):
            if any(abs(n - m) <= 1 for m in other_n) or any(abs(n - m) < 4 for m in done):
                return False
            k = len(self.raw_labels)
            self._real_event(n, c, sl, end, r, busy)
            if len(self.raw_labels) > k:
                done.append(n)
                return True
            return False

        for rv in reverts:  # one episode that a revert ends
            if attempt(rv[0], rv[1], rv[2], rv[3]):
                break
        last = [x for x in cands if x[0] >= N_SIM - 3]
        r.shuffle(last)
        for x in last:  # one in the last three nightlies
            if attempt(x[0], x[1], x[2], None):
                break
        pool = [x for x in cands if WARMUP + 3 <= x[0] < N_SIM - 3]
        r.shuffle(pool)
        pref = {"cute": 0, "tpu": 0, "amd": 0, "autotune": 0, "code": 0}
        for x in pool:
            if len(done) >= 8:
                break
            if pref[x[2]] >= 2:
                continue
            if attempt(x[0], x[1], x[2], None):
                pref[x[2]] += 1

    def _real_event(self, n, c, sl, end, r, busy):
        cur, prev = self._series_at(n), self._series_at(n - 1)
        both = sorted(set(cur) & set(prev))
        plats = {k[0] for k in both}
        gpu = [p for p in plats if p in ("h100", "b200", "mi325x", "mi350x", "mi300x")]
        tb = [k for k in both if cur[k]["suite"] == "tritonbench"]
        if sl == "cute":
            pool = [k for k in both if k[0].endswith("_cute")]
        elif sl == "tpu":
            pool = [k for k in both if k[0] == "tpu"]
        elif sl == "amd":
            pool = [k for k in tb if k[0].startswith("mi")]
        else:
            pool = [k for k in tb if k[0] in gpu]
        if not pool:
            if sl in ("cute", "tpu", "amd"):
                return
            pool = tb
        if not pool:
            return
        kernels = sorted({k[1] for k in pool})
        nk = 1 if r.random() < 0.45 else r.randint(2, min(4, len(kernels)))
        pick = r.sample(kernels, min(nk, len(kernels)))
        pl = sorted({k[0] for k in pool})
        if sl in ("code", "autotune") and len(pl) > 1 and r.random() < 0.5:
            s = c.subject.lower()
            hint = [p for p in pl if (p == "h100" and ("sm90" in s or "hopper" in s)) or
                    (p == "b200" and ("sm100" in s or "blackwell" in s))]
            pl = hint or [r.choice(pl)]
        members = [k for k in pool if k[1] in pick and k[0] in pl]
        members = [m for m in members if not any(abs(x - n) <= 2 for x in busy.get(m, []))]
        if not members:
            return
        up = r.random() < 0.35
        g = r.uniform(0.72, 0.88) if up else r.uniform(1.12, 1.45)
        effs = []
        for m in members:
            gm = g * r.uniform(0.97, 1.03)
            effs.append(Effect(n, end, frozenset([m]), {"H": gm}, tag=f"real@{n}"))
        self.effects += effs
        kind = "heuristics/config" if sl == "autotune" else "code"
        self._label(n, "real", kind, members, (SPEEDUP, LAT), culprit=c.sha, end=end,
                    direction="improvement" if up else "regression", honest_kind="post",
                    note=f"{kind} change in Helion", eff=effs)
        for m in members:
            busy.setdefault(m, []).append(n)

    def _plan_episodes(self):
        r = random.Random(_crc(self.seed, "episodes"))
        busy_n = {l["n"] for l in self.raw_labels}
        # thermal: one or two platforms run hot for a few nights, then recover
        hot = set()
        for _ in range(2):
            for _try in range(20):
                s = r.randint(WARMUP + 5, N_SIM - 12)
                length = r.randint(3, 7)
                cur = self._series_at(s)
                plats = sorted({k[0] for k in cur if cur[k]["suite"] != "linattn"})
                p = r.choice(plats)
                if p in hot or any(s - 3 <= x <= s + length + 2 for x in busy_n):
                    continue
                hot.add(p)
                members = sorted(k for k in set(cur) & set(self._series_at(s - 1)) if k[0] == p)
                if len(members) < 3:
                    continue
                f_all = r.uniform(1.12, 1.3)
                effs = [Effect(s, s + length, frozenset(members), {"ALL": f_all, "H": r.uniform(1.0, 1.06)}, tag="thermal")]
                self.effects += effs
                self._label(s, "hardware", "thermal", members, (LAT,), end=s + length, honest_kind="pre",
                            note="runner ran hot for a few nights", eff=effs)
                busy_n.update(range(s, s + length + 1))
                break
        # outage: a platform sends nothing for a few nights
        for _try in range(20):
            s = r.randint(WARMUP + 5, N_SIM - 8)
            length = r.randint(2, 4)
            cur = self._series_at(s)
            plats = sorted({k[0] for k in cur})
            p = r.choice(plats)
            if any(abs(x - s) <= 2 for x in busy_n) or any(l["n"] in range(s, s + length + 1) and
                                                           any(m[0] == p for m in l["members"]) for l in self.raw_labels):
                continue
            members = sorted(k for k in set(cur) & set(self._series_at(s - 1)) if k[0] == p)
            if len(members) < 3:
                continue
            self.outages.append((p, s, s + length))
            self._label(s, "hardware", "outage", members, (SPEEDUP,), end=s + length, honest_kind="none",
                        direction="missing", note="platform sent no results")
            busy_n.update(range(s, s + length + 1))
            break
        # noise: a series that turns noisy for good, and single-night stray values
        def near(k, s_, span=10):
            return any(k in l["members"] and abs(l["n"] - s_) <= span for l in self.raw_labels)

        used = set()
        for _ in range(2):
            for _try in range(30):
                s = r.randint(WARMUP + 10, N_SIM - 20)
                cur = self._series_at(s)
                ks = sorted(k for k in set(cur) & set(self._series_at(s - 1)) if k not in used and not near(k, s, 20))
                if not ks:
                    continue
                k = r.choice(ks)
                self.effects.append(Effect(s, None, frozenset([k]), {"SIG": r.uniform(4.0, 6.5)}, tag="scatter"))
                self._label(s, "noise", "scatter", [k], (SPEEDUP, LAT), honest_kind="none", direction="noise",
                            note="series became noisy")
                used.add(k)
                break
        for _ in range(3):
            for _try in range(30):
                s = r.randint(WARMUP + 5, N_SIM - 4)
                cur = self._series_at(s)
                ks = sorted(k for k in set(cur) & set(self._series_at(s - 1)) & set(self._series_at(s + 1))
                            if k not in used and not near(k, s, 4))
                if not ks:
                    continue
                k = r.choice(ks)
                g = r.choice([r.uniform(1.28, 1.5), r.uniform(0.7, 0.78)])
                self.effects.append(Effect(s, s + 1, frozenset([k]), {"Hs": g}, tag="outlier"))
                self._label(s, "noise", "outlier", [k], (SPEEDUP,), end=None, honest_kind="none", direction="noise",
                            note="one stray night")
                used.add(k)
                break

    # ---------------------------------------------------------------- pretuned
    def _plan_pretuned(self):
        r = random.Random(_crc(self.seed, "pretuned"))
        pn = [i for i, it in enumerate(self.sim) if it["p_cfg"]]
        if not pn:
            return
        first = pn[0]
        for n in pn[1:]:
            if not self.sim[n - 1]["p_cfg"]:
                continue
            prev, cur = self.sim[n - 1]["p_cfg"]["series"], self.sim[n]["p_cfg"]["series"]
            early = n - first < 6
            groups = {}
            for key in sorted(set(prev) & set(cur)):
                a, b = prev[key], cur[key]
                if a["baselines"] != b["baselines"]:
                    groups.setdefault(("baseline", str(b["baselines"])), []).append(key)
                if a["cudagraph"] != b["cudagraph"]:
                    groups.setdefault(("cudagraph", str(b["cudagraph"])), []).append(key)
                if a["timer"] != b["timer"]:
                    groups.setdefault(("timer", str(b["timer"])), []).append(key)
                if a["env"] != b["env"]:
                    groups.setdefault(("runner" if a["env"][0] != b["env"][0] else "driver/toolchain", str(b["env"])), []).append(key)
                if a["config"] != b["config"]:
                    groups.setdefault(("config", ""), []).append(key)
            for (comp, _v), keys in sorted(groups.items()):
                files = [c for c in self._window(n - 1, n, "p_sha")]
                if comp == "config":
                    for key in keys:
                        p, k = key
                        path_part = f"pretuned_kernels/{k}/_helion_aot_{k}_cuda_{prev[key]['compute']}"
                        cs = [c for c in files if any(f.startswith(path_part) for f in c.files)]
                        if not cs or early:
                            continue
                        g = r.choice([r.uniform(0.72, 0.88), r.uniform(1.12, 1.4)])
                        e = Effect(n, None, frozenset([key]), {"H": g}, tag="pconfig")
                        self.p_effects.append(e)
                        self._label(n, "real", "heuristics/config", [key], ("geomean",), culprit=cs[-1].sha,
                                    source="pretuned", direction="regression" if g > 1 else "improvement",
                                    note="checked-in config regenerated", eff=[e])
                    continue
                if early:
                    if comp == "baseline":
                        self.p_quiet_baselines.add(n)
                    continue
                pref = {"baseline": ("pretuned_kernels/",), "cudagraph": ("pretuned_kernels/",),
                        "timer": (R.P_BENCH,), "runner": (".github/",), "driver/toolchain": (".github/",)}[comp]
                cs = [c for c in files if any(f.startswith(pref) for f in c.files)]
                if not cs:
                    continue
                if comp in ("runner", "driver/toolchain"):
                    g = r.uniform(1.1, 1.2)
                    e = Effect(n, None, frozenset(keys), {"ALL": g, "H": r.uniform(0.95, 1.05)}, tag="p_hw")
                    self.p_effects.append(e)
                    self._label(n, "hardware", comp, keys, ("geomean",), change=cs[0].sha, source="pretuned",
                                honest_kind="pre", note="pretuned runner changed", eff=[e])
                    continue
                g = r.choice([r.uniform(0.8, 0.9), r.uniform(1.1, 1.25)])
                e = Effect(n, None, frozenset(keys), {"Hs": g}, tag=f"p_{comp}")
                self.p_effects.append(e)
                self._label(n, "method_change", comp, keys, ("geomean",), change=cs[0].sha, source="pretuned",
                            honest_kind="post" if comp == "timer" else "pre", note=f"pretuned {comp} changed",
                            direction="regression" if g > 1 else "improvement", eff=[e])
        # a real Helion change that reaches the pretuned kernels, late in the window
        used = {m for l in self.raw_labels if l["source"] == "pretuned" for m in l["members"]}
        for n in pn[::-1]:
            if n - first < 8 or not self.sim[n - 1]["p_cfg"]:
                continue
            cs = [c for c in self._window(n - 1, n, "p_sha") if self._slice(c) in ("code", "autotune", "cute")]
            if not cs:
                continue
            c = cs[0]
            sl = self._slice(c)
            cur = self.sim[n]["p_cfg"]["series"]
            pool = sorted(k for k in set(cur) & set(self.sim[n - 1]["p_cfg"]["series"]) if k not in used
                          and (sl != "cute" or "cute" in k[1]))
            if not pool:
                continue
            members = r.sample(pool, min(len(pool), r.randint(1, 3)))
            g = r.uniform(1.15, 1.4)
            effs = [Effect(n, None, frozenset([m]), {"H": g * r.uniform(0.97, 1.03)}, tag="p_real") for m in members]
            self.p_effects += effs
            self._label(n, "real", "heuristics/config" if sl == "autotune" else "code", members, ("geomean",),
                        culprit=c.sha, source="pretuned", note="Helion change reaches pretuned kernels", eff=effs)
            used.update(members)
            break
        # a stray night and a short hot spell on the pretuned runners
        cand = [n for n in pn if n - first >= 8 and n + 1 < N_SIM and self.sim[n + 1]["p_cfg"]]
        if cand:
            n = r.choice(cand)
            ks = sorted(k for k in self.sim[n]["p_cfg"]["series"] if k not in used)
            if ks:
                k = r.choice(ks)
                self.p_effects.append(Effect(n, n + 1, frozenset([k]), {"Hs": r.uniform(1.3, 1.5)}, tag="p_outlier"))
                self._label(n, "noise", "outlier", [k], ("geomean",), source="pretuned", honest_kind="none",
                            direction="noise", note="one stray night")

    # ---------------------------------------------------------------- values
    def _factors(self, key, n, effects, exclude=None):
        f = {"H": 1.0, "Hs": 1.0, "B": 1.0, "T": 1.0, "C": 1.0, "L": 1.0, "ALL": 1.0, "SIG": 1.0, "CT": 1.0}
        if exclude is None and effects is self.effects:
            if getattr(self, "_eff_index_n", None) != len(effects):
                self._eff_index = {}
                for e in effects:
                    for m in e.members:
                        self._eff_index.setdefault(m, []).append(e)
                self._eff_index_n = len(effects)
            effects = self._eff_index.get(key, ())
        for e in effects:
            if e.on(n) and key in e.members and (exclude is None or e not in exclude):
                for k, v in e.f.items():
                    f[k] *= v
        return f

    def _shapes(self, s: Series, spec: dict) -> list[int]:
        if spec.get("shapes"):
            return list(range(len(spec["shapes"])))
        n = spec.get("n_inputs") or default_n_inputs(f"{s.key[1]}", spec.get("max_inputs") or 20)
        n = min(n, len(s.long_shapes))
        if spec.get("suite") == "tritonbench" and "--input-sample-mode" in ((spec.get("method") or (None, ()))[1] or ()):
            step = max(1, len(s.long_shapes) // n)
            return list(range(0, step * n, step))[:n]
        return list(range(n))

    def clean_speedup(self, key, n, exclude=None) -> float | None:
        spec = self._series_at(n).get(key) or self._series_at(n - 1).get(key)
        if spec is None:
            return None
        s = self._get_series(key, spec)
        f = self._factors(key, n, self.effects, exclude)
        vals = []
        for i in self._shapes(s, spec):
            if spec["suite"] == "linattn":
                vals.append(s.h0 * s.ph[i] / (f["H"] * f["Hs"]) * f["B"])
            else:
                vals.append(s.h0 * s.ph[i] * f["B"] / (f["H"] * f["Hs"]))
        return round(math.exp(sum(math.log(v) for v in vals) / len(vals)), 4) if vals else None

    def _get_series(self, key, spec) -> Series:
        if key not in self.series:
            self.series[key] = make_series(self.seed, key, spec["suite"], spec.get("shapes"))
        return self.series[key]

    def _simulate_night(self, n: int, rng: np.random.Generator) -> dict:
        """{artifact dir name: records} for nightly n."""
        cfg = self.sim[n]["cfg"]
        out: dict[str, list] = {}
        down = {p for (p, a, b) in self.outages if a <= n < b}
        plat_f = {p: math.exp(rng.normal(0, 0.008)) for p in sorted(cfg["platforms"])}
        by_art: dict[tuple, list] = {}
        shard_fail = None
        if rng.random() < 0.04:
            ps = sorted(cfg["platforms"])
            shard_fail = (ps[int(rng.integers(len(ps)))], int(rng.integers(2)))
        for key in sorted(cfg["series"]):
            spec = cfg["series"][key]
            p, k = key
            if p in down:
                continue
            if rng.random() < 0.003:  # the kernel's job died: no row tonight
                continue
            shard = _crc(k) % 2
            if shard_fail and shard_fail == (p, shard) and spec["suite"] == "tritonbench":
                continue
            s = self._get_series(key, spec)
            f = self._factors(key, n, self.effects)
            idx = self._shapes(s, spec)
            m = len(idx)
            sig = s.sigma * f["SIG"]
            g = plat_f[p] * f["ALL"]
            bt = np.array([s.base_t[i] for i in idx])
            ph = np.array([s.ph[i] for i in idx])

            noise_m = np.exp(rng.normal(0, sig, (5, m)))
            out_mask = rng.random((5, m)) < 0.01
            if out_mask.any():
                noise_m[out_mask] *= rng.uniform(1.15, 1.2, int(out_mask.sum()))
            it_noise = iter(noise_m)

            def noise():
                return next(it_noise)

            B = bt * g * f["B"] * noise()
            H = bt / (s.h0 * ph) * g * f["H"] * f["Hs"] * noise()
            helion_sp = B / H
            lat = bt / (s.h0 * ph) * g * f["H"] * f["L"] * s.lat_over * noise()
            acc = np.ones(m)
            fail = rng.random(m) < 0.002
            helion_sp[fail] = 0.0
            lat[fail] = 0.0
            acc[fail] = 0.0
            names = [s.long_shapes[i] if i < len(s.long_shapes) else f"shape{i}" for i in idx]
            metrics = {"helion_speedup": helion_sp, "helion_accuracy": acc, "helion_latency_ms": lat}
            if spec["suite"] == "linattn":
                lat = H.copy()
                lat[fail] = 0.0
                metrics["helion_latency_ms"] = lat
            else:
                T = bt / (s.t0 * np.array([s.pt[i] for i in idx])) * g * f["T"] * noise()
                C = bt / (s.c0 * np.array([s.pc[i] for i in idx])) * g * f["C"] * noise()
                if spec["suite"] != "tpu":
                    metrics["triton_speedup"] = B / T
                metrics["torch_compile_speedup"] = B / C
                metrics["helion_compile_time_s"] = np.array([s.ct[i] for i in idx]) * f["CT"] * \
                    np.exp(rng.normal(0, 0.05, m))
            alias = "tpu" if p == "tpu" else p
            art = (alias, spec["suite"], shard if spec["suite"] != "tpu" else 0)
            recs = by_art.setdefault(art, [])
            for mname, vals in metrics.items():
                recs.append({"model": {"name": k}, "metric": {"name": mname,
                             "benchmark_values": np.round(vals, 6).tolist()}, "shape": names})
        for (alias, suite, shard), recs in sorted(by_art.items()):
            plat = self.sim[n]["cfg"]["platforms"][alias]
            extra = {"device": plat["device"]}
            if alias.endswith("_cute"):
                extra["backend"] = "cute"
                extra["device"] = R.DEVICE["b200"]
            elif alias == "tpu":
                extra["backend"] = "pallas"
            else:
                extra["backend"] = "triton"
            if suite == "linattn":
                extra["baseline_label"] = "FLA"
            kernels = sorted({r_["model"]["name"] for r_ in recs})
            name = f"benchmark-results-{alias}-{'-'.join([suite, str(shard)])}"
            for r_ in recs:
                r_["benchmark"] = {"name": "Helion Benchmark", "extra_info": extra}
            out[name] = [{"benchmark": r_["benchmark"], "model": r_["model"], "metric": r_["metric"],
                          "shape": r_["shape"]} for r_ in recs]
            del kernels
        return out

    def _simulate_pretuned(self, n: int, rng: np.random.Generator) -> dict:
        cfg = self.sim[n]["p_cfg"]
        out: dict[str, list] = {}
        plat_f = {p: math.exp(rng.normal(0, 0.008)) for p in ("h100", "b200")}
        for key in sorted(cfg["series"]):
            spec = cfg["series"][key]
            p, k = key
            r = random.Random(_crc(self.seed, "pt", p, k))
            nshape = r.randint(4, 10)
            h0 = math.exp(r.gauss(0.15, 0.3))
            sig = r.uniform(0.005, 0.02)
            bnames = list(spec["baselines"]) or ["torch"]
            f = self._factors(key, n, self.p_effects)
            if rng.random() < 0.006:
                rec = {"kernel": k, "device": R.DEVICE[p], "compute_capability": spec["compute"],
                       "error": "RuntimeError: CUDA error: an illegal memory access was encountered"}
                out.setdefault(p, []).append(rec)
                continue
            bt = np.array([10 ** r.uniform(-2.5, -0.5) * 1.4 ** i for i in range(nshape)])
            ph = np.array([math.exp(r.gauss(0, 0.12)) for _ in range(nshape)])
            g = plat_f[p] * f["ALL"]
            H = bt / (h0 * ph) * g * f["H"] * f["Hs"] * np.exp(rng.normal(0, sig * f["SIG"], nshape))
            per = {}
            for j, bname in enumerate(bnames):
                rb = random.Random(_crc(self.seed, "ptb", p, k, bname))
                slow = 1.0 if j == 0 else rb.uniform(1.02, 1.6)
                if n in self.p_quiet_baselines or j > 0:
                    slow = max(slow, 1.02)
                bb = bt * slow * np.array([math.exp(rb.gauss(0, 0.08)) for _ in range(nshape)])
                per[bname] = bb * g * f["B"] * np.exp(rng.normal(0, sig, nshape))
            fastest = np.minimum.reduce([per[b] for b in bnames])
            sp = fastest / H
            rec = {"kernel": k, "device": R.DEVICE[p], "compute_capability": spec["compute"],
                   "cudagraph": spec["cudagraph"], "helion_wins": int((sp > 1).sum()), "total": nshape,
                   "geomean": float(np.exp(np.log(sp).mean())), "best_speedup": float(sp.max())}
            if len(bnames) > 1:
                rec["baselines"] = {b: {"wins": int((per[b] / H > 1).sum()), "total": nshape,
                                        "geomean": round(float(np.exp(np.log(per[b] / H).mean())), 4),
                                        "best_speedup": round(float((per[b] / H).max()), 4)} for b in bnames}
            out.setdefault(p, []).append(rec)
        return {f"pretuned-results-{p}": recs for p, recs in out.items()}

    def _clean_pretuned(self, key, n, exclude=None):
        spec = self.sim[n]["p_cfg"]["series"][key]
        p, k = key
        r = random.Random(_crc(self.seed, "pt", p, k))
        nshape = r.randint(4, 10)
        h0 = math.exp(r.gauss(0.15, 0.3))
        r.uniform(0.005, 0.02)
        bt = [10 ** r.uniform(-2.5, -0.5) * 1.4 ** i for i in range(nshape)]
        ph = [math.exp(r.gauss(0, 0.12)) for _ in range(nshape)]
        f = self._factors(key, n, self.p_effects, exclude)
        bnames = list(spec["baselines"]) or ["torch"]
        per = []
        for j, bname in enumerate(bnames):
            rb = random.Random(_crc(self.seed, "ptb", p, k, bname))
            slow = 1.0 if j == 0 else rb.uniform(1.02, 1.6)
            if j > 0:
                slow = max(slow, 1.02)
            per.append([bt[i] * slow * math.exp(rb.gauss(0, 0.08)) for i in range(nshape)])
        vals = []
        for i in range(nshape):
            fast = min(b[i] for b in per) * f["B"]
            vals.append(fast / (bt[i] / (h0 * ph[i]) * f["H"] * f["Hs"]))
        return round(math.exp(sum(math.log(v) for v in vals) / len(vals)), 4)

    # ---------------------------------------------------------------- build
    def _build(self, keep: int):
        self._timeline()
        self.series: dict[tuple, Series] = {}
        self.effects: list[Effect] = []
        self.p_effects: list[Effect] = []
        self.p_quiet_baselines: set = set()
        self.outages: list[tuple] = []
        self.raw_labels: list[dict] = []
        self._plan_method_and_hardware()
        self._plan_real()
        self._plan_episodes()
        self._plan_pretuned()

        dash_mod = _import_builder(self.repo / ".github/dashboard/build_dashboard_data.py", f"_bwo_dash_{self.seed}")
        pre_path = self.repo / ".github/dashboard/build_pretuned_dashboard_data.py"
        pre_mod = _import_builder(pre_path, f"_bwo_pre_{self.seed}") if pre_path.exists() else None

        rng = np.random.default_rng(self.seed * 1_000_003 + 17)
        manual_r = random.Random(_crc(self.seed, "manual"))
        runs_meta: list[dict] = []
        p_runs_meta: list[dict] = []
        existing, p_existing = None, None
        first_keep = N_SIM - keep
        self._dash: list[bytes | None] = [None] * N_SIM
        self._pre: list[bytes | None] = [None] * N_SIM
        plat_cache: dict = {}
        cache = self._tmp / "cache"
        cache.mkdir()
        pc = self._tmp / "pcache"
        pc.mkdir()
        slots: dict[str, Path] = {}

        def put(root: Path, slot: str, run_id: str, arts: dict, fname: str):
            """Artifacts of one run under root/run_id; directories are reused between nights (renamed),
            as creating and removing thousands of them is the slow part of a build."""
            d = slots.get(slot)
            if d is None:
                d = root / f"_{slot}"
                d.mkdir()
            target = root / run_id
            d.rename(target)
            for old in os.listdir(target):
                if old not in arts:
                    shutil.rmtree(target / old)
            for name, recs in arts.items():
                (target / name).mkdir(exist_ok=True)
                (target / name / fname).write_text(json.dumps(recs))
            return target

        def park(root: Path, slot: str, target: Path):
            d = root / f"_{slot}"
            target.rename(d)
            slots[slot] = d

        used = []
        for n, it in enumerate(self.sim):
            # nights before the first published one are fed to the builder ten at a time (the
            # fresh artifacts of a batch give the same history as feeding them one by one)
            call = n >= first_keep - 1 or n % 10 == 9
            # manual dispatches and side-branch runs since the previous nightly
            if n > 0 and manual_r.random() < 0.22:
                mdate = it["date"] - timedelta(hours=manual_r.randint(3, 20))
                head = self.commits[bisect.bisect_right(self._cts, mdate.timestamp()) - 1]
                side = manual_r.random() < 0.4
                mid = str(int(it["run_id"]) - manual_r.randint(5_000_000, 30_000_000))
                meta = {"run_id": mid, "sha": head.sha[:8], "full_sha": head.sha,
                        "date": mdate.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "branch": f"dev/bench-{manual_r.randint(100, 999)}" if side else "main", "is_nightly": False}
                arts = self._simulate_night(n, rng)
                names = sorted(arts)
                pick = names[manual_r.randrange(len(names))]
                bump = manual_r.uniform(0.75, 1.3) if side else 1.0
                recs = arts[pick]
                for r_ in recs:
                    if r_["metric"]["name"] == "helion_speedup":
                        r_["metric"]["benchmark_values"] = [round(v * bump, 6) for v in r_["metric"]["benchmark_values"]]
                used.append((f"m{n % 10}", put(cache, f"m{n % 10}", mid, {pick: recs}, "helionbench.json")))
                runs_meta.append(meta)
            meta = {"run_id": it["run_id"], "sha": it["sha"][:8], "full_sha": it["sha"],
                    "date": it["date"].strftime("%Y-%m-%dT%H:%M:%SZ"), "branch": "main", "is_nightly": True}
            runs_meta.append(meta)
            used.append((f"n{n % 10}", put(cache, f"n{n % 10}", it["run_id"], self._simulate_night(n, rng),
                                            "helionbench.json")))
            if call:
                oid = self.git.blob(it["sha"], R.DISPATCH)[0]
                if oid not in plat_cache:
                    wf = self._tmp / "dispatch.yml"
                    wf.write_text(self.git.text(it["sha"], R.DISPATCH) or "")
                    plat_cache[oid] = (dash_mod.get_active_platforms(str(wf)),
                                       dash_mod.get_expected_kernels_per_platform(str(wf)))
                active, expected = plat_cache[oid]
                doc = dash_mod.build_dashboard_data(str(cache), runs_meta, existing, active, expected)
                if n >= first_keep:
                    self._dash[n] = zlib.compress(json.dumps(doc).encode(), 1)
                existing = doc
                for slot, target in used:
                    park(cache, slot, target)
                used = []
            if it["p_cfg"] and pre_mod is not None:
                pused = []
                pmeta = {"run_id": it["p_run_id"], "sha": it["p_sha"][:8], "full_sha": it["p_sha"],
                         "date": it["p_date"].strftime("%Y-%m-%dT%H:%M:%SZ"), "branch": "main", "is_nightly": True}
                if manual_r.random() < 0.3:
                    mid = str(int(it["p_run_id"]) - manual_r.randint(5_000_000, 30_000_000))
                    p_runs_meta.append({**pmeta, "run_id": mid, "is_nightly": False,
                                        "date": (it["p_date"] - timedelta(hours=manual_r.randint(2, 20))).strftime("%Y-%m-%dT%H:%M:%SZ")})
                    pused.append(("pm", put(pc, "pm", mid, self._simulate_pretuned(n, rng), "pretuned-bench.json")))
                p_runs_meta.append(pmeta)
                pused.append(("pn", put(pc, "pn", it["p_run_id"], self._simulate_pretuned(n, rng), "pretuned-bench.json")))
                pwf = self._tmp / "pdispatch.yml"
                pwf.write_text(self.git.text(it["p_sha"], R.P_DISPATCH) or "")
                pactive = pre_mod.get_active_platforms(str(pwf))
                pdoc = pre_mod.build_dashboard_data(str(pc), sorted(p_runs_meta, key=lambda m: m["date"]),
                                                    p_existing, pactive)
                if n >= first_keep:
                    self._pre[n] = zlib.compress(json.dumps(pdoc).encode(), 1)
                p_existing = pdoc
                for slot, target in pused:
                    park(pc, slot, target)
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._finish(keep)

    def _finish(self, keep: int):
        first_keep = N_SIM - keep
        self.nights = []
        for it in self.sim[first_keep:]:
            self.nights.append(Night(run_id=it["run_id"], full_sha=it["sha"], sha=it["sha"][:8], date=it["date"],
                                     p_run_id=it["p_run_id"], p_full_sha=it["p_sha"]))
        self._dash = self._dash[first_keep:]
        self._pre = self._pre[first_keep:]
        self._index = {}
        for i, nt in enumerate(self.nights):
            self._index[nt.run_id] = i
            if nt.p_run_id:
                self._index[nt.p_run_id] = i
        labels = []
        for j, l in enumerate(sorted(self.raw_labels, key=lambda x: (x["n"], x["source"], x["kind"], x["members"]))):
            n = l["n"]
            if n <= first_keep:
                continue
            pre = l["source"] == "pretuned"
            rid = "p_run_id" if pre else "run_id"
            if pre and not (self.sim[n]["p_run_id"] and self.sim[n - 1]["p_run_id"]):
                continue
            honest = {}
            for m in l["members"]:
                if l["honest_kind"] == "none":
                    break
                excl = l["eff"] if l["honest_kind"] == "pre" else None
                v = self._clean_pretuned(m, n, excl) if pre else self.clean_speedup(m, n, excl)
                if v:
                    honest[f"{m[0]}/{m[1]}"] = v
            end = l["end"]
            end_id = self.sim[end][rid] if end is not None and end < N_SIM and self.sim[end][rid] else None
            labels.append(Label(
                id=f"o{self.seed}-{len(labels):02d}", source=l["source"], cause=l["cause"], kind=l["kind"],
                direction=l["direction"], members=l["members"], metrics=l["metrics"],
                first_bad_run_id=self.sim[n][rid], last_good_run_id=self.sim[n - 1][rid], end_run_id=end_id,
                culprit_sha=l["culprit"] if l["cause"] == "real" else None,
                change_sha=l["change"] if l["cause"] in ("method_change", "hardware") else None,
                honest_speedup=honest, note=l["note"]))
        self.labels = labels

    # ---------------------------------------------------------------- interface
    def dashboard_bytes(self, i: int) -> bytes:
        return zlib.decompress(self._dash[i])

    def pretuned_bytes(self, i: int) -> bytes | None:
        b = self._pre[i]
        return zlib.decompress(b) if b is not None else None

    def night_of(self, run_id) -> int | None:
        return self._index.get(str(run_id)) if run_id is not None else None

    def series_count(self) -> int:
        d = json.loads(self.dashboard_bytes(len(self.nights) - 1))
        n = sum(1 for s in d["summary"] if s["has_nightly_data"])
        p = self.pretuned_bytes(len(self.nights) - 1)
        if p:
            n += sum(1 for s in json.loads(p)["summary"] if s["has_nightly_data"])
        return n

    def close(self):
        shutil.rmtree(self.workdir / "helion", ignore_errors=True)


def build_world(seed: int, workdir, nights: int = N_SIM) -> World:
    if seed not in WINDOW_END:
        raise ValueError(f"set O has seeds {sorted(WINDOW_END)}")
    if not 1 <= nights <= N_SIM:
        raise ValueError("nights must be in 1..150")
    return World(seed, Path(workdir), nights)
