"""Building blocks of plugin options: the model bases, option types and the redaction routine.

An announcer declares its options as a subclass of :class:`AnnouncerOptions`, an entry point
as a subclass of :class:`EntryOptions` (both also exported from ``agent_wait.core``), whose
fields use pydantic types and the types below; see docs/writing-a-plugin.md.
"""

from __future__ import annotations

from agent_wait.core._options import (
    REDACTED,
    AnnouncerOptions,
    Count,
    Duration,
    DurationOrZero,
    EntryOptions,
    Flag,
    NotBool,
    PluginOptions,
    PositiveCount,
    Seconds,
    SecondsOrZero,
    Sensitive,
    SensitiveUrl,
    Text,
    redact,
)

__all__ = [
    "REDACTED",
    "AnnouncerOptions",
    "Count",
    "Duration",
    "DurationOrZero",
    "EntryOptions",
    "Flag",
    "NotBool",
    "PluginOptions",
    "PositiveCount",
    "Seconds",
    "SecondsOrZero",
    "Sensitive",
    "SensitiveUrl",
    "Text",
    "redact",
]
