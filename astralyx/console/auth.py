"""Sign in with an API key, sign out."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ..errors import AstralyxError
from .web import actor_of, clear_session, core_of, safe_next, same_origin, set_session, templates

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def insecure(request: Request) -> bool:
    """Browsers keep a Secure cookie only over HTTPS, or on this machine's own address."""
    https = request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "").lower() == "https"
    return not https and (request.url.hostname or "") not in LOOPBACK


def _page(request: Request, target: str, error: AstralyxError | None, status: int = 200) -> Response:
    context = {"next": target, "error": error, "insecure": insecure(request)}
    return templates.TemplateResponse(request, "sign_in.html", context, status_code=status)


async def sign_in_page(request: Request) -> Response:
    if await run_in_threadpool(actor_of, request) is not None:
        return RedirectResponse(safe_next(request.query_params.get("next")), status_code=303)
    return _page(request, safe_next(request.query_params.get("next")), None)


async def sign_in(request: Request) -> Response:
    form = await request.form()
    token = str(form.get("key", "")).strip()
    target = safe_next(str(form.get("next", "/")))
    error = None
    if not same_origin(request):
        error = AstralyxError("Sign in from the console's own page", code="CROSS_SITE")
    elif not token:
        error = AstralyxError("Paste an API key: `astra keys create` makes one, <home>/admin.key holds the first",
                              code="UNAUTHORIZED")
    else:
        try:
            await run_in_threadpool(core_of(request).keys.authenticate, token)
        except AstralyxError as e:
            error = e
    if error is not None:
        return _page(request, target, error, error.status)
    response = RedirectResponse(target, status_code=303)
    set_session(response, request, token)
    return response


async def sign_out(request: Request) -> Response:
    response = RedirectResponse("/sign-in", status_code=303)
    if same_origin(request):
        clear_session(response)
    return response


routes = [
    Route("/sign-in", sign_in_page, methods=["GET"]),
    Route("/sign-in", sign_in, methods=["POST"]),
    Route("/sign-out", sign_out, methods=["POST"]),
]
