"""agent-wait's announcer conformance kit, run against EmailAnnounce and a real SMTP server."""

from __future__ import annotations

import pytest

from agent_wait.core import BaseAnnounce, announcer
from agent_wait.testing import AnnouncerContract
from tests.email.conftest import SECRET, Mailbox, free_port


def _email(port: int) -> BaseAnnounce:
    return announcer(
        "email",
        host="127.0.0.1",
        port=port,
        security="none",
        sender="agent@example.com",
        to=["approver@example.com"],
        links_url="https://approve.example.com",
        secret=SECRET,
        timeout=10,
    )


class TestEmailAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _server(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox

    def make_announcer(self) -> BaseAnnounce:
        # By name, as users configure it: this also proves the entry point is installed.
        return _email(self.mailbox.port)

    def make_failing_announcer(self) -> BaseAnnounce:
        return _email(free_port())
