"""Compile time alerts alone only in a crowd: most of a platform's kernels compiling faster on one
nightly, their speed flat, is a benchmark change (a capped autotune) no other metric shows; one
kernel's compile time moving is noise, and beside speed moves it is evidence on them (pure)."""

from __future__ import annotations

from types import SimpleNamespace

from service.classify.settings import ClassifySettings
from service.domain import metric
from service.pipeline.detect_pass import _alertable, _crowd_only
from tests.records_fixtures import move, ref, series

COMPILE = "compile_time_geomean_s"
HEAD = "helion_speedup_geomean"
KERNELS = [f"k{i}" for i in range(10)]


def _view(platforms=("b200",)):
    data, sid = {}, 0
    for p in platforms:
        for k in KERNELS:
            for m in (HEAD, COMPILE):
                data[sid] = series(m, 1.0, platform=p, kernel=k)
                sid += 1
    trend = [ref(i) for i in range(20)]
    return SimpleNamespace(data=data, trend=trend)


def _sid(view, platform, kernel, m):
    return next(s for s, sd in view.data.items()
                if (sd.key.platform_short, sd.key.kernel, sd.key.metric) == (platform, kernel, m))


STAGES = SimpleNamespace(cset=ClassifySettings())


def _found(view, compile_kernels, speed_kernels=(), platform="b200", fb=12):
    found = {s: [] for s in view.data}
    for k in compile_kernels:
        found[_sid(view, platform, k, COMPILE)] = [move(COMPILE, 10.0, 4.0, kernel=k, platform=platform, fb=fb)]
    for k in speed_kernels:
        found[_sid(view, platform, k, HEAD)] = [move(HEAD, 1.0, 0.9, kernel=k, platform=platform, fb=fb)]
    return found


def _kept(out, view, m=COMPILE):
    return sorted(view.data[s].key.kernel for s, ms in out.items() if ms and view.data[s].key.metric == m)


def test_compile_time_is_detected_and_alerts_only_as_a_crowd_metric():
    assert _alertable(COMPILE) and metric(COMPILE).crowd_alerts and not metric(COMPILE).alerts
    assert not _alertable("triton_speedup_geomean")


def test_a_crowd_of_kernels_compiling_faster_alerts_and_a_few_do_not():
    view = _view()
    crowd = KERNELS[:4]  # 4 of the 10 that ran: >= 3 kernels and >= 30%
    assert _kept(_crowd_only(_found(view, crowd), view, STAGES, frozenset()), view) == crowd
    few = KERNELS[:2]
    assert _kept(_crowd_only(_found(view, few), view, STAGES, frozenset()), view) == []


def test_the_crowd_counts_kernels_that_moved_one_nightly_apart_but_not_another_platform():
    view = _view(("b200", "h100"))
    found = _found(view, KERNELS[:2])
    found.update({_sid(view, "b200", k, COMPILE): [move(COMPILE, 10.0, 4.0, kernel=k, fb=13)] for k in KERNELS[2:4]})
    assert _kept(_crowd_only(found, view, STAGES, frozenset()), view) == KERNELS[:4]
    split = _found(view, KERNELS[:2])
    split.update(_found(view, KERNELS[2:4], platform="h100"))
    assert _kept(_crowd_only(split, view, STAGES, frozenset()), view) == []


def test_beside_speed_moves_compile_time_is_evidence_not_an_alert():
    view = _view()
    out = _crowd_only(_found(view, KERNELS[:5], speed_kernels=KERNELS[:3]), view, STAGES, frozenset())
    assert _kept(out, view) == [] and _kept(out, view, HEAD) == KERNELS[:3]


def test_a_series_asked_about_keeps_its_moves_whatever_the_crowd():
    view = _view()
    found = _found(view, KERNELS[:1])
    asked = frozenset({_sid(view, "b200", "k0", COMPILE)})
    assert _kept(_crowd_only(found, view, STAGES, asked), view) == ["k0"]
