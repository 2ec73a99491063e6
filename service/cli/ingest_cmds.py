"""`benchwatch db upgrade`, `ingest` and `status`.

Heavy modules (httpx, SQLAlchemy) are imported inside the commands: the CLI's
start-up pays only for typer (see tests/test_cli_startup.py).
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Optional

import typer

from service.cli.context import STATE, CommandsGroup, handles_errors
from service.errors import BenchwatchError

db_app = typer.Typer(cls=CommandsGroup, help="Database schema commands.", no_args_is_help=True,
                   rich_markup_mode=None)


class OutputFormat(str, Enum):
    table = "table"
    json = "json"


@db_app.command("upgrade")
@handles_errors
def db_upgrade() -> None:
    """Create the store if needed and apply every pending Alembic migration (every other
    command also upgrades on start, but only this one creates a SQLite file's folder)."""
    from service.store.db import current_revision

    store = STATE.store(create=True)
    typer.echo(f"schema at revision {current_revision(store.engine)}")


@handles_errors
def ingest(
    dashboard: Optional[str] = typer.Option(None, "--dashboard", help="URL or file of dashboard-data.json"),
    pretuned: Optional[str] = typer.Option(None, "--pretuned", help="URL or file of pretuned-dashboard-data.json"),
) -> None:
    """Fetch both documents (or the ones named) and store the runs not seen yet.

    Each source stands alone: a refused one does not stop the other. The exit code is the first
    failure's (2 bad document, 1 network or store); that source's runs are left as they were.
    """
    from service.pipeline.ingest_pass import ingest_source

    settings = STATE.settings()
    if dashboard is None and pretuned is None:
        dashboard, pretuned = settings.sources.dashboard, settings.sources.pretuned
    store = STATE.store()
    first: BenchwatchError | None = None
    for source, location in (("dashboard", dashboard), ("pretuned", pretuned)):
        if not location:
            continue
        try:
            typer.echo(ingest_source(store, settings, source, location).line())
        except BenchwatchError as exc:
            typer.echo(f"benchwatch: error: {exc.message}", err=True)
            first = first or exc
    if first is not None:
        raise typer.Exit(first.exit_code)


@handles_errors
def status(
    format: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Counts of what is stored and when each source was last ingested."""
    from service.cli.table import render
    from service.store.status import store_status

    store = STATE.store()
    with store.session() as session:
        counts = store_status(session)
    if format is OutputFormat.json:
        typer.echo(json.dumps(counts, sort_keys=True))
        return
    typer.echo(render("benchwatch store", ("what", "value"),
                      [(k, "-" if v is None else str(v)) for k, v in counts.items()], right=("value",)))
