"""A small local HTTP server speaking the slice of the Slack Web API benchwatch uses.

Tests point slack-sdk's ``WebClient(base_url=...)`` at it, so the real client code (JSON bodies,
bearer tokens, retry handlers, ``Retry-After``) is exercised without reaching slack.com.
Methods: ``auth.test``, ``chat.postMessage``, ``chat.update``, ``conversations.history``
(with ``include_all_metadata``). Failures are scripted per method:

- ``fail(method, status=500, times=n)``: answer ``status`` n times (nothing recorded);
- ``fail(method, status=429, times=n, retry_after=s)``: rate limited, with ``Retry-After``;
- ``drop(method)``: record the message, then close the connection without answering (the
  client never learns the ``ts``: a crash between "Slack posted" and "we marked it sent");
- ``delay(method, seconds)``: record the message, then wait before answering (lets a test kill
  the calling process while Slack has already posted);
- ``refuse(method, error, times=n)``: answer 200 ``{"ok": false, "error": error}`` n times, as
  Slack does for a payload it rejects (``invalid_blocks``, ``msg_too_long``).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.net import QuietHTTPServer

TOKEN = "xoxb-standin-token"


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    blocks: list
    metadata: dict | None
    edits: list[dict] = field(default_factory=list)  # every chat.update applied, in order

    def as_api(self, with_metadata: bool) -> dict:
        out: dict[str, Any] = {"type": "message", "ts": self.ts, "text": self.text, "blocks": self.blocks}
        if with_metadata and self.metadata is not None:
            out["metadata"] = self.metadata
        return out


@dataclass
class _Fault:
    kind: str  # status | drop | delay | refuse
    times: int
    status: int = 500
    retry_after: int | None = None
    seconds: float = 0.0
    error: str = ""


class SlackStandIn:
    """Start with ``with SlackStandIn() as slack:``; ``slack.base_url`` goes to WebClient."""

    def __init__(self, token: str = TOKEN, channels: tuple[str, ...] = ("C0TRIAGE",), host: str = "127.0.0.1") -> None:
        self.token = token
        self.channels = set(channels)
        self.messages: list[Message] = []
        self.calls: list[tuple[str, int]] = []  # (method, http status answered)
        self._faults: dict[str, list[_Fault]] = {}
        self._lock = threading.Lock()
        self._seq = 0
        self._server = QuietHTTPServer((host, 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # --- life cycle ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/api/"

    def start(self) -> "SlackStandIn":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "SlackStandIn":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- scripting ----------------------------------------------------------------------

    def fail(self, method: str, *, status: int = 500, times: int = 1, retry_after: int | None = None) -> None:
        with self._lock:
            self._faults.setdefault(method, []).append(_Fault("status", times, status, retry_after))

    def refuse(self, method: str, error: str, times: int = 1) -> None:
        with self._lock:
            self._faults.setdefault(method, []).append(_Fault("refuse", times, error=error))

    def drop(self, method: str, times: int = 1) -> None:
        with self._lock:
            self._faults.setdefault(method, []).append(_Fault("drop", times))

    def delay(self, method: str, seconds: float, times: int = 1) -> None:
        with self._lock:
            self._faults.setdefault(method, []).append(_Fault("delay", times, seconds=seconds))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str) -> _Fault | None:
        with self._lock:
            queue = self._faults.get(method) or []
            if not queue:
                return None
            fault = queue[0]
            fault.times -= 1
            if fault.times <= 0:
                queue.pop(0)
            return fault

    # --- reads for assertions -----------------------------------------------------------

    def count(self, method: str, status: int | None = None) -> int:
        return sum(1 for m, s in self.calls if m == method and (status is None or s == status))

    def by_group(self, group_id: int) -> list[Message]:
        return [
            m for m in self.messages
            if (m.metadata or {}).get("event_payload", {}).get("group_id") == group_id
        ]

    # --- the API ------------------------------------------------------------------------

    def _next_ts(self) -> str:
        with self._lock:
            self._seq += 1
            return f"{int(time.time())}.{self._seq:06d}"

    def _api(self, method: str, args: dict) -> tuple[int, dict]:
        if method == "auth.test":
            return 200, {"ok": True, "team": "standin", "user": "benchwatch", "bot_id": "B0BENCH"}
        if method == "chat.postMessage":
            channel = args.get("channel", "")
            if channel not in self.channels:
                return 200, {"ok": False, "error": "channel_not_found"}
            if not args.get("text") and not args.get("blocks"):
                return 200, {"ok": False, "error": "no_text"}
            blocks = args.get("blocks") or []
            if isinstance(blocks, str):
                blocks = json.loads(blocks)
            msg = Message(channel, self._next_ts(), args.get("text", ""), blocks, args.get("metadata"))
            with self._lock:
                self.messages.append(msg)
            return 200, {"ok": True, "channel": channel, "ts": msg.ts, "message": msg.as_api(True)}
        if method == "chat.update":
            with self._lock:
                found = [m for m in self.messages if m.channel == args.get("channel") and m.ts == args.get("ts")]
                if not found:
                    return 200, {"ok": False, "error": "message_not_found"}
                msg = found[0]
                blocks = args.get("blocks") or []
                if isinstance(blocks, str):
                    blocks = json.loads(blocks)
                msg.text, msg.blocks = args.get("text", msg.text), blocks
                if args.get("metadata") is not None:
                    msg.metadata = args["metadata"]
                msg.edits.append({"text": msg.text, "blocks": blocks})
            return 200, {"ok": True, "channel": msg.channel, "ts": msg.ts, "text": msg.text}
        if method == "conversations.history":
            channel = args.get("channel", "")
            if channel not in self.channels:
                return 200, {"ok": False, "error": "channel_not_found"}
            with_meta = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
            oldest = float(args.get("oldest") or 0)
            limit = max(1, min(int(args.get("limit") or 100), 1000))
            start = int(args.get("cursor") or 0)
            with self._lock:
                mine = [m for m in reversed(self.messages) if m.channel == channel and float(m.ts) >= oldest]
            page = mine[start : start + limit]
            more = start + limit < len(mine)
            return 200, {
                "ok": True,
                "messages": [m.as_api(with_meta) for m in page],
                "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""},
            }
        return 404, {"ok": False, "error": "unknown_method"}

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet test output
                pass

            def _args(self) -> dict:
                parsed = urlparse(self.path)
                args = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                ctype = self.headers.get("Content-Type", "")
                if body and "json" in ctype:
                    args.update(json.loads(body))
                elif body:
                    args.update({k: v[-1] for k, v in parse_qs(body.decode()).items()})
                return args

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                method = urlparse(self.path).path.rsplit("/", 1)[-1]
                args = self._args()
                if self.headers.get("Authorization") != f"Bearer {standin.token}":
                    standin.calls.append((method, 200))
                    self._send(200, {"ok": False, "error": "invalid_auth"})
                    return
                fault = standin._take_fault(method)
                if fault is not None and fault.kind == "refuse":
                    standin.calls.append((method, 200))
                    self._send(200, {"ok": False, "error": fault.error})
                    return
                if fault is not None and fault.kind == "status":
                    standin.calls.append((method, fault.status))
                    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
                    body = {"ok": False, "error": "ratelimited" if fault.status == 429 else "fatal_error"}
                    self._send(fault.status, body, headers)
                    return
                status, payload = standin._api(method, args)
                standin.calls.append((method, status))
                if fault is not None and fault.kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)  # the work is done, the answer never arrives
                    return
                if fault is not None and fault.kind == "delay":
                    time.sleep(fault.seconds)
                self._send(status, payload)

            do_GET = _handle
            do_POST = _handle

        return Handler
