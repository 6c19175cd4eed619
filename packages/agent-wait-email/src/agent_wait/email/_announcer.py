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

from agent_wait.core import BaseAnnounce, DeliveryFailed, Receipt, WaitEnvelope
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
        self, envelope: WaitEnvelope, recipient: str, now: datetime | None = None
    ) -> EmailMessage:
        """The message to one recipient, with fresh signed links."""
        now = now or datetime.now(UTC)
        expires = now + timedelta(seconds=self._options.link_ttl)
        if envelope.expires_at is not None:
            deadline = datetime.fromisoformat(envelope.expires_at.replace("Z", "+00:00"))
            expires = min(expires, deadline)
        function, arguments = call_of(envelope)
        title = (
            f"Approval needed: {function}" if function else "An agent is waiting for your answer"
        )
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
            "title": title,
            "arguments": arguments,
            "deadline": envelope.expires_at or "none",
            "default": None if envelope.default is None else shorten(envelope.default),
            "thread": envelope.thread_id,
            "links": links,
            "recipient": recipient,
        }
        message = EmailMessage()
        message["Subject"] = f"{title} ({envelope.thread_id})"
        message["From"] = self._options.sender
        message["To"] = recipient
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = make_msgid(domain=self._options.sender.rsplit("@", 1)[1])
        message["X-Agent-Wait-Dedupe-Key"] = envelope.dedupe_key
        message.set_content(self._templates.get_template("email.txt").render(context))
        message.add_alternative(
            self._templates.get_template("email.html").render(context), subtype="html"
        )
        return message

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
        failures: list[str] = []
        retryable = False
        for recipient in recipients:
            try:
                await self._send(self.message(envelope, recipient))
            except aiosmtplib.SMTPResponseException as error:
                failures.append(f"SMTP {error.code}")
                retryable = retryable or (error.code >= 400 and error.code < 500)
            except (aiosmtplib.SMTPException, OSError) as error:
                failures.append(type(error).__name__)
                retryable = True
        if failures:
            raise DeliveryFailed(
                f"{len(failures)} of {len(recipients)} recipients not reached "
                f"({', '.join(sorted(set(failures)))})",
                retryable=retryable,
                attempts=1,
            )
        logger.debug("email: question sent to %d recipients", len(recipients))
        return Receipt(attempts=1)

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


def _run(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine from sync code, in a helper thread when this thread has a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
