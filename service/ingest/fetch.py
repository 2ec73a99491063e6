"""Get a document's bytes from a URL (httpx) or a local path, politely and within bounds.

ETags make the half-hourly poll cheap: an unchanged file answers 304 and is never downloaded.
Whatever the server does (redirect loops, a bad gzip header, a body trickled a byte at a time, a
304 to a request that had no ETag), the caller gets one `BenchwatchError` line: the whole fetch,
retries included, has an overall deadline so a slow server cannot hold the nightly pass.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from service.errors import BenchwatchError


@dataclass(frozen=True)
class Fetched:
    location: str
    body: bytes | None  # None when the server said 304 Not Modified
    etag: str | None
    content_hash: str | None

    @property
    def not_modified(self) -> bool:
        return self.body is None


def _hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def read_file(path: str, max_bytes: int) -> Fetched:
    p = Path(path)
    if not p.is_file():
        raise BenchwatchError(f"{path}: no such file")
    size = p.stat().st_size
    if size > max_bytes:
        raise BenchwatchError(f"{path}: {size} bytes is over the {max_bytes}-byte cap (fetch.max_bytes)")
    body = p.read_bytes()
    return Fetched(str(p), body, None, _hash(body))


MAX_ETAG = 255  # ingest_log.etag is String(255)


def _etag(value: str | None) -> str | None:
    """An ETag we can store and send back; anything else is ignored (the content hash still
    spares the parse and the writes of an unchanged body)."""
    if not value or len(value) > MAX_ETAG or "\x00" in value:
        return None
    return value


def _download(client: httpx.Client, url: str, etag: str | None, max_bytes: int, deadline: float) -> Fetched:
    headers = {"Accept-Encoding": "gzip", "Accept": "application/json"}
    if etag:
        headers["If-None-Match"] = etag
    with client.stream("GET", url, headers=headers) as resp:
        if resp.status_code == 304:
            if not etag:  # nothing to be "not modified" from: ingesting nothing would be silent
                raise BenchwatchError(f"{url}: server answered 304 Not Modified to a request without an ETag",
                                      exit_code=1)
            return Fetched(url, None, etag, None)
        if resp.status_code >= 500:
            raise _Retryable(f"{url}: server answered {resp.status_code}")
        if resp.status_code != 200:
            raise BenchwatchError(f"{url}: server answered {resp.status_code}", exit_code=1)
        declared = resp.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > max_bytes and "gzip" not in resp.headers.get("Content-Encoding", ""):
            raise BenchwatchError(f"{url}: {declared} bytes is over the {max_bytes}-byte cap (fetch.max_bytes)")
        chunks: list[bytes] = []
        total = 0
        for chunk in resp.iter_bytes():
            if time.monotonic() > deadline:
                raise _Deadline()
            total += len(chunk)
            if total > max_bytes:
                raise BenchwatchError(f"{url}: body is over the {max_bytes}-byte cap (fetch.max_bytes)")
            chunks.append(chunk)
        body = b"".join(chunks)
        return Fetched(url, body, _etag(resp.headers.get("ETag")), _hash(body))


class _Retryable(Exception):
    pass


class _Deadline(Exception):
    pass


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())[:300]
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


def fetch(
    location: str,
    *,
    etag: str | None = None,
    timeout_s: float = 30.0,
    retries: int = 3,
    backoff_s: float = 1.0,
    max_bytes: int = 200_000_000,
    deadline_s: float = 120.0,
    transport: httpx.BaseTransport | None = None,
) -> Fetched:
    """Fetch a URL (retrying connect errors and 5xx with exponential backoff) or read a file.

    ``deadline_s`` bounds the whole fetch, retries and back-off included: ``timeout_s`` only
    bounds each network read, which a server sending one byte a second never exceeds.
    """
    if not is_url(location):
        return read_file(location, max_bytes)
    etag = _etag(etag)
    deadline = time.monotonic() + deadline_s
    late = BenchwatchError(f"{location}: no complete answer within {deadline_s:g} s (fetch.deadline_s)",
                           exit_code=1)
    last = ""
    with httpx.Client(timeout=min(timeout_s, deadline_s), transport=transport, follow_redirects=True,
                      max_redirects=10) as client:
        for attempt in range(retries + 1):
            try:
                return _download(client, location, etag, max_bytes, deadline)
            except _Deadline:
                raise late from None
            except (_Retryable, httpx.TransportError) as exc:
                last = str(exc) if isinstance(exc, _Retryable) else _one_line(exc)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:  # redirect loops, undecodable bodies
                raise BenchwatchError(f"{location}: {_one_line(exc)}", exit_code=1) from None
            pause = backoff_s * (2**attempt)
            if attempt < retries and time.monotonic() + pause >= deadline:
                raise late
            if attempt < retries:
                time.sleep(pause)
    raise BenchwatchError(f"{location}: giving up after {retries + 1} attempts: {last}", exit_code=1)
