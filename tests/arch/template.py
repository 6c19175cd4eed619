"""A new plugin as its README says to start one: a flavour of ``packages/_template``, copied and renamed.

``python -m tests.arch.template acme --flavour entry`` writes ``packages/agent-wait-acme/`` (or
``--to DIR``): the ``entry`` flavour with ``template`` renamed ``acme`` and ``Template`` renamed
``Acme``, ready to install.
"""

from __future__ import annotations

import argparse
import keyword
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "packages" / "_template"
# Each a complete plugin: an announcer; an entry point; a question store with the announcer
# whose questions it reads.
FLAVOURS = ("announcer", "entry", "store")
# The names the checks give their copies: distinct, so all three install side by side.
EXAMPLE_NAMES = {"announcer": "acme", "entry": "acmequeue", "store": "acmedb"}


def copy_renamed(target: Path, new: str, old: str = "template", flavour: str = "announcer") -> Path:
    """Copy a flavour of the template to ``target``, renaming ``old`` (and its capitalised form)
    in paths and text."""
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour: expected one of {', '.join(FLAVOURS)}, got {flavour!r}")
    source = TEMPLATE / flavour
    for path in sorted(source.rglob("*")):
        if "__pycache__" in path.parts or path.is_dir():
            continue
        destination = target / str(path.relative_to(source)).replace(old, new)
        destination.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8")
        text = text.replace(old, new).replace(old.capitalize(), new.capitalize())
        destination.write_text(text, encoding="utf-8")
    return target


def copy_each(directory: Path) -> dict[str, Path]:
    """Every flavour copied into ``directory`` as ``agent-wait-<name>``, by flavour."""
    return {
        flavour: copy_renamed(directory / f"agent-wait-{name}", name, flavour=flavour)
        for flavour, name in EXAMPLE_NAMES.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Start a plugin: copy a flavour of packages/_template, renamed."
    )
    parser.add_argument("name", help="the plugin's name: a lower-case Python identifier (acme)")
    parser.add_argument("--flavour", choices=FLAVOURS, default="announcer")
    parser.add_argument("--to", type=Path, help="the new folder (packages/agent-wait-<name>)")
    args = parser.parse_args(argv)
    name: str = args.name
    if not name.isidentifier() or not name.islower() or keyword.iskeyword(name):
        parser.error(f"name: expected a lower-case Python identifier such as acme, got {name!r}")
    target: Path = args.to or ROOT / "packages" / f"agent-wait-{name}"
    if target.exists():
        parser.error(f"{target} exists: pass another name or --to")
    copy_renamed(target, name, flavour=args.flavour)
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
