"""Key/value facts the service keeps about itself (`SchemaNote`: when a pass last ran, how far
the health history scan has read, fetch failures in a row): one read and one write for all."""

from __future__ import annotations

from sqlalchemy.orm import Session

from service.store.tables import SchemaNote


def read_note(session: Session, key: str) -> str | None:
    row = session.get(SchemaNote, key)
    return row.value if row is not None else None


def write_note(session: Session, key: str, value: str) -> None:
    """Set ``key`` to ``value``, adding the row the first time."""
    row = session.get(SchemaNote, key)
    if row is None:
        session.add(SchemaNote(key=key, value=value))
    else:
        row.value = value
