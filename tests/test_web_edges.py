"""Web rough edges: the series explorer never shows another series than the one asked for."""

from __future__ import annotations

import json
import re

import pytest

from tests.web_client import alice_hash, client, world  # noqa: F401 - fixtures
from tests.web_world import XSS_KERNEL


def _chart_title(html: str) -> str:
    return json.loads(re.search(r'id="series-chart-data">(.*?)</script>', html, re.S).group(1))["title"]


@pytest.mark.parametrize("params, message", [
    ({"platform": "a100"}, "unknown platform &#39;a100&#39; for dashboard; valid: b200, h100, mi350x"),
    ({"platform": "b200", "kernel": "gem"}, "unknown kernel &#39;gem&#39; on b200; valid: "),
    ({"platform": "b200", "kernel": "gemm", "metric": "speed"}, "unknown metric &#39;speed&#39; for gemm; valid: "),
    ({"source": "nightly"}, "unknown source &#39;nightly&#39;; valid: dashboard, pretuned"),
])
def test_series_unknown_value_is_a_404_naming_the_valid_ones(client, params, message):
    res = client.get("/series", params=params)
    assert res.status_code == 404
    assert message in res.text and "series-chart-data" not in res.text


def test_series_defaults_only_when_nothing_is_asked(client):
    first = sorted(["gemm", XSS_KERNEL])[0]  # b200's kernels in name order
    assert _chart_title(client.get("/series").text) == f"{first} on b200: helion_speedup_geomean"
    html = client.get("/series", params={"platform": "h100", "kernel": "softmax", "metric": "helion_latency_avg_ms"}).text
    assert _chart_title(html) == "softmax on h100: helion_latency_avg_ms"
    assert client.get("/series", params={"platform": "", "kernel": ""}).status_code == 200  # empty selects: any
