"""Subject templates: ``agent-wait.questions.{tags[approver_group]}`` rendered per envelope."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from agent_wait.core import ConfigError, WaitEnvelope

_FIELDS = ("thread_id", "question_id", "type")
_TAG = re.compile(r"^tags\[([^\[\]]+)\]$")
# A subject token may not hold whitespace, the separator or a wildcard; anything else is kept.
_NOT_IN_TOKEN = re.compile(r"[\s.*>\x00-\x1f\x7f]")
_NO_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class _Part:
    literal: str
    field: str | None  # "thread_id", "question_id", "type", or "tags[<name>]"
    tag: str | None


class SubjectTemplate:
    """A NATS subject with placeholders, checked once and rendered per envelope.

    Placeholders: ``{thread_id}``, ``{question_id}``, ``{type}`` and ``{tags[<name>]}``. Each
    substituted value becomes part of one subject token: whitespace, ``.``, ``*`` and ``>`` in
    it are replaced by ``_`` and an empty value renders as ``_``, so a value can never add a
    token or a wildcard.

    Args:
        template: The subject template.

    Raises:
        ConfigError: Unknown placeholder, format spec, or a literal part that is not a valid
            publish subject (empty token, wildcard, whitespace).
    """

    def __init__(self, template: str) -> None:
        if not isinstance(template, str) or not template:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"nats announcer option subject: expected a non-empty string, got {template!r}"
            )
        self.template = template
        parts: list[_Part] = []
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as error:
            raise ConfigError(
                f"nats announcer option subject: {template!r} is not a valid template: {error}"
            ) from error
        for literal, field, spec, conversion in parsed:
            tag = None
            if field is not None:
                match = _TAG.match(field)
                if field not in _FIELDS and not match:
                    raise ConfigError(
                        f"nats announcer option subject: unknown placeholder {{{field}}} in {template!r}; "
                        "use {thread_id}, {question_id}, {type} or {tags[<name>]}"
                    )
                if spec or conversion:
                    raise ConfigError(
                        f"nats announcer option subject: placeholder {{{field}}} in {template!r} "
                        "takes no format spec or conversion"
                    )
                tag = match.group(1) if match else None
            parts.append(_Part(literal, field, tag))
        self._parts = tuple(parts)
        # Check the literal structure with every placeholder standing in as a plain token part.
        self._check(self._join("x"), template)

    @property
    def tags(self) -> tuple[str, ...]:
        """The tag names the template needs."""
        return tuple(p.tag for p in self._parts if p.tag is not None)

    def wildcard(self) -> str:
        """The subject filter that matches every rendering: each token with a placeholder is ``*``."""
        marker = "\x00"
        return ".".join(
            "*" if marker in token else token for token in self._join(marker).split(".")
        )

    def render(self, envelope: WaitEnvelope) -> str:
        """The subject for one envelope.

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
                        f"subject template {self.template!r} needs tag {part.tag!r}, but question "
                        f"{envelope.question_id!r} has tags {sorted(envelope.tags)}"
                    )
                value = envelope.tags[part.tag]
            else:
                value = str(getattr(envelope, part.field))
            out.append(_NOT_IN_TOKEN.sub("_", value) or "_")
        return "".join(out)

    def _join(self, stand_in: str) -> str:
        return "".join(p.literal + (stand_in if p.field is not None else "") for p in self._parts)

    @staticmethod
    def _check(subject: str, template: str) -> None:
        for token in subject.split("."):
            if not token or re.search(r"[\s*>]", token) or _NO_CONTROL.search(token):
                raise ConfigError(
                    f"nats announcer option subject: {template!r} is not a publish subject "
                    f"(token {token!r}: tokens are non-empty, separated by '.', without whitespace "
                    "or the wildcards '*' and '>')"
                )

    def __repr__(self) -> str:
        return f"SubjectTemplate({self.template!r})"
