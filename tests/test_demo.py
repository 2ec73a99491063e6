"""`make demo` keeps working: a small world through the whole offline loop, nothing served."""

from __future__ import annotations

import json

from tests import demo


def test_demo_replays_a_world_through_the_loop(tmp_path, capsys):
    assert demo.main(["--nightlies", "45", "--replay", "4", "--no-serve", "--dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    status = json.loads(out[out.index("{"): out.index("}") + 1])
    assert status["trend_runs_dashboard"] == 45 and status["alerts"] >= 1
    assert "Slack stand-in received" in out and "planted events" in out
    assert (tmp_path / "d" / "benchwatch.db").exists() and (tmp_path / "d" / "helion" / ".git").exists()
