"""Configuration by entry-point name: Python, TOML files, the environment; precedence and errors."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from agent_wait.core import (
    AnnouncerOptions,
    ConfigError,
    MemoryAnnounce,
    PluginNotFoundError,
    announcer,
    announcers_from_config,
    hookimpl,
    publish,
)
from agent_wait.core._config import (
    AgentWaitConfig,
    ConfigSource,
    _fingerprint,  # pyright: ignore[reportPrivateUsage]
    default_announcers,
    load_config,
    one_configuration,
)
from agent_wait.core._jsonl import JsonlAnnounce
from agent_wait.core._sqlite import SqliteAnnounce
from agent_wait.core.hookspecs import RegisterTarget
from agent_wait.core.options import SensitiveUrl, redact
from agent_wait.testing import registered_plugin, sample_questions


class SecretOptions(AnnouncerOptions):
    url: SensitiveUrl
    api_key: SecretStr | None = None
    token_env: str | None = None


class SecretAnnounce(MemoryAnnounce):
    """Takes a secret directly (api_key) and one by its own *_env option (token_env)."""

    options_model = SecretOptions

    def __init__(self, url: str, api_key: str | None = None, token_env: str | None = None) -> None:
        super().__init__()
        SecretOptions.parse(self.name, {"url": url, "api_key": api_key, "token_env": token_env})
        self.url = url
        self.api_key = api_key
        self.token_env = token_env


class SecretsPlugin:
    @hookimpl
    def register_announcers(self, register: RegisterTarget) -> None:
        register("secretive", SecretAnnounce)


@pytest.fixture
def secretive() -> Iterator[None]:
    with registered_plugin(SecretsPlugin(), "test-secrets"):
        yield


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_default_is_the_embedded_sqlite_inbox(tmp_path: Path) -> None:
    config = load_config()
    assert config.source is ConfigSource.DEFAULT
    assert config.location is None
    [entry] = config.announce
    assert entry.use == "sqlite"
    assert entry.options == {
        "path": str(tmp_path / "agent-wait-home" / "inbox.sqlite3"),
        "lifecycle_events": ["wait.answer_refused"],
    }
    [built] = config.build()
    assert isinstance(built, SqliteAnnounce)
    assert built.path == tmp_path / "agent-wait-home" / "inbox.sqlite3"
    # Told of a refused answer, the inbox opens the question again; nothing else is sent to it.
    assert built.lifecycle_events == frozenset({"wait.answer_refused"})


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n\n[[tool.agent-wait.announce]]\nuse = "memory"\n',
    )
    config = load_config()
    assert (config.source, config.announce[0].use) == (ConfigSource.PYPROJECT, "memory")
    assert config.location == f"{tmp_path / 'pyproject.toml'} [tool.agent-wait]"

    write(tmp_path / "agent-wait.toml", '[[announce]]\nuse = "log"\nlevel = "INFO"\n')
    config = load_config()
    assert (config.source, config.announce[0].use) == (ConfigSource.FILE, "log")
    assert config.announce[0].options == {"level": "INFO"}

    write(tmp_path / "other.toml", '[[announce]]\nuse = "jsonl"\npath = "q.jsonl"\n')
    monkeypatch.setenv("AGENT_WAIT_CONFIG", "other.toml")
    config = load_config()
    assert (config.source, config.announce[0].use) == (ConfigSource.CONFIG_ENV, "jsonl")
    assert config.location == str(tmp_path / "other.toml")

    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", '[{"use": "memory"}, {"use": "log"}]')
    config = load_config()
    assert config.source is ConfigSource.ANNOUNCE_ENV
    assert [e.use for e in config.announce] == ["memory", "log"]


def test_pyproject_without_table_falls_back_to_default(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    assert load_config().source is ConfigSource.DEFAULT


def test_config_env_may_name_a_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    write(project / "pyproject.toml", '[[tool.agent-wait.announce]]\nuse = "memory"\n')
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(project / "pyproject.toml"))
    assert load_config().announce[0].use == "memory"
    write(project / "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"no \[tool.agent-wait\] table"):
        load_config()


def test_explicit_environ_and_cwd(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write(elsewhere / "agent-wait.toml", '[[announce]]\nuse = "memory"\n')
    assert load_config(cwd=elsewhere).source is ConfigSource.FILE
    config = load_config(environ={"AGENT_WAIT_ANNOUNCE": '[{"use": "log"}]'}, cwd=elsewhere)
    assert config.source is ConfigSource.ANNOUNCE_ENV
    default = load_config(environ={"AGENT_WAIT_HOME": "/srv/aw"})
    assert default.announce[0].options["path"] == "/srv/aw/inbox.sqlite3"


def test_changes_are_seen_without_restarting(tmp_path: Path) -> None:
    path = write(tmp_path / "agent-wait.toml", '[[announce]]\nuse = "memory"\n')
    assert load_config().announce[0].use == "memory"
    # Different size, so the change is seen even within one mtime tick.
    write(path, '[[announce]]\nuse = "log"\nlevel = "DEBUG"\n')
    assert load_config().announce[0].use == "log"


def test_one_configuration_is_read_once_inside(tmp_path: Path) -> None:
    path = write(tmp_path / "agent-wait.toml", '[[announce]]\nuse = "memory"\n')
    with one_configuration():
        first = load_config()
        write(path, '[[announce]]\nuse = "log"\nlevel = "DEBUG"\n')
        assert load_config() is first
        with one_configuration():  # a nested use shares the outer one's
            assert load_config() is first
        # Explicit sources are read as asked.
        assert load_config(cwd=tmp_path).announce[0].use == "log"
    assert load_config().announce[0].use == "log"


def test_one_configuration_reads_on_first_use_and_holds_no_error(tmp_path: Path) -> None:
    path = write(tmp_path / "agent-wait.toml", '[[announce]]\nuse = "memory\n')
    # Entering reads nothing: a message that needs no configuration is not failed by it.
    with one_configuration():
        with pytest.raises(ConfigError, match="invalid TOML"):
            load_config()
        write(path, '[[announce]]\nuse = "memory"\n')
        assert load_config().announce[0].use == "memory"


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ('[[announce]]\nuse = "memory\n', "line 2"),
        ("[[announce]]\nuse = memory\n", "line 2, column 7"),
        ('[[announce]\nuse = "memory"\n', "line 1"),
    ],
)
def test_malformed_toml_names_file_and_position(tmp_path: Path, text: str, position: str) -> None:
    write(tmp_path / "agent-wait.toml", text)
    with pytest.raises(ConfigError) as raised:
        load_config()
    assert str(tmp_path / "agent-wait.toml") in str(raised.value)
    assert "invalid TOML" in str(raised.value)
    assert position in str(raised.value)


def test_non_utf8_toml(tmp_path: Path) -> None:
    (tmp_path / "agent-wait.toml").write_bytes(b'[[announce]]\nuse = "\xff"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('[{"use": "memory"', "invalid JSON at line 1 column 18"),
        ('{"use": "memory"}', "expected a list of announcer entries"),
        ("[]", "at least one announcer"),
        ('["memory"]', r"announce\[0\]: expected a table/object"),
        ('[{"queue_url": "x"}]', r"announce\[0\]: 'use' must name an announcer"),
        ('[{"use": 3}]', "'use' must name an announcer"),
        (
            '[{"use": "memory"}, {"use": "os:system"}]',
            r"announce\[1\]: use = 'os:system' is not an announcer name",
        ),
        ('[{"use": "agent_wait.core._memory"}]', "never a module path"),
    ],
)
def test_malformed_environment_entries(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", value)
    with pytest.raises(ConfigError, match=message) as raised:
        load_config()
    assert "AGENT_WAIT_ANNOUNCE" in str(raised.value)


def test_blank_environment_variable_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", "  ")
    assert load_config().source is ConfigSource.DEFAULT


def test_missing_config_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_WAIT_CONFIG", "nope.toml")
    with pytest.raises(ConfigError, match=r"AGENT_WAIT_CONFIG='nope\.toml': no such file"):
        load_config()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[announcer]]\nuse = "memory"\n', "unknown key 'announcer'; did you mean 'announce'"),
        ("title = 'x'\n", "unknown key 'title'"),
        ("", "no announcers"),
        ("announce = []\n", "at least one announcer"),
        ('announce = "memory"\n', "expected a list of announcer entries"),
        ('[[announce]]\nuse = "os:system"\n', "never a module path"),
    ],
)
def test_malformed_file_entries(tmp_path: Path, text: str, message: str) -> None:
    write(tmp_path / "agent-wait.toml", text)
    with pytest.raises(ConfigError, match=message):
        load_config()


def test_malformed_pyproject_table(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool]\nagent-wait = 3\n")
    with pytest.raises(ConfigError, match=r"\[tool.agent-wait\] must be a table"):
        load_config()
    write(tmp_path / "pyproject.toml", "[tool.agent-wait]\nannounc = []\n")
    with pytest.raises(
        ConfigError, match=r"pyproject.toml \[tool.agent-wait\]: unknown key 'announc'"
    ):
        load_config()


def test_unknown_name_lists_installed_and_close_match(tmp_path: Path) -> None:
    write(tmp_path / "agent-wait.toml", '[[announce]]\nuse = "sqlitee"\n')
    config = load_config()
    with pytest.raises(PluginNotFoundError) as raised:
        config.build()
    message = str(raised.value)
    assert "agent-wait.toml" in message
    assert "announce[0]" in message
    assert "unknown announcer 'sqlitee'" in message
    assert "did you mean 'sqlite'" in message
    assert "jsonl, log, memory" in message


def test_bad_option_is_named(tmp_path: Path) -> None:
    write(
        tmp_path / "agent-wait.toml",
        '[[announce]]\nuse = "memory"\n\n[[announce]]\nuse = "jsonl"\npth = "q.jsonl"\n',
    )
    with pytest.raises(ConfigError) as raised:
        load_config().build()
    message = str(raised.value)
    assert "announce[1]" in message
    assert "unknown option 'pth'; did you mean 'path'" in message


def test_missing_required_option_is_named() -> None:
    with pytest.raises(
        ConfigError, match="announce\\[0\\]: announcer 'jsonl': missing required option 'path'"
    ):
        AgentWaitConfig.from_entries([{"use": "jsonl"}]).build()


def test_bad_option_value_is_named() -> None:
    with pytest.raises(
        ConfigError, match=r"announce\[0\]: announcer 'log': option 'level': .*got 'LOUD'"
    ):
        AgentWaitConfig.from_entries([{"use": "log", "level": "LOUD"}]).build()


def test_python_config() -> None:
    config = AgentWaitConfig.from_entries([{"use": "memory"}, {"use": "log", "level": "INFO"}])
    assert config.source is ConfigSource.PYTHON
    built = config.build()
    assert [a.name for a in built] == ["memory", "log"]
    assert [a.name for a in announcers_from_config([{"use": "memory"}])] == ["memory"]
    with pytest.raises(ValueError, match="at least one"):
        AgentWaitConfig(source=ConfigSource.PYTHON, announce=())


def test_env_indirection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUESTIONS_FILE", str(tmp_path / "from-env.jsonl"))
    built = announcer("jsonl", path_env="QUESTIONS_FILE")
    assert isinstance(built, JsonlAnnounce)
    assert built.path == tmp_path / "from-env.jsonl"
    with pytest.raises(
        ConfigError, match="'path_env' names environment variable 'UNSET_VAR', which is not set"
    ):
        announcer("jsonl", path_env="UNSET_VAR")
    with pytest.raises(ConfigError, match="give 'path' or 'path_env', not both"):
        announcer("jsonl", path="x", path_env="QUESTIONS_FILE")
    with pytest.raises(ConfigError, match="must name an environment variable"):
        announcer("jsonl", path_env=3)
    with pytest.raises(ConfigError, match="unknown option 'level_env'"):
        announcer("jsonl", path="x", level_env="QUESTIONS_FILE")


def test_env_option_the_announcer_accepts_is_passed_as_is(
    secretive: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_KEY", "k-123")
    built = announcer("secretive", url="https://x", api_key_env="API_KEY", token_env="TOKEN_VAR")
    assert isinstance(built, SecretAnnounce)
    assert built.api_key == "k-123"
    assert built.token_env == "TOKEN_VAR"


def test_redaction() -> None:
    options: dict[str, Any] = {
        "url": "redis://user:hunter2@localhost:6379/0",
        "api_key": "k-123",
        "password": "p",
        "token_env": "TOKEN_VAR",
        "headers": {"Authorization": "Bearer abc", "X-Trace": "1"},
        "queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q",
        "secrets": ["a"],
        "timeout": 3,
    }
    assert redact(options) == {
        "url": "redis://user:***@localhost:6379/0",
        "api_key": "***",
        "password": "***",
        "token_env": "TOKEN_VAR",
        "headers": {"Authorization": "***", "X-Trace": "1"},
        "queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q",
        "secrets": "***",
        "timeout": 3,
    }


def test_loader_never_logs_secret_values(
    secretive: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    entries = [{"use": "secretive", "url": "https://u:pw-in-url@host/x", "api_key": "sekrit-value"}]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(entries))
    with caplog.at_level(logging.DEBUG, logger="agent_wait"):
        config = load_config()
        config.build()
    assert "AGENT_WAIT_ANNOUNCE" in caplog.text
    assert "sekrit-value" not in caplog.text
    assert "pw-in-url" not in caplog.text


def test_default_announcers_reuse_clients_until_config_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = default_announcers()
    assert [type(a) for a in first] == [SqliteAnnounce]
    assert default_announcers() == first  # the same instances: no new connection per publish
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path / "other-home"))
    moved = default_announcers()
    assert moved != first
    assert isinstance(moved[0], SqliteAnnounce)
    assert moved[0].path == tmp_path / "other-home" / "inbox.sqlite3"


def test_default_announcers_rebuild_when_an_env_secret_rotates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", '[{"use": "jsonl", "path_env": "Q_PATH"}]')
    monkeypatch.setenv("Q_PATH", str(tmp_path / "a.jsonl"))
    first = default_announcers()
    assert default_announcers() == first
    monkeypatch.setenv("Q_PATH", str(tmp_path / "b.jsonl"))
    [rotated] = default_announcers()
    assert isinstance(rotated, JsonlAnnounce)
    assert rotated.path == tmp_path / "b.jsonl"


def test_the_default_configuration_is_read_again_but_built_once_per_inbox_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_config()
    assert load_config() is first  # nothing in it changed: no new object for every message
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path / "moved"))
    moved = load_config()
    assert moved.announce[0].options["path"] == str(tmp_path / "moved" / "inbox.sqlite3")
    write(tmp_path / "agent-wait.toml", '[[announce]]\nuse = "log"\n')
    assert load_config().source is ConfigSource.FILE  # a file that appears is seen at once


def test_a_rotated_secret_changes_the_identity_of_the_same_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = AgentWaitConfig.from_entries([{"use": "jsonl", "path_env": "Q_PATH"}])
    monkeypatch.setenv("Q_PATH", "a.jsonl")
    before = _fingerprint(config)
    assert _fingerprint(config) == before
    monkeypatch.setenv("Q_PATH", "b.jsonl")
    assert _fingerprint(config) != before


def test_publish_without_announce_uses_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "AGENT_WAIT_ANNOUNCE", json.dumps([{"use": "jsonl", "path": str(tmp_path / "q.jsonl")}])
    )
    report = publish(sample_questions(2), "t-1")
    assert report.ok
    assert [d.announcer for d in report.deliveries] == ["jsonl", "jsonl"]
    assert len((tmp_path / "q.jsonl").read_text().splitlines()) == 2


def test_publish_with_default_configuration_writes_the_embedded_inbox(tmp_path: Path) -> None:
    from agent_wait.core._sqlite_store import SqliteQuestionStore

    report = publish(sample_questions(1), "t-1")
    assert report.ok
    with SqliteQuestionStore() as inbox:
        assert inbox.path == tmp_path / "agent-wait-home" / "inbox.sqlite3"
        assert [i.envelope.event_id for i in inbox.open_questions()] == [
            report.envelopes[0].event_id
        ]
