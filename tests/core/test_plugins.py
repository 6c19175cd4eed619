"""Plugin discovery: lazy entry-point loading, errors, autoload off, the third-party example."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    BaseAnnounce,
    ConfigError,
    MemoryAnnounce,
    PluginNotFoundError,
    Question,
    WaitPolicy,
    announcer,
    publish,
)
from agent_wait.core._config import load_config
from agent_wait.core._plugins import PluginRegistry, _not_installed, registry
from agent_wait.testing import AnnouncerContract
from tests.core._installed import needs_example_plugin

# SDKs that loading plugins must never import (each plugin imports its SDK only when used).
HEAVY = [
    "boto3",
    "botocore",
    "aiobotocore",
    "httpx",
    "langgraph",
    "langchain",
    "langchain_core",
    "pydantic_ai",
    "strands",
    "agents",
    "mcp",
    "redis",
    "nats",
    "aio_pika",
    "psycopg",
]


def run_python(code: str, **env: str) -> Any:
    """Run ``code`` in a fresh interpreter; it prints one JSON document, returned parsed."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_WAIT_")}
    environ.update(env)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_loads_no_plugin_and_no_sdk() -> None:
    found = run_python(
        f"""
        import json, sys
        import agent_wait.core
        from agent_wait.core import _plugins
        print(json.dumps({{
            "plugins": sorted(_plugins._registry.plugins),
            "plugin_modules": sorted(m for m in sys.modules
                                     if m.startswith("agent_wait_example")
                                     or (m.startswith("agent_wait.") and not m.startswith("agent_wait.core"))),
            "heavy": [m for m in {HEAVY!r} if m in sys.modules],
            "embedded": [m for m in ("agent_wait.core._sqlite", "agent_wait.core._config", "sqlite3", "tomllib",
                                     "platformdirs")
                         if m in sys.modules],
        }}))
        """
    )
    assert found == {"plugins": [], "plugin_modules": [], "heavy": [], "embedded": []}


@needs_example_plugin
def test_loading_plugins_imports_no_sdk() -> None:
    # One entry point at a time, so a failure names the plugin that pulled the SDK in.
    found = run_python(
        f"""
        import json, sys, logging
        from importlib.metadata import entry_points
        logging.disable(logging.CRITICAL)
        from agent_wait.core._plugins import registry
        reg = registry()
        culprits = {{}}
        for name in sorted(ep.name for ep in entry_points(group="agent_wait")):
            before = {{m for m in {HEAVY!r} if m in sys.modules}}
            try:
                reg.load([name])
            except ImportError:
                continue  # a plugin that cannot import is tested elsewhere
            pulled = sorted(m for m in {HEAVY!r} if m in sys.modules and m not in before)
            if pulled:
                culprits[name] = pulled
        print(json.dumps({{
            "culprits": culprits,
            "example_announcer_imported": "agent_wait_example._announcer" in sys.modules,
            "loaded": sorted(reg.plugins),
        }}))
        """,
        AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    assert "example_file" in found["loaded"]
    assert found["example_announcer_imported"] is False, (
        "registering must not import the announcer module"
    )
    assert found["culprits"] == {}, (
        f"loading these agent_wait entry points imported SDKs: {found['culprits']}; the plugin module "
        "(or its package __init__) must import its SDK inside the factory, not at import time"
    )


@needs_example_plugin
def test_autoload_off_loads_only_what_is_named(tmp_path: Path) -> None:
    found = run_python(
        f"""
        import json
        from agent_wait.core import PluginNotFoundError, announcer
        from agent_wait.core._plugins import registry
        before = sorted(registry().plugins)
        built = announcer("example_file", directory={str(tmp_path)!r})
        after = sorted(registry().plugins)
        try:
            announcer("example_files")
        except PluginNotFoundError as error:
            message = str(error)
        print(json.dumps({{"before": before, "after": after, "built": type(built).__name__, "message": message}}))
        """,
        AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    assert found["before"] == ["core"]
    assert found["after"] == ["core", "example_file"]
    assert found["built"] == "ExampleFileAnnounce"
    assert "did you mean 'example_file'" in found["message"]
    assert "plugin autoload is off: AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD=1" in found["message"]


def test_registry_is_loaded_once() -> None:
    first = registry()
    plugins = dict(first.plugins)
    assert registry() is first
    first.load()
    assert first.plugins == plugins


@pytest.fixture
def broken_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An installed distribution whose agent_wait entry point fails to import."""
    registry()  # the process-wide registry is loaded before the broken plugin appears
    site = tmp_path / "site"
    info = site / "broken_plugin_dist-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: broken-plugin-dist\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text("[agent_wait]\nbroken_thing = broken_plugin_module\n")
    (site / "broken_plugin_module.py").write_text("import a_dependency_that_is_not_installed_xyz\n")
    monkeypatch.syspath_prepend(str(site))
    return "broken_thing"


@needs_example_plugin
def test_broken_plugin_is_skipped_and_logged_when_autoloaded(
    broken_distribution: str, caplog: pytest.LogCaptureFixture
) -> None:
    fresh = PluginRegistry()
    with caplog.at_level(logging.ERROR, logger="agent_wait"):
        fresh.load()
    assert broken_distribution not in fresh.plugins
    assert "a_dependency_that_is_not_installed_xyz" in fresh.failed[broken_distribution]
    assert "example_file" in fresh.plugins, "one broken plugin must not stop the others"
    [record] = [r for r in caplog.records if broken_distribution in r.getMessage()]
    assert record.getMessage() == "agent-wait plugin 'broken_thing' failed to import; skipped"
    assert record.exc_info is not None


def test_broken_plugin_raises_with_its_name_when_requested(broken_distribution: str) -> None:
    with pytest.raises(ImportError, match='error importing agent-wait plugin "broken_thing"'):
        PluginRegistry().load([broken_distribution])
    # Through configuration: the announcer of the same name loads its entry point on demand.
    with pytest.raises(
        ImportError, match=r'agent-wait plugin "broken_thing".*a_dependency_that_is_not'
    ):
        announcer("broken_thing")
    assert broken_distribution not in registry().plugins


@needs_example_plugin
def test_requesting_an_absent_plugin() -> None:
    with pytest.raises(
        PluginNotFoundError, match=r"unknown plugin 'no_such_plugin'; installed: .*example_file"
    ):
        PluginRegistry().load(["no_such_plugin"])


@needs_example_plugin
def test_unknown_announcer_message() -> None:
    with pytest.raises(PluginNotFoundError) as raised:
        announcer("exmaple_file")
    message = str(raised.value)
    assert message.startswith("unknown announcer 'exmaple_file'; installed: ")
    assert "example_file, jsonl, log, memory" in message
    assert "did you mean 'example_file'?" in message


def test_an_unknown_name_says_what_to_install_by_the_naming_convention() -> None:
    message = _not_installed("announcer", "webhook", ["jsonl", "log", "memory", "sqlite", "sqs"])
    assert message == (
        "unknown announcer 'webhook'; installed: jsonl, log, memory, sqlite, sqs; a plugin "
        "providing 'webhook' is named agent-wait-webhook by convention "
        "(pip install agent-wait-webhook)"
    )
    # Each part is its own clause, the suggestion last; underscores become hyphens.
    assert _not_installed("adapter", "pydantic_ai", ["langgraph", "pydantic-ai"]) == (
        "unknown adapter 'pydantic_ai'; installed: langgraph, pydantic-ai; a plugin providing "
        "'pydantic_ai' is named agent-wait-pydantic-ai by convention "
        "(pip install agent-wait-pydantic-ai); did you mean 'pydantic-ai'?"
    )


@pytest.mark.parametrize(
    "name",
    [
        "os:system",
        "agent_wait.core._memory:MemoryAnnounce",
        "agent_wait.core._memory",
        "",
        "../x",
        "a b",
    ],
)
def test_import_paths_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="never a module path"):
        announcer(name)


@needs_example_plugin
def test_unknown_option_is_named() -> None:
    with pytest.raises(
        ConfigError,
        match="announcer 'example_file': unknown option 'directry'; did you mean 'directory'",
    ):
        announcer("example_file", directry="x")


# --- the third-party example distribution ----------------------------------------------------


@needs_example_plugin
def test_example_is_discovered_by_entry_point() -> None:
    reg = registry()
    loaded = reg.plugins["example_file"]
    assert (loaded.distribution, loaded.version) == ("agent-wait-example-thirdparty", "0.1.0")
    registration = reg.announcers["example_file"]
    assert registration.plugin == "example_file"
    assert registration.target == "agent_wait_example._announcer:ExampleFileAnnounce"
    hooks = {
        caller.name
        for caller in reg.manager.get_hookcallers(reg.manager.get_plugin("example_file")) or []
    }
    assert hooks == {"register_announcers", "adjust_envelope", "delivery_outcome"}


@needs_example_plugin
def test_example_is_configurable_by_name(tmp_path: Path) -> None:
    (tmp_path / "agent-wait.toml").write_text(
        f'[[announce]]\nuse = "example_file"\ndirectory = "{tmp_path / "questions"}"\n'
    )
    [built] = load_config().build()
    assert type(built).__module__ == "agent_wait_example._announcer"
    assert built.name == "example_file"
    report = publish([Question(question_id="q1", question={"x": 1})], "t-1", built, strict=True)
    [written] = (tmp_path / "questions").glob("*.json")
    assert json.loads(written.read_text()) == report.envelopes[0].to_dict()


@needs_example_plugin
def test_example_hooks_are_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = tmp_path / "outcomes.jsonl"
    monkeypatch.setenv("AGENT_WAIT_EXAMPLE_OUTCOMES", str(outcomes))
    sink = MemoryAnnounce()
    stamped = Question(
        question_id="s",
        question=1,
        policy=WaitPolicy.model_validate({"tags": {"example.stamp": "on"}}),
    )
    plain = Question(
        question_id="p", question=2, policy=WaitPolicy.model_validate({"tags": {"team": "a"}})
    )
    report = publish([stamped, plain], "t-1", sink, strict=True)
    by_id = {e.question_id: e for e in sink.envelopes}
    assert by_id["s"].tags == {
        "example.stamp": "on",
        "example.stamped_by": "agent-wait-example-thirdparty",
    }
    assert by_id["p"].tags == {"team": "a"}, (
        "a hook plugin must leave envelopes that did not opt in alone"
    )
    assert report.envelopes == tuple(sink.envelopes)
    records = [json.loads(line) for line in outcomes.read_text().splitlines()]
    assert [(r["announcer"], r["question_id"], r["ok"]) for r in records] == [
        ("memory", "s", True),
        ("memory", "p", True),
    ]
    assert records[0]["tags"]["example.stamped_by"] == "agent-wait-example-thirdparty"


class TestMemoryContract(AnnouncerContract):
    def make_announcer(self) -> BaseAnnounce:
        return MemoryAnnounce()

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        assert isinstance(announcer, MemoryAnnounce)
        return [json.loads(e.to_json()) for e in announcer.envelopes]


@needs_example_plugin
class TestExampleFileContract(AnnouncerContract):
    """What a third party writes: the kit, its announcer by name, and a read-back."""

    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path / "questions"

    def make_announcer(self) -> BaseAnnounce:
        return announcer("example_file", directory=str(self.directory))

    def make_failing_announcer(self) -> BaseAnnounce:
        (self.directory.parent / "file").write_text("")
        return announcer("example_file", directory=str(self.directory.parent / "file" / "sub"))

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in self.directory.glob("*.json")]


def test_embedded_announcers_and_config_are_exported_lazily() -> None:
    import agent_wait.core as core
    from agent_wait.core._config import AgentWaitConfig, default_announcers, load_config
    from agent_wait.core._jsonl import JsonlAnnounce
    from agent_wait.core._sqlite import InboxItem, SqliteAnnounce, SqliteInbox

    exported = {name: getattr(core, name) for name in core.__all__}
    assert exported["SqliteAnnounce"] is SqliteAnnounce
    assert exported["SqliteInbox"] is SqliteInbox
    assert exported["InboxItem"] is InboxItem
    assert exported["JsonlAnnounce"] is JsonlAnnounce
    assert exported["AgentWaitConfig"] is AgentWaitConfig
    assert exported["load_config"] is load_config
    assert exported["default_announcers"] is default_announcers
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        core.Nope  # noqa: B018
