"""`create_app`: the FastAPI app `benchwatch serve` runs under uvicorn next to the scheduler.

The app holds no state of its own beyond a read cache: settings and the Store are handed in, so
tests build it on any store; `serve` adds its scheduler to ``app.state`` for the status page.
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import anyio
import jinja2
import plotly
from fastapi import FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy import text
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware

from service.config import Settings
from service.errors import BenchwatchError
from service.store.db import Store
from service.web import api, pages
from service.web.filters import install_filters
from service.web.cache import FastPages, PageCache
from service.web.queue import QueueCache
from service.web.signin_limits import SignInLimits

log = logging.getLogger("benchwatch.web")
HERE = Path(__file__).resolve().parent
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"

# Plotly draws SVG and sets inline styles; nothing loads from another origin.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

RENDER_THREADS = 3  # concurrent page renders (see pages.cached)


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE / "templates")),
        autoescape=True,  # every untrusted string (subjects, kernels, notes) is escaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    install_filters(env)
    return env


def create_app(settings: Settings, store: Store) -> FastAPI:
    """Build the web app over an open (already upgraded) store."""
    app = FastAPI(
        title="benchwatch",
        summary="On-call queue for Helion benchmark regressions",
        version="1",
        docs_url=None,  # the Swagger/ReDoc pages load JS from a CDN; the schema is enough
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    secret = settings.web.secret_key.get_secret_value()
    if not secret:
        log.warning("web.secret_key is empty: using a random key (sign-ins end on restart)")
        secret = secrets.token_urlsafe(48)
    app.add_middleware(
        SessionMiddleware,
        secret_key=secret,
        session_cookie="benchwatch_session",
        max_age=settings.web.session_max_age_s,
        same_site="lax",
        https_only=settings.web.cookie_secure,
    )

    page_cache = PageCache(store, ttl_s=settings.web.page_cache_s)
    app.add_middleware(FastPages, cache=page_cache)  # inside SecurityHeaders: hits get them too
    app.add_middleware(SecurityHeaders)

    app.state.settings = settings
    app.state.store = store
    app.state.templates = _templates()
    app.state.templates.globals["github_url"] = settings.helion.github_url
    app.state.queue_cache = QueueCache()
    app.state.page_cache = page_cache
    app.state.render_limiter = anyio.CapacityLimiter(RENDER_THREADS)
    app.state.signin_limits = SignInLimits(settings.web)

    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.get("/static-vendor/plotly.min.js", include_in_schema=False)
    def plotly_js() -> FileResponse:
        """Plotly's own bundle from the installed package: the team box may have no internet."""
        return FileResponse(
            PLOTLY_JS, media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> Response:
        """200 when the store answers (the container healthcheck); 503 otherwise."""
        try:
            with store.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:  # noqa: BLE001 - any failure means unhealthy
            log.warning("healthz: store unreachable: %s", exc.__class__.__name__)
            return JSONResponse({"ok": False, "store": "unreachable"}, status_code=503)
        return JSONResponse({"ok": True})

    app.include_router(api.router)
    app.include_router(pages.router)

    @app.exception_handler(BenchwatchError)
    async def _bad_input(request: Request, exc: BenchwatchError):
        return _error(request, 400, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _bad_params(request: Request, exc: RequestValidationError):
        if request.url.path.startswith("/api/"):
            return await request_validation_exception_handler(request, exc)
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())[1:]) or "request"
        return _error(request, 400, f"{where}: {err.get('msg', 'invalid value')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        return _error(request, exc.status_code, str(exc.detail))

    return app


MAX_BODY = 64 * 1024  # the largest form is a 2,000-character note


class SecurityHeaders:
    """Pure ASGI (cheaper than BaseHTTPMiddleware): CSP and friends on every response;
    ``Cache-Control: no-store`` on whatever a signed-in session or the sign-in forms receive
    (no shared or back-button cache keeps a page with a CSRF token); request bodies over
    ``MAX_BODY`` refused with 413 before anything parses them."""

    HEADERS = [
        (b"content-security-policy", CSP.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"same-origin"),
        (b"x-frame-options", b"DENY"),
    ]

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = next((v for k, v in scope.get("headers", ()) if k == b"content-length"), b"0")
        if not length.isdigit() or int(length) > MAX_BODY:
            await JSONResponse({"error": "request body too large"}, status_code=413)(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                session = scope.get("session") or {}
                if session.get("user") or scope["path"] in ("/login", "/logout"):
                    headers = [(k, v) for k, v in headers if k.lower() != b"cache-control"]
                    headers.append((b"cache-control", b"no-store"))
                have = {k.lower() for k, _ in headers}
                message["headers"] = headers + [(k, v) for k, v in self.HEADERS if k not in have]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _error(request: Request, status: int, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    return pages.render(request, "error.html", status, status=status, message=message)
