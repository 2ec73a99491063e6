"""`python -m service.web.hashpw [NAME]`: read a password (no echo) and print a bcrypt hash
for `[web.users]` / BENCHWATCH_WEB_USERS, so a plain password never lands in a file."""

from __future__ import annotations

import getpass
import json
import sys

from service.config import USER_NAME
from service.web.auth import hash_password


def main(argv: list[str]) -> int:
    name = argv[0] if argv else None
    if name is not None and not USER_NAME.fullmatch(name):
        print("hashpw: name must be 1-64 letters, digits, '.', '_' or '-'", file=sys.stderr)
        return 2
    if sys.stdin.isatty():
        pw = getpass.getpass("password: ")
        if pw != getpass.getpass("again: "):
            print("hashpw: the two passwords differ", file=sys.stderr)
            return 2
    else:
        pw = sys.stdin.readline().rstrip("\n")
    if not pw:
        print("hashpw: empty password", file=sys.stderr)
        return 2
    hashed = hash_password(pw)
    print(json.dumps({name: hashed}) if name else hashed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
