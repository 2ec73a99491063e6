"""The Slack Web API client benchwatch uses, and the three calls it makes through it.

Retries: slack-sdk's own handlers, for 429 (sleeps ``Retry-After``, up to ``slack.max_retry_after_s``) and 500/503 (exponential
back-off). Deliberately *not* its connection-error handler: a connection that drops after Slack
accepted a ``chat.postMessage`` would be retried into a duplicate; the outbox recovers that case
on the next run through ``conversations.history`` instead.
"""

from __future__ import annotations

import random
import time
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler, ServerErrorRetryHandler
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.http_retry.jitter import Jitter

from service.config import Settings
from service.errors import BenchwatchError

EVENT_TYPE = "benchwatch_message"
# errors that mean "nothing will get through right now": stop and leave the rest pending
FATAL = frozenset({
    "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
    "no_permission", "missing_scope", "channel_not_found", "not_in_channel", "is_archived",
    "ratelimited", "fatal_error", "internal_error", "service_unavailable", "request_timeout",
})
# errors about the payload itself: retrying the same payload cannot help
PAYLOAD = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_too_long", "no_text",
                     "invalid_metadata_format", "invalid_metadata_schema", "metadata_too_large"})


class SlackFailure(Exception):
    """One failed call: ``code`` is Slack's error string or ``http_<status>``/``connection``."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code, self.detail = code, detail

    @property
    def fatal(self) -> bool:
        return self.code in FATAL or self.code.startswith(("http_", "connection"))

    @property
    def bad_payload(self) -> bool:
        return self.code in PAYLOAD

    @property
    def answered(self) -> bool:
        """Slack itself refused the call, so nothing was posted. A dropped connection, a timeout
        or a gateway's 5xx leave that unknown: the message may be in the channel."""
        return not self.code.startswith(("connection", "http_5"))

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


class _ScaledJitter(Jitter):
    """slack-sdk's default jitter adds up to a whole second; keep it in proportion to the back-off."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def recalculate(self, duration: float) -> float:
        return duration + random.random() * self.scale


class _CappedRateLimitHandler(RateLimitErrorRetryHandler):
    """slack-sdk's 429 handler, except that a ``Retry-After`` longer than ``cap_s`` is not slept
    through: the call fails (``http_429``), the pass stops delivering and the rows stay queued
    for the next run, instead of holding the run lock for as long as Slack asks."""

    def __init__(self, max_retry_count: int, cap_s: float) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.cap_s = cap_s

    @staticmethod
    def _retry_after(response) -> float:
        for k, v in (response.headers or {}).items():
            if k.lower() == "retry-after":
                try:
                    return max(0.0, float(v[0] if isinstance(v, list) else v))
                except (TypeError, ValueError, IndexError):
                    return 1.0
        return 1.0

    def _can_retry(self, *, state, request, response=None, error=None) -> bool:
        return (response is not None and response.status_code == 429
                and self._retry_after(response) <= self.cap_s)

    def prepare_for_next_attempt(self, *, state, request, response=None, error=None) -> None:
        if response is None:
            raise error  # type: ignore[misc]
        state.next_attempt_requested = True
        time.sleep(min(self._retry_after(response), self.cap_s) + random.random() * 0.1)
        state.increment_current_attempt()


MAX_TEXT = 3000  # what a shortened message's fallback text is cut to
MAX_SHORT_BLOCKS = 6


def shorten(message: dict) -> dict:
    """A message Slack refused as too long (``msg_too_long``), cut to fit rather than dropped:
    the fallback text capped, and only the first few blocks (header, summary, culprit, link)."""
    note = " … (shortened to fit Slack; the full message is on the group page)"
    text = str(message.get("text") or "")
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT - len(note)] + note
    out: dict[str, Any] = {"text": text}
    blocks = message.get("blocks")
    if blocks:
        out["blocks"] = list(blocks[:MAX_SHORT_BLOCKS]) + [
            {"type": "context", "elements": [{"type": "mrkdwn", "text": note.strip(" …()")}]}
        ]
    return out


def make_client(settings: Settings) -> WebClient | None:
    """None when no token is configured (notifications then go to the log)."""
    token = settings.slack.token.get_secret_value()
    if not token:
        return None
    if not settings.slack.channel:
        raise BenchwatchError("slack.channel is empty: set BENCHWATCH_SLACK_CHANNEL (a channel id)")
    kwargs: dict[str, Any] = {}
    if settings.slack.api_url:
        url = settings.slack.api_url
        if not url.startswith(("http://", "https://")):
            raise BenchwatchError("slack.api_url must be an http(s) URL")
        kwargs["base_url"] = url if url.endswith("/") else url + "/"
    s = settings.slack
    handlers = [
        _CappedRateLimitHandler(max_retry_count=s.retries, cap_s=s.max_retry_after_s),
        ServerErrorRetryHandler(
            max_retry_count=s.retries,
            interval_calculator=BackoffRetryIntervalCalculator(
                backoff_factor=s.backoff_s, jitter=_ScaledJitter(s.backoff_s)),
        ),
    ]
    return WebClient(token=token, timeout=int(max(1, s.timeout_s)), retry_handlers=handlers, **kwargs)


def _call(fn, **kwargs) -> Any:
    try:
        return fn(**kwargs)
    except SlackApiError as exc:
        status = getattr(exc.response, "status_code", 200)
        code = exc.response.get("error") if hasattr(exc.response, "get") else None
        if status and status != 200:
            code = f"http_{status}"
        raise SlackFailure(str(code or "unknown_error"), str(exc).splitlines()[0][:300]) from None
    except (OSError, ValueError) as exc:  # URLError, timeouts, dropped connections
        raise SlackFailure("connection", f"{exc.__class__.__name__}: {exc}"[:300]) from None


def check(client: WebClient) -> str:
    """auth.test: a clear one-line failure for a bad token before any message is attempted."""
    resp = _call(client.auth_test)
    return str(resp.get("user") or resp.get("bot_id") or "")


def metadata(key: str, group_id: int | None, revision: int) -> dict:
    return {"event_type": EVENT_TYPE,
            "event_payload": {"key": key, "group_id": group_id or 0, "revision": revision}}


def post(client: WebClient, channel: str, message: dict, meta: dict) -> str:
    resp = _call(client.chat_postMessage, channel=channel, text=message["text"],
                 blocks=message.get("blocks"), metadata=meta, unfurl_links=False, unfurl_media=False)
    return str(resp["ts"])


def update(client: WebClient, channel: str, ts: str, message: dict, meta: dict) -> None:
    _call(client.chat_update, channel=channel, ts=ts, text=message["text"],
          blocks=message.get("blocks"), metadata=meta)


def find_posted(client: WebClient, channel: str, key: str, pages: int) -> str | None:
    """The ts of a message we posted with this outbox key, searching recent channel history."""
    cursor = None
    for _ in range(pages):
        kwargs: dict[str, Any] = {"channel": channel, "limit": 200, "include_all_metadata": True}
        if cursor:
            kwargs["cursor"] = cursor
        resp = _call(client.conversations_history, **kwargs)
        for m in resp.get("messages") or []:
            meta = m.get("metadata") or {}
            if meta.get("event_type") == EVENT_TYPE and (meta.get("event_payload") or {}).get("key") == key:
                return str(m["ts"])
        cursor = (resp.get("response_metadata") or {}).get("next_cursor")
        if not resp.get("has_more") or not cursor:
            return None
    return None
