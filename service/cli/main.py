"""Entry point: `benchwatch [--config FILE] COMMAND`. Each command group lives in its own module."""

from __future__ import annotations

from typing import Optional

import typer

from service.cli import ingest_cmds
from service.cli.context import STATE, setup_logging

app = typer.Typer(
    help="benchwatch: nightly regression triage for the Helion benchmark dashboard.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def main(
    config: Optional[str] = typer.Option(None, "--config", help="TOML file overriding config/default.toml"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="debug logging"),
) -> None:
    STATE.config_file = config
    STATE._settings = None
    STATE._store = None
    setup_logging(verbose)


app.add_typer(ingest_cmds.db_app, name="db")
app.command("ingest")(ingest_cmds.ingest)
app.command("status")(ingest_cmds.status)
# further command modules register below (detect/investigate/alerts, run-once/serve, on-call)

from service.cli import loop_cmds  # noqa: E402  (nightly loop + on-call; issue 4)

app.command("run-once")(loop_cmds.run_once_cmd)
app.command("serve")(loop_cmds.serve_cmd)
for _name, _fn in loop_cmds.ONCALL_COMMANDS.items():
    app.command(_name)(_fn)

from service.cli import detect_cmds  # noqa: E402  (detection and triage; issue 3)

app.command("detect")(detect_cmds.detect)
app.command("investigate")(detect_cmds.investigate_cmd)
app.command("alerts")(detect_cmds.alerts_cmd)
