"""The health decisions alone (no database, no git): plain records in, findings out."""

from __future__ import annotations

from datetime import datetime, time, timezone

from service.health.freshness import detect_failing, due_date, fetch_failing, no_nightly
from service.health.nightly import check_nightly
from service.health.records import Expected, KernelResult, Nightly, SourceNights
from service.health.workflow import expected, expected_kernels, expected_platforms
from tests.health_world import CUTE, GPU, LINATTN, NIGHTLY_PATH, RUNNERS, nightly_yml  # noqa: F401
from tests.helion_files import render_dispatch_yml

UTC = timezone.utc
DUE = time(13, 0)


def night(n: int) -> Nightly:
    return Nightly(str(n), f"{n:08x}", f"{n:08x}" + "0" * 32, datetime(2026, 3, 1 + n, 8, tzinfo=UTC))


def rows(spec: dict[tuple[str, str], dict] | None = None, kernels=("a", "b", "c"), platforms=("h100", "b200")):
    out = {(p, k): KernelResult(p, k) for p in platforms for k in kernels}
    for key, kw in (spec or {}).items():
        if kw is None:
            out.pop(key, None)
        else:
            out[key] = KernelResult(*key, **kw)
    return out


def data(*nights_rows, expected_=None, removed_in=None) -> SourceNights:
    return SourceNights("dashboard", tuple(night(i) for i in range(len(nights_rows))), tuple(nights_rows),
                        expected_, removed_in or {})


def kinds(findings):
    return sorted((f.kind, f.platform_short, f.kernel) for f in findings)


def check(d):
    return check_nightly(d, failing_nights=2, partial_min=1)


def test_healthy_nights_give_nothing():
    assert check(data(rows(), rows(), rows())) == []


def test_the_nightly_is_due_at_the_check_time():
    before = datetime(2026, 3, 5, 12, 59, tzinfo=UTC)
    after = datetime(2026, 3, 5, 13, 0, tzinfo=UTC)
    assert str(due_date(before, DUE, 0)) == "2026-03-04"
    assert str(due_date(after, DUE, 0)) == "2026-03-05"
    yesterday = Nightly("1", "aaaaaaaa", "a" * 40, datetime(2026, 3, 4, 8, tzinfo=UTC))
    assert no_nightly("dashboard", yesterday, before, DUE, 0) is None
    late = no_nightly("dashboard", yesterday, after, DUE, 0)
    assert late.kind == "no_nightly" and "2026-03-05" in late.detail and "2026-03-04" in late.detail
    assert no_nightly("dashboard", yesterday, after, DUE, 1) is None  # one day of slack allowed
    assert no_nightly("dashboard", None, after, DUE, 0).detail.endswith("none stored")


def test_detect_failing_needs_the_streak_and_names_the_error():
    assert detect_failing("dashboard", 1, "2026-03-05T09:00:00", "unexpected IntegrityError: UNIQUE", 2) is None
    f = detect_failing("dashboard", 2, "2026-03-05T09:00:00", "unexpected IntegrityError: UNIQUE", 2)
    assert f.kind == "detect_failing" and "IntegrityError" in f.detail and "2026-03-05 09:00" in f.detail
    assert f.detail.startswith("the last 2 detect passes failed")


def test_fetch_failing_needs_the_streak():
    assert fetch_failing("dashboard", 2, "2026-03-05T09:00:00", "HTTP 503", 3) is None
    f = fetch_failing("dashboard", 3, "2026-03-05T09:00:00", "HTTP 503", 3)
    assert f.kind == "fetch_failing" and "HTTP 503" in f.detail and "2026-03-05 09:00" in f.detail


def test_a_platform_with_no_rows_or_only_infra_missing_is_an_outage():
    gone = rows({("b200", k): None for k in "abc"})
    assert kinds(check(data(rows(), gone))) == [("platform_outage", "b200", None)]
    missing = rows({("b200", k): {"infra_missing": True} for k in "abc"})
    (f,) = check(data(rows(), missing))
    assert f.kind == "platform_outage" and "all 3 kernels infra_missing" in f.detail


def test_a_platform_whose_every_kernel_came_back_empty_is_an_outage_at_once():
    empty = rows({("b200", k): {"failed": True} for k in "abc"})
    (f,) = check(data(rows(), empty))  # the first night already: the machine, not three kernels
    assert (f.kind, f.platform_short) == ("platform_outage", "b200") and "all 3 kernels produced nothing" in f.detail
    some = rows({("b200", k): {"failed": True} for k in "ab"})
    assert check(data(rows(), some)) == []  # one kernel still ran: kernel streaks decide


def test_a_missing_shard_is_a_partial_outage_naming_the_kernels():
    shard = rows({("h100", "b"): None, ("h100", "c"): {"infra_missing": True}})
    (f,) = check(data(rows(), shard))
    assert (f.kind, f.platform_short, f.shapes) == ("partial_outage", "h100", ("b", "c"))


def test_expected_platforms_come_from_the_workflow():
    exp = Expected("f" * 40, frozenset({"h100", "b200", "tpu"}), {"h100": frozenset("abc")})
    found = kinds(check(data(rows(), rows(), expected_=exp)))
    assert found == [("platform_outage", "tpu", None)]  # never ran lately, but the workflow asks


def test_a_kernel_fails_only_after_the_streak():
    bad = {("h100", "a"): {"failed": True}}
    assert check(data(rows(), rows(bad))) == []
    (f,) = check(data(rows(), rows(bad), rows(bad)))
    assert (f.kind, f.kernel) == ("failing_kernel", "a") and "last 2 nightlies" in f.detail
    assert check(data(rows(bad), rows(), rows(bad))) == []  # a streak is unbroken nights


def test_run_failures_on_some_shapes_fire_at_once():
    (f,) = check(data(rows(), rows({("h100", "a"): {"run_failures": ("s1", "s2")}})))
    assert f.kind == "failing_kernel" and f.shapes == ("s1", "s2")


def test_accuracy_failures_name_the_shapes():
    r = rows({("b200", "c"): {"accuracy_failures": ("s1",), "low_accuracy": (("s1", 0.0), ("s3", 0.5))}})
    (f,) = check(data(rows(), r))
    assert f.kind == "accuracy" and f.shapes == ("s1", "s3") and "lowest helion_accuracy 0" in f.detail
    failed = rows({("b200", "c"): {"failed": True, "low_accuracy": (("s1", 0.0),)}})
    assert check(data(rows(), failed)) == []  # a run with no value is a failure, not a wrong answer


def test_a_pretuned_error_is_quoted():
    bad = {("h100", "a"): {"failed": True, "error": "OOM <!here>"}}
    (f,) = check(data(rows(bad), rows(bad)))
    assert "error: OOM <!here>" in f.detail  # raw here; the renderer escapes


def test_a_kernel_removed_from_the_matrix_is_news_not_a_failure():
    exp = Expected("e" * 40, frozenset({"h100", "b200"}), {"h100": frozenset("ab"), "b200": frozenset("abc")})
    now = rows({("h100", "c"): None})
    (f,) = check(data(rows(), now, expected_=exp, removed_in={("h100", "c"): "1234567890" + "0" * 30}))
    assert f.kind == "matrix_change" and f.info and "removed from the matrix in 12345678" in f.detail
    still_listed = rows({("h100", "c"): {"failed": True}})  # builder lag: listed but not asked for
    assert kinds(check(data(rows(), still_listed, still_listed, expected_=exp))) == []


def test_workflow_parse_mirrors_the_builder():
    text = render_dispatch_yml({"kernels": GPU, "kernels_cute": CUTE, "kernels_linattn": LINATTN}, RUNNERS)
    kernels = expected_kernels(text)
    assert kernels["h100"] == frozenset(GPU + ["simple_gla", "simple_gla-bwd"])
    assert kernels["b200_cute"] == frozenset(CUTE)
    assert "tpu" not in kernels  # no kernels_tpu input: not known
    assert expected_platforms(text, None) == frozenset(RUNNERS)
    assert expected_platforms(text, nightly_yml(["h100"])) == frozenset({"h100"})
    assert expected("a" * 40, None, None) is None
    assert expected_kernels("{not: [yaml") == {}


def test_health_settings_are_validated_at_start(tmp_path):
    import pytest

    from service.config import load_settings
    from service.errors import BenchwatchError

    assert load_settings().health.failing_nights == 2
    for bad, word in (('nightly_due_utc = "25:00"', "nightly_due_utc"), ("failing_nights = 0", "failing_nights"),
                      ('nightly_sources = ["nightly"]', "nightly_sources"), ("min_accuracy = 2", "min_accuracy")):
        f = tmp_path / "c.toml"
        f.write_text(f"[health]\n{bad}\n")
        with pytest.raises(BenchwatchError) as exc:
            load_settings(f)
        assert word in exc.value.message and "\n" not in exc.value.message


def test_past_outages_are_the_episodes_a_platform_ran_on_both_sides_of():
    from service.health.history import open_outages, past_outages

    down = {("b200", k): None for k in ("a", "b", "c")}
    zeros = {("h100", k): {"failed": True} for k in ("a", "b", "c")}
    one_failing = {("h100", "a"): {"failed": True}}
    d = data(rows({("b200", k): None for k in "abc"}),  # b200 not started yet: not an outage
             rows(), rows(down), rows(down), rows(zeros), rows(one_failing), rows(), rows(down))
    got = [(o.platform_short, o.first, o.last, o.back) for o in past_outages(d)]
    # b200 down on nights 2-3 and back on 4; h100 all zeros on 4 (one kernel failing on 5 is not
    # the machine); b200 down again on the newest: still open, the live check's
    assert got == [("b200", 2, 3, 4), ("h100", 4, 4, 5)]
    text = past_outages(d)[0].detail(d)
    assert text.startswith("b200: no results on 2 nightlies, 2026-03-03 to 2026-03-04") and "ran again on 2026-03-05" in text
    assert past_outages(data(rows(), rows(), rows())) == []
    assert open_outages(d) == {"b200": 7}  # the one still running, from its first nightly
    assert open_outages(data(rows({("b200", k): None for k in "abc"}), rows())) == {}  # not started yet
