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
