"""Which series run in one nightly, with which shapes and flags, from the facts of its commit."""
from __future__ import annotations

import random
from dataclasses import dataclass

from .facts import Facts

DEVICE = {"h100": "NVIDIA H100 80GB HBM3", "b200": "NVIDIA B200", "mi325x": "AMD Instinct MI325X",
          "mi350x": "AMD Instinct MI350X", "tpu": "TPU v7"}
COMPUTE = {"h100": "sm90", "b200": "sm100"}


@dataclass(frozen=True)
class SeriesRun:
    """One (platform_short, kernel) row as one job of a nightly produces it."""
    alias: str  # artifact alias (h100, b200, b200_cute, mi350x, tpu, tpu_bridge)
    platform: str  # dashboard platform_short
    kernel: str
    suite: str  # tritonbench | tpu | tpu_bridge | linattn
    device: str
    backend: str
    baseline_label: str | None
    shapes: tuple  # ((label, x), ...) x in [0, 1] = size rank
    emit_shapes: bool
    cudagraph: bool
    triton: bool
    torch_compile: bool
    latency: bool
    compile_time: bool
    harness: str  # a tag of the harness that measured it (changes are method changes)


def _gpu_shape_list(kernel: str) -> list[tuple[str, float]]:
    r = random.Random(f"tb-shapes|{kernel}")
    n_full = r.randint(8, 30)
    m = r.choice([1024, 2048, 4096, 8192])
    lo = r.choice([128, 256, 512])
    out = []
    for j in range(n_full):
        x = j / (n_full - 1)
        n = int(lo * 2 ** (x * r.choice([5, 6]))) // 64 * 64 or 64
        out.append((f"({m}, {n + 64 * j})", x))
    return out


def gpu_shapes(kernel: str, num_inputs: int | None, max_inputs: int) -> tuple:
    full = _gpu_shape_list(kernel)
    n = min(num_inputs or len(full), max_inputs, len(full))
    if n <= 1:
        return (full[0],)
    idx = sorted({round(i * (len(full) - 1) / (n - 1)) for i in range(n)})
    return tuple(full[i] for i in idx)


def tpu_shapes(kernel: str, fn_hash: str, num: int) -> tuple:
    r = random.Random(f"tpu-shapes|{kernel}|{fn_hash}")
    n_full = r.randint(3, 8)
    dims = sorted(r.sample([256, 512, 1024, 2048, 4096, 8192, 16384], min(n_full, 7)))
    out = [(f"({d}, {r.choice([1024, 2048, 4096])})", i / max(len(dims) - 1, 1)) for i, d in enumerate(dims)]
    return tuple(out[:num])


def bridge_shapes(kernel: str, num_inputs: int | None, num: int) -> tuple:
    full = _gpu_shape_list(kernel)
    return tuple(full[:num])


def linattn_shapes(names: list[str]) -> tuple:
    sizes = []
    for nm in names:
        try:
            parts = dict((p[0], int(p[1:])) for p in nm.split("_") if p[:1] in "BTHD" and p[1:].isdigit())
            sizes.append(parts.get("B", 1) * parts.get("T", 8192) * parts.get("H", 16) * parts.get("D", 128))
        except ValueError:
            sizes.append(8192 * 64 * 128)
    order = sorted(sizes)
    return tuple((nm, order.index(s) / max(len(order) - 1, 1)) for nm, s in zip(names, sizes))


def night_series(f: Facts) -> list[SeriesRun]:
    """All rows the nightly at commit ``f.sha`` produces (before failures and outages)."""
    out: list[SeriesRun] = []
    b = f.bench
    metrics = b.get("metrics", "")
    latency = "latency" in metrics.split(",")
    harness = f"passes={b.get('tritonbench_passes')}"
    seen = set()
    for a in f.aliases:
        if not f.enabled(a):
            continue
        kernels = f.kernel_defaults.get(a.kernels_input or "", [])
        if a.suite == "tritonbench":
            plat = a.alias if a.backend in ("triton", "pallas") or a.alias.endswith("_" + a.backend) \
                else f"{a.alias}_{a.backend}"
            dev = DEVICE.get(a.alias.split("_")[0], a.alias)
            for k in kernels:
                if k not in f.gpu_map or (plat, k) in seen:
                    continue
                opts = f.gpu_map[k]["opts"]
                cg = b.get("cudagraph", True) and "--cudagraph" not in (opts.get("remove_flags") or [])
                seen.add((plat, k))
                out.append(SeriesRun(a.alias, plat, k, "tritonbench", dev, a.backend, None,
                                     gpu_shapes(k, opts.get("num_inputs"), f.max_inputs), f.emits_shapes, cg,
                                     True, True, latency, b.get("compile_time", False), harness))
        elif a.suite == "tpu":
            for k in kernels:
                if k not in f.tpu_map or ("tpu", k) in seen:
                    continue
                seen.add(("tpu", k))
                out.append(SeriesRun(a.alias, "tpu", k, "tpu", DEVICE["tpu"], "pallas", None,
                                     tpu_shapes(k, f.tpu_map[k], f.tpu_num_shapes), True, False, False, True, True,
                                     True, "run_tpu"))
        elif a.suite == "tpu_bridge":
            for k in kernels:
                if k not in f.gpu_map or ("tpu", k) in seen:
                    continue
                seen.add(("tpu", k))
                out.append(SeriesRun(a.alias, "tpu", k, "tpu_bridge", DEVICE["tpu"], "pallas", None,
                                     bridge_shapes(k, f.gpu_map[k]["opts"].get("num_inputs"), f.tpu_num_shapes), True,
                                     False, False, True, True, True, "tritonbench_bridge"))
        elif a.suite == "linattn" and f.linattn:
            la = f.linattn
            names = [k.strip().removesuffix("-bwd") for k in kernels]
            names = [n for n in dict.fromkeys(names) if n in la["variants"]]
            for v in names:
                shp = la["varlen_shapes"] if v in la["varlen_variants"] else la["shapes"]
                nshape = b.get("linattn_num_shapes")
                shp = shp[:nshape] if nshape else shp
                if not shp:
                    continue
                rows = [v] if v in la["fwd_only"] else [v, f"{v}-bwd"]
                for r in rows:
                    if (a.alias, r) in seen:
                        continue
                    seen.add((a.alias, r))
                    out.append(SeriesRun(a.alias, a.alias, r, "linattn", DEVICE.get(a.alias, a.alias), "triton", "FLA",
                                         linattn_shapes(list(shp)), True, False, False, False, True, False, "linattn"))
    return out


@dataclass(frozen=True)
class PretunedRun:
    platform: str
    kernel: str
    device: str
    compute: str
    baselines: tuple
    cudagraph: bool
    config: str  # object id prefix of the checked-in config for this device
    timer: str  # hash of pretuned_kernels/_bench.py


def pretuned_series(f: Facts) -> list[PretunedRun]:
    p = f.pretuned
    if not p or not p.get("nightly"):
        return []
    out = []
    for alias in sorted(p["runners"]):
        for k in p["order"]:
            info = p["kernels"].get(k)
            if not info or alias not in info["hw"]:
                continue  # skipped: no heuristic for this device (not recorded)
            out.append(PretunedRun(alias, k, DEVICE.get(alias, alias), COMPUTE.get(alias, ""), info["baselines"],
                                   info["cudagraph"], info["hw"][alias], p["bench_hash"]))
    return out
