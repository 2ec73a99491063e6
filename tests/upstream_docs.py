"""Small valid dashboard and pretuned documents (2 kernels × 2 platforms × a few runs), built by
hand so hostile-input tests can poke one field at a time without generating a whole world."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone


def _run(i: int) -> dict:
    full = f"{i:08x}" + "ab" * 16
    date = datetime(2026, 3, 1, 3, 0, tzinfo=timezone.utc) + timedelta(days=i)
    return {"run_id": str(1000 + i), "sha": full[:8], "full_sha": full,
            "date": date.isoformat().replace("+00:00", "Z"), "branch": "main", "is_nightly": True,
            "kernel_count": 2}


def dashboard(runs: int = 3) -> dict:
    summary = []
    for plat in ("h100", "b200"):
        for kernel in ("rms_norm", "softmax"):
            history = []
            for i in range(runs):
                h = _run(i)
                h.update(helion_speedup_geomean=1.5 + i / 100, triton_speedup_geomean=1.2,
                         torch_compile_speedup_geomean=1.1, compile_time_geomean_s=12.0,
                         helion_latency_avg_ms=0.5)
                if i == runs - 1:
                    h["per_shape"] = {"shapes": ["[1024]", "[2048]"], "helion_speedup": [1.4, 1.6],
                                      "helion_latency_ms": [0.4, 0.6]}
                history.append(h)
            summary.append({"kernel": kernel, "platform": f"NVIDIA {plat.upper()}", "platform_short": plat,
                            "baseline_label": "torch eager", "history": history})
    return {"generated_at": "2026-03-10T00:00:00Z", "runs": [_run(i) for i in range(runs)],
            "summary": summary}


def pretuned(runs: int = 3) -> dict:
    summary = []
    for plat in ("h100", "b200"):
        for kernel in ("rms_norm", "softmax"):
            history = []
            for i in range(runs):
                h = _run(i)
                h.update(cudagraph=True, geomean=1.3, helion_wins=3, total=4, best_speedup=2.0,
                         baselines={"triton": {"wins": 1, "total": 4, "geomean": 1.1, "best_speedup": 1.5}})
                history.append(h)
            summary.append({"kernel": kernel, "platform": f"NVIDIA {plat.upper()}", "platform_short": plat,
                            "compute": "sm90", "cudagraph": True, "history": history})
    return {"runs": [_run(i) for i in range(runs)], "summary": summary}


def poke(doc: dict, path: tuple, value) -> dict:
    """A copy of ``doc`` with the value at ``path`` replaced (a key absent in a dict is added)."""
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out
