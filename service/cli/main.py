"""Entry point: `benchwatch [--config FILE] COMMAND`. Each command group lives in its own module.

The command modules import only typer at the top; what a command needs (SQLAlchemy, numpy and
ruptures, httpx, Slack, APScheduler, FastAPI) is imported when it runs, so `--help` and the quick
commands people type (`alerts`, `status`) start fast; those two read through SQLAlchemy Core
(service/store/light_reads.py), not the mapped classes. tests/test_cli_edges.py keeps it so.
"""

from __future__ import annotations

import os
from typing import Optional

# pydantic (typer's option coercion, our settings) otherwise scans every installed package's
# entry points for plugins at first import (~12 ms of start-up); benchwatch uses none.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import typer  # noqa: E402 - after the line above

from service.cli import detect_cmds, ingest_cmds, loop_cmds
from service.cli.context import STATE, CommandsGroup, setup_logging, tune_gc

app = typer.Typer(
    cls=CommandsGroup,
    help="benchwatch: nightly regression triage for the Helion benchmark dashboard.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help and usage errors: rich's help renderer costs ~0.3 s of start-up
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
    tune_gc()


# short_help: the one-line summaries `benchwatch --help` lists (each command's docstring says more)
app.add_typer(ingest_cmds.db_app, name="db", short_help="Create or upgrade the store's schema.")
app.command("ingest", short_help="Fetch and store new runs.")(ingest_cmds.ingest)
app.command("status", short_help="What is stored; last ingest per source.")(ingest_cmds.status)
app.command("detect", short_help="Detect and classify moves in new nightly data.")(detect_cmds.detect)
app.command("investigate", short_help="Explain the biggest move near a date.")(detect_cmds.investigate_cmd)
app.command("alerts", short_help="The on-call queue.")(detect_cmds.alerts_cmd)
app.command("run-once", short_help="One pass: ingest, detect, notify Slack.")(loop_cmds.run_once_cmd)
app.command("serve", short_help="Scheduler and web app until stopped.")(loop_cmds.serve_cmd)
for _name, _fn in loop_cmds.ONCALL_COMMANDS.items():
    app.command(_name, short_help=loop_cmds.ONCALL_HELP[_name])(_fn)
app.command("hashpw", short_help="Print a bcrypt hash for web sign-in.")(loop_cmds.hashpw_cmd)
