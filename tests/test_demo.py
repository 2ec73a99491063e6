"""`make demo` keeps working: a small world through the whole offline loop, nothing served."""

from __future__ import annotations

import json

import pytest

from tests import demo


def test_demo_replays_a_world_through_the_loop(tmp_path, capsys):
    # 60 nightlies: the world plants its first events (a 45-nightly world plants none, and a
    # monitor that alerts on it is wrong)
    assert demo.main(["--nightlies", "60", "--replay", "6", "--no-serve", "--dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    status = json.loads(out[out.index("{"): out.index("}") + 1])
    assert status["trend_runs_dashboard"] == 60 and status["alerts"] >= 1
    assert "Slack stand-in received" in out and "planted events" in out
    assert (tmp_path / "d" / "benchwatch.db").exists() and (tmp_path / "d" / "helion" / ".git").exists()
    messages = [m[:m.index("\n\n")] if "\n\n" in m else m for m in out.split("--- message ")[1:]]
    moves = [m for m in messages if "*First bad nightly:*" in m]  # not health, not the history digest
    assert moves, messages
    first = moves[0]
    # every line of the message, down to the link and the status line (it used to print the
    # first line, cut at 150 characters)
    assert "*Kernels (" in first and "*Next:*" in first
    assert "/groups/" in first and "revision" in first


def test_message_text_keeps_every_block_whole():
    long = "x" * 400
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": "Real regression on b200"}},
              {"type": "section", "text": {"type": "mrkdwn", "text": long},
               "fields": [{"type": "mrkdwn", "text": "*first bad* 2026-03-01"}]},
              {"type": "context", "elements": [{"type": "mrkdwn", "text": "<http://h/groups/3|group 3>"}]}]
    assert demo.message_text(blocks, "fallback") == (
        f"Real regression on b200\n{long}\n*first bad* 2026-03-01\n<http://h/groups/3|group 3>")
    assert demo.message_text([], "fallback only") == "fallback only"


def _world(*events):
    from types import SimpleNamespace

    return SimpleNamespace(labels=[SimpleNamespace(event=SimpleNamespace(cause=c, night=n)) for c, n in events])


def test_default_replay_reaches_the_newest_event_of_every_cause():
    """`make demo` used to replay 25 nightlies and so never posted a real regression (the newest
    one was older): the default window reaches back to the newest event of each cause."""
    world = _world(("real", 30), ("real", 114), ("method_change", 125), ("hardware", 135), ("noise", 146))
    assert demo._replay(world, 150) == 36  # from night 114 on
    assert demo._replay(_world(("real", 140), ("noise", 146)), 150) == 25  # at least 25
    assert demo._replay(_world(), 150) == 25


def test_demo_refuses_a_replay_longer_than_the_world(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(["--nightlies", "20", "--replay", "20", "--no-serve", "--dir", str(tmp_path / "d")])
    assert exc.value.code == 2 and "--replay must be between 1 and 19" in capsys.readouterr().err
