"""A small on-call world for the web tests, screenshots and `benchmarks/web_load.py`.

Rows are inserted directly (runs, tracks, series, points, alerts, groups, history), the way the
pipeline leaves them, so the web is tested without depending on detection. Untrusted strings
carry XSS payloads on purpose: a kernel name, a commit subject and an audit note.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import insert

from service.records import DASHBOARD_METRICS
from service.store.db import chunks
from service.store.tables import (
    Alert, AlertGroup, AlertHistory, IngestLog, Point, Run, Series, ShapeValue, Track, TrackEvent,
)

T0 = datetime(2026, 1, 1, 8, 0)
XSS_SUBJECT = "[Triton] faster tiling <script>alert(1)</script>"
XSS_KERNEL = "<img src=x onerror=alert(2)>"
XSS_NOTE = "<b>bold</b><script>alert(3)</script>"
PLATFORMS = ("h100", "b200", "mi350x")
KERNELS = ("gemm", "softmax", "layer_norm", "rms_norm", "vector_add", "sum", "attention", "cross_entropy")


EVIDENCE = {
    "real": {"check": "helion_only", "verdict": "real", "detail": "triton and torch.compile stayed flat"},
    "hardware": {"check": "breadth", "verdict": "hardware",
                 "detail": "5 kernels on h100 moved the same night, baselines too; other platforms flat"},
    "method_change": {"check": "timer_agreement", "verdict": "method_change",
                      "detail": "speedup moved but latency (the other timer) did not"},
    "noise": {"check": "reverts", "verdict": "noise", "detail": "the series returned to its level"},
}


def full_sha(i: int) -> str:
    return f"{i:08x}" + "c0ffee" * 5 + "ab"


@dataclass
class World:
    runs: list[int] = field(default_factory=list)  # run pks, trend order
    series: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (platform, kernel, metric)
    tracks: dict[tuple[str, str], int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)  # name -> group id
    alerts: dict[str, int] = field(default_factory=dict)  # name -> alert id


def _value(metric: str, night: int, step: dict[str, float], rng: random.Random) -> float | None:
    base = {"helion_speedup_geomean": 1.6, "triton_speedup_geomean": 1.2,
            "torch_compile_speedup_geomean": 1.1, "helion_latency_avg_ms": 0.8,
            "compile_time_geomean_s": 12.0}[metric]
    v = base * (1 + rng.gauss(0, 0.01)) * step.get(metric, 1.0)
    return round(v, 5)


def build_world(store, *, nights: int = 60, kernels: tuple[str, ...] = KERNELS,
                extra_groups: int = 0, seed: int = 7, start: datetime = T0) -> World:
    """Three platforms x kernels, `nights` trend nightlies and one manual run.

    Named groups: "real" (b200, night nights-20, gemm + the XSS kernel; culprit subject with a
    script tag), "hardware" (h100, every kernel, night nights-30), "method" (mi350x softmax with
    a harness commit). `extra_groups` adds random small groups (for the load benchmark).
    """
    rng = random.Random(seed)
    w = World()
    T0 = start  # noqa: N806 - the world's first night
    real_night, hw_night, method_night = nights - 20, nights - 30, nights - 12
    now = T0 + timedelta(days=nights)
    with store.session() as s:
        run_rows = [
            dict(source="dashboard", run_id=str(10_000 + i), sha=full_sha(i)[:8], full_sha=full_sha(i),
                 date=T0 + timedelta(days=i), branch="main", is_nightly=True, is_trend=True, kernel_count=len(kernels))
            for i in range(nights)
        ]
        s.execute(insert(Run), run_rows)
        s.add(Run(source="dashboard", run_id="99999", sha=full_sha(9999)[:8], full_sha=full_sha(9999),
                  date=T0 + timedelta(days=5, hours=4), branch="feature", is_nightly=False, is_trend=False))
        s.flush()
        from sqlalchemy import select
        pk_of = dict(s.execute(select(Run.run_id, Run.id).where(Run.source == "dashboard")).all())
        w.runs = [pk_of[str(10_000 + i)] for i in range(nights)]
        all_kernels = {p: list(kernels) + ([XSS_KERNEL] if p == "b200" else []) for p in PLATFORMS}
        tracks = {(p, k): Track(source="dashboard", platform_short=p, platform=f"NVIDIA {p.upper()}", kernel=k)
                  for p in PLATFORMS for k in all_kernels[p]}
        s.add_all(tracks.values())
        s.flush()  # one batched INSERT .. RETURNING per table, not one round trip per row
        series = {(p, k, m): Series(track_id=t.id, metric=m) for (p, k), t in tracks.items() for m in DASHBOARD_METRICS}
        s.add_all(series.values())
        s.flush()
        w.tracks = {key: t.id for key, t in tracks.items()}
        w.series = {key: sr.id for key, sr in series.items()}
        points = []
        for (p, k, m), sid in w.series.items():
            for i, pk in enumerate(w.runs):
                step: dict[str, float] = {}
                if p == "b200" and k in ("gemm", XSS_KERNEL) and i >= real_night:
                    step = {"helion_speedup_geomean": 0.8, "helion_latency_avg_ms": 1.25}
                if p == "h100" and i >= hw_night:
                    step = {mm: 0.85 for mm in DASHBOARD_METRICS}
                    step["helion_latency_avg_ms"] = 1.18
                if p == "mi350x" and k == "softmax" and i >= method_night:
                    step = {"helion_speedup_geomean": 1.3}
                failed = (i == 7 and k == "sum")
                points.append(dict(series_id=sid, run_pk=pk, value=None if failed else _value(m, i, step, rng),
                                   failed=failed))
        for chunk in chunks(points, 5000):
            s.execute(insert(Point), chunk)
        last = w.runs[-1]
        for i, shape in enumerate(("[1024, 1024]", "[2048, 4096]")):
            s.add(ShapeValue(track_id=w.tracks[("b200", "gemm")], run_pk=last, shape_index=i, shape=shape,
                             helion_speedup=1.3 + i / 10, triton_speedup=1.2, torch_compile_speedup=1.1,
                             helion_accuracy=1.0, helion_compile_time_s=10.0, helion_latency_ms=0.9))
        s.add(TrackEvent(track_id=w.tracks[("mi350x", "softmax")], run_pk=w.runs[method_night],
                         attribute="baseline_label", old_value=None, new_value="fla", seen_at=now))
        s.add(IngestLog(source="dashboard", location="http://127.0.0.1/dashboard-data.json",
                        started_at=now, finished_at=now + timedelta(seconds=3), outcome="added",
                        runs_added=nights, points_added=len(points)))

        def group(name: str, platform: str | None, night: int, cause: str, state: str = "confirmed") -> AlertGroup:
            g = AlertGroup(source="dashboard", first_bad_run_pk=w.runs[night], platform_short=platform,
                           cause=cause, confidence=0.82, state=state, revision=1,
                           evidence=[{"check": "breadth", "verdict": cause, "detail": f"{platform} moved"}],
                           created_at=T0 + timedelta(days=night + 1), updated_at=T0 + timedelta(days=night + 1))
            s.add(g)
            s.flush()
            w.groups[name] = g.id
            return g

        def alert(name: str, g: AlertGroup | None, platform: str, kernel: str, night: int, cause: str,
                  change: float, metric: str = "helion_speedup_geomean", **extra) -> Alert:
            a = Alert(series_id=w.series[(platform, kernel, metric)], group_id=g.id if g else None,
                      last_good_run_pk=w.runs[night - 1], first_bad_run_pk=w.runs[night],
                      last_good_value=1.6, first_bad_value=1.6 * (1 + change / 100), before=1.6,
                      after=1.6 * (1 + change / 100), change_pct=change,
                      direction="regression" if change < 0 else "improvement", significance=9.0,
                      noise_sigma=0.01, nights_after=nights - night, state="confirmed", status="open",
                      cause=cause, confidence=0.8,
                      evidence=[{"check": "persistence", "verdict": "neutral", "detail": "the step held 20 nights"},
                                EVIDENCE[cause]],
                      true_speedup=1.28, true_speedup_reason="cudagraph-timed speedup agrees with latency",
                      created_at=T0 + timedelta(days=night + 1), updated_at=T0 + timedelta(days=night + 1),
                      **extra)
            s.add(a)
            s.flush()
            s.add(AlertHistory(alert_id=a.id, at=a.created_at, by="benchwatch", action="created",
                               new_value=cause))
            w.alerts[name] = a.id
            return a

        culprit = {"sha": full_sha(500)[:8], "full_sha": full_sha(500), "subject": XSS_SUBJECT,
                   "date": (T0 + timedelta(days=real_night, hours=-3)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "score": 3.5, "reasons": ["touches helion/_compiler", "slice tag [Triton]"]}
        other = {"sha": full_sha(501)[:8], "full_sha": full_sha(501), "subject": "[docs] fix typo",
                 "date": culprit["date"], "score": 0.2, "reasons": ["docs only"]}
        g = group("real", "b200", real_night, "real")
        alert("gemm", g, "b200", "gemm", real_night, "real", -20.0, culprit=culprit, candidates=[culprit, other])
        alert("xss", g, "b200", XSS_KERNEL, real_night, "real", -19.5, culprit=culprit, candidates=[culprit])
        s.add(AlertHistory(alert_id=w.alerts["xss"], at=now, by="alice", action="note", note=XSS_NOTE))
        g = group("hardware", "h100", hw_night, "hardware")
        for k in kernels[:5]:
            alert(f"hw-{k}", g, "h100", k, hw_night, "hardware", -15.0 - kernels.index(k))
        harness = {"sha": full_sha(600)[:8], "full_sha": full_sha(600), "subject": "[benchmark] switch timer",
                   "date": (T0 + timedelta(days=method_night, hours=-2)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "score": 2.0, "reasons": ["touches benchmarks/run.py"]}
        g = group("method", "mi350x", method_night, "method_change", state="provisional")
        alert("method", g, "mi350x", "softmax", method_night, "method_change", 30.0, change_commit=harness,
              candidates=[harness])
        g = group("noise", "b200", nights - 40, "noise")
        a = alert("noise", g, "b200", "softmax", nights - 40, "noise", -6.0)
        a.status = "resolved"
        used = {(real_night, "b200"), (hw_night, "h100"), (method_night, "mi350x"), (nights - 40, "b200")}
        free = [(n, p) for n in range(2, nights) for p in PLATFORMS if (n, p) not in used]
        if extra_groups > len(free):
            raise ValueError(f"{extra_groups} extra groups need more nights than {nights}")
        for i, (night, plat) in enumerate(sorted(rng.sample(free, extra_groups))):
            cause = rng.choice(("real", "method_change", "hardware", "noise"))
            g = group(f"extra-{i}", plat, night, cause, state=rng.choice(("provisional", "confirmed")))
            for j, k in enumerate(rng.sample(kernels, min(len(kernels), rng.randint(1, 3)))):
                a = alert(f"extra-{i}-{j}", g, plat, k, night, cause, round(rng.uniform(-40, 40), 2),
                          metric=rng.choice(DASHBOARD_METRICS), candidates=[other])
                a.status = rng.choice(("open", "open", "acknowledged", "resolved"))
    return w
