"""Ingest one source: fetch (ETag-aware) → validate whole → normalise → write in one transaction.

`ingest_guarded` is how the nightly pass calls it: each source in its own step, so a source that
cannot be ingested (bad document, hostile server, a value the store refuses, a bug) is recorded
and reported in one line while the other source, detection and Slack delivery still run.
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import DBAPIError, StatementError

from service.config import Settings
from service.domain import SOURCES
from service.errors import BenchwatchError
from service.ingest.documents import parse_document
from service.ingest.fetch import fetch
from service.ingest.normalize import normalize
from service.store.db import Store
from service.store.ingest_writer import (
    IngestResult,
    last_etag,
    log_failure,
    log_not_modified,
    write_document,
)

log = logging.getLogger(__name__)


def ingest_source(store: Store, settings: Settings, source: str, location: str) -> IngestResult:
    """Nothing is written unless the whole document validates; the store is unchanged on error."""
    if source not in SOURCES:
        raise BenchwatchError(f"unknown source {source!r}")
    with store.session() as session:
        etag, last_hash = last_etag(session, source, location)
    f = settings.fetch
    fetched = fetch(
        location, etag=etag, timeout_s=f.timeout_s, retries=f.retries,
        backoff_s=f.backoff_s, max_bytes=f.max_bytes, deadline_s=f.deadline_s,
    )
    if fetched.not_modified or (last_hash and fetched.content_hash == last_hash):
        # 304, or the very bytes already stored: a polling no-op costs no parse and no writes
        with store.session() as session:
            return log_not_modified(
                session, source, location, fetched.etag or etag, fetched.content_hash or last_hash
            )
    doc = normalize(parse_document(source, fetched.body or b""))
    try:
        with store.session() as session:
            result = write_document(
                session, doc, location=location, etag=fetched.etag, content_hash=fetched.content_hash
            )
    except (DBAPIError, StatementError) as exc:
        # The schema states every bound of the store, so this is a gap in it: still one line,
        # and the transaction is rolled back (the store is as it was).
        orig = getattr(exc, "orig", None) or exc
        first = (str(orig).splitlines() or [""])[0][:200]
        raise BenchwatchError(
            f"{source}: the store refused the document ({orig.__class__.__name__}: {first})", exit_code=1
        ) from None
    for conflict in result.conflicts[:10]:
        log.warning("%s: %s", source, conflict)
    return result


def ingest_guarded(store: Store, settings: Settings, source: str, location: str) -> tuple[str | None, str | None]:
    """(result line, None) or (None, one-line error); never raises. A failure is written to the
    ingest log (outcome ``failed``) so `status` shows it until the source ingests again."""
    try:
        return ingest_source(store, settings, source, location).line(), None
    except BenchwatchError as exc:
        message = exc.message
    except Exception as exc:  # noqa: BLE001 - one source must never stop the pass
        log.exception("ingest %s: unexpected failure", source)
        message = f"{source}: unexpected {exc.__class__.__name__}: {' '.join(str(exc).split())[:200]}"
    try:
        with store.session() as session:
            log_failure(session, source, location, message)
    except Exception:  # noqa: BLE001 - the store itself may be the problem; the error is still returned
        log.exception("ingest %s: could not record the failure", source)
    return None, message
