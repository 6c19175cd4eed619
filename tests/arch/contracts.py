"""The import-linter contracts of every ``packages/agent-wait-*`` distribution, derived from its folder.

A plugin is its own folder: nothing here names one. Each distribution's pyproject says what it
may import: the agent-wait distributions it depends on (directly or through one another) and
the libraries they all declare. Everything else installed (and every library another
distribution declares) is forbidden to it, and so is every agent-wait distribution outside its
dependencies. On top of that: no distribution imports its own modules in a circle, no plugin
imports another, no one imports anyone's ``_private`` modules, and core's hook specs import only
models. The only names below are core's own and those of the three distributions split from it.

``python -m tests.arch.contracts`` writes the contracts to a temporary file and runs
``lint-imports --config`` on it (``nox -s arch`` and pre-commit do); ``--print`` shows them.
``--package DIR`` adds a distribution folder from outside ``packages/`` (a copy of the template);
``--installed-only`` leaves out the distributions not installed in this environment.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions, requires
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
CORE = "agent_wait.core"
# Split from core and released with it in lockstep (each pins core to its own minor version):
# they may use the private modules of the distributions named, which a plugin may not.
LOCKSTEP = {
    "agent_wait.host": [CORE],
    "agent_wait.pause": [CORE],
    "agent_wait.testing": [CORE, "agent_wait.host"],
}
# Core's modules that run something (plugin manager, publish, configuration, stores, trust):
# the hook specs, which every plugin imports to implement a hook, name none of them.
RUNNING_CORE_MODULES = [
    "_plugins",
    "_publish",
    "_config",
    "_entries",
    "_builtin_plugin",
    "_sqlite",
    "_sqlite_store",
    "_sqlite_entry",
    "_store",
    "_ledger",
    "_trust",
]
# AnnounceFailed (in _errors) names, in an annotation, the PublishReport it carries, whose
# raise_for_failures raises it; no import runs in that direction.
CIRCLE_EXCEPTIONS = ["agent_wait.core._errors -> agent_wait.core._announce"]


@dataclass(frozen=True)
class Distribution:
    """One ``packages/agent-wait-*`` folder, as its pyproject declares it."""

    name: str  # agent-wait-sqs
    package: str  # agent_wait.sqs
    # Canonical names: what it always installs, and what its extras add. An extra adds a library
    # its code may import (aiobotocore for the async path), never an agent-wait distribution to
    # build on (the template's [test] extra brings the kits for its tests, not its code).
    dependencies: frozenset[str]
    extras: frozenset[str]

    @classmethod
    def read(cls, folder: Path) -> Distribution:
        pyproject = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
        project = pyproject["project"]
        packages = [
            child.name
            for child in (folder / "src" / "agent_wait").iterdir()
            if child.is_dir() and child.name.isidentifier()
        ]
        if len(packages) != 1:
            raise ValueError(f"{folder}: src/agent_wait/ holds {packages}, not one package")
        extras = [
            line for lines in project.get("optional-dependencies", {}).values() for line in lines
        ]
        # A library imported on behalf of the distributions that depend on this one, which
        # declare it themselves (a shared distribution's async path, their [async] extra).
        extras += pyproject.get("tool", {}).get("agent-wait", {}).get("also-imports", [])
        return cls(
            name=canonicalize_name(project["name"]),
            package=f"agent_wait.{packages[0]}",
            dependencies=_names(project.get("dependencies", [])),
            extras=_names(extras),
        )


def _names(lines: Iterable[str]) -> frozenset[str]:
    return frozenset(canonicalize_name(Requirement(line).name) for line in lines)


def _installed(name: str) -> bool:
    try:
        distribution(name)
    except PackageNotFoundError:
        return False
    return True


def distributions(
    extra: Iterable[Path] = (), *, installed_only: bool = False
) -> list[Distribution]:
    """Every released distribution, plus ``extra`` folders, by import name.

    ``installed_only`` keeps those installed here (an environment of a few of them, such as the
    template's); otherwise one not installed fails the check, as its code cannot be read.
    """
    folders = [p.parent for p in ROOT.glob("packages/agent-wait-*/pyproject.toml")]
    found = [Distribution.read(f) for f in [*folders, *extra]]
    if installed_only:
        found = [d for d in found if _installed(d.name)]
    return sorted(found, key=lambda d: d.package)


def _import_names() -> dict[str, set[str]]:
    """Top-level import names of every installed distribution, by canonical distribution name."""
    names: dict[str, set[str]] = {}
    for module, owners in packages_distributions().items():
        # Private top-level modules (_pytest, _distutils_hack) and editable-install hooks are
        # not what code imports by name.
        if not module.isidentifier() or module.startswith("_") or module == "agent_wait":
            continue
        for owner in owners:
            names.setdefault(canonicalize_name(owner), set()).add(module)
    return names


def _installed_closure(names: Iterable[str]) -> set[str]:
    """``names`` and every installed distribution they require, directly or not (no extras)."""
    found: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            lines = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in lines:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(requirement.name))
    return found


def contracts(dists: list[Distribution]) -> dict[str, object]:
    """The ``[tool.importlinter]`` table for ``dists``."""
    by_name = {d.name: d for d in dists}
    installed = _import_names()

    def imports_of(requirement: str) -> set[str]:
        # A declared library not installed here (an extra) is known by its usual import name.
        return installed.get(requirement, {requirement.replace("-", "_")})

    def closure(dist: Distribution) -> list[Distribution]:
        found: list[Distribution] = []
        todo = [dist]
        while todo:
            current = todo.pop()
            if current not in found:
                found.append(current)
                todo += [by_name[r] for r in current.dependencies if r in by_name]
        return found

    def libraries_of(dist: Distribution) -> set[str]:
        return {r for r in dist.dependencies | dist.extras if r not in by_name}

    libraries = set().union(*(libraries_of(d) for d in dists))
    # What core brings (pydantic's own dependencies among them) every distribution has and may
    # import; anything else installed, or declared by any distribution, is someone's library.
    core_brings = _installed_closure(by_name["agent-wait-core"].dependencies)
    universe = set().union(*installed.values(), *(imports_of(r) for r in libraries)) - set().union(
        *(imports_of(r) for r in core_brings)
    )
    packages = [d.package for d in dists]
    depended_on = {r for d in dists for r in d.dependencies}
    plugins = [
        d.package
        for d in dists
        if d.package != CORE and d.package not in LOCKSTEP and d.name not in depended_on
    ]
    table: list[dict[str, object]] = []
    for dist in dists:
        own = closure(dist)
        allowed = {m for d in own for r in libraries_of(d) for m in imports_of(r)}
        allowed_packages = {d.package for d in own}
        table.append(
            {
                "name": f"{dist.package} imports only what {dist.name} and its agent-wait dependencies declare",
                "type": "forbidden",
                "source_modules": [dist.package],
                "forbidden_modules": sorted(p for p in packages if p not in allowed_packages)
                + sorted(universe - allowed),
            }
        )
    table += [
        {
            # Plugins build on the public modules of core (agent_wait.core, .hookspecs, .options,
            # .transport), the host, the pause tool, the kits and any agent-wait distribution they
            # depend on: a private module may change in any release. The same holds inside every
            # plugin: its _modules are its own.
            "name": "private modules are imported only from inside their own package",
            "type": "private_modules",
            "packages_with_private_modules": packages,
            "ignore_imports": [
                f"{split}{level} -> {base}.**"
                for split, bases in LOCKSTEP.items()
                for base in bases
                for level in ("", ".**")
            ],
            "unmatched_ignore_imports_alerting": "none",
        },
        {
            # At run time or for type checking: each distribution's modules form layers.
            "name": "no import circles inside any distribution",
            "type": "acyclic_siblings",
            "ancestors": packages,
            "ignore_imports": CIRCLE_EXCEPTIONS,
        },
        {
            "name": "the hook specs import only models",
            "type": "forbidden",
            "source_modules": [f"{CORE}.hookspecs"],
            "forbidden_modules": [f"{CORE}.{m}" for m in RUNNING_CORE_MODULES]
            + [p for p in sorted(LOCKSTEP) if p in packages],
        },
        {
            # Plugins are the distributions no other one depends on (a shared one, such as the
            # AWS code of the AWS announcers, is a dependency, not a plugin).
            "name": "plugins never import each other",
            "type": "independence",
            "modules": plugins,
        },
    ]
    return {"root_packages": packages, "include_external_packages": True, "contracts": table}


def to_toml(table: dict[str, object]) -> str:
    """``table`` as the ``[tool.importlinter]`` of a TOML file (JSON strings are TOML strings)."""
    lines = ["[tool.importlinter]"]
    contracts_ = table.pop("contracts")
    lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    assert isinstance(contracts_, list)
    for contract in contracts_:
        lines += ["", "[[tool.importlinter.contracts]]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in contract.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, action="append", default=[])
    parser.add_argument("--installed-only", action="store_true")
    parser.add_argument("--print", action="store_true", help="print the contracts, run nothing")
    args = parser.parse_args(argv)
    text = to_toml(contracts(distributions(args.package, installed_only=args.installed_only)))
    if args.print:
        print(text, end="")
        return 0
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "importlinter.toml"
        config.write_text(text, encoding="utf-8")
        lint_imports = Path(sys.executable).with_name("lint-imports")
        return subprocess.run([str(lint_imports), str(config)], check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
