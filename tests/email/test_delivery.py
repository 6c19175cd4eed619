"""Recipients, routing, STARTTLS with credentials from the environment, and reported failures."""

from __future__ import annotations

import re
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from agent_wait.core import ConfigError, Question, WaitPolicy, apublish, publish
from agent_wait.email import EmailAnnounce
from tests.email.conftest import SECRET, Mailbox, _Handler, free_port  # pyright: ignore[reportPrivateUsage]

QUESTION = Question(
    question_id="q-pay",
    question={"function": "pay_invoice", "args": {"invoice": "INV-9"}},
    policy=WaitPolicy(tags={"approver_group": "finance"}),
)
COMMON: dict[str, Any] = {
    "sender": "agent@example.com",
    "links_url": "https://approve.example.com",
    "secret": SECRET,
    "timeout": 10,
}


def plain(mailbox: Mailbox, **options: Any) -> EmailAnnounce:
    return EmailAnnounce("127.0.0.1", port=mailbox.port, security="none", **COMMON, **options)


def test_routes_by_tag_add_recipients_one_message_each(mailbox: Mailbox) -> None:
    announcer = plain(
        mailbox,
        to=["ops@example.com"],
        routes={
            "approver_group:finance": ["cfo@example.com", "ops@example.com"],
            "approver_group:legal": ["counsel@example.com"],
        },
    )

    assert publish([QUESTION], "t-route", announcer).ok
    assert sorted(m["To"] for m in mailbox.messages) == ["cfo@example.com", "ops@example.com"]
    assert sorted(rcpt for to in mailbox.envelopes_to for rcpt in to) == [
        "cfo@example.com",
        "ops@example.com",
    ]


async def test_no_recipient_is_a_reported_failure(mailbox: Mailbox) -> None:
    announcer = plain(mailbox, routes={"approver_group:legal": ["counsel@example.com"]})

    report = await apublish([QUESTION], "t-none", announcer)

    (failure,) = report.failures
    assert "no recipient for this question" in str(failure.error)
    assert "approver_group:finance" in str(failure.error)
    assert mailbox.messages == []


def test_a_refused_recipient_is_reported_and_the_others_still_sent(mailbox: Mailbox) -> None:
    mailbox.refuse.add("gone@example.com")
    announcer = plain(mailbox, to=["gone@example.com", "here@example.com"])

    report = publish([QUESTION], "t-refused", announcer)

    (failure,) = report.failures
    assert "1 of 2 recipients not reached" in str(failure.error)
    assert "token" not in str(failure.error)
    assert [m["To"] for m in mailbox.messages] == ["here@example.com"]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"to": ["not-an-address"]}, "option 'to'"),
        ({"to": ["a" * 60 + "@example.com"]}, "longer than 64 characters"),
        ({"routes": {"finance": ["cfo@example.com"]}}, "expected '<tag>:<value>'"),
        ({"secret": "short"}, "shorter than 16 characters"),
        ({"links_url": "approve.example.com"}, "option 'links_url'"),
        ({"security": "ssl"}, "option 'security'"),
        ({"username": "agent"}, "give both 'username' and 'password'"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match="announcer 'email'") as refused:
        EmailAnnounce("127.0.0.1", **{**COMMON, **options})
    assert problem in str(refused.value)
    assert "short'" not in str(refused.value)  # a secret is never shown


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made by the openssl command."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_mailbox(
    certificate: tuple[Path, Path],
) -> Iterator[tuple[Mailbox, list[tuple[bytes, bytes]]]]:
    """An SMTP server that requires STARTTLS and a login (agent / the password below)."""
    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    logins: list[tuple[bytes, bytes]] = []

    def authenticate(
        server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        assert isinstance(data, LoginPassword)
        logins.append((data.login, data.password))
        return AuthResult(
            success=data == LoginPassword(b"agent", b"smtp-password-9"), handled=False
        )

    box = Mailbox(port=free_port())
    controller = Controller(
        _Handler(box),
        hostname="127.0.0.1",
        port=box.port,
        tls_context=context,
        require_starttls=True,
        authenticator=authenticate,
        auth_require_tls=True,
    )
    controller.start()
    yield box, logins
    controller.stop()


def test_starttls_with_the_password_from_the_environment(
    tls_mailbox: tuple[Mailbox, list[tuple[bytes, bytes]]],
    certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    box, logins = tls_mailbox
    monkeypatch.setenv("SMTP_TEST_PASSWORD", "smtp-password-9")
    announcer = EmailAnnounce(
        "127.0.0.1",
        port=box.port,
        security="starttls",
        ca_file=str(certificate[0]),
        username="agent",
        password_env="SMTP_TEST_PASSWORD",
        to=["cfo@example.com"],
        **COMMON,
    )

    with caplog.at_level("DEBUG"):
        report = publish([QUESTION], "t-tls", announcer)

    assert report.ok, report.failures
    assert logins == [(b"agent", b"smtp-password-9")]
    assert [m["To"] for m in box.messages] == ["cfo@example.com"]
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("agent_wait"))
    assert "smtp-password-9" not in ours
    assert "token=" not in ours
    assert "smtp-password-9" not in repr(announcer)


def test_a_wrong_password_is_a_reported_failure(
    tls_mailbox: tuple[Mailbox, list[tuple[bytes, bytes]]], certificate: tuple[Path, Path]
) -> None:
    box, _ = tls_mailbox
    announcer = EmailAnnounce(
        "127.0.0.1",
        port=box.port,
        ca_file=str(certificate[0]),
        username="agent",
        password="wrong-password",
        to=["cfo@example.com"],
        **COMMON,
    )

    (failure,) = publish([QUESTION], "t-bad-login", announcer).failures
    assert "SMTP 535" in str(failure.error)
    assert "wrong-password" not in str(failure.error)
    assert box.messages == []


@pytest.fixture
def smtps_mailbox(
    certificate: tuple[Path, Path],
) -> Iterator[tuple[Mailbox, list[tuple[bytes, bytes]]]]:
    """An SMTPS server (TLS from the first byte) that requires a login."""
    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    logins: list[tuple[bytes, bytes]] = []

    def authenticate(
        server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        assert isinstance(data, LoginPassword)
        logins.append((data.login, data.password))
        return AuthResult(
            success=data == LoginPassword(b"agent", b"smtps-password-7"), handled=False
        )

    box = Mailbox(port=free_port())
    controller = Controller(
        _Handler(box),
        hostname="127.0.0.1",
        port=box.port,
        ssl_context=context,
        authenticator=authenticate,
        # aiosmtpd counts only STARTTLS as TLS for AUTH; this connection is TLS from the start.
        auth_require_tls=False,
    )
    controller.start()
    yield box, logins
    controller.stop()


def test_smtps_with_the_password_from_the_environment_logs_no_secret(
    smtps_mailbox: tuple[Mailbox, list[tuple[bytes, bytes]]],
    certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    box, logins = smtps_mailbox
    monkeypatch.setenv("SMTPS_TEST_PASSWORD", "smtps-password-7")
    monkeypatch.setenv("EMAIL_TEST_SECRET", SECRET)
    options = {k: v for k, v in COMMON.items() if k != "secret"}
    announcer = EmailAnnounce(
        "127.0.0.1",
        port=box.port,
        security="tls",
        ca_file=str(certificate[0]),
        username="agent",
        password_env="SMTPS_TEST_PASSWORD",
        secret_env="EMAIL_TEST_SECRET",
        to=["cfo@example.com"],
        **options,
    )

    with caplog.at_level("DEBUG"):
        report = publish([QUESTION], "t-smtps", announcer)

    assert report.ok, report.failures
    assert logins == [(b"agent", b"smtps-password-7")]
    [message] = box.messages
    token = re.search(r"token=([A-Za-z0-9_.~-]+)", message.get_body(("plain",)).get_content())  # type: ignore[union-attr]
    assert token is not None
    # Every record of this process but the test server's own (aiosmtpd's mail.log).
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("mail"))
    assert "smtps-password-7" not in logged
    assert token.group(1) not in logged
    assert SECRET not in logged
    assert "smtps-password-7" not in repr(announcer)


def test_smtps_refuses_a_server_it_cannot_verify(
    smtps_mailbox: tuple[Mailbox, list[tuple[bytes, bytes]]],
) -> None:
    box, logins = smtps_mailbox
    announcer = EmailAnnounce(
        "127.0.0.1",
        port=box.port,
        security="tls",  # the system's authorities: the self-signed certificate is refused
        username="agent",
        password="smtps-password-7",
        to=["cfo@example.com"],
        **COMMON,
    )

    (failure,) = publish([QUESTION], "t-smtps-unverified", announcer).failures
    assert "1 of 1 recipients not reached" in str(failure.error)
    assert logins == []  # the password never left
    assert box.messages == []
