"""The options of the ``slack`` announcer (importing it imports no slack-sdk)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from agent_wait.core import AnnouncerOptions
from agent_wait.core.options import Duration, Text

# A channel or user ID (C..., G..., D..., U..., W...) or a channel name (#approvals).
_DESTINATION = re.compile(r"^(#[a-z0-9][a-z0-9._-]{0,79}|[CGDUW][A-Z0-9]{2,30})$")


# Whom a follow-up mentions: a user (U..., W...) or a user group (S...).
_MENTION = re.compile(r"^[UWS][A-Z0-9]{2,30}$")


def _destination_problem(value: str) -> str | None:
    if not _DESTINATION.match(value):
        return (
            f"{value!r} is not a Slack channel or user: expected a channel ID (C0123ABCD), a "
            "user ID (U0123ABCD) or a channel name (#approvals)"
        )
    return None


def _check_tag(tag: str) -> None:
    if tag.count(":") < 1 or tag.startswith(":"):
        raise ValueError(f"{tag!r}: expected '<tag>:<value>', such as 'approver_group:finance'")


class SlackOptions(AnnouncerOptions):
    """Options of the ``slack`` announcer (see ``SlackAnnounce``)."""

    token: SecretStr
    """The app's bot token (``xoxb-...``); give it as ``token_env``."""
    channel: Text | None = None
    """Where every question goes: a channel ID (``C0123ABCD``), a channel name
    (``#approvals``) or a user ID (``U0123ABCD``, a direct message from the app)."""
    routes: dict[str, list[str]] = Field(default_factory=dict[str, list[str]])
    """Channels or users by tag: ``{"approver_group:finance": ["#finance-approvals"]}`` posts
    questions tagged ``approver_group=finance`` there too. A single destination may be given
    as a string."""
    mentions: dict[str, list[str]] = Field(default_factory=dict[str, list[str]])
    """Whom the reminders, escalations and last warnings mention in the question's thread, by
    tag: ``{"approver_group:finance": ["S0FINANCE"], "approver_group:finance-leads":
    ["U0LEAD"]}``. A user ID (``U0123ABCD``) or a user group ID (``S0123ABCD``, mentioned as
    the group); a single one may be given as a string. A reminder and the last warning mention
    those of the question's tags (and, once escalated, of the escalation's); an escalation
    those of its ``escalate.to`` tags."""
    signing_secret: SecretStr | None = None
    """The app's signing secret, which the Interactivity Request URL checks every request
    with (``agent-wait slack serve``, ``agent-wait inbox serve``); give it as
    ``signing_secret_env``. Not needed to post."""
    base_url: Text = "https://slack.com/api/"
    """The Slack Web API's root: another one for GovSlack (``https://slack-gov.com/api/``)."""
    messages_path: Text | None = None
    """The sqlite file recording where each question was posted, so its message is updated in
    place (default: ``slack-messages.sqlite3`` in ``$AGENT_WAIT_HOME`` or agent-wait's user
    data directory). The process that posts and those that update share it."""
    timeout: Duration = 30.0
    """Bound on each Web API call, in seconds or as an ISO 8601 duration."""

    @field_validator("token")
    @classmethod
    def _token(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().startswith(("xoxb-", "xoxp-")):
            raise ValueError("expected a bot token starting with xoxb- (not shown)")
        return value

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str | None) -> str | None:
        if value is not None and (problem := _destination_problem(value)):
            raise ValueError(problem)
        return value

    @field_validator("routes", "mentions", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                tag: [found] if isinstance(found, str) else found
                for tag, found in value.items()  # pyright: ignore[reportUnknownVariableType]
            }
        return value

    @field_validator("routes")
    @classmethod
    def _routes(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for tag, destinations in value.items():
            _check_tag(tag)
            for destination in destinations:
                if problem := _destination_problem(destination):
                    raise ValueError(f"{tag!r}: {problem}")
        return value

    @field_validator("mentions")
    @classmethod
    def _mentions(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for tag, targets in value.items():
            _check_tag(tag)
            for target in targets:
                if not _MENTION.match(target):
                    raise ValueError(
                        f"{tag!r}: {target!r} is not a Slack user or user group ID: expected "
                        "U0123ABCD (a user) or S0123ABCD (a user group)"
                    )
        return value

    @field_validator("signing_secret")
    @classmethod
    def _secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("the signing secret is empty")
        return value

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("expected the Web API's http:// or https:// root URL")
        return value.rstrip("/") + "/"

    @model_validator(mode="after")
    def _somewhere(self) -> SlackOptions:
        if self.channel is None and not self.routes:
            raise ValueError("give 'channel', 'routes', or both: where questions are posted")
        return self
