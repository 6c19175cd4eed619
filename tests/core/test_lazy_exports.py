"""The one lazy-exports helper behind every package's ``__init__``."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types
from importlib.metadata import version

import pytest

from agent_wait.core import lazy_exports

PACKAGES = [
    "agent_wait.core",
    "agent_wait.apprise",
    "agent_wait.dynamodb",
    "agent_wait.email",
    "agent_wait.google_adk",
    "agent_wait.eventbridge",
    "agent_wait.langgraph",
    "agent_wait.mcp",
    "agent_wait.openai_agents",
    "agent_wait.nats",
    "agent_wait.postgres",
    "agent_wait.pydantic_ai",
    "agent_wait.rabbitmq",
    "agent_wait.redis",
    "agent_wait.slack",
    "agent_wait.sns",
    "agent_wait.sqs",
    "agent_wait.strands",
    "agent_wait.webhook",
]


def _package(name: str) -> types.ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{name} is not installed")


@pytest.mark.parametrize("name", PACKAGES)
def test_dir_lists_every_public_name_before_first_use(name: str) -> None:
    public = set(_package(name).__all__)  # skipped where the package is not installed
    listed = subprocess.run(
        [sys.executable, "-c", f"import {name} as p; print(' '.join(dir(p)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert public <= set(listed)


@pytest.mark.parametrize("name", PACKAGES)
def test_an_unknown_name_is_a_clear_attribute_error(name: str) -> None:
    package = _package(name)
    with pytest.raises(AttributeError, match=rf"^module '{name}' has no attribute 'Nonesuch'$"):
        package.Nonesuch  # noqa: B018 - the access is the test
    assert not hasattr(package, "Nonesuch")
    first = package.__all__[0]
    with pytest.raises(AttributeError, match=rf"; did you mean '{first}'\?$"):
        getattr(package, first + "x")


def test_a_name_is_imported_once_then_kept_in_the_module() -> None:
    code = (
        "import sys, agent_wait.redis as r; assert 'redis' not in sys.modules; "
        "cls = r.RedisAnnounce; assert 'redis' in sys.modules; "
        "assert vars(r)['RedisAnnounce'] is cls is r.RedisAnnounce"
    )
    _package("agent_wait.redis")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_version_comes_from_the_distribution() -> None:
    import agent_wait.core

    assert agent_wait.core.__version__ == version("agent-wait-core")


def test_absolute_and_relative_homes_and_no_version_without_a_distribution() -> None:
    module = types.ModuleType("lazy_probe")
    sys.modules["lazy_probe"] = module
    try:
        getattr_, dir_ = lazy_exports(
            "lazy_probe", {"dumps": "json", "Path": "pathlib", "here": ".nowhere"}
        )
        module.__all__ = ["dumps", "Path"]  # type: ignore[attr-defined]
        import json
        import pathlib

        assert getattr_("dumps") is json.dumps
        assert vars(module)["dumps"] is json.dumps
        assert getattr_("Path") is pathlib.Path
        assert {"Path", "dumps", "here"} <= set(dir_())
        with pytest.raises(AttributeError, match=r"has no attribute '__version__'$"):
            getattr_("__version__")
        with pytest.raises(ModuleNotFoundError):
            getattr_("here")  # a relative home of a module that is not a package
    finally:
        del sys.modules["lazy_probe"]
