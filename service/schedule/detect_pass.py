"""The detect pass: stored series → moves → context → verdicts → alerts and groups.

Incremental (only series whose trend-point count changed since `DetectState`) and idempotent
(a second pass over the same data writes nothing). `investigate_*` run the same steps for one
kernel or platform without storing anything, for a person asking "what happened around D?".
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.classify.metrics import COMPARATOR_SPEEDUPS
from service.config import Settings
from service.errors import BenchwatchError
from service.records import (
    AttributeChange,
    Classification,
    Evidence,
    Move,
    SeriesData,
)
from service.store.alerts_writer import (
    GroupRecord,
    MoveRecord,
    alert_move,
    group_state,
    live_alerts,
    retire_empty_groups,
    upsert_alert,
    upsert_group,
)
from service.store.db import Store
from service.store.series_reads import (
    RunRow,
    SeriesProgress,
    SeriesRef,
    TrackFacts,
    attribute_changes_of,
    load_series,
    mark_detected,
    runs_of,
    series_progress,
    series_refs,
)
from service.store.tables import Alert

log = logging.getLogger(__name__)

DEFAULT_METRIC = {"dashboard": "helion_speedup_geomean", "pretuned": "geomean"}
SOURCES = ("dashboard", "pretuned")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class DetectSummary:
    series_total: int = 0
    series_checked: int = 0
    moves: int = 0  # live (not retracted) moves in the checked series
    created: int = 0
    reopened: int = 0
    updated: int = 0
    retracted: int = 0
    groups_bumped: int = 0
    warnings: list[str] = field(default_factory=list)

    def line(self) -> str:
        text = (
            f"detect: {self.series_checked} of {self.series_total} series had new data; "
            f"{self.moves} moves; alerts {self.created} new, {self.reopened} reopened, "
            f"{self.updated} updated, {self.retracted} retracted; {self.groups_bumped} groups changed"
        )
        if self.warnings:
            text += f"; warning: {self.warnings[0]}"
        return text


# --- stage adapters -------------------------------------------------------------------------
# The stages are owned elsewhere; everything this pass needs from them goes through here.


def _detect_settings(settings: Settings):
    from service.detect import DetectSettings

    return DetectSettings.from_mapping(settings.detect)


def _classify_settings(settings: Settings):
    from service.classify import settings as csettings

    return csettings.ClassifySettings.from_mapping(settings.classify)


def _slice_rules():
    from service.culprit import rules as crules

    return crules.load_rules()


class Stages:
    """The detector, culprit search and classifier behind one small, cached interface."""

    def __init__(self, settings: Settings, repo: Path | None) -> None:
        from service.classify import classify_group, classify_move
        from service.classify.context import MoveContext
        from service.culprit import facts, rank, window
        from service.detect import detect_series, nearest_move, reconcile

        self.settings = settings
        self.repo = repo
        self.dset = _detect_settings(settings)
        self.cset = _classify_settings(settings)
        self.rules = _slice_rules()
        self._detect, self._reconcile, self._nearest = detect_series, reconcile, nearest_move
        self._classify, self._classify_group, self._Ctx = classify_move, classify_group, MoveContext
        self._window_fn, self._rank, self._facts_fn = window.commit_window, rank, facts.repo_fact_changes
        self._facts: dict[tuple, tuple] = {}
        self._windows: dict[tuple[str, str], Any] = {}
        self._ranked: dict[tuple, tuple] = {}
        self._changes: dict[tuple[str, str], tuple] = {}

    def detect(self, series: SeriesData) -> list[Move]:
        return list(self._detect(series, self.dset))

    def reconcile(self, previous: Sequence[Move], current: Sequence[Move]) -> list[Move]:
        return list(self._reconcile(previous, current, self.dset))

    def nearest(self, moves: Sequence[Move], date: datetime, nights: int) -> Move | None:
        return self._nearest(moves, date, nights)

    def window(self, move: Move):
        k = (move.last_good.full_sha, move.first_bad.full_sha)
        if k not in self._windows:
            self._windows[k] = self._window_fn(self.repo, *k, self.settings.helion.max_window_commits)
        return self._windows[k]

    def ranked(self, move: Move, kernels: tuple[str, ...]):
        w = self.window(move)
        k = (move.last_good.full_sha, move.first_bad.full_sha, move.key.platform_short, kernels)
        if k not in self._ranked:
            self._ranked[k] = tuple(self._rank.rank_commits(w, move.key.platform_short, kernels, self.rules))
        return self._ranked[k]

    def change_commits(self, move: Move):
        k = (move.last_good.full_sha, move.first_bad.full_sha)
        if k not in self._changes:
            w = self.window(move)
            self._changes[k] = (
                self._rank.find_change_commit(w, "harness", self.rules),
                self._rank.find_change_commit(w, "runner", self.rules),
            )
        return self._changes[k]

    def facts(self, move: Move):
        """Method/runner facts read from Helion's files at both ends of the window."""
        k = (move.last_good.full_sha, move.first_bad.full_sha, move.key.platform_short, move.key.kernel)
        if k not in self._facts:
            try:
                self._facts[k] = tuple(self._facts_fn(self.repo, *k, self.rules))
            except BenchwatchError as exc:
                log.warning("repo facts: %s", exc.message)
                self._facts[k] = ()
        return self._facts[k]

    def context(self, **kw):
        return self._Ctx(**kw)

    def classify(self, ctx) -> Classification:
        return self._classify(ctx, self.cset)

    def classify_group(self, members, run_id: str):
        return self._classify_group(members, self.cset, run_id=run_id)


# --- the shared analysis --------------------------------------------------------------------


@dataclass
class SourceView:
    """Everything about one source that building contexts needs, loaded once."""

    source: str
    runs: dict[int, RunRow]
    trend: list[RunRow]
    ordinal: dict[int, int]  # run pk -> index among trend runs
    pk_of: dict[str, int]  # run_id -> pk
    refs: list[SeriesRef]
    data: dict[int, SeriesData]
    by_track: dict[int, dict[str, SeriesRef]]
    kernels_by_platform: dict[str, set[str]]
    facts: TrackFacts | None = None
    _values: dict[int, dict[str, float | None]] = field(default_factory=dict)

    def value_at(self, series_id: int, run_id: str) -> float | None:
        """A series' value at one run (built once per series, then a dict lookup)."""
        vals = self._values.get(series_id)
        if vals is None:
            vals = {p.run_id: p.value for p in self.data[series_id].points}
            self._values[series_id] = vals
        return vals.get(run_id)

    def track_values(self, track_id: int, pks: tuple[int, ...]) -> dict[str, dict[int, float | None]]:
        """metric -> run pk -> value at the given runs, for every metric of a track."""
        out: dict[str, dict[int, float | None]] = {}
        for metric, ref in self.by_track.get(track_id, {}).items():
            if ref.series_id in self.data:
                out[metric] = {pk: self.value_at(ref.series_id, self.runs[pk].run_id) for pk in pks}
        return out

    def attribute_changes(self, track_id: int, lg_pk: int, fb_pk: int) -> tuple[AttributeChange, ...]:
        """What about the track itself changed across a step (timer, baselines, shapes)."""
        return tuple(attribute_changes_of(
            self.facts.events.get(track_id, ()), self.track_values(track_id, (lg_pk, fb_pk)),
            self.runs, lg_pk, fb_pk,
        ))

    @classmethod
    def load(cls, session: Session, source: str, refs: list[SeriesRef] | None = None) -> "SourceView":
        runs = runs_of(session, source)
        trend = sorted((r for r in runs.values() if r.is_trend), key=lambda r: (r.date, r.run_id))
        refs = refs if refs is not None else series_refs(session, source=source)
        data = load_series(session, refs, {source: runs})
        by_track: dict[int, dict[str, SeriesRef]] = defaultdict(dict)
        kernels: dict[str, set[str]] = defaultdict(set)
        for r in refs:
            by_track[r.track_id][r.key.metric] = r
            kernels[r.key.platform_short].add(r.key.kernel)
        return cls(
            source, runs, trend, {r.pk: i for i, r in enumerate(trend)},
            {r.run_id: pk for pk, r in runs.items()}, refs, data, dict(by_track), dict(kernels),
            TrackFacts(session, source, runs),
        )


def _detectable(metric: str) -> bool:
    """Flags and counts are facts about a run, not performance: never detect on them."""
    return metric not in ("cudagraph", "helion_wins", "total")


def _alertable(metric: str) -> bool:
    """The comparators' speedups feed the helion_only check but raise no alert of their own."""
    return _detectable(metric) and metric not in COMPARATOR_SPEEDUPS


def _move_key(m: Move) -> tuple:
    return (m.key, m.first_bad.run_id, m.direction)


class NightIndex:
    """The live moves of a pass by trend-night ordinal (by run id when the run is not a trend
    night): built once per pass, so finding a move's peers is a few dict reads."""

    def __init__(self, moves: Sequence[Move], view: SourceView) -> None:
        self.view = view
        self.nights: dict[int, list[Move]] = defaultdict(list)
        self.runs: dict[str, list[Move]] = defaultdict(list)
        for m in moves:
            o = view.ordinal.get(view.pk_of.get(m.first_bad.run_id, -1))
            if o is not None:
                self.nights[o].append(m)
            else:
                self.runs[m.first_bad.run_id].append(m)

    def peers(self, move: Move, tolerance: int = 1) -> tuple[Move, ...]:
        """Live moves of other series whose first-bad run is the same nightly (± tolerance)."""
        me = self.view.ordinal.get(self.view.pk_of.get(move.first_bad.run_id, -1))
        if me is None:
            near = self.runs.get(move.first_bad.run_id, ())
        else:
            near = [m for o in range(me - tolerance, me + tolerance + 1) for m in self.nights.get(o, ())]
        return tuple(m for m in near if m.key != move.key and m.state != "retracted")


def build_context(stages: Stages, view: SourceView, ref: SeriesRef, move: Move, index: NightIndex):
    """Gather what the classifier weighs about one move (see service/classify/context.py)."""
    lg_pk, fb_pk = view.pk_of[move.last_good.run_id], view.pk_of[move.first_bad.run_id]
    track = view.by_track[ref.track_id]
    siblings = {
        metric: view.data[r.series_id] for metric, r in track.items() if metric != ref.key.metric
    }
    platforms = {p for p in view.kernels_by_platform}
    peers = index.peers(move)
    # the culprit search looks for every kernel of the platform that stepped with this one
    kernels = tuple(sorted({ref.key.kernel} | {
        m.key.kernel for m in peers if m.key.platform_short == ref.key.platform_short
    }))
    harness, runner = stages.change_commits(move)
    return stages.context(
        move=move,
        siblings=siblings,
        peer_moves=peers,
        platform_kernel_count=len(view.kernels_by_platform.get(ref.key.platform_short, ())),
        other_platforms_count=len(platforms - {ref.key.platform_short}),
        shapes_before=view.facts.shapes_near(ref.track_id, lg_pk, side="before"),
        shapes_after=view.facts.shapes_near(ref.track_id, fb_pk, side="after"),
        attribute_changes=view.attribute_changes(ref.track_id, lg_pk, fb_pk),
        window=stages.window(move),
        candidates=stages.ranked(move, kernels),
        harness_commit=harness,
        runner_commit=runner,
        repo_facts=stages.facts(move),
        series=view.data[ref.series_id],
    )


# --- detect (stores) ------------------------------------------------------------------------


def _fetch_repo(settings: Settings, repo: Path | None) -> str | None:
    if repo is None or not settings.helion.remote:
        return None
    from service.culprit import git

    try:
        return git.fetch(repo, settings.helion.remote)
    except BenchwatchError as exc:
        return exc.message


def resolve_repo(settings: Settings, repo: Path | str | None) -> Path | None:
    """--repo, else config helion.repo; a named clone that is not there is an input error."""
    value = repo if repo not in (None, "") else settings.helion.repo
    if not value:
        return None
    path = Path(value).expanduser()
    if not (path / ".git").exists() and not (path / "HEAD").exists():
        raise BenchwatchError(f"helion repo {path} is not a git clone")
    return path


def detect_pass(store: Store, settings: Settings, repo: Path | None, *, now: datetime | None = None,
                fetch: bool = True) -> DetectSummary:
    """Detect + classify every series with new trend data and store alerts and groups."""
    now = now or utcnow()
    summary = DetectSummary()
    if fetch:
        warning = _fetch_repo(settings, repo)
        if warning:
            summary.warnings.append(warning)
    stages = Stages(settings, repo)
    with store.session() as session:
        progress = series_progress(session)
        summary.series_total = len(progress)
        todo = [p for p in progress if p.trend_points != (p.seen or 0)]
        summary.series_checked = len(todo)
        if not todo:
            return summary
        for source in SOURCES:
            mine = [p for p in todo if p.ref.key.source == source]
            if mine:
                _detect_source(session, stages, source, mine, now, summary)
        mark_detected(session, todo, now)
    for w in summary.warnings:
        log.warning("detect: %s", w)
    return summary


def _detect_source(
    session: Session, stages: Stages, source: str, todo: list[SeriesProgress], now: datetime,
    summary: DetectSummary,
) -> None:
    view = SourceView.load(session, source)
    ref_by_id = {r.series_id: r for r in view.refs}
    changed = {p.ref.series_id for p in todo if _alertable(p.ref.key.metric)}
    stored: dict[int, list[Alert]] = defaultdict(list)
    for a in session.scalars(
        select(Alert).where(Alert.series_id.in_([r.series_id for r in view.refs])).order_by(Alert.id)
    ):
        stored[a.series_id].append(a)

    # 1. detect + reconcile the changed series; unchanged series keep their stored moves
    moves: dict[int, list[Move]] = {}
    for sid, ref in ref_by_id.items():
        previous = [
            alert_move(a, ref.key, view.runs) for a in live_alerts(stored.get(sid, []))
            if a.state != "retracted" and a.status != "resolved"
            or (a.status == "resolved" and a.state != "retracted")
        ]
        if sid in changed:
            moves[sid] = stages.reconcile(previous, stages.detect(view.data[sid]))
        elif previous:
            moves[sid] = previous
    index = NightIndex([m for ms in moves.values() for m in ms if m.state != "retracted"], view)

    # 2. classify + store the moves of the changed series
    touched_groups: set[int] = set()
    newest = len(view.trend) - 1
    for sid in sorted(changed):
        ref = ref_by_id[sid]
        for move in moves.get(sid, []):
            lg_pk, fb_pk = view.pk_of.get(move.last_good.run_id), view.pk_of.get(move.first_bad.run_id)
            if lg_pk is None or fb_pk is None:
                continue
            if _settled(move, fb_pk, stored.get(sid, []), view, newest, stages.dset.settle_nights):
                summary.moves += 1
                continue
            cls = None
            if move.state != "retracted":
                ctx = build_context(stages, view, ref, move, index)
                cls = stages.classify(ctx)
                summary.moves += 1
            out = upsert_alert(
                session, MoveRecord(sid, move, cls, lg_pk, fb_pk), view.ordinal, now,
                alerts=stored.get(sid, []),
            )
            if out.action in ("created", "reopened"):
                stored[sid].append(session.get(Alert, out.alert_id))
            summary.created += out.action == "created"
            summary.reopened += out.action == "reopened"
            summary.updated += out.action == "updated" and move.state != "retracted"
            summary.retracted += out.action == "updated" and move.state == "retracted"
            a = session.get(Alert, out.alert_id) if out.alert_id else None
            if a is not None and a.group_id is not None:
                touched_groups.add(a.group_id)
    session.flush()

    # 3. regroup every live alert of the source (cheap: a few hundred rows at most)
    _regroup(session, stages, view, now, summary, touched_groups)


def _settled(move: Move, fb_pk: int, alerts: Sequence[Alert], view: SourceView, newest: int,
             settle_nights: int) -> bool:
    """An old confirmed move whose stored alert already says the same thing: nothing to redo."""
    if move.state != "confirmed":
        return False
    night = view.ordinal.get(fb_pk)
    if night is None or newest - night < settle_nights:
        return False
    return any(
        a.first_bad_run_pk == fb_pk and a.state == "confirmed" and a.direction == move.direction
        for a in alerts
    )


def _regroup(session: Session, stages: Stages, view: SourceView, now: datetime,
             summary: DetectSummary, touched: set[int]) -> None:
    """Group every live alert of the source again and upsert the groups.

    Platform groups hold alerts; a cross-platform parent (several platforms stepped on one
    nightly) holds the platform groups as children, never the alerts themselves, so each
    alert sits in exactly one platform group and Slack gets one message per group.
    A group's revision (which edits its Slack message) bumps only when what the message
    says changes: the group's cause, state or nightly, or who is in it. A member flipping
    its own verdict back and forth inside an unchanged group edits nothing.
    """
    alerts = [
        a for a in session.scalars(
            select(Alert).where(Alert.series_id.in_([r.series_id for r in view.refs])).order_by(Alert.id)
        )
        if a.state != "retracted"
    ]
    ref_by_id = {r.series_id: r for r in view.refs}
    members = []
    by_move: dict[tuple, Alert] = {}
    for a in live_alerts(alerts):
        if a.status == "resolved":
            continue
        m = alert_move(a, ref_by_id[a.series_id].key, view.runs)
        members.append((m, _stored_classification(a)))
        by_move[_move_key(m)] = a
    from service.classify import group_moves

    groups = group_moves([m for m, _ in members])
    cls_of = {_move_key(m): c for m, c in members}
    old_groups = {a.group_id for a in alerts if a.group_id is not None} | touched
    stored_of: dict[int, int] = {}  # id(MoveGroup) -> AlertGroup id
    for group in groups:  # platform groups come before their parent
        gmoves = list(group.moves)
        verdict = stages.classify_group([(m, cls_of[_move_key(m)]) for m in gmoves], group.first_bad_run_id)
        fb_pk = view.pk_of[group.first_bad_run_id]
        state = group_state(m.state for m in gmoves)
        cause, conf, evidence = _verdict_cause(verdict), _verdict_confidence(verdict), _verdict_evidence(verdict)
        if group.platform_short is None:
            rec = GroupRecord(view.source, fb_pk, None, cause, conf, evidence, state,
                              child_ids=tuple(stored_of[id(c)] for c in group.children))
        else:
            alert_rows = [by_move[_move_key(m)] for m in gmoves]
            rec = GroupRecord(view.source, fb_pk, gmoves[0].key.platform_short, cause, conf, evidence,
                              state, tuple(a.id for a in alert_rows))
        g, bumped = upsert_group(session, rec, now)
        stored_of[id(group)] = g.id
        summary.groups_bumped += bumped
    session.flush()
    retire_empty_groups(session, old_groups, now)


def _stored_classification(a: Alert) -> Classification:
    return Classification(
        a.human_cause or a.cause, a.confidence,
        tuple(Evidence(e["check"], e["verdict"], e["detail"]) for e in a.evidence or []),
        a.true_speedup, a.true_speedup_reason or "",
    )


def _verdict_cause(v) -> str:
    return getattr(v, "cause", "noise")


def _verdict_confidence(v) -> float:
    return float(getattr(v, "confidence", 0.0))


def _verdict_evidence(v) -> tuple[dict, ...]:
    return tuple(
        {"check": e.check, "verdict": e.verdict, "detail": e.detail}
        for e in getattr(v, "evidence", ()) or ()
    )
