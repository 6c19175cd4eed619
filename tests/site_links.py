"""Check the links of a built documentation site: every relative href/src names a file, every #anchor an id.

``mkdocs build --strict`` checks links between Markdown pages, but not links to files it does not
publish (a ``.py`` next to the pages is excluded from the site and its link 404s), nor links in
generated HTML. Run after a build: ``python tests/site_links.py site``.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _target(site: Path, page: Path, path: str, base: str) -> Path | None:
    if path.startswith("/"):
        if not path.startswith(base):
            return None  # an absolute path outside the site's own
        target = (site / unquote(path.removeprefix(base))).resolve()
    else:
        target = (page.parent / unquote(path)).resolve()
    if path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target


def broken_links(site: Path, base: str = "/") -> list[str]:
    """Every link into ``site``'s own pages whose file or anchor does not exist, as text lines.

    Args:
        site: The built site.
        base: The path the site is served under (``/agent-wait/`` for a ``site_url`` of
            ``https://example.org/agent-wait/``): absolute links start with it.
    """
    site = site.resolve()
    pages = {path: _parse(path) for path in sorted(site.rglob("*.html"))}
    problems: list[str] = []
    for page, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = _target(site, page, parts.path, base) if parts.path else page
            where = f"{page.relative_to(site)}: {link}"
            if target is None:
                problems.append(f"{where} -> outside the site's base path {base}")
            elif not target.is_file():
                problems.append(f"{where} -> no such file")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{where} -> no element with id {parts.fragment!r}")
    return problems


def base_path(mkdocs_yml: Path) -> str:
    """The path part of the ``site_url`` in an mkdocs configuration (``/`` without one)."""
    found = re.search(
        r"^site_url:\s*['\"]?([^'\"\s]+)", mkdocs_yml.read_text(encoding="utf-8"), re.M
    )
    path = urlsplit(found.group(1)).path if found else "/"
    return path if path.endswith("/") else path + "/"


def main(argv: list[str]) -> int:
    """Print the broken links of the site directory given (default ``site``); exit 1 if any.

    The base path comes from the ``site_url`` of ``docs/mkdocs.yml``.
    """
    site = Path(argv[1] if len(argv) > 1 else "site")
    if not (site / "index.html").is_file():
        print(f"{site}: no index.html; build the site first", file=sys.stderr)
        return 2
    problems = broken_links(
        site, base_path(Path(__file__).resolve().parents[1] / "docs" / "mkdocs.yml")
    )
    for problem in problems:
        print(problem, file=sys.stderr)
    pages = len(list(site.rglob("*.html")))
    print(f"{pages} pages checked, {len(problems)} broken link(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
