"""Series and their regimes on one nightly, from the parsed repo facts (see facts.py)."""
from __future__ import annotations

from .facts import NightFacts
from .model import gpu_shapes, h64

GPU_ALIASES = ("h100", "b200", "b200_cute", "mi325x", "mi350x")
PRE_SM = {"h100": "sm90", "b200": "sm100"}


def platform_short(job) -> str:
    alias = "tpu" if job.alias == "tpu_bridge" else job.alias
    if job.backend and job.backend not in ("triton", "pallas") and not alias.endswith(f"_{job.backend}"):
        alias = f"{alias}_{job.backend}"
    return alias


def dash_series(F: NightFacts) -> dict:
    """{(platform_short, kernel): dict(job=, suite=, reg=)} the nightly at these facts produces."""
    out = {}
    bench = F.bench or {}
    flags = bench.get("flags", ())
    env = bench.get("env", {})
    seed_fixed = "HELION_AUTOTUNE_RANDOM_SEED" in (F.nightly_env or "")
    budget = env.get("HELION_AUTOTUNE_BUDGET_SECONDS")
    for job in F.nightly_jobs():
        ps = platform_short(job)
        for k in F.kernels_for(job):
            reg = dict(suite=job.suite, seed_fixed=seed_fixed, runner=job.runner)
            if job.suite == "tritonbench":
                if k not in F.runpy.get("maps", {}):
                    continue
                ni, rm = F.runpy["maps"][k]
                reg.update(shapes=gpu_shapes(k, ni, F.runpy.get("maxn"), "tritonbench"),
                           cg="--cudagraph" in flags and "--cudagraph" not in rm,
                           baseline=F.runpy.get("base", {}).get(k), torch=bench.get("torch"),
                           image=(job.image, job.runtime), tb=F.tb_pin or None,
                           passes=min(bench.get("tb_passes") or 1, 2),
                           subproc="HELION_AUTOTUNE_BENCHMARK_SUBPROCESS" in env,
                           budget=int(budget) if budget and str(budget).isdigit() else None,
                           compile="--measure-compile-time" in flags,
                           # MI350X runners without a raised fd limit exhaust open HSACO files on the
                           # largest welford input (see the container-options comment in the workflow)
                           fail_last=ps == "mi350x" and k == "welford" and "nofile" not in job.copts)
            elif job.suite == "linattn":
                lin = F.linattn or {}
                if not bench.get("lin_upload_ok"):
                    continue
                var = k.removesuffix("-bwd")
                shapes = lin.get("vshapes") if var in lin.get("varlen", set()) else lin.get("shapes")
                if not shapes:
                    continue
                aot = bench.get("lin_aot") or frozenset()
                reg.update(shapes=tuple(shapes), cg=True, baseline="FLA", torch=bench.get("torch"),
                           image=(job.image, job.runtime), fla=bench.get("fla"),
                           aot=job.alias in aot or "*" in aot, compile=False)
            elif job.suite == "tpu":
                reg.update(shapes=gpu_shapes(k, None, None, "tpu"), cg=True, baseline="torch",
                           tpu_tool=F.tpu_tool, compile=F.tpu_compile)
            elif job.suite == "tpu_bridge":
                if k not in F.runpy.get("maps", {}):
                    continue
                reg.update(shapes=gpu_shapes(k, None, None, "tritonbench", bridge=True), cg=True,
                           baseline=F.runpy.get("base", {}).get(k), tpu_tool=F.tpu_tool,
                           fp32=k in F.bridge_fp32, compile=True)
            else:
                continue
            out[(ps, k)] = dict(job=job, suite=job.suite, reg=reg)
    return out


def pre_series(F: NightFacts) -> dict:
    """{(alias, kernel): dict(reg=, single=)} for the pretuned nightly at these facts."""
    pt = F.pretuned
    if not pt:
        return {}
    out = {}
    for alias in ("h100", "b200"):
        if pt.get("flags") and f"run_{alias}" not in pt["flags"]:
            continue
        sm = PRE_SM[alias]
        runner = pt["runners"].get(alias, ("", "", ""))
        for k in pt["order"]:
            info = pt["kernels"].get(k)
            if not info or sm not in info["cfg"]:
                continue
            n = info["nshapes"] if info["nshapes"] >= 3 else 6 + h64("pn", k) % 9
            single = not info["baselines"]
            reg = dict(baselines=tuple(info["baselines"]) or ("torch",), cg=info["cudagraph"],
                       l2=pt["l2clear"], cfg=info["cfg"][sm], torch=pt["torch"], runner=runner[0],
                       image=runner[1:], nshapes=n)
            out[(alias, k)] = dict(reg=reg, single=single)
    return out
