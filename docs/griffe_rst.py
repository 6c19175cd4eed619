"""Griffe extension for the API reference: render the reST left in Google-style docstrings.

The docstrings are read by ``help()`` as well as by mkdocstrings, and a few reST habits in them
render badly as Markdown: roles (``:func:`publish```) would show their markup, and a paragraph
ending in ``::`` introduces an indented literal block that should be highlighted code. This
rewrites both when the reference is built; the source docstrings stay as they are.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|exc|data|obj|const):`~?([^`]+)`")
_LITERAL = re.compile(r"::\s*$")
# Google sections whose content is free text (an "Example:" with a literal block under it).
_SECTION = re.compile(r"^\s*(Example|Examples|Note|Notes|Warning|Warnings|Tip|Important)$")
_DOC_PAGE = re.compile(r"``(docs/[\w/.-]+\.md)``|(?<![\w/`])(docs/[\w/.-]+\.md)")


def _language(intro: str, block: list[str]) -> str:
    """A highlighting language for a literal block, from what introduces it and what it holds."""
    text = "\n".join(block)
    if ".toml" in intro or re.search(r"^\s*\[[\w.\-\"]+\]\s*$", text, re.MULTILINE):
        return "toml"
    if re.match(r"\s*(\$ |pip |agent-wait |uv |nox )", text):
        return "sh"
    return "python"


def _literal_blocks(text: str) -> str:
    """Turn ``paragraph::`` plus an indented block into ``paragraph:`` plus a fenced block."""
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not _LITERAL.search(line):
            out.append(line)
            index += 1
            continue
        base = len(line) - len(line.lstrip())
        intro = line.rstrip()[:-2].rstrip()
        if intro.strip():
            out.append(intro + ":")
        index += 1
        block: list[str] = []
        while index < len(lines) and (
            not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip()) > base
        ):
            block.append(lines[index])
            index += 1
        while block and not block[-1].strip():
            block.pop()
        body = [b for b in block if b.strip()]
        if not body:
            continue
        indent = min(len(b) - len(b.lstrip()) for b in body)
        # Under a Google section header ("Example::") the block is the section's content and
        # keeps its indentation; after a paragraph it leaves it, or Markdown would see an
        # indented code block holding the fence.
        fence = " " * (indent if _SECTION.match(intro) else base)
        code = [b[indent:] if b.strip() else "" for b in block]
        while code and not code[0]:
            code.pop(0)
        if out and out[-1].strip() and not _SECTION.match(out[-1].rstrip().removesuffix(":")):
            out.append("")  # a section header must be followed directly by its content
        out += [f"{fence}```{_language(intro, code)}", *(fence + c if c else "" for c in code)]
        out += [f"{fence}```", ""]
    return "\n".join(out)


def _page_link(match: re.Match[str]) -> str:
    """``docs/announcers/sns.md`` as a link from a reference page, which mkdocs then checks."""
    path = match.group(1) or match.group(2)
    return f"[{path}](../{path.removeprefix('docs/')})"


def render(text: str) -> str:
    """A docstring's text with reST roles as inline code, literal blocks fenced, pages linked."""
    return _literal_blocks(_DOC_PAGE.sub(_page_link, _ROLE.sub(r"`\1`", text)))


def _function(name: str, value: Any, parent: griffe.Module, parser: Any) -> griffe.Function | None:
    """A griffe function for a runtime callable, with its signature and docstring, or None."""
    doc = getattr(value, "__doc__", None)
    if not callable(value) or not doc:
        return None
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return None
    empty = inspect.Parameter.empty

    def text(annotation: object) -> str | None:
        if annotation is empty:
            return None
        return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    parameters = griffe.Parameters(
        *(
            griffe.Parameter(
                p.name,
                kind=griffe.ParameterKind(p.kind.description),
                annotation=text(p.annotation),
                default=None if p.default is empty else repr(p.default),
            )
            for p in signature.parameters.values()
        )
    )
    function = griffe.Function(
        name, parameters=parameters, returns=text(signature.return_annotation), parent=parent
    )
    if inspect.iscoroutinefunction(value):
        function.labels.add("async")
    # The documented parameters of a decorator factory (``wait(function=None, **options)``)
    # are its options, not its runtime signature's: do not warn about the difference.
    function.docstring = griffe.Docstring(
        render(inspect.cleandoc(doc)),
        parent=function,
        parser=parser,
        parser_options={"warn_unknown_params": False, "warn_missing_types": False},
    )
    return function


def _built_at_import(module: griffe.Module, parser: Any) -> None:
    """Fill in the exports a module builds by a call at import time, from the imported module.

    ``publish_interrupts, apublish_interrupts = make_publish_interrupts(adapter)`` and
    ``wait = make_wait(adapter, doc=...)`` define functions that static analysis cannot see (a
    tuple target) or sees without their docstring and signature.
    """
    for name, member in list(module.members.items()):
        if member.is_alias:
            if not member.target_path.startswith("agent_wait."):
                continue
            try:
                member.final_target  # noqa: B018 - resolves the alias, raising when it cannot
                continue
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                pass
        elif member.is_module:
            _built_at_import(member, parser)  # type: ignore[arg-type]
            continue
        elif not (member.is_attribute and member.docstring is None and "(" in str(member.value)):
            continue
        try:
            value = getattr(importlib.import_module(module.path), name)
        except (ImportError, AttributeError):
            continue
        function = _function(name, value, module, parser)
        if function is not None:
            module.set_member(name, function)


class RestToMarkdown(griffe.Extension):
    """Rewrites every docstring once the object tree is built."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Render one object's docstring."""
        if obj.docstring is not None:
            obj.docstring.value = render(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Fill in the functions a package builds at import time."""
        _built_at_import(pkg, loader.docstring_parser)
