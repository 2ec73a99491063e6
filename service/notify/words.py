"""What a group says in words: the headline, the next step, metric and cause names.

Pure functions of a `GroupView` (no store, no settings), shared by Slack and the web page so the
two read the same. No internal check names: what a person reads is the move, the cause, the
commit and what to do about it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.domain import CAUSE_WORDS, AlertStatus, Cause, Direction, Kind, MoveState, metric

if TYPE_CHECKING:
    from service.notify.view import GroupView, KernelRow

# what changed, per kind of benchmark method change (the kernel itself did not)
METHOD_KIND_WORDS = {
    Kind.CUDAGRAPH: "a commit changed how this kernel is timed (CUDA graphs on or off)",
    Kind.SHAPES: "the input shapes changed, so the numbers before and after are not comparable",
    Kind.BASELINE: "the baseline changed (the torch/triton pins or the set of baselines), not Helion",
    Kind.AUTOTUNE: "the autotune settings of the nightly changed",
    Kind.TIMER: "the timer changed (how latency is measured)",
    Kind.HARNESS: "the benchmark harness changed",
}
KIND_WORDS = {
    Kind.CODE: "code change", Kind.HEURISTICS: "device heuristics", Kind.CUDAGRAPH: "CUDA graphs",
    Kind.SHAPES: "input shapes", Kind.BASELINE: "baseline", Kind.AUTOTUNE: "autotune settings",
    Kind.TIMER: "timer", Kind.HARNESS: "harness", Kind.RUNNER: "runner", Kind.DRIVER: "driver/image",
    Kind.THERMAL: "throttling", Kind.OUTAGE: "outage",
}


def metric_words(name: str) -> str:
    """A metric as people say it beside the others of a kernel: the catalogue's words, and
    "speedup" for the headline (which the catalogue leaves unnamed after a kernel's name)."""
    m = metric(name)
    return "speedup" if m.headline else m.words


def cause_words(cause: str, direction: str | None = None) -> str:
    if cause == Cause.REAL and direction == Direction.IMPROVEMENT:
        return "Real improvement"
    return CAUSE_WORDS.get(cause, str(cause))


def pct(x: float | None) -> str:
    """Signed percent with a real minus sign reading well in Slack and HTML."""
    if x is None:
        return "n/a"
    return f"{x:+.1f}%".replace("-", "−")


def _range(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.0f}%" if round(lo) == round(hi) else f"{lo:.0f}–{hi:.0f}%"


def where(view: GroupView) -> str:
    return ", ".join(view.platforms) or (view.platform_short or "several platforms")


def magnitude(view: GroupView) -> str:
    """"lost 10–14% speedup", "got 25% slower", "gained 30% speedup": the size of the move."""
    rows = [r for r in view.kernels if r.main_pct is not None]
    if not rows:
        return "moved"
    size = _range([abs(r.main_pct) for r in rows])
    improving = view.direction == Direction.IMPROVEMENT
    if all(r.speedup_pct is not None for r in rows):
        return f"{'gained' if improving else 'lost'} {size} speedup"
    if all(r.speedup_pct is None and r.latency_pct is not None for r in rows):
        return f"got {size} {'faster' if improving else 'slower'}"
    return f"{'improved' if improving else 'regressed'} {size}"


def who(view: GroupView) -> str:
    """"rms_norm", "rms_norm and 3 more": the lead kernel and how many others."""
    if not view.kernels:
        return "nothing"
    names = list(dict.fromkeys(r.kernel for r in view.kernels))
    return names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"


def commit_words(view: GroupView) -> str:
    c = view.commit
    if c is None:
        return ""
    role = "culprit" if c.role == "culprit" else "change commit"
    by = f" by {c.author}" if c.author else ""
    return f"{role} {c.sha} {c.subject}{by}".rstrip()


def verdict(view: GroupView) -> str:
    words = cause_words(view.cause, view.direction)
    if view.kind and view.cause != Cause.NOISE and not view.cause_by_human:
        words += f" ({KIND_WORDS.get(view.kind, view.kind)})"
    return words


def headline(view: GroupView) -> str:
    """The group in one sentence: who moved, where, how much, when, why, and the commit."""
    date = view.first_bad.date[:10]
    if view.withdrawn:
        how = "on-call marked it as noise" if view.cause_by_human else "it now looks like noise"
        return f"Retracted: the move of {who(view)} on {where(view)} on {date} ({how})"
    text = f"{who(view)} on {where(view)} {magnitude(view)} on {date}"
    if view.state == MoveState.ENDED and view.end is not None:
        text += f", recovered on {view.end.date[:10]}"
        if view.revert is not None:
            text += f" ({view.revert[:8]} reverted it)"
    text += f" — {verdict(view).lower() if not view.cause_by_human else verdict(view).lower() + ' (set by on-call)'}"
    cw = commit_words(view)
    if cw:
        text += f", {cw}"
    if view.all_closed:
        text += f" ({closed_word(view)})"
    return text


def closed_word(view: GroupView) -> str:
    all_dismissed = {s for s, _ in view.statuses} == {AlertStatus.DISMISSED}
    return (AlertStatus.DISMISSED if all_dismissed else AlertStatus.RESOLVED).value


def title(view: GroupView) -> str:
    """The Slack header (plain text, short): cause, who, where, how much."""
    if view.withdrawn:
        how = "on-call marked it as noise" if view.cause_by_human else "now looks like noise"
        return f"Retracted: {who(view)} on {where(view)} ({how})"
    text = f"{cause_words(view.cause, view.direction)}: {who(view)} on {where(view)} {magnitude(view)}"
    if view.all_closed:
        return f"{text} ({closed_word(view)})"
    if view.state == MoveState.ENDED:
        end = view.end.date[:10] if view.end else "a later nightly"
        return f"{text}, recovered on {end}"
    return f"{text} ({view.state})"  # provisional: may still retract; confirmed: the step held


def kernel_line(row: KernelRow) -> str:
    """"speedup −14.2%, latency +16.0%, honest 1.28x" (without the kernel's name)."""
    parts = []
    if row.speedup_pct is not None:
        parts.append(f"speedup {pct(row.speedup_pct)}")
    if row.latency_pct is not None:
        parts.append(f"latency {pct(row.latency_pct)}")
    parts += [f"{m} {pct(p)}" for m, p in row.other]
    if row.true_speedup is not None:
        parts.append(f"honest {row.true_speedup:.2f}x")
    return ", ".join(parts)


def next_steps(view: GroupView) -> tuple[str, ...]:
    """What on-call does now, per cause and kind."""
    if view.all_closed:
        return (f"Nothing left to do: every alert is {closed_word(view)}.",)
    if view.withdrawn:
        return ("Nothing to do: the series came back to its level. Dismiss the group if it is still open.",)
    steps: list[str] = []
    if view.state == MoveState.ENDED and view.end is not None:
        steps.append(f"It recovered on {view.end.date[:10]} ({view.end.sha}): check nothing else is needed, "
                     "then resolve.")
    c = view.commit
    places = where(view)
    if view.cause == Cause.REAL and view.direction == Direction.IMPROVEMENT:
        steps.append("Nothing to fix: check it is intended, then resolve the group "
                     "(the new level is the baseline from now on).")
    elif view.cause == Cause.REAL:
        if c is not None:
            steps.append(f"Ping {c.author or 'the author'} about {c.sha} “{c.subject}”; if the slowdown "
                         "is not intended, revert it.")
        else:
            steps.append("No single commit stands out: read the window's commits (the compare link) for "
                         "a change to these kernels or their device heuristics.")
        steps.append("Acknowledge while you look; resolve once the fix lands.")
    elif view.cause == Cause.METHOD_CHANGE:
        what = METHOD_KIND_WORDS.get(view.kind, "the measurement changed, not the kernel")
        steps.append(f"Helion did not get slower: {what}"
                     + (f" in {c.sha} “{c.subject}”" if c is not None else "") + ".")
        steps.append("Re-baseline on the new level (the honest speedup says which side to trust) "
                     "and dismiss the group.")
    elif view.cause == Cause.HARDWARE:
        if view.kind == Kind.RUNNER:
            steps.append(f"Check the runner of {places}: its runner label changed"
                         + (f" in {c.sha}" if c is not None else "") + ".")
        elif view.kind == Kind.DRIVER:
            steps.append(f"Check the image, driver and runtime of {places}"
                         + (f" (changed in {c.sha})" if c is not None else "") + ".")
        elif view.kind == Kind.THERMAL:
            steps.append(f"Check the {places} machines for throttling (clocks, temperature) and rerun "
                         "the nightly.")
        elif view.kind == Kind.OUTAGE:
            steps.append(f"Check that the {places} runners are up: the nightly did not run there.")
        else:
            steps.append(f"Check the {places} machines (runner, driver, clocks): other platforms did "
                         "not move and no code commit explains it.")
        steps.append("Resolve when the machine is fixed; if the new level stays, dismiss and re-baseline.")
    if view.first_bad.actions_url:
        steps.append("The nightly's logs are in its GitHub Actions run.")
    return tuple(steps)
