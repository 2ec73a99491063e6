"""Request-scoped helpers shared by the page and API routers."""

from __future__ import annotations

from datetime import timezone
from typing import Annotated, Iterator

from fastapi import Path, Request
from sqlalchemy.orm import Session

from service.store.db import Store


# Row ids as the URL carries them: positive and within a 32-bit INTEGER column, so an absurd
# number is a 422, not a database error.
DbId = Annotated[int, Path(ge=1, le=2**31 - 1)]


def db(request: Request) -> Iterator[Session]:
    """One session per request; commits when the handler returns, rolls back on error."""
    store: Store = request.app.state.store
    with store.session() as session:
        yield session


def scheduler_info(request: Request) -> dict:
    """What the scheduler says (next runs); {} when this process runs none.

    `serve` puts its APScheduler on ``app.state.scheduler``; its jobs' next run times are shown.
    """
    try:
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
