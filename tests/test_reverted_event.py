"""A change reverted a few nights later is an event with a start and an end, not noise.

Several kernels of a platform step together and come back three nightlies later, when the
change is reverted. Only a lone series' excursion is noise; an excursion many kernels made
together keeps the cause that explains it (here a compiler commit in the window: real) and its
end, as a hardware episode does."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from service.config import load_settings
from service.pipeline.detect_pass import detect_pass
from service.store.alert_reads import list_alerts
from tests.gitrepo import CommitSpec, build_repo
from tests.helion_files import render_run_py
from tests.nightly_world import nightly_repo, write_world

T0 = datetime(2026, 3, 1, 8, 0)
NIGHTS, STEP, BACK = 40, 28, 31
KERNELS = ("gemm", "softmax", "layer_norm", "rms_norm", "sum", "cross_entropy", "jsd", "welford")
MOVED = ("softmax", "layer_norm", "rms_norm", "cross_entropy")
CULPRIT = "[compiler] Rework norm reductions (#902)"


DECOY = "[Triton] Faster tiling for softmax and layer_norm reductions (#903)"


def _repo(path, culprit: str = CULPRIT, culprit_file: str = "helion/_compiler/reduction_strategy.py",
          decoy: bool = False, revert_night: int | None = BACK) -> list[str]:
    """One commit a night; the change lands before STEP and is reverted before BACK (with a
    ``decoy``: a louder commit naming the moved kernels lands beside it and stays)."""
    def planted(i: int, when: datetime) -> list[CommitSpec]:
        out = []
        if i == STEP:
            out.append(CommitSpec(culprit, when - timedelta(hours=3), {culprit_file: "x = 2\n" * 40}))
            if decoy:
                out.append(CommitSpec(DECOY, when - timedelta(hours=2),
                                      {"helion/_compiler/triton/tiling.py": "y = 2\n" * 60}))
        if i == revert_night:
            out.append(CommitSpec(f'Revert "{culprit}" (#910)', when - timedelta(hours=3),
                                  {culprit_file: "x = 1\n" * 40}))
        return out

    return nightly_repo(path, T0, NIGHTS, planted)


def _world(store, shas: list[str], moved: tuple[str, ...], back: int = BACK) -> None:
    """h100, 1% scatter; from STEP to ``back`` the ``moved`` kernels are 12% slower on both timers."""
    slower = {"helion_speedup_geomean": 0.88, "helion_latency_avg_ms": 1.13}
    write_world(store, shas, KERNELS, T0, lambda i, k, metric: slower.get(metric, 1.0)
                if STEP <= i < back and k in moved else 1.0, seed=7, run_base=70_000)


def _step_alerts(store, shas: list[str]) -> list[dict]:
    with store.session() as s:
        return [a for a in list_alerts(s, status="all")
                if a["metric"] == "helion_speedup_geomean" and a["first_bad"]["full_sha"] == shas[STEP]]


def test_a_change_reverted_three_nights_later_is_a_real_event_with_an_end(lite, tmp_path):
    shas = _repo(tmp_path / "helion")
    _world(lite, shas, MOVED)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = {a["kernel"]: a for a in _step_alerts(lite, shas)}
    assert set(got) == set(MOVED)
    assert {a["state"] for a in got.values()} == {"ended"}
    assert {a["end"]["full_sha"] for a in got.values()} == {shas[BACK]}
    assert {a["cause"] for a in got.values()} == {"real"}
    assert {a["culprit"]["subject"] for a in got.values()} == {CULPRIT}
    assert len({a["group_id"] for a in got.values()}) == 1
    episode = [e for e in got["softmax"]["evidence"] if e["check"] == "episode"]
    assert episode and episode[0]["facts"]["value"] == "reverted_code" and "Revert" in episode[0]["detail"]


def test_one_kernels_three_night_excursion_is_still_noise(lite, tmp_path):
    shas = _repo(tmp_path / "helion")
    _world(lite, shas, ("softmax",))
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    assert all(a["state"] == "retracted" for a in _step_alerts(lite, shas))


@pytest.mark.parametrize("reverted", [True, False])
def test_two_kernels_out_on_both_timers_until_a_revert_are_an_event_and_without_it_noise(lite, tmp_path, reverted):
    """Fewer kernels than a platform-wide move needs: the revert of the start window's commit as
    the level came back is what makes it an event (two kernels, both timers); without it, a few
    bad nights on two kernels are noise."""
    shas = _repo(tmp_path / "helion", revert_night=BACK if reverted else None)
    _world(lite, shas, ("layer_norm", "rms_norm"))
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = [a for a in _step_alerts(lite, shas) if a["state"] != "retracted"]
    if not reverted:
        assert got == []
        return
    assert {a["kernel"] for a in got} == {"layer_norm", "rms_norm"}
    assert {a["state"] for a in got} == {"ended"} and {a["cause"] for a in got} == {"real"}
    assert {a["culprit"]["subject"] for a in got} == {CULPRIT}


def test_the_commit_the_revert_undid_is_the_culprit_over_a_louder_one(lite, tmp_path):
    """Two code commits in the window; the one a later commit reverted as the level came back is
    the culprit, though the other names the moved kernels and their backend."""
    quiet = "Simplify index helpers (#902)"
    shas = _repo(tmp_path / "helion", culprit=quiet, culprit_file="helion/_utils.py", decoy=True)
    _world(lite, shas, MOVED)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = _step_alerts(lite, shas)
    assert got and {a["cause"] for a in got} == {"real"}
    assert {a["culprit"]["subject"] for a in got} == {quiet}


def test_a_revert_days_before_the_level_came_back_did_not_end_it(lite, tmp_path):
    shas = _repo(tmp_path / "helion", revert_night=STEP + 1)
    _world(lite, shas, MOVED)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = _step_alerts(lite, shas)
    assert got and {a["state"] for a in got} == {"ended"}
    episode = [e for e in got[0]["evidence"] if e["check"] == "episode"]
    assert episode and episode[0]["facts"]["value"] == "ended"


def test_without_the_revert_the_same_excursion_reads_as_the_machine_not_the_code(lite, tmp_path):
    """The same excursion with no commit undoing anything as the level came back: a level that
    came back by itself is what a machine episode does, so the compiler commit in the window does
    not make it a real regression (it is the revert that does)."""
    shas = _repo(tmp_path / "helion", revert_night=None)
    _world(lite, shas, MOVED)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = _step_alerts(lite, shas)
    assert got and {a["state"] for a in got} == {"ended"} and {a["cause"] for a in got} == {"hardware"}


@pytest.mark.parametrize("reverted", [True, False])
def test_a_method_step_that_comes_back_by_itself_is_noise_and_one_reverted_is_an_event(lite, tmp_path, reverted):
    """A harness edit gives the moved kernels new inputs, and their level comes back three nights
    later. Reverted as it came back, that is a method change with an end; with nothing in the
    repo undoing it, several kernels out for a few nights is only a bad stretch (retracted)."""
    harness = "[benchmark] New inputs for the norm kernels (#905)"
    before = render_run_py({k: {} for k in KERNELS})
    after = render_run_py({k: ({"num_inputs": 5} if k in MOVED else {}) for k in KERNELS})
    commits = [CommitSpec("Add run.py", T0 - timedelta(days=1), {"benchmarks/run.py": before})]
    for i in range(NIGHTS):
        when = T0 + timedelta(days=i) - timedelta(hours=2)
        if i == STEP:
            commits.append(CommitSpec(harness, when - timedelta(hours=3), {"benchmarks/run.py": after}))
        if i == BACK and reverted:
            commits.append(CommitSpec(f'Revert "{harness}" (#911)', when - timedelta(hours=3),
                                      {"benchmarks/run.py": before}))
        commits.append(CommitSpec(f"docs: night {i}", when, {"docs/night.md": f"{i}\n"}))
    built = build_repo(tmp_path / "helion", commits)
    shas = [sha for sha, c in zip(built, commits) if c.subject.startswith("docs: night")]
    _world(lite, shas, MOVED)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = _step_alerts(lite, shas)
    if reverted:
        assert got and {a["state"] for a in got} == {"ended"} and {a["cause"] for a in got} == {"method_change"}
    else:
        assert all(a["state"] == "retracted" for a in got)  # never raised, or withdrawn


@pytest.mark.parametrize("moved, reverted, event", [
    (MOVED, True, True),  # merged one evening, reverted the next morning: one bad night, real
    (MOVED, False, False),  # the same night with nothing undone: a bad night of the machine, noise
    (("softmax",), True, False),  # one kernel's one bad night is an outlier, whatever the repo says
])
def test_a_change_reverted_the_next_morning_is_a_one_night_real_event(lite, tmp_path, moved, reverted, event):
    """Several kernels slower on both timers for exactly one nightly, and the commit that did it
    reverted before the next: a real regression with its end and its culprit. Every one-night
    filter calls that night an outlier; the revert and the company are what say otherwise."""
    shas = _repo(tmp_path / "helion", revert_night=STEP + 1 if reverted else None)
    _world(lite, shas, moved, back=STEP + 1)
    detect_pass(lite, load_settings(), tmp_path / "helion", fetch=False, now=T0 + timedelta(days=NIGHTS))
    got = {a["kernel"]: a for a in _step_alerts(lite, shas) if a["state"] != "retracted"}
    if not event:
        assert got == {}
        return
    assert set(got) == set(moved)
    assert {a["state"] for a in got.values()} == {"ended"} and {a["cause"] for a in got.values()} == {"real"}
    assert {a["end"]["full_sha"] for a in got.values()} == {shas[STEP + 1]}
    assert {a["culprit"]["subject"] for a in got.values()} == {CULPRIT}
    assert len({a["group_id"] for a in got.values()}) == 1
