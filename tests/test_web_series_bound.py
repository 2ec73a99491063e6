"""A run with a huge per-shape table: `/series` renders a bounded page, once, from the cache."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from service.config import Settings
from service.pipeline.ingest_pass import ingest_source
from service.web.app import create_app
from service.web.charts import MAX_SHAPES_SHOWN
from tests import upstream_docs as docs


def test_series_page_bounds_the_shape_table_and_is_cached(lite, tmp_path):
    n = 3 * MAX_SHAPES_SHOWN
    per_shape = {"shapes": [f"[{i}, 4096]" for i in range(n)], "helion_speedup": [1.0 + i / n for i in range(n)]}
    doc = docs.poke(docs.dashboard(3), ("summary", 0, "history", 2, "per_shape"), per_shape)
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    settings = Settings()
    ingest_source(lite, settings, "dashboard", str(path))
    app = create_app(settings, lite)
    url = "/series?source=dashboard&platform=h100&kernel=rms_norm"
    with TestClient(app) as c:
        page = c.get(url)
        assert page.status_code == 200
        assert f"showing the first {MAX_SHAPES_SHOWN} of {n} shapes" in page.text
        assert page.text.count("<tr><td>[") == MAX_SHAPES_SHOWN and len(page.content) < 400_000
        assert app.state.page_cache.lookup(("series", "dashboard", "h100", "rms_norm", None)) == page.text
        assert c.get(url).text == page.text
        too_long = c.get("/series", params={"kernel": "k" * 300})
        assert too_long.status_code == 400
