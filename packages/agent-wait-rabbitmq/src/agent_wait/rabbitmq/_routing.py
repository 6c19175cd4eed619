"""Routing-key templates: ``questions.{tags[approver_group]}`` rendered per envelope."""

from __future__ import annotations

from agent_wait.core import ConfigError, WaitEnvelope
from agent_wait.core.transport import EnvelopeTemplate

MAX_ROUTING_KEY = 255  # bytes: AMQP 0-9-1 shortstr
OPTION = "rabbitmq announcer option routing_key"


def _one_word(value: str) -> str:
    return value.replace(".", "_")


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
        self._template = EnvelopeTemplate(template, option=OPTION, name="routing_key")
        self.template = template
        if len(self._template.literal.encode("utf-8")) > MAX_ROUTING_KEY:
            raise ConfigError(
                f"{OPTION}: {template!r} is over the {MAX_ROUTING_KEY}-byte limit of an AMQP "
                "routing key"
            )

    def render(self, envelope: WaitEnvelope) -> str:
        """The routing key for one envelope.

        Raises:
            LookupError: The template needs a tag the envelope does not carry.
            ValueError: The rendered key is over 255 bytes.
        """
        key = self._template.render(envelope, _one_word)
        size = len(key.encode("utf-8"))
        if size > MAX_ROUTING_KEY:
            raise ValueError(
                f"routing key for question {envelope.question_id!r} is {size} bytes, over the "
                f"AMQP limit of {MAX_ROUTING_KEY}"
            )
        return key

    def __repr__(self) -> str:
        return f"RoutingKeyTemplate({self.template!r})"
