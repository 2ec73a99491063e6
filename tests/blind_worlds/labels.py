"""Turn planted event specs into Labels (metrics that move, direction, honest speedup)."""
from __future__ import annotations

import math
import subprocess

from .emit import pretuned_record, series_metrics
from .sim import geo

HONEST_BEFORE = {"cudagraph_removed", "hardware_regression", "noise"}


def level(self, src, key, i):
    plat, k = key
    if src == "dashboard":
        cfg = self.dmatrix(i).series.get(key)
        if cfg is None:
            return None
        v = series_metrics(self, plat, k, cfg, i, noise=False)
        lat = [x for x in v.get("helion_latency_ms", []) if x]
        return {"helion_speedup_geomean": geo(v.get("helion_speedup", [])),
                "triton_speedup_geomean": geo(v.get("triton_speedup", [])),
                "torch_compile_speedup_geomean": geo(v.get("torch_compile_speedup", [])),
                "compile_time_geomean_s": geo(v.get("helion_compile_time_s", [])),
                "helion_latency_avg_ms": sum(lat) / len(lat) if lat else 0.0}
    cfg = self.pmatrix(i).series.get(key)
    if cfg is None:
        return None
    r = pretuned_record(self, plat, k, cfg, i, noise=False)
    out = {"geomean": r.get("geomean", 0.0)}
    for n, b in (r.get("baselines") or {}).items():
        out[f"baseline:{n}:geomean"] = b["geomean"]
    return out


def finalize_labels(self):
    from .world import Label
    labels = []
    for j, sp in enumerate(self._labels_spec):
        src = sp["source"]
        i = max(sp["first"], 1)
        head = "helion_speedup_geomean" if src == "dashboard" else "geomean"
        rid = (lambda n: self.nights[n].run_id) if src == "dashboard" else (lambda n: self.nights[n].p_run_id)
        members, moved, honest, dirs = [], set(), {}, []
        for key in sp["members"]:
            key = tuple(key)
            a, b = level(self, src, key, i - 1), level(self, src, key, i)
            if a is None or b is None:
                continue
            members.append(key)
            for m in set(a) | set(b):
                x, y = a.get(m), b.get(m)
                if x and y and abs(math.log(y / x)) > 0.025:
                    moved.add(m)
                elif (not x) != (not y):
                    moved.add(m)
            if a.get(head) and b.get(head):
                dirs.append(math.log(b[head] / a[head]))
            before, after = a.get(head) or 0.0, b.get(head) or 0.0
            cause, kind = sp["cause"], sp["kind"]
            if cause == "noise":
                hv = before
            elif cause == "hardware":
                hv = before if (sp["end"] is not None or kind in ("thermal", "outage") or (after < before)) else after
            elif kind == "cudagraph":
                cg_after = (self.dmatrix(i).series[key].cudagraph if src == "dashboard" else self.pmatrix(i).series[key].cudagraph)
                hv = after if cg_after else before
            else:
                hv = after
            honest[f"{key[0]}/{key[1]}"] = round(hv, 4)
        if not members:
            continue
        if sp["kind"] == "scatter":
            moved = {head}
        if not dirs or abs(sum(dirs) / len(dirs)) < 0.01:
            if "compile_time_geomean_s" in moved:
                a = level(self, src, members[0], i - 1)["compile_time_geomean_s"]
                b = level(self, src, members[0], i)["compile_time_geomean_s"]
                direction = "regression" if b > a else "improvement"
            elif "helion_latency_avg_ms" in moved:
                a = level(self, src, members[0], i - 1)["helion_latency_avg_ms"]
                b = level(self, src, members[0], i)["helion_latency_avg_ms"]
                direction = "regression" if b > a else "improvement"
            else:
                direction = "regression"
        else:
            direction = "regression" if sum(dirs) < 0 else "improvement"
        if sp["cause"] == "hardware":
            # the environment got worse or better: judged on Helion's own latency (outage: zeros)
            if sp["kind"] in ("outage", "thermal"):
                direction = "regression"
            else:
                a = level(self, src, members[0], i - 1)["helion_latency_avg_ms"]
                b = level(self, src, members[0], i)["helion_latency_avg_ms"]
                direction = "regression" if b > a else "improvement"
        end = sp["end"]
        labels.append(Label(
            id=f"s{self.seed}-{j:02d}-{sp['cause']}-{sp['kind']}", source=src, cause=sp["cause"], kind=sp["kind"],
            direction=direction, members=tuple(sorted(members)), metrics=tuple(sorted(moved)),
            first_bad_run_id=rid(i), last_good_run_id=rid(i - 1),
            end_run_id=rid(end) if end is not None and end < len(self.nights) and rid(end) else None,
            culprit_sha=sp["culprit_sha"], change_sha=sp["change_sha"], honest_speedup=honest, note=sp["note"]))
    self.labels = labels


def diff_text(self, sha, paths):
    try:
        return subprocess.run(["git", "-C", str(self.repo), "show", "--format=", sha, "--", *paths],
                              capture_output=True, text=True, check=True).stdout
    except subprocess.CalledProcessError:
        return ""
