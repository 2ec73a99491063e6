"""The vocabulary (service/domain.py): stored strings stay what the database holds, the metric
catalogue reads every metric name the ingest writes, and a human's cause beats the machine's."""

from __future__ import annotations

import pytest

from service import domain
from service.domain import Cause, MetricKind, Source, effective_cause, group_cause, metric


def test_stored_strings_are_unchanged():
    # these exact strings are in every existing database: renaming one is a migration
    assert domain.CAUSES == ("real", "method_change", "hardware", "noise")
    assert domain.STATUSES == ("open", "acknowledged", "resolved", "dismissed")
    assert domain.SOURCES == ("dashboard", "pretuned")
    assert [s.value for s in domain.MoveState] == ["provisional", "confirmed", "ended", "retracted"]
    assert [d.value for d in domain.Direction] == ["regression", "improvement"]
    assert [k.value for k in domain.GroupKind] == ["move", "health"]
    assert set(domain.Verdict) == set(Cause) | {"neutral"}
    assert Cause.METHOD_CHANGE == "method_change" and f"{Source.PRETUNED}" == "pretuned"


@pytest.mark.parametrize("name, kind, headline, comparator, words, lower, baseline", [
    ("helion_speedup_geomean", MetricKind.SPEEDUP, True, False, "", False, None),
    ("triton_speedup_geomean", MetricKind.SPEEDUP, False, True, "triton speedup", False, None),
    ("torch_compile_speedup_geomean", MetricKind.SPEEDUP, False, True, "torch.compile speedup", False, None),
    ("helion_latency_avg_ms", MetricKind.TIME, False, False, "latency", True, None),
    ("compile_time_geomean_s", MetricKind.TIME, False, False, "compile time", True, None),
    ("geomean", MetricKind.SPEEDUP, True, False, "", False, None),
    ("best_speedup", MetricKind.SPEEDUP, False, False, "best speedup", False, None),
    ("helion_wins", MetricKind.COUNT, False, False, "helion_wins", False, None),
    ("cudagraph", MetricKind.FLAG, False, False, "cudagraph", False, None),
    ("baseline:triton:geomean", MetricKind.SPEEDUP, False, False, "triton baseline", False, "triton"),
    ("baseline:a:b:geomean", MetricKind.SPEEDUP, False, False, "a:b baseline", False, "a:b"),
    ("something_new", MetricKind.SPEEDUP, False, False, "something_new", False, None),
])
def test_metric_catalogue(name, kind, headline, comparator, words, lower, baseline):
    m = metric(name)
    assert (m.kind, m.headline, m.comparator, m.words, m.lower_is_better, m.baseline) == \
        (kind, headline, comparator, words, lower, baseline)


def test_derived_metric_sets():
    assert domain.HEADLINE == ("helion_speedup_geomean", "geomean")
    assert domain.LOWER_IS_BETTER == {"helion_latency_avg_ms", "compile_time_geomean_s"}
    assert domain.COMPARATOR_SPEEDUPS == ("triton_speedup_geomean", "torch_compile_speedup_geomean")
    assert domain.baseline_metric("fla") == "baseline:fla:geomean"
    assert metric(domain.baseline_metric("fla")).baseline == "fla"


@pytest.mark.parametrize("name, unit", [
    ("helion_speedup_geomean", "×"), ("geomean", "×"), ("best_speedup", "×"), ("baseline:triton:geomean", "×"),
    ("helion_latency_avg_ms", "ms"), ("compile_time_geomean_s", "s"), ("helion_wins", ""), ("cudagraph", ""),
    # an unknown name: its unit is read off its suffix or words
    ("new_latency_ms", "ms"), ("new_wall_s", "s"), ("new_speedup", "×"), ("something_new", ""),
])
def test_each_metric_names_its_unit(name, unit):
    assert metric(name).unit == unit


def test_charted_metrics_are_each_sources_speedups_and_times_in_catalogue_order():
    assert domain.CHARTED == {
        "dashboard": ("helion_speedup_geomean", "triton_speedup_geomean", "torch_compile_speedup_geomean",
                      "helion_latency_avg_ms", "compile_time_geomean_s"),
        "pretuned": ("geomean", "best_speedup"),
    }
    assert metric(domain.LATENCY).kind is MetricKind.TIME and metric(domain.LATENCY).unit == "ms"


@pytest.mark.parametrize("machine, human, reads", [
    ("real", None, "real"), ("real", "", "real"), ("real", "noise", "noise"), ("noise", "noise", "noise"),
])
def test_a_humans_cause_beats_the_machines(machine, human, reads):
    assert effective_cause(machine, human) == reads


@pytest.mark.parametrize("members, decided, reads", [
    ([{"id": 1, "human_cause": None}], {}, ("real", False)),
    ([{"id": 1, "human_cause": "noise"}, {"id": 2, "human_cause": None}], {}, ("noise", True)),
    # two people disagree: the later decision (larger audit id) wins, not the member listed last
    ([{"id": 1, "human_cause": "noise"}, {"id": 2, "human_cause": "hardware"}], {1: 9, 2: 4}, ("noise", True)),
    ([{"id": 1, "human_cause": "noise"}, {"id": 2, "human_cause": "hardware"}], {1: 4, 2: 9}, ("hardware", True)),
])
def test_group_cause(members, decided, reads):
    assert group_cause("real", members, decided) == reads


def test_alert_effective_cause_is_the_same_rule_in_python_and_sql():
    from service.store.tables import Alert

    assert Alert(cause="real", human_cause=None).effective_cause == "real"
    assert Alert(cause="real", human_cause="").effective_cause == "real"
    assert Alert(cause="real", human_cause="noise").effective_cause == "noise"
    # the queue filters on it: NULL or "" falls back to the machine's cause, as in Python
    sql = str(Alert.effective_cause.expression.compile()).replace("\n", " ")
    assert sql == "coalesce(nullif(alerts.human_cause, :nullif_1), alerts.cause)"


def test_only_a_kernels_own_speed_is_alerted_alone():
    """The comparators' speedups are evidence read beside a move, compile time too unless a crowd
    moved it; counts and flags are facts about a run. Helion's speedup, its latency and the pretuned figures alert."""
    from service.domain import metric
    from service.pipeline.detect_pass import _alertable, _detectable

    for name in ("helion_speedup_geomean", "helion_latency_avg_ms", "geomean", "best_speedup",
                 "baseline:torch:geomean"):
        assert metric(name).alerts and _alertable(name), name
    for name in ("triton_speedup_geomean", "torch_compile_speedup_geomean"):
        assert _detectable(name) and not _alertable(name), name
    # compile time alerts only in a crowd (tests/test_compile_crowd.py): detected, never alone
    assert _alertable("compile_time_geomean_s") and not metric("compile_time_geomean_s").alerts
    for name in ("helion_wins", "total", "cudagraph"):
        assert not _detectable(name) and not _alertable(name), name


def test_one_badge_rule_for_alerts_groups_and_queue_rows():
    from service.domain import badge_label

    assert badge_label("retracted", "real", "improvement") == "retracted"
    assert badge_label("confirmed", "real", "improvement") == "improvement"
    assert badge_label("confirmed", "real", "regression") == "real"
    assert badge_label("ended", "method_change", "improvement") == "method_change"  # only real moves are improvements
    assert badge_label("provisional", "hardware", None) == "hardware"
