"""Notify tests' setup (a helper module: it holds no tests): the Slack stand-in as a fixture,
settings that point Slack at it, and one planning pass followed by delivery, as run-once does them."""

from __future__ import annotations

import pytest

from service.config import Settings
from service.notify.deliver import deliver_pending
from service.notify.plan import plan_notifications
from tests.slack_standin import TOKEN, SlackStandIn

CHANNEL = "C0TRIAGE"


@pytest.fixture
def slack():
    with SlackStandIn() as server:
        yield server


def make_settings(slack: SlackStandIn | None = None, **notify) -> Settings:
    """Settings for hand-made stores: Slack at ``slack`` (None: no token, messages logged),
    quick retries, ``notify`` overrides."""
    s = {"channel": CHANNEL, "retries": 2, "backoff_s": 0.01}
    if slack is not None:
        s.update(token=TOKEN, api_url=slack.base_url)
    # the move path only: these stores are hand-made rows, not nightlies a health check could
    # judge (health alerts have their own tests in tests/test_health_*.py)
    return Settings(slack=s, notify=notify or {}, web={"base_url": "http://bw.test:8080"},
                    health={"enabled": False})


def plan_and_deliver(store, settings, now, client="default"):
    """One notify pass: plan the outbox (committed), then deliver it; (plan, delivery) summaries."""
    with store.session() as s:
        plan = plan_notifications(s, settings, now)
    kw = {} if client == "default" else {"client": client}
    return plan, deliver_pending(store, settings, now=now, **kw)
