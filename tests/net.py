"""Loopback helpers for tests and benchmarks that start a real server."""

from __future__ import annotations

import socket
import subprocess
import time

import httpx


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
