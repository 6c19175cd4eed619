"""Development sessions: tests on 3.11-3.13, tests_package, lowest, canary, aws_extra, lint, typecheck, arch, docs, template, build, bench, demo.

Run ``nox -l`` for the list. Every session installs into its own environment with uv;
nothing is installed into the system Python.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import nox
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parent
# nox loads this file by path: the repository's own helpers import from its root.
sys.path.insert(0, str(ROOT))
from tests.arch.template import EXAMPLE_NAMES, copy_each  # noqa: E402

PYTHONS = ["3.11", "3.12", "3.13"]
# Distribution suffixes (agent-wait-<name>); the test directory is the import name (tests/pydantic_ai).
PACKAGES = sorted(
    p.parent.name.removeprefix("agent-wait-")
    for p in ROOT.glob("packages/agent-wait-*/pyproject.toml")
)


def _pyproject(package: str) -> dict[str, Any]:
    path = ROOT / "packages" / f"agent-wait-{package}" / "pyproject.toml"
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _depends_on(package: str, dependency: str) -> bool:
    requirements = _pyproject(package)["project"].get("dependencies", [])
    return any(canonicalize_name(Requirement(r).name) == dependency for r in requirements)


# The AWS announcers: each depends on agent-wait-aws, the AWS code they share.
AWS_PACKAGES = [p for p in PACKAGES if _depends_on(p, "agent-wait-aws")]

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["lint", "typecheck", "arch", "tests"]
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
# This machine keeps 3.12 and 3.13 under pyenv, off PATH: make them findable without downloads.
_extra = sorted(glob.glob("/root/.pyenv/versions/3.1[123].*/bin"))
if _extra:
    os.environ["PATH"] = os.pathsep.join([*_extra, os.environ.get("PATH", "")])


def _sync(session: nox.Session, *groups: str) -> None:
    """Install every workspace package (editable) plus dependency groups into the session env."""
    # --no-default-groups: uv would add the dev group (every tool) to each session otherwise.
    args = ["uv", "sync", "--all-packages", "--locked", "--inexact", "--no-default-groups"]
    for group in groups:
        args += ["--group", group]
    session.run_install(*args, env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location})


# What measures or drives load rather than the interpreter: on the oldest Python only.
LOAD_TESTS = ("tests/bench", "tests/reliability/test_soak.py", "tests/reliability/test_chaos.py")


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the test suite against real servers (moto, HTTP, Redis, NATS, RabbitMQ, PostgreSQL).

    The whole suite on the oldest Python; each newer Python runs its own half of it (split by
    test id), so every test runs on 3.11 and on one newer Python in about two suites' time. The
    benchmark harness's smoke tests and the soak and chaos runs exercise load, not the
    interpreter: they run on the oldest Python only. Arguments after ``--`` replace the defaults
    (``-- tests`` runs the whole suite anywhere).
    """
    _sync(session, "test")
    # Two workers (pytest-xdist, one per core): most of the suite's time is spent waiting on
    # servers, subprocesses and browsers; every test names its own tables, queues and ports.
    default = ["tests", "-q", "-p", "no:cacheprovider", "-n", "auto"]
    newer = PYTHONS[1:]
    if session.python in newer:
        default.append(f"--shard={newer.index(str(session.python)) + 1}/{len(newer)}")
        default += [f"--ignore={path}" for path in LOAD_TESTS]
    session.run("pytest", *(session.posargs or default))


# Imports every module of one package, run with only its declared dependencies installed. A bare
# ModuleNotFoundError is an undeclared import; an ImportError the module raises itself is a
# deliberate install hint for an optional extra (agent_wait.testing needs pytest) and is shown.
_IMPORT_ALL = """
import importlib, pkgutil, sys
root = importlib.import_module(sys.argv[1])
for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError:
        raise
    except ImportError as error:
        print(f"{info.name}: optional, not importable here: {error}")
print(sys.argv[1], "and its modules import with only declared dependencies")
"""


def _package_tests(package: str) -> list[str]:
    """The package's own test directory (named like its import: tests/pydantic_ai), on two workers.

    Core's suite runs in core's own session and, with every plugin installed, in `tests`: one
    plugin beside core adds nothing between those two, and ran core's suite once per plugin. A
    distribution with no directory of its own is tested through core's suite.
    """
    own = f"tests/{package.replace('-', '_')}"
    if package == "core" or not (ROOT / own).is_dir():
        return ["tests/core", "-n", "auto"]
    return [own, "-n", "auto"]


@nox.session(python="3.11")
@nox.parametrize("package", PACKAGES)
def tests_package(session: nox.Session, package: str) -> None:
    """One distribution alone (plus agent-wait-core): it declares what it imports, its tests lean on no sibling."""
    env = {"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}
    # Exact syncs (no --inexact): a reused env must not keep a sibling from an earlier run.
    # First without the test group, whose tools (moto, langchain, uvicorn...) could mask an undeclared import.
    session.run_install("uv", "sync", "--package", f"agent-wait-{package}", "--locked", env=env)
    session.run("python", "-c", _IMPORT_ALL, f"agent_wait.{package.replace('-', '_')}")
    session.run_install(
        "uv", "sync", "--package", f"agent-wait-{package}", "--group", "test", "--locked", env=env
    )
    session.run(
        "pytest", *_package_tests(package), "-q", "-p", "no:cacheprovider", *session.posargs
    )


def _locked_versions() -> dict[str, str]:
    """Every package's version in uv.lock for this interpreter, by canonical name.

    A package locked at two versions (one for Python 3.11, one for 3.12 and newer) has
    ``resolution-markers`` on each: the one whose markers hold here is taken. The sessions that
    pin from the lock run on the Python nox itself runs on (3.11).
    """
    return {
        canonicalize_name(package["name"]): package["version"]
        for package in tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))["package"]
        if "version" in package
        and (
            "resolution-markers" not in package
            or any(Marker(marker).evaluate() for marker in package["resolution-markers"])
        )
    }


def _locked_test_group() -> list[str]:
    """The test group's requirements as uv pip arguments, each pinned to its uv.lock version.

    Extras and markers are kept; a requirement the root pyproject sources from a path (the
    fixture plugin under tests/plugins/) or from the workspace (the kits) is installed editable
    from there, never from an index.
    """
    locked = _locked_versions()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    paths = {
        canonicalize_name(name): source.get("path", f"packages/{name}")
        for name, source in project["tool"]["uv"].get("sources", {}).items()
        if "path" in source or source.get("workspace")
    }
    groups = project["dependency-groups"]

    def lines(group: str) -> list[str]:  # with the groups it includes ({include-group = ...})
        return [
            line
            for entry in groups[group]
            for line in (lines(entry["include-group"]) if isinstance(entry, dict) else [entry])
        ]

    pinned: list[str] = []
    for line in lines("test"):
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        if name in paths:
            pinned += ["-e", paths[name]]
            continue
        requirement.specifier = SpecifierSet(f"=={locked[name]}")
        pinned.append(str(requirement))
    return pinned


def _workspace_closure(distribution: str) -> list[str]:
    """``distribution`` and every workspace distribution it depends on, directly or not."""
    found: list[str] = []
    todo = [distribution]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.append(name)
        project = tomllib.loads((ROOT / "packages" / name / "pyproject.toml").read_text("utf-8"))
        todo += [
            dependency
            for dependency, source in project.get("tool", {})
            .get("uv", {})
            .get("sources", {})
            .items()
            if source.get("workspace")
        ]
    return sorted(found)


def _install_lowest(session: nox.Session, package: str) -> None:
    """Install one distribution (plus the workspace distributions it depends on) at its floors."""
    # Per package, not all at once: a sibling's stricter requirement on a shared dependency
    # (pydantic, anyio) would lift it above the floor under test. The test tools are pinned to
    # their locked versions: this checks the distributions' floors, not the test group's
    # (at its floor, moto 5.1.0 fails SQS, SNS and EventBridge tests that pass on the locked moto).
    editables: list[str] = []
    for name in _workspace_closure(f"agent-wait-{package}"):
        editables += ["-e", f"packages/{name}"]
    session.install("--resolution", "lowest-direct", *_locked_test_group(), *editables)


@nox.session(python="3.11")
@nox.parametrize("package", PACKAGES)
def lowest(session: nox.Session, package: str) -> None:
    """One distribution (plus the workspace distributions it depends on) with each of its direct dependencies at the declared floor."""
    _install_lowest(session, package)
    session.run(
        "pytest", *_package_tests(package), "-q", "-p", "no:cacheprovider", *session.posargs
    )


# The framework adapters and the distributions of their framework: what `canary` upgrades. Each
# adapter names them in its own pyproject, as [tool.agent-wait] canary = ["langgraph", ...].
FRAMEWORKS = {
    p: canary
    for p in PACKAGES
    if (canary := _pyproject(p).get("tool", {}).get("agent-wait", {}).get("canary"))
}


def _versions(session: nox.Session, distributions: list[str]) -> str:
    code = (
        "import sys; from importlib.metadata import version; "
        "print(', '.join(f'{n} {version(n)}' for n in sys.argv[1:]))"
    )
    shown = session.run("python", "-c", code, *distributions, silent=True)
    return str(shown).strip()


@nox.session(python="3.11")
@nox.parametrize("release", ["newest", "lowest"])
@nox.parametrize("package", sorted(FRAMEWORKS))
def canary(session: nox.Session, package: str, release: str) -> None:
    """One framework adapter's tests on its framework's newest releases, or at the declared floors."""
    # A failure of `newest` is news about a framework release, not about this tree: the adapter's
    # private framework names are all in agent_wait.<adapter>._compat, which is where to look.
    if release == "lowest":
        _install_lowest(session, package)
    else:
        session.run_install(
            "uv",
            "sync",
            "--package",
            f"agent-wait-{package}",
            "--group",
            "test",
            "--locked",
            env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        )
        session.install("--upgrade", *FRAMEWORKS[package])
    locked = _locked_versions()
    installed = _versions(session, FRAMEWORKS[package])
    pinned = ", ".join(f"{n} {locked[canonicalize_name(n)]}" for n in FRAMEWORKS[package])
    session.log(f"canary {package} ({release}): {installed} (uv.lock: {pinned})")
    session.run(
        "pytest", *_package_tests(package), "-q", "-p", "no:cacheprovider", *session.posargs
    )


@nox.session(python="3.11")
@nox.parametrize(
    ("install", "resolution"),
    [
        ("without-async", "highest"),
        ("without-async", "lowest-direct"),
        ("with-async", "highest"),
    ],
    ids=["sync-newest", "sync-oldest", "async"],
)
def aws_extra(session: nox.Session, install: str, resolution: str) -> None:
    """The AWS announcers installed without their [async] extra (newest and oldest boto3), and with it."""
    # A fresh environment of the four distributions, agent-wait-aws and moto only (no test group, which brings
    # aiobotocore): sync publish works, and the async path reports the extra to install.
    extra = "[async]" if install == "with-async" else ""
    editables = ["-e", "packages/agent-wait-core", "-e", "packages/agent-wait-aws"]
    for package in AWS_PACKAGES:
        editables += ["-e", f"packages/agent-wait-{package}{extra}"]
    moto = [r for r in _locked_test_group() if r.startswith("moto")]
    session.install("--resolution", resolution, *moto, *editables)
    session.run("python", "tests/install/aws_extra.py", install)


def _check_dist(dist: Path) -> None:
    """Exactly one wheel and one sdist per released distribution, each carrying the license."""
    expected = {f"agent_wait_{package.replace('-', '_')}-" for package in PACKAGES}
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    for kind, files in (("wheel", wheels), ("sdist", sdists)):
        built = {f.name.split("-")[0] + "-" for f in files}
        if built != expected or len(files) != len(expected):
            raise RuntimeError(
                f"{kind}s built: {sorted(built)}; the release set is {sorted(expected)}"
            )
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            if not any(n.endswith(".dist-info/licenses/LICENSE") for n in archive.namelist()):
                raise RuntimeError(f"{wheel.name} has no dist-info/licenses/LICENSE")
    for sdist in sdists:
        with tarfile.open(sdist) as archive:
            if f"{sdist.name.removesuffix('.tar.gz')}/LICENSE" not in archive.getnames():
                raise RuntimeError(f"{sdist.name} has no LICENSE")


@nox.session(python="3.11")
def build(session: nox.Session) -> None:
    """Build the release set (every packages/agent-wait-*, wheel and sdist) into dist/ and check it."""
    dist = ROOT / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.run_install(
        "uv",
        "sync",
        "--only-group",
        "build",
        "--locked",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )
    # The workspace members are the release set; the test fixture plugin is not one of them.
    session.run("uv", "build", "--all-packages", "--out-dir", str(dist), "--no-create-gitignore")
    _check_dist(dist)
    session.run("twine", "check", "--strict", *sorted(str(f) for f in dist.iterdir()))


@nox.session(python="3.11")
def template(session: nox.Session) -> None:
    """Each flavour of the plugin template, copied and renamed as its README says, passes its kit, pyright and the import contracts."""
    # Absolute: the session changes into each copy in turn.
    target = Path(session.create_tmp()).resolve() / "plugins"
    shutil.rmtree(target, ignore_errors=True)
    copies = copy_each(target)
    locked = _locked_versions()
    session.install(
        f"pytest=={locked['pytest']}",
        f"pyright=={locked['pyright']}",
        f"import-linter=={locked['import-linter']}",
        # the kits (agent-wait-testing) and the `agent-wait plugins` command (agent-wait-host),
        # from this checkout
        *(f"-e{ROOT / 'packages' / name}" for name in _workspace_closure("agent-wait-testing")),
        # side by side: each registers its own name
        *(f"-e{copy}[test]" for copy in copies.values()),
    )
    # The contracts of the distributions installed here, the copies among them: no edit elsewhere.
    session.run(
        "python",
        "-m",
        "tests.arch.contracts",
        "--installed-only",
        *(f"--package={copy}" for copy in copies.values()),
    )
    for copy in copies.values():
        session.chdir(copy)
        session.run("pytest", "-q", "-p", "no:cacheprovider")
        session.run("pyright", "--pythonpath", str(Path(session.bin) / "python"))
    listed = session.run("agent-wait", "plugins", silent=True)
    for name in EXAMPLE_NAMES.values():
        if not isinstance(listed, str) or f"agent-wait-{name}" not in listed:
            session.error(f"agent-wait plugins does not list agent-wait-{name}:\n{listed}")


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """Ruff lint and format check."""
    # Ruff reads files, not imports: the packages need not be installed.
    session.run_install(
        "uv",
        "sync",
        "--only-group",
        "lint",
        "--locked",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python="3.11")
def typecheck(session: nox.Session) -> None:
    """Pyright, strict, on every package's src/."""
    _sync(session, "typecheck")
    # No paths: pyproject's [tool.pyright] include decides, as for a plain `pyright` in the
    # activated .venv. The session's interpreter is named so imports resolve in its environment.
    session.run("pyright", "--pythonpath", str(Path(session.bin) / "python"))


@nox.session(python="3.11")
def arch(session: nox.Session) -> None:
    """Import contracts, generated from packages/*: each distribution imports only what it declares, no circles, no plugin another."""
    _sync(session, "arch")
    session.run("python", "-m", "tests.arch.contracts")


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """Build the documentation site with mkdocs --strict, then check its links and API reference."""
    _sync(session, "docs")
    session.run("mkdocs", "build", "--strict", "--config-file", "docs/mkdocs.yml")
    session.run("python", "tests/site_links.py", "site")
    session.run("python", "tests/api_reference.py", "site")


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """Benchmarks: prints a table and writes bench/results.json (see docs/performance.md)."""
    _sync(session, "test", "bench")
    session.run("python", "tests/bench/run.py", *session.posargs)


@nox.session(python="3.11")
def demo(session: nox.Session) -> None:
    """The refund agent demo: LangGraph, offline, a worker, agent-wait answer and sweep."""
    # Only what the demo imports: agent-wait-langgraph brings core, langgraph and langchain-core;
    # its demo group adds LangGraph's sqlite checkpointer (a parked run outlives its process).
    session.run_install(
        "uv",
        "sync",
        "--package",
        "agent-wait-langgraph",
        "--no-default-groups",
        "--group",
        "demo",
        "--locked",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )
    session.run("python", "docs/examples/langgraph_refund.py", *session.posargs)


@nox.session(python="3.11")
def screenshots(session: nox.Session) -> None:
    """Regenerate the inbox, Slack and email screenshots under docs/images (needs Debian's chromium)."""
    _sync(session, "test")
    session.run("python", "-m", "tests.inbox.screenshots", "docs/images")
    session.run("python", "-m", "tests.slack.screenshots", "docs/images")
    session.run("python", "-m", "tests.email.screenshots", "docs/images")
