"""The honest ("true") speedup of a moved series: which level to believe, and why, per cause.

- real: the level after (Helion really changed);
- hardware: the level before (what healthy hardware measures);
- noise: the series' level (median of recent nightlies);
- method_change: the side measured honestly, by the first rule that applies:
  1. cudagraph flag changed -> the side timed under CUDA graphs (the dashboard's method: without
     graphs the CPU launch overhead is timed, not the kernel);
  2. shape list changed -> the side with more shapes (a geomean over fewer shapes hides the
     dropped ones, usually the hard ones); same count, different shapes -> after (the set the
     benchmark now defines; the old level cannot be re-measured);
  3. baseline changed (label, set of baselines, or every comparator stepped with it) -> the lower
     figure: it is against the faster baseline, and a slower baseline only flatters Helion;
  4. otherwise -> before: the kernel did not change, so the level of the established method stands.
"""

from __future__ import annotations

import math
from statistics import median

from service.classify.checks import Finding, fact_for_kernel, sibling_step
from service.classify.context import MoveContext
from service.classify.levels import recent_values
from service.classify.metrics import is_speedup
from service.classify.settings import ClassifySettings


def _x(v: float) -> str:
    return f"{v:.2f}x"


def true_speedup(
    ctx: MoveContext, cause: str, findings: dict[str, Finding], s: ClassifySettings
) -> tuple[float | None, str]:
    m = ctx.move
    metric = m.key.metric
    if not is_speedup(metric):
        return None, (
            f"{metric} is not a speedup, so there is no true speedup; its level is {m.before:.4g} before "
            f"and {m.after:.4g} after the step"
        )
    if cause == "real":
        why = []
        if _says(findings, "persistence", "real"):
            why.append("the step persists")
        if _says(findings, "helion_only", "real"):
            why.append("is Helion-only")
        if _says(findings, "timer_agreement", "real"):
            why.append("latency agrees")
        because = (", ".join(why[:-1]) + " and " + why[-1] if len(why) > 1 else why[0]) if why \
            else "the evidence points at Helion itself"
        return m.after, f"Helion is now {_x(m.after)} (was {_x(m.before)}): {because}"
    if cause == "hardware":
        return m.before, (
            f"{_x(m.before)} on healthy hardware: the level before {m.key.platform_short} stepped; "
            f"the {_x(m.after)} after it measures the machine, not Helion"
        )
    if cause == "noise":
        return _noise_level(ctx, s)
    return _method_side(ctx, findings, s)


def _says(findings: dict[str, Finding], check: str, verdict: str) -> bool:
    f = findings.get(check)
    return f is not None and f.verdict == verdict


def _noise_level(ctx: MoveContext, s: ClassifySettings) -> tuple[float, str]:
    m = ctx.move
    vals = recent_values(ctx.series, s.level_nights) if ctx.series is not None else []
    if vals:
        return median(vals), f"the series' level: median of the last {len(vals)} nightlies (the move is noise)"
    if m.state == "retracted":
        return m.before, "the level before: the step reverted"
    level = math.sqrt(m.before * m.after) if m.before > 0 and m.after > 0 else m.before
    return level, "between the two levels: the step is inside the series' normal scatter"


def _cudagraph_side(ctx: MoveContext) -> str | None:
    """"before"/"after": the side timed under CUDA graphs, when the flag is known to have changed."""
    for ch in ctx.attribute_changes:
        if getattr(ch, "attribute", "") == "cudagraph":
            new = str(getattr(ch, "new", "")).lower()
            if new in ("true", "1", "1.0"):
                return "after"
            if new in ("false", "0", "0.0"):
                return "before"
    for f in ctx.repo_facts:
        if f.kind == "cudagraph_flag" and fact_for_kernel(f, ctx.move.key.kernel):
            old, new = _graphed(f.old), _graphed(f.new)
            if old is not None and new is not None and old != new:
                return "after" if new else "before"
    return None


def _graphed(value: str | None) -> bool | None:
    """A culprit fact's side ("cudagraph" / "no cudagraph") as graphed or not; None if unreadable."""
    v = (value or "").strip().lower()
    if v in ("cudagraph", "true", "graphed"):
        return True
    if v in ("no cudagraph", "false", "not graphed"):
        return False
    return None


def _shape_side(ctx: MoveContext, s: ClassifySettings) -> tuple[str, str] | None:
    sb, sa = ctx.shapes_before, ctx.shapes_after
    nb = na = None
    if sb is not None and sa is not None and tuple(sb) != tuple(sa):
        nb, na = len(sb), len(sa)
    elif ctx.move.key.source == "pretuned":
        st = sibling_step(ctx, "total", s)
        if st is not None and round(st.before) != round(st.after):
            nb, na = round(st.before), round(st.after)
    if nb is None:
        return None
    if nb == na:
        return "after", (f"the {na} shapes were swapped for others: the after side is the set the benchmark "
                         "now defines, and the old level cannot be re-measured")
    side = "before" if nb > na else "after"
    return side, (f"the shape list changed ({nb} -> {na} shapes): the {side} side covers more shapes, and a "
                  "geomean over fewer shapes hides the dropped (usually hard) ones")


def _baseline_changed(ctx: MoveContext, findings: dict[str, Finding]) -> str | None:
    for ch in ctx.attribute_changes:
        if getattr(ch, "attribute", "") in ("baseline_label", "baselines"):
            return getattr(ch, "detail", "") or "the baseline changed"
    if _says(findings, "helion_only", "method_change"):
        return "the comparators stepped with it, so the baseline moved"
    return None


def _method_side(ctx: MoveContext, findings: dict[str, Finding], s: ClassifySettings) -> tuple[float, str]:
    m = ctx.move
    pick = {"before": m.before, "after": m.after}
    side = _cudagraph_side(ctx)
    if side is not None:
        return pick[side], (
            f"{_x(pick[side])}: the cudagraph flag changed and the {side} side is timed under CUDA graphs, the "
            "dashboard's method; without graphs the CPU launch overhead is timed, not the kernel"
        )
    shaped = _shape_side(ctx, s)
    if shaped is not None:
        return pick[shaped[0]], f"{_x(pick[shaped[0]])}: {shaped[1]}"
    why = _baseline_changed(ctx, findings)
    if why is not None:
        low = min(m.before, m.after)
        return low, (f"{_x(low)}: {why}; the lower figure is against the faster baseline, and a slower "
                     "baseline only flatters Helion")
    if _says(findings, "timer_agreement", "method_change"):
        return m.before, (f"{_x(m.before)}: do_bench latency did not move with the speedup, so Helion's speed did "
                          "not change; the level of the established method stands")
    return m.before, (f"{_x(m.before)}: the measurement changed and nothing shows the new method is more "
                      "faithful, so the established level stands")
