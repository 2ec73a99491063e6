"""Who may act: sign-in against bcrypt hashes or the team token, signed-cookie sessions, CSRF.

Read pages stay open; every state-changing form needs a signed-in user *and* the session's
CSRF token, so a page on another site cannot make a signed-in browser act. Secrets are only
compared (constant time), never echoed, logged or put in a page.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

import bcrypt
from starlette.requests import Request

from service.config import USER_NAME, WebSettings

SESSION_USER = "user"
SESSION_CSRF = "csrf"
# Checked when the name is unknown so a wrong name costs the same time as a wrong password.
_DUMMY_HASH = bcrypt.hashpw(b"benchwatch-dummy", bcrypt.gensalt(rounds=4))


@dataclass(frozen=True)
class SignIn:
    ok: bool
    user: str | None = None
    error: str | None = None


def check_credentials(web: WebSettings, name: str, secret: str) -> SignIn:
    """A configured user with their password, or any valid name with the team token."""
    name = (name or "").strip()
    if not USER_NAME.fullmatch(name):
        return SignIn(False, error="name must be 1-64 letters, digits, '.', '_' or '-'")
    if not secret or len(secret) > 1024:
        return SignIn(False, error="wrong name or password")
    data = secret.encode("utf-8")
    hashed = web.users.get(name)
    if hashed is not None:
        if bcrypt.checkpw(data[:72], hashed.encode("ascii")):
            return SignIn(True, user=name)
        return SignIn(False, error="wrong name or password")
    bcrypt.checkpw(data[:72], _DUMMY_HASH)
    token = web.team_token.get_secret_value()
    if token and hmac.compare_digest(data, token.encode("utf-8")):
        return SignIn(True, user=f"{name} (team token)")
    return SignIn(False, error="wrong name or password")


def sign_in_enabled(web: WebSettings) -> bool:
    return bool(web.users) or bool(web.team_token.get_secret_value())


def current_user(request: Request) -> str | None:
    user = request.session.get(SESSION_USER)
    return user if isinstance(user, str) else None


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use (forms embed it; POSTs must echo it)."""
    tok = request.session.get(SESSION_CSRF)
    if not isinstance(tok, str) or len(tok) < 32:
        tok = secrets.token_urlsafe(32)
        request.session[SESSION_CSRF] = tok
    return tok


def csrf_ok(request: Request, submitted: str | None) -> bool:
    tok = request.session.get(SESSION_CSRF)
    return bool(tok) and bool(submitted) and hmac.compare_digest(str(tok), str(submitted))


def log_in(request: Request, user: str) -> None:
    """Fresh session on sign-in (no fixation): new CSRF token too."""
    request.session.clear()
    request.session[SESSION_USER] = user
    request.session[SESSION_CSRF] = secrets.token_urlsafe(32)


def log_out(request: Request) -> None:
    request.session.clear()


def hash_password(password: str, rounds: int = 12) -> str:
    if not password:
        raise ValueError("empty password")
    return bcrypt.hashpw(password.encode("utf-8")[:72], bcrypt.gensalt(rounds=rounds)).decode("ascii")
