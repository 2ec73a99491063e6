"""Request-scoped helpers shared by the page and API routers."""

from __future__ import annotations

from datetime import timezone
from typing import Annotated, Iterator

from fastapi import Path, Request
from sqlalchemy.orm import Session

from service.config import Settings
from service.store.db import Store


# Row ids as the URL carries them: positive and within a 32-bit INTEGER column, so an absurd
# number is a 422, not a database error.
DbId = Annotated[int, Path(ge=1, le=2**31 - 1)]


def db(request: Request) -> Iterator[Session]:
    """One session per request; commits when the handler returns, rolls back on error."""
    store: Store = request.app.state.store
    with store.session() as session:
        yield session


def settings_of(request: Request) -> Settings:
    return request.app.state.settings


def scheduler_info(request: Request) -> dict:
    """What the scheduler says (next runs); {} when this process runs none.

    `create_app(scheduler_info=...)` may pass a dict or a callable; otherwise an APScheduler
    that `serve` put on ``app.state.scheduler`` is asked for its jobs' next run times.
    """
    info = request.app.state.scheduler_info
    try:
        if info is not None:
            return dict((info() if callable(info) else info) or {})
        sched = getattr(request.app.state, "scheduler", None)
        if sched is None:
            return {}
        out: dict = {"running": bool(getattr(sched, "running", False))}
        for job in sched.get_jobs():
            nxt = job.next_run_time
            out[f"next {job.id}"] = nxt.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if nxt else "paused"
        return out
    except Exception as exc:  # noqa: BLE001 - the status page must still render
        return {"error": f"scheduler info unavailable: {exc.__class__.__name__}"}
