"""A local stand-in for helionlang.com/dashboard: serves the two JSON files over real HTTP.

Tests, the demo and the benchmarks publish a world's documents here (night by night), so the
real fetch path (httpx, ETag/If-None-Match, gzip, retries) is exercised without the internet.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from http.server import BaseHTTPRequestHandler

from tests.net import QuietHTTPServer

PATHS = {"dashboard": "/dashboard/dashboard-data.json", "pretuned": "/dashboard/pretuned-dashboard-data.json"}


class DashboardServer:
    """Start with `with DashboardServer() as srv:`; `srv.publish(dashboard=..., pretuned=...)`."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.files: dict[str, bytes] = {}
        self.fail_next: list[int] = []  # status codes to answer before serving normally
        self.requests: list[tuple[str, str, int]] = []  # (path, If-None-Match, status)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                status = server._answer(self)
                server.requests.append((self.path, self.headers.get("If-None-Match", ""), status))

        self.httpd = QuietHTTPServer((host, 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, source: str) -> str:
        return self.base + PATHS[source]

    def publish(self, **docs: bytes) -> None:
        with self._lock:
            for source, body in docs.items():
                self.files[PATHS[source]] = body

    def _answer(self, h: BaseHTTPRequestHandler) -> int:
        with self._lock:
            if self.fail_next:
                code = self.fail_next.pop(0)
                h.send_response(code)
                h.send_header("Content-Length", "0")
                h.end_headers()
                return code
            body = self.files.get(h.path.split("?")[0])
        if body is None:
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return 404
        etag = '"' + hashlib.sha1(body).hexdigest() + '"'
        if h.headers.get("If-None-Match") == etag:
            h.send_response(304)
            h.send_header("ETag", etag)
            h.end_headers()
            return 304
        payload = body
        h.send_response(200)
        if "gzip" in (h.headers.get("Accept-Encoding") or ""):
            payload = gzip.compress(body, compresslevel=1)
            h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Type", "application/json")
        h.send_header("ETag", etag)
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)
        return 200

    def __enter__(self) -> "DashboardServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
