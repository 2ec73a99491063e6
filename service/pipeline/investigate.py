"""`benchwatch investigate`: what happened to a platform (or one kernel) around a date?

The same detect -> context -> classify steps as the nightly pass, run on demand and stored
nowhere, so a person asking "why did rms_norm on b200 drop on the 14th?" gets the machine's
full reasoning in a second. Only the series that can matter are loaded: every metric of the
platform (siblings, breadth) and the headline metric of the other platforms (cross-platform
breadth). Where the detect pass has already seen every nightly of those series, their moves
are the ones it stored (the same search's answer, read); otherwise the search runs here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from pathlib import Path
from statistics import median

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.config import Settings
from service.domain import HEADLINE_OF, MoveState
from service.domain import metric as metric_of
from service.errors import BenchwatchError
from service.records import Move, SeriesData
from service.records import HEADLINE, aware
from service.pipeline.detect_pass import SourceView, Stages, _alertable, _detectable, fresh_moves
from service.store.alert_reads import run_json
from service.store.alerts_writer import alert_move, alerts_by_series, classification_fields, live_alerts, stored_verdict
from service.store.db import Store
from service.store.series_io import detected_through, series_refs
from service.store.tables import Track


@dataclass(frozen=True)
class Question:
    source: str
    platform_short: str
    kernel: str | None
    metric: str | None
    day: date
    window_nights: int = 7


def parse_day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BenchwatchError(f"--date must be YYYY-MM-DD, not {text!r}") from None


def _check_question(session: Session, q: Question) -> str:
    if q.source not in HEADLINE_OF:
        raise BenchwatchError(f"--source must be dashboard or pretuned, not {q.source!r}")
    if q.window_nights < 1 or q.window_nights > 60:
        raise BenchwatchError("--window-days must be between 1 and 60")
    platforms = set(session.scalars(select(Track.platform_short).where(Track.source == q.source)))
    if q.platform_short not in platforms:
        known = ", ".join(sorted(platforms)) or "none stored yet"
        raise BenchwatchError(f"no {q.source} series for platform {q.platform_short!r} (known: {known})")
    metric = q.metric or HEADLINE_OF[q.source]
    if not _detectable(metric):
        raise BenchwatchError(f"metric {metric!r} is a count or flag, not a performance series")
    refs = series_refs(session, source=q.source, platform_short=q.platform_short, kernel=q.kernel, metric=metric)
    if not refs:
        what = f"kernel {q.kernel!r} with metric {metric!r}" if q.kernel else f"metric {metric!r}"
        raise BenchwatchError(f"no {q.source} series on {q.platform_short} for {what}")
    return metric


def _level_near(series: SeriesData, when: datetime, nights: int) -> float | None:
    vals = [p.value for p in series.points if p.is_trend and p.value is not None
            and abs((p.date - when).days) <= nights]
    return median(vals) if vals else None


def _quiet(q: Question, kernel: str, metric: str, series: SeriesData, when: datetime) -> dict:
    level = _level_near(series, when, q.window_nights)
    return {
        "source": q.source, "platform_short": q.platform_short, "kernel": kernel, "metric": metric,
        "cause": "noise", "kind": "", "direction": None, "confidence": 1.0 if level is not None else 0.0,
        "last_good": None, "first_bad": None, "end": None, "before": level, "after": level, "change_pct": 0.0,
        "significance": 0.0,
        "true_speedup": level,
        "true_speedup_reason": "no persistent step near the date: the honest value is the series level"
        if level is not None else "no nightly values near the date",
        "culprit": None, "change_commit": None, "candidates": [],
        "evidence": [{
            "check": "persistence", "verdict": "noise",
            "detail": f"no persistent step on any metric within ±{q.window_nights} nightlies of {q.day.isoformat()}",
        }],
        "related": [], "others": [],
    }


def _quiet_answer(q: Question, kernel: str, refs: list, view: SourceView, when: datetime) -> list[dict]:
    """A kernel with no move near the date: its level on the metric asked (or the headline)."""
    metric = q.metric or HEADLINE_OF[q.source]
    ref = next((r for r in refs if r.key.platform_short == q.platform_short and r.key.kernel == kernel
                and r.key.metric == metric), None)
    return [_quiet(q, kernel, metric, view.data[ref.series_id], when)] if ref is not None else []


def _movers_first(out: list[dict]) -> list[dict]:
    """Movers first, most significant first, then by kernel."""
    return sorted(out, key=lambda o: (o["first_bad"] is None, -(o.get("significance") or 0.0), o["kernel"]))


def _brief(m: Move) -> dict:
    return {"metric": m.key.metric, "first_bad": run_json(m.first_bad), "change_pct": round(m.change_pct, 2),
            "state": m.state, "significance": round(m.significance, 1)}


def _explained(q: Question, move: Move, verdict: dict, others: list[Move]) -> dict:
    """One answer: the move, and its verdict as an alert row holds it (`classification_fields`
    of a fresh classification, or the columns of the stored alert)."""
    return {
        "source": q.source, "platform_short": move.key.platform_short, "kernel": move.key.kernel,
        "metric": move.key.metric, "cause": verdict["cause"], "kind": verdict["cause_kind"] or "",
        "direction": move.direction, "confidence": round(float(verdict["confidence"]), 3),
        "last_good": run_json(move.last_good), "first_bad": run_json(move.first_bad),
        "end": run_json(move.end) if move.end is not None else None,
        "before": move.before, "after": move.after, "change_pct": round(move.change_pct, 2),
        "significance": round(move.significance, 1),
        "true_speedup": verdict["true_speedup"], "true_speedup_reason": verdict["true_speedup_reason"] or "",
        "culprit": verdict["culprit"], "change_commit": verdict["change_commit"],
        "candidates": list(verdict["candidates"] or []), "evidence": list(verdict["evidence"] or []),
        "related": list(verdict["related"] or []), "others": [_brief(m) for m in others],
    }


def _data_span(view: SourceView, when: datetime, nights: int) -> None:
    """A date with no nightlies near it is a question about nothing: say so (exit 2)."""
    dates = [r.date for r in view.trend]
    if not dates:
        raise BenchwatchError(f"no {view.source} nightlies stored yet")
    near = [d for d in dates if abs((aware(d) - when).days) <= nights]
    if not near:
        raise BenchwatchError(
            f"no nightlies near {when.date().isoformat()} (±{nights}); data spans "
            f"{min(dates).date().isoformat()}..{max(dates).date().isoformat()}")


def _nearest(moves: list[Move], when: datetime, nights: int) -> tuple[Move | None, list[Move]]:
    """The move nearest the asked date (the most significant on a tie), and the others nearby."""
    near = [m for m in moves if m.state != "retracted" and abs((aware(m.first_bad.date) - when).days) <= nights]
    if not near:
        return None, []
    near.sort(key=lambda m: (abs((aware(m.first_bad.date) - when).total_seconds()) // 86400,
                             m.key.metric not in HEADLINE, -m.significance))
    return near[0], near[1:]


def _same_clone(settings: Settings, repo: Path | None) -> bool:
    """Is ``repo`` the clone the detect pass reads? Only then are its stored verdicts the answer:
    a person who names another clone asks for the windows as that clone has them."""
    configured = settings.helion.repo
    if repo is None or not configured:
        return repo is None and not configured
    return Path(configured).expanduser().resolve() == repo.expanduser().resolve()


def _from_store(session: Session, q: Question, view: SourceView, refs: list, when: datetime) -> list[dict]:
    """The answer when the detect pass has seen every nightly of the platform's series: the move
    nearest the date among those it stored, with the verdict it stored. Nothing is searched,
    grouped or read from git again, and by construction it is what the queue and Slack say."""
    mine = [r for r in refs if _alertable(r.key.metric) and (q.metric is None or r.key.metric == q.metric)]
    by_series = alerts_by_series(session, [r.series_id for r in mine])
    out = []
    for kernel in sorted({r.key.kernel for r in refs if q.kernel is None or r.key.kernel == q.kernel}):
        pairs = [(alert_move(a, r.key, view.runs), a) for r in mine if r.key.kernel == kernel
                 for a in live_alerts(by_series.get(r.series_id, [])) if a.state != MoveState.RETRACTED]
        move, others = _nearest([m for m, _ in pairs], when, q.window_nights)
        if move is None:
            out += _quiet_answer(q, kernel, refs, view, when)
            continue
        alert = next(a for m, a in pairs if m is move)
        out.append(_explained(q, move, stored_verdict(alert), others))
    return out


def investigate(store: Store, settings: Settings, q: Question, repo: Path | None) -> list[dict]:
    """One explained object per kernel asked about: the move nearest the date on any of the
    kernel's metrics (or the one asked for), classified by the same event path as the nightly
    pass, with the kernel's other moves nearby listed. Movers first, by significance."""
    from service.classify import group_moves
    from service.pipeline.events import explain_groups, move_key, part_of

    when = datetime.combine(q.day, time(12, 0), tzinfo=timezone.utc)
    with store.session() as session:
        metric_asked = _check_question(session, q)
        headline = HEADLINE_OF[q.source]
        every = series_refs(session, source=q.source)
        platform = [r for r in every if r.key.platform_short == q.platform_short]
        # a metric that alerts only in a crowd (compile time) asked by name shows its moves
        # whatever the crowd: searched afresh, as the stored alerts keep only the crowd's
        if metric_of(metric_asked).alerts and _same_clone(settings, repo) and detected_through(
                session, [r.series_id for r in platform if _alertable(r.key.metric)]):
            view = SourceView.load(session, q.source, platform)
            _data_span(view, when, q.window_nights)
            return _movers_first(_from_store(session, q, view, platform, when))
        # the other platforms are context (a move elsewhere that night is evidence): their
        # headline, and the metric asked about, as the nightly pass sees them beside this one
        refs = [r for r in every if r.key.metric in (headline, q.metric) or r.key.platform_short == q.platform_short]
        view = SourceView.load(session, q.source, refs)
        _data_span(view, when, q.window_nights)
        # what is alerted, and the metric asked about even where it is evidence only (compile time)
        asked = [r.series_id for r in refs if q.metric is not None and r.key.metric == q.metric
                 and r.key.platform_short == q.platform_short]
        alertable = [r.series_id for r in refs if _alertable(r.key.metric)]
        stages = Stages(settings, repo)
        moves = fresh_moves(stages, view, alertable + asked, asked=asked)
        # only the events that can hold the answer are explained: the nightlies near the date
        # (with a margin, so every group that reaches into the window forms as the nightly pass
        # forms it: a group spans one nightly either side of its anchor)
        reach = q.window_nights + 3
        live = [m for ms in moves.values() for m in ms
                if m.state != "retracted" and abs((aware(m.first_bad.date) - when).days) <= reach]
        stages.prefetch_windows([m for m in live if m.key.platform_short == q.platform_short])  # what `part` reads
        groups = group_moves(live, part_of(stages, view, q.platform_short, live))
        asked = [g for g in groups if g.platform_short == q.platform_short]
        verdicts = explain_groups(stages, view, asked, context=groups)
        cls_of = {k: c for gv in verdicts.values() for k, c in gv.members.items()}
        kernels = sorted({r.key.kernel for r in refs if r.key.platform_short == q.platform_short
                          and (q.kernel is None or r.key.kernel == q.kernel)})
        out = []
        for kernel in kernels:
            mine = [m for r in refs if r.key.platform_short == q.platform_short and r.key.kernel == kernel
                    and (q.metric is None or r.key.metric == q.metric) for m in moves.get(r.series_id, [])]
            move, others = _nearest(mine, when, q.window_nights)
            c = cls_of.get(move_key(move)) if move is not None else None
            if move is None or c is None:
                out += _quiet_answer(q, kernel, refs, view, when)
                continue
            out.append(_explained(q, move, classification_fields(c), others))
    return _movers_first(out)


__all__ = ["Question", "investigate", "parse_day"]
