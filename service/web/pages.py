"""HTML pages: queue, group, alert, series explorer, status, sign-in, and the action forms.

GET pages are open to anyone who can reach the box; POSTs (sign-in aside) need a signed-in
user, and every POST needs the session's CSRF token. Untrusted text reaches templates only
through Jinja's autoescape, and chart data only through `tojson` (which escapes `<`).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional
from urllib.parse import urlencode

import anyio.to_thread
from fastapi import APIRouter, Depends, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.orm import Session

from service.domain import CAUSES, HEADLINE, SOURCES, GroupKind, Source
from service.errors import BenchwatchError
from service.store import choices
from service.notify import words
from service.notify.view import group_view
from service.store.alert_reads import alert_json, load_alert
from service.store.chart_reads import group_kernels, kernel_series
from service.store.health_reads import health_group_view
from service.store.oncall import MAX_NOTE
from service.store.status import last_ingest, store_size, store_status
from service.store.tables import Alert, AlertGroup
from service.web import auth
from service.web.actions import ACTIONS, perform, perform_on_group
from service.web.cache import alert_key, queue_key
from service.web.charts import alert_charts, latest_shapes, series_chart
from service.web.deps import DbId, db, scheduler_info
from service.web.queue import QUEUE_CAUSES, STATUS_FILTERS, select_page

log = logging.getLogger("benchwatch.web")
router = APIRouter(include_in_schema=False)


def render_html(request: Request, name: str, **ctx: Any) -> str:
    user = auth.current_user(request)
    flash = request.session.pop("flash", None) if "flash" in request.session else None
    settings = request.app.state.settings
    ctx.update(
        request=request,
        user=user,
        csrf=auth.csrf_token(request) if (user or ctx.pop("needs_csrf", False)) else "",
        flash=flash,
        sign_in_enabled=auth.sign_in_enabled(settings.web),
        CAUSES=CAUSES,
        QUEUE_CAUSES=QUEUE_CAUSES,
    )
    return request.app.state.templates.get_template(name).render(**ctx)


def render(request: Request, name: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
    return HTMLResponse(render_html(request, name, **ctx), status_code=status_code)


async def cached(request: Request, key: tuple, build: Callable[[], str]) -> HTMLResponse:
    """Anonymous readers share rendered pages (see cache.py); signed-in ones get fresh ones.

    A current page is served straight from the event loop; rendering (database work) runs in
    worker threads, at most RENDER_THREADS at once: more would only fight over the GIL and
    starve the event loop that serves the cached pages.
    """
    cache = request.app.state.page_cache
    limiter = request.app.state.render_limiter
    if auth.current_user(request) is None and "flash" not in request.session:
        html = cache.lookup(key)
        if html is None:
            html = await anyio.to_thread.run_sync(cache.page, key, build, limiter=limiter)
        return HTMLResponse(html)
    return HTMLResponse(await anyio.to_thread.run_sync(build, limiter=limiter))


def _opt(value: Optional[str]) -> Optional[str]:
    """Empty form selects mean 'any'."""
    value = (value or "").strip()
    return value or None


# --- queue & group -----------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
async def queue(
    request: Request,
    status: str = "active",
    cause: Optional[str] = None,
    platform: Optional[str] = None,
    source: Optional[str] = None,
    page: int = 1,
):
    state = request.app.state
    filters = {"status": _opt(status) or "active", "cause": _opt(cause), "platform": _opt(platform),
               "source": _opt(source)}

    def link(**over: Any) -> str:
        q = {k: v for k, v in {**filters, "page": None, **over}.items() if v}
        return "/?" + urlencode(q) if q else "/"

    def build() -> str:
        rows = state.queue_cache.rows(state.page_cache.version(), state.store.session)
        result = select_page(rows, page=page, page_size=state.settings.web.page_size, **filters)
        return render_html(request, "queue.html", q=result, filters=filters, link=link,
                           status_filters=STATUS_FILTERS, sources=SOURCES)

    key = queue_key(filters["status"], filters["cause"], filters["platform"], filters["source"], page)
    return await cached(request, key, build)


@router.get("/groups/{group_id}", response_class=HTMLResponse)
def group_page(request: Request, group_id: DbId, session: Session = Depends(db)):
    """The on-call landing page (Slack links here): the group's `GroupView`, the one Slack
    renders, with the lead kernel's chart and the members' small charts."""
    group = session.get(AlertGroup, group_id)
    if group is None:
        raise HTTPException(404, f"no alert group with id {group_id}")
    if group.kind == GroupKind.HEALTH:
        return render(request, "health_group.html", g=health_group_view(session, group))
    view = group_view(session, group, request.app.state.settings)
    chart, small = None, []
    if view.kernels:
        rows = load_alert(session, view.kernels[0].lead_alert_id)
        members = {r.kernel for r in view.kernels if r.platform_short == rows.track.platform_short}
        chart, small = alert_charts(session, rows, members)
        small = [s for s in small if s["in_group"]]
    return render(request, "group.html", v=view, chart=chart, small=small,
                  headline=words.headline(view), next_steps=words.next_steps(view),
                  kernel_line=words.kernel_line, metric_words=words.metric_words)


# --- alert page & actions -----------------------------------------------------------------


@router.get("/alerts/{alert_id}", response_class=HTMLResponse)
async def alert_page(request: Request, alert_id: DbId):
    def build() -> str:
        with request.app.state.store.session() as session:
            rows = load_alert(session, alert_id)
            if rows is None:
                raise HTTPException(404, f"no alert with id {alert_id}")
            data = alert_json(session, rows)
            group_id = rows.alert.group_id
            prefer = group_kernels(session, group_id) if group_id is not None else set()
            chart, small = alert_charts(session, rows, prefer)
        return render_html(request, "alert.html", a=data, chart=chart, small=small)

    return await cached(request, alert_key(alert_id), build)


# Form fields are capped at what they can legitimately hold: nothing larger is parsed into a
# message, and nothing from a form is ever copied raw into the session cookie.
CSRF_MAX, NAME_MAX, SECRET_MAX, NEXT_MAX, CAUSE_MAX = 128, 64, 1024, 2048, 32
FLASH_MAX = 200


def _flash(request: Request, kind: str, text: str) -> None:
    """A one-shot message in the (cookie) session: short, whatever an error quoted."""
    text = " ".join(text.split())
    request.session["flash"] = {"kind": kind, "text": text if len(text) <= FLASH_MAX else text[: FLASH_MAX - 1] + "…"}


def _actor(request: Request, csrf_token: str, action: str) -> str:
    """Who may act: a same-site form (CSRF), a signed-in user, a known action."""
    if not auth.csrf_ok(request, csrf_token):
        raise HTTPException(403, "the form expired or came from another site; reload and retry")
    user = auth.current_user(request)
    if user is None:
        raise HTTPException(401, "sign in to act on alerts")
    if action not in ACTIONS:
        raise HTTPException(404, "unknown action")
    return user


@router.post("/alerts/{alert_id}/{action}")
def alert_action(
    request: Request,
    alert_id: DbId,
    action: str,
    csrf_token: str = Form("", max_length=CSRF_MAX),
    note: str = Form("", max_length=MAX_NOTE + 100),
    cause: str = Form("", max_length=CAUSE_MAX),
):
    user = _actor(request, csrf_token, action)
    state = request.app.state
    try:
        with state.store.session() as session:  # committed here, before the redirect
            if session.get(Alert, alert_id) is None:
                raise HTTPException(404, f"no alert with id {alert_id}")
            perform(session, action, alert_id, user, note, cause or None)
    except BenchwatchError as exc:  # validated before anything is written
        _flash(request, "error", exc.message)
    else:
        log.info("alert %s: %s by %s", alert_id, action, user)
        _flash(request, "ok", f"{ACTIONS[action].lower()}: recorded")
    state.page_cache.invalidate()
    return RedirectResponse(f"/alerts/{alert_id}#audit", status_code=303)


@router.post("/groups/{group_id}/{action}")
def group_action(
    request: Request,
    group_id: DbId,
    action: str,
    csrf_token: str = Form("", max_length=CSRF_MAX),
    note: str = Form("", max_length=MAX_NOTE + 100),
    cause: str = Form("", max_length=CAUSE_MAX),
    assignee: str = Form("", max_length=NAME_MAX),
):
    """One action on every member of the group, checked like an alert's (sign-in, CSRF, the
    same transition rules); members it cannot apply to are named in the flash."""
    user = _actor(request, csrf_token, action)
    state = request.app.state
    try:
        with state.store.session() as session:
            group = session.get(AlertGroup, group_id)
            if group is None or group.kind == GroupKind.HEALTH:
                raise HTTPException(404, f"no alert group with id {group_id}")
            result = perform_on_group(session, action, group_id, user, note, cause or None,
                                      assignee or None)
    except BenchwatchError as exc:
        _flash(request, "error", exc.message)
    else:
        log.info("group %s: %s by %s on %d alerts", group_id, action, user, len(result.done))
        skipped = f" ({len(result.skipped)} skipped: {result.skipped[0][1]})" if result.skipped else ""
        _flash(request, "ok", f"{ACTIONS[action].lower()}: recorded on {len(result.done)} alerts{skipped}")
    state.page_cache.invalidate()
    return RedirectResponse(f"/groups/{group_id}#audit", status_code=303)


# --- series explorer ----------------------------------------------------------------------


def _chosen(what: str, value: str | None, valid: list[str], where: str) -> str | None:
    """The value asked for, or the first stored one when none was asked for. An unknown value
    is a 404 naming the valid ones: showing another platform's chart under the typed name
    would answer a question nobody asked."""
    if value is None:
        return valid[0] if valid else None
    if value not in valid:
        known = ", ".join(valid) if valid else "none stored yet"
        raise HTTPException(404, f"unknown {what} {value!r}{where}; valid: {known}")
    return value


@router.get("/series", response_class=HTMLResponse)
async def series_page(
    request: Request,
    source: Optional[str] = Query(None, max_length=16),
    platform: Optional[str] = Query(None, max_length=64),
    kernel: Optional[str] = Query(None, max_length=255),
    metric: Optional[str] = Query(None, max_length=255),
):
    """Cached like the alert pages (a new ingest drops it): the chart and the per-shape table
    of a big run cost a few hundred milliseconds, not to be paid on every request."""
    source = _opt(source) or Source.DASHBOARD.value
    if source not in SOURCES:
        raise HTTPException(404, f"unknown source {source!r}; valid: {', '.join(SOURCES)}")
    platform, kernel, metric = _opt(platform), _opt(kernel), _opt(metric)

    def build() -> str:
        with request.app.state.store.session() as session:
            return _series_html(request, session, source, platform, kernel, metric)

    return await cached(request, ("series", source, platform, kernel, metric), build)


def _series_html(request: Request, session: Session, source: str, platform: str | None,
                 kernel: str | None, metric: str | None) -> str:
    platforms = choices.platforms(session, source)
    platform = _chosen("platform", platform, platforms, f" for {source}")
    kernels = choices.kernels(session, source, platform) if platform else []
    kernel = _chosen("kernel", kernel, kernels, f" on {platform}")
    metrics, chart, shapes = [], None, None
    if kernel:
        track_id, rows = kernel_series(session, source, platform, kernel)
        metrics = [r.metric for r in rows]
        if metric is None:
            preferred = [m for m in HEADLINE if m in metrics]
            metric = preferred[0] if preferred else (metrics[0] if metrics else None)
        metric = _chosen("metric", metric, metrics, f" for {kernel}")
        sid = {r.metric: r.series_id for r in rows}.get(metric)
        chart = series_chart(session, sid) if sid is not None else None
        shapes = latest_shapes(session, track_id)
    return render_html(
        request, "series.html", sources=SOURCES, source=source, platforms=platforms, platform=platform,
        kernels=kernels, kernel=kernel, metrics=metrics, metric=metric, chart=chart, shapes=shapes,
    )


# --- status -------------------------------------------------------------------------------


@router.get("/status", response_class=HTMLResponse)
def status_page(request: Request, session: Session = Depends(db)):
    last = {source: last_ingest(session, source) for source in SOURCES}
    settings = request.app.state.settings
    return render(
        request, "status.html", counts=store_status(session), last=last, sched=scheduler_info(request),
        size=store_size(session), schedule=settings.schedule, sources_cfg=settings.sources,
    )


# --- sign-in ------------------------------------------------------------------------------


def _safe_next(target: str | None) -> str:
    """Only same-site paths: never bounce a fresh sign-in to another host."""
    target = target or "/"
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/"):
    return render(request, "login.html", next=_safe_next(next), error=None, needs_csrf=True)


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


@router.post("/login")
def login(
    request: Request,
    name: str = Form("", max_length=NAME_MAX),
    password: str = Form("", max_length=SECRET_MAX),
    csrf_token: str = Form("", max_length=CSRF_MAX),
    next: str = Form("/", max_length=NEXT_MAX),
):
    if not auth.csrf_ok(request, csrf_token):
        return render(request, "login.html", 403, next=_safe_next(next), needs_csrf=True,
                      error="the form expired; try again")
    limits = request.app.state.signin_limits
    address = client_address(request)
    verdict = limits.check(name, address)
    if not verdict.allowed:
        log.warning("web sign-in throttled (too many failures for this name or address)")
        response = render(request, "login.html", 429, next=_safe_next(next), needs_csrf=True,
                          error=f"too many failed sign-ins: try again in {verdict.retry_after_s} s")
        response.headers["Retry-After"] = str(verdict.retry_after_s)
        return response
    result = auth.check_credentials(request.app.state.settings.web, name, password)
    if not result.ok:
        limits.failed(name, address)
        log.info("web sign-in refused")
        return render(request, "login.html", 401, next=_safe_next(next), needs_csrf=True,
                      error=result.error)
    auth.log_in(request, result.user)
    log.info("web sign-in: %s", result.user)
    return RedirectResponse(_safe_next(next), status_code=303)


@router.post("/logout")
def logout(request: Request, csrf_token: str = Form("", max_length=CSRF_MAX)):
    if auth.csrf_ok(request, csrf_token):
        auth.log_out(request)
    return RedirectResponse("/", status_code=303)
