"""Each framework adapter reaches its framework's private names only through its ``_compat``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The adapter's import name, and the top-level packages of its framework.
FRAMEWORKS = {
    "langgraph": ("langgraph", "langchain", "langchain_core"),
    "strands": ("strands",),
    "pydantic_ai": ("pydantic_ai",),
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(source: str, roots: tuple[str, ...]) -> list[str]:
    """Private framework imports and private attributes read off anything but ``self``/``cls``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] in roots and (
                any(_private(p) for p in parts) or any(_private(a.name) for a in node.names)
            ):
                found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in roots and any(_private(p) for p in parts):
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_private_framework_names_are_only_in_compat(name: str) -> None:
    package = ROOT / "packages" / f"agent-wait-{name.replace('_', '-')}" / "src" / "agent_wait"
    modules = sorted((package / name).glob("*.py"))
    assert package / name / "_compat.py" in modules
    found = {
        module.name: uses
        for module in modules
        if module.name != "_compat.py"
        for uses in [private_uses(module.read_text(encoding="utf-8"), FRAMEWORKS[name])]
        if uses
    }
    assert found == {}, f"move these into agent_wait.{name}._compat, saying why: {found}"


def test_the_check_finds_each_kind_of_private_use() -> None:
    source = (
        "from langgraph._internal import x\n"
        "import langgraph._internal._scratchpad\n"
        "from langgraph.types import _interrupt_id\n"
        "pregel._state_checkpointer(config)\n"
        "getattr(agent, '_session_manager', None)\n"
        "self._own = 1\n"
        "from agent_wait.langgraph._compat import PUSH\n"
        "value.__name__\n"
    )
    assert len(private_uses(source, FRAMEWORKS["langgraph"])) == 5


def test_each_compat_name_says_the_version_it_was_checked_on() -> None:
    for name in FRAMEWORKS:
        source = (
            (
                ROOT
                / "packages"
                / f"agent-wait-{name.replace('_', '-')}"
                / "src"
                / "agent_wait"
                / name
            )
            .joinpath("_compat.py")
            .read_text(encoding="utf-8")
        )
        assert "checked on" in source.lower(), name
        assert "nox -s canary" in source, name
