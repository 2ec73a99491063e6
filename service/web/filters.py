"""Jinja filters: how dates, ages, percentages, causes and commit links look on every page."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from urllib.parse import quote, urlsplit, urlunsplit

import jinja2

from service.domain import CAUSE_WORDS, Cause, Direction, GroupKind, MoveState, badge_label
from service.notify.words import cause_words

FULL_SHA = re.compile(r"[0-9a-f]{40}")


def _parse(value) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def fmt_date(value, with_time: bool = False) -> str:
    dt = _parse(value)
    if dt is None:
        return "—"
    return dt.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")


def fmt_age(value, now: datetime | None = None) -> str:
    dt = _parse(value)
    if dt is None:
        return "—"
    secs = ((now or datetime.now(timezone.utc)) - dt).total_seconds()
    if secs < 3600:
        return f"{max(0, int(secs // 60))}m"
    if secs < 86400:
        return f"{int(secs // 3600)}h"
    return f"{int(secs // 86400)}d"


def fmt_pct(value) -> str:
    if value is None:
        return "—"
    return f"{float(value):+.1f}%".replace("-", "−")


def fmt_num(value, digits: int = 3) -> str:
    if value is None:
        return "—"
    try:
        return f"{float(value):.{digits}g}"
    except (TypeError, ValueError):
        return str(value)


def commit_url(base: str, full_sha) -> str | None:
    """A GitHub commit link, only for a well-formed 40-hex sha."""
    sha = str(full_sha or "").lower()
    if not FULL_SHA.fullmatch(sha):
        return None
    return f"{base.rstrip('/')}/commit/{quote(sha)}"


def safe_url(value) -> str:
    """A source location without credentials or query (a URL may carry a token)."""
    text = str(value or "")
    parts = urlsplit(text)
    if not parts.scheme or not parts.netloc:
        return text
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


# badges beside the causes: the same words Slack uses
LABEL_WORDS = {GroupKind.HEALTH: "Health", Direction.IMPROVEMENT: cause_words(Cause.REAL, Direction.IMPROVEMENT),
               MoveState.RETRACTED: "Retracted"}


def install_filters(env: jinja2.Environment) -> None:
    env.filters.update(
        date=fmt_date, age=fmt_age, pct=fmt_pct, num=fmt_num, safe_url=safe_url,
        cause_label=lambda c: {**CAUSE_WORDS, **LABEL_WORDS}.get(str(c), str(c)),
    )
    env.globals.update(commit_url=commit_url, badge_label=badge_label)
