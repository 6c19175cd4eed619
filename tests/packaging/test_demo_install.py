"""``nox -s demo`` installs what the demo imports and nothing of the development set.

The session is run with a recording stand-in for nox, and what its ``uv sync`` would install is
resolved from uv.lock: no network, no environment built.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import tomllib
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "docs" / "examples" / "langgraph_refund.py"
# The import name of each third-party module the demo imports, and the distribution that has it.
DISTRIBUTIONS = {
    "agent_wait": "agent-wait-langgraph",
    "langchain_core": "langchain-core",
    "langgraph": "langgraph-checkpoint-sqlite",
}
# The development and test tools, and the frameworks and transports the demo does not use.
NOT_FOR_THE_DEMO = {
    "ruff",
    "pyright",
    "pytest",
    "moto",
    "mkdocs",
    "pydantic-ai-slim",
    "strands-agents",
    "boto3",
    "redis",
    "agent-wait-webhook",
    "agent-wait-inbox",
}


class _Session:
    def __init__(self) -> None:
        self.installs: list[tuple[str, ...]] = []
        self.posargs: list[str] = []
        self.virtualenv = types.SimpleNamespace(location="/nonexistent-venv")

    def run_install(self, *args: str, **_: object) -> None:
        self.installs.append(args)

    def run(self, *_: object, **__: object) -> None:
        pass


def _passthrough(*_: object, **__: object) -> Callable[[Any], Any]:
    return lambda function: function


def _demo_installs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    stand_in = types.ModuleType("nox")
    stand_in.options = types.SimpleNamespace()  # type: ignore[attr-defined]
    stand_in.session = _passthrough  # type: ignore[attr-defined]
    stand_in.parametrize = _passthrough  # type: ignore[attr-defined]
    stand_in.Session = _Session  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nox", stand_in)
    # The noxfile sets these at import; the test leaves them as they were.
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))
    spec = importlib.util.spec_from_file_location("_noxfile_under_test", ROOT / "noxfile.py")
    assert spec
    assert spec.loader
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    session = _Session()
    noxfile.demo(session)
    return session.installs


def _locked_closure(args: tuple[str, ...]) -> set[str]:
    """The distributions ``uv sync <args>`` installs, from uv.lock (markers ignored: an upper bound)."""
    assert args[:2] == ("uv", "sync"), args
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    packages = {p["name"]: p for p in lock["package"]}
    options = list(args[2:])
    roots = (
        list(lock["manifest"]["members"])
        if "--all-packages" in options
        else [options[options.index("--package") + 1]]
    )
    groups = [options[i + 1] for i, option in enumerate(options) if option == "--group"]
    if "--no-default-groups" not in options:
        groups.append("dev")
    todo: list[dict[str, Any]] = [{"name": root} for root in roots]
    for root in [*roots, "agent-wait-workspace"]:
        for group in groups:
            todo += packages.get(root, {}).get("dev-dependencies", {}).get(group, [])
    seen: set[str] = set()
    while todo:
        dependency = todo.pop()
        package = packages[dependency["name"]]
        for extra in dependency.get("extra", []):
            todo += package.get("optional-dependencies", {}).get(extra, [])
        if dependency["name"] not in seen:
            seen.add(dependency["name"])
            todo += package.get("dependencies", [])
    return seen


def _third_party_imports() -> set[str]:
    tree = ast.parse(DEMO.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"__future__"}


def test_the_demo_session_installs_what_the_demo_imports_and_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    [install] = _demo_installs(monkeypatch)
    installed = _locked_closure(install)
    imported = _third_party_imports()
    assert imported == set(DISTRIBUTIONS), "a new import: name the distribution that has it"
    assert set(DISTRIBUTIONS.values()) <= installed
    assert not installed & NOT_FOR_THE_DEMO
    # The whole development set is about 160 distributions; the demo needs about 40.
    assert len(installed) < 60, sorted(installed)


def test_the_closure_sees_the_development_set() -> None:
    # The check above could pass vacuously if the lock walk missed groups or members.
    everything = _locked_closure(
        ("uv", "sync", "--all-packages", "--group", "test", "--group", "docs")
    )
    assert everything >= NOT_FOR_THE_DEMO
    assert len(everything) > 120
