"""The triage benchmark's pooled false-alert rate: false alerts over every world's series x
nightlies, a world without a false alert included (its rate cannot give back its denominator)."""

from __future__ import annotations

from benchmarks.triage_quality import pooled


def _score(false_alerts: int, series_nights: int | None) -> dict:
    rate = round(false_alerts * 10_000 / 20_000, 3)
    s = {"cases": [], "noise_cases_alerted": 0, "false_alerts": false_alerts,
         "false_alerts_per_10k_series_nights": rate}
    if series_nights is not None:
        s["series_nights"] = series_nights
    return s


def test_a_world_without_false_alerts_counts_in_the_denominator():
    assert pooled([_score(0, 20_000), _score(4, 20_000)])["false_alerts_per_10k_series_nights"] == 1.0
    # read back from the rate when the denominator was not recorded (older results files)
    assert pooled([_score(4, None), _score(2, None)])["false_alerts_per_10k_series_nights"] == 1.5
