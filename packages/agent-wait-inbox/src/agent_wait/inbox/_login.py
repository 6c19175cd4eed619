"""Signing in and out: OpenID Connect, the login form (a name and the shared secret), logout."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from agent_wait.core import Identity
from agent_wait.inbox._auth import clean_name, provider_routes
from agent_wait.inbox._oidc import complete_sign_in
from agent_wait.inbox._web import Web, form_fields, logger, root


def safe_next(request: Request, target: str | None) -> str:
    """Only a local path: the login form never redirects to another site."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return root(request) + "/"


class _Login:
    def __init__(self, web: Web) -> None:
        self.web = web

    def page(self, request: Request, target: str, status: int = 200, **context: str) -> Response:
        """The login page: a way in for each sign-in method configured, and how to get it."""
        auth = self.web.auth
        return self.web.render(
            request,
            "login.html",
            status,
            next=target,
            sso=self.web.login_links(request, target),
            has_token=bool(auth.token),
            token_env=auth.token_env,
            proxy=bool(auth.trusted_proxies),
            **context,
        )

    async def login(self, request: Request) -> Response:
        web, auth = self.web, self.web.auth
        if request.method == "GET":
            target = safe_next(request, request.query_params.get("next"))
            return self.page(request, target)
        fields = form_fields(await request.form())
        if not web.csrf_ok(request, fields.get("csrf")):
            return PlainTextResponse("the form expired; reload the page", 403)
        name = clean_name(fields.get("name", ""))
        if name is None or not auth.check_token(fields.get("token", "")):
            logger.warning("failed inbox login from %s", auth.origin(request) or "?")
            # The name stays typed: only the secret is asked again.
            return self.page(
                request,
                safe_next(request, fields.get("next")),
                401,
                error="wrong name or secret",
                typed_name=fields.get("name", "")[:64],
            )
        # A name typed beside one shared secret: anyone holding it may type any name.
        web.sign_in(request, Identity(subject=name, source="shared-secret"))
        return RedirectResponse(safe_next(request, fields.get("next")), 303)

    async def oidc_login(self, request: Request) -> Response:
        oidc = self.web.oidc
        if oidc is None:
            return PlainTextResponse("OpenID Connect sign-in is not configured", 404)
        request.session["oidc_next"] = safe_next(request, request.query_params.get("next"))
        try:
            return await oidc.authorize_redirect(request, str(request.url_for("oidc_callback")))
        except Exception as error:  # noqa: BLE001 - the provider is unreachable: said, not traced
            logger.error("OpenID Connect provider unreachable: %s", type(error).__name__)
            return PlainTextResponse(
                f"the sign-in provider could not be reached ({type(error).__name__}); try again",
                502,
            )

    async def oidc_callback(self, request: Request) -> Response:
        web = self.web
        if web.oidc is None or web.auth.oidc is None:
            return PlainTextResponse("OpenID Connect sign-in is not configured", 404)
        target = request.session.get("oidc_next")
        try:
            who = await complete_sign_in(web.auth.oidc, web.oidc, request)
        except ValueError as error:
            logger.warning("failed OpenID Connect sign-in from %s", web.auth.origin(request) or "?")
            return self.page(request, root(request) + "/", 401, error=f"Not signed in: {error}")
        web.sign_in(request, who)
        return RedirectResponse(
            safe_next(request, target if isinstance(target, str) else None), 303
        )

    async def logout(self, request: Request) -> Response:
        form = await request.form()
        offered = form.get("csrf")
        if not self.web.csrf_ok(request, offered if isinstance(offered, str) else None):
            return PlainTextResponse("the form expired; reload the page", 403)
        session = request.session.get("session")
        if isinstance(session, str):
            self.web.sessions.revoke(session)
        request.session.clear()
        return RedirectResponse(f"{root(request)}/login", 303)


def routes(web: Web) -> list[BaseRoute]:
    """``/login``, ``/logout``, ``/oidc/*`` and each sign-on provider's routes at ``/sso/<name>``."""
    handlers = _Login(web)
    return [
        Route("/login", handlers.login, methods=["GET", "POST"]),
        Route("/logout", handlers.logout, methods=["POST"]),
        Route("/oidc/login", handlers.oidc_login),
        Route("/oidc/callback", handlers.oidc_callback, name="oidc_callback"),
        *(
            Mount(f"/sso/{name}", routes=provider_routes(provider))
            for name, provider in web.auth.providers.items()
            if provider_routes(provider)
        ),
    ]
