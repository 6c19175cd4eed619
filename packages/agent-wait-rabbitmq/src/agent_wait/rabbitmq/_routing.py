"""Routing-key templates: ``questions.{tags[approver_group]}`` rendered per envelope."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from agent_wait.core import ConfigError, WaitEnvelope

MAX_ROUTING_KEY = 255  # bytes: AMQP 0-9-1 shortstr
_FIELDS = ("thread_id", "question_id", "type")
_TAG = re.compile(r"^tags\[([^\[\]]+)\]$")


@dataclass(frozen=True, slots=True)
class _Part:
    literal: str
    field: str | None
    tag: str | None


class RoutingKeyTemplate:
    """An AMQP routing key with placeholders, checked once and rendered per envelope.

    Placeholders: ``{thread_id}``, ``{question_id}``, ``{type}`` and ``{tags[<name>]}``. A
    substituted value has each ``.`` replaced by ``_``, so it stays one word of a topic
    exchange's routing key and cannot add words a binding would match on.

    Args:
        template: The routing-key template (may be empty, e.g. for a fanout exchange).

    Raises:
        ConfigError: Unknown placeholder, a format spec, or a literal longer than 255 bytes.
    """

    def __init__(self, template: str) -> None:
        if not isinstance(template, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"rabbitmq announcer option routing_key: expected a string, got {template!r}"
            )
        self.template = template
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as error:
            raise ConfigError(
                f"rabbitmq announcer option routing_key: {template!r} is not a valid template: {error}"
            ) from error
        parts: list[_Part] = []
        for literal, field, spec, conversion in parsed:
            tag = None
            if field is not None:
                match = _TAG.match(field)
                if field not in _FIELDS and not match:
                    raise ConfigError(
                        f"rabbitmq announcer option routing_key: unknown placeholder {{{field}}} in "
                        f"{template!r}; use {{thread_id}}, {{question_id}}, {{type}} or {{tags[<name>]}}"
                    )
                if spec or conversion:
                    raise ConfigError(
                        f"rabbitmq announcer option routing_key: placeholder {{{field}}} in "
                        f"{template!r} takes no format spec or conversion"
                    )
                tag = match.group(1) if match else None
            parts.append(_Part(literal, field, tag))
        self._parts = tuple(parts)
        fixed = "".join(p.literal for p in parts)
        if len(fixed.encode("utf-8")) > MAX_ROUTING_KEY:
            raise ConfigError(
                f"rabbitmq announcer option routing_key: {template!r} is over the {MAX_ROUTING_KEY}-byte "
                "limit of an AMQP routing key"
            )

    def render(self, envelope: WaitEnvelope) -> str:
        """The routing key for one envelope.

        Raises:
            LookupError: The template needs a tag the envelope does not carry.
            ValueError: The rendered key is over 255 bytes.
        """
        out: list[str] = []
        for part in self._parts:
            out.append(part.literal)
            if part.field is None:
                continue
            if part.tag is not None:
                if part.tag not in envelope.tags:
                    raise LookupError(
                        f"routing_key template {self.template!r} needs tag {part.tag!r}, but "
                        f"question {envelope.question_id!r} has tags {sorted(envelope.tags)}"
                    )
                value = envelope.tags[part.tag]
            else:
                value = str(getattr(envelope, part.field))
            out.append(value.replace(".", "_"))
        key = "".join(out)
        if len(key.encode("utf-8")) > MAX_ROUTING_KEY:
            raise ValueError(
                f"routing key for question {envelope.question_id!r} is "
                f"{len(key.encode('utf-8'))} bytes, over the AMQP limit of {MAX_ROUTING_KEY}"
            )
        return key

    def __repr__(self) -> str:
        return f"RoutingKeyTemplate({self.template!r})"
