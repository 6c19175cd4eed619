"""Signing in to the inbox through OpenID Connect: the authorization code flow, with authlib.

authlib reads the provider's discovery document, sends the person to its authorization
endpoint with ``state`` and ``nonce`` kept in the session, exchanges the code, and checks the
ID token (signature against the provider's keys, issuer, audience, expiry, nonce) before the
claims are used. The person's identity is then kept in the inbox's signed session cookie.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from authlib.integrations.starlette_client import OAuth, OAuthError
from starlette.requests import Request

from agent_wait.core import ConfigError, Identity

logger = logging.getLogger("agent_wait.inbox")

DISCOVERY = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class OidcSignIn:
    """OpenID Connect sign-in for the inbox.

    Register the inbox with the provider as a confidential web client whose redirect URI is
    ``<inbox URL>/oidc/callback``.

    Args:
        issuer: The provider's issuer URL (its discovery document is
            ``<issuer>/.well-known/openid-configuration``).
        client_id: The inbox's client id at the provider.
        client_secret: Its client secret.
        scopes: The scopes asked for; ``openid`` is required.
        subject_claim: The ID token claim recorded as who answered and matched against
            approvers (``email`` by default; ``sub`` when the provider gives no address).
        groups_claim: The claim listing the person's groups, matched against ``group:``
            approvers (a list of names, or one name).
        label: What the sign-in button says.
    """

    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    scopes: str = "openid email profile"
    subject_claim: str = "email"
    groups_claim: str = "groups"
    label: str = "OpenID Connect"

    def __post_init__(self) -> None:
        if not self.issuer.startswith(("https://", "http://")):
            raise ConfigError(
                f"oidc issuer: expected an https:// URL such as https://login.example.com, got "
                f"{self.issuer!r}"
            )
        if not self.client_id:
            raise ConfigError("oidc client_id: the inbox's client id at the provider is required")
        if "openid" not in self.scopes.split():
            raise ConfigError(f"oidc scopes: must include openid, got {self.scopes!r}")

    def client(self) -> Any:
        """The authlib client: discovery, the code flow and ID token checks."""
        oauth = OAuth()
        # authlib ships no type information for its registry.
        oauth.register(  # pyright: ignore[reportUnknownMemberType]
            "oidc",
            client_id=self.client_id,
            client_secret=self.client_secret,
            server_metadata_url=self.issuer.rstrip("/") + DISCOVERY,
            client_kwargs={"scope": self.scopes},
        )
        return cast("Any", oauth).create_client("oidc")

    def identity(self, claims: Mapping[str, Any]) -> Identity:
        """The person the ID token's ``claims`` name.

        Raises:
            ValueError: The token carries no usable subject claim.
        """
        subject = claims.get(self.subject_claim)
        if not isinstance(subject, str) or not subject:
            raise ValueError(
                f"the ID token has no {self.subject_claim!r} claim (ask for the scope that "
                "carries it, or set subject_claim)"
            )
        raw: object = claims.get(self.groups_claim, [])
        groups: Sequence[object] = (
            [raw]
            if isinstance(raw, str)
            else cast("list[object]", raw)
            if isinstance(raw, list)
            else []
        )
        name = claims.get("name")
        return Identity(
            subject=subject,
            name=name if isinstance(name, str) else None,
            groups=frozenset(g for g in groups if isinstance(g, str)),
            source="oidc",
        )


async def complete_sign_in(sign_in: OidcSignIn, client: Any, request: Request) -> Identity:
    """Exchange the callback's code and check the ID token; the person it names.

    Raises:
        ValueError: The provider refused, the state or nonce does not match, or the token
            names nobody; the message says which.
    """
    error = request.query_params.get("error")
    if error:
        raise ValueError(f"the provider refused the sign-in ({error[:80]})")
    try:
        token = await client.authorize_access_token(request)
    except OAuthError as refused:
        raise ValueError(f"the sign-in could not be completed ({refused.error})") from None
    claims = token.get("userinfo")
    if not isinstance(claims, Mapping):
        raise ValueError("the provider returned no ID token")
    return sign_in.identity(cast("Mapping[str, Any]", claims))
