"""The options of the ``email`` announcer (importing it imports no aiosmtplib)."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from agent_wait.core import AnnouncerOptions
from agent_wait.core.options import Duration, Text

# An answer records who answered in at most 64 characters: the recipient is that name.
_MAX_ADDRESS = 64
_ADDRESS = re.compile(r"[^@\s<>\"',;]+@[^@\s<>\"',;]+\.[^@\s<>\"',;]+")
# The HMAC key signs links that answer questions: short keys are guessable offline.
_MIN_SECRET = 16


def _address_problem(address: str) -> str | None:
    if not _ADDRESS.fullmatch(address):
        return f"{address!r} is not an email address"
    if len(address) > _MAX_ADDRESS:
        return f"{address!r} is longer than {_MAX_ADDRESS} characters (an answerer's name is at most that)"
    return None


class EmailOptions(AnnouncerOptions):
    """Options of the ``email`` announcer (see ``EmailAnnounce``)."""

    host: Text
    """The SMTP server's host name."""
    port: int | None = None
    """The SMTP port; default 587 for ``starttls``, 465 for ``tls``, 25 for ``none``."""
    security: Literal["starttls", "tls", "none"] = "starttls"
    """``starttls`` (upgrade a plain connection, port 587), ``tls`` (SMTPS, port 465) or ``none``
    (plain text: loopback relays only)."""
    ca_file: Text | None = None
    """A PEM file of the certificate authorities to verify the server with (a private CA);
    default: the system's."""
    username: Text | None = None
    """The SMTP login, if the server wants one."""
    password: SecretStr | None = None
    """The SMTP password; give it as ``password_env``."""
    sender: Text
    """The ``From`` address."""
    to: list[str] = Field(default_factory=list[str])
    """Recipients of every question."""
    routes: dict[str, list[str]] = Field(default_factory=dict[str, list[str]])
    """Recipients by tag: ``{"approver_group:finance": ["cfo@example.com"]}`` sends questions
    tagged ``approver_group=finance`` to those addresses too."""
    links_url: Text
    """The public root of the links app (``agent-wait email serve``), such as
    ``https://approve.example.com``."""
    secret: SecretStr
    """The HMAC key that signs the links (16 characters or more); give it as ``secret_env``. The
    links app needs the same key."""
    link_ttl: Duration = 7 * 24 * 3600.0
    """How long a link stays valid when the question has no earlier deadline."""
    timeout: Duration = 30.0
    """Bound on each SMTP exchange, in seconds or as an ISO 8601 duration."""

    @field_validator("to")
    @classmethod
    def _to(cls, value: list[str]) -> list[str]:
        for address in value:
            if problem := _address_problem(address):
                raise ValueError(problem)
        return value

    @field_validator("routes")
    @classmethod
    def _routes(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for tag, addresses in value.items():
            if tag.count(":") < 1 or tag.startswith(":"):
                raise ValueError(
                    f"{tag!r}: expected '<tag>:<value>', such as 'approver_group:finance'"
                )
            for address in addresses:
                if problem := _address_problem(address):
                    raise ValueError(f"{tag!r}: {problem}")
        return value

    @field_validator("sender")
    @classmethod
    def _sender(cls, value: str) -> str:
        if not _ADDRESS.fullmatch(value):
            raise ValueError(f"{value!r} is not an email address")
        return value

    @field_validator("links_url")
    @classmethod
    def _links(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("expected the links app's http:// or https:// root URL")
        return value.rstrip("/")

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < _MIN_SECRET:
            raise ValueError(f"the key is shorter than {_MIN_SECRET} characters (not shown)")
        return value

    @field_validator("port")
    @classmethod
    def _port(cls, value: int | None) -> int | None:
        if value is not None and not 0 < value < 65536:
            raise ValueError("expected a port from 1 to 65535")
        return value

    @model_validator(mode="after")
    def _credentials(self) -> EmailOptions:
        if (self.username is None) != (self.password is None):
            raise ValueError("give both 'username' and 'password' (or 'password_env'), or neither")
        return self

    def smtp_port(self) -> int:
        """The port to connect to: ``port``, else the usual one for ``security``."""
        if self.port is not None:
            return self.port
        return {"starttls": 587, "tls": 465, "none": 25}[self.security]
