"""Per series, what the files say its measurement is (the fields a human compares at both ends).

Why: a move is a method change or a hardware/toolchain change exactly when one of these fields
differs between two nightlies, so the world derives both the simulated values (each field value
is a regime of the model) and the labels (which commit changed which field) from one place.
The field names map to the label kinds in ``FIELD_KIND``.
"""
from __future__ import annotations

from .timeline import State

# field -> (cause, kind) of the label a change of it gets
FIELD_KIND = {
    "runner": ("hardware", "runner"), "image": ("hardware", "driver/toolchain"),
    "cute": ("hardware", "driver/toolchain"),
    "tpu_tc": ("hardware", "driver/toolchain"),
    "torch": ("method_change", "baseline"), "fla": ("method_change", "baseline"),
    "base": ("method_change", "baseline"), "pbase": ("method_change", "baseline"),
    "vllm": ("method_change", "baseline"),
    "tb": ("method_change", "harness"), "harness": ("method_change", "harness"),
    "cg": ("method_change", "cudagraph"),
    "ni": ("method_change", "shapes"), "shapes": ("method_change", "shapes"),
    "prec": ("method_change", "shapes"), "pshapes": ("method_change", "shapes"),
    "budget": ("method_change", "autotune"), "seed": ("method_change", "autotune"),
    "effort": ("method_change", "autotune"),
    "lat_mode": ("method_change", "timer"), "two_pass": ("method_change", "timer"),
    "l2": ("method_change", "timer"), "ptimer": ("method_change", "timer"),
    "aot": ("real", "heuristics/config"),
}
# fields that only describe the series (a change is a new series, not an event)
STATIC = ("suite", "backend", "lat", "ct", "device")


def _platform_short(alias: str, backend: str) -> str:
    if alias == "tpu_bridge":
        return "tpu"
    if backend and backend not in ("triton", "pallas") and not alias.endswith(f"_{backend}"):
        return f"{alias}_{backend}"
    return alias


def nightly_jobs(st: State) -> list[dict]:
    """Benchmark jobs the cron dispatch runs at this state, with their kernels."""
    runs = set(st.nightly[0])
    out = []
    for name, j in st.dispatch.get("jobs", {}).items():
        if not j["run_input"] or j["run_input"] not in runs:
            continue
        kernels = st.dispatch.get("defaults", {}).get(j["kernels_input"], ())
        out.append(dict(j, name=name, kernels=kernels, platform=_platform_short(j["alias"], j["backend"])))
    return out


def dashboard_specs(st: State) -> dict:
    """(platform_short, kernel) -> spec fields for every series the nightly produces."""
    b = st.bench
    flags = set(b.get("flags") or ())
    has_flags = bool(flags)
    cg_global = ("--cudagraph" in flags) if has_flags else True
    lat_mode = next((f.split()[1] for f in flags if f.startswith("--latency-measure-mode") and " " in f), "")
    metrics = next((f.split()[1] for f in flags if f.startswith("--metrics") and " " in f), "speedup,accuracy")
    lat = "latency" in metrics.split(",") and st.runpy.get("latency", False)
    ct = "--measure-compile-time" in flags
    seed = st.nightly[1]
    out = {}
    for j in nightly_jobs(st):
        p, suite = j["platform"], j["suite"]
        hw = dict(runner=j["runner"], image=j["image"], runtime=j["runtime"])
        if suite == "tritonbench":
            for k in j["kernels"]:
                kinfo = st.runpy["kernels"].get(k)
                if kinfo is None:
                    continue
                spec = dict(suite=suite, backend=j["backend"], lat=lat, ct=ct, **hw, torch=b.get("torch", ""),
                            tb=st.pins.get("tritonbench", ""), cg=cg_global and not kinfo["no_cudagraph"],
                            ni=kinfo["num_inputs"], base=st.runpy["baselines"].get(k, ""),
                            budget=b.get("env", {}).get("HELION_AUTOTUNE_BUDGET_SECONDS", ""), seed=seed,
                            lat_mode=lat_mode, two_pass=b.get("two_pass", False))
                if j["backend"] == "cute":
                    spec["cute"] = st.pins.get("nvidia_cutlass_dsl", "")
                out[(p, k)] = spec
        elif suite == "linattn":
            la = st.linattn
            cap = int(b["la_shapes"]) if b.get("la_shapes") else None
            for v in j["kernels"]:
                if v not in la.get("variants", ()):
                    continue
                shapes = la["varlen"] if v in la.get("varlen_variants", ()) else la["shapes"]
                shapes = tuple(shapes[:cap]) if cap else tuple(shapes)
                rows = [v] if v in la.get("fwd_only", ()) else [v, f"{v}-bwd"]
                for r in rows:
                    out[(p, r)] = dict(suite=suite, backend="triton", lat=True, ct=False, **hw,
                                       torch=b.get("la_torch", ""), fla=b.get("fla", ""), shapes=shapes,
                                       aot=st.la_aot.get(p, ""), seed=seed)
        elif suite in ("tpu", "tpu_bridge"):
            y = st.tpu if suite == "tpu" else st.bridge
            known = st.runtpu.get("kernels", ()) if suite == "tpu" else tuple(st.runpy["kernels"])
            ks = known if tuple(j["kernels"]) == ("all",) else [k for k in j["kernels"] if k in known]
            prec = dict(y.get("precision", ()))
            for k in ks:
                out[("tpu", k)] = dict(suite="tpu", backend="pallas", lat=True, ct=True, runner=y.get("runner", ""),
                                       tpu_tc=st.pins.get("torch_tpu", "") + "|" + st.pins.get("tpu_actions", ""),
                                       harness=suite, shapes=y.get("num_shapes", ""), prec=prec.get(k, prec.get("*", "")),
                                       tb=st.pins.get("tritonbench", "") if suite == "tpu_bridge" else "",
                                       effort=y.get("env", {}).get("HELION_AUTOTUNE_EFFORT", ""), seed=seed)
    return out


def pretuned_specs(st: State) -> dict:
    runs = set(st.p_nightly[0])
    out = {}
    for alias, j in st.p_jobs.items():
        if not j["run_input"] or j["run_input"] not in runs:
            continue
        for k in st.p_kernels:
            info = st.p_info.get(k)
            if not info or alias not in info["hw"]:
                continue
            cg = info["cudagraph"]
            out[(alias, k)] = dict(runner=j["runner"], image=j["image"], runtime=j["runtime"],
                                   torch=st.p_yml.get("torch", ""), vllm=st.p_yml.get("vllm", False),
                                   pbase=info["baselines"], cg=cg, l2=bool(cg and st.p_bench.get("l2_clear")),
                                   ptimer=(st.p_bench.get("warmup"), st.p_bench.get("rep")),
                                   pshapes=info["shapes"] if info["shapes"] >= 4 else 0, aot=info["aot"].get(alias, ""))
    return out


def all_specs(st: State) -> dict:
    """(source, platform_short, kernel) -> spec."""
    out = {("dashboard", p, k): s for (p, k), s in dashboard_specs(st).items()}
    out.update({("pretuned", p, k): s for (p, k), s in pretuned_specs(st).items()})
    return out


def changed_fields(a: dict, b: dict) -> list[str]:
    return [f for f in (*FIELD_KIND, "runtime") if f in a and f in b and a[f] != b[f]]
