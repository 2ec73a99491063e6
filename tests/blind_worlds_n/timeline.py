"""Nights on the real history, and what each night runs (read from the files at its commit)."""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from datetime import datetime, timezone

from . import repofacts as RF
from .model import equally_spaced, shape_universe

WATCH = RF.DASH_FILES + ("helion/runtime/settings.py", ".github/ci_commit_pins/torch_tpu.txt")
WATCH_PREFIX = (".github/actions/",)


@dataclass
class Snap:
    idx: int
    nightly: dict | None
    disp: dict
    bench: dict
    runpy: dict
    lin: dict | None
    tpu: dict | None
    tbpin: str
    tpuwf: dict
    settings: dict
    naming: dict
    tpu_compile: bool
    bridge_text: str


def take_snap(git: RF.Git, c: RF.Commit) -> Snap:
    s = c.sha
    runpy = git.show(s, "benchmarks/run.py")
    tpu_t = git.show(s, RF.WF + "benchmark_tpu.yml") or ""
    return Snap(c.idx, RF.nightly_facts(git.show(s, RF.WF + "benchmark_nightly.yml")),
                RF.dispatch_facts(git.show(s, RF.WF + "benchmark_dispatch.yml")),
                RF.bench_facts(git.show(s, RF.WF + "benchmark.yml")), RF.runpy_facts(runpy),
                RF.linattn_facts(git.show(s, "benchmarks/run_linattn.py")),
                RF.tpu_facts(git.show(s, "benchmarks/run_tpu.py")),
                RF.tb_pin(git.show(s, ".github/ci_commit_pins/tritonbench.txt")), RF.tpu_wf_facts(git, s),
                RF.settings_facts(git.show(s, "helion/runtime/settings.py")), RF.device_naming(runpy),
                "HELION_MEASURE_COMPILE_TIME" in tpu_t, git.show(s, RF.WF + "benchmark_tpu_bridge.yml") or "")


class Snaps:
    """Snapshots at every commit that changed a watched file, between two commit indexes."""

    def __init__(self, git: RF.Git, commits: list, lo: int, hi: int):
        self.idx: list[int] = []
        self.snaps: list[Snap] = []
        for c in commits[lo:hi + 1]:
            if c.idx == lo or any(f in WATCH or f.startswith(WATCH_PREFIX) for f in c.files):
                self.idx.append(c.idx)
                self.snaps.append(take_snap(git, c))

    def at(self, commit_idx: int) -> Snap:
        return self.snaps[bisect_right(self.idx, commit_idx) - 1]

    def between(self, a: int, b: int) -> list[Snap]:
        """Snapshots of the commits in (a, b]."""
        return [s for i, s in zip(self.idx, self.snaps) if a < i <= b]


@dataclass(frozen=True)
class SCtx:
    """Everything that defines how one series is measured on one night."""
    alias: str
    kernel: str
    suite: str            # tb | lin | tpu | bridge
    shapes: tuple
    cg: bool
    latency_on: bool
    compile_mode: str | None   # hit | autotune | None
    impl_b: str
    impl_t: str | None
    impl_c: str | None
    torch: str
    image: str
    runner: str
    tb_pin: str
    passes: int
    subprocess: bool
    budget: float | None
    seed_fixed: bool
    device: str
    backend: str | None
    baseline_label: str | None
    shard: str


DEVICE = {"h100": "NVIDIA H100", "b200": "NVIDIA B200", "b200_cute": "NVIDIA B200", "mi325x": "AMD Instinct MI325X",
          "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7"}
ARCH = {"mi325x": "gfx942:sramecc+:xnack-", "mi350x": "gfx950:sramecc+:xnack-"}


def device_name(alias: str, snap: Snap) -> str:
    d = DEVICE.get(alias, alias)
    if alias == "h100" and not snap.naming["h100_short"]:
        return "NVIDIA H100 80GB HBM3"
    if alias in ARCH and snap.naming["amd_arch"]:
        return f"{d} {ARCH[alias]}"
    return d


def _shards(kernels: list[str], n: int) -> list[list[str]]:
    jobs = min(len(kernels), max(n, 1))
    buckets = [[] for _ in range(jobs)]
    for i, k in enumerate(kernels):
        buckets[i % jobs].append(k)
    return buckets


def _csv(v) -> list[str]:
    return [x.strip() for x in str(v or "").split(",") if x.strip()]


def tb_shapes(snap: Snap, kernel: str, tpu: bool = False) -> tuple:
    km = snap.runpy["kernels"].get(kernel)
    if km is None:
        return ()
    opts = km["opts"]
    n = opts.get("num_inputs", snap.runpy["max_inputs"])
    try:
        n = int(n)
    except (TypeError, ValueError):
        n = snap.runpy["max_inputs"]
    n = min(n, snap.runpy["max_inputs"])
    variant = "non_square" if "non_square" in opts else ""
    start = int(opts.get("input_id", 0) or 0) if str(opts.get("input_id", "0")).isdigit() else 0
    u = shape_universe(kernel, variant + ("tpu" if tpu else ""))
    mode = snap.bench["flags"].get("--input-sample-mode", "equally-spaced-k")
    if mode == "equally-spaced-k":
        return tuple(equally_spaced(u, n, start))
    return tuple(u[start:start + n])


def night_contexts(snap: Snap, seed: int) -> tuple[dict, dict]:
    """(series -> SCtx, alias -> {shard name -> kernels}) for a nightly run at this snapshot."""
    out: dict = {}
    shards: dict = {}
    if not snap.nightly:
        return out, shards
    ninp = snap.nightly["inputs"]
    env_vars = ninp.get("env_vars", "")
    seed_fixed = "HELION_AUTOTUNE_RANDOM_SEED" in env_vars
    b = snap.bench
    flags = b["flags"]
    cg = "--cudagraph" in flags
    metrics = _csv(flags.get("--metrics", "speedup,accuracy"))
    latency_on = "latency" in metrics
    compile_on = "--measure-compile-time" in flags
    compile_mode = ("hit" if b["passes"] >= 2 else "autotune") if compile_on else None
    subprocess_on = b["env"].get("HELION_AUTOTUNE_BENCHMARK_SUBPROCESS") == "1" or \
        snap.settings["subprocess_default"]
    budget = b["env"].get("HELION_AUTOTUNE_BUDGET_SECONDS")
    budget = float(budget) if budget and budget.strip('"').isdigit() else None
    tbpin = snap.tbpin if b["tb_pinned"] else "HEAD"
    inputs = snap.disp["inputs"]
    for job in snap.disp["jobs"]:
        if not job["toggle"] or ninp.get(job["toggle"]) != "true":
            continue
        alias = job["alias"]
        kind, suite = job["kind"], job["suite"]
        kin = job["kernels_input"]
        if kind == "gpu" and suite == "tritonbench":
            if not kin or kin not in inputs:
                continue
            kernels = [k for k in _csv(inputs[kin]) if k in snap.runpy["kernels"]]
            pshort = alias if job["backend"] in ("triton", "") or alias.endswith(job["backend"]) \
                else f"{alias}_{job['backend']}"
            for bucket in _shards(kernels, job["shards"]):
                sname = f"benchmark-results-{alias}-{','.join(bucket)}"
                shards.setdefault(pshort, {})[sname] = bucket
                for k in bucket:
                    mm = snap.runpy["metric_map"].get(k, {})
                    opts = snap.runpy["kernels"][k]["opts"]
                    rf = opts.get("remove_flags") or []
                    out[(pshort, k)] = SCtx(
                        pshort, k, "tb", tb_shapes(snap, k), cg and "--cudagraph" not in rf, latency_on,
                        compile_mode, mm.get("baseline", "eager"), mm.get("triton_speedup"),
                        mm.get("torch_compile_speedup"), b["torch"],
                        job["image"] + "|" + job["runtime"], job["runner"], tbpin, b["passes"], subprocess_on,
                        budget, seed_fixed, device_name(alias, snap), job["backend"] if job["backend"] != "triton"
                        else ("triton" if snap.naming.get("shapes_in_json") else None), None, sname)
        elif kind == "gpu" and suite == "linattn":
            if not b["linattn_upload_ok"] or not snap.lin or not kin or kin not in inputs:
                continue
            variants = list(dict.fromkeys(k.removesuffix("-bwd") for k in _csv(inputs[kin])))
            variants = [v for v in variants if v in snap.lin["variants"]]
            for bucket in _shards(variants, job["shards"]):
                sname = f"benchmark-results-{alias}-{','.join(bucket)}"
                shards.setdefault(alias, {})[sname] = bucket
                for v in bucket:
                    shp = tuple(snap.lin["varlen_shapes"] if v in snap.lin["varlen_variants"] else snap.lin["shapes"])
                    rows = [v] if v in snap.lin["fwd_only"] else [v, f"{v}-bwd"]
                    for k in rows:
                        out[(alias, k)] = SCtx(alias, k, "lin", shp, False, True, None, "fla", None, None,
                                               b["torch"], job["image"] + "|" + job["runtime"],
                                               job["runner"], "fla", 1, subprocess_on, None, seed_fixed,
                                               device_name(alias, snap), "triton", "FLA", sname)
        elif kind == "tpu":
            if not snap.tpu or not kin or kin not in inputs:
                continue
            names = _csv(inputs[kin])
            if names == ["all"]:
                names = list(snap.tpu["kernels"])
            names = [k for k in names if k in snap.tpu["kernels"]]
            sname = "benchmark-results-tpu"
            shards.setdefault("tpu", {})[sname] = names
            for k in names:
                shp = tuple(snap.tpu["kernels"][k]["shapes"][:8]) or tuple(shape_universe(k, "tpu")[:4])
                out[("tpu", k)] = SCtx("tpu", k, "tpu", shp, False, True, "autotune" if snap.tpu_compile else None,
                                       "torch_tpu", None, "torch_compile_tpu", snap.tpuwf["toolchain"],
                                       snap.tpuwf["toolchain"], snap.tpuwf["runner"], "n/a", 1, subprocess_on, None,
                                       seed_fixed, "TPU v7", None, None, sname)
        elif kind == "tpu_bridge":
            if not kin or kin not in inputs:
                continue
            names = [k for k in _csv(inputs[kin]) if k in snap.runpy["kernels"]]
            sname = "benchmark-results-tpu_bridge"
            shards.setdefault("tpu", {})[sname] = names
            bc = "HELION_MEASURE_COMPILE_TIME" in snap.bridge_text
            for k in names:
                if ("tpu", k) in out:
                    continue
                mm = snap.runpy["metric_map"].get(k, {})
                out[("tpu", k)] = SCtx("tpu", k, "bridge", tb_shapes(snap, k, tpu=True), False, True,
                                       "autotune" if bc else None, mm.get("baseline", "eager"), None,
                                       mm.get("torch_compile_speedup"), snap.tpuwf["toolchain"],
                                       snap.tpuwf["toolchain"], snap.tpuwf["runner"], tbpin, 1, subprocess_on, None,
                                       seed_fixed, "TPU v7", None, None, sname)
    return out, shards


# ----------------------------------------------------------------------------------- nights


def cron_hm(cron: str) -> tuple[int, int]:
    parts = cron.split()
    try:
        return int(parts[1]), int(parts[0])
    except (IndexError, ValueError):
        return 8, 0


def head_at(commits: list, times: list, t: datetime) -> int:
    """Index of main's HEAD at time t: the newest first-parent commit committed at or before t
    (what `git rev-list -1 --first-parent --before=t main` gives)."""
    for i in range(len(commits) - 1, -1, -1):
        if times[i] <= t:
            return i
    return 0


def run_id_at(t: datetime, salt: int) -> str:
    base = datetime(2025, 9, 1, tzinfo=timezone.utc)
    days = (t - base).total_seconds() / 86400
    return str(17_350_000_000 + int(days * 41_500_000) + int(salt % 900_000))
