"""The entry point's plugin: tracing, metrics and log correlation, unless switched off.

``AGENT_WAIT_OTEL_DISABLED=1`` (or OpenTelemetry's ``OTEL_SDK_DISABLED=true``) when the process
starts registers a plugin with no hooks, so publishing costs exactly what it costs without it.
"""

from __future__ import annotations

from agent_wait.opentelemetry._telemetry import (
    OpenTelemetryPlugin,
    disabled,
    install_log_correlation,
)


class Disabled:
    """What the entry point registers when OpenTelemetry is switched off: no hooks."""


def _plugin() -> OpenTelemetryPlugin | Disabled:
    if disabled():
        return Disabled()
    install_log_correlation()
    return OpenTelemetryPlugin()


plugin = _plugin()
