"""Store side of the pipeline with hand-made rows: series reads, alert upserts, groups, JSON."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from service.errors import BenchwatchError
from service.records import Classification, Evidence, Move, RankedCommit, RunRef, SeriesKey
from service.store.alert_reads import alert_json, list_alerts
from service.store.alerts_writer import (
    GroupBook,
    GroupRecord,
    MoveRecord,
    alert_move,
    match_alert,
    pair_alerts,
    retire_empty_groups,
    stored_alerts,
    upsert_alert,
    upsert_group,
)
from service.pipeline.detect_pass import SourceView
from service.store.series_io import (
    load_one,
    mark_detected,
    runs_of,
    series_with_new_points,
)
from service.store.tables import Alert, AlertGroup, AlertHistory, Point, Run, Series, ShapeValue, Track

T0 = datetime(2026, 3, 1, 8, 0)
NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def _sha(i: int) -> str:
    return f"{i:08x}" + "ab" * 16


@pytest.fixture
def world(store):
    """20 nightlies + one manual run; one pretuned track whose cudagraph flag and baselines
    change at night 10, and whose geomean steps down at night 10."""
    with store.session() as s:
        runs = []
        for i in range(20):
            runs.append(Run(source="pretuned", run_id=str(1000 + i), sha=_sha(i)[:8], full_sha=_sha(i),
                            date=T0 + timedelta(days=i), branch="main", is_nightly=True, is_trend=True))
        manual = Run(source="pretuned", run_id="5000", sha=_sha(99)[:8], full_sha=_sha(99),
                     date=T0 + timedelta(days=5, hours=3), branch="main", is_nightly=False, is_trend=False)
        s.add_all(runs + [manual])
        track = Track(source="pretuned", platform_short="b200", platform="NVIDIA B200", kernel="gemm")
        s.add(track)
        s.flush()
        series = {m: Series(track_id=track.id, metric=m) for m in
                  ("geomean", "cudagraph", "baseline:triton:geomean", "baseline:cublas:geomean")}
        s.add_all(series.values())
        s.flush()
        for i, r in enumerate(runs):
            g = None if i == 3 else (2.0 if i < 10 else 1.5)
            s.add(Point(series_id=series["geomean"].id, run_pk=r.id, value=g, failed=g is None))
            s.add(Point(series_id=series["cudagraph"].id, run_pk=r.id, value=1.0 if i < 10 else 0.0))
            s.add(Point(series_id=series["baseline:triton:geomean"].id, run_pk=r.id, value=1.1))
            if i >= 10:
                s.add(Point(series_id=series["baseline:cublas:geomean"].id, run_pk=r.id, value=0.9))
        s.add(Point(series_id=series["geomean"].id, run_pk=manual.id, value=0.5))
        for i, shape in enumerate(["[1024]", "[2048]"]):
            s.add(ShapeValue(track_id=track.id, run_pk=runs[7].id, shape_index=i, shape=shape))
        s.add(ShapeValue(track_id=track.id, run_pk=runs[15].id, shape_index=0, shape="[4096]"))
        ids = {"runs": [r.id for r in runs], "track": track.id,
               "series": {m: x.id for m, x in series.items()}, "manual": manual.id}
    return ids


def _move(store, ids, lg: int, fb: int, state="provisional", direction="regression") -> MoveRecord:
    with store.session() as s:
        rows = runs_of(s, "pretuned")
    a, b = rows[ids["runs"][lg]], rows[ids["runs"][fb]]
    key = SeriesKey("pretuned", "b200", "gemm", "geomean")
    move = Move(key, RunRef(a.run_id, a.sha, a.full_sha, a.date, 2.0),
                RunRef(b.run_id, b.sha, b.full_sha, b.date, 1.5), 2.0, 1.5, -25.0, direction,
                9.0, state, 20 - fb, 0.02)
    return MoveRecord(ids["series"]["geomean"], move, None, ids["runs"][lg], ids["runs"][fb])


def _cls(cause="real", conf=0.8) -> Classification:
    c = RankedCommit("deadbeef", "deadbeef" + "0" * 32, "[Triton] slower tiling", datetime(2026, 3, 10, tzinfo=timezone.utc), 3.0, ("slice",))
    return Classification(cause, conf, (Evidence("persistence", cause, "the step held 10 nights"),),
                          1.5, "honest", culprit=c, candidates=(c,),
                          related=({"platform_short": "b200", "kernel": "x", "metric": "geomean", "change_pct": -20.0},))


def _with(rec: MoveRecord, cls: Classification | None) -> MoveRecord:
    return MoveRecord(rec.series_id, rec.move, cls, rec.last_good_pk, rec.first_bad_pk)


def _ordinal(ids) -> dict[int, int]:
    return {pk: i for i, pk in enumerate(ids["runs"])}


def test_series_io_keep_failures_and_manual_runs_apart(store, world):
    with store.session() as s:
        ref, data = load_one(s, SeriesKey("pretuned", "b200", "gemm", "geomean"))
    assert ref.series_id == world["series"]["geomean"]
    assert len(data.points) == 21
    assert [p.date for p in data.points] == sorted(p.date for p in data.points)
    manual = [p for p in data.points if not p.is_trend]
    assert [(p.run_id, p.value) for p in manual] == [("5000", 0.5)]
    assert data.points[3].value is None and data.points[3].date.tzinfo is not None


def test_attribute_changes_see_cudagraph_flip_and_new_baseline(store, world):
    r = world["runs"]
    with store.session() as s:
        view = SourceView.load(s, "pretuned")  # what the detect pass reads
        across = view.attribute_changes(world["track"], r[9], r[10])
        quiet = view.attribute_changes(world["track"], r[4], r[5])
        before = view.facts.shapes_near(world["track"], r[9], side="before")
        after = view.facts.shapes_near(world["track"], r[10], side="after")
    kinds = {c.attribute: c for c in across}
    assert kinds["cudagraph"].old == "true" and kinds["cudagraph"].new == "false"
    assert kinds["baselines"].new == "cublas,triton" and "added cublas" in kinds["baselines"].detail
    assert quiet == ()
    assert before == ("[1024]", "[2048]") and after == ("[4096]",)


def test_detect_state_tracks_new_trend_points_only(store, world):
    with store.session() as s:
        todo = series_with_new_points(s)
        assert {p.ref.key.metric for p in todo} == {"geomean", "cudagraph", "baseline:triton:geomean", "baseline:cublas:geomean"}
        assert {p.ref.key.metric: p.trend_points for p in todo}["geomean"] == 20  # manual run not counted
        mark_detected(s, todo, NOW)
    with store.session() as s:
        assert series_with_new_points(s) == []


def test_upsert_is_idempotent_and_tolerates_a_shifting_first_bad(store, world):
    ordn = _ordinal(world)
    with store.session() as s:
        first = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), ordn, NOW)
    with store.session() as s:
        again = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), ordn, NOW)
        n_hist = len(s.query(AlertHistory).all())
    assert first.action == "created" and again.action == "unchanged" and again.alert_id == first.alert_id
    with store.session() as s:
        shifted = upsert_alert(s, _with(_move(store, world, 10, 11, "confirmed"), _cls()), ordn, NOW)
        far = upsert_alert(s, _with(_move(store, world, 16, 17), _cls()), ordn, NOW)
        other_way = upsert_alert(s, _with(_move(store, world, 10, 11, direction="improvement"), _cls()), ordn, NOW)
        alert = s.get(Alert, first.alert_id)
        assert alert.first_bad_run_pk == world["runs"][11] and alert.state == "confirmed"
        actions = [h.action for h in s.query(AlertHistory).filter_by(alert_id=alert.id)]
    assert shifted.alert_id == first.alert_id and shifted.visible
    assert far.action == "created" and other_way.action == "created"
    assert "first_bad_shifted" in actions and "state" in actions and n_hist == 1


def test_two_steps_of_a_series_two_nights_apart_are_two_alerts_paired_closest_first(store, world):
    """One alert each, on every pass; a stored alert is the move nearest it, not the first move
    to ask (two steps two nights apart had been one alert that the later one rewrote)."""
    ordn = _ordinal(world)
    with store.session() as s:
        a = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), ordn, NOW)
    early, late = _with(_move(store, world, 7, 8), _cls()), _with(_move(store, world, 9, 10), _cls())
    with store.session() as s:
        stored = s.query(Alert).all()
        assert match_alert(stored, early, ordn) is stored[0]  # alone, the early step would take it
        assert pair_alerts(stored, [early, late], ordn) == [None, stored[0]]
        got = [upsert_alert(s, rec, ordn, NOW, alerts=stored, paired=(found,))
               for rec, found in zip([early, late], pair_alerts(stored, [early, late], ordn))]
    assert [g.action for g in got] == ["created", "unchanged"] and got[1].alert_id == a.alert_id
    with store.session() as s:
        assert sorted(x.first_bad_run_pk for x in s.query(Alert)) == [world["runs"][8], world["runs"][10]]


def test_human_cause_survives_machine_reclassification(store, world):
    ordn = _ordinal(world)
    with store.session() as s:
        out = upsert_alert(s, _with(_move(store, world, 9, 10), _cls("real")), ordn, NOW)
        s.get(Alert, out.alert_id).human_cause = "method_change"
    with store.session() as s:
        re = upsert_alert(s, _with(_move(store, world, 9, 10), _cls("hardware")), ordn, NOW)
        data = alert_json(s, s.get(Alert, out.alert_id))
    assert re.visible and re.alert_id == out.alert_id
    assert (data["cause"], data["machine_cause"], data["human_cause"]) == ("method_change", "hardware", "method_change")


def test_resolved_then_retracted_move_that_returns_reopens(store, world):
    ordn = _ordinal(world)
    with store.session() as s:
        out = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), ordn, NOW)
        s.get(Alert, out.alert_id).status = "resolved"
    with store.session() as s:
        gone = upsert_alert(s, _move(store, world, 9, 10, state="retracted"), ordn, NOW)
        assert s.get(Alert, out.alert_id).state == "retracted"
    with store.session() as s:
        back = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), ordn, NOW)
        new = s.get(Alert, back.alert_id)
        again = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), ordn, NOW)
    assert gone.action == "updated" and back.action == "reopened"
    assert back.alert_id != out.alert_id and new.reopened_from == out.alert_id and new.status == "open"
    assert again.action == "unchanged" and again.alert_id == back.alert_id


def test_retracted_move_without_alert_creates_nothing(store, world):
    with store.session() as s:
        out = upsert_alert(s, _move(store, world, 9, 10, state="retracted"), _ordinal(world), NOW)
        assert out.action == "skipped" and stored_alerts(s, world["series"]["geomean"]) == []


def test_group_revision_bumps_only_on_visible_change(store, world):
    ordn, r = _ordinal(world), world["runs"]
    with store.session() as s:
        a = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), ordn, NOW)
        rec = GroupRecord("pretuned", r[10], "b200", "real", 0.8, (), "provisional", (a.alert_id,))
        g, bumped = upsert_group(s, rec, NOW)
        gid = g.id
    with store.session() as s:
        g2, bumped2 = upsert_group(s, rec, NOW)
        assert (g2.id, g2.revision, bumped2) == (gid, 1, False)
        g3, bumped3 = upsert_group(s, GroupRecord("pretuned", r[11], "b200", "real", 0.8, (), "confirmed", (a.alert_id,)), NOW)
        assert g3.id == gid and g3.revision == 2 and bumped3 and g3.first_bad_run_pk == r[11]
        members = s.scalars(select(Alert.id).where(Alert.group_id == gid)).all()
        assert members == [a.alert_id] and s.get(Run, g3.first_bad_run_pk).full_sha == _sha(11)
    with store.session() as s:
        s.get(Alert, a.alert_id).group_id = None
        assert retire_empty_groups(s, [gid], NOW) == [gid]
        assert s.get(AlertGroup, gid).state == "retracted"


def test_two_parts_of_one_platform_nightly_are_two_groups(store, world):
    """The kernels a kernel-scoped fact explains and the others of that nightly: two groups, each
    found again by its own key on the next pass."""
    ordn, r = _ordinal(world), world["runs"]
    with store.session() as s:
        a = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), ordn, NOW)
        plain = GroupRecord("pretuned", r[10], "b200", "real", 0.8, (), "provisional", (a.alert_id,))
        own = GroupRecord("pretuned", r[10], "b200", "method_change", 0.8, (), "provisional", (), part="own_method")
        g1, _ = upsert_group(s, plain, NOW)
        g2, _ = upsert_group(s, own, NOW)
        ids = (g1.id, g2.id)
    with store.session() as s:
        again = (upsert_group(s, plain, NOW)[0].id, upsert_group(s, own, NOW)[0].id)
        causes = [s.get(AlertGroup, i).cause for i in ids]
    assert ids[0] != ids[1] and again == ids and causes == ["real", "method_change"]


def test_groups_that_each_move_a_night_later_move_in_one_pass(store, world):
    """A regroup where one group moves onto the nightly another group is leaving (both events'
    first-bad runs shifted a night): the writer must not trip the one-group-per-nightly rule
    halfway, whatever order the database writes the rows in."""
    ordn, r = _ordinal(world), world["runs"]
    with store.session() as s:
        a1 = upsert_alert(s, _with(_move(store, world, 4, 5), _cls()), ordn, NOW).alert_id
        a2 = upsert_alert(s, _with(_move(store, world, 14, 15), _cls()), ordn, NOW).alert_id
        g1 = upsert_group(s, GroupRecord("pretuned", r[5], "b200", "real", 0.8, (), "provisional", (a1,)), NOW)[0].id
        g2 = upsert_group(s, GroupRecord("pretuned", r[6], "b200", "real", 0.8, (), "provisional", (a2,)), NOW)[0].id
    assert g1 < g2  # the older group moves onto the younger one's nightly
    with store.session() as s:
        held = s.scalars(select(Alert)).all()  # noqa: F841  every alert held, as a regroup holds them: no read flushes
        book = GroupBook(s, "pretuned")
        upsert_group(s, GroupRecord("pretuned", r[7], "b200", "real", 0.8, (), "provisional", (a2,)), NOW, book)
        upsert_group(s, GroupRecord("pretuned", r[6], "b200", "real", 0.8, (), "provisional", (a1,)), NOW, book)
        s.flush()
    with store.session() as s:
        assert [(g.id, g.first_bad_run_pk) for g in s.scalars(select(AlertGroup).order_by(AlertGroup.id))] == \
            [(g1, r[6]), (g2, r[7])]
        assert (s.get(Alert, a1).group_id, s.get(Alert, a2).group_id) == (g1, g2)


def test_group_whose_members_all_reverted_is_retracted(store, world):
    with store.session() as s:
        a = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), _ordinal(world), NOW)
        g, _ = upsert_group(s, GroupRecord("pretuned", world["runs"][10], "b200", "real", 0.8, (), "provisional",
                                           (a.alert_id,)), NOW)
        gid, rev = g.id, g.revision
    with store.session() as s:
        assert retire_empty_groups(s, [gid], NOW) == []  # a live member: the group stays
        s.get(Alert, a.alert_id).state = "retracted"  # the blip came back: the member keeps its group id
        assert retire_empty_groups(s, [gid], NOW) == [gid]
        g = s.get(AlertGroup, gid)
        assert g.state == "retracted" and g.revision == rev + 1  # the Slack message gets edited


def test_alert_json_fields_and_filters(store, world):
    with store.session() as s:
        out = upsert_alert(s, _with(_move(store, world, 9, 10), _cls()), _ordinal(world), NOW)
    with store.session() as s:
        data = alert_json(s, s.get(Alert, out.alert_id))
        moved = alert_move(s.get(Alert, out.alert_id), SeriesKey("pretuned", "b200", "gemm", "geomean"), runs_of(s, "pretuned"))
        listed = list_alerts(s, status="open", platform="b200", cause="real", source="pretuned")
        assert list_alerts(s, status="resolved") == [] and list_alerts(s, platform="h100") == []
        assert list_alerts(s, cause="noise") == []
        with pytest.raises(BenchwatchError, match="status"):
            list_alerts(s, status="closed")
    assert set(data) == {
        "id", "group_id", "state", "status", "created_at", "source", "platform_short", "kernel",
        "metric", "cause", "kind", "machine_cause", "human_cause", "direction", "confidence", "last_good",
        "first_bad", "end", "before", "after", "change_pct", "true_speedup", "true_speedup_reason",
        "culprit", "change_commit", "candidates", "evidence", "related", "history",
    }
    assert data["end"] is None  # a live move has no end
    assert listed == [data]
    assert data["first_bad"] == {"run_id": "1010", "sha": _sha(10)[:8], "full_sha": _sha(10),
                                 "date": "2026-03-11T08:00:00Z", "value": 1.5}
    assert set(data["culprit"]) == {"sha", "full_sha", "subject", "date", "score", "reasons"}
    assert data["culprit"]["sha"] == "deadbeef" and data["culprit"]["date"].endswith("Z")
    assert data["evidence"] == [{"check": "persistence", "verdict": "real", "detail": "the step held 10 nights"}]
    assert data["history"][0]["action"] == "created" and data["history"][0]["at"].endswith("Z")
    assert moved.first_bad.run_id == "1010" and moved.change_pct == -25.0
