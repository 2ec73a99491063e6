"""Who may act: sign-in against bcrypt hashes or the team token, signed-cookie sessions, CSRF.

Read pages stay open; every state-changing form needs a signed-in user *and* the session's
CSRF token, so a page on another site cannot make a signed-in browser act. Secrets are only
compared (constant time), never echoed, logged or put in a page.

A wrong name costs the same bcrypt work as a wrong password (the dummy hash has the users'
cost), so timing does not tell which names exist. The cookie is only a signed claim: each
sign-in also gets a random session id whose hash is stored (`WebSession`), and sign-out deletes
it, so a cookie saved before sign-out no longer acts. Password checks run one at a time: a flood
of sign-ins must not take every core from the pages and `/healthz`.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import bcrypt
from starlette.requests import Request

from service.config import USER_NAME, WebSettings
from service.store.web_sessions import close_session, live_user, open_session

SESSION_USER = "user"
SESSION_CSRF = "csrf"
SESSION_ID = "sid"
DEFAULT_ROUNDS = 12  # bcrypt's cost when no user is configured (team token only)
_ROUNDS = re.compile(r"^\$2[aby]\$(\d\d)\$")
_BCRYPT_SLOTS = threading.BoundedSemaphore(1)


@functools.lru_cache(maxsize=8)
def _dummy_hash(rounds: int) -> bytes:
    """Checked when the name is unknown, at the configured users' cost."""
    return bcrypt.hashpw(b"benchwatch-dummy", bcrypt.gensalt(rounds=rounds))


def user_rounds(web: WebSettings) -> int:
    costs = [int(m.group(1)) for h in web.users.values() if (m := _ROUNDS.match(h))]
    return max(costs) if costs else DEFAULT_ROUNDS


def _checkpw(data: bytes, hashed: bytes) -> bool:
    with _BCRYPT_SLOTS:
        return bcrypt.checkpw(data, hashed)


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
        if _checkpw(data[:72], hashed.encode("ascii")):
            return SignIn(True, user=name)
        return SignIn(False, error="wrong name or password")
    _checkpw(data[:72], _dummy_hash(user_rounds(web)))
    token = web.team_token.get_secret_value()
    if token and hmac.compare_digest(data, token.encode("utf-8")):
        return SignIn(True, user=f"{name} (team token)")
    return SignIn(False, error="wrong name or password")


def sign_in_enabled(web: WebSettings) -> bool:
    return bool(web.users) or bool(web.team_token.get_secret_value())


def _sid_hash(sid: str) -> str:
    return hashlib.sha256(sid.encode("utf-8")).hexdigest()


def _utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def current_user(request: Request) -> str | None:
    """The signed-in user, if the session is still live in the store (once per request)."""
    cached = request.scope.get("benchwatch.user", False)
    if cached is not False:
        return cached
    user = request.session.get(SESSION_USER)
    sid = request.session.get(SESSION_ID)
    live = None
    if isinstance(user, str) and isinstance(sid, str):
        with request.app.state.store.session() as s:
            if live_user(s, _sid_hash(sid), _utcnow()) == user:
                live = user
    if live is None and SESSION_USER in request.session:
        request.session.clear()  # signed out elsewhere, expired, or from before revocation existed
    request.scope["benchwatch.user"] = live
    return live


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
    """Fresh session on sign-in (no fixation): new id, new CSRF token; expired ids swept."""
    web: WebSettings = request.app.state.settings.web
    sid = secrets.token_urlsafe(32)
    now = _utcnow()
    with request.app.state.store.session() as s:
        open_session(s, _sid_hash(sid), user, now, timedelta(seconds=web.session_max_age_s))
    request.session.clear()
    request.session[SESSION_USER] = user
    request.session[SESSION_ID] = sid
    request.session[SESSION_CSRF] = secrets.token_urlsafe(32)
    request.scope["benchwatch.user"] = user


def log_out(request: Request) -> None:
    """Revoke the session server side: the cookie, even a saved copy, no longer signs anyone in."""
    sid = request.session.get(SESSION_ID)
    if isinstance(sid, str):
        with request.app.state.store.session() as s:
            close_session(s, _sid_hash(sid))
    request.session.clear()
    request.scope["benchwatch.user"] = None


def hash_password(password: str, rounds: int = 12) -> str:
    if not password:
        raise ValueError("empty password")
    return bcrypt.hashpw(password.encode("utf-8")[:72], bcrypt.gensalt(rounds=rounds)).decode("ascii")
