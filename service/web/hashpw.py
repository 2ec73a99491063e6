"""`benchwatch hashpw [NAME]` (also `python -m service.web.hashpw [NAME]`): read a password (no
echo) and print a bcrypt hash for `[web.users]` / BENCHWATCH_WEB_USERS, so a plain password
never lands in a file."""

from __future__ import annotations

import getpass
import json
import sys
from typing import TextIO

from service.config import USER_NAME
from service.errors import BenchwatchError


def read_password(stdin: TextIO) -> str:
    """Asked twice on a terminal; one line from a pipe (scripts, `docker compose run`)."""
    if stdin.isatty():
        pw = getpass.getpass("password: ")
        if pw != getpass.getpass("again: "):
            raise BenchwatchError("the two passwords differ")
        return pw
    return stdin.readline().rstrip("\n")


def hash_line(name: str | None, password: str) -> str:
    """What to paste: ``{"name": "<hash>"}`` with a name, the bare hash without."""
    from service.web.auth import hash_password

    if name is not None and not USER_NAME.fullmatch(name):
        raise BenchwatchError(f"name {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
    if not password:
        raise BenchwatchError("empty password")
    hashed = hash_password(password)
    return json.dumps({name: hashed}) if name else hashed


def main(argv: list[str]) -> int:
    name = argv[0] if argv else None
    try:
        print(hash_line(name, read_password(sys.stdin)))
    except BenchwatchError as exc:
        print(f"hashpw: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
