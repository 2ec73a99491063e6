"""Hand-made `GroupView`s for the pure notify tests (no database)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from service.notify.view import AuditEntry, CommitView, GroupView, KernelRow, RunAt

LG = "a" * 40
FB = "b" * 40
CULPRIT = "c" * 40


def row(kernel: str = "rms_norm", speedup: float | None = -14.2, latency: float | None = 16.0, *,
        alert_id: int = 1, platform: str = "b200", direction: str = "regression", status: str = "open",
        honest: float | None = 1.28) -> KernelRow:
    ids = (alert_id,) + ((alert_id + 100,) if latency is not None and speedup is not None else ())
    return KernelRow(platform, kernel, alert_id, ids, speedup, latency, (), direction, status, honest,
                     "latency agrees" if honest else "")


def alert(alert_id: int = 1, status: str = "open") -> dict:
    return {"id": alert_id, "status": status, "state": "confirmed"}


def view(**over) -> GroupView:
    base = GroupView(
        id=7, parent_id=None, source="dashboard", platform_short="b200", platforms=("b200",),
        cause="real", cause_by_human=False, machine_cause="real", kind="code", direction="regression",
        confidence=0.82, state="confirmed", revision=1,
        first_bad=RunAt("7030", FB[:8], FB, "2026-03-31T08:00:00Z",
                        "https://github.com/pytorch/helion/actions/runs/7030"),
        first_bad_date=datetime(2026, 3, 31, 8),
        last_good=RunAt("7029", LG[:8], LG, "2026-03-30T08:00:00Z", None),
        end=None,
        kernels=(row("rms_norm", -14.2, 16.0, alert_id=1), row("layer_norm", -10.1, 11.0, alert_id=2),
                 row("softmax", -12.0, None, alert_id=3), row("sum", -11.0, None, alert_id=4)),
        commit=CommitView("culprit", CULPRIT[:8], CULPRIT, "[Triton] slower tiling", "Ada Lovelace",
                          f"https://github.com/pytorch/helion/commit/{CULPRIT}"),
        compare_url=f"https://github.com/pytorch/helion/compare/{LG}...{FB}",
        group_url="http://bw.test/groups/7",
        evidence=("triton and torch.compile stayed flat", "latency agrees with the speedup"),
        statuses=(("open", 4),), all_closed=False, assignee=None, audit=(),
        alerts=tuple(alert(i) for i in (1, 2, 3, 4)),
    )
    return replace(base, **over)


__all__ = ["AuditEntry", "CommitView", "row", "view", "alert"]
