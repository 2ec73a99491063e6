"""`benchwatch run-once`, `serve`, `hashpw`, and the on-call commands `ack`, `resolve`, `dismiss`,
`reopen`, `reclassify`, `note`.

Registered in service/cli/main.py (ONCALL_COMMANDS with their ONCALL_HELP summaries).
The scheduler, Slack, the web app and the store are imported inside the commands (start-up).
"""

from __future__ import annotations

import getpass
import json
from typing import Optional

import typer

from service.cli.context import STATE, check_choice, handles_errors
from service.errors import BenchwatchError
from service.domain import CAUSES


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
    from service.schedule.lock import LockBusy
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
    """``12`` is a move's alert, ``H12`` a health alert (see `benchwatch alerts --kind health`),
    ``G12`` a whole group (see `benchwatch alerts --groups`)."""
    raw = str(text).strip()
    kind = {"H": "health", "G": "group"}.get(raw[:1].upper(), "move")
    digits = raw[1:] if kind != "move" else raw
    if not digits.isdigit() or int(digits) < 1 or len(digits) > 12:
        raise BenchwatchError(f"alert id must be a positive number, H<number> or G<number>, not {text!r}")
    return kind, int(digits)


# on-call actions a health alert takes (it has no cause to reclassify)
_HEALTH_STATUS = {"acknowledge": "ACKNOWLEDGED", "resolve": "RESOLVED", "dismiss": "DISMISSED",
                  "reopen": "OPEN"}


def _act(action: str, alert_ref: str, as_json: bool, **kw) -> None:
    """Run one on-call action of service.store.oncall (the web's buttons call the same ones), or
    of service.store.health_oncall for an H<id>."""
    from service.store import health_oncall, oncall

    kind, alert_id = parse_id(alert_ref)
    store = STATE.store()
    with store.session() as session:
        if kind == "group":
            result = oncall.act_on_group(session, alert_id, action, **kw)
            if as_json:
                typer.echo(json.dumps({"group_id": result.group_id, "action": result.action,
                                       "alert_ids": list(result.done),
                                       "skipped": [{"alert_id": a, "why": w} for a, w in result.skipped]},
                                      sort_keys=True))
            else:
                typer.echo(result.line())
            return
        if kind == "move":
            data = getattr(oncall, action)(session, alert_id, **kw)
        elif action == "add_note":
            data = health_oncall.add_note(session, alert_id, **kw)
        elif action in _HEALTH_STATUS and hasattr(oncall, _HEALTH_STATUS[action]):
            data = health_oncall.set_status(session, alert_id, getattr(oncall, _HEALTH_STATUS[action]), **kw)
        elif action == "assign":
            raise BenchwatchError("a health alert cannot be assigned (acknowledge it instead)")
        else:
            raise BenchwatchError("a health alert has no cause to reclassify")
    if kind == "health" and not as_json:
        last = data["history"][-1] if data["history"] else {}
        typer.echo(f"alert {data['id']}: {data['status']} ({data['kind']}, {data['state']})"
                   + (f"; last: {last.get('action')} by {last.get('by')}" if last else ""))
        return
    _show(data, as_json)


_ID = typer.Argument(..., help="alert id (see `benchwatch alerts`); H<id> for a health alert, "
                                "G<id> for every alert of a group (`benchwatch alerts --groups`)")
_NOTE = typer.Option(None, "--note", help="why (kept in the audit trail)")
_BY = typer.Option(None, "--by", help="who (default: your login name)")
_JSON = typer.Option(False, "--json", help="print the alert as JSON")


@handles_errors
def ack_cmd(alert_id: str = _ID, by: Optional[str] = _BY, note: Optional[str] = _NOTE,
            as_json: bool = _JSON) -> None:
    """Acknowledge an alert: someone is on it."""
    _act("acknowledge", alert_id, as_json, by=_who(by), note=note)


@handles_errors
def resolve_cmd(alert_id: str = _ID, by: Optional[str] = _BY, note: Optional[str] = _NOTE,
                as_json: bool = _JSON) -> None:
    """Resolve an alert (a move that comes back later opens a new alert linked to this one)."""
    _act("resolve", alert_id, as_json, by=_who(by), note=note)


@handles_errors
def reclassify_cmd(
    alert_id: str = _ID,
    cause: str = typer.Option(..., "--cause", help=f"one of {', '.join(CAUSES)}"),
    by: Optional[str] = _BY, note: Optional[str] = _NOTE, as_json: bool = _JSON,
) -> None:
    """Set the cause by hand; later detect runs keep it, and the Slack message is edited."""
    check_choice("--cause", cause, CAUSES)
    _act("reclassify", alert_id, as_json, cause=cause, by=_who(by), note=note)


@handles_errors
def dismiss_cmd(alert_id: str = _ID, by: Optional[str] = _BY, note: Optional[str] = _NOTE,
                as_json: bool = _JSON) -> None:
    """Dismiss an alert as not worth acting on (kept, hidden from the open queue)."""
    _act("dismiss", alert_id, as_json, by=_who(by), note=note)


@handles_errors
def reopen_cmd(alert_id: str = _ID, by: Optional[str] = _BY, note: Optional[str] = _NOTE,
               as_json: bool = _JSON) -> None:
    """Reopen a resolved, dismissed or acknowledged alert (recorded in its audit trail)."""
    _act("reopen", alert_id, as_json, by=_who(by), note=note)


@handles_errors
def assign_cmd(alert_id: str = _ID, to: str = typer.Option(..., "--to", help="who owns it"),
               by: Optional[str] = _BY, note: Optional[str] = _NOTE, as_json: bool = _JSON) -> None:
    """Name who owns an alert or a group (shown on the group page and in Slack)."""
    _act("assign", alert_id, as_json, to=to, by=_who(by), note=note)


@handles_errors
def note_cmd(alert_id: str = _ID, text: str = typer.Argument(..., help="the note"),
             by: Optional[str] = _BY, as_json: bool = _JSON) -> None:
    """Add a note to an alert's audit trail."""
    _act("add_note", alert_id, as_json, by=_who(by), note=text)


ONCALL_COMMANDS = {
    "ack": ack_cmd,
    "resolve": resolve_cmd,
    "reclassify": reclassify_cmd,
    "dismiss": dismiss_cmd,
    "reopen": reopen_cmd,
    "assign": assign_cmd,
    "note": note_cmd,
}
ONCALL_HELP = {
    "ack": "Acknowledge an alert.",
    "resolve": "Resolve an alert.",
    "reclassify": "Set an alert's cause by hand.",
    "dismiss": "Dismiss an alert as a false alarm.",
    "reopen": "Reopen a resolved or dismissed alert.",
    "assign": "Name who owns an alert or a group.",
    "note": "Add a note to an alert's audit trail.",
}


@handles_errors
def hashpw_cmd(
    name: Optional[str] = typer.Argument(None, help="user name: prints {\"NAME\": \"<hash>\"} for web.users"),
) -> None:
    """Print the bcrypt hash of a password for web sign-in (BENCHWATCH_WEB_USERS).

    The password is asked twice without echo, or read as one line from a pipe.
    """
    import sys

    from service.web.hashpw import hash_line, read_password

    typer.echo(hash_line(name, read_password(sys.stdin)))
