"""Events: what changes the numbers, when, and the labels that say so.

Two sources of events:

- *file-derived* (the same in every world whose window holds them): differences between the facts
  parsed at consecutive nightly shas (a kernel losing ``--cudagraph``, ``num_inputs`` or the
  linear-attention ``SHAPES`` changing, a TPU kernel moving to another harness, the compile-time
  measurement changing, a runner/image/torch pin/autotune env change, a pretuned baseline set,
  cudagraph flag, timer or checked-in config changing). The commit that made the change is found by
  parsing the files at the commits between the two nightlies. Shape, cudagraph and harness changes
  move the numbers by themselves (the model times the new shapes/timer); environment changes move
  them through the effect table ``ENV_EFFECTS`` (a change with no entry moves nothing);
- *planted* per seed (``plans.py``): real regressions/improvements on real helion/ commits,
  thermal episodes, outages, noise cases.

Labels are computed from the noise-free model: a member belongs to a label when its true value moved
past a threshold between the last good and first bad nightly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import facts as F
from . import model as M
from . import repo as R

WF = ".github/workflows/"
THR = {"helion_speedup_geomean": 0.04, "triton_speedup_geomean": 0.06, "torch_compile_speedup_geomean": 0.06,
       "helion_latency_avg_ms": 0.07, "compile_time_geomean_s": 0.2, "geomean": 0.04}
HONEST = {  # which side of a move is the honest speedup (see README)
    ("real", None): "post",
    ("method_change", "cudagraph"): "cudagraph",
    ("method_change", "shapes"): "post",
    ("method_change", "baseline"): "post",
    ("method_change", "timer"): "post",
    ("method_change", "harness"): "post",
    ("method_change", "autotune"): "pre",
    ("hardware", None): "pre",
}


@dataclass
class Plant:
    id: str
    source: str                 # dashboard | pretuned
    cause: str
    kind: str
    start: int                  # first bad night
    end: int | None = None      # first night back to normal (episodes)
    factors: dict = field(default_factory=dict)   # (platform, kernel) -> {timer: mult, "missing": True, ...}
    culprit: str | None = None
    change: str | None = None
    note: str = ""
    fixed_members: bool = False  # noise/outage: the members are the factor keys, moved or not
    metrics: tuple | None = None
    label: bool = True
    direction: str | None = None
    honest: str | None = None    # "pre"/"post": overrides the rule of HONEST

    def active(self, n: int) -> bool:
        return self.start <= n and (self.end is None or n < self.end)


class Effects:
    def __init__(self, plants: list):
        self.plants = plants
        self.by_key: dict = {}
        for p in plants:
            for k in p.factors:
                self.by_key.setdefault((p.source, *k), []).append(p)

    def mult(self, source: str, key: tuple, n: int) -> dict:
        out: dict = {}
        for p in self.by_key.get((source, *key), ()):
            if not p.active(n):
                continue
            for t, f in p.factors[key].items():
                if t in ("missing", "drop", "error"):
                    out[t] = f if t != "drop" else tuple(out.get("drop", ())) + tuple(f)
                elif t in ("sigma",):
                    out[t] = out.get(t, 1.0) * f
                elif t == "outlier":
                    out[t] = f
                else:
                    out[t] = out.get(t, 1.0) * f
        return out


def mult_for_run(world, source: str, key: tuple, n_prev: int, n_next: int | None, sha: str) -> dict:
    """Effects on a run that is not a nightly, between nightly ``n_prev`` and ``n_next``: those of
    the previous nightly, plus the commit-made changes of the next nightly that its sha already holds."""
    m = dict(world.effects.mult(source, key, n_prev))
    if n_next is None or sha not in world.hist.index:
        return m
    i = world.hist.index[sha]
    for p in world.effects.by_key.get((source, *key), ()):
        c = p.culprit or p.change
        if p.start == n_next and c and world.hist.index.get(c, 1 << 30) <= i and key in p.factors:
            for t, f in p.factors[key].items():
                if isinstance(f, float):
                    m[t] = m.get(t, 1.0) * f
    return m


# ------------------------------------------------------------------------------------------------
# The world's truth at a night
# ------------------------------------------------------------------------------------------------

def compile_factor(setup: F.Setup) -> float:
    return setup.compile_factor


def dash_true(world, n: int, key: tuple) -> dict | None:
    s = world.setups[n].series.get(key)
    if s is None:
        return None
    mult = world.effects.mult("dashboard", key, n)
    if mult.get("missing"):
        return None
    p = M.series_params(world.seed, key[0], key[1], s.suite)
    m = dict(mult)
    m["compile"] = m.get("compile", 1.0) * world.setups[n].compile_factor
    tm = M.true_metrics(p, s.shapes, s.cudagraph, m)
    if not s.has_triton:
        tm["triton_speedup_geomean"] = 0.0
    if not s.has_tc:
        tm["torch_compile_speedup_geomean"] = 0.0
    if s.suite == "tpu":
        tm["helion_latency_avg_ms"] = sum(r["helion"] for r in M.true_times(p, s.shapes, True, m)) / len(s.shapes)
    if not s.compile_measured:
        tm["compile_time_geomean_s"] = None
    return tm


def pre_true(world, n: int, key: tuple) -> dict | None:
    ps = world.psetups[n]
    if ps is None:
        return None
    hw, k = key
    pk = ps.kernels.get(k)
    if pk is None or hw not in pk.hardware or hw not in ps.machine:
        return None
    mult = world.effects.mult("pretuned", key, n)
    if mult.get("missing") or mult.get("error"):
        return None
    baselines = [b for b in pk.baselines if b not in mult.get("drop", ())]
    p = M.pretuned_params(world.seed, hw, k)
    rows = M.pretuned_times(p, pk.shapes, baselines, pk.cudagraph, mult)
    summ = M.pretuned_summary(rows, baselines)
    return {"geomean": summ["geomean"], "baselines": tuple(baselines), "cudagraph": pk.cudagraph}


# ------------------------------------------------------------------------------------------------
# File-derived events
# ------------------------------------------------------------------------------------------------

def find_change(world, lo: str, hi: str, paths: tuple, probe) -> str | None:
    """The first commit in (lo, hi] touching one of ``paths`` after which ``probe`` gives its value
    at ``hi`` (parsed from the files at each commit)."""
    target = probe(hi)
    cands = [c for c in world.hist.between(lo, hi) if any(f.startswith(paths) for f in c.files)]
    for c in cands:
        if probe(c.sha) == target:
            return c.sha
    return cands[-1].sha if cands else None


def _km(world, sha):
    return R.parse_kernel_mappings(world.repo.read(sha, "benchmarks/run.py"))


def derive_file_events(world) -> list:
    """Events the files make by themselves (plants without factors: the facts change the model),
    and environment changes looked up in ENV_EFFECTS (plants with factors)."""
    out = []
    N = len(world.nights)
    last_seen: dict = {}
    for n in range(N):
        cur = world.setups[n]
        if n == 0:
            for k, s in cur.series.items():
                last_seen[k] = (0, s)
            continue
        prev = world.setups[n - 1]
        lo, hi = world.nights[n - 1].full_sha, world.nights[n].full_sha
        groups: dict = {}
        for key, s in cur.series.items():
            seen = last_seen.get(key)
            last_seen[key] = (n, s)
            if seen is None:
                continue
            m, old = seen
            if old.suite != s.suite:
                groups.setdefault(("harness", "suite"), []).append(key)
            elif old.cudagraph != s.cudagraph:
                groups.setdefault(("cudagraph", None), []).append(key)
            elif old.shapes != s.shapes:
                groups.setdefault(("shapes", s.suite if m == n - 1 else "return"), []).append(key)
        if prev.compile_factor != cur.compile_factor:
            keys = [k for k, s in cur.series.items() if s.compile_measured and k in prev.series
                    and prev.series[k].compile_measured]
            groups.setdefault(("harness", "compile"), []).extend(keys)
        for (kind, sub), keys in groups.items():
            if not keys:
                continue
            if kind == "cudagraph":
                sha = find_change(world, lo, hi, ("benchmarks/run.py", WF + "benchmark.yml"),
                                  lambda x: tuple(sorted((k, v["cudagraph"]) for k, v in _km(world, x).items())))
            elif kind == "shapes" and sub == "tritonbench":
                sha = find_change(world, lo, hi, ("benchmarks/run.py",),
                                  lambda x: (tuple(sorted((k, v["num_inputs"]) for k, v in _km(world, x).items())),
                                             "limit_mi350_inputs" in (world.repo.read(x, "benchmarks/run.py") or "")))
            elif kind == "shapes":
                sha = find_change(world, lo, hi, ("benchmarks/run_linattn.py", "benchmarks/run_tpu.py", WF),
                                  lambda x: (tuple(R.parse_names(world.repo.read(x, "benchmarks/run_linattn.py"), "SHAPES")),
                                             (world.repo.read(x, WF + "benchmark_nightly.yml") or "")))
            elif sub == "suite":
                sha = find_change(world, lo, hi, (WF + "benchmark_dispatch.yml",),
                                  lambda x: tuple(R.parse_dispatch(world.repo.read(x, WF + "benchmark_dispatch.yml"))["defaults"].get("kernels_tpu", [])))
            else:  # compile measurement
                sha = find_change(world, lo, hi, (WF + "benchmark.yml", "benchmarks/run.py"),
                                  lambda x: F.compile_factor_at(world.repo, x))
            metrics = ("compile_time_geomean_s",) if sub == "compile" else None
            out.append(Plant(id=f"{kind}-{n}-{sub}", source="dashboard", cause="method_change", kind=kind, start=n,
                             factors={k: {} for k in keys}, change=sha, metrics=metrics,
                             note=_auto_note(kind, sub, keys)))
        # environment (machine, torch pin, autotune env)
        for key_name, getter, paths in (
                ("machine", lambda s: s.machine, (WF + "benchmark_dispatch.yml", WF + "benchmark_tpu.yml")),
                ("torch", lambda s: s.torch, (WF + "benchmark.yml",)),
                ("autotune", lambda s: s.autotune_env, (WF + "benchmark.yml",)),
                ("torch_tpu", lambda s: s.torch_tpu, (".github/ci_commit_pins/",))):
            if getter(prev) == getter(cur):
                continue
            if key_name == "machine":
                plats = [p for p in set(prev.machine) & set(cur.machine) if prev.machine[p] != cur.machine[p]]
                if not plats:
                    continue
                probe = lambda x, plats=plats: tuple(
                    F.setup_at(world.repo, x, linattn_live=world.linattn_live(x)).machine.get(p) for p in plats)
            elif key_name == "torch":
                probe = lambda x: R.parse_benchmark_yml(world.repo.read(x, WF + "benchmark.yml"))["torch"]
            elif key_name == "torch_tpu":
                probe = lambda x: F.torch_tpu_pin(world.repo, x)
            else:
                probe = lambda x: tuple(sorted(R.parse_benchmark_yml(world.repo.read(x, WF + "benchmark.yml"))["env"].items()))
            sha = find_change(world, lo, hi, paths, probe)
            if sha:
                out.extend(env_plants(world, sha, n, "dashboard"))
    # pretuned
    prev_p = None
    for n in range(N):
        ps = world.psetups[n]
        if ps is None:
            continue
        if prev_p is None:
            prev_p = (n, ps)
            continue
        m, pp = prev_p
        prev_p = (n, ps)
        lo, hi = world.pnights[m].full_sha, world.pnights[n].full_sha
        base_keys, cg_keys, cfg = [], [], {}
        for k, pk in ps.kernels.items():
            old = pp.kernels.get(k)
            if old is None:
                continue
            for hw in pk.hardware:
                if hw not in old.hardware:
                    continue
                if old.baselines != pk.baselines:
                    base_keys.append((hw, k))
                if old.cudagraph != pk.cudagraph:
                    cg_keys.append((hw, k))
                if old.configs.get(hw) != pk.configs.get(hw):
                    cfg.setdefault(k, []).append(hw)
        if base_keys:
            sha = find_change(world, lo, hi, ("pretuned_kernels/",),
                              lambda x: tuple((k, F.pretuned_at(world.repo, x).kernels[k].baselines)
                                              for _, k in sorted(base_keys) if k in F.pretuned_at(world.repo, x).kernels))
            out.append(Plant(id=f"pbase-{n}", source="pretuned", cause="method_change", kind="baseline", start=n,
                             factors={k: {} for k in base_keys}, change=sha,
                             note="baseline set of the pretuned kernel changed (headline is vs the fastest baseline)"))
        if cg_keys:
            sha = find_change(world, lo, hi, ("pretuned_kernels/",),
                              lambda x: tuple((k, F.pretuned_at(world.repo, x).kernels[k].cudagraph) for _, k in sorted(cg_keys)))
            out.append(Plant(id=f"pcg-{n}", source="pretuned", cause="method_change", kind="cudagraph", start=n,
                             factors={k: {} for k in cg_keys}, change=sha, note="use_cudagraph() flipped"))
        for k, hws in sorted(cfg.items()):
            for hw in hws:
                path = f"pretuned_kernels/{k}/_helion_aot_{k}_cuda_{F.PRETUNED_DEVICE[hw][1]}.py"
                sha = find_change(world, lo, hi, (path,), lambda x, k=k, hw=hw: (F.pretuned_at(world.repo, x).kernels.get(k) or
                                                                               F.PretunedKernel(k, (), (), False, 0, {})).configs.get(hw))
                out.extend(config_plants(world, sha, n, hw, k))
        if pp.bench_blob != ps.bench_blob:
            sha = find_change(world, lo, hi, ("pretuned_kernels/_bench.py",),
                              lambda x: F.pretuned_at(world.repo, x).bench_blob)
            out.extend(env_plants(world, sha, n, "pretuned"))
        if pp.torch != ps.torch or pp.machine != ps.machine:
            sha = find_change(world, lo, hi, (WF + "benchmark_pretuned",),
                              lambda x: (F.pretuned_at(world.repo, x).torch, tuple(sorted(F.pretuned_at(world.repo, x).machine.items()))))
            out.extend(env_plants(world, sha, n, "pretuned"))
    return out


def _auto_note(kind, sub, keys) -> str:
    plats = sorted({p for p, _ in keys})
    ks = sorted({k for _, k in keys})
    if kind == "cudagraph":
        return f"--cudagraph dropped/added for {', '.join(ks)} on {', '.join(plats)} (KERNEL_MAPPINGS remove_flags)"
    if kind == "shapes":
        return f"benchmarked shapes changed for {len(keys)} series ({', '.join(ks[:4])}...) on {', '.join(plats)}"
    if sub == "suite":
        return "TPU kernels moved from run_tpu.py to the tritonbench bridge (other harness, shapes and baseline)"
    return "compile-time measurement changed (harness)"


# ------------------------------------------------------------------------------------------------
# Environment effects keyed by the commit that changed the environment (sha prefix)
# ------------------------------------------------------------------------------------------------

def _pick(rng, lo, hi):
    return float(rng.uniform(lo, hi))


def _factors(world, sha, keys, spec) -> dict:
    out = {}
    for key in keys:
        rng = M.rng_for(world.seed, sha, *key)
        if spec.get("kernels") and key[1] not in spec["kernels"]:
            if "env_all" in spec:  # the machine changed for every kernel: timers move together
                f = _pick(rng, *spec["env_all"])
                out[key] = {"base": f, "helion": f, "triton": f, "tc": f, "lat": f}
            continue
        d = {}
        env = _pick(rng, *spec["env_all"]) if "env_all" in spec else 1.0
        for t in ("base", "helion", "triton", "tc", "lat", "compile", "all"):
            v = env if t in ("base", "helion", "triton", "tc", "lat") else 1.0
            if t in spec:
                v *= _pick(rng, *spec[t])
            if v != 1.0:
                d[t] = v
        if "helion" in spec and "lat" not in spec and spec.get("lat_follows", spec["cause"] == "hardware"):
            d["lat"] = d.get("lat", 1.0) * d["helion"] / env
        out[key] = d
    return out


ENV_EFFECTS = {
    # torch 2.10: eager baselines of the norms/softmax faster, torch.compile better on a few kernels
    "9a61a903": dict(cause="method_change", kind="baseline", platforms=("h100", "b200", "mi325x"),
                     kernels=("softmax", "layer_norm", "kl_div", "cross_entropy"), base=(0.87, 0.92), tc=(0.9, 0.95),
                     note="torch pin 2.9 -> 2.10 in benchmark.yml: eager/compile baselines faster, Helion unchanged"),
    # ROCm 6.4.4 -> 7.1.1 image on MI325X
    "3f63f311": dict(cause="hardware", kind="driver/toolchain", platforms=("mi325x",),
                     env_all=(0.9, 0.94), kernels=("gemm", "flash_attention", "int4_gemm", "softmax", "welford"),
                     helion=(0.88, 1.12), base=(0.95, 1.0), note="ROCm image 6.4.4 -> 7.1.1 for mi325x"),
    # MI325X runner gfx942.2 -> gfx942.1
    "9eefa499": dict(cause="hardware", kind="runner", platforms=("mi325x",), env_all=(1.06, 1.1),
                     kernels=("gemm", "grouped_gemm", "flash_attention", "layer_norm-bwd"), helion=(1.07, 1.12),
                     note="mi325x moved to the gfx942.1 runner pool"),
    # B200 image CUDA 13.0.1 -> 13.1.0 ("bump cublas"): cuBLAS baselines faster
    "8690b5f1": dict(cause="hardware", kind="driver/toolchain", platforms=("b200",),
                     kernels=("gemm", "int4_gemm"), base=(0.86, 0.9),
                     note="B200 CUDA image 13.0.1 -> 13.1.0 (newer cuBLAS): the gemm baselines got faster"),
    # autotune subprocess benchmarking: a little more compile time
    "8435f1ee": dict(cause="method_change", kind="autotune", platforms=("h100", "b200", "mi350x", "mi325x"),
                     compile=(1.05, 1.1), note="autotune benchmarks in a subprocess", label=False),
    # H100 moved to the OSDC runners with the pytorch/pytorch image
    "b33ae6b9": dict(cause="hardware", kind="runner", platforms=("h100",), env_all=(0.9, 0.94),
                     kernels=("gemm", "flash_attention", "int4_gemm", "grouped_gemm", "gdn_fwd_h"), helion=(1.08, 1.13),
                     note="H100 migrated to OSDC runners (mt-l-x86iamx-22-225-h100, pytorch/pytorch cu128 image)"),
    # autotune wall-clock budget
    "9f461a21": dict(cause="method_change", kind="autotune", platforms=("h100", "b200", "mi350x"),
                     kernels=("welford", "gdn_fwd_h", "mamba2_chunk_scan", "flash_attention"),
                     compile=(0.45, 0.7), helion=(1.06, 1.1), lat_follows=True,
                     note="HELION_AUTOTUNE_BUDGET_SECONDS=5400: long searches stop early; compile time drops, "
                          "the best-so-far config is a little slower"),
    # H100 cu128 -> cu130
    "ed36077d": dict(cause="hardware", kind="driver/toolchain", platforms=("h100",),
                     kernels=("gemm", "int4_gemm", "flash_attention"), base=(0.88, 0.92), helion=(0.97, 1.0),
                     lat_follows=True, note="H100 lane cu128 -> cu130: CUDA 13 baselines faster"),
    # ROCm 7.14 on MI350X (reverted by 5033b49a)
    "35b19fd4": dict(cause="hardware", kind="driver/toolchain", platforms=("mi350x",), env_all=(1.08, 1.14),
                     kernels=("gemm", "flash_attention", "welford", "softmax", "layer_norm", "rms_norm"),
                     helion=(1.08, 1.14), ended_by="5033b49a",
                     note="ROCm 7.14 image on mi350x; reverted three days later"),
    # torch 2.13 pin (the last nightly of the bundle)
    "54f56b56": dict(cause="method_change", kind="baseline", platforms=("h100", "b200"),
                     kernels=("layer_norm", "rms_norm", "softmax"), base=(0.88, 0.92), tc=(0.92, 0.96),
                     note="torch pin 2.11 -> 2.13: eager norm/softmax baselines faster"),
    # torch_tpu pin: device sync now blocks on compiled mode, fixing TPU timing
    "862545fd": dict(cause="method_change", kind="timer", platforms=("tpu",), helion=(1.22, 1.3), base=(1.08, 1.14),
                     tc=(1.18, 1.26), lat_follows=True,
                     note="torch_tpu pin: device sync blocks in compiled mode; TPU times were too short before"),
    # pretuned: clear L2 in cudagraph timing (only cudagraph kernels)
    "52326a08": dict(cause="method_change", kind="timer", platforms=("h100", "b200"), cudagraph_only=True,
                     helion=(1.1, 1.25), base=(1.05, 1.12), note="pretuned _bench.py clears L2 in cudagraph timing"),
}


def env_plants(world, sha: str, n: int, source: str) -> list:
    spec = next((v for k, v in ENV_EFFECTS.items() if sha.startswith(k)), None)
    if any(p.id == f"env-{sha[:8]}-{source}" for p in world.plants_so_far):
        return []
    if spec is None:
        # a change that ends an earlier episode
        for p in world.plants_so_far:
            if p.end is None and getattr(p, "_ended_by", None) and sha.startswith(p._ended_by):
                p.end = n
        return []
    if source == "dashboard":
        keys = [k for k in world.setups[n].series if k[0] in spec["platforms"]]
    else:
        ps = world.psetups[n]
        keys = []
        for k, pk in ps.kernels.items():
            for hw in pk.hardware:
                if hw in spec["platforms"] and hw in ps.machine and (not spec.get("cudagraph_only") or pk.cudagraph):
                    if spec.get("baselines") and not set(spec["baselines"]) & set(pk.baselines):
                        continue
                    keys.append((hw, k))
    if spec.get("baselines"):
        factors = {}
        for key in keys:
            rng = M.rng_for(world.seed, sha, *key)
            factors[key] = {f"base:{b}": _pick(rng, *spec["base"]) for b in spec["baselines"]}
    else:
        factors = _factors(world, sha, keys, spec)
    p = Plant(id=f"env-{sha[:8]}-{source}", source=source, cause=spec["cause"], kind=spec["kind"], start=n,
              factors=factors, change=sha, note=spec["note"], label=spec.get("label", True))
    if spec.get("ended_by"):
        p._ended_by = spec["ended_by"]
    world.plants_so_far.append(p)
    return [p]


def config_plants(world, sha: str | None, n: int, hw: str, k: str) -> list:
    """A regenerated checked-in pretuned config: Helion's own time changes (real, heuristics/config)."""
    if sha is None or any(sha.startswith(x) for x in ENV_EFFECTS):
        return []  # regenerated together with a method change: part of that change
    rng = M.rng_for(world.seed, "cfg", sha, hw, k)
    sign = -1 if rng.random() < 0.5 else 1
    mag = float(rng.uniform(0.07, 0.15)) if rng.random() < 0.8 else float(rng.uniform(0.0, 0.025))
    f = 1.0 / (1 + sign * mag)
    return [Plant(id=f"pcfg-{n}-{hw}-{k}", source="pretuned", cause="real", kind="heuristics/config", start=n,
                  factors={(hw, k): {"helion": f}}, culprit=sha,
                  note=f"checked-in {k} config for {hw} regenerated")]
