"""Development sessions: tests on 3.11-3.13, tests_package, lowest, aws_extra, lint, typecheck, arch, docs, template, build, bench, demo.

Run ``nox -l`` for the list. Every session installs into its own environment with uv;
nothing is installed into the system Python.
"""

from __future__ import annotations

import glob
import os
import shutil
import tarfile
import tomllib
import zipfile
from pathlib import Path

import nox
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parent
PYTHONS = ["3.11", "3.12", "3.13"]
# Distribution suffixes (agent-wait-<name>); the test directory is the import name (tests/pydantic_ai).
PACKAGES = sorted(
    p.parent.name.removeprefix("agent-wait-")
    for p in ROOT.glob("packages/agent-wait-*/pyproject.toml")
)

# The AWS announcers: each depends on agent-wait-aws, the AWS code they share.
AWS_PACKAGES = ["sqs", "sns", "eventbridge", "dynamodb"]

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


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the whole test suite against real servers (moto, HTTP, Redis, NATS, RabbitMQ, PostgreSQL)."""
    _sync(session, "test")
    # Two workers (pytest-xdist, one per core): most of the suite's time is spent waiting on
    # servers, subprocesses and browsers; every test names its own tables, queues and ports.
    default = ["tests", "-q", "-p", "no:cacheprovider", "-n", "auto"]
    session.run("pytest", *(session.posargs or default))


# Imports every module of one package, run with only its declared dependencies installed. A bare
# ModuleNotFoundError is an undeclared import; an ImportError the module raises itself is a
# deliberate install hint for an optional extra (agent_wait.core.testing needs pytest) and is shown.
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
    """tests/core plus the package's own test directory (named like its import: tests/pydantic_ai)."""
    if package == "core":
        return ["tests/core"]
    return ["tests/core", f"tests/{package.replace('-', '_')}"]


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
    """Every package's version in uv.lock, by canonical name."""
    return {
        canonicalize_name(package["name"]): package["version"]
        for package in tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))["package"]
        if "version" in package
    }


def _locked_test_group() -> list[str]:
    """The test group's requirements as uv pip arguments, each pinned to its uv.lock version.

    Extras and markers are kept; a requirement the root pyproject sources from a path (the
    fixture plugin under tests/plugins/) is installed editable from there, never from an index.
    """
    locked = _locked_versions()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    paths = {
        canonicalize_name(name): source["path"]
        for name, source in project["tool"]["uv"].get("sources", {}).items()
        if "path" in source
    }
    pinned: list[str] = []
    for line in project["dependency-groups"]["test"]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        if name in paths:
            pinned += ["-e", paths[name]]
            continue
        requirement.specifier = SpecifierSet(f"=={locked[name]}")
        pinned.append(str(requirement))
    return pinned


@nox.session(python="3.11")
@nox.parametrize("package", PACKAGES)
def lowest(session: nox.Session, package: str) -> None:
    """One distribution (plus core, and agent-wait-aws for an AWS announcer) with each of its direct dependencies at the declared floor."""
    # Per package, not all at once: a sibling's stricter requirement on a shared dependency
    # (pydantic, anyio) would lift it above the floor under test. The test tools are pinned to
    # their locked versions: this checks the distributions' floors, not the test group's
    # (at its floor, moto 5.1.0 fails SQS, SNS and EventBridge tests that pass on the locked moto).
    editables = ["-e", "packages/agent-wait-core"]
    if package in AWS_PACKAGES:
        editables += ["-e", "packages/agent-wait-aws"]
    if package != "core":
        editables += ["-e", f"packages/agent-wait-{package}"]
    session.install("--resolution", "lowest-direct", *_locked_test_group(), *editables)
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


def _copy_renamed(source: Path, target: Path, old: str, new: str) -> None:
    """Copy a directory tree, renaming ``old`` (and its capitalised form) in paths and text."""
    for path in sorted(source.rglob("*")):
        if "__pycache__" in path.parts or path.is_dir():
            continue
        relative = str(path.relative_to(source)).replace(old, new)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8")
        text = text.replace(old, new).replace(old.capitalize(), new.capitalize())
        destination.write_text(text, encoding="utf-8")


@nox.session(python="3.11")
def template(session: nox.Session) -> None:
    """The plugin template, copied and renamed as its README says, passes its tests and pyright."""
    target = Path(session.create_tmp()) / "agent-wait-acme"
    shutil.rmtree(target, ignore_errors=True)
    _copy_renamed(ROOT / "packages" / "_template", target, "template", "acme")
    locked = _locked_versions()
    session.install(
        f"pytest=={locked['pytest']}",
        f"pyright=={locked['pyright']}",
        "-e",
        str(ROOT / "packages" / "agent-wait-core"),
        "-e",
        f"{target}[test]",
    )
    session.chdir(target)
    session.run("pytest", "-q", "-p", "no:cacheprovider")
    session.run("pyright", "--pythonpath", str(Path(session.bin) / "python"))
    listed = session.run("agent-wait", "plugins", silent=True)
    if not isinstance(listed, str) or "agent-wait-acme" not in listed:
        session.error(f"agent-wait plugins does not list agent-wait-acme:\n{listed}")


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
    """Import contracts: core imports no plugin or SDK; plugins import only core."""
    _sync(session, "arch")
    session.run("lint-imports")


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
    """Regenerate the inbox screenshots under docs/images (needs Debian's chromium)."""
    _sync(session, "test")
    session.run("python", "-m", "tests.inbox.screenshots", "docs/images")
