"""Two people give members of one group different causes: the group (queue row and Slack
message alike) shows the latest human decision, not whichever member is listed last."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import select

from service.notify.view import group_view
from service.store import oncall
from service.store.tables import Alert, AlertGroup
from service.web.queue import build_rows
from tests.web_world import build_world


def test_the_latest_human_decision_speaks_for_the_group(lite):
    world = build_world(lite, nights=50)
    gid = world.groups["hardware"]
    with lite.session() as s:
        members = s.scalars(select(Alert.id).where(Alert.group_id == gid).order_by(Alert.id)).all()
    first, last = members[0], members[-1]
    t0 = datetime(2026, 5, 1, 9, tzinfo=timezone.utc)

    def shown() -> tuple[str, str]:
        with lite.session() as s:
            row = next(r for r in build_rows(s) if r.group_id == gid)
            return row.cause, group_view(s, s.get(AlertGroup, gid)).cause

    with lite.session() as s:  # bob decides on the last member first ...
        oncall.reclassify(s, last, cause="noise", by="bob", now=t0)
    assert shown() == ("noise", "noise")
    with lite.session() as s:  # ... then alice, later, on the first member
        oncall.reclassify(s, first, cause="method_change", by="alice", now=t0 + timedelta(hours=1))
    assert shown() == ("method_change", "method_change")
    with lite.session() as s:  # and bob changes his mind again: the newest decision wins
        oncall.reclassify(s, last, cause="real", by="bob", now=t0 + timedelta(hours=2))
    assert shown() == ("real", "real")
