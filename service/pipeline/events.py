"""Gather each event's footprint from the store's view and the Helion clone, and classify it.

The detect pass and `investigate` both call `explain_groups`, so a move gets the same verdict
whichever way a person meets it. An event here is one platform group of `group_moves` (the
moves of one source on one platform on one nightly ±1); the other platforms of that nightly
are read as context ("did the other machines move too?").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from service.classify.event import (EventVerdict, classify_event, member_classification, own_configs_member,
                                    reported_culprit, with_change_commit)
from service.classify.footprint import (EventInput, KernelSteps, Thresholds, autotuning_moved, configs_regenerated,
                                        new_machine, own_configs_fact, own_method_fact, shares_machine_change, stepped)
from service.classify.levels import step_of
from service.classify.groups import event_ended, short_event_stands
from service.classify.metrics import COMPARATOR_SPEEDUPS, LATENCY, family, is_baseline_metric
from service.domain import HEADLINE_OF
from service.records import CANDIDATES_SHOWN, Classification, Evidence, FactChange, Move, RankedCommit, Revert

if TYPE_CHECKING:
    from service.classify.groups import MoveGroup
    from service.pipeline.detect_pass import SourceView, Stages

COMPILE = "compile_time_geomean_s"


def move_key(m: Move) -> tuple:
    return (m.key, m.first_bad.run_id, m.direction)


@dataclass(frozen=True)
class GroupVerdict:
    """An event's verdict and the verdict of each of its members (by `move_key`)."""

    verdict: EventVerdict
    members: dict[tuple, Classification]
    change_commit: RankedCommit | None
    # members not alerted: lone short excursions (noise), and members that moved less than a step must
    unalerted: frozenset = frozenset()


def _rep(moves: list[Move], headline: str) -> Move:
    """The move that stands for a kernel: its headline move, else its most significant one."""
    heads = [m for m in moves if m.key.metric == headline]
    return max(heads or moves, key=lambda m: m.significance)


class EventGatherer:
    """Reads what `EventInput` needs for the groups of one source's pass (indexes built once)."""

    def __init__(self, stages: "Stages", view: "SourceView") -> None:
        self.stages, self.view = stages, view
        self.headline = HEADLINE_OF[view.source]
        self.track_of: dict[tuple[str, str], int] = {}
        self.heads_by_job: dict[tuple[str, str | None], list[int]] = defaultdict(list)
        for r in view.refs:
            self.track_of[(r.key.platform_short, r.key.kernel)] = r.track_id
            if r.key.metric == self.headline:
                self.heads_by_job[(r.key.platform_short, job_suite(stages, view, r.track_id))].append(r.series_id)
        c = stages.cset
        self.th = Thresholds(sigma=c.sibling_sigma, min_pct=c.sibling_min_pct, ratio=c.sibling_step_ratio,
                             compile_drop_pct=c.compile_drop_pct, autotune_moved_pct=c.autotune_moved_pct,
                             most_fraction=c.most_fraction, most_min_kernels=c.most_min_kernels,
                             machine_fraction=c.machine_fraction, strong_culprit=c.culprit_strong_score,
                             weak_culprit=c.culprit_min_score, report_culprit=c.culprit_report_score)

    # --- per kernel ---------------------------------------------------------------------------

    def _series(self, track_id: int, metric: str):
        ref = self.view.by_track.get(track_id, {}).get(metric)
        return self.view.data.get(ref.series_id) if ref is not None else None

    def step(self, track_id: int, metric: str, m: Move):
        c = self.stages.cset
        return step_of(self._series(track_id, metric), m.last_good.date, m.first_bad.date, c.level_nights,
                       c.noise_floor)

    def facts(self, m: Move) -> tuple[FactChange, ...]:
        return self.stages.facts(m, self.suite(m))

    def kernel_steps(self, kernel: str, rep: Move) -> KernelSteps:
        v = self.view
        tid = self.track_of.get((rep.key.platform_short, kernel))
        if tid is None:
            return KernelSteps(kernel, None)
        metrics = v.by_track.get(tid, {})
        if v.source == "dashboard":
            comps = tuple(self.step(tid, x, rep) for x in COMPARATOR_SPEEDUPS if x in metrics)
            latency = self.step(tid, LATENCY, rep) if LATENCY in metrics else None
        else:
            comps = tuple(self.step(tid, x, rep) for x in sorted(metrics) if is_baseline_metric(x))
            latency = None
        lg_pk, fb_pk = v.pk_of.get(rep.last_good.run_id), v.pk_of.get(rep.first_bad.run_id)
        shapes = shapes_changed(v, tid, rep)
        attrs = None
        if lg_pk is not None and fb_pk is not None and v.facts is not None:
            attrs = tuple(sorted({a.attribute for a in v.attribute_changes(tid, lg_pk, fb_pk)}))
        facts = tuple(f for f in self.facts(rep) if f.kernels is not None and kernel in f.kernels)
        return KernelSteps(
            kernel=kernel, headline=self.step(tid, self.headline, rep), latency=latency, comparators=comps,
            compile=self.step(tid, COMPILE, rep) if COMPILE in metrics else None, facts=facts,
            shapes_changed=shapes, attributes=attrs or (),
        )

    def ran(self, platform: str, run_id: str, suite: str | None = None) -> int:
        """Kernels of the platform's job (the main suite, or a suite with a job of its own) that
        have a value that night: what the event's breadth is a share of."""
        return sum(1 for sid in self.heads_by_job.get((platform, suite), ()) if self.view.value_at(sid, run_id))

    def suite(self, m: Move) -> str | None:
        """The job the move's kernel runs in (`job_suite`)."""
        return job_suite(self.stages, self.view, self.track_of.get((m.key.platform_short, m.key.kernel)))

    # --- per event ----------------------------------------------------------------------------

    def event_input(self, group: "MoveGroup", night_groups: list["MoveGroup"]
                    ) -> tuple[EventInput, Move, tuple[RankedCommit, ...]]:
        by_kernel: dict[str, list[Move]] = defaultdict(list)
        for m in group.moves:
            by_kernel[m.key.kernel].append(m)
        reps = {k: _rep(ms, self.headline) for k, ms in by_kernel.items()}
        lead = max(reps.values(), key=lambda m: (m.key.metric == self.headline, m.significance))
        kernels = tuple(self.kernel_steps(k, reps[k]) for k in sorted(reps))
        platform = group.platform_short or lead.key.platform_short
        fam = family(platform)
        direction = Counter(m.direction for m in group.moves).most_common(1)[0][0]
        elsewhere: dict[str, set[str]] = defaultdict(set)
        one_move: dict[str, Move] = {}
        for other in night_groups:
            if other is group or other.platform_short in (None, platform):
                continue
            if family(other.platform_short) == fam:
                continue
            for m in other.moves:
                if m.direction == direction:
                    elsewhere[other.platform_short].add(m.key.kernel)
                    one_move.setdefault(other.platform_short, m)
        moved_elsewhere = tuple(sorted(p for p, ks in elsewhere.items() if len(ks) >= 2))
        platform_facts = tuple(f for f in self.facts(lead) if f.kernels is None)
        # the other platforms that moved and whose own window holds the same runner or image
        # change (one file: a CUDA bump for every NVIDIA lane of the dispatch): their moving is
        # that change's footprint. A torch_tpu bump beside a CuTe DSL bump is two changes.
        shared_change = tuple(p for p in moved_elsewhere
                              if shares_machine_change(platform_facts, self.facts(one_move[p])))
        window = self.stages.window(lead)
        known = window is not None and window.complete and self.stages.repo is not None
        top = None
        code = 0
        ranked: tuple[RankedCommit, ...] = ()
        autotuning = autotuning_moved(kernels, self.th)
        if known:
            ranked = tuple(self.stages.ranked(lead, tuple(sorted(reps)), autotuning))
            top = ranked[0] if ranked else None
            code = self.stages.code_commits(window)
        harness = self.stages.change_commits(lead, self.suite(lead))[0] if known else None
        revert = self._revert(group) if known else None
        if revert is not None and revert.kind == "code":
            ranked = _reverted_first(ranked, revert)
            top = ranked[0]
        ev = EventInput(
            source=self.view.source, platform=platform, kernels=kernels,
            ran=self.ran(platform, lead.first_bad.run_id, self.suite(lead)), elsewhere=moved_elsewhere,
            elsewhere_same_change=shared_change,
            platform_facts=platform_facts, top_candidate=top, window_known=known,
            same_sha=bool(lead.last_good.full_sha) and lead.last_good.full_sha == lead.first_bad.full_sha,
            code_commits=code, ended=event_ended(group.moves),
            came_back=2 * len({m.key.kernel for m in group.moves if m.state == "ended"}) >= len(by_kernel),
            config_regenerated=configs_regenerated(kernels), autotuning=autotuning,
            window_problem=None if known else (window.problem if window is not None else None),
            harness_commit=harness,
            harness_timer=self.stages.names_timer(harness),
            revert=revert,
        )
        return ev, lead, ranked[:CANDIDATES_SHOWN]

    def _revert(self, group: "MoveGroup") -> Revert | None:
        """A revert that landed as the event ended (in the two nightlies up to the one its level
        came back on, so a nightly's late start is no matter), read off its members that came
        back: the first that names one."""
        ended = [m for m in group.moves if m.state == "ended" and m.end is not None]
        if not ended or len(ended) < len(group.moves):
            return None
        for m in sorted(ended, key=lambda m: -m.significance)[:3]:
            o = self.view.ordinal.get(self.view.pk_of.get(m.end.run_id, -1))
            if o is None or o < 1:
                continue
            r = self.stages.revert(m, self.view.trend[max(0, o - 2)].full_sha)
            if r is not None:
                return r
        return None

    def scores(self, ev: EventInput) -> dict[str, float]:
        from service.classify.explain import explain
        from service.classify.footprint import observe

        return explain(observe(ev, self.th), self.stages.table).scores

    def explain(self, group: "MoveGroup", gathered: tuple, pooled: dict[str, float] | None = None) -> GroupVerdict:
        ev, lead, ranked = gathered
        v = classify_event(ev, self.stages.table, self.th, pooled)
        change = None
        if v.change_fact is not None:
            change = self.stages.attribute(lead, v.change_fact)
        elif v.cause == "method_change":
            change = self.stages.change_commits(lead, self.suite(lead))[0]
        own = {k.kernel: k.facts for k in ev.kernels}
        members: dict[tuple, Classification] = {}
        min_sig = self.stages.cset.min_significance
        # a short excursion that came back is an event with an end only where something explains
        # the end (`classify.groups.short_event_stands`); otherwise its members are blips
        episode = short_event_stands(group.moves, len(ev.kernels), self.stages.cset.group_min_kernels,
                                     ev.revert is not None, v.cause == "hardware",
                                     (self.headline, LATENCY) if self.view.source == "dashboard" else None)
        short = self.stages.dset.revert_nights
        blips = frozenset(move_key(m) for m in group.moves
                          if m.state == "ended" and m.nights_after <= short and not episode)
        # a member below the bar alone is noise; one of many kernels that stepped together on
        # this platform (the platform-wide rule found them) is part of the event
        kernels_by_direction: dict[str, set[str]] = defaultdict(set)
        for m in group.moves:
            kernels_by_direction[m.direction].add(m.key.kernel)
        crowd = {d for d, ks in kernels_by_direction.items() if len(ks) >= self.stages.cset.group_min_kernels}
        floor = self.stages.dset.min_change_pct
        heads = sorted(abs(m.change_pct) for m in group.moves if m.key.metric == self.headline) or \
            sorted(abs(m.change_pct) for m in group.moves)
        typical = heads[len(heads) // 2] if heads else 0.0
        quiet: set[tuple] = set()
        for m in group.moves:
            if move_key(m) in blips:
                continue
            if m.significance < min_sig and m.direction not in crowd and not m.joint and not m.held:
                members[move_key(m)] = _noise(m, min_sig)
                continue
            # in an event whose typical member stepped, a series that itself moved less than a
            # step must (`detect.min_change_pct`) has nothing to show on-call: it counts in the
            # event's breadth, and is not alerted (the event is its other members). An event of
            # small moves (a platform-wide shift the pooled rule found) is all there is: alerted.
            if abs(m.change_pct) < floor and typical >= floor:
                quiet.add(move_key(m))
                continue
            c = member_classification(v, m, own.get(m.key.kernel, ()), candidates=ranked)
            configs = own_configs_fact(own.get(m.key.kernel, ()), m.key.kernel)
            if configs is not None and c.cause != "real":
                c = own_configs_member(c, m, configs, self.stages.attribute(m, configs))
            elif c.cause == "real" and (m.last_good.run_id, m.first_bad.run_id) != (lead.last_good.run_id,
                                                                                  lead.first_bad.run_id):
                c = self._own_window_culprit(c, group, m, ev.autotuning)
            c = with_change_commit(c, change)
            members[move_key(m)] = c
        return GroupVerdict(v, members, change, blips | quiet)

    def _own_window_culprit(self, c: Classification, group: "MoveGroup", m: Move,
                            autotuning: bool = False) -> Classification:
        """A member that stepped a nightly off the event's lead has a window of its own, which
        the lead's culprit did not land in (two regressions on neighbouring nightlies, d32: one
        group, two commits). Its culprit is ranked in its own window, among the kernels that
        stepped with it; a commit that landed after its first bad nightly cannot be its cause."""
        window = self.stages.window(m)
        if window is None or not window.complete or self.stages.repo is None:
            return replace(c, culprit=None, candidates=())
        if c.culprit is not None and any(x.full_sha == c.culprit.full_sha for x in window.commits):
            return c
        kernels = tuple(sorted({x.key.kernel for x in group.moves if x.first_bad.run_id == m.first_bad.run_id}))
        ranked = tuple(self.stages.ranked(m, kernels, autotuning))
        return replace(c, culprit=reported_culprit(ranked[0] if ranked else None, self.th),
                       candidates=ranked[:CANDIDATES_SHOWN])


def _reverted_first(ranked: tuple[RankedCommit, ...], revert: Revert) -> tuple[RankedCommit, ...]:
    """The window's code commit that a later commit undid, as the level came back, leads the
    candidates: no ranking of words and paths says as much as that."""
    c = revert.reverted
    why = f"undone by {revert.revert.sha} {revert.revert.subject!r}, and the level came back"
    old = next((r for r in ranked if r.full_sha == c.full_sha), None)
    lead = RankedCommit(c.sha, c.full_sha, c.subject, c.date, max(old.score if old else 0.0, 1.0),
                        (why, *(old.reasons if old else ())))
    return (lead, *(r for r in ranked if r.full_sha != c.full_sha))


def _noise(m: Move, bar: float) -> Classification:
    detail = f"{m.change_pct:+.1f}% is {m.significance:.1f}σ of the series' own scatter, below the {bar:g}σ bar"
    return Classification("noise", 0.6, (Evidence("persistence", "noise", detail, {"significance": m.significance}),),
                          m.before, "the series' level: the move is inside its normal scatter", kind="scatter")


def shapes_changed(view: "SourceView", track_id: int, m: Move) -> bool | None:
    """Did the kernel's stored shape list change across the move's step? None: not known."""
    lg_pk, fb_pk = view.pk_of.get(m.last_good.run_id), view.pk_of.get(m.first_bad.run_id)
    if lg_pk is None or fb_pk is None or view.facts is None:
        return None
    before = view.facts.shapes_near(track_id, lg_pk, side="before")
    after = view.facts.shapes_near(track_id, fb_pk, side="after")
    return None if before is None or after is None else tuple(before) != tuple(after)


def part_of(stages: "Stages", view: "SourceView", platform: str | None = None,
            moves: "list[Move] | None" = None):
    """How `group_moves` splits a platform's nightly: the kernels whose own measurement changed
    in the window are one part, the kernels whose checked-in configs were regenerated another,
    the others a third. Their own measurement changed when the repo says so (a kernel-scoped
    method fact) or the documents do (the kernel's shape list differs across the step, and the
    platform kept its machine): a shapes edit to two kernels is not the platform's event, and a
    kernel's new configs (its own change) neither lend the platform's event their footprint
    nor take its cause.
    Given the pass's ``moves``, kernels whose speedup stepped while Helion's own time stayed put
    are a part of their own on a nightly where other kernels' two timers stepped together
    (`speedup_only_kernels`): two footprints that night, two events.

    ``platform``: only that platform's nightlies are split (`investigate` asks about one; the
    other platforms are context, and their kernels per night are the same however they split,
    so it spares reading their windows' files)."""
    track_of = {r.key: r.track_id for r in view.refs}
    apart = speedup_only_kernels(stages, view, moves or [], platform)

    def own(m: Move) -> str:
        if platform is not None and m.key.platform_short != platform:
            return ""
        facts = stages.facts(m, job_suite(stages, view, track_of.get(m.key)))
        if own_method_fact(facts, m.key.kernel) is not None:
            return "own_method"
        if own_configs_fact(facts, m.key.kernel) is not None:
            return "own_configs"  # the configs it runs were regenerated: its own change, not the platform's
        # a shape list that changed with no change in the repo, beside the platform's new
        # machine, is the machine's doing (it fails or skips shapes): part of its event
        tid = track_of.get(m.key)
        return "own_method" if tid is not None and shapes_changed(view, tid, m) and new_machine(facts) is None else ""

    def timers(m: Move) -> str:
        near = apart.get((m.key.platform_short, m.key.kernel), ())
        o = _night(view, m) if near else None
        return "speedup_timer_only" if o is not None and any(abs(o - x) <= 1 for x in near) else ""

    def part(m: Move) -> str:
        suite = job_suite(stages, view, track_of.get(m.key))
        return "/".join(x for x in (own(m), timers(m), f"suite {suite}" if suite else "") if x)

    return part


def _night(view: "SourceView", m: Move) -> int | None:
    pk = view.pk_of.get(m.first_bad.run_id)
    return view.ordinal.get(pk) if pk is not None else None


def speedup_only_kernels(stages: "Stages", view: "SourceView", moves: "list[Move]",
                         platform: str | None = None) -> dict[tuple[str, str], tuple[int, ...]]:
    """(platform, kernel) -> nightlies where that kernel's speedup stepped while its latency (Helion's
    own time, the other timer) stayed flat, and some other kernel of the platform stepped on both
    timers the same nightly (±1).

    Helion getting slower shows on both timers; a speedup alone moves when the measurement or
    the baseline did. On one nightly the two are two events (a harness edit to three kernels and
    a code change to two others), and kept together each lends its footprint to the other. Only
    clear cases split: the latency step under a quarter of the speedup's, both timers of the
    others past the sibling bar. The dashboard only (the pretuned suite has one timer).

    Not on a nightly whose window gives the platform a new machine (runner, image, runtime, the
    CuTe DSL or torch_tpu pin): it re-times Helion and the baselines each its own way, so both
    footprints are what that one change predicts, and split, each part looks narrow enough for
    a code commit beside it (two torch_tpu bumps of development set F were named Helion's)."""
    if not moves or view.source != "dashboard":
        return {}
    g = EventGatherer(stages, view)
    kinds: dict[tuple[str, int], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    seen: set[tuple[str, str, int]] = set()
    reps: dict[tuple[str, int], tuple[Move, int]] = {}  # a move of each platform nightly, for its window
    for m in moves:
        if m.key.metric != g.headline or (platform is not None and m.key.platform_short != platform):
            continue
        o = _night(view, m)
        tid = g.track_of.get((m.key.platform_short, m.key.kernel))
        if o is None or tid is None or (m.key.platform_short, m.key.kernel, o) in seen:
            continue
        seen.add((m.key.platform_short, m.key.kernel, o))
        reps.setdefault((m.key.platform_short, o), (m, tid))
        head, lat = g.step(tid, g.headline, m), g.step(tid, LATENCY, m)
        h, t = stepped(head, g.th), -stepped(lat, g.th)
        if not h or lat is None or head is None:
            continue
        if t == h:
            kinds[(m.key.platform_short, o)]["agree"].add(m.key.kernel)
        elif t == 0 and abs(lat.log_step) < 0.25 * abs(head.log_step):
            kinds[(m.key.platform_short, o)]["speedup_only"].add(m.key.kernel)
    out: dict[tuple[str, str], list[int]] = defaultdict(list)
    for (plat, o), by in kinds.items():
        agree = set().union(*(kinds.get((plat, o + d), {}).get("agree", set()) for d in (-1, 0, 1)))
        if by["speedup_only"] and agree - by["speedup_only"] and not _new_machine_night(stages, view, *reps[(plat, o)]):
            for kernel in by["speedup_only"]:
                out[(plat, kernel)].append(o)
    return {k: tuple(v) for k, v in out.items()}


def _new_machine_night(stages: "Stages", view: "SourceView", m: Move, track_id: int) -> bool:
    """Does the window of ``m``'s nightly give its platform a new machine?"""
    return new_machine(stages.facts(m, job_suite(stages, view, track_id))) is not None


def job_suite(stages: "Stages", view: "SourceView", track_id: int | None) -> str | None:
    """The suite a track runs in when it has a job of its own (`[suites]` in config/slices.toml,
    by the baseline label the track publishes), else None: the platform's main suite. Kernels of
    two jobs that moved the same night are two events (the FLA job's shard commit is not jsd's)."""
    label = view.suite.get(track_id) if track_id is not None else None
    return label if label in stages.rules.suites else None


def explain_groups(stages: "Stages", view: "SourceView", groups: list["MoveGroup"],
                   context: list["MoveGroup"] | None = None) -> dict[int, GroupVerdict]:
    """A verdict per platform group (keyed by id(group)), each with the others of its nightly
    (from ``context``, default ``groups``) as context. Platform groups of one nightly that share a
    change to how every kernel is measured (a torch pin, the autotune budget, a timer flag) are
    decided together: one change, one cause, on every platform it reached."""
    gatherer = EventGatherer(stages, view)
    wanted = {id(g) for g in groups}
    platform_groups = [g for g in (context if context is not None else groups) if g.platform_short is not None]
    by_night: dict[int, list] = defaultdict(list)
    order = {}
    for g in platform_groups:
        pk = view.pk_of.get(g.first_bad_run_id)
        o = view.ordinal.get(pk) if pk is not None else None
        order[id(g)] = o
        if o is not None:
            by_night[o].append(g)
    gathered: dict[int, tuple] = {}
    for g in platform_groups:
        if id(g) not in wanted:
            continue
        o = order[id(g)]
        near = [x for d in (-1, 0, 1) for x in by_night.get(o + d, ())] if o is not None else [g]
        gathered[id(g)] = gatherer.event_input(g, near)
    pooled = _pool(gatherer, gathered, order)
    return {gid: gatherer.explain(next(g for g in platform_groups if id(g) == gid), got, pooled.get(gid))
            for gid, got in gathered.items()}


def _pool(gatherer: EventGatherer, gathered: dict[int, tuple], order: dict[int, int | None]
          ) -> dict[int, dict[str, float]]:
    """Summed log-likelihoods per set of same-night platform groups sharing a global method fact."""
    from service.classify.event import pool_scores, shared_facts

    sets: dict[tuple, list[int]] = defaultdict(list)
    for gid, (ev, _lead, _ranked) in gathered.items():
        for fact in shared_facts(ev):
            sets[(order.get(gid), fact)].append(gid)
    out: dict[int, dict[str, float]] = {}
    own: dict[int, dict[str, float]] = {}
    for (_night, _fact), gids in sets.items():
        if len(gids) < 2 or _night is None:
            continue
        for gid in gids:
            if gid not in own:
                own[gid] = gatherer.scores(gathered[gid][0])
        for gid, total in pool_scores({gid: own[gid] for gid in gids}, gatherer.stages.cset.own_cause_ratio).items():
            out.setdefault(gid, total)
    return out
