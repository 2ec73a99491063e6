"""Block Kit rendering of one group's Slack message, the backfill digest and the daily digest.

Every string that came from outside (kernel names, commit subjects, evidence, notes, names) goes
through ``escape`` before it is placed in mrkdwn: Slack treats ``<...>`` as links/mentions and
``&`` as an entity, so an unescaped commit subject could ping ``<!channel>`` or forge a link.
Each message also carries a plain-text fallback (``text``) for notifications and old clients.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from service.config import Settings
from service.domain import Cause
from service.notify import words
from service.notify.view import GroupView, KernelRow

MAX_SECTION = 2900  # Slack's limit is 3000 characters per section text
MAX_HEADER = 150
MAX_KERNELS = 12


def escape(text: Any) -> str:
    """Slack mrkdwn escaping: only these three characters are control characters."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cap(text: str, limit: int = MAX_SECTION) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _cap(text)}}


def _url(base: str, path: str) -> str:
    base = base.rstrip("/")
    return escape(f"{base}{path}").replace("|", "%7C")


def _link(url: str | None, label: str) -> str:
    """``<url|label>`` for a URL we built (GitHub, our own pages), else the label as code."""
    if not url:
        return f"`{escape(label)}`"
    return f"<{escape(url).replace('|', '%7C')}|{escape(label)}>"


def _kernel_line(row: KernelRow, with_platform: bool) -> str:
    where = f"{escape(row.platform_short)}/" if with_platform else ""
    return f"• `{where}{escape(row.kernel)}`: {escape(words.kernel_line(row))}"


def _commit_section(view: GroupView) -> str:
    c = view.commit
    label = {Cause.REAL: "Culprit", Cause.METHOD_CHANGE: "Change commit", Cause.HARDWARE: "Runner/hardware commit"}
    if c is None:
        if view.cause == Cause.HARDWARE:
            return "*Runner/hardware commit:* none in the window (an environment change)"
        if view.cause == Cause.REAL:
            return "*Culprit:* no single commit stands out"
        return ""
    by = f" by *{escape(c.author)}*" if c.author else ""
    return f"*{label.get(view.cause, 'Commit')}:* {_link(c.url, c.sha)} {escape(c.subject)}{by}".rstrip()


def render_group(view: GroupView) -> dict[str, Any]:
    """The group's one message: {"text": fallback, "blocks": [...]}. Pure: every link and
    word comes from the view, so the message and the group page say the same."""
    title = words.title(view)
    retracted = view.withdrawn
    cross = len(view.platforms) > 1
    fb, lg = view.first_bad, view.last_good

    facts = [f"{escape(words.headline(view))}."]
    window = f"*First bad nightly:* {_link(fb.actions_url, fb.sha)} {fb.date[:10]}"
    if lg is not None:
        window += f"  ·  *last good:* `{escape(lg.sha)}` {lg.date[:10]}"
    if view.compare_url:
        window += f"  ·  {_link(view.compare_url, 'commits in between')}"
    facts.append(window)
    if view.cause_by_human:
        facts.append(f"*Cause set by on-call* (benchwatch said: {words.cause_words(view.machine_cause)})")
    if view.assignee:
        facts.append(f"*Assigned to:* {escape(view.assignee)}")

    rows = view.kernels
    lines = [_kernel_line(r, cross) for r in rows[:MAX_KERNELS]]
    if len(rows) > MAX_KERNELS:
        lines.append(f"… and {len(rows) - MAX_KERNELS} more")
    kernels = f"*Kernels ({len(rows)}):*\n" + "\n".join(lines)

    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cap(title, MAX_HEADER), "emoji": True}},
        _section("\n".join(facts)),
        _section(kernels),
    ]
    commit_text = "" if retracted else _commit_section(view)
    if commit_text:
        blocks.append(_section(commit_text))
    if not retracted and view.evidence:
        blocks.append(_section("*Why:*\n" + "\n".join(f"• {escape(d)}" for d in view.evidence[:4])))
    steps = words.next_steps(view)
    if steps:
        blocks.append(_section("*Next:* " + " ".join(escape(s) for s in steps)))
    blocks.append(_section(_link(view.group_url, "Open in benchwatch")))
    context = [escape(view.state), f"revision {view.revision}"]
    if view.statuses:
        context.append(", ".join(f"{n} {escape(s)}" for s, n in view.statuses))
    for h in [e for e in view.audit if e.action != "note"][-3:]:
        text = f"{escape(h.action)} by {escape(h.by)}"
        if h.action == "reclassified" and h.new:
            text += f" as {words.cause_words(h.new)}"
        if h.action == "assigned" and h.new:
            text += f" to {escape(h.new)}"
        if h.note:
            text += f": {escape(h.note[:200])}"
        context.append(text)
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _cap(" · ".join(context))}]})

    summary = "; ".join(f"{escape(r.kernel)} {escape(words.kernel_line(r))}" for r in rows[:5]) + (
        f" and {len(rows) - 5} more" if len(rows) > 5 else "")
    text = f"{escape(title)}: {summary}; first bad {escape(fb.sha)} {fb.date[:10]}"
    if commit_text:
        text += "; " + commit_text.replace("*", "")
    text += f"; {view.group_url}"
    return {"text": _cap(text, 3000), "blocks": blocks}


def render_history_digest(n_moves: int, n_groups: int, settings: Settings, *, outages: int = 0) -> dict[str, Any]:
    """The one message a backfill posts instead of one per old group: moves, and platform
    outages that ended before benchwatch watched (found in the stored history)."""
    link = _url(settings.web.base_url, "/")
    days = settings.notify.max_age_days
    parts = [(f"{n_moves} historical moves recorded", f" ({n_groups} groups older than {days} days)",
              f" in {n_groups} groups older than {days} days")] if n_moves else []
    if outages:
        s = "s" if outages != 1 else ""
        parts.append((f"{outages} past platform outage{s} recorded", " (found in the stored history)",
                      " found in the stored history"))
    text = "; ".join(head + tail for head, tail, _ in parts) + f", see the queue: {link}"
    block = "; ".join(f"*{head}*{tail}" for head, _, tail in parts)
    return {"text": text, "blocks": [_section(
        f":card_index_dividers: {block}. They are not posted one by one; <{link}|see the queue>."
    )]}


def render_daily_digest(rows: Iterable[dict], settings: Settings, now: datetime) -> dict[str, Any]:
    """Open groups by age and cause. ``rows``: {"cause", "age_days", "platforms", "kernels"}."""
    buckets = (("today", 0, 1), ("1-3 days", 1, 4), ("4-7 days", 4, 8), ("older", 8, 10**9))
    rows = list(rows)
    link = _url(settings.web.base_url, "/")
    if not rows:
        text = f"benchwatch {now:%Y-%m-%d}: no open alert groups."
        return {"text": text, "blocks": [_section(escape(text))]}
    table = []
    for label, lo, hi in buckets:
        mine = [r for r in rows if lo <= r["age_days"] < hi]
        if not mine:
            continue
        by_cause: dict[str, int] = {}
        for r in mine:
            by_cause[r["cause"]] = by_cause.get(r["cause"], 0) + 1
        table.append(f"*{label}:* " + ", ".join(
            f"{n} {words.cause_words(c).lower()}" for c, n in sorted(by_cause.items())
        ))
    text = f"benchwatch {now:%Y-%m-%d}: {len(rows)} open alert groups; {link}"
    return {"text": text, "blocks": [
        _section(f"*Open alert groups on {now:%Y-%m-%d}: {len(rows)}*\n" + "\n".join(table)),
        _section(f"<{link}|Open the queue>"),
    ]}
