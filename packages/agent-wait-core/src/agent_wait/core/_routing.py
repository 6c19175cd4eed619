"""The routing attributes (message attributes, headers) an envelope is sent with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agent_wait.core._errors import ConfigError
from agent_wait.core._models import Sent, WaitEnvelope
from agent_wait.core._publish import transport_headers


@dataclass(frozen=True, slots=True)
class RoutingAttributes:
    """The attributes one envelope is sent with, and the tags left out.

    Attributes:
        values: Attribute name to value, in priority order.
        dropped: Tag name to the reason it was left out.
    """

    values: dict[str, str]
    dropped: dict[str, str]


@dataclass(frozen=True, slots=True)
class AttributeRules:
    """How an envelope becomes transport attributes (message attributes, headers) for routing.

    The order is deterministic: ``type`` and ``thread_id`` first, then the announcer's fixed
    attributes, then the policy's tags sorted by name. Tags that cannot be sent are dropped
    one by one (never the whole message): an empty value, an invalid name, a name already
    taken, or no room left under ``max_count``.

    Attributes:
        max_count: The transport's attribute limit.
        name_error: Why a name is invalid, or None when it is valid.
        service: The transport's name, for error messages.
    """

    max_count: int
    name_error: Callable[[str], str | None] = field(default=lambda _name: None)
    service: str = "the transport"

    def fixed(self, option: str, attributes: Mapping[str, object] | None) -> dict[str, str]:
        """Validate an announcer's fixed attributes (an option) at construction.

        Raises:
            ConfigError: An attribute is not a non-empty string, has an invalid or reserved
                name, or there are too many; the message names the option and the attribute.
        """
        if attributes is None:
            return {}
        if not isinstance(attributes, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"{option}: expected a table of name = value, got {attributes!r}")
        checked: dict[str, str] = {}
        for name, value in sorted(attributes.items()):
            if name in _ENVELOPE_ATTRIBUTES:
                raise ConfigError(f"{option}: {name!r} is reserved for the envelope's own {name}")
            problem = self.name_error(name)
            if problem:
                raise ConfigError(
                    f"{option}: {name!r} is not a valid {self.service} name: {problem}"
                )
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{option}: {name!r} must be a non-empty string, got {value!r}")
            checked[name] = value
        room = self.max_count - len(_ENVELOPE_ATTRIBUTES)
        if len(checked) > room:
            raise ConfigError(
                f"{option}: {len(checked)} attributes given; {self.service} allows "
                f"{self.max_count} per message and 'type' and 'thread_id' take two, so at most {room}"
            )
        return checked

    def select(
        self, envelope: WaitEnvelope, fixed: Mapping[str, str] | None = None
    ) -> RoutingAttributes:
        """The attributes of one envelope (``fixed`` as returned by :meth:`fixed`).

        After the tags, the plugins' ``message_headers`` (a trace context) take what room is
        left: routing comes first, and what is left out still travels in the body.
        """
        values = {"type": envelope.type, "thread_id": envelope.thread_id, **(fixed or {})}
        dropped: dict[str, str] = {}
        for name in sorted(envelope.tags):
            value = envelope.tags[name]
            if name in values:
                dropped[name] = "its name is taken by a built-in or fixed attribute"
            elif not value:
                dropped[name] = "empty value"
            elif problem := self.name_error(name):
                dropped[name] = f"invalid name: {problem}"
            elif len(values) >= self.max_count:
                dropped[name] = f"over the {self.max_count}-attribute limit"
            else:
                values[name] = value
        return RoutingAttributes(self.with_headers(values, envelope), dropped)

    def with_headers(self, values: dict[str, str], message: Sent) -> dict[str, str]:
        """``values`` and, in the room left, the plugins' ``message_headers`` for ``message``.

        A header never replaces an attribute, and one whose name the service refuses is left out.
        """
        for name, value in transport_headers(message).items():
            if len(values) < self.max_count and name not in values and not self.name_error(name):
                values[name] = value
        return values


_ENVELOPE_ATTRIBUTES = ("type", "thread_id")
