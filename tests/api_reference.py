"""Check that the built API reference documents every public name: ``python tests/api_reference.py site``.

Public names are each package's ``__all__`` (``agent_wait.core`` and every plugin), plus
``agent_wait.core.transport`` and ``agent_wait.core.testing``. mkdocstrings gives each documented
object an HTML id equal to its dotted path; a name without one is missing from the reference.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRA = ["agent_wait.core.transport", "agent_wait.core.testing"]


def public_modules() -> list[str]:
    """``agent_wait.<name>`` of every package in the workspace, then the extra core modules."""
    names = sorted(
        p.name for p in ROOT.glob("packages/agent-wait-*/src/agent_wait/*") if p.is_dir()
    )
    return [f"agent_wait.{name}" for name in names] + EXTRA


def missing(site: Path) -> list[str]:
    """The public names that have no element id in ``site/reference``."""
    ids: set[str] = set()
    for page in (site / "reference").rglob("*.html"):
        ids.update(re.findall(r'id="(agent_wait\.[^"]+)"', page.read_text(encoding="utf-8")))
    absent: list[str] = []
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        absent += [f"{module_name}.{n}" for n in module.__all__ if f"{module_name}.{n}" not in ids]
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
