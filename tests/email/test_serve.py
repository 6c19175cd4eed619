"""``agent-wait email serve`` in its own process: a mailed link confirms on GET, answers on POST."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_wait.core import Question, SqliteAnnounce, SqliteQuestionStore, publish
from agent_wait.email import EmailAnnounce
from tests.email.conftest import SECRET, Mailbox, free_port

AGENT_WAIT = shutil.which("agent-wait") or "agent-wait"


@pytest.fixture
def links_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [AGENT_WAIT, "email", "serve", "--port", str(port), "--secret-env", "LINKS_TEST_SECRET"],
        env={**os.environ, "LINKS_TEST_SECRET": SECRET},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "agent-wait email serve did not start"
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    yield url, process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)


def test_a_mailed_link_answers_through_the_served_app(
    tmp_path: Path, mailbox: Mailbox, links_server: tuple[str, subprocess.Popen[str]]
) -> None:
    url, process = links_server
    inbox = tmp_path / "inbox.sqlite3"
    mail = EmailAnnounce(
        "127.0.0.1",
        port=mailbox.port,
        security="none",
        sender="agent@example.com",
        to=["bob@example.com"],
        links_url=url,
        secret=SECRET,
    )
    question = Question(
        question_id="q-deploy", question={"function": "deploy", "args": {"env": "prod"}}
    )
    assert publish([question], "t-deploy", [SqliteAnnounce(inbox), mail], strict=True).ok
    (message,) = mailbox.to("bob@example.com")
    text = message.get_body(("plain",))
    assert text is not None
    link = re.findall(r"^approve: (\S+)$", text.get_content().replace("\r\n", "\n"), re.M)[0]

    with httpx.Client(timeout=30) as client:
        page = client.get(link)
        assert page.status_code == 200
        token = re.findall(r'name="token" value="([^"]+)"', page.text)[0]
        with SqliteQuestionStore(inbox) as store:
            assert store.find("q-deploy", "t-deploy")[0].status == "open"
        answered = client.post(f"{url}/answer", data={"token": token})
        assert answered.status_code == 200, answered.text
        assert client.post(f"{url}/answer", data={"token": token}).status_code == 409

    with SqliteQuestionStore(inbox) as store:
        (closed,) = store.find("q-deploy", "t-deploy")
    assert (closed.status, closed.answered_by) == ("answered", "bob@example.com")
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert token not in stderr
