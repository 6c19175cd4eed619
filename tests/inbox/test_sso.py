"""Single sign-on from a plugin: a provider registered through ``register_identity_providers``."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from starlette.requests import HTTPConnection, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.testclient import TestClient

from agent_wait.core import ConfigError, SqliteEntry, SqliteQuestionStore, hookimpl
from agent_wait.core.hookspecs import RegisterTarget
from agent_wait.inbox import IdentityProvider, InboxAuth, inbox_app
from agent_wait.testing import registered_plugin
from tests.inbox.conftest import ask, csrf_of, sent

IDP_SECRET = b"shared with the identity provider"
COOKIE = "corp_sso"


def signature(user: str) -> str:
    return hmac.new(IDP_SECRET, user.encode(), hashlib.sha256).hexdigest()


class CorpSso:
    """What a company's SSO plugin does: the identity provider signs the user it sends back."""

    def identify(self, request: HTTPConnection) -> str | None:
        user, _, sig = request.cookies.get(COOKIE, "").rpartition("|")
        return user if user and hmac.compare_digest(sig, signature(user)) else None

    def login_url(self, next: str) -> str:
        return "https://idp.example/authorize?" + urlencode({"return_to": next})

    def routes(self) -> list[BaseRoute]:
        async def callback(request: Request) -> Response:
            user = request.query_params.get("user", "")
            if not hmac.compare_digest(request.query_params.get("sig", ""), signature(user)):
                return Response("bad signature", 403)
            response = RedirectResponse(request.query_params.get("return_to", "/"), 303)
            response.set_cookie(COOKIE, f"{user}|{signature(user)}", httponly=True)
            return response

        return [Route("/callback", callback)]


class CorpSsoPlugin:
    @hookimpl
    def register_identity_providers(self, register: RegisterTarget) -> None:
        register("corp", CorpSso)


@pytest.fixture
def sso_client(inbox: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.delenv("AGENT_WAIT_INBOX_TOKEN", raising=False)
    ask(inbox, "q1", args={"amount": 40})
    with (
        registered_plugin(CorpSsoPlugin(), "test-corp-sso"),
        SqliteQuestionStore(inbox) as store,
        SqliteEntry(inbox) as entry,
    ):
        # No secret, no proxy: the registered provider alone makes the inbox usable.
        app = inbox_app(store, InboxAuth(), entry=entry)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            yield client


def test_a_plugin_provider_identifies_who_answers(sso_client: TestClient, inbox: Path) -> None:
    refused = sso_client.get("/", follow_redirects=False)
    assert refused.status_code == 303
    assert refused.headers["location"] == "https://idp.example/authorize?return_to=%2F"
    assert sso_client.get("/api/questions").status_code == 401
    sso_client.cookies.set(COOKIE, f"mallory|{signature('carol')}")  # forged
    assert sso_client.get("/api/questions").status_code == 401
    sso_client.cookies.clear()

    back = sso_client.get(
        "/sso/corp/callback",
        params={"user": "carol", "sig": signature("carol"), "return_to": "/"},
        follow_redirects=False,
    )
    assert back.status_code == 303
    page = sso_client.get("/questions/q1", params={"thread": "order-4471"})
    assert page.status_code == 200
    assert "carol" in page.text
    answered = sso_client.post(
        "/questions/q1/answer",
        params={"thread": "order-4471"},
        # answered_by comes from the identity, never from the form.
        data={"csrf": csrf_of(page.text), "action": "approve", "by": "mallory"},
    )
    assert answered.status_code == 200
    assert sso_client.get("/api/questions/q1").json()["answered_by"] == "carol"
    [message] = sent(inbox)
    assert message["answer"] == {"action": "approve"}


def test_login_page_offers_the_provider_beside_the_secret(
    inbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask(inbox, "q1")
    with (
        registered_plugin(CorpSsoPlugin(), "test-corp-sso"),
        SqliteQuestionStore(inbox) as store,
        SqliteEntry(inbox) as entry,
    ):
        app = inbox_app(store, InboxAuth(token="s3"), entry=entry)
        client = TestClient(app, base_url="http://127.0.0.1")
        assert client.get("/", follow_redirects=False).headers["location"] == "/login?next=%2F"
        page = client.get("/login").text
        assert "Sign in with corp" in page
        assert "idp.example/authorize" in page
        assert 'name="token"' in page
        # An explicit empty mapping turns the installed providers off.
        without = inbox_app(store, InboxAuth(token="s3", identity_providers={}))
        assert (
            "idp.example" not in TestClient(without, base_url="http://127.0.0.1").get("/login").text
        )


def test_a_failing_provider_identifies_nobody(
    inbox: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def identify(self, request: HTTPConnection) -> str | None:
            raise RuntimeError("directory unreachable")

    provider: IdentityProvider = Broken()
    ask(inbox, "q1")
    with SqliteQuestionStore(inbox) as store:
        app = inbox_app(store, InboxAuth(identity_providers={"broken": provider}))
        client = TestClient(app, base_url="http://127.0.0.1")
        assert client.get("/api/questions").status_code == 401
    assert "identity provider 'broken' failed" in caplog.text
    with pytest.raises(ConfigError, match="'odd' has no identify"):
        InboxAuth(identity_providers={"odd": object()})  # pyright: ignore[reportArgumentType]
