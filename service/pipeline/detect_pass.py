"""The detect pass: stored series → moves → context → verdicts → alerts and groups.

Incremental (only series whose trend-point count changed since `DetectState`) and idempotent
(a second pass over the same data writes nothing). `investigate_*` run the same steps for one
kernel or platform without storing anything, for a person asking "what happened around D?".
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.config import Settings
from service.domain import HEADLINE_OF, LATENCY, SOURCES, MetricKind, Source
from service.domain import metric as metric_of
from service.errors import BenchwatchError
from service.records import AttributeChange, Classification, Move, Revert, SeriesData, SeriesKey
from service.store.alerts_writer import (
    GroupBook,
    GroupRecord,
    MoveRecord,
    alert_move,
    alerts_by_series,
    group_state,
    live_alerts,
    pair_alerts,
    retire_empty_groups,
    stored_moves,
    upsert_alert,
    upsert_group,
)
from service.store.db import Store
from service.store.series_io import (
    RunRow,
    SeriesProgress,
    SeriesRef,
    TrackFacts,
    load_series,
    mark_detected,
    runs_of,
    series_progress,
    series_refs,
)
from service.store.tables import Alert, Track

if TYPE_CHECKING:
    from service.detect.settings import DetectSettings

log = logging.getLogger(__name__)

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


_RANKINGS: dict[tuple, tuple[Any, Any]] = {}  # Stages._kept: rankings of whole windows, per process


class Stages:
    """The detector, culprit search and classifier behind one small, cached interface."""

    def __init__(self, settings: Settings, repo: Path | None) -> None:
        from service.culprit import facts, rank, window
        from service.detect import detect_series, reconcile

        self.settings = settings
        self.repo = repo
        self.dset = _detect_settings(settings)
        self.cset = _classify_settings(settings)
        self.rules = _slice_rules()
        self._detect, self._reconcile = detect_series, reconcile
        self._window_fn, self._rank, self._facts_fn = window.commit_window, rank, facts.repo_fact_changes
        self._with_lines = window.with_lines
        from service.classify.explain import load_table

        self.table = load_table()
        self._attributed: dict[tuple, Any] = {}
        self._code: dict[tuple[str, str], int] = {}
        self._this_pass: dict[tuple, tuple[Any, Any]] = {}  # rankings of windows not read whole

    def detect(self, series: SeriesData, settings: DetectSettings | None = None) -> list[Move]:
        return list(self._detect(series, settings or self.dset))

    def reconcile(self, previous: Sequence[Move], current: Sequence[Move]) -> list[Move]:
        return list(self._reconcile(previous, current, self.dset))

    def window(self, move: Move):
        """The move's commit window (`culprit.window.commit_window` keeps the one cache of them)."""
        return self._window_fn(self.repo, move.last_good.full_sha, move.first_bad.full_sha,
                               self.settings.helion.max_window_commits)

    def prefetch_windows(self, moves: Sequence[Move]) -> None:
        """Read the commit windows of ``moves`` ahead, a git process per core at once: the same
        windows `window` reads one by one (into the same cache), only sooner. Each is a
        ``git log --numstat`` of ~10-200 ms on the real clone, and a cold pass needs dozens."""
        if self.repo is None:
            return
        one_each = list({(m.last_good.full_sha, m.first_bad.full_sha): m for m in moves}.values())
        workers = min(os.cpu_count() or 1, 4, len(one_each))
        if workers < 2:
            return
        from concurrent.futures import ThreadPoolExecutor

        def read(move: Move) -> None:
            try:
                self.window(move)
            except BenchwatchError:
                pass  # `window` meets the same refusal when it asks

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(read, one_each))

    def ranked(self, move: Move, kernels: tuple[str, ...], autotune: bool = False):
        """The window's commits ranked for the move of ``kernels`` (`culprit.rank.rank_commits`);
        ``autotune``: their compile time moved with their speed."""
        w = self.window(move)
        p = move.key.platform_short
        source = move.key.source
        code = self.rules.shared.code_paths
        return self._kept(w, ("ranked", p, kernels, source, autotune), lambda: tuple(self._rank.rank_commits(
            w, p, kernels, self.rules, lines_for=lambda shas: self._with_lines(self.repo, w, shas, code),
            source=source, autotune=autotune)))

    def change_commits(self, move: Move, suite: str | None = None):
        """(harness, runner) change commits of the move's window, scoped to its platform and
        (the harness one) to its suite."""
        p = move.key.platform_short
        w = self.window(move)
        source = move.key.source
        return self._kept(w, ("changes", p, suite, source), lambda: (
            self._rank.find_change_commit(w, "harness", self.rules, p, suite, source),
            self._rank.find_change_commit(w, "runner", self.rules, p, source=source),
        ))

    def _kept(self, w, what: tuple, make):
        """A ranking of a window's commits, kept for the process when the window was read whole
        from history (it never changes; every nightly re-explains the events still settling) and
        the slice rules are the same object (an edited slices.toml is a new one)."""
        kept = _RANKINGS if w.complete else self._this_pass
        key = (str(self.repo), w.last_good, w.first_bad, *what)
        hit = kept.get(key)
        if hit is not None and hit[0] is self.rules:
            return hit[1]
        if len(kept) > 8192:
            kept.clear()
        value = kept[key] = (self.rules, make())
        return value[1]

    def names_timer(self, commit) -> bool:
        """Does this harness commit's subject say it changed a timer (`culprit.rank.names_timer`)?"""
        return commit is not None and self._rank.names_timer(commit, self.rules)

    def facts(self, move: Move, suite: str | None = None) -> tuple:
        """Method/runner facts read from Helion's files at both ends of the window, for this
        move's platform and kernel (only files some commit of the window touched are read).
        ``suite``: the job the kernel runs in (`events.job_suite`); a fact read from another
        suite's own steps is not about this kernel."""
        return self._facts_between(move.last_good.full_sha, move.first_bad.full_sha, move.key, suite)

    def _facts_between(self, last_good_full: str, first_bad_full: str, key, suite: str | None = None,
                       kernel_only: bool = False) -> tuple:
        """`facts` for the window between two nightly shas; ``kernel_only``: only facts about the
        kernel's own measurement or configs are wanted, so a window that touched no file holding
        them (`culprit.facts.may_hold_kernel_facts`) is not read at all."""
        from service.culprit.facts import may_hold_kernel_facts

        w = self._window_fn(self.repo, last_good_full, first_bad_full, self.settings.helion.max_window_commits)
        changed = w.touched_paths if w is not None and w.complete else None
        if kernel_only and not may_hold_kernel_facts(changed):
            return ()
        try:  # `culprit.facts.repo_fact_changes` keeps the one cache of them
            facts = self._facts_fn(self.repo, last_good_full, first_bad_full, key.platform_short, key.kernel,
                                   self.rules, source=key.source, changed_paths=changed)
        except BenchwatchError as exc:
            log.warning("repo facts: %s", exc.message)
            return ()
        return tuple(f for f in facts if f.suite is None or f.suite == suite)

    def young_changes(self, sd: SeriesData, suite: str | None = None) -> list[str]:
        """Runs near a series' start where its level steps (`detect.announced.young_steps`) and
        the repo says this kernel's own numbers changed in the window before
        (`classify.footprint.announces_step`): announced like a change the data publishes. Only
        the few runs the data names are read, so most series cost nothing."""
        from service.classify.footprint import announces_step
        from service.detect.announced import young_steps
        from service.detect.series import trend_points

        runs = young_steps(sd, self.dset) if self.repo is not None else []
        if not runs:
            return []
        pts = trend_points(sd)
        index = {p.run_id: i for i, p in enumerate(pts)}
        out = []
        for run in runs:
            lg, fb = pts[index[run] - 1], pts[index[run]]
            try:
                facts = self._facts_between(lg.full_sha, fb.full_sha, sd.key, suite, kernel_only=True)
            except BenchwatchError as exc:  # the window itself could not be read
                log.warning("repo facts: %s", exc.message)
                continue
            if announces_step(facts, sd.key.kernel):
                out.append(run)
        return out

    def code_commits(self, window) -> int:
        """How many commits of a window change Helion's code (not docs, tests or the harness)."""
        k = (window.last_good, window.first_bad)
        if k not in self._code:
            from service.culprit.rank import classify_file

            self._code[k] = sum(
                1 for c in window.commits if any(classify_file(f, self.rules) == "code" for f in c.files)
            )
        return self._code[k]

    def revert(self, move: Move, since_full: str) -> Revert | None:
        """A commit that landed as the move ended (``since_full``, a nightly or two before the
        one it came back on, .. that nightly) and reverted one of its window's
        (`culprit.reverts.find_revert`), or None. A revert days before the level came back did
        not end it."""
        from service.culprit.reverts import find_revert

        if move.end is None or self.repo is None:
            return None
        w = self.window(move)
        if w is None or not w.complete or not w.commits:
            return None
        try:
            later = self._window_fn(self.repo, since_full, move.end.full_sha,
                                    self.settings.helion.max_window_commits)
        except BenchwatchError:
            return None
        if not later.complete:
            return None
        return find_revert(w.commits, later.commits, self.rules)

    def attribute(self, move: Move, fact):
        """The commit of the window that made ``fact`` true: the first commit touching the fact's
        file after which the same fact reads from the last-good end (so it is scoped to this
        platform and kernel, never "some harness commit in the window")."""
        from service.records import RankedCommit

        w = self.window(move)
        if w is None or not w.complete or not w.commits or self.repo is None:
            return None
        k = (w.last_good, w.first_bad, fact.kind, fact.path, move.key.platform_short, move.key.kernel)
        if k in self._attributed:
            return self._attributed[k]
        touching = [c for c in w.commits if fact.path and any(f == fact.path or f.startswith(fact.path.rstrip("/") + "/")
                                                                 for f in c.files)]
        found = None
        if len(touching) == 1:
            found = touching[0]
        else:
            for c in touching:
                try:
                    got = self._facts_fn(self.repo, w.last_good, c.full_sha, move.key.platform_short,
                                         move.key.kernel, self.rules, source=move.key.source)
                except BenchwatchError:
                    continue
                if any(g.kind == fact.kind and g.path == fact.path for g in got):
                    found = c
                    break
        out = None
        if found is not None:
            out = RankedCommit(found.sha, found.full_sha, found.subject, found.date, 1.0,
                               (f"changes {fact.path}: {fact.detail}",))
        self._attributed[k] = out
        return out


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
    suite: dict[int, str | None] = field(default_factory=dict)  # track id -> the baseline it is compared with
    _values: dict[int, dict[str, float | None]] = field(default_factory=dict)
    _changed_at: dict[int, list[str]] = field(default_factory=dict)

    def suites(self, series: Sequence[SeriesData]) -> dict[Any, str | None]:
        """Each series' suite (its track's baseline label), for the platform-wide rule."""
        track_of = {r.key: r.track_id for r in self.refs}
        return {sd.key: self.suite.get(track_of.get(sd.key, -1)) for sd in series}

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
        from service.classify.attributes import attribute_changes

        return tuple(attribute_changes(
            self.facts.events.get(track_id, ()), self.track_values(track_id, (lg_pk, fb_pk)),
            self.runs, lg_pk, fb_pk,
        ))

    def measurement_changed_at(self, track_id: int) -> list[str]:
        """Trend runs at which the track's published measurement changed (`detect.announced`);
        worked out once per track, which every series of the track asks about."""
        if track_id not in self._changed_at:
            self._changed_at[track_id] = self._measurement_changed_at(track_id)
        return self._changed_at[track_id]

    def _measurement_changed_at(self, track_id: int) -> list[str]:
        from service.detect.announced import measurement_changed_at

        metrics = self.by_track.get(track_id, {})
        base = {m: r.series_id for m, r in metrics.items() if metric_of(m).baseline is not None and r.series_id in self.data}
        flag = metrics.get("cudagraph")
        if not base and (flag is None or flag.series_id not in self.data):
            return []
        runs = [r.run_id for r in self.trend]

        def values(sid: int) -> dict[str, float | None]:
            return {run: self.value_at(sid, run) for run in runs}

        return measurement_changed_at(runs, {m: values(sid) for m, sid in base.items()},
                                      values(flag.series_id) if flag is not None and flag.series_id in self.data else None)

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
        suite = dict(session.execute(select(Track.id, Track.baseline_label).where(Track.source == source)).all())
        return cls(
            source, runs, trend, {r.pk: i for i, r in enumerate(trend)},
            {r.run_id: pk for pk, r in runs.items()}, refs, data, dict(by_track), dict(kernels),
            TrackFacts(session, source, runs), suite,
        )


def _detectable(metric: str) -> bool:
    """Flags and counts are facts about a run, not performance: never detect on them."""
    return metric_of(metric).kind not in (MetricKind.COUNT, MetricKind.FLAG)


def _alertable(metric: str) -> bool:
    """What is detected and alerted: the catalogue says which metrics are evidence only (the
    comparators' speedups), read beside a kernel's other moves, and which alert only in a crowd
    (compile time: `_crowd_only`)."""
    m = metric_of(metric)
    return _detectable(metric) and (m.alerts or m.crowd_alerts)


def _crowd_only(found: dict[int, list[Move]], view: SourceView, stages: Stages, keep: frozenset[int]
                ) -> dict[int, list[Move]]:
    """Moves of a crowd-alerting metric (compile time) stand only where at least
    ``group_min_kernels`` and ``crowd_fraction`` of the platform's kernels that ran moved it the
    same way on that nightly (±1), and fewer than ``group_min_kernels`` kernels' alerting metrics
    moved then: beside speed moves compile time is evidence on them, not an alert of its own.
    ``keep``: series asked about by name, whose moves are shown whatever the crowd."""
    import math

    from service.detect.series import trend_points

    crowd = [sid for sid in found if sid not in keep and metric_of(view.data[sid].key.metric).crowd_alerts]
    if not crowd:
        return found
    c = stages.cset
    night_of = {r.run_id: i for i, r in enumerate(view.trend)}
    ran: Counter = Counter()
    moved: dict[tuple, set[str]] = defaultdict(set)
    speed: dict[tuple, set[str]] = defaultdict(set)
    for sid in crowd:
        key = view.data[sid].key
        for p in trend_points(view.data[sid]):
            if p.run_id in night_of:
                ran[(key.platform_short, key.metric, night_of[p.run_id])] += 1
        for m in found[sid]:
            moved[(key.platform_short, key.metric, m.direction, night_of.get(m.first_bad.run_id))].add(key.kernel)
    for sid, ms in found.items():
        key = view.data[sid].key
        if metric_of(key.metric).alerts:
            for m in ms:
                speed[(key.platform_short, night_of.get(m.first_bad.run_id))].add(key.kernel)
    out = dict(found)
    for sid in crowd:
        key = view.data[sid].key
        kept = []
        for m in found[sid]:
            o = night_of.get(m.first_bad.run_id)
            if o is None:
                continue
            near = set().union(*(moved[(key.platform_short, key.metric, m.direction, o + d)] for d in (-1, 0, 1)))
            sped = set().union(*(speed[(key.platform_short, o + d)] for d in (-1, 0, 1)))
            need = max(c.group_min_kernels, math.ceil(c.crowd_fraction * ran[(key.platform_short, key.metric, o)]))
            if len(near) >= need and len(sped) < c.group_min_kernels:
                kept.append(m)
        out[sid] = kept
    return out


def fresh_moves(stages: Stages, view: SourceView, series_ids: Sequence[int],
                asked: Sequence[int] = ()) -> dict[int, list[Move]]:
    """What the detector sees now in each of ``series_ids``: its own steps, and the steps only
    the platform-wide rule finds (`detect.pooled`); crowd-alerting metrics keep only their
    crowd's moves (`_crowd_only`) but in the series ``asked`` about. The nightly pass and
    `investigate` both call this, so they never disagree about a move."""
    from service.detect.announced import announced_moves, onto_announced
    from service.detect.pooled import pooled_moves

    night_of = {r.run_id: i for i, r in enumerate(view.trend)}
    track_of = {r.series_id: r.track_id for r in view.refs}
    found = {}
    for sid in series_ids:
        found[sid] = stages.detect(view.data[sid])
        # the data says how it is measured changed there, or the repo does near the series' start:
        # a step needs less history
        changed_at = [*view.measurement_changed_at(track_of[sid]),
                      *stages.young_changes(view.data[sid], view.suite.get(track_of[sid]))]
        if changed_at:
            found[sid] = onto_announced(view.data[sid], changed_at, stages.dset, found[sid])
            more = announced_moves(view.data[sid], changed_at, stages.dset, found[sid], night_of)
            found[sid] = sorted([*found[sid], *more], key=lambda m: m.first_bad.date)
    # the headline only: a platform-wide step in latency or compile time alone is a change in
    # how those are measured far more often than news, and either timer's own detector sees big ones
    headline = HEADLINE_OF[view.source]
    alertable = [view.data[r.series_id] for r in view.refs if r.key.metric == headline and r.series_id in view.data]
    known = {view.data[sid].key: ms for sid, ms in found.items()}
    extra = pooled_moves(alertable, night_of, stages.dset, known, view.suites(alertable))
    seen = {k: [*known.get(k, ()), *extra.get(k, ())] for k in {*known, *extra}}
    for key, more in _newest_night_moves(stages, view, alertable, night_of, seen).items():
        extra.setdefault(key, []).extend(more)
    for sid in series_ids:
        more = extra.get(view.data[sid].key)
        if more:
            found[sid] = sorted([*found[sid], *more], key=lambda m: m.first_bad.date)
    pairs = _timer_pairs(view)
    _add_joint_moves(found, view, stages, night_of, pairs)
    _add_night_dips(found, view, stages, night_of, pairs)
    return _crowd_only(_one_night_per_kernel(found, view, stages, night_of), view, stages, frozenset(asked))


def _timer_pairs(view: SourceView) -> dict[tuple[str, str], dict[str, int]]:
    """(platform, kernel) -> {headline or latency: series id}: each dashboard kernel's two timers."""
    timers: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for r in view.refs:
        if r.key.metric in (HEADLINE_OF[view.source], LATENCY) and r.series_id in view.data:
            timers[(r.key.platform_short, r.key.kernel)][r.key.metric] = r.series_id
    return {k: pair for k, pair in timers.items() if len(pair) == 2}


def _add_joint_moves(found: dict[int, list[Move]], view: SourceView, stages: Stages,
                     night_of: dict[str, int], pairs: dict[tuple[str, str], dict[str, int]]) -> None:
    """Steps a kernel's two timers show together and neither alone (`detect.joint.joint_moves`),
    added (in place) to the timers being detected. The other timer is read as it is stored
    even when it has no new nightly (a night its run failed): the step stays found, night after
    night, instead of being retracted and reopened."""
    from service.detect.joint import joint_moves

    if view.source != Source.DASHBOARD:
        return
    for pair in pairs.values():
        if not any(sid in found for sid in pair.values()):
            continue
        sp, lat = pair[HEADLINE_OF[view.source]], pair[LATENCY]
        known = [*found.get(sp, ()), *found.get(lat, ())]
        for m in joint_moves(view.data[sp], view.data[lat], stages.dset, known, night_of):
            sid = sp if m.key == view.data[sp].key else lat
            if sid in found:
                found[sid] = sorted([*found[sid], m], key=lambda x: x.first_bad.date)


def _add_night_dips(found: dict[int, list[Move]], view: SourceView, stages: Stages,
                    night_of: dict[str, int], pairs: dict[tuple[str, str], dict[str, int]]) -> None:
    """One bad night on both timers (`detect.joint.one_night_dips`), added (in place) where at
    least ``group_min_kernels`` kernels of the platform had it on the same nightly, the same way,
    and the series has no move of its own there. Every kernel of the platform is read, whichever
    series are being detected, so `investigate` of one kernel sees the company the nightly saw.
    Whether such a night is an event (a change and its revert) or noise is the event stage's."""
    from service.detect.joint import one_night_dips

    if view.source != Source.DASHBOARD:
        return
    platforms = {view.data[sid].key.platform_short for sid in found}
    sid_of = {view.data[sid].key: sid for pair in pairs.values() for sid in pair.values()}
    dips: dict[tuple, list[Move]] = defaultdict(list)
    for (platform, _), pair in pairs.items():
        if platform not in platforms:
            continue
        sp, lat = pair[HEADLINE_OF[view.source]], pair[LATENCY]
        for m in one_night_dips(view.data[sp], view.data[lat], stages.dset, night_of):
            dips[(platform, night_of[m.first_bad.run_id], m.direction)].append(m)
    near = stages.dset.match_nights
    for (_, night, _), ms in dips.items():
        if len({m.key.kernel for m in ms}) < stages.cset.group_min_kernels:
            continue
        for m in ms:
            sid = sid_of[m.key]
            if sid not in found or any(n.direction == m.direction and n.first_bad.run_id in night_of
                                       and abs(night_of[n.first_bad.run_id] - night) <= near for n in found[sid]):
                continue
            found[sid] = sorted([*found[sid], m], key=lambda x: x.first_bad.date)


def _one_night_per_kernel(found: dict[int, list[Move]], view: SourceView, stages: Stages,
                          night_of: dict[str, int]) -> dict[int, list[Move]]:
    """A kernel's alerting metrics that stepped the same way a night apart share one first-bad
    nightly (`detect.joint.align_timers`): one move of the kernel, not two events."""
    from service.detect.joint import align_timers

    by_kernel: dict[tuple[str, str], list[int]] = defaultdict(list)
    for sid in found:
        key = view.data[sid].key
        if metric_of(key.metric).alerts and found[sid]:
            by_kernel[(key.platform_short, key.kernel)].append(sid)
    out = dict(found)
    for sids in by_kernel.values():
        if len(sids) < 2:
            continue
        flat = [(sid, m) for sid in sids for m in found[sid]]
        aligned = align_timers([m for _, m in flat], {view.data[sid].key: view.data[sid] for sid in sids},
                               night_of, stages.dset)
        for sid in sids:
            out[sid] = sorted((a for (s, _), a in zip(flat, aligned) if s == sid), key=lambda m: m.first_bad.date)
    return out


def _newest_night_moves(stages: Stages, view: SourceView, series: list[SeriesData], night_of: dict[str, int],
                        known: dict) -> dict:
    """Steps on the newest nightly, reported the night they appear (provisional), where the
    platform's window holds a platform-wide method or hardware fact (a runner, a pin, the
    autotune budget): the repo already explains them, so a second bad night would only delay
    the message. Two kinds: a platform-wide step too small for one series (`pooled_moves`), and
    one kernel's own step at `min_significance`, the fact standing in for the second night (a
    torch pin moves each kernel's baselines its own way, up or down, which no same-way rule
    across the platform sees: 54f56b56 in the last nightly). Without such a fact, a crowd stands
    in for it: ``newest_crowd_kernels`` kernels whose own step that night moved both timers the
    same way (Helion's time itself, not one timer's stray reading; `_crowd_of_newest`). Else a
    step waits for ``report_after_nights`` like any other."""
    from service.detect.pooled import pooled_moves

    newest = len(view.trend) - 1
    if newest < 0 or stages.dset.report_after_nights <= 1:
        return {}
    quick = stages.dset.model_copy(update={"report_after_nights": 1})
    out: dict = {}
    explained: dict[tuple, bool] = {}
    suites = view.suites(series)

    def explains(m: Move) -> bool:
        suite = suites.get(m.key)
        w = (m.key.platform_short, m.last_good.full_sha, m.first_bad.full_sha, suite)
        if w not in explained:
            explained[w] = any(f.kernels is None and f.suggests in ("method_change", "hardware")
                               for f in stages.facts(m, suite))
        return explained[w]

    for key, ms in pooled_moves(series, night_of, quick, known, suites).items():
        for m in ms:
            if night_of.get(m.first_bad.run_id) == newest and explains(m):
                out.setdefault(key, []).append(m)
    lone = quick.model_copy(update={"first_night_significance": quick.min_significance})
    unexplained: list[tuple[SeriesKey, Move]] = []
    for sd in series:
        if sd.key in out or any(night_of.get(m.first_bad.run_id) == newest for m in known.get(sd.key, ())):
            continue
        if not _newest_jumped(sd, newest, night_of, lone):
            continue
        for m in stages.detect(sd, lone):
            if night_of.get(m.first_bad.run_id) == newest and m.end is None:
                if explains(m):
                    out.setdefault(sd.key, []).append(m)
                else:
                    unexplained.append((sd.key, m))
    for key, m in _crowd_of_newest(view, unexplained, newest, night_of, lone):
        out.setdefault(key, []).append(m)
    return out


def _crowd_of_newest(view: SourceView, moves: list[tuple[SeriesKey, Move]], newest: int,
                     night_of: dict[str, int], s: DetectSettings) -> list[tuple[SeriesKey, Move]]:
    """The headline steps on the newest nightly that a crowd vouches for: at least
    ``newest_crowd_kernels`` kernels stepped the same way, each on both timers (its latency off
    the week before by `min_change_pct`, the way Helion's own time moves). One kernel's bad night,
    or one timer's, is the usual outlier; several kernels' Helion time on one night is news (a
    change landed in the last nightly) whichever way the data later goes."""
    if s.newest_crowd_kernels <= 0 or not moves:
        return []
    pairs = _timer_pairs(view)
    floor = math.log1p(s.min_change_pct / 100.0)
    by_way: dict[str, list[tuple[SeriesKey, Move]]] = defaultdict(list)
    for key, m in moves:
        pair = pairs.get((key.platform_short, key.kernel))
        if pair is None:
            continue
        head, lat = (_newest_log_ratio(view.data[pair[metric]], newest, night_of, s.min_size + 1)
                     for metric in (HEADLINE_OF[view.source], LATENCY))
        if head is None or lat is None or abs(lat) < floor or (head > 0) == (lat > 0):
            continue  # a speedup and a latency move opposite ways when Helion's time moves
        by_way[m.direction].append((key, m))
    return [km for crowd in by_way.values()
            if len({(k.platform_short, k.kernel) for k, _ in crowd}) >= s.newest_crowd_kernels for km in crowd]


def _newest_jumped(sd: SeriesData, newest: int, night_of: dict[str, int], s: DetectSettings) -> bool:
    """Is the series' newest nightly off the median of the week before by `min_change_pct`? (A
    cheap look first: the search runs only on the few series whose last night jumped.)"""
    r = _newest_log_ratio(sd, newest, night_of, s.min_size + 1)
    return r is not None and abs(r) >= math.log1p(s.min_change_pct / 100.0)


def _newest_log_ratio(sd: SeriesData, newest: int, night_of: dict[str, int], least: int) -> float | None:
    """log(newest nightly / median of the week before), read from the last eight nightly points
    only (a series' points are in date order); None where the series has no point that night or
    fewer than ``least`` points."""
    from service.detect.series import is_trend_value

    last = []
    for p in reversed(sd.points):
        if is_trend_value(p):
            last.append(p.value)
            if len(last) == 8:
                break
            if len(last) == 1 and night_of.get(p.run_id) != newest:
                return None
    if len(last) < least:
        return None
    before = sorted(last[1:])
    return math.log(last[0] / before[len(before) // 2])


def _move_key(m: Move) -> tuple:
    return (m.key, m.first_bad.run_id, m.direction)


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
    stored = alerts_by_series(session, [r.series_id for r in view.refs])

    # 1. detect + reconcile the changed series; unchanged series keep their stored moves
    fresh = fresh_moves(stages, view, sorted(changed))
    moves: dict[int, list[Move]] = {}
    for sid, ref in ref_by_id.items():
        previous = stored_moves(stored.get(sid, []), ref.key, view.runs)
        if sid in changed:
            moves[sid] = stages.reconcile(previous, fresh[sid])
        elif previous:
            moves[sid] = previous
    # 2. events: the live moves of the source grouped by platform and nightly, each group
    #    explained as a whole; its members take its verdict
    from service.classify import group_moves
    from service.pipeline.events import explain_groups, move_key, part_of

    live = [m for ms in moves.values() for m in ms if m.state != "retracted"]
    lone = _lone_blips(live, view, stages)
    live = [m for m in live if move_key(m) not in lone]
    stages.prefetch_windows(live)
    groups = group_moves(live, part_of(stages, view, moves=live))
    newest = len(view.trend) - 1
    sid_of = {r.key: r.series_id for r in view.refs}
    settled = {
        move_key(m) for m in live
        if _old_and_stored(m, stored.get(sid_of.get(m.key, -1), []), view, newest, stages.dset.settle_nights)
    }
    # an event whose every member is old and stored keeps its stored verdict: its evidence has
    # settled, and re-explaining a year of events every night would cost seconds for nothing
    fresh = [g for g in groups if not all(move_key(m) in settled for m in g.moves)]
    verdicts = explain_groups(stages, view, fresh, context=groups)
    cls_of: dict[tuple, Classification] = {}
    for gv in verdicts.values():
        cls_of.update(gv.members)
    unalerted = lone | {k for gv in verdicts.values() for k in gv.unalerted}

    # 3. store the moves of the changed series
    touched_groups: set[int] = set()
    for sid in sorted(changed):
        recs = []
        for move in moves.get(sid, []):
            lg_pk, fb_pk = view.pk_of.get(move.last_good.run_id), view.pk_of.get(move.first_bad.run_id)
            if lg_pk is None or fb_pk is None:
                continue
            cls = None
            if move_key(move) in unalerted:  # a lone blip, or a co-mover under the smallest step
                move = dataclasses.replace(move, state="retracted")
            end_pk = view.pk_of.get(move.end.run_id) if move.end is not None else None
            if move.state != "retracted":
                cls = cls_of.get(move_key(move))
            recs.append(MoveRecord(sid, move, cls, lg_pk, fb_pk, end_pk))
        # every move of the series paired with its stored alert at once, closest first
        paired = pair_alerts(stored.get(sid, []), recs, view.ordinal)
        for rec, found in zip(recs, paired):
            move, cls = rec.move, rec.classification
            summary.moves += move.state != "retracted"
            if move_key(move) in settled and (cls is None or _settled(
                    move, rec.first_bad_pk, stored.get(sid, []), view, newest, stages.dset.settle_nights, cls)):
                continue
            out = upsert_alert(session, rec, view.ordinal, now, alerts=stored.get(sid, []), paired=(found,))
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

    # 4. regroup every live alert of the source (cheap: a few hundred rows at most)
    by_member = {k: gv for gv in verdicts.values() for k in gv.members}
    _regroup(session, stages, view, now, summary, touched_groups, by_member)


def _lone_blips(moves: list[Move], view: SourceView, stages: Stages) -> set[tuple]:
    """Short ended excursions without the company on their platform and night (±1) that could
    make them an event (`classify.groups.short_event_stands`, asked as if the best explanation
    were there): noise, dropped before any event is explained (most nights have a few)."""
    from service.classify.groups import short_event_stands
    from service.pipeline.events import move_key

    short = [m for m in moves if m.state == "ended" and m.nights_after <= stages.dset.revert_nights]
    if not short:
        return set()
    night: dict[str, int | None] = {}
    near: dict[tuple[str, int], list[Move]] = defaultdict(list)
    for m in short:
        o = view.ordinal.get(view.pk_of.get(m.first_bad.run_id, -1))
        night[m.first_bad.run_id] = o
        if o is not None:
            near[(m.key.platform_short, o)].append(m)
    need = stages.cset.group_min_kernels
    timers = (HEADLINE_OF[view.source], LATENCY) if view.source == Source.DASHBOARD else None
    out = set()
    for m in short:
        o = night[m.first_bad.run_id]
        company = [] if o is None else [c for d in (-1, 0, 1) for c in near.get((m.key.platform_short, o + d), ())]
        if not short_event_stands(company, len({c.key.kernel for c in company}), need, True, True, timers):
            out.add(move_key(m))
    return out


def _old_and_stored(move: Move, alerts: Sequence[Alert], view: SourceView, newest: int, settle_nights: int) -> bool:
    """A move confirmed (or ended) long ago whose alert is already stored for the same nightly."""
    if move.state not in ("confirmed", "ended"):
        return False
    fb_pk = view.pk_of.get(move.first_bad.run_id)
    night = view.ordinal.get(fb_pk) if fb_pk is not None else None
    if night is None or newest - night < settle_nights:
        return False
    return any(a.first_bad_run_pk == fb_pk and a.state == move.state and a.direction == move.direction
               for a in alerts)


def _settled(move: Move, fb_pk: int, alerts: Sequence[Alert], view: SourceView, newest: int,
             settle_nights: int, cls: Classification) -> bool:
    """An old confirmed move whose stored alert already says the same thing: nothing to redo."""
    if move.state != "confirmed":
        return False
    night = view.ordinal.get(fb_pk)
    if night is None or newest - night < settle_nights:
        return False
    return any(
        a.first_bad_run_pk == fb_pk and a.state == "confirmed" and a.direction == move.direction
        and a.cause == cls.cause and a.cause_kind == cls.kind
        for a in alerts
    )


def _regroup(session: Session, stages: Stages, view: SourceView, now: datetime,
             summary: DetectSummary, touched: set[int], by_member: dict[tuple, Any] | None = None) -> None:
    """Group every live alert of the source again and upsert the groups.

    Platform groups hold alerts; a cross-platform parent (several platforms stepped on one
    nightly) holds the platform groups as children, never the alerts themselves, so each
    alert sits in exactly one platform group and Slack gets one message per group.
    A platform group's cause is its event's verdict (`events.explain_groups`), unless on-call
    reclassified members: then the latest human decision stands. A group's revision (which
    edits its Slack message) bumps only when what the message says changes.
    """
    from service.classify import group_moves
    from service.pipeline.events import move_key, part_of

    by_member = by_member or {}
    alerts = [
        a for a in session.scalars(
            select(Alert).where(Alert.series_id.in_([r.series_id for r in view.refs])).order_by(Alert.id)
        )
        if a.state != "retracted"
    ]
    ref_by_id = {r.series_id: r for r in view.refs}
    members: list[Move] = []
    by_move: dict[tuple, Alert] = {}
    for a in live_alerts(alerts):
        if a.status == "resolved":
            continue
        m = alert_move(a, ref_by_id[a.series_id].key, view.runs)
        members.append(m)
        by_move[_move_key(m)] = a

    groups = group_moves(members, part_of(stages, view, moves=members))
    book = GroupBook(session, view.source)
    old_groups = {a.group_id for a in alerts if a.group_id is not None} | touched
    stored_of: dict[int, int] = {}  # id(MoveGroup) -> AlertGroup id
    decided: dict[int, tuple[str, str, int]] = {}  # id(MoveGroup) -> (cause, kind, kernels)
    for group in groups:  # platform groups come before their parent
        gmoves = list(group.moves)
        fb_pk = view.pk_of[group.first_bad_run_id]
        state = group_state(m.state for m in gmoves)
        if group.platform_short is None:
            cause, kind, conf, evidence = _parent_verdict(group, decided)
            rec = GroupRecord(view.source, fb_pk, None, cause, conf, evidence, state,
                              child_ids=tuple(stored_of[id(c)] for c in group.children), kind=kind)
        else:
            alert_rows = [by_move[_move_key(m)] for m in gmoves]
            cause, kind, conf, evidence = _platform_verdict(gmoves, alert_rows, by_member, move_key)
            decided[id(group)] = (cause, kind, len(group.kernels))
            ends = [a.end_run_pk for a in alert_rows]
            end_pk = max(ends, key=lambda pk: view.ordinal.get(pk, -1)) if state == "ended" and all(ends) else None
            rec = GroupRecord(view.source, fb_pk, gmoves[0].key.platform_short, cause, conf, evidence,
                              state, tuple(a.id for a in alert_rows), kind=kind, end_run_pk=end_pk,
                              part=group.part)
        g, bumped = upsert_group(session, rec, now, book)
        stored_of[id(group)] = g.id
        summary.groups_bumped += bumped
    session.flush()
    retire_empty_groups(session, old_groups, now)


def _platform_verdict(gmoves: list[Move], rows: list[Alert], by_member: dict,
                      key_fn) -> tuple[str, str, float, tuple[dict, ...]]:
    """(cause, kind, confidence, evidence) of one platform group."""
    from service.store.alerts_writer import evidence_item

    humans = sorted((a for a in rows if a.human_cause), key=lambda a: (a.updated_at, a.id))
    if humans:
        # on-call has spoken: the latest human decision is the group's cause
        latest = humans[-1]
        ev = ({"check": "human", "verdict": latest.human_cause,
               "detail": f"on-call classified this as {latest.human_cause}"},)
        return latest.human_cause, latest.cause_kind or "", 1.0, ev
    found = Counter(id(by_member[key_fn(m)]) for m in gmoves if key_fn(m) in by_member)
    if found:
        gid = found.most_common(1)[0][0]
        gv = next(by_member[key_fn(m)] for m in gmoves if id(by_member.get(key_fn(m))) == gid)
        v = gv.verdict
        return v.cause, v.kind, v.confidence, tuple(evidence_item(e) for e in v.evidence)
    # an event not explained this pass (every member settled): what its members were told
    told = Counter((a.cause, a.cause_kind or "") for a in rows)
    (cause, kind), n = told.most_common(1)[0]
    lead = next(a for a in rows if (a.cause, a.cause_kind or "") == (cause, kind))
    evidence = tuple(e for e in (lead.evidence or []) if e.get("check") == "event") or (
        {"check": "members", "verdict": cause, "detail": f"{n} of {len(rows)} members are {cause}"},)
    return cause, kind, float(lead.confidence), evidence


def _parent_verdict(group, decided: dict) -> tuple[str, str, float, tuple[dict, ...]]:
    """A cross-platform parent: the cause of most of its children's kernels."""
    weight: Counter = Counter()
    kinds: dict[str, Counter] = defaultdict(Counter)
    for child in group.children:
        cause, kind, n = decided.get(id(child), ("noise", "", 0))
        weight[cause] += n
        kinds[cause][kind] += n
    if not weight:
        return "noise", "", 0.0, ()
    cause, n = weight.most_common(1)[0]
    total = sum(weight.values())
    parts = ", ".join(f"{c} {k}" for c, k in weight.most_common())
    detail = (f"{len({c.platform_short for c in group.children})} platforms stepped on the same nightly; "
              f"kernels by cause: {parts}")
    return cause, kinds[cause].most_common(1)[0][0], round(n / total, 3), (
        {"check": "members", "verdict": cause, "detail": detail},)
