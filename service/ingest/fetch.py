"""Get a document's bytes from a URL (httpx) or a local path, politely and within bounds.

ETags make the half-hourly poll cheap: an unchanged file answers 304 and is never downloaded.
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


def _download(client: httpx.Client, url: str, etag: str | None, max_bytes: int) -> Fetched:
    headers = {"Accept-Encoding": "gzip", "Accept": "application/json"}
    if etag:
        headers["If-None-Match"] = etag
    with client.stream("GET", url, headers=headers) as resp:
        if resp.status_code == 304:
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
            total += len(chunk)
            if total > max_bytes:
                raise BenchwatchError(f"{url}: body is over the {max_bytes}-byte cap (fetch.max_bytes)")
            chunks.append(chunk)
        body = b"".join(chunks)
        return Fetched(url, body, resp.headers.get("ETag"), _hash(body))


class _Retryable(Exception):
    pass


def fetch(
    location: str,
    *,
    etag: str | None = None,
    timeout_s: float = 30.0,
    retries: int = 3,
    backoff_s: float = 1.0,
    max_bytes: int = 200_000_000,
    transport: httpx.BaseTransport | None = None,
) -> Fetched:
    """Fetch a URL (retrying connect errors and 5xx with exponential backoff) or read a file."""
    if not is_url(location):
        return read_file(location, max_bytes)
    last = ""
    with httpx.Client(timeout=timeout_s, transport=transport, follow_redirects=True) as client:
        for attempt in range(retries + 1):
            try:
                return _download(client, location, etag, max_bytes)
            except (_Retryable, httpx.TransportError) as exc:
                last = str(exc) or exc.__class__.__name__
            if attempt < retries:
                time.sleep(backoff_s * (2**attempt))
    raise BenchwatchError(f"{location}: giving up after {retries + 1} attempts: {last}", exit_code=1)
