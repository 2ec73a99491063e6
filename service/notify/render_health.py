"""Block Kit rendering of one nightly's health message: every finding of the nightly, grouped
by platform, each marked "recovered <date>" once its condition clears. Every outside string
(kernel and shape names, error strings) goes through ``escape``: a pretuned error can hold
``<!channel>`` or a forged link."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from service.config import Settings
from service.domain import AlertStatus
from service.health.records import KIND_WORDS, KINDS
from service.notify.render import MAX_HEADER, _cap, _section, _url, escape

MAX_LINES = 30


def _line(a: dict) -> str:
    words = KIND_WORDS.get(a["kind"], a["kind"])
    text = f"*{escape(words)}*: {escape(a['detail'])}"
    if a["state"] == "recovered":
        return f"~{text}~ recovered {(a['recovered_at'] or '')[:10]}"
    if a["status"] != AlertStatus.OPEN and a["state"] != "info":  # someone acted on it
        text += f" ({escape(a['status'])})"
    return text


def title(view: dict) -> str:
    alerts = view["alerts"]
    failing = [a for a in alerts if a["state"] == "active"]
    what = f"Health: {view['source']} nightly {view['day']}"
    if not failing:
        if all(a["state"] == "info" for a in alerts):
            return f"{what}: matrix changed"
        last = max((a["recovered_at"] or "" for a in alerts), default="")[:10]
        return f"{what}: recovered {last}"
    kinds = sorted({a["kind"] for a in failing}, key=KINDS.index)
    return f"{what}: " + ", ".join(KIND_WORDS[k].lower() for k in kinds)


def render_health(view: dict, settings: Settings) -> dict[str, Any]:
    """{"text": fallback, "blocks": [...]} for one health group (see health_group_view)."""
    head = title(view)
    by_platform: dict[str, list[dict]] = defaultdict(list)
    for a in sorted(view["alerts"], key=lambda a: (KINDS.index(a["kind"]), a["kernel"] or "")):
        by_platform[a["platform_short"] or "all platforms"].append(a)
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cap(head, MAX_HEADER), "emoji": True}},
    ]
    if view.get("nightly"):
        n = view["nightly"]
        blocks.append(_section(f"*Source:* {escape(view['source'])}  ·  *Newest nightly:* "
                               f"`{escape(n['sha'])}` {(n['date'] or '')[:10]}"))
    shown = 0
    for platform in sorted(by_platform, key=lambda p: (p == "all platforms", p)):
        lines = [f"• {_line(a)}" for a in by_platform[platform]]
        room = MAX_LINES - shown
        if room <= 0:
            break
        extra = len(lines) - room
        lines = lines[:room] + ([f"… and {extra} more"] if extra > 0 else [])
        shown += len(lines)
        blocks.append(_section(f"*{escape(platform)}*\n" + "\n".join(lines)))
    link = _url(settings.web.base_url, f"/groups/{view['id']}")
    blocks.append(_section(f"<{link}|Open in benchwatch>"))
    blocks.append({"type": "context", "elements": [
        {"type": "mrkdwn", "text": f"health · revision {view['revision']}"}]})
    first = [a for a in view["alerts"] if a["state"] == "active"][:3] or view["alerts"][:1]
    text = f"{escape(head)}: " + "; ".join(escape(a["detail"]) for a in first) + f"; {link}"
    return {"text": _cap(text, 3000), "blocks": blocks}
