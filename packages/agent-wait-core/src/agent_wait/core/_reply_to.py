"""``reply_to``: an entry point's public description, published in every envelope.

A host publishes where answers go (``{"use": "sqs", "queue_url": "..."}``); a consumer builds
that entry point and sends there. Envelopes are read by everyone the announcers reach, so a
description that would carry a secret (a credential in a URL, a token, a signing secret, an
``*_env`` name) is refused, never published.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

from agent_wait.core._errors import ConfigError

_SECRET_NAME = re.compile(
    r"secret|token|passw|pwd|credential|api[_-]?key|private[_-]?key|auth|signature|session|"
    r"^key$|^sig$|^code$",
    re.IGNORECASE,
)
_SECRET_PREFIXES = ("whsec_",)
_SECRET_ASSIGNMENT = re.compile(r"\b(password|passwd|pwd|secret|token)\s*=", re.IGNORECASE)


def _mask_url(value: str) -> str:
    parts = urlsplit(value)
    host = parts.hostname or ""
    netloc = f"***@{host}" if parts.password else parts.netloc
    query = "..." if parts.query else ""
    return parts._replace(netloc=netloc, query=query).geturl()


def _check_value(path: str, value: object) -> None:
    if isinstance(value, Mapping):
        for key, item in cast("Mapping[object, object]", value).items():
            _check_key(f"{path}.{key}", str(key))
            _check_value(f"{path}.{key}", item)
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(cast("list[object]", value)):
            _check_value(f"{path}[{index}]", item)
        return
    if not isinstance(value, str):
        return
    if value.startswith(_SECRET_PREFIXES):
        raise ConfigError(f"{path}: the value is a signing secret; it is never published")
    parts = urlsplit(value)
    if not (parts.scheme and parts.netloc):
        if _SECRET_ASSIGNMENT.search(value):
            raise ConfigError(
                f"{path}: the value assigns a secret (a libpq-style 'password=...'); a "
                "reply_to is never allowed to publish one"
            )
        return
    if parts.password:
        raise ConfigError(
            f"{path}: {_mask_url(value)!r} carries a password in the URL; a reply_to is read "
            "by everyone the envelopes reach, so it is refused. Publish the URL without them "
            "and give consumers the credentials in their own configuration"
        )
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if _SECRET_NAME.search(name):
            raise ConfigError(
                f"{path}: {_mask_url(value)!r} has a query parameter {name!r} that looks like "
                "a secret (a token or a signature); a reply_to is never allowed to publish one"
            )


def is_credential(option: str) -> bool:
    """Whether an option holds a credential or names where one is kept (``*_env``)."""
    return option.endswith("_env") or _SECRET_NAME.search(option) is not None


def _check_key(path: str, key: str) -> None:
    if key.endswith("_env"):
        raise ConfigError(
            f"{path}: names an environment variable; a reply_to carries values, never where a "
            "secret is kept"
        )
    if _SECRET_NAME.search(key):
        raise ConfigError(
            f"{path}: an option named {key!r} holds a secret; a reply_to is never allowed to "
            "publish one"
        )


def check_reply_to(reply_to: Mapping[str, Any], field: str = "reply_to") -> dict[str, Any]:
    """Refuse a ``reply_to`` that would publish a secret; return it as a plain dict.

    Refused: a password in a URL (``user:password@``), a query parameter named like a token
    or signature, a value starting ``whsec_`` or assigning one (``password=...``), an option named like a secret (``secret``,
    ``token``, ``password``, ``api_key``...) and any ``*_env`` option.

    Raises:
        ConfigError: Naming the field; a URL is shown with the credentials and query masked.
    """
    if not isinstance(reply_to, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"{field}: expected an object, got {type(reply_to).__name__}")
    _check_value(field, reply_to)
    return dict(reply_to)
