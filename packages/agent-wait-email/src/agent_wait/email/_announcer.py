"""``EmailAnnounce``: one text + HTML message per question and recipient, with answer links."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

try:
    import aiosmtplib
    from jinja2 import Environment, FileSystemLoader, select_autoescape
except ImportError as error:  # a broken install: say which distribution brings them
    raise ImportError(
        f"agent-wait-email needs aiosmtplib and jinja2 ({error}); reinstall it: "
        "pip install agent-wait-email"
    ) from error

from agent_wait.core import (
    FOLLOW_UP_TYPES,
    BaseAnnounce,
    DeliveryFailed,
    LifecycleEvent,
    Receipt,
    WaitEnvelope,
)
from agent_wait.email._options import EmailOptions
from agent_wait.email._summary import call_of, shorten
from agent_wait.email._tokens import LinkSigner

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_TEMPLATES = Path(__file__).parent / "templates"


class EmailAnnounce(BaseAnnounce):
    """Email each question to its recipients, with a one-click link per allowed action.

    One message per recipient (multipart: plain text and HTML): the function, its arguments,
    the deadline, the default applied when nobody answers, and for each of the question's
    ``allowed_actions`` a link to ``<links_url>/answer?token=...``. The token is signed
    (HMAC-SHA256 with ``secret``), expires at the question's deadline (or after ``link_ttl``),
    and binds the question, the thread, the action and the recipient; :func:`links_app` serves
    the page it opens, which answers only when its button is pressed (a POST), once.

    Recipients are ``to`` plus, for each tag of the question, the ``routes`` entry
    ``"<tag>:<value>"``. A question with no recipient fails its delivery (not retryable), as
    does one refused by the SMTP server for any recipient; the error names how many recipients
    failed and the SMTP reply code, never a token or the password.

    Opted in to lifecycle events (``with_lifecycle_events``), it mails a follow-up too:
    ``wait.reminder`` and ``wait.last_warning`` send the question again, marked as a reminder
    or the last call, with fresh links; ``wait.escalated`` sends it to the routes of the
    escalation's tags (``escalated_to``) as well; ``wait.answered``, ``wait.expired`` and
    ``wait.answer_refused`` send a short note of who answered, the default applied, or why the
    agent refused the answer. A note whose event does not carry the question (``wait.answered``
    from a host) goes to ``to`` only.

    Args:
        host: The SMTP server's host name.
        sender: The ``From`` address.
        links_url: The public root URL of the links app.
        secret: The HMAC key of the links (16 characters or more).
        secret_env: Name of an environment variable holding ``secret``, read now.
        to: Recipients of every question.
        routes: Recipients by ``"<tag>:<value>"``.
        port: The SMTP port (default by ``security``: 587, 465 or 25).
        security: ``"starttls"`` (default), ``"tls"`` (SMTPS) or ``"none"`` (plain text, for
            a relay on loopback only).
        ca_file: A PEM file of certificate authorities to verify the server with.
        username: The SMTP login.
        password: The SMTP password.
        password_env: Name of an environment variable holding ``password``, read now.
        link_ttl: How long a link stays valid when the question has no earlier deadline.
        timeout: Bound on each SMTP exchange.

    Raises:
        ConfigError: An option is invalid or an ``_env`` variable is unset; the message names
            the option and its value (never the password or the secret).
    """

    name = "email"
    options_model = EmailOptions

    def __init__(
        self,
        host: str,
        *,
        sender: str,
        links_url: str,
        secret: str | None = None,
        secret_env: str | None = None,
        to: list[str] | None = None,
        routes: dict[str, list[str]] | None = None,
        port: int | None = None,
        security: str = "starttls",
        ca_file: str | None = None,
        username: str | None = None,
        password: str | None = None,
        password_env: str | None = None,
        link_ttl: float | timedelta | str = 7 * 24 * 3600.0,
        timeout: float | timedelta | str = 30.0,
    ) -> None:
        options = EmailOptions.parse(
            self.name,
            {
                "host": host,
                "sender": sender,
                "links_url": links_url,
                "secret": secret,
                "secret_env": secret_env,
                "to": to or [],
                "routes": routes or {},
                "port": port,
                "security": security,
                "ca_file": ca_file,
                "username": username,
                "password": password,
                "password_env": password_env,
                "link_ttl": link_ttl,
                "timeout": timeout,
            },
        )
        self._options = options
        self._signer = LinkSigner(options.secret.get_secret_value())
        self._templates = Environment(
            loader=FileSystemLoader(_TEMPLATES),
            autoescape=select_autoescape(enabled_extensions=("html",), default=False),
            auto_reload=False,
            keep_trailing_newline=True,
        )

    @property
    def destination(self) -> str | None:
        """The SMTP server's host and port."""
        return f"{self._options.host}:{self._options.smtp_port()}"

    def recipients(self, envelope: WaitEnvelope) -> list[str]:
        """``to`` and the ``routes`` of the question's tags, each address once, in order."""
        found = list(self._options.to)
        for key, value in envelope.tags.items():
            found.extend(self._options.routes.get(f"{key}:{value}", []))
        return list(dict.fromkeys(found))

    def message(
        self,
        envelope: WaitEnvelope,
        recipient: str,
        now: datetime | None = None,
        *,
        event: LifecycleEvent | None = None,
    ) -> EmailMessage:
        """The message to one recipient, with fresh signed links.

        With a follow-up ``event`` (``wait.reminder``, ``wait.escalated``,
        ``wait.last_warning``), the question again, marked as such.
        """
        now = now or datetime.now(UTC)
        expires = now + timedelta(seconds=self._options.link_ttl)
        if envelope.expires_at is not None:
            deadline = datetime.fromisoformat(envelope.expires_at.replace("Z", "+00:00"))
            expires = min(expires, deadline)
        function, arguments = call_of(envelope)
        title = (
            f"Approval needed: {function}" if function else "An agent is waiting for your answer"
        )
        prefix, notice = _follow_up_notice(event, envelope)
        links = [
            (
                action,
                f"{self._options.links_url}/answer?"
                + urlencode(
                    {
                        "token": self._signer.sign(
                            envelope.question_id, envelope.thread_id, action, recipient, expires
                        )
                    }
                ),
            )
            for action in envelope.allowed_actions
        ]
        context = {
            "title": prefix + title,
            "notice": notice,
            "arguments": arguments,
            "deadline": envelope.expires_at or "none",
            "default": None if envelope.default is None else shorten(envelope.default),
            "thread": envelope.thread_id,
            "links": links,
            "recipient": recipient,
        }
        message = self._headers(f"{prefix}{title} ({envelope.thread_id})", recipient)
        key = envelope.dedupe_key if event is None else event.dedupe_key
        message["X-Agent-Wait-Dedupe-Key"] = key
        message.set_content(self._templates.get_template("email.txt").render(context))
        message.add_alternative(
            self._templates.get_template("email.html").render(context), subtype="html"
        )
        return message

    def event_message(self, event: LifecycleEvent, recipient: str) -> EmailMessage:
        """The note to one recipient of what became of a question (no links)."""
        envelope = event.envelope
        function = None if envelope is None else call_of(envelope)[0]
        what = function or event.question_id
        by = f" by {event.by}" if event.by else ""
        if event.type == "wait.expired":
            title = f"Expired: {what}"
            text = f"Nobody answered in time; the default was applied{by}."
        elif event.type == "wait.answer_refused":
            title = f"Answer refused: {what}"
            text = f"The agent refused the answer{by}; the question is open again."
        else:
            title = f"Answered: {what}"
            text = f"Answered{by}; the agent took the answer ({event.outcome})."
        context = {
            "title": title,
            "text": text,
            "reason": event.reason,
            "default": None
            if envelope is None or envelope.default is None
            else shorten(envelope.default),
            "expired": event.type == "wait.expired",
            "question": event.question_id,
            "thread": event.thread_id,
            "at": event.at,
        }
        message = self._headers(f"{title} ({event.thread_id})", recipient)
        message["X-Agent-Wait-Dedupe-Key"] = event.dedupe_key
        message.set_content(self._templates.get_template("event.txt").render(context))
        message.add_alternative(
            self._templates.get_template("event.html").render(context), subtype="html"
        )
        return message

    def _headers(self, subject: str, recipient: str) -> EmailMessage:
        message = EmailMessage()
        message["Subject"] = subject
        message["From"] = self._options.sender
        message["To"] = recipient
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = make_msgid(domain=self._options.sender.rsplit("@", 1)[1])
        return message

    def event_recipients(self, event: LifecycleEvent) -> list[str]:
        """Who hears of an event: the question's recipients, and the escalation's routes.

        The routes of ``escalate_to`` join once the question escalated (``wait.escalated``, and
        every event after the escalation). Without the question in the event: ``to``.
        """
        envelope = event.envelope
        if envelope is None:
            return list(self._options.to)
        found = self.recipients(envelope)
        follow_up = envelope.follow_up
        if (
            follow_up is not None
            and follow_up.escalate_at is not None
            and follow_up.escalate_to is not None
            and follow_up.escalate_at <= event.at
        ):
            for key, value in follow_up.escalate_to.items():
                found.extend(self._options.routes.get(f"{key}:{value}", []))
        return list(dict.fromkeys(found))

    def deliver(self, envelope: WaitEnvelope) -> Receipt:
        """Send the question to every recipient; raise DeliveryFailed when any was refused."""
        return _run(self.adeliver(envelope))

    async def adeliver(self, envelope: WaitEnvelope) -> Receipt:
        """Async :meth:`deliver` on aiosmtplib, one SMTP session per message."""
        recipients = self.recipients(envelope)
        if not recipients:
            raise DeliveryFailed(
                "no recipient for this question: set 'to', or a 'routes' entry for one of its "
                f"tags ({', '.join(f'{k}:{v}' for k, v in envelope.tags.items()) or 'it has none'})",
                retryable=False,
            )
        await self._send_all([self.message(envelope, r) for r in recipients])
        logger.debug("email: question sent to %d recipients", len(recipients))
        return Receipt(attempts=1)

    def deliver_event(self, event: LifecycleEvent) -> Receipt:
        """Mail a follow-up or a note of the event; raise DeliveryFailed as :meth:`deliver`."""
        return _run(self.adeliver_event(event))

    async def adeliver_event(self, event: LifecycleEvent) -> Receipt:
        """Async :meth:`deliver_event` on aiosmtplib."""
        recipients = self.event_recipients(event)
        if not recipients:
            if event.envelope is not None:
                raise DeliveryFailed(f"no recipient for this {event.type}", retryable=False)
            # A host's wait.answered does not carry the question's tags: nobody to route to.
            return Receipt(notes=(f"{event.type} not mailed: no 'to' recipients",))
        envelope = event.envelope
        if event.type in FOLLOW_UP_TYPES and envelope is not None:
            messages = [self.message(envelope, r, event=event) for r in recipients]
        else:
            messages = [self.event_message(event, r) for r in recipients]
        await self._send_all(messages)
        logger.debug("email: %s sent to %d recipients", event.type, len(recipients))
        return Receipt(attempts=1)

    async def _send_all(self, messages: list[EmailMessage]) -> None:
        failures: list[str] = []
        retryable = False
        for message in messages:
            try:
                await self._send(message)
            except aiosmtplib.SMTPResponseException as error:
                failures.append(f"SMTP {error.code}")
                retryable = retryable or (error.code >= 400 and error.code < 500)
            except (aiosmtplib.SMTPException, OSError) as error:
                failures.append(type(error).__name__)
                retryable = True
        if failures:
            raise DeliveryFailed(
                f"{len(failures)} of {len(messages)} recipients not reached "
                f"({', '.join(sorted(set(failures)))})",
                retryable=retryable,
                attempts=1,
            )

    async def _send(self, message: EmailMessage) -> None:
        options = self._options
        await aiosmtplib.send(
            message,
            hostname=options.host,
            port=options.smtp_port(),
            username=options.username,
            password=None if options.password is None else options.password.get_secret_value(),
            use_tls=options.security == "tls",
            start_tls=options.security == "starttls",
            cert_bundle=options.ca_file,
            timeout=options.timeout,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self.destination}>"


def _follow_up_notice(
    event: LifecycleEvent | None, envelope: WaitEnvelope
) -> tuple[str, str | None]:
    """The subject prefix and the line above the question of a follow-up mail."""
    if event is None:
        return "", None
    if event.type == "wait.reminder":
        return "Reminder: ", "This question is still waiting for your answer."
    if event.type == "wait.escalated":
        return (
            "Escalated: ",
            "Nobody has answered this question yet, so it now goes to you as well.",
        )
    default = "" if envelope.default is None else f" ({shorten(envelope.default)})"
    return (
        "Last call: ",
        f"Unless someone answers by {envelope.expires_at}, the default{default} decides.",
    )


def _run(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine from sync code, in a helper thread when this thread has a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
