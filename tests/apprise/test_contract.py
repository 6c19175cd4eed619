"""agent-wait's announcer conformance kit, run against AppriseAnnounce and a real JSON webhook."""

from __future__ import annotations

import socket

import pytest

from agent_wait.core import BaseAnnounce, announcer
from agent_wait.testing import AnnouncerContract
from tests.apprise.conftest import Notifications


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TestAppriseAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _server(self, notifications: Notifications) -> None:
        self.notifications = notifications

    def make_announcer(self) -> BaseAnnounce:
        # By name, as users configure it: this also proves the entry point is installed.
        return announcer("apprise", urls=[self.notifications.url("/contract")])

    def make_failing_announcer(self) -> BaseAnnounce:
        return announcer("apprise", urls=[f"json://127.0.0.1:{_closed_port()}/nobody"])
