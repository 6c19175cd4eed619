"""Typed calls of the Slack Web API through slack-sdk's ``WebClient``.

slack-sdk's method signatures leave some types open; every call goes through :func:`call`,
which sends the arguments as JSON (as the ``chat.*`` and ``views.*`` methods take them) and
returns the response's data.
"""

from __future__ import annotations

import re
from typing import Any, cast

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

# Slack's errors a later attempt may get past; any other (channel_not_found, invalid_auth,
# not_in_channel, invalid_blocks...) needs a change of configuration first.
TRANSIENT = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)

# Slack's error codes are snake_case words; anything else did not come from Slack's API.
_CODE = re.compile(r"^[a-z][a-z0-9_]{0,79}$")


def call(client: WebClient, method: str, **arguments: Any) -> dict[str, Any]:
    """Call ``method`` (``chat.postMessage``) with ``arguments``; the response's data.

    Raises:
        SlackApiError: Slack answered ``ok: false`` (see :func:`error_code`).
        OSError: Slack could not be reached (urllib's ``URLError``, a timeout).
    """
    response: Any = client.api_call(method, json=arguments)  # pyright: ignore[reportUnknownMemberType]
    return cast("dict[str, Any]", response.data)


def error_code(error: SlackApiError) -> str:
    """Slack's error code (``channel_not_found``), else ``HTTP <status>``.

    A body that is not Slack's JSON (an outage's or a proxy's page) is never quoted: only its
    status is.
    """
    response: Any = error.response
    code = response.get("error")
    if isinstance(code, str) and _CODE.match(code):
        return code
    return f"HTTP {response.status_code}"


def status_of(error: SlackApiError) -> int:
    """The HTTP status of the failed call."""
    response: Any = error.response
    return int(response.status_code)


def failure(error: SlackApiError | OSError) -> tuple[str, bool]:
    """What a failed call says: Slack's code (else the error's type), and whether it is transient.

    Transient: Slack's own errors and rate limit, an HTTP 5xx, or Slack not reached at all.
    """
    if isinstance(error, SlackApiError):
        code = error_code(error)
        return code, code in TRANSIENT or status_of(error) >= 500
    return type(error).__name__, True
