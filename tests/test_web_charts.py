"""What the alert and series charts carry: one axis per unit, the detector's levels with their
scatter band, failed nightlies, and a line identical to the headline flagged so it cannot hide it."""

from __future__ import annotations

import math

from sqlalchemy import insert, update

from service.store.alert_reads import load_alert
from service.store.tables import Point, Series
from service.web.charts import alert_charts, series_chart
from tests.loop_rows import T0, Rows


def _add_series(store, track_of: int, metric: str) -> int:
    with store.session() as s:
        track_id = s.get(Series, track_of).track_id
        x = Series(track_id=track_id, metric=metric)
        s.add(x)
        s.flush()
        return x.id


def _fill(store, rows: Rows, sid: int, value, failed: tuple[int, ...] = ()) -> None:
    with store.session() as s:
        s.execute(insert(Point), [
            dict(series_id=sid, run_pk=pk, value=None if i in failed else value(i), failed=i in failed)
            for i, pk in enumerate(rows.runs)
        ])


def test_alert_chart_has_units_levels_band_and_failed_nights(lite):
    rows = Rows(lite)
    a = rows.alert("h100", "gemm", 30)  # before 2.0, after 1.76, noise sigma 0.02 (log)
    sid = rows.series_id("h100", "gemm")
    _fill(lite, rows, sid, lambda i: 2.0 if i < 30 else 1.76, failed=(20,))
    _fill(lite, rows, _add_series(lite, sid, "helion_latency_avg_ms"), lambda i: 0.5)
    _fill(lite, rows, _add_series(lite, sid, "compile_time_geomean_s"), lambda i: 12.0)
    with lite.session() as s:
        chart, _ = alert_charts(s, load_alert(s, a), set())
    axis = {t["name"]: t["axis"] for t in chart["traces"]}
    assert axis == {"helion_speedup_geomean": "y", "helion_latency_avg_ms": "y2", "compile_time_geomean_s": "y3"}
    assert chart["axes"] == {"y": "speedup (×)", "y2": "latency (ms)", "y3": "compile time (s)"}
    main = next(t for t in chart["traces"] if t["main"])
    assert main["failed"] == ["2026-03-21T08:00:00Z"] and main["y"][20] is None
    before, after = chart["levels"]
    band = math.exp(2 * 0.02)
    assert (before["x0"], before["x1"], before["y"]) == (main["x"][0], "2026-03-30T08:00:00Z", 2.0)
    assert (after["x0"], after["x1"], after["axis"]) == ("2026-03-31T08:00:00Z", main["x"][-1], "y")
    assert math.isclose(after["y"], 1.76) and math.isclose(after["hi"], 1.76 * band)
    assert math.isclose(before["lo"], 2.0 / band) and before["label"] == "before 2"
    assert not any("same_as" in t for t in chart["traces"])


def test_pretuned_line_equal_to_the_headline_is_flagged(lite):
    rows = Rows(lite, source="pretuned")
    a = rows.alert("b200", "gemm", 30)
    sid = rows.series_id("b200", "gemm")
    with lite.session() as s:
        s.execute(update(Series).where(Series.id == sid).values(metric="geomean"))
    level = lambda i: 1.5 if i < 30 else 1.2  # noqa: E731
    _fill(lite, rows, sid, level, failed=(5,))
    _fill(lite, rows, _add_series(lite, sid, "best_speedup"), level, failed=(5,))
    _fill(lite, rows, _add_series(lite, sid, "baseline:triton:geomean"), lambda i: level(i) * 0.9)
    with lite.session() as s:
        chart, _ = alert_charts(s, load_alert(s, a), set())
        one = series_chart(s, sid)
    same = {t["name"]: t.get("same_as") for t in chart["traces"]}
    assert same == {"geomean": None, "best_speedup": "geomean", "baseline:triton:geomean": None}
    assert [t["name"] for t in chart["traces"] if t["main"]] == ["geomean"]
    assert one["axes"] == {"y": "geomean (×)"} and one["traces"][0]["failed"] == ["2026-03-06T08:00:00Z"]
