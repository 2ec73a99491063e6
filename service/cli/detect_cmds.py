"""`benchwatch detect`, `investigate` and `alerts`: the triage a person used to do by hand.

Detection (numpy, ruptures), the store (SQLAlchemy) and rich tables are imported inside the
commands, so `benchwatch alerts` does not pay for the change-point stack.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Optional

import typer

from service.cli.context import STATE, check_choice, handles_errors
from service.cli.ingest_cmds import OutputFormat
from service.records import CAUSE_WORDS, CAUSES, SeriesKey
from service.errors import BenchwatchError

SOURCES = ("dashboard", "pretuned")
STATUSES = ("open", "acknowledged", "resolved", "dismissed", "all")
KINDS = ("move", "health")

SPARK = "▁▂▃▄▅▆▇█"


class TextOrJson(str, Enum):
    text = "text"
    json = "json"


@handles_errors
def detect(
    repo: Optional[str] = typer.Option(None, "--repo", help="local Helion clone (default: helion.repo)"),
) -> None:
    """Detect + classify every series with new nightly data; store moves, groups and evidence."""
    from service.pipeline.detect_pass import detect_pass, resolve_repo

    settings = STATE.settings()
    summary = detect_pass(STATE.store(), settings, resolve_repo(settings, repo))
    typer.echo(summary.line())


def _spark(values: list[float | None]) -> str:
    nums = [v for v in values if v is not None]
    if not nums:
        return ""
    lo, hi = min(nums), max(nums)
    span = (hi - lo) or 1.0
    return "".join("×" if v is None else SPARK[int((v - lo) / span * (len(SPARK) - 1))] for v in values)


def _describe(obj: dict, series_line: str) -> str:
    lines = [f"{obj['kernel']} on {obj['platform_short']} ({obj['source']}, {obj['metric']})"]
    if series_line:
        lines.append("  " + series_line)
    fb = obj["first_bad"]
    if fb is None:
        lines.append(f"  verdict: {CAUSE_WORDS['noise']}: no persistent step near the date")
    else:
        lg = obj["last_good"]
        lines.append(
            f"  verdict: {CAUSE_WORDS[obj['cause']]}{' (' + obj['kind'] + ')' if obj.get('kind') else ''} "
            f"({obj['direction']}, {obj['change_pct']:+.1f}%, confidence {obj['confidence']:.2f})"
        )
        lines.append(
            f"  step: {obj['before']:.4g} -> {obj['after']:.4g}; last good {lg['sha']} {lg['date'][:10]}, "
            f"first bad {fb['sha']} {fb['date'][:10]}"
        )
    if obj["true_speedup"] is not None:
        lines.append(f"  honest value: {obj['true_speedup']:.4g} ({obj['true_speedup_reason']})")
    lines.append("  evidence:")
    for e in obj["evidence"]:
        lines.append(f"    - [{e['verdict']}] {e['check']}: {e['detail']}")
    for label in ("culprit", "change_commit"):
        c = obj.get(label)
        if c:
            lines.append(f"  {label.replace('_', ' ')}: {c['sha']} {c['subject']} ({'; '.join(c['reasons'][:3])})")
    if obj["related"]:
        rel = ", ".join(f"{r['kernel']}@{r['platform_short']} {r['change_pct']:+.1f}%" for r in obj["related"][:8])
        lines.append(f"  moved on the same run: {rel}")
    return "\n".join(lines)


def _check_series(session, source: str, platform: str, kernel: str | None, metric: str | None) -> None:
    """Name the stored kernels or metrics when the ones asked for do not exist (investigate
    itself names the valid sources and platforms)."""
    from service.store import choices

    if source not in SOURCES or platform not in choices.platforms(session, source):
        return
    where = f" on {platform} ({source})"
    if kernel is not None:
        check_choice("--kernel", kernel, choices.kernels(session, source, platform), where)
    if metric is not None:
        check_choice("--metric", metric, choices.metrics(session, source, platform, kernel), where)


@handles_errors
def investigate_cmd(
    platform: str = typer.Option(..., "--platform", help="platform_short, e.g. b200"),
    date: str = typer.Option(..., "--date", help="YYYY-MM-DD"),
    kernel: Optional[str] = typer.Option(None, "--kernel"),
    source: str = typer.Option("dashboard", "--source", help="dashboard or pretuned"),
    metric: Optional[str] = typer.Option(None, "--metric", help="default: the headline speedup"),
    repo: Optional[str] = typer.Option(None, "--repo", help="local Helion clone (default: helion.repo)"),
    window_days: int = typer.Option(7, "--window-days", help="look this many nightlies either side"),
    format: TextOrJson = typer.Option(TextOrJson.text, "--format"),
) -> None:
    """Find the most significant move near a date and explain it (one kernel, or every kernel)."""
    from service.pipeline.detect_pass import resolve_repo
    from service.pipeline.investigate import Question, investigate, parse_day
    from service.store.series_io import load_one

    settings = STATE.settings()
    q = Question(source, platform, kernel, metric, parse_day(date), window_days)
    store = STATE.store()
    with store.session() as session:
        _check_series(session, source, platform, kernel, metric)
    found = investigate(store, settings, q, resolve_repo(settings, repo))
    if format is TextOrJson.json:
        typer.echo(json.dumps(found[0] if kernel else found, indent=1))
        return
    blocks = []
    with store.session() as session:
        for obj in found:
            spark = ""
            loaded = load_one(session, SeriesKey(obj["source"], obj["platform_short"], obj["kernel"], obj["metric"]))
            if loaded is not None:
                pts = [p for p in loaded[1].points if p.is_trend
                       and abs((p.date.date() - q.day).days) <= window_days]
                spark = f"{pts[0].date:%m-%d} {_spark([p.value for p in pts])} {pts[-1].date:%m-%d}" if pts else ""
            blocks.append(_describe(obj, spark))
    typer.echo("\n\n".join(blocks))


@handles_errors
def alerts_cmd(
    status: str = typer.Option("open", "--status", help=", ".join(STATUSES)),
    platform: Optional[str] = typer.Option(None, "--platform", help="platform_short, e.g. b200"),
    cause: Optional[str] = typer.Option(None, "--cause", help=", ".join(CAUSES)),
    source: Optional[str] = typer.Option(None, "--source", help=", ".join(SOURCES)),
    kind: str = typer.Option("move", "--kind", help="move (flagged moves) or health (no nightly, outages, failing kernels, accuracy)"),
    groups: bool = typer.Option(False, "--groups", help="one line per group (what on-call works; act on it with G<id>)"),
    everything: bool = typer.Option(False, "--everything", help="also list real improvements and retracted moves (left out by default, as in the web queue)"),
    format: OutputFormat = typer.Option(OutputFormat.table, "--format"),
) -> None:
    """The on-call queue: flagged moves with their cause, kind, evidence and status (or health alerts).

    Like the web queue, the table leaves out real improvements and retracted moves unless asked
    (`--everything`, or `--cause real` for improvements) and says how many it left out."""
    from service.cli.table import render
    from service.store import choices
    from service.store.alert_reads import list_alerts

    check_choice("--kind", kind, KINDS)
    check_choice("--status", status, STATUSES)
    check_choice("--source", source, SOURCES)
    if kind == "health":
        _health_alerts(status, platform, cause, source, format)
        return
    check_choice("--cause", cause, CAUSES)
    if groups:
        _groups(status, platform, cause, source, format)
        return
    with STATE.store().session() as session:
        check_choice("--platform", platform, choices.platforms(session, source))
        rows = list_alerts(session, status=status, platform=platform, cause=cause, source=source)
    hidden = 0
    if not everything:
        keep = [a for a in rows if _label(a) != "retracted" and (cause == "real" or _label(a) != "improvement")]
        hidden, rows = len(rows) - len(keep), keep
    if format is OutputFormat.json:
        typer.echo(json.dumps(rows, indent=1))
        return
    table = []
    for a in rows:
        c = a["culprit"] or a["change_commit"]
        table.append((
            str(a["id"]), str(a["group_id"] or "-"), _label(a), a.get("kind") or "-", a["state"], a["status"],
            a["platform_short"], a["kernel"], a["metric"], f"{a['change_pct']:+.1f}%",
            f"{a['first_bad']['sha']} {a['first_bad']['date'][:10]}",
            f"{c['sha']} {c['subject'][:40]}" if c else "-",
        ))
    typer.echo(render(f"alerts ({status})", ("id", "group", "cause", "kind", "state", "status", "platform",
                                             "kernel", "metric", "change", "first bad", "culprit"),
                      table, right=("change",)))
    if hidden:
        typer.echo(f"({hidden} real improvements or retracted moves not shown: --everything lists them)")


def _label(a: dict) -> str:
    """The cause column as the web and Slack read it: a real move for the better is an
    improvement, a retracted move says so."""
    if a["state"] == "retracted":
        return "retracted"
    if a["cause"] == "real" and a.get("direction") == "improvement":
        return "improvement"
    return a["cause"]


def _groups(status: str, platform: str | None, cause: str | None, source: str | None,
            format: OutputFormat) -> None:
    """The groups as the group page and Slack show them (the same `GroupView`)."""
    from service.notify import words
    from service.notify.view import list_group_views
    from service.store import choices

    with STATE.store().session() as session:
        check_choice("--platform", platform, choices.platforms(session, source))
        views = list_group_views(session, STATE.settings(), status=status, platform=platform,
                                 cause=cause, source=source)
    if format is OutputFormat.json:
        typer.echo(json.dumps([v.to_json() for v in views], indent=1))
        return
    if not views:
        typer.echo(f"no groups ({status})")
        return
    for v in views:
        typer.echo(f"G{v.id}  {v.status:<12} {words.headline(v)}")
        for r in v.kernels[:6]:
            where = f"{r.platform_short}/" if len(v.platforms) > 1 else ""
            typer.echo(f"      {where}{r.kernel}: {words.kernel_line(r)}")
        if len(v.kernels) > 6:
            typer.echo(f"      … and {len(v.kernels) - 6} more")
        steps = words.next_steps(v)
        if steps:
            typer.echo(f"      next: {steps[0]}")


def _health_alerts(status: str, platform: str | None, cause: str | None, source: str | None,
                   format: OutputFormat) -> None:
    from service.cli.table import render
    from service.store.health_reads import list_health

    if cause is not None:
        raise BenchwatchError("--cause does not apply to --kind health (health alerts have no cause)")
    with STATE.store().session() as session:
        rows = list_health(session, status=None if status == "all" else status, platform=platform, source=source)
    if format is OutputFormat.json:
        typer.echo(json.dumps(rows, indent=1))
        return
    typer.echo(render(f"health alerts ({status})",
                      ("id", "group", "kind", "state", "status", "source", "platform", "kernel", "detail"),
                      [(a["id"], str(a["group_id"]), a["kind"], a["state"], a["status"], a["source"],
                        a["platform_short"] or "-", a["kernel"] or "-", a["detail"]) for a in rows]))
