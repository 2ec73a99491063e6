"""Ingest one source: fetch (ETag-aware) → validate whole → normalise → write in one transaction."""

from __future__ import annotations

import logging

from service.config import Settings
from service.errors import BenchwatchError
from service.ingest.documents import parse_document
from service.ingest.fetch import fetch
from service.ingest.normalize import normalize
from service.store.db import Store
from service.store.ingest_writer import IngestResult, last_etag, log_not_modified, write_document

log = logging.getLogger(__name__)


def ingest_source(store: Store, settings: Settings, source: str, location: str) -> IngestResult:
    """Nothing is written unless the whole document validates; the store is unchanged on error."""
    if source not in ("dashboard", "pretuned"):
        raise BenchwatchError(f"unknown source {source!r}")
    with store.session() as session:
        etag, last_hash = last_etag(session, source, location)
    f = settings.fetch
    fetched = fetch(
        location, etag=etag, timeout_s=f.timeout_s, retries=f.retries,
        backoff_s=f.backoff_s, max_bytes=f.max_bytes,
    )
    if fetched.not_modified or (last_hash and fetched.content_hash == last_hash):
        # 304, or the very bytes already stored: a polling no-op costs no parse and no writes
        with store.session() as session:
            return log_not_modified(
                session, source, location, fetched.etag or etag, fetched.content_hash or last_hash
            )
    doc = normalize(parse_document(source, fetched.body or b""))
    with store.session() as session:
        result = write_document(
            session, doc, location=location, etag=fetched.etag, content_hash=fetched.content_hash
        )
    for conflict in result.conflicts[:10]:
        log.warning("%s: %s", source, conflict)
    return result
