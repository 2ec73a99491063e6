"""What one Slack message shows about a group, read from the store into plain data.

Rendering (render.py) works on this dict only, so it is testable with hand-made input and never
touches ORM objects. A cross-platform parent shows the alerts of its child groups.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.records import HEADLINE
from service.store.alert_reads import (
    AlertRows,
    alerts_json,
    effective_cause,
    human_decisions,
    iso,
    load_alerts,
)
from service.store.tables import Alert, AlertGroup, Run

CLOSED = ("resolved", "dismissed")


def member_alerts(session: Session, group: AlertGroup) -> list[AlertRows]:
    ids = [group.id] + list(
        session.scalars(select(AlertGroup.id).where(AlertGroup.parent_id == group.id))
    )
    return load_alerts(session, Alert.group_id.in_(ids))


def group_view(session: Session, group: AlertGroup) -> dict[str, Any]:
    alerts = alerts_json(session, member_alerts(session, group))
    live = [a for a in alerts if a["state"] != "retracted"] or alerts
    # the headline metric first (what the dashboard shows), then the biggest moves
    live.sort(key=lambda a: (a["metric"] not in HEADLINE, -abs(a["change_pct"] or 0.0)))
    cause, by_human = effective_cause(group.cause, alerts, human_decisions(session, [a["id"] for a in alerts]))
    run = session.get(Run, group.first_bad_run_pk)
    end = session.get(Run, group.end_run_pk) if group.end_run_pk else None
    statuses = Counter(a["status"] for a in alerts)
    humans = [
        {"alert_id": a["id"], **h}
        for a in alerts for h in a["history"]
        if h["by"] != "benchwatch" and h["action"] in ("acknowledged", "resolved", "dismissed", "reclassified")
    ]
    humans.sort(key=lambda h: h["at"] or "")
    return {
        "id": group.id,
        "source": group.source,
        "platform_short": group.platform_short,
        "platforms": sorted({a["platform_short"] for a in live}),
        "cause": cause,
        "cause_by_human": by_human,
        "machine_cause": group.cause,
        "confidence": group.confidence,
        "state": group.state,
        "kind": group.cause_kind or "",
        "end": {"sha": end.full_sha[:8], "full_sha": end.full_sha, "date": iso(end.date)} if end else None,
        "revision": group.revision,
        "first_bad": {"sha": run.full_sha[:8], "full_sha": run.full_sha, "date": iso(run.date)},
        "first_bad_date": run.date,
        "evidence": list(group.evidence or []),
        "alerts": live,
        "all_closed": bool(alerts) and all(a["status"] in CLOSED for a in alerts),
        "statuses": dict(statuses),
        "human_actions": humans[-3:],
    }
