"""Hostile HTTP servers: every misbehaviour ends in one BenchwatchError line, within a deadline."""

from __future__ import annotations

import time

import httpx
import pytest

from service.errors import BenchwatchError
from service.ingest.fetch import fetch

URL = "http://dash.invalid/d.json"


def _one_line(exc_info) -> str:
    text = str(exc_info.value)
    assert "\n" not in text and text.startswith(URL)
    return text


def test_redirect_loop_is_one_line():
    transport = httpx.MockTransport(lambda r: httpx.Response(302, headers={"Location": URL}))
    with pytest.raises(BenchwatchError) as exc:
        fetch(URL, retries=0, transport=transport)
    assert "TooManyRedirects" in _one_line(exc) and exc.value.exit_code == 1


def test_gzip_header_on_a_plain_body_is_one_line():
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, content=b'{"summary": []}', headers={"Content-Encoding": "gzip"}))
    with pytest.raises(BenchwatchError) as exc:
        fetch(URL, retries=0, transport=transport)
    assert "DecodingError" in _one_line(exc)


def test_304_to_a_request_without_etag_is_an_error_not_a_silent_no_op():
    transport = httpx.MockTransport(lambda r: httpx.Response(304))
    with pytest.raises(BenchwatchError) as exc:
        fetch(URL, transport=transport)
    assert "304" in _one_line(exc) and "without an ETag" in str(exc.value)
    assert fetch(URL, etag='"v1"', transport=transport).not_modified  # with one it is a no-op


class _Trickle(httpx.SyncByteStream):
    def __iter__(self):
        for _ in range(1000):
            time.sleep(0.05)
            yield b" "


def test_a_trickling_server_is_cut_off_at_the_overall_deadline():
    transport = httpx.MockTransport(lambda r: httpx.Response(200, stream=_Trickle()))
    started = time.monotonic()
    with pytest.raises(BenchwatchError) as exc:
        fetch(URL, timeout_s=30, deadline_s=0.5, transport=transport)
    assert time.monotonic() - started < 2.0  # the trickle alone would take 50 s
    assert "fetch.deadline_s" in _one_line(exc)


def test_retries_stop_at_the_deadline():
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(503)

    started = time.monotonic()
    with pytest.raises(BenchwatchError, match="deadline"):
        fetch(URL, retries=10, backoff_s=0.2, deadline_s=0.5, transport=httpx.MockTransport(handler))
    assert time.monotonic() - started < 1.0 and len(calls) <= 3


def test_an_etag_the_store_cannot_hold_is_ignored():
    for bad in ('"' + "e" * 300 + '"',):
        transport = httpx.MockTransport(lambda r: httpx.Response(200, content=b"{}", headers={"ETag": bad}))
        got = fetch(URL, transport=transport)
        assert got.body == b"{}" and got.etag is None and got.content_hash
    ok = httpx.MockTransport(lambda r: httpx.Response(200, content=b"{}", headers={"ETag": '"v2"'}))
    assert fetch(URL, transport=ok).etag == '"v2"'
