"""Classify an event from its footprint, then give each member the event's verdict.

Members inherit the event's cause and kind: a person decides "B200 lost 12% on every kernel on
the 14th because the runner changed" once, not kernel by kernel. A member keeps a cause of its
own only on strong evidence that is its own (its measurement changed in the window while the
event's cause is something else). The honest speedup is the member's, read off the side the
event's cause and kind say is honest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from service.classify.explain import Explanation, LikelihoodTable, best_cause, explain
from service.classify.footprint import (
    COMPILE_FACTS,
    GLOBAL_METHOD_FACTS,
    HARDWARE_ATTRIBUTES,
    METHOD_MECHANISMS,
    FACT_MECHANISM,
    EventInput,
    Thresholds,
    kind_of,
    observe,
    own_method_fact,
)
from service.classify.metrics import is_speedup
from service.domain import MoveState
from service.records import Classification, Evidence, FactChange, Move, RankedCommit, CAUSE_WORDS


# which facts name the change commit of a cause/kind, most specific first
_CHANGE_FACTS = {
    "hardware": ("runner_label", "toolchain", "toolchain_pin"),
    "method_change": ("cudagraph_flag", "pretuned_cudagraph", "num_inputs", "linattn_shapes", "kernel_dropped",
                      "kernel_added", "bench_args", "baseline_impl", "baseline_pin", "pretuned_baseline", "autotune",
                      "latency_mode", "bench_command", "pretuned_timer"),
}


@dataclass(frozen=True)
class EventVerdict:
    cause: str
    kind: str
    confidence: float
    evidence: tuple[Evidence, ...]
    explanation: Explanation
    culprit: RankedCommit | None = None
    change_fact: FactChange | None = None  # the repo fact behind a method/hardware verdict
    ended: bool = False


def shared_facts(ev: EventInput) -> frozenset[tuple[str, str, str | None]]:
    """Facts about how *every* kernel is measured (pins, autotune, timer flags): the platforms of
    one nightly that share one moved because of the same change, and are explained together."""
    return frozenset((f.kind, f.path, f.new) for f in ev.platform_facts if f.kind in GLOBAL_METHOD_FACTS)


def pool_scores(own: dict[int, dict[str, float]], own_cause_ratio: float) -> dict[int, dict[str, float]]:
    """The platform groups of one nightly that share one change to how every kernel is measured,
    decided together: each gets the log-likelihoods summed over the group (``own``: each group's
    own). A group whose own observations find another cause ``own_cause_ratio`` times likelier
    than the shared verdict is not part of that change (one kernel whose Helion time moved on
    both timers while its baselines stayed flat, the night a baseline pin moved every other
    platform) and keeps its own verdict: it is left out of the sum, and the sum is taken again."""
    keep = dict(own)
    apart = math.log(own_cause_ratio)
    while len(keep) >= 2:
        total: dict[str, float] = {}
        for scores in keep.values():
            for cause, v in scores.items():
                total[cause] = total.get(cause, 0.0) + v
        shared = best_cause(total)
        out = {gid: s for gid, s in keep.items() if max(s.values()) - s.get(shared, -math.inf) >= apart}
        if not out:
            return {gid: dict(total) for gid in keep}
        keep = {gid: s for gid, s in keep.items() if gid not in out}
    return {}


def classify_event(ev: EventInput, table: LikelihoodTable, th: Thresholds | None = None,
                   pooled: dict[str, float] | None = None) -> EventVerdict:
    """The event's verdict. ``pooled``: log-likelihoods summed over the platforms of the nightly
    that share a change to how every kernel is measured; they decide the cause together."""
    th = th or Thresholds()
    obs = observe(ev, th)
    ex = explain(obs, table)
    cause = ex.cause
    if pooled:
        cause = best_cause(pooled)
    lone = None if pooled else _lone_reason(cause, obs, ev, th)
    if lone:
        cause = "noise"
    kind = kind_of(cause, obs, ev)
    lean = {name: (c, m) for name, c, m in ex.leaning}
    evidence = []
    decisive = ex.decisive
    scores = pooled or ex.scores
    where = "on every platform that shares the change" if pooled else "best"
    if lone:
        head = (f"{CAUSE_WORDS[cause]} ({kind}): one kernel moved, {lone}, and nothing in the window changes "
                "how it is measured or the machine, so no cause explains it")
    else:
        head = f"{CAUSE_WORDS[cause]} ({kind}): explains every observation {where}{_margin_words(cause, scores)}"
    if decisive is not None:
        head += f"; decisive: {decisive.detail}"
    evidence.append(Evidence("event", cause, head, {
        "scores": ex.scores, "kind": kind, "decisive": decisive.name if decisive else None,
        "platform": ev.platform, "kernels": [k.kernel for k in ev.kernels][:30],
    }))
    for o in obs:
        c, margin = lean.get(o.name, ("neutral", 0.0))
        verdict = c if margin >= 0.4 else "neutral"
        evidence.append(Evidence(o.name, verdict, o.detail,
                                 {"value": o.value, "decisive": decisive is o, **o.facts}))
    culprit = reported_culprit(ev.top_candidate, th) if cause == "real" else None
    change = _change_fact(cause, ev, compile_only=any(o.name == "metrics" and o.value == "compile_only" for o in obs))
    return EventVerdict(cause, kind, ex.confidence, tuple(evidence), ex, culprit, change, ev.ended)


def reported_culprit(top: RankedCommit | None, th: Thresholds) -> RankedCommit | None:
    """The commit a real event (or member) names: the best-ranked one, the best lead a person
    has with its score and reasons, from ``th.report_culprit`` on."""
    return top if top is not None and top.score >= th.report_culprit else None


def _lone_reason(cause: str, obs: list, ev: EventInput, th: Thresholds) -> str | None:
    """Why one kernel's move that the table gives a cause is that series' noise instead, in words
    for the evidence (None: it is not)."""
    if cause == "method_change" and _unexplained_lone(obs):
        return "its timers disagree"
    if cause == "hardware" and _lone_machine(obs, ev, th):
        return "it alone moved"
    return None


def _unexplained_lone(obs: list) -> bool:
    """One kernel moved, and what favours a method change is only its timers disagreeing: no
    fact, commit, attribute or compile time says how its measurement changed. A person calls
    that a flaky measurement to watch, not a method change to re-baseline."""
    by = {o.name: o.value for o in obs}
    return by.get("breadth") == "single" and not any((o.name, o.value) in METHOD_MECHANISMS for o in obs)


def _lone_machine(obs: list, ev: EventInput, th: Thresholds) -> bool:
    """One kernel of the several that ran moved, and what favours the machine is only that
    Helion did not change or that the level came back: no runner, image or pin changed for the
    platform and no device attribute of the track did. A machine re-times every kernel it runs,
    so one series alone is the series' own noise, not a hardware issue."""
    by = {o.name: o.value for o in obs}
    attrs = {a for k in ev.kernels for a in k.attributes}
    return (by.get("breadth") == "single" and ev.ran >= th.most_min_kernels
            and by.get("platform_change") == "none" and not attrs & HARDWARE_ATTRIBUTES)


def _change_fact(cause: str, ev: EventInput, compile_only: bool = False) -> FactChange | None:
    order = _CHANGE_FACTS.get(cause)
    if not order:
        return None
    if compile_only and cause == "method_change":
        order = (*COMPILE_FACTS, *(k for k in order if k not in COMPILE_FACTS))
    facts = [*ev.platform_facts, *(f for k in ev.kernels for f in k.facts)]
    for kind in order:
        for f in facts:
            if f.kind == kind:
                return f
    return None


# --- honest speedup -----------------------------------------------------------------------------


def _x(v: float) -> str:
    return f"{v:.2f}x"


def honest_speedup(move: Move, cause: str, kind: str, fact: FactChange | None = None) -> tuple[float | None, str]:
    """The level a person should believe for this member, and why."""
    m = move
    if not is_speedup(m.key.metric):
        return None, (f"{m.key.metric} is not a speedup; its level is {m.before:.4g} before and {m.after:.4g} after")
    if cause == "real":
        return m.after, f"Helion is now {_x(m.after)} (was {_x(m.before)}): Helion itself changed"
    if cause == "hardware":
        if m.after > m.before and m.state != MoveState.ENDED:
            # a lasting gain from the machine (a faster runner, a better driver): the new machine is the
            # healthy one, and every later nightly runs on it
            return m.after, (f"{_x(m.after)} on the machine {m.key.platform_short} runs on now, faster than before "
                             f"({_x(m.before)}): the gain is the machine's, not Helion's")
        return m.before, (f"{_x(m.before)} on healthy hardware: the level before {m.key.platform_short} changed; "
                          f"{_x(m.after)} measures the machine, not Helion")
    if cause == "noise":
        return m.before, "the series' level: the move is noise"
    if kind == "cudagraph" and fact is not None and fact.kind == "cudagraph_flag":
        graphed_after = (fact.new or "").strip().lower() == "cudagraph"
        side = m.after if graphed_after else m.before
        return side, (f"{_x(side)}: the {'after' if graphed_after else 'before'} side is timed under CUDA graphs, "
                      "the dashboard's method (without graphs CPU launch overhead is timed, not the kernel)")
    return m.after, (f"{_x(m.after)}: the kernel did not change, how it is measured did ({kind}); the new level "
                     "is what the benchmark measures from now on and what later nightlies compare with, and the "
                     "old one cannot be re-measured")


def _persistence(m: Move) -> Evidence:
    nights = f"{m.nights_after} nightl{'y' if m.nights_after == 1 else 'ies'}"
    if m.state == "ended":
        when = f"ended after {nights}" + (f" (back on {m.end.date:%Y-%m-%d})" if m.end is not None else "")
    else:
        when = f"{m.state}, {nights} at the new level"
    scatter = ("σ of the two timers' scatter together (each alone is under the one-night bar)" if m.joint
               else "σ of the series' own scatter, under the one-night bar but held for many nightlies either side"
               if m.held else "σ of the series' own scatter")
    return Evidence("persistence", "neutral",
                    f"{m.key.metric} {m.change_pct:+.1f}% is {m.significance:.1f}{scatter}; {when}",
                    {"significance": round(m.significance, 2), "nights_after": m.nights_after, "state": m.state})


def member_classification(
    v: EventVerdict, move: Move, own_facts: tuple[FactChange, ...] = (), own: Classification | None = None,
    candidates: tuple[RankedCommit, ...] = (),
) -> Classification:
    """The event's verdict for one member (its own cause only on its own strong evidence)."""
    cause, kind, fact = v.cause, v.kind, v.change_fact
    evidence = (v.evidence[0], _persistence(move), *v.evidence[1:])
    mine = own_method_fact(own_facts, move.key.kernel)
    if mine is not None and cause != "method_change":
        cause, fact = "method_change", mine
        kind = FACT_MECHANISM.get(mine.kind, "shapes")
        evidence = (Evidence("own_evidence", cause, f"{move.key.kernel}'s own measurement changed: {mine.detail}",
                             {"kind": mine.kind, "decisive": True}), *evidence)
    value, reason = honest_speedup(move, cause, kind, fact)
    if own is not None:
        evidence = (*evidence, *(e for e in own.evidence if e.check not in {x.check for x in evidence}))
    return Classification(
        cause=cause, confidence=v.confidence, evidence=tuple(evidence), true_speedup=value,
        true_speedup_reason=reason, culprit=v.culprit if cause == "real" else None,
        change_commit=None, candidates=tuple(candidates) if cause == "real" else (),
        related=own.related if own is not None else (), kind=kind,
    )


def own_configs_member(c: Classification, move: Move, fact: FactChange, commit: RankedCommit | None) -> Classification:
    """A member whose own checked-in configs were regenerated in the window, in an event that
    something else explains (52326a08 changed the pretuned timer for every kernel and
    regenerated silu_mul_fp8's sm90 configs): the configs Helion runs for it changed, strong
    evidence of its own, so it is a real change of its own, its culprit the commit that made them."""
    value, reason = honest_speedup(move, "real", "heuristics", fact)
    mine = Evidence("own_evidence", "real", f"{move.key.kernel}'s own configs changed: {fact.detail}",
                    {"kind": fact.kind, "decisive": True})
    return replace(c, cause="real", kind="heuristics", evidence=(mine, *c.evidence), true_speedup=value,
                   true_speedup_reason=reason, culprit=commit, change_commit=None,
                   candidates=(commit,) if commit is not None else ())


def with_change_commit(c: Classification, commit: RankedCommit | None) -> Classification:
    return replace(c, change_commit=commit) if c.cause in ("method_change", "hardware") else c


def _margin_words(cause: str, scores: dict[str, float]) -> str:
    """How much better the winner explains the event than the runner-up, in words a person reads
    (the summed log likelihoods stay in the evidence's facts)."""
    others = [(v, c) for c, v in scores.items() if c != cause]
    if not others or cause not in scores:
        return ""
    v, runner = max(others)
    ratio = math.exp(min(scores[cause] - v, 50.0))
    if ratio >= 1000:
        return f", far likelier than {CAUSE_WORDS.get(runner, runner).lower()}"
    return f", about {ratio:.0f}× likelier than {CAUSE_WORDS.get(runner, runner).lower()}" if ratio >= 1.5 else \
        f", only slightly likelier than {CAUSE_WORDS.get(runner, runner).lower()}"
