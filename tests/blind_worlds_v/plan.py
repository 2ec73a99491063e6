"""Nights on the real history and what each of them runs (from the files at its sha), plus the
changes between consecutive nights that the files carry (each with the commit that made it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from . import facts as F
from .hrepo import Repo
from .model import AVAILABLE, FAMILIES, family, rng_for, shape_labels

MAX_RUNNERS = {"tritonbench": 13, "linattn": 9}
CUTE_RUNNERS = 6


@dataclass(frozen=True)
class RowCfg:
    """How one dashboard row is produced on a night: lane, shapes, timer."""
    plat: str
    kernel: str
    alias: str
    suite: str
    backend: str
    shapes: tuple
    cudagraph: bool
    compile_measured: bool
    single_timer: bool
    baseline_label: str | None
    device: str
    artifact: str          # artifact (shard) the row is uploaded in
    aot: str = ""          # checked-in configs the row runs with (linear attention), "" = autotuned
    opts: str = ""         # other per-kernel options of run.py (e.g. precision)


@dataclass
class NightPlan:
    idx: int
    date: datetime
    sha: str
    facts: F.DashFacts
    rows: dict             # (plat, kernel) -> RowCfg
    p_date: datetime | None = None
    p_sha: str | None = None
    pfacts: F.PreFacts | None = None
    pre_rows: dict = field(default_factory=dict)   # (alias, kernel) -> dict(baselines, cudagraph, aot, total)


def tb_shapes(kernel: str, mapping: dict, max_inputs: int, flags: tuple, cli_num: int | None = None) -> tuple:
    fam = family(kernel, "tritonbench")
    avail = AVAILABLE.get(kernel, FAMILIES[fam].shapes)
    universe = shape_labels(kernel.replace("-bwd", ""), fam, avail)
    if cli_num is not None:
        return tuple(universe[:min(cli_num, avail)])
    n = mapping.get("num_inputs", max_inputs)
    n = n if isinstance(n, int) else max_inputs
    n = max(1, min(n, max_inputs, avail))
    if any(f.startswith("--input-sample-mode") and "equally" in f for f in flags) and n < avail:
        idx = sorted({round(i * (avail - 1) / (n - 1)) for i in range(n)}) if n > 1 else [0]
        return tuple(universe[i] for i in idx)
    return tuple(universe[:n])


def tpu_shapes(kernel: str) -> tuple:
    r = rng_for("tpu-shapes", kernel)
    a, b = int(r.choice([1024, 2048, 4096])), int(r.choice([2048, 4096, 8192]))
    return (f"[{a}, {a}]", f"[{b}, {b}]")


def _shards(kernels: list, n: int) -> list:
    jobs = min(len(kernels), n)
    buckets = [[] for _ in range(jobs)]
    for i, k in enumerate(kernels):
        buckets[i % jobs].append(k)
    return buckets


def night_rows(f: F.DashFacts) -> dict:
    rows = {}
    has_cg = "--cudagraph" in f.bench_flags
    compile_gpu = "--measure-compile-time" in f.bench_flags
    for lane in f.nightly_lanes():
        ks = [k for k in f.kernels_of(lane) if k]
        if not ks:
            continue
        if lane.suite == "tritonbench":
            nrun = CUTE_RUNNERS if lane.backend == "cute" else MAX_RUNNERS["tritonbench"]
            for shard in _shards(ks, nrun):
                art = f"benchmark-results-{lane.alias}-{','.join(shard)}"
                for k in shard:
                    if k not in f.mappings:
                        continue
                    m = f.mappings[k]
                    cg = has_cg and "--cudagraph" not in (m.get("remove_flags") or [])
                    p = lane.platform_short
                    opts = repr(sorted((a, str(b)) for a, b in m.items()
                                       if a in ("precision", "rep", "d_head", "non_square")))
                    rows[(p, k)] = RowCfg(p, k, lane.alias, "tritonbench", lane.backend,
                                          tb_shapes(k, m, f.max_inputs, f.bench_flags), cg, compile_gpu, False, None,
                                          DEVICEN(p), art, opts=opts)
        elif lane.suite == "linattn":
            names = list(dict.fromkeys(k.removesuffix("-bwd") for k in ks))
            names = [n for n in names if n in f.linattn_variants]
            for shard in _shards(names, MAX_RUNNERS["linattn"]):
                art = f"benchmark-results-{lane.alias}-{','.join(shard)}"
                for v in shard:
                    shapes = f.linattn_varlen_shapes if v in f.linattn_fwd_only and "varlen" in v else f.linattn_shapes
                    if not shapes:
                        continue
                    outs = [v] if v in f.linattn_fwd_only else [v, f"{v}-bwd"]
                    sm = "sm90" if lane.alias == "h100" else "sm100"
                    aot = f.linattn_aot.get(sm, "") if "AOTAutotuneCache" in str(f.linattn_flags) + str(f.bench_env) \
                        or f.linattn_aot else ""
                    for k in outs:
                        rows[(lane.alias, k)] = RowCfg(lane.alias, k, lane.alias, "linattn", "triton", tuple(shapes),
                                                       False, False, True, "FLA", LINATTN_DEVICEN(lane.alias), art,
                                                       aot=aot)
        elif lane.suite == "tpu":
            art = f"benchmark-results-{lane.alias}-{','.join(ks)}"
            comp = "cmd:HELION_MEASURE_COMPILE_TIME" in f.tpu_env
            for k in ks:
                if f.tpu_kernels and k not in f.tpu_kernels:
                    continue
                rows[("tpu", k)] = RowCfg("tpu", k, lane.alias, "tpu", "pallas", tpu_shapes(k), False, comp, True,
                                          None, "TPU v7", art)
        elif lane.suite == "tpu_bridge":
            art = f"benchmark-results-{lane.alias}-{','.join(ks)}"
            for k in ks:
                m = f.mappings.get(k)
                if m is None:
                    continue
                rows[("tpu", k)] = RowCfg("tpu", k, lane.alias, "tpu_bridge", "pallas",
                                          tb_shapes(k, m, f.max_inputs, (), cli_num=2), False, True, True, None,
                                          "TPU v7", art)
    return rows


def DEVICEN(p):
    from .model import DEVICE
    return DEVICE.get(p, p)


def LINATTN_DEVICEN(p):
    from .model import LINATTN_DEVICE
    return LINATTN_DEVICE.get(p, p)


def pre_rows(pf: F.PreFacts | None) -> dict:
    out = {}
    if pf is None:
        return out
    for alias in ("h100", "b200"):
        if str(pf.run_inputs.get(f"run_{alias}", "")).lower() != "true" or alias not in pf.lanes:
            continue
        sm = "sm90" if alias == "h100" else "sm100"
        for k in pf.kernels:
            pk = pf.per_kernel.get(k)
            if not pk or sm not in pk["aot"]:
                continue
            bl = pk["baselines"] or ("ref",)
            out[(alias, k)] = dict(baselines=tuple(bl), cudagraph=pk["cudagraph"], aot=pk["aot"][sm], src=pk["src"],
                                   bench=pf.bench_blob, torch=pf.torch_pin, lane=pf.lanes.get(alias))
    return out


def make_nights(repo: Repo, end: datetime, n: int, seed: int, skip: int | None = None) -> list[NightPlan]:
    r = rng_for(seed, "nights")
    days = []
    d = end
    while len(days) < n:
        days.append(d)
        d -= timedelta(days=1)
        if skip is not None and len(days) == skip:
            d -= timedelta(days=1)  # a day GitHub never dispatched the cron
    days.reverse()
    out = []
    fcache = {}
    pcache = {}
    for i, day in enumerate(days):
        dt = datetime(day.year, day.month, day.day, 8, int(r.integers(3, 38)), int(r.integers(0, 60)), tzinfo=timezone.utc)
        sha = repo.head_at(dt)
        if sha not in fcache:
            fcache[sha] = F.dash_facts(repo, sha)
        f = fcache[sha]
        np_ = NightPlan(i, dt, sha, f, night_rows(f))
        pdt = datetime(day.year, day.month, day.day, 10, int(r.integers(4, 40)), int(r.integers(0, 60)), tzinfo=timezone.utc)
        psha = repo.head_at(pdt)
        if psha not in pcache:
            pcache[psha] = F.pre_facts(repo, psha)
        pf = pcache[psha]
        if pf is not None and pdt > datetime(2026, 7, 1, 9, 0, tzinfo=timezone.utc):
            np_.p_date, np_.p_sha, np_.pfacts = pdt, psha, pf
            np_.pre_rows = pre_rows(pf)
        out.append(np_)
    return out


# ---------------------------------------------------------------- changes the files carry

@dataclass
class Change:
    night: int                # first night with the new state
    kind: str                 # shapes | cudagraph | harness | runner | image | torch | tbpin | autotune_env |
                              # nightly_env | flags | tpu_pins | pre_baselines | pre_cudagraph | pre_bench | pre_aot |
                              # pre_src | pre_torch | linattn_aot
    source: str               # dashboard | pretuned
    members: tuple            # series touched by the change ((plat, kernel), ...)
    sha: str | None           # the commit of the window that made it
    detail: str = ""
    lane: str = ""


def _first_commit(repo: Repo, lo: str, hi: str, value, prefixes: tuple) -> str | None:
    """The first commit in lo..hi after which `value(sha)` differs from `value(lo)`."""
    base = value(lo)
    for c in repo.between(lo, hi):
        if prefixes and not any(f.startswith(prefixes) for f in repo.files(c)):
            continue
        if value(c) != base:
            return c
    return None


def file_changes(repo: Repo, nights: list[NightPlan]) -> list[Change]:
    out: list[Change] = []
    last: dict = {k: nights[0] for k in nights[0].rows}
    for i in range(1, len(nights)):
        a, b = nights[i - 1], nights[i]
        if a.sha != b.sha:
            out += _dash_changes(repo, a, b, last)
        for k in b.rows:
            last[k] = b
        if a.p_sha and b.p_sha and a.p_sha != b.p_sha:
            out += _pre_changes(repo, a, b)
    return out


def _dash_changes(repo: Repo, a: NightPlan, b: NightPlan, last: dict) -> list[Change]:
    """Changes between night a and night b = a + 1; `last` maps a series to the last night before b
    that planned it (its config then), so a series that comes back after a gap is compared with its
    last config."""
    out = []
    fa, fb = a.facts, b.facts
    groups: dict = {}
    for key, rb in b.rows.items():
        prev = last.get(key)
        if prev is None:
            continue
        ra = prev.rows[key]
        if ra.suite != rb.suite:
            groups.setdefault(("harness", ra.suite + "->" + rb.suite, prev.idx), []).append(key)
        elif ra.cudagraph != rb.cudagraph:
            groups.setdefault(("cudagraph", "on" if rb.cudagraph else "off", prev.idx), []).append(key)
        elif ra.shapes != rb.shapes:
            groups.setdefault(("shapes", ra.suite, prev.idx), []).append(key)
        elif ra.opts != rb.opts:
            groups.setdefault(("precision", ra.opts + " -> " + rb.opts, prev.idx), []).append(key)
        elif ra.aot != rb.aot:
            groups.setdefault(("linattn_aot", rb.alias, prev.idx), []).append(key)
    nights_by_idx = {a.idx: a}
    for (kind, detail, pidx), members in groups.items():
        lo = a.sha if pidx == a.idx else last[members[0]].sha
        probe = members[0]

        def row_of(s, probe=probe):
            return night_rows(F.dash_facts(repo, s)).get(probe)

        if kind == "harness":
            value = lambda s: (row_of(s) or RowCfg("", "", "", "", "", (), False, False, False, None, "", "")).suite
        elif kind == "cudagraph":
            value = lambda s: (row_of(s).cudagraph if row_of(s) else None)
        elif kind == "shapes":
            value = lambda s: (row_of(s).shapes if row_of(s) else None)
        elif kind == "precision":
            value = lambda s: (row_of(s).opts if row_of(s) else None)
        else:
            value = lambda s: (row_of(s).aot if row_of(s) else None)
        sha = _first_commit(repo, lo, b.sha, lambda s: value(s) if row_of(s) else value(lo), ())
        if sha is not None and repo.pos[sha] <= repo.pos[a.sha]:
            # changed while the series did not run: the commit of this window is the one that brought it back
            sha = _first_commit(repo, a.sha, b.sha, lambda s: row_of(s) is not None, ())
        out.append(Change(b.idx, kind, "dashboard", tuple(sorted(members)), sha, detail))
    # per-lane machine and image
    la = {(l.alias, l.suite): l for l in fa.nightly_lanes()}
    for l in fb.nightly_lanes():
        o = la.get((l.alias, l.suite))
        if o is None:
            continue
        members = tuple(sorted(k for k, r in b.rows.items() if r.alias == l.alias and r.suite == l.suite and k in a.rows))
        if not members:
            continue
        if o.runner != l.runner:
            sha = _first_commit(repo, a.sha, b.sha, lambda s: [x.runner for x in F.parse_dispatch(repo, s)[0]
                                                              if (x.alias, x.suite) == (l.alias, l.suite)], (".github/",))
            out.append(Change(b.idx, "runner", "dashboard", members, sha, f"{o.runner} -> {l.runner}", l.alias))
        if (o.image, o.runtime) != (l.image, l.runtime):
            sha = _first_commit(repo, a.sha, b.sha, lambda s: [(x.image, x.runtime) for x in F.parse_dispatch(repo, s)[0]
                                                              if (x.alias, x.suite) == (l.alias, l.suite)], (".github/",))
            out.append(Change(b.idx, "image", "dashboard", members, sha, f"{o.image} {o.runtime} -> {l.image} {l.runtime}",
                              l.alias))
    gpu = tuple(sorted(k for k, r in b.rows.items() if r.suite == "tritonbench" and k in a.rows))
    simple = [
        ("torch", fa.torch_pin != fb.torch_pin, lambda s: F._torch_pin(repo.read(s, F.WF + "benchmark.yml")), gpu),
        ("tbpin", fa.tritonbench_pin != fb.tritonbench_pin,
         lambda s: (repo.read(s, ".github/ci_commit_pins/tritonbench.txt") or "").strip(), gpu),
        ("autotune_env", {k: v for k, v in fa.bench_env.items() if "AUTOTUNE" in k and "LOG" not in k} !=
         {k: v for k, v in fb.bench_env.items() if "AUTOTUNE" in k and "LOG" not in k},
         lambda s: sorted((k, v) for k, v in F._job_env_and_flags(repo.read(s, F.WF + "benchmark.yml"),
                                                                  "benchmarks/run.py")[0].items()
                          if "AUTOTUNE" in k and "LOG" not in k), gpu),
        ("nightly_env", fa.nightly.get("env_vars") != fb.nightly.get("env_vars"),
         lambda s: F._nightly_inputs(repo, s, "benchmark_nightly.yml").get("env_vars"),
         tuple(sorted(k for k in b.rows if k in a.rows))),
        ("flags", fa.bench_flags != fb.bench_flags,
         lambda s: F._job_env_and_flags(repo.read(s, F.WF + "benchmark.yml"), "benchmarks/run.py")[1], gpu),
        ("tpu_pins", fa.tpu_pins != fb.tpu_pins, lambda s: F.dash_facts(repo, s).tpu_pins,
         tuple(sorted(k for k, r in b.rows.items() if r.plat == "tpu" and k in a.rows))),
    ]
    for kind, changed, value, members in simple:
        if changed and members:
            sha = _first_commit(repo, a.sha, b.sha, value, ())
            out.append(Change(b.idx, kind, "dashboard", members, sha))
    return out


def _pre_changes(repo: Repo, a: NightPlan, b: NightPlan) -> list[Change]:
    out = []
    groups: dict = {}
    for key, rb in b.pre_rows.items():
        ra = a.pre_rows.get(key)
        if ra is None:
            continue
        for field_, kind in (("baselines", "pre_baselines"), ("cudagraph", "pre_cudagraph"), ("bench", "pre_bench"),
                             ("aot", "pre_aot"), ("src", "pre_src"), ("torch", "pre_torch"), ("lane", "pre_lane")):
            if ra[field_] != rb[field_]:
                groups.setdefault(kind, []).append(key)
    for kind, members in groups.items():
        def value(s, kind=kind, members=members):
            pf = F.pre_facts(repo, s)
            rows = pre_rows(pf)
            fld = {"pre_baselines": "baselines", "pre_cudagraph": "cudagraph", "pre_bench": "bench", "pre_aot": "aot",
                   "pre_src": "src", "pre_torch": "torch", "pre_lane": "lane"}[kind]
            return tuple((rows.get(m) or {}).get(fld) for m in members)
        if kind in ("pre_aot", "pre_src"):
            # the aot and src changes of one night can come from different commits: group by commit
            by_sha: dict = {}
            for m in members:
                sha = _first_commit(repo, a.p_sha, b.p_sha, lambda s, m=m, kind=kind: value(s, kind, (m,)),
                                    ("pretuned_kernels/",))
                by_sha.setdefault(sha, []).append(m)
            for sha, ms in by_sha.items():
                out.append(Change(b.idx, kind, "pretuned", tuple(sorted(ms)), sha))
        else:
            sha = _first_commit(repo, a.p_sha, b.p_sha, value, ())
            out.append(Change(b.idx, kind, "pretuned", tuple(sorted(members)), sha))
    return out
