"""Loopback helpers for tests and benchmarks that start a real server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from http.server import ThreadingHTTPServer

import httpx


class QuietHTTPServer(ThreadingHTTPServer):
    """A local stand-in server whose clients may hang up mid-answer (a fetch that times out on
    purpose, a retry that gives up). socketserver prints such a broken pipe as a traceback to
    whatever ``sys.stderr`` is then: another test's CLI runner captured it into the output it
    parses as JSON. A dropped client is no error of the stand-in; anything else still prints."""

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float = 60.0) -> int | None:
    """Poll ``url`` until it answers 200, ``proc`` exits, or time runs out; the last status seen
    (None: it never answered)."""
    deadline = time.monotonic() + timeout_s
    status = None
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            status = httpx.get(url, timeout=2).status_code
            if status == 200:
                return status
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    return status
