"""One run at a time: a lock that dies with its holder.

PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on a dedicated connection;
the server drops it when the holder's connection closes, so a killed run never leaves it stuck.
SQLite: an exclusive ``flock`` on ``<database>.<name>.lock`` beside the database file; the kernel
drops it when the holder dies. Either way the holder also writes a `ServiceLock` row (who and
since when) purely so the second copy can say who is holding the lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from sqlalchemy import text
from sqlalchemy.engine import make_url

from service.errors import BenchwatchError
from service.store.db import Store
from service.store.tables import ServiceLock


class LockBusy(BenchwatchError):
    """Another copy holds the lock. Exit code 0: nothing is wrong, the work is being done."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=0)


def _key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for a lock name."""
    return int.from_bytes(hashlib.sha256(f"benchwatch:{name}".encode()).digest()[:8], "big", signed=True)


def holder_id() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


def _who(store: Store, name: str) -> str:
    try:
        with store.session() as s:
            row = s.get(ServiceLock, name)
            if row is not None:
                return f"held by {row.holder} since {row.acquired_at:%Y-%m-%d %H:%M:%S} UTC"
    except Exception:  # noqa: BLE001 - only decorates the message
        pass
    return "held by another process"


def _note(store: Store, name: str) -> None:
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with store.session() as s:
        row = s.get(ServiceLock, name)
        if row is None:
            s.add(ServiceLock(name=name, holder=holder_id(), acquired_at=now, heartbeat_at=now))
        else:
            row.holder, row.acquired_at, row.heartbeat_at = holder_id(), now, now


def _lock_path(store: Store, name: str) -> Path:
    db = make_url(store.url).database
    if not db or db == ":memory:":
        raise BenchwatchError("run-once needs a file or PostgreSQL database to lock, not :memory:")
    return Path(f"{db}.{name}.lock")


@contextmanager
def run_lock(store: Store, name: str = "run-once", *, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the named lock for the block; raise LockBusy if another process still has it after
    ``wait_s`` seconds (0: at once)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with _take(store, name):
                yield
            return
        except _Busy:
            if time.monotonic() >= deadline:
                raise LockBusy(f"{name}: another run is in progress ({_who(store, name)}); exiting") from None
            time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))


class _Busy(Exception):
    pass


@contextmanager
def _take(store: Store, name: str) -> Iterator[None]:
    if store.dialect == "postgresql":
        conn = store.engine.connect()
        try:
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": _key(name)}).scalar()
            conn.commit()
            if not got:
                raise _Busy()
            try:
                _note(store, name)
                yield
            finally:
                try:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _key(name)})
                    conn.commit()
                except Exception:  # noqa: BLE001 - closing the connection drops it anyway
                    conn.invalidate()
        finally:
            conn.close()
        return
    path = _lock_path(store, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _Busy() from None
        try:
            _note(store, name)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
