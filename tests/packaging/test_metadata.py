"""Every released distribution's metadata: license, URLs, classifiers, and a README fit for PyPI."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
DOCS = "https://agent-wait.github.io/agent-wait/"
REPO = "https://github.com/agent-wait/agent-wait"
PACKAGES = sorted(p.parent for p in ROOT.glob("packages/agent-wait-*/pyproject.toml"))
AWS = ["agent-wait-dynamodb", "agent-wait-eventbridge", "agent-wait-sns", "agent-wait-sqs"]
# Markdown links and images whose target is neither absolute nor an anchor on the same page.
RELATIVE_LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)]+)\)|src=\"(?!https?://)([^\"]+)\"")


def _project(package: Path) -> dict[str, Any]:
    return tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _tested_pythons() -> list[str]:
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    match = re.search(r"^PYTHONS = \[(.*)\]$", noxfile, re.MULTILINE)
    assert match, "noxfile.py has no PYTHONS list"
    return re.findall(r'"(3\.\d+)"', match.group(1))


def test_the_release_set_is_every_package_and_nothing_else() -> None:
    # Every directory under packages/ is a distribution of the release set, and nothing else is.
    assert PACKAGES, "no distribution found under packages/"
    assert all((package / "src" / "agent_wait").is_dir() for package in PACKAGES)
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert root["tool"]["uv"]["workspace"]["members"] == ["packages/*"]
    fixture = tomllib.loads(
        (ROOT / "tests/plugins/agent-wait-example/pyproject.toml").read_text(encoding="utf-8")
    )
    assert "Private :: Do Not Upload" in fixture["project"]["classifiers"]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_license_is_mit_and_shipped(package: Path) -> None:
    project = _project(package)
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (package / "LICENSE").read_text(encoding="utf-8") == (ROOT / "LICENSE").read_text(
        encoding="utf-8"
    )
    assert "the agent-wait authors" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    # A license expression and a License :: classifier together are refused by PyPI.
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_urls_point_at_the_site_and_the_repository(package: Path) -> None:
    urls = _project(package)["urls"]
    assert set(urls) == {"Documentation", "Source", "Issues", "Changelog"}
    assert urls["Source"] == f"{REPO}/tree/main/packages/{package.name}"
    assert urls["Issues"] == f"{REPO}/issues"
    assert urls["Changelog"] == f"{REPO}/blob/main/CHANGELOG.md"
    page = urls["Documentation"].removeprefix(DOCS)
    assert page != urls["Documentation"], urls["Documentation"]
    source = ROOT / "docs" / (f"{page.rstrip('/')}.md" if page else "index.md")
    assert source.is_file(), f"Documentation URL {urls['Documentation']} has no docs page"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_classifiers_name_the_tested_pythons_and_a_status(package: Path) -> None:
    project = _project(package)
    classifiers = project["classifiers"]
    versions = [
        c.removeprefix("Programming Language :: Python :: ")
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert versions == _tested_pythons() == ["3.11", "3.12", "3.13"]
    assert project["requires-python"] == ">=3.11"
    assert [c for c in classifiers if c.startswith("Development Status ::")]
    assert "Typing :: Typed" in classifiers
    assert project["keywords"]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_readme_has_no_relative_links(package: Path) -> None:
    readme = (package / _project(package)["readme"]).read_text(encoding="utf-8")
    relative = [m.group(1) or m.group(2) for m in RELATIVE_LINK.finditer(readme)]
    assert relative == [], f"{package.name}/README.md links relatively (broken on PyPI)"


def test_relative_link_pattern_catches_what_pypi_breaks() -> None:
    text = '[a](../../docs/x.md) [b](https://x.dev) [c](#anchor) <img src="logo.png">'
    assert [m.group(1) or m.group(2) for m in RELATIVE_LINK.finditer(text)] == [
        "../../docs/x.md",
        "logo.png",
    ]


@pytest.mark.parametrize("name", AWS)
def test_aws_announcers_keep_aiobotocore_in_the_async_extra(name: str) -> None:
    project = _project(ROOT / "packages" / name)
    requirements = {r.split(">")[0].split("<")[0]: r for r in project["dependencies"]}
    assert "aiobotocore" not in requirements
    assert [r for r in project["optional-dependencies"]["async"] if r.startswith("aiobotocore")]
    # The AWS code they share comes from agent-wait-aws, released with them.
    assert requirements["agent-wait-aws"] == "agent-wait-aws>=0.1,<0.2"
    _assert_wide_boto3(requirements.get("boto3"))


def test_agent_wait_aws_brings_boto3_and_never_aiobotocore() -> None:
    project = _project(ROOT / "packages" / "agent-wait-aws")
    requirements = {r.split(">")[0].split("<")[0]: r for r in project["dependencies"]}
    assert set(requirements) == {"agent-wait-core", "boto3", "botocore"}
    assert "optional-dependencies" not in project  # each announcer owns its [async] extra
    _assert_wide_boto3(requirements["boto3"])


def _assert_wide_boto3(requirement: str | None) -> None:
    if requirement is None:  # not imported directly: agent-wait-aws declares it
        return
    # Wide enough for the oldest tested boto3 and any later 1.x: it never forces a downgrade.
    boto3 = SpecifierSet(requirement.removeprefix("boto3"))
    assert {"1.35.0", "1.44.8", "1.99.0"} <= set(boto3.filter(["1.35.0", "1.44.8", "1.99.0"]))


def test_pyright_checks_every_package_src() -> None:
    # nox -s typecheck and a plain `pyright` both read this list; a package missing from it
    # would go unchecked by both.
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pyright = root["tool"]["pyright"]
    # A glob, so a new package is checked with no edit; only the template is left out.
    assert pyright["include"] == ["packages/**/src"]
    assert [p for p in pyright["exclude"] if p.startswith("packages/")] == ["packages/_template"]
    assert {p.parent.name for p in ROOT.glob("packages/*/src")} - {"_template"} == {
        p.name for p in PACKAGES
    }
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert 'session.run("pyright", "--pythonpath"' in noxfile
