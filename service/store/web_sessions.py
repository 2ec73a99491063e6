"""Signed-in web sessions, stored by the hash of their random id (`service/web/auth.py` says why:
sign-out deletes the row, so a saved cookie no longer acts). The store never sees the id itself.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.orm import Session

from service.store.tables import WebSession


def live_user(session: Session, sid_hash: str, now: datetime) -> str | None:
    """Who the session belongs to, while it has not expired or been signed out."""
    row = session.get(WebSession, sid_hash)
    return row.user if row is not None and row.expires_at > now else None


def open_session(session: Session, sid_hash: str, user: str, now: datetime, max_age: timedelta) -> None:
    """Store a new session; expired ones are swept on the way (sign-ins are rare)."""
    session.execute(delete(WebSession).where(WebSession.expires_at <= now))
    session.add(WebSession(sid_hash=sid_hash, user=user, created_at=now, expires_at=now + max_age))


def close_session(session: Session, sid_hash: str) -> None:
    session.execute(delete(WebSession).where(WebSession.sid_hash == sid_hash))
