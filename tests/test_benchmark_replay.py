"""The triage benchmark's replay: which earlier nightlies' documents are stored before the cold
start, so that series Helion's dashboard builder dropped (a retired platform, a renamed kernel)
are there, as they would be in a service that ran through the world's life."""

from __future__ import annotations

from benchmarks.triage_quality import retired_series_nights


def test_the_last_document_holding_a_dropped_series_is_stored_before_the_replay():
    mi325 = ("dashboard", "mi325x", "gemm")
    h100 = ("dashboard", "h100", "gemm")
    cute = ("dashboard", "b200_cute", "sum")
    nights = [{mi325, h100}, {mi325, h100}, {h100, cute}, {h100, cute}, {h100}]
    # mi325x's last document is night 1; b200_cute/sum's is night 3 (gone at the replay's start)
    assert retired_series_nights(nights) == [1, 3]


def test_nothing_extra_is_stored_when_every_series_is_still_published():
    growing = [{("pretuned", "b200", "gemm")}, {("pretuned", "b200", "gemm"), ("pretuned", "b200", "sum")}]
    assert retired_series_nights(growing) == []
    assert retired_series_nights([]) == []


def test_an_outage_ends_on_the_last_nightly_before_the_health_alert_recovered():
    from datetime import datetime, timedelta

    from benchmarks.triage_quality import recovery_run

    day = datetime(2026, 5, 1, 8)
    trend = [(day + timedelta(days=i), f"r{i}") for i in range(6)]
    # the outage began on r1; the pass six hours after r3 found the platform back
    assert recovery_run(trend, trend[1][0], trend[3][0] + timedelta(hours=6)) == "r3"
    # found in the stored history: recovered_at is the returning nightly's own date
    assert recovery_run(trend, trend[1][0], trend[4][0]) == "r4"
    # still down, or recovered before any later nightly was stored: no end to report
    assert recovery_run(trend, trend[1][0], None) is None
    assert recovery_run(trend, trend[5][0], trend[5][0] + timedelta(hours=6)) is None
