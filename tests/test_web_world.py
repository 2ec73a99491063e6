"""The web test world (tests/web_world.py) is what the web, browser and cache tests read."""

from __future__ import annotations

import re

from tests.web_world import full_sha


def test_full_sha_is_40_hex_one_per_run_and_starts_with_the_short_sha() -> None:
    shas = [full_sha(i) for i in (*range(700), 9999)]  # every index the world uses
    assert all(re.fullmatch(r"[0-9a-f]{40}", s) for s in shas)
    assert len(set(shas)) == len(shas)  # pages and charts tell runs apart by sha
    assert full_sha(7)[:8] == "00000007" and full_sha(0x1F)[:8] == "0000001f"
