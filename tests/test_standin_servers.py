"""The local stand-in servers stay quiet when a client hangs up mid-answer.

A fetch that times out on purpose leaves the dashboard stand-in writing into a closed socket;
socketserver printed that broken pipe to whatever `sys.stderr` was at that moment, and once it
was another test's CLI runner, whose output that test parsed as JSON (a flaky failure of
test_oncall on a fresh clone). An error that is not a dropped client still prints."""

from __future__ import annotations

import socket
import time

from tests.dashboard_server import DashboardServer


def _hang_up(srv: DashboardServer, times: int = 5) -> None:
    for _ in range(times):
        with socket.create_connection(srv.httpd.server_address[:2]) as s:
            s.sendall(b"GET /dashboard/dashboard-data.json HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(10)
    time.sleep(0.5)


def test_a_client_that_hangs_up_prints_nothing(capsys):
    srv = DashboardServer()
    srv.thread.start()
    try:
        srv.publish(dashboard=b"x" * 5_000_000)
        _hang_up(srv)
        assert capsys.readouterr().err == ""
    finally:
        srv.httpd.shutdown()


def test_any_other_error_of_a_request_is_still_printed(capsys):
    srv = DashboardServer()
    srv.thread.start()
    srv.publish(dashboard=b"{}")
    srv._answer = None  # the handler breaks: a bug of the stand-in, not a dropped client
    try:
        with socket.create_connection(srv.httpd.server_address[:2]) as s:
            s.sendall(b"GET /dashboard/dashboard-data.json HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(10)
        time.sleep(0.3)
        assert "TypeError" in capsys.readouterr().err
    finally:
        srv.httpd.shutdown()
