"""classify_move: run the six checks, weigh them (config weights) into a cause and a confidence.

The rule, so a person can check a verdict by hand:
- a retracted move, or one below `min_significance`, is noise (confidence from how far below);
- otherwise each check's verdict adds weight(check) * strength to its cause; the heaviest of
  real / method_change / hardware wins (ties: real, method_change, hardware), and
  confidence = winner / (all non-neutral weight + confidence_prior), so thin evidence stays unsure;
- nothing speaking at all leaves "real" at low confidence: a significant step is Helion's until shown otherwise.
Improvements go through the same rule (a real improvement is "real").
"""

from __future__ import annotations

from collections import defaultdict

from service.classify import checks
from service.classify.checks import Finding
from service.classify.context import MoveContext
from service.classify.settings import ClassifySettings
from service.classify.truth import true_speedup
from service.records import Classification, Move

ORDER = ("real", "method_change", "hardware")


def run_checks(ctx: MoveContext, s: ClassifySettings) -> dict[str, Finding]:
    b = checks.breadth_facts(ctx, s)
    return {
        "persistence": checks.persistence(ctx, s),
        "helion_only": checks.helion_only(ctx, s, b),
        "timer_agreement": checks.timer_agreement(ctx, s, b),
        "breadth": checks.breadth(ctx, s, b),
        "method_tells": checks.method_tells(ctx, s, b),
        "commit_window": checks.commit_window(ctx, s, b),
    }


def combine(findings: dict[str, Finding], s: ClassifySettings) -> tuple[str, float]:
    p = findings["persistence"]
    if p.verdict == "noise":
        return "noise", round(0.5 + 0.5 * p.strength, 3)
    score: dict[str, float] = defaultdict(float)
    for check, f in findings.items():
        if f.verdict in ORDER:
            score[f.verdict] += s.weight(check) * f.strength
    total = sum(score.values())
    if total <= 0:
        return "real", round(1.0 / (2.0 + s.confidence_prior), 3)
    cause = max(ORDER, key=lambda c: score[c])
    return cause, round(min(1.0, score[cause] / (total + s.confidence_prior)), 3)


def related(peers: tuple[Move, ...]) -> tuple[dict, ...]:
    return tuple(
        {"platform_short": p.key.platform_short, "kernel": p.key.kernel, "metric": p.key.metric,
         "change_pct": round(p.change_pct, 2)}
        for p in sorted(peers, key=lambda p: (p.key.platform_short, p.key.kernel, p.key.metric))
        if p.state != "retracted"
    )


def classify_move(ctx: MoveContext, settings: ClassifySettings | None = None) -> Classification:
    """Cause, confidence, the six evidence items, the honest speedup and the commits behind it."""
    s = settings or ClassifySettings()
    findings = run_checks(ctx, s)
    cause, confidence = combine(findings, s)
    value, reason = true_speedup(ctx, cause, findings, s)
    culprit = change = None
    candidates: tuple = ()
    if cause == "real":
        candidates = tuple(ctx.candidates)
        top = candidates[0] if candidates else None
        culprit = top if top is not None and top.score >= s.culprit_min_score else None
    elif cause == "method_change":
        change = ctx.harness_commit
    elif cause == "hardware":
        change = ctx.runner_commit
    return Classification(
        cause=cause,
        confidence=confidence,
        evidence=tuple(f.evidence for f in findings.values()),
        true_speedup=value,
        true_speedup_reason=reason,
        culprit=culprit,
        change_commit=change,
        candidates=candidates,
        related=related(ctx.peer_moves),
    )
