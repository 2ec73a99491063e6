"""Render the two dashboard documents exactly as the nightly publishes them after night n.

Cumulative (365-day retention), `per_shape` only on the newest main-nightly entry, manual and
side-branch runs interleaved in every kernel's history, zeros for runs that produced nothing.
"""

from __future__ import annotations

from datetime import timedelta

from tests.worlds.simulate import Simulation, TimelineRun, dash_values, platform_name, pre_values

RETENTION = timedelta(days=365)


def iso(dt) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def run_obj(r: TimelineRun) -> dict:
    return dict(run_id=r.run_id, sha=r.sha, full_sha=r.full_sha, date=iso(r.date), branch=r.branch,
                is_nightly=r.is_nightly)


def _window(sim: Simulation, n: int) -> list[TimelineRun]:
    newest = sim.nights[n].date
    return [r for r in sim.runs if newest - RETENTION < r.date <= newest]


def _runs_of(s, runs: list[TimelineRun], kind_ok) -> list[TimelineRun]:
    out = []
    for r in runs:
        if not s.alive[r.night]:
            continue
        if r.kind != "nightly" and not kind_ok(r):
            continue
        out.append(r)
    return out


def _delta(new, old) -> float | None:
    if not new or not old:
        return None
    return round((new - old) / old * 100, 2)


def _status(delta: float | None) -> str:
    if delta is None:
        return "unchanged"
    return "improved" if delta > 10 else "regressed" if delta < -10 else "unchanged"


def dashboard_doc(sim: Simulation, n: int) -> dict:
    runs = _window(sim, n)
    latest = sim.nights[n]
    summary = []
    kernels_by_run: dict[str, int] = {}
    for (p, k), s in sim.dash.items():
        mine = _runs_of(s, runs, lambda r: p in r.platforms and k in r.kernels)
        if not mine:
            continue
        history = []
        for r in mine:
            entry = run_obj(r)
            entry.update(dash_values(s, r.night, r.wild))
            if r is latest:
                shapes = s.shapes[r.night]
                vals = dash_values(s, r.night)
                m = len(shapes)
                spread = [1.0 + 0.03 * ((i * 7) % 5 - 2) for i in range(m)]
                entry["per_shape"] = dict(
                    shapes=list(shapes),
                    helion_speedup=[round(vals["helion_speedup_geomean"] * f, 4) for f in spread],
                    triton_speedup=[round(vals["triton_speedup_geomean"] * f, 4) for f in spread],
                    torch_compile_speedup=[round(vals["torch_compile_speedup_geomean"] * f, 4) for f in spread],
                    helion_accuracy=[0.0 if s.failed[r.night] else 1.0] * m,
                    helion_compile_time_s=[vals["compile_time_geomean_s"]] * m,
                    helion_latency_ms=[round(vals["helion_latency_avg_ms"] * f, 5) for f in spread],
                )
            history.append(entry)
            kernels_by_run[r.run_id] = kernels_by_run.get(r.run_id, 0) + 1
        nightly = [h for h in history if h["is_nightly"] and h["branch"] == "main"]
        last = nightly[-1] if nightly else history[-1]
        prev = nightly[-2] if len(nightly) > 1 else None
        sp_delta = _delta(last["helion_speedup_geomean"], prev and prev["helion_speedup_geomean"])
        summary.append(dict(
            kernel=k, platform=platform_name(p), platform_short=p, baseline_label=s.baseline_label,
            has_nightly_data=bool(nightly), status=_status(sp_delta), accuracy_failures=[],
            run_failures=[] if last["helion_speedup_geomean"] else ["all"],
            last_seen_date=history[-1]["date"], infra_missing=last["run_id"] != latest.run_id,
            helion_speedup_geomean=last["helion_speedup_geomean"],
            triton_speedup_geomean=last["triton_speedup_geomean"],
            torch_compile_speedup_geomean=last["torch_compile_speedup_geomean"],
            compile_time_geomean_s=last["compile_time_geomean_s"],
            helion_latency_avg_ms=last["helion_latency_avg_ms"],
            speedup_delta_pct=sp_delta,
            compile_delta_pct=_delta(last["compile_time_geomean_s"], prev and prev["compile_time_geomean_s"]),
            latency_delta_pct=_delta(last["helion_latency_avg_ms"], prev and prev["helion_latency_avg_ms"]),
            history=history,
        ))
    run_list = []
    for r in runs:
        o = run_obj(r)
        o["kernel_count"] = kernels_by_run.get(r.run_id, 0)
        run_list.append(o)
    latest_obj = dict(run_obj(latest), kernel_count=kernels_by_run.get(latest.run_id, 0))
    return dict(
        generated_at=iso(latest.date), latest_run=latest_obj, runs=run_list,
        platforms=sorted({item["platform"] for item in summary}),
        platform_shorts=sorted({item["platform_short"] for item in summary}),
        unique_kernels=sorted({item["kernel"] for item in summary}),
        stats=dict(total_kernels=len(summary), total_runs=len(run_list)),
        summary=summary,
    )


def pretuned_doc(sim: Simulation, n: int) -> dict:
    runs = _window(sim, n)
    latest = sim.nights[n]
    summary = []
    for (p, k), s in sim.pre.items():
        mine = _runs_of(s, runs, lambda r: p in r.platforms)
        if not mine:
            continue
        history = []
        for r in mine:
            entry = run_obj(r)
            entry.update(pre_values(s, r.night, r.wild))
            history.append(entry)
        last = history[-1]
        prev = next((h for h in reversed(history[:-1]) if "geomean" in h), None)
        failed = "error" in last
        delta = None if failed else _delta(last["geomean"], prev and prev["geomean"])
        summary.append(dict(
            kernel=k, platform=platform_name(p), platform_short=p, compute=s.compute,
            cudagraph=last.get("cudagraph", True), has_nightly_data=True, failed=failed,
            error=last.get("error"), status="failed" if failed else _status(delta),
            geomean_delta_pct=delta, geomean=last.get("geomean"), helion_wins=last.get("helion_wins"),
            total=last.get("total"), best_speedup=last.get("best_speedup"),
            baselines=last.get("baselines"), last_seen_date=last["date"], history=history,
        ))
    run_list = [dict(run_obj(r), kernel_count=len(summary)) for r in runs]
    return dict(
        generated_at=iso(latest.date), latest_run=dict(run_obj(latest), kernel_count=len(summary)),
        runs=run_list, platforms=sorted({i["platform"] for i in summary}),
        platform_shorts=sorted({i["platform_short"] for i in summary}),
        kernels=sorted({i["kernel"] for i in summary}), stats=dict(total=len(summary)),
        summary=summary,
    )
