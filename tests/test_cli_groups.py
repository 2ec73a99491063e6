"""Groups on the command line: `alerts --groups` reads the same GroupView as the page and Slack,
and G<id> runs an on-call action on every member, recorded on each member's audit trail."""

from __future__ import annotations

import json

from service.store.alert_reads import get_alert
from tests.loop_rows import Rows


def _group(store):
    rows = Rows(store)
    a1 = rows.alert("h100", "rms_norm", 30, change_pct=-14.0)
    a2 = rows.alert("h100", "layer_norm", 30, change_pct=-10.0)
    return rows.group([a1, a2], 30, "h100"), (a1, a2)


def _actions(store, alert_id: int) -> list[tuple]:
    with store.session() as s:
        return [(h["action"], h["by"], h["new"], h["note"]) for h in get_alert(s, alert_id)["history"]
                if h["by"] != "benchwatch"]


def test_alerts_groups_lists_one_line_per_group_with_its_headline_and_next_step(cli, store):
    gid, _ = _group(store)
    res = cli("alerts", "--groups")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"G{gid}  open") and "rms_norm and 1 more on h100 lost 10–14% speedup" in lines[0]
    assert "rms_norm: speedup −14.0%" in res.stdout and "next: Ping the author about 0000beef" in res.stdout
    data = json.loads(cli("alerts", "--groups", "--format", "json").stdout)
    assert [g["id"] for g in data] == [gid] and data[0]["kernels"][0]["kernel"] == "rms_norm"
    assert cli("alerts", "--groups", "--status", "resolved").stdout.strip() == "no groups (resolved)"


def test_group_id_actions_reach_every_member(cli, store):
    gid, (a1, a2) = _group(store)
    res = cli("ack", f"G{gid}", "--by", "alice", "--note", "looking")
    assert res.exit_code == 0 and res.stdout.strip() == f"group {gid}: acknowledge on 2 alert(s)"
    assert cli("assign", f"g{gid}", "--to", "bob", "--by", "alice").exit_code == 0
    assert cli("reclassify", f"G{gid}", "--cause", "method_change", "--by", "alice").exit_code == 0
    assert cli("note", f"G{gid}", "harness PR 123", "--by", "alice").exit_code == 0
    for a in (a1, a2):
        assert _actions(store, a) == [
            ("acknowledged", "alice", "acknowledged", "looking"), ("assigned", "alice", "bob", None),
            ("reclassified", "alice", "method_change", None), ("note", "alice", None, "harness PR 123")]
    data = json.loads(cli("alerts", "--groups", "--status", "all", "--format", "json").stdout)[0]
    assert data["assignee"] == "bob" and data["cause"] == "method_change" and data["cause_by_human"]


def test_group_action_skips_members_it_cannot_apply_to_and_names_them(cli, store):
    gid, (a1, a2) = _group(store)
    assert cli("dismiss", str(a1), "--by", "alice").exit_code == 0
    res = cli("ack", f"G{gid}", "--by", "alice", "--json")
    data = json.loads(res.stdout)
    assert data["alert_ids"] == [a2] and data["skipped"][0]["alert_id"] == a1
    assert "cannot be acknowledged" in data["skipped"][0]["why"]
    assert cli("resolve", f"G{gid}", "--by", "alice").exit_code == 0
    res = cli("resolve", f"G{gid}", "--by", "alice")  # resolved already: nothing to do, nothing written
    assert res.exit_code == 0
    res = cli("ack", f"G{gid}", "--by", "alice")  # nobody can be acknowledged any more
    assert res.exit_code == 2 and "cannot be acknowledged" in res.stderr
    assert cli("reopen", f"G{gid}", "--by", "alice").exit_code == 0
    with store.session() as s:
        assert {get_alert(s, a)["status"] for a in (a1, a2)} == {"open"}


def test_bad_group_ids_are_one_line_errors(cli, store):
    _group(store)
    for ref, want in (("G0", "G<number>"), ("Gx", "G<number>"), ("G999", "no alert group with id 999")):
        res = cli("ack", ref, "--by", "alice")
        assert res.exit_code == 2 and want in res.stderr, (ref, res.stderr)


def test_alerts_leaves_out_improvements_and_retracted_moves_unless_asked(cli, store):
    rows = Rows(store)
    bad = rows.alert("h100", "rms_norm", 30, change_pct=-14.0)
    good = rows.alert("h100", "layer_norm", 30, change_pct=+20.0, direction="improvement")
    gone = rows.alert("h100", "softmax", 30, state="retracted")
    listed = [a["id"] for a in json.loads(cli("alerts", "--format", "json").stdout)]
    assert listed == [bad]
    out = cli("alerts").stdout
    assert "1 real improvements or retracted moves not shown" in out
    everything = {a["id"] for a in json.loads(cli("alerts", "--everything", "--format", "json").stdout)}
    assert everything == {bad, good}
    every_status = json.loads(cli("alerts", "--status", "all", "--everything", "--format", "json").stdout)
    if gone is not None and any(a["id"] == gone for a in every_status):
        quiet = [a["id"] for a in json.loads(cli("alerts", "--status", "all", "--format", "json").stdout)]
        assert gone not in quiet
    real = {a["id"] for a in json.loads(cli("alerts", "--cause", "real", "--format", "json").stdout)}
    assert good in real and gone not in real
