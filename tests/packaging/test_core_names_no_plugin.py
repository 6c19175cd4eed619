"""Core names no plugin: a new plugin is its own folder, with no edit in core.

What core tells about plugins (which distribution provides a name, which announcers publish
lifecycle events) comes from entry points, hooks and the plugin classes themselves. This check
reads every string in core's code (docstrings, which give examples, aside) and refuses the
distribution, entry-point and import names of the sibling plugins.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "packages" / "agent-wait-core"
# Core's own words that a plugin also uses as its name.
CORE_OWN = {
    # Names that moved out of core into agent-wait-host still resolve from agent_wait.core for one
    # release, with a deprecation warning naming where they live now (loaded by name, not imported).
    ("agent_wait/core/__init__.py", "agent_wait.host"),
    ("agent_wait/core/__init__.py", "agent-wait-host"),
    ("agent_wait/core/__init__.py", "agent_wait.host.adapter"),
    ("agent_wait/core/host.py", "agent_wait.host"),
    ("agent_wait/core/host.py", "agent-wait-host"),
    ("agent_wait/core/adapter.py", "agent_wait.host.adapter"),
    ("agent_wait/core/adapter.py", "agent-wait-host"),
    ("agent_wait/core/pause.py", "agent_wait.pause"),
    ("agent_wait/core/pause.py", "agent-wait-pause"),
    ("agent_wait/core/testing.py", "agent_wait.testing"),
    ("agent_wait/core/testing.py", "agent-wait-testing"),
}


def plugin_names() -> set[str]:
    """Every sibling's distribution name, entry-point names and ``agent_wait.<x>`` import name."""
    names: set[str] = set()
    # packages/_template is not a plugin: its names are placeholders a new plugin replaces.
    for pyproject in sorted(ROOT.glob("packages/agent-wait-*/pyproject.toml")):
        if pyproject.parent == CORE:
            continue
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        names.add(project["name"])
        names.update(project.get("entry-points", {}).get("agent_wait", {}))
        names.update(
            f"agent_wait.{package.name}"
            for package in (pyproject.parent / "src" / "agent_wait").iterdir()
            if package.is_dir() and not package.name.startswith((".", "_"))
        )
    return names


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def plugin_names_in_code(source: str, names: set[str]) -> list[tuple[int, str]]:
    """``(line, string)`` of each string in ``source``'s code that names a plugin."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    # An entry-point name is an ordinary word ("webhook", "inbox"): it counts as a whole
    # string, a value core would act on. A distribution or import name counts anywhere.
    qualified = sorted(name for name in names if name.startswith(("agent-wait-", "agent_wait.")))
    pattern = re.compile("|".join(rf"(?<![\w.-]){re.escape(name)}(?![\w-])" for name in qualified))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and (node.value in names or pattern.search(node.value))
        ):
            found.append((node.lineno, node.value))
    return sorted(found)


def test_the_check_finds_a_plugin_name() -> None:
    names = {"sqs", "agent-wait-sqs", "agent_wait.sqs"}
    source = '''
"""Module docstring naming sqs and agent-wait-sqs: documentation, allowed."""
EVENTS = ("memory", "sqs")
HINT = f"pip install agent-wait-sqs"
TARGET = "agent_wait.sqs._plugin"
FINE = "sqs_like agent-wait-sqsx"
'''
    assert plugin_names_in_code(source, names) == [
        (3, "sqs"),
        (4, "pip install agent-wait-sqs"),
        (5, "agent_wait.sqs._plugin"),
    ]


def test_plugin_names_are_found_from_the_workspace() -> None:
    names = plugin_names()
    assert {"agent-wait-sqs", "sqs", "agent_wait.sqs", "pydantic_ai", "agent-wait-inbox"} <= names
    assert not names & {"agent-wait-core", "agent_wait.core", "template"}


@pytest.mark.parametrize(
    "module",
    sorted(p.relative_to(CORE / "src").as_posix() for p in (CORE / "src").rglob("*.py")),
)
def test_core_names_no_plugin(module: str) -> None:
    source = (CORE / "src" / module).read_text(encoding="utf-8")
    found = [
        (line, text)
        for line, text in plugin_names_in_code(source, plugin_names())
        if (module, text) not in CORE_OWN
    ]
    assert not found, f"{module} names plugins (lines: strings): {found}"
