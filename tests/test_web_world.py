"""The web test world (tests/web_world.py) is what the web, browser and cache tests read."""

from __future__ import annotations

from tests.web_world import full_sha


def test_full_sha_is_40_hex() -> None:
    assert len(full_sha(7)) == 40 and int(full_sha(7), 16) >= 0
