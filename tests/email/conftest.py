"""A real SMTP server (aiosmtpd) on 127.0.0.1 that keeps every message it accepts."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller

SECRET = "a-links-secret-of-some-length"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Mailbox:
    """What the server received; recipients in ``refuse`` are refused at RCPT TO with 550."""

    port: int
    messages: list[EmailMessage] = field(default_factory=list[EmailMessage])
    envelopes_to: list[list[str]] = field(default_factory=list[list[str]])
    refuse: set[str] = field(default_factory=set[str])
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.arrived = threading.Condition(self.lock)

    def to(self, address: str) -> list[EmailMessage]:
        with self.lock:
            return [m for m in self.messages if m["To"] == address]

    def wait_for(self, count: int, timeout: float = 120.0) -> list[EmailMessage]:
        """The messages once at least ``count`` have arrived (another process sends them)."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.messages) >= count, timeout), (
                f"{len(self.messages)} of {count} messages arrived within {timeout} s"
            )
            return list(self.messages)


class _Handler:
    def __init__(self, box: Mailbox) -> None:
        self.box = box

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: Any
    ) -> str:
        if address in self.box.refuse:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.box.arrived:
            self.box.messages.append(message)
            self.box.envelopes_to.append(list(envelope.rcpt_tos))
            self.box.arrived.notify_all()
        return "250 Message accepted"


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox(port=free_port())
    controller = Controller(_Handler(box), hostname="127.0.0.1", port=box.port)
    controller.start()
    yield box
    controller.stop()
