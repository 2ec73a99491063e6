"""Detect, classify and explain end to end: a generated world through the real CLI.

One world holds one planted event of each cause plus clean series, failures, gaps and manual
runs; `detect` must find each event on the right nightly with the right cause (and the planted
culprit for the real one), stay silent elsewhere, and be idempotent; `investigate` must
explain a date in the exact JSON contract; bad input must fail in one line, store untouched.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.worlds import EventSpec, WorldSpec, generate_world

EVENTS = (
    EventSpec("real", "dashboard", "b200_cute", ("rms_norm",), 40, -0.25, "code"),
    EventSpec("method_change", "dashboard", "h100", ("softmax",), 50, -0.22, "baseline"),
    EventSpec("hardware", "dashboard", "mi350x", ("vector_add", "vector_exp", "sum", "softmax", "rms_norm"),
              60, -0.25, "thermal"),
    EventSpec("noise", "dashboard", "b200", ("layer_norm",), 66, -0.3, "blip"),
    EventSpec("real", "pretuned", "b200", ("gemm",), 45, -0.2, "code"),
)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("world")
    return generate_world(WorldSpec(
        seed=77, nightlies=80, events=EVENTS, max_kernels_per_platform=6,
        platforms=("h100", "b200", "b200_cute", "mi350x"), repo_dir=str(base / "helion"),
    ))


@pytest.fixture
def loaded(cli, world, tmp_path, monkeypatch):
    """The world's final documents ingested and detected."""
    monkeypatch.setenv("BENCHWATCH_HELION_REPO", str(world.repo))
    monkeypatch.setenv("BENCHWATCH_HELION_REMOTE", "")
    d, p = tmp_path / "d.json", tmp_path / "p.json"
    d.write_bytes(world.dashboard_bytes(79))
    p.write_bytes(world.pretuned_bytes(79))
    assert cli("ingest", "--dashboard", str(d), "--pretuned", str(p)).exit_code == 0
    res = cli("detect")
    assert res.exit_code == 0, res.output
    return cli


def _alerts(cli, *args) -> list[dict]:
    res = cli("alerts", "--status", "all", "--format", "json", *args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _headline(alerts, platform, kernel, metric="helion_speedup_geomean"):
    return [a for a in alerts if a["platform_short"] == platform and a["kernel"] == kernel
            and a["metric"] == metric and a["state"] != "retracted"]


def test_each_cause_found_on_its_nightly(loaded, world):
    alerts = _alerts(loaded)
    nights = world.nights
    real = _headline(alerts, "b200_cute", "rms_norm")
    assert len(real) == 1 and real[0]["cause"] == "real" and real[0]["direction"] == "regression"
    assert real[0]["first_bad"]["sha"] == nights[40].sha
    assert real[0]["last_good"]["sha"] == nights[39].sha
    planted = next(lab.culprit for lab in world.labels if lab.event is EVENTS[0])
    assert real[0]["culprit"]["full_sha"] == planted
    assert real[0]["true_speedup"] == pytest.approx(real[0]["after"], rel=0.05)

    method = _headline(alerts, "h100", "softmax")
    assert [a["cause"] for a in method] == ["method_change"]
    assert method[0]["change_commit"]["full_sha"] == next(
        lab.change_commit for lab in world.labels if lab.event is EVENTS[1])

    hw = [a for k in EVENTS[2].kernels for a in _headline(alerts, "mi350x", k)]
    assert len(hw) >= 4 and all(a["cause"] == "hardware" for a in hw)
    assert {a["first_bad"]["sha"] for a in hw} == {nights[60].sha}

    assert all(a["cause"] == "noise" for a in _headline(alerts, "b200", "layer_norm"))

    pre = _headline(alerts, "b200", "gemm", metric="geomean")
    assert [a["cause"] for a in pre] == ["real"]


def test_quiet_series_raise_nothing(loaded):
    alerts = _alerts(loaded)
    moved = {("b200_cute", "rms_norm"), ("h100", "softmax"), ("b200", "layer_norm"), ("b200", "gemm")}
    moved |= {("mi350x", k) for k in EVENTS[2].kernels}
    stray = [a for a in alerts if (a["platform_short"], a["kernel"]) not in moved
             and a["cause"] != "noise" and a["state"] != "retracted"]
    assert stray == []


def test_detect_again_changes_nothing(loaded):
    before = _alerts(loaded)
    res = loaded("detect")
    assert res.exit_code == 0 and res.stdout.startswith("detect: 0 of ")
    assert _alerts(loaded) == before


def test_alerts_filters(loaded):
    real = _alerts(loaded, "--cause", "real")
    assert real and all(a["cause"] == "real" for a in real)
    b200 = _alerts(loaded, "--platform", "b200_cute")
    assert b200 and all(a["platform_short"] == "b200_cute" for a in b200)
    res = loaded("alerts", "--cause", "gremlins")
    assert res.exit_code == 2 and "cause must be one of" in res.stderr


FIELDS = {"source", "platform_short", "kernel", "metric", "cause", "kind", "direction", "confidence", "last_good",
          "first_bad", "end", "before", "after", "change_pct", "significance", "true_speedup",
          "true_speedup_reason", "culprit", "change_commit", "candidates", "evidence", "related", "others"}


def test_investigate_one_kernel_json_contract(loaded, world):
    day = world.nights[41].date.strftime("%Y-%m-%d")
    res = loaded("investigate", "--platform", "b200_cute", "--kernel", "rms_norm", "--date", day,
                 "--format", "json")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert set(obj) == FIELDS
    assert obj["cause"] == "real" and obj["first_bad"]["sha"] == world.nights[40].sha
    assert len(obj["first_bad"]["sha"]) == 8 and len(obj["first_bad"]["full_sha"]) == 40
    assert obj["culprit"]["sha"] == obj["culprit"]["full_sha"][:8]
    assert {"check", "verdict", "detail"} <= set(obj["evidence"][0])
    checks = {e["check"] for e in obj["evidence"]}
    # the event's explanation first, then the member's own step, then each observation
    assert obj["evidence"][0]["check"] == "event" and obj["evidence"][1]["check"] == "persistence"
    assert {"timers", "comparators", "breadth", "elsewhere", "platform_change", "kernel_method", "culprit",
            "window"} <= checks
    assert obj["kind"] in ("code", "heuristics")
    assert len(obj["candidates"]) >= 2  # distractors are ranked too


def test_investigate_platform_lists_every_kernel(loaded, world):
    day = world.nights[60].date.strftime("%Y-%m-%d")
    res = loaded("investigate", "--platform", "mi350x", "--date", day, "--format", "json")
    assert res.exit_code == 0, res.output
    objs = json.loads(res.stdout)
    assert len(objs) == 6 and all(set(o) == FIELDS for o in objs)
    by_kernel = {o["kernel"]: o for o in objs}
    assert all(by_kernel[k]["cause"] == "hardware" for k in ("vector_add", "sum", "softmax"))
    quiet = [o for k, o in by_kernel.items() if k not in EVENTS[2].kernels]
    assert quiet and all(o["cause"] == "noise" and o["first_bad"] is None for o in quiet)


def test_investigate_platform_text_lists_movers_then_folds_the_quiet_kernels(loaded, world):
    """A platform-wide question reads as a triage note: the movers in full, most significant
    first, and the kernels that did not move in one line (they were one "Noise" block each)."""
    day = world.nights[60].date.strftime("%Y-%m-%d")
    as_json = json.loads(loaded("investigate", "--platform", "mi350x", "--date", day, "--format", "json").stdout)
    res = loaded("investigate", "--platform", "mi350x", "--date", day)
    assert res.exit_code == 0, res.output
    movers = [o["kernel"] for o in as_json if o["first_bad"] is not None]
    quiet = sorted(o["kernel"] for o in as_json if o["first_bad"] is None)
    assert movers and quiet
    headers = [ln.split(" on ")[0] for ln in res.stdout.splitlines() if ln.endswith("(dashboard, helion_speedup_geomean)")]
    assert headers == movers  # in the JSON's order: by significance
    assert res.stdout.count("verdict:") == len(movers) and "verdict: Noise" not in res.stdout
    assert res.stdout.rstrip().splitlines()[-1] == (
        f"{len(quiet)} of {len(as_json)} kernels on mi350x (dashboard) show no persistent step within "
        f"±7 nightlies of {day}: {', '.join(quiet)}")


def test_investigate_text_reads_like_a_triage_note(loaded, world):
    day = world.nights[50].date.strftime("%Y-%m-%d")
    res = loaded("investigate", "--platform", "h100", "--kernel", "softmax", "--date", day)
    assert res.exit_code == 0, res.output
    assert "Benchmark method change" in res.stdout and "evidence:" in res.stdout
    assert any(ch in res.stdout for ch in "▁▂▃▄▅▆▇█")


@pytest.mark.parametrize("args, needle", [
    (("--platform", "b200", "--date", "yesterday"), "--date must be YYYY-MM-DD"),
    (("--platform", "a100", "--date", "2026-02-01"), "no dashboard series for platform 'a100'"),
    (("--platform", "b200", "--kernel", "nope", "--date", "2026-02-01"), "--kernel must be one of "),
    (("--platform", "b200", "--date", "2026-02-01", "--source", "elsewhere"), "--source must be"),
    (("--platform", "b200", "--date", "2026-02-01", "--source", "pretuned", "--metric", "total"), "count or flag"),
])
def test_investigate_bad_input_one_line(loaded, args, needle):
    before = loaded("status", "--format", "json").stdout
    res = loaded("investigate", *args)
    assert res.exit_code == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], res.stderr
    after = loaded("status", "--format", "json").stdout
    strip = lambda s: {k: v for k, v in json.loads(s).items() if not k.endswith("_at")}  # noqa: E731
    assert strip(before) == strip(after)


def test_window_missing_from_clone_is_evidence(loaded, world, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    subprocess.run(["git", "-C", str(other), "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q",
                    "--allow-empty", "-m", "unrelated"], check=True)
    day = world.nights[41].date.strftime("%Y-%m-%d")
    res = loaded("investigate", "--platform", "b200_cute", "--kernel", "rms_norm", "--date", day,
                 "--repo", str(other), "--format", "json")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["culprit"] is None
    assert any("fetch it" in e["detail"] for e in obj["evidence"])


def test_repo_that_is_not_a_clone_is_refused(loaded, tmp_path):
    res = loaded("investigate", "--platform", "b200", "--date", "2026-02-01", "--repo", str(tmp_path / "nope"))
    assert res.exit_code == 2 and "not a git clone" in res.stderr


def test_investigate_says_what_detect_stored_about_the_same_move(loaded, world):
    """One code path: for every move detect stored, investigate on its kernel and first-bad date
    gives the same cause, kind, first-bad and evidence, observation by observation."""
    stored = [a for a in _alerts(loaded) if a["state"] != "retracted"
              and a["metric"] in ("helion_speedup_geomean", "geomean")]
    assert len(stored) >= 5
    for a in stored:
        res = loaded("investigate", "--platform", a["platform_short"], "--kernel", a["kernel"],
                     "--source", a["source"], "--date", a["first_bad"]["date"][:10], "--format", "json")
        assert res.exit_code == 0, res.output
        got = json.loads(res.stdout)
        assert (got["cause"], got["kind"], got["first_bad"]["sha"]) == (a["cause"], a["kind"], a["first_bad"]["sha"])
        said = [(e["check"], e["verdict"], e["detail"]) for e in got["evidence"] if e["check"] != "persistence"]
        assert said == [(e["check"], e["verdict"], e["detail"]) for e in a["evidence"] if e["check"] != "persistence"]


def _investigate_in_a_process(args: list[str]) -> tuple[dict, bool]:
    """`investigate` as its own process (env as the test set it): its JSON answer, and whether
    the change-point search (ruptures) was loaded to give it."""
    import sys

    code = ("import sys\nfrom service.cli.main import app\n"
            f"try: app({['investigate', *args, '--format', 'json']!r})\nexcept SystemExit: pass\n"
            "print('\\nLOADED', 'ruptures' in sys.modules, 'scipy' in sys.modules,"
            " 'service.culprit.facts' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout
    body, loaded = out.rsplit("LOADED", 1)
    return json.loads(body), loaded.split() != ["False", "False", "False"]


def _said(obj: dict) -> tuple:
    return (obj["cause"], obj["kind"], obj["first_bad"]["sha"], obj["last_good"]["sha"],
            (obj["culprit"] or {}).get("full_sha"), (obj["change_commit"] or {}).get("full_sha"),
            [(e["check"], e["verdict"], e["detail"]) for e in obj["evidence"]])


def test_investigate_reads_what_detect_stored_and_searches_only_data_detect_has_not_seen(
        loaded, world, tmp_path, monkeypatch):
    """Once detect has seen every nightly, investigate's moves and verdicts are the ones it
    stored: no search runs (ruptures and SciPy, ~0.6 s of a CLI call, are never loaded) and no
    window is read again (the repo facts are never loaded). A store holding the same documents
    that detect never saw is searched and explained, and says the same thing about every move."""
    stored = [a for a in _alerts(loaded) if a["state"] != "retracted"
              and a["metric"] in ("helion_speedup_geomean", "geomean") and a["cause"] != "noise"]
    assert len(stored) >= 4
    asks = [["--platform", a["platform_short"], "--kernel", a["kernel"], "--source", a["source"],
             "--date", a["first_bad"]["date"][:10]] for a in stored]
    read = []
    for args in asks:
        obj, searched = _investigate_in_a_process(args)
        assert not searched
        read.append(obj)
    # the same documents in a store detect has never run on
    monkeypatch.setenv("BENCHWATCH_DATABASE_URL", f"sqlite:///{tmp_path / 'undetected.db'}")
    d, p = tmp_path / "d2.json", tmp_path / "p2.json"
    d.write_bytes(world.dashboard_bytes(79))
    p.write_bytes(world.pretuned_bytes(79))
    assert loaded("ingest", "--dashboard", str(d), "--pretuned", str(p)).exit_code == 0
    for args, before in zip(asks, read):
        obj, searched = _investigate_in_a_process(args)
        assert searched
        assert _said(obj) == _said(before)
        # the store keeps levels to 6 significant digits
        assert obj["true_speedup"] == pytest.approx(before["true_speedup"], rel=1e-5)
