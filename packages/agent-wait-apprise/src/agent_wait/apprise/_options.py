"""The options of the ``apprise`` announcer (importing it imports no Apprise)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from pydantic import field_validator

from agent_wait.core import AnnouncerOptions
from agent_wait.core.options import SensitiveUrl

# Apprise's own convention for several URLs in one string (its CLI and APPRISE_URLS).
_URL_SEPARATORS = re.compile(r"[\s,]+")


class AppriseOptions(AnnouncerOptions):
    """Options of the ``apprise`` announcer (see ``AppriseAnnounce``)."""

    urls: list[SensitiveUrl]
    """Apprise URLs (``msteams://...``, ``discord://...``, ``ntfy://...``, ``json://...``), or
    one string of them separated by spaces or commas, as ``urls_env`` reads them. They hold the
    services' tokens, so they are always shown redacted."""
    inbox_url: SensitiveUrl | None = None
    """The inbox web app's root (``https://inbox.example.com``): each notification links to the
    question's page there."""

    @field_validator("urls", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [url for url in _URL_SEPARATORS.split(value) if url]
        return value

    @field_validator("urls")
    @classmethod
    def _urls(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("give at least one Apprise URL")
        for index, url in enumerate(value):
            if "://" not in url:
                # The URL is never shown: its path and host often are the service's token.
                raise ValueError(
                    f"URL {index + 1} is not an Apprise URL (expected <service>://..., such as "
                    "json://host/path or ntfy://topic)"
                )
        return value

    @field_validator("inbox_url")
    @classmethod
    def _inbox(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("expected the inbox's http:// or https:// root URL")
        return value.rstrip("/")
