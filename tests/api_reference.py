"""Check that the built API reference documents every public name: ``python tests/api_reference.py site``.

The modules are read, not imported: the docs environment has no pytest, which
``agent_wait.testing`` needs at import.

Public names are each package's ``__all__`` (``agent_wait.core``, ``agent_wait.host`` and every
other distribution), plus the public submodules in ``EXTRA`` (``agent_wait.host.adapter``,
``agent_wait.core.options``, ``agent_wait.core.transport``). mkdocstrings gives each documented
object an HTML id equal to its dotted path; a name without one is missing from the reference.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRA = [
    "agent_wait.host.adapter",
    "agent_wait.core.options",
    "agent_wait.core.transport",
]


def public_modules() -> dict[str, Path]:
    """``agent_wait.<name>`` of every package in the workspace, then the extra submodules."""
    packages = {
        f"agent_wait.{p.name}": p
        for p in sorted(ROOT.glob("packages/agent-wait-*/src/agent_wait/*"))
        if p.is_dir() and not p.name.startswith(("_", "."))
    }
    modules = {name: path / "__init__.py" for name, path in packages.items()}
    for name in EXTRA:
        package, _, leaf = name.rpartition(".")
        modules[name] = packages[package] / f"{leaf}.py"
    return modules


def exported(path: Path) -> list[str]:
    """The names a module's ``__all__`` lists."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return list(ast.literal_eval(node.value))
    raise LookupError(f"{path}: no __all__")


def missing(site: Path) -> list[str]:
    """The public names that have no element id in ``site/reference``."""
    ids: set[str] = set()
    for page in (site / "reference").rglob("*.html"):
        ids.update(re.findall(r'id="(agent_wait\.[^"]+)"', page.read_text(encoding="utf-8")))
    absent: list[str] = []
    for module, path in public_modules().items():
        absent += [f"{module}.{n}" for n in exported(path) if f"{module}.{n}" not in ids]
    return absent


def main(argv: list[str]) -> int:
    """Print the public names missing from the reference; exit 1 if any."""
    site = Path(argv[1] if len(argv) > 1 else "site")
    absent = missing(site)
    for name in absent:
        print(f"{name}: not in the API reference", file=sys.stderr)
    print(f"{len(public_modules())} modules checked, {len(absent)} public name(s) missing")
    return 1 if absent else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
