"""The options of the ``webhook`` announcer (importing it imports no httpx)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import SecretBytes, SecretStr, field_validator

from agent_wait.core import AnnouncerOptions, ConfigError, EntryOptions
from agent_wait.core.options import (
    Count,
    Duration,
    DurationOrZero,
    PositiveCount,
    Seconds,
    SecondsOrZero,
    SensitiveUrl,
    Text,
)
from agent_wait.webhook._signing import ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, SigningKey

EVENT_HEADER = "X-Agent-Wait-Event"
DEDUPE_HEADER = "X-Agent-Wait-Dedupe-Key"
# Headers agent-wait owns: a user value would break the contract or the signature.
RESERVED_HEADERS = frozenset(
    h.lower()
    for h in (
        "Content-Type",
        "Content-Length",
        "Host",
        "Transfer-Encoding",
        EVENT_HEADER,
        DEDUPE_HEADER,
        ID_HEADER,
        TIMESTAMP_HEADER,
        SIGNATURE_HEADER,
        "User-Agent",
    )
)
# RFC 9110 field names are tokens.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# httpx sends str values as ASCII, and h11 refuses control characters and leading or trailing
# whitespace; inner spaces and tabs are fine.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _header_value_problem(value: str) -> str | None:
    if not value.isascii():
        return "contains a non-ASCII character"
    if value != value.strip(" \t\r\n\v\f"):
        return (
            "starts or ends with whitespace (a value read from a file often keeps its "
            "trailing newline: strip it)"
        )
    if _CONTROL.search(value):
        return "contains a line break or control character"
    return None


class WebhookOptions(AnnouncerOptions):
    """Options of the ``webhook`` announcer (see ``WebhookAnnounce``)."""

    url: SensitiveUrl
    """The receiver, ``http://`` or ``https://``."""
    secret: SecretStr | SecretBytes | None = None
    """Signing secret: ``"whsec_<base64>"`` as Standard Webhooks issues them, or any other
    string (its UTF-8 bytes are the key). Give it as ``secret_env`` to keep it out of files."""
    headers: dict[str, SecretStr] | None = None
    """Extra request headers (e.g. ``Authorization``); the contract headers cannot be
    overridden. Their values are treated as secrets."""
    timeout: Duration = 10.0
    """Bound on each network step of one attempt: seconds or an ISO 8601 duration."""
    retries: Count = 3
    """Attempts after the first one (0 = no retry)."""
    total_timeout: Duration = 30.0
    """Bound on all attempts of one envelope together, backoff included."""
    max_concurrency: PositiveCount = 8
    """Requests in flight at once on the async path."""
    backoff: DurationOrZero = 0.5
    """Base delay of the exponential backoff (doubling per retry, capped at 10 s, full
    jitter); 0 retries at once."""

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError as error:
            raise ValueError(f"not a valid URL ({error})") from None
        if parts.scheme not in ("http", "https"):
            raise ValueError("expected an http:// or https:// URL")
        if not parts.hostname:
            raise ValueError("the URL has no host")
        return value

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr | SecretBytes | None) -> SecretStr | SecretBytes | None:
        if value is not None:
            try:
                SigningKey(value.get_secret_value())
            except ConfigError as error:
                raise ValueError(str(error).removeprefix("secret: ")) from None
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, SecretStr] | None) -> dict[str, SecretStr] | None:
        for name, header in (value or {}).items():
            if not _HEADER_NAME.fullmatch(name):
                shown = repr(name) if len(name) <= 64 else repr(name[:64]) + "..."
                raise ValueError(
                    f"{shown} is not a valid HTTP header name (letters, digits and "
                    "!#$%&'*+-.^_`|~ only)"
                )
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(
                    f"{name!r} is set by the webhook announcer and cannot be overridden"
                )
            # The value is never shown: extra headers often carry credentials.
            problem = _header_value_problem(header.get_secret_value())
            if problem is not None:
                raise ValueError(f"the value of {name!r} {problem} (the value is not shown)")
        return value

    def signing_key(self) -> SigningKey | None:
        """The HMAC key of ``secret``, if any."""
        return None if self.secret is None else SigningKey(self.secret.get_secret_value())

    def header_values(self) -> dict[str, str]:
        """The extra headers with their values."""
        return {name: value.get_secret_value() for name, value in (self.headers or {}).items()}


class WebhookEntryOptions(EntryOptions):
    """Options of the ``webhook`` entry point (see ``WebhookEntry``)."""

    url: SensitiveUrl | None = None
    """Where senders post messages (``http://`` or ``https://``); null on a host that only
    receives."""
    listen: Text | None = None
    """``host:port`` for the built-in server; null when the app is mounted elsewhere."""
    secret: SecretStr | SecretBytes | None = None
    """Signing secret shared by senders and the host; give it as ``secret_env``."""
    path: Text | None = None
    """The sqlite file of the sender's outbox and the host's dead letters; null: the default
    inbox file."""
    visibility_timeout: Seconds = 300.0
    """Seconds a received message stays leased."""
    max_attempts: PositiveCount = 5
    """Deliveries to the host before a message is dead-lettered."""
    retry_delay: SecondsOrZero = 1.0
    """Seconds before a failed message is handed out again."""
    linger: SecondsOrZero = 0.0
    """Seconds ``receive`` waits after the first message for others arriving with it."""
    delivery_timeout: Seconds = 900.0
    """Seconds a sender's POST may stay held by the host."""
    delivery_attempts: PositiveCount = 10
    """POSTs of one message before the sender dead-letters it in its outbox."""
    delivery_retry_delay: SecondsOrZero = 5.0
    """Seconds between a sender's attempts."""
    max_in_flight: PositiveCount = 16
    """POSTs a sender keeps open at once."""
    flush_timeout: SecondsOrZero = 30.0
    """Seconds ``close`` waits for the host to take what this sender sent."""
    read_timeout: Seconds = 30.0
    """Seconds the built-in server gives a request to arrive in full, an idle connection to
    send its next one and a reply to be taken."""
    max_connections: PositiveCount = 256
    """Connections the built-in server serves at once; the next are answered 503."""

    @field_validator("url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("expected an http:// or https:// URL")
        return value
