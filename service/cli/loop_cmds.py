"""`benchwatch run-once`, `serve`, and the on-call commands `ack`, `resolve`, `reclassify`, `dismiss`, `note`.

Registered in service/cli/main.py with::

    app.command("run-once")(loop_cmds.run_once_cmd)
    app.command("serve")(loop_cmds.serve_cmd)
    for _name, _fn in loop_cmds.ONCALL_COMMANDS.items(): app.command(_name)(_fn)
"""

from __future__ import annotations

import getpass
import json
from typing import Optional

import typer

from service.cli.context import STATE, handles_errors
from service.errors import BenchwatchError
from service.records import CAUSES
from service.schedule.lock import LockBusy
from service.store import health_oncall, oncall


def _who(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name in some containers
        return "cli"


@handles_errors
def run_once_cmd(
    dashboard: Optional[str] = typer.Option(None, "--dashboard", help="URL or file of dashboard-data.json (default: config)"),
    pretuned: Optional[str] = typer.Option(None, "--pretuned", help="URL or file of pretuned-dashboard-data.json (default: config)"),
    repo: Optional[str] = typer.Option(None, "--repo", help="local Helion clone (default: config helion.repo)"),
    no_fetch: bool = typer.Option(False, "--no-fetch", help="do not `git fetch` the Helion clone first"),
) -> None:
    """One pass: ingest both sources, detect/classify new data, post/edit Slack messages.

    Exit 0 when done (or when another copy is already running: it says so and does nothing),
    1 when ingest or detect failed (Slack failures only delay messages: they stay queued).
    """
    from service.schedule.run_once import run_once

    settings = STATE.settings()
    store = STATE.store()
    kwargs = {}
    if dashboard is not None:
        kwargs["dashboard"] = dashboard
    if pretuned is not None:
        kwargs["pretuned"] = pretuned
    try:
        summary = run_once(store, settings, repo=repo, fetch_repo=not no_fetch, **kwargs)
    except LockBusy as exc:
        typer.echo(f"benchwatch: {exc.message}", err=True)
        raise typer.Exit(0)
    for line in summary.lines():
        typer.echo(line)
    if not summary.ok:
        raise typer.Exit(1)


@handles_errors
def serve_cmd(
    host: Optional[str] = typer.Option(None, "--host", help="web bind address (default: config web.host)"),
    port: Optional[int] = typer.Option(None, "--port", help="web port (default: config web.port; 0 = any free)"),
    no_scheduler: bool = typer.Option(False, "--no-scheduler", help="serve the web app only"),
    no_web: bool = typer.Option(False, "--no-web", help="run the scheduler only"),
) -> None:
    """Run run-once on the configured schedule (and the web app, when installed) until SIGTERM."""
    from service.schedule.scheduler import serve

    if port is not None and not 0 <= port <= 65535:
        raise BenchwatchError("--port must be between 0 and 65535")
    code = serve(STATE.store(), STATE.settings(), host=host, port=port,
                 scheduler=not no_scheduler, web=not no_web)
    raise typer.Exit(code)


def _show(data: dict, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(data, sort_keys=True))
        return
    last = data["history"][-1] if data["history"] else {}
    typer.echo(
        f"alert {data['id']}: {data['status']}, cause {data['cause']}"
        + (f" (machine: {data['machine_cause']})" if data["human_cause"] else "")
        + (f"; last: {last.get('action')} by {last.get('by')}" if last else "")
    )


def parse_id(text: str) -> tuple[str, int]:
    """``12`` is a move's alert, ``H12`` a health alert (see `benchwatch alerts --kind health`)."""
    raw = text.strip()
    kind = "health" if raw[:1] in ("H", "h") else "move"
    digits = raw[1:] if kind == "health" else raw
    if not digits.isdigit() or int(digits) < 1 or len(digits) > 12:
        raise BenchwatchError(f"alert id must be a positive number or H<number>, not {text!r}")
    return kind, int(digits)


_HEALTH = {
    oncall.acknowledge: lambda s, i, **kw: health_oncall.set_status(s, i, oncall.ACKNOWLEDGED, **kw),
    oncall.resolve: lambda s, i, **kw: health_oncall.set_status(s, i, oncall.RESOLVED, **kw),
    oncall.dismiss: lambda s, i, **kw: health_oncall.set_status(s, i, oncall.DISMISSED, **kw),
    oncall.add_note: health_oncall.add_note,
}


def _act(fn, alert_ref: str, as_json: bool, **kw) -> None:
    kind, alert_id = parse_id(alert_ref)
    if kind == "health":
        if fn not in _HEALTH:
            raise BenchwatchError("a health alert has no cause to reclassify")
        fn = _HEALTH[fn]
    store = STATE.store()
    with store.session() as session:
        data = fn(session, alert_id, **kw)
    if kind == "health" and not as_json:
        last = data["history"][-1] if data["history"] else {}
        typer.echo(f"alert {data['id']}: {data['status']} ({data['kind']}, {data['state']})"
                   + (f"; last: {last.get('action')} by {last.get('by')}" if last else ""))
        return
    _show(data, as_json)


_ID = typer.Argument(..., help="alert id (see `benchwatch alerts`); H<id> for a health alert")
_NOTE = typer.Option(None, "--note", help="why (kept in the audit trail)")
_BY = typer.Option(None, "--by", help="who (default: your login name)")
_JSON = typer.Option(False, "--json", help="print the alert as JSON")


@handles_errors
def ack_cmd(alert_id: str = _ID, by: Optional[str] = _BY, note: Optional[str] = _NOTE,
            as_json: bool = _JSON) -> None:
    """Acknowledge an alert: someone is on it."""
    _act(oncall.acknowledge, alert_id, as_json, by=_who(by), note=note)


@handles_errors
def resolve_cmd(alert_id: str = _ID, by: Optional[str] = _BY, note: Optional[str] = _NOTE,
                as_json: bool = _JSON) -> None:
    """Resolve an alert (a move that comes back later opens a new alert linked to this one)."""
    _act(oncall.resolve, alert_id, as_json, by=_who(by), note=note)


@handles_errors
def reclassify_cmd(
    alert_id: str = _ID,
    cause: str = typer.Option(..., "--cause", help=f"one of {', '.join(CAUSES)}"),
    by: Optional[str] = _BY, note: Optional[str] = _NOTE, as_json: bool = _JSON,
) -> None:
    """Set the cause by hand; later detect runs keep it, and the Slack message is edited."""
    _act(oncall.reclassify, alert_id, as_json, cause=cause, by=_who(by), note=note)


@handles_errors
def dismiss_cmd(alert_id: str = _ID, by: Optional[str] = _BY, note: Optional[str] = _NOTE,
                as_json: bool = _JSON) -> None:
    """Dismiss an alert as not worth acting on (kept, hidden from the open queue)."""
    _act(oncall.dismiss, alert_id, as_json, by=_who(by), note=note)


@handles_errors
def note_cmd(alert_id: str = _ID, text: str = typer.Argument(..., help="the note"),
             by: Optional[str] = _BY, as_json: bool = _JSON) -> None:
    """Add a note to an alert's audit trail."""
    _act(oncall.add_note, alert_id, as_json, by=_who(by), note=text)


ONCALL_COMMANDS = {
    "ack": ack_cmd,
    "resolve": resolve_cmd,
    "reclassify": reclassify_cmd,
    "dismiss": dismiss_cmd,
    "note": note_cmd,
}
