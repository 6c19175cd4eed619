"""Construction checks, configuration by name (Python, TOML, environment) and the plugin entry."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from agent_wait.core import ConfigError, announcer, announcers_from_config, publish
from agent_wait.webhook import WebhookAnnounce, verify
from tests.config_check import assert_connect_tells_right_from_wrong, config_check

from .conftest import SECRET, Receiver, make_question


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"url": "ftp://example.com/hook"},
            "announcer 'webhook': option 'url': expected an http:// or https:// URL "
            "(got 'ftp://example.com/hook')",
        ),
        (
            {"url": "example.com/hook"},
            "option 'url': expected an http:// or https:// URL (got 'example.com/hook')",
        ),
        ({"url": "http:///path-only"}, "option 'url': the URL has no host"),
        ({"url": "http://host:99999/"}, "option 'url': not a valid URL"),
        ({"url": "https://u:s3cret@host:99999/"}, "(got 'https://u:***@host:99999/')"),
        ({"url": 42}, "option 'url': Input should be a valid string (got 42)"),
        ({"timeout": 0}, "option 'timeout': duration must be positive (got 0)"),
        ({"timeout": -1}, "option 'timeout': duration must be positive (got -1)"),
        ({"timeout": "soon"}, "option 'timeout': 'soon' is not an ISO 8601 duration"),
        ({"timeout": True}, "option 'timeout': expected an ISO 8601 duration or seconds"),
        ({"total_timeout": float("nan")}, "option 'total_timeout': duration must be finite"),
        ({"retries": -1}, "option 'retries': Input should be greater than or equal to 0"),
        ({"retries": 2.5}, "option 'retries': Input should be a valid integer"),
        ({"retries": "many"}, "option 'retries': Input should be a valid integer"),
        ({"max_concurrency": 0}, "option 'max_concurrency': Input should be greater than 0"),
        ({"backoff": -0.5}, "option 'backoff': duration must be positive (got -0.5)"),
        (
            {"headers": {"X-Agent-Wait-Dedupe-Key": "x"}},
            "option 'headers': 'X-Agent-Wait-Dedupe-Key' is set by",
        ),
        ({"headers": {"content-type": "text/plain"}}, "option 'headers': 'content-type' is set by"),
        (
            {"headers": {"Webhook-Signature": "v1,x"}},
            "option 'headers': 'Webhook-Signature' is set",
        ),
        ({"headers": ["Authorization"]}, "option 'headers': Input should be a valid dictionary"),
        (
            {"headers": {"Authorization": 123}},
            "option 'headers'['Authorization']: Input should be a valid string (got '***')",
        ),
        ({"secret": ""}, "option 'secret': the secret is empty (got '***')"),
        (
            {"secret": "whsec_%%%"},
            "option 'secret': a secret starting with 'whsec_' must be base64",
        ),
        ({"secret": "a", "secret_env": "HOOK_SECRET"}, "give 'secret' or 'secret_env', not both"),
    ],
)
def test_invalid_options_name_the_field_and_value(options: dict[str, object], message: str) -> None:
    options = {"url": "https://example.com/hook", **options}
    with pytest.raises(ConfigError) as caught:
        WebhookAnnounce(**options)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert "s3cret" not in str(caught.value)
    assert "%%%" not in str(caught.value)


def test_durations_accept_seconds_timedelta_and_iso() -> None:
    hook = WebhookAnnounce(
        "https://example.com/hook", timeout="PT2.5S", total_timeout=timedelta(minutes=1), backoff=0
    )
    assert (hook.timeout, hook.total_timeout, hook.backoff) == (2.5, 60.0, 0.0)
    assert hook.retries == 3
    assert not hook.signed


def test_secret_env_is_read_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    hook = WebhookAnnounce("https://example.com/hook", secret_env="HOOK_SECRET")
    monkeypatch.delenv("HOOK_SECRET")
    assert hook.signed
    assert SECRET not in repr(hook)
    assert SECRET[6:] not in str(vars(hook))


def test_secret_env_unset_or_empty_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOOK_SECRET", raising=False)
    with pytest.raises(
        ConfigError, match="option 'secret_env' names environment variable 'HOOK_SECRET', which"
    ):
        WebhookAnnounce("https://example.com/hook", secret_env="HOOK_SECRET")
    monkeypatch.setenv("HOOK_SECRET", "")
    with pytest.raises(
        ConfigError,
        match=r"option 'secret' \(from environment variable 'HOOK_SECRET'\): the secret is empty",
    ):
        WebhookAnnounce("https://example.com/hook", secret_env="HOOK_SECRET")
    monkeypatch.setenv("HOOK_SECRET", "whsec_!!!")
    with pytest.raises(
        ConfigError, match=r"\(from environment variable 'HOOK_SECRET'\): a secret starting with"
    ) as bad:
        WebhookAnnounce("https://example.com/hook", secret_env="HOOK_SECRET")
    assert "!!!" not in str(bad.value)


def test_repr_shows_origin_only() -> None:
    hook = WebhookAnnounce(
        "https://user:pw@hooks.example.com:8443/services/T0K3N?sig=abc", secret="s"
    )
    assert repr(hook) == "<WebhookAnnounce 'webhook' https://hooks.example.com:8443 signed>"
    assert repr(WebhookAnnounce("http://[::1]/x")) == "<WebhookAnnounce 'webhook' http://[::1]>"


def test_announcers_from_config_with_secret_env(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    url = receiver.script("/configured")
    [hook] = announcers_from_config([{"use": "webhook", "url": url, "secret_env": "HOOK_SECRET"}])
    assert isinstance(hook, WebhookAnnounce)
    assert hook.name == "webhook"
    with hook:
        report = publish([make_question()], "order-4471", hook)
    assert report.ok
    [request] = receiver.requests("/configured")
    assert verify(request.body, request.headers, SECRET) == report.envelopes[0].to_dict()


def test_config_errors_name_the_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOOK_SECRET", raising=False)
    with pytest.raises(ConfigError, match=r"announce\[0\]: .*'HOOK_SECRET', which is not set"):
        announcers_from_config(
            [{"use": "webhook", "url": "https://x.example", "secret_env": "HOOK_SECRET"}]
        )
    with pytest.raises(ConfigError, match="unknown option 'retry'; did you mean 'retries'"):
        announcer("webhook", url="https://x.example", retry=2)


def test_toml_file_configures_the_default_announcer(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The root conftest chdirs into tmp_path: agent-wait.toml there is the configuration.
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    url = receiver.script("/from-toml")
    toml = f"""
[[announce]]
use = "webhook"
url = "{url}"
secret_env = "HOOK_SECRET"
timeout = "PT5S"
retries = 1
headers = {{ X-Tenant = "acme" }}
"""
    (tmp_path / "agent-wait.toml").write_text(toml, encoding="utf-8")
    report = publish([make_question()], "order-4471")
    assert report.ok, report.failures
    assert [d.announcer for d in report.deliveries] == ["webhook"]
    [request] = receiver.requests("/from-toml")
    assert request.headers["x-tenant"] == "acme"
    assert verify(request.body, request.headers, SECRET) == report.envelopes[0].to_dict()


def test_environment_configures_the_default_announcer(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    url = receiver.script("/from-env")
    entries = [{"use": "webhook", "url": url, "secret_env": "HOOK_SECRET", "total_timeout": 5}]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(entries))
    report = publish([make_question()], "order-4471")
    assert report.ok, report.failures
    [request] = receiver.requests("/from-env")
    assert verify(request.body, request.headers, SECRET)


def test_plugin_registers_webhook_without_importing_httpx() -> None:
    code = (
        "import sys\n"
        "from agent_wait.core._plugins import PluginRegistry\n"
        "reg = PluginRegistry()\n"
        "reg.load(['webhook'])\n"
        "assert reg.announcers['webhook'].target == 'agent_wait.webhook._announcer:WebhookAnnounce'\n"
        "from agent_wait.webhook import verify, WebhookVerificationError\n"
        "assert 'httpx' not in sys.modules, 'loading the plugin imported httpx'\n"
        "from agent_wait.webhook import WebhookAnnounce\n"
        "assert 'httpx' in sys.modules\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_config_check_connect_opens_a_connection_and_sends_no_request(
    receiver: Receiver, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    url = receiver.url("/never-called")
    right = {"use": "webhook", "url": url}
    wrong = {"use": "webhook", "url": f"http://127.0.0.1:{closed_port}/hook?token=s3cret"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, wrong)
    assert "ConnectionRefusedError" in lines[4]
    assert "s3cret" not in "\n".join(lines)
    assert receiver.requests("/never-called") == []


def test_config_check_connect_is_skipped_behind_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:1")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    code, lines, _ = config_check(
        monkeypatch, [{"use": "webhook", "url": "https://hooks.example.com/x"}], "--connect"
    )
    assert code == 0
    assert lines[1].endswith("; it has no connectivity check")
