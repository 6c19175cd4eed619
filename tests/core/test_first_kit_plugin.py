"""A third-party announcer written the way the first announcer kit allowed still passes today's.

Its options are its constructor's parameters and it declares no ``options_model``: core derives
the model from the signature, so configuration is checked, secrets hidden and
``agent-wait plugins --json`` shows a schema for it, as for a plugin that declares one.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, ConfigError, WaitEnvelope, announcer, hookimpl
from agent_wait.core.hookspecs import RegisterTarget
from agent_wait.host._cli import main
from agent_wait.testing import AnnouncerContract, registered_plugin


class FirstKitFileAnnounce(BaseAnnounce):
    """Writes each envelope to ``<directory>/<event_id>.json``.

    Args:
        directory: Where the files go; it must exist.
        indent: Spaces of JSON indentation; 0 writes one line.
        token: Written into no file; here to show that a secret is hidden.
    """

    name = "first_kit_file"

    def __init__(
        self,
        directory: str,
        indent: int = 0,
        token: str | None = None,
        token_env: str | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.indent = indent or None
        self.token = token

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Write the envelope's file; fails when the directory does not exist."""
        body = json.dumps(envelope.to_dict(), indent=self.indent)
        (self.directory / f"{envelope.event_id}.json").write_text(body, encoding="utf-8")


class FirstKitPlugin:
    @hookimpl
    def register_announcers(self, register: RegisterTarget) -> None:
        register("first_kit_file", FirstKitFileAnnounce)


@pytest.fixture
def first_kit_plugin() -> Iterator[None]:
    with registered_plugin(FirstKitPlugin(), "first-kit"):
        yield


class TestFirstKitAnnouncer(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path

    def make_announcer(self) -> BaseAnnounce:
        return FirstKitFileAnnounce(str(self.directory), indent=2)

    def make_failing_announcer(self) -> BaseAnnounce:
        return FirstKitFileAnnounce(str(self.directory / "missing"))

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [json.loads(path.read_text("utf-8")) for path in self.directory.glob("*.json")]


@pytest.mark.usefixtures("first_kit_plugin")
def test_plugins_json_shows_the_schema_of_its_constructor() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["plugins", "--json"]) == 0
    announcers = {a["name"]: a for a in json.loads(out.getvalue())["announcers"]}
    schema = announcers["first_kit_file"]["options_schema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["directory"]
    assert schema["additionalProperties"] is False
    # token_env is the environment form of token, not an option of its own.
    assert set(schema["properties"]) == {"directory", "indent", "token"}
    assert schema["properties"]["indent"] == {
        "default": 0,
        "description": "Spaces of JSON indentation; 0 writes one line.",
        "title": "Indent",
        "type": "integer",
    }
    assert schema["properties"]["directory"]["description"] == "Where the files go; it must exist."
    # Every announcer and entry point has a schema, declared or derived.
    assert all(item["options_schema"] for item in announcers.values())


@pytest.mark.usefixtures("first_kit_plugin")
def test_configuration_is_checked_against_the_derived_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = announcer("first_kit_file", directory=str(tmp_path), indent=4)
    assert isinstance(built, FirstKitFileAnnounce)
    assert built.indent == 4
    with pytest.raises(
        ConfigError,
        match=r"announcer 'first_kit_file': unknown option 'directry'; did you mean 'directory'",
    ):
        announcer("first_kit_file", directry=str(tmp_path))
    with pytest.raises(ConfigError, match=r"option 'indent': .*\(got 'wide'\)"):
        announcer("first_kit_file", directory=str(tmp_path), indent="wide")
    with pytest.raises(ConfigError, match="missing required option 'directory'"):
        announcer("first_kit_file")
    monkeypatch.setenv("FIRST_KIT_TOKEN", "s3cret")
    from_env = announcer("first_kit_file", directory=str(tmp_path), token_env="FIRST_KIT_TOKEN")
    assert isinstance(from_env, FirstKitFileAnnounce)
    assert from_env.token == "s3cret"
    # A secret's value never appears in an error.
    with pytest.raises(ConfigError, match=r"option 'token': .*\(got '\*\*\*'\)") as raised:
        announcer("first_kit_file", directory=str(tmp_path), token=["s3cret"])
    assert "s3cret" not in str(raised.value)
