"""Who is asking: OIDC, a trusted proxy, a plugin's sign-on, a shared secret, or nobody (loopback)."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from starlette.requests import HTTPConnection
from starlette.routing import BaseRoute

from agent_wait.core import ConfigError, Identity, identity_providers
from agent_wait.inbox._oidc import OidcSignIn

TOKEN_ENV = "AGENT_WAIT_INBOX_TOKEN"
MAX_NAME = 64

logger = logging.getLogger("agent_wait.inbox")


@runtime_checkable
class IdentityProvider(Protocol):
    """Single sign-on for the inbox, as a plugin supplies it (``register_identity_providers``).

    Only ``identify`` is required. A provider may also define ``login_url(next) -> str``, where
    the login page sends people to sign in (``next`` is the inbox path to return to), and
    ``routes() -> Sequence[BaseRoute]``, Starlette routes the inbox mounts at ``/sso/<name>``
    (a sign-in callback, for example).
    """

    def identify(self, request: HTTPConnection) -> str | Identity | None:
        """The person making the request, or None if it carries no identity.

        A name is recorded with ``identity_source`` ``sso``; an :class:`Identity` as it says
        (with its groups, for ``group:`` approvers).
        """
        ...


def provider_routes(provider: IdentityProvider) -> Sequence[BaseRoute]:
    """The routes a provider wants mounted (none when it defines no ``routes``)."""
    routes: Callable[[], Iterable[BaseRoute]] | None = getattr(provider, "routes", None)
    return list(routes()) if callable(routes) else []


def is_loopback(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host is None:
        return False
    if host == "localhost":
        return True
    address = _ip(host)
    return address is not None and address.is_loopback


@dataclass(frozen=True)
class InboxAuth:
    """How the inbox web app knows who answers. Authentication is on unless ``no_auth``.

    Args:
        token: The shared secret: a name typed beside it is recorded unverified, so it is for a
            single-user setup (and bots, which send it as ``Authorization: Bearer``).
        token_env: The environment variable holding the secret when ``token`` is not given
            (default ``AGENT_WAIT_INBOX_TOKEN``).
        trusted_proxies: Addresses or networks of reverse proxies whose ``X-Forwarded-User`` /
            ``X-Forwarded-Email`` headers name the person (and ``X-Forwarded-Groups``, comma
            separated, their groups); the headers of anyone else are ignored.
        oidc: Sign people in through an OpenID Connect provider (see :class:`OidcSignIn`).
        no_auth: Serve without authentication; every request must then come from a loopback
            address, and answers are recorded as ``local_user``.
        local_user: The name recorded with ``no_auth``.
        session_secret: Signs the session cookie (default: random per process, so a restart logs
            everybody out).
        secure_cookie: Send the session cookie only over HTTPS (on behind a TLS proxy).
        identity_providers: Single sign-on: name to :class:`IdentityProvider`. Default: every
            provider installed plugins register (``register_identity_providers``); ``{}`` for
            none.

    Raises:
        ConfigError: No secret, no trusted proxy, no OpenID Connect and no identity provider
            while authentication is on, a proxy address that is not an address or network, or a provider without
            ``identify``.
    """

    token: str | None = field(default=None, repr=False)
    token_env: str = TOKEN_ENV
    trusted_proxies: Iterable[str] = ()
    no_auth: bool = False
    local_user: str = "local"
    session_secret: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    secure_cookie: bool = False
    identity_providers: Mapping[str, IdentityProvider] | None = None
    oidc: OidcSignIn | None = None
    _networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(
        default=(), init=False, repr=False
    )

    def __post_init__(self) -> None:
        networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for text in self.trusted_proxies:
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                raise ConfigError(
                    f"trusted_proxies: expected an address or network such as 10.0.0.5 or "
                    f"10.0.0.0/8, got {text!r}"
                ) from None
        object.__setattr__(self, "trusted_proxies", tuple(self.trusted_proxies))
        object.__setattr__(self, "_networks", tuple(networks))
        if self.token is None and not self.no_auth:
            object.__setattr__(self, "token", os.environ.get(self.token_env) or None)
        providers = dict(
            identity_providers()
            if self.identity_providers is None and not self.no_auth
            else self.identity_providers or {}
        )
        for name, provider in providers.items():
            if not isinstance(provider, IdentityProvider):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigError(
                    f"identity_providers: {name!r} has no identify(request) method, got "
                    f"{type(provider).__name__}"
                )
        object.__setattr__(self, "identity_providers", providers)
        if not self.no_auth and not (self.token or networks or providers or self.oidc):
            raise ConfigError(
                "the inbox needs a way to know who answers: sign in through OpenID Connect "
                "(oidc=/--oidc-issuer), trust a reverse proxy (trusted_proxies=/--trusted-proxy), "
                f"install a single sign-on plugin, set {self.token_env} (a shared secret, for a "
                "single-user setup; token_env=/--token-env names another variable), or on a "
                "loopback address only, pass no_auth=True (--no-auth)"
            )

    @property
    def providers(self) -> Mapping[str, IdentityProvider]:
        """The identity providers in use, by name."""
        return self.identity_providers or {}

    def from_provider(self, connection: HTTPConnection) -> Identity | None:
        """The person the first identity provider that knows the request names, or None."""
        for name, provider in self.providers.items():
            try:
                named = provider.identify(connection)
            except Exception:  # a broken provider identifies nobody
                logger.exception("identity provider %r failed; the request is not identified", name)
                continue
            if isinstance(named, Identity):
                return named
            if isinstance(named, str) and (cleaned := clean_name(named)):
                return Identity(subject=cleaned, source="sso")
        return None

    def login_links(self, next_path: str) -> list[tuple[str, str]]:
        """``(provider name, sign-in URL)`` of every provider with a ``login_url``."""
        links: list[tuple[str, str]] = []
        for name, provider in self.providers.items():
            login_url = getattr(provider, "login_url", None)
            if callable(login_url):
                links.append((name, str(login_url(next_path))))
        return links

    def trusts(self, host: str | None) -> bool:
        """True if ``host`` is the address of a trusted proxy."""
        address = _ip(host)
        return address is not None and any(address in network for network in self._networks)

    def from_proxy(self, connection: HTTPConnection) -> Identity | None:
        """The person a trusted proxy names, or None (headers of anyone else are ignored).

        The proxy is the peer of the connection, so the server must not replace the peer with
        an address from ``X-Forwarded-For`` (uvicorn: ``proxy_headers=False``).
        ``X-Forwarded-Groups`` (comma separated) gives their groups.
        """
        if not self.trusts(connection.client.host if connection.client else None):
            return None
        name = connection.headers.get("x-forwarded-user") or connection.headers.get(
            "x-forwarded-email"
        )
        cleaned = clean_name(name) if name else None
        if cleaned is None:
            return None
        groups = {
            group.strip()
            for header in connection.headers.getlist("x-forwarded-groups")
            for group in header.split(",")
            if group.strip()
        }
        return Identity(subject=cleaned, groups=frozenset(groups), source="proxy")

    def origin(self, connection: HTTPConnection) -> str | None:
        """The address the request comes from: the peer, or behind trusted proxies, their client.

        Each proxy appends the address it was reached from to ``X-Forwarded-For``, so the list
        is read from the right while its addresses are trusted proxies; the first other one is
        the client (anything to its left is whatever that client sent).
        """
        peer = connection.client.host if connection.client else None
        if not self.trusts(peer):
            return peer
        hops = forwarded_for(connection)
        for hop in reversed(hops):
            if not self.trusts(hop):
                return hop
        return hops[0] if hops else peer

    def is_local(self, connection: HTTPConnection) -> bool:
        """True if the request comes from this host, not relayed by a proxy from another."""
        return is_loopback(self.origin(connection)) and all(
            is_loopback(hop) for hop in forwarded_for(connection)
        )

    def check_token(self, offered: str) -> bool:
        """Constant-time comparison with the secret."""
        return bool(self.token) and hmac.compare_digest(
            offered.encode("utf-8"), (self.token or "").encode("utf-8")
        )

    def bearer(self, connection: HTTPConnection) -> bool:
        """True if the request carries ``Authorization: Bearer <the secret>`` (bots)."""
        scheme, _, value = connection.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.check_token(value.strip())


def forwarded_for(connection: HTTPConnection) -> list[str]:
    """The addresses of ``X-Forwarded-For`` (every such header, in order), left to right."""
    return [
        hop.strip()
        for header in connection.headers.getlist("x-forwarded-for")
        for hop in header.split(",")
        if hop.strip()
    ]


def _ip(host: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if host is None:
        return None
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def clean_name(name: str) -> str | None:
    """A display name: printable, trimmed, at most 64 characters; None if nothing is left."""
    text = "".join(c for c in name if c.isprintable()).strip()[:MAX_NAME]
    return text or None
