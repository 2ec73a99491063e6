"""The world's shared state: nightlies, specs per nightly, profiles, regimes and explicit effects,
and the one function that turns (series, run) into what the harness measures.

Why one place: the published documents, the labels' honest values and the materiality checks
must all read the same model, or a label would describe a move the documents do not show.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import model as M
from .regimes import RegimeBook
from .specs import all_specs


@dataclass
class Eff:
    """An explicit effect (real commit, thermal, runner swap, noise): factors on one series.
    Real ones are active by commit index (a manual run between nightlies sees them too)."""
    key: tuple
    start: int
    end: int | None
    f: dict
    commit_idx: int | None = None
    end_commit: int | None = None
    nightly_only: bool = False

    def active(self, n: int, cidx: int | None, nightly: bool) -> bool:
        if self.nightly_only and not nightly:
            return False
        if self.commit_idx is not None and cidx is not None:
            return self.commit_idx <= cidx and (self.end_commit is None or cidx < self.end_commit)
        return self.start <= n and (self.end is None or n < self.end)


@dataclass
class Ctx:
    seed: int
    repo: object
    hist: object
    nidx: list  # commit index of each dashboard nightly
    pidx: list  # commit index of each pretuned nightly (None before the suite)
    ntimes: list
    ptimes: list
    specs: list = field(default_factory=list)  # per night: (source, platform, kernel) -> spec
    spec_cache: dict = field(default_factory=dict)
    profs: dict = field(default_factory=dict)
    book: RegimeBook = field(default_factory=RegimeBook)
    effs: dict = field(default_factory=dict)  # key -> [Eff]
    outages: dict = field(default_factory=dict)  # (source, platform) -> set of nights
    labels: list = field(default_factory=list)
    busy: dict = field(default_factory=dict)  # key -> set of nights near a labeled event
    tpu_pin_moves: int = 0
    events: dict = field(default_factory=dict)  # key -> nights on which a labeled event starts
    runner_changes: set = field(default_factory=set)

    def commit_range(self, source: str, n: int) -> tuple:
        idx = self.pidx if source == "pretuned" else self.nidx
        return idx[n - 1], idx[n]

    def add_eff(self, e: Eff) -> None:
        self.effs.setdefault(e.key, []).append(e)

    def mark(self, key, n: int, pad: int = 3) -> None:
        self.busy.setdefault(key, set()).update(range(n - pad, n + pad + 1))

    def free(self, key, n: int) -> bool:
        return n not in self.busy.get(key, ())

    # --- the model -------------------------------------------------------------------------------

    def prof(self, key, spec):
        if key not in self.profs:
            if key[0] == "pretuned":
                self.profs[key] = M.make_pprof(self.seed, key, spec.get("pshapes", 0))
            else:
                self.profs[key] = M.make_prof(self.seed, key, spec["suite"])
        return self.profs[key]

    def profs_get(self, key):
        """The profile of a series, made from the first nightly that runs it."""
        if key not in self.profs:
            spec = next(s[key] for s in self.specs if key in s)
            self.prof(key, spec)
        return self.profs[key]

    def factors(self, key, spec, n: int, cidx: int | None, nightly: bool = True, skip=None) -> dict:
        f = self.book.factors(key, spec)
        for e in self.effs.get(key, ()):
            if e is not skip and e.active(n, cidx, nightly):
                for k, v in e.f.items():
                    f[k] = f.get(k, 1.0) * v
        return f

    def setting(self, key, spec, n: int, cidx: int | None, nightly: bool = True, skip=None) -> M.Setting:
        pr = self.prof(key, spec)
        f = self.factors(key, spec, n, cidx, nightly, skip)
        if spec.get("seed"):
            f["jit"] = 0.0  # a fixed autotune seed removes the config-to-config jitter
        suite = spec["suite"]
        k = key[2]
        if suite == "tritonbench":
            shapes, variant = M.select(M.pool_labels(k), spec.get("ni")), ""
        elif suite == "linattn":
            shapes, variant = tuple(spec.get("shapes") or ()), ""
        else:  # tpu: run_tpu.py's own shapes, or tritonbench's through the bridge
            nsh = int(spec.get("shapes") or 2)
            pool = M.pool_labels(k)
            shapes = tuple(pool[:nsh]) if spec.get("harness") == "tpu" else M.select(pool, nsh)
            variant = f"{spec.get('harness')}:{spec.get('prec')}"
        return M.Setting(shapes=shapes, variant=variant, cg=spec.get("cg", True), lat=spec.get("lat", True),
                         ct=spec.get("ct", True), two_pass=spec.get("two_pass", False), f=f)

    def expected(self, key, n: int, skip=None) -> dict | None:
        """Noise-free headline metrics of a series at nightly ``n`` (None if it did not run)."""
        spec = self.specs[n].get(key)
        if spec is None:
            return None
        cidx = (self.pidx if key[0] == "pretuned" else self.nidx)[n]
        if key[0] == "pretuned":
            pp = self.prof(key, spec)
            f = self.factors(key, spec, n, cidx, True, skip)
            rec = M.pretuned_measure(self.seed, pp, spec["pbase"], spec["cg"], spec["l2"], f, None, spec["pshapes"])
            return {"geomean": rec["geomean"]}
        pr = self.prof(key, spec)
        return M.expected(self.seed, pr, self.setting(key, spec, n, cidx, True, skip))


def night_specs(hist, nidx: list, pidx: list) -> list:
    """Per nightly: the dashboard specs at its sha and the pretuned specs at the pretuned sha."""
    cache: dict = {}

    def at(idx):
        import bisect

        j = hist.state_idx[max(bisect.bisect_right(hist.state_idx, idx) - 1, 0)]
        if j not in cache:
            cache[j] = all_specs(hist.states[j])
        return cache[j]

    out = []
    for n, i in enumerate(nidx):
        d = {k: v for k, v in at(i).items() if k[0] == "dashboard"}
        if pidx[n] is not None:
            d.update({k: v for k, v in at(pidx[n]).items() if k[0] == "pretuned"})
        out.append(d)
    return out
