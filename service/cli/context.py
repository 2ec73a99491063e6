"""What every command needs: settings from `--config`, an upgraded store, one-line errors."""

from __future__ import annotations

import functools
import logging
import sys
from dataclasses import dataclass
from typing import Callable, TypeVar

import typer

from service.config import Settings, load_settings
from service.errors import BenchwatchError
from service.store.db import Store

F = TypeVar("F", bound=Callable)


@dataclass
class CliState:
    config_file: str | None = None
    _settings: Settings | None = None
    _store: Store | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_file)
        return self._settings

    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.settings().database.url)
        return self._store


STATE = CliState()


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"benchwatch: error: {message}", err=True)
    raise typer.Exit(code)


def handles_errors(fn: F) -> F:
    """Turn a BenchwatchError into one line on stderr and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BenchwatchError as exc:
            fail(exc.message, exc.exit_code)

    return wrapper  # type: ignore[return-value]


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpcore", "alembic", "apscheduler.executors.default"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
