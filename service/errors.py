"""One error type for everything a user can cause: the CLI prints its message on one line and exits."""

from __future__ import annotations


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
