"""Block Kit rendering of one group's Slack message, the backfill digest and the daily digest.

Every string that came from outside (kernel names, commit subjects, evidence, notes, names) goes
through ``escape`` before it is placed in mrkdwn: Slack treats ``<...>`` as links/mentions and
``&`` as an entity, so an unescaped commit subject could ping ``<!channel>`` or forge a link.
Each message also carries a plain-text fallback (``text``) for notifications and old clients.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Iterable

from service.config import Settings
from service.records import CAUSE_WORDS, HEADLINE

MAX_SECTION = 2900  # Slack's limit is 3000 characters per section text
MAX_HEADER = 150
MAX_KERNELS = 12
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def escape(text: Any) -> str:
    """Slack mrkdwn escaping: only these three characters are control characters."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cause_words(cause: str, direction: str | None = None) -> str:
    if cause == "real" and direction == "improvement":
        return "Real improvement"
    return CAUSE_WORDS.get(cause, escape(cause))


def _cap(text: str, limit: int = MAX_SECTION) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _cap(text)}}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1f}%"


def _date(iso: str | None) -> str:
    return (iso or "")[:10]


def _url(base: str, path: str) -> str:
    base = base.rstrip("/")
    return escape(f"{base}{path}").replace("|", "%7C")


def commit_link(settings: Settings, commit: dict | None) -> str:
    """`sha` linked to GitHub, then the escaped subject."""
    if not commit:
        return "none found"
    full = str(commit.get("full_sha") or "")
    sha = escape(str(commit.get("sha") or full[:8]))
    subject = escape(commit.get("subject") or "")
    if _HEX40.match(full) and settings.helion.github_url:
        link = f"<{_url(settings.helion.github_url, '/commit/' + full)}|{sha}>"
    else:
        link = f"`{sha}`"
    return f"{link} {subject}".strip()


def _direction(alerts: list[dict]) -> str | None:
    dirs = {a.get("direction") for a in alerts}
    return dirs.pop() if len(dirs) == 1 else None


def _most_common_commit(alerts: list[dict], field: str) -> dict | None:
    seen: dict[str, tuple[int, dict]] = {}
    for a in alerts:
        c = a.get(field)
        if c and c.get("full_sha"):
            n, _ = seen.get(c["full_sha"], (0, c))
            seen[c["full_sha"]] = (n + 1, c)
    if not seen:
        return None
    return max(seen.values(), key=lambda t: t[0])[1]


METRIC_WORDS = {
    "helion_latency_avg_ms": "latency",
    "compile_time_geomean_s": "compile time",
    "triton_speedup_geomean": "triton speedup",
    "torch_compile_speedup_geomean": "torch.compile speedup",
    "best_speedup": "best speedup",
}


def metric_words(metric: str) -> str:
    """"" for the headline metric (the default reading), else a short name."""
    if metric in HEADLINE:
        return ""
    if metric.startswith("baseline:") and metric.endswith(":geomean"):
        return f"{metric.split(':', 2)[1]} baseline"
    return METRIC_WORDS.get(metric, metric)


def _kernel_line(a: dict, with_platform: bool) -> str:
    words = metric_words(a["metric"])
    metric = f" ({escape(words)})" if words else ""
    where = f"{escape(a['platform_short'])}/" if with_platform else ""
    return f"• `{where}{escape(a['kernel'])}`{metric} {_pct(a['change_pct'])}"


def _short(a: dict) -> str:
    words = metric_words(a["metric"])
    return f"{escape(a['kernel'])}{f' ({escape(words)})' if words else ''} {_pct(a['change_pct'])}"


def _title(view: dict) -> str:
    alerts = view["alerts"]
    where = ", ".join(view["platforms"]) or (view["platform_short"] or "several platforms")
    words = cause_words(view["cause"], _direction(alerts))
    if view.get("kind") and view["cause"] != "noise" and not view["cause_by_human"]:
        words += f" ({escape(view['kind'])})"
    if view["cause"] == "noise" and view["cause_by_human"]:
        return f"Retracted: on-call marked the move on {where} as noise"
    if view["state"] == "retracted" or view["cause"] == "noise":
        return f"Retracted: the move on {where} now looks like noise"
    if view["all_closed"]:
        closed = "dismissed" if set(view["statuses"]) == {"dismissed"} else "resolved"
        return f"{words} on {where} ({closed})"
    if view["state"] == "ended":
        end = view.get("end") or {}
        when = (end.get("date") or "")[:10]
        sha = f" ({end['sha']})" if end.get("sha") else ""
        return f"{words} on {where}: recovered on {when or 'a later nightly'}{sha}"
    return f"{words} on {where} ({view['state']})"


def render_group(view: dict, settings: Settings) -> dict[str, Any]:
    """The group's one message: {"text": fallback, "blocks": [...]}."""
    alerts = view["alerts"]
    cause = view["cause"]
    title = _title(view)
    retracted = title.startswith("Retracted")
    cross = len(view["platforms"]) > 1
    top = alerts[0] if alerts else None
    link = _url(settings.web.base_url, f"/groups/{view['id']}")
    fb = view["first_bad"]

    facts = [
        f"*Platform:* {escape(', '.join(view['platforms']) or view['platform_short'] or '?')}"
        f"  ·  *Source:* {escape(view['source'])}",
        f"*First bad nightly:* `{escape(fb['sha'])}` {_date(fb['date'])}",
    ]
    if top:
        lg = top["last_good"]
        facts.append(
            f"*Window:* `{escape(lg['sha'])}` ({_date(lg['date'])}) .. `{escape(top['first_bad']['sha'])}`"
            f" ({_date(top['first_bad']['date'])})"
        )
    if view["cause_by_human"]:
        facts.append(f"*Cause set by on-call* (the machine said: {cause_words(view['machine_cause'])})")
    else:
        facts.append(f"*Confidence:* {float(view['confidence']):.0%}")

    lines = [_kernel_line(a, cross) for a in alerts[:MAX_KERNELS]]
    if len(alerts) > MAX_KERNELS:
        lines.append(f"… and {len(alerts) - MAX_KERNELS} more")
    kernels = f"*Kernels ({len(alerts)}):*\n" + "\n".join(lines)

    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cap(title, MAX_HEADER), "emoji": True}},
        _section("\n".join(facts)),
        _section(kernels),
    ]
    culprit_text = ""
    if not retracted:
        if cause == "real":
            c = _most_common_commit(alerts, "culprit")
            culprit_text = f"*Culprit:* {commit_link(settings, c)}"
        elif cause == "method_change":
            c = _most_common_commit(alerts, "change_commit")
            culprit_text = f"*Harness commit:* {commit_link(settings, c)}"
        elif cause == "hardware":
            c = _most_common_commit(alerts, "change_commit")
            culprit_text = f"*Runner/hardware commit:* {commit_link(settings, c)}" if c else \
                "*Runner/hardware commit:* none in the window (an environment change)"
        if culprit_text:
            blocks.append(_section(culprit_text))
        honest = [a for a in alerts if a.get("true_speedup") is not None][:3]
        if honest:
            blocks.append(_section("*Honest speedup:*\n" + "\n".join(
                f"• `{escape(a['kernel'])}`: {a['true_speedup']:.2f}x"
                + (f" ({escape(a['true_speedup_reason'])})" if a.get("true_speedup_reason") else "")
                for a in honest
            )))
        details: list[str] = []
        for e in list(view["evidence"]) + list(top["evidence"] if top else []):
            d = str(e.get("detail") or "")
            if d and d not in details:
                details.append(d)
        if details:
            blocks.append(_section("*Evidence:*\n" + "\n".join(f"• {escape(d)}" for d in details[:4])))
    blocks.append(_section(f"<{link}|Open in benchwatch>"))
    context = [f"{escape(view['state'])}", f"revision {view['revision']}"]
    if view["statuses"]:
        context.append(", ".join(f"{n} {escape(s)}" for s, n in sorted(view["statuses"].items())))
    for h in view["human_actions"]:
        text = f"{escape(h['action'])} by {escape(h['by'])}"
        if h.get("action") == "reclassified" and h.get("new"):
            text += f" as {cause_words(h['new'])}"
        if h.get("note"):
            text += f": {escape(h['note'][:200])}"
        context.append(text)
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _cap(" · ".join(context))}]})

    summary = ", ".join(_short(a) for a in alerts[:5]) + (
        f" and {len(alerts) - 5} more" if len(alerts) > 5 else "")
    text = f"{escape(title)}: {summary}; first bad {escape(fb['sha'])} {_date(fb['date'])}"
    if culprit_text:
        text += "; " + culprit_text.replace("*", "")
    text += f"; {link}"
    return {"text": _cap(text, 3000), "blocks": blocks}


def render_history_digest(n_moves: int, n_groups: int, settings: Settings) -> dict[str, Any]:
    """The one message a backfill posts instead of one per old group."""
    link = _url(settings.web.base_url, "/")
    text = (f"{n_moves} historical moves recorded ({n_groups} groups older than "
            f"{settings.notify.max_age_days} days), see the queue: {link}")
    return {"text": text, "blocks": [_section(
        f":card_index_dividers: *{n_moves} historical moves recorded* in {n_groups} groups older than "
        f"{settings.notify.max_age_days} days. They are not posted one by one; <{link}|see the queue>."
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
            f"{n} {cause_words(c).lower()}" for c, n in sorted(by_cause.items())
        ))
    text = f"benchwatch {now:%Y-%m-%d}: {len(rows)} open alert groups; {link}"
    return {"text": text, "blocks": [
        _section(f"*Open alert groups on {now:%Y-%m-%d}: {len(rows)}*\n" + "\n".join(table)),
        _section(f"<{link}|Open the queue>"),
    ]}
