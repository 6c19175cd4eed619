"""Destination templates (``questions.{tags[approver_group]}``) shared by routing transports."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass

from agent_wait.core._errors import ConfigError
from agent_wait.core._models import WaitEnvelope

_FIELDS = ("thread_id", "question_id", "type")
_TAG = re.compile(r"^tags\[([^\[\]]+)\]$")


@dataclass(frozen=True, slots=True)
class _Part:
    literal: str
    field: str | None  # "thread_id", "question_id", "type", or "tags[<name>]"
    tag: str | None


class EnvelopeTemplate:
    """A string with envelope placeholders, checked once and rendered per envelope.

    Placeholders: ``{thread_id}``, ``{question_id}``, ``{type}`` and ``{tags[<name>]}``; no
    format specs or conversions. A transport wraps it with its own syntax rules (a NATS subject,
    an AMQP routing key) and passes ``clean`` to keep substituted values inside one token.

    Args:
        template: The template text.
        option: How errors name the setting, e.g. ``"nats announcer option subject"``.
        name: How render errors name the template, e.g. ``"subject"``.

    Raises:
        ConfigError: Not a string, not parseable, an unknown placeholder, or a format spec.
    """

    def __init__(self, template: str, *, option: str, name: str) -> None:
        if not isinstance(template, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"{option}: expected a string, got {template!r}")
        self.template = template
        self.name = name
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as error:
            raise ConfigError(f"{option}: {template!r} is not a valid template: {error}") from error
        parts: list[_Part] = []
        for literal, field, spec, conversion in parsed:
            tag = None
            if field is not None:
                match = _TAG.match(field)
                if field not in _FIELDS and not match:
                    raise ConfigError(
                        f"{option}: unknown placeholder {{{field}}} in {template!r}; "
                        "use {thread_id}, {question_id}, {type} or {tags[<name>]}"
                    )
                if spec or conversion:
                    raise ConfigError(
                        f"{option}: placeholder {{{field}}} in {template!r} takes no format spec "
                        "or conversion"
                    )
                tag = match.group(1) if match else None
            parts.append(_Part(literal, field, tag))
        self._parts = tuple(parts)

    @property
    def tags(self) -> tuple[str, ...]:
        """The tag names the template needs."""
        return tuple(p.tag for p in self._parts if p.tag is not None)

    @property
    def literal(self) -> str:
        """The fixed text, placeholders left out."""
        return "".join(p.literal for p in self._parts)

    def join(self, stand_in: str) -> str:
        """The template with every placeholder replaced by ``stand_in`` (for syntax checks)."""
        return "".join(p.literal + (stand_in if p.field is not None else "") for p in self._parts)

    def render(self, envelope: WaitEnvelope, clean: Callable[[str], str]) -> str:
        """The text for one envelope, each substituted value passed through ``clean``.

        Raises:
            LookupError: The template needs a tag the envelope does not carry.
        """
        out: list[str] = []
        for part in self._parts:
            out.append(part.literal)
            if part.field is None:
                continue
            if part.tag is not None:
                if part.tag not in envelope.tags:
                    raise LookupError(
                        f"{self.name} template {self.template!r} needs tag {part.tag!r}, but "
                        f"question {envelope.question_id!r} has tags {sorted(envelope.tags)}"
                    )
                value = envelope.tags[part.tag]
            else:
                value = str(getattr(envelope, part.field))
            out.append(clean(value))
        return "".join(out)
