"""A plain text table for the quick commands (`status`, `alerts`, `alerts --kind health`).

rich costs ~15 ms of imports on start-up, a good share of the 0.5 s a person should wait for
`benchwatch alerts`; aligned columns need none of it. Cells are printed as given (a terminal
is not a browser: nothing to escape), each column as wide as its widest cell.
"""

from __future__ import annotations

from typing import Iterable, Sequence


def render(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]],
           right: Sequence[str] = ()) -> str:
    body = [[str(c) for c in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in body]) for i, c in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if col in right else c.ljust(w)
                         for c, w, col in zip(cells, widths, columns)).rstrip()

    out = [title, line(columns), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in body]
    return "\n".join(out)
