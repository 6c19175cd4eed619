"""``AppriseAnnounce``: each question as a notification to every service Apprise reaches."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast
from urllib.parse import quote, urlencode

try:
    import apprise
except ImportError as error:  # a broken install: say which distribution brings Apprise
    raise ImportError(
        f"agent-wait-apprise needs apprise ({error}); reinstall it: pip install agent-wait-apprise"
    ) from error

from agent_wait.apprise._options import AppriseOptions
from agent_wait.core import (
    FOLLOW_UP_TYPES,
    BaseAnnounce,
    ConfigError,
    DeliveryFailed,
    LifecycleEvent,
    WaitEnvelope,
)

# A notification is read on a phone: long argument values are cut, and only the first few shown.
_MAX_ARGUMENTS = 10
_MAX_VALUE = 120


class AppriseAnnounce(BaseAnnounce):
    """Notify every Apprise URL of each question: who asks, with which arguments, until when.

    The title names the function (``Approval needed: issue_refund``); the body lists the key
    arguments, the allowed actions, the deadline, the default applied when nobody answers, the
    thread, and, with ``inbox_url``, a link to the question's page in the inbox web app, where
    it is answered. Notify-only: nothing comes back through Apprise. Opted in to lifecycle
    events (``with_lifecycle_events``), it also says when a question was answered or expired,
    and repeats it, with the link, for a reminder, an escalation or the last call.

    Each URL is notified on its own; a delivery fails when any of them did not take the
    notification, and the error says which (by position and service, never the URL, which
    holds the service's token). The async path uses Apprise's ``async_notify``.

    Args:
        urls: Apprise URLs, or one string of them separated by spaces or commas.
        urls_env: Name of an environment variable holding the URLs, read now (instead of
            ``urls``, so config files need not contain the services' tokens).
        inbox_url: The inbox web app's root URL, for the link to each question.

    Raises:
        ConfigError: An option is invalid or ``urls_env`` is unset; the message names the
            option (never a URL).
    """

    name = "apprise"
    options_model = AppriseOptions

    def __init__(
        self,
        urls: list[str] | str | None = None,
        *,
        urls_env: str | None = None,
        inbox_url: str | None = None,
    ) -> None:
        options = AppriseOptions.parse(
            self.name, {"urls": urls, "urls_env": urls_env, "inbox_url": inbox_url}
        )
        self.inbox_url = options.inbox_url
        self._services: list[tuple[str, apprise.Apprise]] = []
        for index, url in enumerate(options.urls):
            service = apprise.Apprise()
            label = f"URL {index + 1} ({url.split('://', 1)[0]}://)"
            # Apprise's signatures leave some container types unparameterised.
            if not service.add(url):  # pyright: ignore[reportUnknownMemberType]
                raise ConfigError(
                    f"announcer 'apprise': option 'urls': {label} is not a URL Apprise "
                    "supports (see the Apprise wiki for its services' URL forms)"
                )
            self._services.append((label, service))

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Notify every URL of one question; raise DeliveryFailed naming those that failed."""
        title, body = self.question_text(envelope)
        self._notify(title, body, apprise.NotifyType.INFO)

    async def adeliver(self, envelope: WaitEnvelope) -> None:
        """Async :meth:`deliver` through Apprise's ``async_notify``, every URL at once."""
        title, body = self.question_text(envelope)
        await self._anotify(title, body, apprise.NotifyType.INFO)

    def deliver_event(self, event: LifecycleEvent) -> None:
        """Notify of a follow-up or of what became of a question; raise as ``deliver``."""
        title, body, kind = self.event_text(event)
        self._notify(title, body, kind)

    async def adeliver_event(self, event: LifecycleEvent) -> None:
        """Async :meth:`deliver_event` through Apprise's ``async_notify``."""
        title, body, kind = self.event_text(event)
        await self._anotify(title, body, kind)

    def event_text(self, event: LifecycleEvent) -> tuple[str, str, apprise.NotifyType]:
        """The title, body and Apprise type of the notification of one lifecycle event.

        A follow-up (``wait.reminder``, ``wait.escalated``, ``wait.last_warning``) repeats the
        question, with the link to it in the inbox, under a title saying which.
        """
        envelope = event.envelope
        if event.type not in FOLLOW_UP_TYPES or envelope is None:
            return _event_text(event)
        title, body = self.question_text(envelope)
        if event.type == "wait.reminder":
            return f"Reminder: {title}", body, apprise.NotifyType.INFO
        if event.type == "wait.escalated":
            to = ", ".join(f"{k}={v}" for k, v in (event.escalated_to or {}).items())
            return f"Escalated: {title}", f"Escalated to {to}.\n{body}", apprise.NotifyType.WARNING
        return (
            f"Last call: {title}",
            f"Unless someone answers by {envelope.expires_at}, the default decides.\n{body}",
            apprise.NotifyType.WARNING,
        )

    def _notify(self, title: str, body: str, kind: apprise.NotifyType) -> None:
        self._settle(
            [
                service.notify(body=body, title=title, notify_type=kind)  # pyright: ignore[reportUnknownMemberType]
                for _, service in self._services
            ]
        )

    async def _anotify(self, title: str, body: str, kind: apprise.NotifyType) -> None:
        results = await asyncio.gather(
            *(
                service.async_notify(body=body, title=title, notify_type=kind)
                for _, service in self._services
            )
        )
        self._settle(list(results))

    def _settle(self, results: list[Any]) -> None:
        failed = [label for (label, _), ok in zip(self._services, results, strict=True) if not ok]
        if failed:
            raise DeliveryFailed(
                f"Apprise could not notify {', '.join(failed)} of {len(self._services)}",
                retryable=True,
                attempts=1,
            )

    def question_text(self, envelope: WaitEnvelope) -> tuple[str, str]:
        """The title and the plain-text body of the notification of one question."""
        question: Any = envelope.question
        function = envelope.source.function if envelope.source is not None else None
        arguments: dict[str, Any] | None = None
        if isinstance(question, dict):
            asked = cast("dict[str, Any]", question)
            if function is None and isinstance(asked.get("function"), str):
                function = cast("str", asked["function"])
            if isinstance(asked.get("args"), dict):
                arguments = cast("dict[str, Any]", asked["args"])
        title = f"Approval needed: {function}" if function else "An agent is waiting for an answer"
        lines: list[str] = []
        if arguments is not None:
            for key, value in list(arguments.items())[:_MAX_ARGUMENTS]:
                lines.append(f"{key}: {_short(value)}")
            if len(arguments) > _MAX_ARGUMENTS:
                lines.append(f"... and {len(arguments) - _MAX_ARGUMENTS} more arguments")
        elif function is None:
            lines.append(f"Question: {_short(question)}")
        if envelope.allowed_actions:
            lines.append(f"Actions: {', '.join(envelope.allowed_actions)}")
        deadline = envelope.expires_at
        lines.append(f"Deadline: {deadline if deadline is not None else 'none'}")
        if envelope.default is not None:
            lines.append(f"If nobody answers: {_short(envelope.default)}")
        lines.append(f"Thread: {envelope.thread_id}")
        if self.inbox_url is not None:
            page = quote(envelope.question_id, safe="")
            lines.append(
                f"Answer: {self.inbox_url}/questions/{page}?"
                + urlencode({"thread": envelope.thread_id})
            )
        return title, "\n".join(lines)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {len(self._services)} URLs>"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + "..."


def _event_text(event: LifecycleEvent) -> tuple[str, str, apprise.NotifyType]:
    by = f" by {event.by}" if event.by else ""
    if event.type == "wait.expired":
        title = f"Expired: {event.question_id}"
        body = f"Nobody answered in time{by}; outcome: {event.outcome}."
        kind = apprise.NotifyType.WARNING
    elif event.type == "wait.answer_refused":
        title = f"Answer refused: {event.question_id}"
        body = f"The agent refused the answer{by}; the question is open again."
        kind = apprise.NotifyType.FAILURE
    else:
        title = f"Answered: {event.question_id}"
        body = f"Answered{by}; outcome: {event.outcome}."
        kind = apprise.NotifyType.SUCCESS
    return title, f"{body}\nThread: {event.thread_id}\nAt: {event.at}", kind
