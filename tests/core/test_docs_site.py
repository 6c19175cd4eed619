"""The documentation's structure: API reference pages, the link checker run on the built site."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from tests.site_links import base_path, broken_links, main

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


def test_site_links_resolves_absolute_links_under_the_base_path(tmp_path: Path) -> None:
    _write(
        tmp_path / "404.html",
        '<a href="/docs/guide/">ok</a><a href="/docs/gone/">404</a><a href="/guide/">outside</a>',
    )
    _write(tmp_path / "index.html", "")
    _write(tmp_path / "guide" / "index.html", "")
    assert broken_links(tmp_path, "/docs/") == [
        "404.html: /docs/gone/ -> no such file",
        "404.html: /guide/ -> outside the site's base path /docs/",
    ]
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: x\nsite_url: https://example.org/docs\n", encoding="utf-8")
    assert base_path(config) == "/docs/"
    config.write_text("site_name: x\n", encoding="utf-8")
    assert base_path(config) == "/"


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
    modules += [
        "agent_wait.core.transport",
        "agent_wait.testing",
        "agent_wait.core.hookspecs",
        "agent_wait.pause",
    ]
    for module in modules:
        pages = [
            page
            for page in (DOCS / "reference").glob("*.md")
            if re.search(rf"^::: {re.escape(module)}$", page.read_text(encoding="utf-8"), re.M)
        ]
        assert len(pages) == 1, f"{module}: expected one docs/reference page with '::: {module}'"
        assert f"reference/{pages[0].name}" in nav, f"{pages[0].name} is not in the mkdocs nav"


def _griffe_rst() -> Any:
    pytest.importorskip("griffe", reason="the docs dependency group is not installed")
    spec = importlib.util.spec_from_file_location("griffe_rst", DOCS / "griffe_rst.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_renders_rest_roles_as_code_and_literal_blocks_as_fences() -> None:
    render = _griffe_rst().render
    assert render("Use :func:`~agent_wait.core.publish` or :class:`Question`.") == (
        "Use `agent_wait.core.publish` or `Question`."
    )
    assert render("Publish::\n\n    publish(q, 't')\n\n    report.ok\n\nThen more.") == (
        "Publish:\n\n```python\npublish(q, 't')\n\nreport.ok\n```\n\nThen more."
    )
    # Under a Google "Example:" section the fence stays indented and follows the header directly.
    assert render("Example:\n    ::\n\n        with x():\n            y()\n") == (
        "Example:\n    ```python\n    with x():\n        y()\n    ```\n"
    )
    assert render("Configure it (``agent-wait.toml``)::\n\n    [tool.agent-wait]\n    a = 1") == (
        "Configure it (``agent-wait.toml``):\n\n```toml\n[tool.agent-wait]\na = 1\n```\n"
    )
    assert render("See docs/announcers/sns.md and ``docs/index.md``.") == (
        "See [docs/announcers/sns.md](../announcers/sns.md) and [docs/index.md](../index.md)."
    )
