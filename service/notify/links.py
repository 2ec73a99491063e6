"""GitHub links of the Helion repository: a commit, a window (compare), a nightly's Actions run.

The dashboard's ``run_id`` is the GitHub Actions run id of the nightly (Helion's
`.github/dashboard/build_dashboard_data.py` takes it from the Actions runs API), so a run links
to ``/actions/runs/<id>``. Only 40-hex shas and all-digit run ids become links: anything else
read from a document is shown as text, never placed in a URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEX40 = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Links:
    github_url: str  # e.g. https://github.com/pytorch/helion ("" = no links)

    def _base(self) -> str | None:
        return self.github_url.rstrip("/") or None

    def commit(self, full_sha: str | None) -> str | None:
        base = self._base()
        return f"{base}/commit/{full_sha}" if base and full_sha and _HEX40.match(full_sha) else None

    def compare(self, last_good: str | None, first_bad: str | None) -> str | None:
        base = self._base()
        if not (base and last_good and first_bad and _HEX40.match(last_good) and _HEX40.match(first_bad)):
            return None
        return f"{base}/compare/{last_good}...{first_bad}"

    def run(self, run_id: str | None) -> str | None:
        base = self._base()
        run_id = str(run_id or "")
        return f"{base}/actions/runs/{run_id}" if base and run_id.isdigit() and len(run_id) <= 20 else None
