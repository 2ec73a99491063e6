"""The Slack Web API client benchwatch uses, and the three calls it makes through it.

Retries: slack-sdk's own handlers, for 429 (sleeps ``Retry-After``) and 500/503 (exponential
back-off). Deliberately *not* its connection-error handler: a connection that drops after Slack
accepted a ``chat.postMessage`` would be retried into a duplicate; the outbox recovers that case
on the next run through ``conversations.history`` instead.
"""

from __future__ import annotations

import random
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

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


class _ScaledJitter(Jitter):
    """slack-sdk's default jitter adds up to a whole second; keep it in proportion to the back-off."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def recalculate(self, duration: float) -> float:
        return duration + random.random() * self.scale


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
        RateLimitErrorRetryHandler(max_retry_count=s.retries),
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
