"""What every command needs: settings from `--config`, an upgraded store, one-line errors.

Settings (pydantic) and the store (SQLAlchemy, Alembic) are imported when a command first asks
for them, not when the CLI starts: `benchwatch --help` and a mistyped option stay instant.
"""

from __future__ import annotations

import functools
import gc
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

import typer
from typer.core import TyperGroup

from service.errors import BenchwatchError

if TYPE_CHECKING:
    from service.config import Settings
    from service.store.db import Store

F = TypeVar("F", bound=Callable)


@dataclass
class CliState:
    config_file: str | None = None
    _settings: Settings | None = None
    _store: Store | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            from service.config import load_settings

            self._settings = load_settings(self.config_file)
        return self._settings

    def store(self, *, create: bool = False) -> Store:
        """The configured store, upgraded. Only ``create`` (`db upgrade`) may make a SQLite
        file's folder: a mistyped path elsewhere is an error, not a new empty store."""
        if self._store is None:
            from service.store.db import Store

            self._store = Store(self.settings().database.url, create=create)
        return self._store


STATE = CliState()


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"benchwatch: error: {message}", err=True)
    raise typer.Exit(code)


def check_choice(option: str, value: str | None, allowed: Iterable[str], what: str = "") -> None:
    """An unknown value names the valid ones (or says none are stored yet)."""
    allowed = list(allowed)
    if value is None or value in allowed:
        return
    if not allowed:
        raise BenchwatchError(f"{option} {value!r}: nothing stored yet{what}")
    raise BenchwatchError(f"{option} must be one of {', '.join(allowed)}{what}, not {value!r}")


class CommandsGroup(TyperGroup):
    """An unknown command names the valid ones (click only suggests close matches)."""

    def resolve_command(self, ctx, args: list[str]):  # noqa: ANN001 - typer's vendored click Context
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            fail(f"unknown command {name!r} (valid: {', '.join(self.list_commands(ctx))})")
        return super().resolve_command(ctx, args)


def handles_errors(fn: F) -> F:
    """Turn a BenchwatchError into one line on stderr and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BenchwatchError as exc:
            fail(exc.message, exc.exit_code)

    return wrapper  # type: ignore[return-value]


# Allocations between young-generation collections (CPython's default is 700). A detect pass
# builds ~200k small tuples that form no cycles, and at 700 the collector walks them again and
# again: 40% of one nightly's detect pass on a year of the real-repo world (1.44 s -> 0.73 s at
# 10,000; benchmarks/real_repo_speed.py). Cycles are still collected, a little later.
GC_YOUNG_THRESHOLD = 10_000


def tune_gc() -> None:
    """Collect the young generation less often in every benchwatch process (why: above)."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpcore", "alembic", "apscheduler.executors.default"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
