"""Fetching: retries with backoff on 5xx/connect errors, ETag 304, gzip, size cap."""

from __future__ import annotations

import gzip

import httpx
import pytest

from service.errors import BenchwatchError
from service.ingest.fetch import fetch


def _transport(responses: list):
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        item = responses[min(len(calls) - 1, len(responses) - 1)]
        if isinstance(item, Exception):
            raise item
        return item

    return httpx.MockTransport(handler), calls


def test_retries_5xx_and_connect_errors_then_succeeds():
    transport, calls = _transport(
        [
            httpx.Response(503),
            httpx.ConnectError("refused"),
            httpx.Response(200, content=b'{"summary": []}', headers={"ETag": '"v1"'}),
        ]
    )
    got = fetch("http://example.invalid/d.json", retries=3, backoff_s=0, transport=transport)
    assert got.body == b'{"summary": []}' and got.etag == '"v1"'
    assert len(calls) == 3


def test_gives_up_after_retries_with_one_line():
    transport, calls = _transport([httpx.Response(500)])
    with pytest.raises(BenchwatchError) as exc:
        fetch("http://example.invalid/d.json", retries=2, backoff_s=0, transport=transport)
    assert len(calls) == 3
    assert "giving up after 3 attempts" in str(exc.value) and "\n" not in str(exc.value)
    assert exc.value.exit_code == 1


def test_4xx_is_not_retried():
    transport, calls = _transport([httpx.Response(404)])
    with pytest.raises(BenchwatchError, match="404"):
        fetch("http://example.invalid/d.json", retries=3, backoff_s=0, transport=transport)
    assert len(calls) == 1


def test_etag_sent_and_304_means_not_modified():
    transport, calls = _transport([httpx.Response(304)])
    got = fetch("http://example.invalid/d.json", etag='"v1"', transport=transport)
    assert got.not_modified
    assert calls[0].headers["If-None-Match"] == '"v1"'


def test_gzip_body_is_decoded_and_capped_after_decoding():
    body = b"[" + b"1," * 5000 + b"1]"
    packed = gzip.compress(body)
    ok, _ = _transport([httpx.Response(200, content=packed, headers={"Content-Encoding": "gzip"})])
    assert fetch("http://x.invalid/a", transport=ok).body == body
    capped, _ = _transport([httpx.Response(200, content=packed, headers={"Content-Encoding": "gzip"})])
    with pytest.raises(BenchwatchError, match="cap"):
        fetch("http://x.invalid/a", transport=capped, max_bytes=len(packed) + 10)
