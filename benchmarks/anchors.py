"""The two baselines benchwatch must beat, written from their public descriptions only.

- `naive_procedure`: the manual triage of `shared/helion-dashboard.md` ("The four causes of a
  move") automated the obvious way, in the order a person reads the rules.
- `hud_rule`: PyTorch HUD's Helion regression rule: baseline = median of the 4 nightlies before
  the last 4; a point is flagged below 0.85x (or 0.95x) of it; a regression when the last >= 2
  points are flagged. HUD gives no cause and no culprit.

Both read the published documents of the last nightly and emit alerts in the neutral format the
world scorers take (see `tests/blind_worlds.score`). Neither shares code with `service/`.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path
from statistics import median

HEADLINE = {"dashboard": "helion_speedup_geomean", "pretuned": "geomean"}
TAGS = {
    "b200_cute": ("cute", "cutedsl"), "tpu": ("pallas", "pallas-tpu", "tpu"), "mi350x": ("rocm", "amd"),
    "h100": ("triton",), "b200": ("triton",),
}
_TAG = re.compile(r"\[([^\]]+)\]")


def _trend(doc: dict, source: str) -> dict[tuple[str, str], list[dict]]:
    out = {}
    for row in doc.get("summary", []):
        hist = [h for h in row.get("history", []) if h.get("is_nightly") and h.get("branch") == "main"]
        hist.sort(key=lambda h: h["date"])
        out[(row["platform_short"], row["kernel"])] = hist
    return out


def _val(h: dict, metric: str) -> float | None:
    v = h.get(metric)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def _steps(hist: list[dict], metric: str, pct: float = 10.0, before: int = 5, after: int = 3):
    """(index of first-bad, before level, after level): a >= pct% change of the median of the
    next `after` nights against the previous `before`, holding for all `after` nights."""
    pts = [(i, v) for i, h in enumerate(hist) if (v := _val(h, metric)) is not None]
    out = []
    k = before
    while k + after <= len(pts):
        b = median(v for _, v in pts[k - before:k])
        nxt = [v for _, v in pts[k:k + after]]
        a = median(nxt)
        ch = (a - b) / b * 100
        if abs(ch) >= pct and all(((v - b) / b * 100) * ch > 0 and abs((v - b) / b * 100) >= pct / 2 for v in nxt):
            out.append((pts[k][0], b, a))
            k += before + after
        else:
            k += 1
    return out


def _window(repo: Path | None, lg: str, fb: str) -> list[tuple[str, str, list[str]]]:
    if repo is None or lg == fb:
        return []
    try:
        text = subprocess.run(
            ["git", "-C", str(repo), "log", "--first-parent", "--format=%x00%H%x01%s", "--name-only", f"{lg}..{fb}"],
            capture_output=True, text=True, timeout=60, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    out = []
    for chunk in text.split("\x00")[1:]:
        head, _, files = chunk.partition("\n")
        sha, _, subject = head.partition("\x01")
        out.append((sha, subject, [f for f in files.splitlines() if f.strip()]))
    return out  # newest first


def naive_procedure(docs: dict[str, dict], repo: Path | None, night_of) -> list[dict]:
    alerts = []
    for source, doc in docs.items():
        metric = HEADLINE[source]
        trend = _trend(doc, source)
        found = []
        for (plat, kernel), hist in trend.items():
            for i, b, a in _steps(hist, metric):
                found.append((plat, kernel, hist, i, b, a))
        by_night = defaultdict(set)
        for plat, kernel, hist, i, *_ in found:
            by_night[(plat, hist[i]["run_id"])].add(kernel)
        ran = defaultdict(int)
        for (plat, _k), hist in trend.items():
            for h in hist:
                ran[(plat, h["run_id"])] += 1
        for plat, kernel, hist, i, b, a in found:
            fb, lg = hist[i], hist[i - 1]
            run = fb["run_id"]
            share = len(by_night[(plat, run)]) / max(1, ran[(plat, run)])
            others = any(p != plat and r == run and len(ks) >= 2 for (p, r), ks in by_night.items())
            commits = _window(repo, lg["full_sha"], fb["full_sha"])
            cause, culprit, change = "real", None, None
            if share >= 0.5 and not others:
                cause = "hardware"
            elif source == "dashboard":
                moved = []
                for m in ("triton_speedup_geomean", "torch_compile_speedup_geomean"):
                    x, y = _val(lg, m), _val(fb, m)
                    if x and y:
                        moved.append(abs(y / x - 1) > 0.05 and (y / x - 1) * (a / b - 1) > 0)
                lx, ly = _val(lg, "helion_latency_avg_ms"), _val(fb, "helion_latency_avg_ms")
                latency_flat = bool(lx and ly and abs(ly / lx - 1) < 0.03)
                if (moved and all(moved)) or latency_flat:
                    cause = "method_change"
            if cause == "real":
                harness = [c for c in commits if any(f.startswith(("benchmarks/", ".github/workflows/benchmark"))
                                                     for f in c[2])]
                if harness and not any(f.startswith("helion/") for c in commits for f in c[2]):
                    cause, change = "method_change", harness[0][0]
            if cause == "real":
                tags = TAGS.get(plat, ())
                tagged = [c for c in commits if any(t.lower() in tags for t in _TAG.findall(c[1]))]
                code = [c for c in commits if any(f.startswith("helion/") for f in c[2])]
                pick = (tagged or code or commits)
                culprit = pick[0][0] if pick else None
            honest = a if cause == "real" else b
            alerts.append(dict(
                source=source, platform_short=plat, kernel=kernel, metric=metric,
                first_bad_run_id=run, last_good_run_id=lg["run_id"], cause=cause, kind=None,
                culprit_sha=culprit, change_sha=change, honest_speedup=honest, state="live", end_run_id=None,
                group_id=f"{source}:{plat}:{run}",
                first_posted_night=(night_of(hist[min(i + 2, len(hist) - 1)]["run_id"])),
            ))
    return alerts


def hud_rule(docs: dict[str, dict], night_of, threshold: float = 0.85) -> list[dict]:
    """HUD: flag when the last >= 2 of the last 4 points are below threshold x the baseline."""
    alerts = []
    for source, doc in docs.items():
        metric = HEADLINE[source]
        for (plat, kernel), hist in _trend(doc, source).items():
            pts = [(i, v) for i, h in enumerate(hist) if (v := _val(h, metric)) is not None]
            active = False
            for t in range(8, len(pts) + 1):
                window = pts[t - 8:t]
                base = median(v for _, v in window[:4])
                flags = [v < threshold * base for _, v in window[4:]]
                firing = flags[-1] and flags[-2]
                if firing and not active:
                    j = 3
                    while j > 0 and flags[j - 1]:
                        j -= 1
                    i = window[4 + j][0]
                    alerts.append(dict(
                        source=source, platform_short=plat, kernel=kernel, metric=metric,
                        first_bad_run_id=hist[i]["run_id"], last_good_run_id=hist[i - 1]["run_id"] if i else None,
                        cause=None, kind=None, culprit_sha=None, change_sha=None, honest_speedup=None,
                        state="live", end_run_id=None, group_id=None,
                        first_posted_night=night_of(hist[window[-1][0]]["run_id"]),
                    ))
                active = firing
    return alerts
