"""One error type for everything a user can cause: the CLI prints its message on one line and exits."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this module before any command; pydantic waits for one
    from pydantic import ValidationError


class BenchwatchError(Exception):
    """A problem with outside input or the environment, explained in one line.

    ``exit_code`` 2 means bad input (document, config, arguments); 1 means an
    environment/runtime problem (network, database, git).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.message = message.replace("\n", " ").strip()
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


def invalid(where: str, exc: ValidationError, section: str = "") -> BenchwatchError:
    """A pydantic failure as one line naming the key: ``<where>: <section>.<key>: <message>``
    (the first error only; the section alone when the whole table is wrong)."""
    err = exc.errors()[0]
    key = ".".join([section, *(str(p) for p in err["loc"])] if section else [str(p) for p in err["loc"]])
    return BenchwatchError(f"{where}: {key}: {err['msg']}")
