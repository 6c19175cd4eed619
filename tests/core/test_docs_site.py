"""The documentation's structure: API reference pages, the link checker run on the built site."""

from __future__ import annotations

import re
from pathlib import Path

from tests.site_links import broken_links, main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_site_links_reports_missing_files_and_anchors(tmp_path: Path) -> None:
    _write(
        tmp_path / "index.html",
        '<a href="guide/">ok</a><a href="guide/#setup">ok</a><a href="examples/demo.py">404</a>'
        '<a href="guide/#nowhere">bad anchor</a><a href="https://example.com/x">external</a>'
        '<a href="#top">self</a><h1 id="top">t</h1><img src="img/missing.png">',
    )
    _write(tmp_path / "guide" / "index.html", '<h2 id="setup">Setup</h2><a href="../">up</a>')
    problems = broken_links(tmp_path)
    assert problems == [
        "index.html: examples/demo.py -> no such file",
        "index.html: guide/#nowhere -> no element with id 'nowhere'",
        "index.html: img/missing.png -> no such file",
    ]
    assert main(["site_links", str(tmp_path)]) == 1


def test_site_links_passes_a_sound_site(tmp_path: Path) -> None:
    _write(tmp_path / "index.html", '<a href="a/b/">b</a><a href="a/b/index.html#x">x</a>')
    _write(tmp_path / "a" / "b" / "index.html", '<p id="x"></p><a href="../../">home</a>')
    assert broken_links(tmp_path) == []
    assert main(["site_links", str(tmp_path)]) == 0


def _packages() -> list[str]:
    return sorted(
        p.name for p in (ROOT / "packages").glob("agent-wait-*/src/agent_wait/*") if p.is_dir()
    )


def test_every_package_has_an_api_reference_page_in_the_nav() -> None:
    nav = (DOCS / "mkdocs.yml").read_text(encoding="utf-8")
    modules = [f"agent_wait.{name}" for name in _packages()]
    modules += ["agent_wait.core.transport", "agent_wait.core.testing", "agent_wait.core.hookspecs"]
    for module in modules:
        pages = [
            page
            for page in (DOCS / "reference").glob("*.md")
            if re.search(rf"^::: {re.escape(module)}$", page.read_text(encoding="utf-8"), re.M)
        ]
        assert len(pages) == 1, f"{module}: expected one docs/reference page with '::: {module}'"
        assert f"reference/{pages[0].name}" in nav, f"{pages[0].name} is not in the mkdocs nav"
